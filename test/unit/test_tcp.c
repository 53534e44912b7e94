/* test_tcp.c - TCP translation driven through tap_input() with frames
 * built here, against real sockets on the host loopback: sequence
 * arithmetic, the handshake and its options, data both ways with
 * acknowledgement semantics, half-close, resets, refusal. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "nat.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "unit.h"
#include "util.h"

TEST(tcp_seq_wraps)
{
	seq_t a = seq_make(0xfffffff0u), b = seq_add(a, 0x20);

	CHECK_EQ(b.v, 0x10);
	CHECK(seq_lt(a, b));
	CHECK(seq_gt(b, a));
	CHECK_EQ(seq_diff(b, a), 0x20);
	CHECK_EQ(seq_diff(a, b), -0x20);
	CHECK(seq_le(a, a) && seq_ge(a, a) && seq_eq(a, a));
	CHECK(!seq_lt(a, a));
	/* Half the space ahead is "after", the rest "before". */
	CHECK(seq_gt(seq_add(a, 0x7fffffff), a));
	CHECK(seq_lt(seq_add(a, 0x80000001u), a));
}

/* A test guest: its side of one connection. */
struct tguest {
	struct ctx *c;
	bool v6;
	uint16_t sport, dport;
	uint32_t seq, ack;	/* next seq we send, what we acknowledge */
	uint16_t wnd;		/* window field we send, 0: 65535 */
};

/* guest_frame() - a frame from the guest at f: seq, flags, options,
 * payload; returns its length. */
static size_t guest_frame(struct tguest *g, uint8_t *f, uint32_t seq,
			  uint8_t flags, const void *data, size_t len,
			  const uint8_t *opts, size_t optlen)
{
	uint8_t l4[2048];

	memset(l4, 0, TCP_HLEN + optlen);
	wr16(l4, g->sport);
	wr16(l4 + 2, g->dport);
	wr32(l4 + 4, seq);
	wr32(l4 + 8, (flags & TCP_F_ACK) ? g->ack : 0);
	l4[12] = (uint8_t)(((TCP_HLEN + optlen) / 4) << 4);
	l4[13] = flags;
	wr16(l4 + 14, g->wnd ? g->wnd : 65535);
	if (optlen)
		memcpy(l4 + TCP_HLEN, opts, optlen);
	if (len)
		memcpy(l4 + TCP_HLEN + optlen, data, len);
	return g->v6 ? test_frame_ip6(f, "2001:db8::2", "fe80::1", IPPROTO_TCP,
				      l4, TCP_HLEN + optlen + len)
		     : test_frame_ip4(f, "198.51.100.2", "198.51.100.1",
				      IPPROTO_TCP, l4, TCP_HLEN + optlen + len);
}

static void guest_send(struct tguest *g, uint8_t flags, const void *data,
		       size_t len, const uint8_t *opts, size_t optlen)
{
	uint8_t f[2200];
	size_t n = guest_frame(g, f, g->seq, flags, data, len, opts, optlen);

	test_input(g->c, f, n);
	g->seq += (uint32_t)len + !!(flags & (TCP_F_SYN | TCP_F_FIN));
}

/* pump() - run the TCP part of the event loop for up to ms or until
 * at least want frames went to the guest. */
static void pump(struct ctx *c, int ms, size_t want)
{
	struct timespec start;

	now_mono(&start);
	for (;;) {
		struct epoll_event ev[16];
		int i, n;

		now_mono(&c->now);
		if (test_tx_n(c) >= want || ts_ms_diff(&c->now, &start) > ms)
			return;
		n = epoll_wait(c->epfd, ev, 16, 5);
		now_mono(&c->now);
		for (i = 0; i < n; i++)
			tcp_sock_handler(c, ev[i].data.u64, ev[i].events);
		if (c->timer_armed &&
		    ts_ms_diff(&c->now, &c->timer_due) >= 0) {
			c->timer_armed = false;
			tcp_timer(c);
		}
	}
}

/* advance() - move the injected clock on by ms and run the TCP timers
 * that are due (the loop would). */
static void advance(struct ctx *c, int ms)
{
	test_advance(c, ms);
	c->timer_armed = false;
	tcp_timer(c);
}

/* last_seg() - parse the i-th frame to the guest (checksums verified). */
static bool seg_at(struct ctx *c, size_t i, struct pkt *p)
{
	size_t len;
	const uint8_t *f = test_tx(c, i, &len);

	return f && pkt_parse(f, len, true, p) == DROP_NONE &&
	       p->l4proto == IPPROTO_TCP;
}

static int listener(bool v6, uint16_t *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = v6 ? sizeof(a6) : sizeof(a4);
	int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);

	if (s < 0 || bind(s, v6 ? (void *)&a6 : (void *)&a4, sl) ||
	    listen(s, 8) || getsockname(s, v6 ? (void *)&a6 : (void *)&a4, &sl))
		return -1;
	*port = ntohs(v6 ? a6.sin6_port : a4.sin_port);
	return s;
}

static struct ctx *tcp_test_ctx(void)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	inet_pton(AF_INET6, "fe80::1", &c->conf.ip6.gw);
	nat_init(c);
	tcp_init(c);
	/* The clock starts now, not when test_ctx() began: setting up the
	 * tables can take over a second under ASan on a loaded machine, and a
	 * SYN-ACK sent in the SYN's round with that stale time would be due
	 * for retransmission at the first pump(). */
	now_mono(&c->now);
	return c;
}

static void tcp_test_free(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl; fl = nx) {
		nx = flow_next(&c->flows, fl);
		tcp_conn_close(c, fl, true);
	}
	tcp_ooo_pool_free(c->tcp.ooo);
	close(c->epfd);
	test_ctx_free(c);
}

/* handshake() - SYN from the guest, accept on the host, SYN-ACK back,
 * ACK from the guest. Returns the accepted socket, -1 on failure. */
static int handshake(struct tguest *g, int ls, uint32_t *isn)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7 };
	struct pkt p;
	int a;

	test_tx_reset(g->c);
	g->seq = 1000;
	guest_send(g, TCP_F_SYN, NULL, 0, opts, sizeof(opts));
	pump(g->c, 2000, 1);
	if (!seg_at(g->c, 0, &p) ||
	    p.tcp.flags != (TCP_F_SYN | TCP_F_ACK) || p.tcp.ack != 1001 ||
	    !p.tcp.has_mss || !p.tcp.has_wscale ||
	    p.tcp.wscale != TCP_WS_TO_GUEST)
		return -1;
	*isn = p.tcp.seq;
	g->ack = p.tcp.seq + 1;
	a = accept(ls, NULL, NULL);
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(g->c);
	return a;
}

static void data_both_ways(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40000 };
	char buf[64] = { 0 };
	uint32_t isn;
	struct pkt p;
	int ls, a;

	ls = listener(v6, &g.dport);
	CHECK(ls >= 0);
	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);

	/* guest -> host: written, then acknowledged; a small write's ACK
	 * waits for host data to carry it, and goes alone after the delay */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "hello", 5, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 5);
	CHECK(!memcmp(buf, "hello", 5));
	CHECK_EQ(test_tx_n(c), 0);
	advance(c, TCP_DELACK_MS + 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK);
	CHECK_EQ(p.tcp.ack, 1006);
	CHECK(p.tcp.window > 0);

	/* host -> guest: one segment, peeked, not consumed until acked */
	test_tx_reset(c);
	CHECK_EQ(send(a, "world!", 6, 0), 6);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 6);
	CHECK(!memcmp(p.payload, "world!", 6));
	CHECK_EQ(p.tcp.seq, isn + 1);
	g.ack += 6;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);

	/* host closes its side: FIN to the guest after the data */
	test_tx_reset(c);
	shutdown(a, SHUT_WR);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	CHECK_EQ(p.tcp.seq, isn + 7);
	g.ack += 1;

	/* the guest still sends (half-close), then closes too */
	guest_send(&g, TCP_F_ACK, "more", 4, NULL, 0);
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 4);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 0);	/* EOF */
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);		/* both closed */
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_data_both_ways_v4)
{
	data_both_ways(false);
}

TEST(tcp_data_both_ways_v6)
{
	data_both_ways(true);
}

/* Delayed ACKs: a small request's ACK rides on the reply; whatever the
 * guest's transmission depends on is acknowledged at once. */
TEST(tcp_delayed_ack)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40006 };
	static char seg[1460];
	char buf[2048];
	uint32_t isn, old;
	struct pkt p;
	int ls = listener(false, &g.dport), a;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	/* request, reply: one frame, the reply, acknowledging the request */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "GET", 3, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(send(a, "reply", 5, 0), 5);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 5);
	CHECK_EQ(p.tcp.ack, g.seq);
	advance(c, TCP_DELACK_MS + 1);
	CHECK_EQ(test_tx_n(c), 1);		/* no ACK of its own later */
	CHECK_EQ(c->tcp.st.acks_delayed, 1);
	CHECK_EQ(c->tcp.st.acks_delack_timer, 0);
	g.ack += 5;

	/* a full segment: acknowledged at once */
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, seg, sizeof(seg), NULL, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, g.seq);
	CHECK_EQ(recv(a, buf, sizeof(seg), MSG_WAITALL), (ssize_t)sizeof(seg));

	/* a retransmission of old data: acknowledged at once */
	test_tx_reset(c);
	old = g.seq;
	g.seq -= 3;
	guest_send(&g, TCP_F_ACK, "abc", 3, NULL, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, old);

	/* small data, then the FIN in the next batch: acknowledged at once,
	 * and the delayed ACK queued before finds nothing left to send */
	test_tx_reset(c);
	g.seq = old;
	guest_send(&g, TCP_F_ACK, "x", 1, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, g.seq);
	advance(c, TCP_DELACK_MS + 1);
	CHECK_EQ(test_tx_n(c), 1);
	close(a);
	test_tx_reset(c);
	pump(c, 2000, 1);		/* our FIN for the closed socket */

	/* small data waiting for its ACK, then a segment beyond a hole: the
	 * duplicate ACK goes at once and covers the small data */
	g.sport++;
	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK, "y", 1, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);
	old = g.seq;
	g.seq += 10;
	guest_send(&g, TCP_F_ACK, "zz", 2, NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, old);
	CHECK_EQ(p.payload_len, 0);
	advance(c, TCP_DELACK_MS + 1);
	CHECK_EQ(test_tx_n(c), 1);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* The guest's window fills exactly as the socket runs dry; more host
 * data arrives while we wait for the guest (EPOLLIN is off then); the
 * guest's ACK that opens the window sends it. */
TEST(tcp_data_after_stall)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40008 };
	static char d[1536];
	uint32_t isn;
	struct pkt p;
	int ls = listener(false, &g.dport), a;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	g.wnd = 8;			/* << 7 (handshake): 1024 bytes */
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	memset(d, 'd', sizeof(d));
	CHECK_EQ(send(a, d, 1024, 0), 1024);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 1024);
	CHECK(c->flows.count[FLOW_TCP] == 1);
	CHECK_EQ(send(a, d + 1024, 512, 0), 512);
	pump(c, 100, 2);		/* the window is full: nothing */
	CHECK_EQ(test_tx_n(c), 1);
	test_tx_reset(c);
	g.ack += 1024;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 512);
	CHECK_EQ(p.tcp.seq, isn + 1 + 1024);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_refused_gets_rst)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40001 };
	struct pkt p;
	int ls = listener(false, &g.dport);

	close(ls);		/* nobody listens there now */
	g.seq = 5000;
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_RST);
	CHECK(p.tcp.flags & TCP_F_ACK);
	CHECK_EQ(p.tcp.ack, 5001);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tcp_test_free(c);
}

TEST(tcp_fd_budget_refuses_syn)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c };
	struct pkt p;
	int ls = listener(false, &g.dport), i;

	CHECK(ls >= 0);
	CHECK_EQ(tcp_fd_budget(1024), 448);
	CHECK_EQ(tcp_fd_budget(64), 32);
	CHECK(c->tcp.max_fds >= 32);
	/* Room for one spliced connection (6 fds) and two more sockets. */
	c->tcp.max_fds = TCP_SPLICE_FDS + 2;
	CHECK(flow_alloc(&c->flows, FLOW_TCP_SPLICE));
	for (i = 0; i < 3; i++) {
		test_tx_reset(c);
		g.sport = (uint16_t)(40100 + i);
		g.seq = 5000;
		guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
		pump(c, 2000, 1);
		CHECK(seg_at(c, 0, &p));
		if (i < 2) {
			CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
			continue;
		}
		/* The third is beyond the budget: RST, counted, no flow. */
		CHECK_EQ(p.tcp.flags, TCP_F_RST | TCP_F_ACK);
		CHECK_EQ(p.tcp.ack, 5001);
	}
	CHECK_EQ(c->flows.count[FLOW_TCP], 2);
	CHECK_EQ(c->stats.drops[DROP_TCP_FD_BUDGET], 1);
	CHECK(!tcp_fd_room(c, 1));
	flow_free(&c->flows, flow_first(&c->flows, FLOW_TCP_SPLICE));
	CHECK(tcp_fd_room(c, TCP_SPLICE_FDS));
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_no_flow_gets_rst)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40002, .dport = 80 };
	struct pkt p;

	g.seq = 7;
	g.ack = 1234;
	guest_send(&g, TCP_F_ACK, "x", 1, NULL, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_RST);
	CHECK_EQ(p.tcp.seq, 1234);
	CHECK_EQ(c->stats.drops[DROP_NO_FLOW], 1);
	tcp_test_free(c);
}

TEST(tcp_rst_both_ways)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40003 };
	char b[8];
	uint32_t isn;
	struct pkt p;
	int ls = listener(false, &g.dport), a;
	struct linger l = { 1, 0 };

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	/* guest RST: the host peer sees a reset */
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(recv(a, b, sizeof(b), 0), -1);
	CHECK_EQ(errno, ECONNRESET);
	close(a);

	/* host RST: the guest gets one */
	g.sport++;
	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	setsockopt(a, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(a);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_RST);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_window_limits_and_dupack_rewind)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40004 };
	static char big[8000];
	uint32_t isn;
	struct pkt p;
	size_t i, n;
	int ls = listener(false, &g.dport), a;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 13);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 6);
	/* guest MSS 1460: five full segments and a tail, contents match */
	n = test_tx_n(c);
	CHECK_EQ(n, 6);
	for (i = 0; i < n; i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.tcp.seq, isn + 1 + i * 1460);
		CHECK(!memcmp(p.payload, big + i * 1460, p.payload_len));
	}
	/* three duplicate ACKs for the first byte: everything resent */
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	n = test_tx_n(c);
	CHECK_EQ(n, 6);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, isn + 1);
	CHECK(!memcmp(p.payload, big, p.payload_len));
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* After three duplicate ACKs rewind the send position, an ACK in the same
 * batch for everything (the guest had it all; only its ACKs were lost)
 * is taken: nothing is resent, new data follows the acknowledged end. */
/* dupacks_then_ack() - one batch from the guest: three duplicate ACKs of
 * una (a rewind), then an ACK of ack (arriving late, same batch). */
static void dupacks_then_ack(struct tguest *g, uint32_t una, uint32_t ack)
{
	struct rx_batch *rx = &g->c->link.rx;
	uint32_t i;

	for (i = 0; i < 4; i++) {
		g->ack = i < 3 ? una : ack;
		rx->f[i].off = i * 2048;
		rx->f[i].len = (uint32_t)guest_frame(g, rx->buf + i * 2048,
						     g->seq, TCP_F_ACK, NULL, 0,
						     NULL, 0);
	}
	rx->n = 4;
	tap_input(g->c);
}

TEST(tcp_ack_beyond_rewind_resumes)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40005 };
	static char big[8000];
	uint32_t isn, i;
	struct pkt p;
	int ls = listener(false, &g.dport), a;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 6);
	CHECK_EQ(test_tx_n(c), 6);
	test_tx_reset(c);
	dupacks_then_ack(&g, isn + 1, isn + 1 + (uint32_t)sizeof(big));
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.payload_len, 0);
	}
	test_tx_reset(c);
	CHECK_EQ(send(a, "xyz", 3, 0), 3);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, isn + 1 + sizeof(big));
	CHECK_EQ(p.payload_len, 3);
	CHECK(!memcmp(p.payload, "xyz", 3));
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* The host peer's data and FIN went to the guest; the guest's ACKs were
 * late, three duplicates rewound the stream, and then the ACK of
 * everything including the FIN arrived (same batch). That ACK covers
 * what was sent before the rewind: nothing is resent, the FIN counts as
 * acknowledged, and the guest's own FIN then closes the connection. */
TEST(tcp_fin_ack_after_rewind_taken)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40017 };
	static char big[8000];
	uint32_t isn, i, fin_end = 0;
	struct pkt p;
	int ls = listener(false, &g.dport), a;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	CHECK_EQ(shutdown(a, SHUT_WR), 0);
	pump(c, 2000, 6);		/* the FIN rides on the last of 6 */
	for (i = 0; i < test_tx_n(c); i++)
		if (seg_at(c, i, &p) && (p.tcp.flags & TCP_F_FIN))
			fin_end = p.tcp.seq + (uint32_t)p.payload_len + 1;
	CHECK_EQ(fin_end, isn + 1 + sizeof(big) + 1);
	test_tx_reset(c);
	dupacks_then_ack(&g, isn + 1, fin_end);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.payload_len, 0);
		CHECK(!(p.tcp.flags & TCP_F_FIN));
	}
	/* no retransmission later either */
	test_tx_reset(c);
	advance(c, TCP_RTO_MS * 4);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.payload_len, 0);
	}
	/* the guest closes too: the connection is gone */
	guest_send(&g, TCP_F_FIN | TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 500, 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_guest_never_completes_handshake)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40005 };
	int ls = listener(false, &g.dport), a, step;
	struct pkt p;
	size_t synacks = 0, i;
	char b[4];

	g.seq = 1;
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	pump(c, 2000, 1);
	a = accept(ls, NULL, NULL);
	CHECK(a >= 0);
	/* The guest stays silent: time moves on (injected), SYN-ACKs are
	 * retransmitted with backoff, then the host side is reset. */
	for (step = 0; step < 40 && c->flows.count[FLOW_TCP]; step++) {
		c->now.tv_sec += 1;
		tcp_timer(c);
	}
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	for (i = 0; i < test_tx_n(c); i++)
		if (seg_at(c, i, &p) && p.tcp.flags == (TCP_F_SYN | TCP_F_ACK))
			synacks++;
	CHECK_EQ(synacks, 1 + TCP_SYN_RETRIES);
	CHECK_EQ(recv(a, b, sizeof(b), 0), -1);
	CHECK_EQ(errno, ECONNRESET);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* sack_of() - the SACK blocks of segment p, relative to base, into b[];
 * returns their count, 0 without a SACK option, -1 if malformed. */
static int sack_of(const struct pkt *p, uint32_t base, uint32_t *b)
{
	const uint8_t *o = p->l4 + TCP_HLEN;
	size_t len = p->tcp.doff - TCP_HLEN, i = 0, k;

	while (i < len && o[i] == 1)
		i++;
	if (i == len)
		return 0;
	if (o[i] != 5 || len - i < 2 || o[i + 1] > len - i ||
	    (o[i + 1] - 2) % 8)
		return -1;
	for (k = 0; k < (size_t)(o[i + 1] - 2) / 4; k++)
		b[k] = rd32(o + i + 2 + k * 4) - base;
	return (o[i + 1] - 2) / 8;
}

/* recv_all() - what the host peer can read now (non-blocking). */
static ssize_t recv_all(int a, uint8_t *buf, size_t size)
{
	ssize_t n, got = 0;

	while ((size_t)got < size &&
	       (n = recv(a, buf + got, size - (size_t)got, MSG_DONTWAIT)) > 0)
		got += n;
	return got;
}

/* handshake_sack() - handshake() with SACK-permitted in the guest's SYN;
 * the SYN-ACK must carry it too. */
static int handshake_sack(struct tguest *g, int ls)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7,
					1, 1, 4, 2 };
	struct pkt p;
	int a;

	test_tx_reset(g->c);
	g->seq = 1000;
	guest_send(g, TCP_F_SYN, NULL, 0, opts, sizeof(opts));
	pump(g->c, 2000, 1);
	if (!seg_at(g->c, 0, &p) || !p.tcp.has_sack_perm)
		return -1;
	g->ack = p.tcp.seq + 1;
	a = accept(ls, NULL, NULL);
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(g->c);
	return a;
}

/* send_at() - guest data [off, off + len) of data[], stream base + off. */
static void send_at(struct tguest *g, uint32_t base, const uint8_t *data,
		    uint32_t off, uint32_t len, uint8_t flags)
{
	uint32_t saved = g->seq;

	g->seq = base + off;
	guest_send(g, TCP_F_ACK | flags, data + off, len, NULL, 0);
	g->seq = saved;
}

TEST(tcp_ooo_sack_and_hole_fill)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40010 };
	static uint8_t data[5000], got[5000];
	uint32_t b[8], base;
	struct pkt p;
	size_t i;
	int ls = listener(false, &g.dport), a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7);
	a = handshake_sack(&g, ls);
	CHECK(a >= 0);
	base = g.seq;
	/* [0, 1000) lost: each later segment gets a duplicate ACK at once,
	 * with the blocks received so far, newest first */
	send_at(&g, base, data, 1000, 1000, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base);
	CHECK_EQ(sack_of(&p, base, b), 1);
	CHECK(b[0] == 1000 && b[1] == 2000);
	send_at(&g, base, data, 3000, 1000, 0);
	CHECK(seg_at(c, 1, &p));
	CHECK_EQ(p.tcp.ack, base);
	CHECK_EQ(sack_of(&p, base, b), 2);
	CHECK(b[0] == 3000 && b[1] == 4000 && b[2] == 1000 && b[3] == 2000);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 0);	/* nothing written */
	/* a duplicate of a queued segment changes nothing */
	send_at(&g, base, data, 1000, 1000, 0);
	CHECK(seg_at(c, 2, &p));
	CHECK_EQ(sack_of(&p, base, b), 2);
	CHECK(b[0] == 1000 && b[2] == 3000);
	/* the hole: written together with the run it connects to */
	test_tx_reset(c);
	send_at(&g, base, data, 0, 1000, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base + 2000);
	CHECK_EQ(sack_of(&p, base, b), 1);
	CHECK(b[0] == 3000 && b[1] == 4000);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 2000);
	CHECK(!memcmp(got, data, 2000));
	/* an overlapping retransmission closes the last hole */
	test_tx_reset(c);
	send_at(&g, base, data, 1500, 2000, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base + 4000);
	CHECK_EQ(sack_of(&p, base, b), 0);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 2000);
	CHECK(!memcmp(got, data + 2000, 2000));
	CHECK_EQ(c->tcp.ooo->st.blks_used, 0);

	/* a reset connection frees its queue */
	send_at(&g, base, data, 4500, 500, 0);
	CHECK(c->tcp.ooo->st.blks_used > 0);
	g.seq = base + 4000;
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.ooo->st.blks_used, 0);
	CHECK(!c->tcp.ooo->q[0].used);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* Bytes beyond the right edge of the window ferry advertised are not
 * queued out of order (a guest may not pin the pool with data it was
 * never invited to send); bytes up to the edge are. */
TEST(tcp_ooo_nothing_beyond_advertised_window)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40016 };
	static uint8_t data[600];
	uint32_t base, wnd, b[8];
	uint64_t drops;
	struct pkt p;
	int ls = listener(false, &g.dport), a;

	memset(data, 0x5a, sizeof(data));
	a = handshake_sack(&g, ls);
	CHECK(a >= 0);
	base = g.seq;
	send_at(&g, base, data, 1000, 100, 0);	/* learn the window */
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base);
	wnd = (uint32_t)p.tcp.window << TCP_WS_TO_GUEST;
	CHECK(wnd > 2000);
	drops = c->stats.drops[DROP_TCP_SEQ];
	/* one byte past the edge: refused, counted, no new SACK block */
	test_tx_reset(c);
	g.seq = base + wnd - 299;
	guest_send(&g, TCP_F_ACK, data, 300, NULL, 0);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], drops + 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(sack_of(&p, base, b), 1);
	CHECK(b[0] == 1000 && b[1] == 1100);
	/* ending exactly at the edge: queued */
	test_tx_reset(c);
	g.seq = base + wnd - 300;
	guest_send(&g, TCP_F_ACK, data, 300, NULL, 0);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], drops + 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(sack_of(&p, base, b), 2);
	CHECK(b[0] == wnd - 300 && b[1] == wnd);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_ooo_without_sack_and_fin)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40011 };
	static uint8_t data[3000], got[4000];
	uint32_t isn, base;
	struct pkt p;
	size_t i;
	int ls = listener(true, &g.dport), a;

	g.v6 = true;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 17 + 3);
	a = handshake(&g, ls, &isn);	/* no SACK-permitted */
	CHECK(a >= 0);
	base = g.seq;
	/* the tail and the FIN arrive first: queued, plain duplicate ACK */
	send_at(&g, base, data, 2000, 1000, TCP_F_FIN);
	send_at(&g, base, data, 1000, 1000, 0);
	CHECK_EQ(test_tx_n(c), 2);
	CHECK(seg_at(c, 1, &p));
	CHECK_EQ(p.tcp.ack, base);
	CHECK_EQ(p.tcp.doff, TCP_HLEN);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 0);
	/* the hole fills: all of it, then the FIN, one ACK for both */
	test_tx_reset(c);
	send_at(&g, base, data, 0, 1000, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base + 3001);
	CHECK_EQ(recv(a, got, sizeof(got), MSG_WAITALL), 3000);
	CHECK(!memcmp(got, data, 3000));
	CHECK_EQ(recv(a, got, sizeof(got), 0), 0);	/* EOF */
	CHECK_EQ(c->tcp.ooo->st.blks_used, 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* guest_batch() - segments [off[i], off[i] + len[i]) of data[] (stream
 * base) as one input batch, like a tap read returning several frames. */
static void guest_batch(struct tguest *g, uint32_t base, const uint8_t *data,
			const uint32_t *off, const uint32_t *len, unsigned int n)
{
	struct rx_batch *rx = &g->c->link.rx;
	unsigned int i;

	for (i = 0; i < n; i++) {
		rx->f[i].off = i * 2048;
		rx->f[i].len = (uint32_t)guest_frame(g, rx->buf + i * 2048,
						     base + off[i], TCP_F_ACK,
						     data + off[i], len[i],
						     NULL, 0);
	}
	rx->n = n;
	tap_input(g->c);
}

TEST(tcp_ooo_batch_ack_covers_in_order_bytes)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40012 };
	static const uint32_t off[] = { 0, 2000, 1000 }, len[] = { 1000,
								   1000, 500 };
	static uint8_t data[3000], got[3000];
	uint32_t b[8], base;
	struct pkt p;
	size_t i;
	int ls = listener(false, &g.dport), a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 5 + 1);
	a = handshake_sack(&g, ls);
	CHECK(a >= 0);
	base = g.seq;
	/* in order, beyond a hole, in order again: the duplicate ACK of the
	 * second segment already covers the first (written before it), and
	 * the batch's final ACK the third */
	guest_batch(&g, base, data, off, len, 3);
	CHECK_EQ(test_tx_n(c), 2);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base + 1000);
	CHECK_EQ(sack_of(&p, base, b), 1);
	CHECK(b[0] == 2000 && b[1] == 3000);
	CHECK(seg_at(c, 1, &p));
	CHECK_EQ(p.tcp.ack, base + 1500);
	CHECK_EQ(sack_of(&p, base, b), 1);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 1500);
	CHECK(!memcmp(got, data, 1500));
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* The guest's retransmissions of two holes in one batch, the second
 * behind an in-order segment: writing that segment takes the queued run
 * behind it along, which ends just where the second retransmission
 * starts. That one is in order then, not beyond a hole: written, the
 * whole stream acknowledged. (It was dropped as "not out of order", and
 * the guest, its retransmission lost, waited for its RTO: the 0.6-1 s
 * stalls of the lossy upload tests.) */
TEST(tcp_ooo_hole_filled_by_the_write_before_it)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40014 };
	static const uint32_t off[] = { 0, 2000 }, len[] = { 1000, 1000 };
	static uint8_t data[4000], got[4000];
	uint64_t drops;
	uint32_t b[8], base;
	struct pkt p;
	size_t i;
	int ls = listener(false, &g.dport), a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 5);
	a = handshake_sack(&g, ls);
	CHECK(a >= 0);
	base = g.seq;
	send_at(&g, base, data, 1000, 1000, 0);	/* holes at 0 and 2000 */
	send_at(&g, base, data, 3000, 1000, 0);
	drops = c->stats.drops[DROP_TCP_SEQ];
	test_tx_reset(c);
	guest_batch(&g, base, data, off, len, 2);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], drops);
	CHECK(test_tx_n(c) >= 1);
	CHECK(seg_at(c, test_tx_n(c) - 1, &p));
	CHECK_EQ(p.tcp.ack, base + 4000);
	CHECK_EQ(sack_of(&p, base, b), 0);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 4000);
	CHECK(!memcmp(got, data, sizeof(data)));
	CHECK_EQ(c->tcp.ooo->st.blks_used, 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_ooo_short_write_waits_for_room)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40013 };
	static uint8_t data[256 << 10], got[256 << 10];
	uint32_t base, acked = 0, off;
	struct tcp_conn *conn;
	struct timespec t0;
	size_t i, n, have = 0;
	int ls = listener(false, &g.dport), a, small = 4096;
	struct pkt p;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 11 + (i >> 9));
	setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	a = handshake_sack(&g, ls);
	CHECK(a >= 0);
	conn = FLOW_PRIV(flow_first(&c->flows, FLOW_TCP), struct tcp_conn);
	setsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	base = g.seq;
	/* everything but the first segment arrives first: queued */
	for (off = 1460; off < sizeof(data); off += 1460)
		send_at(&g, base, data, off,
			MIN(1460u, (uint32_t)sizeof(data) - off), 0);
	CHECK_EQ(tcp_ooo_queued(c->tcp.ooo, conn), sizeof(data) - 1460);
	/* the hole: the socket takes only part; what it took is
	 * acknowledged, nothing more */
	test_tx_reset(c);
	send_at(&g, base, data, 0, 1460, 0);
	CHECK(seg_at(c, test_tx_n(c) - 1, &p));
	CHECK_EQ(p.tcp.ack, conn->seq_from_guest.v);
	CHECK(p.tcp.ack - base < sizeof(data));
	CHECK(tcp_ooo_queued(c->tcp.ooo, conn) > 0);
	CHECK(c->tcp.st.short_writes > 0);
	/* the peer reads: the socket drains, ferry writes the rest on its
	 * own (EPOLLOUT) and acknowledges it */
	now_mono(&t0);
	while (have < sizeof(data) && ts_ms_diff(&c->now, &t0) < 5000) {
		have += (size_t)recv_all(a, got + have, sizeof(got) - have);
		test_tx_reset(c);
		pump(c, 20, 1);
		for (i = 0, n = test_tx_n(c); i < n; i++)
			if (seg_at(c, i, &p))
				acked = p.tcp.ack - base;
		/* acknowledged = written; the rest still queued */
		CHECK(acked <= conn->seq_from_guest.v - base);
		CHECK_EQ(conn->seq_from_guest.v - base +
			 tcp_ooo_queued(c->tcp.ooo, conn), sizeof(data));
	}
	CHECK_EQ(have, sizeof(data));
	CHECK(!memcmp(got, data, sizeof(data)));
	CHECK_EQ(conn->seq_from_guest.v, base + sizeof(data));
	CHECK_EQ(acked, sizeof(data));
	CHECK_EQ(c->tcp.ooo->st.blks_used, 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* --- review findings (tcp.c, tcp_tx.c) -------------------------------
 * Defects found in review of the delayed-ACK and zero-window code: a
 * delayed ACK's timer swallowing the retransmission timer, a queued
 * delayed ACK holding back a full segment's ACK, and no zero-window
 * probe with nothing in flight. */

/* loop_timers() - the event loop's timer handling for ms of injected
 * time: tcp_timer() runs only when a timer was requested and is due
 * (loop.c timers_run() disarms first, so every module must re-request). */
static void loop_timers(struct ctx *c, int ms)
{
	struct timespec end = c->now;

	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (c->timer_armed && ts_ms_diff(&c->timer_due, &end) <= 0) {
		c->now = c->timer_due;
		c->timer_armed = false;
		tcp_timer(c);
	}
	c->now = end;
}

/* A delayed ACK's timer fires before the retransmission timer: the scan
 * is not due, tcp_timer() returns without asking for it again, and the
 * retransmission never happens (tcp.c tcp_timer(), early return). */
TEST(tcp_review_delack_keeps_rto)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40020 };
	int ls = listener(false, &g.dport), a;
	size_t i, data = 0;
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK_EQ(send(a, "lost", 4, 0), 4);
	pump(c, 2000, 1);			/* the segment the guest loses */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "q", 1, NULL, 0);
	CHECK_EQ(c->tcp.st.acks_delayed, 1);
	test_tx_reset(c);
	loop_timers(c, TCP_RTO_MS * 4);
	for (i = 0; i < test_tx_n(c); i++)
		if (seg_at(c, i, &p) && p.payload_len == 4)
			data++;
	CHECK(data >= 1);			/* retransmitted */
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* Ping-pong: request 1's ACK is queued, the reply carries it; request 2
 * comes 1 ms later and is queued too. When request 1's stale entry comes
 * due, request 2's ACK must keep waiting for its own deadline (tcp.c
 * tcp_delack_run(): entries carry the connection's ack_sent). */
TEST(tcp_delack_stale_entry_leaves_next_request)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40022 };
	int ls = listener(false, &g.dport), a, i;
	char buf[64];
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "q1", 2, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 2);
	CHECK_EQ(send(a, "r1", 2, 0), 2);
	/* the reply, carrying the ACK; socket events only, the injected
	 * clock stands still (pump() would move it and run the timers) */
	for (i = 0; i < 200 && !test_tx_n(c); i++) {
		struct epoll_event ev[4];
		int j, n = epoll_wait(c->epfd, ev, 4, 10);

		for (j = 0; j < n; j++)
			tcp_sock_handler(c, ev[j].data.u64, ev[j].events);
	}
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, g.seq);
	g.ack += 2;
	advance(c, 1);
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "q2", 2, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);		/* queued */
	CHECK_EQ(c->tcp.st.acks_delayed, 2);
	advance(c, TCP_DELACK_MS - 1);		/* request 1's entry is due */
	CHECK_EQ(test_tx_n(c), 0);		/* request 2's ACK still waits */
	CHECK_EQ(c->tcp.st.acks_delack_timer, 0);
	advance(c, 2);				/* now its own deadline passed */
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 0);
	CHECK_EQ(p.tcp.ack, g.seq);
	CHECK_EQ(c->tcp.st.acks_delack_timer, 1);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* A small write's ACK is queued; a full segment follows before the delay
 * ran out: it must be acknowledged at once (tcp.c tcp_delack() returns
 * early for TCP_ACK_QUEUED before looking at the amount). */
TEST(tcp_review_delack_full_segment_after_small)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40021 };
	int ls = listener(false, &g.dport), a;
	static char seg[1460];
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "x", 1, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);		/* delayed */
	guest_send(&g, TCP_F_ACK, seg, sizeof(seg), NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);		/* 1461 bytes: at once */
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, g.seq);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* guest_ack_wnd() - a pure ACK from the guest advertising wnd (unscaled
 * field value). */
static void guest_ack_wnd(struct tguest *g, uint16_t wnd)
{
	uint8_t l4[TCP_HLEN] = { 0 }, f[128];
	size_t n;

	wr16(l4, g->sport);
	wr16(l4 + 2, g->dport);
	wr32(l4 + 4, g->seq);
	wr32(l4 + 8, g->ack);
	l4[12] = (TCP_HLEN / 4) << 4;
	l4[13] = TCP_F_ACK;
	wr16(l4 + 14, wnd);
	n = test_frame_ip4(f, "198.51.100.2", "198.51.100.1", IPPROTO_TCP,
			   l4, sizeof(l4));
	test_input(g->c, f, n);
}

/* The guest acknowledges everything with a zero window while the host
 * has more: ferry must probe the window (RFC 9293 3.8.6.1), or a lost
 * window update stalls the connection for good. No timer is armed when
 * nothing is in flight (tcp.c tcp_ack_input(), tcp_tx.c
 * tcp_data_to_guest()). */
TEST(tcp_review_zero_window_probed)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40022 };
	int ls = listener(false, &g.dport), a;
	uint32_t isn;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK_EQ(send(a, "abcd", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	g.ack += 4;
	guest_ack_wnd(&g, 0);			/* all acked, window closed */
	CHECK_EQ(send(a, "efgh", 4, 0), 4);
	test_tx_reset(c);
	pump(c, 50, 1);
	CHECK_EQ(test_tx_n(c), 0);		/* window closed: nothing */
	/* the guest's window update is lost; ferry must probe */
	loop_timers(c, TCP_RTO_MAX_MS * 2);
	CHECK(test_tx_n(c) >= 1);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* syn_mss() - the MSS of ferry's SYN-ACK to a guest at this MTU, with or
 * without TSO frames from the guest; 0 if there was none. */
static unsigned int syn_mss(bool v6, unsigned int mtu, bool tso)
{
	static const uint8_t opts[] = { 2, 4, 0xff, 0xd7, 1, 3, 3, 7 };
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40200 };
	unsigned int mss = 0;
	struct pkt p;
	int ls;

	c->conf.mtu = mtu;
	c->link.rx_tso = tso;
	ls = listener(v6, &g.dport);
	g.seq = 1000;
	if (ls >= 0)
		guest_send(&g, TCP_F_SYN, NULL, 0, opts, sizeof(opts));
	pump(c, 2000, 1);
	if (seg_at(c, 0, &p) && p.tcp.flags == (TCP_F_SYN | TCP_F_ACK) &&
	    p.tcp.has_mss)
		mss = p.tcp.mss;
	close(ls);
	tcp_test_free(c);
	return mss;
}

/* With TSO frames from the guest and a big MTU, the MSS is a third of
 * the guest's TSO limit (its kernel would send 32 KiB segments, one per
 * frame); otherwise the MTU's, as ever (bounded by the host path). */
TEST(tcp_mss_fills_tso_frames)
{
	unsigned int big4 = syn_mss(false, 65520, false);

	CHECK(big4 > 32607 && big4 <= 65480);
	CHECK_EQ(syn_mss(false, 65520, true), (65536 - 321) / 3);
	CHECK_EQ(syn_mss(true, 65520, true), (65536 - 321) / 3);
	CHECK_EQ(syn_mss(false, 1500, true), 1460);
	CHECK_EQ(syn_mss(true, 1500, true), 1440);
	CHECK_EQ(syn_mss(false, 1500, false), 1460);
}

/* --- request/response: lazy consumption, guessed reads, FIN on data --- */

static struct tcp_conn *only_conn(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_TCP);

	return fl ? FLOW_PRIV(fl, struct tcp_conn) : NULL;
}

static int sock_inq(int s)
{
	int inq = -1;

	return ioctl(s, SIOCINQ, &inq) ? -1 : inq;
}

/* Many small exchanges: acknowledged replies stay in ferry's socket
 * until TCP_CONSUME_LAZY bytes gather (no recv(MSG_TRUNC) per
 * exchange), every reply still goes out once, in order, whole; the
 * close completes with acknowledged bytes still deferred. */
TEST(tcp_rr_lazy_consume)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40030 };
	int ls = listener(false, &g.dport), a, i;
	int rounds = TCP_CONSUME_LAZY / 64 + 20;
	bool deferred = false, consumed = false;
	char rep[64], buf[64];
	struct tcp_conn *conn;
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	for (i = 0; i < rounds; i++) {
		guest_send(&g, TCP_F_ACK | TCP_F_PSH, "req", 3, NULL, 0);
		CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
		memset(rep, 'a' + i % 26, sizeof(rep));
		CHECK_EQ(send(a, rep, sizeof(rep), 0), (ssize_t)sizeof(rep));
		test_tx_reset(c);
		pump(c, 2000, 1);
		CHECK_EQ(test_tx_n(c), 1);
		CHECK(seg_at(c, 0, &p));
		CHECK_EQ(p.tcp.seq, g.ack);
		CHECK_EQ(p.payload_len, sizeof(rep));
		CHECK(!memcmp(p.payload, rep, sizeof(rep)));
		g.ack += (uint32_t)p.payload_len;
		CHECK(conn->consume < TCP_CONSUME_LAZY);
		CHECK_EQ(sock_inq(conn->sock), (int)(conn->consume + 64));
		if (conn->consume)
			deferred = true;
		else if (i)
			consumed = true;
	}
	CHECK(deferred);
	CHECK(consumed);		/* TCP_CONSUME_LAZY reached once */
	/* the last reply's ACK, the guest's FIN; the host answers with its
	 * own FIN: the connection closes with the last ACK */
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK(conn->consume > 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 0);
	shutdown(a, SHUT_WR);
	test_tx_reset(c);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	g.ack += 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* host_reply() - the host sends len bytes, one frame takes them to the
 * guest, whose ACK follows: the socket is drained after it. */
static bool host_reply(struct tguest *g, int a, const char *data, size_t len)
{
	if (send(a, data, len, 0) != (ssize_t)len)
		return false;
	pump(g->c, 2000, 1);
	if (test_tx_n(g->c) != 1)
		return false;
	g->ack += (uint32_t)len;
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(g->c);
	return only_conn(g->c)->read_drained;
}

/* fin_delivered() - poll (1 ms steps, 5 s deadline) until the FIN sent on
 * host socket a was taken in by its peer's kernel (a in FIN_WAIT2): under
 * load the loopback delivery may be left to ksoftirqd, after send() and
 * shutdown() have returned. */
static bool fin_delivered(int a)
{
	struct tcp_info ti;
	socklen_t sl;
	int i;

	for (i = 0; i < 5000; i++) {
		sl = sizeof(ti);
		if (!getsockopt(a, IPPROTO_TCP, TCP_INFO, &ti, &sl) &&
		    ti.tcpi_state == TCP_FIN_WAIT2)
			return true;
		poll(NULL, 0, 1);
	}
	return false;
}

/* fin_on_data() - the host's last bytes and its EOF reach ferry together
 * after an exchange (the socket was drained, the read guesses): one
 * frame carries both, the FIN is seen once and after the data, and the
 * close completes. */
static void fin_on_data(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40031 };
	int ls = listener(v6, &g.dport), a;
	char buf[16];
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK(host_reply(&g, a, "hello", 5));
	CHECK_EQ(send(a, "bye", 3, 0), 3);
	shutdown(a, SHUT_WR);
	CHECK(fin_delivered(a));	/* both in ferry's socket first */
	pump(c, 2000, 1);
	pump(c, 50, 2);			/* nothing else follows */
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK | TCP_F_PSH | TCP_F_FIN);
	CHECK_EQ(p.tcp.seq, g.ack);
	CHECK_EQ(p.payload_len, 3);
	CHECK(!memcmp(p.payload, "bye", 3));
	g.ack += 3 + 1;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_fin_on_data_v4)
{
	fin_on_data(false);
}

TEST(tcp_fin_on_data_v6)
{
	fin_on_data(true);
}

/* fin_after_window() - a 1024-byte guest window, the host sends len
 * bytes and its EOF at once. The first read fills the window (a guess:
 * no FIN, more may follow); after the guest's ACK the rest is counted
 * (SIOCINQ): it carries the FIN when it leaves room for it (len < 2048),
 * otherwise the FIN waits for the next ACK and goes alone. The FIN is
 * seen once. */
static void fin_after_window(size_t len)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40032 };
	int ls = listener(false, &g.dport), a, step;
	static char d[2048];
	size_t sent = 0, fins = 0;
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	g.wnd = 8;			/* << 7 (handshake): 1024 bytes */
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	memset(d, 'w', sizeof(d));
	CHECK_EQ(send(a, d, len, 0), (ssize_t)len);
	shutdown(a, SHUT_WR);
	test_tx_reset(c);
	pump(c, 2000, 1);
	for (step = 0; step < 3 && !fins; step++) {
		pump(c, 50, 2);		/* one frame per step, no more */
		CHECK_EQ(test_tx_n(c), 1);
		CHECK(seg_at(c, 0, &p));
		CHECK_EQ(p.tcp.seq, g.ack);
		sent += p.payload_len;
		fins += !!(p.tcp.flags & TCP_F_FIN);
		if (step == 0)
			CHECK_EQ(p.payload_len, 1024);
		if (fins)
			CHECK_EQ(sent, len);
		g.ack += (uint32_t)p.payload_len + !!(p.tcp.flags & TCP_F_FIN);
		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
		pump(c, 2000, 1);	/* usually sent by the ACK's batch */
	}
	CHECK_EQ(fins, 1);
	CHECK_EQ(step, len < 2048 ? 2 : 3);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.st.rewinds_rto, 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_fin_on_data_after_window)
{
	fin_after_window(1500);
}

TEST(tcp_fin_waits_for_window)
{
	fin_after_window(2048);
}

/* After a drained read the next one guesses TCP_READ_GUESS bytes; more
 * than that arriving at once is still sent whole and in order. */
TEST(tcp_guessed_read_larger_reply)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40033 };
	int ls = listener(false, &g.dport), a;
	static uint8_t big[80 << 10];
	size_t i, n, total = 0;
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK(host_reply(&g, a, "x", 1));
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	n = (sizeof(big) + 1459) / 1460;
	pump(c, 2000, n);
	CHECK_EQ(test_tx_n(c), n);
	for (i = 0; i < n; i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.tcp.seq, g.ack + total);
		CHECK(!memcmp(p.payload, big + total, p.payload_len));
		total += p.payload_len;
	}
	CHECK_EQ(total, sizeof(big));
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* One epoll registration per socket for its life (tcp_ep_add()): the
 * events a connection does not act on now are dropped, never lost when it
 * starts to. The peer's FIN reported with the connect's completion (no
 * later report comes: edge-triggered) still reaches the guest, after the
 * data it sent. */
TEST(tcp_conn_peer_fin_with_connect)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40040 };
	int ls = listener(false, &g.dport), a;
	struct pkt p;
	size_t i, fins = 0;

	g.seq = 1;
	now_mono(&c->now);		/* the loop's time for the SYN-ACK */
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	a = accept(ls, NULL, NULL);	/* loopback: connected at once */
	CHECK(a >= 0);
	CHECK_EQ(send(a, "hi", 2, 0), 2);
	close(a);			/* data and FIN before the guest's ACK */
	pump(c, 100, 2);	/* the SYN-ACK went in the SYN's round: events */
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	g.ack = p.tcp.seq + 1;
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 200, 1);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		if (p.payload_len) {
			CHECK_EQ(p.payload_len, 2);
			CHECK(!memcmp(p.payload, "hi", 2));
		}
		fins += !!(p.tcp.flags & TCP_F_FIN);
	}
	CHECK_EQ(fins, 1);
	g.ack += 3;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(ls);
	tcp_test_free(c);
}

/* Loopback: connect() completes the handshake with a listening peer
 * before it returns, so the SYN-ACK goes to the guest in the SYN's own
 * round (no epoll_wait() for EPOLLOUT first); the EPOLLOUT reported later
 * sends nothing more, and the connection carries data as any other. */
static void syn_ack_same_round(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40043 };
	int ls = listener(v6, &g.dport), a;
	char buf[8];
	struct pkt p;

	CHECK(ls >= 0);
	test_tx_reset(c);
	g.seq = 500;
	now_mono(&c->now);		/* the loop's time for the SYN-ACK */
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	CHECK_EQ(c->tcp.st.connect_now, 1);
	CHECK_EQ(test_tx_n(c), 1);		/* before any event was read */
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	CHECK_EQ(p.tcp.ack, 501);
	g.ack = p.tcp.seq + 1;
	pump(c, 50, 2);				/* the late EPOLLOUT */
	CHECK_EQ(test_tx_n(c), 1);
	a = accept(ls, NULL, NULL);
	CHECK(a >= 0);
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "ping", 4, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 4);
	CHECK_EQ(send(a, "pong", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 4);
	CHECK(!memcmp(p.payload, "pong", 4));
	CHECK_EQ(p.tcp.ack, 505);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_conn_syn_ack_same_round_v4)
{
	syn_ack_same_round(false);
}

TEST(tcp_conn_syn_ack_same_round_v6)
{
	syn_ack_same_round(true);
}

/* A connect the host never answers (the listener's accept queue is full:
 * the kernel drops the SYN) is given up after TCP_CONNECT_TIMEOUT_MS with
 * an RST to the guest. */
TEST(tcp_conn_connect_timeout_gets_rst)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40041 };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a4);
	int ls = socket(AF_INET, SOCK_STREAM, 0), cl;
	struct pkt p;

	CHECK(ls >= 0);
	CHECK(!bind(ls, (void *)&a4, sl) && !listen(ls, 0) &&
	      !getsockname(ls, (void *)&a4, &sl));
	g.dport = ntohs(a4.sin_port);
	cl = socket(AF_INET, SOCK_STREAM, 0);	/* fills the queue */
	CHECK(!connect(cl, (void *)&a4, sl));
	g.seq = 9000;
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	pump(c, 100, 1);
	CHECK_EQ(test_tx_n(c), 0);		/* still connecting */
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	advance(c, TCP_CONNECT_TIMEOUT_MS + 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_RST);
	CHECK_EQ(p.tcp.ack, 9001);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(cl);
	close(ls);
	tcp_test_free(c);
}

/* Half-close, guest first: after its FIN (shutdown(SHUT_WR) on the host
 * socket, EPOLLOUT no longer of interest) the host's data still flows to
 * the guest, and the host's close ends the connection. */
TEST(tcp_conn_guest_fin_then_host_data)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40042 };
	int ls = listener(false, &g.dport), a;
	char b[16];
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(recv(a, b, sizeof(b), 0), 0);		/* EOF on the host */
	test_tx_reset(c);
	CHECK_EQ(send(a, "late", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 4);
	CHECK(!memcmp(p.payload, "late", 4));
	CHECK_EQ(p.tcp.ack, g.seq);			/* FIN acknowledged */
	g.ack += 4;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(c);
	close(a);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	g.ack += 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(ls);
	tcp_test_free(c);
}

/* so_keepalive() - SO_KEEPALIVE of the connection's host socket. */
static int so_keepalive(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_TCP);
	int v = -1;
	socklen_t sl = sizeof(v);

	if (!fl || getsockopt(FLOW_PRIV(fl, struct tcp_conn)->sock, SOL_SOCKET,
			      SO_KEEPALIVE, &v, &sl))
		return -1;
	return v;
}

/* Host-side keepalives are set once a connection lived TCP_KA_ARM_MS (a
 * short one never makes the call), by the timer scan that a later
 * deadline schedules. */
TEST(tcp_conn_keepalive_late)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40043 };
	int ls = listener(false, &g.dport), a, ms;
	uint32_t isn;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK_EQ(so_keepalive(c), 0);
	for (ms = 0; ms < TCP_KA_ARM_MS - 1000; ms += 1000) {
		advance(c, 1000);
		guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);	/* not idle */
	}
	CHECK_EQ(so_keepalive(c), 0);
	CHECK(c->tcp.scan_ms && c->tcp.scan_ms <= tcp_now_ms(c) + 1000);
	advance(c, 1001);
	CHECK_EQ(so_keepalive(c), 1);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* zero_then_drain() - the guest acknowledges everything with a zero
 * window while the host has 4 more bytes (ferry marks the connection
 * WAS_ZERO and clamps), then re-opens: the 4 bytes go out and are
 * acknowledged, so ferry's socket is empty again. */
static void zero_then_drain(struct tguest *g, int a)
{
	g->ack += 4;
	guest_ack_wnd(g, 0);
	CHECK_EQ(send(a, "efgh", 4, 0), 4);
	test_tx_reset(g->c);
	pump(g->c, 50, 1);
	CHECK_EQ(test_tx_n(g->c), 0);
	CHECK(only_conn(g->c)->flags & TCP_C_WAS_ZERO);
	guest_ack_wnd(g, 65535);
	pump(g->c, 2000, 1);
	CHECK_EQ(test_tx_n(g->c), 1);
	g->ack += 4;
	guest_ack_wnd(g, 65535);
	CHECK_EQ(sock_inq(only_conn(g->c)->sock), 0);
}

/* A new connection's first request and reply: the window clamp is set by
 * the read that takes the reply (no SIOCINQ and clamp at the end of the
 * request's batch before it); after the peer's FIN (HTTP Connection:
 * close) the read that finds the EOF sets no clamp: nothing more can
 * arrive. */
TEST(tcp_conn_clamp_first_read_not_after_eof)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40044 };
	int ls = listener(false, &g.dport), a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	char buf[16];
	uint64_t sets;
	uint32_t isn;
	struct pkt p;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "GET", 3, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
	CHECK_EQ(send(a, "200 OK", 6, 0), 6);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 6);
	CHECK(conn->clamp != 0);		/* set by that read */
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ((uint32_t)v, conn->clamp);
	sets = c->tcp.st.clamp_sets;
	g.ack += 6;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(c);
	close(a);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	CHECK_EQ(c->tcp.st.clamp_sets, sets);	/* none for the EOF */
	g.ack += 1;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(ls);
	tcp_test_free(c);
}

/* The stuck-window detector (tcp_tx.c tcp_stuck_check()): a second after
 * a zero window, an empty socket that still advertises a window is left
 * alone; one whose tcpi_rcv_wnd reads zero (no kernel here does that, so
 * the test build's hook plays it) switches clamping off for good and
 * re-opens the socket with a large clamp: the window is never left
 * locked at zero. */
TEST(tcp_stuck_window_detector)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40040 };
	int ls = listener(false, &g.dport), a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	uint32_t isn;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	CHECK_EQ(send(a, "abcd", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	zero_then_drain(&g, a);
	CHECK(conn->clamp != 0);
	loop_timers(c, TCP_STUCK_MS * 2);
	CHECK(!c->tcp.clamp_off);		/* the real window is open */
	CHECK_EQ(c->tcp.st.clamp_fallbacks, 0);
	CHECK(!(conn->flags & TCP_C_WAS_ZERO));	/* checked once */

	CHECK_EQ(send(a, "ijkl", 4, 0), 4);
	test_tx_reset(c);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	zero_then_drain(&g, a);
	tcp_test_stuck_wnd = 0;
	loop_timers(c, TCP_STUCK_MS * 2);
	tcp_test_stuck_wnd = -1;
	CHECK(c->tcp.clamp_off);
	CHECK_EQ(c->tcp.st.clamp_fallbacks, 1);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ(v, 1 << 30);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* --- several connections in one wake-up (issue 6, multistream) --- */

/* The clamp at a batch's end follows the guest's window: a batch that
 * leaves the window as it was costs no SIOCINQ and sets nothing, one that
 * changes it re-computes the clamp, and the socket has the new value. */
TEST(tcp_clamp_follows_guest_window)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40050 };
	int ls = listener(false, &g.dport), a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	uint8_t got[64];
	uint64_t sets;
	uint32_t isn, wide;

	a = handshake(&g, ls, &isn);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "abc", 3, NULL, 0);
	CHECK(conn->clamp != 0);
	CHECK_EQ(conn->clamp_wnd, conn->wnd_from_guest);
	wide = conn->clamp;
	sets = c->tcp.st.clamp_sets;
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "def", 3, NULL, 0);
	CHECK_EQ(c->tcp.st.clamp_sets, sets);		/* same window */
	g.wnd = 100;			/* scaled by 2^7: 12800 bytes */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "ghi", 3, NULL, 0);
	CHECK_EQ(conn->wnd_from_guest, 100u << 7);
	CHECK_EQ(conn->clamp_wnd, conn->wnd_from_guest);
	CHECK(conn->clamp < wide);
	CHECK_EQ(c->tcp.st.clamp_sets, sets + 1);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ((uint32_t)v, conn->clamp);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 9);
	CHECK(!memcmp(got, "abcdefghi", 9));
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* conn_by_port() - the connection of the guest's port. */
static struct tcp_conn *conn_by_port(struct ctx *c, uint16_t port)
{
	struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl;
	     fl = flow_next(&c->flows, fl))
		if (fl->f.key[FLOW_SIDE_GUEST].pa == port)
			return FLOW_PRIV(fl, struct tcp_conn);
	return NULL;
}

/* A wake-up that reads several rounds from the tap (rx.next_round):
 * data of interleaved connections is written at once, in order, each to
 * its own socket, but the ACKs of small amounts wait for the last round,
 * which acknowledges everything with one ACK per connection; a FIN, or
 * a quarter of the window offered, is acknowledged at once. */
TEST(tcp_ack_carried_across_rounds)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g1 = { .c = c, .sport = 40051 };
	struct tguest g2 = { .c = c, .sport = 40052 };
	struct tcp_conn *conn;
	static uint8_t data[1400], got[1 << 16];
	uint32_t isn, b1, b2, quarter;
	size_t i, sent, have;
	struct pkt p;
	int ls, a1, a2;
	ssize_t r;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 3 + 7);
	ls = listener(false, &g1.dport);
	g2.dport = g1.dport;
	a1 = handshake(&g1, ls, &isn);
	a2 = handshake(&g2, ls, &isn);
	CHECK(a1 >= 0 && a2 >= 0);
	b1 = g1.seq;
	b2 = g2.seq;
	c->link.rx.next_round = true;
	guest_send(&g1, TCP_F_ACK, data, 1000, NULL, 0);
	guest_send(&g2, TCP_F_ACK, data + 1000, 300, NULL, 0);
	guest_send(&g1, TCP_F_ACK, data, 1000, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);
	/* each batch looks at the connections carried into it again */
	CHECK_EQ(c->tcp.st.acks_carried, 1 + 2 + 2);
	CHECK(tcp_input_pending(c));
	CHECK_EQ(recv_all(a1, got, sizeof(got)), 2000);
	CHECK(!memcmp(got, data, 1000) && !memcmp(got + 1000, data, 1000));
	CHECK_EQ(recv_all(a2, got, sizeof(got)), 300);
	CHECK(!memcmp(got, data + 1000, 300));

	/* the last round: the ACK of a full segment goes, the one of a
	 * small write waits the delayed-ACK time (tcp_delack()) as ever */
	c->link.rx.next_round = false;
	tcp_input_done(c);
	CHECK(!tcp_input_pending(c));
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK);
	CHECK_EQ(p.tcp.dport, g1.sport);
	CHECK_EQ(p.tcp.ack, b1 + 2000);
	advance(c, TCP_DELACK_MS + 1);
	CHECK_EQ(test_tx_n(c), 2);
	CHECK(seg_at(c, 1, &p));
	CHECK_EQ(p.tcp.dport, g2.sport);
	CHECK_EQ(p.tcp.ack, b2 + 300);

	/* a quarter of the window unacknowledged: the ACK goes at once */
	test_tx_reset(c);
	conn = conn_by_port(c, g1.sport);
	CHECK(conn != NULL);
	quarter = conn->wnd_sent / 4;
	c->link.rx.next_round = true;
	for (sent = 0, have = 0; sent < quarter + sizeof(data) &&
	     !test_tx_n(c); sent += sizeof(data)) {
		guest_send(&g1, TCP_F_ACK, data, sizeof(data), NULL, 0);
		while ((r = recv(a1, got, sizeof(got), MSG_DONTWAIT)) > 0)
			have += (size_t)r;
	}
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(sent >= quarter && sent - sizeof(data) < quarter);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, b1 + 2000 + (uint32_t)sent);

	/* a FIN is acknowledged at once, even with rounds to come */
	test_tx_reset(c);
	guest_send(&g2, TCP_F_ACK | TCP_F_FIN, "end", 3, NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, b2 + 300 + 3 + 1);
	c->link.rx.next_round = false;
	tcp_input_done(c);
	while ((r = recv(a1, got, sizeof(got), MSG_DONTWAIT)) > 0)
		have += (size_t)r;
	CHECK_EQ(have, sent);
	close(a1);
	close(a2);
	close(ls);
	tcp_test_free(c);
}
