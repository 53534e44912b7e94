/* test_vu.c - vhost-user: memory translation, descriptor walking with
 * hostile rings, the control protocol over a socketpair (fds included),
 * and frames through both queues of a memfd-backed "guest". */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"
#include "vhost_user.h"
#include "virtq.h"

#define G_SIZE		(1u << 20)
#define G_GPA		0x100000ULL		/* guest physical base */
#define G_UVA		0x7f0000000000ULL	/* front-end's view */
#define Q_NUM		16
#define Q_OFF(q)	((q) * 0x4000u)		/* desc; avail +0x1000;
						 * used +0x2000 */
#define BUF_OFF		0x10000u

/* --- a guest memory in a plain buffer, rings in it -------------------- */

static void ring_at(struct virtq *q, const struct vu_mem *m, size_t off)
{
	virtq_reset(q);
	q->num = Q_NUM;
	q->desc_uva = G_UVA + off;
	q->avail_uva = G_UVA + off + 0x1000;
	q->used_uva = G_UVA + off + 0x2000;
	q->addr_set = true;
	q->started = q->enabled = true;
	virtq_map(q, m);
}

static void mem_one(struct vu_mem *m, uint8_t *host)
{
	memset(m, 0, sizeof(*m));
	m->n = 1;
	m->r[0].gpa = G_GPA;
	m->r[0].size = G_SIZE;
	m->r[0].uva = G_UVA;
	m->r[0].host = host;
}

/* ring_new() - a zeroed guest memory (free it) holding ring q at 0. */
static uint8_t *ring_new(struct virtq *q, struct vu_mem *m)
{
	uint8_t *host = calloc(1, G_SIZE);

	mem_one(m, host);
	ring_at(q, m, 0);
	return host;
}

static void desc_set(struct virtq *q, unsigned int i, uint64_t gpa,
		     uint32_t len, uint16_t flags, uint16_t next)
{
	q->desc[i].addr = gpa;
	q->desc[i].len = len;
	q->desc[i].flags = flags;
	q->desc[i].next = next;
}

static void avail_add(struct virtq *q, uint16_t head)
{
	q->avail->ring[q->avail->idx % Q_NUM] = head;
	q->avail->idx++;
}

TEST(vu_mem_translation_bounds)
{
	uint8_t *host = calloc(1, 2 * G_SIZE);
	struct iovec iov[4];
	struct vu_mem m;

	mem_one(&m, host);
	m.n = 2;			/* second region right after the first */
	m.r[1] = m.r[0];
	m.r[1].gpa = G_GPA + G_SIZE;
	m.r[1].uva = G_UVA + G_SIZE;
	m.r[1].host = host + G_SIZE;
	CHECK_EQ(vu_mem_iov(&m, G_GPA + 10, 100, iov, 4), 1);
	CHECK(iov[0].iov_base == host + 10 && iov[0].iov_len == 100);
	/* spanning both regions: two pieces */
	CHECK_EQ(vu_mem_iov(&m, G_GPA + G_SIZE - 8, 16, iov, 4), 2);
	CHECK_EQ(iov[0].iov_len, 8);
	CHECK(iov[1].iov_base == host + G_SIZE);
	CHECK_EQ(vu_mem_iov(&m, G_GPA + G_SIZE - 8, 16, iov, 1), -1);
	/* before, after, past the end, wrapping the address space */
	CHECK_EQ(vu_mem_iov(&m, G_GPA - 1, 2, iov, 4), -1);
	CHECK_EQ(vu_mem_iov(&m, G_GPA + 2 * G_SIZE - 1, 2, iov, 4), -1);
	CHECK_EQ(vu_mem_iov(&m, UINT64_MAX - 1, 16, iov, 4), -1);
	CHECK_EQ(vu_mem_iov(&m, G_GPA, 0, iov, 4), 0);
	CHECK(vu_mem_uva(&m, G_UVA, G_SIZE) == host);
	CHECK(vu_mem_uva(&m, G_UVA + 1, G_SIZE) == NULL);	/* straddles */
	CHECK(vu_mem_uva(&m, G_UVA - 1, 1) == NULL);
	CHECK(vu_mem_uva(&m, G_UVA + G_SIZE / 2, UINT64_MAX) == NULL);
	free(host);
}

TEST(vu_ring_map_checks)
{
	struct virtq q;
	struct vu_mem m;
	uint8_t *host = ring_new(&q, &m);

	CHECK(q.desc && virtq_ready(&q));
	q.num = 12;			/* not a power of two */
	CHECK(!virtq_map(&q, &m));
	q.num = Q_NUM;
	q.desc_uva = G_UVA + 8;		/* misaligned */
	CHECK(!virtq_map(&q, &m));
	q.desc_uva = G_UVA + G_SIZE - 16;	/* table runs off the end */
	CHECK(!virtq_map(&q, &m));
	CHECK(!virtq_ready(&q));
	free(host);
}

TEST(vu_chain_walk_good_and_hostile)
{
	struct vq_elem e;
	struct virtq q;
	struct vu_mem m;
	uint8_t *host = ring_new(&q, &m);

	CHECK_EQ(virtq_pop(&q, &m, false, &e), 0);	/* empty */
	/* 0 -> 3: two readable pieces */
	desc_set(&q, 0, G_GPA + BUF_OFF, 100, VQ_DESC_F_NEXT, 3);
	desc_set(&q, 3, G_GPA + BUF_OFF + 4096, 20, 0, 0);
	avail_add(&q, 0);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), 1);
	CHECK_EQ(e.head, 0);
	CHECK_EQ(e.niov, 2);
	CHECK_EQ(e.len, 120);
	CHECK(e.iov[1].iov_base == host + BUF_OFF + 4096);
	/* the same chain on a receive queue: wrong direction */
	avail_add(&q, 0);
	CHECK_EQ(virtq_pop(&q, &m, true, &e), -1);
	CHECK_EQ(e.head, 0);
	/* a loop */
	desc_set(&q, 1, G_GPA + BUF_OFF, 10, VQ_DESC_F_NEXT, 2);
	desc_set(&q, 2, G_GPA + BUF_OFF, 10, VQ_DESC_F_NEXT, 1);
	avail_add(&q, 1);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -1);
	/* next out of the table, indirect, address outside memory */
	desc_set(&q, 4, G_GPA + BUF_OFF, 10, VQ_DESC_F_NEXT, Q_NUM);
	desc_set(&q, 5, G_GPA + BUF_OFF, 16, VQ_DESC_F_INDIRECT, 0);
	desc_set(&q, 6, G_GPA + G_SIZE - 4, 10, 0, 0);
	desc_set(&q, 7, 0, 10, 0, 0);
	avail_add(&q, 4);
	avail_add(&q, 5);
	avail_add(&q, 6);
	avail_add(&q, 7);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -1);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -1);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -1);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -1);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), 0);
	/* a head beyond the ring breaks it */
	avail_add(&q, Q_NUM + 1);
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -2);
	CHECK(q.broken && !virtq_ready(&q));
	free(host);
}

TEST(vu_avail_index_jump_breaks_ring)
{
	struct vq_elem e;
	struct virtq q;
	struct vu_mem m;
	uint8_t *host = ring_new(&q, &m);

	q.avail->idx = Q_NUM + 1;		/* more than the ring holds */
	CHECK_EQ(virtq_pop(&q, &m, false, &e), -2);
	CHECK(!virtq_pending(&q));
	free(host);
}

TEST(vu_used_publish_and_notify)
{
	struct virtq q;
	struct vu_mem m;
	uint8_t *host = ring_new(&q, &m);
	uint64_t v = 0;

	q.call_fd = eventfd(0, EFD_NONBLOCK);
	CHECK(!virtq_publish(&q));		/* nothing pushed */
	virtq_push(&q, 3, 77);
	CHECK_EQ(q.used->idx, 0);		/* not visible yet */
	CHECK(virtq_publish(&q));
	CHECK_EQ(q.used->idx, 1);
	CHECK_EQ(q.used->ring[0].id, 3);
	CHECK_EQ(q.used->ring[0].len, 77);
	CHECK(read(q.call_fd, &v, 8) == 8 && v == 1);
	q.avail->flags = VQ_AVAIL_F_NO_INTERRUPT;
	virtq_push(&q, 4, 0);
	CHECK(!virtq_publish(&q));
	CHECK_EQ(q.used->idx, 2);
	CHECK(read(q.call_fd, &v, 8) < 0);	/* not notified */
	close(q.call_fd);
	free(host);
}

TEST(vu_no_notify_flag)
{
	struct virtq q;
	struct vu_mem m;
	uint8_t *host = ring_new(&q, &m);

	virtq_set_no_notify(&q, true);
	CHECK_EQ(q.used->flags, VQ_USED_F_NO_NOTIFY);
	virtq_set_no_notify(&q, true);		/* idempotent */
	CHECK_EQ(q.used->flags, VQ_USED_F_NO_NOTIFY);
	virtq_set_no_notify(&q, false);
	CHECK_EQ(q.used->flags, 0);
	q.enabled = false;			/* not ready: guest memory
						 * left alone */
	virtq_set_no_notify(&q, true);
	CHECK_EQ(q.used->flags, 0);
	q.enabled = true;
	q.broken = true;
	virtq_set_no_notify(&q, true);
	CHECK_EQ(q.used->flags, 0);
	free(host);
}

TEST(vu_random_rings_never_escape)
{
	uint8_t *host = calloc(1, G_SIZE);
	unsigned int round, i, seed = 12345;
	struct vq_elem e;
	struct virtq q;
	struct vu_mem m;

	mem_one(&m, host);
	for (round = 0; round < 2000; round++) {
		ring_at(&q, &m, 0);
		for (i = 0; i < 0x3000; i++) {
			seed = seed * 1103515245 + 12345;
			host[i] = (uint8_t)(seed >> 16);
		}
		/* mostly plausible addresses, some wild */
		for (i = 0; i < Q_NUM; i++)
			if (round & 1)
				q.desc[i].addr = G_GPA + (q.desc[i].addr %
							  (G_SIZE + 64));
		for (i = 0; i < 40; i++) {
			int r = virtq_pop(&q, &m, round & 2, &e);
			unsigned int k;
			size_t sum = 0;

			if (r == 1) {
				for (k = 0; k < e.niov; k++) {
					uint8_t *b = e.iov[k].iov_base;

					CHECK(b >= host &&
					      b + e.iov[k].iov_len <=
					      host + G_SIZE);
					sum += e.iov[k].iov_len;
				}
				CHECK_EQ(sum, e.len);
			}
			if (r == -1)
				CHECK(e.head < Q_NUM);
			if (r <= 0 && r != -1)
				break;
		}
	}
	free(host);
}

/* --- the control protocol over a socketpair ------------------------- */

struct fe {			/* a front-end stand-in */
	struct ctx *c;
	int sock;		/* our end */
	int memfd;
	uint8_t *host;		/* the guest memory, as we see it */
	int kick[VU_QUEUES], call[VU_QUEUES];
};

static int send_msg(int fd, uint32_t req, uint32_t flags, const void *p,
		    uint32_t size, const int *fds, unsigned int nfds)
{
	uint32_t hdr[3] = { req, flags, size };
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} cb;
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)p, size } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (nfds) {
		struct cmsghdr *cm;

		memset(cb.buf, 0, sizeof(cb.buf));	/* the padding too */
		mh.msg_control = cb.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return sendmsg(fd, &mh, 0) == (ssize_t)(12 + size) ? 0 : -1;
}

/* fe_req() - send a request, let ferry serve it, read a reply if one
 * came: returns its payload size (-1: none), payload in out. */
static int fe_req(struct fe *f, uint32_t req, uint32_t flags, const void *p,
		  uint32_t size, const int *fds, unsigned int nfds,
		  uint64_t *out)
{
	uint32_t hdr[3];
	struct pollfd pfd = { .fd = f->sock, .events = POLLIN };
	uint8_t buf[64];

	if (send_msg(f->sock, req, flags, p, size, fds, nfds))
		return -2;
	vu_ctrl_handler(f->c, EPOLLIN);
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLIN))
		return -1;
	if (recv(f->sock, hdr, 12, MSG_DONTWAIT) != 12)
		return -1;
	if (hdr[0] != req || hdr[1] != (VU_VERSION | VU_FLAG_REPLY) ||
	    hdr[2] > sizeof(buf))
		return -3;
	if (hdr[2] && recv(f->sock, buf, hdr[2], MSG_DONTWAIT) != hdr[2])
		return -3;
	if (out && hdr[2] >= 8)
		memcpy(out, buf, 8);
	return (int)hdr[2];
}

static void fe_start(struct fe *f)
{
	int sv[2];

	memset(f, 0, sizeof(*f));
	f->c = test_ctx();
	f->c->conf.mode = MODE_VM;
	f->c->epfd = epoll_create1(EPOLL_CLOEXEC);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	vu_init(f->c);
	vu_attach(f->c, sv[0]);
	f->sock = sv[1];
	f->memfd = memfd_create("guest", MFD_CLOEXEC);
	if (ftruncate(f->memfd, G_SIZE))
		abort();
	f->host = mmap(NULL, G_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       f->memfd, 0);
}

static void fe_end(struct fe *f)
{
	unsigned int i;

	if (f->c->link.up)
		link_closed(f->c);
	munmap(f->c->link.vu->state_buf, f->c->link.vu->state_cap);
	munmap(f->c->link.vu, sizeof(struct vu_dev));
	close(f->c->epfd);
	test_ctx_free(f->c);
	close(f->sock);
	close(f->memfd);
	munmap(f->host, G_SIZE);
	for (i = 0; i < VU_QUEUES; i++) {
		if (f->kick[i] > 0)
			close(f->kick[i]);
		if (f->call[i] > 0)
			close(f->call[i]);
	}
}

#define V	VU_VERSION
#define ACK	(VU_VERSION | VU_FLAG_NEED_REPLY)

/* fe_setup() - what qemu does before frames can flow: features, memory,
 * both rings (Q_NUM entries at Q_OFF(q)), kick and call fds. */
static int fe_setup(struct fe *f, uint64_t features)
{
	uint64_t pf = VU_PF_REPLY_ACK, v = 0;
	struct { uint32_t n, pad; uint64_t gpa, size, uva, off; } mt = {
		1, 0, G_GPA, G_SIZE, G_UVA, 0 };
	unsigned int q;

	if (fe_req(f, VU_GET_FEATURES, V, NULL, 0, NULL, 0, &v) != 8 ||
	    v != VU_FEATURES)
		return 1;
	if (fe_req(f, VU_SET_FEATURES, V, &features, 8, NULL, 0, NULL) != -1)
		return 2;
	if (fe_req(f, VU_SET_PROTOCOL_FEATURES, V, &pf, 8, NULL, 0, NULL) != -1)
		return 3;
	if (fe_req(f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &f->memfd, 1,
		   &v) != 8 || v)
		return 4;
	for (q = 0; q < VU_QUEUES; q++) {
		uint32_t st[2] = { q, Q_NUM }, base[2] = { q, 0 };
		struct { uint32_t i, fl; uint64_t d, u, a, l; } ad = {
			q, 0, G_UVA + Q_OFF(q), G_UVA + Q_OFF(q) + 0x2000,
			G_UVA + Q_OFF(q) + 0x1000, 0 };
		uint64_t idx = q;

		f->kick[q] = eventfd(0, EFD_NONBLOCK);
		f->call[q] = eventfd(0, EFD_NONBLOCK);
		if (fe_req(f, VU_SET_VRING_NUM, ACK, st, 8, NULL, 0, &v) != 8 ||
		    v ||
		    fe_req(f, VU_SET_VRING_BASE, ACK, base, 8, NULL, 0, &v) != 8 ||
		    v ||
		    fe_req(f, VU_SET_VRING_ADDR, ACK, &ad, 40, NULL, 0, &v) != 8 ||
		    v ||
		    fe_req(f, VU_SET_VRING_CALL, ACK, &idx, 8, &f->call[q], 1,
			   &v) != 8 || v ||
		    fe_req(f, VU_SET_VRING_KICK, ACK, &idx, 8, &f->kick[q], 1,
			   &v) != 8 || v)
			return 10 + (int)q;
		st[1] = 1;
		if (fe_req(f, VU_SET_VRING_ENABLE, ACK, st, 8, NULL, 0, &v) != 8 ||
		    v)
			return 20 + (int)q;
	}
	return 0;
}

TEST(vu_protocol_negotiation)
{
	struct fe f;
	uint64_t v = 0, pf = VU_PF_REPLY_ACK;

	fe_start(&f);
	CHECK_EQ(fe_req(&f, VU_GET_PROTOCOL_FEATURES, V, NULL, 0, NULL, 0, &v),
		 8);
	CHECK_EQ(v, VU_PROTOCOL_FEATURES);
	CHECK_EQ(fe_req(&f, VU_SET_PROTOCOL_FEATURES, ACK, &pf, 8, NULL, 0,
			&v), 8);
	CHECK_EQ(v, 0);
	CHECK_EQ(fe_req(&f, VU_GET_QUEUE_NUM, V, NULL, 0, NULL, 0, &v), 8);
	CHECK_EQ(v, 1);
	CHECK_EQ(fe_req(&f, VU_SET_OWNER, ACK, NULL, 0, NULL, 0, &v), 8);
	CHECK_EQ(v, 0);
	/* an unknown request with a status asked for: error, still open */
	CHECK_EQ(fe_req(&f, 40, ACK, NULL, 0, NULL, 0, &v), 8);
	CHECK(v != 0);
	/* a ring index beyond our one queue pair closes */
	CHECK(f.c->link.up);
	{
		uint32_t st[2] = { 2, 256 };

		fe_req(&f, VU_SET_VRING_NUM, V, st, 8, NULL, 0, NULL);
	}
	CHECK(!f.c->link.up);
	fe_end(&f);
}

TEST(vu_protocol_errors_close)
{
	static const struct {
		uint32_t req, flags, size;
		uint64_t val;
	} bad[] = {
		{ VU_GET_FEATURES, 2, 0, 0 },			/* version */
		{ VU_GET_FEATURES, V | VU_FLAG_REPLY, 0, 0 },	/* a reply */
		{ VU_SET_FEATURES, V, 8, 1ULL << 63 },		/* not offered */
		{ VU_SET_FEATURES, V, 8, VU_F_MRG_RXBUF },	/* legacy */
		{ VU_SET_FEATURES, V, 4, 0 },			/* size */
		{ VU_SET_PROTOCOL_FEATURES, V, 8, 1ULL << 20 },
		{ VU_SET_VRING_NUM, V, 8, 0 },			/* num 0 */
		{ VU_SET_VRING_NUM, V, 8, 3ULL << 32 },	/* not pow2 */
		{ VU_SET_VRING_BASE, V, 8, 0x10000ULL << 32 },
		{ VU_SET_VRING_KICK, V, 8, 0 },			/* no fd */
		{ VU_SET_VRING_KICK, V, 8, 1ULL << 8 },		/* polling */
		{ VU_SET_VRING_ENABLE, V, 8, 2ULL << 32 },
		{ VU_SET_MEM_TABLE, V, 8, 0 },			/* 0 regions */
		{ 40, V, 0, 0 },			/* unknown, no ack */
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct fe f;

		fe_start(&f);
		fe_req(&f, bad[i].req, bad[i].flags, &bad[i].val, bad[i].size,
		       NULL, 0, NULL);
		if (f.c->link.up)
			printf("  case %u kept the connection\n", i);
		CHECK(!f.c->link.up);
		fe_end(&f);
	}
}

TEST(vu_oversized_and_fd_abuse_close)
{
	uint64_t big[2] = { 0, 0 };
	struct fe f;
	int fds[2];

	/* a payload size beyond the limit: closed before reading it */
	fe_start(&f);
	send_msg(f.sock, VU_GET_FEATURES, V, NULL, 0, NULL, 0);
	{
		uint32_t hdr[3] = { VU_SET_FEATURES, V, VU_PAYLOAD_MAX + 1 };

		CHECK(write(f.sock, hdr, 12) == 12);
	}
	vu_ctrl_handler(f.c, EPOLLIN);
	CHECK(!f.c->link.up);
	fe_end(&f);
	/* fds with a request that takes none */
	fe_start(&f);
	fds[0] = eventfd(0, 0);
	fe_req(&f, VU_SET_FEATURES, V, big, 8, fds, 1, NULL);
	CHECK(!f.c->link.up);
	close(fds[0]);
	fe_end(&f);
	/* two fds for a kick */
	fe_start(&f);
	fds[0] = eventfd(0, 0);
	fds[1] = eventfd(0, 0);
	fe_req(&f, VU_SET_VRING_KICK, V, big, 8, fds, 2, NULL);
	CHECK(!f.c->link.up);
	close(fds[0]);
	close(fds[1]);
	fe_end(&f);
}

/* A ring fd that is not an eventfd (a pipe could block the loop, a file
 * stays readable): refused with a log line, counted, the connection
 * closed; an eventfd is taken. */
TEST(vu_ring_fd_must_be_eventfd)
{
	static const uint32_t reqs[] = { VU_SET_VRING_CALL, VU_SET_VRING_KICK,
					 VU_SET_VRING_ERR };
	uint64_t idx = 0;
	unsigned int r, k;
	struct fe f;
	int p[2], fd;

	for (r = 0; r < ARRAY_SIZE(reqs); r++) {
		for (k = 0; k < 3; k++) {
			char tmpl[] = "/tmp/ferry-vu-XXXXXX";

			fe_start(&f);
			CHECK(pipe(p) == 0);
			fd = k == 0 ? p[0] : k == 1 ? p[1] : mkstemp(tmpl);
			CHECK(fd >= 0);
			if (k == 2)
				unlink(tmpl);
			fe_req(&f, reqs[r], V, &idx, 8, &fd, 1, NULL);
			CHECK(!f.c->link.up);
			CHECK_EQ(f.c->stats.drops[DROP_VU_FD], 1);
			close(p[0]);
			close(p[1]);
			if (k == 2)
				close(fd);
			fe_end(&f);
		}
	}
	/* another anonymous inode (epoll) is no eventfd either */
	fe_start(&f);
	fd = epoll_create1(0);
	fe_req(&f, VU_SET_VRING_CALL, V, &idx, 8, &fd, 1, NULL);
	CHECK(!f.c->link.up);
	CHECK_EQ(f.c->stats.drops[DROP_VU_FD], 1);
	close(fd);
	fe_end(&f);
	/* an eventfd is taken, non-blocking */
	fe_start(&f);
	fd = eventfd(0, 0);
	fe_req(&f, VU_SET_VRING_CALL, V, &idx, 8, &fd, 1, NULL);
	CHECK(f.c->link.up);
	CHECK_EQ(f.c->stats.drops[DROP_VU_FD], 0);
	CHECK(f.c->link.vu->vq[0].call_fd >= 0);
	CHECK(fcntl(f.c->link.vu->vq[0].call_fd, F_GETFL) & O_NONBLOCK);
	close(fd);
	fe_end(&f);
}

TEST(vu_mem_table_checks)
{
	struct { uint32_t n, pad; uint64_t gpa, size, uva, off; } mt = {
		1, 0, G_GPA, G_SIZE, G_UVA, 0 };
	uint64_t v = 0, pf = VU_PF_REPLY_ACK;
	struct fe f;
	int empty;

	fe_start(&f);
	fe_req(&f, VU_SET_PROTOCOL_FEATURES, V, &pf, 8, NULL, 0, NULL);
	/* beyond the end of the file: refused, connection kept */
	mt.off = 4096;
	CHECK_EQ(fe_req(&f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &f.memfd,
			1, &v), 8);
	CHECK(v != 0);
	mt.off = 0;
	mt.size = 0;
	CHECK_EQ(fe_req(&f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &f.memfd,
			1, &v), 8);
	CHECK(v != 0);
	mt.size = G_SIZE;
	mt.gpa = UINT64_MAX - 10;
	CHECK_EQ(fe_req(&f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &f.memfd,
			1, &v), 8);
	CHECK(v != 0);
	CHECK_EQ(f.c->link.vu->mem.n, 0);
	mt.gpa = G_GPA;
	/* an empty file: mapping it "works", touching it is SIGBUS (the
	 * rings of the next SET_VRING_ADDR): refused like a short one */
	empty = memfd_create("empty", MFD_CLOEXEC);
	CHECK_EQ(fe_req(&f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &empty, 1,
			&v), 8);
	CHECK(v != 0);
	CHECK_EQ(f.c->link.vu->mem.n, 0);
	close(empty);
	CHECK_EQ(fe_req(&f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &f.memfd,
			1, &v), 8);
	CHECK_EQ(v, 0);
	CHECK_EQ(f.c->link.vu->mem.n, 1);
	/* replaced by a second table: still one region */
	CHECK_EQ(fe_req(&f, VU_SET_MEM_TABLE, ACK, &mt, sizeof(mt), &f.memfd,
			1, &v), 8);
	CHECK_EQ(f.c->link.vu->mem.n, 1);
	/* region count and fd count disagree: protocol error */
	fe_req(&f, VU_SET_MEM_TABLE, V, &mt, sizeof(mt), NULL, 0, NULL);
	CHECK(!f.c->link.up);
	fe_end(&f);
}

/* An ARP request from the guest for the gateway. */
static size_t guest_arp(uint8_t *f)
{
	static const uint8_t req[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 2, 8, 6,
		0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 2, 198, 51, 100, 2,
		0, 0, 0, 0, 0, 0, 198, 51, 100, 1,
	};

	memcpy(f, req, sizeof(req));
	return sizeof(req);
}

/* guest_avail() - queue q's available ring in the guest memory. */
static struct vq_avail *guest_avail(struct fe *f, unsigned int q)
{
	return (void *)(f->host + Q_OFF(q) + 0x1000);
}

/* guest_offer() - the guest makes descriptor slot of queue q a one-piece
 * chain (len bytes at guest address gpa, flags) and offers it. */
static void guest_offer(struct fe *f, unsigned int q, unsigned int slot,
			uint64_t gpa, uint32_t len, uint16_t flags)
{
	struct vq_desc *d = (void *)(f->host + Q_OFF(q));
	struct vq_avail *a = guest_avail(f, q);

	d[slot].addr = gpa;
	d[slot].len = len;
	d[slot].flags = flags;
	a->ring[a->idx % Q_NUM] = (uint16_t)slot;
	a->idx++;
}

/* guest_tx() - the guest transmits one ARP request on queue 1. */
static void guest_tx(struct fe *f, unsigned int slot)
{
	uint32_t off = BUF_OFF + slot * 2048;
	size_t len;

	memset(f->host + off, 0, 12);
	len = guest_arp(f->host + off + 12);
	guest_offer(f, VU_TXQ, slot, G_GPA + off, (uint32_t)(12 + len), 0);
}

/* guest_rx_post() - the guest posts n receive buffers of len bytes. */
static void guest_rx_post(struct fe *f, unsigned int n, uint32_t len)
{
	const struct vq_avail *a = guest_avail(f, VU_RXQ);
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned int s = a->idx % Q_NUM;

		guest_offer(f, VU_RXQ, s, G_GPA + 0x80000 + s * 2048, len,
			    VQ_DESC_F_WRITE);
	}
}

TEST(vu_frames_both_ways)
{
	struct vq_used *rxu, *txu;
	struct fe f;
	uint64_t v;
	uint8_t *b;

	fe_start(&f);
	CHECK_EQ(fe_setup(&f, VU_FEATURES), 0);
	rxu = (void *)(f.host + Q_OFF(VU_RXQ) + 0x2000);
	txu = (void *)(f.host + Q_OFF(VU_TXQ) + 0x2000);
	guest_rx_post(&f, 1, 2048);
	guest_tx(&f, 0);
	tap_handler(f.c, EPOLLIN);		/* the kick */
	CHECK_EQ(txu->idx, 1);
	CHECK_EQ(txu->flags, 0);	/* kicks on again after the drain */
	CHECK_EQ(txu->ring[0].id, 0);
	CHECK(read(f.call[VU_TXQ], &v, 8) == 8);
	CHECK_EQ(f.c->stats.rx_frames, 1);
	tap_flush(f.c);				/* the ARP reply */
	CHECK_EQ(rxu->idx, 1);
	CHECK_EQ(rxu->flags, VQ_USED_F_NO_NOTIFY);	/* never wanted */
	CHECK_EQ(rxu->ring[0].len, 12 + ETH_ZLEN_);	/* 42, padded */
	b = f.host + 0x80000 + rxu->ring[0].id * 2048;
	CHECK_EQ(b[10] | b[11] << 8, 1);	/* num_buffers */
	CHECK_EQ(rd16(b + 12 + 12), ETH_P_ARP_);
	CHECK_EQ(rd16(b + 12 + 20), 2);		/* ARP reply */
	CHECK(read(f.call[VU_RXQ], &v, 8) == 8);
	/* small buffers: one frame (12 + 60 bytes) over four chains
	 * (mergeable) */
	guest_rx_post(&f, 4, 20);
	guest_tx(&f, 1);
	tap_handler(f.c, EPOLLIN);
	tap_flush(f.c);
	CHECK_EQ(rxu->idx, 5);
	CHECK_EQ(rxu->ring[1].len, 20);
	CHECK_EQ(rxu->ring[2].len, 20);
	CHECK_EQ(rxu->ring[3].len, 20);
	CHECK_EQ(rxu->ring[4].len, 12 + ETH_ZLEN_ - 60);
	b = f.host + 0x80000 + rxu->ring[1].id * 2048;
	CHECK_EQ(b[10], 4);
	/* no buffers left: the frame is dropped and counted */
	guest_tx(&f, 2);
	tap_handler(f.c, EPOLLIN);
	tap_flush(f.c);
	CHECK_EQ(rxu->idx, 5);
	CHECK_EQ(f.c->stats.drops[DROP_VU_NO_BUFFER], 1);
	/* the guest stops the transmit ring: frames wait in it */
	{
		uint32_t st[2] = { VU_TXQ, 0 };

		CHECK_EQ(fe_req(&f, VU_GET_VRING_BASE, V, st, 8, NULL, 0, &v),
			 8);
		CHECK_EQ(v >> 32, 3);		/* last_avail_idx */
	}
	guest_tx(&f, 3);
	CHECK_EQ(f.c->link.ops->rx(f.c), 0);
	fe_end(&f);
}

/* --- dirty logging (live migration) ------------------------------------ */

#define LOG_OFF		4096u		/* the bitmap's offset in its fd */
#define LOG_BYTES	((G_GPA + G_SIZE) / 4096 / 8)	/* all of memory */
#define LOG_USED(q)	(G_GPA + 0xc0000 + (q) * 0x1000) /* log addresses */

/* log_bit() - is the page of guest address gpa marked in the bitmap? */
static bool log_bit(const uint8_t *bits, uint64_t gpa)
{
	uint64_t p = gpa / 4096;

	return bits[p / 8] & (1u << (p % 8));
}

/* log_count() - pages marked in the bitmap. */
static unsigned int log_count(const uint8_t *bits)
{
	unsigned int i, n = 0;

	for (i = 0; i < LOG_BYTES; i++)
		n += (unsigned int)__builtin_popcount(bits[i]);
	return n;
}

/* fe_log_start() - negotiate LOG_SHMFD, hand ferry a bitmap in a memfd
 * (*fd, mapped at *bits) and turn logging on for data and both used
 * rings (logged at LOG_USED(q), away from where the rings are, so a mark
 * there shows which address was used). */
static int fe_log_start(struct fe *f, int *fd, uint8_t **bits)
{
	uint64_t pf = VU_PF_REPLY_ACK | VU_PF_LOG_SHMFD, v = 1;
	uint64_t feat = VU_FEATURES, lb[2] = { LOG_BYTES, LOG_OFF };
	void *p;
	unsigned int q;

	*fd = memfd_create("log", MFD_CLOEXEC);
	if (ftruncate(*fd, LOG_OFF + LOG_BYTES))
		return 1;
	p = mmap(NULL, LOG_OFF + LOG_BYTES, PROT_READ | PROT_WRITE,
		 MAP_SHARED, *fd, 0);
	*bits = (uint8_t *)p + LOG_OFF;
	if (fe_req(f, VU_SET_PROTOCOL_FEATURES, V, &pf, 8, NULL, 0, NULL) != -1)
		return 2;
	/* the reply comes unasked, with a status */
	if (fe_req(f, VU_SET_LOG_BASE, V, lb, 16, fd, 1, &v) != 8 || v)
		return 3;
	if (fe_req(f, VU_SET_FEATURES, V, &feat, 8, NULL, 0, NULL) != -1)
		return 4;
	for (q = 0; q < VU_QUEUES; q++) {
		struct { uint32_t i, fl; uint64_t d, u, a, l; } ad = {
			q, VU_VRING_F_LOG, G_UVA + Q_OFF(q),
			G_UVA + Q_OFF(q) + 0x2000, G_UVA + Q_OFF(q) + 0x1000,
			LOG_USED(q) };

		if (fe_req(f, VU_SET_VRING_ADDR, ACK, &ad, 40, NULL, 0, &v) != 8 ||
		    v)
			return 5;
	}
	return 0;
}

/* Every page ferry writes while logging is on is marked: the receive
 * buffers a frame lands in (one chain, a chain of two descriptors on two
 * pages, a frame merged over three chains), the used ring of both queues
 * at their log addresses; pages only read (transmit buffers, descriptor
 * tables, available rings) are not. Logging off: nothing marked. */
TEST(vu_dirty_log_marks_every_write)
{
	struct vq_desc *rxd;
	struct vq_avail *rxa;
	uint8_t *bits;
	struct fe f;
	int logfd;

	fe_start(&f);
	CHECK_EQ(fe_setup(&f, VU_FEATURES & ~VU_F_LOG_ALL), 0);
	CHECK_EQ(fe_log_start(&f, &logfd, &bits), 0);
	CHECK(f.c->link.vu->data_log && f.c->link.vu->vq[0].log &&
	      f.c->link.vu->vq[1].log);
	/* one frame each way, single chains */
	guest_rx_post(&f, 1, 2048);
	guest_tx(&f, 0);
	tap_handler(f.c, EPOLLIN);
	tap_flush(f.c);
	CHECK(log_bit(bits, LOG_USED(VU_TXQ)));
	CHECK(log_bit(bits, LOG_USED(VU_RXQ)));
	CHECK(log_bit(bits, G_GPA + 0x80000));		/* the reply's buffer */
	CHECK(!log_bit(bits, G_GPA + BUF_OFF));		/* only read */
	CHECK(!log_bit(bits, G_GPA + Q_OFF(VU_RXQ)));	/* descriptors */
	CHECK(!log_bit(bits, G_GPA + Q_OFF(VU_TXQ) + 0x2000)); /* not here */
	CHECK_EQ(log_count(bits), 3);
	/* a receive chain of two descriptors on two pages */
	memset(bits, 0, LOG_BYTES);
	rxd = (void *)(f.host + Q_OFF(VU_RXQ));
	rxa = guest_avail(&f, VU_RXQ);
	rxd[4] = (struct vq_desc){ G_GPA + 0x90000, 30,
				   VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 5 };
	rxd[5] = (struct vq_desc){ G_GPA + 0xa0000, 2048, VQ_DESC_F_WRITE, 0 };
	rxa->ring[rxa->idx % Q_NUM] = 4;
	rxa->idx++;
	guest_tx(&f, 1);
	tap_handler(f.c, EPOLLIN);
	tap_flush(f.c);
	CHECK(log_bit(bits, G_GPA + 0x90000));
	CHECK(log_bit(bits, G_GPA + 0xa0000));
	CHECK_EQ(log_count(bits), 4);		/* and both used rings */
	/* one frame merged over three chains: slots 2, 3 (one page), 4 */
	memset(bits, 0, LOG_BYTES);
	guest_rx_post(&f, 3, 20);
	guest_tx(&f, 2);
	tap_handler(f.c, EPOLLIN);
	tap_flush(f.c);
	CHECK(log_bit(bits, G_GPA + 0x80000 + 2 * 2048));
	CHECK(log_bit(bits, G_GPA + 0x80000 + 4 * 2048));
	CHECK_EQ(log_count(bits), 4);
	CHECK_EQ(f.c->link.vu->log.outside, 0);
	/* logging off (LOG_ALL cleared): the same traffic marks nothing */
	{
		uint64_t feat = VU_FEATURES & ~VU_F_LOG_ALL;

		fe_req(&f, VU_SET_FEATURES, V, &feat, 8, NULL, 0, NULL);
	}
	CHECK(!f.c->link.vu->data_log && !f.c->link.vu->vq[0].log);
	memset(bits, 0, LOG_BYTES);
	guest_rx_post(&f, 1, 2048);
	guest_tx(&f, 3);
	tap_handler(f.c, EPOLLIN);
	tap_flush(f.c);
	CHECK_EQ(f.c->stats.rx_frames, 4);
	CHECK_EQ(log_count(bits), 0);
	munmap(bits - LOG_OFF, LOG_OFF + LOG_BYTES);
	close(logfd);
	fe_end(&f);
}

/* SET_LOG_BASE: a bitmap beyond its file is refused with a status (the
 * connection kept, no log); without LOG_SHMFD negotiated, or without
 * its fd, the message is a protocol error. */
TEST(vu_log_base_checks)
{
	uint64_t pf = VU_PF_REPLY_ACK | VU_PF_LOG_SHMFD, v = 0;
	uint64_t lb[2] = { LOG_BYTES, LOG_OFF };
	struct fe f;
	int fd = memfd_create("log", MFD_CLOEXEC);

	CHECK(ftruncate(fd, LOG_OFF) == 0);		/* too short */
	fe_start(&f);
	fe_req(&f, VU_SET_PROTOCOL_FEATURES, V, &pf, 8, NULL, 0, NULL);
	CHECK_EQ(fe_req(&f, VU_SET_LOG_BASE, V, lb, 16, &fd, 1, &v), 8);
	CHECK(v != 0);
	CHECK(f.c->link.up && !f.c->link.vu->log.bits);
	lb[1] = UINT64_MAX - 8;				/* wraps */
	CHECK_EQ(fe_req(&f, VU_SET_LOG_BASE, V, lb, 16, &fd, 1, &v), 8);
	CHECK(v != 0);
	CHECK(ftruncate(fd, LOG_OFF + LOG_BYTES) == 0);
	lb[1] = LOG_OFF;
	CHECK_EQ(fe_req(&f, VU_SET_LOG_BASE, V, lb, 16, &fd, 1, &v), 8);
	CHECK_EQ(v, 0);
	CHECK(f.c->link.vu->log.bits && f.c->link.vu->log.size == LOG_BYTES);
	/* SET_LOG_FD: an fd taken (and closed), none is an error */
	CHECK_EQ(fe_req(&f, VU_SET_LOG_FD, ACK, NULL, 0, &fd, 1, &v), 8);
	CHECK_EQ(v, 0);
	fe_req(&f, VU_SET_LOG_BASE, V, lb, 16, NULL, 0, NULL);	/* no fd */
	CHECK(!f.c->link.up);
	fe_end(&f);
	fe_start(&f);				/* LOG_SHMFD not negotiated */
	fe_req(&f, VU_SET_LOG_BASE, V, lb, 16, &fd, 1, NULL);
	CHECK(!f.c->link.up);
	fe_end(&f);
	close(fd);
}

/* The bitmap's own bounds: marks past its end are counted, not made;
 * a range reaching the top of the address space does not wrap; pieces
 * are translated back through the memory table, and a piece outside it
 * is counted. */
TEST(vu_log_bounds)
{
	uint8_t bits[2] = { 0, 0 }, *host = calloc(1, G_SIZE);
	struct vu_log l = { .bits = bits, .size = 1 };	/* pages 0-7 */
	struct iovec iov[2];
	struct vu_mem m;

	vu_log_gpa(&l, 4096 * 7 + 10, 4096);	/* pages 7 and 8 */
	CHECK_EQ(bits[0], 0x80);
	CHECK_EQ(bits[1], 0);
	CHECK_EQ(l.outside, 1);
	vu_log_gpa(&l, UINT64_MAX - 10, 100);
	CHECK_EQ(l.outside, 3);
	vu_log_gpa(&l, 0, 0);			/* nothing */
	CHECK_EQ(bits[0], 0x80);
	vu_log_gpa(NULL, 0, 10);		/* no log: nothing */
	mem_one(&m, host);
	m.r[0].gpa = 0;
	iov[0] = (struct iovec){ host + 4096, 100 };
	iov[1] = (struct iovec){ bits, 10 };	/* not guest memory */
	vu_log_iov(&l, &m, iov, 2, 50);		/* only the first 50 bytes */
	CHECK_EQ(bits[0], 0x82);
	CHECK_EQ(l.outside, 3);
	vu_log_iov(&l, &m, iov, 2, 110);
	CHECK_EQ(l.outside, 4);
	free(host);
}
