/* test_icmp_quote.c - icmp_echo_requote(): an echo request quoted by an
 * ICMP/ICMPv6 error gets the guest's id back with a checksum that
 * verifies (RFC 1624 incremental update), on full and truncated quotes,
 * and the error sent to the guest carries it so. */
#include <arpa/inet.h>
#include <linux/errqueue.h>

#include "checksum.h"
#include "ferry.h"
#include "icmp_err.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

#define HOST_ID		0xbeef		/* the id the kernel gave the echo */
#define GUEST_ID	0x0102		/* the id the guest chose */

/* echo_host() - an echo request (type t) as the host socket sent it: the
 * kernel's id, checksum over 100 payload bytes (for ICMPv6 with the
 * pseudo-header addresses a6[0] -> a6[1]). Returns its length. */
static size_t echo_host(uint8_t *m, uint8_t t, const struct in6_addr *a6)
{
	size_t i, len = ICMP_HLEN + 100;

	memset(m, 0, ICMP_HLEN);
	m[0] = t;
	wr16(m + 4, HOST_ID);
	wr16(m + 6, 7);
	for (i = ICMP_HLEN; i < len; i++)
		m[i] = (uint8_t)(i * 13 + 5);
	wr16(m + 2, a6 ? csum_l4_6(&a6[0], &a6[1], IPPROTO_ICMPV6, m, len)
		       : csum(m, len));
	return len;
}

TEST(icmp_requote_v4_full_and_truncated)
{
	uint8_t m[256], cut[28], fresh[256];
	size_t len = echo_host(m, 8, NULL);

	memcpy(cut, m, sizeof(cut));
	icmp_echo_requote(m, len, GUEST_ID, NULL, NULL);
	CHECK_EQ(rd16(m + 4), GUEST_ID);
	CHECK_EQ(csum(m, len), 0);		/* verifies */
	/* the same as the guest's own checksum */
	memcpy(fresh, m, len);
	wr16(fresh + 2, 0);
	CHECK_EQ(rd16(m + 2), csum(fresh, len));
	/* a quote cut short: the same update, without the rest */
	icmp_echo_requote(cut, sizeof(cut), GUEST_ID, NULL, NULL);
	CHECK(!memcmp(cut, m, sizeof(cut)));
}

TEST(icmp_requote_v6_addresses_too)
{
	struct in6_addr host[2], guest[2];
	uint8_t m[256], cut[ICMP_HLEN];
	size_t len;

	inet_pton(AF_INET6, "2001:db8::2", &host[0]);	/* host socket */
	inet_pton(AF_INET6, "::1", &host[1]);		/* mapped gateway */
	inet_pton(AF_INET6, "2001:db8::99", &guest[0]);
	inet_pton(AF_INET6, "fe80::1", &guest[1]);
	len = echo_host(m, 128, host);
	memcpy(cut, m, sizeof(cut));
	icmp_echo_requote(m, len, GUEST_ID, host, guest);
	CHECK_EQ(rd16(m + 4), GUEST_ID);
	CHECK_EQ(csum_l4_6(&guest[0], &guest[1], IPPROTO_ICMPV6, m, len), 0);
	icmp_echo_requote(cut, sizeof(cut), GUEST_ID, host, guest);
	CHECK(!memcmp(cut, m, sizeof(cut)));
}

TEST(icmp_requote_too_short_untouched)
{
	uint8_t m[ICMP_HLEN] = { 8, 0, 0x12, 0x34, 0xbe, 0xef, 0, 7 };
	uint8_t copy[ICMP_HLEN];

	memcpy(copy, m, sizeof(m));
	icmp_echo_requote(m, ICMP_HLEN - 1, GUEST_ID, NULL, NULL);
	CHECK(!memcmp(m, copy, sizeof(m)));
}

/* The error the guest gets quotes its echo with a checksum that
 * verifies: unreachable for an echo to 203.0.113.9. */
TEST(icmp_requote_error_to_guest_verifies)
{
	struct ctx *c = test_ctx();
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP, .type = 3,
			      .code = 1 };
	struct icmp_err_orig o = { .echo = true };
	struct in_addr s4, d4;
	const uint8_t *f, *q;
	uint8_t m[256];
	struct pkt p;
	size_t flen;

	inet_pton(AF_INET, "198.51.100.2", &s4);
	inet_pton(AF_INET, "203.0.113.9", &d4);
	inany_from4(&o.src, s4);
	inany_from4(&o.dst, d4);
	o.host_dst = o.dst;
	o.payload = m;
	o.len = o.full_len = echo_host(m, 8, NULL);
	icmp_echo_requote(m, o.len, GUEST_ID, NULL, NULL);
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(test_tx_n(c) == 1 && (f = test_tx(c, 0, &flen)));
	CHECK(pkt_parse(f, flen, true, &p) == DROP_NONE);
	CHECK(p.l4proto == IPPROTO_ICMP && p.icmp.type == 3);
	q = p.payload + IP4_HLEN;		/* the quoted echo */
	CHECK_EQ(p.payload_len, IP4_HLEN + o.len);
	CHECK_EQ(rd16(q + 4), GUEST_ID);
	CHECK_EQ(csum(q, o.len), 0);
	test_ctx_free(c);
}
