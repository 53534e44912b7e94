/* fuzz_vu.c - libFuzzer target: a hostile vhost-user front-end and guest.
 *
 * Input: the first FZ_RINGS bytes become the rings of both queues in a
 * fake guest memory (descriptor tables, available and used rings: the
 * guest controls them all), the rest a stream of control messages, each
 * a 12-byte header (request, flags, size) and up to size bytes of
 * payload, handed to vu_msg_handle() as if read from the socket (without
 * fds: those cannot be fuzzed). Then the transmit queue is drained
 * through the whole frame path (tap_input()) and whatever ferry queued
 * for the guest is flushed into the receive queue. Before each input the
 * device is reset to a started pair of 16-entry rings over 1 MiB of
 * memory, so ring walking is reached without a valid message sequence.
 *
 * Runs in a private network namespace (fuzz_isolate()), as fuzz_frame:
 * frames the guest "sends" may open host sockets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "fuzz.h"
#include "test/unit/unit.h"
#include "vhost_user.h"

#define FZ_MEM		(1u << 20)
#define FZ_GPA		0x40000000ULL
#define FZ_UVA		0x7f0000000000ULL
#define FZ_NUM		16
#define FZ_RINGS	0x2000u		/* queue q at q * 0x1000 */

static struct ctx *ctx;
static uint8_t *mem;
static int peer;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int sv[2];

	(void)argc;
	(void)argv;
	fuzz_isolate_or_exit("fuzz_vu");
	ctx = test_ctx();
	ctx->conf.mode = MODE_VM;
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	mem = aligned_alloc(4096, FZ_MEM);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		abort();
	peer = sv[1];
	vu_init(ctx);
	vu_attach(ctx, sv[0]);
	return 0;
}

/* reset() - a fresh device: memory table, both rings started. */
static void reset(void)
{
	struct vu_dev *d = ctx->link.vu;
	unsigned int q;
	char sink[4096];

	while (recv(peer, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;				/* replies */
	if (!ctx->link.up)
		vu_attach(ctx, d->fd);
	fuzz_vu_mem(d, mem, FZ_GPA, FZ_UVA, FZ_MEM);
	d->features = VU_FEATURES;
	d->protocol_features = VU_PROTOCOL_FEATURES;
	for (q = 0; q < VU_QUEUES; q++) {
		virtq_reset(&d->vq[q]);
		fuzz_vu_ring(d, q, FZ_NUM, FZ_UVA + q * 0x1000, 0x400);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vu_msg *m = &ctx->link.vu->in;
	size_t n = size < FZ_RINGS ? size : FZ_RINGS;

	reset();
	memset(mem, 0, FZ_RINGS);
	memcpy(mem, data, n);
	data += n;
	size -= n;
	while (size >= VU_HDR_SIZE && ctx->link.up) {
		uint32_t len;

		memcpy(&m->request, data, 4);
		memcpy(&m->flags, data + 4, 4);
		memcpy(&len, data + 8, 4);
		data += VU_HDR_SIZE;
		size -= VU_HDR_SIZE;
		m->size = len < size ? len : (uint32_t)size;
		if (m->size > VU_PAYLOAD_MAX)
			m->size = VU_PAYLOAD_MAX;
		memcpy(m->p.raw, data, m->size);
		data += m->size;
		size -= m->size;
		m->nfds = 0;
		if (vu_msg_handle(ctx, m) < 0)
			break;
	}
	if (ctx->link.up) {
		tap_handler(ctx, EPOLLIN);
		tap_flush(ctx);
		link_close_pending(ctx);	/* as the loop, after them */
	}
	return 0;
}
