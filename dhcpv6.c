/* dhcpv6.c - placeholder until the L2/L3 services land. */
#include "dhcpv6.h"
#include "ferry.h"

enum drop_reason dhcpv6_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	return DROP_NOT_IMPLEMENTED;
}
