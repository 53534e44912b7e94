/* dns.h - see dns.c: making host nameservers usable from the guest. */
#ifndef FERRY_DNS_H
#define FERRY_DNS_H

struct ctx;

/* dns_init() - rewrite the nameservers advertised to the guest
 * (conf.ip4.dns, conf.ip6.dns) so that each is reachable from it: a
 * loopback host resolver is replaced by a guest-side address ferry maps
 * to it, completing --dns-forward / --dns-host. Start-up only, after the
 * host-derived configuration and the loopback mapping are known. */
void dns_init(struct ctx *c);

#endif /* FERRY_DNS_H */
