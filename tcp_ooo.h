/* tcp_ooo.h - the out-of-order queue for guest -> host TCP data and the
 * SACK blocks that describe it (see tcp_ooo.c for the theory of
 * operation). */
#ifndef FERRY_TCP_OOO_H
#define FERRY_TCP_OOO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "drop.h"
#include "tcp_conn.h"

#define TCP_OOO_BLK		4096u	/* bytes per block, seq-aligned */
#define TCP_OOO_BLK_SHIFT	12
#define TCP_OOO_MAP		4096u	/* blocks one queue may span: 16 MiB */
#define TCP_OOO_POOL_BLKS	8192u	/* global limit: 32 MiB */
#define TCP_OOO_CONN_BYTES	(8u << 20)	/* per connection; window cap */
#define TCP_OOO_CONN_BLKS	(TCP_OOO_CONN_BYTES / TCP_OOO_BLK + 64)
#define TCP_OOO_SLOTS		64u	/* connections with a queue at once */
#define TCP_OOO_RANGES		32u	/* disjoint byte ranges per queue */
#define TCP_OOO_SACK_MAX	4u	/* blocks per ACK (no timestamps) */
/* Farthest byte a segment may reach beyond the next expected one. */
#define TCP_OOO_REACH		((TCP_OOO_MAP - 1) * TCP_OOO_BLK)

_Static_assert(TCP_OOO_BLK == 1u << TCP_OOO_BLK_SHIFT, "block shift");
_Static_assert(((1ull << 32) >> TCP_OOO_BLK_SHIFT) % TCP_OOO_MAP == 0,
	       "map ring wraps with the sequence space");
_Static_assert(TCP_OOO_POOL_BLKS < UINT16_MAX, "block index fits");
_Static_assert(TCP_OOO_SLOTS < UINT8_MAX, "slot index fits tcp_conn.ooo");
_Static_assert(TCP_OOO_CONN_BYTES + 2 * TCP_OOO_BLK <= TCP_OOO_REACH,
	       "a full window fits the map");

/* A range of queued bytes [start, end) of the guest's sequence space. */
struct tcp_ooo_range {
	seq_t start, end;
};

/* One connection's queue (a slot of the pool). */
struct tcp_ooo_q {
	bool used;
	bool fin;			/* a FIN follows byte fin_seq - 1 */
	uint8_t nranges, nrecent;
	uint16_t nblks;
	seq_t fin_seq;
	struct tcp_ooo_range r[TCP_OOO_RANGES];	/* sorted, disjoint,
						 * never adjacent */
	seq_t recent[TCP_OOO_SACK_MAX];	/* starts of the latest segments,
					 * newest first (SACK order) */
	uint16_t map[TCP_OOO_MAP];	/* block number % MAP -> index + 1 */
};

struct tcp_ooo_stats {
	uint64_t segs;			/* segments queued */
	uint64_t bytes;			/* bytes queued (new ones) */
	uint64_t delivered;		/* queued bytes the stream passed */
	uint64_t full_drops;		/* pool, slot or range limit */
	uint64_t reach_drops;		/* beyond TCP_OOO_REACH */
	uint64_t sack_sent;		/* ACKs carrying SACK blocks */
	uint32_t blks_used, blks_peak;
};

struct tcp_ooo_pool {
	uint32_t nblk;			/* blocks in the pool */
	uint32_t hw;			/* blocks ever handed out */
	uint16_t free_head;		/* freed blocks, index + 1, 0: none */
	struct tcp_ooo_stats st;
	struct tcp_ooo_q q[TCP_OOO_SLOTS];
	uint16_t *next;			/* free list links */
	uint8_t *data;			/* nblk * TCP_OOO_BLK bytes */
};

/* tcp_ooo_pool_new() - a pool of nblk blocks (at most
 * TCP_OOO_POOL_BLKS), allocated at start-up; pages are touched lazily. */
struct tcp_ooo_pool *tcp_ooo_pool_new(uint32_t nblk);
/* tcp_ooo_pool_free() - unmap a pool (tests). */
void tcp_ooo_pool_free(struct tcp_ooo_pool *p);

/* tcp_ooo_insert() - queue a copy of [seq, seq + len) (len > 0), which
 * lies beyond rcv_nxt, the next byte the guest stream expects; fin: the
 * segment carries a FIN. Overlaps with queued bytes are merged. Returns
 * DROP_NONE, or why nothing was queued (the whole segment is dropped:
 * pool, slot, per-connection or range limit, or beyond reach). */
enum drop_reason tcp_ooo_insert(struct tcp_ooo_pool *p, struct tcp_conn *conn,
				seq_t rcv_nxt, seq_t seq, const uint8_t *data,
				size_t len, bool fin);

/* tcp_ooo_run() - iovecs (at most max) for the queued bytes that
 * continue the stream at from, i.e. of the range holding from; *bytes is
 * their total. Returns the iovec count, 0 if nothing continues at from. */
size_t tcp_ooo_run(const struct tcp_ooo_pool *p, const struct tcp_conn *conn,
		   seq_t from, struct iovec *iov, size_t max, size_t *bytes);

/* tcp_ooo_continues() - are queued bytes waiting at from (in order, not
 * yet written)? */
bool tcp_ooo_continues(const struct tcp_ooo_pool *p,
		       const struct tcp_conn *conn, seq_t from);

/* tcp_ooo_advance() - the stream was written up to rcv_nxt: forget and
 * free every queued byte before it; the queue's slot is released when it
 * empties. Returns true when a queued FIN sits exactly at rcv_nxt. */
bool tcp_ooo_advance(struct tcp_ooo_pool *p, struct tcp_conn *conn,
		     seq_t rcv_nxt);

/* tcp_ooo_sack() - the SACK option (RFC 2018) for an ACK of ack: two
 * NOPs, kind 5, then up to TCP_OOO_SACK_MAX blocks, the one holding the
 * latest segment first, then the others most recent first, then any
 * other queued range in sequence order. Writes at most 36 bytes to o;
 * returns the option length, 0 when nothing is queued. */
size_t tcp_ooo_sack(const struct tcp_ooo_pool *p,
		    const struct tcp_conn *conn, seq_t ack, uint8_t *o);

/* tcp_ooo_release() - free a connection's queue (close, reset). */
void tcp_ooo_release(struct tcp_ooo_pool *p, struct tcp_conn *conn);

/* tcp_ooo_queued() - bytes queued for a connection. */
size_t tcp_ooo_queued(const struct tcp_ooo_pool *p,
		      const struct tcp_conn *conn);

#endif /* FERRY_TCP_OOO_H */
