/* flow.h - the shared flow table: every ICMP echo, UDP and TCP flow lives
 * in one preallocated table of fixed-size slots.
 *
 * Theory of operation: a flow has a common header (type, per-type list
 * links, up to two hash keys) and a private area that its protocol module
 * interprets as its own struct (checked at compile time to fit, see
 * FLOW_PRIV()). Slots come from a free list (the last freed first), else
 * from a high-water mark, so the table's pages are touched only as far
 * as the peak number of flows reached: no allocation after start-up,
 * and a hard limit (FLOW_MAX, or a lower configured limit) that modules
 * handle by refusing or evicting, with a counter.
 *
 * Each flow can be found by up to two keys: side FLOW_SIDE_GUEST (the
 * addresses and ports as the guest's frames carry them) and
 * FLOW_SIDE_HOST (as a host socket sees its peer, for flows that share
 * one host socket, e.g. forwarded UDP ports). Keys hash with SipHash-2-4
 * under a random secret, so a guest cannot aim collisions at one bucket.
 *
 * Epoll references carry the flow index (flow_idx()); flow_at() turns an
 * index back into a flow, checking range and that the slot is in use.
 */
#ifndef FERRY_FLOW_H
#define FERRY_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* An IPv4 or IPv6 address: IPv4 stored v4-mapped (::ffff:a.b.c.d). */
union inany {
	struct in6_addr a6;
	struct {
		uint8_t zero[10];
		uint8_t ff[2];
		struct in_addr a4;
	} v4m;
};

static inline void inany_from4(union inany *a, struct in_addr a4)
{
	memset(a, 0, sizeof(*a));
	a->v4m.ff[0] = a->v4m.ff[1] = 0xff;
	a->v4m.a4 = a4;
}

static inline void inany_from6(union inany *a, const struct in6_addr *a6)
{
	a->a6 = *a6;
}

/* inany_pick() - a6 if v6, else a4: the one a family-split lookup meant. */
static inline void inany_pick(union inany *a, bool v6,
			      const struct in6_addr *a6, struct in_addr a4)
{
	if (v6)
		inany_from6(a, a6);
	else
		inany_from4(a, a4);
}

static inline bool inany_is4(const union inany *a)
{
	return IN6_IS_ADDR_V4MAPPED(&a->a6);
}

/* inany_is_loopback() - 127.0.0.0/8 or ::1? */
static inline bool inany_is_loopback(const union inany *a)
{
	if (inany_is4(a))
		return (ntohl(a->v4m.a4.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&a->a6);
}

static inline bool inany_eq(const union inany *a, const union inany *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* A socket address of either family, for host sockets of flows. */
typedef union {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
	struct sockaddr_storage ss;
} sockaddr_inany;

/* inany_to_sa() - a:port as a socket address; returns its length. */
socklen_t inany_to_sa(sockaddr_inany *sa, const union inany *a, uint16_t port);
/* inany_from_sa() - address and port of an AF_INET/AF_INET6 address. */
void inany_from_sa(const sockaddr_inany *sa, union inany *a, uint16_t *port);

enum flow_type {
	FLOW_FREE = 0,
	FLOW_PING,		/* ICMP/ICMPv6 echo through a ping socket */
	FLOW_TCP,		/* TCP connection translated guest <-> socket */
	FLOW_TCP_SPLICE,	/* loopback <-> loopback TCP, spliced */
	FLOW_UDP,		/* UDP flow */
	FLOW_TYPES
};

enum flow_side { FLOW_SIDE_GUEST = 0, FLOW_SIDE_HOST = 1 };

struct flow_key {
	union inany a;		/* guest side: guest address; host: peer */
	union inany b;		/* guest side: remote as the guest sees it */
	uint16_t pa, pb;	/* ports (or echo id in pa, 0 in pb) */
	uint8_t proto;		/* IPPROTO_* */
	uint8_t pad[3];		/* zero: keys are compared bytewise */
};

/* flow_addr_str() - a:port as text ("[a]:port" for IPv6), for logs and
 * the control socket's flow list. */
void flow_addr_str(const union inany *a, uint16_t port, char *buf,
		   size_t len);
/* flow_key_str() - k as "a:pa -> b:pb" (IPv6 in brackets), for logs. */
void flow_key_str(const struct flow_key *k, char *buf, size_t len);
#define FLOW_KEY_STRLEN	(2 * INET6_ADDRSTRLEN + 24)

#define FLOW_MAX	65536u
#define FLOW_NONE	UINT32_MAX
#define FLOW_PRIV_SIZE	384

struct flow_common {
	uint8_t type;			/* enum flow_type */
	bool hashed[2];			/* key[side] is in the hash */
	struct flow_key key[2];
	uint32_t hnext[2];		/* hash chain: (idx << 1 | side) */
	uint32_t prev, next;		/* per-type list */
	int64_t born_ms;		/* flow_alloc() time (now_mono(), ms):
					 * ages in the control socket's list */
	bool logged;			/* its close line is written
					 * (flow_log.c) */
};

struct flow {
	struct flow_common f;
	union {
		uint8_t bytes[FLOW_PRIV_SIZE];
		uint64_t align_;
	} u;
};

/* FLOW_PRIV() - the module's private struct inside a flow. */
#define FLOW_PRIV(fl, T)						\
	(_Static_assert_priv_fits_(sizeof(T)), (T *)(void *)(fl)->u.bytes)
#define _Static_assert_priv_fits_(n)					\
	((void)sizeof(char[(n) <= FLOW_PRIV_SIZE ? 1 : -1]))

#define FLOW_HASH_SIZE	(FLOW_MAX * 2)	/* buckets, power of two */

struct flowtab {
	struct flow *slots;		/* FLOW_MAX slots */
	uint32_t *buckets;		/* FLOW_HASH_SIZE chain heads */
	uint32_t free_head;		/* freed slots, last freed first */
	uint32_t hw;			/* slots [hw, FLOW_MAX) never used */
	uint32_t limit;			/* usable slots (<= FLOW_MAX) */
	uint32_t used;
	uint32_t count[FLOW_TYPES];
	uint32_t head[FLOW_TYPES];	/* per-type list heads */
	uint64_t k0, k1;		/* SipHash secret */
};

/* flow_init() - allocate the table (start-up only); limit 0 = FLOW_MAX. */
void flow_init(struct flowtab *ft, uint32_t limit);
/* flow_now_ms() - the clock of born_ms: monotonic, milliseconds. */
int64_t flow_now_ms(void);
/* flow_alloc() - a zeroed flow of type t, or NULL when the table is full. */
struct flow *flow_alloc(struct flowtab *ft, enum flow_type t);
/* flow_free() - remove from the hash and lists, return the slot. */
void flow_free(struct flowtab *ft, struct flow *fl);
/* flow_idx()/flow_at() - index for epoll references, and back. flow_at()
 * returns NULL for an out-of-range or free slot. */
uint32_t flow_idx(const struct flowtab *ft, const struct flow *fl);
struct flow *flow_at(const struct flowtab *ft, uint32_t idx);
/* flow_hash_add() - make fl findable by key k on side s (replacing an
 * earlier key of that side). */
void flow_hash_add(struct flowtab *ft, struct flow *fl, enum flow_side s,
		   const struct flow_key *k);
void flow_hash_del(struct flowtab *ft, struct flow *fl, enum flow_side s);
/* flow_lookup() - the flow with key k on side s, or NULL. */
struct flow *flow_lookup(const struct flowtab *ft, enum flow_side s,
			 const struct flow_key *k);
/* Iterate one type: for (fl = flow_first(ft, t); fl; fl = nx) {
 *   nx = flow_next(ft, fl); ... }  (flow_free(fl) allowed in the body). */
struct flow *flow_first(const struct flowtab *ft, enum flow_type t);
struct flow *flow_next(const struct flowtab *ft, const struct flow *fl);

/* flow_key_make() - build a key (zeroes padding). */
void flow_key_make(struct flow_key *k, uint8_t proto, const union inany *a,
		   uint16_t pa, const union inany *b, uint16_t pb);

/* flow_key_hash() - SipHash-2-4 of key k under the table's secret,
 * salt added to its first half: the table hashes side s with salt s;
 * other tables of flow keys (tcp_tw.c: FLOW_HASH_TCP_TW) take another
 * salt and so their own hash function. */
#define FLOW_HASH_TCP_TW	2
uint64_t flow_key_hash(const struct flowtab *ft, unsigned int salt,
		       const struct flow_key *k);

/* siphash24() - SipHash-2-4 of len bytes under key (k0, k1). */
uint64_t siphash24(uint64_t k0, uint64_t k1, const void *data, size_t len);

#endif /* FERRY_FLOW_H */
