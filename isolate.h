/* isolate.h - confinement after set-up: namespaces, an empty root,
 * capabilities, Landlock (isolate.c); the layers' record and the start-up
 * line that names them. */
#ifndef FERRY_ISOLATE_H
#define FERRY_ISOLATE_H

#include <stdbool.h>

/* The layers of confinement, one bit each in struct isolate's active. A
 * module that applies one (seccomp.c: ISO_SECCOMP) records it with
 * isolate_layer() before isolate_report() prints the line. */
enum iso_layer {
	ISO_USERNS	= 1U << 0,	/* entered or made a user namespace */
	ISO_MOUNT	= 1U << 1,	/* own mount namespace, empty root */
	ISO_PID		= 1U << 2,	/* own PID namespace (daemon only) */
	ISO_IPC		= 1U << 3,
	ISO_UTS		= 1U << 4,
	ISO_CAPS	= 1U << 5,	/* capability sets cleared */
	ISO_NNP		= 1U << 6,	/* PR_SET_NO_NEW_PRIVS */
	ISO_LANDLOCK	= 1U << 7,	/* no filesystem access */
	ISO_SECCOMP	= 1U << 8,	/* system call allow-list */
};

/* What isolate.c did, for the report and for priv.c. */
struct isolate {
	unsigned int active;		/* enum iso_layer bits in force */
	unsigned int failed;		/* layers tried and refused */
	bool moved_userns;		/* isolate_user(): ferry left the user
					 * namespace owning the host's network:
					 * no capability there is of use */
};

struct ctx;

/* isolate_user() - right after the guest link exists (ns_start(),
 * vm_start()): if ferry lacks CAP_SYS_ADMIN in its user namespace
 * (rootless), enter one where it has it, so the namespaces of
 * isolate_apply() can be made: in namespace mode the guest's (as pasta:
 * ferry is its owner), in VM mode a new one mapping ferry's own ids.
 * Nothing with --sandbox=off. A refusal: strict dies, on warns. */
void isolate_user(struct ctx *c);

/* isolate_pid() - daemonize(), just before the fork that detaches: a new
 * PID namespace, whose first process (PID 1) the daemon will be. Only
 * there: a process cannot move into a PID namespace itself. */
void isolate_pid(struct ctx *c);

/* isolate_apply() - after every set-up step that needs the filesystem
 * (all files, sockets, listeners open; detached): own mount, IPC and UTS
 * namespaces with an empty read-only tmpfs as root, no_new_privs, a
 * Landlock ruleset denying all filesystem access, then priv_drop()
 * (identity, capabilities). With --sandbox=off only priv_drop(). */
void isolate_apply(struct ctx *c);

/* isolate_layer() - record whether layer applied; a failure names why
 * (what, errno err): --sandbox=strict dies, on warns once. */
void isolate_layer(struct ctx *c, enum iso_layer layer, bool ok,
		   const char *what, int err);

/* isolate_report() - the one start-up line naming the layers in force
 * (after seccomp_install(), the last set-up step). */
void isolate_report(const struct ctx *c);

#endif /* FERRY_ISOLATE_H */
