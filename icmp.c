/* icmp.c - placeholder until ICMP echo forwarding lands. */
#include "ferry.h"

void icmp_init(struct ctx *c)
{
	(void)c;
}

enum drop_reason icmp_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	return DROP_NOT_IMPLEMENTED;
}

void icmp_sock_handler(struct ctx *c, uint32_t idx, uint32_t events)
{
	(void)c;
	(void)idx;
	(void)events;
}

void icmp_timer(struct ctx *c)
{
	(void)c;
}
