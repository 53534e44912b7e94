/* fwd_scan.c - "auto" port forwarding: which ports are bound, read from
 * the kernel's socket tables in /proc/net.
 *
 * Theory of operation: /proc/net/tcp, tcp6, udp and udp6 (of the reading
 * task's network namespace, or /proc/PID/net/... for another process's)
 * list one socket per line after a header:
 *
 *	  sl  local_address rem_address   st tx_queue ...
 *	   0: 0100007F:0035 00000000:0000 0A 00000000:00000000 ...
 *
 * local_address is the address in hex (8 digits for IPv4, 32 for IPv6),
 * a colon and the port in hex; st is the socket state in hex. A TCP
 * socket that accepts connections is in state 0A (TCP_LISTEN); a UDP
 * socket that receives from anyone is bound and not connected, which the
 * kernel shows as state 07 (TCP_CLOSE; connected UDP sockets show 01).
 * Those are the ports "auto" forwards. Addresses are not looked at: a
 * port bound on any address counts.
 *
 * The reader keeps the file open and reads it again from offset 0 on each
 * scan (a /proc/net file stays tied to the namespace it was opened in, so
 * a file opened inside the guest namespace can be scanned from outside).
 * Lines are parsed from a fixed buffer, with a partial line carried over
 * between reads; nothing is allocated. Callers own the bitmaps and decide
 * what to exclude (their own sockets, to avoid forwarding loops).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "fwd_scan.h"

/* seccomp(ns): lseek read
 *   (auto forwards: the /proc/net tables, through fds opened at start-up) */
/* seccomp(setup): openat close */

#define SCAN_BUF	8192
#define SCAN_LINE_MAX	512		/* real lines are ~150 characters */

/* hexval() - value of hex digit ch, -1 if it is none. */
static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* token() - the next space-separated token of [*p, end): sets *tok and
 * returns its length (0 at the end), advancing *p past it. */
static size_t token(const char **p, const char *end, const char **tok)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*tok = s;
	while (s < end && *s != ' ' && *s != '\t' && *s != '\n')
		s++;
	*p = s;
	return (size_t)(s - *tok);
}

/* all_hex() - n characters at s are all hex digits. */
static bool all_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (hexval(s[i]) < 0)
			return false;
	return true;
}

/* hex_field() - the value of n hex digits at s; -1 if any is not hex. */
static long hex_field(const char *s, size_t n)
{
	long v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

uint16_t fwd_scan_line(const char *line, size_t len, uint8_t proto)
{
	const char *p = line, *end = line + len, *t, *colon;
	size_t n;
	long port, st;

	/* "sl": a decimal slot number and a colon */
	n = token(&p, end, &t);
	if (n < 2 || t[n - 1] != ':' || t[0] < '0' || t[0] > '9')
		return 0;
	/* local address: 8 or 32 hex digits, ':', 4 hex digits */
	n = token(&p, end, &t);
	colon = memchr(t, ':', n);
	if (!colon || (colon - t != 8 && colon - t != 32) ||
	    !all_hex(t, (size_t)(colon - t)) ||
	    (size_t)(t + n - colon - 1) != 4)
		return 0;
	port = hex_field(colon + 1, 4);
	/* remote address, then the state */
	if (!token(&p, end, &t))
		return 0;
	n = token(&p, end, &t);
	if (n != 2 || (st = hex_field(t, 2)) < 0 || port <= 0)
		return 0;
	if (proto == IPPROTO_TCP)
		return st == 0x0A ? (uint16_t)port : 0;
	if (proto == IPPROTO_UDP)
		return st == 0x07 ? (uint16_t)port : 0;
	return 0;
}

/* scan_chunk() - parse the complete lines of buf[0, len); returns how
 * many bytes (an unfinished last line) are left at its end. */
static size_t scan_chunk(const char *buf, size_t len, uint8_t proto,
			 uint64_t *map)
{
	const char *s = buf, *end = buf + len, *nl;

	while ((nl = memchr(s, '\n', (size_t)(end - s)))) {
		uint16_t port = fwd_scan_line(s, (size_t)(nl - s), proto);

		if (port)
			map[port / 64] |= 1ULL << (port % 64);
		s = nl + 1;
	}
	return (size_t)(end - s);
}

int fwd_scan_fd(int fd, uint8_t proto, uint64_t *map)
{
	char buf[SCAN_BUF];
	size_t have = 0, left;
	ssize_t r;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		r = read(fd, buf + have, sizeof(buf) - have - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		have += (size_t)r;
		left = scan_chunk(buf, have, proto, map);
		if (left > SCAN_LINE_MAX)
			left = 0;	/* no such line: skip the garbage */
		memmove(buf, buf + have - left, left);
		have = left;
	}
	if (have) {			/* last line without a newline */
		buf[have++] = '\n';
		scan_chunk(buf, have, proto, map);
	}
	return 0;
}

int fwd_scan(const char *path, uint8_t proto, uint64_t *map)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = fwd_scan_fd(fd, proto, map);
	close(fd);
	return rc;
}
