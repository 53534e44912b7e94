/* ndp.h - see ndp.c. */
#ifndef FERRY_NDP_H
#define FERRY_NDP_H

#include <time.h>
#include <netinet/in.h>

#include "drop.h"

struct ctx;
struct pkt;

/* Unsolicited router advertisement schedule. */
struct ndp_state {
	struct timespec ra_next;	/* next unsolicited RA due */
	unsigned int ra_sent;		/* since the link came up; 0: down */
};

/* ndp_input() - handle one validated NDP message (ICMPv6 133-137).
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason ndp_input(struct ctx *c, const struct pkt *p);
/* ndp_init() - reset the schedule and ask for a first timer run. */
void ndp_init(struct ctx *c);
/* ndp_timer() - periodic unsolicited router advertisements. */
void ndp_timer(struct ctx *c);
/* ndp_router_ll() - our link-local address, source of RAs and DHCPv6
 * replies: conf.ip6.gw if link-local, else fe80::1. */
void ndp_router_ll(const struct ctx *c, struct in6_addr *a);
/* ndp_announce() - an unsolicited Neighbour Advertisement to all nodes:
 * our link-local address is at our MAC, override set (after a live
 * migration). No room to queue it: counted. */
void ndp_announce(struct ctx *c);

#endif /* FERRY_NDP_H */
