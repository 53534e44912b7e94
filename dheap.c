/* dheap.c - a min-heap of deadlines keyed by id (floor 0, no ctx).
 *
 * Theory of operation. A timer scan that walks every connection costs
 * in proportion to the connections, idle ones included, however few of
 * them have anything due. This heap holds one deadline per id (a flow
 * index) and answers "which is due first" at e[0]; a timer pass pops
 * only the due ones, so its cost follows the work due, not the table.
 *
 * Layout: e[] is a binary heap ordered by due (children of i at 2i+1
 * and 2i+2); pos[id] is the entry's index + 1 (0: id absent), kept
 * right on every swap, so a deadline moves or leaves in O(log n)
 * without a search. Both arrays are allocated once, for cap ids
 * (alloc_startup(): anonymous memory, pages touched only as ids and
 * entries are used), so nothing here allocates in the data path and
 * the file makes no system call of its own (seccomp.c).
 *
 * A user may keep deadlines lazily: an entry earlier than the id's real
 * deadline only makes the id come up early (it then sets the right one),
 * so dheap_lower() is all a deadline moved earlier needs; a deadline
 * moved later can stay until it comes up.
 */
#include <stddef.h>

#include "dheap.h"
#include "util.h"

void dheap_init(struct dheap *h, uint32_t cap)
{
	h->e = alloc_startup(sizeof(*h->e) * cap);
	h->pos = alloc_startup(sizeof(*h->pos) * cap);
	h->n = 0;
	h->cap = cap;
}

/* put() - entry x at index i, its position recorded. */
static void put(struct dheap *h, uint32_t i, struct dheap_ent x)
{
	h->e[i] = x;
	h->pos[x.id] = i + 1;
}

/* sift_up() - move the entry at i towards the root while it is earlier
 * than its parent. */
static void sift_up(struct dheap *h, uint32_t i)
{
	struct dheap_ent x = h->e[i];

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (h->e[parent].due <= x.due)
			break;
		put(h, i, h->e[parent]);
		i = parent;
	}
	put(h, i, x);
}

/* sift_down() - move the entry at i towards the leaves while a child is
 * earlier. */
static void sift_down(struct dheap *h, uint32_t i)
{
	struct dheap_ent x = h->e[i];

	for (;;) {
		uint32_t l = 2 * i + 1, m = l;

		if (l >= h->n)
			break;
		if (l + 1 < h->n && h->e[l + 1].due < h->e[l].due)
			m = l + 1;
		if (x.due <= h->e[m].due)
			break;
		put(h, i, h->e[m]);
		i = m;
	}
	put(h, i, x);
}

void dheap_set(struct dheap *h, uint32_t id, int64_t due)
{
	uint32_t i;

	if (id >= h->cap)
		return;
	if (!h->pos[id]) {
		put(h, h->n++, (struct dheap_ent){ .due = due, .id = id });
		sift_up(h, h->n - 1);
		return;
	}
	i = h->pos[id] - 1;
	if (due < h->e[i].due) {
		h->e[i].due = due;
		sift_up(h, i);
	} else if (due > h->e[i].due) {
		h->e[i].due = due;
		sift_down(h, i);
	}
}

void dheap_lower(struct dheap *h, uint32_t id, int64_t due)
{
	if (id >= h->cap)
		return;
	if (!h->pos[id] || due < h->e[h->pos[id] - 1].due)
		dheap_set(h, id, due);
}

void dheap_del(struct dheap *h, uint32_t id)
{
	uint32_t i;
	struct dheap_ent last;

	if (id >= h->cap || !h->pos[id])
		return;
	i = h->pos[id] - 1;
	h->pos[id] = 0;
	last = h->e[--h->n];
	if (i == h->n)
		return;		/* it was the last entry */
	put(h, i, last);
	if (i && h->e[(i - 1) / 2].due > last.due)
		sift_up(h, i);
	else
		sift_down(h, i);
}

bool dheap_has(const struct dheap *h, uint32_t id)
{
	return id < h->cap && h->pos[id];
}

const struct dheap_ent *dheap_top(const struct dheap *h)
{
	return h->n ? &h->e[0] : NULL;
}
