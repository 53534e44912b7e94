/* nat.h - see nat.c: the guest's view of addresses vs. the host's. */
#ifndef FERRY_NAT_H
#define FERRY_NAT_H

#include <stdbool.h>
#include "flow.h"

struct ctx;

/* nat_init() - complete the mapping defaults after conf_derive(): unless
 * --no-map-gw or --map-host-loopback, the gateway maps to host loopback.
 * Then dns_init() (dns.c) makes loopback host nameservers reachable. */
void nat_init(struct ctx *c);

/* nat_outbound() - translate a destination the guest addressed into the
 * address a host socket must connect/send to. Return false when the guest
 * may not reach it through ferry (unspecified, loopback, multicast, the
 * guest's own address). */
bool nat_outbound(const struct ctx *c, union inany *dst);

/* nat_inbound() - translate a host-side peer address into the source
 * address the guest sees (host loopback appears as the gateway, the host's
 * own address as --map-guest-addr). */
void nat_inbound(const struct ctx *c, union inany *src);

/* nat_outbound_l4()/nat_inbound_l4() - the same, knowing the remote
 * port: --dns-forward ADDR port 53 maps to --dns-host port 53 (and back)
 * before the address-only rules. For UDP and TCP flows alike. */
bool nat_outbound_l4(const struct ctx *c, union inany *dst, uint16_t dport);
void nat_inbound_l4(const struct ctx *c, union inany *src, uint16_t sport);

/* nat_inbound_fwd() - how the guest sees the client of a forwarded port
 * (peer:pport on the host): mapped by nat_inbound_l4(); a loopback client
 * that nothing maps, or one using the address the guest shares with the
 * host, appears as the gateway. */
union inany nat_inbound_fwd(const struct ctx *c, const union inany *peer,
			    uint16_t pport);
/* nat_guest_addr() - the guest address an inbound flow from seen goes to
 * (its link-local one for a link-local source). False if none known. */
bool nat_guest_addr(const struct ctx *c, const union inany *seen,
		    union inany *a);

/* nat_splice_dst() - namespace mode: where a connection or datagram from
 * the host's loopback to a -t/-u port goes inside the namespace (over its
 * lo, never the tap): the guest's own address, or with --host-lo-to-ns-lo
 * its loopback (pasta's meaning: a service bound only to the guest's
 * loopback is not exposed unless asked). False when the guest's address
 * of that family is not known. */
bool nat_splice_dst(const struct ctx *c, bool v6, union inany *a);

#endif /* FERRY_NAT_H */
