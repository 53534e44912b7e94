/* test_dhcpv6.c - DHCPv6 server: message exchanges, IA_NA contents,
 * status codes, server identifier rules, malformed and truncated
 * messages. Replies are decoded field by field. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "dhcpv6.h"
#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static const uint8_t guest_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t server_duid[10] = { 0, 3, 0, 1, 0x9a, 0x55, 0x9a,
					 0x55, 0x9a, 0x55 };
static const uint8_t client_duid[10] = { 0, 3, 0, 1, 2, 0, 0, 0, 0, 2 };

struct msg {
	uint8_t b[1024];
	size_t len;
};

static void msg_init(struct msg *m, uint8_t type)
{
	memset(m, 0, sizeof(*m));
	m->b[0] = type;
	m->b[1] = 0xab;
	m->b[2] = 0xcd;
	m->b[3] = 0xef;
	m->len = 4;
}

static uint8_t *msg_opt(struct msg *m, uint16_t code, const void *v,
			uint16_t len)
{
	uint8_t *p = m->b + m->len;

	wr16(p, code);
	wr16(p + 2, len);
	if (v && len)
		memcpy(p + 4, v, len);
	m->len += 4 + (size_t)len;
	return p + 4;
}

static void msg_ids(struct msg *m, bool server)
{
	msg_opt(m, 1, client_duid, sizeof(client_duid));
	if (server)
		msg_opt(m, 2, server_duid, sizeof(server_duid));
}

/* msg_ia() - IA_NA with IAID iaid holding address addr (NULL: none). */
static void msg_ia(struct msg *m, uint32_t iaid, const char *addr)
{
	uint8_t v[12 + 28] = { 0 };
	struct in6_addr a;
	uint16_t len = 12;

	wr32(v, iaid);
	if (addr) {
		inet_pton(AF_INET6, addr, &a);
		wr16(v + 12, 5);
		wr16(v + 14, 24);
		memcpy(v + 16, &a, 16);
		len += 28;
	}
	msg_opt(m, 3, v, len);
}

/* msg_frame() - the guest's frame (at f, room: 2300 bytes) carrying m,
 * copies times over in one UDP datagram; returns its length. */
static size_t msg_frame(uint8_t *f, const struct msg *m, unsigned int copies)
{
	uint8_t l4[2100];
	size_t len = 8 + copies * m->len;
	unsigned int i;

	wr16(l4, 546);
	wr16(l4 + 2, 547);
	wr16(l4 + 4, (uint16_t)len);
	wr16(l4 + 6, 0);
	for (i = 0; i < copies; i++)
		memcpy(l4 + 8 + i * m->len, m->b, m->len);
	return test_frame_ip6(f, "fe80::2", "ff02::1:2", IPPROTO_UDP, l4, len);
}

static void send_msg(struct ctx *c, const struct msg *m)
{
	uint8_t f[2300];

	test_input(c, f, msg_frame(f, m, 1));
}

struct rep {
	struct pkt p;
	const uint8_t *m;
	size_t len;
};

/* get_reply() - decode sent frame i: checksum, addresses, ports, xid. */
static bool get_reply(struct ctx *c, size_t i, struct rep *r)
{
	struct in6_addr ll, cl;
	const uint8_t *f;
	size_t len;

	if (!(f = test_tx(c, i, &len)))
		return false;
	if (pkt_parse(f, len, true, &r->p) != DROP_NONE ||
	    r->p.l4proto != IPPROTO_UDP || r->p.payload_len < 4)
		return false;
	inet_pton(AF_INET6, "fe80::1", &ll);
	inet_pton(AF_INET6, "fe80::2", &cl);
	r->m = r->p.payload;
	r->len = r->p.payload_len;
	return in6_eq(&r->p.src6, &ll) && in6_eq(&r->p.dst6, &cl) &&
	       r->p.udp.sport == 547 && r->p.udp.dport == 546 &&
	       !memcmp(r->p.eth_dst, guest_mac, 6) &&
	       r->m[1] == 0xab && r->m[2] == 0xcd && r->m[3] == 0xef;
}

/* find() - n-th option code in [b, b+len) (well-formed, we check it):
 * value pointer and length, or NULL. */
static const uint8_t *find(const uint8_t *b, size_t len, uint16_t code,
			   unsigned int nth, uint16_t *vlen)
{
	size_t off = 0;

	while (off + 4 <= len) {
		uint16_t c = rd16(b + off), l = rd16(b + off + 2);

		if (off + 4 + l > len)
			return NULL;
		if (c == code && !nth--) {
			*vlen = l;
			return b + off + 4;
		}
		off += 4 + (size_t)l;
	}
	return NULL;
}

static const uint8_t *top(const struct rep *r, uint16_t code, uint16_t *l)
{
	return find(r->m + 4, r->len - 4, code, 0, l);
}

/* check_ids() - server DUID-LL and echoed client DUID present. */
static bool check_ids(const struct rep *r)
{
	const uint8_t *v;
	uint16_t l;

	if (!(v = top(r, 2, &l)) || l != 10 || memcmp(v, server_duid, 10))
		return false;
	return (v = top(r, 1, &l)) && l == 10 && !memcmp(v, client_duid, 10);
}

static bool is_addr(const uint8_t *v, const char *s)
{
	struct in6_addr a;

	inet_pton(AF_INET6, s, &a);
	return !memcmp(v, &a, 16);
}

TEST(dhcpv6_solicit_advertise)
{
	static const uint8_t oro[] = { 0, 23, 0, 24 }, el[2] = { 0, 0 };
	static const uint8_t dom[] = "\7example\4test";
	struct ctx *c = test_ctx();
	const uint8_t *ia, *a, *v;
	uint16_t l, il, al;
	struct msg m;
	struct rep r;

	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_ia(&m, 0x01020304, NULL);
	msg_opt(&m, 6, oro, sizeof(oro));
	msg_opt(&m, 8, el, 2);
	send_msg(c, &m);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.m[0], 2);				/* ADVERTISE */
	CHECK(check_ids(&r));
	CHECK((ia = top(&r, 3, &il)));
	CHECK_EQ(il, 12 + 28);
	CHECK_EQ(rd32(ia), 0x01020304);
	CHECK_EQ(rd32(ia + 4), 0xffffffff);
	CHECK_EQ(rd32(ia + 8), 0xffffffff);
	CHECK((a = find(ia + 12, il - 12, 5, 0, &al)));
	CHECK_EQ(al, 24);
	CHECK(is_addr(a, "2001:db8::2"));
	CHECK_EQ(rd32(a + 16), 0xffffffff);
	CHECK_EQ(rd32(a + 20), 0xffffffff);
	CHECK((v = top(&r, 23, &l)));
	CHECK_EQ(l, 16);
	CHECK(is_addr(v, "2001:db8::53"));
	CHECK((v = top(&r, 24, &l)));
	CHECK_EQ(l, sizeof(dom));
	CHECK(!memcmp(v, dom, sizeof(dom)));
	CHECK(!top(&r, 13, &l));			/* no status */
	CHECK(!top(&r, 14, &l));
	test_ctx_free(c);
}

TEST(dhcpv6_rapid_commit)
{
	struct ctx *c = test_ctx();
	struct msg m;
	struct rep r;
	uint16_t l;

	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_ia(&m, 7, NULL);
	msg_opt(&m, 14, NULL, 0);
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.m[0], 7);				/* REPLY */
	CHECK(top(&r, 14, &l));
	CHECK_EQ(l, 0);
	CHECK(top(&r, 3, &l));
	test_ctx_free(c);
}

TEST(dhcpv6_request_server_id_rules)
{
	struct ctx *c = test_ctx();
	static const uint8_t other[10] = { 0, 3, 0, 1, 1, 2, 3, 4, 5, 6 };
	struct msg m;
	struct rep r;
	uint16_t l;

	msg_init(&m, 3);
	msg_ids(&m, true);
	msg_ia(&m, 7, "2001:db8::2");
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.m[0], 7);
	CHECK(check_ids(&r));
	CHECK(top(&r, 3, &l));
	test_tx_reset(c);

	msg_init(&m, 3);				/* no server id */
	msg_ids(&m, false);
	msg_ia(&m, 7, NULL);
	send_msg(c, &m);
	msg_init(&m, 3);				/* someone else's */
	msg_ids(&m, false);
	msg_opt(&m, 2, other, sizeof(other));
	msg_ia(&m, 7, NULL);
	send_msg(c, &m);
	msg_init(&m, 1);				/* SOLICIT + sid */
	msg_ids(&m, true);
	send_msg(c, &m);
	msg_init(&m, 1);				/* no client id */
	msg_ia(&m, 7, NULL);
	send_msg(c, &m);
	msg_init(&m, 6);				/* REBIND + sid */
	msg_ids(&m, true);
	send_msg(c, &m);
	msg_init(&m, 2);				/* ADVERTISE */
	msg_ids(&m, true);
	send_msg(c, &m);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP6_IGNORED], 6);
	test_ctx_free(c);
}

TEST(dhcpv6_renew_old_address_and_second_ia)
{
	struct ctx *c = test_ctx();
	const uint8_t *ia, *a, *st;
	uint16_t il, al, sl;
	struct msg m;
	struct rep r;

	msg_init(&m, 5);
	msg_ids(&m, true);
	msg_ia(&m, 1, "2001:db8::99");
	msg_ia(&m, 2, NULL);
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.m[0], 7);
	CHECK((ia = find(r.m + 4, r.len - 4, 3, 0, &il)));
	CHECK_EQ(rd32(ia), 1);
	CHECK((a = find(ia + 12, il - 12, 5, 0, &al)));
	CHECK(is_addr(a, "2001:db8::2"));
	CHECK((a = find(ia + 12, il - 12, 5, 1, &al)));
	CHECK(is_addr(a, "2001:db8::99"));
	CHECK_EQ(rd32(a + 16), 0);			/* withdrawn */
	CHECK_EQ(rd32(a + 20), 0);
	CHECK((ia = find(r.m + 4, r.len - 4, 3, 1, &il)));
	CHECK_EQ(rd32(ia), 2);
	CHECK(!find(ia + 12, il - 12, 5, 0, &al));
	CHECK((st = find(ia + 12, il - 12, 13, 0, &sl)));
	CHECK_EQ(rd16(st), 2);				/* NoAddrsAvail */
	test_ctx_free(c);
}

TEST(dhcpv6_prefix_delegation_refused)
{
	struct ctx *c = test_ctx();
	const uint8_t *pd, *st;
	uint8_t v[12 + 4 + 25] = { 0, 0, 0, 9 };
	uint16_t pl, sl;
	struct msg m;
	struct rep r;

	wr16(v + 12, 26);			/* IA Prefix hint: ::/56 */
	wr16(v + 14, 25);
	v[16 + 8] = 56;
	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_ia(&m, 1, NULL);
	msg_opt(&m, 25, v, sizeof(v));
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK(top(&r, 3, &pl));
	CHECK((pd = top(&r, 25, &pl)));
	CHECK_EQ(rd32(pd), 9);
	CHECK(!find(pd + 12, pl - 12, 26, 0, &sl));
	CHECK((st = find(pd + 12, pl - 12, 13, 0, &sl)));
	CHECK_EQ(rd16(st), 6);				/* NoPrefixAvail */
	test_tx_reset(c);

	wr16(v + 14, 24);				/* prefix short */
	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_opt(&m, 25, v, 12 + 4 + 24);
	send_msg(c, &m);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP6_MALFORMED], 1);
	test_ctx_free(c);
}

TEST(dhcpv6_no_address_configured)
{
	struct ctx *c = test_ctx();
	const uint8_t *ia, *st;
	uint16_t il, sl;
	struct msg m;
	struct rep r;

	memset(&c->conf.ip6.addr, 0, 16);
	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_ia(&m, 1, NULL);
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK((ia = top(&r, 3, &il)));
	CHECK(!find(ia + 12, il - 12, 5, 0, &sl));
	CHECK((st = find(ia + 12, il - 12, 13, 0, &sl)));
	CHECK_EQ(rd16(st), 2);
	test_tx_reset(c);

	/* SOLICIT without any IA_NA: NoAddrsAvail at the top. */
	msg_init(&m, 1);
	msg_ids(&m, false);
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK((st = top(&r, 13, &sl)));
	CHECK_EQ(rd16(st), 2);
	test_ctx_free(c);
}

TEST(dhcpv6_confirm)
{
	struct ctx *c = test_ctx();
	const uint8_t *st;
	struct msg m;
	struct rep r;
	uint16_t l;

	msg_init(&m, 4);
	msg_ids(&m, false);
	msg_ia(&m, 1, "2001:db8::2");
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.m[0], 7);
	CHECK((st = top(&r, 13, &l)));
	CHECK_EQ(rd16(st), 0);				/* Success */
	CHECK(!top(&r, 3, &l));
	test_tx_reset(c);

	msg_init(&m, 4);
	msg_ids(&m, false);
	msg_ia(&m, 1, "2001:db8:1::2");
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK((st = top(&r, 13, &l)));
	CHECK_EQ(rd16(st), 4);				/* NotOnLink */
	test_tx_reset(c);

	msg_init(&m, 4);				/* no addresses */
	msg_ids(&m, false);
	msg_ia(&m, 1, NULL);
	send_msg(c, &m);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP6_IGNORED], 1);
	test_ctx_free(c);
}

TEST(dhcpv6_release_decline)
{
	struct ctx *c = test_ctx();
	const uint8_t *st;
	struct msg m;
	struct rep r;
	uint16_t l;
	int t;

	for (t = 8; t <= 9; t++) {
		msg_init(&m, (uint8_t)t);
		msg_ids(&m, true);
		msg_ia(&m, 1, "2001:db8::2");
		send_msg(c, &m);
		CHECK(get_reply(c, 0, &r));
		CHECK_EQ(r.m[0], 7);
		CHECK(check_ids(&r));
		CHECK((st = top(&r, 13, &l)));
		CHECK_EQ(rd16(st), 0);
		CHECK(!top(&r, 3, &l));
		CHECK(!top(&r, 23, &l));
		test_tx_reset(c);
	}
	test_ctx_free(c);
}

TEST(dhcpv6_information_request)
{
	static const uint8_t fq[] = "\4vm01\7example\4test";
	static const uint8_t oro[] = { 0, 39 };
	struct ctx *c = test_ctx();
	const uint8_t *v;
	struct msg m;
	struct rep r;
	uint16_t l;

	strcpy(c->conf.fqdn, "vm01.example.test");
	msg_init(&m, 11);
	msg_opt(&m, 1, client_duid, sizeof(client_duid));
	msg_opt(&m, 6, oro, sizeof(oro));
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.m[0], 7);
	CHECK(!top(&r, 3, &l));
	CHECK(top(&r, 23, &l));
	CHECK(top(&r, 24, &l));
	CHECK((v = top(&r, 39, &l)));
	CHECK_EQ(l, 1 + sizeof(fq));
	CHECK_EQ(v[0], 0x04);
	CHECK(!memcmp(v + 1, fq, sizeof(fq)));
	test_tx_reset(c);

	c->conf.no_dhcp_dns = c->conf.no_dhcp_search = true;
	msg_init(&m, 11);				/* no client id */
	send_msg(c, &m);
	CHECK(get_reply(c, 0, &r));
	CHECK(!top(&r, 23, &l));
	CHECK(!top(&r, 24, &l));
	CHECK(!top(&r, 1, &l));
	CHECK(!top(&r, 39, &l));			/* not asked */
	test_tx_reset(c);

	msg_init(&m, 11);				/* IA: discard */
	msg_ids(&m, false);
	msg_ia(&m, 1, NULL);
	send_msg(c, &m);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP6_IGNORED], 1);

	c->conf.no_dhcpv6 = true;
	msg_init(&m, 11);
	send_msg(c, &m);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_SERVICE_DISABLED], 1);
	test_ctx_free(c);
}

/* malformed() - message m is dropped as malformed, nothing sent. */
static bool malformed(const struct msg *m)
{
	struct ctx *c = test_ctx();
	bool ok;

	send_msg(c, m);
	ok = test_tx_n(c) == 0 && c->stats.drops[DROP_DHCP6_MALFORMED] == 1;
	test_ctx_free(c);
	return ok;
}

TEST(dhcpv6_malformed)
{
	uint8_t *v, one = 1;
	struct msg m;

	msg_init(&m, 1);
	m.len = 3;					/* no xid */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	wr16(m.b + 6, 11);				/* overruns */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	m.len -= 1;					/* cut value */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	m.b[m.len++] = 0;				/* 3-byte tail */
	m.b[m.len++] = 8;
	m.b[m.len++] = 0;
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_opt(&m, 1, &one, 1);			/* DUID too short */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_opt(&m, 14, &one, 1);			/* rapid with data */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_opt(&m, 6, &one, 1);			/* odd ORO */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_opt(&m, 3, NULL, 11);			/* IA_NA short */
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	v = msg_opt(&m, 3, NULL, 12 + 4 + 23);		/* IAADDR short */
	wr16(v + 12, 5);
	wr16(v + 14, 23);
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	v = msg_opt(&m, 3, NULL, 12 + 4 + 24);		/* nested overrun */
	wr16(v + 12, 5);
	wr16(v + 14, 25);
	CHECK(malformed(&m));
	msg_init(&m, 1);
	msg_ids(&m, false);
	v = msg_opt(&m, 3, NULL, 12 + 4 + 24 + 4 + 1);	/* status short */
	wr16(v + 12, 5);
	wr16(v + 14, 24 + 5);
	wr16(v + 16 + 24, 13);
	wr16(v + 16 + 26, 1);
	CHECK(malformed(&m));
}

/* Every truncation of a valid REQUEST, handed to dhcpv6_input() in a
 * buffer of exactly that size (ASan catches any over-read). */
TEST(dhcpv6_every_truncation)
{
	static const uint8_t oro[] = { 0, 23, 0, 24 };
	struct ctx *c = test_ctx();
	uint8_t l4[600], f[800];
	struct msg m;
	struct pkt p;
	size_t n, i;

	msg_init(&m, 3);
	msg_ids(&m, true);
	msg_ia(&m, 1, "2001:db8::2");
	msg_opt(&m, 6, oro, sizeof(oro));
	wr16(l4, 546);
	wr16(l4 + 2, 547);
	wr16(l4 + 4, (uint16_t)(8 + m.len));
	memcpy(l4 + 8, m.b, m.len);
	n = test_frame_ip6(f, "fe80::2", "ff02::1:2", IPPROTO_UDP, l4,
			   8 + m.len);
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);
	for (i = 0; i <= m.len; i++) {
		uint8_t *b = malloc(i ? i : 1);
		enum drop_reason d;

		memcpy(b, m.b, i);
		p.payload = b;
		p.payload_len = i;
		d = dhcpv6_input(c, &p);
		free(b);
		/* Whole options only at option boundaries: 4 (no client
		 * id: ignored), 18, 32, 76 (all ids: answered). */
		if (i == 4 || i == 18)
			CHECK_EQ(d, DROP_DHCP6_IGNORED);
		else if (i == 32 || i == 76 || i == m.len)
			CHECK_EQ(d, DROP_NONE);
		else
			CHECK_EQ(d, DROP_DHCP6_MALFORMED);
	}
	CHECK_EQ(test_tx_n(c), 3);
	test_ctx_free(c);
}

/* A UDP GSO frame (USO) of two SOLICITs: two ADVERTISEs, one each. */
TEST(dhcpv6_uso_frame_each_message)
{
	struct ctx *c = test_ctx();
	uint8_t f[2300];
	struct msg m;
	struct rep r;
	struct pkt p;
	size_t n;

	msg_init(&m, 1);
	msg_ids(&m, false);
	msg_ia(&m, 7, NULL);
	send_msg(c, &m);		/* through tap.c: learns the guest */
	CHECK_EQ(test_tx_n(c), 1);
	test_tx_reset(c);
	n = msg_frame(f, &m, 2);
	CHECK(pkt_parse(f, n, true, &p) == DROP_NONE);
	p.gso = PKT_GSO_UDP;
	p.gso_size = (uint16_t)m.len;
	CHECK_EQ(dhcpv6_input(c, &p), DROP_NONE);
	CHECK_EQ(test_tx_n(c), 2);
	CHECK(get_reply(c, 0, &r) && r.m[0] == 2);	/* ADVERTISE */
	CHECK(get_reply(c, 1, &r) && r.m[0] == 2);
	test_ctx_free(c);
}
