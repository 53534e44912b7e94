/* dns.c - making the host's nameservers usable from the guest.
 *
 * Theory of operation: the guest learns its nameservers from ferry
 * (DHCP option 6, DHCPv6 DNS servers, NDP RDNSS), which advertises
 * conf.ip4.dns / conf.ip6.dns: by default the host's own resolvers from
 * /etc/resolv.conf (hostconf.c), or what -D gives. ferry has no resolver
 * of its own: DNS is ordinary UDP/TCP traffic through host sockets.
 *
 * A host resolver on a loopback address (systemd-resolved's 127.0.0.53,
 * a local dnsmasq on 127.0.0.1 or ::1) cannot be told to the guest as is:
 * the guest's loopback is its own. dns_init() replaces it with a
 * guest-side address that nat.c maps to it:
 *
 *   --dns-forward ADDR given   ADDR is advertised first; its port 53 goes
 *                              to --dns-host (default: the first host
 *                              nameserver, loopback or not)
 *   127.0.0.1 / ::1            the address mapped to host loopback (the
 *                              gateway, unless --no-map-gw): its port 53
 *                              already reaches the resolver
 *   other loopback (.53)       the same mapped address, made a DNS
 *                              forward address (dns_fwd := it, dns_host :=
 *                              the resolver): its port 53 reaches the
 *                              resolver, its other ports host loopback
 *   nothing to map to          the nameserver is left out, with a warning
 *
 * Non-loopback nameservers are advertised unchanged (the guest reaches
 * them like any other host). Duplicates created by the rewrite are
 * removed. The --dns-forward mapping itself lives in nat.c
 * (nat_outbound_l4()/nat_inbound_l4()), shared by UDP and TCP.
 *
 * Names in DNS wire format (RFC 1035 section 3.1, uncompressed) for the
 * services that tell the guest its domain and search list: DHCP options
 * 15 and 119, DHCPv6 option 24, NDP's DNSSL (dns_name_put(),
 * dns_names_put()).
 */
#include <arpa/inet.h>

#include "dns.h"
#include "ferry.h"
#include "log.h"
#include "util.h"

/* lo4() - is a in 127.0.0.0/8? */
static bool lo4(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

/* push4() - append a to list[*n] unless present or full. */
static void push4(struct in_addr *list, int *n, struct in_addr a)
{
	int i;

	for (i = 0; i < *n; i++)
		if (in4_eq(&list[i], &a))
			return;
	if (*n < CONF_MAX_DNS)
		list[(*n)++] = a;
}

/* push6() - append a to list[*n] unless present or full. */
static void push6(struct in6_addr *list, int *n, const struct in6_addr *a)
{
	int i;

	for (i = 0; i < *n; i++)
		if (in6_eq(&list[i], a))
			return;
	if (*n < CONF_MAX_DNS)
		list[(*n)++] = *a;
}

/* dns_init4() - the IPv4 rewrite (see the table above). */
static void dns_init4(struct conf_ip4 *ip)
{
	struct in_addr orig[CONF_MAX_DNS], out[CONF_MAX_DNS] = { 0 };
	int i, n = MIN(ip->dns_count, CONF_MAX_DNS), k = 0;
	char s[INET_ADDRSTRLEN], m[INET_ADDRSTRLEN];

	memcpy(orig, ip->dns, sizeof(orig));
	if (!in4_is_unspec(&ip->dns_fwd)) {
		if (in4_is_unspec(&ip->dns_host) && n)
			ip->dns_host = orig[0];
		push4(out, &k, ip->dns_fwd);
	}
	for (i = 0; i < n; i++) {
		struct in_addr a = orig[i], lo = { htonl(INADDR_LOOPBACK) };

		inet_ntop(AF_INET, &a, s, sizeof(s));
		if (!in4_is_unspec(&ip->dns_fwd) && in4_eq(&a, &ip->dns_host))
			continue;		/* advertised as dns_fwd */
		if (!lo4(a)) {
			push4(out, &k, a);
			continue;
		}
		if (in4_is_unspec(&ip->map_host_lo)) {
			warn("DNS: host nameserver %s is a loopback address and "
			     "nothing maps to host loopback: not advertised", s);
			continue;
		}
		if (!in4_eq(&a, &lo)) {
			if (!in4_is_unspec(&ip->dns_fwd)) {
				warn("DNS: host nameserver %s not advertised "
				     "(DNS forwarding already in use)", s);
				continue;
			}
			ip->dns_fwd = ip->map_host_lo;
			ip->dns_host = a;
		}
		inet_ntop(AF_INET, &ip->map_host_lo, m, sizeof(m));
		info("DNS: host nameserver %s is loopback: advertising %s", s, m);
		push4(out, &k, ip->map_host_lo);
	}
	memcpy(ip->dns, out, sizeof(out));
	ip->dns_count = k;
}

/* dns_init6() - the IPv6 rewrite: only ::1 is loopback (v4-mapped
 * loopback in resolv.conf is not a thing). */
static void dns_init6(struct conf_ip6 *ip)
{
	struct in6_addr orig[CONF_MAX_DNS], out[CONF_MAX_DNS] = { 0 };
	int i, n = MIN(ip->dns_count, CONF_MAX_DNS), k = 0;
	char s[INET6_ADDRSTRLEN], m[INET6_ADDRSTRLEN];

	memcpy(orig, ip->dns, sizeof(orig));
	if (!in6_is_unspec(&ip->dns_fwd)) {
		if (in6_is_unspec(&ip->dns_host) && n)
			ip->dns_host = orig[0];
		push6(out, &k, &ip->dns_fwd);
	}
	for (i = 0; i < n; i++) {
		const struct in6_addr *a = &orig[i];

		inet_ntop(AF_INET6, a, s, sizeof(s));
		if (!in6_is_unspec(&ip->dns_fwd) && in6_eq(a, &ip->dns_host))
			continue;
		if (!IN6_IS_ADDR_LOOPBACK(a)) {
			push6(out, &k, a);
			continue;
		}
		if (in6_is_unspec(&ip->map_host_lo)) {
			warn("DNS: host nameserver %s is a loopback address and "
			     "nothing maps to host loopback: not advertised", s);
			continue;
		}
		inet_ntop(AF_INET6, &ip->map_host_lo, m, sizeof(m));
		info("DNS: host nameserver %s is loopback: advertising %s", s, m);
		push6(out, &k, &ip->map_host_lo);
	}
	memcpy(ip->dns, out, sizeof(out));
	ip->dns_count = k;
}

void dns_init(struct ctx *c)
{
	dns_init4(&c->conf.ip4);
	dns_init6(&c->conf.ip6);
}

size_t dns_name_put(uint8_t *out, size_t room, const char *name)
{
	size_t n = 0, start = 0, i, len = strlen(name);

	if (len && name[len - 1] == '.')
		len--;
	if (!len || len > 253)
		return 0;
	for (i = 0; i <= len; i++) {
		size_t label = i - start;

		if (i < len && name[i] != '.')
			continue;
		if (!label || label > 63 || n + 1 + label + 1 > room)
			return 0;
		out[n++] = (uint8_t)label;
		memcpy(out + n, name + start, label);
		n += label;
		start = i + 1;
	}
	out[n++] = 0;
	return n;
}

size_t dns_names_put(uint8_t *out, size_t room, const struct conf *cf)
{
	size_t n = 0;
	int i;

	for (i = 0; i < cf->search_count && i < CONF_MAX_SEARCH; i++)
		n += dns_name_put(out + n, room - n, cf->search[i]);
	return n;
}
