/* ns.h - namespace mode (ns.c); the namespace-entering service is
 * nsexec.h. */
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
/* ns_child_handler() - the command exited or the joined namespace went
 * away: sets c->quit and c->exit_code. */
void ns_child_handler(struct ctx *c, uint32_t events);
/* ns_map_ids() - in a user namespace just made: in_uid/in_gid inside map
 * to uid/gid outside, one id each, setgroups denied (as "unshare -r" for
 * 0). Returns 0 or -errno. */
int ns_map_ids(uid_t in_uid, uid_t uid, gid_t in_gid, gid_t gid);

#endif /* FERRY_NS_H */
