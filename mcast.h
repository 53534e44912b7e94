/* mcast.h - see mcast.c: the guest's multicast and broadcast datagrams
 * to the host's network. */
#ifndef FERRY_MCAST_H
#define FERRY_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "flow.h"

struct ctx;

/* What a guest datagram's destination is, for the host side. */
enum mcast_kind {
	MCAST_NONE = 0,		/* unicast: an ordinary flow */
	MCAST_GROUP,		/* a multicast group ferry may forward */
	MCAST_BCAST,		/* IPv4 broadcast, limited or directed */
	MCAST_REFUSED,		/* multicast or broadcast ferry keeps */
};

/* mcast_out_dst() - classify the destination dst a guest datagram
 * carries; for MCAST_BCAST, *dst becomes the directed broadcast of the
 * template interface's subnet. MCAST_REFUSED with --no-multicast, for
 * IPv6 scopes 0 and 1, and for a broadcast without a host subnet. */
enum mcast_kind mcast_out_dst(const struct ctx *c, union inany *dst);

/* mcast_out_sock() - prepare the unconnected socket fd (family v6) of a
 * flow to a destination of kind k: the outgoing interface, the guest's
 * TTL or hop limit ttl, no loopback unless configured, no groups it did
 * not join, SO_BROADCAST for a broadcast. Returns 0 or -errno. */
int mcast_out_sock(const struct ctx *c, int fd, bool v6, enum mcast_kind k,
		   uint8_t ttl);

/* mcast_out_ttl() - the guest changed its TTL or hop limit to ttl on a
 * flow of kind k: the same on socket fd. Returns 0 or -errno. */
int mcast_out_ttl(int fd, bool v6, enum mcast_kind k, uint8_t ttl);

#endif /* FERRY_MCAST_H */
