/* fuzz_vu_sock.c - libFuzzer target: the vhost-user control socket's
 * framing (read_some() and vu_ctrl_handler() in vhost_user.c): 12-byte
 * headers and payloads split anywhere across reads, sizes beyond the
 * largest payload, end of stream in the middle of a message.
 *
 * Input: a sequence of chunks, each [n][n bytes] (n = 255: the rest of
 * the input is one chunk), as fuzz_stream.c. Each chunk is written to the
 * front-end's end of a socketpair and the control handler runs as the
 * event loop would run it; replies are read and discarded; at the end the
 * front-end closes. No fds travel (fuzz_vu.c drives the messages and
 * rings behind this framing), so memory tables and kick fds are refused:
 * nothing maps memory and nothing leaves the process.
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
#include "vhost_user.h"
#include "test/unit/unit.h"

static struct ctx *c;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_LVL_ERR);
	c = test_ctx();
	c->conf.mode = MODE_VM;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	vu_init(c);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2], type = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
	size_t off = 0;

	if (socketpair(AF_UNIX, type, 0, sv))
		abort();
	vu_attach(c, sv[0]);
	while (c->link.up && fuzz_chunk_write(sv[1], data, size, &off)) {
		vu_ctrl_handler(c, EPOLLIN);
		link_close_pending(c);		/* as the loop, after it */
		fuzz_drain(sv[1]);		/* replies */
	}
	shutdown(sv[1], SHUT_WR);
	if (c->link.up)
		vu_ctrl_handler(c, EPOLLIN);	/* end of stream */
	link_close_pending(c);
	if (c->link.up)
		link_closed(c);		/* closes sv[0] */
	close(sv[1]);
	return 0;
}
