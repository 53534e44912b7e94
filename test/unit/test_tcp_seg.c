/* test_tcp_seg.c - a guest segment's arrival on a synchronized
 * connection, step by step as RFC 9293 3.10.7.4 has it: which window
 * ferry takes (SND.WL1/SND.WL2). Frames are built here and fed through tap_input(); the host
 * side is a real socket on the loopback (tcp_harness.c). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
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
	CHECK_EQ(data_sent(c), 2944);
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
	CHECK_EQ(data_sent(c), 2944);
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
	int a;

	a = open_with_data(&g, 46, NULL);	/* 5888 bytes */
	CHECK(a >= 0);
	seg(&g, 1006, TCP_F_ACK | TCP_F_PSH, 11, "world", 5);	/* 1408 */
	pump(c, 20, 100);
	test_tx_reset(c);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 1);
	pump(c, 50, 2);
	CHECK_EQ(data_sent(c), 1408);
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
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7 };
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40610 };
	int ls = listener(false, &g.dport), a;
	static char big[20000];
	struct pkt p;

	CHECK(ls >= 0);
	g.seq = 0x80000100;
	g.wnd = 1000;				/* the SYN's window */
	guest_send(&g, TCP_F_SYN, NULL, 0, opts, sizeof(opts));
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	g.ack = p.tcp.seq + 1;
	a = accept(ls, NULL, NULL);
	CHECK(a >= 0);
	seg(&g, 0x80000101, TCP_F_ACK, 46, NULL, 0);	/* 5888 */
	test_tx_reset(c);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 5);
	pump(c, 50, 6);
	CHECK_EQ(data_sent(c), 5888);
	close(a);
	close(ls);
	tcp_test_free(c);
}
