/* conf.c - the command line: pasta/passt-compatible options into struct conf.
 *
 * Owns option syntax, value checking, defaults and the --help text. The
 * options are one table (opts[] below): name, short letter, value name,
 * the modes that accept it, a handler, the struct conf field(s) it fills
 * and a one-line help. getopt_long()'s arrays and the usage text are both
 * generated from that table, so --help cannot miss an option.
 *
 * Modes: "ferry ns" (pasta: a network namespace) and "ferry vm" (passt: a
 * qemu socket or vhost-user). An option of the other mode is an error that
 * names it. ns mode takes one positional form: a PID, "--netns PATH" (no
 * positional), or a command: "-- CMD ARGS", or like pasta, the first
 * non-option argument: a PID if numeric, else the command. vm mode takes
 * no positionals.
 *
 * Every error is one line naming the option as typed and the bad value,
 * e.g. "--mtu: '70000' is not a valid MTU (68-65520)". conf_parse_args()
 * only reports (for tests); conf_parse() prints, exits 1, and also applies
 * the log options (level, log file) once parsing succeeded.
 *
 * Accepted but without effect in ferry (harmless for callers that pass
 * them): -e/--stderr (passt also ignores it).
 * --runas is parsed here; whether and when ferry changes to that user
 * (or to nobody) is priv.c's.
 * Options of pasta/passt whose effect ferry lacks are refused by name
 * (unsupported[]), never ignored: doc/compat.md lists them all.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "busypoll.h"
#include "conf.h"
#include "log.h"
#include "util.h"

/* seccomp(setup): brk close connect exit_group lseek mmap munmap newfstatat */
/* seccomp(setup): openat read socket write
 *   (the command line, --help, user names) */

#define MTU_MIN		68
#define MTU_MAX		65520
#define MTU_MIN_IPV6	1280
#define LOG_SIZE_MIN	4096
#define PID_MAX		4194304		/* kernel PID_MAX_LIMIT */

enum { M_NS = 1, M_VM = 2, M_ALL = 3 };
enum { F_NONE = 0, F_NO_LOOPBACK = 1 };

struct opt;

/* Parser state for one conf_parse_args() call. */
struct pstate {
	enum mode mode;
	const char *name;		/* option as typed: "-m" or "--mtu" */
	char *err;
	size_t errlen;
	bool saw4, saw6;		/* -4, -6 */
	bool saw_netns;
};

typedef bool (*opt_fn)(struct conf *c, struct pstate *ps,
		       const struct opt *o, const char *arg);

struct opt {
	const char *name;		/* long name without "--" */
	char letter;			/* short option, 0: none */
	const char *argname;		/* value name; NULL: no value */
	unsigned char modes;		/* M_NS | M_VM */
	opt_fn fn;
	size_t off, off6;		/* struct conf fields for fn */
	unsigned char flags;		/* F_* for address options */
	const char *help;
};

/* bad() - format the one-line error for the current option. */
__attribute__((format(printf, 2, 3)))
static bool bad(struct pstate *ps, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s: %s", ps->name, msg);
	return false;
}

#define FIELD(c, off, type)	((type *)((char *)(c) + (off)))

/* --- Generic handlers: the table's off/off6 name the field ------------- */

/* h_flag() - set the bool at o->off. */
static bool h_flag(struct conf *c, struct pstate *ps, const struct opt *o,
		   const char *arg)
{
	(void)ps;
	(void)arg;
	*FIELD(c, o->off, bool) = true;
	return true;
}

/* h_flag46() - set the bool of both families (off and off6). */
static bool h_flag46(struct conf *c, struct pstate *ps, const struct opt *o,
		     const char *arg)
{
	(void)ps;
	(void)arg;
	*FIELD(c, o->off, bool) = *FIELD(c, o->off6, bool) = true;
	return true;
}

/* h_unflag() - clear the bool at o->off. */
static bool h_unflag(struct conf *c, struct pstate *ps, const struct opt *o,
		     const char *arg)
{
	(void)ps;
	(void)arg;
	*FIELD(c, o->off, bool) = false;
	return true;
}

/* h_ignore() - accepted for compatibility, no effect (see top). */
static bool h_ignore(struct conf *c, struct pstate *ps, const struct opt *o,
		     const char *arg)
{
	(void)c;
	(void)o;
	if (arg && strlen(arg) >= PATH_MAX)
		return bad(ps, "value too long (max %d bytes)", PATH_MAX - 1);
	return true;
}

/* h_print() - something to print instead of running (o->off: which). */
static bool h_print(struct conf *c, struct pstate *ps, const struct opt *o,
		    const char *arg)
{
	(void)ps;
	(void)arg;
	c->print = (enum conf_print)o->off;
	return true;
}

/* copy_str() - a non-empty string that fits size bytes, into dst. */
static bool copy_str(struct pstate *ps, char *dst, size_t size,
		     const char *arg, const char *what)
{
	if (!*arg)
		return bad(ps, "empty %s", what);
	if (!str_copy(dst, arg, size))
		return bad(ps, "'%.40s...' is too long for a %s (max %zu bytes)",
			   arg, what, size - 1);
	return true;
}

/* h_path() - a path (< PATH_MAX) into the string at o->off. */
static bool h_path(struct conf *c, struct pstate *ps, const struct opt *o,
		   const char *arg)
{
	return copy_str(ps, FIELD(c, o->off, char), PATH_MAX, arg, "path");
}

/* h_ifname() - an interface name (< IFNAMSIZ, no '/' or space) into
 * the string at o->off. */
static bool h_ifname(struct conf *c, struct pstate *ps, const struct opt *o,
		     const char *arg)
{
	/* What the kernel refuses too (dev_valid_name()) */
	if (strpbrk(arg, "/: \t\n") || !strcmp(arg, ".") ||
	    !strcmp(arg, ".."))
		return bad(ps, "'%s' is not a valid interface name", arg);
	return copy_str(ps, FIELD(c, o->off, char), IFNAMSIZ, arg,
			"interface name");
}

/* --- Numbers ------------------------------------------------------------ */

/* parse_ulong() - a whole decimal number, no sign, within max. */
static bool parse_ulong(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return !errno && !*end && *v <= max;
}

/* h_mtu() - -m: MTU_MIN..MTU_MAX, or 0 as in passt: advertise no MTU
 * (no DHCP option 26, no RA option, the tap keeps the kernel's MTU). */
static bool h_mtu(struct conf *c, struct pstate *ps, const struct opt *o,
		  const char *arg)
{
	unsigned long v;

	(void)o;
	if (!parse_ulong(arg, MTU_MAX, &v) || (v && v < MTU_MIN))
		return bad(ps, "'%s' is not a valid MTU (%d-%d, or 0: none "
			   "advertised)", arg, MTU_MIN, MTU_MAX);
	c->mtu = (unsigned int)v;
	c->mtu_set = true;
	return true;
}

/* h_log_size() - bytes, with an optional k/K, m/M or g/G (binary) suffix. */
static bool h_log_size(struct conf *c, struct pstate *ps, const struct opt *o,
		       const char *arg)
{
	static const char units[] = "kmg";
	unsigned long long v;
	const char *u;
	char *end;
	int shift;

	(void)o;
	if (!isdigit((unsigned char)*arg))
		return bad(ps, "'%s' is not a valid size", arg);
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno)
		return bad(ps, "'%s' is not a valid size", arg);
	if (*end) {
		u = strchr(units, tolower((unsigned char)*end));
		if (!u || !*u || end[1])
			return bad(ps, "'%s' is not a valid size (suffix k, M "
				   "or G)", arg);
		shift = 10 * (int)(u - units + 1);
		if (v > (SIZE_MAX >> shift))
			return bad(ps, "'%s' is too large", arg);
		v <<= shift;
	}
	if (v < LOG_SIZE_MIN || v > SIZE_MAX)
		return bad(ps, "'%s' is not a valid size (at least %d bytes)",
			   arg, LOG_SIZE_MIN);
	c->log_size = (size_t)v;
	return true;
}

/* h_busy_poll() - --busy-poll: microseconds, 0..BP_MAX_US. */
static bool h_busy_poll(struct conf *c, struct pstate *ps,
			const struct opt *o, const char *arg)
{
	unsigned long v;

	(void)o;
	if (!parse_ulong(arg, BP_MAX_US, &v))
		return bad(ps, "'%s' is not a valid time (0-%d microseconds)",
			   arg, BP_MAX_US);
	c->busy_poll_us = (unsigned int)v;
	return true;
}

/* h_sandbox() - --sandbox: off, on or strict. */
static bool h_sandbox(struct conf *c, struct pstate *ps, const struct opt *o,
		      const char *arg)
{
	static const char *const names[] = {
		[SANDBOX_ON] = "on", [SANDBOX_OFF] = "off",
		[SANDBOX_STRICT] = "strict",
	};
	size_t i;

	(void)o;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcmp(arg, names[i])) {
			c->sandbox = (enum sandbox_mode)i;
			return true;
		}
	}
	return bad(ps, "'%s' is not a sandbox mode (off, on, strict)", arg);
}

/* h_secs() - a time in whole seconds, 0..CONF_LINGER_MAX, into the
 * unsigned int at o->off (--linger, --stats, --tcp-keepalive). */
static bool h_secs(struct conf *c, struct pstate *ps, const struct opt *o,
		   const char *arg)
{
	unsigned long v;

	if (!parse_ulong(arg, CONF_LINGER_MAX, &v))
		return bad(ps, "'%s' is not a valid time (0-%d seconds)",
			   arg, CONF_LINGER_MAX);
	*FIELD(c, o->off, unsigned int) = (unsigned int)v;
	return true;
}

/* h_fd() - -F, --ready-fd, --exit-fd: a file descriptor number. */
static bool h_fd(struct conf *c, struct pstate *ps, const struct opt *o,
		 const char *arg)
{
	unsigned long v;

	if (!parse_ulong(arg, INT_MAX, &v))
		return bad(ps, "'%s' is not a valid file descriptor", arg);
	*FIELD(c, o->off, int) = (int)v;
	return true;
}

/* h_socket() - -s: the UNIX socket path. */
static bool h_socket(struct conf *c, struct pstate *ps, const struct opt *o,
		     const char *arg)
{
	(void)o;
	return copy_str(ps, c->socket_path, sizeof(c->socket_path), arg,
			"UNIX socket path");
}

/* h_control() - -c PATH: the control socket (ctl.c). */
static bool h_control(struct conf *c, struct pstate *ps, const struct opt *o,
		      const char *arg)
{
	(void)o;
	if (!*arg)
		return bad(ps, "empty path");
	return copy_str(ps, c->control_path, sizeof(c->control_path), arg,
			"UNIX socket path");
}

/* h_repair_path() - --repair-path PATH (repair.c); "none": no helper. */
static bool h_repair_path(struct conf *c, struct pstate *ps,
			  const struct opt *o, const char *arg)
{
	(void)o;
	c->repair_path_set = true;
	if (!strcmp(arg, "none")) {
		c->repair_path[0] = '\0';
		return true;
	}
	if (!*arg)
		return bad(ps, "empty path");
	return copy_str(ps, c->repair_path, sizeof(c->repair_path), arg,
			"UNIX socket path");
}

/* h_runas() - UID[:GID] or LOGIN[:GROUP]; a missing group is the
 * user's primary group (or the UID itself for an unknown numeric UID). */
static bool h_runas(struct conf *c, struct pstate *ps, const struct opt *o,
		    const char *arg)
{
	char user[CONF_NAME_MAX];
	const char *colon = strchr(arg, ':');
	const struct passwd *pw;
	const struct group *gr;
	unsigned long v;

	(void)o;
	if (!*arg || (size_t)(colon ? colon - arg : (long)strlen(arg)) >=
		     sizeof(user))
		return bad(ps, "'%s' is not a valid user", arg);
	snprintf(user, sizeof(user), "%.*s",
		 (int)(colon ? colon - arg : (long)strlen(arg)), arg);
	if (parse_ulong(user, UINT_MAX - 1, &v)) {
		c->run_uid = (uid_t)v;
		pw = getpwuid(c->run_uid);
		c->run_gid = pw ? pw->pw_gid : (gid_t)v;
	} else if ((pw = getpwnam(user))) {
		c->run_uid = pw->pw_uid;
		c->run_gid = pw->pw_gid;
	} else {
		return bad(ps, "no such user '%s'", user);
	}
	if (colon && parse_ulong(colon + 1, UINT_MAX - 1, &v))
		c->run_gid = (gid_t)v;
	else if (colon && (gr = getgrnam(colon + 1)))
		c->run_gid = gr->gr_gid;
	else if (colon)
		return bad(ps, "no such group '%s'", colon + 1);
	c->runas_set = true;
	return true;
}

/* --- Addresses ---------------------------------------------------------- */

/* parse_addr() - IPv4 or IPv6 text; returns AF_INET, AF_INET6 or 0. */
static int parse_addr(const char *s, struct in_addr *a4, struct in6_addr *a6)
{
	if (inet_pton(AF_INET, s, a4) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, a6) == 1)
		return AF_INET6;
	return 0;
}

/* addr_ok() - a usable unicast address for an option: not unspecified,
 * not multicast or broadcast, and not loopback with F_NO_LOOPBACK. */
static bool addr_ok(int af, const struct in_addr *a4,
		    const struct in6_addr *a6, unsigned char flags)
{
	uint32_t h = ntohl(a4->s_addr);

	if (af == AF_INET)
		return h && !IN_MULTICAST(h) && h != 0xffffffff &&
		       !((flags & F_NO_LOOPBACK) && (h >> 24) == 127);
	return !IN6_IS_ADDR_UNSPECIFIED(a6) && !IN6_IS_ADDR_MULTICAST(a6) &&
	       !((flags & F_NO_LOOPBACK) && IN6_IS_ADDR_LOOPBACK(a6));
}

/* get_addr() - parse and check one address for the current option. */
static int get_addr(struct pstate *ps, const char *arg, unsigned char flags,
		    struct in_addr *a4, struct in6_addr *a6)
{
	int af = parse_addr(arg, a4, a6);

	if (!af) {
		bad(ps, "'%s' is not an IPv4 or IPv6 address", arg);
		return 0;
	}
	if (!addr_ok(af, a4, a6, flags)) {
		bad(ps, "'%s' is not a usable unicast address here", arg);
		return 0;
	}
	return af;
}

/* h_addr() - one address into the IPv4 (off) or IPv6 (off6) field. */
static bool h_addr(struct conf *c, struct pstate *ps, const struct opt *o,
		   const char *arg)
{
	struct in6_addr a6;
	struct in_addr a4;
	int af = get_addr(ps, arg, o->flags, &a4, &a6);

	if (af == AF_INET)
		*FIELD(c, o->off, struct in_addr) = a4;
	else if (af == AF_INET6)
		*FIELD(c, o->off6, struct in6_addr) = a6;
	return af != 0;
}

/* h_map() - like h_addr(), or "none" setting the flag at o->flags'
 * companion: --map-host-loopback and --map-guest-addr. */
static bool h_map(struct conf *c, struct pstate *ps, const struct opt *o,
		  const char *arg)
{
	bool *none = o->off == offsetof(struct conf, ip4.map_host_lo) ?
		     &c->no_map_host_lo : &c->no_map_guest;

	if (strcmp(arg, "none")) {
		*none = false;
		return h_addr(c, ps, o, arg);
	}
	*none = true;
	memset(FIELD(c, o->off, struct in_addr), 0, sizeof(struct in_addr));
	memset(FIELD(c, o->off6, struct in6_addr), 0, sizeof(struct in6_addr));
	return true;
}

/* parse_prefix() - prefix length 1..max. */
static bool parse_prefix(const char *s, int max, int *len)
{
	unsigned long v;

	if (!parse_ulong(s, (unsigned long)max, &v) || !v)
		return false;
	*len = (int)v;
	return true;
}

/* h_address() - -a ADDR or ADDR/PREFIX, either family. */
static bool h_address(struct conf *c, struct pstate *ps, const struct opt *o,
		      const char *arg)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(arg, '/');
	struct in6_addr a6;
	struct in_addr a4;
	int af, len = 0;

	if (!str_copy(buf, arg, sizeof(buf)))
		return bad(ps, "'%.60s' is not an IPv4 or IPv6 address", arg);
	if (slash)
		buf[slash - arg] = '\0';
	if (!(af = get_addr(ps, buf, o->flags, &a4, &a6)))
		return false;
	if (slash && !parse_prefix(slash + 1, af == AF_INET ? 32 : 128, &len))
		return bad(ps, "'%s' is not a valid prefix length (1-%d)",
			   slash + 1, af == AF_INET ? 32 : 128);
	if (af == AF_INET) {
		c->ip4.addr = a4;
		c->ip4.prefix_len = len ? len : c->ip4.prefix_len;
	} else {
		c->ip6.addr = a6;
		c->ip6.prefix_len = len ? len : c->ip6.prefix_len;
	}
	return true;
}

/* h_netmask() - IPv4 prefix length or dotted mask (contiguous ones). */
static bool h_netmask(struct conf *c, struct pstate *ps, const struct opt *o,
		      const char *arg)
{
	struct in_addr m;
	uint32_t h;
	int len;

	(void)o;
	if (parse_prefix(arg, 32, &len)) {
		c->ip4.prefix_len = len;
		return true;
	}
	if (inet_pton(AF_INET, arg, &m) != 1)
		return bad(ps, "'%s' is not a netmask (prefix length 1-32 or "
			   "dotted mask)", arg);
	h = ntohl(m.s_addr);
	if (!h || (~h & (~h + 1)))	/* ones must be contiguous from MSB */
		return bad(ps, "'%s' is not a contiguous netmask", arg);
	c->ip4.prefix_len = 32 - __builtin_ctz(h);
	return true;
}

/* parse_mac() - exactly "xx:xx:xx:xx:xx:xx" (hex pairs). */
static bool parse_mac(const char *s, uint8_t mac[6])
{
	int i;

	for (i = 0; i < 6; i++, s += 3) {
		if (!isxdigit((unsigned char)s[0]) ||
		    !isxdigit((unsigned char)s[1]) ||
		    s[2] != (i == 5 ? '\0' : ':'))
			return false;
		mac[i] = (uint8_t)strtoul((char[3]){ s[0], s[1], 0 }, NULL, 16);
	}
	return true;
}

/* h_mac() - a unicast MAC into o->off (-M: ours, --ns-mac-addr: guest). */
static bool h_mac(struct conf *c, struct pstate *ps, const struct opt *o,
		  const char *arg)
{
	static const uint8_t zero[6];
	uint8_t mac[6];

	if (!parse_mac(arg, mac))
		return bad(ps, "'%s' is not a MAC address (xx:xx:xx:xx:xx:xx)",
			   arg);
	if ((mac[0] & 1) || !memcmp(mac, zero, 6))
		return bad(ps, "'%s' is not a unicast MAC address", arg);
	memcpy(FIELD(c, o->off, uint8_t), mac, 6);
	if (o->off == offsetof(struct conf, our_mac))
		c->our_mac_set = true;
	else
		c->guest_mac_set = true;
	return true;
}

/* h_interface() - -i: the host interface of both families. */
static bool h_interface(struct conf *c, struct pstate *ps,
			const struct opt *o, const char *arg)
{
	if (!h_ifname(c, ps, o, arg))
		return false;
	memcpy(c->ifname6, c->ifname4, IFNAMSIZ);
	return true;
}

/* h_only() - -4 (disable IPv6) or -6 (disable IPv4); not both. */
static bool h_only(struct conf *c, struct pstate *ps, const struct opt *o,
		   const char *arg)
{
	bool v4only = o->letter == '4';

	(void)arg;
	if (v4only ? ps->saw6 : ps->saw4)
		return bad(ps, "conflicts with %s", v4only ?
			   "-6/--ipv6-only" : "-4/--ipv4-only");
	*(v4only ? &ps->saw4 : &ps->saw6) = true;
	*(v4only ? &c->ip6.enabled : &c->ip4.enabled) = false;
	return true;
}

/* --- DNS and names ------------------------------------------------------ */

/* h_dns() - -D ADDR (repeatable, per family) or "none". */
static bool h_dns(struct conf *c, struct pstate *ps, const struct opt *o,
		  const char *arg)
{
	struct in6_addr a6;
	struct in_addr a4;
	int af;

	if (!strcmp(arg, "none")) {
		c->no_dns = true;
		c->ip4.dns_count = c->ip6.dns_count = 0;
		return true;
	}
	if (!(af = get_addr(ps, arg, o->flags, &a4, &a6)))
		return false;
	if ((af == AF_INET ? c->ip4.dns_count : c->ip6.dns_count) >=
	    CONF_MAX_DNS)
		return bad(ps, "'%s': more than %d %s nameservers", arg,
			   CONF_MAX_DNS, af == AF_INET ? "IPv4" : "IPv6");
	c->no_dns = false;
	if (af == AF_INET)
		c->ip4.dns[c->ip4.dns_count++] = a4;
	else
		c->ip6.dns[c->ip6.dns_count++] = a6;
	return true;
}

/* name_ok() - a DNS name: 1..253 characters, labels of 1..63 letters,
 * digits, '-' or '_', separated by single dots (one trailing dot ok). */
static bool name_ok(const char *s, size_t len)
{
	size_t i, label = 0;

	if (!len || len > 253 + (s[len - 1] == '.'))
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] == '.') {
			if (!label)
				return false;
			label = 0;
		} else if (isalnum((unsigned char)s[i]) || s[i] == '-' ||
			   s[i] == '_') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return true;
}

/* h_search() - -S "dom1 dom2" (space or comma separated; repeatable)
 * or "none". */
static bool h_search(struct conf *c, struct pstate *ps, const struct opt *o,
		     const char *arg)
{
	const char *s = arg;
	size_t n;

	(void)o;
	if (!strcmp(arg, "none")) {
		c->no_search = true;
		c->search_count = 0;
		return true;
	}
	c->no_search = false;
	for (;;) {
		s += strspn(s, " ,");
		if (!*s)
			break;
		n = strcspn(s, " ,");
		if (!name_ok(s, n))
			return bad(ps, "'%.*s' is not a valid domain name",
				   (int)MIN(n, 80u), s);
		if (c->search_count >= CONF_MAX_SEARCH)
			return bad(ps, "more than %d search domains",
				   CONF_MAX_SEARCH);
		snprintf(c->search[c->search_count++], CONF_NAME_MAX, "%.*s",
			 (int)n, s);
		s += n;
	}
	if (!c->search_count)
		return bad(ps, "empty search list '%s'", arg);
	return true;
}

/* h_name() - -H/--fqdn: a DNS name into o->off. */
static bool h_name(struct conf *c, struct pstate *ps, const struct opt *o,
		   const char *arg)
{
	if (!name_ok(arg, strlen(arg)))
		return bad(ps, "'%.80s' is not a valid host name", arg);
	snprintf(FIELD(c, o->off, char), CONF_NAME_MAX, "%s", arg);
	return true;
}

/* --- Forwarding and namespaces ------------------------------------------ */

/* h_fwd() - a port-forwarding spec into o->off (fwd_spec_parse()). */
static bool h_fwd(struct conf *c, struct pstate *ps, const struct opt *o,
		  const char *arg)
{
	char msg[256];

	if (!fwd_spec_parse(FIELD(c, o->off, struct fwd_spec), arg,
			    ps->mode == MODE_NS, msg, sizeof(msg)))
		return bad(ps, "%s", msg);
	return true;
}

/* h_fault() - --fault SPEC (fault.h): only in the test build. */
static bool h_fault(struct conf *c, struct pstate *ps, const struct opt *o,
		    const char *arg)
{
#ifdef FERRY_TEST
	char msg[256];

	if (!fault_parse(FIELD(c, o->off, struct fault_conf), arg, msg,
			 sizeof(msg)))
		return bad(ps, "%s", msg);
	return true;
#else
	(void)c;
	(void)o;
	(void)arg;
	return bad(ps, "fault injection is only in test builds "
		   "(make build/ferry-test)");
#endif
}

/* h_netns() - --netns PATH, or NAME meaning /run/netns/NAME. */
static bool h_netns(struct conf *c, struct pstate *ps, const struct opt *o,
		    const char *arg)
{
	char path[PATH_MAX];

	(void)o;
	if (!*arg)
		return bad(ps, "empty path");
	if (strchr(arg, '/'))
		return (ps->saw_netns = true) &&
		       copy_str(ps, c->netns_path, sizeof(c->netns_path), arg,
				"path");
	if (snprintf(path, sizeof(path), "/run/netns/%s", arg) >=
	    (int)sizeof(path))
		return bad(ps, "'%.40s...' is too long for a namespace name",
			   arg);
	ps->saw_netns = true;
	return copy_str(ps, c->netns_path, sizeof(c->netns_path), path,
			"path");
}

#define OFF(field)	offsetof(struct conf, field)
#define OFF46(field)	OFF(ip4.field), OFF(ip6.field)

/* A long-only option setting a bool. */
#define FLAG(name, modes, field, help) \
	{ name, 0, NULL, modes, h_flag, OFF(field), 0, 0, help }

/* The option table: every option ferry accepts, in --help order. */
static const struct opt opts[] = {
	{ "help", 'h', NULL, M_ALL, h_print, CONF_PRINT_HELP, 0, 0,
	  "show this help and exit" },
	{ "version", 0, NULL, M_ALL, h_print, CONF_PRINT_VERSION, 0, 0,
	  "show the version and exit" },
	{ "debug", 'd', NULL, M_ALL, h_flag, OFF(debug), 0, 0,
	  "log debug messages" },
	FLAG("trace", M_ALL, trace,
	     "log per-packet traces (implies --debug)"),
	{ "quiet", 'q', NULL, M_ALL, h_flag, OFF(quiet), 0, 0,
	  "log errors only" },
	{ "foreground", 'f', NULL, M_ALL, h_flag, OFF(foreground), 0, 0,
	  "do not detach into the background" },
	{ "stderr", 'e', NULL, M_ALL, h_ignore, 0, 0, 0,
	  "accepted for compatibility, no effect" },
	{ "log-file", 'l', "PATH", M_ALL, h_path, OFF(log_file), 0, 0,
	  "log to PATH instead of stderr/syslog" },
	{ "log-size", 0, "SIZE", M_ALL, h_log_size, 0, 0, 0,
	  "log file size bound (k/M/G; default 1M)" },
	{ "runas", 0, "UID[:GID]", M_ALL, h_runas, 0, 0, 0,
	  "run as this user (and group), numeric or names" },
	{ "pcap", 'p', "PATH", M_ALL, h_path, OFF(pcap_file), 0, 0,
	  "capture guest frames into a pcap file" },
	{ "pid", 'P', "PATH", M_ALL, h_path, OFF(pid_file), 0, 0,
	  "write the process ID to PATH" },
	{ "control", 'c', "PATH", M_ALL, h_control, 0, 0, 0,
	  "control socket at PATH (ferry ctl, pesto)" },
	{ "fd", 'F', "FD", M_VM, h_fd, OFF(fd), 0, 0,
	  "inherited connected socket to the guest (qemu's stream peer)" },
	{ "socket", 's', "PATH", M_VM, h_socket, 0, 0, 0,
	  "listen on UNIX socket PATH for qemu" },
	{ "socket-path", 0, "PATH", M_VM, h_socket, 0, 0, 0,
	  "same as --socket (vhost-user convention)" },
	{ "one-off", '1', NULL, M_VM, h_flag, OFF(one_off), 0, 0,
	  "exit when the first guest disconnects" },
	FLAG("vhost-user", M_VM, vhost_user,
	     "speak vhost-user on the socket"),
	{ "print-capabilities", 0, NULL, M_VM, h_print, CONF_PRINT_CAPS, 0, 0,
	  "print vhost-user capabilities (JSON), exit" },
	{ "repair-path", 0, "PATH", M_VM, h_repair_path, 0, 0, 0,
	  "socket for the TCP_REPAIR helper (ferry repair, passt-repair); "
	  "default: the -s path with .repair appended; none: no helper" },
	FLAG("migrate-exit", M_VM, migrate_exit,
	     "the source exits once a live migration completed"),
	FLAG("migrate-no-linger", M_VM, migrate_no_linger,
	     "the source closes migrated sockets at once (default: keep "
	     "them, in repair mode, until qemu leaves)"),
	{ "mtu", 'm', "MTU", M_ALL, h_mtu, 0, 0, 0,
	  "guest MTU, 68-65520 (default 65520); 0: advertise none" },
	{ "address", 'a', "ADDR[/LEN]", M_ALL, h_address, 0, 0, F_NO_LOOPBACK,
	  "guest IPv4 or IPv6 address (default: the host's)" },
	{ "netmask", 'n', "MASK", M_ALL, h_netmask, 0, 0, 0,
	  "IPv4 prefix length or dotted netmask" },
	{ "mac-addr", 'M', "MAC", M_ALL, h_mac, OFF(our_mac), 0, 0,
	  "our MAC address (default 9a:55:9a:55:9a:55)" },
	{ "gateway", 'g', "ADDR", M_ALL, h_addr, OFF46(gw), F_NO_LOOPBACK,
	  "guest's IPv4 or IPv6 default gateway" },
	{ "interface", 'i', "NAME", M_ALL, h_interface, OFF(ifname4), 0, 0,
	  "host template interface for addresses and routes" },
	{ "outbound", 'o', "ADDR", M_ALL, h_addr, OFF46(outbound), 0,
	  "bind host sockets to this IPv4 or IPv6 address" },
	{ "outbound-if4", 0, "NAME", M_ALL, h_ifname, OFF(outbound_if4), 0, 0,
	  "bind host IPv4 sockets to this interface" },
	{ "outbound-if6", 0, "NAME", M_ALL, h_ifname, OFF(outbound_if6), 0, 0,
	  "bind host IPv6 sockets to this interface" },
	{ "ipv4-only", '4', NULL, M_ALL, h_only, 0, 0, 0,
	  "IPv4 only (disable IPv6)" },
	{ "ipv6-only", '6', NULL, M_ALL, h_only, 0, 0, 0,
	  "IPv6 only (disable IPv4)" },
	{ "dns", 'D', "ADDR|none", M_ALL, h_dns, 0, 0, 0,
	  "nameserver to advertise (repeatable); none" },
	{ "dns-forward", 0, "ADDR", M_ALL, h_addr, OFF46(dns_fwd),
	  F_NO_LOOPBACK, "guest address whose DNS traffic goes to --dns-host" },
	{ "dns-host", 0, "ADDR", M_ALL, h_addr, OFF46(dns_host), 0,
	  "host nameserver for --dns-forward (default: first)" },
	{ "search", 'S', "LIST|none", M_ALL, h_search, 0, 0, 0,
	  "space-separated DNS search domains, none: no list" },
	FLAG("no-dhcp-dns", M_ALL, no_dhcp_dns,
	     "no nameservers in DHCP, DHCPv6 or NDP"),
	{ "dhcp-dns", 0, NULL, M_ALL, h_unflag, OFF(no_dhcp_dns), 0, 0,
	  "undo --no-dhcp-dns" },
	FLAG("no-dhcp-search", M_ALL, no_dhcp_search,
	     "no search list in DHCP, DHCPv6 or NDP"),
	{ "dhcp-search", 0, NULL, M_ALL, h_unflag, OFF(no_dhcp_search), 0, 0,
	  "undo --no-dhcp-search" },
	{ "hostname", 'H', "NAME", M_ALL, h_name, OFF(hostname), 0, 0,
	  "host name for the guest (DHCP option 12)" },
	{ "fqdn", 0, "NAME", M_ALL, h_name, OFF(fqdn), 0, 0,
	  "FQDN for the guest (DHCP option 81, DHCPv6)" },
	{ "map-host-loopback", 0, "ADDR|none", M_ALL, h_map,
	  OFF46(map_host_lo), F_NO_LOOPBACK,
	  "guest address reaching the host's loopback" },
	{ "map-guest-addr", 0, "ADDR|none", M_ALL, h_map, OFF46(map_guest),
	  F_NO_LOOPBACK, "guest address reaching the host's own address" },
	FLAG("no-map-gw", M_ALL, no_map_gw,
	     "the gateway address does not map to the host"),
	FLAG("no-tcp", M_ALL, no_tcp,
	     "disable TCP"),
	FLAG("no-udp", M_ALL, no_udp,
	     "disable UDP"),
	FLAG("no-icmp", M_ALL, no_icmp,
	     "disable ICMP/ICMPv6 echo"),
	FLAG("no-multicast", M_ALL, no_multicast,
	     "no multicast or broadcast: the guest's dropped, no groups joined"),
	FLAG("mcast-loop", M_ALL, mcast_loop,
	     "the guest's multicast also reaches the host's own sockets"),
	FLAG("no-dhcp", M_ALL, no_dhcp,
	     "disable the DHCP server"),
	FLAG("no-ndp", M_ALL, no_ndp,
	     "disable NDP (neighbour and router advertisements)"),
	FLAG("no-dhcpv6", M_ALL, no_dhcpv6,
	     "disable the DHCPv6 server"),
	FLAG("no-ra", M_ALL, no_ra,
	     "disable router advertisements"),
	FLAG("freebind", M_ALL, freebind,
	     "allow binding ports to non-local addresses"),
	{ "tcp-ports", 't', "SPEC", M_ALL, h_fwd, OFF(tcp_in), 0, 0,
	  "forward TCP ports host->guest (see PORT SPECS)" },
	{ "udp-ports", 'u', "SPEC", M_ALL, h_fwd, OFF(udp_in), 0, 0,
	  "forward UDP ports host->guest" },
	{ "tcp-ns", 'T', "SPEC", M_NS, h_fwd, OFF(tcp_out), 0, 0,
	  "forward TCP ports namespace->host" },
	{ "udp-ns", 'U', "SPEC", M_NS, h_fwd, OFF(udp_out), 0, 0,
	  "forward UDP ports namespace->host" },
	{ "ns-ifname", 'I', "NAME", M_NS, h_ifname, OFF(ns_ifname), 0, 0,
	  "tap interface name in the namespace" },
	{ "userns", 0, "PATH", M_NS, h_path, OFF(userns_path), 0, 0,
	  "user namespace to join (with PID or --netns)" },
	{ "netns", 0, "PATH|NAME", M_NS, h_netns, 0, 0, 0,
	  "network namespace to join (NAME: /run/netns/NAME)" },
	FLAG("netns-only", M_NS, netns_only,
	     "join only the network namespace, not the user one"),
	FLAG("no-netns-quit", M_NS, no_netns_quit,
	     "keep running when the namespace goes away"),
	FLAG("no-offload", M_NS, no_offload,
	     "tap without offloads (no TSO, no checksum offload)"),
	FLAG("config-net", M_NS, config_net,
	     "configure addresses and routes in the namespace"),
	{ "no-copy-routes", 0, NULL, M_NS, h_flag46, OFF46(no_copy_routes), 0,
	  "with --config-net: only a default route" },
	{ "no-copy-addrs", 0, NULL, M_NS, h_flag46, OFF46(no_copy_addrs), 0,
	  "with --config-net: only one address per family" },
	{ "ns-mac-addr", 0, "MAC", M_NS, h_mac, OFF(guest_mac), 0, 0,
	  "MAC address of the namespace interface" },
	FLAG("host-lo-to-ns-lo", M_NS, host_lo_to_ns_lo,
	     "host loopback connections appear from ns loopback"),
	FLAG("splice-only", M_NS, splice_only,
	     "no tap device: only forward between the loopbacks"),
	{ "busy-poll", 0, "USEC", M_ALL, h_busy_poll, 0, 0, 0,
	  "poll up to USEC before sleeping after traffic (default 50, 0: off)" },
	{ "tcp-keepalive", 0, "SECONDS", M_ALL, h_secs, OFF(tcp_ka_s), 0, 0,
	  "probe the guest after a TCP connection idles (default 300, 0: off)" },
	{ "sandbox", 0, "off|on|strict", M_ALL, h_sandbox, 0, 0, 0,
	  "confinement after set-up (default on; strict: all layers or exit)" },
	{ "ready-fd", 0, "FD", M_ALL, h_fd, OFF(ready_fd), 0, 0,
	  "write \"1\" to FD and close it once set up" },
	{ "exit-fd", 0, "FD", M_ALL, h_fd, OFF(exit_fd), 0, 0,
	  "exit (as on SIGTERM) when FD becomes readable or closed" },
	{ "linger", 0, "SECONDS", M_ALL, h_secs, OFF(linger_s), 0, 0,
	  "on exit, serve open flows up to SECONDS (default 30, 0: quit)" },
	{ "stats", 0, "DELAY", M_ALL, h_secs, OFF(stats_s), 0, 0,
	  "log the statistics every DELAY seconds (as pasta's --stats)" },
	{ "fault", 0, "SPEC", M_ALL, h_fault, OFF(fault), 0, 0,
	  "test builds: drop/dup/reorder=PERMILLE[,to:|from:...][,seed=N]" },
};

#define NOPTS	ARRAY_SIZE(opts)

/* conf_defaults() - everything not given on the command line. */
static void conf_defaults(struct conf *c, enum mode mode)
{
	static const uint8_t mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };

	c->mode = mode;
	c->mtu = MTU_MAX;
	c->fd = c->ready_fd = c->exit_fd = -1;
	c->ip4.enabled = c->ip6.enabled = true;
	c->log_size = 1024 * 1024;
	c->busy_poll_us = BP_DEFAULT_US;
	c->sandbox = SANDBOX_ON;
	c->linger_s = CONF_LINGER_DEFAULT;
	c->tcp_ka_s = TCP_KA_IDLE_S;
	memcpy(c->our_mac, mac, 6);
}

/* getopt_setup() - getopt_long() arrays from opts[]: long options return
 * 256 + their index, short ones their letter. */
static void getopt_setup(struct option *lo, char *shorts)
{
	size_t i, n = 0;

	shorts[n++] = '+';	/* stop at the first non-option (pasta) */
	shorts[n++] = ':';	/* report a missing value as ':' */
	for (i = 0; i < NOPTS; i++) {
		lo[i] = (struct option){ opts[i].name,
			opts[i].argname ? required_argument : no_argument,
			NULL, 256 + (int)i };
		if (opts[i].letter) {
			shorts[n++] = opts[i].letter;
			if (opts[i].argname)
				shorts[n++] = ':';
		}
	}
	lo[NOPTS] = (struct option){ 0 };
	shorts[n] = '\0';
}

/* find_opt() - the table index for a getopt_long() return value. */
static int find_opt(int ret)
{
	size_t i;

	if (ret >= 256)
		return ret - 256;
	for (i = 0; i < NOPTS; i++)
		if (opts[i].letter && opts[i].letter == ret)
			return (int)i;
	return -1;
}

/* Options of pasta or passt (or that their callers pass) which ferry
 * refuses by name, with what is missing: the caller relies on their
 * effect, so running without it would be wrong (doc/compat.md). */
static const struct {
	const char *name, *why;
} unsupported[] = {
	{ "--no-splice", "ferry always joins local connections to forwarded "
	  "ports with splice(), it cannot route them through the tap" },
	{ "--nsrun-dir", "old pasta option: give --netns PATH or NAME (NAME "
	  "is /run/netns/NAME)" },
	{ "--map-gw", "podman's option, not pasta's (podman removes it): the "
	  "gateway maps to the host unless --no-map-gw" },
};

/* getopt_error() - describe what getopt_long() refused: optopt is the
 * short letter, 256 + index for a long option missing its value, or 0
 * for an unknown long option (then argv[optind - 1] is the text). */
static bool getopt_error(struct pstate *ps, int ret, char **argv)
{
	char name[64];
	size_t i;

	if (optopt >= 256 && optopt < 256 + (int)NOPTS)
		snprintf(name, sizeof(name), "--%s", opts[optopt - 256].name);
	else if (optopt > 0)
		snprintf(name, sizeof(name), "-%c", optopt);
	else
		snprintf(name, sizeof(name), "%.*s",
			 (int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
	if (ret == ':') {
		snprintf(ps->err, ps->errlen, "%s: needs a value", name);
		return false;
	}
	for (i = 0; i < ARRAY_SIZE(unsupported); i++) {
		if (!strcmp(name, unsupported[i].name)) {
			snprintf(ps->err, ps->errlen, "%s: not supported by "
				 "ferry: %s", name, unsupported[i].why);
			return false;
		}
	}
	snprintf(ps->err, ps->errlen, "unknown or ambiguous option '%s' "
		 "(see --help)", name);
	return false;
}

/* parse_pid() - a positional PID, 1..PID_MAX. */
static bool parse_pid(const char *s, pid_t *pid)
{
	unsigned long v;

	if (!parse_ulong(s, PID_MAX, &v) || !v)
		return false;
	*pid = (pid_t)v;
	return true;
}

/* positionals() - what follows the options: ns mode PID or command. */
static bool positionals(struct conf *c, struct pstate *ps, int argc,
			char **argv, bool dashdash)
{
	char **rest = argv + optind;
	int n = argc - optind;

	if (n && c->mode == MODE_VM) {
		snprintf(ps->err, ps->errlen, "unexpected argument '%s' (vm "
			 "mode takes no arguments)", rest[0]);
		return false;
	}
	if (!n)
		return true;
	if (ps->saw_netns) {
		snprintf(ps->err, ps->errlen, "unexpected argument '%s': "
			 "--netns and a PID or command exclude each other",
			 rest[0]);
		return false;
	}
	if (!dashdash && rest[0][0] && !rest[0][strspn(rest[0], "0123456789")]) {
		if (!parse_pid(rest[0], &c->ns_pid)) {
			snprintf(ps->err, ps->errlen, "'%s' is not a valid "
				 "PID", rest[0]);
			return false;
		}
		if (n > 1) {
			snprintf(ps->err, ps->errlen, "unexpected argument "
				 "'%s' after PID %s", rest[1], rest[0]);
			return false;
		}
		return true;
	}
	c->cmd = rest;
	return true;
}

/* splice_only_check() - --splice-only (pasta's loopback-only mode): no
 * tap device, so the options that only shape the tap are refused, as
 * pasta refuses them; host loopback clients reach the namespace's
 * loopback (there is no guest address), and the guest-link services
 * whose host side would still run (ping sockets, the RA timer) are off. */
static bool splice_only_check(struct conf *c, struct pstate *ps)
{
	const char *tap_opt = c->config_net ? "--config-net" :
			      c->ns_ifname[0] ? "--ns-ifname" :
			      c->guest_mac_set ? "--ns-mac-addr" :
			      c->outbound_if4[0] ? "--outbound-if4" :
			      c->outbound_if6[0] ? "--outbound-if6" : NULL;

	if (!c->splice_only)
		return true;
	if (tap_opt) {
		snprintf(ps->err, ps->errlen, "--splice-only: excludes %s "
			 "(there is no tap device)", tap_opt);
		return false;
	}
	c->host_lo_to_ns_lo = true;
	c->no_icmp = c->no_ra = true;
	return true;
}

/* finish() - checks that need all options; derived defaults. */
static bool finish(struct conf *c, struct pstate *ps)
{
	struct fwd_spec *in[] = { &c->tcp_in, &c->udp_in, &c->tcp_out,
				  &c->udp_out };
	size_t i;

	if (c->fd >= 0 && c->socket_path[0]) {
		snprintf(ps->err, ps->errlen, "--fd: conflicts with --socket");
		return false;
	}
	if (c->userns_path[0] && !c->ns_pid && !ps->saw_netns) {
		snprintf(ps->err, ps->errlen, "--userns: needs a PID or --netns");
		return false;
	}
	if (!splice_only_check(c, ps))
		return false;
	if (c->trace)
		c->debug = true;
	if (c->mtu && c->mtu < MTU_MIN_IPV6 && ps->saw6) {
		snprintf(ps->err, ps->errlen, "--mtu: '%u' is below %d, the "
			 "IPv6 minimum, and -6 disables IPv4", c->mtu,
			 MTU_MIN_IPV6);
		return false;
	}
	if (c->mtu && c->mtu < MTU_MIN_IPV6 && c->ip6.enabled) {
		c->ip6.enabled = false;		/* like pasta: warn, go on */
		c->mtu_disabled_ip6 = true;
	}
	/* pasta's default is "auto" for all four; passt's is "none". */
	for (i = 0; i < ARRAY_SIZE(in); i++) {
		if (!in[i]->nbinds)
			in[i]->nbinds = 1;
		if (!in[i]->given && c->mode == MODE_NS)
			in[i]->mode = FWD_AUTO;
	}
	return true;
}

/* run_opt() - check the mode and call the handler of opts[idx]. */
static bool run_opt(struct conf *c, struct pstate *ps, int idx,
		    bool is_long, const char *arg)
{
	const struct opt *o = &opts[idx];
	char name[64];

	if (is_long)
		snprintf(name, sizeof(name), "--%s", o->name);
	else
		snprintf(name, sizeof(name), "-%c", o->letter);
	ps->name = name;
	if (!(o->modes & (c->mode == MODE_NS ? M_NS : M_VM)))
		return bad(ps, "only valid in %s mode",
			   o->modes == M_NS ? "ns (pasta)" : "vm (passt)");
	if (!o->fn(c, ps, o, arg))
		return false;
	ps->name = NULL;
	return true;
}

bool conf_parse_args(struct conf *c, enum mode mode, int argc, char **argv,
		     char *err, size_t errlen)
{
	struct pstate ps = { .mode = mode, .err = err, .errlen = errlen };
	static struct option lo[NOPTS + 1];
	static char shorts[2 * NOPTS + 3];
	const char *last_val = NULL;
	int ret, li;

	conf_defaults(c, mode);
	c->prog = argv[0];
	getopt_setup(lo, shorts);
	optind = 0;		/* full re-initialisation (glibc) */
	opterr = 0;
	for (;;) {
		li = -1;
		ret = getopt_long(argc, argv, shorts, lo, &li);
		if (ret == -1)
			break;
		if (ret == '?' || ret == ':' || find_opt(ret) < 0)
			return getopt_error(&ps, ret, argv);
		last_val = optarg;
		if (!run_opt(c, &ps, find_opt(ret), li >= 0, optarg))
			return false;
		if (c->print)
			return true;
	}
	/* "--" ends the options unless it was the value of the last one. */
	return positionals(c, &ps, argc, argv, optind > 1 &&
			   !strcmp(argv[optind - 1], "--") &&
			   argv[optind - 1] != last_val) &&
	       finish(c, &ps);
}

/* usage_line() - one option of the --help text; long names push the
 * help onto the next line to stay within 80 columns. */
static void usage_line(FILE *out, const struct opt *o)
{
	char left[64];

	snprintf(left, sizeof(left), "%c%c%s--%s%s%s",
		 o->letter ? '-' : ' ', o->letter ? o->letter : ' ',
		 o->letter ? ", " : "  ", o->name, o->argname ? " " : "",
		 o->argname ? o->argname : "");
	if (strlen(left) > 26)
		fprintf(out, "  %s\n  %-26s %s\n", left, "", o->help);
	else
		fprintf(out, "  %-26s %s\n", left, o->help);
}

void conf_print_usage(FILE *out, enum mode mode)
{
	unsigned char m = mode == MODE_NS ? M_NS : M_VM;
	size_t i;

	if (mode == MODE_NS)
		fprintf(out, "Usage: ferry ns [OPTIONS] [PID | --netns PATH | "
			"[--] CMD [ARGS...]]\n       (also as 'pasta')\n"
			"Connect a network namespace through a tap device.\n");
	else
		fprintf(out, "Usage: ferry vm [OPTIONS]\n       (also as "
			"'passt')\nConnect a VM: qemu stream socket, "
			"vhost-user or an inherited fd.\n");
	fprintf(out, "\nOptions:\n");
	for (i = 0; i < NOPTS; i++)
		if (opts[i].modes & m)
			usage_line(out, &opts[i]);
	fprintf(out, "\nPORT SPECS (-t, -u%s):\n"
		"  none | %s[BIND/]all | [BIND/]ITEM[,ITEM]...\n"
		"  BIND: ADDR, ADDR%%IF or %%IF    ITEM: [~]N[-M][:T[-U]]\n"
		"  e.g. 22,80:8080,1000-1010:2000-2010,~1005  127.0.0.1/8080:80\n"
		"  ~ excludes ports; exclusions alone mean all other ports.\n",
		mode == MODE_NS ? ", -T, -U" : "",
		mode == MODE_NS ? "auto | " : "");
	fprintf(out, "\nExit status: 0 success, 1 bad command line or "
		"start-up failure.\nSee ferry(1).\n");
}

/* apply_log() - the log options, once the command line is known good. */
static void apply_log(const struct conf *c)
{
	int rc;

	if (c->trace)
		log_set_level(LOG_LVL_TRACE);
	else if (c->debug)
		log_set_level(LOG_LVL_DEBUG);
	else if (c->quiet)
		log_set_level(LOG_LVL_ERR);
	if (c->log_file[0] && (rc = log_to_file(c->log_file, c->log_size)))
		die("--log-file: cannot open '%s': %s", c->log_file,
		    strerror(-rc));
	if (c->mtu_disabled_ip6)
		warn("--mtu %u is below %d: IPv6 disabled", c->mtu,
		     MTU_MIN_IPV6);
}

/* one_line() - make err printable on one line (values are user text). */
static void one_line(char *s)
{
	for (; *s; s++)
		if (iscntrl((unsigned char)*s))
			*s = '?';
}

void conf_parse(struct conf *c, enum mode mode, int argc, char **argv)
{
	char err[768];

	if (!conf_parse_args(c, mode, argc, argv, err, sizeof(err))) {
		one_line(err);
		fprintf(stderr, "ferry: %s\n", err);
		exit(1);
	}
	switch (c->print) {
	case CONF_PRINT_HELP:
		conf_print_usage(stdout, mode);
		exit(0);
	case CONF_PRINT_VERSION:
		printf("ferry %s\n", FERRY_VERSION);
		exit(0);
	case CONF_PRINT_CAPS:
		printf("{\n  \"type\": \"net\"\n}\n");
		exit(0);
	case CONF_PRINT_NONE:
		break;
	}
	apply_log(c);
	if (c->sandbox == SANDBOX_OFF)
		warn("--sandbox=off: no confinement after set-up (namespaces, "
		     "Landlock, seccomp); for debugging only");
}
