/* igmp.c - the guest's IGMP and MLD messages, and ferry as the querier
 * of the guest's link.
 *
 * Theory of operation
 *
 * ferry is the guest's only router, so it is where the guest's group
 * memberships end (RFC 3376 for IGMPv3 with RFC 2236's v2 messages,
 * RFC 3810 for MLDv2 with RFC 2710's v1 messages). Each report is
 * checked whole first (lengths of every record, the checksum, TTL or
 * hop limit 1, an MLD source link-local or unspecified, RFC 3810
 * 5.2.13), then each of its records becomes one operation on the group
 * table (mcast.c), which joins and leaves on the host (a group is
 * heard on its well-known port and on the ports of the guest's flows to
 * it, udp_mcast_learn(), even of a datagram sent just before the
 * report):
 *
 *  - v1/v2 report, MLDv1 report, IS_EX / TO_EX: join from any source
 *    (an exclude list is not kept: the guest's own kernel filters it);
 *  - v2 leave, MLDv1 done, IS_IN / TO_IN of no source: leave at once
 *    (the guest is the link's only member: no last-member queries, as
 *    a snooping switch's fast leave, RFC 4541 2.1.1);
 *  - IS_IN / TO_IN with sources: exactly those (source-specific join);
 *    ALLOW / BLOCK add and take away sources.
 *
 * Groups that mean nothing beyond the link are not joined: 224.0.0.1,
 * .2 and .22; ff02::1, ::2, ::16, ::1:2, the solicited-node groups
 * (ff02::1:ff00:0/104, NDP is answered here), and IPv6 scopes 0 and 1.
 *
 * Querier. Like a router, ferry sends the guest general queries
 * (IGMPv3 to 224.0.0.1, MLDv2 to ff02::1 from its link-local address,
 * TTL / hop limit 1 with the Router Alert option): two at start-up a
 * quarter interval apart, then one per query interval (125 s), asking
 * for answers within 10 s. The guest's answers refresh each group; a
 * group not refreshed within the membership interval (2 x 125 s + 10
 * s) is left (RFC 3376 8.4). Queries from the guest are dropped
 * (DROP_MCAST_QUERY): there is no other router to elect.
 */
#include <string.h>
#include <netinet/in.h>

#include "checksum.h"
#include "ferry.h"
#include "igmp.h"
#include "ndp.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

#define IGMP_QUERY		0x11
#define IGMP_V1_REPORT		0x12
#define IGMP_V2_REPORT		0x16
#define IGMP_V2_LEAVE		0x17
#define IGMP_V3_REPORT		0x22
#define MLD_QUERY		130
#define MLD_V1_REPORT		131
#define MLD_V1_DONE		132
#define MLD_V2_REPORT		143

#define QUERY_MS		125000	/* query interval */
#define RESPONSE_MS		10000	/* query response interval */
#define ROBUSTNESS		2
#define RA_OPT4			0x94040000u	/* Router Alert, value 0 */

/* rec_op() - the operation of a v3 / MLDv2 record of type t with n
 * sources; -1 for a type RFC 3376 4.2.12 says to ignore. */
static int rec_op(uint8_t t, unsigned int n)
{
	switch (t) {
	case 1:				/* MODE_IS_INCLUDE */
	case 3:				/* CHANGE_TO_INCLUDE_MODE */
		return n ? MCAST_OP_INCLUDE : MCAST_OP_LEAVE;
	case 2:				/* MODE_IS_EXCLUDE */
	case 4:				/* CHANGE_TO_EXCLUDE_MODE */
		return MCAST_OP_JOIN;
	case 5:				/* ALLOW_NEW_SOURCES */
		return MCAST_OP_ALLOW;
	case 6:				/* BLOCK_OLD_SOURCES */
		return MCAST_OP_BLOCK;
	default:
		return -1;
	}
}

/* group_of() - the group at b (4 or 16 bytes) as an address. */
static void group_of(const uint8_t *b, bool v6, union inany *g)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (v6) {
		memcpy(&a6, b, 16);
		inany_from6(g, &a6);
	} else {
		memcpy(&a4, b, 4);
		inany_from4(g, a4);
	}
}

/* group_ok() - a multicast group ferry may join for the guest. */
static bool group_ok(const union inany *g)
{
	static const struct in6_addr link6[] = {	/* ff02::1, ::2, ::16 */
		{ .s6_addr = { 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 } },
		{ .s6_addr = { 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 } },
		{ .s6_addr = { 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			       0x16 } },
		{ .s6_addr = { 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2 } },
	};
	static const struct in6_addr snode = { .s6_addr = {	/* /104 */
		0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0 } };
	const struct in6_addr *a = &g->a6;
	unsigned int i;

	if (inany_is4(g)) {
		uint32_t h = ntohl(g->v4m.a4.s_addr);

		return IN_MULTICAST(h) && h != 0xe0000001 && h != 0xe0000002 &&
		       h != 0xe0000016;
	}
	if (!in6_is_mcast(a) || (a->s6_addr[1] & 0x0f) <= 1)
		return false;
	if (!memcmp(a, &snode, 13))
		return false;		/* solicited-node: NDP is ferry's */
	for (i = 0; i < ARRAY_SIZE(link6); i++)
		if (in6_eq(a, &link6[i]))
			return false;
	return true;
}

/* one_rec() - hand fn the single group of a v1/v2 or MLDv1 message. */
static enum drop_reason one_rec(const struct pkt *p, const uint8_t *gb,
				enum mcast_op op,
				void (*fn)(void *, const struct igmp_rec *),
				void *arg)
{
	struct igmp_rec r = { .op = op };

	group_of(gb, p->is_v6, &r.group);
	if (!inany_is4(&r.group) ? !in6_is_mcast(&r.group.a6)
	    : !IN_MULTICAST(ntohl(r.group.v4m.a4.s_addr)))
		return DROP_MCAST_REPORT;
	if (fn && group_ok(&r.group))
		fn(arg, &r);
	return DROP_NONE;
}

/* records() - the group records of a v3 report or MLDv2 report at t
 * (len bytes): each checked to fit, then (fn) handed over. */
static enum drop_reason records(const struct pkt *p, const uint8_t *t,
				size_t len,
				void (*fn)(void *, const struct igmp_rec *),
				void *arg)
{
	size_t alen = p->is_v6 ? 16 : 4, off = IGMP_REPORT3_HLEN;
	unsigned int n = rd16(t + IGMP_OFF_NREC), i;

	for (i = 0; i < n; i++) {
		struct igmp_rec r;
		size_t rlen;
		int op;

		if (len - off < MREC_HLEN + alen)
			return DROP_MCAST_REPORT;
		r.nsrc = rd16(t + off + MREC_OFF_NSRC);
		rlen = MREC_HLEN + alen * (1 + r.nsrc) +
		       4 * (size_t)t[off + MREC_OFF_AUXLEN];
		if (rlen > len - off)
			return DROP_MCAST_REPORT;
		group_of(t + off + MREC_OFF_GROUP, p->is_v6, &r.group);
		r.src = t + off + MREC_OFF_GROUP + alen;
		op = rec_op(t[off + MREC_OFF_TYPE], r.nsrc);
		if (fn && op >= 0 && group_ok(&r.group)) {
			r.op = (enum mcast_op)op;
			fn(arg, &r);
		}
		off += rlen;
	}
	return DROP_NONE;
}

/* parse4() - an IGMP message. */
static enum drop_reason parse4(const struct pkt *p,
			       void (*fn)(void *, const struct igmp_rec *),
			       void *arg)
{
	const uint8_t *t = p->l4;

	if (p->l4len < IGMP_LEN)
		return DROP_L4_SHORT;
	if (csum(t, p->l4len) != 0)
		return DROP_L4_CSUM;
	switch (t[IGMP_OFF_TYPE]) {
	case IGMP_V1_REPORT:
	case IGMP_V2_REPORT:
		return one_rec(p, t + IGMP_OFF_GROUP, MCAST_OP_JOIN, fn, arg);
	case IGMP_V2_LEAVE:
		return one_rec(p, t + IGMP_OFF_GROUP, MCAST_OP_LEAVE, fn, arg);
	case IGMP_V3_REPORT:
		return records(p, t, p->l4len, fn, arg);
	default:
		return DROP_MCAST_QUERY;
	}
}

/* parse6() - an MLD message (its ICMPv6 checksum verified by
 * pkt_parse()). */
static enum drop_reason parse6(const struct pkt *p,
			       void (*fn)(void *, const struct igmp_rec *),
			       void *arg)
{
	const uint8_t *t = p->l4;

	if (p->l4len < IGMP_REPORT3_HLEN)
		return DROP_L4_SHORT;
	if (!IN6_IS_ADDR_LINKLOCAL(&p->src6) && !in6_is_unspec(&p->src6))
		return DROP_MCAST_REPORT;
	switch (t[ICMP_OFF_TYPE]) {
	case MLD_V1_REPORT:
	case MLD_V1_DONE:
		if (p->l4len < MLD_LEN)
			return DROP_L4_SHORT;
		return one_rec(p, t + MLD_OFF_GROUP,
			       t[ICMP_OFF_TYPE] == MLD_V1_DONE ? MCAST_OP_LEAVE
							       : MCAST_OP_JOIN,
			       fn, arg);
	case MLD_V2_REPORT:
		return records(p, t, p->l4len, fn, arg);
	default:
		return DROP_MCAST_QUERY;
	}
}

enum drop_reason igmp_parse(const struct pkt *p,
			    void (*fn)(void *arg, const struct igmp_rec *r),
			    void *arg)
{
	enum drop_reason r;

	if (p->ttl != 1)
		return DROP_MCAST_REPORT;
	r = p->is_v6 ? parse6(p, NULL, NULL) : parse4(p, NULL, NULL);
	if (r != DROP_NONE || !fn)
		return r;
	return p->is_v6 ? parse6(p, fn, arg) : parse4(p, fn, arg);
}

/* apply_rec() - igmp_parse()'s callback: one record to the table; the
 * first refusal is kept in *arg (enum drop_reason). */
static void apply_rec(void *arg, const struct igmp_rec *r)
{
	struct { struct ctx *c; enum drop_reason r; } *a = arg;
	enum drop_reason d = mcast_apply(a->c, &r->group, r->op, r->src,
					 r->nsrc);

	if (a->r == DROP_NONE)
		a->r = d;
	if (d == DROP_NONE && r->op != MCAST_OP_LEAVE)
		udp_mcast_learn(a->c, &r->group);
}

enum drop_reason igmp_input(struct ctx *c, const struct pkt *p)
{
	struct { struct ctx *c; enum drop_reason r; } a = { c, DROP_NONE };
	enum drop_reason r;

	if (c->conf.no_multicast)
		return DROP_SERVICE_DISABLED;
	r = igmp_parse(p, apply_rec, &a);
	if (r != DROP_NONE)
		return r;
	c->udp.mc.reports++;
	return a.r;
}

/* --- querier -------------------------------------------------------- */

/* query4() - an IGMPv3 general query to 224.0.0.1, from the gateway
 * address, TTL 1, with Router Alert. */
static void query4(struct ctx *c, uint8_t maxresp, uint8_t qqic)
{
	static const uint8_t mac[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	size_t hl = IP4_HLEN + IP4_OPT_RA_LEN, len = IGMP_QUERY3_LEN;
	struct in_addr all = { htonl(INADDR_ALLHOSTS_GROUP) };
	uint8_t *f = tap_tx_reserve(c, ETH_HLEN_ + hl + len), *l3, *t;

	if (!f)
		return;
	l3 = eth_build(f, mac, c->conf.our_mac, ETH_P_IP_);
	memset(l3, 0, hl + len);
	l3[IP4_OFF_VIHL] = (uint8_t)(4 << 4 | hl / 4);
	l3[IP4_OFF_TOS] = 0xc0;		/* internetwork control */
	wr16(l3 + IP4_OFF_TOTLEN, (uint16_t)(hl + len));
	l3[IP4_OFF_TTL] = 1;
	l3[IP4_OFF_PROTO] = IPPROTO_IGMP;
	memcpy(l3 + IP4_OFF_SRC, &c->conf.ip4.gw, 4);
	memcpy(l3 + IP4_OFF_DST, &all, 4);
	wr32(l3 + IP4_HLEN, RA_OPT4);
	wr16(l3 + IP4_OFF_CSUM, csum(l3, hl));
	t = l3 + hl;
	t[IGMP_OFF_TYPE] = IGMP_QUERY;
	t[IGMP_OFF_MAXRESP] = maxresp;
	t[IGMP_OFF_QRV] = ROBUSTNESS;
	t[IGMP_OFF_QQIC] = qqic;
	wr16(t + IGMP_OFF_CSUM, csum(t, len));
	tap_tx_commit(c, ETH_HLEN_ + hl + len);
}

/* query6() - an MLDv2 general query to ff02::1 from ferry's link-local
 * address, hop limit 1, behind a hop-by-hop header with Router Alert
 * (value 0: MLD). */
static void query6(struct ctx *c, uint16_t maxresp, uint8_t qqic)
{
	static const uint8_t mac[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
	size_t len = MLD_QUERY2_LEN, pl = IP6_HBH_RA_LEN + len;
	struct in6_addr src, all = { .s6_addr = { 0xff, 0x02 } };
	uint8_t *f = tap_tx_reserve(c, ETH_HLEN_ + IP6_HLEN + pl), *h, *t;

	if (!f)
		return;
	all.s6_addr[15] = 1;
	ndp_router_ll(c, &src);
	h = ip6_build(eth_build(f, mac, c->conf.our_mac, ETH_P_IPV6_), &src,
		      &all, IPPROTO_HOPOPTS, pl, 1);
	memset(h, 0, pl);
	h[IP6_HBH_OFF_NEXT] = IPPROTO_ICMPV6;
	wr32(h + IP6_HBH_OFF_OPT, 0x05020000u);	/* Router Alert, MLD */
	wr16(h + IP6_HBH_OFF_PAD, 0x0100);	/* PadN of no bytes */
	t = h + IP6_HBH_RA_LEN;
	t[ICMP_OFF_TYPE] = MLD_QUERY;
	wr16(t + MLD_OFF_MAXRESP, maxresp);
	t[MLD_OFF_QRV] = ROBUSTNESS;
	t[MLD_OFF_QQIC] = qqic;
	wr16(t + ICMP_OFF_CSUM, csum_l4_6(&src, &all, IPPROTO_ICMPV6, t, len));
	tap_tx_commit(c, ETH_HLEN_ + IP6_HLEN + pl);
}

/* query_all() - a general query in each family the guest has. */
static void query_all(struct ctx *c)
{
	struct mcast_state *m = &c->udp.mc;
	int64_t resp = MIN((int64_t)RESPONSE_MS, m->query_ms / 2);
	uint8_t qqic = (uint8_t)MAX(MIN(m->query_ms / 1000, 127), 1);

	if (c->conf.ip4.enabled)
		query4(c, (uint8_t)MAX(resp / 100, 1), qqic);
	if (c->conf.ip6.enabled)
		query6(c, (uint16_t)resp, qqic);
	m->queries++;
}

void igmp_init(struct ctx *c)
{
	struct mcast_state *m = &c->udp.mc;
	int64_t q = test_env_u32("FERRY_TEST_MCAST_QUERY_MS", QUERY_MS);

	m->query_ms = MAX(q, 100);
	mcast_init(c, ROBUSTNESS * m->query_ms +
		      MIN((int64_t)RESPONSE_MS, m->query_ms / 2));
	m->startup_left = ROBUSTNESS;
	m->query_due_ms = mcast_now_ms(c) + MIN(1000, m->query_ms / 4);
	if (!c->conf.no_multicast)
		timer_request(c, MIN(1000, m->query_ms / 4));
}

void igmp_timer(struct ctx *c)
{
	struct mcast_state *m = &c->udp.mc;
	int64_t now = mcast_now_ms(c), next;

	if (c->conf.no_multicast || !m->query_ms)
		return;
	if (m->query_due_ms <= now) {
		if (c->link.up)
			query_all(c);
		if (m->startup_left)
			m->startup_left--;
		m->query_due_ms = now + (m->startup_left ? m->query_ms / 4
							  : m->query_ms);
	}
	next = MIN(m->query_due_ms - now, mcast_expire(c));
	timer_request(c, next);
}
