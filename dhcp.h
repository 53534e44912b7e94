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

/* dns_name_put() - name ("a.b.c", trailing dot allowed) in uncompressed
 * DNS wire format at out, at most room bytes. Return the length written,
 * 0 (nothing usable written) for an empty or invalid name or no room. */
size_t dns_name_put(uint8_t *out, size_t room, const char *name);
/* dns_names_put() - the configured search list, each valid name encoded
 * as above, back to back. Return the total length. */
size_t dns_names_put(uint8_t *out, size_t room, const struct conf *cf);

#endif /* FERRY_DHCP_H */
