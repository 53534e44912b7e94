/* test_flow.c - flow table: allocation limits, hashing on two sides,
 * per-type iteration with frees, and SipHash against its reference. */
#include <arpa/inet.h>

#include "flow.h"
#include "unit.h"

TEST(siphash_reference_vector)
{
	/* SipHash-2-4 paper, appendix A: key 00..0f, message 00..0e. */
	uint8_t msg[15];
	uint64_t k0 = 0x0706050403020100ULL, k1 = 0x0f0e0d0c0b0a0908ULL;
	int i;

	for (i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	CHECK(siphash24(k0, k1, msg, 15) == 0xa129ca6149be45e5ULL);
}

static void key4(struct flow_key *k, const char *a, uint16_t pa,
		 const char *b, uint16_t pb)
{
	struct in_addr x, y;
	union inany ia, ib;

	inet_pton(AF_INET, a, &x);
	inet_pton(AF_INET, b, &y);
	inany_from4(&ia, x);
	inany_from4(&ib, y);
	flow_key_make(k, IPPROTO_UDP, &ia, pa, &ib, pb);
}

TEST(flow_alloc_lookup_free)
{
	static struct flowtab ft;
	struct flow *a, *b, *fl;
	struct flow_key ka, kb, kh;
	int n = 0;

	flow_init(&ft, 3);
	a = flow_alloc(&ft, FLOW_UDP);
	b = flow_alloc(&ft, FLOW_TCP);
	CHECK(a && b && a != b);
	key4(&ka, "198.51.100.2", 1000, "203.0.113.1", 53);
	key4(&kb, "198.51.100.2", 1001, "203.0.113.1", 53);
	key4(&kh, "203.0.113.9", 5000, "198.51.100.2", 53);
	flow_hash_add(&ft, a, FLOW_SIDE_GUEST, &ka);
	flow_hash_add(&ft, a, FLOW_SIDE_HOST, &kh);
	flow_hash_add(&ft, b, FLOW_SIDE_GUEST, &kb);
	CHECK(flow_lookup(&ft, FLOW_SIDE_GUEST, &ka) == a);
	CHECK(flow_lookup(&ft, FLOW_SIDE_GUEST, &kb) == b);
	CHECK(flow_lookup(&ft, FLOW_SIDE_HOST, &kh) == a);
	CHECK(flow_lookup(&ft, FLOW_SIDE_HOST, &ka) == NULL);
	CHECK(flow_at(&ft, flow_idx(&ft, a)) == a);
	CHECK(flow_at(&ft, FLOW_MAX) == NULL);
	CHECK(flow_at(&ft, 12345) == NULL);

	/* The limit holds. */
	CHECK(flow_alloc(&ft, FLOW_UDP) != NULL);
	CHECK(flow_alloc(&ft, FLOW_UDP) == NULL);

	/* Iterate UDP flows while freeing them. */
	for (fl = flow_first(&ft, FLOW_UDP); fl; ) {
		struct flow *nx = flow_next(&ft, fl);

		flow_free(&ft, fl);
		n++;
		fl = nx;
	}
	CHECK_EQ(n, 2);
	CHECK_EQ(ft.count[FLOW_UDP], 0);
	CHECK_EQ(ft.count[FLOW_TCP], 1);
	CHECK(flow_lookup(&ft, FLOW_SIDE_GUEST, &ka) == NULL);
	CHECK(flow_lookup(&ft, FLOW_SIDE_HOST, &kh) == NULL);
	CHECK(flow_lookup(&ft, FLOW_SIDE_GUEST, &kb) == b);
	CHECK(flow_at(&ft, flow_idx(&ft, a)) == NULL);
}

TEST(flow_many_keys)
{
	static struct flowtab ft;
	struct flow_key k;
	uint32_t i;

	flow_init(&ft, 0);
	for (i = 0; i < 20000; i++) {
		struct flow *fl = flow_alloc(&ft, FLOW_UDP);

		CHECK(fl);
		key4(&k, "198.51.100.2", (uint16_t)i, "203.0.113.1",
		     (uint16_t)(i >> 16));
		flow_hash_add(&ft, fl, FLOW_SIDE_GUEST, &k);
	}
	for (i = 0; i < 20000; i++) {
		struct flow *fl;

		key4(&k, "198.51.100.2", (uint16_t)i, "203.0.113.1",
		     (uint16_t)(i >> 16));
		fl = flow_lookup(&ft, FLOW_SIDE_GUEST, &k);
		CHECK(fl && fl->f.key[0].pa == (uint16_t)i);
		if (i % 2)
			flow_free(&ft, fl);
	}
	for (i = 0; i < 20000; i++) {
		key4(&k, "198.51.100.2", (uint16_t)i, "203.0.113.1", 0);
		CHECK((flow_lookup(&ft, FLOW_SIDE_GUEST, &k) == NULL) ==
		      (i % 2 == 1));
	}
}
