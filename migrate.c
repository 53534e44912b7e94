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
#include <string.h>

#include "arp.h"
#include "ferry.h"
#include "log.h"
#include "mig_state.h"
#include "migrate.h"
#include "ndp.h"
#include "tcp_conn.h"
#include "vhost_user.h"

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

/* put_tcp() - one record per translated TCP connection. */
static void put_tcp(const struct ctx *c, struct mig_enc *e)
{
	const struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl;
	     fl = flow_next(&c->flows, fl)) {
		const struct tcp_conn *tc = FLOW_PRIV(fl, const struct tcp_conn);
		struct mig_tcp t = {
			.state = tc->state,
			.ws_from_guest = tc->ws_from_guest,
			.ws_to_guest = tc->ws_to_guest,
			.mss_to_guest = tc->mss_to_guest,
			.seq_to_guest = tc->seq_to_guest.v,
			.seq_acked_by_guest = tc->seq_acked_by_guest.v,
			.seq_from_guest = tc->seq_from_guest.v,
			.wnd_from_guest = tc->wnd_from_guest,
			.wnd_to_guest = tc->wnd_to_guest,
		};

		key_to_mig(&fl->f.key[FLOW_SIDE_GUEST], &t.key);
		mig_put_tcp(e, &t);
	}
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
	size_t len;

	mig_enc_start(&e, buf, cap);
	put_guest(c, &e);
	put_tcp(c, &e);
	put_udp(c, &e);
	len = mig_enc_finish(&e);
	if (!len)
		warn("migration: device state larger than %zu bytes", cap);
	else
		info("migration: device state: %u TCP connections, %u UDP "
		     "flows, %zu bytes", c->flows.count[FLOW_TCP],
		     c->flows.count[FLOW_UDP], len);
	return len;
}

/* What the destination found in a state. */
struct load {
	struct ctx *c;
	unsigned int tcp, udp;
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

/* load_tcp()/load_udp() - count the flows that cannot go on here. */
static void load_tcp(void *opaque, const struct mig_tcp *t)
{
	(void)t;
	((struct load *)opaque)->tcp++;
}

static void load_udp(void *opaque, const struct mig_udp *u)
{
	(void)u;
	((struct load *)opaque)->udp++;
}

void migrate_load(struct ctx *c, const uint8_t *buf, size_t len)
{
	static const struct mig_visit v = {
		.guest = load_guest, .tcp = load_tcp, .udp = load_udp,
	};
	struct load l = { .c = c };
	const char *why;

	if (mig_decode(buf, len, &v, &l, &why)) {
		warn("migration: device state refused (%s): starting without "
		     "it", why);
		return;
	}
	info("migration: device state taken: guest MAC and addresses; "
	     "%u TCP connections and %u UDP flows not carried on (their "
	     "sockets stay on the source)", l.tcp, l.udp);
	c->link.announce = true;
	timer_request(c, 0);
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

const struct vu_state_ops migrate_vu_ops = {
	.save = migrate_save,
	.load = migrate_load,
};
