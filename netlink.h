/* netlink.h - a small rtnetlink client (see netlink.c). */
#ifndef FERRY_NETLINK_H
#define FERRY_NETLINK_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>

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

/* nl_link_set() - set MAC (if mac), MTU (if mtu) and bring the link up
 * (if up). Returns 0 or -errno from the kernel's acknowledgement. */
int nl_link_set(int fd, unsigned int ifindex, const uint8_t *mac,
		unsigned int mtu, bool up);

/* nl_addr_add() - add addr/prefix_len (family AF_INET or AF_INET6) on
 * ifindex; IPv6 addresses are added without duplicate address detection
 * (ferry owns the link: nobody else can hold the address). Returns 0,
 * or -errno (-EEXIST if already there). */
int nl_addr_add(int fd, int family, unsigned int ifindex, const void *addr,
		int prefix_len);

/* nl_route_add_default() - default route of family via gw on ifindex.
 * IPv4 and global IPv6 gateways are marked on-link, so a gateway outside
 * the guest's prefix still works. Returns 0 or -errno. */
int nl_route_add_default(int fd, int family, unsigned int ifindex,
			 const void *gw);

#endif /* FERRY_NETLINK_H */
