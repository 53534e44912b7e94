/* test_wire_golden.c - frames ferry builds, compared byte for byte with
 * the frames the same inputs drew before the builders were moved onto
 * the named field views of wire.h (issue 19 item 5: a refactor that must
 * change no byte). Each golden frame below was captured on main at
 * ed518fd with WIRE_GOLDEN_DUMP=1 ./build/unit wire_golden, which prints
 * each frame as hex instead of comparing it.
 *
 * The TCP SYN-ACK depends on a port the kernel chose and on the ISN
 * derived from it: those bytes (ports, sequence number, checksum) are
 * masked in both frames, the checksum verified by parsing instead. */
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ferry.h"
#include "icmp_err.h"
#include "pkt.h"
#include "tcp_harness.h"
#include "unit.h"
#include "util.h"

/* hexval() - the value of hex digit ch, -1 if it is none. */
static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* unhex() - the bytes of hex string s into out (room: max); returns
 * their count, 0 if s is malformed or too long. */
static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	int hi, lo;

	for (; *s; s += 2) {
		if ((hi = hexval(s[0])) < 0 || (lo = hexval(s[1])) < 0 ||
		    n == max)
			return 0;
		out[n++] = (uint8_t)(hi << 4 | lo);
	}
	return n;
}

/* golden_is() - frame f (len bytes), with the bytes where mask is
 * non-zero ignored (mask NULL: none), equals golden hex frame want; in
 * dump mode (WIRE_GOLDEN_DUMP set) prints it as "name: hex" instead and
 * holds. */
static bool golden_is(const char *name, const uint8_t *f, size_t len,
		      const char *want, const uint8_t *mask)
{
	uint8_t g[2048];
	size_t i, n;

	if (getenv("WIRE_GOLDEN_DUMP")) {
		printf("%s: ", name);
		for (i = 0; i < len; i++)
			printf("%02x", f[i]);
		printf("\n");
		return true;
	}
	if ((n = unhex(want, g, sizeof(g))) != len)
		return false;
	for (i = 0; i < len; i++)
		if ((!mask || !mask[i]) && f[i] != g[i])
			return false;
	return true;
}

/* sent_is() - the only frame sent to the guest equals golden frame want
 * (see golden_is()). */
static bool sent_is(struct ctx *c, const char *name, const char *want)
{
	const uint8_t *f;
	size_t len;

	if (test_tx_n(c) != 1 || !(f = test_tx(c, 0, &len)))
		return false;
	return golden_is(name, f, len, want, NULL);
}

static const char arp_reply[] =
	"0200000000029a559a559a55080600010800060400029a559a559a55c6336401"
	"020000000002c6336402"
	"000000000000000000000000000000000000";		/* padding to 60 */

TEST(wire_golden_arp_reply)
{
	struct ctx *c = test_ctx();
	uint8_t f[64];

	test_input(c, f, test_frame_arp_req(f));
	CHECK(sent_is(c, "arp_reply", arp_reply));
	test_ctx_free(c);
}

/* icmp6_in() - ICMPv6 message m from src to dst, hop limit 255. */
static void icmp6_in(struct ctx *c, const char *src, const char *dst,
		     const uint8_t *m, size_t len)
{
	uint8_t f[512];
	size_t n = test_frame_ip6(f, src, dst, IPPROTO_ICMPV6, m, len);

	f[ETH_HLEN_ + 7] = 255;		/* hop limit: not in the checksum */
	test_input(c, f, n);
}

static const char ndp_na[] =
	"0200000000029a559a559a5586dd6000000000203afffe800000000000000000"
	"000000000001fe8000000000000000000000000000028800cb1be0000000fe80"
	"000000000000000000000000000102019a559a559a55";

TEST(wire_golden_ndp_na)
{
	static const uint8_t ns[32] = {
		135, 0, 0, 0, 0, 0, 0, 0,
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
		1, 1, 0x02, 0, 0, 0, 0, 0x02,
	};
	struct ctx *c = test_ctx();

	icmp6_in(c, "fe80::2", "ff02::1:ff00:1", ns, sizeof(ns));
	CHECK(sent_is(c, "ndp_na", ndp_na));
	test_ctx_free(c);
}

static const char ndp_ra[] =
	"0200000000029a559a559a5586dd6000000000703afffe800000000000000000"
	"000000000001fe80000000000000000000000000000286002e7540c023280000"
	"00000000000001019a559a559a5505010000000005dc030440c0ffffffffffff"
	"ffff0000000020010db800000000000000000000000019030000ffffffff2001"
	"0db80000000000000000000000531f030000ffffffff076578616d706c650474"
	"657374000000";

TEST(wire_golden_ndp_ra)
{
	static const uint8_t rs[16] = {
		133, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0x02, 0, 0, 0, 0, 0x02,
	};
	struct ctx *c = test_ctx();

	icmp6_in(c, "fe80::2", "ff02::2", rs, sizeof(rs));
	CHECK(sent_is(c, "ndp_ra", ndp_ra));
	test_ctx_free(c);
}

static const char dhcpv6_reply[] =
	"0200000000029a559a559a5586dd60000000007e1140fe800000000000000000"
	"000000000001fe80000000000000000000000000000202230222007ec2f607ab"
	"cdef0002000a000300019a559a559a550001000a00030001020000000002000e"
	"00000003002800000007ffffffffffffffff0005001820010db8000000000000"
	"000000000002ffffffffffffffff0017001020010db800000000000000000000"
	"00530018000e076578616d706c65047465737400";

TEST(wire_golden_dhcpv6_reply)
{
	/* Solicit, xid abcdef: client id, rapid commit, IA_NA 7, ORO for
	 * DNS servers, domain list and FQDN. */
	static const uint8_t m[] = {
		1, 0xab, 0xcd, 0xef,
		0, 1, 0, 10, 0, 3, 0, 1, 2, 0, 0, 0, 0, 2,
		0, 14, 0, 0,
		0, 3, 0, 12, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 6, 0, 6, 0, 23, 0, 24, 0, 39,
	};
	struct ctx *c = test_ctx();
	uint8_t f[512], l4[256];
	size_t n;

	wr16(l4, 546);
	wr16(l4 + 2, 547);
	wr16(l4 + 4, (uint16_t)(UDP_HLEN + sizeof(m)));
	wr16(l4 + 6, 0);
	memcpy(l4 + UDP_HLEN, m, sizeof(m));
	n = test_frame_ip6(f, "fe80::2", "ff02::1:2", IPPROTO_UDP, l4,
			   UDP_HLEN + sizeof(m));
	test_input(c, f, n);
	CHECK(sent_is(c, "dhcpv6_reply", dhcpv6_reply));
	test_ctx_free(c);
}

static const char dhcp_offer[] =
	"0200000000029a559a559a55080045000156000040004011e52cc6336401c633"
	"6402004300440142251302010600123456780000000000000000c63364020000"
	"0000000000000200000000020000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000638253633501023604c6"
	"3364013304ffffffff0104ffffff000304c63364010604c63364350f0c657861"
	"6d706c652e746573741a0205dc1c04c63364ff770e076578616d706c65047465"
	"737400ff";

TEST(wire_golden_dhcp_offer)
{
	struct ctx *c = test_ctx();
	uint8_t f[600], l4[300];
	uint8_t *b = l4 + UDP_HLEN;
	size_t n = 0;

	memset(l4, 0, sizeof(l4));
	b[0] = 1;				/* BOOTREQUEST */
	b[1] = 1;
	b[2] = 6;
	wr32(b + 4, 0x12345678);		/* xid */
	memcpy(b + 28, (const uint8_t[6]){ 2, 0, 0, 0, 0, 2 }, 6);
	wr32(b + 236, 0x63825363);
	n = 240;
	b[n++] = 53;				/* DHCPDISCOVER */
	b[n++] = 1;
	b[n++] = 1;
	b[n++] = 55;				/* parameter request list */
	b[n++] = 4;
	b[n++] = 1;
	b[n++] = 3;
	b[n++] = 6;
	b[n++] = 15;
	b[n++] = 255;
	wr16(l4, 68);
	wr16(l4 + 2, 67);
	wr16(l4 + 4, (uint16_t)(UDP_HLEN + n));
	test_input(c, f, test_frame_ip4(f, "0.0.0.0", "255.255.255.255",
					 IPPROTO_UDP, l4, UDP_HLEN + n));
	CHECK(sent_is(c, "dhcp_offer", dhcp_offer));
	test_ctx_free(c);
}

/* inany_of() - address text s (IPv4 or IPv6) as a union inany. */
static union inany inany_of(const char *s)
{
	union inany a;
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1)
		inany_from4(&a, a4);
	else
		inet_pton(AF_INET6, s, &a.a6);
	return a;
}

/* err_sent() - icmp_err_to_guest() for error e about the guest's
 * datagram o from src to dst (payload: 64 bytes of fill unless o has
 * one) sends exactly golden frame want. */
static bool err_sent(const struct icmp_err *e, struct icmp_err_orig *o,
		     const char *src, const char *dst, uint8_t fill,
		     const char *name, const char *want)
{
	struct ctx *c = test_ctx();
	uint8_t m[64];
	bool ok;

	o->src = inany_of(src);
	o->dst = o->host_dst = inany_of(dst);
	if (!o->payload) {
		memset(m, fill, sizeof(m));
		o->payload = m;
		o->len = o->full_len = sizeof(m);
	}
	ok = icmp_err_to_guest(c, e, o) && sent_is(c, name, want);
	test_ctx_free(c);
	return ok;
}

static const char icmp4_err[] =
	"ffffffffffff9a559a559a55080045000060000040004001e632c6336401c633"
	"640203011a180000000045000044000040004001d479c6336402cb0071090800"
	"0000010200076d7a8794a1aebbc8d5e2effc091623303d4a5764717e8b98a5b2"
	"bfccd9e6f3000d1a2734414e5b68";

TEST(wire_golden_icmp4_unreachable)
{
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP, .type = 3,
			      .code = 1 };
	struct icmp_err_orig o = { .echo = true };
	uint8_t m[ICMP_HLEN + 40];
	size_t i;

	memset(m, 0, ICMP_HLEN);	/* an echo request, checksum 0 */
	m[0] = 8;
	wr16(m + 4, 0x0102);
	wr16(m + 6, 7);
	for (i = ICMP_HLEN; i < sizeof(m); i++)
		m[i] = (uint8_t)(i * 13 + 5);
	o.payload = m;
	o.len = o.full_len = sizeof(m);
	CHECK(err_sent(&e, &o, "198.51.100.2", "203.0.113.9", 0, "icmp4_err",
		       icmp4_err));
}

static const char icmp4_frag[] =
	"ffffffffffff9a559a559a55080045000078000040004001e61ac6336401c633"
	"640203045e1d000005784500005c000040004011d451c6336402cb0071099c40"
	"00350048b15d5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
	"5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
	"5a5a5a5a5a5a";

TEST(wire_golden_icmp4_frag_needed_udp)
{
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP, .type = 3,
			      .code = 4, .info = 1400 };
	struct icmp_err_orig o = { .sport = 40000, .dport = 53 };

	CHECK(err_sent(&e, &o, "198.51.100.2", "203.0.113.9", 0x5a,
		       "icmp4_frag", icmp4_frag));
}

static const char icmp6_big[] =
	"ffffffffffff9a559a559a5586dd6000000000783afffe800000000000000000"
	"00000000000120010db800000000000000000000000202005a69000005786000"
	"00000048114020010db800000000000000000000000220010db8000100000000"
	"0000000000099c400035004852b6a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
	"a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
	"a5a5a5a5a5a5a5a5a5a5a5a5a5a5";

TEST(wire_golden_icmp6_too_big_udp)
{
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP6, .type = 2,
			      .code = 0, .info = 1400 };
	struct icmp_err_orig o = { .sport = 40000, .dport = 53 };

	CHECK(err_sent(&e, &o, "2001:db8::2", "2001:db8:1::9", 0xa5,
		       "icmp6_big", icmp6_big));
}

static const char tcp_rst4[] =
	"0200000000029a559a559a55080045000028000040004006e665c6336401c633"
	"640200099e3400012fd100000000500400008d660000"
	"000000000000";					/* padding to 60 */

TEST(wire_golden_tcp_rst_no_connection)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40500, .dport = 9,
			    .seq = 5000, .ack = 77777 };

	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, "x", 1, NULL, 0);
	CHECK(sent_is(c, "tcp_rst4", tcp_rst4));
	tcp_test_free(c);
}

static const char tcp_synack4[] =
	"0200000000029a559a559a55080045000034000040004006e659c6336401c633"
	"64029a279e35f0128496000003e98012ffff69a50000020405b4010303090101"
	"0402";
static const char tcp_synack6[] =
	"0200000000029a559a559a5586dd6000000000200640fe800000000000000000"
	"00000000000120010db800000000000000000000000297119e3592e406f50000"
	"03e98012ffff6fcd0000020405a00103030901010402";

/* synack_is() - the SYN-ACK answering a SYN with MSS, window scale,
 * SACK-permitted and timestamps (family v6) equals golden want but for
 * the port and ISN bytes, masked, and its checksum verifies. */
static bool synack_is(bool v6, const char *name, const char *want)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 4, 2, 8, 10,
					0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7 };
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40501, .seq = 1000 };
	uint8_t mask[2048] = { 0 };
	size_t l4 = ETH_HLEN_ + (v6 ? IP6_HLEN : IP4_HLEN), len;
	const uint8_t *f;
	struct pkt p;
	bool ok;
	int ls = listener(v6, &g.dport);

	if (ls < 0)
		return false;
	test_tx_reset(c);
	guest_send(&g, TCP_F_SYN, NULL, 0, opts, sizeof(opts));
	pump(c, 2000, 1);
	ok = (f = test_tx(c, 0, &len)) && len < sizeof(mask) &&
	     pkt_parse(f, len, true, &p) == DROP_NONE;
	if (ok) {
		memset(mask + l4, 1, 8);		/* ports, seq */
		memset(mask + l4 + 16, 1, 2);		/* checksum */
		ok = golden_is(name, f, len, want, mask);
	}
	close(ls);
	tcp_test_free(c);
	return ok;
}

TEST(wire_golden_tcp_synack4)
{
	CHECK(synack_is(false, "tcp_synack4", tcp_synack4));
}

TEST(wire_golden_tcp_synack6)
{
	CHECK(synack_is(true, "tcp_synack6", tcp_synack6));
}
