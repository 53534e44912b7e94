/* isolate.c - confinement after set-up: namespaces, an empty root,
 * no_new_privs, Landlock; the record of the layers in force.
 *
 * Theory of operation
 *
 * ferry parses frames from a guest it cannot trust. Once everything that
 * needs a path is open (tap, netlink, sockets, listeners, the pid, log
 * and pcap files, the qemu or vhost-user listening socket, the
 * /proc/net tables the auto forwards scan, the namespace fds ns_call()
 * enters), a bug in that parsing should reach as little as possible. The
 * layers, in the order start-up applies them (--sandbox, conf.h):
 *
 *   isolate_user()   rootless: creating a mount namespace takes
 *                    CAP_SYS_ADMIN in ferry's user namespace, which an
 *                    ordinary user lacks. In namespace mode ferry joins
 *                    the guest's user namespace (it owns it: it made it,
 *                    or the caller's tool did as the same user), where it
 *                    has every capability until priv_drop() clears them;
 *                    ns_call() then needs a resident helper to enter the
 *                    guest's network namespace after the drop (priv.c
 *                    plans it, nsexec.c's ns_agent_start()). In VM mode ferry
 *                    makes a user namespace of its own mapping only its
 *                    own uid and gid (setgroups denied). Its sockets stay
 *                    in the host's network namespace either way; only
 *                    capabilities over it, which a user never had, are
 *                    out of reach. Root needs neither.
 *   isolate_pid()    a daemon (no -f, and in namespace mode no command of
 *                    ferry's own) forks to detach: the child is made the
 *                    first process of a new PID namespace, so it sees no
 *                    other process and can signal none. A foreground
 *                    ferry keeps its PID namespace: a process cannot move
 *                    into one, and its caller waits on that very process.
 *   isolate_apply()  new IPC and UTS namespaces (no System V objects, no
 *                    host name to change), then a new mount namespace:
 *                    every mount made private (nothing propagates back),
 *                    an empty tmpfs mounted read-only, no device, no
 *                    exec, two inodes and no blocks, made the root with
 *                    pivot_root(".", ".") and the old root detached
 *                    (umount2 MNT_DETACH): no path leads to a host file
 *                    any more, and the filesystem holds nothing to write.
 *                    Then PR_SET_NO_NEW_PRIVS, and a Landlock ruleset
 *                    (raw system calls, where the kernel has it) handling
 *                    every filesystem right of its ABI with no rule to
 *                    allow any: a second wall that also stands where the
 *                    mount namespace could not be made; from ABI 6 it
 *                    also scopes abstract UNIX sockets to ferry's own.
 *                    Landlock comes after pivot_root (a Landlocked task
 *                    may not change mounts) and before priv_drop(), so
 *                    ns.c's resident helper, started there, is under
 *                    every layer too. priv_drop() then changes identity
 *                    (root only) and clears the capabilities: bounding
 *                    and ambient sets empty, effective and permitted
 *                    keep only what a running feature needs (priv.c).
 *   seccomp          seccomp.c's filter, the last set-up step.
 *   isolate_report() one line naming the layers in force.
 *
 * Each layer reports through isolate_layer(): --sandbox=on warns about
 * one that cannot be applied and goes on without it, --sandbox=strict
 * refuses to start, --sandbox=off applies none (only priv_drop()'s
 * change of user for root, as before) and conf.c warns once.
 *
 * What still works after: the fds held (an already open file is not
 * a path: Landlock and the empty root act on opening), accept() on the
 * listening socket (VM and vhost-user reconnects), the log file (written
 * and wrapped in place through its fd, log.c; syslog connected at
 * openlog()), the pcap file, SIGUSR1 statistics, entering the guest's
 * namespaces through held fds (ns_call()), the /proc/net tables opened
 * at start-up (read through their fds). Files read once at start
 * (resolv.conf, /etc/passwd, hostconf's netlink dumps) are read before.
 * What is gone: opening any path, including /proc (vhost-user's fd check
 * falls back to the mode test, vhost_user.c), and /dev/null (the spare
 * fd of the listeners is an eventfd, util.c). One exception: VM mode
 * removes its socket at exit (vm_stop(); the repair socket beside it,
 * repair_stop()), and -c its control socket
 * (ctl_stop()), each through a directory fd held from start-up
 * (unix_file_keep()), and the Landlock ruleset allows removing a file
 * beneath those directories, nothing else (no path leads there but the
 * fds); without Landlock the fds are closed and the files stay behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "ferry.h"
#include "isolate.h"
#include "log.h"
#include "ns.h"
#include "priv.h"

/* seccomp(setup): chdir close getegid geteuid ioctl mount prctl setns */
/* seccomp(setup): umount2 unshare capget pivot_root landlock_add_rule */
/* seccomp(setup): landlock_create_ruleset landlock_restrict_self
 *   (all of it before seccomp_install()) */

/* Landlock's interface (linux/landlock.h may predate the rights used):
 * the attribute grows with the ABI; the kernel takes the size given. */
#define LL_CREATE_VERSION	(1U << 0)
#define LL_FS_ABI1		((1ULL << 13) - 1)	/* EXECUTE..MAKE_SYM */
#define LL_FS_REFER		(1ULL << 13)		/* ABI 2 */
#define LL_FS_TRUNCATE		(1ULL << 14)		/* ABI 3 */
#define LL_FS_IOCTL_DEV		(1ULL << 15)		/* ABI 5 */
#define LL_SCOPE_ABSTRACT_UNIX	(1ULL << 0)		/* ABI 6 */

#define LL_FS_REMOVE_FILE	(1ULL << 5)
#define LL_RULE_PATH_BENEATH	1

struct ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;			/* ABI 4 */
	uint64_t scoped;				/* ABI 6 */
};

/* Mount points tried for the empty tmpfs before it becomes the root:
 * any existing directory serves (the mount is in ferry's namespace). */
static const char *const iso_mnt_dirs[] = { "/tmp", "/dev", "/run", "/proc" };

/* iso_name() - a layer's name in the report and in warnings. */
static const char *iso_name(enum iso_layer l)
{
	switch (l) {
	case ISO_USERNS:	return "user namespace";
	case ISO_MOUNT:		return "mount namespace";
	case ISO_PID:		return "pid namespace";
	case ISO_IPC:		return "ipc namespace";
	case ISO_UTS:		return "uts namespace";
	case ISO_CAPS:		return "capabilities";
	case ISO_NNP:		return "no-new-privs";
	case ISO_LANDLOCK:	return "landlock";
	case ISO_SECCOMP:	return "seccomp";
	}
	return "?";
}

void isolate_layer(struct ctx *c, enum iso_layer layer, bool ok,
		   const char *what, int err)
{
	if (ok) {
		c->iso.active |= layer;
		return;
	}
	if (c->conf.sandbox == SANDBOX_STRICT)
		die("--sandbox=strict: %s: %s: %s", iso_name(layer), what,
		    strerror(err));
	if (!(c->iso.failed & layer))
		warn("sandbox: no %s: %s: %s", iso_name(layer), what,
		     strerror(err));
	c->iso.failed |= layer;
}

/* have_cap() - is cap in ferry's effective set (its user namespace)? */
static bool have_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	/* Zeroed: valgrind's capget sees only the first word written. */
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &hdr, d))
		return false;
	return d[cap / 32].effective >> (cap % 32) & 1;
}

/* user_join_guest() - namespace mode: enter the user namespace of the
 * guest (held in ns_user_fd, or owning its network namespace). Returns 0
 * or -errno; then ns_call() needs no user namespace change of its own. */
static int user_join_guest(struct ctx *c)
{
	int fd = c->ns_user_fd;

	if (fd < 0 && (fd = ioctl(c->ns_net_fd, NS_GET_USERNS)) < 0)
		return -errno;
	if (setns(fd, CLONE_NEWUSER)) {
		int rc = -errno;

		if (fd != c->ns_user_fd)
			close(fd);
		return rc;
	}
	close(fd);
	c->ns_user_fd = -1;
	return 0;
}

/* user_own() - VM mode: a new user namespace mapping ferry's ids to
 * themselves. Returns 0 or -errno. */
static int user_own(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (unshare(CLONE_NEWUSER))
		return -errno;
	return ns_map_ids(uid, uid, gid, gid);
}

void isolate_user(struct ctx *c)
{
	int rc;

	if (c->conf.sandbox == SANDBOX_OFF || have_cap(CAP_SYS_ADMIN))
		return;
	rc = c->conf.mode == MODE_NS ? user_join_guest(c) : user_own();
	isolate_layer(c, ISO_USERNS, !rc, c->conf.mode == MODE_NS ?
		      "cannot enter the guest's user namespace" :
		      "cannot create a user namespace", -rc);
	c->iso.moved_userns = !rc;
}

void isolate_pid(struct ctx *c)
{
	int rc;

	if (c->conf.sandbox == SANDBOX_OFF)
		return;
	rc = unshare(CLONE_NEWPID) ? errno : 0;
	isolate_layer(c, ISO_PID, !rc, "unshare", rc);
}

/* empty_root() - in a new mount namespace: an empty read-only tmpfs as
 * the root, the old root detached (see top). 0 or -errno, *what the
 * step. */
static int empty_root(const char **what)
{
	const unsigned long fl = MS_RDONLY | MS_NODEV | MS_NOEXEC | MS_NOSUID;
	size_t i;

	*what = "unshare";
	if (unshare(CLONE_NEWNS))
		return -errno;
	*what = "making the mounts private";
	if (mount("", "/", "", MS_REC | MS_PRIVATE, NULL))
		return -errno;
	*what = "mounting an empty tmpfs";
	for (i = 0; i < sizeof(iso_mnt_dirs) / sizeof(iso_mnt_dirs[0]); i++)
		if (!mount("ferry", iso_mnt_dirs[i], "tmpfs", fl,
			   "nr_inodes=2,nr_blocks=0"))
			break;
	if (i == sizeof(iso_mnt_dirs) / sizeof(iso_mnt_dirs[0]))
		return -errno;
	*what = "pivot_root into it";
	if (chdir(iso_mnt_dirs[i]) || syscall(SYS_pivot_root, ".", "."))
		return -errno;
	*what = "detaching the old root";
	if (umount2(".", MNT_DETACH) || chdir("/"))
		return -errno;
	return 0;
}

/* landlock_all() - a Landlock domain with every filesystem right of the
 * kernel's ABI handled and none allowed, but removing a file beneath
 * each of the n dirfds (VM mode's socket, the control socket, at exit;
 * -1: none). 0 or -errno, *what the step. */
static int landlock_all(const int *dirfds, size_t n, const char **what)
{
	struct ll_ruleset_attr a = { .handled_access_fs = LL_FS_ABI1 };
	size_t size = sizeof(a.handled_access_fs), i;
	long abi;
	int fd, rc = 0;

	*what = "not in this kernel";
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
	if (abi < 1)
		return -errno;
	if (abi >= 2)
		a.handled_access_fs |= LL_FS_REFER;
	if (abi >= 3)
		a.handled_access_fs |= LL_FS_TRUNCATE;
	if (abi >= 5)
		a.handled_access_fs |= LL_FS_IOCTL_DEV;
	if (abi >= 6) {
		a.scoped = LL_SCOPE_ABSTRACT_UNIX;
		size = sizeof(a);
	}
	*what = "creating the ruleset";
	fd = (int)syscall(SYS_landlock_create_ruleset, &a, size, 0);
	if (fd < 0)
		return -errno;
	*what = "allowing the socket's removal";
	for (i = 0; i < n && !rc; i++) {
		struct ll_path_beneath r = { LL_FS_REMOVE_FILE, dirfds[i] };

		if (dirfds[i] >= 0 && syscall(SYS_landlock_add_rule, fd,
					      LL_RULE_PATH_BENEATH, &r, 0))
			rc = -errno;
	}
	*what = "restricting ferry";
	if (!rc && syscall(SYS_landlock_restrict_self, fd, 0))
		rc = -errno;
	close(fd);
	return rc;
}

void isolate_apply(struct ctx *c)
{
	const char *what = "";
	int rc;

	if (c->conf.sandbox != SANDBOX_OFF) {
		rc = unshare(CLONE_NEWIPC) ? errno : 0;
		isolate_layer(c, ISO_IPC, !rc, "unshare", rc);
		rc = unshare(CLONE_NEWUTS) ? errno : 0;
		isolate_layer(c, ISO_UTS, !rc, "unshare", rc);
		rc = empty_root(&what);
		isolate_layer(c, ISO_MOUNT, !rc, what, -rc);
		/* Not dumpable: no core file, and no process of the guest's
		 * user namespace (which a rootless ferry joined) may ptrace
		 * ferry or open its /proc files. */
		rc = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		     prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) ? errno : 0;
		isolate_layer(c, ISO_NNP, !rc, "prctl", rc);
		int *dirfds[] = { &c->sock_file.dirfd, &c->ctl_file.dirfd };
		int fds[] = { c->sock_file.dirfd, c->ctl_file.dirfd };
		size_t i;

		rc = landlock_all(fds, 2, &what);
		for (i = 0; rc && i < 2; i++) {
			/* Unwalled, the fd would reach the directory's files:
			 * the socket stays behind at exit instead. */
			if (*dirfds[i] >= 0)
				close(*dirfds[i]);
			*dirfds[i] = -1;
		}
		isolate_layer(c, ISO_LANDLOCK, !rc, what, -rc);
	}
	priv_drop(c);
}

void isolate_report(const struct ctx *c)
{
	char line[256] = "";
	size_t n = 0;
	unsigned int l;

	if (c->conf.sandbox == SANDBOX_OFF)
		return;
	for (l = ISO_USERNS; l <= ISO_SECCOMP; l <<= 1) {
		if (!(c->iso.active & l))
			continue;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s",
				      n ? ", " : "", iso_name(l));
		if (n >= sizeof(line))
			break;
	}
	info("sandbox: %s", n ? line : "no layer in force");
}
