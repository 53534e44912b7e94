/* fwd.h - port forwarding specifications (-t/-u/-T/-U).
 *
 * A spec says, per port, whether it is forwarded and to which target port,
 * plus an optional bind address or interface. The parser is shared by TCP
 * and UDP and by both directions.
 */
#ifndef FERRY_FWD_H
#define FERRY_FWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>

enum fwd_mode { FWD_NONE = 0, FWD_SPEC, FWD_ALL, FWD_AUTO };

#define FWD_BITMAP_WORDS	(65536 / 64)
#define FWD_BIND_MAX		255	/* distinct ADDR%IF/ prefixes per spec:
				 * podman gives each published container
				 * its own; bind[] is a uint8_t index */

/* Where the host side of a forwarded port listens: an address (either
 * family) and/or an interface. All fields clear: any address. And where
 * its connections go, per family, when the spec names a target address
 * (PORT:ADDR/TPORT, podman's per-container form): to instead of the
 * guest's own address (-t/-u), of the loopback (-T/-U). A target comes
 * with a bind address of its family (the parser makes a bare %IF/ one
 * 0.0.0.0 or ::), so a family without a target has no listener. */
struct fwd_bind {
	bool has_addr4, has_addr6;
	struct in_addr addr4;
	struct in6_addr addr6;
	char ifname[IFNAMSIZ];
	bool has_to4, has_to6;
	struct in_addr to4;
	struct in6_addr to6;
};

struct fwd_spec {
	enum fwd_mode mode;
	uint64_t map[FWD_BITMAP_WORDS];	/* bit set: port forwarded */
	uint16_t delta[65536];		/* target = port + delta (mod 2^16) */
	/* Optional bind address / interface (one per spec, as in pasta). */
	bool has_addr4, has_addr6;
	struct in_addr addr4;
	struct in6_addr addr6;
	char ifname[IFNAMSIZ];

	/* Per-port binds: several values of one option may carry different
	 * ADDR%IF/ prefixes (podman: "-t 127.0.0.1/8080:80 -t 8443:443").
	 * binds[0] is the wildcard; bind[port] indexes binds[]. The fields
	 * above mirror the first prefixed value, for simple consumers. */
	uint8_t bind[65536];
	struct fwd_bind binds[FWD_BIND_MAX];
	unsigned int nbinds;			/* used entries, >= 1 once parsed */
	uint64_t excl[FWD_BITMAP_WORDS];	/* ~N exclusions seen so far */
	bool given;				/* the option appeared at all */
};

/* fwd_spec_parse() - parse one option value ("none", "all", "auto",
 * "22,80-90:8080-8090,~85", "198.51.100.1/22", "%lo/22",
 * "0.0.0.0/8080:10.88.0.2/80", "[::]/8080:fd00::2/80", ...) into *f,
 * merging with earlier values of the same option. On error, writes a
 * message naming the bad part into err (errlen bytes) and returns false. */
bool fwd_spec_parse(struct fwd_spec *f, const char *arg, bool allow_auto,
		    char *err, size_t errlen);

/* fwd_spec_merge() - add src's ports to dst (the control socket's add):
 * a port dst forwards the same way already is left alone (adding twice
 * is harmless), one bound to an address of the other family only gets
 * both (podman's 0.0.0.0/P and [::]/P), one forwarded otherwise fails
 * the whole merge. The ports new or changed are set in added
 * (FWD_BITMAP_WORDS). On failure dst may be partly changed: callers keep
 * a copy to restore. */
bool fwd_spec_merge(struct fwd_spec *dst, const struct fwd_spec *src,
		    uint64_t *added, char *err, size_t errlen);
/* fwd_spec_remove() - drop src's ports from dst (the control socket's
 * delete), all or none: each must be forwarded, and where src names a
 * target or an address it must be dst's (one family's address of a port
 * bound to both leaves the other). The ports dropped or changed are set
 * in removed. On failure dst may be partly changed, as above. */
bool fwd_spec_remove(struct fwd_spec *dst, const struct fwd_spec *src,
		     uint64_t *removed, char *err, size_t errlen);
/* fwd_spec_items() - f in the option's own language, one item per run of
 * ports sharing a target offset and bind ("all", "auto" first when that
 * is the mode), each handed to cb. Returns the number of items. */
unsigned int fwd_spec_items(const struct fwd_spec *f,
			    void (*cb)(void *arg, const char *item), void *arg);

static inline bool fwd_port_set(const struct fwd_spec *f, uint16_t port)
{
	return f->map[port / 64] >> (port % 64) & 1;
}

/* fwd_port_bind() - where the host side of a forwarded port binds. */
static inline const struct fwd_bind *fwd_port_bind(const struct fwd_spec *f,
						   uint16_t port)
{
	return &f->binds[f->bind[port] < FWD_BIND_MAX ? f->bind[port] : 0];
}

static inline uint16_t fwd_target(const struct fwd_spec *f, uint16_t port)
{
	return (uint16_t)(port + f->delta[port]);
}

/* fwd_target_addr() - the target address a forwarded port's connections
 * of family v6 go to, if its spec names one (PORT:ADDR/TPORT): true, and
 * *a4 or *a6 set; false: the default (the guest's address, the
 * loopback). */
static inline bool fwd_target_addr(const struct fwd_spec *f, uint16_t port,
				   bool v6, struct in_addr *a4,
				   struct in6_addr *a6)
{
	const struct fwd_bind *b = fwd_port_bind(f, port);

	if (v6 ? !b->has_to6 : !b->has_to4)
		return false;
	if (v6)
		*a6 = b->to6;
	else
		*a4 = b->to4;
	return true;
}

union inany;
/* fwd_target_inany() - fwd_target_addr() as a flow address (flow.h). */
bool fwd_target_inany(const struct fwd_spec *f, uint16_t port, bool v6,
		      union inany *a);

/* fwd_bind_addr() - where the listener of a forwarded port binds in
 * family v6: the port's BIND address, else any address (lo: the
 * loopback, for -T/-U), and its interface (NULL: none). False if the
 * BIND address excludes that family. */
bool fwd_bind_addr(const struct fwd_spec *f, uint16_t port, bool v6, bool lo,
		   struct in6_addr *a6, struct in_addr *a4, const char **ifname);

/* Listeners that could not be opened (port taken, address or interface
 * not there yet) are retried, per direction, FWD_RETRY_MS after the
 * failure and then with a doubling period up to FWD_RETRY_MAX_MS, for as
 * long as the port is forwarded. Times are on the caller's ms clock. */
#define FWD_RETRY_MS		1000
#define FWD_RETRY_MAX_MS	8000

struct fwd_retry {
	uint64_t map[FWD_BITMAP_WORDS];	/* ports with a listener to retry */
	bool pending;			/* map is not empty */
	unsigned int shift;		/* period: FWD_RETRY_MS << shift */
	int64_t due_ms;			/* next round */
};

/* fwd_retriable() - is a failure to open a listener (errno err) worth
 * retrying: something that may change (port in use, address or
 * interface missing, out of fds), not a refusal (permission, family). */
bool fwd_retriable(int err);
/* fwd_retry_mark() - add (on) or remove port; a newly added port makes
 * the next round due FWD_RETRY_MS after now. Returns true if the port
 * was waiting before. */
bool fwd_retry_mark(struct fwd_retry *r, uint16_t port, bool on, int64_t now);
/* fwd_retry_round() - a round was made at now: recompute pending, back
 * off. Returns ms until the next round, INT64_MAX when none. */
int64_t fwd_retry_round(struct fwd_retry *r, int64_t now);
/* fwd_retry_left() - ms until the next round is due (0: due now),
 * INT64_MAX when nothing waits. */
int64_t fwd_retry_left(const struct fwd_retry *r, int64_t now);

#endif /* FERRY_FWD_H */
