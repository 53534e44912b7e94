/* repair.h - TCP_REPAIR through a helper holding CAP_NET_ADMIN (repair.c):
 * the helper itself (`ferry repair PATH`, or a link named passt-repair)
 * and ferry's side of its socket (--repair-path).
 */
#ifndef FERRY_REPAIR_H
#define FERRY_REPAIR_H

#include <stdbool.h>
#include <stdint.h>

struct ctx;

/* The one-byte commands, the values of the TCP_REPAIR option. */
#define REPAIR_ON		1	/* TCP_REPAIR_ON */
#define REPAIR_OFF		0	/* TCP_REPAIR_OFF: a window probe */
#define REPAIR_OFF_NO_WP	(-1)	/* TCP_REPAIR_OFF_NO_WP: none */
#define REPAIR_FREEZE		2	/* ferry's helper only: a filter that
					 * drops every segment, then repair
					 * on (tcp_repair.c says why) */
#define REPAIR_HELLO		'F'	/* `ferry repair` says so on connect */

#define REPAIR_FDS_MAX		253	/* SCM_MAX_FD: fds in one message */
#define REPAIR_WAIT_MS		100	/* for a helper not connected yet */
#define REPAIR_REPLY_MS		5000	/* for the helper's echo */

/* repair_main() - the helper: connect to PATH (argv[1]), then for every
 * message (a command byte, up to REPAIR_FDS_MAX sockets) set TCP_REPAIR
 * on each socket and echo the byte. Returns the exit status: 0 at the
 * end of file, 1 on an error, 2 on a usage error. As `ferry repair` (not
 * as passt-repair: upstream's passt would not expect it) it says
 * REPAIR_HELLO first and takes REPAIR_FREEZE. */
int repair_main(int argc, char **argv);

/* repair_init() - vhost-user only: listen on --repair-path, by default
 * the -s path with ".repair" appended, "none": not at all (mode 0600, a
 * stale socket replaced); dies if it cannot. Start-up only, after the
 * -s socket is bound and before the sandbox. */
void repair_init(struct ctx *c);
/* repair_listen_handler() - EREF_REPAIR_LISTEN: take one helper; a
 * second one is refused while the first stays. */
void repair_listen_handler(struct ctx *c, uint32_t events);
/* repair_handler() - EREF_REPAIR: the helper hung up (or an error). */
void repair_handler(struct ctx *c, uint32_t events);
/* repair_available() - is a helper connected? Waits REPAIR_WAIT_MS at
 * most for one that is not yet. */
bool repair_available(struct ctx *c);
/* repair_can_freeze() - does the helper know REPAIR_FREEZE (it said
 * REPAIR_HELLO: `ferry repair`, not passt-repair)? */
bool repair_can_freeze(const struct ctx *c);
/* repair_set() - queue socket s for command cmd (REPAIR_*): the batch
 * goes to the helper when the command changes or it is full. 0 or
 * -errno (the helper is dropped then). */
int repair_set(struct ctx *c, int s, int cmd);
/* repair_flush() - send the queued batch and wait for the echo (at most
 * REPAIR_REPLY_MS). 0 or -errno (the helper is dropped then). */
int repair_flush(struct ctx *c);
/* repair_stop() - at exit: remove the socket file. */
void repair_stop(const struct ctx *c);

#endif /* FERRY_REPAIR_H */
