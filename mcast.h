/* mcast.h - see mcast.c: the guest's multicast and broadcast datagrams
 * to the host's network. */
#ifndef FERRY_MCAST_H
#define FERRY_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"
#include "flow.h"

struct ctx;

/* What a guest datagram's destination is, for the host side. */
enum mcast_kind {
	MCAST_NONE = 0,		/* unicast: an ordinary flow */
	MCAST_GROUP,		/* a multicast group ferry may forward */
	MCAST_BCAST,		/* IPv4 broadcast, limited or directed */
	MCAST_REFUSED,		/* multicast or broadcast ferry keeps */
};

/* Groups the guest joined (IGMP/MLD, igmp.c), each with host sockets
 * that joined it on the template interface, one per UDP port it is
 * heard on (see mcast.c for which ports). */
#define MCAST_GROUPS_MAX	32	/* default cap of groups per guest */
#define MCAST_PORTS_MAX		4	/* ports (sockets) per group */
#define MCAST_SRCS_MAX		8	/* sources of a source-specific join */

struct mcast_group {
	bool used;
	bool ssm;			/* include mode: only src[0, nsrc) */
	uint8_t nsrc, nport;
	union inany group;
	union inany src[MCAST_SRCS_MAX];
	uint16_t port[MCAST_PORTS_MAX];
	int fd[MCAST_PORTS_MAX];	/* -1: that port's socket failed */
	int64_t expires_ms;		/* no report since: leave (c->now) */
};

struct mcast_state {
	struct mcast_group g[MCAST_GROUPS_MAX];
	unsigned int n;			/* groups in use */
	unsigned int max;		/* the cap, at most MCAST_GROUPS_MAX */
	int64_t member_ms;		/* group membership interval */
	/* Querier (igmp.c): the next general query, startup ones left */
	int64_t query_due_ms, query_ms;
	unsigned int startup_left;
	/* Counters (statistics dump, tests) */
	uint64_t joins, leaves, expired, capped, reports, queries;
	uint64_t delivered;		/* datagrams to the guest's groups */
	bool cap_logged;
};

/* Record of a report, whatever the version (igmp.c parses them): what
 * the guest asks for the group. */
enum mcast_op {
	MCAST_OP_JOIN,		/* any source (exclude mode, v1/v2 report) */
	MCAST_OP_LEAVE,		/* v2 leave, MLD done, include of none */
	MCAST_OP_INCLUDE,	/* exactly these sources */
	MCAST_OP_ALLOW,		/* these sources too */
	MCAST_OP_BLOCK,		/* not these sources any more */
};

/* mcast_now_ms() - c->now in ms, the group timers' clock. */
#define mcast_now_ms(c) \
	((int64_t)(c)->now.tv_sec * 1000 + (c)->now.tv_nsec / 1000000)

/* mcast_init() - the group table empty, its cap (FERRY_TEST_MCAST_GROUPS
 * for tests) and membership interval ms. Start-up only. */
void mcast_init(struct ctx *c, int64_t member_ms);

/* mcast_apply() - the guest's record: op on group g with the n sources
 * at src (4 or 16 bytes each, in the frame). Joins and leaves on the
 * host as needed; a new group beyond the cap is refused (counted, one
 * log line). Returns DROP_NONE or DROP_MCAST_GROUPS. */
enum drop_reason mcast_apply(struct ctx *c, const union inany *g,
			     enum mcast_op op, const uint8_t *src,
			     unsigned int n);

/* mcast_port_seen() - the guest sent to group g, port port: if it is a
 * joined group, hear that port too (within MCAST_PORTS_MAX). */
void mcast_port_seen(struct ctx *c, const union inany *g, uint16_t port);

/* mcast_expire() - leave the groups no report refreshed in time, open
 * again the sockets that failed; returns the ms until the next one is
 * due (INT64_MAX: none). */
int64_t mcast_expire(struct ctx *c);

/* mcast_ports() - set in bits (one per port) the ports of the groups'
 * sockets. */
void mcast_ports(const struct ctx *c, uint64_t *bits);

/* mcast_group_at() - the group of socket reference index idx (group
 * times MCAST_PORTS_MAX plus port slot), with that slot's port and
 * socket; NULL if it is gone. */
struct mcast_group *mcast_group_at(struct ctx *c, uint32_t idx,
				   uint16_t *port, int *fd);

/* mcast_close_all() - leave every group (shutdown, tests). */
void mcast_close_all(struct ctx *c);

/* mcast_group_mac() - the Ethernet group address of IP multicast group g
 * (RFC 1112 6.4, RFC 2464 7). */
void mcast_group_mac(const union inany *g, uint8_t mac[6]);

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
