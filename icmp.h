/* icmp.h - see icmp.c. */
#ifndef FERRY_ICMP_H
#define FERRY_ICMP_H

#include <stdbool.h>
#include <stdint.h>
#include "drop.h"

struct ctx;
struct pkt;

struct icmp_state {
	bool ping4_ok, ping6_ok;	/* unprivileged ping sockets usable */
	void *flows;			/* owned by icmp.c */
};

void icmp_init(struct ctx *c);
/* icmp_input() - ICMP/ICMPv6 from the guest that is not NDP. */
enum drop_reason icmp_input(struct ctx *c, const struct pkt *p);
/* icmp_sock_handler() - reply readable on ping socket of flow idx. */
void icmp_sock_handler(struct ctx *c, uint32_t idx, uint32_t events);
void icmp_timer(struct ctx *c);

#endif /* FERRY_ICMP_H */
