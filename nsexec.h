/* nsexec.h - work inside the guest's namespaces (nsexec.c): helper
 * tasks for ns_call(), the resident helper after ferry gives up root. */
#ifndef FERRY_NSEXEC_H
#define FERRY_NSEXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ctx;

/* ns_call() - run fn(arg) in a helper task inside the guest's user and
 * network namespaces (ns mode, after ns_start()): sockets it opens are
 * ferry's (shared fd table) and stay in the guest namespace; it shares
 * ferry's memory, and ferry waits for it. Returns fn's result, or -errno
 * (-ENOENT outside ns mode, or if entering the namespaces failed). */
int ns_call(const struct ctx *c, int (*fn)(void *arg), void *arg);
/* ns_agent_start() - before ferry gives up root or its capabilities
 * (priv_drop()), for a network namespace it could not enter after (it
 * belongs to ferry's own user namespace: "ip netns add" by root, or the
 * guest's after isolate_user() joined it): start a helper task that
 * shares ferry's memory and fds, enters the namespace while privileged,
 * then changes to uid:gid itself (PRIV_KEEP_IDS: keeps its ids),
 * capabilities keep only, and from then on runs every ns_call() job; it
 * dies with ferry. Returns 0 or -errno. */
/* The helper's own drop, priv.c's priv_task_drop(): handed in by its
 * caller, so this service calls nothing above it. */
typedef int ns_drop_fn(uid_t uid, gid_t gid, uint64_t keep,
		       const char **what);
int ns_agent_start(struct ctx *c, uid_t uid, gid_t gid, uint64_t keep,
		   ns_drop_fn *drop_fn);
/* ns_task_run() - run fn(arg) in a helper task inside the namespaces of
 * userns_fd (-1: none to enter) and netns_fd and wait for it. Returns
 * fn's result, or -errno if entering failed. */
int ns_task_run(int userns_fd, int netns_fd, int (*fn)(void *), void *arg);
/* pidfd_open_() - pidfd_open(2) (no libc wrapper everywhere). */
int pidfd_open_(pid_t pid);
/* ns_same() - fd is the namespace of ours named name ("user", "net"). */
bool ns_same(int fd, const char *name);

#endif /* FERRY_NSEXEC_H */
