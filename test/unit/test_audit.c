/* test_audit.c - hostile-input regressions found by the audit of the
 * guest-facing parsers and the vhost-user back-end: each test failed (or
 * hung) before its fix. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "ferry.h"
#include "test/fuzz/fuzz.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"
#include "vhost_user.h"
#include "virtq.h"
#include "vnet.h"

#define A_SIZE		(1u << 20)
#define A_GPA		0x100000ULL
#define A_UVA		0x7f0000000000ULL
#define A_NUM		16
#define A_BUF		0x10000u

/* vu_ctx() - a context with a vhost-user device whose memory is host
 * (one region, no mapping of ours) and whose receive ring is ready. */
static struct ctx *vu_ctx(uint8_t *host)
{
	struct ctx *c = test_ctx();

	vu_init(c);
	fuzz_vu_mem(c->link.vu, host, A_GPA, A_UVA, A_SIZE);
	c->link.vu->features = VU_F_MRG_RXBUF;
	fuzz_vu_ring(c->link.vu, VU_RXQ, A_NUM, A_UVA, 0x1000);
	return c;
}

static void vu_ctx_free(struct ctx *c)
{
	munmap(c->link.vu, sizeof(struct vu_dev));
	c->link.vu = NULL;
	test_ctx_free(c);
}

/* rx_chain() - the guest posts descriptor i (len bytes, flags) as a
 * chain of its own. */
static void rx_chain(struct virtq *q, uint16_t i, uint32_t len,
		     uint16_t flags)
{
	q->desc[i].addr = A_GPA + A_BUF + i * 2048u;
	q->desc[i].len = len;
	q->desc[i].flags = flags;
	q->desc[i].next = 0;
	q->avail->ring[q->avail->idx % A_NUM] = i;
	q->avail->idx++;
}

/* vu_flush_one() - queue one frame of len bytes (after its header) and
 * run the vhost-user flush, with a watchdog: a hang is a failure. */
static void vu_flush_one(struct ctx *c, size_t len)
{
	struct tx_batch *tx = &c->link.tx;

	memset(tx->buf, 0, VNET_HLEN + len);
	tx->f[0].off = 0;
	tx->f[0].len = (uint32_t)len;
	tx->n = 1;
	alarm(10);
	link_vu_ops.flush(c);
	alarm(0);
	tx->n = 0;
	tx->used = 0;
}

/* A bad chain after a good one of the same frame (mergeable buffers):
 * used to unpop both and pop them again forever. Now both come back
 * empty, counted, and the frame goes into the next chain. */
TEST(audit_vu_bad_chain_mid_frame_no_hang)
{
	uint8_t *host = calloc(1, A_SIZE);
	struct ctx *c = vu_ctx(host);
	struct virtq *q = &c->link.vu->vq[VU_RXQ];

	rx_chain(q, 0, 20, VQ_DESC_F_WRITE);
	rx_chain(q, 1, 2048, 0);		/* not device-writable */
	rx_chain(q, 2, 2048, VQ_DESC_F_WRITE);
	vu_flush_one(c, 60);
	CHECK_EQ(q->used->idx, 3);
	CHECK_EQ(q->used->ring[0].id, 0);
	CHECK_EQ(q->used->ring[0].len, 0);
	CHECK_EQ(q->used->ring[1].id, 1);
	CHECK_EQ(q->used->ring[1].len, 0);
	CHECK_EQ(q->used->ring[2].id, 2);
	CHECK_EQ(q->used->ring[2].len, VNET_HLEN + 60);
	CHECK_EQ(host[A_BUF + 2 * 2048 + 10], 1);	/* num_buffers */
	CHECK_EQ(c->stats.drops[DROP_VU_CHAIN], 1);
	vu_ctx_free(c);
	free(host);
}

/* A first chain shorter than the virtio-net header has no room for
 * num_buffers: it is returned empty, the frame goes to the next one. */
TEST(audit_vu_first_chain_shorter_than_header)
{
	uint8_t *host = calloc(1, A_SIZE);
	struct ctx *c = vu_ctx(host);
	struct virtq *q = &c->link.vu->vq[VU_RXQ];

	memset(host + A_BUF + 2048, 0xaa, 16);
	rx_chain(q, 0, 6, VQ_DESC_F_WRITE);
	rx_chain(q, 1, 2048, VQ_DESC_F_WRITE);
	vu_flush_one(c, 60);
	CHECK_EQ(q->used->idx, 2);
	CHECK_EQ(q->used->ring[0].len, 0);
	CHECK_EQ(q->used->ring[1].id, 1);
	CHECK_EQ(q->used->ring[1].len, VNET_HLEN + 60);
	CHECK_EQ(host[A_BUF + 2048 + 10], 1);
	CHECK_EQ(host[A_BUF + 2048 + 11], 0);
	CHECK_EQ(c->stats.drops[DROP_VU_CHAIN], 1);
	vu_ctx_free(c);
	free(host);
}

/* vu_msg_init() - an empty control message req with an 8-byte payload. */
static void vu_msg_init(struct vu_msg *m, uint32_t req)
{
	memset(m, 0, sizeof(*m));
	m->request = req;
	m->flags = VU_VERSION;
	m->size = 8;
}

/* vu_send() - hand ferry one control message (no reply asked). */
static int vu_send(struct ctx *c, uint32_t req, uint32_t index, uint32_t num)
{
	static struct vu_msg m;

	vu_msg_init(&m, req);
	m.p.state.index = index;
	m.p.state.num = num;
	return vu_msg_handle(c, &m);
}

/* SET_VRING_NUM after SET_VRING_ADDR: the rings were checked for the
 * old size only; a larger one must not reach past the memory table. */
TEST(audit_vu_vring_num_after_addr_rechecked)
{
	uint8_t *host = calloc(1, A_SIZE);
	struct ctx *c = vu_ctx(host);
	struct virtq *q = &c->link.vu->vq[VU_RXQ];

	CHECK(fuzz_vu_ring(c->link.vu, VU_RXQ, A_NUM, A_UVA + A_SIZE - 0x3000,
			   0x1000));
	CHECK_EQ(vu_send(c, VU_SET_VRING_NUM, VU_RXQ, 8192), 0);
	CHECK(!virtq_ready(q));
	CHECK(!q->desc && !q->avail && !q->used);
	CHECK_EQ(vu_send(c, VU_SET_VRING_NUM, VU_RXQ, 16), 0);
	CHECK(virtq_ready(q));			/* fits again */
	vu_ctx_free(c);
	free(host);
}

/* A ring found broken (a guest that moved avail->idx too far) works again
 * once the front-end starts it anew (GET_VRING_BASE, SET_VRING_KICK), as
 * qemu does when the guest's driver resets: before, it stayed dead until
 * the front-end reconnected. */
TEST(audit_vu_broken_ring_restarts)
{
	uint8_t *host = calloc(1, A_SIZE);
	struct ctx *c = vu_ctx(host);
	struct virtq *q = &c->link.vu->vq[VU_RXQ];
	static struct vu_msg m;

	q->avail->idx = A_NUM + 1;
	rx_chain(q, 0, 2048, VQ_DESC_F_WRITE);
	vu_flush_one(c, 60);
	CHECK(q->broken);
	CHECK_EQ(c->stats.drops[DROP_VU_RING], 1);
	vu_send(c, VU_GET_VRING_BASE, VU_RXQ, 0);	/* (no socket to reply) */
	CHECK(!q->started);
	vu_msg_init(&m, VU_SET_VRING_KICK);
	m.p.u64 = VU_RXQ;
	m.fds[0] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m.nfds = 1;
	CHECK_EQ(vu_msg_handle(c, &m), 0);
	CHECK(!q->broken && virtq_ready(q));
	q->avail->idx = q->last_avail;		/* the guest starts afresh */
	rx_chain(q, 1, 2048, VQ_DESC_F_WRITE);
	vu_flush_one(c, 60);
	CHECK_EQ(q->used->ring[(q->used_idx - 1) & (A_NUM - 1)].id, 1);
	close(q->kick_fd);
	q->kick_fd = -1;
	vu_ctx_free(c);
	free(host);
}

/* A transmit kick "eventfd" that is really a pipe at end of file stays
 * readable: the loop would spin on it forever. The ring stops instead,
 * and the fd leaves the loop. */
TEST(audit_vu_kick_fd_eof_stops_ring)
{
	uint8_t *host = calloc(1, A_SIZE);
	struct ctx *c = vu_ctx(host);
	struct virtq *q = &c->link.vu->vq[VU_TXQ];
	union eref ref = { .type = EREF_LINK };
	struct epoll_event ev;
	int p[2];

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(!pipe2(p, O_NONBLOCK | O_CLOEXEC));
	close(p[1]);
	CHECK(fuzz_vu_ring(c->link.vu, VU_TXQ, A_NUM, A_UVA + 0x4000, 0x1000));
	q->kick_fd = p[0];
	CHECK(!ep_add(c, p[0], EPOLLIN, ref));
	CHECK_EQ(epoll_wait(c->epfd, &ev, 1, 0), 1);
	CHECK_EQ(link_vu_ops.rx(c), 0);
	CHECK(q->broken);
	CHECK_EQ(c->stats.drops[DROP_VU_RING], 1);
	CHECK_EQ(epoll_wait(c->epfd, &ev, 1, 0), 0);
	close(p[0]);
	close(c->epfd);
	c->epfd = -1;
	vu_ctx_free(c);
	free(host);
}

/* A guest that offers malformed chains as fast as ferry returns them
 * (another vCPU rewriting avail->idx): a feeder thread, on another CPU,
 * keeps a ring's worth available for up to 1 s. The receive and
 * transmit loops took them for as long as it went on (each refused chain
 * takes no room), so a guest could hold ferry there for ever; now one
 * call takes at most a ring's worth of them. */
struct feeder {
	struct virtq *q;
	int cpu;			/* to run on, -1: any */
	int stop;
	unsigned long spins;
};

/* feed() - keep avail->idx a ring ahead of what ferry took, until told
 * to stop or for 1 s. */
static void *feed(void *arg)
{
	struct feeder *fd = arg;
	struct timespec t0, t;
	cpu_set_t set;

	if (fd->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(fd->cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	now_mono(&t0);
	do {
		uint16_t last = __atomic_load_n(&fd->q->last_avail,
						__ATOMIC_RELAXED);

		__atomic_store_n(&fd->q->avail->idx,
				 (uint16_t)(last + fd->q->num),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&fd->spins, fd->spins + 1, __ATOMIC_RELAXED);
		now_mono(&t);
	} while (!__atomic_load_n(&fd->stop, __ATOMIC_RELAXED) &&
		 ts_ms_diff(&t, &t0) < 1000);
	return NULL;
}

#define FLOOD_NUM	256	/* a ring the feeder easily keeps ahead of */

/* flood() - run one ferry call on ring qi (FLOOD_NUM entries, its
 * chains all descriptor 0 with flags) while a feeder thread on another
 * CPU floods it; returns the chains refused. */
static uint64_t flood(struct ctx *c, unsigned int qi, uint16_t flags)
{
	struct virtq *q = &c->link.vu->vq[qi];
	struct feeder fd = { q, -1, 0, 0 };
	uint64_t before = c->stats.drops[DROP_VU_CHAIN];
	cpu_set_t old, set;
	pthread_t th;
	unsigned int i;

	if (!fuzz_vu_ring(c->link.vu, qi, FLOOD_NUM,
			  A_UVA + 0x20000 + qi * 0x4000, 0x1000))
		return UINT64_MAX;
	q->desc[0].addr = A_GPA + A_BUF;
	q->desc[0].len = 2048;
	q->desc[0].flags = flags;
	for (i = 0; i < FLOOD_NUM; i++)
		q->avail->ring[i] = 0;
	q->avail->idx = q->last_avail;
	/* This thread on one CPU, the feeder on another, when there are
	 * two: then it really runs while ferry takes the chains. */
	if (!sched_getaffinity(0, sizeof(old), &old) && CPU_COUNT(&old) > 1) {
		int first = -1;

		for (i = 0; i < CPU_SETSIZE; i++) {
			if (!CPU_ISSET(i, &old))
				continue;
			if (first < 0) {
				first = (int)i;
				continue;
			}
			fd.cpu = (int)i;
			break;
		}
		CPU_ZERO(&set);
		CPU_SET(first, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	if (pthread_create(&th, NULL, feed, &fd))
		return UINT64_MAX;
	while (__atomic_load_n(&fd.spins, __ATOMIC_RELAXED) < 10000)
		;				/* the feeder is running */
	if (qi == VU_TXQ)
		link_vu_ops.rx(c);
	else
		vu_flush_one(c, 60);
	__atomic_store_n(&fd.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (fd.cpu >= 0)
		sched_setaffinity(0, sizeof(old), &old);
	return c->stats.drops[DROP_VU_CHAIN] - before;
}

TEST(audit_vu_flooded_ring_bounded)
{
	uint8_t *host = calloc(1, A_SIZE);
	struct ctx *c = vu_ctx(host);
	uint64_t tx = 0, rx = 0;
	int i;

	/* Five rounds: one that the feeder did not keep up with (another
	 * task on its CPU) proves nothing. Transmit ring: device-writable
	 * chains are refused. Receive ring: chains that are not
	 * device-writable are refused, and the frame is dropped (counted
	 * once more) when they keep coming. */
	for (i = 0; i < 5; i++) {
		tx = MAX(tx, flood(c, VU_TXQ, VQ_DESC_F_WRITE));
		rx = MAX(rx, flood(c, VU_RXQ, 0));
	}
	vu_ctx_free(c);
	free(host);
	CHECK(tx >= 1 && tx <= FLOOD_NUM);
	CHECK(rx >= 1 && rx <= FLOOD_NUM + 1);
}
