/* log.c - log sinks and formatting (see log.h).
 *
 * Theory of operation
 *
 * Messages go to stderr by default; after daemonizing without -l, to
 * syslog. With -l they go to a file, in the layout pasta's users know:
 *
 *   ferry 0.13-g1a2b3c4: /var/log/ferry.log (4242)     the header line
 *   0.0012: info: IPv4: template interface eth0, ...   then every line
 *
 * Each line starts with the seconds since the log was opened (CLOCK_MONOTONIC,
 * four decimals, so they never go back, across rotations too) and the
 * level. The header names the version, the path and the PID of the
 * process that writes (rewritten in place after daemonizing: the PID field
 * is padded to a fixed width, so the line keeps its length).
 *
 * --log-size bounds the file. When the next line would pass the bound,
 * the oldest lines go: the newest three quarters of the bound stay, moved
 * up to just after the header (in place, through one static buffer, cut at
 * a line boundary), and writing goes on after them. So the file always
 * holds the header and the newest lines, never more than the bound, and a
 * long-running daemon cannot fill a disk. Everything works on the open
 * descriptor: nothing is reopened by path (ferry's root may be empty by
 * then, see the sandbox).
 *
 * syslog. A daemon without -l logs to the system log, ferry's own way
 * rather than through syslog(3): /dev/log is connected once, at start-up
 * (the path is out of reach once confined, and syslog(3) would reconnect
 * by path, and before glibc 2.37 malloc() a buffer for every message),
 * and each line is one "<PRI>ferry[PID]: text" datagram (RFC 3164's
 * form; the syslog daemon stamps the time) sent without blocking: a full
 * queue never stalls the loop, the lines lost are counted and the next
 * line that gets through says how many.
 *
 * Per-flow lines (flow_log.c, --debug; per segment, --trace) pass a
 * token bucket first (log_flow_ok()): LOG_FLOW_BURST lines at once, then
 * LOG_FLOW_RATE a second. What it holds back is counted, and the next
 * line let through is preceded by one line saying how many were not
 * written; a flood of flows costs the log a line a few milliseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"

/* seccomp(all): write ftruncate lseek pread64 pwrite64 clock_gettime
 *   (stderr; the log file, its lines' times, the rotation in place) */
/* seccomp(all): sendto
 *   (syslog: one datagram per message on the socket connected at
 *    start-up, see syslog_line()) */
/* seccomp(setup): socket(0=AF_UNIX) connect close getpid
 *   (log_to_syslog(): /dev/log, reachable only before the sandbox) */
/* seccomp(all): exit_group
 *   (die()) */
/* seccomp(setup): openat read newfstatat readlink readlinkat */

#define LOG_PID_WIDTH	7		/* digits of the largest PID (2^22) */
#define LOG_PATH_MAX	512		/* of the path shown in the header */

static struct {
	enum log_level level;
	int file_fd;
	size_t file_max, file_used;
	bool syslog_on, stderr_too;
	int syslog_fd;				/* connected to /dev/log, -1 */
	pid_t syslog_pid;			/* the PID its lines name */
	unsigned long syslog_lost;		/* lines not sent since last */
	struct timespec start;			/* of the file log */
	char path[LOG_PATH_MAX];
	char header[LOG_PATH_MAX + 128];
	size_t header_len;
} log_sink = { .level = LOG_LVL_INFO, .file_fd = -1, .syslog_fd = -1 };

/* write_all() - write len bytes, retrying short writes and EINTR. */
int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* header_make() - the header line for pid, its length padded so that any
 * PID gives the same length (log_file_pid() rewrites it in place). */
static void header_make(pid_t pid)
{
	char num[16];
	int n, len;

	n = snprintf(num, sizeof(num), "%d", (int)pid);
	len = snprintf(log_sink.header, sizeof(log_sink.header),
		       "ferry %s: %s (%s)%*s\n", FERRY_VERSION, log_sink.path,
		       num, n < LOG_PID_WIDTH ? LOG_PID_WIDTH - n : 0, "");
	log_sink.header_len = len > 0 && (size_t)len < sizeof(log_sink.header)
			      ? (size_t)len : 0;
}

void log_set_level(enum log_level lvl)
{
	log_sink.level = lvl;
}

enum log_level log_get_level(void)
{
	return log_sink.level;
}

int log_to_file(const char *path, size_t max_size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (log_sink.file_fd >= 0)
		close(log_sink.file_fd);
	log_sink.file_fd = fd;
	log_sink.file_max = max_size;
	log_sink.file_used = 0;
	clock_gettime(CLOCK_MONOTONIC, &log_sink.start);
	snprintf(log_sink.path, sizeof(log_sink.path), "%s", path);
	header_make(getpid());
	if (log_sink.header_len &&
	    !write_all(fd, log_sink.header, log_sink.header_len))
		log_sink.file_used = log_sink.header_len;
	return 0;
}

void log_file_close(void)
{
	if (log_sink.file_fd >= 0)
		close(log_sink.file_fd);
	log_sink.file_fd = -1;
	log_sink.file_used = log_sink.header_len = 0;
}

/* outer_pid() - this process's PID as its parent's PID namespace sees
 * it: a daemon in a PID namespace of its own (isolate_pid()) is 1 to
 * getpid(), but /proc, still the one mounted for the caller's namespace
 * (the sandbox's empty root comes later), names it as the caller does. */
static pid_t outer_pid(void)
{
	char buf[16];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
	long v;

	if (n <= 0)
		return getpid();
	buf[n] = '\0';
	v = strtol(buf, NULL, 10);
	return v > 0 ? (pid_t)v : getpid();
}

void log_file_pid(void)
{
	size_t len = log_sink.header_len;

	if (log_sink.file_fd < 0 || !len)
		return;
	header_make(outer_pid());
	if (log_sink.header_len == len &&
	    pwrite(log_sink.file_fd, log_sink.header, len, 0) != (ssize_t)len)
		return;		/* best effort: the old PID stays */
}

void log_to_syslog(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX,
				 .sun_path = "/dev/log" };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

#ifdef FERRY_TEST	/* the tests' own syslog socket */
	const char *test_path = getenv("FERRY_SYSLOG_PATH");

	if (test_path)
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", test_path);
#endif
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);		/* no syslog daemon: lines are lost */
		fd = -1;
	}
	log_sink.syslog_fd = fd;
	log_sink.syslog_pid = outer_pid();
	log_sink.syslog_on = true;
}

/* syslog_line() - one line (without its newline) as one datagram at
 * priority prio; see the top for what a full queue does. */
static void syslog_line(int prio, const char *line, size_t len)
{
	char buf[1200], lost[40] = "";
	int n;

	if (log_sink.syslog_fd < 0)
		return;
	if (log_sink.syslog_lost)
		snprintf(lost, sizeof(lost), "(%lu lines lost) ",
			 log_sink.syslog_lost);
	n = snprintf(buf, sizeof(buf), "<%d>ferry[%d]: %s%.*s",
		     LOG_DAEMON | prio, (int)log_sink.syslog_pid, lost, (int)len,
		     line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (send(log_sink.syslog_fd, buf, (size_t)n, MSG_DONTWAIT |
		 MSG_NOSIGNAL) == n)
		log_sink.syslog_lost = 0;
	else
		log_sink.syslog_lost++;
}

void log_also_stderr(bool on)
{
	log_sink.stderr_too = on;
}

/* file_next_line() - the offset just past the first newline at or after
 * off (below end), or end if there is none. */
static size_t file_next_line(int fd, size_t off, size_t end, char *buf,
			     size_t bufsz)
{
	while (off < end) {
		size_t want = end - off < bufsz ? end - off : bufsz;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		char *nl;

		if (n <= 0)
			return end;
		nl = memchr(buf, '\n', (size_t)n);
		if (nl)
			return off + (size_t)(nl - buf) + 1;
		off += (size_t)n;
	}
	return end;
}

/* file_cut() - make room for need more bytes: keep the newest lines that
 * fit in three quarters of the bound (less need), moved up to just after
 * the header; the file is truncated after them (see top). */
static void file_cut(size_t need)
{
	static char buf[64 << 10];
	size_t hdr = log_sink.header_len, used = log_sink.file_used;
	size_t room = log_sink.file_max / 4 * 3, keep, src, dst = hdr;
	int fd = log_sink.file_fd;

	keep = room > hdr + need ? room - hdr - need : 0;
	src = used - (keep < used - hdr ? keep : used - hdr);
	if (src > hdr)
		src = file_next_line(fd, src - 1, used, buf, sizeof(buf));
	while (src < used) {
		size_t want = used - src < sizeof(buf) ? used - src : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)src);

		if (n <= 0 || pwrite(fd, buf, (size_t)n, (off_t)dst) != n)
			break;
		src += (size_t)n;
		dst += (size_t)n;
	}
	if (ftruncate(fd, (off_t)dst) || lseek(fd, (off_t)dst, SEEK_SET) < 0)
		dst = used;		/* left as it was: writing goes on */
	log_sink.file_used = dst;
}

/* file_write() - append to the log file, cutting its oldest lines first
 * when the bound would be passed. */
static void file_write(const char *line, size_t len)
{
	if (log_sink.file_max && log_sink.file_used + len > log_sink.file_max)
		file_cut(len);
	if (write_all(log_sink.file_fd, line, len) == 0)
		log_sink.file_used += len;
}

/* file_prefix() - "SECONDS.FRACTION: LEVEL: " for a file line. */
static int file_prefix(char *buf, size_t size, enum log_level lvl)
{
	static const char *const name[] = { "error", "warning", "info",
					    "debug", "trace" };
	struct timespec now;
	long long s;
	long frac;

	clock_gettime(CLOCK_MONOTONIC, &now);
	s = (long long)(now.tv_sec - log_sink.start.tv_sec);
	frac = (now.tv_nsec - log_sink.start.tv_nsec) / 100000;
	if (frac < 0) {
		frac += 10000;
		s--;
	}
	return snprintf(buf, size, "%lld.%04ld: %s: ", s, frac, name[lvl]);
}

/* log_vmsg() - format one line (cut at 1 KiB) and write it to the
 * sinks: file or syslog, and stderr when neither is set or when asked. */
__attribute__((format(printf, 2, 0)))
static void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO,
				    LOG_DEBUG, LOG_DEBUG };
	char line[1024];
	int n;

	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0';

	if (log_sink.file_fd >= 0) {
		char pre[64];
		int p = file_prefix(pre, sizeof(pre), lvl);

		if (p > 0 && (size_t)p < sizeof(pre)) {
			char full[sizeof(pre) + sizeof(line)];

			memcpy(full, pre, (size_t)p);
			memcpy(full + p, line, (size_t)n);
			file_write(full, (size_t)p + (size_t)n);
		} else {
			file_write(line, (size_t)n);
		}
	} else if (log_sink.syslog_on)
		syslog_line(prio[lvl], line, (size_t)n - 1);
	if ((log_sink.file_fd < 0 && !log_sink.syslog_on) ||
	    log_sink.stderr_too) {
		if (write_all(STDERR_FILENO, line, (size_t)n) < 0)
			return;
	}
}

/* log_msg() - see log.h: drop above the level, else log_vmsg(). */
void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if (lvl > log_sink.level)
		return;
	va_start(ap, fmt);
	log_vmsg(lvl, fmt, ap);
	va_end(ap);
}

/* The per-flow lines' token bucket (log_flow_ok()): milli-lines. */
static struct {
	int64_t tokens;
	struct timespec last;
	uint64_t suppressed, suppressed_all;
} log_rl = { LOG_FLOW_BURST * 1000, { 0, 0 }, 0, 0 };

bool log_flow_ok(enum log_level lvl)
{
	struct timespec now;
	int64_t ms;

	if (lvl > log_sink.level)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - log_rl.last.tv_sec) * 1000 +
	     (now.tv_nsec - log_rl.last.tv_nsec) / 1000000;
	if (ms > 0) {
		log_rl.tokens += ms * LOG_FLOW_RATE;
		if (log_rl.tokens > (int64_t)LOG_FLOW_BURST * 1000)
			log_rl.tokens = (int64_t)LOG_FLOW_BURST * 1000;
		log_rl.last = now;
	}
	if (log_rl.tokens < 1000) {
		log_rl.suppressed++;
		log_rl.suppressed_all++;
		return false;
	}
	log_rl.tokens -= 1000;
	if (log_rl.suppressed) {
		log_msg(LOG_LVL_INFO, "log: %llu flow lines suppressed (more "
			"than %d a second)",
			(unsigned long long)log_rl.suppressed, LOG_FLOW_RATE);
		log_rl.suppressed = 0;
	}
	return true;
}

uint64_t log_flow_suppressed(void)
{
	return log_rl.suppressed_all;
}

void die_code(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_ERR, fmt, ap);
	va_end(ap);
	exit(code);
}
