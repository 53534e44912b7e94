/* priv.h - giving up root after start-up (--runas, default nobody). */
#ifndef FERRY_PRIV_H
#define FERRY_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PRIV_NOBODY_ID	65534		/* nobody's uid/gid without an entry */
#define PRIV_KEEP_IDS	((uid_t)-1)	/* priv_task_drop(): ids stay */

/* What start-up decided (priv_plan()) and priv_drop() carries out. */
struct priv {
	bool drop;		/* change to uid:gid after start-up */
	bool keep_bind;		/* keep CAP_NET_BIND_SERVICE (-t/-u auto) */
	bool ns_agent;		/* ns mode: the guest's namespace is in our
				 * own user namespace (root made it, or
				 * isolate_user() joined the guest's): a
				 * resident helper enters it (ns_agent_start()) */
	bool keep_caps;		/* not root, sandbox on: the capabilities
				 * cannot be cleared (ns_call() needs them) */
	uid_t uid;
	gid_t gid;
};

struct ctx;

/* priv_plan() - right after the command line: decide whether and to whom
 * ferry changes (c->priv). Started as root: the --runas user, else
 * nobody; uid 0 keeps root; a user not mapped in ferry's user namespace
 * is refused for --runas, and without it root is kept (the sandbox's
 * root of a user namespace mapping only itself). Not root: --runas must
 * name the current user. Errors: one line naming --runas, exit 1. */
void priv_plan(struct ctx *c);

/* priv_ns_check() - ns mode, once the namespaces are open and before
 * detaching: can the new user (or ferry without capabilities, when the
 * sandbox clears them and ferry stays who it is) still enter the guest's
 * namespaces (ns_call())? Picks the user namespace to enter for a joined
 * network namespace, or for one in ferry's own user namespace plans the
 * resident helper (ns_agent_start()); if none can be entered: with
 * --runas, one line and exit 1, without it a warning and root is kept;
 * staying who it is, the capabilities are kept (strict: exit 1). */
void priv_ns_check(struct ctx *c);

/* priv_drop() - after every privileged open (listeners, tap, sockets,
 * pid, pcap and log files), from isolate_apply(): change to c->priv's
 * user for good and check it (see priv.c); ferry staying who it is
 * (rootless, root of a user namespace mapping only itself, --runas 0)
 * clears its capabilities the same way unless --sandbox=off. Dies if any
 * step fails: never runs half-dropped. */
void priv_drop(struct ctx *c);

/* priv_task_drop() - the calling task gives up root for uid:gid: the
 * bounding set but keep and the ambient set cleared, no groups, all
 * ids (uid PRIV_KEEP_IDS: ids and groups as they are), capabilities
 * keep only (permitted, effective), no_new_privs.
 * Returns 0 or -errno with the failed step in *what. Also for ns.c's
 * resident helper, which must not die() (it shares ferry's memory). */
int priv_task_drop(uid_t uid, gid_t gid, uint64_t keep, const char **what);
/* priv_switch_ids() - setgroups(none) + setresgid + setresuid, all three
 * ids each. Returns 0 or -errno. Also for ns.c's command child. */
int priv_switch_ids(uid_t uid, gid_t gid);

/* priv_passwd_find() - the uid and primary gid of name in the passwd
 * file at path, read as plain text (no NSS modules). */
bool priv_passwd_find(const char *path, const char *name, uid_t *uid,
		      gid_t *gid);

/* priv_id_mapped() - does the id map at path (/proc/self/uid_map format:
 * "inside outside count" lines) cover id inside? A missing file: no. */
bool priv_id_mapped(const char *path, uint32_t id);

#endif /* FERRY_PRIV_H */
