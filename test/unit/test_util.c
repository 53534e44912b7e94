/* test_util.c - util.c helpers that touch the kernel: the spare fd that
 * refuses a waiting connection when the process is out of descriptors
 * (accept_refuse_spare(), used by tcp_fwd.c and vm.c). Loopback only. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>

#include "unit.h"
#include "util.h"

/* lowest_free_fd() - the number the next open() would return. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* nofile_lowered() - fork a child that lowers our RLIMIT_NOFILE soft
 * limit to cur from outside, as the integration tests do to ferry with
 * prlimit (valgrind emulates a process's own setrlimit(), and its
 * accept() beyond that limit takes the connection and closes it; nor
 * can a child forked under valgrind at a low limit raise it again), and
 * puts the old limit back when *back is closed. Returns the child (reap
 * it), -1 when the limit was not lowered. */
static pid_t nofile_lowered(rlim_t cur, int *back)
{
	pid_t self = getpid(), pid;
	int ready[2], go[2];
	char b = 0;

	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		return -1;
	pid = fork();
	if (!pid) {
		struct rlimit old, low;

		close(ready[0]);
		close(go[1]);
		if (!prlimit(self, RLIMIT_NOFILE, NULL, &old)) {
			low = old;
			low.rlim_cur = cur;
			b = !prlimit(self, RLIMIT_NOFILE, &low, NULL);
		}
		if (write(ready[1], &b, 1) != 1 || !b)
			_exit(1);
		while (read(go[0], &b, 1) > 0)	/* until *back is closed */
			;
		_exit(prlimit(self, RLIMIT_NOFILE, &old, NULL) ? 1 : 0);
	}
	close(ready[1]);
	close(go[0]);
	if (pid < 0 || read(ready[0], &b, 1) != 1 || !b) {
		close(go[1]);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	*back = go[1];
	return pid;
}

/* refuse_body() - lfd listens (non-blocking) with client waiting in its
 * queue; the fd limit is lowered to the lowest free number (*limiter,
 * see nofile_lowered()) so accept() fails; the spare must refuse the
 * client (a reset) and come back. */
static void refuse_body(int lfd, int client, int *spare, pid_t *limiter,
			int *back, bool *ok)
{
	char b;
	int s;

	*limiter = nofile_lowered((rlim_t)lowest_free_fd(), back);
	CHECK(*limiter > 0);
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(s < 0 && errno == EMFILE);
	CHECK(accept_refuse_spare(lfd, spare));
	CHECK(*spare >= 0);
	/* Nothing waits any more: nothing refused, the spare stays. */
	CHECK(!accept_refuse_spare(lfd, spare));
	CHECK(*spare >= 0);
	CHECK(recv(client, &b, 1, 0) < 0 && errno == ECONNRESET);
	*ok = true;
}

TEST(util_accept_refuse_spare)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int lfd, client, spare, none = -1, back = -1, st = 0;
	pid_t limiter = -1;
	bool ok = false;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(lfd >= 0);
	CHECK(!bind(lfd, (struct sockaddr *)&a, sizeof(a)));
	CHECK(!listen(lfd, 4));
	CHECK(!getsockname(lfd, (struct sockaddr *)&a, &al));
	client = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(client >= 0);
	CHECK(!connect(client, (struct sockaddr *)&a, sizeof(a)));
	spare = spare_fd_open();
	CHECK(spare >= 0);
	CHECK(!accept_refuse_spare(lfd, &none));	/* no spare: no refusal */
	refuse_body(lfd, client, &spare, &limiter, &back, &ok);
	if (limiter > 0) {		/* the old limit back */
		close(back);
		CHECK(waitpid(limiter, &st, 0) == limiter);
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st));
	}
	close(spare);
	close(client);
	close(lfd);
	CHECK(ok);
}

/* counted() - v, counting the call in *n: an argument that acts. */
static unsigned int counted(unsigned int *n, unsigned int v)
{
	(*n)++;
	return v;
}

/* MIN()/MAX() evaluate each argument once (an argument that acts, like
 * tcp_sendable() sending a FIN, ran twice with the old form), nest without
 * shadowing, and compare after the usual conversions as `<` does. */
TEST(util_minmax_single_evaluation)
{
	unsigned int calls = 0, x = 7;
	size_t big = 1u << 20;

	CHECK_EQ(MIN(counted(&calls, x), 9u), 7u);
	CHECK_EQ(calls, 1u);
	CHECK_EQ(MAX(counted(&calls, 1), 0u), 1u);
	CHECK_EQ(calls, 2u);
	CHECK_EQ(MIN(MIN(counted(&calls, 2), 5u), MAX(counted(&calls, 3), 1u)),
		 2u);
	CHECK_EQ(calls, 4u);
	CHECK_EQ(MIN(big, (size_t)x), (size_t)7);
	CHECK_EQ(MAX((int64_t)-1, (int64_t)x), (int64_t)7);
}

/* mktemp_dir() - a fresh directory under /tmp for one test. */
static void mktemp_dir(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/ferry-unit-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
}

/* touch() - create path, empty. */
static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	close(fd);
}

/* The socket file goes at exit only while it is the one ferry bound: a
 * file put at that path since (another ferry's socket) stays, through
 * the directory fd and by the path alike; an unknown identity removes
 * nothing. */
TEST(util_unix_file_remove_own_only)
{
	char dir[64], path[96], moved[96];
	struct unix_file f, bypath;

	mktemp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	snprintf(moved, sizeof(moved), "%s/old.sock", dir);

	touch(path);
	unix_file_keep(&f, path);
	CHECK(f.dirfd >= 0);
	CHECK(f.id.ino != 0);
	unix_file_remove(&f, path);			/* own: removed */
	CHECK(access(path, F_OK) < 0);
	unix_file_remove(&f, path);			/* gone: no-op */
	CHECK(file_id_at(AT_FDCWD, path).ino == 0);

	touch(path);
	f.id = file_id_at(AT_FDCWD, path);
	CHECK_EQ(rename(path, moved), 0);		/* replaced */
	touch(path);
	unix_file_remove(&f, path);
	CHECK_EQ(access(path, F_OK), 0);
	bypath = f;
	bypath.dirfd = -1;
	unix_file_remove(&bypath, path);		/* by the path */
	CHECK_EQ(access(path, F_OK), 0);
	unix_file_remove(&bypath, moved);		/* own, renamed */
	CHECK(access(moved, F_OK) < 0);

	f.id.ino = 0;					/* unknown */
	unix_file_remove(&f, path);
	CHECK_EQ(access(path, F_OK), 0);

	CHECK_EQ(unlink(path), 0);
	close(f.dirfd);
	CHECK_EQ(rmdir(dir), 0);
}
