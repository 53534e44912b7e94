/* ns.h - see ns.c. */
#ifndef FERRY_NS_H
#define FERRY_NS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ctx;

/* ns_start() - create (or join) the guest's user and network namespace,
 * bring its lo up, create the tap device there, configure it
 * (--config-net) and attach it as the guest link (with --splice-only: no
 * tap, no guest link). Exits with a message on failure. Returns the fd
 * that releases the command (ns_run_command()), -1 when joining. */
int ns_start(struct ctx *c);
/* ns_cmd_check() - before any set-up: a command that does not exist (no
 * such file, or no such name in PATH) ends ferry at once, with the one
 * line and the status (127) its exec would give after the set-up. */
void ns_cmd_check(char *const *cmd);
/* ns_run_command() - let the command start, once everything it may use
 * (forwarded ports in both directions) is set up. go: from ns_start(). */
void ns_run_command(int go);
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
int ns_agent_start(struct ctx *c, uid_t uid, gid_t gid, uint64_t keep);
/* ns_child_handler() - the command exited or the joined namespace went
 * away: sets c->quit and c->exit_code. */
void ns_child_handler(struct ctx *c, uint32_t events);
/* ns_map_ids() - in a user namespace just made: in_uid/in_gid inside map
 * to uid/gid outside, one id each, setgroups denied (as "unshare -r" for
 * 0). Returns 0 or -errno. */
int ns_map_ids(uid_t in_uid, uid_t uid, gid_t in_gid, gid_t gid);
/* ns_same() - fd is the namespace of ours named name ("user", "net"). */
bool ns_same(int fd, const char *name);

#endif /* FERRY_NS_H */
