/* test_nat.c - guest/host address mapping. */
#include <arpa/inet.h>

#include "ferry.h"
#include "nat.h"
#include "unit.h"

static union inany a4(const char *s)
{
	struct in_addr x;
	union inany a;

	inet_pton(AF_INET, s, &x);
	inany_from4(&a, x);
	return a;
}

static union inany a6(const char *s)
{
	struct in6_addr x;
	union inany a;

	inet_pton(AF_INET6, s, &x);
	inany_from6(&a, &x);
	return a;
}

TEST(nat_gateway_maps_to_loopback)
{
	struct ctx *c = test_ctx();
	union inany d = a4("198.51.100.1"), lo = a4("127.0.0.1");
	union inany d6 = a6("fe80::1"), lo6 = a6("::1"), x;

	c->conf.ip4.map_host_lo = c->conf.ip4.gw;
	c->conf.ip6.map_host_lo = c->conf.ip6.gw;
	CHECK(nat_outbound(c, &d) && inany_eq(&d, &lo));
	CHECK(nat_outbound(c, &d6) && inany_eq(&d6, &lo6));
	nat_inbound(c, &lo);
	x = a4("198.51.100.1");
	CHECK(inany_eq(&lo, &x));
	nat_inbound(c, &lo6);
	x = a6("fe80::1");
	CHECK(inany_eq(&lo6, &x));

	/* Other destinations pass unchanged; forbidden ones are refused. */
	d = a4("203.0.113.7");
	x = d;
	CHECK(nat_outbound(c, &d) && inany_eq(&d, &x));
	d = a4("127.0.0.1");
	CHECK(!nat_outbound(c, &d));
	d = a4("198.51.100.2");		/* the guest itself */
	CHECK(!nat_outbound(c, &d));
	d = a4("224.0.0.1");
	CHECK(!nat_outbound(c, &d));
	d6 = a6("ff02::1");
	CHECK(!nat_outbound(c, &d6));

	/* --no-map-gw: the gateway is an ordinary (unreachable) address. */
	c->conf.ip4.map_host_lo.s_addr = 0;
	d = a4("198.51.100.1");
	x = d;
	CHECK(nat_outbound(c, &d) && inany_eq(&d, &x));
	test_ctx_free(c);
}

TEST(nat_map_guest_addr)
{
	struct ctx *c = test_ctx();
	union inany d = a4("192.0.2.9"), h;

	inet_pton(AF_INET, "192.0.2.9", &c->conf.ip4.map_guest);
	inet_pton(AF_INET, "198.51.100.2", &c->conf.ip4.host_addr);
	CHECK(nat_outbound(c, &d));
	h = a4("198.51.100.2");
	CHECK(inany_eq(&d, &h));
	nat_inbound(c, &h);
	d = a4("192.0.2.9");
	CHECK(inany_eq(&h, &d));
	test_ctx_free(c);
}
