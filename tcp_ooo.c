/* tcp_ooo.c - out-of-order queue for guest -> host TCP data, and SACK.
 *
 * Theory of operation
 *
 * tcp_in.c writes the guest's in-order bytes to the host socket and
 * acknowledges only what the socket accepted. A segment that arrives
 * beyond a hole (the guest's earlier segment was lost or reordered) is
 * kept here instead of being dropped, so the guest only has to resend
 * the hole, and the ACKs ferry sends while the hole is open carry SACK
 * blocks (RFC 2018) saying exactly which bytes are already here.
 *
 * Memory is one pool, allocated at start-up (mmap, touched lazily) and
 * never grown: TCP_OOO_POOL_BLKS blocks of TCP_OOO_BLK bytes, shared by
 * at most TCP_OOO_SLOTS connections, each limited to TCP_OOO_CONN_BLKS
 * blocks (tcp_out.c never offers a connection a window larger than
 * TCP_OOO_CONN_BYTES, so a guest that stays inside its window never meets
 * that limit). When the pool, the slots or a limit run out, the new
 * segment is dropped whole (the caller counts the drop reason). Queued
 * bytes are never thrown away while their connection lives: they may
 * already have been reported in a SACK block, and although RFC 2018
 * section 8 lets a receiver renege, the sender then only finds out at
 * its retransmission timeout. The price is that a hostile guest can pin
 * memory until it fills its holes or the connection closes: one byte
 * beyond a hole on each of TCP_OOO_SLOTS connections takes every slot,
 * and four (TCP_OOO_POOL_BLKS / TCP_OOO_CONN_BLKS, rounded up) take
 * every block. Other connections then lose only the queue (their
 * segments beyond a hole are dropped and resent, as without SACK), never
 * correctness.
 *
 * Blocks are aligned to the guest's sequence space: byte s lives in the
 * block numbered s / TCP_OOO_BLK, at offset s % TCP_OOO_BLK. A slot's map
 * finds a block by its number modulo TCP_OOO_MAP, which is unambiguous
 * because a queue never spans more than TCP_OOO_REACH bytes beyond the
 * next expected byte, and wraps with the 32-bit sequence space (the
 * number of blocks in 2^32 is a multiple of TCP_OOO_MAP). Copying a
 * segment is one memcpy() per block touched; a retransmission that
 * overlaps queued bytes simply writes the same bytes at the same place.
 * Which bytes are valid is kept apart, as up to TCP_OOO_RANGES sorted,
 * disjoint, non-adjacent ranges, merged on every insertion. Invariant:
 * a block is allocated exactly when it overlaps a range (ranges only grow
 * or lose their front), so the blocks to free when the stream advances
 * are those before the first remaining range.
 *
 * When the hole fills, tcp_in.c asks for the run that continues its stream
 * (tcp_ooo_run(): iovecs straight into the blocks, physically adjacent
 * blocks joined) and writes it with the same sendmsg() as the batch's
 * in-order payload; tcp_ooo_advance() then frees what the socket took.
 * A FIN that came with a queued segment is remembered and reported when
 * the stream reaches it.
 *
 * SACK blocks: the block holding the most recently received segment
 * first, then the blocks of the segments received before it (newest
 * first), then any other queued range in sequence order, at most
 * TCP_OOO_SACK_MAX (4: ferry sends no timestamps). Ranges starting at or
 * below the ACK (in order but not yet accepted by the socket) are not
 * reported: those are ordinary unacknowledged data.
 */
#include <string.h>
#include <sys/mman.h>

#include "tcp_ooo.h"
#include "util.h"
#include "wire.h"

/* seccomp(all): munmap
 *   (pools given back) */

#define SACK_PAD	2	/* NOPs before the SACK option: its blocks
				 * stay 4-byte aligned */
#define BLK_MASK	(TCP_OOO_BLK - 1)
#define BNUM_MASK	((uint32_t)(0xffffffffu >> TCP_OOO_BLK_SHIFT))
#define RANGE_SZ	sizeof(struct tcp_ooo_range)

/* pool_hdr_size() - bytes before the block data (pool header and free
 * list links), rounded up to whole blocks. */
static size_t pool_hdr_size(uint32_t nblk)
{
	size_t h = sizeof(struct tcp_ooo_pool) + nblk * sizeof(uint16_t);

	return (h + TCP_OOO_BLK - 1) & ~(size_t)BLK_MASK;
}

struct tcp_ooo_pool *tcp_ooo_pool_new(uint32_t nblk)
{
	struct tcp_ooo_pool *p;

	nblk = MIN(nblk, TCP_OOO_POOL_BLKS);
	p = alloc_startup(pool_hdr_size(nblk) + (size_t)nblk * TCP_OOO_BLK);
	p->nblk = nblk;
	p->next = (uint16_t *)(p + 1);
	p->data = (uint8_t *)p + pool_hdr_size(nblk);
	return p;
}

void tcp_ooo_pool_free(struct tcp_ooo_pool *p)
{
	if (p)
		munmap(p, pool_hdr_size(p->nblk) + (size_t)p->nblk * TCP_OOO_BLK);
}

/* q_of() - the queue of conn, NULL when it has none. */
static struct tcp_ooo_q *q_of(const struct tcp_ooo_pool *p,
			      const struct tcp_conn *conn)
{
	return conn->ooo ? (struct tcp_ooo_q *)&p->q[conn->ooo - 1] : NULL;
}

/* bnum() - the number of the block holding sequence number s. */
static uint32_t bnum(seq_t s)
{
	return s.v >> TCP_OOO_BLK_SHIFT;
}

/* map_at() - the map entry of block number bn (index + 1, 0: none). */
static uint16_t *map_at(struct tcp_ooo_q *q, uint32_t bn)
{
	return &q->map[bn & (TCP_OOO_MAP - 1)];
}

/* blk_alloc() - a block index; the caller checked one is free. */
static uint16_t blk_alloc(struct tcp_ooo_pool *p)
{
	uint16_t i;

	if (p->free_head) {
		i = (uint16_t)(p->free_head - 1);
		p->free_head = p->next[i];
	} else {
		i = (uint16_t)p->hw++;
	}
	p->st.blks_used++;
	p->st.blks_peak = MAX(p->st.blks_peak, p->st.blks_used);
	return i;
}

/* blk_free() - give block i back to the pool's free list. */
static void blk_free(struct tcp_ooo_pool *p, uint16_t i)
{
	p->next[i] = p->free_head;
	p->free_head = (uint16_t)(i + 1);
	p->st.blks_used--;
}

/* blks_free_span() - free the blocks numbered [from, to) (modulo the
 * block-number space) that are allocated. */
static void blks_free_span(struct tcp_ooo_pool *p, struct tcp_ooo_q *q,
			   uint32_t from, uint32_t to)
{
	uint32_t b;

	for (b = from & BNUM_MASK; b != (to & BNUM_MASK);
	     b = (b + 1) & BNUM_MASK) {
		uint16_t *m = map_at(q, b);

		if (*m) {
			blk_free(p, (uint16_t)(*m - 1));
			*m = 0;
			q->nblks--;
		}
	}
}

/* q_release() - the slot is empty (no ranges, no blocks): give it back. */
static void q_release(struct tcp_ooo_q *q, struct tcp_conn *conn)
{
	q->used = false;
	q->fin = false;
	q->nranges = q->nrecent = 0;
	conn->ooo = 0;
}

/* q_acquire() - a free slot for conn, NULL when all are taken. */
static struct tcp_ooo_q *q_acquire(struct tcp_ooo_pool *p,
				   struct tcp_conn *conn)
{
	unsigned int i;

	for (i = 0; i < TCP_OOO_SLOTS; i++) {
		if (!p->q[i].used) {
			p->q[i].used = true;
			conn->ooo = (uint8_t)(i + 1);
			return &p->q[i];
		}
	}
	return NULL;
}

/* range_span() - ranges [*i, *j) touch or overlap [s, e): they merge
 * with it. */
static void range_span(const struct tcp_ooo_q *q, seq_t s, seq_t e,
		       unsigned int *i, unsigned int *j)
{
	*i = 0;
	while (*i < q->nranges && seq_lt(q->r[*i].end, s))
		(*i)++;
	*j = *i;
	while (*j < q->nranges && seq_le(q->r[*j].start, e))
		(*j)++;
}

/* range_add() - merge [s, e) into the ranges; the caller checked that a
 * new range fits. */
static void range_add(struct tcp_ooo_q *q, seq_t s, seq_t e)
{
	unsigned int i, j;

	range_span(q, s, e, &i, &j);
	if (i < j) {
		if (seq_lt(q->r[i].start, s))
			s = q->r[i].start;
		if (seq_gt(q->r[j - 1].end, e))
			e = q->r[j - 1].end;
		memmove(&q->r[i + 1], &q->r[j], (q->nranges - j) * RANGE_SZ);
		q->nranges = (uint8_t)(q->nranges - (j - i - 1));
	} else {
		memmove(&q->r[i + 1], &q->r[i], (q->nranges - i) * RANGE_SZ);
		q->nranges++;
	}
	q->r[i].start = s;
	q->r[i].end = e;
}

/* range_find() - index of the range holding s, -1 if none. */
static int range_find(const struct tcp_ooo_q *q, seq_t s)
{
	unsigned int i;

	for (i = 0; i < q->nranges; i++)
		if (seq_le(q->r[i].start, s) && seq_lt(s, q->r[i].end))
			return (int)i;
	return -1;
}

/* recent_push() - s starts the newest segment: first in SACK order. */
static void recent_push(struct tcp_ooo_q *q, seq_t s)
{
	int r = range_find(q, s);
	unsigned int i, n = 0;
	seq_t keep[TCP_OOO_SACK_MAX];

	keep[n++] = s;
	for (i = 0; i < q->nrecent && n < TCP_OOO_SACK_MAX; i++)
		if (range_find(q, q->recent[i]) != r)
			keep[n++] = q->recent[i];
	memcpy(q->recent, keep, n * sizeof(seq_t));
	q->nrecent = (uint8_t)n;
}

/* blks_needed() - blocks [seq, seq + len) needs that are not allocated. */
static uint32_t blks_needed(struct tcp_ooo_q *q, seq_t seq, size_t len)
{
	uint32_t b = bnum(seq), last = bnum(seq_add(seq, (uint32_t)len - 1));
	uint32_t need = 0;

	for (;; b = (b + 1) & BNUM_MASK) {
		need += !*map_at(q, b);
		if (b == last)
			return need;
	}
}

/* q_copy() - copy [seq, seq + len) into its blocks, allocating the
 * missing ones (the caller checked there are enough). */
static void q_copy(struct tcp_ooo_pool *p, struct tcp_ooo_q *q, seq_t seq,
		   const uint8_t *data, size_t len)
{
	size_t off = 0;

	while (off < len) {
		seq_t s = seq_add(seq, (uint32_t)off);
		size_t bo = s.v & BLK_MASK, n = MIN(TCP_OOO_BLK - bo, len - off);
		uint16_t *m = map_at(q, bnum(s));

		if (!*m) {
			*m = (uint16_t)(blk_alloc(p) + 1);
			q->nblks++;
		}
		memcpy(p->data + (size_t)(*m - 1) * TCP_OOO_BLK + bo,
		       data + off, n);
		off += n;
	}
}

enum drop_reason tcp_ooo_insert(struct tcp_ooo_pool *p, struct tcp_conn *conn,
				seq_t rcv_nxt, seq_t seq, const uint8_t *data,
				size_t len, bool fin)
{
	struct tcp_ooo_q *q;
	int32_t ahead = seq_diff(seq, rcv_nxt);
	unsigned int i, j;
	uint32_t need;

	if (!len || ahead <= 0)
		return DROP_TCP_SEQ;		/* not out of order */
	if ((uint64_t)ahead + len > TCP_OOO_REACH) {
		p->st.reach_drops++;
		return DROP_TCP_OOO_REACH;
	}
	if (!conn->ooo && !q_acquire(p, conn)) {
		p->st.full_drops++;
		return DROP_TCP_OOO_FULL;
	}
	q = q_of(p, conn);
	range_span(q, seq, seq_add(seq, (uint32_t)len), &i, &j);
	need = blks_needed(q, seq, len);
	if ((i == j && q->nranges == TCP_OOO_RANGES) ||
	    need > p->nblk - p->st.blks_used ||
	    q->nblks + need > TCP_OOO_CONN_BLKS) {
		p->st.full_drops++;
		if (!q->nranges)
			q_release(q, conn);
		return DROP_TCP_OOO_FULL;
	}
	q_copy(p, q, seq, data, len);
	range_add(q, seq, seq_add(seq, (uint32_t)len));
	recent_push(q, seq);
	if (fin) {
		q->fin = true;
		q->fin_seq = seq_add(seq, (uint32_t)len);
	}
	p->st.segs++;
	p->st.bytes += len;
	return DROP_NONE;
}

size_t tcp_ooo_run(const struct tcp_ooo_pool *p, const struct tcp_conn *conn,
		   seq_t from, struct iovec *iov, size_t max, size_t *bytes)
{
	struct tcp_ooo_q *q = q_of(p, conn);
	size_t n = 0, left;
	int r;

	*bytes = 0;
	if (!q || (r = range_find(q, from)) < 0)
		return 0;
	left = (uint32_t)seq_diff(q->r[r].end, from);
	if (q->fin && seq_ge(q->fin_seq, from) &&	/* nothing after FIN */
	    seq_lt(q->fin_seq, q->r[r].end))
		left = (uint32_t)seq_diff(q->fin_seq, from);
	while (left && n < max) {
		size_t bo = from.v & BLK_MASK, len = MIN(TCP_OOO_BLK - bo, left);
		uint8_t *b = p->data +
			     (size_t)(*map_at(q, bnum(from)) - 1) * TCP_OOO_BLK;

		if (n && (uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len ==
			 b + bo) {
			iov[n - 1].iov_len += len;
		} else {
			iov[n].iov_base = b + bo;
			iov[n++].iov_len = len;
		}
		*bytes += len;
		left -= len;
		from = seq_add(from, (uint32_t)len);
	}
	return n;
}

bool tcp_ooo_continues(const struct tcp_ooo_pool *p,
		       const struct tcp_conn *conn, seq_t from)
{
	const struct tcp_ooo_q *q = q_of(p, conn);

	return q && range_find(q, from) >= 0;
}

bool tcp_ooo_advance(struct tcp_ooo_pool *p, struct tcp_conn *conn,
		     seq_t rcv_nxt)
{
	struct tcp_ooo_q *q = q_of(p, conn);
	unsigned int k = 0, i, n = 0;
	uint32_t from, to;
	bool fin;

	if (!q)
		return false;
	if (!q->nranges || seq_le(rcv_nxt, q->r[0].start))
		return false;
	from = bnum(q->r[0].start);
	to = (bnum(seq_add(q->r[q->nranges - 1].end, (uint32_t)-1)) + 1);
	while (k < q->nranges && seq_le(q->r[k].end, rcv_nxt)) {
		p->st.delivered += (uint32_t)seq_diff(q->r[k].end,
						      q->r[k].start);
		k++;
	}
	memmove(&q->r[0], &q->r[k], (q->nranges - k) * RANGE_SZ);
	q->nranges = (uint8_t)(q->nranges - k);
	if (q->nranges && seq_lt(q->r[0].start, rcv_nxt)) {
		p->st.delivered += (uint32_t)seq_diff(rcv_nxt, q->r[0].start);
		q->r[0].start = rcv_nxt;
	}
	if (q->nranges)
		to = bnum(q->r[0].start);
	blks_free_span(p, q, from, to);
	for (i = 0; i < q->nrecent; i++)
		if (seq_ge(q->recent[i], rcv_nxt))
			q->recent[n++] = q->recent[i];
	q->nrecent = (uint8_t)n;
	fin = q->fin && seq_eq(q->fin_seq, rcv_nxt);
	if (!q->nranges)
		q_release(q, conn);
	return fin;
}

size_t tcp_ooo_sack(const struct tcp_ooo_pool *p,
		    const struct tcp_conn *conn, seq_t ack, uint8_t *o)
{
	const struct tcp_ooo_q *q = q_of(p, conn);
	uint8_t *sack = o + SACK_PAD, *blk;
	uint32_t done = 0;
	unsigned int i, nb = 0;

	_Static_assert(TCP_OOO_RANGES <= 32, "range bitmap");
	if (!q)
		return 0;
	for (i = 0; i < q->nranges; i++)	/* in order: not a SACK */
		if (seq_le(q->r[i].start, ack))
			done |= 1u << i;
	for (i = 0; i < q->nrecent + q->nranges && nb < TCP_OOO_SACK_MAX;
	     i++) {
		int r = i < q->nrecent ? range_find(q, q->recent[i])
				       : (int)(i - q->nrecent);

		if (r < 0 || (done & (1u << r)))
			continue;
		done |= 1u << r;
		blk = sack + TCPOPT_SACK_HLEN + nb * TCPOPT_SACK_BLK;
		wr32(blk, q->r[r].start.v);
		wr32(blk + TCPOPT_SACK_RIGHT, q->r[r].end.v);
		nb++;
	}
	if (!nb)
		return 0;
	memset(o, TCPOPT_NOP, SACK_PAD);
	sack[TCPOPT_OFF_KIND] = TCPOPT_SACK;
	sack[TCPOPT_OFF_LEN] = (uint8_t)(TCPOPT_SACK_HLEN +
					 nb * TCPOPT_SACK_BLK);
	return SACK_PAD + TCPOPT_SACK_HLEN + nb * TCPOPT_SACK_BLK;
}

void tcp_ooo_release(struct tcp_ooo_pool *p, struct tcp_conn *conn)
{
	struct tcp_ooo_q *q;

	if (!p || !(q = q_of(p, conn)))
		return;
	if (q->nranges)
		blks_free_span(p, q, bnum(q->r[0].start),
			       bnum(seq_add(q->r[q->nranges - 1].end,
					    (uint32_t)-1)) + 1);
	q->nranges = 0;
	q_release(q, conn);
}

size_t tcp_ooo_queued(const struct tcp_ooo_pool *p,
		      const struct tcp_conn *conn)
{
	const struct tcp_ooo_q *q = q_of(p, conn);
	size_t n = 0;
	unsigned int i;

	for (i = 0; q && i < q->nranges; i++)
		n += (uint32_t)seq_diff(q->r[i].end, q->r[i].start);
	return n;
}
