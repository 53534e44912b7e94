/* util.c - small shared helpers (see util.h). No frame or flow knowledge. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "log.h"
#include "util.h"

/* seccomp(all): accept4 clock_gettime close fcntl setsockopt
 *   (helpers) */
/* seccomp(all): eventfd2 getrandom
 *   (the spare fd is an eventfd; random_bytes(): ndp.c's delays) */
/* seccomp(setup): getpid mmap prlimit64 */
/* seccomp(setup): newfstatat socket connect close openat
 *   (unix_refused(): a stale socket at start-up; unix_file_keep()) */

/* str_copy() - bounded copy that always terminates dst. */
bool str_copy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (!size)
		return false;
	if (n >= size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return false;
	}
	memcpy(dst, src, n + 1);
	return true;
}

/* seccomp(all): newfstatat unlinkat unlink
 *   (unix_file_remove(): the socket files at exit, vm.c, ctl.c and
 *   repair.c) */

struct file_id file_id_at(int dirfd, const char *name)
{
	struct file_id id = { 0, 0 };
	struct stat st;

	if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		id.dev = st.st_dev;
		id.ino = st.st_ino;
	}
	return id;
}

void unix_file_keep(struct unix_file *f, const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];

	str_copy(dir, path, sizeof(dir));
	f->dirfd = open(dirname(dir), O_PATH | O_DIRECTORY | O_CLOEXEC);
	f->id = file_id_at(AT_FDCWD, path);
}

/* same_file() - do a and b name one known file? */
static bool same_file(struct file_id a, struct file_id b)
{
	return a.ino && a.ino == b.ino && a.dev == b.dev;
}

void unix_file_remove(const struct unix_file *f, const char *path)
{
	char name[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *base;

	str_copy(name, path, sizeof(name));
	base = basename(name);
	if (f->dirfd >= 0) {
		if (!same_file(file_id_at(f->dirfd, base), f->id))
			return;			/* gone, or someone else's */
		if (!unlinkat(f->dirfd, base, 0))
			return;
	}
	if (same_file(file_id_at(AT_FDCWD, path), f->id))
		unlink(path);			/* no sandbox: the path */
}

/* fd_set_nonblock() - make fd non-blocking and close-on-exec. */
int fd_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* write_pidfile() - write pid to fd (a pid file just opened, empty) and
 * close it. The daemon's parent calls this with the child's pid before it
 * exits, so whoever waits for that exit finds the file complete. */
int write_pidfile(int fd, pid_t pid)
{
	char buf[32];
	int n, rc;

	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	rc = write_all(fd, buf, (size_t)n);
	close(fd);
	return rc;
}

/* fd_limit() - raise the soft fd limit to the hard one, return it. */
uint32_t fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur >= UINT32_MAX ? UINT32_MAX : (uint32_t)rl.rlim_cur;
}

/* fd_budget() - half of nofile, less the reserve (see util.h). */
uint32_t fd_budget(uint32_t nofile)
{
	return nofile / 2 > 128 ? nofile / 2 - 64 : MAX(nofile / 2, 1u);
}

/* sock_bind_dev() - SO_BINDTODEVICE if ifname names one (see util.h). */
int sock_bind_dev(int s, const char *ifname)
{
	if (!ifname || !ifname[0])
		return 0;
	if (setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, ifname,
		       (socklen_t)strlen(ifname)))
		return -errno;
	return 0;
}

/* sock_freebind() - see util.h. */
bool send_error_reported(int e)
{
	return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH ||
	       e == EHOSTDOWN || e == ENETDOWN || e == EPERM;
}

int sock_freebind(int s, bool v6)
{
	int one = 1;

	if (setsockopt(s, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_FREEBIND : IP_FREEBIND, &one, sizeof(one)))
		return -errno;
	return 0;
}

/* spare_fd_open() - open the reserve fd: an eventfd, which needs no
 * path (it is reopened after each use, inside the sandbox too). */
int spare_fd_open(void)
{
	return eventfd(0, EFD_CLOEXEC);
}

/* accept_refuse_spare() - refuse one waiting connection on the spare fd's
 * number (see util.h). SO_LINGER is ignored by non-TCP sockets. */
bool accept_refuse_spare(int lfd, int *spare)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int s;

	if (*spare < 0)
		return false;
	close(*spare);
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (s >= 0) {
		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(s);
	}
	*spare = spare_fd_open();
	return s >= 0;
}

/* now_mono() - CLOCK_MONOTONIC now. */
void now_mono(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
}

/* random_bytes() - cryptographic randomness from the kernel. */
void random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Kernel without getrandom(): weak fallback. */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			for (size_t i = 0; i < len; i++)
				p[i] = (uint8_t)((ts.tv_nsec >> (i % 4 * 8)) ^
						 getpid() ^ i * 131);
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* alloc_startup() - mmap() zeroed memory; pages are touched lazily. */
void *alloc_startup(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("cannot allocate %zu bytes at start-up", size);
	return p;
}

/* test_env_u32() - test builds: a limit or size from the environment
 * (a positive decimal below 2^32), else dflt; release builds: dflt. */
uint32_t test_env_u32(const char *name, uint32_t dflt)
{
#ifdef FERRY_TEST
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (s && *s) {
		v = strtoul(s, &end, 10);
		if (!*end && v > 0 && v <= UINT32_MAX)
			return (uint32_t)v;
	}
#else
	(void)name;
#endif
	return dflt;
}

bool unix_refused(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	bool refused;
	int fd;

	if (stat(path, &st) || !S_ISSOCK(st.st_mode) ||
	    !str_copy(a.sun_path, path, sizeof(a.sun_path)))
		return false;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	refused = connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
		  errno == ECONNREFUSED;
	close(fd);
	return refused;
}
