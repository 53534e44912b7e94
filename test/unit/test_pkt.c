/* test_pkt.c - frame parser, checksums and ARP: good, malformed and
 * truncated input. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

TEST(csum_rfc1071_example)
{
	/* RFC 1071 section 3 example words: sum 0xddf2, checksum ~ = 0x220d */
	static const uint8_t b[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5,
				     0xf6, 0xf7 };
	CHECK_EQ(csum_fold(csum_add(0, b, sizeof(b))), 0x220d);
	/* Odd length: trailing byte is the high half of a word. */
	static const uint8_t o[] = { 0x01 };
	CHECK_EQ(csum(o, 1), (uint16_t)~0x0100);
}

TEST(csum_split_equals_whole)
{
	uint8_t b[1001];
	size_t i;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 7 + 3);
	/* Splitting at an even offset must not change the result. */
	CHECK_EQ(csum_fold(csum_add(csum_add(0, b, 500), b + 500, 501)),
		 csum(b, sizeof(b)));
}

/* ref_csum() - the plain RFC 1071 loop, to check the fast version. */
static uint32_t ref_csum(uint32_t sum, const uint8_t *b, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

TEST(csum_matches_reference_all_lengths_and_alignments)
{
	static uint8_t b[4096 + 16];
	unsigned int seed = 7;
	size_t i, len, off;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)rand_r(&seed);
	for (len = 0; len < 300; len++)
		for (off = 0; off < 8; off++)
			CHECK_EQ(csum_fold(csum_add(0, b + off, len)),
				 csum_fold(ref_csum(0, b + off, len)));
	/* All-ones data exercises every carry. */
	memset(b, 0xff, sizeof(b));
	CHECK_EQ(csum_fold(csum_add(0, b, 4096)),
		 csum_fold(ref_csum(0, b, 4096)));
	CHECK_EQ(csum_fold(csum_add(0xffffu, b, 4095)),
		 csum_fold(ref_csum(0xffffu, b, 4095)));
}

static size_t udp_frame(uint8_t *buf, uint16_t sport, uint16_t dport,
			const char *data)
{
	uint8_t l4[128];
	size_t n = strlen(data);

	wr16(l4, sport);
	wr16(l4 + 2, dport);
	wr16(l4 + 4, (uint16_t)(8 + n));
	wr16(l4 + 6, 0);
	memcpy(l4 + 8, data, n);
	return test_frame_ip4(buf, "198.51.100.2", "198.51.100.1",
			      IPPROTO_UDP, l4, 8 + n);
}

TEST(parse_udp4_good)
{
	uint8_t f[256];
	struct pkt p;
	size_t n = udp_frame(f, 1000, 53, "hello");

	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);
	CHECK(p.is_ip && !p.is_v6);
	CHECK_EQ(p.l4proto, IPPROTO_UDP);
	CHECK_EQ(p.udp.sport, 1000);
	CHECK_EQ(p.udp.dport, 53);
	CHECK_EQ(p.payload_len, 5);
	CHECK(!memcmp(p.payload, "hello", 5));
	/* Ethernet padding past the IP length is cut off. */
	memset(f + n, 0xee, 10);
	CHECK_EQ(pkt_parse(f, n + 10, true, &p), DROP_NONE);
	CHECK_EQ(p.payload_len, 5);
}

TEST(parse_every_truncation_rejected)
{
	uint8_t f[256];
	struct pkt p;
	size_t n = udp_frame(f, 1000, 53, "hello"), i;

	for (i = 0; i < n; i++) {
		uint8_t *copy = malloc(i ? i : 1);	/* exact size: ASan */

		memcpy(copy, f, i);
		CHECK(pkt_parse(copy, i, true, &p) != DROP_NONE);
		free(copy);
	}
}

TEST(parse_ip4_bad_fields)
{
	uint8_t f[256], g[256];
	struct pkt p;
	size_t n = udp_frame(f, 1000, 53, "hello");

	memcpy(g, f, n);
	g[14] = 0x46;			/* ihl 6 without options room */
	CHECK(pkt_parse(g, n, true, &p) != DROP_NONE);
	memcpy(g, f, n);
	g[14] = 0x44;			/* ihl 4 */
	CHECK_EQ(pkt_parse(g, n, true, &p), DROP_IP4_HDRLEN);
	memcpy(g, f, n);
	g[14] = 0x55;			/* version 5 */
	CHECK_EQ(pkt_parse(g, n, true, &p), DROP_IP4_VERSION);
	memcpy(g, f, n);
	wr16(g + 16, 2000);		/* total length beyond frame */
	CHECK_EQ(pkt_parse(g, n, true, &p), DROP_IP4_TOTLEN);
	memcpy(g, f, n);
	g[14 + 8] ^= 1;			/* TTL changed: header csum wrong */
	CHECK_EQ(pkt_parse(g, n, true, &p), DROP_IP4_CSUM);
	memcpy(g, f, n);
	g[n - 1] ^= 0xff;		/* payload changed: UDP csum wrong */
	CHECK_EQ(pkt_parse(g, n, true, &p), DROP_L4_CSUM);
	memcpy(g, f, n);
	wr16(g + 14 + 20 + 4, 9);	/* UDP length inconsistent */
	CHECK_EQ(pkt_parse(g, n, false, &p), DROP_UDP_LEN);
}

TEST(parse_ip4_fragment_refused)
{
	uint8_t f[256];
	struct pkt p;
	size_t n = udp_frame(f, 1000, 53, "hello");

	wr16(f + 14 + 6, 0x2000);	/* MF */
	wr16(f + 14 + 10, 0);
	wr16(f + 14 + 10, csum(f + 14, 20));
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_IP4_FRAG);
}

TEST(parse_tcp_options)
{
	uint8_t l4[40] = { 0 }, f[128];
	struct pkt p;
	size_t n;

	wr16(l4, 40000);
	wr16(l4 + 2, 80);
	wr32(l4 + 4, 12345);
	l4[12] = 10 << 4;		/* 40-byte header */
	l4[13] = TCP_F_SYN;
	wr16(l4 + 14, 64240);
	/* MSS 1460, SACK-perm, TS, NOP, wscale 7 */
	memcpy(l4 + 20, "\x02\x04\x05\xb4\x04\x02\x08\x0a\x00\x00\x00\x01"
		       "\x00\x00\x00\x00\x01\x03\x03\x07", 20);
	n = test_frame_ip4(f, "198.51.100.2", "203.0.113.5", IPPROTO_TCP,
			   l4, 40);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);
	CHECK(p.tcp.has_mss && p.tcp.mss == 1460);
	CHECK(p.tcp.has_sack_perm);
	CHECK(p.tcp.has_ts && p.tcp.tsval == 1);
	CHECK(p.tcp.has_wscale && p.tcp.wscale == 7);
	CHECK_EQ(p.payload_len, 0);

	/* An option whose length runs past the header is refused. */
	l4[38] = 0x09;			/* wscale claims 9 bytes */
	n = test_frame_ip4(f, "198.51.100.2", "203.0.113.5", IPPROTO_TCP,
			   l4, 40);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_TCP_OPTS);
	/* Data offset below 5 words, and beyond the segment. */
	l4[12] = 4 << 4;
	n = test_frame_ip4(f, "198.51.100.2", "203.0.113.5", IPPROTO_TCP,
			   l4, 40);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_TCP_DOFF);
	l4[12] = 15 << 4;
	n = test_frame_ip4(f, "198.51.100.2", "203.0.113.5", IPPROTO_TCP,
			   l4, 40);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_TCP_DOFF);
}

TEST(parse_ip6_ext_headers)
{
	uint8_t l4[32] = { 0 }, f[160];
	struct pkt p;
	size_t n;

	/* Hop-by-hop (8 bytes) then UDP. */
	l4[0] = IPPROTO_UDP;
	l4[1] = 0;
	wr16(l4 + 8, 1000);
	wr16(l4 + 10, 2000);
	wr16(l4 + 12, 8);
	n = test_frame_ip6(f, "2001:db8::2", "2001:db8::1", IPPROTO_HOPOPTS,
			   l4, 16);
	/* Fix the UDP checksum by hand: the builder treated l4 as opaque. */
	{
		struct in6_addr s, d;

		inet_pton(AF_INET6, "2001:db8::2", &s);
		inet_pton(AF_INET6, "2001:db8::1", &d);
		wr16(f + 14 + 40 + 8 + 6, 0);
		wr16(f + 14 + 40 + 8 + 6,
		     csum_l4_6(&s, &d, IPPROTO_UDP, f + 14 + 48, 8));
	}
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);
	CHECK_EQ(p.l4proto, IPPROTO_UDP);
	CHECK_EQ(p.udp.dport, 2000);
	/* Extension header length pointing past the payload. */
	f[14 + 40 + 1] = 5;
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_IP6_EXTHDR);
	/* Fragment header refused. */
	f[14 + 6] = IPPROTO_FRAGMENT;
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_IP6_FRAG);
	/* Payload length beyond the frame. */
	wr16(f + 14 + 4, 500);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_IP6_PLEN);
}

TEST(parse_random_garbage_never_crashes)
{
	uint8_t *f;
	struct pkt p;
	unsigned int seed = 1, i;

	for (i = 0; i < 20000; i++) {
		size_t n = (size_t)(rand_r(&seed) % 200), j;

		f = malloc(n ? n : 1);
		for (j = 0; j < n; j++)
			f[j] = (uint8_t)rand_r(&seed);
		if (n > 14) {		/* make deeper layers reachable */
			f[6] &= 0xfe;
			wr16(f + 12, i % 2 ? ETH_P_IP_ : ETH_P_IPV6_);
			f[14] = i % 2 ? 0x45 : 0x60;
		}
		(void)pkt_parse(f, n, i % 3 != 0, &p);
		free(f);
	}
	CHECK(1);
}

TEST(arp_reply_for_gateway)
{
	struct ctx *c = test_ctx();
	uint8_t f[42], *a = f + 14;
	const uint8_t *r;
	size_t len;

	test_frame_arp_req(f);
	test_input(c, f, sizeof(f));
	CHECK_EQ(test_tx_n(c), 1);
	r = test_tx(c, 0, &len);
	CHECK_EQ(len, ETH_ZLEN_);	/* 42 bytes of ARP, zero-padded */
	CHECK(!memcmp(r + 42, (uint8_t[18]){ 0 }, 18));
	CHECK(!memcmp(r, "\x02\x00\x00\x00\x00\x02", 6));	/* unicast */
	CHECK_EQ(rd16(r + 14 + 6), 2);
	CHECK(!memcmp(r + 14 + 8, c->conf.our_mac, 6));
	CHECK(!memcmp(r + 14 + 14, a + 24, 4));	/* sender = asked addr */

	/* Probe for the guest's own address: no answer (DAD). */
	test_tx_reset(c);
	memset(a + 14, 0, 4);
	inet_pton(AF_INET, "198.51.100.2", a + 24);
	test_input(c, f, sizeof(f));
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_ARP_IGNORED], 1);
	/* Truncated ARP: counted as malformed. */
	test_input(c, f, 30);
	CHECK_EQ(c->stats.drops[DROP_ARP_MALFORMED], 1);
	test_ctx_free(c);
}
