/* nsexec.c - work inside the guest's namespaces: the helper tasks that
 * ns_call() runs, and the resident helper (ns_agent_start()) that runs
 * them once ferry gave up root or its capabilities.
 *
 * Theory of operation: ferry itself stays in the host's network
 * namespace. A job that must run inside the guest's (opening a socket
 * there for a forwarder, the tap at start-up) goes to a helper task.
 *
 * The short-lived helper task (ns_task_run(), ns_call()): clone()
 * with CLONE_VM | CLONE_FILES | CLONE_VFORK (not CLONE_THREAD, not
 * CLONE_FS, which setns into a user namespace forbids). The helper
 * setns()es into the guest's user namespace first (giving it
 * CAP_SYS_ADMIN there, which entering the network namespace needs), then
 * into the network namespace, runs its job and exits; fds it opens are
 * ferry's through CLONE_FILES and stay bound to the guest namespace. The
 * namespace fds stay open in struct ctx for later calls.
 *
 * A joined network namespace in ferry's own user namespace (root made it:
 * "ip netns add"; or the guest's, once a rootless ferry joined that one,
 * isolate.c) can be entered only with CAP_SYS_ADMIN there, which ferry
 * loses when it gives up root or clears its capabilities (priv.c). For
 * it, ns_agent_start() (called by priv_drop() just before the drop) makes
 * one resident helper the same way (CLONE_VM | CLONE_FILES, no
 * CLONE_VFORK): it enters the namespace while privileged, then gives up
 * its privileges itself (priv_task_drop(): the same user, or the same
 * ids kept, capabilities), sets PR_SET_PDEATHSIG (after the drop, which
 * clears it) and runs the jobs ns_call() posts, one at a time, through
 * two eventfds; ferry waits on "done" and on the helper's pidfd, so a
 * dead helper fails the call (-ECHILD) instead of hanging it. Opening
 * sockets and reading /proc/self/net inside a namespace one is already
 * in needs no privilege, so nothing privileged stays.
 *
 * This file is below the forwarders (tcp_fwd.c, tcp_splice.c, udp_fwd.c)
 * and namespace mode (ns.c), which call it; it calls nothing above it:
 * the helper's own drop (priv.c priv_task_drop()) is handed in by
 * priv_drop(), its caller.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ferry.h"
#include "log.h"
#include "nsexec.h"
#include "priv.h"

/* seccomp(ns): clone(0=CLONE_VM|CLONE_FILES|CLONE_VFORK|SIGCHLD) exit wait4 */
/* seccomp(ns): mmap munmap
 *   (ns_task_run()'s helper tasks, and their stacks) */
/* seccomp(ns): setns(1=CLONE_NEWUSER) setns(1=CLONE_NEWNET)
 *   (the helper entering the guest's namespaces) */
/* seccomp(ns): poll read write close
 *   (ns_call() through the resident helper's eventfds) */
/* seccomp(setup): exit_group eventfd2 newfstatat getpid getppid prctl */
/* seccomp(setup): pidfd_open
 *   (the resident helper's start) */

#define HELPER_STACK	(256 << 10)

/* The helper task's job: namespaces to enter, then fn(arg). */
struct ns_task {
	int userns_fd, netns_fd;
	int (*fn)(void *arg);
	void *arg;
	int rc;
};

int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* ns_task_fn() - the helper task: enter the guest's user namespace (if
 * any: that gives CAP_SYS_ADMIN there), then its network namespace, then
 * run the job. */
static int ns_task_fn(void *arg)
{
	struct ns_task *t = arg;

	if (t->userns_fd >= 0 && setns(t->userns_fd, CLONE_NEWUSER)) {
		t->rc = -errno;
		return 1;
	}
	if (setns(t->netns_fd, CLONE_NEWNET)) {
		t->rc = -errno;
		return 1;
	}
	t->rc = t->fn(t->arg);
	return 0;
}

int ns_task_run(int userns_fd, int netns_fd, int (*fn)(void *),
		void *arg)
{
	struct ns_task t = { userns_fd, netns_fd, fn, arg, -ECHILD };
	uint8_t *stack;
	pid_t pid;
	int st;

	stack = mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -ENOMEM;
	pid = clone(ns_task_fn, stack + HELPER_STACK,
		    CLONE_VM | CLONE_FILES | CLONE_VFORK | SIGCHLD, &t);
	if (pid < 0)
		t.rc = -errno;
	else
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	munmap(stack, HELPER_STACK);
	return t.rc;
}

/* The resident helper (ns_agent_start()): a task that entered the
 * guest's network namespace as root and then gave up root itself, so
 * ns_call() jobs still run inside after ferry's drop. Shared memory
 * (CLONE_VM): one job at a time, ferry waits for it. */
struct ns_agent {
	int (*fn)(void *arg);		/* the job posted */
	void *arg;
	int rc;				/* its result */
	int go, done;			/* eventfds: job posted, done */
	int netns_fd;
	uid_t uid;			/* the helper's own drop */
	gid_t gid;
	uint64_t keep;
	ns_drop_fn *drop;		/* priv_task_drop() */
	pid_t parent;			/* ferry */
	pid_t pid;
	int pidfd;
};

/* agent_signal() - one count on eventfd fd. */
static void agent_signal(int fd)
{
	uint64_t one = 1;

	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* agent_fn() - the helper's life: enter, drop, report (rc), then run
 * each posted job. Never returns while ferry lives; _exit()s on error. */
static int agent_fn(void *arg)
{
	struct ns_agent *a = arg;
	const char *what;
	uint64_t n;

	/* PR_SET_PDEATHSIG after the drop: a change of ids clears it. Had
	 * ferry died before it, no signal would come: then the parent is
	 * no longer ferry, and the helper ends here. */
	if (setns(a->netns_fd, CLONE_NEWNET) ||
	    (a->rc = a->drop(a->uid, a->gid, a->keep, &what)) ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != a->parent) {
		if (!a->rc)
			a->rc = -errno;
		agent_signal(a->done);
		_exit(1);
	}
	agent_signal(a->done);
	for (;;) {
		if (read(a->go, &n, sizeof(n)) != sizeof(n)) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		a->rc = a->fn(a->arg);
		agent_signal(a->done);
	}
	return 0;
}

/* agent_wait() - the helper's answer, or -ECHILD if it died first. */
static int agent_wait(struct ns_agent *a)
{
	struct pollfd p[2] = { { a->done, POLLIN, 0 },
			       { a->pidfd, POLLIN, 0 } };
	uint64_t n;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents & POLLIN &&
		    read(a->done, &n, sizeof(n)) == sizeof(n))
			return a->rc;
		if (p[1].revents)
			return -ECHILD;
	}
}

int ns_agent_start(struct ctx *c, uid_t uid, gid_t gid, uint64_t keep,
		   ns_drop_fn *drop_fn)
{
	struct ns_agent *a;
	uint8_t *stack;
	int rc;

	a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack = mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (a == MAP_FAILED || stack == MAP_FAILED)
		return -ENOMEM;
	*a = (struct ns_agent){ .netns_fd = c->ns_net_fd, .uid = uid,
				.gid = gid, .keep = keep, .drop = drop_fn,
				.pidfd = -1,
				.parent = getpid() };
	a->go = eventfd(0, EFD_CLOEXEC);
	a->done = eventfd(0, EFD_CLOEXEC);
	if (a->go < 0 || a->done < 0)
		return -errno;
	a->pid = clone(agent_fn, stack + HELPER_STACK,
		       CLONE_VM | CLONE_FILES | SIGCHLD, a);
	if (a->pid < 0)
		return -errno;
	if ((a->pidfd = pidfd_open_(a->pid)) < 0)
		return -errno;
	if ((rc = agent_wait(a)))
		return rc;
	c->ns_agent = a;
	if (uid == PRIV_KEEP_IDS)
		info("namespace helper %d: in the guest's network namespace",
		     (int)a->pid);
	else
		info("namespace helper %d: in the guest's network namespace "
		     "as %u:%u", (int)a->pid, (unsigned int)uid,
		     (unsigned int)gid);
	return 0;
}

/* agent_call() - run fn(arg) in the resident helper and wait for it. */
static int agent_call(struct ns_agent *a, int (*fn)(void *arg), void *arg)
{
	a->fn = fn;
	a->arg = arg;
	agent_signal(a->go);
	return agent_wait(a);
}

int ns_call(const struct ctx *c, int (*fn)(void *arg), void *arg)
{
	/* The fds are only meaningful once ns_start() has set it up. */
	if (c->conf.mode != MODE_NS || !c->ns_ready)
		return -ENOENT;
	if (c->ns_agent)
		return agent_call(c->ns_agent, fn, arg);
	return ns_task_run(c->ns_user_fd, c->ns_net_fd, fn, arg);
}

bool ns_same(int fd, const char *name)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return !fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}
