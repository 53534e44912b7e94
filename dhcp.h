/* dhcp.h - see dhcp.c. */
#ifndef FERRY_DHCP_H
#define FERRY_DHCP_H

#include <stddef.h>
#include <stdint.h>

#include "drop.h"

struct conf;
struct ctx;
struct pkt;

/* dhcp_input() - handle one validated frame for this service (a UDP GSO
 * frame: each datagram in it, see udp_each_datagram()).
 * Return: DROP_NONE if consumed, else the reason it was refused. */
enum drop_reason dhcp_input(struct ctx *c, const struct pkt *p);

#endif /* FERRY_DHCP_H */
