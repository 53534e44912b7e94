// SPDX-License-Identifier: GPL-2.0-or-later
/* wclamp.c - characterise TCP_WINDOW_CLAMP on the running kernel
 *
 * Build: cc -O2 -Wall -Wextra -Werror -o test/wclamp test/wclamp.c
 * Run:   test/wclamp [-m MTU] [-n] [-v]
 *        -m MTU  set the loopback MTU of the private namespace (default: leave 65536)
 *        -n      do not create a user+network namespace (caller already did
 *                `unshare -Urn`); loopback is still brought up
 *        -t LIST run only these question groups (digits, default 12345789):
 *                1 shrink/re-expand, 2 queue bound, 3 zero window (default
 *                buffers, with the plain-recv control of Q6), 4 persistence,
 *                5 minimum clamp and throughput, 7 zero window in the seed
 *                buffer shapes, 8 ferry-style forwarding loop, 9 a "stop"
 *                clamp below one segment while the receiver pauses, and
 *                the sender's return when it is raised
 *        -v      verbose: print per-step details on stderr
 * Exit:  0  "MSG_TRUNC + TCP_WINDOW_CLAMP re-set re-opens a zero window" held in
 *           every buffer shape tested (window open within 200 ms, data flows)
 *        1  it did not hold somewhere (see the RESULT lines)
 *        2  setup failure (namespace, sockets, ...), with a message on stderr
 *
 * Theory of operation
 * -------------------
 * ferry keeps host-socket data in the kernel receive queue until the guest
 * acknowledged it: it reads with MSG_PEEK, forwards to the guest, drops acked
 * bytes with recv(fd, NULL, n, MSG_TRUNC) and mirrors the guest's advertised
 * window onto the host socket with setsockopt(TCP_WINDOW_CLAMP).  This program
 * measures, on the kernel it runs on, how the receive window of such a socket
 * behaves.  It isolates itself in a fresh user + network namespace, brings up
 * the namespace's loopback and opens TCP pairs over 127.0.0.1: the "receiver"
 * plays ferry's host socket (the connect()ing side, options set before
 * connect() as ferry does), the "sender" is the accepted peer.
 *
 * The window the receiver advertises is observed from the sender with
 * TCP_INFO (tcpi_snd_wnd: last window received, scaled), from the receiver
 * with tcpi_rcv_wnd when the kernel provides it (6.2+, read past the end of
 * the installed uapi struct), and by counting bytes that arrive (SIOCINQ,
 * tcpi_bytes_received).  Whether a syscall made the receiver emit a segment
 * (a window update) is read from the receiver's tcpi_segs_out before/after.
 * Everything polls with deadlines; the only fixed waits are the observation
 * windows of "did X happen within T" questions.
 *
 * Output: human-readable tables, plus `RESULT key=value` lines for scripts.
 * Single-threaded, libc only; sender and receiver are non-blocking and driven
 * alternately from one loop, so loopback transfers are fully deterministic in
 * ordering but not in timing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define KiB		1024L
#define MiB		(1024L * 1024L)
#define MIN(a, b)	((a) < (b) ? (a) : (b))
#define MAX(a, b)	((a) > (b) ? (a) : (b))

#define PROMPT_MS	200	/* "window update without help" deadline */
#define EVENTUAL_MS	3000	/* further wait, zero-window probes may help */
#define FILL_MS		3000	/* deadline to reach a zero window */

static char big[1 << 20];	/* scratch for writes, peeks and reads */
static int verbose;
static int all_reopen_ok = 1;	/* drives the exit status */
static long g_mss;		/* sender MSS on this loopback */
static int g_trunc_updates = 1;	/* every MSG_TRUNC emptying sent an update */
static int g_plain_updates = 1;	/* every plain recv() emptying sent one */
static int g_zero_locks;	/* a clamp set at zero window kept it shut */
static int g_reset_sends;	/* a clamp re-set emitted a segment */

/* die() - report a setup/syscall failure and exit with status 2 */
static void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fprintf(stderr, "wclamp: FATAL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	exit(2);
}

/* vlog() - verbose trace on stderr */
static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* now_us() - monotonic clock in microseconds */
static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* tick() - polling interval between two checks of a condition (1 ms) */
static void tick(void)
{
	poll(NULL, 0, 1);
}

/* ------------------------------------------------------------------ */
/* Namespace setup                                                      */

/* write_file() - write a string to a file, return 0 or -1 (errno set) */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* read_file() - read a small file into @buf (NUL-terminated), 0 or -1 */
static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* isolate() - enter a new user + network namespace, map ourselves to root */
static void isolate(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET))
		die("unshare(CLONE_NEWUSER | CLONE_NEWNET) (use -n inside `unshare -Urn`)");
	if (write_file("/proc/self/setgroups", "deny") && errno != ENOENT)
		die("write /proc/self/setgroups");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map))
		die("write /proc/self/uid_map");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map))
		die("write /proc/self/gid_map");
}

/* lo_up() - bring up loopback in the current netns, optionally set its MTU */
static void lo_up(int mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket(AF_INET, SOCK_DGRAM)");
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		die("SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr))
		die("SIOCSIFFLAGS lo up");
	if (mtu) {
		ifr.ifr_mtu = mtu;
		if (ioctl(fd, SIOCSIFMTU, &ifr))
			die("SIOCSIFMTU lo %d", mtu);
	}
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		die("SIOCGIFMTU lo");
	printf("loopback MTU: %d\n", ifr.ifr_mtu);
	printf("RESULT lo_mtu=%d\n", ifr.ifr_mtu);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* Socket helpers                                                       */

/* struct ti - TCP_INFO plus tcpi_rcv_wnd, which the installed uapi lacks */
struct ti {
	struct tcp_info i;
	uint32_t rcv_wnd;	/* receiver's current window (6.2+) */
	int has_rcv_wnd;
};

/* ti_get() - read TCP_INFO; dies if the socket cannot report it */
static void ti_get(int fd, struct ti *t)
{
	size_t off = offsetof(struct tcp_info, tcpi_snd_wnd) + sizeof(uint32_t);
	unsigned char raw[512];
	socklen_t len = sizeof(raw);

	memset(raw, 0, sizeof(raw));
	memset(t, 0, sizeof(*t));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, raw, &len))
		die("getsockopt(TCP_INFO)");
	memcpy(&t->i, raw, MIN((size_t)len, sizeof(t->i)));
	if (len >= off + sizeof(uint32_t)) {
		memcpy(&t->rcv_wnd, raw + off, sizeof(uint32_t));
		t->has_rcv_wnd = 1;
	}
}

/* sock_q() - SIOCINQ / SIOCOUTQ / SIOCOUTQNSD value of a socket */
static long sock_q(int fd, unsigned long req)
{
	int v = 0;

	if (ioctl(fd, req, &v))
		die("ioctl(queue size)");
	return v;
}

/* clamp_get() - current TCP_WINDOW_CLAMP of a socket */
static long clamp_get(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &l))
		die("getsockopt(TCP_WINDOW_CLAMP)");
	return v;
}

/* clamp_set() - setsockopt(TCP_WINDOW_CLAMP), return 0 or -errno */
static int clamp_set(int fd, long v)
{
	int iv = (int)v;

	if (setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &iv, sizeof(iv)))
		return -errno;
	return 0;
}

/* sockopt_int() - setsockopt() of an int that must succeed */
static void sockopt_int(int fd, int level, int opt, int v, const char *name)
{
	if (setsockopt(fd, level, opt, &v, sizeof(v)))
		die("setsockopt(%s, %d)", name, v);
}

/* sockopt_get() - getsockopt() of an int */
static long sockopt_get(int fd, int level, int opt)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, level, opt, &v, &l))
		die("getsockopt(%d, %d)", level, opt);
	return v;
}

/* struct pcfg - buffer shape of a test connection (0: kernel default) */
struct pcfg {
	const char *name;
	long rcvbuf;		/* SO_RCVBUF on the receiver before connect() */
	long sndbuf;		/* SO_SNDBUF on the sender */
	const char *tcp_rmem;	/* per-netns sysctl to apply, NULL: keep */
	const char *tcp_wmem;
};

/* struct pair - one loopback TCP connection: ferry-like receiver, sender */
struct pair {
	int rcv;
	int snd;
};

/* pair_open() - connect a pair shaped by @c; both ends non-blocking */
static void pair_open(const struct pcfg *c, struct pair *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int l, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	p->rcv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || p->rcv < 0)
		die("socket(AF_INET, SOCK_STREAM)");
	if (c->sndbuf)
		sockopt_int(l, SOL_SOCKET, SO_SNDBUF, (int)c->sndbuf, "SO_SNDBUF");
	if (c->rcvbuf)
		sockopt_int(p->rcv, SOL_SOCKET, SO_RCVBUF, (int)c->rcvbuf, "SO_RCVBUF");
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		die("bind/listen on 127.0.0.1");
	if (connect(p->rcv, (struct sockaddr *)&a, sizeof(a)))
		die("connect to 127.0.0.1:%u", ntohs(a.sin_port));
	p->snd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (p->snd < 0)
		die("accept4");
	close(l);
	if (fcntl(p->rcv, F_SETFL, O_NONBLOCK) || fcntl(p->snd, F_SETFL, O_NONBLOCK))
		die("fcntl(O_NONBLOCK)");
	(void)one;
}

/* pair_close() - abort both ends (RST: no lingering data in TIME_WAIT) */
static void pair_close(struct pair *p)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(p->snd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	setsockopt(p->rcv, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(p->snd);
	close(p->rcv);
}

/* pump() - write from the sender until EAGAIN or @max bytes, return bytes */
static long pump(int fd, long max)
{
	long total = 0;

	while (total < max) {
		ssize_t n = send(fd, big, MIN((long)sizeof(big), max - total),
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				break;
			die("send");
		}
		total += n;
	}
	return total;
}

enum how {
	HOW_TRUNC,	/* MSG_PEEK, then recv(NULL, n, MSG_TRUNC): ferry */
	HOW_PLAIN,	/* ordinary recv() into a buffer: control */
};

/* consume() - remove up to @max queued bytes from the receiver, return count */
static long consume(int fd, enum how how, long max)
{
	long inq = MIN(sock_q(fd, SIOCINQ), max), total = 0;
	ssize_t n;

	if (inq <= 0)
		return 0;
	if (how == HOW_TRUNC) {
		n = recv(fd, big, MIN(inq, (long)sizeof(big)), MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			die("recv(MSG_PEEK)");
		n = recv(fd, NULL, inq, MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			die("recv(NULL, %ld, MSG_TRUNC)", inq);
		}
		return n;
	}
	while (total < inq) {
		n = recv(fd, big, MIN(inq - total, (long)sizeof(big)), MSG_DONTWAIT);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				die("recv");
			break;
		}
		total += n;
	}
	return total;
}

/* ------------------------------------------------------------------ */
/* Measurement primitives                                               */

/* struct sstat - what a streaming phase observed */
struct sstat {
	long bytes;		/* consumed by the receiver */
	uint32_t wmax;		/* max tcpi_snd_wnd seen by the sender */
	uint32_t wlast;		/* tcpi_snd_wnd at the end */
	double mbps;		/* MB/s (1e6) over the phase */
	double avg_seg;		/* sender bytes per data segment */
	int64_t max_gap_us;	/* longest time without progress */
};

/* stream() - bulk transfer for @ms while consuming with @how; the window
 * maximum is only sampled after @skip bytes or half of @ms (lets a shrinking
 * window settle).
 * If @clamp is non-zero, TCP_WINDOW_CLAMP is set to it after every read, as
 * ferry does on every window update from the guest.
 */
static void stream(struct pair *p, int ms, long skip, enum how how,
		   long clamp, struct sstat *s)
{
	int64_t t0 = now_us(), last = t0, t;
	struct ti a, b;
	struct pollfd pfd = { .fd = p->rcv, .events = POLLIN };

	memset(s, 0, sizeof(*s));
	ti_get(p->snd, &a);
	while ((t = now_us()) < t0 + ms * 1000L) {
		long n;

		pump(p->snd, LONG_MAX);
		n = consume(p->rcv, how, LONG_MAX);
		if (n > 0 && clamp && clamp_set(p->rcv, clamp))
			die("setsockopt(TCP_WINDOW_CLAMP, %ld) while streaming", clamp);
		if (n > 0) {
			s->max_gap_us = MAX(s->max_gap_us, t - last);
			last = t;
		} else {
			poll(&pfd, 1, 1);
		}
		s->bytes += n;
		if (s->bytes > skip || t > t0 + ms * 500L) {
			ti_get(p->snd, &b);
			s->wmax = MAX(s->wmax, b.i.tcpi_snd_wnd);
		}
	}
	s->max_gap_us = MAX(s->max_gap_us, now_us() - last);
	ti_get(p->snd, &b);
	s->wlast = b.i.tcpi_snd_wnd;
	s->mbps = s->bytes / (double)(now_us() - t0);
	if (b.i.tcpi_data_segs_out > a.i.tcpi_data_segs_out)
		s->avg_seg = (double)(b.i.tcpi_bytes_sent - a.i.tcpi_bytes_sent) /
			     (b.i.tcpi_data_segs_out - a.i.tcpi_data_segs_out);
}

/* fill_zero() - push without reading until the sender sees a zero window
 * with data still unsent, stable for 20 ms
 * Return: bytes queued at the receiver, -1 if no zero window within FILL_MS
 */
static long fill_zero(struct pair *p)
{
	int64_t end = now_us() + FILL_MS * 1000L, since = now_us();
	long last = -1;
	struct ti t;

	for (;;) {
		long inq, nsd;

		pump(p->snd, LONG_MAX);
		ti_get(p->snd, &t);
		inq = sock_q(p->rcv, SIOCINQ);
		nsd = sock_q(p->snd, SIOCOUTQNSD);
		if (t.i.tcpi_snd_wnd != 0 || nsd == 0 || inq != last)
			since = now_us();
		else if (now_us() - since >= 20000)
			return inq;
		last = inq;
		if (now_us() > end) {
			vlog("  fill: no zero window: snd_wnd %u inq %ld notsent %ld\n",
			     t.i.tcpi_snd_wnd, inq, nsd);
			return -1;
		}
		tick();
	}
}

/* opened() - did the window open: sender sees window, or data arrived? */
static int opened(struct pair *p, uint64_t rx0)
{
	struct ti s, r;

	ti_get(p->snd, &s);
	ti_get(p->rcv, &r);
	return s.i.tcpi_snd_wnd > 0 || r.i.tcpi_bytes_received > rx0;
}

/* wait_open() - poll until opened() or @ms passed since @t0
 * Return: microseconds from @t0 to opening, -1 on timeout
 */
static int64_t wait_open(struct pair *p, uint64_t rx0, int64_t t0, int ms)
{
	for (;;) {
		int64_t t = now_us();

		if (opened(p, rx0))
			return t - t0;
		if (t - t0 > ms * 1000L)
			return -1;
		tick();
	}
}

/* fmt_us() - latency or "never" into a static-per-call-site buffer */
static const char *fmt_us(char *buf, size_t len, int64_t us)
{
	if (us < 0)
		snprintf(buf, len, "never");
	else
		snprintf(buf, len, "%.3fms", us / 1000.0);
	return buf;
}

/* ------------------------------------------------------------------ */
/* Q1, Q2: mid-connection shrink and re-expansion                       */

static const struct pcfg shape_default = { .name = "default" };

/* struct phase - one step of the shrink/expand sequence */
struct phase {
	const char *name;
	long clamp;		/* value to set, 0: none */
	int reapply;		/* set again after every read (ferry style) */
};

/* shrink_expand() - run the phases on one connection of shape @pc; returns
 * the window maxima in @w[] and clamp read-backs in @rb[]
 */
static void shrink_expand(const struct pcfg *pc, const struct phase *ph,
			  size_t n, uint32_t *w, uint32_t *wl, long *rb)
{
	struct sstat s = { 0 };
	struct pair p;
	size_t i;

	pair_open(pc, &p);
	for (i = 0; i < n; i++) {
		long skip = 2L * s.wmax + 8 * MiB;	/* old right edge passed */

		if (ph[i].clamp && clamp_set(p.rcv, ph[i].clamp))
			die("setsockopt(TCP_WINDOW_CLAMP, %ld) mid-connection", ph[i].clamp);
		stream(&p, 300, skip, HOW_TRUNC, ph[i].reapply ? ph[i].clamp : 0, &s);
		w[i] = s.wmax;
		wl[i] = s.wlast;
		rb[i] = clamp_get(p.rcv);
	}
	pair_close(&p);
}

/* q_shrink_expand() - Q1/Q2: clamp a streaming connection, then raise it;
 * once with kernel autotuning, once with a locked (SO_RCVBUF) 2 MiB buffer
 */
static void q_shrink_expand(void)
{
	static const struct pcfg shapes[] = {
		{ .name = "autotuned" }, { .name = "SO_RCVBUF=2MiB", .rcvbuf = 2 * MiB },
	};
	const long c = MAX(64 * KiB, 4 * g_mss), hi = 64 * MiB;
	const struct phase ph[] = {
		{ "unclamped", 0, 0 },
		{ "clamp c, set once", c, 0 },
		{ "clamp c, re-set after each read", c, 1 },
		{ "raised to 64MiB once", hi, 0 },
		{ "clamp c again, re-set each read", c, 1 },
		{ "raised to 64MiB, re-set each read", hi, 1 },
	};
	const size_t n = sizeof(ph) / sizeof(ph[0]);
	uint32_t w[2][8], wl[2][8];
	long rb[2][8], lim = c + c / 8 + 1024;
	int k;

	printf("\n== Q1/Q2: TCP_WINDOW_CLAMP set mid-connection, c=%ld (consumer: PEEK+TRUNC) ==\n", c);
	printf("%-34s", "phase (300 ms each, in order)");
	for (k = 0; k < 2; k++) {
		shrink_expand(&shapes[k], ph, n, w[k], wl[k], rb[k]);
		printf(" | %-15s %9s %9s", shapes[k].name, "last wnd", "clamp rb");
	}
	printf("\n");
	for (size_t i = 0; i < n; i++) {
		printf("%-34s", ph[i].name);
		for (k = 0; k < 2; k++)
			printf(" | %15u %9u %9ld", w[k][i], wl[k][i], rb[k][i]);
		printf("\n");
	}
	printf("(columns: max snd_wnd seen by the sender after the window settled, snd_wnd at the end,\n"
	       " TCP_WINDOW_CLAMP read back at the end of the phase)\n");
	for (k = 0; k < 2; k++) {
		const char *t = k ? "locked" : "autotuned";

		printf("RESULT q1.%s clamp_shrinks_once=%s clamp_shrinks_reapplied=%s clamp_kept_once=%s\n",
		       t, w[k][1] <= lim ? "yes" : "no", w[k][2] <= lim ? "yes" : "no",
		       rb[k][1] == c ? "yes" : "no");
		printf("RESULT q1.%s clamp_reexpands=%s wnd=%u,%u,%u,%u,%u,%u\n", t,
		       w[k][3] > 4 * (uint32_t)c ? "yes" : "no", w[k][0], w[k][1],
		       w[k][2], w[k][3], w[k][4], w[k][5]);
	}
	printf("RESULT clamp_shrinks=%s\n", w[0][2] <= lim && w[1][2] <= lim ? "yes" : "no");
	printf("RESULT clamp_reexpands=%s\n",
	       w[0][3] > 4 * (uint32_t)c && w[1][3] > 4 * (uint32_t)c ? "yes" : "no");
}

/* q_queue_bound() - Q1b: does the clamp bound bytes queued at the receiver,
 * or only the window beyond the last byte received?  ferry keeps unacked data
 * queued, so this decides what value it must set.  The connection streams
 * 200 ms with the clamp re-applied after each read (window settles at the
 * clamp), then the receiver stops reading.
 */
static void q_queue_bound(void)
{
	static const long cs[] = { 64 * KiB, 256 * KiB, 1 * MiB };
	struct pair p;
	size_t i;
	int bounds = 1;

	printf("\n== Q1b: bytes queued at the receiver when it stops reading, clamp held ==\n");
	printf("%10s %14s %12s %12s\n", "clamp", "wnd streaming", "queued", "rcvbuf");
	for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		struct sstat s;
		long q;

		pair_open(&shape_default, &p);
		if (clamp_set(p.rcv, cs[i]))
			die("setsockopt(TCP_WINDOW_CLAMP, %ld)", cs[i]);
		stream(&p, 200, 8 * MiB, HOW_TRUNC, cs[i], &s);
		q = fill_zero(&p);
		printf("%10ld %14u %12ld %12ld\n", cs[i], s.wmax, q,
		       sockopt_get(p.rcv, SOL_SOCKET, SO_RCVBUF));
		printf("RESULT queue clamp=%ld wnd=%u queued=%ld\n", cs[i], s.wmax, q);
		if (q < 0 || q > cs[i] + cs[i] / 4)
			bounds = 0;
		pair_close(&p);
	}
	printf("RESULT clamp_bounds_queue=%s\n", bounds ? "yes" : "no");
}

/* ------------------------------------------------------------------ */
/* Q3, Q6, Q7: zero window                                              */

/* struct zcfg - one zero-window scenario */
struct zcfg {
	const char *name;
	enum how how;		/* how the queue is emptied */
	long clamp_before;	/* clamp set before data flows, 0: none */
	long clamp_at_zero;	/* clamp set while the window is zero, 0: none */
	long clamp_after;	/* clamp re-set after consuming, 0: none */
	int key;		/* the property ferry relies on */
	int warm;		/* stream 200 ms first (autotuned buffers) */
};

/* struct zres - what a zero-window scenario observed */
struct zres {
	long queued;		/* bytes queued when the window hit zero */
	int acks_consume;	/* segments the receiver sent during consume */
	int acks_after;		/* ... during the clamp re-set after it */
	int64_t open_us;	/* consume to open, -1: not within the waits */
	long flow;		/* bytes moved in 200 ms after opening */
	long rcv_wnd;		/* receiver's tcpi_rcv_wnd after, -1: n/a */
	long clamp_rb;		/* clamp read back at the end */
	long rcvbuf;		/* SO_RCVBUF when the window was zero */
};

/* zero_dump() - verbose: receiver state at zero window (-v) */
static void zero_dump(const char *name, struct pair *p)
{
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t l = sizeof(mi);
	struct ti t;

	if (!verbose)
		return;
	ti_get(p->rcv, &t);
	getsockopt(p->rcv, SOL_SOCKET, SO_MEMINFO, mi, &l);
	vlog("  %s at zero: inq %ld rcv_wnd %u rcv_ssthresh %u rcv_space %u clamp %ld"
	     " rmem_alloc %u rcvbuf %u fwd_alloc %u backlog %u drops %u\n", name,
	     sock_q(p->rcv, SIOCINQ), t.rcv_wnd, t.i.tcpi_rcv_ssthresh,
	     t.i.tcpi_rcv_space, clamp_get(p->rcv), mi[SK_MEMINFO_RMEM_ALLOC],
	     mi[SK_MEMINFO_RCVBUF], mi[SK_MEMINFO_FWD_ALLOC], mi[SK_MEMINFO_BACKLOG],
	     mi[SK_MEMINFO_DROPS]);
}

/* zero_run() - fill to zero window, empty the queue, watch it re-open */
static void zero_run(const struct pcfg *pc, const struct zcfg *z, struct zres *r)
{
	struct ti a, b;
	struct sstat s;
	struct pair p;
	int64_t t0;

	memset(r, 0, sizeof(*r));
	pair_open(pc, &p);
	if (z->clamp_before && clamp_set(p.rcv, z->clamp_before))
		die("setsockopt(TCP_WINDOW_CLAMP, %ld)", z->clamp_before);
	if (z->warm)
		stream(&p, 200, 0, z->how, z->clamp_before, &s);
	r->queued = fill_zero(&p);
	r->rcvbuf = sockopt_get(p.rcv, SOL_SOCKET, SO_RCVBUF);
	zero_dump(z->name, &p);
	if (z->clamp_at_zero && clamp_set(p.rcv, z->clamp_at_zero))
		die("setsockopt(TCP_WINDOW_CLAMP, %ld) at zero window", z->clamp_at_zero);
	ti_get(p.rcv, &a);
	t0 = now_us();
	if (consume(p.rcv, z->how, LONG_MAX) != r->queued && r->queued >= 0)
		vlog("  %s: consumed less than queued\n", z->name);
	ti_get(p.rcv, &b);
	r->acks_consume = (int)(b.i.tcpi_segs_out - a.i.tcpi_segs_out);
	if (z->clamp_after && clamp_set(p.rcv, z->clamp_after))
		die("setsockopt(TCP_WINDOW_CLAMP, %ld) after consume", z->clamp_after);
	ti_get(p.rcv, &a);
	r->acks_after = (int)(a.i.tcpi_segs_out - b.i.tcpi_segs_out);
	r->rcv_wnd = a.has_rcv_wnd ? (long)a.rcv_wnd : -1;
	r->open_us = wait_open(&p, b.i.tcpi_bytes_received, t0,
			       PROMPT_MS + EVENTUAL_MS);
	stream(&p, 200, 0, z->how, 0, &s);
	r->flow = s.bytes;
	r->clamp_rb = clamp_get(p.rcv);
	pair_close(&p);
}

/* zero_scenarios() - the zero-window scenario list for clamp value @c */
static size_t zero_scenarios(long c, struct zcfg *z)
{
	const struct zcfg list[] = {
		{ "plain recv, no clamp (control)", HOW_PLAIN, 0, 0, 0, 0, 0 },
		{ "plain recv, clamp c",            HOW_PLAIN, c, 0, 0, 0, 0 },
		{ "TRUNC, no clamp",                HOW_TRUNC, 0, 0, 0, 0, 0 },
		{ "TRUNC, clamp c",                 HOW_TRUNC, c, 0, 0, 0, 0 },
		{ "TRUNC, clamp c, re-set c after", HOW_TRUNC, c, 0, c, 1, 0 },
		{ "TRUNC, no clamp, set c after",   HOW_TRUNC, 0, 0, c, 0, 0 },
		{ "clamp c, re-set c at zero",      HOW_TRUNC, c, c, 0, 0, 0 },
		{ "no clamp, set c at zero",        HOW_TRUNC, 0, c, 0, 0, 0 },
		{ "clamp c, set c/2 at zero",       HOW_TRUNC, c, c / 2, 0, 0, 0 },
		{ "clamp c, set 4c at zero",        HOW_TRUNC, c, 4 * c, 0, 0, 0 },
		{ "warm: TRUNC, no clamp",          HOW_TRUNC, 0, 0, 0, 0, 1 },
		{ "warm: TRUNC, clamp c",           HOW_TRUNC, c, 0, 0, 0, 1 },
		{ "warm: TRUNC, clamp c, re-set c", HOW_TRUNC, c, 0, c, 1, 1 },
	};

	memcpy(z, list, sizeof(list));
	return sizeof(list) / sizeof(list[0]);
}

/* zero_tally() - fold one zero-window run into the global verdicts */
static void zero_tally(const struct zcfg *z, const struct zres *r, int prompt)
{
	int updated = r->queued >= 0 && prompt && r->acks_consume > 0;

	if (z->clamp_at_zero) {
		if (!prompt || r->flow <= 0)
			g_zero_locks = 1;
		return;
	}
	if (z->clamp_after && r->acks_after > 0)
		g_reset_sends = 1;
	if (z->how == HOW_PLAIN && !updated)
		g_plain_updates = 0;
	if (z->how == HOW_TRUNC && !updated)
		g_trunc_updates = 0;
}

/* q_zero() - Q3/Q6 (and Q7 per shape): run all zero-window scenarios */
static void q_zero(const struct pcfg *pc, const char *tag)
{
	const long c = MAX(64 * KiB, 4 * g_mss);
	struct zcfg z[16];
	size_t i, n = zero_scenarios(c, z);
	int key_ok = 1;

	printf("\n== zero window, shape %s, c=%ld ==\n", pc->name, c);
	printf("%-32s %7s %7s %4s %4s %10s %9s %8s %8s\n", "scenario", "rcvbuf",
	       "queued", "ackC", "ackS", "reopen", "flow KiB", "rcv_wnd", "clamp");
	for (i = 0; i < n; i++) {
		struct zres r;
		char buf[32];
		int prompt;

		zero_run(pc, &z[i], &r);
		prompt = r.open_us >= 0 && r.open_us <= PROMPT_MS * 1000L;
		printf("%-32s %7ld %7ld %4d %4d %10s %9ld %8ld %8ld\n", z[i].name,
		       r.rcvbuf, r.queued, r.acks_consume, r.acks_after,
		       fmt_us(buf, sizeof(buf), r.open_us), r.flow / KiB,
		       r.rcv_wnd, r.clamp_rb);
		printf("RESULT %s.z%zu reached_zero=%s reopen_prompt=%s reopen_us=%lld update_on_consume=%s flows_after=%s\n",
		       tag, i, r.queued >= 0 ? "yes" : "no", prompt ? "yes" : "no",
		       (long long)r.open_us, r.acks_consume > 0 ? "yes" : "no",
		       r.flow > 0 ? "yes" : "no");
		if (z[i].key && (r.queued < 0 || !prompt || r.flow <= 0))
			key_ok = 0;
		zero_tally(&z[i], &r, prompt);
	}
	printf("(ackC/ackS: segments the receiver sent during the consuming recv() / the clamp re-set;\n"
	       " reopen: time from consume to sender seeing a window or new data arriving)\n");
	printf("RESULT %s.trunc_reset_reopens=%s\n", tag, key_ok ? "yes" : "no");
	if (!key_ok)
		all_reopen_ok = 0;
}

/* ------------------------------------------------------------------ */
/* Q4: persistence                                                      */

/* small_msgs() - @n small writes, each consumed: varies skb len/truesize */
static void small_msgs(struct pair *p, int n)
{
	int i;

	sockopt_int(p->snd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	for (i = 0; i < n; i++) {
		int64_t end = now_us() + 1000000;

		if (send(p->snd, big, 100 + i, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    errno != EAGAIN)
			die("send small");
		while (!consume(p->rcv, HOW_TRUNC, LONG_MAX) && now_us() < end)
			tick();
	}
}

/* q_persist() - Q4: read the clamp back after traffic and autotuning */
static void q_persist(void)
{
	static const struct pcfg shapes[] = {
		{ .name = "default" },
		{ .name = "SO_RCVBUF=64KiB", .rcvbuf = 64 * KiB },
		{ .name = "SO_RCVBUF=2MiB", .rcvbuf = 2 * MiB },
	};
	static const char *const tags[] = { "default", "rcvbuf64k", "rcvbuf2m" };
	const long c = 100000;
	size_t i;
	int persists = 1;

	printf("\n== Q4: does a clamp persist? (set %ld after connect, read back) ==\n", c);
	printf("%-16s %8s %8s %9s %12s %9s\n", "shape", "set", "1st data",
	       "bulk", "re-set,bulk", "small");
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		long v[5];
		struct sstat s;
		struct pair p;

		pair_open(&shapes[i], &p);
		if (clamp_set(p.rcv, c))
			die("setsockopt(TCP_WINDOW_CLAMP, %ld)", c);
		v[0] = clamp_get(p.rcv);
		small_msgs(&p, 1);
		v[1] = clamp_get(p.rcv);
		stream(&p, 300, 0, HOW_TRUNC, 0, &s);
		v[2] = clamp_get(p.rcv);
		if (clamp_set(p.rcv, c))
			die("setsockopt(TCP_WINDOW_CLAMP, %ld)", c);
		stream(&p, 300, 0, HOW_TRUNC, 0, &s);
		v[3] = clamp_get(p.rcv);
		small_msgs(&p, 50);
		v[4] = clamp_get(p.rcv);
		pair_close(&p);
		printf("%-16s %8ld %8ld %9ld %12ld %9ld\n", shapes[i].name,
		       v[0], v[1], v[2], v[3], v[4]);
		printf("RESULT persist.%s set=%ld first_data=%ld bulk=%ld reset_bulk=%ld small=%ld\n",
		       tags[i], v[0], v[1], v[2], v[3], v[4]);
		if (v[0] != c || v[1] != c || v[2] != c || v[3] != c || v[4] != c)
			persists = 0;
	}
	printf("RESULT clamp_persists=%s\n", persists ? "yes" : "no");
}

/* ------------------------------------------------------------------ */
/* Q5: minimum clamp, throughput at small clamps                        */

/* cmp_long() - qsort() comparison for longs */
static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* tput_run() - stream 250 ms with clamp @c (0: none) re-set after every
 * read; if @warm, first stream 200 ms unclamped so autotuning settles
 */
static void tput_run(long c, int warm, struct sstat *s)
{
	struct sstat w = { 0 };
	struct pair p;

	pair_open(&shape_default, &p);
	if (warm)
		stream(&p, 200, 0, HOW_TRUNC, 0, &w);
	if (c && clamp_set(p.rcv, c))
		die("setsockopt(TCP_WINDOW_CLAMP, %ld)", c);
	stream(&p, 250, 2L * w.wmax + 1 * MiB, HOW_TRUNC, c, s);
	pair_close(&p);
}

/* q_minimum() - Q5: smallest accepted clamp and throughput vs clamp size */
static void q_minimum(void)
{
	static const long probe[] = { 1, 256, 1024, 2048, 4096 };
	long sizes[10], mss, minc = 0;
	struct pair p;
	size_t i, n = 0;

	pair_open(&shape_default, &p);
	printf("\n== Q5: minimum clamp (set on a connected socket, read back) ==\n");
	for (i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
		int rc = clamp_set(p.rcv, probe[i]);

		printf("set %6ld -> %s%ld\n", probe[i], rc ? "error " : "read back ",
		       rc ? (long)-rc : clamp_get(p.rcv));
		if (i == 0 && !rc)
			minc = clamp_get(p.rcv);
	}
	printf("set      0 -> %s\n", clamp_set(p.rcv, 0) ? "error (EINVAL expected)" : "accepted");
	mss = g_mss;
	pair_close(&p);
	printf("RESULT min_clamp=%ld\n", minc);

	sizes[n++] = minc;
	sizes[n++] = mss / 2;
	sizes[n++] = mss;
	sizes[n++] = 2 * mss;
	sizes[n++] = 4 * mss;
	sizes[n++] = 64 * KiB;
	sizes[n++] = 256 * KiB;
	qsort(sizes, n, sizeof(sizes[0]), cmp_long);
	sizes[n++] = 0;
	printf("\nthroughput vs clamp, PEEK+TRUNC consumer, clamp re-set after every read, mss=%ld\n"
	       "cold: clamp set right after connect; warm: set after 200 ms unclamped streaming\n", mss);
	printf("%10s | %9s %11s %9s | %9s %11s %9s %9s\n", "clamp", "cold MB/s", "max wnd",
	       "gap ms", "warm MB/s", "max wnd", "gap ms", "avg seg");
	for (i = 0; i < n; i++) {
		struct sstat c, w;

		tput_run(sizes[i], 0, &c);
		tput_run(sizes[i], 1, &w);
		printf("%10ld | %9.1f %11u %9.1f | %9.1f %11u %9.1f %9.0f\n", sizes[i],
		       c.mbps, c.wmax, c.max_gap_us / 1000.0, w.mbps, w.wmax,
		       w.max_gap_us / 1000.0, w.avg_seg);
		printf("RESULT tput clamp=%ld cold_mbps=%.1f cold_wnd=%u cold_gap_ms=%.1f warm_mbps=%.1f warm_wnd=%u warm_gap_ms=%.1f\n",
		       sizes[i], c.mbps, c.wmax, c.max_gap_us / 1000.0, w.mbps, w.wmax,
		       w.max_gap_us / 1000.0);
	}
}

/* ------------------------------------------------------------------ */
/* Q7: seed shapes                                                      */

/* sysctl_swap() - write @val to a sysctl, saving the old value in @old */
static int sysctl_swap(const char *path, const char *val, char *old, size_t len)
{
	if (read_file(path, old, len))
		return -1;
	return write_file(path, val);
}

/* q_shapes() - Q7: zero-window scenarios under the seed buffer shapes */
static void q_shapes(void)
{
	static const struct pcfg shapes[] = {
		{ .name = "tcp_rmem max 256KiB, tcp_wmem max 16MiB (160KiB stall)",
		  .tcp_rmem = "4096 131072 262144", .tcp_wmem = "4096 16384 16777216" },
		{ .name = "SO_RCVBUF 256KiB, tcp_wmem max 16MiB (rmem_max=256K + SO_RCVBUF=max)",
		  .rcvbuf = 256 * KiB, .tcp_wmem = "4096 16384 16777216" },
		{ .name = "SO_RCVBUF 128KiB, tcp_wmem max 16MiB (trickle stall)",
		  .rcvbuf = 128 * KiB, .tcp_wmem = "4096 16384 16777216" },
	};
	static const char *const tags[] = { "shape_rmem256k", "shape_rcvbuf256k", "shape_rcvbuf128k" };
	const char *rm = "/proc/sys/net/ipv4/tcp_rmem", *wm = "/proc/sys/net/ipv4/tcp_wmem";
	char old_r[128], old_w[128], cur[128];
	size_t i;

	if (write_file("/proc/sys/net/core/rmem_max", "262144")) {
		printf("\nnet.core.rmem_max not writable here (%s): it is not per-netns;"
		       " using net.ipv4.tcp_rmem and SO_RCVBUFFORCE instead\n", strerror(errno));
		printf("RESULT rmem_max_writable=no\n");
	} else {
		printf("RESULT rmem_max_writable=yes (not used: it would change the host)\n");
	}
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct pcfg *s = &shapes[i];

		if (sysctl_swap(rm, s->tcp_rmem ? s->tcp_rmem : "4096 131072 6291456",
				old_r, sizeof(old_r)) ||
		    sysctl_swap(wm, s->tcp_wmem, old_w, sizeof(old_w)))
			die("write net.ipv4.tcp_rmem/tcp_wmem in the private netns");
		if (!read_file(rm, cur, sizeof(cur)))
			printf("\nnet.ipv4.tcp_rmem: %s", cur);
		if (!read_file(wm, cur, sizeof(cur)))
			printf(", net.ipv4.tcp_wmem: %s\n", cur);
		q_zero(s, tags[i]);
		if (write_file(rm, old_r) || write_file(wm, old_w))
			die("restore net.ipv4.tcp_rmem/tcp_wmem");
	}
}

/* ------------------------------------------------------------------ */
/* Q8: ferry-style forwarding loop                                      */

/* struct fres - what a ferry-style forwarding run observed */
struct fres {
	double mbps;		/* MB/s delivered to the emulated guest */
	int64_t max_gap_us;	/* longest time without any guest ack */
	int stalls;		/* gaps longer than 100 ms */
};

/* ferry_loop() - emulate ferry forwarding host -> guest for @ms: the guest
 * has a constant window @gwnd and acknowledges everything one loop iteration
 * after it was sent (peeked); acked bytes are dropped with MSG_TRUNC; if
 * @clamp is non-zero, TCP_WINDOW_CLAMP is set to it after every guest ack
 */
static void ferry_loop(const struct pcfg *pc, long gwnd, long clamp, int ms,
		       struct fres *r)
{
	struct pollfd pfd;
	int64_t t0, t, last;
	long inflight = 0, bytes = 0;
	struct pair p;

	memset(r, 0, sizeof(*r));
	pair_open(pc, &p);
	pfd = (struct pollfd){ .fd = p.rcv, .events = POLLIN };
	if (clamp && clamp_set(p.rcv, clamp))
		die("setsockopt(TCP_WINDOW_CLAMP, %ld)", clamp);
	t0 = last = now_us();
	while ((t = now_us()) < t0 + ms * 1000L) {
		long inq;

		pump(p.snd, LONG_MAX);
		if (inflight) {		/* guest acked what it got last round */
			ssize_t n = recv(p.rcv, NULL, inflight, MSG_TRUNC | MSG_DONTWAIT);

			if (n < 0)
				die("recv(NULL, %ld, MSG_TRUNC)", inflight);
			inflight -= n;
			bytes += n;
			if (t - last > 100000)
				r->stalls++;
			r->max_gap_us = MAX(r->max_gap_us, t - last);
			last = t;
			if (clamp && clamp_set(p.rcv, clamp))
				die("setsockopt(TCP_WINDOW_CLAMP, %ld)", clamp);
		}
		inq = sock_q(p.rcv, SIOCINQ);
		inq = MIN(MIN(inq, gwnd), (long)sizeof(big));
		if (inq > inflight) {	/* "send" new data to the guest */
			if (recv(p.rcv, big, inq, MSG_PEEK | MSG_DONTWAIT) != inq)
				die("recv(MSG_PEEK, %ld)", inq);
			inflight = inq;
		} else {
			poll(&pfd, 1, 1);
		}
	}
	t = now_us();
	if (t - last > 100000)
		r->stalls++;
	r->max_gap_us = MAX(r->max_gap_us, t - last);
	r->mbps = bytes / (double)(t - t0);
	pair_close(&p);
}

/* q_ferry_loop() - Q8: forwarding loop in every shape, with and without clamp */
static void q_ferry_loop(void)
{
	static const struct pcfg shapes[] = {
		{ .name = "default" },
		{ .name = "tcp_rmem max 256KiB", .tcp_rmem = "4096 131072 262144" },
		{ .name = "SO_RCVBUF 256KiB", .rcvbuf = 256 * KiB },
		{ .name = "SO_RCVBUF 128KiB", .rcvbuf = 128 * KiB },
	};
	const long gw[] = { 64 * KiB, 1 * MiB }, floor = 4 * g_mss;
	const char *rm = "/proc/sys/net/ipv4/tcp_rmem", *wm = "/proc/sys/net/ipv4/tcp_wmem";
	char old_r[128], old_w[128];
	size_t i, j, m;
	int stall_none = 0, stall_floor = 0, stall_raw = 0;

	printf("\n== Q8: ferry-style loop (PEEK, guest acks next round, MSG_TRUNC), 300 ms, floor=4*MSS=%ld ==\n", floor);
	printf("%-22s %8s %-14s %10s %12s %7s\n", "shape", "guest wnd", "clamp", "MB/s",
	       "max gap ms", "stalls");
	if (sysctl_swap(wm, "4096 16384 16777216", old_w, sizeof(old_w)))
		die("write net.ipv4.tcp_wmem in the private netns");
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		if (shapes[i].tcp_rmem && sysctl_swap(rm, shapes[i].tcp_rmem, old_r, sizeof(old_r)))
			die("write net.ipv4.tcp_rmem in the private netns");
		for (j = 0; j < sizeof(gw) / sizeof(gw[0]); j++) {
			const long cl[] = { 0, gw[j], MAX(gw[j], floor) };
			static const char *const cn[] = { "none", "guest wnd", "max(wnd,floor)" };

			for (m = 0; m < 3; m++) {
				struct fres r;

				ferry_loop(&shapes[i], gw[j], cl[m], 300, &r);
				printf("%-22s %8ld %-14s %10.1f %12.1f %7d\n", shapes[i].name,
				       gw[j], cn[m], r.mbps, r.max_gap_us / 1000.0, r.stalls);
				printf("RESULT loop shape=%zu gwnd=%ld clamp=%ld mbps=%.1f max_gap_ms=%.1f stalls=%d\n",
				       i, gw[j], cl[m], r.mbps, r.max_gap_us / 1000.0, r.stalls);
				*(m == 0 ? &stall_none : m == 1 ? &stall_raw : &stall_floor) += r.stalls;
			}
		}
		if (shapes[i].tcp_rmem && write_file(rm, old_r))
			die("restore net.ipv4.tcp_rmem");
	}
	if (write_file(wm, old_w))
		die("restore net.ipv4.tcp_wmem");
	printf("(stall: more than 100 ms without the guest receiving anything)\n");
	printf("RESULT loop_stalls_noclamp=%d loop_stalls_clamp_guest_wnd=%d loop_stalls_clamp_floor=%d\n",
	       stall_none, stall_raw, stall_floor);
}

/* ------------------------------------------------------------------ */
/* Q9: a "stop" clamp below one segment while the receiver pauses      */

#define STOP_WARM_MS	300	/* unclamped streaming before the pause */
#define STOP_RESUME_MS	1500	/* observation after the resume */
#define STOP_SLOT_US	10000	/* rate slots after the resume */
#define STOP_SETTLE_MS	2000	/* deadline for the pause's first arrivals */
#define STOP_RAMP_BYTES	(16 * MiB)	/* "back at speed" after the resume */

/* struct stcfg - one stop/resume scenario */
struct stcfg {
	const char *name;
	long clamp;		/* stop clamp set at the pause, 0: none */
	int fill_first;		/* pause until a real zero window, then clamp */
	int pause_ms;
};

/* struct stres - what a stop/resume scenario observed */
struct stres {
	long q0, q1;		/* queue once settled, at the pause's end */
	double settle_ms;	/* time to settle (no arrival for 100 ms) */
	int arrivals;		/* growth events of the queue after 50 ms */
	long amin, amax;	/* their sizes */
	double aivl_ms;		/* mean interval between them */
	uint32_t mss_end;	/* receiver tcpi_rcv_mss at the end of the pause */
	uint32_t ssth_end;	/* receiver tcpi_rcv_ssthresh then */
	unsigned int backoff;	/* sender tcpi_backoff then */
	unsigned int probes;	/* sender tcpi_probes then */
	uint32_t ssth_res;	/* receiver rcv_ssthresh right after the resume */
	int64_t first_us;	/* resume to the first new byte, -1: never */
	int64_t rate_us;	/* resume to STOP_RAMP_BYTES received */
	double warm_mbps;
	double best_mbps;	/* best 50 ms window after the resume */
};

/* stop_pause() - the pause of @c on @p: stop consuming, keep the sender
 * pumping, set the stop clamp (after a real zero window with fill_first),
 * and watch the receiver's queue grow for the pause */
static void stop_pause(struct pair *p, const struct stcfg *c, struct stres *r)
{
	int64_t t0, t, last_arr = 0, ivl = 0;
	long last;
	struct ti s, q;

	if (c->fill_first && fill_zero(p) < 0)
		vlog("  stop: no zero window before the clamp\n");
	if (c->clamp && clamp_set(p->rcv, c->clamp))
		die("setsockopt(TCP_WINDOW_CLAMP, %ld) at the pause", c->clamp);
	/* Settle: the right edge advertised before the clamp is never taken
	 * back, so what it admits arrives first; growth counts from the
	 * first 100 ms without an arrival (deadline STOP_SETTLE_MS). */
	t0 = last_arr = now_us();
	last = sock_q(p->rcv, SIOCINQ);
	while ((t = now_us()) < t0 + STOP_SETTLE_MS * 1000L &&
	       t < last_arr + 100000) {
		long inq;

		pump(p->snd, LONG_MAX);
		if ((inq = sock_q(p->rcv, SIOCINQ)) != last)
			last_arr = t;
		last = inq;
		tick();
	}
	r->settle_ms = (t - t0) / 1000.0;
	r->q0 = last;
	last_arr = 0;
	t0 = now_us();
	r->amin = LONG_MAX;
	while ((t = now_us()) < t0 + c->pause_ms * 1000L) {
		long inq;

		pump(p->snd, LONG_MAX);
		inq = sock_q(p->rcv, SIOCINQ);
		if (inq > last) {
			r->arrivals++;
			r->amin = MIN(r->amin, inq - last);
			r->amax = MAX(r->amax, inq - last);
			if (last_arr)
				ivl += t - last_arr;
			last_arr = t;
		}
		last = inq;
		tick();
	}
	r->q1 = last;
	if (r->arrivals > 1)
		r->aivl_ms = ivl / 1000.0 / (r->arrivals - 1);
	if (!r->arrivals)
		r->amin = 0;
	ti_get(p->rcv, &q);
	ti_get(p->snd, &s);
	r->mss_end = q.i.tcpi_rcv_mss;
	r->ssth_end = q.i.tcpi_rcv_ssthresh;
	r->backoff = s.i.tcpi_backoff;
	r->probes = s.i.tcpi_probes;
}

/* stop_resume() - the resume, as ferry does it: consume everything
 * (MSG_TRUNC), then raise the clamp; then stream and time the first new
 * byte and STOP_RAMP_BYTES (at GB/s a few ms once the window is open:
 * a rate comparison is too noisy on a shared machine); the best 50 ms
 * window's rate is kept for the table */
static void stop_resume(struct pair *p, struct stres *r)
{
	long slots[STOP_RESUME_MS * 1000L / STOP_SLOT_US] = { 0 };
	size_t ns = sizeof(slots) / sizeof(slots[0]), i, w = 50000 / STOP_SLOT_US;
	long got = 0;
	int64_t t0, t;
	uint64_t rx0;
	struct ti q;

	ti_get(p->rcv, &q);
	rx0 = q.i.tcpi_bytes_received;
	t0 = now_us();
	while (consume(p->rcv, HOW_TRUNC, LONG_MAX) > 0)
		;
	if (clamp_set(p->rcv, 64 * MiB))
		die("setsockopt(TCP_WINDOW_CLAMP) at the resume");
	ti_get(p->rcv, &q);
	r->ssth_res = q.i.tcpi_rcv_ssthresh;
	r->first_us = r->rate_us = -1;
	while ((t = now_us()) < t0 + STOP_RESUME_MS * 1000L) {
		long n;

		pump(p->snd, LONG_MAX);
		n = consume(p->rcv, HOW_TRUNC, LONG_MAX);
		slots[MIN((size_t)((t - t0) / STOP_SLOT_US), ns - 1)] += n;
		if (r->first_us < 0) {
			ti_get(p->rcv, &q);
			if (q.i.tcpi_bytes_received > rx0)
				r->first_us = t - t0;
		}
		if (!n)
			tick();
	}
	for (i = 0; i < ns && r->rate_us < 0; i++) {
		got += slots[i];
		if (got >= STOP_RAMP_BYTES)
			r->rate_us = (int64_t)(i + 1) * STOP_SLOT_US;
	}
	for (i = 0; i + w <= ns; i++) {
		long sum = 0;
		size_t j;

		for (j = i; j < i + w; j++)
			sum += slots[j];
		r->best_mbps = MAX(r->best_mbps, sum / (double)(w * STOP_SLOT_US));
	}
}

/* stop_run() - one scenario: warm up, pause with the stop clamp, resume */
static void stop_run(const struct stcfg *c, struct stres *r)
{
	struct sstat w;
	struct pair p;

	memset(r, 0, sizeof(*r));
	pair_open(&shape_default, &p);
	stream(&p, STOP_WARM_MS, 0, HOW_TRUNC, 0, &w);
	r->warm_mbps = w.mbps;
	stop_pause(&p, c, r);
	stop_resume(&p, r);
	pair_close(&p);
}

/* q_stop() - Q9: can a clamp below one segment hold a paused receiver's
 * queue, and how fast does the sender come back when it is raised? */
static void q_stop(void)
{
	long seg = g_mss, unit, third, below;
	struct stcfg sc[8];
	struct pair p;
	struct ti t;
	size_t i, n = 0;
	char b1[32], b2[32];

	pair_open(&shape_default, &p);
	ti_get(p.rcv, &t);
	pair_close(&p);
	unit = 1L << t.i.tcpi_rcv_wscale;
	third = ((seg + 40) / 3 + unit) / unit * unit;
	below = (seg - 40) / unit * unit;
	printf("\n== Q9: stop clamp while the receiver pauses, then resume ==\n"
	       "segment %ld, window scale unit %ld; pause: no reads, sender keeps"
	       " writing; resume: MSG_TRUNC everything, clamp 64 MiB\n", seg, unit);
	sc[n++] = (struct stcfg){ "no clamp (buffer fills)", 0, 0, 1000 };
	sc[n++] = (struct stcfg){ "kernel minimum", 1152, 0, 1000 };
	if (third < below)
		sc[n++] = (struct stcfg){ "a third of a segment", third, 0, 1000 };
	if (below >= 1152)
		sc[n++] = (struct stcfg){ "just below a segment", below, 0, 1000 };
	sc[n++] = (struct stcfg){ "one segment", seg, 0, 1000 };
	if (third < below) {
		sc[n++] = (struct stcfg){ "a third, 5 s pause", third, 0, 5000 };
		sc[n++] = (struct stcfg){ "a third, set at zero window", third, 1, 1000 };
	}
	printf("%-28s %8s | %7s %9s %9s %4s %13s %6s | %6s %8s %2s | %8s %10s %10s %11s\n",
	       "scenario", "clamp", "settle", "queue", "growth", "arr", "sizes",
	       "ivl ms", "rcvmss", "ssthresh", "bo", "ssth res", "1st byte",
	       "16 MiB", "MB/s w/r");
	for (i = 0; i < n; i++) {
		struct stres r;

		stop_run(&sc[i], &r);
		printf("%-28s %8ld | %5.0fms %9ld %9ld %4d %6ld-%-6ld %6.1f | %6u %8u %2u | %8u %10s %10s %5.0f/%-5.0f\n",
		       sc[i].name, sc[i].clamp, r.settle_ms, r.q0, r.q1 - r.q0,
		       r.arrivals, r.amin, r.amax, r.aivl_ms, r.mss_end, r.ssth_end,
		       r.backoff, r.ssth_res, fmt_us(b1, sizeof(b1), r.first_us),
		       fmt_us(b2, sizeof(b2), r.rate_us), r.warm_mbps, r.best_mbps);
		printf("RESULT stop clamp=%ld fill_first=%d pause_ms=%d growth=%ld arrivals=%d"
		       " probe_ivl_ms=%.1f rcv_mss=%u backoff=%u probes=%u first_byte_us=%lld ramp16m_us=%lld\n",
		       sc[i].clamp, sc[i].fill_first, sc[i].pause_ms, r.q1 - r.q0,
		       r.arrivals, r.aivl_ms, r.mss_end, r.backoff, r.probes,
		       (long long)r.first_us, (long long)r.rate_us);
	}
}

/* probe_mss() - MSS the sender uses on this loopback */
static long probe_mss(void)
{
	struct pair p;
	struct ti t;

	pair_open(&shape_default, &p);
	ti_get(p.snd, &t);
	pair_close(&p);
	return t.i.tcpi_advmss;
}

/* main() - parse options, isolate, run every question, set exit status */
int main(int argc, char **argv)
{
	struct utsname u;
	int opt, mtu = 0, noisolate = 0;
	const char *only = "12345789";
	time_t now = time(NULL);

	while ((opt = getopt(argc, argv, "m:nt:v")) != -1) {
		switch (opt) {
		case 'm': mtu = atoi(optarg); break;
		case 't': only = optarg; break;
		case 'n': noisolate = 1; break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: %s [-m MTU] [-n] [-t QUESTIONS] [-v]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(big, 'x', sizeof(big));
	if (!noisolate)
		isolate();
	uname(&u);
	printf("wclamp: kernel %s %s, %s", u.release, u.machine, ctime(&now));
	printf("RESULT kernel=%s\n", u.release);
	lo_up(mtu);
	g_mss = probe_mss();
	printf("sender MSS: %ld\nRESULT mss=%ld\n", g_mss, g_mss);

	if (strchr(only, '1'))
		q_shrink_expand();
	if (strchr(only, '2'))
		q_queue_bound();
	if (strchr(only, '4'))
		q_persist();
	if (strchr(only, '5'))
		q_minimum();
	if (strchr(only, '3')) {
		printf("\n== Q3/Q6: zero window, kernel default buffers ==");
		q_zero(&shape_default, "shape_default");
	}
	if (strchr(only, '7'))
		q_shapes();
	if (strchr(only, '8'))
		q_ferry_loop();
	if (strchr(only, '9'))
		q_stop();

	if (strchr(only, '3') || strchr(only, '7')) {
		printf("\nRESULT trunc_sends_window_update=%s\n", g_trunc_updates ? "yes" : "no");
		printf("RESULT plain_recv_sends_window_update=%s\n", g_plain_updates ? "yes" : "no");
		printf("RESULT clamp_reset_sends_segment=%s\n", g_reset_sends ? "yes" : "no");
		printf("RESULT clamp_at_zero_locks=%s\n", g_zero_locks ? "yes" : "no");
	}
	printf("RESULT trunc_reset_reopens=%s\n", all_reopen_ok ? "yes" : "no");
	return all_reopen_ok ? 0 : 1;
}
