/* test_migrate.c - the device state of a live migration: the format's
 * round trip, the decoder's refusals (another version, truncated,
 * corrupted, malformed records), what migrate.c saves and applies, and
 * the transfer through SET_DEVICE_STATE_FD / CHECK_DEVICE_STATE over a
 * socketpair with a pipe, as qemu drives it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "ferry.h"
#include "mig_state.h"
#include "migrate.h"
#include "tcp_conn.h"
#include "unit.h"
#include "util.h"
#include "vhost_user.h"

/* What a decode handed on. */
struct seen {
	unsigned int guests, tcp, udp;
	struct mig_guest g;
	struct mig_tcp t;
	struct mig_udp u;
};

static void seen_guest(void *o, const struct mig_guest *g)
{
	((struct seen *)o)->guests++;
	((struct seen *)o)->g = *g;
}

static void seen_tcp(void *o, const struct mig_tcp *t)
{
	((struct seen *)o)->tcp++;
	((struct seen *)o)->t = *t;
}

static void seen_udp(void *o, const struct mig_udp *u)
{
	((struct seen *)o)->udp++;
	((struct seen *)o)->u = *u;
}

static const struct mig_visit seen_v = { seen_guest, seen_tcp, seen_udp };

/* sample() - a state with a guest, one TCP and one UDP record in buf. */
static size_t sample(uint8_t *buf, size_t cap)
{
	struct mig_guest g = { true, { 2, 0, 0, 0, 0, 2 }, { 198, 51, 100, 2 },
			       { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 },
			       { 0xfe, 0x80, [15] = 2 } };
	struct mig_tcp t = { .key = { .a = { [10] = 0xff, [11] = 0xff, 198, 51,
					     100, 2 },
				      .b = { [10] = 0xff, [11] = 0xff, 203, 0,
					     113, 7 },
				      .pa = 40000, .pb = 443 },
			     .state = TCP_CS_ESTABLISHED, .ws_from_guest = 7,
			     .ws_to_guest = 9, .mss_to_guest = 1460,
			     .seq_to_guest = 0xfffffff0u,
			     .seq_acked_by_guest = 0xffffff00u,
			     .seq_from_guest = 12345, .wnd_from_guest = 1u << 20,
			     .wnd_to_guest = 65535 };
	struct mig_udp u = { .key = { .pa = 5353, .pb = 53 } };
	struct mig_enc e;

	mig_enc_start(&e, buf, cap);
	mig_put_guest(&e, &g);
	mig_put_tcp(&e, &t);
	mig_put_udp(&e, &u);
	return mig_enc_finish(&e);
}

TEST(mig_state_round_trip)
{
	uint8_t buf[512];
	struct seen s = { 0 };
	const char *why = NULL;
	size_t len = sample(buf, sizeof(buf));

	CHECK_EQ(len, MIG_HDR_LEN + 3 * MIG_REC_HDR + MIG_GUEST_LEN +
		      MIG_TCP_LEN + MIG_UDP_LEN);
	CHECK(!memcmp(buf, "FERRYMIG", 8));
	CHECK_EQ(mig_decode(buf, len, &seen_v, &s, &why), 0);
	CHECK(why == NULL);
	CHECK(s.guests == 1 && s.tcp == 1 && s.udp == 1);
	CHECK(s.g.mac_known && s.g.mac[5] == 2 && s.g.seen4[3] == 2);
	CHECK(s.g.seen6[0] == 0x20 && s.g.ll6[0] == 0xfe);
	CHECK_EQ(s.t.key.pa, 40000);
	CHECK_EQ(s.t.key.pb, 443);
	CHECK_EQ(s.t.key.b[15], 7);
	CHECK_EQ(s.t.state, TCP_CS_ESTABLISHED);
	CHECK(s.t.ws_from_guest == 7 && s.t.ws_to_guest == 9);
	CHECK_EQ(s.t.mss_to_guest, 1460);
	CHECK_EQ(s.t.seq_to_guest, 0xfffffff0u);
	CHECK_EQ(s.t.seq_acked_by_guest, 0xffffff00u);
	CHECK_EQ(s.t.seq_from_guest, 12345);
	CHECK_EQ(s.t.wnd_from_guest, 1u << 20);
	CHECK_EQ(s.t.wnd_to_guest, 65535);
	CHECK(s.u.key.pa == 5353 && s.u.key.pb == 53);
	/* no room: the encoder says so, no partial state */
	CHECK_EQ(sample(buf, MIG_HDR_LEN + 10), 0);
	CHECK_EQ(sample(buf, 10), 0);
}

/* decode_fails() - decoding len bytes of buf fails with a reason naming
 * want, and hands nothing on. */
static bool decode_fails(const uint8_t *buf, size_t len, const char *want)
{
	struct seen s = { 0 };
	const char *why = NULL;

	if (mig_decode(buf, len, &seen_v, &s, &why) != -1 || !why)
		return false;
	if (s.guests || s.tcp || s.udp)
		return false;
	if (!strstr(why, want)) {
		printf("  reason \"%s\", wanted \"%s\"\n", why, want);
		return false;
	}
	return true;
}

/* refix() - put back a valid length and checksum after editing the body */
static void refix(uint8_t *buf, size_t len)
{
	wr32(buf + 16, (uint32_t)(len - MIG_HDR_LEN));
	wr32(buf + 20, mig_crc32(buf + MIG_HDR_LEN, len - MIG_HDR_LEN));
}

TEST(mig_state_refusals)
{
	uint8_t buf[512], bad[512];
	size_t len = sample(buf, sizeof(buf)), k;

	CHECK(decode_fails(buf, 0, "truncated"));
	CHECK(decode_fails(buf, MIG_HDR_LEN - 1, "truncated"));
	for (k = MIG_HDR_LEN; k < len; k += 7)	/* every cut: refused */
		CHECK(decode_fails(buf, k, "truncated"));
	memcpy(bad, buf, len);
	bad[0] = 'X';
	CHECK(decode_fails(bad, len, "magic"));
	memcpy(bad, buf, len);
	wr32(bad + 8, MIG_VERSION + 1);		/* a newer version */
	CHECK(decode_fails(bad, len, "version"));
	wr32(bad + 8, 0);
	CHECK(decode_fails(bad, len, "version"));
	memcpy(bad, buf, len);
	wr32(bad + 12, 1);
	CHECK(decode_fails(bad, len, "flags"));
	memcpy(bad, buf, len);
	bad[len - 1] ^= 1;			/* one bit flipped */
	CHECK(decode_fails(bad, len, "checksum"));
	memcpy(bad, buf, len + 1 <= sizeof(bad) ? len : 0);
	bad[len] = 0;
	CHECK(decode_fails(bad, len + 1, "trailing"));
	/* records: bad type, bad length, cut inside, two guests (each with
	 * a valid checksum: the record checks themselves refuse) */
	memcpy(bad, buf, len);
	wr16(bad + MIG_HDR_LEN, 9);
	refix(bad, len);
	CHECK(decode_fails(bad, len, "unknown record"));
	memcpy(bad, buf, len);
	wr16(bad + MIG_HDR_LEN + 2, MIG_GUEST_LEN - 1);
	refix(bad, len);
	CHECK(decode_fails(bad, len, "wrong length"));
	memcpy(bad, buf, len);
	refix(bad, len - 3);
	CHECK(decode_fails(bad, len - 3, "truncated"));
	memcpy(bad, buf, len);
	refix(bad, MIG_HDR_LEN + 2);
	CHECK(decode_fails(bad, MIG_HDR_LEN + 2, "header truncated"));
	memcpy(bad, buf, MIG_HDR_LEN + MIG_REC_HDR + MIG_GUEST_LEN);
	memcpy(bad + MIG_HDR_LEN + MIG_REC_HDR + MIG_GUEST_LEN,
	       buf + MIG_HDR_LEN, MIG_REC_HDR + MIG_GUEST_LEN);
	k = MIG_HDR_LEN + 2 * (MIG_REC_HDR + MIG_GUEST_LEN);
	refix(bad, k);
	CHECK(decode_fails(bad, k, "more than one guest"));
	/* an empty body is a valid state */
	{
		struct mig_enc e;
		struct seen s = { 0 };
		const char *why;

		mig_enc_start(&e, bad, sizeof(bad));
		k = mig_enc_finish(&e);
		CHECK_EQ(k, MIG_HDR_LEN);
		CHECK_EQ(mig_decode(bad, k, &seen_v, &s, &why), 0);
	}
}

/* What a decode handed on of sockets and their queues. */
struct seen_sock {
	unsigned int socks, chunks;
	struct mig_tcp_sock k;
	uint8_t q[2][140000];
	size_t qn[2];
};

static void seen_ksock(void *o, const struct mig_tcp_sock *k)
{
	((struct seen_sock *)o)->socks++;
	((struct seen_sock *)o)->k = *k;
}

static void seen_kdata(void *o, unsigned int q, const uint8_t *p, size_t n)
{
	struct seen_sock *s = o;

	s->chunks++;
	memcpy(s->q[q] + s->qn[q], p, n);
	s->qn[q] += n;
}

static const struct mig_visit seen_kv = { .tcp_sock = seen_ksock,
					  .tcp_data = seen_kdata };

/* sock_sample() - a TCP record, its socket with a send queue of sq bytes
 * and a receive queue of rq (big ones take several data records). */
static size_t sock_sample(uint8_t *buf, size_t cap, uint32_t sq, uint32_t rq,
			  const uint8_t *bytes)
{
	struct mig_tcp t = { .state = TCP_CS_ESTABLISHED,
			     .flags = MIG_TCP_F_FWD | MIG_TCP_F_SACK };
	struct mig_tcp_sock k = {
		.v6 = 1, .opts = MIG_SOCK_SACK | MIG_SOCK_TS | MIG_SOCK_WS,
		.snd_ws = 7, .rcv_ws = 9, .mss = 65483,
		.local = { [15] = 1 }, .peer = { [15] = 1 },
		.lport = 18311, .pport = 40000,
		.snd_seq = 0xfffffff0u, .rcv_seq = 77, .sndq = sq,
		.notsent = sq / 2, .rcvq = rq, .ts = 123456,
		.snd_wl1 = 1, .snd_wnd = 2, .max_window = 3, .rcv_wnd = 4,
		.rcv_wup = 5 };
	struct mig_enc e;

	mig_enc_start(&e, buf, cap);
	mig_put_tcp(&e, &t);
	mig_put_tcp_sock(&e, &k);
	mig_put_tcp_data(&e, MIG_Q_SEND, bytes, sq);
	mig_put_tcp_data(&e, MIG_Q_RECV, bytes + sq, rq);
	return mig_enc_finish(&e);
}

/* A socket record and its queues: every field and byte back, queues cut
 * into records of MIG_DATA_MAX at most; out of order, short, long or
 * misplaced data refused. */
TEST(mig_state_socket_round_trip)
{
	static uint8_t bytes[200000], buf[220000], bad[220000];
	static struct seen_sock s;
	struct seen t = { 0 };
	uint32_t sq = 70000, rq = 130000 - 70000 + 10;
	const char *why = NULL;
	size_t len, i, off;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 7 + (i >> 9));
	len = sock_sample(buf, sizeof(buf), sq, rq, bytes);
	CHECK(len > 0);
	memset(&s, 0, sizeof(s));
	CHECK_EQ(mig_decode(buf, len, &seen_kv, &s, &why), 0);
	CHECK_EQ(mig_decode(buf, len, &seen_v, &t, &why), 0);
	CHECK(t.tcp == 1 && t.t.flags == (MIG_TCP_F_FWD | MIG_TCP_F_SACK));
	CHECK_EQ(s.socks, 1);
	CHECK_EQ(s.chunks, 3);		/* 65000 + 5000, 60010 */
	CHECK(s.k.v6 && s.k.opts == 7 && s.k.snd_ws == 7 && s.k.rcv_ws == 9);
	CHECK(s.k.mss == 65483 && s.k.lport == 18311 && s.k.pport == 40000);
	CHECK(s.k.local[15] == 1 && s.k.peer[15] == 1);
	CHECK(s.k.snd_seq == 0xfffffff0u && s.k.rcv_seq == 77);
	CHECK(s.k.sndq == sq && s.k.notsent == sq / 2 && s.k.rcvq == rq);
	CHECK(s.k.ts == 123456 && s.k.snd_wl1 == 1 && s.k.snd_wnd == 2 &&
	      s.k.max_window == 3 && s.k.rcv_wnd == 4 && s.k.rcv_wup == 5);
	CHECK(s.qn[0] == sq && !memcmp(s.q[0], bytes, sq));
	CHECK(s.qn[1] == rq && !memcmp(s.q[1], bytes + sq, rq));
	/* empty queues: no data record at all */
	len = sock_sample(buf, sizeof(buf), 0, 0, bytes);
	CHECK_EQ(len, MIG_HDR_LEN + 2 * MIG_REC_HDR + MIG_TCP_LEN +
		      MIG_TCP_SOCK_LEN);
	CHECK_EQ(mig_decode(buf, len, &seen_kv, &s, &why), 0);
	/* refusals, each with a valid checksum */
	len = sock_sample(buf, sizeof(buf), 10, 20, bytes);
	off = MIG_HDR_LEN + MIG_REC_HDR + MIG_TCP_LEN;	/* the socket's */
	memcpy(bad, buf + off, len - off);		/* no TCP before */
	memcpy(bad + MIG_HDR_LEN, buf + off, len - off);
	memcpy(bad, buf, MIG_HDR_LEN);
	refix(bad, MIG_HDR_LEN + len - off);
	CHECK(decode_fails(bad, MIG_HDR_LEN + len - off, "without its"));
	memcpy(bad, buf, len);				/* data short */
	wr32(bad + off + MIG_REC_HDR + 60, 21);
	refix(bad, len);
	CHECK(decode_fails(bad, len, "short"));
	memcpy(bad, buf, len);				/* data long */
	wr32(bad + off + MIG_REC_HDR + 60, 19);
	refix(bad, len);
	CHECK(decode_fails(bad, len, "too long"));
	memcpy(bad, buf, len);				/* unsent > queue */
	wr32(bad + off + MIG_REC_HDR + 56, 11);
	refix(bad, len);
	CHECK(decode_fails(bad, len, "unsent"));
	memcpy(bad, buf, len);				/* unknown queue */
	bad[off + MIG_REC_HDR + MIG_TCP_SOCK_LEN + MIG_REC_HDR] = 2;
	refix(bad, len);
	CHECK(decode_fails(bad, len, "unknown queue"));
	memcpy(bad, buf, len);			/* data record too short */
	wr16(bad + off + MIG_REC_HDR + MIG_TCP_SOCK_LEN + 2, MIG_DATA_HDR);
	refix(bad, len);
	CHECK(decode_fails(bad, len, "wrong length"));
	/* cut anywhere: refused */
	for (i = MIG_HDR_LEN; i < len; i += 3)
		CHECK(decode_fails(buf, i, "truncated"));
}

/* Random bytes, and random changes to a good state, are refused or
 * decode: never read out of bounds (ASan), never half-applied. */
TEST(mig_state_garbage)
{
	uint8_t buf[512], bad[512];
	size_t len = sample(buf, sizeof(buf));
	unsigned int i, seed = 22;

	for (i = 0; i < 2000; i++) {
		size_t n = (size_t)rand_r(&seed) % (len + 1), k;
		struct seen s = { 0 };
		const char *why;

		memcpy(bad, buf, len);
		for (k = 0; k < 1 + (size_t)rand_r(&seed) % 4; k++)
			bad[(size_t)rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
		if (i & 1)
			refix(bad, len);	/* past the checksum */
		if (!mig_decode(bad, i & 2 ? n : len, &seen_v, &s, &why))
			CHECK(s.guests <= 1);
	}
}

/* migrate_save() on a context with a guest and one TCP connection, then
 * migrate_load() into a fresh context: the guest's MAC and addresses
 * arrive; a corrupted state changes nothing. */
TEST(mig_save_load_context)
{
	struct ctx *src = test_ctx(), *dst = test_ctx();
	uint8_t *buf = malloc(4096);
	struct tcp_conn *tc;
	struct flow *fl;
	struct seen s = { 0 };
	const char *why;
	size_t len;

	src->guest_mac_known = true;
	memcpy(src->guest_mac, "\x02\x11\x22\x33\x44\x55", 6);
	inet_pton(AF_INET, "198.51.100.2", &src->guest_seen4);
	inet_pton(AF_INET6, "2001:db8::2", &src->guest_seen6);
	fl = flow_alloc(&src->flows, FLOW_TCP);
	tc = FLOW_PRIV(fl, struct tcp_conn);
	tc->state = TCP_CS_ESTABLISHED;
	tc->seq_to_guest.v = 1000;
	tc->seq_from_guest.v = 2000;
	fl->f.key[FLOW_SIDE_GUEST].pa = 40001;
	len = migrate_save(src, buf, 4096);
	CHECK_EQ(len, MIG_HDR_LEN + 2 * MIG_REC_HDR + MIG_GUEST_LEN +
		      MIG_TCP_LEN);
	CHECK_EQ(mig_decode(buf, len, &seen_v, &s, &why), 0);
	CHECK(s.tcp == 1 && s.t.seq_to_guest == 1000 &&
	      s.t.seq_from_guest == 2000 && s.t.key.pa == 40001);
	CHECK_EQ(migrate_save(src, buf, 40), 0);	/* too small */
	len = migrate_save(src, buf, 4096);
	buf[MIG_HDR_LEN + 5] ^= 0xff;			/* corrupted */
	migrate_load(dst, buf, len);
	CHECK(!dst->guest_mac_known);
	buf[MIG_HDR_LEN + 5] ^= 0xff;
	migrate_load(dst, buf, len);
	CHECK(dst->guest_mac_known);
	CHECK(!memcmp(dst->guest_mac, src->guest_mac, 6));
	CHECK_EQ(dst->guest_seen4.s_addr, src->guest_seen4.s_addr);
	CHECK(!memcmp(&dst->guest_seen6, &src->guest_seen6, 16));
	CHECK_EQ(dst->flows.count[FLOW_TCP], 0);	/* not carried on */
	free(buf);
	test_ctx_free(src);
	test_ctx_free(dst);
}

/* --- the transfer over the vhost-user socket ------------------------ */

static int send_req(int fd, uint32_t req, const void *p, uint32_t size,
		    int pass_fd)
{
	uint32_t hdr[3] = { req, VU_VERSION, size };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cb;
	struct iovec iov[2] = { { hdr, 12 }, { (void *)p, size } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(cb.buf, 0, sizeof(cb.buf));
		mh.msg_control = cb.buf;
		mh.msg_controllen = sizeof(cb.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &mh, 0) == (ssize_t)(12 + size) ? 0 : -1;
}

/* reply_u64() - the u64 reply to req (-1 if none or another). */
static int64_t reply_u64(int fd, uint32_t req)
{
	uint32_t hdr[3];
	uint64_t v;

	if (recv(fd, hdr, 12, MSG_DONTWAIT) != 12 || hdr[0] != req ||
	    hdr[2] != 8 || recv(fd, &v, 8, MSG_DONTWAIT) != 8)
		return -1;
	return (int64_t)v;
}

/* A front-end stand-in on a socketpair, ferry's ops set. */
static struct ctx *vu_side(int *sock)
{
	struct ctx *c = test_ctx();
	uint64_t pf = VU_PF_REPLY_ACK | VU_PF_DEVICE_STATE;
	int sv[2];

	c->conf.mode = MODE_VM;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	vu_init(c);
	vu_state_ops_set(c, &migrate_vu_ops);
	vu_attach(c, sv[0]);
	*sock = sv[1];
	send_req(*sock, VU_SET_PROTOCOL_FEATURES, &pf, 8, -1);
	vu_ctrl_handler(c, EPOLLIN);
	return c;
}

static void vu_side_end(struct ctx *c, int sock)
{
	if (c->link.up)
		link_closed(c);
	munmap(c->link.vu->state_buf, c->link.vu->state_cap);
	munmap(c->link.vu, sizeof(struct vu_dev));
	close(c->epfd);
	test_ctx_free(c);
	close(sock);
}

/* The source saves into a pipe (its reply comes first, then the state,
 * then EOF); the destination loads it from another pipe; both answer
 * CHECK_DEVICE_STATE with success. The destination learns the guest. A
 * corrupted state is refused by the decoder (the transfer itself went
 * through: CHECK succeeds, the guest is not learnt). A bad direction is
 * answered with an error status. */
TEST(mig_device_state_transfer)
{
	uint32_t save[2] = { VU_STATE_SAVE, 0 }, load[2] = { VU_STATE_LOAD, 0 };
	uint8_t state[4096];
	int s1, s2, p[2], corrupt;
	struct ctx *src = vu_side(&s1);
	ssize_t n = 0, k;

	CHECK(src->link.vu->protocol_features & VU_PF_DEVICE_STATE);
	src->guest_mac_known = true;
	memcpy(src->guest_mac, "\x02\x11\x22\x33\x44\x66", 6);
	CHECK(pipe(p) == 0);
	send_req(s1, VU_SET_DEVICE_STATE_FD, save, 8, p[1]);
	close(p[1]);
	vu_ctrl_handler(src, EPOLLIN);
	CHECK_EQ(reply_u64(s1, VU_SET_DEVICE_STATE_FD), (int64_t)VU_STATE_NO_FD);
	while ((k = read(p[0], state + n, sizeof(state) - (size_t)n)) > 0)
		n += k;
	close(p[0]);
	CHECK_EQ(n, MIG_HDR_LEN + MIG_REC_HDR + MIG_GUEST_LEN);
	send_req(s1, VU_CHECK_DEVICE_STATE, NULL, 0, -1);
	vu_ctrl_handler(src, EPOLLIN);
	CHECK_EQ(reply_u64(s1, VU_CHECK_DEVICE_STATE), 0);
	/* a direction that does not exist: error status, link kept */
	save[0] = 7;
	CHECK(pipe(p) == 0);
	send_req(s1, VU_SET_DEVICE_STATE_FD, save, 8, p[1]);
	vu_ctrl_handler(src, EPOLLIN);
	CHECK_EQ(reply_u64(s1, VU_SET_DEVICE_STATE_FD), 1);
	CHECK(src->link.up);
	close(p[0]);
	close(p[1]);
	vu_side_end(src, s1);

	for (corrupt = 1; corrupt >= 0; corrupt--) {
		struct ctx *dst = vu_side(&s2);

		if (corrupt)
			state[n - 1] ^= 0x40;
		CHECK(pipe(p) == 0);
		/* the front-end writes before we read: the pipe holds it */
		CHECK(write(p[1], state, (size_t)n) == n);
		close(p[1]);
		send_req(s2, VU_SET_DEVICE_STATE_FD, load, 8, p[0]);
		close(p[0]);
		vu_ctrl_handler(dst, EPOLLIN);
		CHECK_EQ(reply_u64(s2, VU_SET_DEVICE_STATE_FD),
			 (int64_t)VU_STATE_NO_FD);
		send_req(s2, VU_CHECK_DEVICE_STATE, NULL, 0, -1);
		vu_ctrl_handler(dst, EPOLLIN);
		CHECK_EQ(reply_u64(s2, VU_CHECK_DEVICE_STATE), 0);
		CHECK_EQ(dst->guest_mac_known, !corrupt);
		if (!corrupt)
			CHECK_EQ(dst->guest_mac[5], 0x66);
		if (corrupt)
			state[n - 1] ^= 0x40;
		vu_side_end(dst, s2);
	}
}

/* corpus_state() - the seed file NAME of test/fuzz/corpus/mig into buf;
 * its length, or -1. */
static ssize_t corpus_state(const char *name, uint8_t *buf, size_t cap)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "test/fuzz/corpus/mig/%s", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, cap);
	close(fd);
	return n;
}

/* The fuzz seeds (gen_corpus.py mig()) stay in step with the format:
 * the good and the empty state decode, the broken ones do not. */
TEST(mig_corpus_seeds_decode_as_named)
{
	static const struct { const char *name; int rc; } seeds[] = {
		{ "good", 0 }, { "empty", 0 }, { "version1", -1 },
		{ "sock", 0 },
		{ "cut", -1 }, { "bad_len", -1 },
	};
	uint8_t buf[512];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(seeds); i++) {
		struct seen s = { 0 };
		const char *why;
		ssize_t n = corpus_state(seeds[i].name, buf, sizeof(buf));

		CHECK(n > 0);
		CHECK_EQ(mig_decode(buf, (size_t)n, &seen_v, &s, &why),
			 seeds[i].rc);
		if (!i)
			CHECK(s.guests == 1 && s.tcp == 1 && s.udp == 1 &&
			      s.t.key.pb == 443 && s.t.seq_from_guest == 2000);
	}
}

/* After a state is taken, the loop's timer announces the gateway once
 * frames reach the guest: a broadcast gratuitous ARP (sender = target =
 * the gateway, at our MAC) and an unsolicited NA from fe80::1 to ff02::1
 * (router and override set, solicited clear, our MAC as target link-layer
 * address). Not while the link is down; once only. */
TEST(mig_destination_announces_gateway)
{
	struct ctx *src = test_ctx(), *dst = test_ctx();
	uint8_t buf[512];
	const uint8_t *f;
	size_t len, n;

	n = migrate_save(src, buf, sizeof(buf));
	dst->link.up = false;
	migrate_load(dst, buf, n);
	CHECK(dst->link.announce);
	migrate_timer(dst);			/* no link: nothing yet */
	CHECK_EQ(test_tx_n(dst), 0);
	CHECK(dst->link.announce);
	dst->link.up = true;
	migrate_timer(dst);
	CHECK(!dst->link.announce);
	CHECK_EQ(test_tx_n(dst), 2);
	f = test_tx(dst, 0, &len);
	CHECK(len >= 42);			/* padded to 60 */
	CHECK(!memcmp(f, "\xff\xff\xff\xff\xff\xff", 6));
	CHECK(!memcmp(f + 6, dst->conf.our_mac, 6));
	CHECK_EQ(rd16(f + 12), 0x0806);
	CHECK_EQ(rd16(f + 14 + 6), 1);			/* request */
	CHECK(!memcmp(f + 14 + 8, dst->conf.our_mac, 6));
	CHECK(!memcmp(f + 14 + 14, "\xc6\x33\x64\x01", 4));	/* spa */
	CHECK(!memcmp(f + 14 + 24, "\xc6\x33\x64\x01", 4));	/* tpa */
	f = test_tx(dst, 1, &len);
	CHECK_EQ(len, 14 + 40 + 32);
	CHECK(!memcmp(f, "\x33\x33\x00\x00\x00\x01", 6));
	CHECK_EQ(rd16(f + 12), 0x86dd);
	CHECK_EQ(f[14 + 6], 58);			/* ICMPv6 */
	CHECK_EQ(f[14 + 7], 255);			/* hop limit */
	CHECK_EQ(f[14 + 8], 0xfe);			/* from fe80::1 */
	CHECK_EQ(f[14 + 24], 0xff);			/* to ff02::1 */
	CHECK_EQ(f[54], 136);				/* NA */
	CHECK_EQ(f[54 + 4], 0xa0);			/* R, O; not S */
	CHECK_EQ(f[54 + 8], 0xfe);			/* target fe80::1 */
	CHECK(!memcmp(f + 54 + 26, dst->conf.our_mac, 6));
	test_tx_reset(dst);
	migrate_timer(dst);				/* once only */
	CHECK_EQ(test_tx_n(dst), 0);
	test_ctx_free(src);
	test_ctx_free(dst);
}
