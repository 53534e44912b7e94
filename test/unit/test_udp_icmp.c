/* test_udp_icmp.c - icmp_err_to_guest(): which errors are translated,
 * their type/code/MTU, the quote, the size limits and the source. */
#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <arpa/inet.h>

#include "ferry.h"
#include "icmp_err.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static uint8_t payload[3000];

/* orig() - a guest datagram 198.51.100.2:5000 -> 203.0.113.9:53 (as the
 * guest sent it; 203.0.113.9 on the host too), or the IPv6 equivalent. */
static struct icmp_err_orig orig(bool v6)
{
	struct icmp_err_orig o = { .sport = 5000, .dport = 53,
				   .payload = payload, .len = sizeof(payload),
				   .full_len = sizeof(payload) };
	struct in_addr s4, d4;
	struct in6_addr s6, d6;

	if (v6) {
		inet_pton(AF_INET6, "2001:db8::2", &s6);
		inet_pton(AF_INET6, "2001:db8:9::9", &d6);
		inany_from6(&o.src, &s6);
		inany_from6(&o.dst, &d6);
	} else {
		inet_pton(AF_INET, "198.51.100.2", &s4);
		inet_pton(AF_INET, "203.0.113.9", &d4);
		inany_from4(&o.src, s4);
		inany_from4(&o.dst, d4);
	}
	o.host_dst = o.dst;
	return o;
}

/* sent() - the one frame to the guest, parsed (checksums verified). */
static bool sent(struct ctx *c, struct pkt *p, size_t *flen)
{
	const uint8_t *f;

	if (test_tx_n(c) != 1 || !(f = test_tx(c, 0, flen)))
		return false;
	return pkt_parse(f, *flen, true, p) == DROP_NONE;
}

TEST(icmp_err_frag_needed_v4)
{
	struct ctx *c = test_ctx();
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP, .type = 3,
			      .code = 4, .info = 1400, .has_offender = true };
	struct icmp_err_orig o = orig(false);
	struct pkt p;
	size_t flen;

	e.offender = o.host_dst;
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen));
	CHECK(p.l4proto == IPPROTO_ICMP && p.icmp.type == 3 &&
	      p.icmp.code == 4);
	CHECK_EQ(rd16(p.l4 + 6), 1400);
	CHECK_EQ(p.l3len, 576);			/* quote cut at 576 bytes */
	/* Quoted: the guest's IPv4 header and UDP header, full lengths. */
	CHECK_EQ(rd16(p.payload + 2), 20 + 8 + sizeof(payload));
	CHECK_EQ(rd16(p.payload + 20), 5000);
	CHECK_EQ(rd16(p.payload + 24), 8 + sizeof(payload));
	CHECK(!memcmp(p.payload + 12, &p.dst4, 4));
	/* Reported by the destination itself: it appears as the source. */
	CHECK(p.src4.s_addr == inet_addr("203.0.113.9"));
	test_ctx_free(c);
}

TEST(icmp_err_packet_too_big_v6_from_router)
{
	struct ctx *c = test_ctx();
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP6, .type = 2,
			      .info = 1280, .has_offender = true };
	struct icmp_err_orig o = orig(true);
	struct in6_addr gw;
	struct pkt p;
	size_t flen;

	inet_pton(AF_INET6, "2001:db8:77::1", &e.offender.a6);
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen));
	CHECK(p.l4proto == IPPROTO_ICMPV6 && p.icmp.type == 2);
	CHECK_EQ(rd32(p.l4 + 4), 1280);
	CHECK_EQ(p.l3len, 1280);		/* quote cut at 1280 bytes */
	/* A router on the host's path reports as itself. */
	CHECK(in6_eq(&p.src6, &e.offender.a6));
	/* One the guest could not address (link-local, the host's own
	 * address) hides behind the gateway. */
	inet_pton(AF_INET6, "fe80::77", &e.offender.a6);
	test_tx_reset(c);
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen));
	inet_pton(AF_INET6, "fe80::1", &gw);
	CHECK(in6_eq(&p.src6, &gw));
	e.offender.a6 = c->conf.ip6.addr;
	test_tx_reset(c);
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen) && in6_eq(&p.src6, &gw));
	test_ctx_free(c);
}

/* Time exceeded (traceroute's probes, sent with the guest's TTL): from
 * the router, quoting the guest's datagram with its own ports. */
TEST(icmp_err_time_exceeded_from_router)
{
	struct ctx *c = test_ctx();
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP, .type = 11,
			      .code = 0, .has_offender = true };
	struct icmp_err_orig o = orig(false);
	struct pkt p;
	size_t flen;

	inany_from4(&e.offender, (struct in_addr){ inet_addr("203.0.113.1") });
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen));
	CHECK(p.l4proto == IPPROTO_ICMP && p.icmp.type == 11 &&
	      p.icmp.code == 0);
	CHECK(p.src4.s_addr == inet_addr("203.0.113.1"));
	CHECK(!memcmp(p.payload + 12, &p.dst4, 4));	/* quoted source */
	CHECK_EQ(rd16(p.payload + 20), 5000);		/* quoted ports */
	CHECK_EQ(rd16(p.payload + 22), 53);
	test_tx_reset(c);
	o = orig(true);
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP6, .type = 3,
			       .code = 0, .has_offender = true };
	inet_pton(AF_INET6, "2001:db8:77::1", &e.offender.a6);
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen));
	CHECK(p.l4proto == IPPROTO_ICMPV6 && p.icmp.type == 3);
	CHECK(in6_eq(&p.src6, &e.offender.a6));
	CHECK_EQ(rd16(p.payload + 40), 5000);
	test_ctx_free(c);
}

TEST(icmp_err_local_emsgsize_and_unreach_codes)
{
	struct ctx *c = test_ctx();
	struct icmp_err e = { .origin = SO_EE_ORIGIN_LOCAL, .errnum = EMSGSIZE,
			      .info = 9000 };
	struct icmp_err_orig o = orig(false);
	struct pkt p;
	size_t flen;

	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen) && p.icmp.type == 3 && p.icmp.code == 4);
	CHECK_EQ(rd16(p.l4 + 6), 9000);
	test_tx_reset(c);
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP, .type = 3,
			       .code = 10 };	/* host prohibited */
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen) && p.icmp.code == 13);
	test_tx_reset(c);
	o = orig(true);
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP6, .type = 1,
			       .code = 4 };
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(sent(c, &p, &flen) && p.icmp.type == 1 && p.icmp.code == 4);
	test_ctx_free(c);
}

/* Parameter problems, unknown time exceeded codes, other origins: not
 * the guest's. */
TEST(icmp_err_not_translated)
{
	struct ctx *c = test_ctx();
	struct icmp_err_orig o4 = orig(false), o6 = orig(true);
	struct icmp_err e;

	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP, .type = 11,
			       .code = 2 };
	CHECK(!icmp_err_to_guest(c, &e, &o4));
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP, .type = 12 };
	CHECK(!icmp_err_to_guest(c, &e, &o4));
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP6, .type = 4 };
	CHECK(!icmp_err_to_guest(c, &e, &o6));
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_ICMP6, .type = 1 };
	CHECK(!icmp_err_to_guest(c, &e, &o4));	/* family mismatch */
	e = (struct icmp_err){ .origin = SO_EE_ORIGIN_LOCAL,
			       .errnum = ECONNREFUSED };
	CHECK(!icmp_err_to_guest(c, &e, &o4));
	CHECK_EQ(test_tx_n(c), 0);
	test_ctx_free(c);
}
