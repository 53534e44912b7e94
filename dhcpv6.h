/* dhcpv6.h - see dhcpv6.c. */
#ifndef FERRY_DHCPV6_H
#define FERRY_DHCPV6_H

#include "drop.h"

struct ctx;
struct pkt;

/* dhcpv6_input() - handle one validated frame for this service (a UDP
 * GSO frame: each datagram in it, see udp_each_datagram()).
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason dhcpv6_input(struct ctx *c, const struct pkt *p);

#endif /* FERRY_DHCPV6_H */
