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
#include "tcp_harness.h"

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

static void data_both_ways(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40000 };
	char buf[64] = { 0 };
	uint32_t isn;
	struct pkt p;
	int a;

	a = tconn_open(&g, false, &isn);
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
	tconn_close(&g, a);
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
	int a;

	a = tconn_open(&g, false, &isn);
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
	a = handshake(&g, g.ls, &isn);
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
	tconn_close(&g, a);
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
	size_t i;
	int a;

	a = tconn_open(&g, false, &isn);
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
	pump(c, 100, 2);		/* the window is full: nothing new */
	/* A slow run (valgrind) may pass TCP_RTO_MS since the segment
	 * went out: its retransmission is no new data. */
	for (i = 1; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.tcp.seq, isn + 1);
		CHECK_EQ(p.payload_len, 1024);
	}
	test_tx_reset(c);
	g.ack += 1024;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 512);
	CHECK_EQ(p.tcp.seq, isn + 1 + 1024);
	tconn_close(&g, a);
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
		if (i < 2) {	/* established: never abandoned for a SYN */
			CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
			g.ack = p.tcp.seq + 1;
			guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
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
	int a;
	struct linger l = { 1, 0 };

	a = tconn_open(&g, false, &isn);
	CHECK(a >= 0);
	/* guest RST: the host peer sees a reset */
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(recv(a, b, sizeof(b), 0), -1);
	CHECK_EQ(errno, ECONNRESET);
	close(a);

	/* host RST: the guest gets one */
	g.sport++;
	a = handshake(&g, g.ls, &isn);
	CHECK(a >= 0);
	setsockopt(a, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(a);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_RST);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, -1);
}

TEST(tcp_window_limits_and_dupack_rewind)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40004 };
	static char big[8000];
	uint32_t isn;
	struct pkt p;
	size_t i, n;
	int a;

	a = tconn_open(&g, false, &isn);
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
	tconn_close(&g, a);
}

/* An ACK below snd_una is old (reordered, or a duplicate from before the
 * last one): its window is old too and is not taken (RFC 9293 3.10.7.4,
 * the window is updated only when SND.UNA =< SEG.ACK). ferry took it,
 * and with a larger window than the guest's current one sent beyond the
 * guest's right edge (found by fuzz_tcp: data [30660, 32120) beyond the
 * guest's edge 30691). */
TEST(tcp_old_ack_window_ignored)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40040 };
	static char big[20000];
	uint32_t isn;
	struct pkt p;
	int a;

	a = tconn_open(&g, false, &isn);
	CHECK(a >= 0);
	guest_ack_wnd(&g, 23);		/* window scale 7: 2944 bytes */
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 3);
	CHECK_EQ(test_tx_n(c), 3);	/* 1460, 1460, 24: the window full */
	test_tx_reset(c);
	g.ack = isn + 1 + 1460;		/* the first segment, same window */
	guest_ack_wnd(&g, 23);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq + p.payload_len, isn + 1 + 1460 + 2944);
	test_tx_reset(c);
	g.ack = isn + 1;		/* an old ACK with a larger window */
	guest_ack_wnd(&g, 512);
	pump(c, 50, 1);
	CHECK_EQ(test_tx_n(c), 0);
	tconn_close(&g, a);
}

/* A guest that receives beyond a hole keeps growing its window in every
 * duplicate ACK (Linux does while its receive buffer autotunes), so the
 * same-window rule of RFC 5681 alone never sees three duplicates and
 * only the RTO recovered (seen in test_tcp_faults.py captures: 18
 * duplicate ACKs with SACK blocks and growing windows, no rewind). ACKs
 * that carry SACK blocks are duplicates whatever their window (RFC 6675
 * counts those); window updates without SACK blocks still are not. */
TEST(tcp_sack_dupacks_with_growing_window_rewind)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40014 };
	static char big[8000];
	uint8_t sack[12] = { 1, 1, 5, 10 };
	uint32_t first, i;
	struct pkt p;
	int a;

	a = tconn_open(&g, true, NULL);
	CHECK(a >= 0);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 6);
	CHECK_EQ(test_tx_n(c), 6);
	CHECK(seg_at(c, 0, &p));
	first = p.tcp.seq;
	test_tx_reset(c);
	/* window updates, no SACK blocks: not duplicates */
	for (i = 0; i < 3; i++) {
		g.wnd = (uint16_t)(1000 + i);
		guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	}
	CHECK_EQ(c->tcp.st.rewinds_dupack, 0);
	CHECK_EQ(test_tx_n(c), 0);
	/* the first segment lost, the next ones SACKed, the window growing */
	for (i = 0; i < 3; i++) {
		wr32(sack + 4, first + 1460);
		wr32(sack + 8, first + 1460 * (i + 2));
		g.wnd = (uint16_t)(2000 + i);
		guest_send(&g, TCP_F_ACK, NULL, 0, sack, sizeof(sack));
	}
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(test_tx_n(c) >= 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, first);
	tconn_close(&g, a);
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
	int a;

	a = tconn_open(&g, false, &isn);
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
	tconn_close(&g, a);
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
	int a;

	a = tconn_open(&g, false, &isn);
	CHECK(a >= 0);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	CHECK_EQ(shutdown(a, SHUT_WR), 0);
	CHECK(fin_delivered(a));	/* data and FIN in ferry's socket */
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
	tconn_close(&g, a);
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
	int a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7);
	a = tconn_open(&g, true, NULL);
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
	tconn_close(&g, a);
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
	int a;

	memset(data, 0x5a, sizeof(data));
	a = tconn_open(&g, true, NULL);
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
	tconn_close(&g, a);
}

TEST(tcp_ooo_without_sack_and_fin)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = true, .sport = 40011 };
	static uint8_t data[3000], got[4000];
	uint32_t base;
	struct pkt p;
	size_t i;
	int a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 17 + 3);
	a = tconn_open(&g, false, NULL);	/* no SACK-permitted */
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
	tconn_close(&g, a);
}

/* A guest that sends bytes after its own FIN (queued out of order,
 * merged with the FIN's segment): once the hole before the FIN is
 * filled exactly up to it, the stream ends at the FIN. Before, the
 * queued run went on past the FIN: ferry wrote and acknowledged 800
 * bytes the guest placed after the end of its stream (fuzz_tcp:
 * corpus/tcp/crash-data-after-fin). */
TEST(tcp_ooo_nothing_after_fin)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40012 };
	static uint8_t data[3000], got[4000];
	uint32_t base;
	struct pkt p;
	size_t i;
	int a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 5);
	a = tconn_open(&g, true, NULL);
	CHECK(a >= 0);
	base = g.seq;
	send_at(&g, base, data, 1000, 400, TCP_F_FIN);	/* FIN at 1400 */
	send_at(&g, base, data, 1200, 1000, 0);		/* beyond it */
	test_tx_reset(c);
	send_at(&g, base, data, 0, 1400, 0);		/* up to the FIN */
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, base + 1401);
	CHECK_EQ(recv(a, got, sizeof(got), MSG_WAITALL), 1400);
	CHECK(!memcmp(got, data, 1400));
	CHECK_EQ(recv(a, got, sizeof(got), 0), 0);	/* EOF */
	tconn_close(&g, a);
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
	int a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 5 + 1);
	a = tconn_open(&g, true, NULL);
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
	tconn_close(&g, a);
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
	int a;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 5);
	a = tconn_open(&g, true, NULL);
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
	tconn_close(&g, a);
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

/* --- review findings (tcp.c, tcp_out.c) -------------------------------
 * Defects found in review of the delayed-ACK and zero-window code: a
 * delayed ACK's timer swallowing the retransmission timer, a queued
 * delayed ACK holding back a full segment's ACK, and no zero-window
 * probe with nothing in flight. */

/* A delayed ACK's timer fires before the retransmission timer: the scan
 * is not due, tcp_timer() returns without asking for it again, and the
 * retransmission never happens (tcp_timer.c tcp_timer(), early return). */
TEST(tcp_review_delack_keeps_rto)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40020 };
	int a;
	size_t i, data = 0;
	struct pkt p;

	a = tconn_open(&g, false, NULL);
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
	tconn_close(&g, a);
}

/* Ping-pong: request 1's ACK is queued, the reply carries it; request 2
 * comes 1 ms later and is queued too. When request 1's stale entry comes
 * due, request 2's ACK must keep waiting for its own deadline (tcp.c
 * tcp_delack_run(): entries carry the connection's ack_sent). */
TEST(tcp_delack_stale_entry_leaves_next_request)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40022 };
	int a, i;
	char buf[64];
	struct pkt p;

	a = tconn_open(&g, false, NULL);
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
	tconn_close(&g, a);
}

/* A small write's ACK is queued; a full segment follows before the delay
 * ran out: it must be acknowledged at once (tcp_timer.c tcp_delack() returns
 * early for TCP_ACK_QUEUED before looking at the amount). */
TEST(tcp_review_delack_full_segment_after_small)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40021 };
	int a;
	static char seg[1460];
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "x", 1, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);		/* delayed */
	guest_send(&g, TCP_F_ACK, seg, sizeof(seg), NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);		/* 1461 bytes: at once */
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, g.seq);
	tconn_close(&g, a);
}

/* The guest acknowledges everything with a zero window while the host
 * has more: ferry must probe the window (RFC 9293 3.8.6.1), or a lost
 * window update stalls the connection for good. No timer is armed when
 * nothing is in flight (tcp_in.c tcp_ack_input(), tcp_out.c
 * tcp_data_to_guest()). */
TEST(tcp_review_zero_window_probed)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40022 };
	int a;

	a = tconn_open(&g, false, NULL);
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
	tconn_close(&g, a);
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
 * the guest's TSO limit; otherwise the MTU's. Never the host socket's
 * segment size: the harness's peer is on loopback, whose first window
 * (64 KiB, unscaled) holds the socket's TCP_MAXSEG at half of it (32741)
 * until more window is seen; passed on, that halved every frame of a VM
 * guest (no TSO on a qemu stream). */
TEST(tcp_mss_fills_tso_frames)
{
	CHECK_EQ(syn_mss(false, 65520, false), 65480);
	CHECK_EQ(syn_mss(true, 65520, false), 65460);
	CHECK_EQ(syn_mss(false, 65520, true), (65536 - 321) / 3);
	CHECK_EQ(syn_mss(true, 65520, true), (65536 - 321) / 3);
	CHECK_EQ(syn_mss(false, 1500, true), 1460);
	CHECK_EQ(syn_mss(true, 1500, true), 1440);
	CHECK_EQ(syn_mss(false, 1500, false), 1460);
}

/* The levels of the window to the guest: the four most significant bits,
 * rounded down. */
TEST(tcp_wnd_quantize_levels)
{
	CHECK_EQ(tcp_wnd_quantize(0), 0);
	CHECK_EQ(tcp_wnd_quantize(15), 15);
	CHECK_EQ(tcp_wnd_quantize(31), 30);
	CHECK_EQ(tcp_wnd_quantize(373760), 360448);	/* 11 << 15 */
	CHECK_EQ(tcp_wnd_quantize(2800000), 2621440);	/* 10 << 18 */
	CHECK_EQ(tcp_wnd_quantize(0xffffffffu), 0xf0000000u);
	CHECK_EQ(tcp_wnd_quantize(1u << 20), 1u << 20);
}

/* wnd_ack() - the ACK of the guest's last segment, from the one frame sent
 * since test_tx_reset(): its ACK and window field, false if none. */
static bool wnd_ack(struct ctx *c, uint32_t *ack, uint16_t *wnd)
{
	struct pkt p;

	if (test_tx_n(c) != 1 || !seg_at(c, 0, &p) || p.tcp.flags != TCP_F_ACK)
		return false;
	*ack = p.tcp.ack;
	*wnd = p.tcp.window;
	return true;
}

/* A bulk sender whose data the host reads at once sees the same window on
 * every ACK (the right edge moves with the ACK): the guest's header
 * prediction (Linux tcp_rcv_established()) takes only ACKs with an
 * unchanged window field; before, the window shrank by each segment and
 * jumped back every eighth of it, and no ACK took the fast path
 * (doc/bench.md, VM mode). At MTU 65520 the window is the socket's free
 * space, not the 256-segment cap. */
TEST(tcp_wnd_steady_for_bulk)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40030 };
	static uint8_t seg[1460], sink[65536];
	uint16_t wnd, first = 0;
	uint32_t ack;
	int a, i, same = 0;

	c->conf.mtu = 65520;
	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	for (i = 0; i < 300; i++) {
		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, seg, sizeof(seg), NULL, 0);
		advance(c, TCP_DELACK_MS + 1);	/* below a segment: waits */
		CHECK(wnd_ack(c, &ack, &wnd));
		CHECK_EQ(ack, g.seq);
		while (recv_all(a, sink, sizeof(sink)) > 0)
			;
		if (i == 0)
			first = wnd;
		same += wnd == first;
	}
	CHECK(first > 0);
	CHECK_EQ(same, 300);
	CHECK_EQ(c->tcp.st.short_writes, 0);
	tconn_close(&g, a);
}

/* The host stops reading: the guest, sending as far as each ACK's window
 * lets it, is stopped by a closing window; the right edge (ACK + window)
 * does not move back on the way (RFC 9293 3.8.6), by less than a unit of
 * the window scale at most (the scale's granularity, RFC 7323 appendix
 * F; before, a new measurement could take back more), and the socket
 * never refuses what the window invited. */
TEST(tcp_wnd_edge_never_retracts)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40031 };
	static uint8_t seg[1460];
	uint32_t ack, edge = 0, e, room;
	uint16_t wnd;
	int a, i;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	room = sizeof(seg);
	for (i = 0; i < 20000 && room; i++) {
		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, seg, room, NULL, 0);
		if (!wnd_ack(c, &ack, &wnd)) {	/* a small one waits */
			advance(c, TCP_DELACK_MS + 1);
			CHECK(wnd_ack(c, &ack, &wnd));
		}
		CHECK_EQ(ack, g.seq);
		e = ack + ((uint32_t)wnd << TCP_WS_TO_GUEST);
		if (!edge || (int32_t)(e - edge) > 0)
			edge = e;
		CHECK((int32_t)(edge - e) < 1 << TCP_WS_TO_GUEST);
		room = MIN(e - g.seq, (uint32_t)sizeof(seg));
	}
	CHECK_EQ(room, 0);			/* the guest was stopped */
	CHECK_EQ(c->tcp.st.short_writes, 0);
	tconn_close(&g, a);
}

/* At MTU 1500 without TSO (a qemu stream link, --no-offload) the window
 * to the guest stops at its 256-segment cap (373 KB), below a quarter of
 * the send buffer the kernel grows for a bulk connection: the cap, not a
 * full socket, holds it down. Before, the connection counted as "low" for
 * good: an SO_MEMINFO every batch and EPOLLOUT wanted all along (seen
 * with vmack, doc/bench.md). A socket whose buffer does fill is low. */
TEST(tcp_wnd_cap_is_not_low)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40032 };
	static uint8_t seg[1460], sink[65536];
	struct tcp_conn *conn;
	int a, i, big = 4 << 20;

	c->conf.mtu = 1500;
	c->link.rx_tso = false;
	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	conn = FLOW_PRIV(flow_first(&c->flows, FLOW_TCP), struct tcp_conn);
	setsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	for (i = 0; i < 600; i++) {
		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, seg, sizeof(seg), NULL, 0);
		advance(c, TCP_DELACK_MS + 1);
		while (recv_all(a, sink, sizeof(sink)) > 0)
			;
	}
	CHECK(conn->sndbuf / 4 > TCP_WND_SEGS * 1460u);	/* the case */
	CHECK(!(conn->flags & (TCP_C_WND_LOW | TCP_C_WANT_OUT)));
	CHECK(conn->wnd_to_guest <= TCP_WND_SEGS * 1460u);
	CHECK(conn->wnd_to_guest >= TCP_WND_SEGS * 1460u / 16 * 15);
	/* The host stops reading: once its buffers fill, the socket's free
	 * space holds the window down, and that is low. */
	for (i = 0; i < 20000 && !(conn->flags & TCP_C_WND_LOW); i++) {
		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, seg, sizeof(seg), NULL, 0);
		advance(c, TCP_DELACK_MS + 1);
	}
	CHECK(conn->flags & TCP_C_WND_LOW);
	CHECK(conn->flags & TCP_C_WANT_OUT);
	CHECK_EQ(c->tcp.st.short_writes, 0);
	tconn_close(&g, a);
}

/* A send buffer smaller than four of the guest's segments (a small
 * net.ipv4.tcp_wmem, or the kernel trimming buffers under memory
 * pressure): the kernel reports room (EPOLLOUT) once a third of the
 * buffer is free, and then not again until a write is refused, so the
 * window measured there can stay below one segment. A sender does not
 * send less than a segment into a window it has filled (RFC 9293
 * 3.8.6.2.1; Linux tcp_snd_wnd_test()): it waits for its persist timer,
 * 200 ms and more, doubled per probe. Seen: 256 MiB guest -> host with
 * tcp_wmem max 128 KiB stalled 0.2 s about 25 times. ferry must itself
 * tell the guest when a whole segment fits again. */
TEST(tcp_wnd_reopens_for_a_whole_segment)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40033 };
	static uint8_t seg[8960], sink[65536];
	const uint32_t mss = sizeof(seg);
	struct tcp_conn *conn;
	uint32_t ack, room = 0;
	int a, i, small = 8192, tiny = 4096;
	uint16_t wnd, wnd_field = 0xffff;
	bool reopened = false;

	c->conf.mtu = 9000;
	c->link.rx_tso = false;
	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	conn = FLOW_PRIV(flow_first(&c->flows, FLOW_TCP), struct tcp_conn);
	CHECK_EQ(tcp_mss_from_guest(c, flow_first(&c->flows, FLOW_TCP)), mss);
	setsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(a, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny));
	conn->wnd_written = conn->wnd_base;	/* measured at the next batch */
	/* The window already offered was measured with the old size: the
	 * guest uses it up while the host reads. Then the host stops reading
	 * and the guest sends whole segments while the window has room for
	 * one. */
	for (i = 0, room = mss; i < 4000 && room >= mss; i++) {
		bool reading = i < 2000 && wnd_field >= 65536 >> TCP_WS_TO_GUEST;

		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, seg, mss, NULL, 0);
		if (!wnd_ack(c, &ack, &wnd)) {
			advance(c, TCP_DELACK_MS + 1);
			CHECK(wnd_ack(c, &ack, &wnd));
		}
		while (reading && recv_all(a, sink, sizeof(sink)) > 0)
			;
		wnd_field = wnd;
		g.seq = ack;	/* what the socket refused is sent again */
		room = ack + ((uint32_t)wnd << TCP_WS_TO_GUEST) - g.seq;
	}
	CHECK(room < mss);			/* the guest waits */
	CHECK(conn->sndbuf < 4 * mss);		/* the case */
	/* The host reads everything from now on; the guest sends nothing.
	 * A window update with room for a segment must come (within 2 s
	 * here: without one, the guest would wait for its persist timer). */
	for (i = 0; i < 400 && !reopened; i++) {
		size_t k;

		while (recv_all(a, sink, sizeof(sink)) > 0)
			;
		test_tx_reset(c);
		pump(c, 5, 1);
		for (k = 0; k < test_tx_n(c); k++) {
			struct pkt p;

			if (!seg_at(c, k, &p) || p.tcp.ack != g.seq)
				continue;
			if (((uint32_t)p.tcp.window << TCP_WS_TO_GUEST) >= mss)
				reopened = true;
		}
	}
	CHECK(reopened);
	tconn_close(&g, a);
}
