/* fuzz_stream.c - libFuzzer target: the qemu stream backend's framing
 * (4-byte big-endian length + frame, any split across reads).
 *
 * Input: a sequence of chunks, each [n][n bytes] (n = 255: the rest of
 * the input is one chunk). Each chunk is written to the peer end of a
 * socketpair and the link handler runs as the event loop would run it;
 * at the end the peer closes. The context has no UDP or ICMP sockets
 * (they are fuzz_frame's job), so nothing leaves the process; frames
 * ferry answers are written back to the peer and discarded.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "fuzz.h"
#include "log.h"
#include "util.h"
#include "test/unit/unit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctx *c;
	size_t off = 0;
	int sv[2];

	if (!c) {
		log_set_level(LOG_LVL_ERR);
		c = test_ctx();
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	tap_attach(c, &link_stream_ops, sv[0]);
	c->quit = false;
	while (c->link.up && !c->quit &&
	       fuzz_chunk_write(sv[1], data, size, &off)) {
		tap_handler(c, EPOLLIN | EPOLLOUT);	/* drained: writable */
		tap_flush(c);
		link_close_pending(c);		/* as the loop, after them */
		fuzz_drain(sv[1]);
	}
	shutdown(sv[1], SHUT_WR);
	if (c->link.up && !c->quit)
		tap_handler(c, EPOLLIN);	/* end of stream */
	tap_flush(c);
	link_close_pending(c);
	close(sv[0]);
	close(sv[1]);
	tap_detach(c);
	return 0;
}
