/* test_flow.c - flow table: allocation limits, hashing on two sides,
 * per-type iteration with frees, slot pages touched only as the number of
 * flows grows, and SipHash against its reference. */
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>

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

/* resident_slot_pages() - pages of ft's slot array in memory (mincore). */
static size_t resident_slot_pages(const struct flowtab *ft)
{
	static unsigned char vec[FLOW_MAX * sizeof(struct flow) / 4096 + 2];
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = FLOW_MAX * sizeof(struct flow), i, n = 0;

	if (pg != 4096 || mincore(ft->slots, len, vec))
		return (size_t)-1;
	for (i = 0; i < (len + pg - 1) / pg; i++)
		n += vec[i] & 1;
	return n;
}

TEST(flow_slots_follow_peak_flows)
{
	static struct flowtab ft;
	static struct flow *fl[100];
	size_t need = (100 * sizeof(struct flow) + 4095) / 4096 + 1;
	struct flow *a;
	uint32_t i;
	int round;

	flow_init(&ft, 0);
	CHECK_EQ(resident_slot_pages(&ft), 0);
	/* Churn: 100 flows at a time, 50 times: the same slots again. */
	for (round = 0; round < 50; round++) {
		for (i = 0; i < 100; i++)
			CHECK((fl[i] = flow_alloc(&ft, FLOW_TCP)));
		for (i = 0; i < 100; i++)
			flow_free(&ft, fl[i]);
	}
	CHECK_EQ(ft.hw, 100);
	CHECK(resident_slot_pages(&ft) <= need);
	/* The last freed slot is the next one handed out (hot first). */
	a = flow_alloc(&ft, FLOW_UDP);
	CHECK(a == fl[99]);
	/* Bounded: exactly FLOW_MAX flows, then none until one is freed. */
	for (i = 1; i < FLOW_MAX; i++)
		CHECK(flow_alloc(&ft, FLOW_UDP));
	CHECK(flow_alloc(&ft, FLOW_UDP) == NULL);
	CHECK_EQ(ft.hw, FLOW_MAX);
	flow_free(&ft, a);
	CHECK(flow_alloc(&ft, FLOW_TCP) == a);
	CHECK(flow_alloc(&ft, FLOW_TCP) == NULL);
}
