/* test_tcp_ooo.c - the out-of-order queue (tcp_ooo.c) on its own: holes
 * filled in every order, overlapping and duplicate segments, the pool
 * and range limits, the sequence wrap at 2^32, the exact SACK blocks,
 * and that releasing a queue frees everything. The path through tcp.c
 * (SYN options, duplicate ACKs, writes to the socket) is in test_tcp.c. */
#include <stdlib.h>
#include <string.h>

#include "tcp_ooo.h"
#include "unit.h"
#include "util.h"

#define TEST_BYTES	(1u << 20)

/* Stream content: byte at sequence s (relative to the stream's start). */
static uint8_t pat(uint32_t rel)
{
	return (uint8_t)(rel * 7 + (rel >> 8));
}

static uint8_t *stream(void)
{
	static uint8_t b[TEST_BYTES];
	static bool done;
	uint32_t i;

	for (i = 0; !done && i < TEST_BYTES; i++)
		b[i] = pat(i);
	done = true;
	return b;
}

/* ins() - queue [off, off + len) of the stream that starts at isn. */
static enum drop_reason ins(struct tcp_ooo_pool *p, struct tcp_conn *conn,
			    seq_t isn, seq_t rcv, uint32_t off, uint32_t len)
{
	return tcp_ooo_insert(p, conn, rcv, seq_add(isn, off), stream() + off,
			      len, false);
}

/* run_matches() - the queued run at rcv holds exactly want bytes of the
 * stream from rel on. */
static bool run_matches(struct tcp_ooo_pool *p, struct tcp_conn *conn,
			seq_t rcv, uint32_t rel, size_t want)
{
	struct iovec iov[64];
	size_t n = tcp_ooo_run(p, conn, rcv, iov, 64, &(size_t){ 0 }), i;
	size_t got = 0;

	for (i = 0; i < n; i++) {
		if (memcmp(iov[i].iov_base, stream() + rel + got,
			   iov[i].iov_len))
			return false;
		got += iov[i].iov_len;
	}
	return got == want;
}

/* fill_in_order() - segments of 1000 bytes after a 1000-byte hole, queued
 * in the order given, then the hole is "written": the run continues the
 * stream exactly and advancing frees every block. */
static bool fill_in_order(seq_t isn, const unsigned int *order, size_t n)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(64);
	struct tcp_conn conn = { 0 };
	seq_t rcv = isn;
	size_t i;
	bool ok = true;

	for (i = 0; i < n; i++)
		ok &= ins(p, &conn, isn, rcv, 1000 + order[i] * 1000, 1000) ==
		      DROP_NONE;
	ok &= tcp_ooo_queued(p, &conn) == n * 1000;
	ok &= !tcp_ooo_continues(p, &conn, rcv);
	ok &= p->q[conn.ooo - 1].nranges == 1;
	/* the hole [0, 1000) was written by tcp.c: the rest continues it */
	rcv = seq_add(isn, 1000);
	ok &= run_matches(p, &conn, rcv, 1000, n * 1000);
	tcp_ooo_advance(p, &conn, seq_add(rcv, (uint32_t)n * 1000));
	ok &= conn.ooo == 0 && p->st.blks_used == 0;
	tcp_ooo_pool_free(p);
	return ok;
}

TEST(tcp_ooo_holes_filled_in_any_order)
{
	static const unsigned int fwd[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const unsigned int rev[] = { 7, 6, 5, 4, 3, 2, 1, 0 };
	static const unsigned int mix[] = { 3, 0, 7, 5, 1, 6, 2, 4 };
	static const unsigned int odd[] = { 1, 3, 5, 7, 0, 2, 4, 6 };

	CHECK(fill_in_order(seq_make(5000), fwd, 8));
	CHECK(fill_in_order(seq_make(5000), rev, 8));
	CHECK(fill_in_order(seq_make(4095), mix, 8));	/* block edges */
	CHECK(fill_in_order(seq_make(0xffffe000u), odd, 8));	/* wraps */
	CHECK(fill_in_order(seq_make(0xfffffc18u), mix, 8));
}

TEST(tcp_ooo_overlap_and_duplicates)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(64);
	struct tcp_conn conn = { 0 };
	seq_t isn = seq_make(100000), rcv = isn;
	struct tcp_ooo_q *q;

	CHECK_EQ(ins(p, &conn, isn, rcv, 3000, 1000), DROP_NONE);
	CHECK_EQ(ins(p, &conn, isn, rcv, 3000, 1000), DROP_NONE); /* dup */
	CHECK_EQ(ins(p, &conn, isn, rcv, 3500, 1000), DROP_NONE); /* tail */
	CHECK_EQ(ins(p, &conn, isn, rcv, 2500, 700), DROP_NONE);  /* head */
	CHECK_EQ(ins(p, &conn, isn, rcv, 8000, 500), DROP_NONE);
	CHECK_EQ(ins(p, &conn, isn, rcv, 7000, 100), DROP_NONE);
	q = &p->q[conn.ooo - 1];
	CHECK_EQ(q->nranges, 3);
	CHECK_EQ(q->r[0].start.v, isn.v + 2500);
	CHECK_EQ(q->r[0].end.v, isn.v + 4500);
	CHECK_EQ(tcp_ooo_queued(p, &conn), 2000 + 100 + 500);
	/* one segment covering two ranges and the gap between them */
	CHECK_EQ(ins(p, &conn, isn, rcv, 6900, 1700), DROP_NONE);
	CHECK_EQ(q->nranges, 2);
	CHECK_EQ(q->r[1].start.v, isn.v + 6900);
	CHECK_EQ(q->r[1].end.v, isn.v + 8600);
	/* adjacent ranges merge: [4500, 6900) joins both */
	CHECK_EQ(ins(p, &conn, isn, rcv, 4500, 2400), DROP_NONE);
	CHECK_EQ(q->nranges, 1);
	/* the stream was written up to 3000 (a partial overlap): the run
	 * goes on from there */
	rcv = seq_add(isn, 3000);
	CHECK(run_matches(p, &conn, rcv, 3000, 5600));
	CHECK(!tcp_ooo_advance(p, &conn, rcv));
	CHECK_EQ(tcp_ooo_queued(p, &conn), 5600);
	CHECK(run_matches(p, &conn, rcv, 3000, 5600));
	/* a short write of 10 bytes, then the rest */
	tcp_ooo_advance(p, &conn, seq_add(rcv, 10));
	CHECK(tcp_ooo_continues(p, &conn, seq_add(rcv, 10)));
	tcp_ooo_advance(p, &conn, seq_add(isn, 8600));
	CHECK_EQ(conn.ooo, 0);
	CHECK_EQ(p->st.blks_used, 0);
	CHECK_EQ(p->st.delivered, 6100);	/* from 2500 on */
	tcp_ooo_pool_free(p);
}

TEST(tcp_ooo_pool_exhaustion_drops)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(4);
	struct tcp_conn a = { 0 }, b = { 0 };
	seq_t isn = seq_make(0), rcv = isn;

	/* 4 blocks of 4096: [4096, 12288) takes two, [16384, 20000) one */
	CHECK_EQ(ins(p, &a, isn, rcv, 4096, 8192), DROP_NONE);
	CHECK_EQ(ins(p, &b, isn, rcv, 16384, 3000), DROP_NONE);
	CHECK_EQ(p->st.blks_used, 3);
	/* needs two more blocks: dropped whole, nothing half-queued */
	CHECK_EQ(ins(p, &a, isn, rcv, 20480, 5000), DROP_TCP_OOO_FULL);
	CHECK_EQ(p->st.blks_used, 3);
	CHECK_EQ(tcp_ooo_queued(p, &a), 8192);
	/* bytes in an allocated block still fit */
	CHECK_EQ(ins(p, &b, isn, rcv, 19000, 1480), DROP_NONE);
	CHECK_EQ(ins(p, &a, isn, rcv, 24576, 10), DROP_NONE);
	CHECK_EQ(ins(p, &b, isn, rcv, 28672, 10), DROP_TCP_OOO_FULL);
	CHECK_EQ(p->st.full_drops, 2);
	/* beyond the reach of the map */
	CHECK_EQ(ins(p, &a, isn, rcv, 0, 10), DROP_TCP_SEQ);
	CHECK_EQ(tcp_ooo_insert(p, &a, rcv, seq_add(rcv, TCP_OOO_REACH - 9),
				stream(), 10, false), DROP_TCP_OOO_REACH);
	/* closing frees: the pool is whole again */
	tcp_ooo_release(p, &a);
	CHECK_EQ(a.ooo, 0);
	CHECK_EQ(p->st.blks_used, 1);
	CHECK_EQ(ins(p, &b, isn, rcv, 28672, 10), DROP_NONE);
	tcp_ooo_release(p, &b);
	CHECK_EQ(p->st.blks_used, 0);
	CHECK(!p->q[0].used && !p->q[1].used);
	tcp_ooo_pool_free(p);
}

TEST(tcp_ooo_range_and_slot_limits)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(TCP_OOO_POOL_BLKS);
	static struct tcp_conn conns[TCP_OOO_SLOTS + 1];
	seq_t rcv = seq_make(1);
	unsigned int i;

	for (i = 0; i < TCP_OOO_RANGES; i++)
		CHECK_EQ(ins(p, &conns[0], seq_make(0), rcv, 100 + i * 20, 10),
			 DROP_NONE);
	/* one more disjoint range is too many; joining one is fine */
	CHECK_EQ(ins(p, &conns[0], seq_make(0), rcv, 5000, 10),
		 DROP_TCP_OOO_FULL);
	CHECK_EQ(ins(p, &conns[0], seq_make(0), rcv, 110, 10), DROP_NONE);
	CHECK_EQ(p->q[conns[0].ooo - 1].nranges, TCP_OOO_RANGES - 1);
	for (i = 1; i < TCP_OOO_SLOTS; i++)
		CHECK_EQ(ins(p, &conns[i], seq_make(0), rcv, 100, 10),
			 DROP_NONE);
	CHECK_EQ(ins(p, &conns[i], seq_make(0), rcv, 100, 10),
		 DROP_TCP_OOO_FULL);
	CHECK_EQ(conns[i].ooo, 0);
	tcp_ooo_release(p, &conns[3]);
	CHECK_EQ(ins(p, &conns[i], seq_make(0), rcv, 100, 10), DROP_NONE);
	for (i = 0; i <= TCP_OOO_SLOTS; i++)
		tcp_ooo_release(p, &conns[i]);
	CHECK_EQ(p->st.blks_used, 0);
	tcp_ooo_pool_free(p);
}

/* sack_blocks() - the SACK option for ack as (start, end) pairs relative
 * to isn; returns the block count, -1 if the option is malformed. */
static int sack_blocks(struct tcp_ooo_pool *p, struct tcp_conn *conn,
		       seq_t isn, seq_t ack, uint32_t *b)
{
	uint8_t o[40];
	size_t n = tcp_ooo_sack(p, conn, ack, o), i;

	if (!n)
		return 0;
	if (n > 36 || o[0] != 1 || o[1] != 1 || o[2] != 5 || o[3] != n - 2 ||
	    (n - 4) % 8)
		return -1;
	for (i = 0; i < (n - 4) / 4; i++)
		b[i] = rd32(o + 4 + i * 4) - isn.v;
	return (int)((n - 4) / 8);
}

TEST(tcp_ooo_sack_blocks_exact)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(64);
	struct tcp_conn conn = { 0 };
	seq_t isn = seq_make(0xfffff000u), rcv = isn;	/* wraps at 4096 */
	uint32_t b[8];

	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 0);
	CHECK_EQ(ins(p, &conn, isn, rcv, 2000, 1000), DROP_NONE);
	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 1);
	CHECK(b[0] == 2000 && b[1] == 3000);
	CHECK_EQ(ins(p, &conn, isn, rcv, 5000, 1000), DROP_NONE);
	CHECK_EQ(ins(p, &conn, isn, rcv, 8000, 1000), DROP_NONE);
	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 3);
	/* newest first (RFC 2018 section 4) */
	CHECK(b[0] == 8000 && b[1] == 9000 && b[2] == 5000 && b[3] == 6000 &&
	      b[4] == 2000 && b[5] == 3000);
	/* a segment extending the oldest range makes it the first block */
	CHECK_EQ(ins(p, &conn, isn, rcv, 3000, 500), DROP_NONE);
	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 3);
	CHECK(b[0] == 2000 && b[1] == 3500 && b[2] == 8000 && b[3] == 9000 &&
	      b[4] == 5000 && b[5] == 6000);
	/* five ranges: four blocks, the one never reported recently last
	 * in sequence order */
	CHECK_EQ(ins(p, &conn, isn, rcv, 11000, 100), DROP_NONE);
	CHECK_EQ(ins(p, &conn, isn, rcv, 13000, 100), DROP_NONE);
	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 4);
	CHECK(b[0] == 13000 && b[2] == 11000 && b[4] == 2000 && b[6] == 8000);
	/* merging two ranges: one block covers both */
	CHECK_EQ(ins(p, &conn, isn, rcv, 6000, 2000), DROP_NONE);
	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 4);
	CHECK(b[0] == 5000 && b[1] == 9000 && b[2] == 13000 &&
	      b[4] == 11000 && b[6] == 2000 && b[7] == 3500);
	/* the hole before 2000 filled and written up to 3000: the range
	 * from 3000 is in order (not reported), the others stay */
	tcp_ooo_advance(p, &conn, seq_add(isn, 3000));
	CHECK_EQ(sack_blocks(p, &conn, isn, seq_add(isn, 3000), b), 3);
	CHECK(b[0] == 5000 && b[2] == 13000 && b[4] == 11000);
	tcp_ooo_release(p, &conn);
	CHECK_EQ(sack_blocks(p, &conn, isn, rcv, b), 0);
	tcp_ooo_pool_free(p);
}

TEST(tcp_ooo_fin_reported_when_reached)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(8);
	struct tcp_conn conn = { 0 };
	seq_t isn = seq_make(77), rcv = isn;
	struct iovec iov[4];
	size_t bytes;

	CHECK_EQ(tcp_ooo_insert(p, &conn, rcv, seq_add(isn, 500),
				stream() + 500, 300, true), DROP_NONE);
	/* bytes past the FIN are never part of the run */
	CHECK_EQ(ins(p, &conn, isn, rcv, 700, 400), DROP_NONE);
	CHECK(!tcp_ooo_advance(p, &conn, seq_add(isn, 100)));
	CHECK_EQ(tcp_ooo_run(p, &conn, seq_add(isn, 500), iov, 4, &bytes), 1);
	CHECK_EQ(bytes, 300);
	CHECK(!tcp_ooo_advance(p, &conn, seq_add(isn, 700)));
	CHECK(tcp_ooo_advance(p, &conn, seq_add(isn, 800)));
	tcp_ooo_release(p, &conn);
	CHECK_EQ(p->st.blks_used, 0);
	tcp_ooo_pool_free(p);
}

/* The in-order bytes end exactly at a queued FIN with bytes queued
 * beyond it (a guest that sent data after its FIN): the run there is
 * empty, the stream ends at the FIN. Before, the run went on past it
 * (the check took only a FIN after from): ferry wrote and acknowledged
 * the bytes after the guest's FIN (fuzz_tcp, corpus/tcp/crash-data-
 * after-fin). */
TEST(tcp_ooo_run_at_fin_is_empty)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(8);
	struct tcp_conn conn = { 0 };
	seq_t isn = seq_make(0xfffffff0u), rcv = isn;
	struct iovec iov[4];
	size_t bytes = 1;

	CHECK_EQ(tcp_ooo_insert(p, &conn, rcv, seq_add(isn, 500),
				stream() + 500, 300, true), DROP_NONE);
	CHECK_EQ(ins(p, &conn, isn, rcv, 600, 900), DROP_NONE);
	CHECK_EQ(tcp_ooo_run(p, &conn, seq_add(isn, 800), iov, 4, &bytes), 0);
	CHECK_EQ(bytes, 0);
	CHECK(tcp_ooo_advance(p, &conn, seq_add(isn, 800)));
	tcp_ooo_release(p, &conn);
	CHECK_EQ(p->st.blks_used, 0);
	tcp_ooo_pool_free(p);
}

/* model_sack_ok() - every SACK block is a whole queued range beyond ack
 * (maximal: the bytes around it are not queued), no block twice. */
static bool model_sack_ok(struct tcp_ooo_pool *p, struct tcp_conn *conn,
			  seq_t isn, uint32_t ack, const uint8_t *have)
{
	uint32_t b[8];
	int n = sack_blocks(p, conn, isn, seq_add(isn, ack), b), i, j;
	uint32_t k;

	if (n < 0)
		return false;
	for (i = 0; i < n; i++) {
		if (b[2 * i] <= ack || b[2 * i + 1] <= b[2 * i] ||
		    b[2 * i + 1] > TEST_BYTES)
			return false;
		for (k = b[2 * i]; k < b[2 * i + 1]; k++)
			if (!have[k])
				return false;
		if (have[b[2 * i] - 1] ||
		    (b[2 * i + 1] < TEST_BYTES && have[b[2 * i + 1]]))
			return false;
		for (j = 0; j < i; j++)
			if (b[2 * j] == b[2 * i])
				return false;
	}
	return true;
}

/* A random walk against a byte map: random segments (overlapping,
 * duplicate, beyond the end of earlier ones) and random partial writes
 * of the in-order run, with a pool small enough to run out. After every
 * step the queue holds exactly the bytes the model says, the run carries
 * the stream's content, and the SACK blocks are sound. */
TEST(tcp_ooo_random_against_model)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(8);
	static uint8_t have[TEST_BYTES];
	struct tcp_conn conn = { 0 };
	seq_t isn = seq_make(0xfffe0000u);
	uint64_t rnd = 0x9e3779b97f4a7c15ull;
	uint32_t rcv = 0, step, k, queued;

	memset(have, 0, sizeof(have));
	for (step = 0; step < 20000 && rcv < TEST_BYTES - 4000; step++) {
		uint32_t off, len;

		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		/* on a 100-byte grid: segments often abut exactly */
		off = (rcv + 100 + (uint32_t)(rnd >> 33) % 40000) / 100 * 100;
		len = 100 * (1 + (uint32_t)(rnd >> 20) % 30);
		if (off + len > TEST_BYTES)
			continue;
		if ((rnd >> 60) < 12) {
			if (ins(p, &conn, isn, seq_add(isn, rcv), off, len) ==
			    DROP_NONE)
				memset(have + off, 1, len);
		} else {
			/* tcp.c wrote some bytes at rcv (the hole), then
			 * part of the run that continues them */
			struct iovec iov[64];
			size_t bytes, n, w;

			len = 1 + len % 2000;
			memset(have + rcv, 1, len);
			n = tcp_ooo_run(p, &conn, seq_add(isn, rcv + len), iov,
					64, &bytes);
			for (k = 0, w = 0; k < n; w += iov[k++].iov_len)
				CHECK(!memcmp(iov[k].iov_base,
					      stream() + rcv + len + w,
					      iov[k].iov_len));
			CHECK_EQ(w, bytes);
			for (k = rcv + len; k < TEST_BYTES && have[k]; k++)
				;
			CHECK_EQ(bytes, k - rcv - len);
			rcv += len + (uint32_t)(bytes * ((rnd >> 8) % 4) / 3);
			tcp_ooo_advance(p, &conn, seq_add(isn, rcv));
		}
		for (k = rcv, queued = 0; k < MIN(rcv + 45000, TEST_BYTES); k++)
			queued += have[k];
		CHECK_EQ(tcp_ooo_queued(p, &conn), queued);
		CHECK(model_sack_ok(p, &conn, isn, rcv, have));
	}
	CHECK(step > 1000 && rcv > 100000);
	CHECK(p->st.full_drops > 0);	/* the small pool ran out */
	tcp_ooo_release(p, &conn);
	CHECK_EQ(p->st.blks_used, 0);
	tcp_ooo_pool_free(p);
}

/* fill_conn() - a hostile guest's contiguous 60000-byte segments beyond a
 * one-byte hole at rcv, until the queue refuses one: returns the bytes
 * queued. */
static size_t fill_conn(struct tcp_ooo_pool *p, struct tcp_conn *conn,
			seq_t rcv)
{
	static const uint8_t junk[60000];
	uint32_t off = 1;

	while (tcp_ooo_insert(p, conn, rcv, seq_add(rcv, off), junk,
			      sizeof(junk), false) == DROP_NONE)
		off += sizeof(junk);
	return off - 1;
}

/* A hostile guest (review): holes it never fills, across the sequence
 * wrap, pin at most its per-connection limit each; the fifth connection
 * finds the pool empty and gets no slot; a FIN with bytes queued beyond
 * it ends the run there; closing gives every block and slot back. */
TEST(tcp_ooo_hostile_guest_bounded)
{
	struct tcp_ooo_pool *p = tcp_ooo_pool_new(TCP_OOO_POOL_BLKS);
	static struct tcp_conn conns[5];
	seq_t rcv = seq_make(0xfff00000u);	/* wraps 1 MiB on */
	struct iovec iov[4];
	size_t bytes, q, total = 0;
	unsigned int i;

	for (i = 0; i < 5; i++) {
		q = fill_conn(p, &conns[i], rcv);
		CHECK(q <= TCP_OOO_CONN_BLKS * TCP_OOO_BLK);
		CHECK_EQ(tcp_ooo_queued(p, &conns[i]), q);
		if (i < 3)	/* a window's worth fits */
			CHECK(q >= TCP_OOO_CONN_BYTES);
		total += q;
	}
	CHECK(p->st.blks_used <= TCP_OOO_POOL_BLKS);
	CHECK(p->nblk - p->st.blks_used < 15);	/* 60000 bytes need 15 */
	CHECK_EQ(conns[4].ooo, 0);		/* nothing queued: no slot */
	CHECK_EQ(total, tcp_ooo_queued(p, &conns[0]) * 3 +
			tcp_ooo_queued(p, &conns[3]));
	for (i = 0; i < 5; i++)
		tcp_ooo_release(p, &conns[i]);
	CHECK_EQ(p->st.blks_used, 0);
	for (i = 0; i < TCP_OOO_SLOTS; i++)
		CHECK(!p->q[i].used);

	/* FIN at 20, then bytes beyond it: the stream ends at the FIN */
	CHECK_EQ(tcp_ooo_insert(p, &conns[0], rcv, seq_add(rcv, 10),
				stream(), 10, true), DROP_NONE);
	CHECK_EQ(tcp_ooo_insert(p, &conns[0], rcv, seq_add(rcv, 20),
				stream(), 10, false), DROP_NONE);
	CHECK_EQ(tcp_ooo_run(p, &conns[0], seq_add(rcv, 10), iov, 4, &bytes),
		 1);
	CHECK_EQ(bytes, 10);
	CHECK(tcp_ooo_advance(p, &conns[0], seq_add(rcv, 20)));
	tcp_ooo_release(p, &conns[0]);
	CHECK_EQ(p->st.blks_used, 0);
	tcp_ooo_pool_free(p);
}
