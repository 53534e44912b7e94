/* ndp.h - see ndp.c. */
#ifndef FERRY_NDP_H
#define FERRY_NDP_H

#include "drop.h"

struct ctx;
struct pkt;

/* ndp_input() - handle one validated NDP message (ICMPv6 133-137).
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason ndp_input(struct ctx *c, const struct pkt *p);
/* ndp_timer() - periodic unsolicited router advertisements. */
void ndp_timer(struct ctx *c);

#endif /* FERRY_NDP_H */
