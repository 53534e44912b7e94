/* ns.c - namespace mode: the guest's namespaces, its tap device, the
 * command, and when to quit.
 *
 * Theory of operation
 *
 * ferry itself always stays in the host's network namespace, where its
 * sockets must live. The guest is a user + network namespace that ferry
 * either creates (-- CMD, or the user's shell) or joins (PID, --netns):
 *
 * Create: fork a child that sets PR_SET_PDEATHSIG (it must not outlive
 *   ferry), unshare()s CLONE_NEWUSER | CLONE_NEWNET, maps the caller's
 *   uid/gid to root inside (setgroups denied, as "unshare -r" does),
 *   reports readiness on a pipe and then blocks on a second pipe until
 *   ferry's whole set-up is done (tap configured, every forwarding
 *   listener open: ns_run_command()); then it execs the command, which
 *   can use -T/-U ports from its first instruction. Its
 *   pidfd is the EREF_CHILD event: ns_child_handler() reaps it and ferry
 *   exits with its status (128 + signal if it was killed), after the
 *   drain (drain.c). A ferry in the foreground process group of its
 *   terminal gives the command a process group of its own in the
 *   foreground and takes the terminal back when it exits; one in the
 *   background touches neither (c->tty_taken).
 *
 * Join: the target is /proc/PID/ns/{net,user}, or --netns PATH (a bare
 *   name means /run/netns/NAME) with --userns PATH; --netns-only, or a
 *   path without --userns, joins no user namespace. Unless
 *   --no-netns-quit, ferry quits when the namespace goes away: for a PID
 *   (or a /proc/PID/... path) when that process exits, watched with a
 *   pidfd; for any other path when the path is deleted from its
 *   directory (as "ip netns del" does), watched with inotify on the
 *   directory. Both are the EREF_CHILD event.
 *
 * Work inside the guest's namespace (the tap and netlink socket at
 * start-up, the forwarders' sockets later) is done by helper tasks
 * (nsexec.c: ns_task_run(), ns_call(), and after ferry gives up root or
 * its capabilities the resident helper of ns_agent_start()). The
 * namespace fds stay open in struct ctx for later calls.
 *
 * The first job opens /dev/net/tun (IFF_TAP | IFF_NO_PI, and IFF_VNET_HDR
 * unless --no-offload: tap_dev.c sets the offloads up; DAD off on it,
 * and with --config-net SLAAC too: the static address is the guest's)
 * and a NETLINK_ROUTE socket; ferry configures the guest over it:
 *
 *   always          lo up (as pasta: binding loopback needs it); the
 *                   tap's transmit queue lengthened (NS_TAP_TXQLEN); the
 *                   tap's MAC (--ns-mac-addr if given) is read back and
 *                   becomes the guest MAC, so frames to the guest are
 *                   unicast before it has spoken
 *   --config-net    tap MTU, up, addresses, default routes, then the
 *                   host's other addresses and routes that hostconf.c
 *                   copied (pasta's documented behaviour: without it the
 *                   tap is left down for the user or a DHCP/NDP client
 *                   to set up)
 *
 * --splice-only (pasta's loopback-only mode): the first job opens only
 * the netlink socket, lo is brought up, and there is no tap and no guest
 * link at all (c->link stays down): the namespace has its loopback and
 * nothing else, and ferry serves only the -t/-u/-T/-U forwards between
 * the two loopbacks (tcp_splice.c, udp_fwd.c) with the helper tasks of
 * ns_call(), usable once ns_start() set c->ns_ready.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "drain.h"
#include "ferry.h"
#include "log.h"
#include "netlink.h"
#include "ns.h"
#include "nsexec.h"
#include "priv.h"
#include "util.h"

/* seccomp(ns): read write close
 *   (the inotify watch, the command's pidfd closed) */
/* seccomp(setup): clone mmap */
/* seccomp(ns): waitid
 *   (the command's exit (its pidfd), or the inotify watch read) */
/* seccomp(ns): getpgrp rt_sigprocmask ioctl(1=TCGETS) ioctl(1=TIOCGPGRP) */
/* seccomp(ns): ioctl(1=TIOCSPGRP)
 *   (ns_tty_back(): the terminal back from the command) */
/* seccomp(setup): brk eventfd2 execve exit_group getegid geteuid getpid */
/* seccomp(setup): getppid inotify_add_watch inotify_init1 newfstatat openat */
/* seccomp(setup): pipe2 prctl rt_sigaction setpgid socket unshare */
/* seccomp(setup): pidfd_open access */
#define LO_IFINDEX	1		/* loopback is 1 in every namespace */

/* The tap's transmit queue: the guest's frames waiting for ferry to read
 * them. A tap drops what the guest sends when it is full (tx_dropped),
 * without pushing back on the sending socket, so a guest UDP stream lost
 * frames there whenever ferry was off the CPU for longer than the default
 * 1000 frames last (11 ms at 1 Gbit/s of 1400-byte datagrams, less than a
 * scheduler slice on a busy machine). 4096 cover ~45 ms at that rate,
 * and a guest sending faster than ferry reads queues no more than that;
 * TCP is bounded by its window anyway. Measured in doc/bench.md. */
#define NS_TAP_TXQLEN	4096

/* What ns_tap_open() needs and reports (shared memory: CLONE_VM). */
struct ns_tap {
	const char *ifname;
	bool static_ip;			/* --config-net: no SLAAC addresses */
	bool vnet;			/* offloads: IFF_VNET_HDR (cleared if
					 * the kernel refuses it) */
	int tap_fd, nl_fd;		/* results, -1 on failure */
	unsigned int ifindex;
	char name[IFNAMSIZ];		/* as created */
	const char *failed;		/* step that failed, errno in err */
	int err;
};

/* tap_fail() - record which step failed (errno) for the parent. */
static int tap_fail(struct ns_tap *h, const char *what)
{
	h->failed = what;
	h->err = errno;
	return -errno;
}

/* ns_tap_sysctl_off() - set an IPv6 per-interface sysctl of the namespace
 * we are in to "0". Best effort. */
static void ns_tap_sysctl_off(const char *ifname, const char *key)
{
	char path[64 + IFNAMSIZ];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s",
		 ifname, key);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0) {
		if (write(fd, "0", 1) < 0)
			debug("cannot clear %s on %s", key, ifname);
		close(fd);
	}
}

/* ns_tap_open() - in the guest namespace (via ns_task_run()): create the
 * tap device and open a netlink socket (see top). */
static int ns_tap_open(void *arg)
{
	struct ns_tap *h = arg;
	struct ifreq ifr;
	int fd;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return tap_fail(h, "opening /dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (h->vnet ? IFF_VNET_HDR : 0);
	str_copy(ifr.ifr_name, h->ifname, IFNAMSIZ);
	if (h->vnet && ioctl(fd, TUNSETIFF, &ifr) < 0) {
		h->vnet = false;	/* retry without offloads */
		ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	}
	if ((!h->vnet && ioctl(fd, TUNSETIFF, &ifr) < 0) ||
	    !(h->ifindex = if_nametoindex(ifr.ifr_name))) {
		tap_fail(h, "creating the tap device");
		close(fd);
		return -h->err;
	}
	str_copy(h->name, ifr.ifr_name, IFNAMSIZ);
	/* The guest's link-local address needs no duplicate detection:
	 * ferry is the only other node on the link. With --config-net the
	 * static address is the guest's address: no SLAAC address from our
	 * router advertisements next to it. */
	ns_tap_sysctl_off(h->name, "accept_dad");
	if (h->static_ip)
		ns_tap_sysctl_off(h->name, "autoconf");
	h->nl_fd = nl_open();
	if (h->nl_fd < 0) {
		errno = -h->nl_fd;
		tap_fail(h, "opening netlink in the namespace");
		close(fd);
		return -h->err;
	}
	h->tap_fd = fd;
	return 0;
}

/* ns_nl_open() - --splice-only, in the guest namespace (via
 * ns_task_run()): no tap device, only the netlink socket (lo up). */
static int ns_nl_open(void *arg)
{
	struct ns_tap *h = arg;

	h->nl_fd = nl_open();
	if (h->nl_fd < 0) {
		errno = -h->nl_fd;
		return tap_fail(h, "opening netlink in the namespace");
	}
	return 0;
}

/* open_ns() - open a namespace file; dies with a clear message. */
static int open_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("cannot open namespace %s: %s", path, strerror(errno));
	return fd;
}

/* proc_path_pid() - the PID in a "/proc/PID/..." path, 0 otherwise. */
static pid_t proc_path_pid(const char *path)
{
	char *end;
	long v;

	if (strncmp(path, "/proc/", 6))
		return 0;
	v = strtol(path + 6, &end, 10);
	return v > 0 && v < INT32_MAX && *end == '/' ? (pid_t)v : 0;
}

/* write_file() - write a short string to a /proc file; 0 or -errno. */
static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = write_all(fd, s, strlen(s));
	close(fd);
	return rc;
}

int ns_map_ids(uid_t in_uid, uid_t uid, gid_t in_gid, gid_t gid)
{
	char buf[64];
	int rc;

	rc = write_file("/proc/self/setgroups", "deny");
	if (rc && rc != -ENOENT)
		return rc;
	snprintf(buf, sizeof(buf), "%u %u 1", (unsigned int)in_uid,
		 (unsigned int)uid);
	if ((rc = write_file("/proc/self/uid_map", buf)))
		return rc;
	snprintf(buf, sizeof(buf), "%u %u 1", (unsigned int)in_gid,
		 (unsigned int)gid);
	return write_file("/proc/self/gid_map", buf);
}

/* child_take_tty() - interactive use: run the command in its own process
 * group in the terminal's foreground, so ^C reaches the command and not
 * ferry (which then reports the command's status). */
static void child_take_tty(void)
{
	sigset_t set;

	if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp())
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGTTOU);
	sigprocmask(SIG_BLOCK, &set, NULL);	/* we are background now */
	if (!setpgid(0, 0))
		tcsetpgrp(STDIN_FILENO, getpid());
}

/* child_exec() - restore what ferry changed for itself (blocked signals,
 * ignored SIGPIPE) and exec the command or the user's shell. */
static void __attribute__((noreturn)) child_exec(char **cmd)
{
	const char *shell = getenv("SHELL");
	char *dflt[2] = { (char *)(shell && *shell ? shell : "/bin/sh"), NULL };
	sigset_t none;

	if (!cmd || !cmd[0])
		cmd = dflt;
	child_take_tty();
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(cmd[0], cmd);
	fprintf(stderr, "ferry: cannot run %s: %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* cmd_exists() - would execvp() find name? A name with a '/' is a path;
 * else each PATH entry is tried (execvp's default when PATH is unset). */
static bool cmd_exists(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char buf[4096];
	int n;

	if (strchr(name, '/'))
		return !access(name, F_OK);
	for (p = path ? path : "/bin:/usr/bin"; ; p = end + 1) {
		end = strchrnul(p, ':');
		n = snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p), p,
			     name);
		if (n > 0 && (size_t)n < sizeof(buf) && !access(buf, F_OK))
			return true;
		if (!*end)
			return false;
	}
}

void ns_cmd_check(char *const *cmd)
{
	if (!cmd || !cmd[0] || !cmd[0][0] || cmd_exists(cmd[0]))
		return;
	fprintf(stderr, "ferry: cannot run %s: %s\n", cmd[0], strerror(ENOENT));
	exit(127);
}

/* child_user() - ferry gives up root after start-up (priv.c): the child
 * changes to that user first, so the user namespace it creates belongs
 * to the user ferry becomes, who can then still enter it. Dumpable
 * again, or its /proc/self files stay root's and it cannot map itself. */
static int child_user(const struct priv *p)
{
	int rc;

	if (!p->drop)
		return 0;
	if ((rc = priv_switch_ids(p->uid, p->gid)))
		return rc;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) ? -errno : 0;
}

/* child_run() - the forked child (see top): new namespaces, report on
 * ready_w, wait for go_r, exec. Never returns. */
static void __attribute__((noreturn)) child_run(char **cmd,
						const struct priv *p,
						pid_t parent, int ready_w,
						int go_r)
{
	uid_t uid;
	gid_t gid;
	char b;
	int rc;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	rc = child_user(p);
	uid = geteuid();	/* as seen outside: read before unshare() */
	gid = getegid();
	if (!rc)
		rc = unshare(CLONE_NEWUSER | CLONE_NEWNET) ? -errno :
		     ns_map_ids(0, uid, 0, gid);
	/* New credentials: make sure the death signal still holds. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	if (write_all(ready_w, &rc, sizeof(rc)) || rc)
		_exit(1);
	close(ready_w);
	if (read(go_r, &b, 1) != 1)	/* EOF: ferry gave up */
		_exit(1);
	close(go_r);
	child_exec(cmd);
}

/* ns_spawn() - fork the command's child and wait until its namespaces
 * exist; returns the write end of the "go" pipe and opens the child's
 * namespace files into *userns, *netns. */
static int ns_spawn(struct ctx *c, int *userns, int *netns)
{
	int ready[2], go[2], rc = 0;
	pid_t parent = getpid(), pid;
	char path[64];
	ssize_t n;

	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	/* the child takes the terminal on the same test (child_take_tty()) */
	c->tty_taken = isatty(STDIN_FILENO) &&
		       tcgetpgrp(STDIN_FILENO) == getpgrp();
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(ready[0]);
		close(go[1]);
		child_run(c->conf.cmd, &c->priv, parent, ready[1], go[0]);
	}
	close(ready[1]);
	close(go[0]);
	c->child_pid = pid;
	c->child_pidfd = pidfd_open_(pid);
	if (c->child_pidfd < 0)
		die("pidfd_open: %s", strerror(errno));
	do
		n = read(ready[0], &rc, sizeof(rc));
	while (n < 0 && errno == EINTR);
	close(ready[0]);
	if (n != sizeof(rc) || rc)
		die("cannot create the namespace: %s",
		    n == sizeof(rc) ? strerror(-rc) : "child failed");
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	*userns = open_ns(path);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	*netns = open_ns(path);
	return go[1];
}

/* ns_join() - open the namespaces of an existing target (see top). */
static void ns_join(struct ctx *c, int *userns, int *netns)
{
	struct conf *f = &c->conf;
	char path[PATH_MAX + 16];

	*userns = -1;
	if (f->ns_pid) {
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)f->ns_pid);
		*netns = open_ns(path);
		if (f->userns_path[0]) {
			*userns = open_ns(f->userns_path);
		} else if (!f->netns_only) {
			snprintf(path, sizeof(path), "/proc/%d/ns/user",
				 (int)f->ns_pid);
			*userns = open_ns(path);
		}
	} else {
		if (!strchr(f->netns_path, '/'))
			snprintf(path, sizeof(path), "/run/netns/%s",
				 f->netns_path);
		else
			str_copy(path, f->netns_path, sizeof(path));
		*netns = open_ns(path);
		if (f->userns_path[0] && !f->netns_only)
			*userns = open_ns(f->userns_path);
	}
	/* setns() refuses to re-enter our own user namespace: not needed. */
	if (*userns >= 0 && ns_same(*userns, "user")) {
		close(*userns);
		*userns = -1;
	}
}

/* nl_check() - die on a failed configuration step; an address or route
 * that already exists (joined namespace) is only a warning. */
static void nl_check(int rc, const char *what, const char *ifname)
{
	if (rc == -EEXIST)
		warn("%s on %s: already there", what, ifname);
	else if (rc)
		die("%s on %s: %s", what, ifname, strerror(-rc));
}

/* copy_check() - a copied address or route that the guest's kernel
 * refuses is left out with a warning (already there: a debug note; the
 * kernel makes prefix routes for the addresses itself). */
static void copy_check(int rc, int family, const uint8_t *a, int len,
		       const char *what, const char *ifname)
{
	char buf[INET6_ADDRSTRLEN];

	if (!rc)
		return;
	inet_ntop(family, a, buf, sizeof(buf));
	if (rc == -EEXIST)
		debug("copied %s %s/%d on %s: already there", what, buf, len,
		      ifname);
	else
		warn("copied %s %s/%d on %s: %s: left out", what, buf, len,
		     ifname, strerror(-rc));
}

/* ns_config_copied() - the host's other addresses and its routes as
 * hostconf.c copied them; routes without a gateway first, so the
 * gateways of the others are reachable when they are added. */
static void ns_config_copied(int nl, int family, unsigned int ifindex,
			     const char *ifname, const struct conf_copied *cp)
{
	int i, pass;

	for (i = 0; i < cp->addr_count; i++) {
		const struct nl_addr *a = &cp->addrs[i];

		copy_check(nl_addr_add(nl, family, ifindex, a->addr,
				       a->prefix_len),
			   family, a->addr, a->prefix_len, "address", ifname);
	}
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < cp->route_count; i++) {
			const struct nl_route *r = &cp->routes[i];
			static const uint8_t zero[16];

			if (!memcmp(r->gw, zero, sizeof(zero)) != !pass)
				continue;
			copy_check(nl_route_add(nl, family, ifindex, r), family,
				   r->dst, r->dst_len, "route", ifname);
		}
	}
}

/* ns_config_ip() - guest addresses and default routes (--config-net),
 * then the copies of the host's other addresses and routes. */
static void ns_config_ip(const struct conf *f, int nl, unsigned int ifindex,
			 const char *ifname)
{
	if (f->ip4.enabled) {
		if (!in4_is_unspec(&f->ip4.addr))
			nl_check(nl_addr_add(nl, AF_INET, ifindex, &f->ip4.addr,
					     f->ip4.prefix_len),
				 "adding the IPv4 address", ifname);
		if (!in4_is_unspec(&f->ip4.gw))
			nl_check(nl_route_add_default(nl, AF_INET, ifindex,
						      &f->ip4.gw),
				 "adding the IPv4 default route", ifname);
		ns_config_copied(nl, AF_INET, ifindex, ifname, &f->ip4.copied);
	}
	if (f->ip6.enabled) {
		if (!in6_is_unspec(&f->ip6.addr))
			nl_check(nl_addr_add(nl, AF_INET6, ifindex,
					     &f->ip6.addr, f->ip6.prefix_len),
				 "adding the IPv6 address", ifname);
		if (!in6_is_unspec(&f->ip6.gw))
			nl_check(nl_route_add_default(nl, AF_INET6, ifindex,
						      &f->ip6.gw),
				 "adding the IPv6 default route", ifname);
		ns_config_copied(nl, AF_INET6, ifindex, ifname, &f->ip6.copied);
	}
}

/* ns_configure() - set up the guest side over netlink (see top) and
 * learn the tap's MAC address as the guest's. */
static void ns_configure(struct ctx *c, int nl, unsigned int ifindex,
			 const char *ifname)
{
	struct conf *f = &c->conf;
	const uint8_t *mac = f->guest_mac_set ? f->guest_mac : NULL;
	uint8_t cur[6];
	int rc;

	rc = nl_link_txqlen(nl, ifindex, NS_TAP_TXQLEN);
	if (rc)		/* the tap works without: not fatal */
		warn("setting the transmit queue length of %s: %s", ifname,
		     strerror(-rc));
	if (f->config_net) {
		/* MAC and MTU first, while down; then up, then L3. */
		nl_check(nl_link_set(nl, ifindex, mac, f->mtu, false),
			 "setting MAC address and MTU", ifname);
		nl_check(nl_link_set(nl, ifindex, NULL, 0, true),
			 "bringing up", ifname);
		ns_config_ip(f, nl, ifindex, ifname);
	} else if (mac) {
		nl_check(nl_link_set(nl, ifindex, mac, 0, false),
			 "setting the MAC address", ifname);
	}
	rc = nl_link_get(nl, ifindex, NULL, NULL, cur);
	nl_check(rc, "reading the MAC address", ifname);
	memcpy(f->guest_mac, cur, 6);
	memcpy(c->guest_mac, cur, 6);
	c->guest_mac_known = true;
}

/* ns_watch() - joined namespace: register what tells us it went away
 * (see top), unless --no-netns-quit. */
static void ns_watch(struct ctx *c)
{
	union eref ref = { .type = EREF_CHILD };
	const struct conf *f = &c->conf;
	pid_t pid = f->ns_pid ? f->ns_pid : proc_path_pid(f->netns_path);
	char dir[PATH_MAX];
	int fd;

	if (f->no_netns_quit)
		return;
	if (pid) {
		fd = pidfd_open_(pid);
		if (fd < 0)
			die("pidfd_open %d: %s", (int)pid, strerror(errno));
	} else {
		str_copy(dir, f->netns_path, sizeof(dir));
		fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fd < 0 || inotify_add_watch(fd, dirname(dir),
					IN_DELETE | IN_MOVED_FROM) < 0)
			die("cannot watch %s: %s", f->netns_path,
			    strerror(errno));
	}
	c->child_pidfd = fd;
	if (ep_add(c, fd, EPOLLIN, ref))
		die("epoll: %s", strerror(errno));
}

/* ns_attach_tap() - configure the tap ns_tap_open() made and make it the
 * guest link. */
static void ns_attach_tap(struct ctx *c, const struct ns_tap *h)
{
	union eref lref = { .type = EREF_LINK };

	ns_configure(c, h->nl_fd, h->ifindex, h->name);
	tapdev_attach(c, h->tap_fd, h->vnet);
	if (ep_add(c, h->tap_fd, EPOLLIN, lref))
		die("epoll: %s", strerror(errno));
	info("namespace interface %s%s, MAC %02x:%02x:%02x:%02x:%02x:%02x",
	     h->name, c->conf.config_net ? " configured" : " (not configured)",
	     c->guest_mac[0], c->guest_mac[1], c->guest_mac[2],
	     c->guest_mac[3], c->guest_mac[4], c->guest_mac[5]);
}

int ns_start(struct ctx *c)
{
	union eref cref = { .type = EREF_CHILD };
	bool join = c->conf.ns_pid || c->conf.netns_path[0];
	struct ns_tap h = { c->conf.ns_ifname, c->conf.config_net,
			    !c->conf.no_offload, -1, -1 };
	int go = -1, rc;

	if (join)
		ns_join(c, &c->ns_user_fd, &c->ns_net_fd);
	else
		go = ns_spawn(c, &c->ns_user_fd, &c->ns_net_fd);
	rc = ns_task_run(c->ns_user_fd, c->ns_net_fd, c->conf.splice_only ?
			 ns_nl_open : ns_tap_open, &h);
	if (h.failed)
		die("namespace helper: %s: %s", h.failed, strerror(h.err));
	if (rc)
		die("cannot enter the guest namespace: %s", strerror(-rc));

	nl_check(nl_link_set(h.nl_fd, LO_IFINDEX, NULL, 0, true),
		 "bringing up", "lo");
	if (c->conf.splice_only) {
		info("no namespace interface (--splice-only): forwarding "
		     "between the loopbacks only");
	} else {
		ns_attach_tap(c, &h);
	}
	close(h.nl_fd);
	c->ns_ready = true;

	if (join) {
		ns_watch(c);
		return -1;
	}
	if (ep_add(c, c->child_pidfd, EPOLLIN, cref))
		die("epoll: %s", strerror(errno));
	return go;
}

void ns_run_command(int go)
{
	if (go < 0)
		return;
	if (write_all(go, "g", 1))
		die("cannot start the command: %s", strerror(errno));
	close(go);
}

/* ns_tty_back() - take the terminal back from the command's process
 * group (see child_take_tty()), so the caller's shell finds it sane.
 * Only if ferry had the terminal's foreground and handed it on
 * (c->tty_taken): one started in the background (ferry ns -- cmd &)
 * taking it would leave the shell in the foreground without its
 * terminal. */
static void ns_tty_back(void)
{
	sigset_t set, old;

	if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) == getpgrp())
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGTTOU);
	sigprocmask(SIG_BLOCK, &set, &old);
	tcsetpgrp(STDIN_FILENO, getpgrp());
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ns_watch_event() - joined by path: did the namespace file go away? */
static bool ns_watch_event(const struct ctx *c)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	char path[PATH_MAX], *base;
	ssize_t n, off;

	str_copy(path, c->conf.netns_path, sizeof(path));
	base = basename(path);
	while ((n = read(c->child_pidfd, buf, sizeof(buf))) > 0) {
		for (off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (void *)(buf + off);
			size_t sz = sizeof(*ev) + ev->len;

			if (off + (ssize_t)sz > n)
				break;
			if (ev->len && !strncmp(ev->name, base, ev->len))
				return true;
			off += (ssize_t)sz;
		}
	}
	return false;
}

void ns_child_handler(struct ctx *c, uint32_t events)
{
	const char *why;
	siginfo_t si;

	(void)events;
	if (c->child_pid <= 0) {		/* joined namespace */
		if (c->conf.ns_pid || proc_path_pid(c->conf.netns_path))
			why = "namespace process exited";
		else if (ns_watch_event(c))
			why = "namespace file removed";
		else
			return;
		/* Told once: a pidfd stays readable. */
		ep_del(c, c->child_pidfd);
		close(c->child_pidfd);
		c->child_pidfd = -1;
		drain_begin(c, why);
		return;
	}
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)3 /* P_PIDFD */, (id_t)c->child_pidfd, &si,
		   WEXITED | WNOHANG) < 0 || !si.si_pid)
		return;
	if (si.si_code == CLD_EXITED)
		c->exit_code = si.si_status;
	else
		c->exit_code = 128 + si.si_status;
	debug("command exited, status %d", c->exit_code);
	ep_del(c, c->child_pidfd);
	close(c->child_pidfd);
	c->child_pidfd = -1;
	c->child_pid = 0;
	if (c->tty_taken)
		ns_tty_back();
	drain_begin(c, "command exited");
}
