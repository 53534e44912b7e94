/* udp.c - UDP translation between guest frames and host sockets.
 *
 * Placeholder until the UDP issue lands: segments are refused with
 * DROP_NOT_IMPLEMENTED so they are counted, never silently lost.
 */
#include "ferry.h"
#include "pkt.h"

void udp_init(struct ctx *c)
{
	(void)c;
}

enum drop_reason udp_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	return DROP_NOT_IMPLEMENTED;
}

void udp_input_done(struct ctx *c)
{
	(void)c;
}

void udp_sock_handler(struct ctx *c, uint64_t ref, uint32_t events)
{
	(void)c;
	(void)ref;
	(void)events;
}

void udp_timer(struct ctx *c)
{
	(void)c;
}
