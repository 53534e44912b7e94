/* ns.c - placeholder until namespace mode lands. */
#include "ferry.h"
#include "log.h"
#include "ns.h"

void ns_start(struct ctx *c)
{
	(void)c;
	die("ferry ns: namespace mode is not implemented yet");
}

void ns_child_handler(struct ctx *c, uint32_t events)
{
	(void)events;
	c->quit = true;
}
