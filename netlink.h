/* netlink.h - a small rtnetlink client (see netlink.c). */
#ifndef FERRY_NETLINK_H
#define FERRY_NETLINK_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>

/* One host address, as nl_addr_dump() reports it. */
struct nl_addr {
	uint8_t addr[16];		/* struct in_addr or in6_addr bytes */
	uint8_t prefix_len;		/* checked: at most 32 or 128 */
	uint32_t flags;			/* IFA_F_* */
};

/* One neighbour of the host, as nl_neigh_dump() reports it. */
struct nl_neigh {
	uint8_t addr[16];		/* struct in_addr or in6_addr bytes */
	uint8_t mac[6];			/* unicast, not all zero */
};

/* One unicast route of the main table, as nl_route_dump() reports it and
 * nl_route_add() takes it. All-zero gw or prefsrc means "none". */
struct nl_route {
	uint8_t dst[16];
	uint8_t gw[16];			/* next hop; zero: a device route */
	uint8_t prefsrc[16];		/* preferred source; zero: none */
	uint8_t dst_len;		/* checked: at most 32 or 128 */
	uint8_t protocol;		/* RTPROT_*, 0: RTPROT_BOOT on add */
	uint8_t scope;			/* RT_SCOPE_* */
	bool onlink;			/* RTNH_F_ONLINK: gateway on the link */
	uint32_t metric;		/* RTA_PRIORITY, 0: none */
};

/* nl_open() - a NETLINK_ROUTE socket bound in the caller's current network
 * namespace (it stays bound there). Returns the fd or -errno. */
int nl_open(void);

/* nl_default_route() - the first default route of family (AF_INET or
 * AF_INET6) in the main table; if oif is non-zero only routes leaving
 * through that interface count. On success *ifindex is the output
 * interface and gw (struct in_addr / in6_addr) the gateway, or all zero
 * for a device route. For a multipath route, the next hop with the
 * highest weight. Returns 0, -ENOENT if there is none, or -errno. */
int nl_default_route(int fd, int family, unsigned int oif,
		     unsigned int *ifindex, void *gw);

/* nl_link_get() - name, MTU and MAC address (any may be NULL) of the
 * link ifindex. Returns 0 or -errno (-ENODEV if it does not exist). */
int nl_link_get(int fd, unsigned int ifindex, char name[IFNAMSIZ],
		unsigned int *mtu, uint8_t mac[6]);

/* nl_addr_get() - the first global-scope address of family on ifindex
 * (IPv6: not tentative, deprecated or temporary if another is there) and
 * its prefix length. Returns 0, -ENOENT if none, or -errno. */
int nl_addr_get(int fd, int family, unsigned int ifindex, void *addr,
		int *prefix_len);

/* nl_addr_dump() - the addresses of family on ifindex that a guest can
 * take over: global scope, not link-local (fe80::/10, 169.254.0.0/16),
 * not failed duplicate address detection; IPv4 point-to-point: the local
 * end. The first max go into tab, in the kernel's order. Returns how many
 * there are in all (more than max: tab holds only the first max), or
 * -errno. */
int nl_addr_dump(int fd, int family, unsigned int ifindex,
		 struct nl_addr *tab, int max);

/* nl_route_dump() - the unicast routes of family in the main table that
 * leave through ifindex (multipath: through a next hop on ifindex, the
 * heaviest), except default routes, IPv6 link-local destinations and
 * source-specific routes. Bounded like nl_addr_dump(): returns the total,
 * or -errno. */
int nl_route_dump(int fd, int family, unsigned int ifindex,
		  struct nl_route *tab, int max);

/* nl_neigh_dump() - the usable neighbour entries of family on ifindex
 * (reachable, stale, delay, probe or permanent, with a 6-byte unicast
 * link-layer address): the first max into tab. Returns how many there
 * were (maybe more than max) or -errno. */
int nl_neigh_dump(int fd, int family, unsigned int ifindex,
		  struct nl_neigh *tab, int max);

/* nl_link_set() - set MAC (if mac), MTU (if mtu) and bring the link up
 * (if up). Returns 0 or -errno from the kernel's acknowledgement. */
int nl_link_set(int fd, unsigned int ifindex, const uint8_t *mac,
		unsigned int mtu, bool up);

/* nl_link_txqlen() - set the transmit queue length of a link (netlink
 * only needs CAP_NET_ADMIN in the link's namespace; the SIOCSIFTXQLEN
 * ioctl needs it in the initial one). Returns 0 or -errno. */
int nl_link_txqlen(int fd, unsigned int ifindex, unsigned int qlen);

/* nl_addr_add() - add addr/prefix_len (family AF_INET or AF_INET6) on
 * ifindex; IPv6 addresses are added without duplicate address detection
 * (ferry owns the link: nobody else can hold the address). Returns 0,
 * or -errno (-EEXIST if already there). */
int nl_addr_add(int fd, int family, unsigned int ifindex, const void *addr,
		int prefix_len);

/* nl_route_add() - add route r of family on ifindex in the main table
 * (exclusive create). Returns 0 or -errno (-EEXIST if already there). */
int nl_route_add(int fd, int family, unsigned int ifindex,
		 const struct nl_route *r);

/* nl_route_add_default() - default route of family via gw on ifindex.
 * IPv4 and global IPv6 gateways are marked on-link, so a gateway outside
 * the guest's prefix still works. Returns 0 or -errno. */
int nl_route_add_default(int fd, int family, unsigned int ifindex,
			 const void *gw);

#endif /* FERRY_NETLINK_H */
