/* neigh.c - the host's neighbour table, for ARP and NDP answers.
 *
 * Theory of operation: ferry answers every ARP request and neighbour
 * solicitation of the guest (arp.c, ndp.c). For an address on the host's
 * LAN (the template interface's prefix) that the host's kernel has a
 * neighbour entry for, the answer carries that neighbour's real MAC, as
 * upstream passt does since 2025-10: applications that look at MAC
 * addresses (licence checks, inventory, Wake-on-LAN tools) see real
 * hardware. Frames the guest then sends to that MAC still reach ferry:
 * the guest link is point to point, and ferry never filters on the
 * destination MAC. Everything else keeps ferry's MAC: the gateway and
 * the mapped addresses (they are ferry's, nat.c), addresses off the LAN,
 * and neighbours the host does not know.
 *
 * The table is a copy of the kernel's, read over rtnetlink (RTM_GETNEIGH
 * dump for the template interface, netlink.c nl_neigh_dump()): once at
 * start-up, then on a miss, at most every NEIGH_REFRESH_MS, so a guest
 * asking for an unknown address many times costs one dump a second, and
 * one that only asks for known ones none. Usable entries only
 * (reachable, stale, delay, probe, permanent; a unicast MAC); at most
 * NEIGH_MAX per family, the rest left out and counted. The socket is
 * opened at start-up in ferry's own network namespace, the host's, and
 * kept: the sandbox allows its two calls (netlink.c).
 */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ferry.h"
#include "log.h"
#include "neigh.h"
#include "util.h"

/* dump() - read the host's neighbours of family on its template
 * interface into the table (kept as it was if the dump fails). */
static void dump(struct ctx *c, int family)
{
	struct neigh_table *t = &c->neigh;
	bool v6 = family == AF_INET6;
	unsigned int ifi = v6 ? c->conf.ifindex6 : c->conf.ifindex4;
	int n;

	if (!ifi)
		return;
	n = nl_neigh_dump(t->nl_fd, family, ifi, v6 ? t->v6 : t->v4,
			  NEIGH_MAX);
	if (n < 0) {
		debug("neighbours: dump failed: %s", strerror(-n));
		return;
	}
	if (n > NEIGH_MAX)
		t->left_out = (uint64_t)(n - NEIGH_MAX);
	*(v6 ? &t->n6 : &t->n4) = MIN(n, NEIGH_MAX);
}

/* refresh() - dump both families again, unless that was done less than
 * NEIGH_REFRESH_MS ago; false if nothing was dumped. */
static bool refresh(struct ctx *c)
{
	struct neigh_table *t = &c->neigh;
	if (!t->on || (t->dumped && ts_ms_diff(&c->now, &t->dumped_at) <
					     NEIGH_REFRESH_MS))
		return false;
	t->dumps += t->dumped;
	t->dumped = true;
	t->dumped_at = c->now;
	dump(c, AF_INET);
	dump(c, AF_INET6);
	return true;
}

/* find() - the entry for addr (alen bytes) among n, or NULL. */
static const struct nl_neigh *find(const struct nl_neigh *tab, int n,
				   const void *addr, size_t alen)
{
	int i;

	for (i = 0; i < n; i++)
		if (!memcmp(tab[i].addr, addr, alen))
			return &tab[i];
	return NULL;
}

/* same_prefix() - do a and b (alen bytes) share their first plen bits? */
static bool same_prefix(const uint8_t *a, const uint8_t *b, size_t alen,
			int plen)
{
	size_t full = (size_t)plen / 8;
	uint8_t mask = (uint8_t)(0xff << (8 - plen % 8));

	if (plen < 0 || full > alen || (full == alen && plen % 8))
		return false;
	if (memcmp(a, b, full))
		return false;
	return !(plen % 8) || !((a[full] ^ b[full]) & mask);
}

/* on_lan() - is addr a plain neighbour on the host's LAN: inside the
 * template's prefix, not the host's own address, not an address ferry
 * stands for itself (gateway, mapped, DNS forwarding)? */
static bool on_lan(const struct ctx *c, int family, const void *addr)
{
	if (family == AF_INET) {
		const struct conf_ip4 *ip = &c->conf.ip4;
		const struct in_addr *own[] = { &ip->host_addr, &ip->gw,
						&ip->map_host_lo, &ip->map_guest,
						&ip->dns_fwd, &ip->addr };
		size_t i;

		if (in4_is_unspec(&ip->host_addr))
			return false;
		for (i = 0; i < ARRAY_SIZE(own); i++)
			if (!memcmp(addr, own[i], 4))
				return false;
		return same_prefix(addr, (const uint8_t *)&ip->host_addr, 4,
				   ip->prefix_len);
	}
	const struct conf_ip6 *ip6 = &c->conf.ip6;
	const struct in6_addr *own6[] = { &ip6->host_addr, &ip6->gw,
					  &ip6->map_host_lo, &ip6->map_guest,
					  &ip6->dns_fwd, &ip6->addr };
	size_t i;

	if (in6_is_unspec(&ip6->host_addr))
		return false;
	for (i = 0; i < ARRAY_SIZE(own6); i++)
		if (!memcmp(addr, own6[i], 16))
			return false;
	return same_prefix(addr, ip6->host_addr.s6_addr, 16, ip6->prefix_len);
}

bool neigh_mac(struct ctx *c, int family, const void *addr, uint8_t mac[6])
{
	struct neigh_table *t = &c->neigh;
	bool v6 = family == AF_INET6;
	size_t alen = v6 ? 16 : 4;
	const struct nl_neigh *e;

	if (!t->on || !on_lan(c, family, addr))
		return false;
	if (!t->dumped)
		refresh(c);
	e = find(v6 ? t->v6 : t->v4, v6 ? t->n6 : t->n4, addr, alen);
	if (!e && refresh(c))
		e = find(v6 ? t->v6 : t->v4, v6 ? t->n6 : t->n4, addr, alen);
	if (!e)
		return false;
	memcpy(mac, e->mac, 6);
	t->answered++;
	return true;
}

void neigh_init(struct ctx *c)
{
	struct neigh_table *t = &c->neigh;
	int fd = nl_open();

	if (fd < 0) {
		info("neighbours: no rtnetlink socket (%s): ARP and NDP "
		     "answer with ferry's MAC only", strerror(-fd));
		return;
	}
	t->nl_fd = fd;
	t->on = true;
	refresh(c);
}
