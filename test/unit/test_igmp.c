/* test_igmp.c - the guest's IGMP and MLD messages (igmp.c) and the group
 * table they drive (mcast.c): every version parsed, malformed and
 * truncated input refused whole, groups ferry keeps out of the table,
 * the cap, leaves and timeouts, and the querier's frames.
 *
 * The unit tests' namespace has no multicast interface, so the groups'
 * host sockets fail to join here (a debug line each); the table is what
 * is checked. test_mcast.py joins on a LAN for real.
 */
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "checksum.h"
#include "ferry.h"
#include "igmp.h"
#include "pkt.h"
#include "unit.h"
#include "wire.h"

/* ig_ctx() - a harness context with UDP and the querier set up. */
static struct ctx *ig_ctx(void)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	udp_init(c);
	igmp_init(c);
	return c;
}

static void ig_ctx_free(struct ctx *c)
{
	mcast_close_all(c);
	udp_close_all(c);
	close(c->epfd);
	test_ctx_free(c);
}

/* igmp_frame() - an IGMP message m (len bytes) from the guest to dst,
 * TTL ttl, its checksum filled (unless bad); the frame's length. */
static size_t igmp_frame(uint8_t *f, const char *dst, const uint8_t *m,
			 size_t len, uint8_t ttl, bool bad)
{
	size_t n = test_frame_ip4(f, "198.51.100.2", dst, IPPROTO_IGMP, m, len);
	uint8_t *l3 = f + ETH_HLEN_, *t = l3 + IP4_HLEN;

	l3[IP4_OFF_TTL] = ttl;
	wr16(l3 + IP4_OFF_CSUM, 0);
	wr16(l3 + IP4_OFF_CSUM, csum(l3, IP4_HLEN));
	wr16(t + IGMP_OFF_CSUM, 0);
	wr16(t + IGMP_OFF_CSUM, (uint16_t)(csum(t, len) ^ (bad ? 1 : 0)));
	return n;
}

/* mld_frame() - an MLD message m from src to dst, hop limit hl. */
static size_t mld_frame(uint8_t *f, const char *src, const char *dst,
			const uint8_t *m, size_t len, uint8_t hl)
{
	size_t n = test_frame_ip6(f, src, dst, IPPROTO_ICMPV6, m, len);

	f[ETH_HLEN_ + IP6_OFF_HLIM] = hl;
	return n;
}

/* Records igmp_parse() handed over. */
struct got {
	unsigned int n;
	struct igmp_rec r[8];
};

static void collect(void *arg, const struct igmp_rec *r)
{
	struct got *g = arg;

	if (g->n < 8)
		g->r[g->n++] = *r;
}

/* parse() - pkt_parse() and igmp_parse() of frame f (n bytes). */
static enum drop_reason parse(const uint8_t *f, size_t n, struct got *g)
{
	struct pkt p;
	enum drop_reason r = pkt_parse(f, n, true, &p);

	g->n = 0;
	return r != DROP_NONE ? r : igmp_parse(&p, collect, g);
}

/* is_group() - record i of g is for group a (text). */
static bool is_group(const struct got *g, unsigned int i, const char *a)
{
	union inany x;
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, a, &a4) == 1)
		inany_from4(&x, a4);
	else if (inet_pton(AF_INET6, a, &a6) == 1)
		inany_from6(&x, &a6);
	else
		return false;
	return i < g->n && inany_eq(&g->r[i].group, &x);
}

/* v2() - an IGMPv1/v2 message of type t for group a. */
static void v2(uint8_t *m, uint8_t t, const char *a)
{
	struct in_addr g;

	memset(m, 0, IGMP_LEN);
	inet_pton(AF_INET, a, &g);
	m[IGMP_OFF_TYPE] = t;
	memcpy(m + IGMP_OFF_GROUP, &g, 4);
}

TEST(igmp_v1_v2_parsed)
{
	uint8_t m[IGMP_LEN], f[256];
	struct got g;

	v2(m, 0x16, "239.1.2.3");
	CHECK_EQ(parse(f, igmp_frame(f, "239.1.2.3", m, sizeof(m), 1, false),
		       &g), DROP_NONE);
	CHECK_EQ(g.n, 1);
	CHECK(is_group(&g, 0, "239.1.2.3"));
	CHECK_EQ(g.r[0].op, MCAST_OP_JOIN);
	v2(m, 0x12, "239.1.2.4");		/* v1 report */
	CHECK_EQ(parse(f, igmp_frame(f, "239.1.2.4", m, sizeof(m), 1, false),
		       &g), DROP_NONE);
	CHECK_EQ(g.r[0].op, MCAST_OP_JOIN);
	v2(m, 0x17, "239.1.2.3");		/* leave, to all routers */
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.2", m, sizeof(m), 1, false),
		       &g), DROP_NONE);
	CHECK_EQ(g.n, 1);
	CHECK_EQ(g.r[0].op, MCAST_OP_LEAVE);
	/* A query, a wrong checksum, TTL 2, a unicast group, all-hosts. */
	v2(m, 0x11, "0.0.0.0");
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.1", m, sizeof(m), 1, false),
		       &g), DROP_MCAST_QUERY);
	v2(m, 0x16, "239.1.2.3");
	CHECK_EQ(parse(f, igmp_frame(f, "239.1.2.3", m, sizeof(m), 1, true),
		       &g), DROP_L4_CSUM);
	CHECK_EQ(parse(f, igmp_frame(f, "239.1.2.3", m, sizeof(m), 2, false),
		       &g), DROP_MCAST_REPORT);
	v2(m, 0x16, "198.51.100.1");
	CHECK_EQ(parse(f, igmp_frame(f, "239.1.2.3", m, sizeof(m), 1, false),
		       &g), DROP_MCAST_REPORT);
	v2(m, 0x16, "224.0.0.1");
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.1", m, sizeof(m), 1, false),
		       &g), DROP_NONE);
	CHECK_EQ(g.n, 0);			/* valid, nothing to join */
	/* Truncated: 7 bytes. */
	v2(m, 0x16, "239.1.2.3");
	CHECK_EQ(parse(f, igmp_frame(f, "239.1.2.3", m, 7, 1, false), &g),
		 DROP_L4_SHORT);
}

/* rec4() - append a v3 record (type t, group a, n sources from 10.0.0.1,
 * aux words) at m + *off. */
static void rec4(uint8_t *m, size_t *off, uint8_t t, const char *a,
		 unsigned int n, uint8_t aux)
{
	struct in_addr g;
	unsigned int i;

	inet_pton(AF_INET, a, &g);
	m[*off + MREC_OFF_TYPE] = t;
	m[*off + MREC_OFF_AUXLEN] = aux;
	wr16(m + *off + MREC_OFF_NSRC, (uint16_t)n);
	memcpy(m + *off + MREC_OFF_GROUP, &g, 4);
	*off += MREC_HLEN + 4;
	for (i = 0; i < n; i++, *off += 4)
		wr32(m + *off, 0x0a000001u + i);
	memset(m + *off, 0, 4u * aux);
	*off += 4u * aux;
}

TEST(igmp_v3_records_parsed_and_checked_whole)
{
	uint8_t m[512] = { 0 }, f[700];
	size_t off = IGMP_REPORT3_HLEN;
	struct got g;

	m[IGMP_OFF_TYPE] = 0x22;
	wr16(m + IGMP_OFF_NREC, 6);
	rec4(m, &off, 4, "239.0.0.1", 0, 0);	/* TO_EX {}: join */
	rec4(m, &off, 3, "239.0.0.2", 0, 0);	/* TO_IN {}: leave */
	rec4(m, &off, 5, "232.1.1.1", 2, 1);	/* ALLOW {2}, aux data */
	rec4(m, &off, 6, "232.1.1.1", 1, 0);	/* BLOCK {1} */
	rec4(m, &off, 9, "239.0.0.3", 0, 0);	/* unknown type: ignored */
	rec4(m, &off, 1, "232.1.1.2", 1, 0);	/* IS_IN {1} */
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.22", m, off, 1, false), &g),
		 DROP_NONE);
	CHECK_EQ(g.n, 5);
	CHECK(is_group(&g, 0, "239.0.0.1") && g.r[0].op == MCAST_OP_JOIN);
	CHECK(is_group(&g, 1, "239.0.0.2") && g.r[1].op == MCAST_OP_LEAVE);
	CHECK(is_group(&g, 2, "232.1.1.1") && g.r[2].op == MCAST_OP_ALLOW);
	CHECK_EQ(g.r[2].nsrc, 2);
	CHECK_EQ(rd32(g.r[2].src + 4), 0x0a000002u);
	CHECK(g.r[3].op == MCAST_OP_BLOCK && g.r[3].nsrc == 1);
	CHECK(is_group(&g, 4, "232.1.1.2") && g.r[4].op == MCAST_OP_INCLUDE);
	/* One record cut short: nothing is handed over at all. */
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.22", m, off - 2, 1, false),
		       &g), DROP_MCAST_REPORT);
	CHECK_EQ(g.n, 0);
	/* More records counted than there are. */
	wr16(m + IGMP_OFF_NREC, 7);
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.22", m, off, 1, false), &g),
		 DROP_MCAST_REPORT);
	CHECK_EQ(g.n, 0);
	/* A source count far beyond the message. */
	wr16(m + IGMP_OFF_NREC, 1);
	wr16(m + IGMP_REPORT3_HLEN + MREC_OFF_NSRC, 0xffff);
	CHECK_EQ(parse(f, igmp_frame(f, "224.0.0.22", m, off, 1, false), &g),
		 DROP_MCAST_REPORT);
}

/* mld1() - an MLDv1 message of type t for group a. */
static void mld1(uint8_t *m, uint8_t t, const char *a)
{
	struct in6_addr g;

	memset(m, 0, MLD_LEN);
	inet_pton(AF_INET6, a, &g);
	m[ICMP_OFF_TYPE] = t;
	memcpy(m + MLD_OFF_GROUP, &g, 16);
}

TEST(mld_v1_v2_parsed)
{
	uint8_t m[256] = { 0 }, f[400];
	struct in6_addr a6;
	struct got g;
	size_t off;

	mld1(m, 131, "ff05::1:3");
	CHECK_EQ(parse(f, mld_frame(f, "fe80::2", "ff05::1:3", m, MLD_LEN, 1),
		       &g), DROP_NONE);
	CHECK(is_group(&g, 0, "ff05::1:3") && g.r[0].op == MCAST_OP_JOIN);
	mld1(m, 132, "ff05::1:3");
	CHECK_EQ(parse(f, mld_frame(f, "::", "ff02::2", m, MLD_LEN, 1), &g),
		 DROP_NONE);
	CHECK(g.r[0].op == MCAST_OP_LEAVE);
	/* A global source, hop limit 255, a query, truncated. */
	mld1(m, 131, "ff05::1:3");
	CHECK_EQ(parse(f, mld_frame(f, "2001:db8::2", "ff05::1:3", m, MLD_LEN,
				    1), &g), DROP_MCAST_REPORT);
	CHECK_EQ(parse(f, mld_frame(f, "fe80::2", "ff05::1:3", m, MLD_LEN,
				    255), &g), DROP_MCAST_REPORT);
	mld1(m, 130, "::");
	CHECK_EQ(parse(f, mld_frame(f, "fe80::2", "ff02::1", m, MLD_LEN, 1),
		       &g), DROP_MCAST_QUERY);
	mld1(m, 131, "ff05::1:3");
	CHECK_EQ(parse(f, mld_frame(f, "fe80::2", "ff05::1:3", m, 20, 1), &g),
		 DROP_L4_SHORT);

	/* v2: the solicited-node and all-nodes groups are not joined. */
	memset(m, 0, sizeof(m));
	m[ICMP_OFF_TYPE] = 143;
	wr16(m + IGMP_OFF_NREC, 3);
	off = IGMP_REPORT3_HLEN;
	const char *grp[3] = { "ff02::1:ff00:2", "ff02::fb", "ff02::1" };
	for (int i = 0; i < 3; i++) {
		m[off + MREC_OFF_TYPE] = 4;
		inet_pton(AF_INET6, grp[i], &a6);
		memcpy(m + off + MREC_OFF_GROUP, &a6, 16);
		off += MREC_HLEN + 16;
	}
	CHECK_EQ(parse(f, mld_frame(f, "fe80::2", "ff02::16", m, off, 1), &g),
		 DROP_NONE);
	CHECK_EQ(g.n, 1);
	CHECK(is_group(&g, 0, "ff02::fb") && g.r[0].op == MCAST_OP_JOIN);
	CHECK_EQ(parse(f, mld_frame(f, "fe80::2", "ff02::16", m, off - 1, 1),
		       &g), DROP_MCAST_REPORT);
}

/* join_v2() - the guest reports group a (IGMPv2) through tap_input(). */
static void join_v2(struct ctx *c, uint8_t type, const char *a)
{
	uint8_t m[IGMP_LEN], f[256];

	v2(m, type, a);
	test_input(c, f, igmp_frame(f, type == 0x17 ? "224.0.0.2" : a, m,
				    sizeof(m), 1, false));
}

TEST(mcast_groups_joined_left_capped_expired)
{
	struct ctx *c = ig_ctx();
	struct mcast_state *m = &c->udp.mc;
	char a[32];
	int i;

	CHECK_EQ(m->max, MCAST_GROUPS_MAX);
	join_v2(c, 0x16, "224.0.0.251");
	CHECK_EQ(m->n, 1);
	CHECK_EQ(m->g[0].nport, 1);		/* mDNS: 5353 */
	CHECK_EQ(m->g[0].port[0], 5353);
	join_v2(c, 0x16, "224.0.0.251");	/* again: refreshed */
	CHECK_EQ(m->n, 1);
	CHECK_EQ(m->joins, 1);
	join_v2(c, 0x17, "224.0.0.251");
	CHECK_EQ(m->n, 0);
	CHECK_EQ(m->leaves, 1);
	join_v2(c, 0x17, "224.0.0.251");	/* not a member: nothing */
	CHECK_EQ(m->leaves, 1);
	/* The cap: one log line, every refusal counted. */
	for (i = 0; i < MCAST_GROUPS_MAX + 3; i++) {
		snprintf(a, sizeof(a), "239.9.0.%d", i + 1);
		join_v2(c, 0x16, a);
	}
	CHECK_EQ(m->n, MCAST_GROUPS_MAX);
	CHECK_EQ(m->capped, 3);
	CHECK_EQ(c->stats.drops[DROP_MCAST_GROUPS], 3);
	CHECK(m->cap_logged);
	/* The guest joined but stopped answering: all time out. */
	test_advance(c, m->member_ms + 1);
	igmp_timer(c);
	CHECK_EQ(m->n, 0);
	CHECK_EQ(m->expired, MCAST_GROUPS_MAX);
	/* --no-multicast: nothing joined. */
	c->conf.no_multicast = true;
	join_v2(c, 0x16, "239.9.9.9");
	CHECK_EQ(m->n, 0);
	CHECK(c->stats.drops[DROP_SERVICE_DISABLED] >= 1);
	ig_ctx_free(c);
}

TEST(mcast_source_specific_sources_kept)
{
	struct ctx *c = ig_ctx();
	struct mcast_state *m = &c->udp.mc;
	uint8_t r[512] = { 0 }, f[700];
	size_t off = IGMP_REPORT3_HLEN;

	r[IGMP_OFF_TYPE] = 0x22;
	wr16(r + IGMP_OFF_NREC, 1);
	rec4(r, &off, 5, "232.1.1.1", 3, 0);	/* ALLOW 10.0.0.1-3 */
	test_input(c, f, igmp_frame(f, "224.0.0.22", r, off, 1, false));
	CHECK_EQ(m->n, 1);
	CHECK(m->g[0].ssm);
	CHECK_EQ(m->g[0].nsrc, 3);
	off = IGMP_REPORT3_HLEN;
	rec4(r, &off, 6, "232.1.1.1", 2, 0);	/* BLOCK 10.0.0.1-2 */
	test_input(c, f, igmp_frame(f, "224.0.0.22", r, off, 1, false));
	CHECK_EQ(m->g[0].nsrc, 1);
	CHECK_EQ(ntohl(m->g[0].src[0].v4m.a4.s_addr), 0x0a000003u);
	off = IGMP_REPORT3_HLEN;
	rec4(r, &off, 4, "232.1.1.1", 0, 0);	/* TO_EX {}: any source */
	test_input(c, f, igmp_frame(f, "224.0.0.22", r, off, 1, false));
	CHECK(!m->g[0].ssm);
	off = IGMP_REPORT3_HLEN;
	rec4(r, &off, 3, "232.1.1.1", 0, 0);	/* TO_IN {}: leave */
	test_input(c, f, igmp_frame(f, "224.0.0.22", r, off, 1, false));
	CHECK_EQ(m->n, 0);
	ig_ctx_free(c);
}

TEST(igmp_querier_frames)
{
	struct ctx *c = ig_ctx();
	const uint8_t *f, *l3, *t;
	size_t len, i;
	bool v4 = false, v6 = false;

	c->link.up = true;
	test_advance(c, 1000);
	igmp_timer(c);
	CHECK_EQ(c->udp.mc.queries, 1);
	for (i = 0; i < test_tx_n(c); i++) {
		f = test_tx(c, i, &len);
		l3 = f + ETH_HLEN_;
		if (rd16(f + ETH_OFF_TYPE) == ETH_P_IP_) {
			CHECK_EQ(f[ETH_OFF_DST], 0x01);
			CHECK_EQ(ip4_hlen(l3), IP4_HLEN + IP4_OPT_RA_LEN);
			CHECK_EQ(l3[IP4_OFF_TTL], 1);
			CHECK_EQ(l3[IP4_OFF_PROTO], IPPROTO_IGMP);
			CHECK_EQ(csum(l3, ip4_hlen(l3)), 0);
			t = l3 + ip4_hlen(l3);
			CHECK_EQ(t[IGMP_OFF_TYPE], 0x11);
			CHECK_EQ(csum(t, IGMP_QUERY3_LEN), 0);
			CHECK_EQ(t[IGMP_OFF_MAXRESP], 100);
			v4 = true;
		} else {
			struct pkt p;

			CHECK_EQ(pkt_parse(f, len, true, &p), DROP_NONE);
			CHECK_EQ(p.ttl, 1);
			CHECK_EQ(p.l4proto, IPPROTO_ICMPV6);
			CHECK_EQ(p.icmp.type, 130);
			CHECK_EQ(p.l4len, MLD_QUERY2_LEN);
			CHECK(IN6_IS_ADDR_LINKLOCAL(&p.src6));
			v6 = true;
		}
	}
	CHECK(v4 && v6);
	ig_ctx_free(c);
}
