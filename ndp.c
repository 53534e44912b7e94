/* ndp.c - placeholder until the L2/L3 services land. */
#include "ndp.h"
#include "ferry.h"

enum drop_reason ndp_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	return DROP_NOT_IMPLEMENTED;
}

void ndp_timer(struct ctx *c)
{
	(void)c;
}
