/* tcp.c - TCP translation between guest frames and host sockets.
 *
 * Placeholder until the TCP issue lands: segments are refused with
 * DROP_NOT_IMPLEMENTED so they are counted, never silently lost.
 */
#include "ferry.h"
#include "pkt.h"

void tcp_init(struct ctx *c)
{
	(void)c;
}

enum drop_reason tcp_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	return DROP_NOT_IMPLEMENTED;
}

void tcp_input_done(struct ctx *c)
{
	(void)c;
}

void tcp_sock_handler(struct ctx *c, uint64_t ref, uint32_t events)
{
	(void)c;
	(void)ref;
	(void)events;
}

void tcp_timer(struct ctx *c)
{
	(void)c;
}
