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

struct fwd_spec {
	enum fwd_mode mode;
	uint64_t map[FWD_BITMAP_WORDS];	/* bit set: port forwarded */
	uint16_t delta[65536];		/* target = port + delta (mod 2^16) */
	/* Optional bind address / interface (one per spec, as in pasta). */
	bool has_addr4, has_addr6;
	struct in_addr addr4;
	struct in6_addr addr6;
	char ifname[IFNAMSIZ];
};

/* fwd_spec_parse() - parse one option value ("none", "all", "auto",
 * "22,80-90:8080-8090,~85", "198.51.100.1/22", "%lo/22", ...) into *f,
 * merging with earlier values of the same option. On error, writes a
 * message naming the bad part into err (errlen bytes) and returns false. */
bool fwd_spec_parse(struct fwd_spec *f, const char *arg, bool allow_auto,
		    char *err, size_t errlen);

static inline bool fwd_port_set(const struct fwd_spec *f, uint16_t port)
{
	return f->map[port / 64] >> (port % 64) & 1;
}

static inline uint16_t fwd_target(const struct fwd_spec *f, uint16_t port)
{
	return (uint16_t)(port + f->delta[port]);
}

#endif /* FERRY_FWD_H */
