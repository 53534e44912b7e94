/* test_dhcp.c - DHCPv4 server: message types, options, destinations,
 * malformed and truncated requests. Replies are decoded field by field. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "dhcp.h"
#include "dns.h"
#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static const uint8_t chaddr[6] = { 0x02, 0, 0, 0, 0, 0x02 };

/* A request under construction. */
struct req {
	uint8_t b[1024];
	size_t len;
};

static void req_init(struct req *q, uint8_t type)
{
	memset(q, 0, sizeof(*q));
	q->b[0] = 1;				/* BOOTREQUEST */
	q->b[1] = 1;
	q->b[2] = 6;
	wr32(q->b + 4, 0x12345678);		/* xid */
	memcpy(q->b + 28, chaddr, 6);
	wr32(q->b + 236, 0x63825363);
	q->len = 240;
	q->b[q->len++] = 53;
	q->b[q->len++] = 1;
	q->b[q->len++] = type;
}

static void req_opt(struct req *q, uint8_t code, const void *v, uint8_t len)
{
	q->b[q->len++] = code;
	q->b[q->len++] = len;
	if (len)
		memcpy(q->b + q->len, v, len);
	q->len += len;
}

static void req_end(struct req *q)
{
	q->b[q->len++] = 255;
}

static size_t req_frame(uint8_t *f, const struct req *q, const char *src,
			const char *dst)
{
	uint8_t l4[1100];

	wr16(l4, 68);
	wr16(l4 + 2, 67);
	wr16(l4 + 4, (uint16_t)(8 + q->len));
	wr16(l4 + 6, 0);
	memcpy(l4 + 8, q->b, q->len);
	return test_frame_ip4(f, src, dst, IPPROTO_UDP, l4, 8 + q->len);
}

static void send_req(struct ctx *c, const struct req *q)
{
	uint8_t f[1200];
	size_t n = req_frame(f, q, "0.0.0.0", "255.255.255.255");

	test_input(c, f, n);
}

/* A decoded reply. */
struct rep {
	struct pkt p;
	const uint8_t *m;		/* DHCP message */
	size_t mlen;
	uint8_t order[64];		/* option codes in order of appearance */
	size_t norder;
};

/* get_reply() - parse sent frame i (checksums verified) into *r. */
static bool get_reply(struct ctx *c, size_t i, struct rep *r)
{
	const uint8_t *f;
	size_t len, o;

	memset(r, 0, sizeof(*r));
	if (!(f = test_tx(c, i, &len)))
		return false;
	if (pkt_parse(f, len, true, &r->p) != DROP_NONE ||
	    r->p.l4proto != IPPROTO_UDP || r->p.payload_len < 240)
		return false;
	r->m = r->p.payload;
	r->mlen = r->p.payload_len;
	for (o = 240; o < r->mlen && r->m[o] != 255;) {
		if (r->m[o] == 0) {
			o++;
			continue;
		}
		if (o + 2 > r->mlen || o + 2 + r->m[o + 1] > r->mlen)
			return false;
		if (r->norder < sizeof(r->order))
			r->order[r->norder++] = r->m[o];
		o += 2 + r->m[o + 1];
	}
	return o < r->mlen;		/* END present */
}

/* opt() - value of option code (instances concatenated) into v; returns
 * the length, or -1 when absent. */
static int opt(const struct rep *r, uint8_t code, uint8_t *v)
{
	size_t o, n = 0;
	bool found = false;

	for (o = 240; o < r->mlen && r->m[o] != 255;) {
		if (r->m[o] == 0) {
			o++;
			continue;
		}
		if (r->m[o] == code) {
			memcpy(v + n, r->m + o + 2, r->m[o + 1]);
			n += r->m[o + 1];
			found = true;
		}
		o += 2 + r->m[o + 1];
	}
	return found ? (int)n : -1;
}

static uint32_t ip(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a.s_addr;
}

static uint32_t opt_ip(const struct rep *r, uint8_t code)
{
	uint8_t v[600];
	uint32_t a = 0;

	if (opt(r, code, v) == 4)
		memcpy(&a, v, 4);
	return a;
}

TEST(dhcp_discover_offer_fields)
{
	struct ctx *c = test_ctx();
	static const uint8_t search[] = "\7example\4test";
	uint8_t v[600];
	struct req q;
	struct rep r;

	req_init(&q, 1);
	req_end(&q);
	send_req(c, &q);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(get_reply(c, 0, &r));
	/* No broadcast flag: unicast to chaddr / yiaddr. */
	CHECK(!memcmp(r.p.eth_dst, chaddr, 6));
	CHECK(!memcmp(r.p.eth_src, c->conf.our_mac, 6));
	CHECK_EQ(r.p.src4.s_addr, ip("198.51.100.1"));
	CHECK_EQ(r.p.dst4.s_addr, ip("198.51.100.2"));
	CHECK_EQ(r.p.udp.sport, 67);
	CHECK_EQ(r.p.udp.dport, 68);
	CHECK(r.mlen >= 300 && r.mlen <= 548);
	CHECK_EQ(r.m[0], 2);
	CHECK_EQ(r.m[1], 1);
	CHECK_EQ(r.m[2], 6);
	CHECK_EQ(rd32(r.m + 4), 0x12345678);
	CHECK_EQ(rd32(r.m + 12), 0);			/* ciaddr */
	CHECK_EQ(rd32(r.m + 16), ntohl(ip("198.51.100.2")));
	CHECK(!memcmp(r.m + 28, chaddr, 6));
	CHECK_EQ(rd32(r.m + 236), 0x63825363);
	CHECK_EQ(r.order[0], 53);
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 2);				/* OFFER */
	CHECK_EQ(opt_ip(&r, 54), ip("198.51.100.1"));
	CHECK_EQ(opt(&r, 51, v), 4);
	CHECK_EQ(rd32(v), 0xffffffff);
	CHECK_EQ(opt_ip(&r, 1), ip("255.255.255.0"));
	CHECK_EQ(opt_ip(&r, 3), ip("198.51.100.1"));
	CHECK_EQ(opt_ip(&r, 6), ip("198.51.100.53"));
	CHECK_EQ(opt_ip(&r, 28), ip("198.51.100.255"));
	CHECK_EQ(opt(&r, 26, v), 2);
	CHECK_EQ(rd16(v), 1500);
	CHECK_EQ(opt(&r, 15, v), 12);
	CHECK(!memcmp(v, "example.test", 12));
	CHECK_EQ(opt(&r, 119, v), (int)sizeof(search));
	CHECK(!memcmp(v, search, sizeof(search)));
	CHECK_EQ(opt(&r, 121, v), -1);			/* gateway on-link */
	CHECK_EQ(opt(&r, 12, v), -1);			/* no hostname set */
	CHECK_EQ(opt(&r, 81, v), -1);
	CHECK_EQ(opt(&r, 80, v), -1);
	test_ctx_free(c);
}

TEST(dhcp_broadcast_flag)
{
	struct ctx *c = test_ctx();
	struct req q;
	struct rep r;

	req_init(&q, 1);
	wr16(q.b + 10, 0x8000);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK(!memcmp(r.p.eth_dst, "\xff\xff\xff\xff\xff\xff", 6));
	CHECK_EQ(r.p.dst4.s_addr, 0xffffffff);
	CHECK_EQ(rd16(r.m + 10), 0x8000);		/* flags copied */
	test_ctx_free(c);
}

TEST(dhcp_request_ack_and_nak)
{
	struct ctx *c = test_ctx();
	uint32_t mine = ip("198.51.100.2"), other = ip("198.51.100.7");
	uint32_t sid = ip("198.51.100.1"), sid2 = ip("198.51.100.9");
	uint8_t v[600];
	struct req q;
	struct rep r;

	req_init(&q, 3);
	req_opt(&q, 50, &mine, 4);
	req_opt(&q, 54, &sid, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 5);				/* ACK */
	CHECK_EQ(rd32(r.m + 16), ntohl(mine));
	CHECK_EQ(r.p.dst4.s_addr, mine);
	test_tx_reset(c);

	req_init(&q, 3);
	req_opt(&q, 50, &other, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 6);				/* NAK, broadcast */
	CHECK_EQ(rd32(r.m + 16), 0);
	CHECK_EQ(r.p.dst4.s_addr, 0xffffffff);
	CHECK(!memcmp(r.p.eth_dst, "\xff\xff\xff\xff\xff\xff", 6));
	CHECK_EQ(opt(&r, 51, v), -1);
	CHECK_EQ(opt(&r, 3, v), -1);
	test_tx_reset(c);

	/* Renewing client: ciaddr, no option 50: ACK unicast to ciaddr. */
	req_init(&q, 3);
	memcpy(q.b + 12, &mine, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 5);
	CHECK_EQ(rd32(r.m + 12), ntohl(mine));
	CHECK_EQ(r.p.dst4.s_addr, mine);
	test_tx_reset(c);

	/* Renewing a wrong address: the NAK is still broadcast. */
	req_init(&q, 3);
	memcpy(q.b + 12, &other, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 6);
	CHECK_EQ(r.p.dst4.s_addr, 0xffffffff);
	CHECK_EQ(rd32(r.m + 12), 0);
	test_tx_reset(c);

	/* Client chose another server: silence. */
	req_init(&q, 3);
	req_opt(&q, 50, &mine, 4);
	req_opt(&q, 54, &sid2, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP_IGNORED], 1);
	test_ctx_free(c);
}

TEST(dhcp_rapid_commit)
{
	struct ctx *c = test_ctx();
	uint8_t v[600];
	struct req q;
	struct rep r;

	req_init(&q, 1);
	req_opt(&q, 80, NULL, 0);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 5);				/* ACK directly */
	CHECK_EQ(opt(&r, 80, v), 0);
	CHECK_EQ(rd32(r.m + 16), ntohl(ip("198.51.100.2")));
	test_ctx_free(c);
}

TEST(dhcp_inform_release_decline)
{
	struct ctx *c = test_ctx();
	uint32_t mine = ip("198.51.100.2");
	uint8_t v[600], f[1200];
	struct req q;
	struct rep r;
	size_t n;

	req_init(&q, 8);
	memcpy(q.b + 12, &mine, 4);
	req_end(&q);
	n = req_frame(f, &q, "198.51.100.2", "198.51.100.1");
	test_input(c, f, n);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 5);
	CHECK_EQ(rd32(r.m + 16), 0);			/* no yiaddr */
	CHECK_EQ(rd32(r.m + 12), ntohl(mine));
	CHECK_EQ(r.p.dst4.s_addr, mine);
	CHECK_EQ(opt(&r, 51, v), -1);			/* no lease time */
	CHECK_EQ(opt_ip(&r, 6), ip("198.51.100.53"));
	test_tx_reset(c);

	req_init(&q, 7);
	memcpy(q.b + 12, &mine, 4);
	req_end(&q);
	send_req(c, &q);
	req_init(&q, 4);
	req_opt(&q, 50, &mine, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP_IGNORED], 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP_MALFORMED], 0);
	test_ctx_free(c);
}

TEST(dhcp_prl_order_and_client_id)
{
	struct ctx *c = test_ctx();
	static const uint8_t prl[] = { 6, 3, 1, 200 };
	static const uint8_t cid[] = { 1, 2, 0, 0, 0, 0, 2 };
	uint8_t v[600];
	struct req q;
	struct rep r;

	req_init(&q, 1);
	req_opt(&q, 55, prl, sizeof(prl));
	req_opt(&q, 61, cid, sizeof(cid));
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	/* 53, 54, 61, 51, then 6, 3, 1 in the client's order. */
	CHECK(r.norder > 7);
	CHECK_EQ(r.order[0], 53);
	CHECK_EQ(r.order[1], 54);
	CHECK_EQ(r.order[2], 61);
	CHECK_EQ(r.order[3], 51);
	CHECK_EQ(r.order[4], 6);
	CHECK_EQ(r.order[5], 3);
	CHECK_EQ(r.order[6], 1);
	CHECK_EQ(opt(&r, 61, v), (int)sizeof(cid));
	CHECK(!memcmp(v, cid, sizeof(cid)));
	CHECK_EQ(opt(&r, 200, v), -1);
	test_ctx_free(c);
}

TEST(dhcp_host32_classless_routes)
{
	struct ctx *c = test_ctx();
	static const uint8_t routes[] = { 32, 198, 51, 100, 1, 0, 0, 0, 0,
					  0, 198, 51, 100, 1 };
	uint8_t v[600];
	struct req q;
	struct rep r;

	c->conf.ip4.prefix_len = 32;
	req_init(&q, 1);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt_ip(&r, 1), 0xffffffff);
	CHECK_EQ(opt(&r, 28, v), -1);
	CHECK_EQ(opt(&r, 121, v), (int)sizeof(routes));
	CHECK(!memcmp(v, routes, sizeof(routes)));
	CHECK_EQ(opt_ip(&r, 3), ip("198.51.100.1"));
	test_tx_reset(c);

	/* Gateway outside the /24. */
	c->conf.ip4.prefix_len = 24;
	inet_pton(AF_INET, "203.0.113.1", &c->conf.ip4.gw);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 121, v), (int)sizeof(routes));
	CHECK_EQ(v[1], 203);
	CHECK_EQ(opt_ip(&r, 54), ip("203.0.113.1"));
	test_ctx_free(c);
}

TEST(dhcp_names_and_disabled_options)
{
	struct ctx *c = test_ctx();
	static const uint8_t fq[] = "\4vm01\7example\4test";
	uint8_t v[600], fqdn_req[3] = { 0, 0, 0 };
	struct req q;
	struct rep r;

	strcpy(c->conf.hostname, "vm01");
	strcpy(c->conf.fqdn, "vm01.example.test.");
	req_init(&q, 1);
	req_opt(&q, 81, fqdn_req, 3);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 12, v), 4);
	CHECK(!memcmp(v, "vm01", 4));
	CHECK_EQ(opt(&r, 81, v), 3 + (int)sizeof(fq));
	CHECK_EQ(v[0], 0x0c);
	CHECK_EQ(v[1], 255);
	CHECK(!memcmp(v + 3, fq, sizeof(fq)));
	test_tx_reset(c);

	c->conf.no_dhcp_dns = c->conf.no_dhcp_search = true;
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 6, v), -1);
	CHECK_EQ(opt(&r, 15, v), -1);
	CHECK_EQ(opt(&r, 119, v), -1);
	CHECK_EQ(opt_ip(&r, 3), ip("198.51.100.1"));
	test_ctx_free(c);
}

TEST(dhcp_long_search_list_split)
{
	struct ctx *c = test_ctx();
	uint8_t v[2000], want[2000];
	uint16_t max = 1500;
	size_t wn = 0;
	struct req q;
	struct rep r;
	int i;

	for (i = 0; i < CONF_MAX_SEARCH; i++) {
		memset(c->conf.search[i], 'a' + i, 60);
		strcpy(c->conf.search[i] + 60, ".example");
		wn += dns_name_put(want + wn, sizeof(want) - wn,
				   c->conf.search[i]);
	}
	c->conf.search_count = CONF_MAX_SEARCH;
	CHECK(wn > 255);
	req_init(&q, 1);
	max = htons(max);
	req_opt(&q, 57, &max, 2);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK(r.mlen > 548);
	CHECK_EQ(opt(&r, 119, v), (int)wn);
	CHECK(!memcmp(v, want, wn));
	test_tx_reset(c);

	/* Without option 57 the reply stays within 576 bytes: the search
	 * list is left out rather than overflowing. */
	req_init(&q, 1);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK(r.mlen <= 548);
	CHECK_EQ(opt(&r, 119, v), -1);
	CHECK_EQ(opt_ip(&r, 3), ip("198.51.100.1"));
	test_ctx_free(c);
}

TEST(dhcp_relay_giaddr)
{
	struct ctx *c = test_ctx();
	uint32_t gi = ip("198.51.100.99");
	struct req q;
	struct rep r;

	req_init(&q, 1);
	memcpy(q.b + 24, &gi, 4);
	req_end(&q);
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(r.p.dst4.s_addr, gi);
	CHECK_EQ(r.p.udp.dport, 67);
	CHECK_EQ(rd32(r.m + 24), ntohl(gi));
	test_ctx_free(c);
}

/* expect_drop() - request q is refused with reason d and no reply. */
static bool expect_drop(const struct req *q, enum drop_reason d)
{
	struct ctx *c = test_ctx();
	bool ok;

	send_req(c, q);
	ok = test_tx_n(c) == 0 && c->stats.drops[d] == 1;
	test_ctx_free(c);
	return ok;
}

TEST(dhcp_malformed_and_ignored)
{
	uint32_t a = ip("198.51.100.2");
	struct req q;

	req_init(&q, 1);
	q.b[0] = 2;					/* BOOTREPLY */
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_NOT_REQUEST));
	req_init(&q, 1);
	q.b[1] = 6;					/* IEEE 802 */
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_HWTYPE));
	req_init(&q, 1);
	q.b[2] = 16;
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_HWTYPE));
	req_init(&q, 1);
	q.b[236] = 0;					/* no cookie */
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_MALFORMED));
	req_init(&q, 1);
	req_opt(&q, 50, &a, 3);				/* bad fixed len */
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_MALFORMED));
	req_init(&q, 1);
	req_opt(&q, 80, &a, 1);
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_MALFORMED));
	req_init(&q, 1);
	q.b[q.len++] = 12;				/* overruns end */
	q.b[q.len++] = 10;
	q.b[q.len++] = 'x';
	CHECK(expect_drop(&q, DROP_DHCP_MALFORMED));
	req_init(&q, 1);
	q.b[q.len++] = 12;				/* code, no length */
	CHECK(expect_drop(&q, DROP_DHCP_MALFORMED));
	req_init(&q, 2);				/* OFFER from guest */
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_IGNORED));
	req_init(&q, 1);				/* plain BOOTP */
	q.len = 240;
	req_end(&q);
	CHECK(expect_drop(&q, DROP_DHCP_IGNORED));
}

TEST(dhcp_overload_and_pads_parse)
{
	struct ctx *c = test_ctx();
	uint8_t ov = 3, v[600];
	struct req q;
	struct rep r;

	req_init(&q, 1);
	q.b[q.len++] = 0;
	q.b[q.len++] = 0;
	req_opt(&q, 52, &ov, 1);		/* sname/file not searched */
	memset(q.b + 44, 0xff, 192);		/* junk in sname/file */
	req_end(&q);
	memset(q.b + q.len, 0xee, 20);		/* junk after END */
	q.len += 20;
	send_req(c, &q);
	CHECK(get_reply(c, 0, &r));
	CHECK_EQ(opt(&r, 53, v), 1);
	CHECK_EQ(v[0], 2);
	test_ctx_free(c);
}

/* Every truncation of a valid request, handed to dhcp_input() in a
 * buffer of exactly that size (ASan catches any over-read). */
TEST(dhcp_every_truncation)
{
	static const uint8_t prl[] = { 1, 3, 6, 15, 119, 121, 81 };
	static const uint8_t cid[] = { 1, 2, 0, 0, 0, 0, 2 };
	uint32_t a = ip("198.51.100.2");
	struct ctx *c = test_ctx();
	uint8_t f[1200];
	struct req q;
	struct pkt p;
	size_t n, i;

	req_init(&q, 3);
	req_opt(&q, 50, &a, 4);
	req_opt(&q, 55, prl, sizeof(prl));
	req_opt(&q, 61, cid, sizeof(cid));
	req_opt(&q, 80, NULL, 0);
	req_end(&q);
	n = req_frame(f, &q, "0.0.0.0", "255.255.255.255");
	CHECK_EQ(pkt_parse(f, n, true, &p), DROP_NONE);
	for (i = 0; i <= q.len; i++) {
		uint8_t *m = malloc(i ? i : 1);
		enum drop_reason d;

		memcpy(m, q.b, i);
		p.payload = m;
		p.payload_len = i;
		d = dhcp_input(c, &p);
		free(m);
		if (i < 240)
			CHECK_EQ(d, DROP_DHCP_MALFORMED);
		else if (i < 243)
			CHECK_EQ(d, i == 240 ? DROP_DHCP_IGNORED
					     : DROP_DHCP_MALFORMED);
		else
			CHECK(d == DROP_NONE || d == DROP_DHCP_MALFORMED);
	}
	/* The complete message was answered with an ACK. */
	CHECK(test_tx_n(c) >= 1);
	test_ctx_free(c);
}

TEST(dhcp_dns_name_put)
{
	uint8_t b[300];

	CHECK_EQ(dns_name_put(b, sizeof(b), "a.bc"), 6);
	CHECK(!memcmp(b, "\1a\2bc", 6));
	CHECK_EQ(dns_name_put(b, sizeof(b), "a.bc."), 6);
	CHECK_EQ(dns_name_put(b, sizeof(b), ""), 0);
	CHECK_EQ(dns_name_put(b, sizeof(b), "."), 0);
	CHECK_EQ(dns_name_put(b, sizeof(b), "a..b"), 0);
	CHECK_EQ(dns_name_put(b, 5, "a.bc"), 0);	/* no room */
	memset(b, 'x', 64);
	b[64] = 0;
	CHECK_EQ(dns_name_put(b + 100, 150, (char *)b), 0); /* label > 63 */
}

/* A UDP GSO frame (USO) from the guest carrying DHCP messages is handled
 * like any USO frame: one message per gso_size bytes, each answered (or
 * its drop counted), never one message made of them all. */
TEST(dhcp_uso_frame_each_message)
{
	struct ctx *c = test_ctx();
	uint8_t f[1200];
	struct req q, two;
	struct rep r;
	struct pkt p;
	size_t n;

	req_init(&q, 1);
	req_end(&q);
	memcpy(two.b, q.b, q.len);
	memcpy(two.b + q.len, q.b, q.len);
	wr32(two.b + q.len + 4, 0x9abcdef0);		/* second xid */
	two.len = 2 * q.len;
	n = req_frame(f, &two, "0.0.0.0", "255.255.255.255");
	CHECK(pkt_parse(f, n, true, &p) == DROP_NONE);
	p.gso = PKT_GSO_UDP;
	p.gso_size = (uint16_t)q.len;
	CHECK_EQ(dhcp_input(c, &p), DROP_NONE);
	CHECK_EQ(test_tx_n(c), 2);			/* two OFFERs */
	CHECK(get_reply(c, 0, &r) && rd32(r.m + 4) == 0x12345678);
	CHECK(get_reply(c, 1, &r) && rd32(r.m + 4) == 0x9abcdef0);
	/* a malformed first message: counted, the second still answered */
	test_tx_reset(c);
	two.b[0] = 0;
	n = req_frame(f, &two, "0.0.0.0", "255.255.255.255");
	CHECK(pkt_parse(f, n, true, &p) == DROP_NONE);
	p.gso = PKT_GSO_UDP;
	p.gso_size = (uint16_t)q.len;
	CHECK_EQ(dhcp_input(c, &p), DROP_NONE);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(get_reply(c, 0, &r) && rd32(r.m + 4) == 0x9abcdef0);
	CHECK_EQ(c->stats.drops[DROP_DHCP_NOT_REQUEST] +
		 c->stats.drops[DROP_DHCP_MALFORMED], 1);
	test_ctx_free(c);
}
