/* neigh.h - the host's neighbour table, as the guest sees it (neigh.c). */
#ifndef FERRY_NEIGH_H
#define FERRY_NEIGH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "netlink.h"

#define NEIGH_MAX		64	/* entries kept per family */
#define NEIGH_REFRESH_MS	1000	/* at most one dump a second */

/* The host's neighbours on the template interface, per family. */
struct neigh_table {
	bool on;			/* nl_fd open (neigh_init()) */
	int nl_fd;			/* host rtnetlink socket */
	struct timespec dumped_at;	/* last dump (c->now) */
	bool dumped;			/* dumped_at valid */
	int n4, n6;
	struct nl_neigh v4[NEIGH_MAX], v6[NEIGH_MAX];
	uint64_t dumps;			/* refreshes after the first */
	uint64_t answered;		/* ARP/NDP answers with a real MAC */
	uint64_t left_out;		/* entries beyond NEIGH_MAX, last dump */
};

struct ctx;

/* neigh_init() - open the rtnetlink socket in ferry's own (the host's)
 * network namespace and read the table once; without it every answer
 * keeps ferry's MAC (said once). Start-up, before the sandbox. */
void neigh_init(struct ctx *c);

/* neigh_mac() - the real MAC of the host's LAN neighbour addr (family
 * AF_INET or AF_INET6, 4 or 16 bytes) into mac; false (mac untouched)
 * when addr is not a plain neighbour on the host's LAN (the gateway and
 * the mapped addresses are ferry's) or the host does not know it, after
 * a refresh at most every NEIGH_REFRESH_MS on a miss. */
bool neigh_mac(struct ctx *c, int family, const void *addr, uint8_t mac[6]);

#endif /* FERRY_NEIGH_H */
