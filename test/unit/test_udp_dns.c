/* test_udp_dns.c - nameservers advertised to the guest (dns.c) and the
 * --dns-forward / --dns-host mapping (nat.c). */
#include <arpa/inet.h>

#include "dns.h"
#include "ferry.h"
#include "nat.h"
#include "unit.h"
#include "util.h"

static struct in_addr ip4(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a;
}

static union inany any4(const char *s)
{
	union inany a;

	inany_from4(&a, ip4(s));
	return a;
}

/* A loopback resolver other than 127.0.0.1 (systemd-resolved): the
 * gateway is advertised, its port 53 goes to the resolver, its other
 * ports still to host loopback. */
TEST(dns_loopback_resolver_behind_gateway)
{
	struct ctx *c = test_ctx();
	union inany a, want;

	c->conf.ip4.dns[0] = ip4("127.0.0.53");
	c->conf.ip4.dns[1] = ip4("198.51.100.9");
	c->conf.ip4.dns_count = 2;
	c->conf.ip6.dns_count = 0;
	nat_init(c);
	CHECK_EQ(c->conf.ip4.dns_count, 2);
	CHECK(c->conf.ip4.dns[0].s_addr == ip4("198.51.100.1").s_addr);
	CHECK(c->conf.ip4.dns[1].s_addr == ip4("198.51.100.9").s_addr);
	a = any4("198.51.100.1");
	want = any4("127.0.0.53");
	CHECK(nat_outbound_l4(c, &a, 53) && inany_eq(&a, &want));
	a = any4("198.51.100.1");
	want = any4("127.0.0.1");
	CHECK(nat_outbound_l4(c, &a, 80) && inany_eq(&a, &want));
	a = any4("127.0.0.53");
	want = any4("198.51.100.1");
	nat_inbound_l4(c, &a, 53);
	CHECK(inany_eq(&a, &want));
	test_ctx_free(c);
}

/* 127.0.0.1 and ::1: the loopback mapping already reaches them. */
TEST(dns_localhost_resolver_both_families)
{
	struct ctx *c = test_ctx();
	struct in6_addr gw6;

	c->conf.ip4.dns[0] = ip4("127.0.0.1");
	c->conf.ip4.dns_count = 1;
	inet_pton(AF_INET6, "::1", &c->conf.ip6.dns[0]);
	c->conf.ip6.dns_count = 1;
	nat_init(c);
	CHECK_EQ(c->conf.ip4.dns_count, 1);
	CHECK(c->conf.ip4.dns[0].s_addr == ip4("198.51.100.1").s_addr);
	CHECK(in4_is_unspec(&c->conf.ip4.dns_fwd));
	inet_pton(AF_INET6, "fe80::1", &gw6);
	CHECK_EQ(c->conf.ip6.dns_count, 1);
	CHECK(in6_eq(&c->conf.ip6.dns[0], &gw6));
	test_ctx_free(c);
}

/* --dns-forward: advertised first, port 53 only, to the first host
 * nameserver unless --dns-host says otherwise. */
TEST(dns_forward_option)
{
	struct ctx *c = test_ctx();
	union inany a, want;

	c->conf.ip4.dns[0] = ip4("198.51.100.9");
	c->conf.ip4.dns_count = 1;
	c->conf.ip4.dns_fwd = ip4("198.51.100.250");
	nat_init(c);
	CHECK_EQ(c->conf.ip4.dns_count, 1);
	CHECK(c->conf.ip4.dns[0].s_addr == ip4("198.51.100.250").s_addr);
	CHECK(c->conf.ip4.dns_host.s_addr == ip4("198.51.100.9").s_addr);
	a = any4("198.51.100.250");
	want = any4("198.51.100.9");
	CHECK(nat_outbound_l4(c, &a, 53) && inany_eq(&a, &want));
	a = any4("198.51.100.250");
	want = a;
	CHECK(nat_outbound_l4(c, &a, 54) && inany_eq(&a, &want));
	test_ctx_free(c);
}

/* --no-map-gw and no --dns-forward: a loopback resolver is left out. */
TEST(dns_loopback_unmapped_left_out)
{
	struct ctx *c = test_ctx();

	c->conf.no_map_gw = true;
	c->conf.ip4.dns[0] = ip4("127.0.0.53");
	c->conf.ip4.dns[1] = ip4("198.51.100.9");
	c->conf.ip4.dns_count = 2;
	nat_init(c);
	CHECK_EQ(c->conf.ip4.dns_count, 1);
	CHECK(c->conf.ip4.dns[0].s_addr == ip4("198.51.100.9").s_addr);
	test_ctx_free(c);
}
