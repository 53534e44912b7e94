/* ndp.c - Neighbor Discovery (RFC 4861) for the guest: ferry is its
 * router and every neighbour it has.
 *
 * Theory of operation. Our link-local address, the source of every
 * Router Advertisement (and of DHCPv6 replies), is conf.ip6.gw when that
 * is a link-local address, otherwise fe80::1 (ndp_router_ll()). So the
 * default route the guest learns from our RAs is the router address the
 * configuration names whenever it can be; when conf.ip6.gw is a global
 * address (copied from the host), the guest may route via either, and
 * both resolve to our MAC.
 *
 * Neighbour Solicitation: answered with a Neighbour Advertisement giving
 * our MAC (flags Router, Override, and Solicited for a solicitation with
 * a source address), or for a neighbour on the host's LAN that the host
 * knows its real MAC and no Router flag (neigh.c), for any target except the guest's own addresses
 * (configured, or seen as its sources) and link-local addresses other than
 * ours (nothing else lives on the link). Duplicate address detection
 * probes (unspecified source) are only answered for our own link-local
 * address, with an advertisement to all-nodes: the guest's tentative
 * addresses, SLAAC ones included, are never claimed.
 *
 * Router Solicitation: answered with a Router Advertisement, unicast to
 * the soliciting address (all-nodes if unspecified). RAs also go out
 * unsolicited to all-nodes: right when the link comes up, then at 1, 2
 * and 4 s (RFC 4861 6.2.4 initial advertisements, sped up), then at a
 * random interval of 10..60 s (MinRtrAdvInterval..MaxRtrAdvInterval,
 * capped well below the RFC's 600 s default so a guest brought up late
 * still learns quickly even without soliciting).
 *
 * RA contents: M and O flags unless --no-dhcpv6 (so DHCPv6 runs too),
 * router lifetime 9000 s, the source link-layer address, the MTU, a
 * Prefix Information option for conf.ip6.addr's /64 (on-link and
 * autonomous: SLAAC works without DHCPv6), RDNSS (RFC 8106) unless
 * no_dhcp_dns and DNSSL unless no_dhcp_search. --no-ra stops all RAs
 * (solicitations are then refused); --no-ndp (checked by the dispatcher)
 * stops NDP altogether.
 *
 * Validation (RFC 4861 6.1, 7.1): hop limit 255, ICMPv6 code 0, the fixed
 * part present, every option with a non-zero length inside the message,
 * no source link-layer option with an unspecified source, DAD probes to
 * a solicited-node group, no multicast targets. Anything else is dropped
 * with NDP_HOPLIMIT or NDP_MALFORMED; RAs, NAs and redirects from the
 * guest are checked the same way, then ignored.
 */
#include "dns.h"
#include "ferry.h"
#include "neigh.h"
#include "log.h"
#include "ndp.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

#define NDP_RS		133
#define NDP_RA		134
#define NDP_NS		135
#define NDP_NA		136
#define NDP_REDIRECT	137

#define OPT_SLLA	1
#define OPT_TLLA	2
#define OPT_PREFIX	3
#define OPT_MTU		5
#define OPT_RDNSS	25
#define OPT_DNSSL	31

#define NA_ROUTER	0x80
#define NA_SOLICITED	0x40
#define NA_OVERRIDE	0x20

#define PFX_ONLINK	0x80		/* prefix information flags */
#define PFX_AUTO	0x40
#define RA_MANAGED	0x80
#define RA_OTHER	0x40
#define RA_HOPLIMIT	64
#define RA_LIFETIME	9000		/* s, router lifetime */
#define NDP_INFINITE	0xffffffffu

#define RA_INITIAL_N	3		/* fast initial advertisements */
#define RA_MIN_MS	10000
#define RA_MAX_MS	60000
#define RA_DOWN_POLL_MS	1000		/* link down: look again */
#define RA_BUF		2048

void ndp_router_ll(const struct ctx *c, struct in6_addr *a)
{
	if (IN6_IS_ADDR_LINKLOCAL(&c->conf.ip6.gw)) {
		*a = c->conf.ip6.gw;
		return;
	}
	memset(a, 0, sizeof(*a));
	a->s6_addr[0] = 0xfe;
	a->s6_addr[1] = 0x80;
	a->s6_addr[15] = 1;
}

/* mcast_mac() - Ethernet group address for IPv6 multicast a (RFC 2464). */
static void mcast_mac(const struct in6_addr *a, uint8_t mac[6])
{
	mac[0] = mac[1] = 0x33;			/* wire: an address's bytes */
	memcpy(mac + 2, a->s6_addr + 12, 4);	/* wire: an address's bytes */
}

/* all_nodes() - ff02::1, the all-nodes multicast address. */
static void all_nodes(struct in6_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->s6_addr[0] = 0xff;
	a->s6_addr[1] = 0x02;
	a->s6_addr[15] = 1;
}

/* ndp_opts_ok() - walk options [o, o+len): each has a non-zero length
 * that fits. *has_slla tells whether a source link-layer option is
 * present. */
static bool ndp_opts_ok(const uint8_t *o, size_t len, bool *has_slla)
{
	size_t i = 0;

	*has_slla = false;
	while (i < len) {
		size_t olen;

		if (len - i < 2)
			return false;
		olen = (size_t)o[i + NDOPT_OFF_LEN] * NDOPT_UNIT;
		if (!olen || olen > len - i)
			return false;
		if (o[i + NDOPT_OFF_TYPE] == OPT_SLLA)
			*has_slla = true;
		i += olen;
	}
	return true;
}

/* send_to() - queue ICMPv6 message m (len bytes) from src to dst, to
 * the group MAC when dst is multicast. */
static enum drop_reason send_to(struct ctx *c, const struct in6_addr *src,
				const struct in6_addr *dst, const void *m,
				size_t len)
{
	uint8_t mac[6] = { 0 };
	bool mc = in6_is_mcast(dst);

	if (mc)
		mcast_mac(dst, mac);
	if (!tap_send_ip6_mac(c, mc ? mac : NULL, src, dst, IPPROTO_ICMPV6,
			      m, len))
		return DROP_TX_FULL;
	return DROP_NONE;
}

/* ra_dns() - RDNSS option at b (room for it assumed); returns length. */
static size_t ra_dns(const struct conf *cf, uint8_t *b)
{
	size_t n = NDOPT_OFF_LIST;
	int i;

	for (i = 0; i < cf->ip6.dns_count && i < CONF_MAX_DNS; i++) {
		if (in6_is_unspec(&cf->ip6.dns[i]))
			continue;
		memcpy(b + n, &cf->ip6.dns[i], 16);
		n += 16;
	}
	if (n == NDOPT_OFF_LIST)
		return 0;
	ndopt_put(b, OPT_RDNSS, n);
	wr16(b + NDOPT_OFF_RESERVED, 0);
	wr32(b + NDOPT_OFF_LIFETIME, NDP_INFINITE);
	return n;
}

/* ra_search() - DNSSL option at b, at most room bytes; returns length. */
static size_t ra_search(const struct conf *cf, uint8_t *b, size_t room)
{
	size_t n, names;
	uint8_t *list = b + NDOPT_OFF_LIST;

	room = MIN(room, 255u * NDOPT_UNIT);
	if (room < 2 * NDOPT_UNIT ||
	    !(names = dns_names_put(list, room - NDOPT_OFF_LIST -
					  (NDOPT_UNIT - 1), cf)))
		return 0;
	n = ROUND_UP(NDOPT_OFF_LIST + names, NDOPT_UNIT);
	memset(list + names, 0, n - NDOPT_OFF_LIST - names);	/* padding */
	ndopt_put(b, OPT_DNSSL, n);
	wr16(b + NDOPT_OFF_RESERVED, 0);
	wr32(b + NDOPT_OFF_LIFETIME, NDP_INFINITE);
	return n;
}

/* ra_build() - our Router Advertisement at b (RA_BUF bytes); returns its
 * length. */
static size_t ra_build(const struct ctx *c, uint8_t *b)
{
	const struct conf *cf = &c->conf;
	size_t n = NDP_RA_LEN;
	uint8_t *o;

	memset(b, 0, RA_BUF);
	b[ICMP_OFF_TYPE] = NDP_RA;
	b[NDP_OFF_RA_HOPLIMIT] = RA_HOPLIMIT;
	b[NDP_OFF_RA_FLAGS] = cf->no_dhcpv6 ? 0 : RA_MANAGED | RA_OTHER;
	wr16(b + NDP_OFF_RA_LIFETIME, RA_LIFETIME);
	/* reachable time, retrans timer: 0, unspecified */
	ndopt_put(b + n, OPT_SLLA, NDOPT_UNIT);
	memcpy(b + n + NDOPT_OFF_LLADDR, cf->our_mac, 6);
	n += NDOPT_UNIT;
	if (cf->mtu >= 1280) {
		ndopt_put(b + n, OPT_MTU, NDOPT_UNIT);
		wr32(b + n + NDOPT_OFF_MTU, cf->mtu);
		n += NDOPT_UNIT;
	}
	if (!in6_is_unspec(&cf->ip6.addr)) {
		o = b + n;
		ndopt_put(o, OPT_PREFIX, NDOPT_PFX_LEN);
		o[NDOPT_OFF_PFX_LEN] = 64;
		o[NDOPT_OFF_PFX_FLAGS] = PFX_ONLINK | PFX_AUTO;
		wr32(o + NDOPT_OFF_PFX_VALID, NDP_INFINITE);
		wr32(o + NDOPT_OFF_PFX_PREF, NDP_INFINITE);
		memcpy(o + NDOPT_OFF_PFX, &cf->ip6.addr, 8);
		n += NDOPT_PFX_LEN;
	}
	if (!cf->no_dhcp_dns)
		n += ra_dns(cf, b + n);
	if (!cf->no_dhcp_search)
		n += ra_search(cf, b + n, RA_BUF - n);
	return n;
}

/* ra_send() - one Router Advertisement to dst. */
static enum drop_reason ra_send(struct ctx *c, const struct in6_addr *dst)
{
	uint8_t b[RA_BUF];
	struct in6_addr src;
	size_t n = ra_build(c, b);

	ndp_router_ll(c, &src);
	return send_to(c, &src, dst, b, n);
}

/* is_guest_addr() - one of the guest's own addresses? */
static bool is_guest_addr(const struct ctx *c, const struct in6_addr *a)
{
	return in6_eq(a, &c->conf.ip6.addr) || in6_eq(a, &c->guest_ll6) ||
	       in6_eq(a, &c->guest_seen6);
}

/* is_solicited_node() - ff02::1:ffXX:XXXX for target t? */
static bool is_solicited_node(const struct in6_addr *a,
			      const struct in6_addr *t)
{
	static const uint8_t pfx[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0,
					 0, 1, 0xff };

	return !memcmp(a->s6_addr, pfx, 13) &&
	       !memcmp(a->s6_addr + 13, t->s6_addr + 13, 3);
}

/* ndp_ns() - Neighbour Solicitation (validated fixed part and options):
 * advertise our MAC for the target unless it is the guest's. */
static enum drop_reason ndp_ns(struct ctx *c, const struct pkt *p,
			       bool has_slla)
{
	bool dad = in6_is_unspec(&p->src6);
	struct in6_addr t, ll, dst;
	uint8_t na[NDP_NS_LEN + NDOPT_UNIT], mac[6];
	bool real;

	memcpy(&t, p->l4 + NDP_OFF_TARGET, 16);
	if (in6_is_mcast(&t))
		return DROP_NDP_MALFORMED;
	if (dad && (has_slla || !is_solicited_node(&p->dst6, &t)))
		return DROP_NDP_MALFORMED;
	ndp_router_ll(c, &ll);
	if (in6_is_unspec(&t) || IN6_IS_ADDR_LOOPBACK(&t) ||
	    is_guest_addr(c, &t) || in6_eq(&t, &p->src6))
		return DROP_NDP_IGNORED;
	if (IN6_IS_ADDR_LINKLOCAL(&t) && !in6_eq(&t, &ll))
		return DROP_NDP_IGNORED;
	if (dad && !in6_eq(&t, &ll))
		return DROP_NDP_IGNORED;	/* the guest's tentative address */

	real = !dad && neigh_mac(c, AF_INET6, &t, mac);
	memset(na, 0, sizeof(na));
	na[ICMP_OFF_TYPE] = NDP_NA;
	na[NDP_OFF_NA_FLAGS] = (real ? 0 : NA_ROUTER) | NA_OVERRIDE |
			       (dad ? 0 : NA_SOLICITED);
	memcpy(na + NDP_OFF_TARGET, &t, 16);
	ndopt_put(na + NDP_NS_LEN, OPT_TLLA, NDOPT_UNIT);
	memcpy(na + NDP_NS_LEN + NDOPT_OFF_LLADDR,
	       real ? mac : c->conf.our_mac, 6);
	if (dad)
		all_nodes(&dst);
	else
		dst = p->src6;
	return send_to(c, &t, &dst, na, sizeof(na));
}

void ndp_announce(struct ctx *c)
{
	uint8_t na[NDP_NS_LEN + NDOPT_UNIT];
	struct in6_addr ll, dst;
	enum drop_reason r;

	ndp_router_ll(c, &ll);
	all_nodes(&dst);
	memset(na, 0, sizeof(na));
	na[ICMP_OFF_TYPE] = NDP_NA;
	na[NDP_OFF_NA_FLAGS] = NA_ROUTER | NA_OVERRIDE;	/* unsolicited */
	memcpy(na + NDP_OFF_TARGET, &ll, 16);
	ndopt_put(na + NDP_NS_LEN, OPT_TLLA, NDOPT_UNIT);
	memcpy(na + NDP_NS_LEN + NDOPT_OFF_LLADDR, c->conf.our_mac, 6);
	if ((r = send_to(c, &ll, &dst, na, sizeof(na))) != DROP_NONE)
		drop(c, r);
}

/* ndp_rs() - Router Solicitation: answer with an RA. */
static enum drop_reason ndp_rs(struct ctx *c, const struct pkt *p,
			       bool has_slla)
{
	struct in6_addr dst;

	if (in6_is_unspec(&p->src6)) {
		if (has_slla)
			return DROP_NDP_MALFORMED;
		all_nodes(&dst);
	} else {
		dst = p->src6;
	}
	if (c->conf.no_ra)
		return DROP_SERVICE_DISABLED;
	return ra_send(c, &dst);
}

enum drop_reason ndp_input(struct ctx *c, const struct pkt *p)
{
	size_t fixed;
	bool slla;

	if (p->ttl != 255)
		return DROP_NDP_HOPLIMIT;
	if (p->icmp.code != 0)
		return DROP_NDP_MALFORMED;
	switch (p->icmp.type) {
	case NDP_RS:
		fixed = NDP_RS_LEN;
		break;
	case NDP_RA:
		fixed = NDP_RA_LEN;
		break;
	case NDP_NS:
	case NDP_NA:
		fixed = NDP_NS_LEN;
		break;
	default:			/* redirect */
		fixed = NDP_REDIRECT_LEN;
		break;
	}
	if (p->l4len < fixed ||
	    !ndp_opts_ok(p->l4 + fixed, p->l4len - fixed, &slla))
		return DROP_NDP_MALFORMED;
	if (p->icmp.type == NDP_NS)
		return ndp_ns(c, p, slla);
	if (p->icmp.type == NDP_RS)
		return ndp_rs(c, p, slla);
	return DROP_NDP_IGNORED;	/* RA, NA, redirect from the guest */
}

void ndp_init(struct ctx *c)
{
	memset(&c->ndp, 0, sizeof(c->ndp));
	timer_request(c, 0);
}

/* ra_interval() - delay before the next unsolicited RA, given how many
 * went out since the link came up. */
static int64_t ra_interval(unsigned int sent)
{
	uint32_t r;

	if (sent <= RA_INITIAL_N)
		return 1000LL << (sent - 1);	/* 1, 2, 4 s */
	random_bytes(&r, sizeof(r));
	return RA_MIN_MS + r % (RA_MAX_MS - RA_MIN_MS + 1);
}

void ndp_timer(struct ctx *c)
{
	struct ndp_state *s = &c->ndp;
	struct in6_addr dst;
	int64_t left;

	if (c->conf.no_ndp || c->conf.no_ra || !c->conf.ip6.enabled)
		return;
	if (!c->link.up) {
		s->ra_sent = 0;
		timer_request(c, RA_DOWN_POLL_MS);
		return;
	}
	if (!s->ra_sent)
		s->ra_next = c->now;
	left = ts_ms_diff(&s->ra_next, &c->now);
	if (left <= 0) {
		all_nodes(&dst);
		if (ra_send(c, &dst) == DROP_NONE)
			debug("NDP: unsolicited router advertisement");
		s->ra_sent++;
		left = ra_interval(s->ra_sent);
		s->ra_next = ts_add_ms(c->now, left);
	}
	timer_request(c, left);
}
