/* test_wire.c - each header built by its builder (wire.h's named fields:
 * eth_build(), ip4_build(), ip6_build(), udp_hdr_put(), tcp_hdr_put(),
 * ndopt_put(), and ARP and ICMP errors through their services) and
 * parsed back with pkt_parse(): every field the builder wrote is the one
 * the view reads. */
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <string.h>

#include "checksum.h"
#include "ferry.h"
#include "icmp_err.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"
#include "wire.h"

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x0b };

/* frame4() - Ethernet and IPv4 headers at f around l4len bytes already
 * at f + 34 (checksum of proto's header filled by sum_at, a transport
 * checksum field offset, unless 0); returns the frame length. */
static size_t frame4(uint8_t *f, uint8_t proto, size_t l4len, size_t sum_at)
{
	struct in_addr s, d;
	uint8_t *l3 = eth_build(f, mac_a, mac_b, ETH_P_IP_), *l4;

	inet_pton(AF_INET, "198.51.100.7", &s);
	inet_pton(AF_INET, "203.0.113.9", &d);
	l4 = ip4_build(l3, s, d, proto, l4len, 0x1234);
	if (sum_at)
		wr16(l4 + sum_at, csum_l4_4(s, d, proto, l4, l4len));
	return (size_t)(l4 - f) + l4len;
}

TEST(wire_eth_ip4_udp_roundtrip)
{
	uint8_t f[128];
	uint8_t *u = f + ETH_HLEN_ + IP4_HLEN;
	struct pkt p;
	size_t n;

	udp_hdr_put(u, 40001, 53, UDP_HLEN + 5);
	memcpy(u + UDP_HLEN, "hello", 5);
	n = frame4(f, IPPROTO_UDP, UDP_HLEN + 5, UDP_OFF_CSUM);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);
	CHECK(!memcmp(p.eth_dst, mac_a, 6) && !memcmp(p.eth_src, mac_b, 6));
	CHECK_EQ(p.ethertype, ETH_P_IP_);
	CHECK(p.is_ip && !p.is_v6);
	CHECK_EQ(p.ttl, 64);
	CHECK_EQ(p.tos, 0);
	CHECK_EQ(p.l4proto, IPPROTO_UDP);
	CHECK_EQ(ntohl(p.src4.s_addr), 0xc6336407);
	CHECK_EQ(ntohl(p.dst4.s_addr), 0xcb007109);
	CHECK_EQ(rd16(p.l3 + IP4_OFF_ID), 0x1234);
	CHECK_EQ(rd16(p.l3 + IP4_OFF_FRAG), IP4_F_DF);
	CHECK_EQ(p.udp.sport, 40001);
	CHECK_EQ(p.udp.dport, 53);
	CHECK_EQ(p.udp.len, UDP_HLEN + 5);
	CHECK(p.payload_len == 5 && !memcmp(p.payload, "hello", 5));
}

TEST(wire_ip6_tcp_options_roundtrip)
{
	/* MSS 1440, NOP, window scale 7, NOP NOP SACK-permitted, NOP NOP
	 * timestamps, NOP NOP SACK with one block: at wire.h's offsets. */
	uint8_t f[256], o[40] = { 0 }, *l3, *t, *x;
	struct in6_addr s, d;
	size_t optlen = 0, l4len;
	struct pkt p;

	x = o;
	x[TCPOPT_OFF_KIND] = TCPOPT_MAXSEG;
	x[TCPOPT_OFF_LEN] = TCPOLEN_MAXSEG;
	wr16(x + TCPOPT_OFF_VAL, 1440);
	optlen += TCPOLEN_MAXSEG;
	o[optlen++] = TCPOPT_NOP;
	x = o + optlen;
	x[TCPOPT_OFF_KIND] = TCPOPT_WINDOW;
	x[TCPOPT_OFF_LEN] = TCPOLEN_WINDOW;
	x[TCPOPT_OFF_VAL] = 7;
	optlen += TCPOLEN_WINDOW;
	o[optlen++] = TCPOPT_NOP;
	o[optlen++] = TCPOPT_NOP;
	o[optlen++] = TCPOPT_SACK_PERMITTED;
	o[optlen++] = TCPOLEN_SACK_PERMITTED;
	o[optlen++] = TCPOPT_NOP;
	o[optlen++] = TCPOPT_NOP;
	x = o + optlen;
	x[TCPOPT_OFF_KIND] = TCPOPT_TIMESTAMP;
	x[TCPOPT_OFF_LEN] = TCPOLEN_TIMESTAMP;
	wr32(x + TCPOPT_OFF_VAL, 0x01020304);
	wr32(x + TCPOPT_OFF_TSECR, 0x05060708);
	optlen += TCPOLEN_TIMESTAMP;
	CHECK_EQ(optlen % 4, 0);

	inet_pton(AF_INET6, "2001:db8::7", &s);
	inet_pton(AF_INET6, "2001:db8:1::9", &d);
	l3 = eth_build(f, mac_a, mac_b, ETH_P_IPV6_);
	l4len = TCP_HLEN + optlen;
	t = ip6_build(l3, &s, &d, IPPROTO_TCP, l4len, 33);
	tcp_hdr_put(t, 40002, 80, 0xfffffff0u, 0x80000001u, l4len,
		    TCP_F_SYN | TCP_F_ACK | TCP_F_ECE, 0xabcd);
	memcpy(t + TCP_HLEN, o, optlen);
	wr16(t + TCP_OFF_CSUM,
	     csum_l4_6(&s, &d, IPPROTO_TCP, t, l4len));
	CHECK_EQ(pkt_parse(f, (size_t)(t - f) + l4len, true, &p), DROP_NONE);
	CHECK(p.is_v6 && p.ttl == 33 && p.l4proto == IPPROTO_TCP);
	CHECK(in6_eq(&p.src6, &s) && in6_eq(&p.dst6, &d));
	CHECK_EQ(p.tcp.sport, 40002);
	CHECK_EQ(p.tcp.dport, 80);
	CHECK_EQ(p.tcp.seq, 0xfffffff0u);
	CHECK_EQ(p.tcp.ack, 0x80000001u);
	CHECK_EQ(p.tcp.doff, l4len);
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK | TCP_F_ECE);
	CHECK_EQ(p.tcp.window, 0xabcd);
	CHECK(p.tcp.has_mss && p.tcp.mss == 1440);
	CHECK(p.tcp.has_wscale && p.tcp.wscale == 7);
	CHECK(p.tcp.has_sack_perm);
	CHECK(p.tcp.has_ts && p.tcp.tsval == 0x01020304 &&
	      p.tcp.tsecr == 0x05060708);
	CHECK_EQ(p.payload_len, 0);
}

TEST(wire_tcp_sack_blocks_roundtrip)
{
	uint8_t o[2 + TCPOPT_SACK_HLEN + 2 * TCPOPT_SACK_BLK], *sack, *blk;
	struct tcp_view v;
	unsigned int i;

	memset(&v, 0, sizeof(v));
	o[0] = o[1] = TCPOPT_NOP;
	sack = o + 2;
	sack[TCPOPT_OFF_KIND] = TCPOPT_SACK;
	sack[TCPOPT_OFF_LEN] = TCPOPT_SACK_HLEN + 2 * TCPOPT_SACK_BLK;
	for (i = 0; i < 2; i++) {
		blk = sack + TCPOPT_SACK_HLEN + i * TCPOPT_SACK_BLK;
		wr32(blk, 1000 * (i + 1));
		wr32(blk + TCPOPT_SACK_RIGHT, 1000 * (i + 1) + 500);
	}
	CHECK(tcp_opts_parse(o, sizeof(o), &v));
	CHECK(v.has_sack);
	CHECK_EQ(v.nsack, 2);
	CHECK_EQ(v.sack[0][0], 1000);
	CHECK_EQ(v.sack[0][1], 1500);
	CHECK_EQ(v.sack[1][0], 2000);
	CHECK_EQ(v.sack[1][1], 2500);
}

TEST(wire_arp_reply_parses_back)
{
	struct ctx *c = test_ctx();
	uint8_t f[64];
	const uint8_t *r;
	struct pkt p;
	size_t len;

	test_input(c, f, test_frame_arp_req(f));
	CHECK(test_tx_n(c) == 1 && (r = test_tx(c, 0, &len)));
	CHECK_EQ(pkt_parse(r, len, true, &p), DROP_NONE);
	CHECK_EQ(p.ethertype, ETH_P_ARP_);
	CHECK_EQ(p.arp.op, ARP_OP_REPLY);
	CHECK(!memcmp(p.arp.sha, c->conf.our_mac, 6));
	CHECK(!memcmp(p.arp.tha, f + ETH_HLEN_ + ARP_OFF_SHA, 6));
	CHECK(!memcmp(&p.arp.spa, f + ETH_HLEN_ + ARP_OFF_TPA, 4));
	CHECK(!memcmp(&p.arp.tpa, f + ETH_HLEN_ + ARP_OFF_SPA, 4));
	test_ctx_free(c);
}

TEST(wire_icmp_error_parses_back)
{
	struct ctx *c = test_ctx();
	struct icmp_err e = { .origin = SO_EE_ORIGIN_ICMP, .type = 3,
			      .code = 4, .info = 1400 };
	struct icmp_err_orig o = { .sport = 40003, .dport = 53 };
	struct in_addr s4, d4;
	const uint8_t *f, *q;
	uint8_t m[32];
	struct pkt p, inner;
	size_t len;

	inet_pton(AF_INET, "198.51.100.2", &s4);
	inet_pton(AF_INET, "203.0.113.9", &d4);
	inany_from4(&o.src, s4);
	inany_from4(&o.dst, d4);
	o.host_dst = o.dst;
	memset(m, 0x11, sizeof(m));
	o.payload = m;
	o.len = o.full_len = sizeof(m);
	CHECK(icmp_err_to_guest(c, &e, &o));
	CHECK(test_tx_n(c) == 1 && (f = test_tx(c, 0, &len)));
	CHECK_EQ(pkt_parse(f, len, true, &p), DROP_NONE);
	CHECK(p.l4proto == IPPROTO_ICMP && p.icmp.type == 3 &&
	      p.icmp.code == 4);
	CHECK_EQ(rd16(p.l4 + ICMP_OFF_MTU4), 1400);
	/* the quote: an IPv4 header and the guest's UDP datagram, read
	 * back through the same views (an Ethernet header put before it) */
	q = p.payload;
	{
		uint8_t g[128];

		memcpy(eth_build(g, mac_a, mac_b, ETH_P_IP_), q,
		       p.payload_len);
		CHECK_EQ(pkt_parse(g, ETH_HLEN_ + p.payload_len, true, &inner),
			 DROP_NONE);
	}
	CHECK(inner.l4proto == IPPROTO_UDP);
	CHECK(inner.src4.s_addr == s4.s_addr && inner.dst4.s_addr == d4.s_addr);
	CHECK(inner.udp.sport == 40003 && inner.udp.dport == 53);
	CHECK_EQ(inner.payload_len, sizeof(m));
	test_ctx_free(c);
}

TEST(wire_ndopt_put_units)
{
	uint8_t o[NDOPT_PFX_LEN];

	ndopt_put(o, 3, NDOPT_PFX_LEN);
	CHECK_EQ(o[NDOPT_OFF_TYPE], 3);
	CHECK_EQ(o[NDOPT_OFF_LEN], NDOPT_PFX_LEN / NDOPT_UNIT);
}
