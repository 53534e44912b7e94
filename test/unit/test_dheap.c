/* test_dheap.c - the deadline heap (dheap.c): against a plain array that
 * knows every id's deadline, through random sets, lowers and removals;
 * popping gives the deadlines in order; ids out of range are ignored. */
#include <stdlib.h>

#include "dheap.h"
#include "unit.h"

#define IDS	512

/* heap_ok() - the heap order holds and every position is right. */
static bool heap_ok(const struct dheap *h)
{
	uint32_t i;

	for (i = 0; i < h->n; i++) {
		if (h->pos[h->e[i].id] != i + 1)
			return false;
		if (i && h->e[(i - 1) / 2].due > h->e[i].due)
			return false;
	}
	return true;
}

/* model_min() - the earliest deadline of the model (INT64_MAX: none). */
static int64_t model_min(const int64_t *m, const bool *in)
{
	int64_t best = INT64_MAX;
	int i;

	for (i = 0; i < IDS; i++)
		if (in[i] && m[i] < best)
			best = m[i];
	return best;
}

TEST(dheap_random_against_a_model)
{
	static struct dheap h;
	static int64_t m[IDS];
	static bool in[IDS];
	unsigned int seed = 23;
	int step;

	dheap_init(&h, IDS);
	for (step = 0; step < 20000; step++) {
		uint32_t id = (uint32_t)rand_r(&seed) % IDS;
		int64_t due = rand_r(&seed) % 1000;
		int op = rand_r(&seed) % 4;

		if (op == 0) {
			dheap_del(&h, id);
			in[id] = false;
		} else if (op == 1) {
			dheap_lower(&h, id, due);
			if (!in[id] || due < m[id])
				m[id] = due;
			in[id] = true;
		} else {
			dheap_set(&h, id, due);
			m[id] = due;
			in[id] = true;
		}
		CHECK(heap_ok(&h));
		CHECK_EQ(dheap_has(&h, id), in[id]);
		if (h.n)
			CHECK_EQ(dheap_top(&h)->due, model_min(m, in));
		else
			CHECK(model_min(m, in) == INT64_MAX);
	}
}

TEST(dheap_pops_in_deadline_order)
{
	static struct dheap h;
	const struct dheap_ent *t;
	int64_t last = -1;
	uint32_t i, n = 0;

	dheap_init(&h, IDS);
	for (i = 0; i < IDS; i++)
		dheap_set(&h, i, (int64_t)((i * 7919u) % 1000u));
	while ((t = dheap_top(&h))) {
		CHECK(t->due >= last);
		last = t->due;
		dheap_del(&h, t->id);
		n++;
	}
	CHECK_EQ(n, IDS);
	CHECK(!dheap_has(&h, 0));
}

TEST(dheap_lower_keeps_earlier_and_ignores_out_of_range)
{
	static struct dheap h;

	dheap_init(&h, 4);
	dheap_set(&h, 1, 100);
	dheap_lower(&h, 1, 200);	/* later: stays at 100 */
	CHECK_EQ(dheap_top(&h)->due, 100);
	dheap_lower(&h, 1, 50);
	CHECK_EQ(dheap_top(&h)->due, 50);
	dheap_set(&h, 1, 300);		/* set moves it later */
	CHECK_EQ(dheap_top(&h)->due, 300);
	dheap_set(&h, 4, 1);		/* id beyond cap */
	dheap_lower(&h, 9, 1);
	dheap_del(&h, 7);
	CHECK_EQ(h.n, 1);
	CHECK_EQ(dheap_top(&h)->id, 1);
	dheap_del(&h, 1);
	dheap_del(&h, 1);		/* twice: nothing */
	CHECK(!dheap_top(&h));
}
