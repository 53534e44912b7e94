/* fwd.c - the port-forwarding specification parser (-t/-u/-T/-U).
 *
 * Owns the text grammar of one option value and how repeated values merge
 * into a struct fwd_spec (fwd.h). A value is
 *
 *	none | auto | [BIND/]all | [BIND/]ITEM[,ITEM]...
 *	BIND := ADDR | ADDR%IF | %IF	(ADDR: IPv4 or IPv6, optionally [ ])
 *	ITEM := [~]FIRST[-LAST][:[TADDR/]TFIRST[-TLAST]]
 *
 * An ITEM without '~' forwards ports FIRST..LAST to TFIRST.. (same port
 * when no ':'); a target range must have the same size as the source.
 * TADDR, a target address (podman's "0.0.0.0/8080:10.88.0.2/80" and
 * "[::]/8080:fd00::2/80", one per container), sends the connections to
 * it instead of the guest's own address; it needs a BIND (the first '/'
 * is always BIND's) of its own family, and a bare %IF/ takes that
 * family's any-address. Its port's binds[] entry holds it (struct
 * fwd_bind), so the dual-stack pairing below keeps one per family.
 * '~' excludes ports: from the ports listed so far (in this and earlier
 * values) and from any later "all". A value made only of exclusions means
 * "all except", when nothing was forwarded before (with "auto", excl[]
 * lists ports auto-forwarding must skip). Port 0 is never valid.
 *
 * Merging: "none" resets an option that has no ports yet (podman writes
 * "-t none" only when it has no ports, but users may prepend it); "none"
 * after ports is a conflict. "all" and "auto" exclude each other. Listing
 * a port again with a different target or bind is an error; the same
 * mapping twice is harmless. Each BIND prefix gets an entry in binds[]
 * (index 0 is the wildcard), so values with different prefixes coexist.
 *
 * Errors name the offending part of the value; on error *f may be left
 * partly updated (the caller exits).
 *
 * Also here, shared by tcp_fwd.c and udp_fwd.c because it is about specs
 * and not sockets: where a forwarded port's listener binds
 * (fwd_bind_addr()), and the retry set of listeners that could not be
 * opened yet (struct fwd_retry: which failures are worth retrying, and a
 * capped exponential backoff per direction).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "fwd.h"

#define PORT_BITS(f, p)	((f)[(p) / 64])
#define PORT_BIT(p)	(1ULL << ((p) % 64))

struct range {
	unsigned int lo, hi;		/* source ports */
	unsigned int tlo;		/* first target port */
	bool excl;
	bool has_to4, has_to6;		/* a target address (TADDR/) */
	struct in_addr to4;
	struct in6_addr to6;
};

/* fail() - write "what 's'" (len bytes of s) into err; returns false. */
static bool fail(char *err, size_t errlen, const char *what, const char *s,
		 size_t len)
{
	snprintf(err, errlen, "%s '%.*s'", what, (int)len, s);
	return false;
}

/* parse_port() - a decimal port 1..65535 spanning exactly [s, end).
 * Returns 0 when the text is not such a port. */
static unsigned int parse_port(const char *s, const char *end)
{
	unsigned long v = 0;
	const char *p;

	if (s == end || end - s > 5)
		return 0;
	for (p = s; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	return v >= 1 && v <= 65535 ? (unsigned int)v : 0;
}

/* parse_span() - "A" or "A-B" in [s, end) into *lo, *hi. */
static bool parse_span(const char *s, const char *end, unsigned int *lo,
		       unsigned int *hi, char *err, size_t errlen)
{
	const char *dash = memchr(s, '-', (size_t)(end - s));

	*lo = parse_port(s, dash ? dash : end);
	*hi = dash ? parse_port(dash + 1, end) : *lo;
	if (!*lo || !*hi)
		return fail(err, errlen, "bad port or range", s,
			    (size_t)(end - s));
	if (*lo > *hi)
		return fail(err, errlen, "bad port range", s,
			    (size_t)(end - s));
	return true;
}

/* parse_addr() - an IPv4 or IPv6 address, optionally in [ ], spanning
 * exactly [s, end) into *a4 (*v6 false) or *a6 (*v6 true). */
static bool parse_addr(const char *s, const char *end, struct in_addr *a4,
		       struct in6_addr *a6, bool *v6)
{
	char addr[INET6_ADDRSTRLEN + 2];
	size_t alen = (size_t)(end - s);

	if (alen >= 2 && s[0] == '[' && end[-1] == ']') {
		s++;
		alen -= 2;
	}
	if (!alen || alen >= sizeof(addr))
		return false;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	*v6 = false;
	if (inet_pton(AF_INET, addr, a4) == 1)
		return true;
	*v6 = true;
	return inet_pton(AF_INET6, addr, a6) == 1;
}

/* parse_item() - one ITEM in [s, end) into *r. */
static bool parse_item(const char *s, const char *end, struct range *r,
		       char *err, size_t errlen)
{
	const char *item = s, *colon, *tslash;
	unsigned int tlo, thi;
	bool v6;

	memset(r, 0, sizeof(*r));
	r->excl = s < end && *s == '~';
	if (r->excl)
		s++;
	colon = memchr(s, ':', (size_t)(end - s));
	if (colon == s)
		return fail(err, errlen, "no source port before ':' in", item,
			    (size_t)(end - item));
	if (colon && colon + 1 == end)
		return fail(err, errlen, "no target port after ':' in", item,
			    (size_t)(end - item));
	if (!parse_span(s, colon ? colon : end, &r->lo, &r->hi, err, errlen))
		return false;
	r->tlo = r->lo;
	if (!colon)
		return true;
	if (r->excl)
		return fail(err, errlen, "an exclusion cannot have a target",
			    item, (size_t)(end - item));
	tslash = memrchr(colon + 1, '/', (size_t)(end - colon - 1));
	if (tslash) {
		if (!parse_addr(colon + 1, tslash, &r->to4, &r->to6, &v6))
			return fail(err, errlen, "bad target address",
				    colon + 1, (size_t)(tslash - colon - 1));
		r->has_to4 = !v6;
		r->has_to6 = v6;
		if (tslash + 1 == end)
			return fail(err, errlen, "no target port after the "
				    "target address in", item,
				    (size_t)(end - item));
		colon = tslash;		/* the target ports follow */
	}
	if (!parse_span(colon + 1, end, &tlo, &thi, err, errlen))
		return false;
	if (thi != tlo && thi - tlo != r->hi - r->lo)
		return fail(err, errlen, "source and target ranges differ in size",
			    item, (size_t)(end - item));
	if (tlo + (r->hi - r->lo) > 65535)
		return fail(err, errlen, "target range passes port 65535",
			    item, (size_t)(end - item));
	r->tlo = tlo;
	return true;
}

/* parse_bind() - the text before '/' ([s, end)) into *b. */
static bool parse_bind(const char *s, const char *end, struct fwd_bind *b,
		       char *err, size_t errlen)
{
	const char *pct = memchr(s, '%', (size_t)(end - s));
	const char *aend = pct ? pct : end;
	size_t alen = (size_t)(aend - s);
	bool v6;

	memset(b, 0, sizeof(*b));
	if (pct) {
		size_t iflen = (size_t)(end - pct - 1);

		if (!iflen || iflen >= IFNAMSIZ)
			return fail(err, errlen, "bad interface name", pct + 1,
				    iflen);
		memcpy(b->ifname, pct + 1, iflen);
	}
	if (!alen || (alen == 2 && s[0] == '[' && s[1] == ']'))
		return pct ? true : fail(err, errlen, "empty bind address", s, 0);
	if (!parse_addr(s, aend, &b->addr4, &b->addr6, &v6))
		return fail(err, errlen, "bad bind address", s, alen);
	b->has_addr4 = !v6;
	b->has_addr6 = v6;
	return true;
}

/* bind_eq() - same bind prefix? Field by field: struct assignment need
 * not copy padding, so memcmp() of two equal binds may differ. */
static bool bind_eq(const struct fwd_bind *a, const struct fwd_bind *b)
{
	return a->has_addr4 == b->has_addr4 && a->has_addr6 == b->has_addr6 &&
	       a->addr4.s_addr == b->addr4.s_addr &&
	       !memcmp(&a->addr6, &b->addr6, sizeof(a->addr6)) &&
	       !strncmp(a->ifname, b->ifname, IFNAMSIZ) &&
	       a->has_to4 == b->has_to4 && a->has_to6 == b->has_to6 &&
	       a->to4.s_addr == b->to4.s_addr &&
	       !memcmp(&a->to6, &b->to6, sizeof(a->to6));
}

/* bind_names() - does a delete's bind sb name the live forward's db:
 * the same addresses and interface, and db's target addresses where sb
 * gives one? ("0.0.0.0/8080" deletes "0.0.0.0/8080:10.88.0.2/80", as
 * it deletes one half of a dual-stack forward with targets.) */
static bool bind_names(const struct fwd_bind *db, const struct fwd_bind *sb)
{
	struct fwd_bind t = *sb;

	if (!t.has_to4 && db->has_to4) {
		t.has_to4 = true;
		t.to4 = db->to4;
	}
	if (!t.has_to6 && db->has_to6) {
		t.has_to6 = true;
		t.to6 = db->to6;
	}
	return bind_eq(db, &t);
}

/* bind_pair() - a and b bound to one address each, of different
 * families, on the same interface (podman gives "0.0.0.0/8080" and
 * "[::]/8080" for one dual-stack forward, each with its target address
 * if any): their union into *out. */
static bool bind_pair(const struct fwd_bind *a, const struct fwd_bind *b,
		      struct fwd_bind *out)
{
	const struct fwd_bind *six;

	if (a->has_addr4 == a->has_addr6 || b->has_addr4 == b->has_addr6 ||
	    a->has_addr4 == b->has_addr4 || strncmp(a->ifname, b->ifname,
						    IFNAMSIZ))
		return false;
	six = a->has_addr6 ? a : b;
	*out = a->has_addr4 ? *a : *b;
	out->has_addr6 = true;
	out->addr6 = six->addr6;
	out->has_to6 = six->has_to6;
	out->to6 = six->to6;
	return true;
}

/* bind_unused() - a binds[] entry (not the wildcard) no forwarded port
 * uses any more, after run-time deletes (fwd_spec_remove()); -1: none. */
static int bind_unused(const struct fwd_spec *f)
{
	bool used[FWD_BIND_MAX] = { false };
	unsigned int p, i;

	for (p = 1; p < 65536; p++)
		if (PORT_BITS(f->map, p) & PORT_BIT(p))
			used[f->bind[p] < FWD_BIND_MAX ? f->bind[p] : 0] = true;
	for (i = 1; i < FWD_BIND_MAX; i++)
		if (!used[i])
			return (int)i;
	return -1;
}

/* bind_index() - the binds[] entry equal to *b, added if new. */
static int bind_index(struct fwd_spec *f, const struct fwd_bind *b,
		      char *err, size_t errlen)
{
	unsigned int i;

	if (!f->nbinds)
		f->nbinds = 1;		/* binds[0]: wildcard, all zero */
	for (i = 0; i < f->nbinds; i++)
		if (bind_eq(&f->binds[i], b))
			return (int)i;
	if (f->nbinds >= FWD_BIND_MAX) {
		int j = bind_unused(f);

		if (j > 0) {		/* freed by a run-time delete */
			f->binds[j] = *b;
			return j;
		}
		snprintf(err, errlen, "more than %d different bind prefixes",
			 FWD_BIND_MAX - 1);
		return -1;
	}
	f->binds[f->nbinds] = *b;
	if (!f->has_addr4 && !f->has_addr6 && !f->ifname[0]) {
		f->has_addr4 = b->has_addr4;
		f->has_addr6 = b->has_addr6;
		f->addr4 = b->addr4;
		f->addr6 = b->addr6;
		memcpy(f->ifname, b->ifname, IFNAMSIZ);
	}
	return (int)f->nbinds++;
}

/* add_range() - forward r->lo..r->hi to r->tlo.. bound at bind. */
static bool add_range(struct fwd_spec *f, const struct range *r, uint8_t bind,
		      char *err, size_t errlen)
{
	unsigned int p;

	for (p = r->lo; p <= r->hi; p++) {
		uint16_t delta = (uint16_t)(r->tlo - r->lo);
		uint8_t b = bind;

		if ((PORT_BITS(f->map, p) & PORT_BIT(p)) && f->mode == FWD_SPEC &&
		    (f->delta[p] != delta || f->bind[p] != bind)) {
			struct fwd_bind both;
			int i;

			if (f->delta[p] != delta ||
			    !bind_pair(fwd_port_bind(f, (uint16_t)p),
				       &f->binds[bind], &both)) {
				snprintf(err, errlen, "port %u given twice with "
					 "different targets or addresses", p);
				return false;
			}
			if ((i = bind_index(f, &both, err, errlen)) < 0)
				return false;
			b = (uint8_t)i;
		}
		PORT_BITS(f->map, p) |= PORT_BIT(p);
		f->delta[p] = delta;
		f->bind[p] = b;
	}
	return true;
}

/* set_all() - forward every port except exclusions, bound at bind;
 * ports with an explicit mapping keep it. */
static void set_all(struct fwd_spec *f, uint8_t bind)
{
	unsigned int p;

	for (p = 1; p <= 65535; p++) {
		if (PORT_BITS(f->map, p) & PORT_BIT(p))
			continue;
		PORT_BITS(f->map, p) |= PORT_BIT(p);
		f->delta[p] = 0;
		f->bind[p] = bind;
	}
}

/* apply_excl() - drop excluded ports from the map. */
static void apply_excl(struct fwd_spec *f)
{
	unsigned int w;

	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		f->map[w] &= ~f->excl[w];
}

/* has_ports() - does spec f forward any port? */
static bool has_ports(const struct fwd_spec *f)
{
	unsigned int w;

	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		if (f->map[w])
			return true;
	return false;
}

/* set_mode() - merge a keyword's mode with what earlier values set. */
static bool set_mode(struct fwd_spec *f, enum fwd_mode m, const char *kw,
		     char *err, size_t errlen)
{
	bool conflict;

	if (m == FWD_NONE)
		conflict = f->mode != FWD_NONE || has_ports(f);
	else
		conflict = (f->mode == FWD_ALL && m == FWD_AUTO) ||
			   (f->mode == FWD_AUTO && m == FWD_ALL);
	if (conflict) {
		snprintf(err, errlen, "'%s' conflicts with ports given earlier",
			 kw);
		return false;
	}
	if (m != FWD_NONE || f->mode == FWD_NONE)
		f->mode = m;
	return true;
}

/* target_bind() - the binds[] entry for item r's target address on the
 * value's bind prefix (given: the value had one) into *bind: its family
 * must be the prefix address's, and a bare %IF/ gets that family's
 * any-address (the target's family is the one listened on). */
static bool target_bind(struct fwd_spec *f, const struct range *r,
			bool given, uint8_t *bind, const char *item,
			size_t ilen, char *err, size_t errlen)
{
	struct fwd_bind b = f->binds[*bind];
	int i;

	if (!given)
		return fail(err, errlen, "a target address needs a bind address"
			    " before the ports (0.0.0.0/ or [::]/ for any) in",
			    item, ilen);
	if ((r->has_to4 && b.has_addr6) || (r->has_to6 && b.has_addr4))
		return fail(err, errlen, "the target address is of another "
			    "family than the bind address in", item, ilen);
	b.has_addr4 = r->has_to4;
	b.has_addr6 = r->has_to6;
	b.has_to4 = r->has_to4;
	b.has_to6 = r->has_to6;
	b.to4 = r->to4;
	b.to6 = r->to6;
	if ((i = bind_index(f, &b, err, errlen)) < 0)
		return false;
	*bind = (uint8_t)i;
	return true;
}

/* parse_list() - comma-separated ITEMs in [s, end), bound at bind (given:
 * the value had a bind prefix). */
static bool parse_list(struct fwd_spec *f, const char *s, const char *end,
		       uint8_t bind, bool given, char *err, size_t errlen)
{
	bool any_fwd = false, had_ports = has_ports(f) || f->mode == FWD_ALL;
	struct range r;
	unsigned int p;

	while (s <= end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *iend = comma ? comma : end;
		uint8_t b = bind;

		if (!parse_item(s, iend, &r, err, errlen))
			return false;
		if ((r.has_to4 || r.has_to6) &&
		    !target_bind(f, &r, given, &b, s, (size_t)(iend - s), err,
				 errlen))
			return false;
		if (r.excl) {
			for (p = r.lo; p <= r.hi; p++)
				PORT_BITS(f->excl, p) |= PORT_BIT(p);
		} else {
			if (f->mode == FWD_NONE)
				f->mode = FWD_SPEC;
			if (!add_range(f, &r, b, err, errlen))
				return false;
			any_fwd = true;
		}
		s = iend + 1;
	}
	/* "~22" alone: all except 22 (after "auto": auto except 22) */
	if (!any_fwd && !had_ports && f->mode != FWD_AUTO) {
		f->mode = FWD_ALL;
		set_all(f, bind);
	}
	return true;
}

/* docker_form() - is arg docker's ADDR:PORT:PORT (an address before the
 * ports, joined by ':')? Writes the pasta form, ADDR/PORT:PORT, as a hint:
 * the habit podman and docker users bring. */
static bool docker_form(const char *arg, char *err, size_t errlen)
{
	const char *whole = arg, *last = strrchr(arg, ':'), *first;
	char addr[INET6_ADDRSTRLEN + 2];
	size_t alen;

	if (strchr(arg, '/') || !last || last == arg)
		return false;
	first = memrchr(arg, ':', (size_t)(last - arg));
	if (!first)
		return false;
	alen = (size_t)(first - arg);
	if (alen >= 2 && arg[0] == '[' && arg[alen - 1] == ']') {
		arg++;
		alen -= 2;
	}
	if (!alen || alen >= sizeof(addr))
		return false;
	memcpy(addr, arg, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, &(struct in_addr){ 0 }) != 1 &&
	    inet_pton(AF_INET6, addr, &(struct in6_addr){ 0 }) != 1)
		return false;
	snprintf(err, errlen, "'%s' puts the address first with ':' (docker's"
		 " form); write it before a slash: %s/%s", whole,
		 addr, first + 1);
	return true;
}

/* target_hint() - the text before a value's first '/' ([arg, slash)),
 * no bind address, is PORTS:ADDR: a target address without a bind
 * prefix ("8080:10.0.0.2/80"). Then err says that instead. */
static void target_hint(const char *arg, const char *slash, char *err,
			size_t errlen)
{
	const char *colon = memchr(arg, ':', (size_t)(slash - arg)), *p;
	struct in6_addr a6;
	struct in_addr a4;
	bool v6;

	if (!colon || colon == arg)
		return;
	for (p = arg; p < colon; p++)
		if ((*p < '0' || *p > '9') && *p != '-')
			return;
	if (parse_addr(colon + 1, slash, &a4, &a6, &v6))
		fail(err, errlen, "a target address needs a bind address "
		     "before the ports (0.0.0.0/ or [::]/ for any) in", arg,
		     strlen(arg));
}

bool fwd_spec_parse(struct fwd_spec *f, const char *arg, bool allow_auto,
		    char *err, size_t errlen)
{
	const char *slash = strchr(arg, '/'), *ports = slash ? slash + 1 : arg;
	struct fwd_bind b;
	int bind = 0;

	f->given = true;
	if (!f->nbinds)
		f->nbinds = 1;
	if (!strcmp(arg, "none"))
		return set_mode(f, FWD_NONE, arg, err, errlen);
	if (!strcmp(arg, "auto")) {
		if (!allow_auto) {
			snprintf(err, errlen, "'auto' is for namespace mode only"
				 " (ferry ns, pasta): name the ports");
			return false;
		}
		return set_mode(f, FWD_AUTO, arg, err, errlen);
	}
	if (slash) {
		if (!parse_bind(arg, slash, &b, err, errlen)) {
			target_hint(arg, slash, err, errlen);
			return false;
		}
		if ((bind = bind_index(f, &b, err, errlen)) < 0)
			return false;
	}
	if (!*ports)
		return fail(err, errlen, "no ports in", arg, strlen(arg));
	if (docker_form(arg, err, errlen))
		return false;
	if (!strcmp(ports, "all")) {
		if (!set_mode(f, FWD_ALL, ports, err, errlen))
			return false;
		set_all(f, (uint8_t)bind);
	} else if (!parse_list(f, ports, ports + strlen(ports), (uint8_t)bind,
			       slash != NULL, err, errlen)) {
		return false;
	}
	apply_excl(f);
	return true;
}

bool fwd_bind_addr(const struct fwd_spec *f, uint16_t port, bool v6, bool lo,
		   struct in6_addr *a6, struct in_addr *a4, const char **ifname)
{
	const struct fwd_bind *b = fwd_port_bind(f, port);
	bool any = !b->has_addr4 && !b->has_addr6;

	*ifname = b->ifname[0] ? b->ifname : NULL;
	if (!any && (v6 ? !b->has_addr6 : !b->has_addr4))
		return false;
	if (v6)
		*a6 = !any ? b->addr6 : lo ? in6addr_loopback : in6addr_any;
	else
		a4->s_addr = !any ? b->addr4.s_addr
				  : htonl(lo ? INADDR_LOOPBACK : INADDR_ANY);
	return true;
}

bool fwd_target_inany(const struct fwd_spec *f, uint16_t port, bool v6,
		      union inany *a)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (!fwd_target_addr(f, port, v6, &a4, &a6))
		return false;
	inany_pick(a, v6, &a6, a4);
	return true;
}

bool fwd_retriable(int err)
{
	switch (err) {
	case EADDRINUSE: case EADDRNOTAVAIL: case ENODEV:
	case EMFILE: case ENFILE: case ENOBUFS: case ENOMEM:
		return true;
	default:
		return false;
	}
}

bool fwd_retry_mark(struct fwd_retry *r, uint16_t port, bool on, int64_t now)
{
	uint64_t bit = PORT_BIT(port);
	bool was = PORT_BITS(r->map, port) & bit;

	if (on && !was) {
		PORT_BITS(r->map, port) |= bit;
		r->shift = 0;
		r->due_ms = now + FWD_RETRY_MS;
		r->pending = true;
	} else if (!on) {
		PORT_BITS(r->map, port) &= ~bit;
	}
	return was;
}

int64_t fwd_retry_round(struct fwd_retry *r, int64_t now)
{
	unsigned int w;

	r->pending = false;
	for (w = 0; w < FWD_BITMAP_WORDS && !r->pending; w++)
		r->pending = r->map[w] != 0;
	if (!r->pending)
		return INT64_MAX;
	if (r->due_ms <= now) {		/* a round happened: back off */
		if ((FWD_RETRY_MS << r->shift) < FWD_RETRY_MAX_MS)
			r->shift++;
		r->due_ms = now + (FWD_RETRY_MS << r->shift);
	}
	return r->due_ms - now;
}

int64_t fwd_retry_left(const struct fwd_retry *r, int64_t now)
{
	if (!r->pending)
		return INT64_MAX;
	return r->due_ms > now ? r->due_ms - now : 0;
}

/* --- Run-time changes (the control socket, ctl.c) -------------------- */

/* port_in() - is port set in map? */
static bool port_in(const uint64_t *map, unsigned int p)
{
	return PORT_BITS(map, p) & PORT_BIT(p);
}

bool fwd_spec_merge(struct fwd_spec *dst, const struct fwd_spec *src,
		    uint64_t *added, char *err, size_t errlen)
{
	unsigned int p;
	int bi;

	memset(added, 0, FWD_BITMAP_WORDS * sizeof(*added));
	for (p = 1; p < 65536; p++) {
		const struct fwd_bind *sb = fwd_port_bind(src, (uint16_t)p);

		if (!port_in(src->map, p))
			continue;
		if (port_in(dst->map, p)) {
			struct fwd_bind both;

			if (dst->delta[p] == src->delta[p] &&
			    bind_eq(fwd_port_bind(dst, (uint16_t)p), sb))
				continue;	/* the same forward: nothing */
			if (dst->delta[p] != src->delta[p] ||
			    !bind_pair(fwd_port_bind(dst, (uint16_t)p), sb,
				       &both)) {
				snprintf(err, errlen, "port %u is forwarded "
					 "already, to another target or from "
					 "another address", p);
				return false;
			}
			if ((bi = bind_index(dst, &both, err, errlen)) < 0)
				return false;
		} else if ((bi = bind_index(dst, sb, err, errlen)) < 0) {
			return false;
		}
		PORT_BITS(dst->map, p) |= PORT_BIT(p);
		PORT_BITS(added, p) |= PORT_BIT(p);
		dst->delta[p] = src->delta[p];
		dst->bind[p] = (uint8_t)bi;
	}
	if (dst->mode == FWD_NONE)
		dst->mode = FWD_SPEC;
	dst->given = true;
	return true;
}

/* bind_less() - dst's bind to both families less src's one address
 * and its target address, which must be dst's (half of a dual-stack
 * forward deleted) into *out. */
static bool bind_less(const struct fwd_bind *dst, const struct fwd_bind *src,
		      struct fwd_bind *out)
{
	bool four = src->has_addr4;

	if (!dst->has_addr4 || !dst->has_addr6 ||
	    src->has_addr4 == src->has_addr6 ||
	    strncmp(dst->ifname, src->ifname, IFNAMSIZ) ||
	    (four ? src->addr4.s_addr != dst->addr4.s_addr
		  : memcmp(&src->addr6, &dst->addr6, sizeof(dst->addr6))) ||
	    (four ? src->has_to4 && src->to4.s_addr != dst->to4.s_addr
		  : src->has_to6 && memcmp(&src->to6, &dst->to6,
					   sizeof(dst->to6))))
		return false;
	*out = *dst;
	if (four) {
		out->has_addr4 = out->has_to4 = false;
		out->to4.s_addr = 0;
	} else {
		out->has_addr6 = out->has_to6 = false;
		memset(&out->to6, 0, sizeof(out->to6));
	}
	return true;
}

bool fwd_spec_remove(struct fwd_spec *dst, const struct fwd_spec *src,
		     uint64_t *removed, char *err, size_t errlen)
{
	struct fwd_bind less;
	unsigned int p;
	int bi;

	memset(removed, 0, FWD_BITMAP_WORDS * sizeof(*removed));
	for (p = 1; p < 65536; p++) {
		const struct fwd_bind *sb = fwd_port_bind(src, (uint16_t)p);
		const struct fwd_bind *db = fwd_port_bind(dst, (uint16_t)p);

		if (!port_in(src->map, p))
			continue;
		if (!port_in(dst->map, p)) {
			snprintf(err, errlen, "port %u is not forwarded", p);
			return false;
		}
		if ((src->delta[p] && src->delta[p] != dst->delta[p]) ||
		    (src->bind[p] && !bind_names(db, sb) &&
		     !bind_less(db, sb, &less))) {
			snprintf(err, errlen, "port %u is forwarded to another "
				 "target or from another address", p);
			return false;
		}
		PORT_BITS(removed, p) |= PORT_BIT(p);
	}
	for (p = 1; p < 65536; p++) {
		const struct fwd_bind *sb = fwd_port_bind(src, (uint16_t)p);
		const struct fwd_bind *db = fwd_port_bind(dst, (uint16_t)p);

		if (!port_in(removed, p))
			continue;
		if (src->bind[p] && !bind_names(db, sb) &&
		    bind_less(db, sb, &less)) {
			if ((bi = bind_index(dst, &less, err, errlen)) < 0)
				return false;	/* the caller restores dst */
			dst->bind[p] = (uint8_t)bi;
			continue;
		}
		PORT_BITS(dst->map, p) &= ~PORT_BIT(p);
		dst->delta[p] = 0;
		dst->bind[p] = 0;
	}
	return true;
}

/* bind_str() - "ADDR%IF/" (or the parts there are) of b into buf, the
 * address of family v6 (a bind to both families is written twice). */
static void bind_str(const struct fwd_bind *b, bool v6, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "";

	if (b->has_addr4 && !v6)
		inet_ntop(AF_INET, &b->addr4, a, sizeof(a));
	else if (b->has_addr6 && v6)
		inet_ntop(AF_INET6, &b->addr6, a, sizeof(a));
	if (!a[0] && !b->ifname[0]) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len, "%s%s%.*s/", a, b->ifname[0] ? "%" : "",
		 IFNAMSIZ, b->ifname);
}

/* run_end() - the last port of the run of forwarded ports from lo that
 * share lo's target offset and bind. */
static unsigned int run_end(const struct fwd_spec *f, unsigned int lo)
{
	unsigned int hi = lo;

	while (hi < 65535 && port_in(f->map, hi + 1) &&
	       f->delta[hi + 1] == f->delta[lo] && f->bind[hi + 1] == f->bind[lo])
		hi++;
	return hi;
}

/* to_str() - "ADDR/" of b's target address of family v6 into buf, ""
 * when it has none (IPv6 unbracketed, as podman writes it). */
static void to_str(const struct fwd_bind *b, bool v6, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "";

	if (v6 ? b->has_to6 : b->has_to4)
		inet_ntop(v6 ? AF_INET6 : AF_INET, v6 ? (const void *)&b->to6
						      : (const void *)&b->to4,
			  a, sizeof(a));
	snprintf(buf, len, "%s%s", a, a[0] ? "/" : "");
}

unsigned int fwd_spec_items(const struct fwd_spec *f,
			    void (*cb)(void *arg, const char *item), void *arg)
{
	char item[2 * INET6_ADDRSTRLEN + IFNAMSIZ + 40],
	     b[INET6_ADDRSTRLEN + IFNAMSIZ + 4], to[INET6_ADDRSTRLEN + 2];
	unsigned int p, hi, n = 0;
	int k;

	if (f->mode == FWD_ALL || f->mode == FWD_AUTO) {
		cb(arg, f->mode == FWD_ALL ? "all" : "auto");
		n++;
		if (f->mode == FWD_ALL)
			return n;
	}
	for (p = 1; p < 65536; p = hi + 1) {
		const struct fwd_bind *fb = fwd_port_bind(f, (uint16_t)p);
		unsigned int t, v6;

		hi = p;
		if (!port_in(f->map, p))
			continue;
		hi = run_end(f, p);
		t = (uint16_t)(p + f->delta[p]);
		for (v6 = 0; v6 < 2; v6++) {
			if (v6 && !(fb->has_addr4 && fb->has_addr6))
				break;
			bind_str(fb, v6 || !fb->has_addr4, b, sizeof(b));
			to_str(fb, v6 || !fb->has_addr4, to, sizeof(to));
			k = snprintf(item, sizeof(item), "%s%u", b, p);
			if (hi > p)
				k += snprintf(item + k, sizeof(item) - (size_t)k,
					      "-%u", hi);
			if (hi > p && (f->delta[p] || to[0]))
				snprintf(item + k, sizeof(item) - (size_t)k,
					 ":%s%u-%u", to, t, t + (hi - p));
			else if (f->delta[p] || to[0])
				snprintf(item + k, sizeof(item) - (size_t)k,
					 ":%s%u", to, t);
			cb(arg, item);
			n++;
		}
	}
	return n;
}
