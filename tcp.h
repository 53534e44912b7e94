/* tcp.h - see tcp.c. */
#ifndef FERRY_TCP_H
#define FERRY_TCP_H

#include <stdint.h>
#include "drop.h"

struct ctx;
struct pkt;

struct tcp_state {
	int placeholder;
};

void tcp_init(struct ctx *c);
/* tcp_input() - one validated TCP segment/datagram from the guest. */
enum drop_reason tcp_input(struct ctx *c, const struct pkt *p);
/* tcp_input_done() - end of an input batch: flush deferred work. */
void tcp_input_done(struct ctx *c);
/* tcp_sock_handler() - epoll event on a TCP socket (eref type/idx). */
void tcp_sock_handler(struct ctx *c, uint64_t ref, uint32_t events);
void tcp_timer(struct ctx *c);

#endif /* FERRY_TCP_H */
