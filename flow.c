/* flow.c - the shared flow table (see flow.h for the theory).
 *
 * Storage is two mmap()ed arrays made at start-up: slots and hash bucket
 * heads. The hash is chained through the slots themselves (hnext), with
 * chain entries encoding (index << 1 | side) so one slot can sit in two
 * chains. Per-type doubly linked lists let modules walk only their flows
 * (timers, expiry) without scanning the whole table.
 */

#include <stdio.h>
#include <arpa/inet.h>

#include "flow.h"
#include "flow_log.h"
#include "log.h"
#include "util.h"

#define ENTRY(idx, side)	((idx) << 1 | (side))
#define ENTRY_IDX(e)		((e) >> 1)
#define ENTRY_SIDE(e)		((e) & 1)

/* siphash24() - SipHash-2-4 (Aumasson & Bernstein), little-endian words. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do {							\
	v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);	\
	v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;				\
	v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;				\
	v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);	\
} while (0)

uint64_t siphash24(uint64_t k0, uint64_t k1, const void *data, size_t len)
{
	uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	const uint8_t *p = data;
	uint64_t m, b = (uint64_t)len << 56;
	size_t i, left = len & 7;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, p + i, 8);		/* x86: little-endian */
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; j < left; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

void flow_init(struct flowtab *ft, uint32_t limit)
{
	uint32_t i;

	ft->slots = alloc_startup(sizeof(struct flow) * FLOW_MAX);
	ft->buckets = alloc_startup(sizeof(uint32_t) * FLOW_HASH_SIZE);
	memset(ft->buckets, 0xff, sizeof(uint32_t) * FLOW_HASH_SIZE);
	ft->limit = limit && limit < FLOW_MAX ? limit : FLOW_MAX;
	ft->used = 0;
	/* Slots are handed out from the free list (hot ones first), else
	 * from the high-water mark: pages of slots never used are never
	 * touched, so memory follows the peak number of flows. */
	ft->free_head = FLOW_NONE;
	ft->hw = 0;
	for (i = 0; i < FLOW_TYPES; i++) {
		ft->head[i] = FLOW_NONE;
		ft->count[i] = 0;
	}
	random_bytes(&ft->k0, sizeof(ft->k0));
	random_bytes(&ft->k1, sizeof(ft->k1));
}

uint32_t flow_idx(const struct flowtab *ft, const struct flow *fl)
{
	return (uint32_t)(fl - ft->slots);
}

struct flow *flow_at(const struct flowtab *ft, uint32_t idx)
{
	if (idx >= FLOW_MAX || ft->slots[idx].f.type == FLOW_FREE)
		return NULL;
	return &ft->slots[idx];
}

int64_t flow_now_ms(void)
{
	struct timespec t;

	now_mono(&t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

struct flow *flow_alloc(struct flowtab *ft, enum flow_type t)
{
	struct flow *fl;
	uint32_t idx = ft->free_head;

	if (ft->used >= ft->limit || t == FLOW_FREE || t >= FLOW_TYPES)
		return NULL;
	if (idx != FLOW_NONE)
		ft->free_head = ft->slots[idx].f.next;
	else if (ft->hw < FLOW_MAX)
		idx = ft->hw++;
	else
		return NULL;
	fl = &ft->slots[idx];
	memset(fl, 0, sizeof(*fl));
	fl->f.type = (uint8_t)t;
	fl->f.born_ms = flow_now_ms();
	fl->f.prev = FLOW_NONE;
	fl->f.next = ft->head[t];
	if (ft->head[t] != FLOW_NONE)
		ft->slots[ft->head[t]].f.prev = idx;
	ft->head[t] = idx;
	ft->count[t]++;
	ft->used++;
	return fl;
}

void flow_free(struct flowtab *ft, struct flow *fl)
{
	uint32_t idx = flow_idx(ft, fl);
	enum flow_type t = fl->f.type;

	if (t != FLOW_FREE && t < FLOW_TYPES)
		flow_log_free(ft, fl);		/* --debug: unless said */
	if (t == FLOW_FREE || t >= FLOW_TYPES)
		return;
	flow_hash_del(ft, fl, FLOW_SIDE_GUEST);
	flow_hash_del(ft, fl, FLOW_SIDE_HOST);
	if (fl->f.prev != FLOW_NONE)
		ft->slots[fl->f.prev].f.next = fl->f.next;
	else
		ft->head[t] = fl->f.next;
	if (fl->f.next != FLOW_NONE)
		ft->slots[fl->f.next].f.prev = fl->f.prev;
	ft->count[t]--;
	ft->used--;
	fl->f.type = FLOW_FREE;
	fl->f.next = ft->free_head;
	ft->free_head = idx;
}

uint64_t flow_key_hash(const struct flowtab *ft, unsigned int salt,
		       const struct flow_key *k)
{
	return siphash24(ft->k0 + salt, ft->k1, k, sizeof(*k));
}

static uint32_t bucket_of(const struct flowtab *ft, enum flow_side s,
			  const struct flow_key *k)
{
	return (uint32_t)(flow_key_hash(ft, s, k) & (FLOW_HASH_SIZE - 1));
}

void flow_hash_add(struct flowtab *ft, struct flow *fl, enum flow_side s,
		   const struct flow_key *k)
{
	bool first = s == FLOW_SIDE_GUEST && !fl->f.hashed[s];
	uint32_t b;

	flow_hash_del(ft, fl, s);
	fl->f.key[s] = *k;
	b = bucket_of(ft, s, k);
	fl->f.hnext[s] = ft->buckets[b];
	ft->buckets[b] = ENTRY(flow_idx(ft, fl), s);
	fl->f.hashed[s] = true;
	if (first)
		flow_log_open(ft, fl, k);	/* --debug: the open line */
}

void flow_hash_del(struct flowtab *ft, struct flow *fl, enum flow_side s)
{
	uint32_t *pe, want = ENTRY(flow_idx(ft, fl), s);

	if (!fl->f.hashed[s])
		return;
	pe = &ft->buckets[bucket_of(ft, s, &fl->f.key[s])];
	while (*pe != FLOW_NONE) {
		if (*pe == want) {
			*pe = fl->f.hnext[s];
			break;
		}
		pe = &ft->slots[ENTRY_IDX(*pe)].f.hnext[ENTRY_SIDE(*pe)];
	}
	fl->f.hashed[s] = false;
}

struct flow *flow_lookup(const struct flowtab *ft, enum flow_side s,
			 const struct flow_key *k)
{
	uint32_t e = ft->buckets[bucket_of(ft, s, k)];

	while (e != FLOW_NONE) {
		struct flow *fl = &ft->slots[ENTRY_IDX(e)];
		enum flow_side es = ENTRY_SIDE(e);

		if (es == s && !memcmp(&fl->f.key[s], k, sizeof(*k)))
			return fl;
		e = fl->f.hnext[es];
	}
	return NULL;
}

struct flow *flow_first(const struct flowtab *ft, enum flow_type t)
{
	return ft->head[t] == FLOW_NONE ? NULL : &ft->slots[ft->head[t]];
}

struct flow *flow_next(const struct flowtab *ft, const struct flow *fl)
{
	return fl->f.next == FLOW_NONE ? NULL : &ft->slots[fl->f.next];
}

void flow_key_make(struct flow_key *k, uint8_t proto, const union inany *a,
		   uint16_t pa, const union inany *b, uint16_t pb)
{
	memset(k, 0, sizeof(*k));
	k->proto = proto;
	k->a = *a;
	k->b = *b;
	k->pa = pa;
	k->pb = pb;
}

socklen_t inany_to_sa(sockaddr_inany *sa, const union inany *a, uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (inany_is4(a)) {
		sa->v4.sin_family = AF_INET;
		sa->v4.sin_addr = a->v4m.a4;
		sa->v4.sin_port = htons(port);
		return sizeof(sa->v4);
	}
	sa->v6.sin6_family = AF_INET6;
	sa->v6.sin6_addr = a->a6;
	sa->v6.sin6_port = htons(port);
	return sizeof(sa->v6);
}

void inany_from_sa(const sockaddr_inany *sa, union inany *a, uint16_t *port)
{
	if (sa->sa.sa_family == AF_INET) {
		inany_from4(a, sa->v4.sin_addr);
		*port = ntohs(sa->v4.sin_port);
	} else {
		inany_from6(a, &sa->v6.sin6_addr);
		*port = ntohs(sa->v6.sin6_port);
	}
}

/* inany_str() - a as text: dotted IPv4 for a v4-mapped one. */
static void inany_str(const union inany *a, char *buf, size_t len)
{
	if (inany_is4(a))
		inet_ntop(AF_INET, &a->v4m.a4, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, &a->a6, buf, (socklen_t)len);
}

void flow_addr_str(const union inany *a, uint16_t port, char *buf,
		   size_t len)
{
	char t[INET6_ADDRSTRLEN];

	inany_str(a, t, sizeof(t));
	snprintf(buf, len, inany_is4(a) ? "%s:%u" : "[%s]:%u", t, port);
}

void flow_key_str(const struct flow_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	inany_str(&k->a, a, sizeof(a));
	inany_str(&k->b, b, sizeof(b));
	snprintf(buf, len, inany_is4(&k->a) ? "%s:%u -> %s:%u" :
		 "[%s]:%u -> [%s]:%u", a, k->pa, b, k->pb);
}
