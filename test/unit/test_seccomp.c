/* test_seccomp.c - the filter seccomp.c builds, loaded for real in a
 * child process: allowed calls go through, others kill it (SIGSYS),
 * argument checks hold (ioctl() requests, socket() families), per mode.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "ferry.h"
#include "seccomp.h"
#include "unit.h"
#include "util.h"

enum probe { P_SOCKET_INET, P_SOCKET_PACKET, P_IOCTL_INQ, P_IOCTL_STI,
	     P_EXECVE, P_OPENAT, P_PTRACE };

/* probe_call() - make the one call the probe names. */
static void probe_call(enum probe p, int fd)
{
	static char *const argv[] = { "/bin/true", NULL };
	int n = 0;
	char ch = 'x';

	switch (p) {
	case P_SOCKET_INET:
		close(socket(AF_INET, SOCK_DGRAM, 0));
		break;
	case P_SOCKET_PACKET:
		socket(AF_PACKET, SOCK_RAW, 0);
		break;
	case P_IOCTL_INQ:
		ioctl(fd, FIONREAD, &n);
		break;
	case P_IOCTL_STI:
		ioctl(fd, TIOCSTI, &ch);
		break;
	case P_EXECVE:
		execve(argv[0], argv, argv + 1);
		break;
	case P_OPENAT:
		syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
		break;
	case P_PTRACE:
		syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
		break;
	}
}

/* probe() - in a child with the filter of mode (and vhost_user): make
 * the call; returns the signal that ended the child, 0 if it exited
 * normally, -1 if the filter could not be loaded. */
static int probe(enum mode mode, bool vu, enum probe p)
{
	struct ctx *c = calloc(1, sizeof(*c));
	int fds[2], st = 0;
	pid_t pid;

	if (!c || socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		return -2;
	c->conf.mode = mode;
	c->conf.vhost_user = vu;
	pid = fork();
	if (pid == 0) {
		if (seccomp_install(c))
			_exit(2);
		probe_call(p, fds[0]);
		_exit(0);
	}
	close(fds[0]);
	close(fds[1]);
	free(c);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -2;
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	return WEXITSTATUS(st) == 0 ? 0 : -1;
}

TEST(seccomp_allowed_calls_pass)
{
	CHECK_EQ(probe(MODE_NS, false, P_SOCKET_INET), 0);
	CHECK_EQ(probe(MODE_VM, false, P_SOCKET_INET), 0);
	CHECK_EQ(probe(MODE_VM, true, P_SOCKET_INET), 0);
	CHECK_EQ(probe(MODE_NS, false, P_IOCTL_INQ), 0);
	CHECK_EQ(probe(MODE_VM, true, P_IOCTL_INQ), 0);
}

TEST(seccomp_other_calls_kill)
{
	static const enum mode modes[] = { MODE_NS, MODE_VM, MODE_VM };
	static const enum probe bad[] = { P_EXECVE, P_OPENAT, P_PTRACE };
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(modes); i++)
		for (j = 0; j < ARRAY_SIZE(bad); j++)
			CHECK_EQ(probe(modes[i], i == 2, bad[j]), SIGSYS);
}

TEST(seccomp_argument_checks_kill)
{
	CHECK_EQ(probe(MODE_NS, false, P_SOCKET_PACKET), SIGSYS);
	CHECK_EQ(probe(MODE_VM, false, P_SOCKET_PACKET), SIGSYS);
	CHECK_EQ(probe(MODE_NS, false, P_IOCTL_STI), SIGSYS);
	CHECK_EQ(probe(MODE_VM, true, P_IOCTL_STI), SIGSYS);
}

TEST(seccomp_count_per_mode)
{
	struct ctx *c = calloc(1, sizeof(*c));
	unsigned int ns, vm, vu;

	CHECK(c);
	c->conf.mode = MODE_NS;
	ns = seccomp_count(c);
	c->conf.mode = MODE_VM;
	vm = seccomp_count(c);
	c->conf.vhost_user = true;
	vu = seccomp_count(c);
	free(c);
	/* Each list is short; VM mode needs no helper tasks nor splice. */
	CHECK(ns > 20 && ns < 60);
	CHECK(vm > 20 && vm < ns);
	CHECK(vu > 20 && vu < ns);
}
