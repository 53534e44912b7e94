/* test_tcp_seg.c - a guest segment's arrival on a synchronized
 * connection, step by step as RFC 9293 3.10.7.4 has it (doc/tcp.md,
 * "Segment arrival"): which window ferry takes (SND.WL1/SND.WL2), what a
 * segment beyond the window, an RST or a SYN that does not fit, and an
 * ACK of data never sent get (RFC 5961's challenge ACKs, and their
 * limit). Frames are built here and fed through tap_input(); the host
 * side is a real socket on the loopback (tcp_harness.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "tap.h"
#include "tcp_conn.h"
#include "tcp_fwd.h"
#include "unit.h"
#include "util.h"
#include "tcp_harness.h"

/* seg() - a segment from the guest at seq with flags, its ACK field
 * g->ack, the window field wnd (exactly), and len bytes of data. */
static void seg(struct tguest *g, uint32_t seq, uint8_t flags, uint16_t wnd,
		const void *data, size_t len)
{
	uint16_t w = g->wnd;
	bool raw = g->wnd_raw;
	uint8_t f[2048];
	size_t n;

	g->wnd = wnd;
	g->wnd_raw = true;
	n = guest_frame(g, f, seq, flags, data, len, NULL, 0);
	g->wnd = w;
	g->wnd_raw = raw;
	test_input(g->c, f, n);
}

/* data_sent() - payload bytes of the frames to the guest since the last
 * test_tx_reset(). */
static uint32_t data_sent(struct ctx *c)
{
	size_t i, n = test_tx_n(c);
	uint32_t bytes = 0;
	struct pkt p;

	for (i = 0; i < n; i++)
		if (seg_at(c, i, &p))
			bytes += (uint32_t)p.payload_len;
	return bytes;
}

/* data_end() - how far the data frames to the guest since the last
 * test_tx_reset() reached: the highest end, as an offset from base (0:
 * none). Unlike data_sent(), resends (a timer's) do not add to it. */
static uint32_t data_end(struct ctx *c, uint32_t base)
{
	size_t i, n = test_tx_n(c);
	uint32_t end = 0;
	struct pkt p;

	for (i = 0; i < n; i++)
		if (seg_at(c, i, &p) && p.payload_len &&
		    p.tcp.seq + (uint32_t)p.payload_len - base > end)
			end = p.tcp.seq + (uint32_t)p.payload_len - base;
	return end;
}

/* acks_sent() - frames to the guest without payload, SYN, FIN or RST,
 * acknowledging ack, since the last test_tx_reset(). */
static unsigned int acks_sent(struct ctx *c, uint32_t ack)
{
	size_t i, n = test_tx_n(c);
	unsigned int acks = 0;
	struct pkt p;

	for (i = 0; i < n; i++)
		if (seg_at(c, i, &p) && p.tcp.flags == TCP_F_ACK &&
		    !p.payload_len && p.tcp.ack == ack)
			acks++;
	return acks;
}

/* host_read() - poll (1 ms steps, 2 s deadline) until the host socket a
 * has len bytes to read, and read them; the bytes read. */
static ssize_t host_read(int a, uint8_t *buf, size_t len)
{
	struct pollfd pfd = { .fd = a, .events = POLLIN };
	ssize_t got = 0;
	int i;

	for (i = 0; i < 2000 && (size_t)got < len; i++) {
		got += recv_all(a, buf + got, len - (size_t)got);
		if ((size_t)got < len)
			poll(&pfd, 1, 1);
	}
	return got;
}

/* guest_syn() - a host listener (g->ls, its port in g->dport) and a SYN
 * from g at isn with window field wnd and the harness's options (MSS
 * 1460, window scale 7), not yet acknowledged: ferry's SYN-ACK in *p,
 * g->ack set after it. Returns the host's accepted socket, -1 on
 * failure. */
static int guest_syn(struct tguest *g, uint32_t isn, uint16_t wnd,
		     struct pkt *p)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7 };

	g->ls = listener(false, &g->dport);
	if (g->ls < 0)
		return -1;
	g->seq = isn;
	g->wnd = wnd;
	guest_send(g, TCP_F_SYN, NULL, 0, opts, sizeof(opts));
	pump(g->c, 2000, 1);
	if (!seg_at(g->c, 0, p) || p->tcp.flags != (TCP_F_SYN | TCP_F_ACK))
		return -1;
	g->ack = p->tcp.seq + 1;
	return accept(g->ls, NULL, NULL);
}

/* open_with_data() - a connection whose guest sent "hello" (seq 1001)
 * and then a pure ACK at 1006 with window field wnd (scale 7), the host
 * having read the five bytes. Returns the host's socket, -1 on failure;
 * ferry's ISN in *isn. */
static int open_with_data(struct tguest *g, uint16_t wnd, uint32_t *isn)
{
	uint8_t buf[8];
	int a = tconn_open(g, false, isn);

	if (a < 0)
		return -1;
	seg(g, 1001, TCP_F_ACK | TCP_F_PSH, wnd, "hello", 5);
	seg(g, 1006, TCP_F_ACK, wnd, NULL, 0);
	g->seq = 1006;
	if (host_read(a, buf, 5) != 5) {
		close(a);
		return -1;
	}
	pump(g->c, 20, 100);
	test_tx_reset(g->c);
	return a;
}

/* The window of a segment older than the one the window came from last
 * (SEG.SEQ before SND.WL1: the guest's data again, reordered or late)
 * is not taken, even with the same ACK (RFC 9293 3.10.7.4): ferry took
 * every window at or past SND.UNA, and a larger old one let it send
 * beyond the guest's right edge. A pure window update (the same SEG.SEQ
 * and SEG.ACK, another window) is taken: the guest opening a window it
 * closed, the common case. */
TEST(tcp_wnd_older_seq_not_taken)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40600 };
	static char big[20000];
	uint32_t isn;
	int a;

	a = open_with_data(&g, 23, &isn);	/* scale 7: 2944 bytes */
	CHECK(a >= 0);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 3);
	CHECK_EQ(data_end(c, isn + 1), 2944);
	test_tx_reset(c);
	/* "hello" again, the same ACK, a larger window: not taken */
	seg(&g, 1001, TCP_F_ACK | TCP_F_PSH, 512, "hello", 5);
	pump(c, 50, 2);
	CHECK_EQ(data_sent(c), 0);
	CHECK_EQ(acks_sent(c, 1006), 1);	/* old data: ACKed */
	test_tx_reset(c);
	/* the same SEG.SEQ and SEG.ACK as the window's, another window */
	seg(&g, 1006, TCP_F_ACK, 46, NULL, 0);
	pump(c, 2000, 3);
	CHECK_EQ(data_end(c, isn + 1), 5888);
	tconn_close(&g, a);
}

/* A newer segment (SEG.SEQ past SND.WL1) with the same ACK that shrinks
 * the window is taken; the older one with the larger window arriving
 * after it is not. */
TEST(tcp_wnd_newer_seq_shrink_taken)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40601 };
	static char big[20000];
	uint32_t isn;
	int a;

	a = open_with_data(&g, 46, &isn);	/* 5888 bytes */
	CHECK(a >= 0);
	seg(&g, 1006, TCP_F_ACK | TCP_F_PSH, 11, "world", 5);	/* 1408 */
	pump(c, 20, 100);
	test_tx_reset(c);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 1);
	pump(c, 50, 2);
	CHECK_EQ(data_end(c, isn + 1), 1408);
	test_tx_reset(c);
	/* "hello" again, with the window it had: older than "world" */
	seg(&g, 1001, TCP_F_ACK | TCP_F_PSH, 46, "hello", 5);
	pump(c, 50, 1);
	CHECK_EQ(data_sent(c), 0);
	tconn_close(&g, a);
}

/* SND.WL1 starts at the guest's ISN (RFC 9293 3.10.7.3/4), so that the
 * ACK completing the handshake takes its window even where its SEG.SEQ
 * is not after 0 in sequence space (an ISN past 2^31: an SND.WL1 left at
 * zero would keep the SYN's unscaled window). */
TEST(tcp_wnd_wl1_from_guest_syn)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40610 };
	static char big[20000];
	struct pkt p;
	int a;

	a = guest_syn(&g, 0x80000100, 1000, &p);	/* the SYN's window */
	CHECK(a >= 0);
	seg(&g, 0x80000101, TCP_F_ACK, 46, NULL, 0);	/* 5888 */
	test_tx_reset(c);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 5);
	pump(c, 50, 6);
	CHECK_EQ(data_end(c, g.ack), 5888);
	tconn_close(&g, a);
}

/* A segment that starts beyond the right edge ferry advertised is not
 * acceptable (RFC 9293 3.10.7.4, first step): answered with an ACK and
 * dropped, its ACK field and window not taken. Taken, its larger window
 * let ferry send beyond the guest's edge, and its SEG.SEQ would have
 * held SND.WL1 beyond every real segment, so that the guest's window
 * updates went unheard from then on. */
TEST(tcp_seg_beyond_window_ack_not_taken)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40602 };
	static char big[20000];
	uint64_t drops;
	uint32_t isn;
	int a;

	a = open_with_data(&g, 23, &isn);
	CHECK(a >= 0);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 3);
	CHECK_EQ(data_end(c, isn + 1), 2944);
	test_tx_reset(c);
	drops = c->stats.drops[DROP_TCP_SEQ];
	seg(&g, 1006 + 10000000, TCP_F_ACK, 512, NULL, 0);
	pump(c, 50, 2);
	CHECK_EQ(data_sent(c), 0);
	CHECK_EQ(acks_sent(c, 1006), 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], drops + 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	test_tx_reset(c);
	seg(&g, 1006, TCP_F_ACK, 46, NULL, 0);	/* the real window update */
	pump(c, 2000, 3);
	CHECK_EQ(data_end(c, isn + 1), 5888);
	tconn_close(&g, a);
}

/* An RST resets the connection only at RCV.NXT exactly; elsewhere in
 * the window it draws a challenge ACK and is dropped, below the window
 * it is dropped without an answer (RFC 5961 section 3.2). ferry took
 * any RST inside the window. The guest that really reset answers the
 * challenge ACK with an RST at its ACK, which then counts. */
TEST(tcp_rst_in_window_challenged)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40603 };
	uint64_t chal = c->stats.drops[DROP_TCP_CHALLENGE];
	uint64_t seqd = c->stats.drops[DROP_TCP_SEQ];
	char b[8];
	int a;

	a = open_with_data(&g, 65535, NULL);
	CHECK(a >= 0);
	seg(&g, 1006 + 100, TCP_F_RST, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_CHALLENGE], chal + 1);
	pump(c, 50, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK_EQ(acks_sent(c, 1006), 1);
	CHECK_EQ(c->tcp.st.chacks, 1);
	test_tx_reset(c);
	seg(&g, 1006 - 10, TCP_F_RST | TCP_F_ACK, 0, NULL, 0);	/* old */
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], seqd + 1);
	pump(c, 50, 1);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.st.rst_from_guest, 0);
	seg(&g, 1006, TCP_F_RST, 0, NULL, 0);		/* at RCV.NXT */
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.st.rst_from_guest, 1);
	CHECK_EQ(recv(a, b, sizeof(b), 0), -1);
	CHECK_EQ(errno, ECONNRESET);
	tconn_close(&g, a);
}

/* An RST at RCV.NXT while the guest's data of the same batch is still
 * queued for the batch's write counts: RCV.NXT includes it (tcp.c
 * tcp_rcv_nxt()); the guest's RST follows its data. */
TEST(tcp_rst_after_data_in_batch_taken)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40604 };
	struct rx_batch *rx = &c->link.rx;
	size_t n;
	int a;

	a = open_with_data(&g, 65535, NULL);
	CHECK(a >= 0);
	n = guest_frame(&g, rx->buf, 1006, TCP_F_ACK | TCP_F_PSH, "bye", 3,
			NULL, 0);
	rx->f[0].off = 0;
	rx->f[0].len = (uint32_t)n;
	rx->f[1].off = (uint32_t)n;
	rx->f[1].len = (uint32_t)guest_frame(&g, rx->buf + n, 1009, TCP_F_RST,
					     NULL, 0, NULL, 0);
	rx->n = 2;
	tap_input(c);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.st.rst_from_guest, 1);
	tconn_close(&g, a);
}

/* A SYN on a synchronized connection (a guest that lost it and opens
 * the tuple again with another ISN, or a SYN-ACK repeated) gets a
 * challenge ACK (RFC 5961 section 4), after which the guest's RST at
 * its ACK resets the connection. Challenge ACKs are limited to
 * TCP_CHACK_MAX per TCP_CHACK_MS per connection (RFC 5961 section 7):
 * a guest sending SYNs or RSTs in a loop gets no more out of ferry; ferry
 * answered every SYN. */
TEST(tcp_syn_synchronized_challenge_limited)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40605 };
	unsigned int i;
	int a;

	a = open_with_data(&g, 65535, NULL);
	CHECK(a >= 0);
	seg(&g, 777777, TCP_F_SYN, 65535, NULL, 0);
	pump(c, 50, 1);
	CHECK_EQ(acks_sent(c, 1006), 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	for (i = 1; i < TCP_CHACK_MAX + 15; i++) {
		if (i % 2)
			seg(&g, 777777, TCP_F_SYN, 65535, NULL, 0);
		else
			seg(&g, 1006 + 50, TCP_F_RST, 0, NULL, 0);
		pump(c, 1, 100);
	}
	CHECK_EQ(test_tx_n(c), TCP_CHACK_MAX);
	CHECK_EQ(acks_sent(c, 1006), TCP_CHACK_MAX);
	CHECK_EQ(c->tcp.st.chacks_limited, 15);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	/* the limit holds for its period, then answers come again */
	advance(c, TCP_CHACK_MS);
	test_tx_reset(c);
	seg(&g, 777777, TCP_F_SYN, 65535, NULL, 0);
	pump(c, 50, 1);
	CHECK_EQ(acks_sent(c, 1006), 1);
	seg(&g, 1006, TCP_F_RST, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, a);
}

/* A segment acknowledging data ferry never sent is answered with an ACK
 * and dropped, its payload too (RFC 9293 3.10.7.4, fifth step): ferry
 * only left the ACK out and wrote the payload to the host. */
TEST(tcp_ack_unsent_drops_segment)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40606 };
	uint8_t buf[8];
	uint32_t isn;
	int a;

	a = open_with_data(&g, 65535, &isn);
	CHECK(a >= 0);
	g.ack = isn + 1 + 5000;			/* nothing was sent */
	seg(&g, 1006, TCP_F_ACK | TCP_F_PSH, 65535, "XXXXX", 5);
	CHECK_EQ(c->stats.drops[DROP_TCP_ACK_UNSENT], 1);
	pump(c, 50, 1);
	CHECK_EQ(acks_sent(c, 1006), 1);
	g.ack = isn + 1;
	seg(&g, 1006, TCP_F_ACK | TCP_F_PSH, 65535, "world", 5);
	CHECK_EQ(host_read(a, buf, 5), 5);
	CHECK(!memcmp(buf, "world", 5));
	tconn_close(&g, a);
}

/* Before the guest's ACK of our SYN-ACK, an RST counts only at RCV.NXT
 * (the guest's ISN + 1, where a guest refusing our SYN-ACK puts it): no
 * window is open yet, and ferry took any RST there. A SYN again gets
 * the SYN-ACK again. */
TEST(tcp_rst_handshake_rcv_nxt_only)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40607 };
	struct pkt p;
	int a;

	a = guest_syn(&g, 1000, 65535, &p);
	CHECK(a >= 0);
	test_tx_reset(c);
	seg(&g, 1001 + 5, TCP_F_RST, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], 1);
	seg(&g, 1000, TCP_F_SYN, 65535, NULL, 0);
	pump(c, 50, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	seg(&g, 1001, TCP_F_RST, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, a);
}

/* A segment without the ACK bit is dropped (RFC 9293 3.10.7.4, fifth
 * step), its payload too. */
TEST(tcp_seg_without_ack_dropped)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40608 };
	uint8_t buf[8];
	int a;

	a = open_with_data(&g, 65535, NULL);
	CHECK(a >= 0);
	seg(&g, 1006, TCP_F_PSH, 65535, "XXXXX", 5);
	CHECK_EQ(c->stats.drops[DROP_TCP_STATE], 1);
	seg(&g, 1006, TCP_F_ACK | TCP_F_PSH, 65535, "world", 5);
	CHECK_EQ(host_read(a, buf, 5), 5);
	CHECK(!memcmp(buf, "world", 5));
	tconn_close(&g, a);
}

/* Text after the guest's FIN is ignored and acknowledged (RFC 9293
 * 3.10.7.4, seventh step: CLOSE-WAIT and later): the host sees the end
 * of the stream, nothing after it. */
TEST(tcp_seg_after_fin_ignored)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40609 };
	uint8_t buf[8];
	int a;

	a = open_with_data(&g, 65535, NULL);
	CHECK(a >= 0);
	seg(&g, 1006, TCP_F_ACK | TCP_F_FIN, 65535, NULL, 0);
	pump(c, 50, 1);
	test_tx_reset(c);
	seg(&g, 1007, TCP_F_ACK | TCP_F_PSH, 65535, "after", 5);
	pump(c, 50, 1);
	CHECK_EQ(acks_sent(c, 1007), 1);
	CHECK_EQ(recv(a, buf, sizeof(buf), MSG_DONTWAIT), 0);	/* EOF */
	tconn_close(&g, a);
}

/* A forwarded connection (-t): ferry's SYN to the guest takes an RST
 * only with an ACK of the SYN (SYN-SENT, RFC 9293 3.10.7.3; RFC 5961
 * section 3), and the guest's SYN-ACK sets SND.WL1/2, so that its first
 * ACK's window is taken (a guest ISN past 2^31, as above). */
TEST(tcp_fwd_syn_sent_rst_and_wl1)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40611 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	union eref ref = { .type = EREF_TCP_LISTEN, .aux = 40611 };
	static char big[20000];
	uint16_t lport;
	int cl, s;
	uint32_t isn;
	struct pkt p;

	g.ls = listener(false, &lport);
	CHECK(g.ls >= 0);
	CHECK(!fcntl(g.ls, F_SETFL, O_NONBLOCK));	/* accepts until EAGAIN */
	c->conf.mode = MODE_VM;		/* a loopback client is not spliced */
	c->link.up = true;
	cl = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(lport);
	CHECK(!connect(cl, (struct sockaddr *)&sa, sizeof(sa)));
	ref.idx = (uint32_t)g.ls;
	tcp_fwd_listen_handler(c, ref.u64, EPOLLIN);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_SYN);
	CHECK_EQ(p.tcp.dport, 40611);
	g.dport = p.tcp.sport;
	isn = p.tcp.seq;
	test_tx_reset(c);
	/* RSTs without the ACK of our SYN: ignored */
	seg(&g, 0x80000100, TCP_F_RST, 0, NULL, 0);
	g.ack = isn + 7;
	seg(&g, 0x80000100, TCP_F_RST | TCP_F_ACK, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_SEQ], 2);
	/* the SYN-ACK (window 1000, no scale), then an ACK of 3000 */
	g.ack = isn + 1;
	seg(&g, 0x80000100, TCP_F_SYN | TCP_F_ACK, 1000, NULL, 0);
	seg(&g, 0x80000101, TCP_F_ACK, 3000, NULL, 0);
	pump(c, 50, 1);
	test_tx_reset(c);
	CHECK_EQ(send(cl, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 6);
	pump(c, 50, 7);
	CHECK_EQ(data_end(c, isn + 1), 3000);
	/* an RST with the ACK, at RCV.NXT: the client is reset */
	seg(&g, 0x80000101, TCP_F_RST | TCP_F_ACK, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	s = poll(&(struct pollfd){ .fd = cl, .events = POLLIN }, 1, 2000);
	CHECK_EQ(s, 1);
	CHECK_EQ(recv(cl, big, sizeof(big), MSG_DONTWAIT), -1);
	CHECK_EQ(errno, ECONNRESET);
	tconn_close(&g, cl);
}
