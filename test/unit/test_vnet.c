/* test_vnet.c - offloads: the virtio-net header parser and writer
 * (vnet.c), pkt_parse_off() on GSO frames and partial checksums, and the
 * guest link with virtio-net headers in both directions (tap.c): good
 * frames, and malformed headers dropped with their reason. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"
#include "vnet.h"

/* vh() - a virtio-net header (little-endian fields). */
static void vh(uint8_t *h, uint8_t flags, uint8_t gso, uint16_t hdr_len,
	       uint16_t gso_size, uint16_t csum_start, uint16_t csum_off)
{
	memset(h, 0, VNET_HLEN);
	h[0] = flags;
	h[1] = gso;
	h[2] = (uint8_t)hdr_len;
	h[3] = (uint8_t)(hdr_len >> 8);
	h[4] = (uint8_t)gso_size;
	h[5] = (uint8_t)(gso_size >> 8);
	h[6] = (uint8_t)csum_start;
	h[7] = (uint8_t)(csum_start >> 8);
	h[8] = (uint8_t)csum_off;
	h[9] = (uint8_t)(csum_off >> 8);
}

TEST(vnet_parse_good_and_malformed)
{
	struct pkt_off o;
	uint8_t h[VNET_HLEN];

	vh(h, 0, VNET_GSO_NONE, 0, 0, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 60, &o), DROP_NONE);
	CHECK(!o.gso && !o.csum_partial && !o.csum_valid);

	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4, 54, 1448, 34, 16);
	CHECK_EQ(vnet_hdr_parse(h, 60000, &o), DROP_NONE);
	CHECK_EQ(o.gso, PKT_GSO_TCP4);
	CHECK_EQ(o.gso_size, 1448);
	CHECK_EQ(o.hdr_len, 54);
	CHECK(o.csum_partial);
	CHECK_EQ(o.csum_start, 34);
	CHECK_EQ(o.csum_off, 16);

	/* ECN bit accepted; TCPv6 and USO decoded. */
	vh(h, 0, VNET_GSO_TCPV6 | VNET_GSO_ECN, 0, 1428, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_NONE);
	CHECK_EQ(o.gso, PKT_GSO_TCP6);
	vh(h, 0, VNET_GSO_UDP_L4, 0, 1400, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_NONE);
	CHECK_EQ(o.gso, PKT_GSO_UDP);

	/* DATA_VALID */
	vh(h, VNET_F_DATA_VALID, 0, 0, 0, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_NONE);
	CHECK(o.csum_valid && !o.csum_partial);

	/* Unknown GSO types, UFO, zero gso_size. */
	vh(h, 0, 2, 0, 1000, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_GSO);
	vh(h, 0, VNET_GSO_UDP, 0, 1000, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_GSO);
	vh(h, 0, 6, 0, 1000, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_GSO);
	vh(h, 0, 0x7f, 0, 1000, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_GSO);
	vh(h, 0, VNET_GSO_TCPV4, 54, 0, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_GSO);

	/* hdr_len beyond the frame. */
	vh(h, 0, VNET_GSO_TCPV4, 101, 1000, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_HDRLEN);
	vh(h, 0, 0, 0xffff, 0, 0, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_HDRLEN);

	/* Checksum field beyond the frame (start, offset, both huge). */
	vh(h, VNET_F_NEEDS_CSUM, 0, 0, 0, 99, 0);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_CSUM);
	vh(h, VNET_F_NEEDS_CSUM, 0, 0, 0, 34, 65);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_CSUM);
	vh(h, VNET_F_NEEDS_CSUM, 0, 0, 0, 0xffff, 0xffff);
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_VNET_CSUM);
	vh(h, VNET_F_NEEDS_CSUM, 0, 0, 0, 34, 64);	/* field ends at 100 */
	CHECK_EQ(vnet_hdr_parse(h, 100, &o), DROP_NONE);
}

TEST(vnet_write_gso_only_beyond_one_segment)
{
	struct pkt_off o = { .gso = PKT_GSO_TCP6, .gso_size = 1000,
			     .hdr_len = 74, .csum_partial = true,
			     .csum_start = 54, .csum_off = 16 };
	uint8_t h[VNET_HLEN];
	struct pkt_off back;

	vnet_hdr_write(h, 74 + 1001, &o);
	CHECK_EQ(h[0], VNET_F_NEEDS_CSUM);
	CHECK_EQ(h[1], VNET_GSO_TCPV6);
	CHECK_EQ(vnet_hdr_parse(h, 74 + 1001, &back), DROP_NONE);
	CHECK_EQ(back.gso, PKT_GSO_TCP6);
	CHECK_EQ(back.gso_size, 1000);
	CHECK_EQ(back.hdr_len, 74);
	CHECK_EQ(back.csum_start, 54);
	CHECK_EQ(back.csum_off, 16);

	vnet_hdr_write(h, 74 + 1000, &o);	/* one segment: plain */
	CHECK_EQ(h[1], VNET_GSO_NONE);
	CHECK_EQ(h[4] | h[5], 0);
	CHECK_EQ(h[0], VNET_F_NEEDS_CSUM);

	vnet_hdr_write(h, 100, NULL);
	for (size_t i = 0; i < VNET_HLEN; i++)
		CHECK_EQ(h[i], 0);
}

/* tcp_frame() - a TCP frame from the guest with plen payload bytes,
 * full checksum; returns its length. f must hold 74 + plen bytes. */
static size_t tcp_frame(uint8_t *f, bool v6, size_t plen)
{
	static uint8_t l4[TCP_HLEN + 65535];
	size_t i;

	memset(l4, 0, TCP_HLEN);
	wr16(l4, 40000);
	wr16(l4 + 2, 80);
	wr32(l4 + 4, 1);
	l4[12] = (TCP_HLEN / 4) << 4;
	l4[13] = TCP_F_ACK;
	for (i = 0; i < plen; i++)
		l4[TCP_HLEN + i] = (uint8_t)(i * 13 + 5);
	return v6 ? test_frame_ip6(f, "2001:db8::2", "2001:db8::1",
				   IPPROTO_TCP, l4, TCP_HLEN + plen)
		  : test_frame_ip4(f, "198.51.100.2", "198.51.100.1",
				   IPPROTO_TCP, l4, TCP_HLEN + plen);
}

/* make_partial() - replace the frame's transport checksum by the
 * pseudo-header sum, as a kernel with checksum offload leaves it. */
static void make_partial(uint8_t *f, size_t len, bool v6, size_t csum_at)
{
	size_t l4 = ETH_HLEN_ + (v6 ? IP6_HLEN : IP4_HLEN);
	struct in6_addr s6, d6;
	struct in_addr s4, d4;
	uint32_t s;

	if (v6) {
		memcpy(&s6, f + l4 - 32, 16);
		memcpy(&d6, f + l4 - 16, 16);
		s = csum_pseudo6(&s6, &d6, f[l4 - 34], (uint32_t)(len - l4));
	} else {
		memcpy(&s4, f + l4 - 8, 4);
		memcpy(&d4, f + l4 - 4, 4);
		s = csum_pseudo4(s4, d4, f[l4 - 11], (uint32_t)(len - l4));
	}
	wr16(f + l4 + csum_at, (uint16_t)~csum_fold(s));
}

TEST(vnet_pkt_parse_gso_and_partial)
{
	static uint8_t f[FRAME_MAX];
	struct pkt_off o = { .gso = PKT_GSO_TCP4, .gso_size = 1460,
			     .hdr_len = 54, .csum_partial = true,
			     .csum_start = 34, .csum_off = 16 };
	size_t n = tcp_frame(f, false, 60000);
	struct pkt p;

	/* A full checksum passes either way. */
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_NONE);
	CHECK_EQ(p.payload_len, 60000);
	CHECK_EQ(p.gso, PKT_GSO_TCP4);
	CHECK_EQ(p.gso_size, 1460);

	/* A partial one only with the offload state saying so. */
	make_partial(f, n, false, 16);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_L4_CSUM);
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_NONE);
	CHECK_EQ(pkt_parse_off(f, n, true, NULL, &p), DROP_L4_CSUM);

	/* Completing it gives a valid full checksum. */
	vnet_csum_complete(f, n, &o);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);

	/* Offsets that do not name the TCP checksum field. */
	o.csum_start = 33;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_CSUM);
	o.csum_start = 34;
	o.csum_off = 6;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_CSUM);
	o.csum_off = 16;

	/* GSO type of the wrong family, or on a non-TCP frame. */
	o.gso = PKT_GSO_TCP6;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_GSO);
	o.gso = PKT_GSO_UDP;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_GSO);
	o.gso = 9;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_GSO);

	/* IPv6, the largest payload an IPv6 packet holds. */
	n = tcp_frame(f, true, 65535 - TCP_HLEN);
	CHECK_EQ(n, FRAME_MAX);
	make_partial(f, n, true, 16);
	o = (struct pkt_off){ .gso = PKT_GSO_TCP6, .gso_size = 1440,
			      .csum_partial = true, .csum_start = 54,
			      .csum_off = 16 };
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_NONE);
	CHECK(p.is_v6);
	CHECK_EQ(p.payload_len, 65535 - TCP_HLEN);
	o.gso = PKT_GSO_TCP4;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_GSO);

	/* Truncated GSO frames are still refused by the length checks. */
	o.gso = PKT_GSO_TCP6;
	CHECK_EQ(pkt_parse_off(f, n - 1, true, &o, &p), DROP_IP6_PLEN);
	CHECK_EQ(pkt_parse_off(f, 60, true, &o, &p), DROP_IP6_PLEN);
}

TEST(vnet_pkt_parse_udp_partial)
{
	uint8_t f[256], l4[64] = { 0 };
	struct pkt_off o = { .csum_partial = true, .csum_start = 34,
			     .csum_off = 6 };
	struct pkt p;
	size_t n;

	wr16(l4, 1000);
	wr16(l4 + 2, 53);
	wr16(l4 + 4, 8 + 20);
	n = test_frame_ip4(f, "198.51.100.2", "198.51.100.1", IPPROTO_UDP,
			   l4, 28);
	make_partial(f, n, false, 6);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_L4_CSUM);
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_NONE);
	o.csum_off = 16;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_CSUM);
	/* UDP GSO (USO): accepted on a UDP frame, with its segment size;
	 * a zero segment size is refused. */
	o.csum_off = 6;
	o.gso = PKT_GSO_UDP;
	o.gso_size = 8;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_NONE);
	CHECK_EQ(p.gso, PKT_GSO_UDP);
	CHECK_EQ(p.gso_size, 8);
	o.gso_size = 0;
	CHECK_EQ(pkt_parse_off(f, n, true, &o, &p), DROP_VNET_GSO);
	/* No more datagrams than a kernel socket may send at once: 200
	 * bytes are 100 datagrams of 2, but 200 of 1. */
	{
		uint8_t big[320], l4b[8 + 200] = { 0 };

		wr16(l4b, 1000);
		wr16(l4b + 2, 53);
		wr16(l4b + 4, sizeof(l4b));
		n = test_frame_ip4(big, "198.51.100.2", "198.51.100.1",
				   IPPROTO_UDP, l4b, sizeof(l4b));
		make_partial(big, n, false, 6);
		o.gso_size = 2;
		CHECK_EQ(pkt_parse_off(big, n, true, &o, &p), DROP_NONE);
		o.gso_size = 1;
		CHECK_EQ(pkt_parse_off(big, n, true, &o, &p), DROP_VNET_GSO);
	}
}

/* A guest link with virtio-net headers whose transmitted frames (with
 * their header) are kept for inspection. */
static struct {
	uint8_t *buf[8];
	size_t len[8];
	size_t n;
} vcap;

static int vcap_rx(struct ctx *c)
{
	(void)c;
	return 0;
}

static int vcap_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	unsigned int i;

	for (i = 0; i < tx->n && vcap.n < 8; i++) {
		size_t len = VNET_HLEN + tx->f[i].len;

		vcap.buf[vcap.n] = malloc(len);
		memcpy(vcap.buf[vcap.n], tx->buf + tx->f[i].off, len);
		vcap.len[vcap.n++] = len;
	}
	return 0;
}

static void vcap_prefix(uint8_t *pfx, size_t len)
{
	vnet_hdr_write(pfx, len, NULL);
}

static const struct link_ops vcap_ops = {
	.name = "vnet capture", .tx_prefix = VNET_HLEN, .vnet_hdr = true,
	.rx = vcap_rx, .flush = vcap_flush, .fill_prefix = vcap_prefix,
};

static void vcap_reset(void)
{
	while (vcap.n)
		free(vcap.buf[--vcap.n]);
}

/* vinput() - one frame with its virtio-net header through tap_input(). */
static void vinput(struct ctx *c, const uint8_t *h, const uint8_t *f,
		   size_t len)
{
	memcpy(c->link.rx.buf + 64 - VNET_HLEN, h, VNET_HLEN);
	memcpy(c->link.rx.buf + 64, f, len);
	c->link.rx.f[0].off = 64;
	c->link.rx.f[0].len = (uint32_t)len;
	c->link.rx.n = 1;
	tap_input(c);
}

TEST(vnet_link_drops_bad_headers_with_reasons)
{
	struct ctx *c = test_ctx();
	static uint8_t f[FRAME_MAX];
	uint8_t h[VNET_HLEN];
	size_t n;

	tap_attach(c, &vcap_ops, -1);
	c->conf.no_tcp = true;		/* good frames end at the dispatcher */
	n = tcp_frame(f, false, 30000);
	make_partial(f, n, false, 16);

	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4, 54, 1460, 34, 16);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_SERVICE_DISABLED], 1);
	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_UDP, 54, 1460, 34, 16);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_VNET_GSO], 1);
	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_TCPV6, 54, 1460, 34, 16);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_VNET_GSO], 2);
	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4, (uint16_t)(n + 1), 1460, 34,
	   16);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_VNET_HDRLEN], 1);
	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4, 54, 1460, (uint16_t)n, 16);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_VNET_CSUM], 1);
	vh(h, VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4, 54, 1460, 14, 16);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_VNET_CSUM], 2);
	/* Without NEEDS_CSUM the partial checksum is simply wrong. */
	vh(h, 0, VNET_GSO_TCPV4, 54, 1460, 0, 0);
	vinput(c, h, f, n);
	CHECK_EQ(c->stats.drops[DROP_L4_CSUM], 1);
	CHECK_EQ(c->stats.drops[DROP_SERVICE_DISABLED], 1);
	test_ctx_free(c);
}

TEST(vnet_link_tx_headers)
{
	struct ctx *c = test_ctx();
	struct pkt_off o = { .gso = PKT_GSO_TCP4, .gso_size = 1000,
			     .hdr_len = 54 };
	size_t lens[3] = { 54 + 3000, 0, 54 + 500 };
	struct in_addr a = { htonl(0xc6336402) }, b = { htonl(0xc6336401) };
	uint8_t *fr[3], l4[8] = { 0 };
	struct pkt_off back;

	tap_attach(c, &vcap_ops, -1);
	vcap_reset();
	/* A control frame: zero header. */
	wr16(l4 + 4, 8);
	CHECK(tap_send_ip4(c, b, a, IPPROTO_UDP, l4, 8));
	CHECK_EQ(tap_tx_reserve_many(c, 54 + 3000, fr, 3), 3);
	memset(fr[0], 0xaa, lens[0]);
	memset(fr[2], 0xbb, lens[2]);
	tap_tx_commit_many_off(c, lens, 3, &o);
	tap_flush(c);
	CHECK_EQ(vcap.n, 3);
	for (size_t i = 0; i < VNET_HLEN; i++)
		CHECK_EQ(vcap.buf[0][i], 0);
	CHECK_EQ(vcap.len[1], VNET_HLEN + lens[0]);
	CHECK_EQ(vnet_hdr_parse(vcap.buf[1], lens[0], &back), DROP_NONE);
	CHECK_EQ(back.gso, PKT_GSO_TCP4);
	CHECK_EQ(back.gso_size, 1000);
	CHECK_EQ(vcap.buf[1][VNET_HLEN], 0xaa);
	/* The short frame: plain, and moved down intact. */
	CHECK_EQ(vcap.len[2], VNET_HLEN + lens[2]);
	CHECK_EQ(vnet_hdr_parse(vcap.buf[2], lens[2], &back), DROP_NONE);
	CHECK_EQ(back.gso, PKT_GSO_NONE);
	CHECK_EQ(vcap.buf[2][VNET_HLEN], 0xbb);
	CHECK_EQ(vcap.buf[2][vcap.len[2] - 1], 0xbb);
	vcap_reset();
	test_ctx_free(c);
}
