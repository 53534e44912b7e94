/* nat.c - address mapping between the guest's view and the host's.
 *
 * ferry does not NAT the guest's own address: the guest uses the host's
 * address, and host sockets carry its traffic. Three guest-side addresses
 * are special, per family (configured in struct conf, defaults set by
 * conf_derive()):
 *
 *   map_host_lo  (default: the gateway, unless --no-map-gw; or
 *                 --map-host-loopback ADDR)  <->  host loopback
 *                 (IPv6 with a global gateway: also the router's
 *                 link-local fe80::1, map_host_lo_ll, which the guest
 *                 learns from router advertisements; outbound only,
 *                 inbound the loopback shows as map_host_lo)
 *   map_guest    (--map-guest-addr ADDR)     <->  the host's own address
 *   dns_fwd      (--dns-forward ADDR)        <->  --dns-host (DNS issue)
 *
 * Outbound, a destination equal to one of them is rewritten to its host
 * counterpart; inbound, a peer address equal to a host counterpart is
 * shown to the guest as the special address. Everything else passes
 * unchanged. An unset special address (unspecified) never matches.
 */
#include "ferry.h"
#include "dns.h"
#include "nat.h"
#include "pkt.h"
#include "util.h"

/* v4_set() - is a configured (not 0.0.0.0)? */
static bool v4_set(struct in_addr a)
{
	return a.s_addr != INADDR_ANY;
}

void nat_init(struct ctx *c)
{
	struct conf *f = &c->conf;

	if (!f->no_map_gw) {
		if (!v4_set(f->ip4.map_host_lo))
			f->ip4.map_host_lo = f->ip4.gw;
		if (in6_is_unspec(&f->ip6.map_host_lo)) {
			f->ip6.map_host_lo = f->ip6.gw;
			if (!IN6_IS_ADDR_LINKLOCAL(&f->ip6.gw))
				inet_pton(AF_INET6, "fe80::1",
					  &f->ip6.map_host_lo_ll);
		}
	}
	dns_init(c);
}

static bool nat_out4(const struct ctx *c, struct in_addr *a)
{
	const struct conf_ip4 *ip = &c->conf.ip4;
	uint32_t h = ntohl(a->s_addr);

	if (v4_set(ip->map_host_lo) && in4_eq(a, &ip->map_host_lo)) {
		a->s_addr = htonl(INADDR_LOOPBACK);
		return true;
	}
	if (v4_set(ip->map_guest) && in4_eq(a, &ip->map_guest)) {
		*a = ip->host_addr;
		return true;
	}
	if (!h || (h >> 24) == 127 || in4_is_mcast_or_bcast(*a))
		return false;
	if (in4_eq(a, &ip->addr) || in4_eq(a, &c->guest_seen4))
		return false;
	return true;
}

static bool nat_out6(const struct ctx *c, struct in6_addr *a)
{
	const struct conf_ip6 *ip = &c->conf.ip6;

	if ((!in6_is_unspec(&ip->map_host_lo) && in6_eq(a, &ip->map_host_lo)) ||
	    (!in6_is_unspec(&ip->map_host_lo_ll) &&
	     in6_eq(a, &ip->map_host_lo_ll))) {
		*a = in6addr_loopback;
		return true;
	}
	if (!in6_is_unspec(&ip->map_guest) && in6_eq(a, &ip->map_guest)) {
		*a = ip->host_addr;
		return true;
	}
	if (in6_is_unspec(a) || IN6_IS_ADDR_LOOPBACK(a) || in6_is_mcast(a) ||
	    IN6_IS_ADDR_LINKLOCAL(a))
		return false;
	if (in6_eq(a, &ip->addr) || in6_eq(a, &c->guest_seen6))
		return false;
	return true;
}

bool nat_outbound(const struct ctx *c, union inany *dst)
{
	if (inany_is4(dst))
		return nat_out4(c, &dst->v4m.a4);
	return nat_out6(c, &dst->a6);
}

void nat_inbound(const struct ctx *c, union inany *src)
{
	if (inany_is4(src)) {
		const struct conf_ip4 *ip = &c->conf.ip4;
		struct in_addr *a = &src->v4m.a4;

		if ((ntohl(a->s_addr) >> 24) == 127 && v4_set(ip->map_host_lo))
			*a = ip->map_host_lo;
		else if (v4_set(ip->map_guest) && in4_eq(a, &ip->host_addr))
			*a = ip->map_guest;
		return;
	}
	const struct conf_ip6 *ip6 = &c->conf.ip6;

	if (IN6_IS_ADDR_LOOPBACK(&src->a6) && !in6_is_unspec(&ip6->map_host_lo))
		src->a6 = ip6->map_host_lo;
	else if (!in6_is_unspec(&ip6->map_guest) &&
		 in6_eq(&src->a6, &ip6->host_addr))
		src->a6 = ip6->map_guest;
}

/* dns_fwd_match() - is a the --dns-forward address (and set)? Fills the
 * --dns-host counterpart into *host. */
static bool dns_fwd_match(const struct ctx *c, const union inany *a,
			  union inany *host)
{
	if (inany_is4(a)) {
		const struct conf_ip4 *ip = &c->conf.ip4;

		if (!v4_set(ip->dns_fwd) || !v4_set(ip->dns_host) ||
		    !in4_eq(&a->v4m.a4, &ip->dns_fwd))
			return false;
		inany_from4(host, ip->dns_host);
		return true;
	}
	const struct conf_ip6 *ip6 = &c->conf.ip6;

	if (in6_is_unspec(&ip6->dns_fwd) || in6_is_unspec(&ip6->dns_host) ||
	    !in6_eq(&a->a6, &ip6->dns_fwd))
		return false;
	inany_from6(host, &ip6->dns_host);
	return true;
}

bool nat_outbound_l4(const struct ctx *c, union inany *dst, uint16_t dport)
{
	union inany host;

	if (dport == 53 && dns_fwd_match(c, dst, &host)) {
		*dst = host;
		return true;
	}
	return nat_outbound(c, dst);
}

void nat_inbound_l4(const struct ctx *c, union inany *src, uint16_t sport)
{
	if (sport == 53) {
		const struct conf_ip4 *ip = &c->conf.ip4;
		const struct conf_ip6 *ip6 = &c->conf.ip6;

		if (inany_is4(src) && v4_set(ip->dns_fwd) &&
		    v4_set(ip->dns_host) && in4_eq(&src->v4m.a4, &ip->dns_host)) {
			src->v4m.a4 = ip->dns_fwd;
			return;
		}
		if (!inany_is4(src) && !in6_is_unspec(&ip6->dns_fwd) &&
		    !in6_is_unspec(&ip6->dns_host) &&
		    in6_eq(&src->a6, &ip6->dns_host)) {
			src->a6 = ip6->dns_fwd;
			return;
		}
	}
	nat_inbound(c, src);
}

/* nat_guest_addr() - the guest's address for inbound flows from the guest-
 * side address seen: for a link-local one (the gateway fe80::1 standing
 * for host loopback) the guest's link-local address, which its replies
 * will come from (RFC 6724 source selection), else its global one. */
bool nat_guest_addr(const struct ctx *c, const union inany *seen,
		    union inany *a)
{
	bool v6 = !inany_is4(seen);

	if (!v6) {
		struct in_addr g = c->conf.ip4.addr;

		if (in4_is_unspec(&g))
			g = c->guest_seen4;
		inany_from4(a, g);
		return !in4_is_unspec(&g);
	}
	const struct in6_addr *g6 = &c->conf.ip6.addr;

	if (IN6_IS_ADDR_LINKLOCAL(&seen->a6) && !in6_is_unspec(&c->guest_ll6))
		g6 = &c->guest_ll6;
	if (in6_is_unspec(g6))
		g6 = &c->guest_seen6;
	if (in6_is_unspec(g6))
		g6 = &c->guest_ll6;
	inany_from6(a, g6);
	return !in6_is_unspec(g6);
}

bool nat_splice_dst(const struct ctx *c, bool v6, union inany *a)
{
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	if (c->conf.host_lo_to_ns_lo) {
		if (v6)
			inany_from6(a, &in6addr_loopback);
		else
			inany_from4(a, lo);
		return true;
	}
	if (v6) {
		const struct in6_addr *g = &c->conf.ip6.addr;

		if (in6_is_unspec(g))
			g = &c->guest_seen6;
		inany_from6(a, g);
		return !in6_is_unspec(g);
	}
	struct in_addr g4 = c->conf.ip4.addr;

	if (in4_is_unspec(&g4))
		g4 = c->guest_seen4;
	inany_from4(a, g4);
	return !in4_is_unspec(&g4);
}

/* nat_inbound_fwd() - how the guest sees a host-side client address:
 * mapped by nat_inbound_l4(); a loopback client that nothing maps, or one
 * using the address the guest shares with the host, appears as the
 * gateway (the guest would take either for a martian). */
union inany nat_inbound_fwd(const struct ctx *c, const union inany *peer,
			    uint16_t pport)
{
	union inany s = *peer;

	nat_inbound_l4(c, &s, pport);
	if (inany_is4(&s) && ((ntohl(s.v4m.a4.s_addr) >> 24) == 127 ||
			      in4_eq(&s.v4m.a4, &c->conf.ip4.addr)))
		inany_from4(&s, c->conf.ip4.gw);
	else if (!inany_is4(&s) && (IN6_IS_ADDR_LOOPBACK(&s.a6) ||
				    in6_eq(&s.a6, &c->conf.ip6.addr)))
		inany_from6(&s, &c->conf.ip6.gw);
	return s;
}
