/* arp.h - see arp.c. */
#ifndef FERRY_ARP_H
#define FERRY_ARP_H

#include "drop.h"

struct ctx;
struct pkt;

/* arp_input() - handle one validated frame for this service.
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason arp_input(struct ctx *c, const struct pkt *p);

/* arp_announce() - a gratuitous ARP to the guest: the gateway's address
 * is at our MAC (after a live migration). No room to queue it: counted. */
void arp_announce(struct ctx *c);

#endif /* FERRY_ARP_H */
