/* ctl_cmd.c - the control socket's clients: `ferry ctl` and `pesto`.
 *
 * Theory of operation
 *
 * Both turn a command line into one request line (the protocol of ctl.c,
 * doc/ferry.1 CONTROL PROTOCOL), send it on the socket, read the one
 * reply line and print it; the exit status is 0 when the reply says ok,
 * else 1, with one line on standard error.
 *
 * ferry ctl PATH COMMAND: forwards, add/del with -t/-u/-T/-U SPEC
 * (several at once, applied together or not at all), flows (a table;
 * --json: the reply as it came), stats, log-level [LEVEL], version.
 *
 * pesto (invoked through a link of that name): the command lines that
 * upstream passt's client takes and its callers pass. podman's
 * container-libs runs "pesto --add|--delete -t|-u SPEC... PATH" (specs
 * such as 0.0.0.0/8080:80, [::]/8080-8081:80-81; newer ones with the
 * container's address, 0.0.0.0/8080:10.88.0.2/80 and
 * [::]/8080:fd00::2/80, PR #1004) and reads only the exit
 * status and, on failure, the output; rootlesskit runs "pesto --version"
 * first (any output, status 0) and then "pesto -A|-D --tcp-ports=SPEC
 * PATH" (IPv6 unbracketed: ::/8080:80). Without -A or -D pesto prints the
 * forwards. An add of a forward that exists the same way succeeds
 * (container-libs counts on that), as ferry's server makes it a no-op.
 *
 * These run as short-lived commands, before any sandbox and outside the
 * loop: they may block (with a timeout) and allocate.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "ctl_cmd.h"
#include "json.h"
#include "util.h"

/* seccomp(setup): socket connect write read setsockopt close brk mmap */
/* seccomp(setup): munmap mremap exit_group newfstatat
 *   (ferry ctl and pesto are clients: they never run under the filter) */

#define CMD_TIMEOUT_S	10
#define REPLY_MAX	(256u << 20)	/* a flow list of a full table fits */

/* The specs of one command line, per direction of the protocol. */
struct specs {
	const char *v[4][JSON_ITEMS_MAX];
	unsigned int n[4];
};

static const char *const dir_keys[4] = { "tcp", "udp", "tcp_ns", "udp_ns" };

/* fail() - one line on standard error, exit 1. */
static void __attribute__((noreturn, format(printf, 2, 3)))
fail(const char *who, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* add_spec() - spec for direction d (0 -t, 1 -u, 2 -T, 3 -U). */
static void add_spec(const char *who, struct specs *s, unsigned int d,
		     const char *spec)
{
	unsigned int total = s->n[0] + s->n[1] + s->n[2] + s->n[3];

	if (total >= JSON_ITEMS_MAX)
		fail(who, "more than %d specs", JSON_ITEMS_MAX);
	s->v[d][s->n[d]++] = spec;
}

/* request_change() - an add or del request for the specs in s. */
static void request_change(struct jw *w, bool add, const struct specs *s)
{
	unsigned int d, i;

	jw_open(w, '{');
	jw_kstr(w, "op", add ? "add" : "del");
	for (d = 0; d < 4; d++) {
		if (!s->n[d])
			continue;
		jw_key(w, dir_keys[d]);
		jw_open(w, '[');
		for (i = 0; i < s->n[d]; i++)
			jw_str(w, s->v[d][i]);
		jw_close(w, ']');
	}
	jw_close(w, '}');
	jw_raw(w, "\n");
}

/* exchange() - send line to the socket at path, return the reply line
 * (allocated, NUL-terminated, the newline dropped) and its length. */
static char *exchange(const char *who, const char *path, const char *line,
		      size_t *len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { CMD_TIMEOUT_S, 0 };
	size_t cap = 65536, n = 0, sent = 0, want = strlen(line);
	char *buf, *nl = NULL;
	int fd;

	if (!str_copy(a.sun_path, path, sizeof(a.sun_path)))
		fail(who, "%s: path too long", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		fail(who, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		fail(who, "cannot connect to %s: %s", path, strerror(errno));
	while (sent < want) {
		ssize_t k = write(fd, line + sent, want - sent);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			fail(who, "%s: cannot send: %s", path, strerror(errno));
		sent += (size_t)k;
	}
	if (!(buf = malloc(cap)))
		fail(who, "out of memory");
	while (!nl) {
		ssize_t k;

		if (n + 1 >= cap) {
			char *b2;

			if (cap >= REPLY_MAX || !(b2 = realloc(buf, cap * 2)))
				fail(who, "reply too long");
			buf = b2;
			cap *= 2;
		}
		k = read(fd, buf + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			fail(who, "%s: no reply: %s", path, strerror(errno));
		if (!k)
			fail(who, "%s: closed without a reply", path);
		nl = memchr(buf + n, '\n', (size_t)k);
		n += (size_t)k;
	}
	close(fd);
	*nl = '\0';
	*len = (size_t)(nl - buf);
	return buf;
}

/* reply_ok() - parse reply; exit 1 with its error when it is not ok. */
static void reply_ok(const char *who, char *reply, size_t len,
		     struct json_obj *o)
{
	const struct json_field *ok, *e;
	char err[160];

	if (!json_parse_any(reply, len, o, err, sizeof(err)))
		fail(who, "bad reply: %s", err);
	ok = json_get(o, "ok");
	if (ok && ok->type == JSON_BOOL && ok->n)
		return;
	e = json_get(o, "error");
	fail(who, "%s", e && e->type == JSON_STR ? e->s : "request failed");
}

/* print_forwards() - the forwards reply, one line per direction. */
static void print_forwards(const struct json_obj *o, bool pesto)
{
	static const char *const opts[4] = { "-t", "-u", "-T", "-U" };
	unsigned int d, i;

	for (d = 0; d < 4; d++) {
		const struct json_field *f = json_get(o, dir_keys[d]);

		if (!f || f->type != JSON_ARR)
			continue;
		if (pesto && !f->count)
			continue;
		printf("%s", opts[d]);
		for (i = 0; i < f->count; i++)
			printf("%s%s", i ? "," : " ", o->items[f->first + i]);
		printf("%s\n", f->count ? "" : " none");
	}
}

/* str_of() - member key's string, "-" if absent. */
static const char *str_of(const struct json_obj *o, const char *key)
{
	const struct json_field *f = json_get(o, key);

	return f && f->type == JSON_STR ? f->s : "-";
}

/* num_of() - member key's number as text into buf, "-" if absent. */
static const char *num_of(const struct json_obj *o, const char *key,
			  char *buf, size_t len)
{
	const struct json_field *f = json_get(o, key);

	if (!f || f->type != JSON_INT)
		return "-";
	snprintf(buf, len, "%lld", f->n);
	return buf;
}

/* print_flows() - the flow list as a table. */
static void print_flows(const char *who, const struct json_obj *o)
{
	const struct json_field *f = json_get(o, "flows");
	char n[8][24], obj[4096], err[160];
	const char *p, *end, *e;
	struct json_obj fo;
	size_t len;

	if (!f || f->type != JSON_RAW)
		fail(who, "bad reply: no flow list");
	printf("%-10s %-22s %-22s %-22s %-11s %8s %12s %12s %8s %8s %8s %7s %4s\n",
	       "PROTO", "GUEST", "REMOTE", "HOST-PEER", "STATE", "AGE-MS",
	       "FROM-GUEST", "TO-GUEST", "WND", "INQ", "OUTQ", "RTT-US",
	       "RETR");
	p = f->s;
	end = f->s + f->n;
	while (json_array_next(&p, end, &e, &len)) {
		if (len >= sizeof(obj))
			continue;
		memcpy(obj, e, len);
		obj[len] = '\0';
		if (!json_parse_any(obj, len, &fo, err, sizeof(err)))
			continue;
		printf("%-10s %-22s %-22s %-22s %-11s %8s %12s %12s %8s %8s %8s %7s %4s\n",
		       str_of(&fo, "proto"), str_of(&fo, "guest"),
		       str_of(&fo, "remote"), str_of(&fo, "host_peer"),
		       str_of(&fo, "state"),
		       num_of(&fo, "age_ms", n[0], sizeof(n[0])),
		       num_of(&fo, "bytes_from_guest", n[1], sizeof(n[1])),
		       num_of(&fo, "bytes_to_guest", n[2], sizeof(n[2])),
		       num_of(&fo, "wnd_from_guest", n[3], sizeof(n[3])),
		       num_of(&fo, "sock_inq", n[4], sizeof(n[4])),
		       num_of(&fo, "sock_outq", n[5], sizeof(n[5])),
		       num_of(&fo, "rtt_us", n[6], sizeof(n[6])),
		       num_of(&fo, "retrans", n[7], sizeof(n[7])));
	}
}

/* print_lines() - a reply's "lines" list, one a line. */
static void print_lines(const struct json_obj *o)
{
	const struct json_field *f = json_get(o, "lines");
	unsigned int i;

	for (i = 0; f && f->type == JSON_ARR && i < f->count; i++)
		printf("%s\n", o->items[f->first + i]);
}

/* ctl_usage() - ferry ctl's usage, exit code. */
static void __attribute__((noreturn)) ctl_usage(int code)
{
	fprintf(code ? stderr : stdout,
		"Usage: ferry ctl PATH forwards\n"
		"       ferry ctl PATH add|del -t|-u|-T|-U SPEC [...]\n"
		"       ferry ctl PATH flows [--json]\n"
		"       ferry ctl PATH stats [--json]\n"
		"       ferry ctl PATH log-level [LEVEL]\n"
		"       ferry ctl PATH version\n"
		"PATH is the -c socket of a running ferry; see ferry(1).\n");
	exit(code);
}

/* dir_of() - the direction index of option o (-t -u -T -U), -1 if none. */
static int dir_of(const char *o)
{
	static const char *const opts[4] = { "-t", "-u", "-T", "-U" };
	int d;

	for (d = 0; d < 4; d++)
		if (!strcmp(o, opts[d]))
			return d;
	return -1;
}

int ctl_main(int argc, char **argv)
{
	static const char who[] = "ferry ctl";
	static char line[CTL_CMD_LINE_MAX];
	const char *path, *cmd;
	bool json = false;
	struct json_obj o;
	struct specs s;
	char *reply;
	size_t len;
	struct jw w;
	int i, d;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		ctl_usage(0);
	if (argc < 3)
		ctl_usage(1);
	path = argv[1];
	cmd = argv[2];
	jw_init(&w, line, sizeof(line));
	memset(&s, 0, sizeof(s));
	if (!strcmp(cmd, "add") || !strcmp(cmd, "del")) {
		for (i = 3; i < argc; i += 2) {
			if ((d = dir_of(argv[i])) < 0 || i + 1 >= argc)
				fail(who, "%s: expected -t, -u, -T or -U and a "
				     "spec", argv[i]);
			add_spec(who, &s, (unsigned int)d, argv[i + 1]);
		}
		if (argc == 3)
			fail(who, "%s: give -t, -u, -T or -U SPEC", cmd);
		request_change(&w, cmd[0] == 'a', &s);
	} else if (!strcmp(cmd, "log-level")) {
		if (argc > 4)
			ctl_usage(1);
		jw_open(&w, '{');
		jw_kstr(&w, "op", "log-level");
		if (argc == 4)
			jw_kstr(&w, "level", argv[3]);
		jw_close(&w, '}');
		jw_raw(&w, "\n");
	} else if (!strcmp(cmd, "forwards") || !strcmp(cmd, "flows") ||
		   !strcmp(cmd, "stats") || !strcmp(cmd, "version")) {
		for (i = 3; i < argc; i++) {
			if (strcmp(argv[i], "--json"))
				ctl_usage(1);
			json = true;
		}
		jw_open(&w, '{');
		jw_kstr(&w, "op", cmd);
		jw_close(&w, '}');
		jw_raw(&w, "\n");
	} else {
		fail(who, "unknown command '%s' (see ferry ctl --help)", cmd);
	}
	if (w.over)
		fail(who, "request too long");
	reply = exchange(who, path, line, &len);
	if (json) {
		printf("%s\n", reply);
		reply_ok(who, reply, len, &o);
		return 0;
	}
	reply_ok(who, reply, len, &o);
	if (!strcmp(cmd, "forwards"))
		print_forwards(&o, false);
	else if (!strcmp(cmd, "flows"))
		print_flows(who, &o);
	else if (!strcmp(cmd, "stats"))
		print_lines(&o);
	else if (!strcmp(cmd, "log-level"))
		printf("%s\n", str_of(&o, "level"));
	else if (!strcmp(cmd, "version"))
		printf("%s\n", str_of(&o, "version"));
	free(reply);
	return 0;
}

/* pesto_usage() - pesto's usage, exit code. */
static void __attribute__((noreturn)) pesto_usage(int code)
{
	fprintf(code ? stderr : stdout,
		"Usage: pesto [-A|-D] [-t|-u|-T|-U SPEC]... PATH\n"
		"  -A, --add        add the forwards given\n"
		"  -D, --delete     delete the forwards given\n"
		"  -t, --tcp-ports SPEC   TCP, host to guest\n"
		"  -u, --udp-ports SPEC   UDP, host to guest\n"
		"  -T, --tcp-ns SPEC      TCP, namespace to host\n"
		"  -U, --udp-ns SPEC      UDP, namespace to host\n"
		"  without -A or -D: print the forwards\n"
		"PATH is the -c socket of a running pasta or passt (ferry).\n");
	exit(code);
}

int pesto_main(int argc, char **argv)
{
	static const char who[] = "pesto";
	static const struct option lo[] = {
		{ "add", no_argument, NULL, 'A' },
		{ "delete", no_argument, NULL, 'D' },
		{ "tcp-ports", required_argument, NULL, 't' },
		{ "udp-ports", required_argument, NULL, 'u' },
		{ "tcp-ns", required_argument, NULL, 'T' },
		{ "udp-ns", required_argument, NULL, 'U' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
		{ 0 },
	};
	static char line[CTL_CMD_LINE_MAX];
	struct json_obj o;
	struct specs s;
	int opt, mode = 0;
	char *reply;
	size_t len;
	struct jw w;

	memset(&s, 0, sizeof(s));
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+ADt:u:T:U:qdhv", lo,
				  NULL)) != -1) {
		switch (opt) {
		case 'A':
		case 'D':
			if (mode && mode != opt)
				fail(who, "-A and -D exclude each other");
			mode = opt;
			break;
		case 't': add_spec(who, &s, 0, optarg); break;
		case 'u': add_spec(who, &s, 1, optarg); break;
		case 'T': add_spec(who, &s, 2, optarg); break;
		case 'U': add_spec(who, &s, 3, optarg); break;
		case 'q': case 'd': break;
		case 'h': pesto_usage(0);
		case 'v':
			printf("pesto (ferry) %s\n", FERRY_VERSION);
			return 0;
		default:
			fail(who, "unknown or incomplete option '%s' (see "
			     "pesto --help)", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		pesto_usage(1);
	if (mode && !(s.n[0] + s.n[1] + s.n[2] + s.n[3]))
		fail(who, "%s: give -t, -u, -T or -U SPEC", mode == 'A' ?
		     "--add" : "--delete");
	if (!mode && s.n[0] + s.n[1] + s.n[2] + s.n[3])
		fail(who, "specs need -A (--add) or -D (--delete)");
	jw_init(&w, line, sizeof(line));
	if (mode) {
		request_change(&w, mode == 'A', &s);
	} else {
		jw_open(&w, '{');
		jw_kstr(&w, "op", "forwards");
		jw_close(&w, '}');
		jw_raw(&w, "\n");
	}
	if (w.over)
		fail(who, "request too long");
	reply = exchange(who, argv[optind], line, &len);
	reply_ok(who, reply, len, &o);
	if (!mode)
		print_forwards(&o, true);
	free(reply);
	return 0;
}
