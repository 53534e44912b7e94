/* dns.h - see dns.c: making host nameservers usable from the guest, and
 * names in DNS wire format. */
#ifndef FERRY_DNS_H
#define FERRY_DNS_H

#include <stddef.h>
#include <stdint.h>

struct conf;
struct ctx;

/* dns_init() - rewrite the nameservers advertised to the guest
 * (conf.ip4.dns, conf.ip6.dns) so that each is reachable from it: a
 * loopback host resolver is replaced by a guest-side address ferry maps
 * to it, completing --dns-forward / --dns-host. Start-up only, after the
 * host-derived configuration and the loopback mapping are known. */
void dns_init(struct ctx *c);

/* dns_name_put() - name ("a.b.c", trailing dot allowed) in uncompressed
 * DNS wire format at out, at most room bytes. Return the length written,
 * 0 (nothing usable written) for an empty or invalid name or no room. */
size_t dns_name_put(uint8_t *out, size_t room, const char *name);
/* dns_names_put() - the configured search list, each valid name encoded
 * as above, back to back. Return the total length. */
size_t dns_names_put(uint8_t *out, size_t room, const struct conf *cf);

#endif /* FERRY_DNS_H */
