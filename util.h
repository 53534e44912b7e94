/* util.h - small shared helpers: array sizes, branch hints, byte order,
 * bounded string copies, file-descriptor flags, time.
 *
 * Nothing here knows about frames or flows; it is the bottom of the include
 * graph and may be included from every file.
 */
#ifndef FERRY_UTIL_H
#define FERRY_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
/* MIN()/MAX() evaluate each argument exactly once, so an argument that
 * acts (a call that sends, binds or moves state) runs once: the old
 * two-evaluation form sent a second FIN from tcp_read_batch() and ran
 * udp_fwd's retry round twice. Both operands are compared after the usual
 * arithmetic conversions, as `<` would; -Wsign-compare sees the
 * operands as variables, so a literal against an unsigned needs its `u`.
 * Not usable at file scope (a GNU statement expression); __COUNTER__
 * keeps the inner names of nested uses apart (-Wshadow). */
#define MINMAX_(a, b, op, n)	__extension__ ({			\
		__typeof__(a) mm_a_##n = (a);				\
		__typeof__(b) mm_b_##n = (b);				\
		mm_a_##n op mm_b_##n ? mm_a_##n : mm_b_##n; })
#define MINMAX_N_(a, b, op, n)	MINMAX_(a, b, op, n)
#define MIN(a, b)	MINMAX_N_(a, b, <, __COUNTER__)
#define MAX(a, b)	MINMAX_N_(a, b, >, __COUNTER__)
#define ROUND_UP(x, a)	(((x) + (a) - 1) / (a) * (a))
#define UNUSED		__attribute__((unused))

#define ETH_ALEN_	6

/* Read/write big-endian integers at any alignment. */
static inline uint16_t rd16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t rd32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static inline void wr16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = v >> 8;
	b[1] = v & 0xff;
}

static inline void wr32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = v >> 24;
	b[1] = (v >> 16) & 0xff;
	b[2] = (v >> 8) & 0xff;
	b[3] = v & 0xff;
}

/* Monotonic time helpers: milliseconds between two timestamps, a - b. */
static inline int64_t ts_ms_diff(const struct timespec *a,
				 const struct timespec *b)
{
	return (int64_t)(a->tv_sec - b->tv_sec) * 1000 +
	       (a->tv_nsec - b->tv_nsec) / 1000000;
}

/* ts_add_ms() - t plus ms (ms >= 0) milliseconds. */
static inline struct timespec ts_add_ms(struct timespec t, int64_t ms)
{
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

static inline bool in4_eq(const struct in_addr *a, const struct in_addr *b)
{
	return a->s_addr == b->s_addr;
}

static inline bool in6_eq(const struct in6_addr *a, const struct in6_addr *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static inline bool in4_is_unspec(const struct in_addr *a)
{
	return a->s_addr == INADDR_ANY;
}

static inline bool in6_is_unspec(const struct in6_addr *a)
{
	return IN6_IS_ADDR_UNSPECIFIED(a);
}

/* strlcpy-like: copy at most size-1 bytes, always terminate; returns
 * false if the source did not fit. */
bool str_copy(char *dst, const char *src, size_t size);
/* A file's identity (device, inode): the socket file ferry bound, so
 * that its removal at exit leaves a file someone put there since. */
struct file_id {
	uint64_t dev, ino;		/* ino 0: unknown, never removed */
};

/* A UNIX socket file ferry bound and removes at exit (vm.c's -s, ctl.c's
 * -c; repair.c's borrows -s's directory): its directory, opened O_PATH, through which the file is removed
 * once no path leads there (isolate.c's Landlock allows removing a file
 * beneath it, nothing else), and the file's identity as bound. */
struct unix_file {
	int dirfd;			/* -1: none (or closed by isolate.c) */
	struct file_id id;
};

/* file_id_at() - the identity of name under dirfd (AT_FDCWD: a path),
 * not following a symlink; ino 0 if it cannot be read. */
struct file_id file_id_at(int dirfd, const char *name);
/* unix_file_keep() - fill f for the socket file just bound at path: its
 * directory (dirfd -1 if it cannot be opened) and identity. Start-up
 * only. */
void unix_file_keep(struct unix_file *f, const char *path);
/* unix_file_remove() - remove the socket file at path if it is still
 * f's: through f->dirfd from inside the sandbox, else by its path. A
 * file replaced since stays. */
void unix_file_remove(const struct unix_file *f, const char *path);
/* unix_refused() - is path a UNIX socket whose connect() is refused: one
 * nobody accepts on any more (a process that died)? Start-up only. */
bool unix_refused(const char *path);

/* Set O_NONBLOCK (and FD_CLOEXEC) on fd; returns 0 or -errno. */
int fd_set_nonblock(int fd);


/* Write "pid\n" to path (pid file); returns 0 or -errno. */
int write_pidfile(int fd, pid_t pid);

/* alloc_startup() - zeroed anonymous memory for tables and buffers, at
 * start-up only (never in the data path); exits with a message on failure. */
void *alloc_startup(size_t size);

/* fd_limit() - RLIMIT_NOFILE, the soft limit raised to the hard one
 * first (descriptors are what flows cost); UINT32_MAX if unlimited. */
uint32_t fd_limit(void);

/* fd_budget() - the descriptors one half of ferry's flows may hold under
 * an fd limit of nofile: half of it, less 64 once that half exceeds 128
 * (listeners, the tap, epoll, timers: the rest), at least 1. TCP has one
 * half (tcp_fd_budget()); UDP flows and ICMP echo flows, each a socket,
 * share the other (udp_limits(), icmp_flow_cap()). */
uint32_t fd_budget(uint32_t nofile);

/* sock_bind_dev() - bind socket s to interface ifname (SO_BINDTODEVICE:
 * --outbound-if4/6, a forward's %IF); nothing for NULL or "". Returns 0
 * or -errno. */
int sock_bind_dev(int s, const char *ifname);

/* send_error_reported() - is e, from a send on a socket with IP_RECVERR,
 * the socket's pending error an earlier ICMP error left (the send
 * reported it, consumed it and sent nothing) rather than a reason to give
 * up? A traceroute probe sent right after a router's time exceeded meets
 * one: send again. */
bool send_error_reported(int e);

/* sock_freebind() - IP_FREEBIND (IPV6_FREEBIND for v6) on socket s
 * (--freebind): it may bind an address the host does not have (yet).
 * Returns 0 or -errno. */
int sock_freebind(int s, bool v6);

/* spare_fd_open() - an fd held in reserve for accept_refuse_spare()
 * (an eventfd: no path needed); -1 if none could be opened. */
int spare_fd_open(void);

/* accept_refuse_spare() - accept() on listening socket lfd failed with
 * EMFILE/ENFILE while a connection waits: a level-triggered listener would
 * stay readable and spin the loop. Give up the spare fd *spare, accept the
 * oldest waiting connection on its number and close it at once (a reset
 * for TCP: SO_LINGER 0), then take the spare back into *spare. Returns
 * true if a connection was refused (the caller may accept again), false
 * if there was no spare (*spare < 0) or nothing could be accepted. */
bool accept_refuse_spare(int lfd, int *spare);

/* Current CLOCK_MONOTONIC time. */
void now_mono(struct timespec *ts);

/* Fill buf with len bytes from getrandom(), falling back to a mix of
 * time and pid only if the kernel refuses (never for ISNs: see tcp). */
void random_bytes(void *buf, size_t len);

/* test_env_u32() - test builds (FERRY_TEST): a limit or size from the
 * environment variable name, else dflt; release builds always dflt. */
uint32_t test_env_u32(const char *name, uint32_t dflt);

#endif /* FERRY_UTIL_H */
