/* ctl.h - the control socket (-c PATH, --control PATH): a UNIX stream
 * socket answering one-line JSON requests (ctl.c; the protocol is in
 * doc/ferry.1, CONTROL PROTOCOL). The clients are in ctl_cmd.c.
 */
#ifndef FERRY_CTL_H
#define FERRY_CTL_H

#include <stdint.h>

struct ctx;

#define CTL_LINE_MAX	65536	/* bytes of one request, newline included */
#define CTL_OUT_MAX	(1 << 20)	/* reply bytes queued for one client */
#define CTL_CLIENTS_MAX	64	/* clients at once; more are refused */
#define CTL_STALL_MS	10000	/* a client not reading its replies for
				 * this long is dropped */

/* ctl_init() - with -c: the listening socket (mode 0600, a stale one
 * replaced), in the loop; dies if it cannot be made. Start-up only,
 * before the sandbox (the fd stays usable after it). */
void ctl_init(struct ctx *c);
/* ctl_stop() - at exit (normal, or SIGTERM's): remove the socket file
 * through the directory fd kept from start-up (isolate.c lets only
 * that), else by its path; nothing without -c. */
void ctl_stop(const struct ctx *c);
/* ctl_listen_handler() - EREF_CTL_LISTEN: accept new clients. */
void ctl_listen_handler(struct ctx *c, uint32_t events);
/* ctl_handler() - EREF_CTL: client idx readable or writable. */
void ctl_handler(struct ctx *c, uint32_t idx, uint32_t events);
/* ctl_timer() - drop clients that stopped reading (CTL_STALL_MS). */
void ctl_timer(struct ctx *c);

#endif /* FERRY_CTL_H */
