/* migrate.c - what ferry hands on when qemu live-migrates its guest.
 *
 * Theory of operation: qemu moves the guest; with vhost-user, the
 * back-end's own state rides in the same stream (vhost_user.c: the
 * device state, SET_DEVICE_STATE_FD). This file says what that state is
 * and applies it: migrate_save() encodes, on the source, once the rings
 * are stopped; migrate_load() decodes, on the destination, before the
 * rings start again. The format and its checks are mig_state.c's.
 *
 * Moved today: what ferry learnt of the guest (its MAC, the addresses it
 * used), so the destination answers it at once; and a record of every
 * TCP connection (guest-side addresses and ports, sequence numbers both
 * ways, windows, scales, MSS) and UDP flow. The host sockets behind them
 * stay on the source, so the destination cannot carry those flows on:
 * it counts and names them, and the guest's TCP sees them reset when it
 * next uses them. Moving the sockets (TCP_REPAIR) is the next step.
 *
 * A state that does not decode (another version, truncated, corrupted)
 * is refused whole with one line saying why; the destination then runs
 * as a freshly started ferry would.
 *
 * Once a state is taken, the destination announces the gateway to the
 * guest (a gratuitous ARP, an unsolicited Neighbour Advertisement) as
 * soon as its receive ring runs again (migrate_timer(), polled every
 * MIG_ANNOUNCE_POLL_MS until then).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "arp.h"
#include "ferry.h"
#include "log.h"
#include "mig_state.h"
#include "migrate.h"
#include "ndp.h"
#include "pkt.h"
#include "repair.h"
#include "tcp_conn.h"
#include "tcp_repair.h"
#include "util.h"
#include "vhost_user.h"

/* seccomp(vu): socket(0=AF_INET) socket(0=AF_INET6) close setsockopt
 *   (sockets rebuilt and let go, their peek offset) */

#define MIG_ANNOUNCE_POLL_MS	100

/* key_to_mig() - a flow's guest-side key in the state's form. */
static void key_to_mig(const struct flow_key *k, struct mig_key *m)
{
	memcpy(m->a, &k->a, 16);
	memcpy(m->b, &k->b, 16);
	m->pa = k->pa;
	m->pb = k->pb;
}

/* put_guest() - the guest record from what the context learnt. */
static void put_guest(const struct ctx *c, struct mig_enc *e)
{
	struct mig_guest g = { .mac_known = c->guest_mac_known };

	memcpy(g.mac, c->guest_mac, 6);
	memcpy(g.seen4, &c->guest_seen4, 4);
	memcpy(g.seen6, &c->guest_seen6, 16);
	memcpy(g.ll6, &c->guest_ll6, 16);
	mig_put_guest(e, &g);
}

/* The host side of a migration (c->mig, migrate_init()). */
struct mig_cand {
	uint32_t idx;			/* the flow */
	uint8_t st;			/* enum cand_st */
};

enum cand_st {
	CAND_REPAIR = 0,		/* in repair mode, not read yet */
	CAND_SENT,			/* read, in the state: let go */
	CAND_BACK,			/* not carried: out of repair mode */
};

/* A socket the destination builds again, and how far it got. */
enum rest_st {
	REST_NONE = 0,			/* not carried (or done and woken) */
	REST_OPEN,			/* in repair mode */
	REST_WAIT,			/* bound; the 4-tuple still taken */
	REST_CONN,			/* connected in repair mode */
	REST_DONE,			/* a flow again (idx) */
};

struct mig_rest {
	int s;				/* -1: none */
	uint8_t st;			/* enum rest_st */
	struct mig_tcp t;
	struct mig_tcp_sock k;
	uint32_t idx;			/* its flow, once made */
};

struct mig_ctx {
	uint8_t *qbuf;			/* one connection's queues */
	struct mig_cand *cand;		/* source: FLOW_MAX */
	unsigned int ncand;
	int *linger;			/* source: sockets kept in repair
					 * mode (not --migrate-no-linger) */
	unsigned int nlinger;
	struct mig_rest *rest;		/* destination: FLOW_MAX */
	unsigned int nrest;
	unsigned int carried;		/* ... made flows again */
	const uint8_t *state;		/* ... the state they come from */
	size_t state_len;
	int64_t wait_until;		/* ... some wait for the source's
					 * sockets until then (tcp clock),
					 * 0: none */
};

#define MIG_WAIT_MS		30000	/* for the source's sockets to go */
#define MIG_WAIT_POLL_MS	1	/* ... looking again that often */
#define MIG_HOLD_SLACK_MS	5000	/* a placeholder's timer: after that */

void migrate_init(struct ctx *c)
{
	struct mig_ctx *m = alloc_startup(sizeof(*m));

	/* Touched only by a migration: free until then. */
	m->qbuf = alloc_startup(MIG_QUEUES_MAX);
	m->cand = alloc_startup((size_t)FLOW_MAX * sizeof(*m->cand));
	m->linger = alloc_startup((size_t)FLOW_MAX * sizeof(*m->linger));
	m->rest = alloc_startup((size_t)FLOW_MAX * sizeof(*m->rest));
	c->mig = m;
}

/* tcp_movable() - may the connection's socket move? Established, no
 * FIN either way (repair mode does not rebuild one), no error pending. */
static bool tcp_movable(const struct tcp_conn *tc)
{
	return tc->state == TCP_CS_ESTABLISHED && tc->sock >= 0 &&
	       !tc->sock_err && !tc->pend_bytes &&
	       !(tc->flags & (TCP_C_GUEST_FIN | TCP_C_SHUT_WR |
			      TCP_C_SOCK_EOF | TCP_C_FIN_SENT));
}

/* freeze() - every movable connection's socket into repair mode (the
 * helper, one batch); the candidates in c->mig->cand, in flow order. */
static void freeze(struct ctx *c)
{
	struct mig_ctx *m = c->mig;
	struct flow *fl;
	int rc, cmd;

	if (!m)				/* not vhost-user: nothing moves */
		return;
	m->ncand = 0;
	if (!c->flows.count[FLOW_TCP] || !repair_available(c)) {
		if (c->flows.count[FLOW_TCP])
			warn("migration: no repair helper (--repair-path): "
			     "TCP connections stay on the source");
		return;
	}
	cmd = repair_can_freeze(c) ? REPAIR_FREEZE : REPAIR_ON;
	if (cmd == REPAIR_ON)
		warn("migration: passt-repair cannot freeze sockets: bytes "
		     "arriving while they move may be lost");
	for (fl = flow_first(&c->flows, FLOW_TCP); fl;
	     fl = flow_next(&c->flows, fl)) {
		struct tcp_conn *tc = FLOW_PRIV(fl, struct tcp_conn);

		if (!tcp_movable(tc)) {
			debug("migration: TCP flow %u not movable (state %u, "
			      "flags 0x%x)", flow_idx(&c->flows, fl),
			      tc->state, tc->flags);
			continue;
		}
		if ((rc = repair_set(c, tc->sock, cmd))) {
			warn("migration: repair helper: %s", strerror(-rc));
			break;
		}
		m->cand[m->ncand++] = (struct mig_cand){
			.idx = flow_idx(&c->flows, fl) };
	}
	if (repair_flush(c)) {
		warn("migration: repair mode failed: TCP connections stay "
		     "on the source");
		m->ncand = 0;
	}
	debug("migration: %u TCP sockets in repair mode", m->ncand);
}

/* peek_off_restore() - the kernel's peek offset back where tcp_out.c
 * keeps it (tcp_repair_dump() turned it off). */
static void peek_off_restore(struct tcp_conn *tc)
{
	int off = (int)(tc->consume + (uint32_t)seq_diff(
				tc->seq_to_guest, tc->seq_acked_by_guest));

	if (tc->flags & TCP_C_PEEK_OFF)
		setsockopt(tc->sock, SOL_SOCKET, SO_PEEK_OFF, &off,
			   sizeof(off));
}

/* put_sock() - the socket of tc (in repair mode) into the state after
 * its TCP record; false if it cannot be read or does not fit. */
static bool put_sock(struct ctx *c, struct mig_enc *e, const struct flow *fl,
		     struct tcp_conn *tc)
{
	struct mig_ctx *m = c->mig;
	struct mig_tcp_sock k;
	int off = -1, rc;
	const char *what;

	setsockopt(tc->sock, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off));
	rc = tcp_repair_dump(tc->sock, tc->consume, &k, m->qbuf,
			     MIG_QUEUES_MAX, &what);
	if (rc) {
		char key[FLOW_KEY_STRLEN];

		flow_key_str(&fl->f.key[FLOW_SIDE_GUEST], key, sizeof(key));
		warn("migration: TCP %s stays on the source: %s: %s", key,
		     what, strerror(-rc));
		return false;
	}
	return mig_put_tcp_sock(e, &k) &&
	       mig_put_tcp_data(e, MIG_Q_SEND, m->qbuf, k.sndq) &&
	       mig_put_tcp_data(e, MIG_Q_RECV, m->qbuf + k.sndq, k.rcvq);
}

/* put_tcp() - one record per translated TCP connection; those in repair
 * mode (freeze()) with their socket. */
static void put_tcp(struct ctx *c, struct mig_enc *e)
{
	struct mig_ctx *m = c->mig;
	unsigned int j = 0;
	struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl;
	     fl = flow_next(&c->flows, fl)) {
		struct tcp_conn *tc = FLOW_PRIV(fl, struct tcp_conn);
		struct mig_tcp t = {
			.state = tc->state,
			.flags = ((tc->flags & TCP_C_FWD) ? MIG_TCP_F_FWD : 0) |
				 ((tc->flags & TCP_C_SACK) ? MIG_TCP_F_SACK
							   : 0),
			.ws_from_guest = tc->ws_from_guest,
			.ws_to_guest = tc->ws_to_guest,
			.mss_to_guest = tc->mss_to_guest,
			.seq_to_guest = tc->seq_to_guest.v,
			.seq_acked_by_guest = tc->seq_acked_by_guest.v,
			.seq_from_guest = tc->seq_from_guest.v,
			.wnd_from_guest = tc->wnd_from_guest,
			.wnd_to_guest = tc->wnd_to_guest,
		};
		struct mig_cand *cd = NULL;

		if (m && j < m->ncand &&
		    m->cand[j].idx == flow_idx(&c->flows, fl))
			cd = &m->cand[j++];
		key_to_mig(&fl->f.key[FLOW_SIDE_GUEST], &t.key);
		if (!mig_put_tcp(e, &t))
			return;
		if (cd)
			cd->st = put_sock(c, e, fl, tc) ? CAND_SENT : CAND_BACK;
	}
}

/* thaw() - the candidates in state st (all, if st is CAND_REPAIR: the
 * state was not sent) out of repair mode, served on here. */
static void thaw(struct ctx *c, bool all)
{
	struct mig_ctx *m = c->mig;
	unsigned int j, n = 0;

	for (j = 0; m && j < m->ncand; j++) {
		struct flow *fl = flow_at(&c->flows, m->cand[j].idx);
		struct tcp_conn *tc = FLOW_PRIV(fl, struct tcp_conn);

		if (!all && m->cand[j].st != CAND_BACK)
			continue;
		repair_set(c, tc->sock, REPAIR_OFF_NO_WP);
		tcp_repair_thaw(tc->sock);
		peek_off_restore(tc);
		n++;
	}
	if (n && repair_flush(c))
		warn("migration: %u TCP sockets may be left in repair mode",
		     n);
}

/* let_go() - the connections now in the state leave this ferry: their
 * sockets closed in repair mode (--migrate-no-linger: no segment goes
 * out) or kept so until qemu leaves, their flows freed. */
static unsigned int let_go(struct ctx *c)
{
	struct mig_ctx *m = c->mig;
	unsigned int j, n = 0;

	if (!m)
		return 0;
	for (j = 0; j < m->ncand; j++) {
		struct flow *fl = flow_at(&c->flows, m->cand[j].idx);
		struct tcp_conn *tc = FLOW_PRIV(fl, struct tcp_conn);

		if (m->cand[j].st != CAND_SENT)
			continue;
		ep_del(c, tc->sock);
		if (c->conf.migrate_no_linger)
			close(tc->sock);
		else
			m->linger[m->nlinger++] = tc->sock;
		tc->sock = -1;
		tcp_conn_close(c, fl, TCP_END_MIGRATED);
		n++;
	}
	m->ncand = 0;
	return n;
}

/* migrate_end() - the front-end left: sockets kept in repair mode are
 * closed (still no segment). */
static void migrate_end(struct ctx *c)
{
	struct mig_ctx *m = c->mig;
	unsigned int i;

	if (!m || !m->nlinger)
		return;
	for (i = 0; i < m->nlinger; i++)
		close(m->linger[i]);
	info("migration: %u migrated TCP sockets closed", m->nlinger);
	m->nlinger = 0;
}
/* put_udp() - one record per UDP flow. */
static void put_udp(const struct ctx *c, struct mig_enc *e)
{
	const struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_UDP); fl;
	     fl = flow_next(&c->flows, fl)) {
		struct mig_udp u;

		key_to_mig(&fl->f.key[FLOW_SIDE_GUEST], &u.key);
		mig_put_udp(e, &u);
	}
}

size_t migrate_save(struct ctx *c, uint8_t *buf, size_t cap)
{
	struct mig_enc e;
	unsigned int moved;
	size_t len;

	freeze(c);
	mig_enc_start(&e, buf, cap);
	put_guest(c, &e);
	put_tcp(c, &e);
	put_udp(c, &e);
	len = mig_enc_finish(&e);
	if (!len) {
		warn("migration: device state larger than %zu bytes", cap);
		thaw(c, true);
		if (c->mig)
			c->mig->ncand = 0;
		return 0;
	}
	thaw(c, false);
	moved = let_go(c);
	info("migration: device state: %u TCP connections (%u with their "
	     "sockets), %u UDP flows, %zu bytes", c->flows.count[FLOW_TCP] +
	     moved, moved, c->flows.count[FLOW_UDP], len);
#ifdef FERRY_TEST
	/* Test builds: a corrupted state for the destination to refuse
	 * (test_migrate.py); the checksum no longer matches. */
	if (getenv("FERRY_TEST_MIG_CORRUPT") && len > MIG_HDR_LEN) {
		buf[len - 1] ^= 0x5a;
		warn("migration: test: device state corrupted on purpose");
	}
#endif
	return len;
}

/* What the destination found in a state, and builds from it. */
struct load {
	struct ctx *c;
	unsigned int tcp, udp;
	bool helper;			/* a repair helper is connected */
	struct mig_tcp t;		/* the last TCP record */
	struct mig_rest *cur;		/* the socket being built */
	unsigned int i;			/* ... its index (later passes) */
	unsigned int socks;		/* socket records (counting pass) */
};

/* load_guest() - take the guest's MAC and addresses. */
static void load_guest(void *opaque, const struct mig_guest *g)
{
	struct ctx *c = ((struct load *)opaque)->c;

	c->guest_mac_known = g->mac_known;
	memcpy(c->guest_mac, g->mac, 6);
	memcpy(&c->guest_seen4, g->seen4, 4);
	memcpy(&c->guest_seen6, g->seen6, 16);
	memcpy(&c->guest_ll6, g->ll6, 16);
}

/* load_tcp()/load_udp() - count the flows, keep the TCP record for its
 * socket. */
static void load_tcp(void *opaque, const struct mig_tcp *t)
{
	struct load *l = opaque;

	l->t = *t;
	l->tcp++;
}

static void load_udp(void *opaque, const struct mig_udp *u)
{
	(void)u;
	((struct load *)opaque)->udp++;
}

/* rest_key() - the guest-side key of a record. */
static void rest_key(const struct mig_tcp *t, struct flow_key *k)
{
	union inany a, b;

	memcpy(&a, t->key.a, 16);
	memcpy(&b, t->key.b, 16);
	flow_key_make(k, IPPROTO_TCP, &a, t->key.pa, &b, t->key.pb);
}

/* rest_flow() - the placeholder (or, once made, the) flow of a record,
 * NULL if it is gone. */
static struct flow *rest_flow(const struct ctx *c, const struct mig_rest *r)
{
	struct flow *fl;

	if (r->idx == FLOW_NONE || r->s < 0)
		return NULL;
	fl = flow_at(&c->flows, r->idx);
	if (!fl || fl->f.type != FLOW_TCP ||
	    FLOW_PRIV(fl, struct tcp_conn)->sock != r->s)
		return NULL;
	return fl;
}

/* rest_fail() - a socket that cannot be built: logged with its
 * connection; the guest gets an RST for it (its flow reset, the socket
 * closed: in repair mode, quietly). */
static void rest_fail(struct ctx *c, struct mig_rest *r, const char *what,
		      int err)
{
	struct flow *fl = rest_flow(c, r);
	char key[FLOW_KEY_STRLEN];
	struct flow_key k;

	rest_key(&r->t, &k);
	flow_key_str(&k, key, sizeof(key));
	warn("migration: TCP %s not carried on: %s: %s", key, what,
	     strerror(err));
	if (fl)
		tcp_reset_both(c, fl, TCP_END_ABORT);
	else if (r->s >= 0)
		close(r->s);
	r->s = -1;
	r->idx = FLOW_NONE;
	r->st = REST_NONE;
}

/* rest_hold() - a placeholder flow for the record while its socket is
 * built (it may wait for the source's): the guest's segments of the
 * connection find it and wait (as for a connect() in progress, no
 * socket events, no answer) instead of an RST; if nothing comes of it,
 * its timer resets the connection. */
static bool rest_hold(struct ctx *c, struct mig_rest *r)
{
	struct tcp_conn *tc;
	struct flow_key k;
	struct flow *fl;

	rest_key(&r->t, &k);
	if (flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k) ||
	    !(fl = flow_alloc(&c->flows, FLOW_TCP)))
		return false;
	tc = FLOW_PRIV(fl, struct tcp_conn);
	tc->sock = r->s;
	tc->pend_head = tc->pend_tail = TCP_PEND_NONE;
	tc->state = TCP_CS_CONNECTING;
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, &k);
	tcp_timer_set(c, tc, MIG_WAIT_MS + MIG_HOLD_SLACK_MS);
	r->idx = flow_idx(&c->flows, fl);
	return true;
}

/* count_sock() - the sockets a state holds. */
static void count_sock(void *opaque, const struct mig_tcp_sock *k)
{
	(void)k;
	((struct load *)opaque)->socks++;
}

/* open_sock() - first pass: a socket for the record, bound as it was,
 * into repair mode (queued for the helper). */
static void open_sock(void *opaque, const struct mig_tcp_sock *k)
{
	struct load *l = opaque;
	struct mig_ctx *m = l->c->mig;
	struct mig_rest *r = &m->rest[m->nrest++];

	*r = (struct mig_rest){ .s = -1, .t = l->t, .k = *k,
				.idx = FLOW_NONE };
	if (!l->helper) {
		rest_fail(l->c, r, "no repair helper", ENOTCONN);
		return;
	}
	r->s = socket(k->v6 ? AF_INET6 : AF_INET,
		      SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (r->s < 0) {
		rest_fail(l->c, r, "socket", errno);
		return;
	}
	if (!rest_hold(l->c, r)) {
		rest_fail(l->c, r, "flow table", ENOSPC);
		return;
	}
	if (repair_set(l->c, r->s, REPAIR_ON)) {
		rest_fail(l->c, r, "repair helper", EIO);
		return;
	}
	r->st = REST_OPEN;
}

/* build_sock()/build_data() - a later pass: a socket not connected yet
 * connected as it was, then its queues. */
static void build_sock(void *opaque, const struct mig_tcp_sock *k)
{
	struct load *l = opaque;
	struct mig_rest *r = &l->c->mig->rest[l->i++];
	const char *what;
	int rc;

	l->cur = NULL;
	if (r->st != REST_OPEN && r->st != REST_WAIT)
		return;
	if (!rest_flow(l->c, r)) {	/* the guest reset it meanwhile */
		r->s = -1;
		rest_fail(l->c, r, "reset by the guest", ECONNRESET);
		return;
	}
	if (r->st == REST_OPEN && (rc = tcp_repair_bind(r->s, k, &what))) {
		rest_fail(l->c, r, what, -rc);
		return;
	}
	rc = tcp_repair_connect(r->s, k, &what);
	if (rc == -EADDRNOTAVAIL) {	/* the source's socket, still here */
		r->st = REST_WAIT;
		return;
	}
	if (rc) {
		rest_fail(l->c, r, what, -rc);
		return;
	}
	r->st = REST_CONN;
	l->cur = r;
}

static void build_data(void *opaque, unsigned int q, const uint8_t *p,
		       size_t n)
{
	struct load *l = opaque;
	struct mig_rest *r = l->cur;
	const char *what;
	int rc;

	if (r && r->st == REST_CONN &&
	    (rc = tcp_repair_queue(r->s, q, p, n, &what)))
		rest_fail(l->c, r, what, -rc);
}

/* make_flow() - the connection in the flow table as it was on the
 * source (the guest's side), over its rebuilt socket. Host -> guest
 * goes on from the guest's ACK: what it did not acknowledge is sent
 * again (only that much was moved). */
static bool make_flow(struct ctx *c, struct mig_rest *r)
{
	const struct mig_tcp *t = &r->t;
	struct flow *fl = rest_flow(c, r);
	struct tcp_conn *tc;

	if (!fl) {
		r->s = -1;
		rest_fail(c, r, "reset by the guest", ECONNRESET);
		return false;
	}
	tc = FLOW_PRIV(fl, struct tcp_conn);
	tc->timer_ms = 0;		/* the placeholder's */
	tc->state = TCP_CS_ESTABLISHED;
	tc->flags = ((t->flags & MIG_TCP_F_FWD) ? TCP_C_FWD : 0) |
		    ((t->flags & MIG_TCP_F_SACK) ? TCP_C_SACK : 0);
	tc->ws_from_guest = t->ws_from_guest;
	tc->ws_to_guest = t->ws_to_guest;
	tc->mss_to_guest = t->mss_to_guest;
	tc->seq_acked_by_guest = seq_make(t->seq_acked_by_guest);
	tc->seq_to_guest = tc->seq_acked_by_guest;
	tc->isn_to_guest = seq_add(tc->seq_acked_by_guest, (uint32_t)-1);
	tc->snd_wl2 = tc->seq_acked_by_guest;
	tc->seq_from_guest = seq_make(t->seq_from_guest);
	tc->snd_wl1 = tc->seq_from_guest;
	tc->ack_sent = tc->seq_from_guest;
	tc->wnd_from_guest = t->wnd_from_guest;
	tc->wnd_to_guest = t->wnd_to_guest;
	tc->last_ms = tcp_now_ms(c);
	tc->ka_ms = tc->last_ms + TCP_KA_ARM_MS;
	tcp_sock_mss(tc);
	if (tcp_ep_add(c, fl)) {
		rest_fail(c, r, "epoll", EIO);
		return false;
	}
	tcp_wnd_refresh(c, fl);
	tcp_clamp_update(c, fl, true);
	r->st = REST_DONE;
	return true;
}

/* build_finish() - for the sockets connected in this pass: the windows,
 * repair mode off (the helper, one batch: each socket's window probe
 * goes), the flows made. */
static void build_finish(struct ctx *c)
{
	struct mig_ctx *m = c->mig;
	unsigned int i, n = 0;
	const char *what;
	int rc;

	for (i = 0; i < m->nrest; i++) {
		struct mig_rest *r = &m->rest[i];

		if (r->st == REST_CONN &&
		    (rc = tcp_repair_window(r->s, &r->k, &what)))
			rest_fail(c, r, what, -rc);
		if (r->st == REST_CONN && repair_set(c, r->s, REPAIR_OFF))
			rest_fail(c, r, "repair helper", EIO);
		n += r->st == REST_CONN;
	}
	rc = n ? repair_flush(c) : 0;
	for (i = 0; i < m->nrest; i++) {
		struct mig_rest *r = &m->rest[i];

		if (r->st == REST_CONN && rc)
			rest_fail(c, r, "repair helper", -rc);
		if (r->st == REST_CONN && make_flow(c, r))
			m->carried++;
	}
}

/* build_round() - connect what is not yet, with its queues; returns how
 * many still wait for the source's socket to go. */
static unsigned int build_round(struct ctx *c)
{
	static const struct mig_visit v = {
		.tcp_sock = build_sock, .tcp_data = build_data,
	};
	struct mig_ctx *m = c->mig;
	struct load l = { .c = c };
	unsigned int i, wait = 0;
	const char *why;

	mig_decode(m->state, m->state_len, &v, &l, &why);
	build_finish(c);
	for (i = 0; i < m->nrest; i++)
		wait += m->rest[i].st == REST_WAIT;
	return wait;
}

void migrate_load(struct ctx *c, const uint8_t *buf, size_t len)
{
	static const struct mig_visit count = { .tcp_sock = count_sock };
	static const struct mig_visit first = {
		.guest = load_guest, .tcp = load_tcp, .udp = load_udp,
		.tcp_sock = open_sock,
	};
	struct load l = { .c = c };
	struct mig_ctx *m = c->mig;
	unsigned int i, wait = 0;
	const char *why;

	if (mig_decode(buf, len, &count, &l, &why)) {
		warn("migration: device state refused (%s): starting without "
		     "it", why);
		return;
	}
	if (!m) {			/* not vhost-user: no sockets */
		mig_decode(buf, len, &(struct mig_visit){ .guest = load_guest },
			   &l, &why);
	} else {
		*m = (struct mig_ctx){ .qbuf = m->qbuf, .cand = m->cand,
				       .linger = m->linger, .rest = m->rest,
				       .nlinger = m->nlinger,
				       .state = buf, .state_len = len };
		/* The helper is waited for only if there are sockets. */
		l.helper = l.socks && repair_available(c);
		mig_decode(buf, len, &first, &l, &why);
		if (l.helper && repair_flush(c))
			for (i = 0; i < m->nrest; i++)
				if (m->rest[i].st == REST_OPEN)
					rest_fail(c, &m->rest[i],
						  "repair helper", EIO);
		wait = build_round(c);
	}
	info("migration: device state taken: guest MAC and addresses; "
	     "%u of %u TCP connections carried on, %u waiting for the "
	     "source's sockets; %u UDP flows not carried on", m ? m->carried
	     : 0, l.tcp, wait, l.udp);
	if (wait) {
		m->wait_until = tcp_now_ms(c) + MIG_WAIT_MS;
		timer_request(c, MIG_WAIT_POLL_MS);
	}
	c->link.announce = true;
	timer_request(c, 0);
}

/* wait_timer() - connections waiting for the source's sockets: try
 * again, until MIG_WAIT_MS after the state came. */
static void wait_timer(struct ctx *c)
{
	struct mig_ctx *m = c->mig;
	unsigned int i, before = m->carried;

	if (!m->wait_until)
		return;
	if (build_round(c) && tcp_now_ms(c) < m->wait_until) {
		timer_request(c, MIG_WAIT_POLL_MS);
	} else {
		for (i = 0; i < m->nrest; i++)
			if (m->rest[i].st == REST_WAIT)
				rest_fail(c, &m->rest[i], "connect",
					  EADDRNOTAVAIL);
		m->wait_until = 0;
	}
	if (m->carried != before)
		info("migration: %u TCP connections carried on",
		     m->carried - before);
}

/* wake() - once the guest runs here: each restored connection sends
 * again what the guest did not acknowledge, and an ACK with its window
 * (the guest resends what ferry did not take). */
static void wake(struct ctx *c)
{
	struct mig_ctx *m = c->mig;
	unsigned int i;

	for (i = 0; i < m->nrest; i++) {
		struct mig_rest *r = &m->rest[i];
		struct flow *fl;

		if (r->st != REST_DONE)
			continue;
		r->st = REST_NONE;	/* once */
		if (!(fl = rest_flow(c, r)))
			continue;
		tcp_send_flags(c, fl, TCP_F_ACK);
		tcp_data_to_guest(c, fl);
	}
}

/* can_reach_guest() - may frames go to the guest now? */
static bool can_reach_guest(const struct ctx *c)
{
	if (!c->link.up)
		return false;
	return !c->link.vu || virtq_ready(&c->link.vu->vq[VU_RXQ]);
}

void migrate_timer(struct ctx *c)
{
	if (c->mig) {
		wait_timer(c);
		if (c->mig->carried && can_reach_guest(c))
			wake(c);
	}
	if (!c->link.announce)
		return;
	if (!can_reach_guest(c)) {
		timer_request(c, MIG_ANNOUNCE_POLL_MS);
		return;
	}
	c->link.announce = false;
	if (c->conf.ip4.enabled)
		arp_announce(c);
	if (c->conf.ip6.enabled)
		ndp_announce(c);
	info("migration: gateway announced to the guest");
}

/* migrate_saved() - qemu has the whole state (CHECK_DEVICE_STATE on the
 * source): with --migrate-exit, this ferry's work is done. */
static void migrate_saved(struct ctx *c)
{
	if (!c->conf.migrate_exit)
		return;
	info("migration: state handed over, exiting (--migrate-exit)");
	c->quit = true;
	c->exit_code = 0;
}

const struct vu_state_ops migrate_vu_ops = {
	.save = migrate_save,
	.load = migrate_load,
	.saved = migrate_saved,
	.end = migrate_end,
};
