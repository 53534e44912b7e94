/* dheap.h - a min-heap of deadlines keyed by a small integer id (a flow
 * index): the next due one in O(1), insert, move and remove in O(log n).
 * See dheap.c for the theory of operation. */
#ifndef FERRY_DHEAP_H
#define FERRY_DHEAP_H

#include <stdbool.h>
#include <stdint.h>

struct dheap_ent {
	int64_t due;			/* deadline, any monotonic clock */
	uint32_t id;
};

struct dheap {
	struct dheap_ent *e;		/* e[0..n) in heap order */
	uint32_t *pos;			/* id -> its index in e[] + 1, 0: absent */
	uint32_t n, cap;		/* entries; ids are below cap */
};

/* dheap_init() - an empty heap for ids below cap (start-up only: the
 * arrays are allocated here, pages touched as the heap grows). */
void dheap_init(struct dheap *h, uint32_t cap);
/* dheap_set() - id's deadline is due: inserted, or moved either way. */
void dheap_set(struct dheap *h, uint32_t id, int64_t due);
/* dheap_lower() - id's deadline becomes due if that is earlier than the
 * one it has (or it has none); a later due leaves it alone. */
void dheap_lower(struct dheap *h, uint32_t id, int64_t due);
/* dheap_del() - remove id (nothing if it is not in the heap). */
void dheap_del(struct dheap *h, uint32_t id);
/* dheap_has() - whether id is in the heap. */
bool dheap_has(const struct dheap *h, uint32_t id);
/* dheap_top() - the earliest entry, NULL when the heap is empty. */
const struct dheap_ent *dheap_top(const struct dheap *h);

#endif /* FERRY_DHEAP_H */
