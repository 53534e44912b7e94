/* arp.h - see arp.c. */
#ifndef FERRY_ARP_H
#define FERRY_ARP_H

#include "drop.h"

struct ctx;
struct pkt;

/* arp_input() - handle one validated frame for this service.
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason arp_input(struct ctx *c, const struct pkt *p);

#endif /* FERRY_ARP_H */
