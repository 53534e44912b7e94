/* dhcp.h - see dhcp.c. */
#ifndef FERRY_DHCP_H
#define FERRY_DHCP_H

#include "drop.h"

struct ctx;
struct pkt;

/* dhcp_input() - handle one validated frame for this service.
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason dhcp_input(struct ctx *c, const struct pkt *p);

#endif /* FERRY_DHCP_H */
