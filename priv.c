/* priv.c - giving up root after start-up: --runas, or nobody.
 *
 * Theory of operation
 *
 * A network helper reads frames from a guest it cannot trust, so it
 * should not keep root while it does. Started with effective uid 0,
 * ferry does its privileged work first (tap and netlink in the
 * namespace, forwarded listeners below 1024, the qemu/vhost-user
 * socket, pid, pcap and log files), then changes for good to the
 * --runas user, or without --runas to nobody (read from /etc/passwd as
 * plain text, no NSS module; 65534:65534 if it has no entry):
 *
 *   priv_plan()      right after the command line: whom to change to.
 *                    "--runas 0:0" (any uid 0) keeps root, as passt. A
 *                    user not mapped in ferry's user namespace cannot be
 *                    changed to: an error for --runas; without it root is
 *                    kept (the test sandbox, "unshare -r" and rootless
 *                    containers map only their own root, which is the
 *                    caller's uid and not the real root's privileges).
 *                    Not root: --runas must name the current user.
 *   priv_ns_check()  ns mode: ferry must keep entering the guest's
 *                    namespaces (ns_call(): -T/-U sockets, auto-forward
 *                    scans, splice pools). That takes CAP_SYS_ADMIN in
 *                    the user namespace owning the guest's network
 *                    namespace, which a process has there only as the
 *                    owner of that namespace (or of an ancestor). So the
 *                    command ferry spawns changes to the new user before
 *                    it creates its user namespace (ns.c child_run(): it
 *                    is root inside, the new user outside, as with
 *                    pasta), and a joined namespace must belong to the
 *                    new user, or to ferry's own user namespace (the
 *                    host's root made it: "ip netns add"): then a
 *                    resident helper enters it while still root and gives
 *                    up root itself (ns_agent_start(), from priv_drop()),
 *                    and runs the ns_call() jobs from then on. One that
 *                    belongs to another user stops --runas with one line;
 *                    without --runas ferry warns and keeps root.
 *   priv_drop()      after detaching (the pid file is written; the
 *                    helper above starts first and drops on its own):
 *                    bounding set and ambient set emptied, supplementary
 *                    groups dropped, all three gids then uids set,
 *                    capabilities cleared in every set,
 *                    PR_SET_NO_NEW_PRIVS (priv_task_drop()); then
 *                    checked: getresuid()/getresgid() all the new ids, no
 *                    groups, no capability left, and setuid(0) and
 *                    setgid(0) fail. Any failure ends ferry: it never runs
 *                    half-dropped. Called from isolate_apply(), after the
 *                    namespaces and Landlock (isolate.c).
 *   caps_clear()     the same for a ferry that stays who it is (not root,
 *                    root of a user namespace mapping only itself,
 *                    --runas 0), unless --sandbox=off: ids and groups
 *                    kept, bounding and ambient sets emptied, capabilities
 *                    cleared but what a feature needs, no_new_privs,
 *                    checked. ns_call() then enters the guest's user
 *                    namespace without capabilities (its owner, in the
 *                    parent namespace, has them there), or through the
 *                    resident helper for a network namespace of ferry's
 *                    own user namespace (priv_ns_check() plans it); if
 *                    neither can work the capabilities stay (strict:
 *                    ferry refuses to start).
 *
 * One capability may stay: with -t auto or -u auto, ferry opens host
 * listeners later, for ports the guest starts listening on; ports below
 * 1024 need CAP_NET_BIND_SERVICE, so that one is kept (permitted and
 * effective, through PR_SET_KEEPCAPS, and in the bounding set). Without
 * auto forwards it goes too, and so it does once a rootless ferry left
 * the user namespace owning the host's network (isolate_user()): there
 * it never had it. The resident helper keeps it for -T/-U auto (it binds
 * the namespace's side).
 *
 * What keeps working after the drop: open sockets, the tap, accepting
 * the next qemu client on the listening socket (no privilege needed),
 * entering the guest's namespaces (above), ICMP echo: ping sockets can
 * be opened only by groups in net.ipv4.ping_group_range, checked when
 * one is created; if the new group is outside it, icmp_keep_for() opens
 * a pool of them before the drop (icmp.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "ferry.h"
#include "isolate.h"
#include "log.h"
#include "nsexec.h"
#include "priv.h"

/* seccomp(setup): brk close exit_group getegid geteuid getgroups getresgid */
/* seccomp(setup): getresuid ioctl mmap munmap newfstatat openat prctl read */
/* seccomp(setup): setgid setuid write capget capset setgroups setresgid */
/* seccomp(setup): setresuid */

#define PRIV_CAP_MAX	64		/* bits in the kernel's cap sets */

/* passwd_id() - the decimal id field at s, ending in ':' (digits only,
 * below (uid_t)-1); its end in *end. Returns false if malformed. */
static bool passwd_id(const char *s, const char **end, unsigned long *id)
{
	char *e;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*id = strtoul(s, &e, 10);
	*end = e;
	return !errno && *e == ':' && *id < UINT32_MAX;
}

bool priv_passwd_find(const char *path, const char *name, uid_t *uid,
		      gid_t *gid)
{
	FILE *f = fopen(path, "re");
	size_t nlen = strlen(name);
	const char *p;
	unsigned long u, g;
	char line[1024];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* name:password:uid:gid:... */
		if (strncmp(line, name, nlen) || line[nlen] != ':' ||
		    !(p = strchr(line + nlen + 1, ':')) ||
		    !passwd_id(p + 1, &p, &u) || !passwd_id(p + 1, &p, &g))
			continue;
		*uid = (uid_t)u;
		*gid = (gid_t)g;
		found = true;
	}
	fclose(f);
	return found;
}

bool priv_id_mapped(const char *path, uint32_t id)
{
	FILE *f = fopen(path, "re");
	unsigned long in, n;
	bool mapped = false;
	char line[128], *p;

	if (!f)
		return false;
	while (!mapped && fgets(line, sizeof(line), f)) {
		/* "inside outside count": outside does not matter here */
		in = strtoul(line, &p, 10);
		(void)strtoul(p, &p, 10);
		n = strtoul(p, &p, 10);
		mapped = id >= in && id - in < n;
	}
	fclose(f);
	return mapped;
}

/* runas_fail() - a start-up refusal: one line naming --runas, exit 1
 * (as the command line's errors, conf.c). */
static void __attribute__((noreturn, format(printf, 1, 2)))
runas_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("ferry: --runas: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* plan_unprivileged() - not root: only the current user is accepted. */
static void plan_unprivileged(const struct conf *f)
{
	if (!f->runas_set ||
	    (f->run_uid == geteuid() && f->run_gid == getegid()))
		return;
	runas_fail("%u:%u is not the current user %u:%u, and only root can "
		   "change user", (unsigned int)f->run_uid,
	    (unsigned int)f->run_gid, (unsigned int)geteuid(),
	    (unsigned int)getegid());
}

void priv_plan(struct ctx *c)
{
	const struct conf *f = &c->conf;
	struct priv *p = &c->priv;
	bool mapped;

	p->drop = false;
	p->keep_bind = f->tcp_in.mode == FWD_AUTO ||
		       f->udp_in.mode == FWD_AUTO;
	if (geteuid()) {
		plan_unprivileged(f);
		return;
	}
	if (f->runas_set) {
		p->uid = f->run_uid;
		p->gid = f->run_gid;
	} else if (!priv_passwd_find("/etc/passwd", "nobody", &p->uid,
				     &p->gid)) {
		p->uid = PRIV_NOBODY_ID;
		p->gid = PRIV_NOBODY_ID;
	}
	if (!p->uid)
		return;				/* --runas 0[:GID]: stay root */
	mapped = priv_id_mapped("/proc/self/uid_map", p->uid) &&
		 priv_id_mapped("/proc/self/gid_map", p->gid);
	if (!mapped && f->runas_set)
		runas_fail("%u:%u is not mapped in this user namespace",
		    (unsigned int)p->uid, (unsigned int)p->gid);
	if (!mapped) {
		debug("staying uid 0: nobody (%u:%u) is not mapped in this "
		      "user namespace", (unsigned int)p->uid,
		      (unsigned int)p->gid);
		return;
	}
	p->drop = true;
}

/* userns_owner() - the uid owning user namespace fd, or (uid_t)-1. */
static uid_t userns_owner(int fd)
{
	uid_t owner;

	return ioctl(fd, NS_GET_OWNER_UID, &owner) ? (uid_t)-1 : owner;
}

void priv_ns_check(struct ctx *c)
{
	struct priv *p = &c->priv;
	bool clear = !p->drop && c->conf.sandbox != SANDBOX_OFF;
	uid_t owner = (uid_t)-1, who = p->drop ? p->uid : geteuid();
	char whose[64];
	bool own;
	int fd;

	if (!p->drop && !clear)
		return;
	/* The user namespace owning the guest's network namespace: the one
	 * ns_call() enters, or the one it must enter after the drop. */
	fd = ioctl(c->ns_net_fd, NS_GET_USERNS);
	own = fd >= 0 && ns_same(fd, "user");
	if (fd >= 0 && !own)
		owner = userns_owner(fd);
	if (owner == who) {
		if (c->ns_user_fd >= 0)
			close(c->ns_user_fd);
		c->ns_user_fd = fd;
		return;
	}
	if (own && c->ns_user_fd < 0) {
		/* Ferry's own user namespace ("ip netns add" by root): a
		 * helper enters it before the drop and stays (ns.c). */
		close(fd);
		p->ns_agent = true;
		return;
	}
	if (owner == (uid_t)-1)
		snprintf(whose, sizeof(whose), "is ferry's own");
	else
		snprintf(whose, sizeof(whose), "belongs to uid %u",
			 (unsigned int)owner);
	if (fd >= 0)
		close(fd);
	if (clear) {
		/* ns_call() enters with ferry's own CAP_SYS_ADMIN */
		p->keep_caps = true;
		isolate_layer(c, ISO_CAPS, false, "kept: entering the guest's "
			      "network namespace needs them", EPERM);
		return;
	}
	if (c->conf.runas_set)
		runas_fail("%u:%u could not enter the guest's network "
			   "namespace after the change: its user namespace %s "
			   "(start ferry as that user, or --runas 0:0)",
			   (unsigned int)p->uid, (unsigned int)p->gid, whose);
	warn("staying root: user nobody (%u:%u) could not enter the guest's "
	     "network namespace: its user namespace %s (pass --runas 0:0 to "
	     "say so, or start ferry as the namespace's owner)",
	     (unsigned int)p->uid, (unsigned int)p->gid, whose);
	p->drop = false;
}

/* caps_set() - permitted and effective set to keep, inheritable empty. */
static int caps_set(uint64_t keep)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };
	int i;

	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		d[i].permitted = d[i].effective = (uint32_t)(keep >> (32 * i));
	return (int)syscall(SYS_capset, &hdr, d);
}

/* caps_get() - all three sets, or -1 (error). */
static int caps_get(uint64_t *eff, uint64_t *prm, uint64_t *inh)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	/* Zeroed: valgrind's capget sees only the first word written. */
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };
	int i;

	if (syscall(SYS_capget, &hdr, d))
		return -1;
	*eff = *prm = *inh = 0;
	for (i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		*eff |= (uint64_t)d[i].effective << (32 * i);
		*prm |= (uint64_t)d[i].permitted << (32 * i);
		*inh |= (uint64_t)d[i].inheritable << (32 * i);
	}
	return 0;
}

int priv_switch_ids(uid_t uid, gid_t gid)
{
	/* The system calls, not glibc's wrappers: those change every
	 * thread of the process, and ns.c's resident helper, which shares
	 * ferry's memory (and so glibc's thread list) but is a process of
	 * its own, must change only itself. ferry has no other thread. */
	if (syscall(SYS_setgroups, 0, NULL) ||
	    syscall(SYS_setresgid, gid, gid, gid) ||
	    syscall(SYS_setresuid, uid, uid, uid))
		return -errno;
	return 0;
}

/* bounding_clear() - drop every capability but keep from the bounding
 * set (where permitted: it needs CAP_SETPCAP) and the ambient set.
 * Returns 0 or -errno, naming the step in *what. */
static int bounding_clear(uint64_t keep, const char **what)
{
	int cap;

	*what = "cannot drop a capability from the bounding set";
	for (cap = 0; cap < PRIV_CAP_MAX; cap++)
		if (!(keep >> cap & 1) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) &&
		    errno != EINVAL && errno != EPERM)
			return -errno;
	*what = "cannot clear the ambient capabilities";
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) &&
	    errno != EINVAL)
		return -errno;
	return 0;
}

int priv_task_drop(uid_t uid, gid_t gid, uint64_t keep, const char **what)
{
	int rc;

	if ((rc = bounding_clear(keep, what)))
		return rc;
	*what = "PR_SET_KEEPCAPS";
	if (uid != PRIV_KEEP_IDS && keep && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		return -errno;
	*what = "cannot change user";
	if (uid != PRIV_KEEP_IDS && (rc = priv_switch_ids(uid, gid)))
		return rc;
	*what = "cannot clear capabilities";
	if (caps_set(keep))
		return -errno;
	*what = "prctl";
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/* caps_check() - the capabilities left are keep, in every set. */
static void caps_check(uint64_t keep)
{
	uint64_t eff, prm, inh;

	if (caps_get(&eff, &prm, &inh) || eff != keep || prm != keep || inh)
		die("privilege drop: capabilities left");
}

/* drop_check() - the drop holds: ids, groups, capabilities, no way back. */
static void drop_check(const struct priv *p, uint64_t keep)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg) ||
	    ru != p->uid || eu != p->uid || su != p->uid ||
	    rg != p->gid || eg != p->gid || sg != p->gid)
		die("privilege drop: uids/gids are not all %u:%u",
		    (unsigned int)p->uid, (unsigned int)p->gid);
	if (getgroups(0, NULL) != 0)
		die("privilege drop: supplementary groups left");
	caps_check(keep);
	if (!setuid(0) || !setgid(0))
		die("privilege drop: could change back to root");
}

/* noop_job() - an ns_call() job that only proves the entry works. */
static int noop_job(void *arg)
{
	(void)arg;
	return 0;
}

/* caps_clear() - staying who it is (see priv_drop()): the namespace
 * helper if planned, then the capabilities cleared but keep, no_new_privs,
 * checked; entering the guest's namespaces still works. */
static void caps_clear(struct ctx *c)
{
	const struct priv *p = &c->priv;
	uint64_t bind = 1ULL << CAP_NET_BIND_SERVICE, keep = 0, eff, prm, inh;
	const struct conf *f = &c->conf;
	const char *what;
	int rc;

	if (f->sandbox == SANDBOX_OFF || p->keep_caps)
		return;
	/* Useless once ferry left the user namespace owning the host's
	 * network (isolate_user()), and kept only if held. */
	if (p->keep_bind && !c->iso.moved_userns &&
	    !caps_get(&eff, &prm, &inh) && (eff & bind))
		keep = bind;
	/* The helper binds the namespace's side of -T/-U auto forwards. */
	if (p->ns_agent &&
	    (rc = ns_agent_start(c, PRIV_KEEP_IDS, 0, keep |
				 (f->tcp_out.mode == FWD_AUTO ||
				  f->udp_out.mode == FWD_AUTO ? bind : 0),
				 priv_task_drop)))
		die("cannot start the namespace helper: %s", strerror(-rc));
	if ((rc = priv_task_drop(PRIV_KEEP_IDS, 0, keep, &what)))
		die("clearing the capabilities: %s: %s", what, strerror(-rc));
	caps_check(keep);
	if (f->mode == MODE_NS && (rc = ns_call(c, noop_job, NULL)))
		die("without capabilities ferry cannot enter the guest's "
		    "namespaces: %s", strerror(-rc));
	isolate_layer(c, ISO_CAPS, true, NULL, 0);
	isolate_layer(c, ISO_NNP, true, NULL, 0);
	if (keep)
		info("keeping CAP_NET_BIND_SERVICE for auto forwards");
}

void priv_drop(struct ctx *c)
{
	const struct priv *p = &c->priv;
	uint64_t keep = p->keep_bind ? 1ULL << CAP_NET_BIND_SERVICE : 0;
	const char *what;
	int rc;

	if (!p->drop) {
		caps_clear(c);
		return;
	}
	icmp_keep_for(c, p->gid);	/* before: the group decides */
	if (p->ns_agent &&
	    (rc = ns_agent_start(c, p->uid, p->gid, keep, priv_task_drop)))
		die("cannot start the namespace helper as %u:%u: %s",
		    (unsigned int)p->uid, (unsigned int)p->gid,
		    strerror(-rc));
	if ((rc = priv_task_drop(p->uid, p->gid, keep, &what)))
		die("privilege drop to %u:%u: %s: %s", (unsigned int)p->uid,
		    (unsigned int)p->gid, what, strerror(-rc));
	drop_check(p, keep);
	isolate_layer(c, ISO_CAPS, true, NULL, 0);
	isolate_layer(c, ISO_NNP, true, NULL, 0);
	if (c->conf.mode == MODE_NS && (rc = ns_call(c, noop_job, NULL)))
		die("as %u:%u ferry cannot enter the guest's namespaces: %s",
		    (unsigned int)p->uid, (unsigned int)p->gid,
		    strerror(-rc));
	info("running as %u:%u%s", (unsigned int)p->uid, (unsigned int)p->gid,
	     keep ? ", keeping CAP_NET_BIND_SERVICE for auto forwards" : "");
}
