/* slirp.c - ferry started as slirp4netns: its command line, turned into
 * ferry's own.
 *
 * Theory of operation
 *
 * podman 4.x (Debian 12 ships 4.3.1, which has no pasta mode) gives
 * every rootless container, and any container run with --network
 * slirp4netns, a network through slirp4netns:
 *
 *   slirp4netns [--disable-host-loopback] [--mtu=N] [--enable-sandbox]
 *     [--enable-seccomp] [--cidr=C] [--enable-ipv6] [--outbound-addr=A]
 *     [--outbound-addr6=A] -c -e 3 -r 4 [--api-socket P]
 *     (--netns-type=path PATH | PID) tap0
 *
 * It learns which options exist by searching `slirp4netns --help`, waits
 * for a byte on the ready fd (-r), and ends the helper by closing the
 * other end of the exit fd (-e). Its configuration file names the binary
 * (containers.conf, [engine] network_cmd_path), so a link named
 * slirp4netns makes podman run ferry.
 *
 * Started under a name that begins with "slirp4netns", ferry reads that
 * command line here and hands conf.c the equivalent `ferry ns` one: one
 * parser, one decision path, nothing slirp-specific after start-up. The
 * translation keeps slirp4netns's documented network: in the CIDR
 * (default 10.0.2.0/24) the guest is network + 100, the gateway network
 * + 2 (it reaches the host's loopback unless --disable-host-loopback),
 * the DNS server network + 3 (forwarded to the host's resolver unless
 * --disable-dns); with --enable-ipv6 fd00::100/64, fd00::2 and fd00::3,
 * without it IPv4 only. slirp4netns forwards no port by itself (podman's
 * rootlessport does it), so neither does the translation. ferry stays in
 * the foreground, as slirp4netns does.
 *
 * --enable-sandbox and --enable-seccomp ask for what ferry always does
 * (isolate.c, seccomp.c). An option whose effect ferry cannot give is
 * refused with one line naming it (--api-socket, --target-type=bess),
 * never accepted and ignored.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "slirp.h"
#include "util.h"

/* seccomp(setup): write newfstatat brk mmap
 *   (slirp_usage(): --help; the whole file runs before set-up ends) */

#define SLIRP_MTU_MIN	68
#define SLIRP_MTU_MAX	65520		/* ferry's; slirp4netns takes 65521 */
#define SLIRP_GUEST	100		/* offsets in the CIDR (slirp4netns.1) */
#define SLIRP_GW	2
#define SLIRP_DNS	3

enum slirp_opt_id {
	O_CONFIGURE, O_EXIT_FD, O_READY_FD, O_MTU, O_IPV6, O_API, O_CIDR,
	O_NO_LOOPBACK, O_NETNS_TYPE, O_USERNS, O_SANDBOX, O_SECCOMP,
	O_OUT4, O_OUT6, O_NO_DNS, O_MAC, O_TARGET, O_HELP, O_VERSION,
};

struct slirp_opt {
	const char *name;	/* long name without "--" */
	char letter;		/* short option, 0: none */
	bool arg;		/* takes a value */
	enum slirp_opt_id id;
	const char *help;
};

/* slirp4netns 1.2's options, in its --help order. */
static const struct slirp_opt slirp_opts[] = {
	{ "configure", 'c', false, O_CONFIGURE, "bring up the interface" },
	{ "exit-fd", 'e', true, O_EXIT_FD,
	  "specify the FD for terminating slirp4netns" },
	{ "ready-fd", 'r', true, O_READY_FD,
	  "specify the FD to write to when the network is configured" },
	{ "mtu", 'm', true, O_MTU, "specify MTU (default=1500, max=65520)" },
	{ "cidr", 0, true, O_CIDR,
	  "specify network address CIDR (default=10.0.2.0/24)" },
	{ "disable-host-loopback", 0, false, O_NO_LOOPBACK,
	  "prohibit connecting to 127.0.0.1:* on the host namespace" },
	{ "netns-type", 0, true, O_NETNS_TYPE,
	  "specify network namespace type ([path|pid], default=pid)" },
	{ "userns-path", 0, true, O_USERNS, "specify user namespace path" },
	{ "api-socket", 'a', true, O_API,
	  "refused: ferry has no slirp4netns API socket" },
	{ "enable-ipv6", '6', false, O_IPV6, "enable IPv6" },
	{ "enable-sandbox", 0, false, O_SANDBOX,
	  "confine after set-up (ferry always does)" },
	{ "enable-seccomp", 0, false, O_SECCOMP,
	  "limit system calls (ferry always does)" },
	{ "outbound-addr", 0, true, O_OUT4,
	  "IPv4 address or interface to bind outbound sockets to" },
	{ "outbound-addr6", 0, true, O_OUT6,
	  "IPv6 address or interface to bind outbound sockets to" },
	{ "disable-dns", 0, false, O_NO_DNS,
	  "no DNS forwarder at network + 3" },
	{ "macaddress", 0, true, O_MAC,
	  "specify the MAC address of the TAP (only valid with -c)" },
	{ "target-type", 0, true, O_TARGET,
	  "specify the target type ([netns], default=netns)" },
	{ "help", 'h', false, O_HELP, "show this help and exit" },
	{ "version", 'v', false, O_VERSION, "show version and exit" },
};

/* What the command line asked for. */
struct slirp_req {
	bool configure, ipv6, no_loopback, no_dns, path_type;
	const char *exit_fd, *ready_fd, *mtu, *userns, *out4, *out6, *mac;
	struct in_addr net;		/* network address of the CIDR */
	unsigned int len;		/* its prefix length */
	const char *pos[2];		/* PID|PATH, TAPNAME */
	int npos;
};

bool slirp_named(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	base = base ? base + 1 : argv0;
	return !strncmp(base, "slirp4netns", 11);
}

void slirp_usage(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: slirp4netns [OPTION]... PID|PATH TAPNAME\n"
		"ferry, started as slirp4netns: user-mode networking for "
		"a network namespace.\n\n");
	for (i = 0; i < ARRAY_SIZE(slirp_opts); i++) {
		const struct slirp_opt *o = &slirp_opts[i];
		char left[40];

		if (o->letter)
			snprintf(left, sizeof(left), "-%c, --%s%s", o->letter,
				 o->name, o->arg ? "=X" : "");
		else
			snprintf(left, sizeof(left), "--%s%s", o->name,
				 o->arg ? "=X" : "");
		fprintf(out, "  %-28s %s\n", left, o->help);
	}
}

/* fail() - the one error line; always SLIRP_BAD. */
__attribute__((format(printf, 3, 4)))
static enum slirp_result fail(char *err, size_t errlen, const char *fmt,
			      ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return SLIRP_BAD;
}

/* find_long() - the option called name (len bytes), or NULL. */
static const struct slirp_opt *find_long(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(slirp_opts); i++)
		if (strlen(slirp_opts[i].name) == len &&
		    !strncmp(slirp_opts[i].name, name, len))
			return &slirp_opts[i];
	return NULL;
}

/* find_short() - the option with letter l, or NULL. */
static const struct slirp_opt *find_short(char l)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(slirp_opts); i++)
		if (slirp_opts[i].letter == l)
			return &slirp_opts[i];
	return NULL;
}

/* parse_cidr() - "A.B.C.D/LEN" with room for the guest (network + 100)
 * below the broadcast address; the network address into r. */
static bool parse_cidr(const char *s, struct slirp_req *r)
{
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	unsigned long len;
	char *end;
	uint32_t mask;

	if (!slash || (size_t)(slash - s) >= sizeof(addr))
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	errno = 0;
	len = strtoul(slash + 1, &end, 10);
	if (!slash[1] || *end || errno || len < 1 || len > 25 ||
	    slash[1] == '-' || slash[1] == '+')
		return false;
	if (inet_pton(AF_INET, addr, &r->net) != 1)
		return false;
	mask = htonl(~0U << (32 - len));
	r->net.s_addr &= mask;
	r->len = (unsigned int)len;
	return true;
}

/* mtu_ok() - a whole decimal number within ferry's MTU range. */
static bool mtu_ok(const char *v)
{
	unsigned long n;
	char *end;

	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	n = strtoul(v, &end, 10);
	return !*end && !errno && n >= SLIRP_MTU_MIN && n <= SLIRP_MTU_MAX;
}

/* apply() - record option o with value v (NULL for a flag). */
static enum slirp_result apply(struct slirp_req *r, const struct slirp_opt *o,
			       const char *value, char *err, size_t errlen)
{
	const char *v = value ? value : "";	/* flags get no value */

	switch (o->id) {
	case O_CONFIGURE:	r->configure = true; break;
	case O_EXIT_FD:		r->exit_fd = v; break;
	case O_READY_FD:	r->ready_fd = v; break;
	case O_MTU:
		if (!mtu_ok(v))
			return fail(err, errlen, "--mtu: '%s' is not an MTU "
				    "(%d-%d)", v, SLIRP_MTU_MIN, SLIRP_MTU_MAX);
		r->mtu = v;
		break;
	case O_IPV6:		r->ipv6 = true; break;
	case O_NO_LOOPBACK:	r->no_loopback = true; break;
	case O_NO_DNS:		r->no_dns = true; break;
	case O_USERNS:		r->userns = v; break;
	case O_OUT4:		r->out4 = v; break;
	case O_OUT6:		r->out6 = v; break;
	case O_MAC:		r->mac = v; break;
	case O_SANDBOX:
	case O_SECCOMP:
		break;			/* ferry confines itself always */
	case O_HELP:		return SLIRP_HELP;
	case O_VERSION:		return SLIRP_VERSION;
	case O_CIDR:
		if (!parse_cidr(v, r))
			return fail(err, errlen, "--cidr: '%s' is not an IPv4 "
				    "network A.B.C.D/LEN with LEN 1-25 (the "
				    "guest is network + 100)", v);
		break;
	case O_NETNS_TYPE:
		if (strcmp(v, "path") && strcmp(v, "pid"))
			return fail(err, errlen, "--netns-type: '%s' is "
				    "neither 'path' nor 'pid'", v);
		r->path_type = !strcmp(v, "path");
		break;
	case O_TARGET:
		if (strcmp(v, "netns"))
			return fail(err, errlen, "--target-type: '%s' is not "
				    "available in ferry (only 'netns')", v);
		break;
	case O_API:
		return fail(err, errlen, "--api-socket: slirp4netns's port "
			    "forwarding API is not available in ferry (podman: "
			    "keep port_handler=rootlesskit, the default)");
	}
	return SLIRP_RUN;
}

/* parse_long() - argv[*i] is "--name[=value]"; the value may be the
 * next argument. */
static enum slirp_result parse_long(int argc, char **argv, int *i,
				    struct slirp_req *r, char *err,
				    size_t errlen)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct slirp_opt *o = find_long(name, len);
	const char *v = NULL;

	if (!o)
		return fail(err, errlen, "unknown option '--%.*s' (see "
			    "slirp4netns --help)", (int)(len > 40 ? 40 : len),
			    name);
	if (o->arg) {
		if (eq)
			v = eq + 1;
		else if (*i + 1 < argc)
			v = argv[++*i];
		else
			return fail(err, errlen, "--%s: a value is missing",
				    o->name);
	} else if (eq) {
		return fail(err, errlen, "--%s takes no value", o->name);
	}
	return apply(r, o, v, err, errlen);
}

/* parse_short() - argv[*i] is "-xyz": flags, the last one may take the
 * rest of the word or the next argument as its value. */
static enum slirp_result parse_short(int argc, char **argv, int *i,
				     struct slirp_req *r, char *err,
				     size_t errlen)
{
	const char *s = argv[*i] + 1;
	enum slirp_result res;

	for (; *s; s++) {
		const struct slirp_opt *o = find_short(*s);
		const char *v = NULL;

		if (!o)
			return fail(err, errlen, "unknown option '-%c' (see "
				    "slirp4netns --help)", *s);
		if (o->arg) {
			if (s[1])
				v = s + 1;
			else if (*i + 1 < argc)
				v = argv[++*i];
			else
				return fail(err, errlen, "-%c: a value is "
					    "missing", *s);
		}
		res = apply(r, o, v, err, errlen);
		if (res != SLIRP_RUN || v)
			return res;
	}
	return SLIRP_RUN;
}

/* parse() - the whole command line into r (options and positionals in
 * any order, "--" ends the options, as getopt_long() permutes). */
static enum slirp_result parse(int argc, char **argv, struct slirp_req *r,
			       char *err, size_t errlen)
{
	bool opts_end = false;
	enum slirp_result res;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!opts_end && !strcmp(a, "--")) {
			opts_end = true;
			continue;
		}
		if (!opts_end && a[0] == '-' && a[1]) {
			res = a[1] == '-' ?
				parse_long(argc, argv, &i, r, err, errlen) :
				parse_short(argc, argv, &i, r, err, errlen);
			if (res != SLIRP_RUN)
				return res;
			continue;
		}
		if (r->npos == 2)
			return fail(err, errlen, "unexpected argument '%.60s' "
				    "(expected PID|PATH TAPNAME)", a);
		r->pos[r->npos++] = a;
	}
	if (r->npos < 2)
		return fail(err, errlen, "PID|PATH and TAPNAME are required "
			    "(usage: slirp4netns [OPTION]... PID|PATH TAPNAME)");
	return SLIRP_RUN;
}

/* add() - append one argument (a constant or a string in out->buf). */
static bool add(struct slirp_argv *out, const char *a)
{
	if (out->argc >= SLIRP_ARGV_MAX)
		return false;
	out->argv[out->argc++] = (char *)a;
	out->argv[out->argc] = NULL;
	return true;
}

/* add_addr() - append the IPv4 address net + off, written into buf. */
static bool add_addr(struct slirp_argv *out, struct in_addr net, uint32_t off)
{
	struct in_addr a = { htonl(ntohl(net.s_addr) + off) };
	char *dst = out->buf + out->used;

	if (sizeof(out->buf) - out->used < INET_ADDRSTRLEN ||
	    !inet_ntop(AF_INET, &a, dst, INET_ADDRSTRLEN))
		return false;
	out->used += strlen(dst) + 1;
	return add(out, dst);
}

/* add_num() - append a decimal number, written into buf. */
static bool add_num(struct slirp_argv *out, unsigned int v)
{
	char *dst = out->buf + out->used;
	int n = snprintf(dst, sizeof(out->buf) - out->used, "%u", v);

	if (n < 0 || (size_t)n >= sizeof(out->buf) - out->used)
		return false;
	out->used += (size_t)n + 1;
	return add(out, dst);
}

/* add_outbound() - --outbound-addr(6): an address of the family, or an
 * interface name. */
static bool add_outbound(struct slirp_argv *out, int af, const char *v)
{
	unsigned char tmp[16];

	if (inet_pton(af, v, tmp) == 1)
		return add(out, "-o") && add(out, v);
	return add(out, af == AF_INET ? "--outbound-if4" : "--outbound-if6") &&
	       add(out, v);
}

/* emit() - the `ferry ns` command line for request r. */
static bool emit(const struct slirp_req *r, struct slirp_argv *out)
{
	bool ok = add(out, "slirp4netns") && add(out, "-f") &&
		  add(out, "-I") && add(out, r->pos[1]) &&
		  add(out, "-m") && add(out, r->mtu ? r->mtu : "1500");

	ok = ok && add(out, "-t") && add(out, "none") && add(out, "-u") &&
	     add(out, "none") && add(out, "-T") && add(out, "none") &&
	     add(out, "-U") && add(out, "none");
	if (r->configure)
		ok = ok && add(out, "--config-net");
	ok = ok && add(out, "-a") && add_addr(out, r->net, SLIRP_GUEST) &&
	     add(out, "-n") && add_num(out, r->len) &&
	     add(out, "-g") && add_addr(out, r->net, SLIRP_GW);
	if (!r->no_dns)
		ok = ok && add(out, "--dns-forward") &&
		     add_addr(out, r->net, SLIRP_DNS);
	if (r->ipv6) {
		ok = ok && add(out, "-a") && add(out, "fd00::100") &&
		     add(out, "-g") && add(out, "fd00::2");
		if (!r->no_dns)
			ok = ok && add(out, "--dns-forward") &&
			     add(out, "fd00::3");
	} else {
		ok = ok && add(out, "-4");
	}
	if (r->no_loopback)
		ok = ok && add(out, "--no-map-gw");
	if (r->out4)
		ok = ok && add_outbound(out, AF_INET, r->out4);
	if (r->out6)
		ok = ok && add_outbound(out, AF_INET6, r->out6);
	if (r->mac)
		ok = ok && add(out, "--ns-mac-addr") && add(out, r->mac);
	if (r->userns)
		ok = ok && add(out, "--userns") && add(out, r->userns);
	if (r->exit_fd)
		ok = ok && add(out, "--exit-fd") && add(out, r->exit_fd);
	if (r->ready_fd)
		ok = ok && add(out, "--ready-fd") && add(out, r->ready_fd);
	if (r->path_type)
		return ok && add(out, "--netns") && add(out, r->pos[0]);
	return ok && add(out, r->pos[0]);	/* PID, as pasta takes it */
}

enum slirp_result slirp_translate(int argc, char **argv,
				  struct slirp_argv *out, char *err,
				  size_t errlen)
{
	struct slirp_req r = { .len = 24 };
	enum slirp_result res;
	const char *p;

	inet_pton(AF_INET, "10.0.2.0", &r.net);
	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	res = parse(argc, argv, &r, err, errlen);
	if (res != SLIRP_RUN)
		return res;
	if (r.mac && !r.configure)
		return fail(err, errlen, "--macaddress: only valid with -c "
			    "(--configure)");
	if (r.out6 && !r.ipv6)
		return fail(err, errlen, "--outbound-addr6: needs "
			    "--enable-ipv6");
	if (!r.path_type) {
		for (p = r.pos[0]; *p >= '0' && *p <= '9'; p++)
			;
		if (*p || !r.pos[0][0])
			return fail(err, errlen, "'%.60s' is not a PID (a "
				    "namespace path needs --netns-type=path)",
				    r.pos[0]);
	}
	if (!emit(&r, out))
		return fail(err, errlen, "the command line is too long");
	return SLIRP_RUN;
}
