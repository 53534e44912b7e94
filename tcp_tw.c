/* tcp_tw.c - closed TCP connections, remembered so that the guest's late
 * segments get the connection's answer instead of a reset.
 *
 * Theory of operation
 *
 * A connection's flow is freed as soon as both directions are through
 * (tcp_in.c, tcp_conn_finished()). Segments of the guest's can still come:
 * its FIN again when our ACK of it was lost (the guest sits in LAST-ACK,
 * and an RST there reaches its application as ECONNRESET on a connection
 * that closed cleanly), its data again when the ACK of its last bytes
 * and FIN was lost, late duplicates, and its ACKs (D-SACK) answering
 * our own late duplicates. A real endpoint holds such a connection in
 * TIME-WAIT (or LAST-ACK); without a record ferry answered all of them
 * with an RST (DROP_NO_FLOW).
 *
 * What is remembered: every clean close, both FINs exchanged and ours
 * acknowledged (the state that would be TIME-WAIT on one end and
 * LAST-ACK then CLOSED on the other), by its guest-side 4-tuple: our
 * snd_nxt after our FIN, the guest's FIN + 1 (what we acknowledge), and
 * the window field of our last ACK (0: after the guest's FIN ferry
 * offers none). ferry sends no timestamps, so none are kept. A
 * connection ended by an RST either way is not remembered: the guest
 * knows it is gone (it sent the RST, or received one), a late segment
 * of it gets an RST as before, which is what it would get from the
 * guest's peer too.
 *
 * What a segment of a remembered connection gets (RFC 9293 3.10.7.4,
 * TIME-WAIT; the table has no state but the numbers):
 * - RST: ignored, the entry stays (RFC 1337's fix for TIME-WAIT
 *   assassination; RFC 9293 and Linux by default forget it). A closed
 *   guest answers our late segments with an RST, and its own segments
 *   sent before that RST can arrive after it (the fault injector holds
 *   and reorders them; a guest that retransmits while our ACK travels
 *   does the same): once forgotten, such a late ACK met no entry and
 *   drew an RST of its own (NO_FLOW; 1 in ~320 lossy downloads). Kept,
 *   it is dropped or answered as any other late segment;
 * - a SYN: a new connection (RFC 9293 3.6.1 MAY-2): the entry is
 *   forgotten and the new connection's ISN toward the guest is put
 *   TCP_TW_ISN_GAP beyond the old snd_nxt when the RFC 6528 ISN is not
 *   already there (condition 1 of MAY-2), so nothing of the old
 *   connection falls into the new one's window (tcp_tw_reopen()). The
 *   guest's ISN is not compared with the old one (RFC 1122's and Linux's
 *   old-duplicate test, and RFC 6191's with timestamps): on this link an
 *   old duplicate SYN does not outlive a connection, and a guest whose
 *   new ISN is below the old one (more than its ISN clock's worth sent)
 *   would otherwise lose a second to an ACK, its RST and its SYN
 *   retransmission. ferry's own SYN on a forwarded port takes the same
 *   ISN rule, and there it matters: a guest in TIME-WAIT accepts a SYN
 *   only beyond what it received (Linux tcp_timewait_state_process());
 * - data or a FIN (with ACK): our ACK again, the same ACK ferry sent last
 *   (seq = our snd_nxt, ack = the guest's FIN + 1, the same window): a
 *   retransmitted FIN, or data whose ACK was lost, is then acknowledged
 *   and the guest can close; a FIN also restarts the entry's time (RFC
 *   9293: "restart the 2 MSL timeout"). Nothing else can make the guest
 *   answer: a guest in TIME-WAIT takes our ACK silently, a closed one
 *   answers an RST, which forgets the entry;
 * - a pure ACK, or a segment without the ACK bit: dropped, with a reason
 *   (DROP_TCP_TIME_WAIT) and a counter. The guest's late ACKs acknowledge
 *   data ferry no longer has; answering them could only draw an RST from
 *   a closed guest (RFC 9293 would ACK one whose sequence number is not
 *   acceptable, i.e. sent before the FIN: on this link, a reordered one).
 *   A SYN-ACK is no business of a closed connection: an RST, as without
 *   the entry.
 *
 * How long: TCP_TW_MS, Linux's TIME-WAIT (2 MSL of 30 s). The link to
 * the guest holds segments for milliseconds, not an MSL; what takes time
 * is the guest's own retransmission of its FIN or data when our ACKs are
 * lost, with its backoff (200 ms doubling: 60 s covers seven losses of
 * our ACK in a row). A shorter time saves no memory (the table is fixed)
 * and no work (expiry costs nothing), so nothing argues for less.
 *
 * Memory and lookup: a fixed ring of TCP_TW_MAX slots (64 bytes each,
 * mapped at start-up and touched as the ring first fills), in order of
 * closing, so also of expiry, since every entry lives TCP_TW_MS: expired
 * entries are dropped from the ring's head when a close is added, and
 * one found expired by a lookup is forgotten there. No timer. When the
 * ring is full the oldest slot is taken (counted, `recycled`). An entry
 * forgotten early (a SYN, a FIN restarting it: it moves to the
 * ring's tail) leaves its slot behind until the head passes it. The
 * lookup is a hash of the flow key (flow.h flow_key_hash(): the flow
 * table's SipHash secret under another salt) into TCP_TW_BUCKETS chains
 * of 16-bit slot numbers, done only for segments without a flow, and
 * for SYNs: the data path does not pay for it.
 */
#include <string.h>
#include <sys/mman.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "util.h"

/* seccomp(all): munmap */

_Static_assert(TCP_TW_MAX < UINT16_MAX, "slot + 1 fits a chain link");
_Static_assert(!(TCP_TW_BUCKETS & (TCP_TW_BUCKETS - 1)), "power of two");

/* One remembered connection. */
struct tcp_tw {
	struct flow_key key;	/* guest side, as the flow had it */
	seq_t snd_nxt;		/* ours, after our FIN */
	seq_t rcv_nxt;		/* the guest's FIN + 1 */
	int64_t expire_ms;	/* on the tcp clock (tcp_now_ms()) */
	uint16_t wnd;		/* window field of our last segment */
	uint16_t hnext;		/* hash chain: slot + 1, 0: the end */
	bool live;		/* hashed; false: a slot left behind */
};

_Static_assert(sizeof(struct tcp_tw) == 64, "a slot is 64 bytes");

void tcp_tw_init(struct tcp_tw_table *tw)
{
	if (tw->e)
		return;
	tw->e = alloc_startup(sizeof(*tw->e) * TCP_TW_MAX);
	tw->bucket = alloc_startup(sizeof(*tw->bucket) * TCP_TW_BUCKETS);
	tw->head = tw->n = tw->live = 0;
}

void tcp_tw_free(struct tcp_tw_table *tw)
{
	if (!tw->e)
		return;
	munmap(tw->e, sizeof(*tw->e) * TCP_TW_MAX);
	munmap(tw->bucket, sizeof(*tw->bucket) * TCP_TW_BUCKETS);
	tw->e = NULL;
	tw->bucket = NULL;
}

/* tw_chain() - the chain head of key k. */
static uint16_t *tw_chain(const struct ctx *c, const struct flow_key *k)
{
	uint64_t h = flow_key_hash(&c->flows, FLOW_HASH_TCP_TW, k);

	return &c->tcp.tw.bucket[h & (TCP_TW_BUCKETS - 1)];
}

/* tw_forget() - take live entry e out of its chain; its slot stays in
 * the ring until the head passes it. */
static void tw_forget(struct ctx *c, struct tcp_tw *e)
{
	struct tcp_tw_table *tw = &c->tcp.tw;
	uint16_t *pe = tw_chain(c, &e->key);
	uint16_t want = (uint16_t)(e - tw->e + 1);

	while (*pe) {
		if (*pe == want) {
			*pe = e->hnext;
			break;
		}
		pe = &tw->e[*pe - 1].hnext;
	}
	e->live = false;
	tw->live--;
}

/* tw_find() - the live entry of key k, NULL if none; an entry found
 * expired is forgotten. */
static struct tcp_tw *tw_find(struct ctx *c, const struct flow_key *k)
{
	struct tcp_tw_table *tw = &c->tcp.tw;
	uint16_t i;

	if (!tw->e)
		return NULL;
	for (i = *tw_chain(c, k); i; i = tw->e[i - 1].hnext) {
		struct tcp_tw *e = &tw->e[i - 1];

		if (memcmp(&e->key, k, sizeof(*k)))
			continue;
		if (e->expire_ms > tcp_now_ms(c))
			return e;
		c->tcp.tw_st.expired++;
		tw_forget(c, e);
		return NULL;
	}
	return NULL;
}

/* tw_prune() - free slots at the ring's head: those left behind, the
 * expired entries, and the oldest entry when the ring is full. */
static void tw_prune(struct ctx *c, int64_t now)
{
	struct tcp_tw_table *tw = &c->tcp.tw;

	while (tw->n) {
		struct tcp_tw *e = &tw->e[tw->head];

		if (e->live) {
			if (e->expire_ms > now && tw->n < TCP_TW_MAX)
				break;
			if (e->expire_ms > now)
				c->tcp.tw_st.recycled++;
			else
				c->tcp.tw_st.expired++;
			tw_forget(c, e);
		}
		tw->head = (tw->head + 1) % TCP_TW_MAX;
		tw->n--;
	}
}

/* tw_append() - a new entry at the ring's tail, for TCP_TW_MS from now
 * (no entry of key k may be live). */
static void tw_append(struct ctx *c, const struct flow_key *k, seq_t snd_nxt,
		      seq_t rcv_nxt, uint16_t wnd)
{
	struct tcp_tw_table *tw = &c->tcp.tw;
	int64_t now = tcp_now_ms(c);
	uint16_t *head;
	struct tcp_tw *e;
	uint32_t i;

	tw_prune(c, now);
	i = (tw->head + tw->n++) % TCP_TW_MAX;
	e = &tw->e[i];
	e->key = *k;
	e->snd_nxt = snd_nxt;
	e->rcv_nxt = rcv_nxt;
	e->wnd = wnd;
	e->expire_ms = now + TCP_TW_MS;
	e->live = true;
	head = tw_chain(c, k);
	e->hnext = *head;
	*head = (uint16_t)(i + 1);
	tw->live++;
}

void tcp_tw_add(struct ctx *c, const struct flow *fl)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	const struct tcp_conn *conn = FLOW_PRIV(fl, const struct tcp_conn);
	struct tcp_tw *old;

	if (!c->tcp.tw.e)
		return;
	if ((old = tw_find(c, k)))	/* an earlier connection's */
		tw_forget(c, old);
	tw_append(c, k, conn->seq_to_guest, conn->seq_from_guest,
		  (uint16_t)MIN(conn->wnd_sent >> conn->ws_to_guest, 65535u));
	c->tcp.tw_st.added++;
}

bool tcp_tw_input(struct ctx *c, const struct pkt *p, const struct flow_key *k,
		  enum drop_reason *r)
{
	const struct tcp_view *t = &p->tcp;
	struct tcp_tw *e;

	if ((t->flags & (TCP_F_SYN | TCP_F_RST)) == TCP_F_SYN)
		return false;		/* a new connection, or not ours */
	if (!(e = tw_find(c, k)))
		return false;
	*r = DROP_NONE;
	if (t->flags & TCP_F_RST) {	/* RFC 1337: kept, no answer */
		c->tcp.tw_st.reset++;
		*r = DROP_TCP_TIME_WAIT;
		return true;
	}
	if (!(t->flags & TCP_F_ACK) ||
	    (!p->payload_len && !(t->flags & TCP_F_FIN))) {
		c->tcp.tw_st.dropped++;
		*r = DROP_TCP_TIME_WAIT;
		return true;
	}
	tcp_reply(c, p, e->snd_nxt.v, e->rcv_nxt.v, TCP_F_ACK, e->wnd);
	c->tcp.tw_st.acked++;
	if (t->flags & TCP_F_FIN) {	/* its time starts again */
		struct tcp_tw keep = *e;

		tw_forget(c, e);
		tw_append(c, k, keep.snd_nxt, keep.rcv_nxt, keep.wnd);
	}
	return true;
}

uint32_t tcp_tw_reopen(struct ctx *c, const struct flow_key *k, uint32_t isn)
{
	struct tcp_tw *e = tw_find(c, k);
	seq_t floor;

	if (!e)
		return isn;
	c->tcp.tw_st.reopened++;
	floor = seq_add(e->snd_nxt, TCP_TW_ISN_GAP);
	tw_forget(c, e);
	return seq_lt(seq_make(isn), floor) ? floor.v : isn;
}

/* The counters' statistics line (drop.h's registry), unless all are 0. */
static const struct stat_item tcp_tw_stat_items[] = {
	STAT("added", struct ctx, tcp.tw_st.added),
	STAT("acked", struct ctx, tcp.tw_st.acked),
	STAT("dropped", struct ctx, tcp.tw_st.dropped),
	STAT("reopened", struct ctx, tcp.tw_st.reopened),
	STAT("reset", struct ctx, tcp.tw_st.reset),
	STAT("recycled", struct ctx, tcp.tw_st.recycled),
	STAT("expired", struct ctx, tcp.tw_st.expired),
};

STAT_GROUP(tcp_tw_stats) = {
	.order = 22, .what = "tcp time-wait", .when = STAT_ANY, .via = -1,
	.items = tcp_tw_stat_items, .n = ARRAY_SIZE(tcp_tw_stat_items),
};
