/* test_tcp_sack.c - resends toward the guest with its SACK blocks
 * (tcp_sack.c): after a loss only the holes go out again, with the
 * kernel's peek offset or the scratch-buffer skip; malformed,
 * out-of-window and D-SACK blocks are ignored, a cumulative ACK prunes
 * the scoreboard, a timeout keeps it once, a hole the guest's later
 * blocks show lost is resent on its own during the recovery, one
 * duplicate ACK starts a recovery when its blocks show the hole at the
 * ACK lost, and after a timeout's resend a later rewind resends holes,
 * not the data sent since. */
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "unit.h"
#include "util.h"
#include "tcp_harness.h"

#define MSS	1460u

/* The six segments of 8000 bytes at MSS 1460: (offset, length). */
static const uint32_t all6[][2] = { { 0, MSS }, { MSS, MSS },
				    { 2 * MSS, MSS }, { 3 * MSS, MSS },
				    { 4 * MSS, MSS }, { 5 * MSS, 700 } };

static struct tcp_conn *sconn(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_TCP);

	return fl ? FLOW_PRIV(fl, struct tcp_conn) : NULL;
}

/* Stream content: byte i of the host's data. */
static uint8_t pat(uint32_t i)
{
	return (uint8_t)(i * 7 + (i >> 9));
}

/* sack_open() - a SACK connection whose host peer sent len bytes (the
 * pattern), all of it read by ferry toward the guest (a read of more
 * than TCP_PEEK_COPY_MAX first when peek_first: the next one, skipping
 * those bytes in flight, turns the kernel's peek offset on). Returns the accepted socket, *first the
 * sequence number of the first byte. */
static int sack_open(struct tguest *g, size_t len, bool peek_first,
		     uint32_t *first)
{
	static uint8_t buf[64 * 1024];
	size_t i, part = peek_first ? 3000 : 0;
	struct pkt p;
	int a;

	for (i = 0; i < len; i++)
		buf[i] = pat((uint32_t)i);
	a = tconn_open(g, true, NULL);
	if (a < 0)
		return -1;
	if (part) {
		send(a, buf, part, 0);
		pump(g->c, 2000, 1);
	}
	send(a, buf + part, len - part, 0);
	pump(g->c, 2000, (len + MSS - 1) / MSS);
	if (!seg_at(g->c, 0, &p))
		return -1;
	*first = p.tcp.seq;
	test_tx_reset(g->c);
	return a;
}

/* sack_opt() - a SACK option of n blocks in segment units from first
 * (each block's end capped at end), NOP-padded: its length. */
static size_t sack_opt(uint8_t *o, uint32_t first, const uint32_t (*b)[2],
		       unsigned int n, uint32_t end)
{
	unsigned int i;

	o[0] = 1;
	o[1] = 1;
	o[2] = 5;
	o[3] = (uint8_t)(2 + 8 * n);
	for (i = 0; i < n; i++) {
		wr32(o + 4 + 8 * i, first + MIN(b[i][0] * MSS, end));
		wr32(o + 8 + 8 * i, first + MIN(b[i][1] * MSS, end));
	}
	return 4 + 8 * n;
}

/* dupacks() - k duplicate ACKs of ack carrying option o (olen bytes). */
static void dupacks(struct tguest *g, uint32_t ack, const uint8_t *o,
		    size_t olen, int k)
{
	g->ack = ack;
	while (k--)
		guest_send(g, TCP_F_ACK, NULL, 0, o, olen);
}

/* sent_check() - the data frames since the last reset are exactly the
 * n (seq offset, length) pairs in want, their payload the stream's. */
static bool sent_check(struct ctx *c, uint32_t first,
		       const uint32_t (*want)[2], size_t n)
{
	size_t i, k = 0, j;
	struct pkt p;

	for (i = 0; i < test_tx_n(c); i++) {
		uint32_t off;

		if (!seg_at(c, i, &p) || !p.payload_len)
			continue;
		off = p.tcp.seq - first;
		if (k == n || off != want[k][0] ||
		    p.payload_len != want[k][1])
			return false;
		for (j = 0; j < p.payload_len; j++)
			if (p.payload[j] != pat(off + (uint32_t)j))
				return false;
		k++;
	}
	return k == n;
}

/* The first segment lost, the guest SACKs the rest: the fast
 * retransmit resends that segment only (before: all six). */
TEST(tcp_sack_one_hole_resent_only)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40201 };
	static const uint32_t blk[][2] = { { 1, 6 } };
	static const uint32_t want[][2] = { { 0, MSS } };
	uint32_t first = 0;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, 8000, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, blk, 1, 8000);
	dupacks(&g, first, o, olen, 3);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, want, 1));
	CHECK_EQ(c->tcp.st.sack_skipped, 8000 - MSS);
	/* the guest's ACK of everything: nothing more to send */
	test_tx_reset(c);
	g.ack = first + 8000;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	advance(c, TCP_RTO_MS * 2);
	CHECK(sent_check(c, first, want, 0));
	tconn_close(&g, a);
}

/* holes_case() - 28 segments, holes at 0, 5-6 and 20, three SACK blocks;
 * peek: with the kernel's peek offset on before the loss, else with
 * SO_PEEK_OFF unavailable (the scratch-buffer skip). Only the holes go
 * out, with the right bytes, then nothing beyond what was sent. */
static void holes_case(bool peek)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = (uint16_t)(40202 + peek) };
	static const uint32_t blk[][2] = { { 1, 5 }, { 7, 20 }, { 21, 28 } };
	static const uint32_t want[][2] = { { 0, MSS }, { 5 * MSS, MSS },
					    { 6 * MSS, MSS },
					    { 20 * MSS, MSS } };
	uint32_t first = 0, len = 40000;
	struct tcp_conn *conn;
	struct pkt p;
	uint8_t o[40];
	size_t olen;
	int a;

	if (!peek)
		c->tcp.peek_off = false;
	a = sack_open(&g, len, peek, &first);
	CHECK(a >= 0);
	CHECK((conn = sconn(c)) != NULL);
	CHECK(!!(conn->flags & TCP_C_PEEK_OFF) == peek);
	olen = sack_opt(o, first, blk, 3, len);
	dupacks(&g, first, o, olen, 3);
	CHECK(sent_check(c, first, want, 4));
	CHECK_EQ(c->tcp.st.sack_skips, 3);
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + len)));
	CHECK_EQ(conn->rewound, 0);
	/* new data continues from where the stream left off */
	test_tx_reset(c);
	CHECK_EQ(send(a, "new", 3, 0), 3);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, first + len);
	CHECK_EQ(p.payload_len, 3);
	CHECK(!memcmp(p.payload, "new", 3));
	tconn_close(&g, a);
}

TEST(tcp_sack_holes_with_peek_offset)
{
	holes_case(true);
}

TEST(tcp_sack_holes_with_scratch_skip)
{
	holes_case(false);
}

/* Blocks that are malformed (left >= right), beyond what was sent, at or
 * below the ACK (D-SACK), or in an option whose length is no whole
 * number of blocks are ignored: the resend is everything, as without
 * SACK. Overlapping blocks in one option merge. */
TEST(tcp_sack_bad_blocks_ignored)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40204 };
	static const uint32_t one[][2] = { { 0, MSS } };
	uint32_t first = 0;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, 8000, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 3, 2 }, { 2, 9 },
							 { 0, 2 } }, 3, 9000);
	dupacks(&g, first, o, olen, 3);
	CHECK_EQ(c->tcp.st.sack_ignored, 9);
	CHECK(sent_check(c, first, all6, 6));
	tconn_close(&g, a);

	c = tcp_test_ctx();
	g = (struct tguest){ .c = c, .sport = 40205 };
	a = sack_open(&g, 8000, false, &first);
	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 3 } }, 1, 8000);
	o[3] = 14;				/* not 2 + 8 n */
	memset(o + olen, 0, 4);
	dupacks(&g, first, o, olen + 4, 3);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);	/* still a duplicate ACK */
	CHECK(sent_check(c, first, all6, 6));
	tconn_close(&g, a);

	c = tcp_test_ctx();
	g = (struct tguest){ .c = c, .sport = 40206 };
	a = sack_open(&g, 8000, false, &first);
	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 3, 6 }, { 1, 4 } },
			2, 8000);
	dupacks(&g, first, o, olen, 3);
	CHECK_EQ(c->tcp.st.sack_ignored, 0);
	CHECK_EQ(sconn(c)->nsacked, 1);
	CHECK(sent_check(c, first, one, 1));
	tconn_close(&g, a);
}

/* A cumulative ACK that covers SACKed bytes prunes them, and the blocks
 * it carries below it are ignored: the resend after three duplicate
 * ACKs without SACK blocks is everything from that ACK. */
TEST(tcp_sack_blocks_covered_by_ack)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40207 };
	uint32_t first = 0;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, 8000, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 2, 3 } }, 1, 8000);
	dupacks(&g, first, o, olen, 2);
	CHECK_EQ(sconn(c)->nsacked, 1);
	dupacks(&g, first + 3 * MSS, o, olen, 1);	/* covers the block */
	CHECK_EQ(sconn(c)->nsacked, 0);
	CHECK_EQ(c->tcp.st.sack_ignored, 1);
	dupacks(&g, first + 3 * MSS, NULL, 0, 3);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, all6 + 3, 3));
	tconn_close(&g, a);
}

/* Two duplicate ACKs with a block, no fast retransmit: the first timeout
 * resends all but the SACKed range (a timeout presumes the bytes above
 * the highest range lost), the second in a row everything (the guest
 * may have reneged). */
TEST(tcp_sack_timeouts)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40208 };
	static const uint32_t rto1[][2] = { { 0, MSS }, { 3 * MSS, MSS },
					    { 4 * MSS, MSS },
					    { 5 * MSS, 700 } };
	uint32_t first = 0;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, 8000, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 3 } }, 1, 8000);
	dupacks(&g, first, o, olen, 2);
	CHECK_EQ(test_tx_n(c), 0);
	advance(c, TCP_RTO_MS + 1);
	CHECK_EQ(c->tcp.st.rewinds_rto, 1);
	CHECK(sent_check(c, first, rto1, 4));
	test_tx_reset(c);
	advance(c, 2 * TCP_RTO_MS + 1);
	CHECK_EQ(c->tcp.st.rewinds_rto, 2);
	CHECK(sent_check(c, first, all6, 6));
	tconn_close(&g, a);
}

/* During a fast recovery, the guest's later blocks show a second hole
 * (segment 10) with three segments SACKed above it: it is resent at
 * once, alone (before, duplicate ACKs were ignored until the ACK moved,
 * and the timer resent it); fewer segments above it wait (reordering). */
TEST(tcp_sack_later_hole_resent_in_recovery)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40209 };
	static const uint32_t hole0[][2] = { { 0, MSS } };
	static const uint32_t hole10[][2] = { { 10 * MSS, MSS } };
	uint32_t first = 0, len = 40000;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, len, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 5 } }, 1, len);
	dupacks(&g, first, o, olen, 3);
	CHECK(sent_check(c, first, hole0, 1));
	test_tx_reset(c);
	/* two segments above the new hole: not yet */
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 11, 13 },
							 { 1, 10 } }, 2, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(test_tx_n(c), 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 11, 14 },
							 { 1, 10 } }, 2, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(c->tcp.st.sack_rewinds, 1);
	CHECK(sent_check(c, first, hole10, 1));
	/* more blocks, nothing new lost: nothing resent */
	test_tx_reset(c);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 11, 20 },
							 { 1, 10 } }, 2, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(test_tx_n(c), 0);
	tconn_close(&g, a);
}

/* The host peer's data and FIN went out, the FIN riding on the last
 * frame; the guest lost the first two segments and SACKs up to segment
 * 20: the fast retransmit resends the hole, steps over everything above
 * (not reported lost) and ends with one FIN at its own sequence number.
 * tcp_read_batch() used to call tcp_sendable() twice (through MIN()):
 * the first call sent the FIN, the second found the socket drained
 * again and the read that followed sent a second FIN one past the
 * first, so seq_to_guest ran two past the data, the guest's ACK of the
 * FIN no longer counted as one, and the guest, closed by then, answered
 * ferry's late segments with RSTs ferry dropped as TCP_SEQ (the lossy
 * downloads, 1 in about 160). */
TEST(tcp_sack_resend_ends_with_one_fin)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40210 };
	static uint8_t buf[40000];
	static const uint32_t hole[][2] = { { 0, MSS }, { MSS, MSS } };
	uint32_t first = 0, len = sizeof(buf), i, fins = 0;
	struct tcp_conn *conn;
	struct pkt p;
	uint8_t o[40];
	size_t olen;
	int a;

	for (i = 0; i < len; i++)
		buf[i] = pat(i);
	a = tconn_open(&g, true, NULL);
	CHECK(a >= 0);
	CHECK_EQ(send(a, buf, len, 0), (ssize_t)len);
	CHECK_EQ(shutdown(a, SHUT_WR), 0);
	pump(c, 2000, (len + MSS - 1) / MSS);
	CHECK(seg_at(c, 0, &p));
	first = p.tcp.seq;
	CHECK((conn = sconn(c)) != NULL);
	CHECK(conn->flags & TCP_C_FIN_SENT);
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + len + 1)));
	test_tx_reset(c);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 2, 20 } }, 1, len);
	dupacks(&g, first, o, olen, 3);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, hole, 2));
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		if (!(p.tcp.flags & TCP_F_FIN))
			continue;
		CHECK_EQ(p.tcp.seq, first + len);
		fins++;
	}
	CHECK_EQ(fins, 1);
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + len + 1)));
	CHECK(seq_eq(tcp_snd_max(conn), seq_make(first + len + 1)));
	/* the guest's ACK of everything, the FIN too, then its own FIN:
	 * the connection is done */
	g.ack = first + len + 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK(conn->flags & TCP_C_FIN_ACKED);
	guest_send(&g, TCP_F_FIN | TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 500, 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, a);
}

/* A retransmission lost again: segments 0 and 5 lost, the fast
 * retransmit resends both; the guest gets 0 but not 5 again, and its
 * partial ACK (to 5) brings blocks that show segment 20 lost, which is
 * resent at once (tcp_sack_lost()). Three duplicate ACKs of 5 then
 * resend 5 (doc/tcp.md: a hole at the ACK is resent on three
 * duplicates). Before, the rewind to 20 set the duplicate count to 3
 * as a rewind to the ACK does, so those duplicates were ignored and
 * segment 5 waited for the 200 ms timer (the lossy download at MTU
 * 1500, about 1 run in 40 under load). */
TEST(tcp_sack_lost_again_at_ack_resent_on_dupacks)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40211 };
	static const uint32_t first_rxt[][2] = { { 0, MSS }, { 5 * MSS, MSS } };
	static const uint32_t seg20[][2] = { { 20 * MSS, MSS } };
	static const uint32_t seg5[][2] = { { 5 * MSS, MSS } };
	uint32_t first = 0, len = 40000;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, len, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 6, 20 }, { 1, 5 } },
			2, len);
	dupacks(&g, first, o, olen, 3);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, first_rxt, 2));
	test_tx_reset(c);
	/* the partial ACK: 20 is lost (seven segments SACKed above it) */
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 21, 28 },
							 { 6, 20 } }, 2, len);
	dupacks(&g, first + 5 * MSS, o, olen, 1);
	CHECK_EQ(c->tcp.st.sack_rewinds, 1);
	CHECK(sent_check(c, first, seg20, 1));
	test_tx_reset(c);
	dupacks(&g, first + 5 * MSS, o, olen, 2);
	CHECK_EQ(test_tx_n(c), 0);
	dupacks(&g, first + 5 * MSS, o, olen, 1);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 2);
	CHECK(sent_check(c, first, seg5, 1));
	/* once per ACK value: more duplicates resend nothing */
	test_tx_reset(c);
	dupacks(&g, first + 5 * MSS, o, olen, 3);
	CHECK_EQ(test_tx_n(c), 0);
	tconn_close(&g, a);
}

/* A partial ACK inside the span a full scoreboard forgot, after a
 * timeout: the segment at the ACK goes out at once. 43 segments; the
 * guest SACKs every odd one from 1 to 37 (19 ranges: the scoreboard
 * keeps 16, forgets 33-37 with the holes 34 and 36 between them), the
 * timer resends the other holes and steps over that span, then the
 * guest ACKs up to 34. Before, the resend position had passed 34 (the
 * step over the span moved it), so no rule resent 34 but three
 * duplicate ACKs, which a window-limited sender does not get (one new
 * segment, one duplicate): each such hole waited for the timer, a
 * crawl of 200 ms per segment, which a lost ACK then turned into two
 * timeouts in a row and a resend of everything (the MTU 1500 download:
 * 1 in 37 runs of a sweep failed on those resends). */
TEST(tcp_sack_partial_ack_in_forgotten_span_after_timeout)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40212 };
	static const uint32_t seg34[][2] = { { 34 * MSS, MSS } };
	uint32_t first = 0, len = 43 * MSS, blk[4][2];
	unsigned int i, k;
	struct tcp_conn *conn;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, len, false, &first);

	CHECK(a >= 0);
	CHECK((conn = sconn(c)) != NULL);
	/* odd segments 1..37, four blocks per duplicate ACK, in order */
	for (i = 1; i <= 37; i += 8) {
		for (k = 0; k < 4 && i + 2 * k <= 37; k++) {
			blk[k][0] = i + 2 * k;
			blk[k][1] = i + 2 * k + 1;
		}
		olen = sack_opt(o, first, (const uint32_t (*)[2])blk, k, len);
		dupacks(&g, first, o, olen, 1);
	}
	CHECK(conn->sack_trunc);
	CHECK_EQ(conn->nsacked, TCP_SACK_BLKS);
	advance(c, TCP_RTO_MS + 1);
	pump(c, 100, 64);		/* the resend's later rounds */
	CHECK_EQ(c->tcp.st.rewinds_rto, 1);
	test_tx_reset(c);
	/* the guest got the resent holes up to 32 and has 33: it ACKs 34 */
	g.ack = first + 34 * MSS;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK(sent_check(c, first, seg34, 1));
	tconn_close(&g, a);
}

/* One duplicate ACK starts the recovery when its blocks already show
 * the segment at the ACK lost: three segments SACKed above it (RFC 6675
 * section 5, IsLost(HighACK + 1)). A window-limited sender draws one
 * duplicate ACK per round, never three; before, the hole waited for the
 * 200 ms timer. Fewer segments above it wait for more duplicates (a
 * reordered segment); a duplicate with blocks counts whatever its
 * window (the guest's buffer autotuning). */
TEST(tcp_sack_one_dupack_starts_recovery)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40213 };
	static const uint32_t hole0[][2] = { { 0, MSS } };
	uint32_t first = 0, len = 40000;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, len, false, &first);

	CHECK(a >= 0);
	/* two segments above the hole: a reorder, perhaps */
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 3 } }, 1, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(test_tx_n(c), 0);
	/* a third, in a duplicate that also grows the window: lost */
	g.wnd = 60000;
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 4 } }, 1, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, hole0, 1));
	/* the recovery's later duplicates resend nothing */
	test_tx_reset(c);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 6 } }, 1, len);
	dupacks(&g, first, o, olen, 2);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	tconn_close(&g, a);
}

/* What does not start a recovery on one duplicate ACK: blocks at or
 * below the ACK (stale, or a D-SACK) are not taken, however long; a
 * window update without blocks is no duplicate. Three duplicates still
 * do, the scoreboard empty (everything from the ACK). */
TEST(tcp_sack_one_dupack_stale_blocks)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40214 };
	uint32_t first = 0;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, 8000, false, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 0, 4 } }, 1, 8000);
	dupacks(&g, first + 2 * MSS, o, olen, 1);	/* the ACK moves */
	test_tx_reset(c);
	dupacks(&g, first + 2 * MSS, o, olen, 1);
	CHECK_EQ(c->tcp.st.sack_ignored, 2);
	CHECK_EQ(sconn(c)->nsacked, 0);
	CHECK_EQ(test_tx_n(c), 0);
	g.wnd = 50000;
	dupacks(&g, first + 2 * MSS, NULL, 0, 1);	/* a window update */
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 0);
	dupacks(&g, first + 2 * MSS, o, olen, 2);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, all6 + 2, 4));
	tconn_close(&g, a);
}

/* A duplicate-ACK rewind inside a recovery the timer began resends the
 * holes, not what was sent after the timeout's resend: 20 segments, the
 * timer resends them all, 10 new ones follow; the guest's partial ACK
 * (to 5: the resent 5 was lost again) SACKs 6-24 and three duplicates
 * of it resend segment 5 alone. 25-29 went out just before and nothing
 * shows them lost (RFC 6675 section 5.1: after a timeout, the SACK
 * information decides what is sent; no new recovery until the ACK
 * passes the timeout's end). Before, that resend went on to snd_max
 * as the timeout's own does (25-29 again). */
TEST(tcp_sack_dupack_rewind_after_timeout_resends_holes)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40215 };
	static const uint32_t seg5[][2] = { { 5 * MSS, MSS } };
	static uint8_t more[10 * MSS];
	uint32_t first = 0, len = 20 * MSS, i;
	struct tcp_conn *conn;
	uint8_t o[40];
	size_t olen;
	int a = sack_open(&g, len, false, &first);

	CHECK(a >= 0);
	CHECK((conn = sconn(c)) != NULL);
	advance(c, TCP_RTO_MS + 1);
	pump(c, 100, 20);		/* the resend's later rounds */
	CHECK_EQ(c->tcp.st.rewinds_rto, 1);
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + len)));
	for (i = 0; i < sizeof(more); i++)
		more[i] = pat(len + i);
	test_tx_reset(c);
	CHECK_EQ(send(a, more, sizeof(more), 0), (ssize_t)sizeof(more));
	pump(c, 2000, 10);
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + 30 * MSS)));
	test_tx_reset(c);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 6, 25 } }, 1,
			30 * MSS);
	dupacks(&g, first + 5 * MSS, o, olen, 3);	/* the ACK, 2 dups */
	CHECK_EQ(test_tx_n(c), 0);
	dupacks(&g, first + 5 * MSS, o, olen, 1);	/* the third */
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, seg5, 1));
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + 30 * MSS)));
	CHECK_EQ(conn->rewound, 0);
	tconn_close(&g, a);
}

/* Early retransmit and the tail loss probe (tcp_out.c). */

/* small_open() - a SACK connection whose guest offers wnd bytes of
 * window (scale 7, in an ACK after the handshake), with an RTT of 1 ms
 * already measured (the probe's timeout is then TCP_PTO_MIN_MS, whatever
 * the handshake's sample), and len bytes (the pattern) from the host, of
 * which ferry sent the nseg segments the window holds. Returns the
 * accepted socket, *first the sequence number of the first byte. */
static int small_open(struct tguest *g, bool sack, size_t len, uint32_t wnd,
		      size_t nseg, uint32_t *first)
{
	static uint8_t buf[64 * 1024];
	struct pkt p;
	size_t i;
	int a;

	for (i = 0; i < len; i++)
		buf[i] = pat((uint32_t)i);
	a = tconn_open(g, sack, NULL);
	if (a < 0 || !sconn(g->c))
		return -1;
	sconn(g->c)->srtt_us = 1000;
	g->wnd = (uint16_t)(wnd >> 7);
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	send(a, buf, len, 0);
	pump(g->c, 2000, nseg);
	if (test_tx_n(g->c) != nseg || !seg_at(g->c, 0, &p))
		return -1;
	*first = p.tcp.seq;
	test_tx_reset(g->c);
	return a;
}

/* until_timer() - advance the injected clock to the connection's timer
 * (the probe's or the RTO's) and run it. */
static void until_timer(struct ctx *c)
{
	advance(c, (int)MAX(sconn(c)->timer_ms - tcp_now_ms(c), 0));
}

/* before_rto() - advance the injected clock to 1 ms before the RTO's
 * deadline (kept aside while a probe's timer is armed), running the
 * timers due until then. The deadline, not a fixed delay: the clock ran
 * on by the pump's real time after the send that armed it. */
static void before_rto(struct ctx *c)
{
	const struct tcp_conn *conn = sconn(c);
	int64_t rto = conn->tlp == TCP_TLP_ARMED ? conn->rto_ms
						  : conn->timer_ms;

	advance(c, rto ? (int)MAX(rto - tcp_now_ms(c) - 1, 0) : TCP_RTO_MS);
}

/* A flight of three segments, the first lost: the guest's two duplicate
 * ACKs SACK the other two (RFC 5827: fewer than four segments out, no
 * new data to send, ER_thresh = 2 SACKed), and the second resends the
 * first segment at once. Before, three duplicates never came and the
 * hole waited for the 200 ms timer. */
TEST(tcp_er_three_segments_first_lost)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40216 };
	static const uint32_t hole0[][2] = { { 0, MSS } };
	uint32_t first = 0, len = 3 * MSS;
	uint8_t o[40];
	size_t olen;
	int a = small_open(&g, true, len, 60000, 3, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 2 } }, 1, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(test_tx_n(c), 0);		/* one of two: wait */
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 3 } }, 1, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(c->tcp.st.early_rexmits, 1);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK_EQ(c->tcp.st.rewinds_rto, 0);
	CHECK(sent_check(c, first, hole0, 1));
	tconn_close(&g, a);
}

/* Early retransmit waits while new data can go out to draw more
 * duplicates (RFC 5827 3.2 (b)): three segments fill the guest's window
 * of 4352 bytes, 3648 more wait in the socket. A duplicate ACK that
 * SACKs the last two and opens the window lets the new data out instead;
 * the same duplicate with the window still full resends the hole. */
TEST(tcp_er_waits_while_new_data_can_go)
{
	static const uint32_t hole0[][2] = { { 0, MSS } };
	uint32_t first = 0, len = 8000, wnd = 34 << 7;
	int grow;

	for (grow = 0; grow < 2; grow++) {
		struct ctx *c = tcp_test_ctx();
		struct tguest g = { .c = c, .sport = (uint16_t)(40217 + grow) };
		uint8_t o[40];
		size_t olen, i;
		struct pkt p;
		int a = small_open(&g, true, len, wnd, 3, &first);

		CHECK(a >= 0);
		CHECK(seq_eq(sconn(c)->seq_to_guest, seq_make(first + wnd)));
		olen = sack_opt(o, first, (const uint32_t[][2]){ { 1, 3 } }, 1,
				wnd);
		if (grow)
			g.wnd = 100;	/* 12800 bytes */
		dupacks(&g, first, o, olen, 1);
		CHECK_EQ(c->tcp.st.early_rexmits, (grow ? 0u : 1u));
		if (!grow) {
			CHECK(sent_check(c, first, hole0, 1));
		} else {
			CHECK(test_tx_n(c) > 0);
			for (i = 0; i < test_tx_n(c); i++) {
				CHECK(seg_at(c, i, &p));
				CHECK(seq_ge(seq_make(p.tcp.seq),
					     seq_make(first + wnd)));
			}
		}
		tconn_close(&g, a);
	}
}

/* Without SACK a duplicate ACK cannot be told from the answer to a
 * duplicate segment: two duplicates of a three-segment flight resend
 * nothing, and nothing arms a tail loss probe. */
TEST(tcp_er_tlp_not_without_sack)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40219 };
	uint32_t first = 0, len = 3 * MSS;
	int a = small_open(&g, false, len, 60000, 3, &first);

	CHECK(a >= 0);
	CHECK_EQ(sconn(c)->tlp, TCP_TLP_NONE);
	dupacks(&g, first, NULL, 0, 2);
	CHECK_EQ(test_tx_n(c), 0);
	before_rto(c);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.st.early_rexmits + c->tcp.st.tlp_probes, 0);
	tconn_close(&g, a);
}

/* The whole flight of three lost, no ACK at all: at the probe's timeout
 * (TCP_PTO_MIN_MS after the send, 2 SRTT being less) ferry sends the
 * last segment again, once; the guest's SACK of it shows everything
 * below it lost (sent a PTO before: RFC 8985's inference), and the two
 * holes go out at once. Before, all waited for the 200 ms timer. */
TEST(tcp_tlp_flight_lost_probe_then_recovery)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40220 };
	static const uint32_t last[][2] = { { 2 * MSS, MSS } };
	static const uint32_t holes[][2] = { { 0, MSS }, { MSS, MSS } };
	uint32_t first = 0, len = 3 * MSS;
	struct tcp_conn *conn;
	uint8_t o[40];
	size_t olen;
	int a = small_open(&g, true, len, 60000, 3, &first);

	CHECK(a >= 0);
	conn = sconn(c);
	CHECK_EQ(conn->tlp, TCP_TLP_ARMED);
	CHECK(conn->timer_ms < conn->rto_ms);
	until_timer(c);
	CHECK_EQ(c->tcp.st.tlp_probes, 1);
	CHECK_EQ(c->tcp.st.rewinds_rto, 0);
	CHECK(sent_check(c, first, last, 1));
	CHECK_EQ(conn->tlp, TCP_TLP_SENT);
	CHECK(seq_eq(conn->seq_to_guest, seq_make(first + len)));
	/* one probe: the timer is the RTO's again, where it was */
	CHECK_EQ(conn->timer_ms, conn->rto_ms);
	test_tx_reset(c);
	before_rto(c);
	CHECK_EQ(test_tx_n(c), 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 2, 3 } }, 1, len);
	dupacks(&g, first, o, olen, 1);
	CHECK_EQ(c->tcp.st.tlp_rewinds, 1);
	CHECK(sent_check(c, first, holes, 2));
	tconn_close(&g, a);
}

/* The tail of a flight lost: the guest ACKs two of four segments (the
 * probe's timer starts again from that ACK, TCP_PTO_MIN_MS), the probe
 * resends the last one, the guest SACKs it, and the third goes out at
 * once (the probe's segment delivered; early retransmit would say the
 * same: two segments out, one SACKed). The ACK of everything ends it. */
TEST(tcp_tlp_tail_lost_probe_at_pto)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40221 };
	static const uint32_t last[][2] = { { 3 * MSS, MSS } };
	static const uint32_t third[][2] = { { 2 * MSS, MSS } };
	uint32_t first = 0, len = 4 * MSS;
	struct tcp_conn *conn;
	uint8_t o[40];
	size_t olen;
	int a = small_open(&g, true, len, 60000, 4, &first);

	CHECK(a >= 0);
	conn = sconn(c);
	g.ack = first + 2 * MSS;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(conn->tlp, TCP_TLP_ARMED);
	CHECK_EQ(conn->timer_ms, tcp_now_ms(c) + TCP_PTO_MIN_MS);
	until_timer(c);
	CHECK_EQ(c->tcp.st.tlp_probes, 1);
	CHECK(sent_check(c, first, last, 1));
	test_tx_reset(c);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 3, 4 } }, 1, len);
	dupacks(&g, first + 2 * MSS, o, olen, 1);
	CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
	CHECK(sent_check(c, first, third, 1));
	CHECK_EQ(c->tcp.st.rewinds_rto, 0);
	g.ack = first + len;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(conn->timer_ms, 0);
	CHECK_EQ(conn->tlp, TCP_TLP_NONE);
	tconn_close(&g, a);
}

/* Two of four segments lost, the other two SACKed: no early retransmit
 * (four out) and too few SACKed for a recovery; at the probe's timeout
 * the holes count as lost (sent a PTO before what the guest holds) and
 * both go out, nothing the guest SACKed. */
TEST(tcp_tlp_sacked_holes_resent_at_pto)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40222 };
	static const uint32_t holes[][2] = { { 0, MSS }, { MSS, MSS } };
	uint32_t first = 0, len = 4 * MSS;
	uint8_t o[40];
	size_t olen;
	int a = small_open(&g, true, len, 60000, 4, &first);

	CHECK(a >= 0);
	olen = sack_opt(o, first, (const uint32_t[][2]){ { 2, 4 } }, 1, len);
	dupacks(&g, first, o, olen, 2);
	CHECK_EQ(test_tx_n(c), 0);
	until_timer(c);
	CHECK_EQ(c->tcp.st.tlp_probes, 1);
	CHECK_EQ(c->tcp.st.tlp_rewinds, 1);
	CHECK_EQ(c->tcp.st.rewinds_rto, 0);
	CHECK(sent_check(c, first, holes, 2));
	tconn_close(&g, a);
}

/* No probe where RFC 8985 has none: one segment out (the guest may
 * delay its ACK: the timeout would pass the RTO), a zero window (the
 * persist timer's), a recovery running, nothing out. */
TEST(tcp_tlp_not_armed)
{
	uint32_t first = 0;
	int k;

	for (k = 0; k < 4; k++) {
		struct ctx *c = tcp_test_ctx();
		struct tguest g = { .c = c, .sport = (uint16_t)(40223 + k) };
		uint32_t len = k ? 5 * MSS : MSS;
		struct tcp_conn *conn;
		uint8_t o[40];
		size_t olen;
		int a = small_open(&g, true, len, 60000, k ? 5 : 1, &first);

		CHECK(a >= 0);
		conn = sconn(c);
		if (k == 1) {		/* zero window, data out */
			g.ack = first + MSS;
			g.wnd_raw = true;
			g.wnd = 0;
			guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
		} else if (k == 2) {	/* a fast recovery */
			olen = sack_opt(o, first,
					(const uint32_t[][2]){ { 1, 5 } }, 1,
					len);
			dupacks(&g, first, o, olen, 1);
			CHECK_EQ(c->tcp.st.rewinds_dupack, 1);
		} else if (k == 3) {	/* all acknowledged */
			g.ack = first + len;
			guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
			CHECK_EQ(conn->timer_ms, 0);
		}
		test_tx_reset(c);
		if (k != 2)
			CHECK_EQ(conn->tlp, TCP_TLP_NONE);
		before_rto(c);		/* a probe would be due long before */
		CHECK_EQ(c->tcp.st.tlp_probes, 0);
		CHECK_EQ(test_tx_n(c), 0);
		tconn_close(&g, a);
	}
}
