/* icmp.h - see icmp.c: ICMP/ICMPv6 echo forwarding via ping sockets. */
#ifndef FERRY_ICMP_H
#define FERRY_ICMP_H

#include <stdbool.h>
#include <stdint.h>
#include "drop.h"

struct ctx;
struct pkt;

/* Echo flows at once (then evict), less under a low fd limit. */
#define ICMP_FLOWS_MAX		1024
#define ICMP_TIMEOUT_MS		60000	/* flow idle lifetime */
#define ICMP_RX_BURST		32	/* replies read per socket event */
#define ICMP_RX_BUF		65536	/* largest ICMP message + slack */
#define ICMP_POOL_MAX		32	/* kept ping sockets per family */

/* Ping sockets opened before giving up root, for a group the kernel will
 * not let open them (icmp_keep_for()): free ones are fd[0..free-1]. */
struct icmp_pool {
	bool on;			/* flows take their socket from here */
	unsigned int free;		/* free sockets at the front of fd */
	int fd[ICMP_POOL_MAX];
};

struct icmp_state {
	bool ping4_ok, ping6_ok;	/* unprivileged ping sockets usable */
	uint32_t max_flows;		/* icmp_flow_cap() of the fd limit */
	uint8_t *rxbuf;			/* ICMP_RX_BUF bytes, from icmp_init() */
	struct icmp_pool pool[2];	/* [0] IPv4, [1] IPv6 */
	uint64_t requests;		/* echo requests sent to the host */
	uint64_t replies;		/* echo replies delivered to the guest */
	uint64_t errors;		/* errors about echoes relayed to it */
	uint64_t evicted;		/* flows evicted to admit new ones */
	uint64_t expired;		/* flows closed after inactivity */
};

/* icmp_init() - probe ping sockets per family (once, at start-up), warn
 * once when they are unavailable, allocate the receive buffer. */
void icmp_init(struct ctx *c);
/* icmp_group_allowed() - does the ping_group_range file at path (two
 * decimal gids, "low high") let group gid open ping sockets? False if it
 * cannot be read. */
bool icmp_group_allowed(const char *path, uint32_t gid);
/* icmp_keep_for() - before giving up root for group gid (priv_drop()):
 * for each family whose ping sockets work now but not for gid (the
 * kernel checks the group when a socket is created, never after), open
 * ICMP_POOL_MAX of them now; echo flows then reuse these, evicting the
 * family's flow idle longest when none is free. Says so once. */
void icmp_keep_for(struct ctx *c, uint32_t gid);
/* icmp_flow_cap() - echo flows allowed out of budget, the fd_budget()
 * UDP flows and echo flows share: an eighth of it (at least 1), at most
 * ICMP_FLOWS_MAX. */
uint32_t icmp_flow_cap(uint32_t budget);
/* icmp_input() - ICMP/ICMPv6 from the guest that is not NDP. */
enum drop_reason icmp_input(struct ctx *c, const struct pkt *p);
/* icmp_sock_handler() - reply readable on ping socket of flow idx. */
void icmp_sock_handler(struct ctx *c, uint32_t idx, uint32_t events);
/* icmp_timer() - close echo flows idle for ICMP_TIMEOUT_MS. */
void icmp_timer(struct ctx *c);

#endif /* FERRY_ICMP_H */
