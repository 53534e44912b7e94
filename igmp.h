/* igmp.h - see igmp.c: the guest's IGMP and MLD messages, and ferry as
 * the querier of the guest's link. */
#ifndef FERRY_IGMP_H
#define FERRY_IGMP_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"
#include "flow.h"
#include "mcast.h"

struct ctx;
struct pkt;

/* One group record of a report, whatever the version. */
struct igmp_rec {
	union inany group;
	enum mcast_op op;
	const uint8_t *src;		/* nsrc sources, 4 or 16 bytes each */
	unsigned int nsrc;
};

/* igmp_parse() - check the guest's IGMP message (IPv4 protocol 2) or
 * MLD message (ICMPv6 130, 131, 132, 143) p whole, then hand fn(arg,
 * record) each group record it carries for a group ferry may join
 * (fn NULL: check only). Returns DROP_NONE, DROP_MCAST_QUERY (a query
 * or a type that reports nothing), DROP_MCAST_REPORT (malformed: a
 * length, a group, the TTL / hop limit, an MLD source),
 * DROP_L4_SHORT or DROP_L4_CSUM. */
enum drop_reason igmp_parse(const struct pkt *p,
			    void (*fn)(void *arg, const struct igmp_rec *r),
			    void *arg);

/* igmp_is_mld() - ICMPv6 type t is an MLD message. */
static inline bool igmp_is_mld(uint8_t t)
{
	return (t >= 130 && t <= 132) || t == 143;
}

/* igmp_input() - the guest's IGMP or MLD message: its records applied
 * (mcast.c joins and leaves on the host). DROP_SERVICE_DISABLED with
 * --no-multicast; DROP_MCAST_GROUPS when a group was beyond the cap. */
enum drop_reason igmp_input(struct ctx *c, const struct pkt *p);

/* igmp_init() - the querier's schedule and the group table (intervals
 * RFC 3376 8, RFC 3810 9; FERRY_TEST_MCAST_QUERY_MS shortens them for
 * tests). Start-up only. */
void igmp_init(struct ctx *c);

/* igmp_timer() - general queries to the guest when due, and groups
 * whose membership ran out left. */
void igmp_timer(struct ctx *c);

#endif /* FERRY_IGMP_H */
