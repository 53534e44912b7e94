/* ev.h - event registration and timer requests (ev.c), apart from the
 * loop that dispatches them (loop.c).
 *
 * Every fd registered with epoll carries a union eref naming its type and
 * an index (flow, listener, ...); loop.c maps the types to handlers. A
 * module asks for its timer callback with timer_request(); the loop runs
 * the module timers when the earliest request is due.
 */
#ifndef EV_H
#define EV_H

#include <stdint.h>

struct ctx;

enum eref_type {
	EREF_NONE = 0,
	EREF_LINK,		/* guest link fd (tap device, qemu socket) */
	EREF_LINK_LISTEN,	/* vm mode: listening UNIX socket */
	EREF_SIGNAL,		/* signalfd */
	EREF_CHILD,		/* pidfd of the namespace command / ns holder */
	EREF_PING,		/* ping socket of an ICMP echo flow */
	EREF_TCP,		/* TCP flow socket */
	EREF_TCP_LISTEN,	/* TCP forwarded-port listener */
	EREF_TCP_TIMER,		/* TCP timer */
	EREF_TCP_SPLICE,	/* loopback splice socket */
	EREF_UDP,		/* UDP flow socket */
	EREF_UDP_LISTEN,	/* UDP forwarded-port socket */
	EREF_UDP_MCAST,		/* UDP socket of a group the guest joined */
	EREF_VU,		/* vm mode: vhost-user control socket */
	EREF_EXIT_FD,		/* --exit-fd (notify.c) */
	EREF_CTL_LISTEN,	/* -c: the control socket (ctl.c) */
	EREF_CTL,		/* -c: a control client (idx: its slot) */
	EREF_REPAIR_LISTEN,	/* --repair-path: the helper's socket */
	EREF_REPAIR,		/* --repair-path: the helper (repair.c) */
	EREF_TYPE_MAX
};

union eref {
	struct {
		uint8_t type;
		uint8_t side;
		uint16_t aux;
		uint32_t idx;
	};
	uint64_t u64;
};

/* ep_add()/ep_mod()/ep_del() - register fd with the loop under a
 * reference (control fds also in the control set, see ev.c). Return 0
 * or -errno. */
int ep_add(const struct ctx *c, int fd, uint32_t events, union eref ref);
int ep_mod(const struct ctx *c, int fd, uint32_t events, union eref ref);
void ep_del(const struct ctx *c, int fd);

/* timer_request() - ask the loop to call module timers no later than
 * ms milliseconds from c->now. */
void timer_request(struct ctx *c, int64_t ms);

#endif /* EV_H */
