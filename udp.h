/* udp.h - see udp.c. */
#ifndef FERRY_UDP_H
#define FERRY_UDP_H

#include <stdint.h>
#include "drop.h"

struct ctx;
struct pkt;

struct udp_state {
	int placeholder;
};

void udp_init(struct ctx *c);
/* udp_input() - one validated UDP segment/datagram from the guest. */
enum drop_reason udp_input(struct ctx *c, const struct pkt *p);
/* udp_input_done() - end of an input batch: flush deferred work. */
void udp_input_done(struct ctx *c);
/* udp_sock_handler() - epoll event on a UDP socket (eref type/idx). */
void udp_sock_handler(struct ctx *c, uint64_t ref, uint32_t events);
void udp_timer(struct ctx *c);

#endif /* FERRY_UDP_H */
