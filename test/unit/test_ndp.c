/* test_ndp.c - Neighbor Discovery: advertisements for solicitations,
 * router advertisements (solicited and scheduled), DAD, validation and
 * truncation. Replies are decoded field by field. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "ferry.h"
#include "ndp.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static const uint8_t our_mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
static const uint8_t guest_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

static struct in6_addr a6(const char *s)
{
	struct in6_addr a;

	inet_pton(AF_INET6, s, &a);
	return a;
}

/* ns_msg() - NS for target at m, with a source link-layer option when
 * slla; returns the length. */
static size_t ns_msg(uint8_t *m, const char *target, bool slla)
{
	struct in6_addr t = a6(target);

	memset(m, 0, 32);
	m[0] = 135;
	memcpy(m + 8, &t, 16);
	if (!slla)
		return 24;
	m[24] = 1;
	m[25] = 1;
	memcpy(m + 26, guest_mac, 6);
	return 32;
}

static void send_icmp6(struct ctx *c, const char *src, const char *dst,
		       const uint8_t *m, size_t len, uint8_t hlim)
{
	uint8_t f[2048];
	size_t n = test_frame_ip6(f, src, dst, IPPROTO_ICMPV6, m, len);

	f[14 + 7] = hlim;		/* not covered by the checksum */
	test_input(c, f, n);
}

/* get_icmp6() - parse sent frame i (checksum verified). */
static bool get_icmp6(struct ctx *c, size_t i, struct pkt *p)
{
	const uint8_t *f;
	size_t len;

	if (!(f = test_tx(c, i, &len)))
		return false;
	return pkt_parse(f, len, true, p) == DROP_NONE && p->is_v6 &&
	       p->l4proto == IPPROTO_ICMPV6 && p->ttl == 255 &&
	       !memcmp(p->eth_src, our_mac, 6);
}

static bool addr_is(const struct in6_addr *a, const char *s)
{
	struct in6_addr b = a6(s);

	return in6_eq(a, &b);
}

TEST(ndp_ns_for_router_gets_na)
{
	struct ctx *c = test_ctx();
	uint8_t m[64];
	struct pkt p;
	size_t n = ns_msg(m, "fe80::1", true);

	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, n, 255);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(get_icmp6(c, 0, &p));
	CHECK(!memcmp(p.eth_dst, guest_mac, 6));
	CHECK(addr_is(&p.src6, "fe80::1"));
	CHECK(addr_is(&p.dst6, "fe80::2"));
	CHECK_EQ(p.l4len, 32);
	CHECK_EQ(p.l4[0], 136);
	CHECK_EQ(p.l4[1], 0);
	CHECK_EQ(p.l4[4], 0xe0);		/* router, solicited, override */
	CHECK(!memcmp(p.l4 + 8, m + 8, 16));
	CHECK_EQ(p.l4[24], 2);			/* target link-layer address */
	CHECK_EQ(p.l4[25], 1);
	CHECK(!memcmp(p.l4 + 26, our_mac, 6));
	test_ctx_free(c);
}

TEST(ndp_ns_for_remote_global_answered_from_target)
{
	struct ctx *c = test_ctx();
	uint8_t m[64];
	struct pkt p;
	size_t n = ns_msg(m, "2001:db8::1", false);

	send_icmp6(c, "2001:db8::2", "ff02::1:ff00:1", m, n, 255);
	CHECK(get_icmp6(c, 0, &p));
	CHECK(addr_is(&p.src6, "2001:db8::1"));
	CHECK(addr_is(&p.dst6, "2001:db8::2"));
	CHECK_EQ(p.l4[4], 0xe0);
	test_ctx_free(c);
}

TEST(ndp_ns_never_for_guest_or_other_link_local)
{
	struct ctx *c = test_ctx();
	uint8_t m[64];
	size_t n;

	n = ns_msg(m, "2001:db8::2", false);		/* guest's own */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:2", m, n, 255);
	n = ns_msg(m, "fe80::99", false);		/* nobody */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:99", m, n, 255);
	n = ns_msg(m, "fe80::2", false);		/* itself */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:2", m, n, 255);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_NDP_IGNORED], 3);
	test_ctx_free(c);
}

TEST(ndp_dad)
{
	struct ctx *c = test_ctx();
	uint8_t m[64];
	struct pkt p;
	size_t n;

	/* The guest's tentative addresses (configured, SLAAC): silence. */
	n = ns_msg(m, "2001:db8::2", false);
	send_icmp6(c, "::", "ff02::1:ff00:2", m, n, 255);
	n = ns_msg(m, "2001:db8::200:ff:fe00:2", false);
	send_icmp6(c, "::", "ff02::1:ff00:2", m, n, 255);
	n = ns_msg(m, "fe80::200:ff:fe00:2", false);
	send_icmp6(c, "::", "ff02::1:ff00:2", m, n, 255);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_NDP_IGNORED], 3);

	/* Probing our own address: defended, to all-nodes, not solicited. */
	n = ns_msg(m, "fe80::1", false);
	send_icmp6(c, "::", "ff02::1:ff00:1", m, n, 255);
	CHECK(get_icmp6(c, 0, &p));
	CHECK(addr_is(&p.dst6, "ff02::1"));
	CHECK(!memcmp(p.eth_dst, "\x33\x33\0\0\0\1", 6));
	CHECK_EQ(p.l4[4], 0xa0);
	test_tx_reset(c);

	/* DAD with a source link-layer option, or not to the
	 * solicited-node group: malformed (RFC 4861 7.1.1). */
	n = ns_msg(m, "fe80::1", true);
	send_icmp6(c, "::", "ff02::1:ff00:1", m, n, 255);
	n = ns_msg(m, "fe80::1", false);
	send_icmp6(c, "::", "ff02::1:ff00:5", m, n, 255);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_NDP_MALFORMED], 2);
	test_ctx_free(c);
}

TEST(ndp_validation)
{
	struct ctx *c = test_ctx();
	uint8_t m[64];
	size_t n;

	n = ns_msg(m, "fe80::1", true);
	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, n, 64);	/* forwarded */
	CHECK_EQ(c->stats.drops[DROP_NDP_HOPLIMIT], 1);
	m[1] = 1;						/* code */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, n, 255);
	m[1] = 0;
	m[25] = 0;						/* opt len 0 */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, n, 255);
	m[25] = 2;						/* overrun */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, n, 255);
	n = ns_msg(m, "ff02::1", false);			/* mcast target */
	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, n, 255);
	n = ns_msg(m, "fe80::1", false);
	send_icmp6(c, "fe80::2", "ff02::1:ff00:1", m, 20, 255); /* short */
	m[0] = 133;						/* RS, odd opt */
	m[8] = 1;
	m[9] = 1;
	send_icmp6(c, "fe80::2", "ff02::2", m, 12, 255);
	CHECK_EQ(c->stats.drops[DROP_NDP_MALFORMED], 6);
	CHECK_EQ(test_tx_n(c), 0);
	test_ctx_free(c);
}

/* ra_opt() - find option type in RA at l4 (len bytes); NULL if absent. */
static const uint8_t *ra_opt(const uint8_t *l4, size_t len, uint8_t type)
{
	size_t i = 16;

	while (i + 2 <= len && l4[i + 1] && i + l4[i + 1] * 8u <= len) {
		if (l4[i] == type)
			return l4 + i;
		i += l4[i + 1] * 8u;
	}
	return NULL;
}

TEST(ndp_rs_gets_full_ra)
{
	static const uint8_t names[] = "\7example\4test";
	struct ctx *c = test_ctx();
	struct in6_addr pfx = a6("2001:db8::"), dns = a6("2001:db8::53");
	const uint8_t *o;
	uint8_t m[16] = { 133 };
	struct pkt p;

	memcpy(m + 8, "\1\1\2\0\0\0\0\2", 8);			/* SLLA */
	send_icmp6(c, "fe80::2", "ff02::2", m, 16, 255);
	CHECK(get_icmp6(c, 0, &p));
	CHECK(addr_is(&p.src6, "fe80::1"));
	CHECK(addr_is(&p.dst6, "fe80::2"));
	CHECK_EQ(p.l4[0], 134);
	CHECK_EQ(p.l4[1], 0);
	CHECK_EQ(p.l4[4], 64);
	CHECK_EQ(p.l4[5], 0xc0);				/* M, O */
	CHECK_EQ(rd16(p.l4 + 6), 9000);
	CHECK((o = ra_opt(p.l4, p.l4len, 1)));
	CHECK(o[1] == 1 && !memcmp(o + 2, our_mac, 6));
	CHECK((o = ra_opt(p.l4, p.l4len, 5)));
	CHECK_EQ(rd32(o + 4), 1500);
	CHECK((o = ra_opt(p.l4, p.l4len, 3)));
	CHECK_EQ(o[1], 4);
	CHECK_EQ(o[2], 64);
	CHECK_EQ(o[3], 0xc0);					/* L, A */
	CHECK_EQ(rd32(o + 4), 0xffffffff);
	CHECK(!memcmp(o + 16, &pfx, 16));
	CHECK((o = ra_opt(p.l4, p.l4len, 25)));
	CHECK_EQ(o[1], 3);
	CHECK(!memcmp(o + 8, &dns, 16));
	CHECK((o = ra_opt(p.l4, p.l4len, 31)));
	CHECK_EQ(o[1], 3);					/* 8 + 14 -> 24 */
	CHECK(!memcmp(o + 8, names, sizeof(names)));
	CHECK_EQ(o[8 + sizeof(names)], 0);			/* padding */
	/* Nothing after the last option. */
	CHECK_EQ((size_t)(o - p.l4) + o[1] * 8u, p.l4len);
	test_ctx_free(c);
}

TEST(ndp_ra_options_follow_config)
{
	struct ctx *c = test_ctx();
	uint8_t m[8] = { 133 };
	struct pkt p;

	c->conf.no_dhcpv6 = c->conf.no_dhcp_dns = true;
	c->conf.no_dhcp_search = true;
	send_icmp6(c, "::", "ff02::2", m, 8, 255);
	CHECK(get_icmp6(c, 0, &p));
	CHECK(addr_is(&p.dst6, "ff02::1"));		/* no source: group */
	CHECK(!memcmp(p.eth_dst, "\x33\x33\0\0\0\1", 6));
	CHECK_EQ(p.l4[5], 0);
	CHECK(!ra_opt(p.l4, p.l4len, 25));
	CHECK(!ra_opt(p.l4, p.l4len, 31));
	CHECK(ra_opt(p.l4, p.l4len, 3));
	test_tx_reset(c);

	c->conf.no_ra = true;
	send_icmp6(c, "fe80::2", "ff02::2", m, 8, 255);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_SERVICE_DISABLED], 1);
	/* NS still answered. */
	{
		uint8_t ns[64];
		size_t n = ns_msg(ns, "fe80::1", false);

		send_icmp6(c, "fe80::2", "ff02::1:ff00:1", ns, n, 255);
		CHECK_EQ(test_tx_n(c), 1);
	}
	test_tx_reset(c);
	c->conf.no_ndp = true;
	send_icmp6(c, "fe80::2", "ff02::2", m, 8, 255);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_SERVICE_DISABLED], 2);
	test_ctx_free(c);
}

TEST(ndp_ra_from_guest_ignored)
{
	struct ctx *c = test_ctx();
	uint8_t m[16] = { 134 };

	send_icmp6(c, "fe80::2", "ff02::1", m, 16, 255);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_NDP_IGNORED], 1);
	test_ctx_free(c);
}

TEST(ndp_router_ll_choice)
{
	struct ctx *c = test_ctx();
	struct in6_addr a;

	ndp_router_ll(c, &a);
	CHECK(addr_is(&a, "fe80::1"));
	c->conf.ip6.gw = a6("fe80::abcd");
	ndp_router_ll(c, &a);
	CHECK(addr_is(&a, "fe80::abcd"));
	c->conf.ip6.gw = a6("2001:db8::1");
	ndp_router_ll(c, &a);
	CHECK(addr_is(&a, "fe80::1"));
	test_ctx_free(c);
}

TEST(ndp_unsolicited_ra_schedule)
{
	struct ctx *c = test_ctx();
	static const int64_t initial[] = { 1000, 2000, 4000 };
	struct pkt p;
	size_t i;

	ndp_init(c);
	CHECK(c->timer_armed);
	ndp_timer(c);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(get_icmp6(c, 0, &p));
	CHECK_EQ(p.l4[0], 134);
	CHECK(addr_is(&p.dst6, "ff02::1"));
	CHECK(!memcmp(p.eth_dst, "\x33\x33\0\0\0\1", 6));
	for (i = 0; i < ARRAY_SIZE(initial); i++) {
		c->timer_armed = false;
		test_advance(c, initial[i] - 1);
		ndp_timer(c);			/* early: nothing, re-armed */
		CHECK_EQ(test_tx_n(c), 1 + i);
		CHECK(c->timer_armed);
		CHECK(ts_ms_diff(&c->timer_due, &c->now) <= 1);
		test_advance(c, 1);
		ndp_timer(c);
		CHECK_EQ(test_tx_n(c), 2 + i);
	}
	/* Then every 10..60 s. */
	for (i = 0; i < 20; i++) {
		int64_t d;

		c->timer_armed = false;
		ndp_timer(c);
		CHECK(c->timer_armed);
		d = ts_ms_diff(&c->timer_due, &c->now);
		CHECK(d >= 10000 && d <= 60000);
		test_advance(c, d);
		ndp_timer(c);
		CHECK_EQ(test_tx_n(c), 5 + i);
	}
	/* Link down: nothing sent, polled; back up: starts over. */
	test_tx_reset(c);
	c->link.up = false;
	test_advance(c, 60000);
	ndp_timer(c);
	CHECK_EQ(c->ndp.ra_sent, 0);
	c->link.up = true;
	ndp_timer(c);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK_EQ(c->ndp.ra_sent, 1);
	/* --no-ra: no schedule at all. */
	c->conf.no_ra = true;
	c->timer_armed = false;
	test_advance(c, 60000);
	ndp_timer(c);
	CHECK(!c->timer_armed);
	CHECK_EQ(test_tx_n(c), 1);
	test_ctx_free(c);
}

/* Every truncation of a valid NS and RS, handed to ndp_input() in a
 * buffer of exactly that size (ASan catches any over-read). */
TEST(ndp_every_truncation)
{
	struct ctx *c = test_ctx();
	uint8_t m[64], f[256];
	struct pkt p;
	size_t n, len, i, k;

	for (k = 0; k < 2; k++) {
		if (k == 0) {
			n = ns_msg(m, "fe80::1", true);
		} else {
			memset(m, 0, 16);
			m[0] = 133;
			memcpy(m + 8, "\1\1\2\0\0\0\0\2", 8);
			n = 16;
		}
		len = test_frame_ip6(f, "fe80::2", "ff02::1:ff00:1",
				     IPPROTO_ICMPV6, m, n);
		CHECK_EQ(pkt_parse(f, len, true, &p), DROP_NONE);
		for (i = 0; i < n; i++) {
			uint8_t *b = malloc(i ? i : 1);

			memcpy(b, m, i);
			p.l4 = b;
			p.l4len = i;
			/* Only the fixed part without options is whole. */
			CHECK_EQ(ndp_input(c, &p), i == n - 8 ?
				 DROP_NONE : DROP_NDP_MALFORMED);
			free(b);
		}
		CHECK_EQ(test_tx_n(c), k + 1);
	}
	test_ctx_free(c);
}
