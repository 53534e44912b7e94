/* hostconf.c - host-derived configuration: conf_derive().
 *
 * Theory of operation: after the command line is parsed, whatever it left
 * unset is taken from the host, per address family, over rtnetlink in
 * ferry's own (host) network namespace:
 *
 *   template interface  -i (or --outbound-if4/6), else the interface of
 *                       the first default route
 *   guest address       -a, else the template's first global address
 *   prefix length       -n, else the template address's prefix (IPv4:
 *                       the classful length if -a is outside it; IPv6: 64)
 *   gateway             -g, else the host's own default gateway (no NAT:
 *                       the guest sees the host's addresses and router)
 *
 * With --config-net in ns mode the guest also gets copies, as pasta
 * documents: every other address of the template interface (global scope,
 * not link-local, not failed DAD; each with its prefix length) unless
 * --no-copy-addrs or -a for that family, and every route through the
 * template (main table, unicast, other than the default route, which is
 * the gateway above, and IPv6 link-local destinations) unless
 * --no-copy-routes or -g for that family. Routes keep destination,
 * gateway, metric, protocol and scope; the output interface becomes the
 * tap; a preferred source the guest does not hold is dropped. The tables
 * are bounded (CONF_MAX_ADDRS, CONF_MAX_ROUTES per family): what does not
 * fit is left out with a warning. Reading them is best effort: a failed
 * dump only costs the copies, with a warning.
 *
 * The IPv6 gateway is the host's, as pasta copies it: link-local stays
 * link-local (as usual with router advertisements), a global one is used
 * as given (the --config-net default route goes through it, onlink), and
 * podman's checks find the container's default route equal to the host's.
 * Without a usable host gateway (no default route, or one with no
 * gateway) it is ferry's own fe80::1. Router advertisements must come
 * from a link-local address (RFC 4861, 6.1.2): with a global gateway they
 * come from fe80::1 (ndp_router_ll()), which maps like the gateway
 * (nat.c), so a guest routing by RA reaches the same places.
 *
 * With no default route (or no address) for a family, ferry falls back to
 * "local mode": IPv4 169.254.2.1/16 with gateway 169.254.2.2, IPv6 link-
 * local only with router fe80::1. It says so on stderr.
 *
 * With --splice-only there is no guest interface: the values are derived
 * all the same (the rest of ferry expects them) but announced only at
 * debug level, and no local mode is warned about: the namespace has
 * only its loopback, and ns.c says so.
 *
 * The link MTU is not copied from the host: the guest default stays the
 * parser's (65520). Nameservers and the search list come from
 * /etc/resolv.conf unless given; loopback nameservers are recorded as they
 * are (the DNS forwarding code decides how to reach them).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "conf.h"
#include "log.h"
#include "netlink.h"
#include "util.h"

/* seccomp(setup): brk close ioctl mmap munmap newfstatat openat read socket */
/* seccomp(setup): write */

#define RESOLV_CONF	"/etc/resolv.conf"

/* classful_prefix() - RFC 4632 era default for an IPv4 address without a
 * matching host prefix: A /8, B /16, C and above /24. */
static int classful_prefix(struct in_addr a)
{
	uint32_t h = ntohl(a.s_addr);

	if (!(h & 0x80000000u))
		return 8;
	if ((h & 0xc0000000u) == 0x80000000u)
		return 16;
	return 24;
}

/* same_net4() - a and b share the first len bits. */
static bool same_net4(struct in_addr a, struct in_addr b, int len)
{
	uint32_t mask = len ? htonl(~0u << (32 - len)) : 0;

	return !((a.s_addr ^ b.s_addr) & mask);
}

/* template_if() - pick the template interface for family: the one named
 * in name (-i; filled in when empty), else the default route's. Sets
 * *ifindex and gw (zero for none). Returns 0, or -ENOENT when no
 * default route exists (and no interface was named). */
static int template_if(int nl, int family, char name[IFNAMSIZ],
		       unsigned int *ifindex, void *gw)
{
	size_t alen = family == AF_INET ? 4 : 16;
	int rc;

	memset(gw, 0, alen);
	if (name[0]) {
		*ifindex = if_nametoindex(name);
		if (!*ifindex)
			die("interface %s: %s", name, strerror(errno));
		rc = nl_default_route(nl, family, *ifindex, ifindex, gw);
		if (rc && rc != -ENOENT)
			die("cannot read routes: %s", strerror(-rc));
		return 0;
	}
	rc = nl_default_route(nl, family, 0, ifindex, gw);
	if (rc == -ENOENT)
		return rc;
	if (rc)
		die("cannot read routes: %s", strerror(-rc));
	rc = nl_link_get(nl, *ifindex, name, NULL, NULL);
	if (rc)
		die("cannot read link %u: %s", *ifindex, strerror(-rc));
	return 0;
}

/* holds_addr() - is a (family's size) the guest's primary or one of the
 * copied addresses? */
static bool holds_addr(int family, const struct conf_copied *cp,
		       const void *primary, const uint8_t *a)
{
	size_t alen = family == AF_INET ? 4 : 16;
	int i;

	if (!memcmp(a, primary, alen))
		return true;
	for (i = 0; i < cp->addr_count; i++)
		if (!memcmp(a, cp->addrs[i].addr, alen))
			return true;
	return false;
}

/* copy_addrs() - the template's addresses other than primary into cp,
 * up to CONF_MAX_ADDRS (a warning says how many did not fit). */
static void copy_addrs(int nl, int family, unsigned int ifindex,
		       const char *ifname, const void *primary,
		       struct conf_copied *cp)
{
	struct nl_addr tab[CONF_MAX_ADDRS + 1];
	size_t alen = family == AF_INET ? 4 : 16;
	int i, n, others;

	n = nl_addr_dump(nl, family, ifindex, tab, (int)ARRAY_SIZE(tab));
	if (n < 0) {
		warn("cannot read the addresses of %s: %s: copying none",
		     ifname, strerror(-n));
		return;
	}
	others = n;
	for (i = 0; i < MIN(n, (int)ARRAY_SIZE(tab)); i++) {
		if (!memcmp(tab[i].addr, primary, alen))
			others--;
		else if (cp->addr_count < CONF_MAX_ADDRS)
			cp->addrs[cp->addr_count++] = tab[i];
	}
	if (others > cp->addr_count)
		warn("%s has %d more IPv%c addresses: copying only %d", ifname,
		     others, family == AF_INET ? '4' : '6', cp->addr_count);
}

/* copy_routes() - the template's routes into cp, up to CONF_MAX_ROUTES,
 * without preferred sources the guest will not hold. */
static void copy_routes(int nl, int family, unsigned int ifindex,
			const char *ifname, const void *primary,
			struct conf_copied *cp)
{
	int i, n;

	n = nl_route_dump(nl, family, ifindex, cp->routes, CONF_MAX_ROUTES);
	if (n < 0) {
		warn("cannot read the routes of %s: %s: copying none", ifname,
		     strerror(-n));
		return;
	}
	cp->route_count = MIN(n, CONF_MAX_ROUTES);
	if (n > CONF_MAX_ROUTES)
		warn("%s has %d IPv%c routes: copying only %d", ifname, n,
		     family == AF_INET ? '4' : '6', CONF_MAX_ROUTES);
	for (i = 0; i < cp->route_count; i++) {
		struct nl_route *r = &cp->routes[i];

		if (!holds_addr(family, cp, primary, r->prefsrc))
			memset(r->prefsrc, 0, sizeof(r->prefsrc));
	}
}

/* copy_host() - what --config-net copies besides address and default
 * route (see top), into cp; logs the result. */
static void copy_host(const struct conf *c, int nl, int family,
		      const void *primary, bool addrs, bool routes,
		      struct conf_copied *cp)
{
	unsigned int ifindex = family == AF_INET ? c->ifindex4 : c->ifindex6;
	const char *ifname = family == AF_INET ? c->ifname4 : c->ifname6;

	memset(cp, 0, sizeof(*cp));
	if (c->mode != MODE_NS || !c->config_net)
		return;
	if (addrs)
		copy_addrs(nl, family, ifindex, ifname, primary, cp);
	if (routes)
		copy_routes(nl, family, ifindex, ifname, primary, cp);
	info("IPv%c: copying %d more addresses%s and %d routes%s from %s",
	     family == AF_INET ? '4' : '6', cp->addr_count,
	     addrs ? "" : " (not asked)", cp->route_count,
	     routes ? "" : " (not asked)", ifname);
}

/* derived_lvl() - the level of the lines announcing what was derived:
 * lvl, or debug where there is no guest interface (--splice-only). */
static enum log_level derived_lvl(const struct conf *c, enum log_level lvl)
{
	return c->splice_only ? LOG_LVL_DEBUG : lvl;
}

/* derive_ip4() - IPv4 guest defaults (see top). */
static void derive_ip4(struct conf *c, int nl)
{
	struct conf_ip4 *ip = &c->ip4;
	char a[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
	struct in_addr gw, host;
	int plen = 0;

	/* As pasta: -a and -g stand for the copies of their family. */
	ip->no_copy_addrs |= !in4_is_unspec(&ip->addr);
	ip->no_copy_routes |= !in4_is_unspec(&ip->gw);
	if (!template_if(nl, AF_INET, c->ifname4, &c->ifindex4, &gw) &&
	    !nl_addr_get(nl, AF_INET, c->ifindex4, &host, &plen)) {
		ip->host_addr = host;
		if (in4_is_unspec(&ip->addr))
			ip->addr = host;
		if (!ip->prefix_len)
			ip->prefix_len = same_net4(ip->addr, host, plen) ?
					 plen : classful_prefix(ip->addr);
		if (in4_is_unspec(&ip->gw))
			ip->gw = gw;
		inet_ntop(AF_INET, &ip->addr, a, sizeof(a));
		inet_ntop(AF_INET, &ip->gw, g, sizeof(g));
		log_msg(derived_lvl(c, LOG_LVL_INFO), "IPv4: template "
		        "interface %s, address %s/%d, gateway %s", c->ifname4,
		        a, ip->prefix_len, g);
		copy_host(c, nl, AF_INET, &ip->addr, !ip->no_copy_addrs,
			  !ip->no_copy_routes, &ip->copied);
		return;
	}
	c->local_mode = true;
	if (in4_is_unspec(&ip->addr))
		inet_pton(AF_INET, "169.254.2.1", &ip->addr);
	if (!ip->prefix_len)
		ip->prefix_len = 16;
	if (in4_is_unspec(&ip->gw))
		inet_pton(AF_INET, "169.254.2.2", &ip->gw);
	inet_ntop(AF_INET, &ip->addr, a, sizeof(a));
	inet_ntop(AF_INET, &ip->gw, g, sizeof(g));
	log_msg(derived_lvl(c, LOG_LVL_WARN), "IPv4: no default route or "
	        "address on the host: local mode, address %s/%d, gateway %s",
	        a, ip->prefix_len, g);
}

/* derive_ip6() - IPv6 guest defaults (see top). */
static void derive_ip6(struct conf *c, int nl)
{
	struct conf_ip6 *ip = &c->ip6;
	char a[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];
	struct in6_addr gw, host;
	int plen = 0;
	bool ok;

	ip->no_copy_addrs |= !in6_is_unspec(&ip->addr);
	ip->no_copy_routes |= !in6_is_unspec(&ip->gw);
	ok = !template_if(nl, AF_INET6, c->ifname6, &c->ifindex6, &gw) &&
	     !nl_addr_get(nl, AF_INET6, c->ifindex6, &host, &plen);
	if (in6_is_unspec(&ip->gw)) {
		if (ok && !in6_is_unspec(&gw))
			ip->gw = gw;
		else
			inet_pton(AF_INET6, "fe80::1", &ip->gw);
	}
	if (!ok) {
		c->local_mode = true;
		if (!ip->prefix_len)
			ip->prefix_len = 64;
		inet_ntop(AF_INET6, &ip->gw, g, sizeof(g));
		log_msg(derived_lvl(c, LOG_LVL_WARN), "IPv6: no default route "
		        "or global address on the host: local mode, link-local "
		        "only, router %s", g);
		return;
	}
	ip->host_addr = host;
	if (in6_is_unspec(&ip->addr))
		ip->addr = host;
	if (!ip->prefix_len)
		ip->prefix_len = in6_eq(&ip->addr, &host) ? plen : 64;
	inet_ntop(AF_INET6, &ip->addr, a, sizeof(a));
	inet_ntop(AF_INET6, &ip->gw, g, sizeof(g));
	log_msg(derived_lvl(c, LOG_LVL_INFO), "IPv6: template interface %s, "
	        "address %s/%d, router %s", c->ifname6, a, ip->prefix_len, g);
	copy_host(c, nl, AF_INET6, &ip->addr, !ip->no_copy_addrs,
		  !ip->no_copy_routes, &ip->copied);
}

/* resolv_nameserver() - record one "nameserver" value (either family,
 * loopback included), up to CONF_MAX_DNS per family. */
static void resolv_nameserver(struct conf *c, const char *s)
{
	struct in_addr a4;
	struct in6_addr a6;
	char buf[INET6_ADDRSTRLEN + 16];
	char *pct;

	str_copy(buf, s, sizeof(buf));
	if ((pct = strchr(buf, '%')))		/* fe80::1%eth0: scope id */
		*pct = '\0';
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		if (c->ip4.dns_count < CONF_MAX_DNS)
			c->ip4.dns[c->ip4.dns_count++] = a4;
	} else if (inet_pton(AF_INET6, buf, &a6) == 1) {
		if (c->ip6.dns_count < CONF_MAX_DNS)
			c->ip6.dns[c->ip6.dns_count++] = a6;
	}
}

/* resolv_search() - replace the search list with the words after
 * "search" (the last search/domain line wins, as for the resolver). */
static void resolv_search(struct conf *c, char *rest)
{
	char *save = NULL, *w;

	c->search_count = 0;
	for (w = strtok_r(rest, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		if (c->search_count == CONF_MAX_SEARCH)
			break;
		if (str_copy(c->search[c->search_count], w, CONF_NAME_MAX))
			c->search_count++;
	}
}

/* derive_resolv() - nameservers and search list from path, for what the
 * command line did not give (-D/-S, or "none" for either). */
static void derive_resolv(struct conf *c, const char *path)
{
	bool want_dns = !c->no_dns && !c->ip4.dns_count && !c->ip6.dns_count;
	bool want_search = !c->no_search && !c->search_count;
	char line[1024];
	FILE *f;

	if ((!want_dns && !want_search) || !(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *key, *val;

		line[strcspn(line, "#;\r\n")] = '\0';
		key = strtok_r(line, " \t", &save);
		if (!key)
			continue;
		if (want_dns && !strcmp(key, "nameserver")) {
			if ((val = strtok_r(NULL, " \t", &save)))
				resolv_nameserver(c, val);
		} else if (want_search && (!strcmp(key, "search") ||
					   !strcmp(key, "domain"))) {
			resolv_search(c, save ? save : key + strlen(key));
		}
	}
	fclose(f);
	debug("resolv.conf: %d IPv4 and %d IPv6 nameservers, %d search "
	      "domains", c->ip4.dns_count, c->ip6.dns_count, c->search_count);
}

void conf_derive(struct conf *c)
{
	int nl = nl_open();

	if (nl < 0)
		die("cannot open a netlink socket: %s", strerror(-nl));
	/* --outbound-if4/6 name the template too, unless -i does. */
	if (!c->ifname4[0] && c->outbound_if4[0])
		str_copy(c->ifname4, c->outbound_if4, IFNAMSIZ);
	if (!c->ifname6[0] && c->outbound_if6[0])
		str_copy(c->ifname6, c->outbound_if6, IFNAMSIZ);
	if (c->ip4.enabled)
		derive_ip4(c, nl);
	if (c->ip6.enabled)
		derive_ip6(c, nl);
	close(nl);
	derive_resolv(c, RESOLV_CONF);
	if (c->mode == MODE_NS && !c->ns_ifname[0]) {
		const char *n = c->ifname4[0] ? c->ifname4 :
				c->ifname6[0] ? c->ifname6 : "tap0";

		str_copy(c->ns_ifname, n, sizeof(c->ns_ifname));
	}
}
