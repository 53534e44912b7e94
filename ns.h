/* ns.h - see ns.c. */
#ifndef FERRY_NS_H
#define FERRY_NS_H

#include <stdint.h>

struct ctx;

/* ns_start() - create (or join) the guest's user and network namespace,
 * create the tap device there, configure it (--config-net), attach it as
 * the guest link and start the command. Exits with a message on failure. */
void ns_start(struct ctx *c);
/* ns_child_handler() - the command exited or the joined namespace went
 * away: sets c->quit and c->exit_code. */
void ns_child_handler(struct ctx *c, uint32_t events);

#endif /* FERRY_NS_H */
