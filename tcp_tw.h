/* tcp_tw.h - closed TCP connections, remembered for a while so that the
 * guest's late segments get the answer the connection would have given
 * (TIME-WAIT; see tcp_tw.c for the theory of operation). */
#ifndef FERRY_TCP_TW_H
#define FERRY_TCP_TW_H

#include <stdbool.h>
#include <stdint.h>
#include "drop.h"

#define TCP_TW_MAX	4096u		/* remembered connections (ring) */
#define TCP_TW_BUCKETS	8192u		/* hash buckets, a power of two */
#define TCP_TW_MS	60000		/* how long one is remembered */
#define TCP_TW_ISN_GAP	65536u		/* a new ISN on the same 4-tuple lies
					 * at least this far beyond the old
					 * snd_nxt */

struct tcp_tw;

/* The table: a ring of TCP_TW_MAX slots in order of closing (so also of
 * expiry) and hash chains through them. Its memory is mapped at start-up
 * (tcp_tw_init()); e NULL: no table, nothing is remembered. */
struct tcp_tw_table {
	struct tcp_tw *e;		/* TCP_TW_MAX slots */
	uint16_t *bucket;		/* chain heads: slot + 1, 0: none */
	uint32_t head, n;		/* the ring: oldest slot, slots used */
	uint32_t live;			/* slots that are entries (hashed) */
};

/* Counters (the "tcp time-wait" statistics line). */
struct tcp_tw_stats {
	uint64_t added;		/* clean closes remembered */
	uint64_t acked;		/* late data or FIN answered with our ACK */
	uint64_t dropped;	/* late pure ACKs dropped (DROP_TCP_TIME_WAIT) */
	uint64_t reopened;	/* new SYNs on a remembered 4-tuple */
	uint64_t reset;		/* the guest's RSTs, ignored (RFC 1337) */
	uint64_t recycled;	/* entries dropped unexpired: table full */
	uint64_t expired;	/* entries that ran out (counted when seen) */
};

struct ctx;
struct flow;
struct flow_key;
struct pkt;

/* tcp_tw_init() - map the table (start-up; no-op if mapped already). */
void tcp_tw_init(struct tcp_tw_table *tw);
/* tcp_tw_free() - unmap it (tests; a process exit does it otherwise). */
void tcp_tw_free(struct tcp_tw_table *tw);
/* tcp_tw_add() - remember the FLOW_TCP flow fl, cleanly closed: both
 * FINs exchanged, ours acknowledged. Call before the flow is freed. */
void tcp_tw_add(struct ctx *c, const struct flow *fl);
/* tcp_tw_input() - a guest segment p with key k and no flow: true when
 * it belongs to a remembered connection and was dealt with (*r its drop
 * reason, DROP_NONE when answered or acted on); false for everything
 * else, a SYN without RST included (tcp_tw_reopen() sees those). */
bool tcp_tw_input(struct ctx *c, const struct pkt *p, const struct flow_key *k,
		  enum drop_reason *r);
/* tcp_tw_reopen() - a new connection on 4-tuple k (the guest's SYN, or
 * ours for a forwarded port) whose ISN would be isn: forgets an entry of
 * k and returns an ISN beyond its snd_nxt (RFC 9293 3.6.1, MAY-2), isn
 * itself without an entry. */
uint32_t tcp_tw_reopen(struct ctx *c, const struct flow_key *k, uint32_t isn);

#endif /* FERRY_TCP_TW_H */
