/* dhcp.c - placeholder until the L2/L3 services land. */
#include "dhcp.h"
#include "ferry.h"

enum drop_reason dhcp_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	return DROP_NOT_IMPLEMENTED;
}
