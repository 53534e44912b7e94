/* vm.c - placeholder until VM mode (qemu stream socket) lands. */
#include "ferry.h"
#include "log.h"
#include "vm.h"

void vm_start(struct ctx *c)
{
	(void)c;
	die("ferry vm: VM mode is not implemented yet");
}

void vm_listen_handler(struct ctx *c, uint32_t events)
{
	(void)c;
	(void)events;
}

void vm_link_closed(struct ctx *c)
{
	c->quit = true;
}
