/* ev.c - event registration and timer requests, apart from dispatch.
 *
 * Every floor registers its fds here and asks for timer callbacks; the
 * loop (loop.c) waits, dispatches and runs the timers. Nothing here calls
 * a module.
 *
 * Two epoll sets: the main one, c->epfd, holds every fd; the control set,
 * c->ctl_epfd (only when the link can stall: a qemu stream), holds also
 * the control fds (ep_is_ctl()): the link, its listener, the vhost-user
 * socket, signals, the child. The loop waits on the control set alone
 * while the link is stalled (back-pressure, see loop.c).
 */
#include <errno.h>
#include <sys/epoll.h>

#include "ev.h"
#include "ferry.h"
#include "util.h"

/* seccomp(all): epoll_ctl
 *   (registrations) */

/* ep_is_ctl() - is the fd under ref served while the link is stalled? */
static bool ep_is_ctl(union eref ref)
{
	switch (ref.type) {
	case EREF_LINK:
	case EREF_LINK_LISTEN:
	case EREF_VU:
	case EREF_SIGNAL:
	case EREF_CHILD:
	case EREF_CTL_LISTEN:
	case EREF_CTL:
		return true;
	default:
		return false;
	}
}

/* ep_ctl() - epoll_ctl() op on the main set and, for a control fd, on
 * the control set; 0 or -errno. */
static int ep_ctl(const struct ctx *c, int op, int fd, uint32_t events,
		  union eref ref)
{
	struct epoll_event ev = { .events = events, .data.u64 = ref.u64 };

	if (epoll_ctl(c->epfd, op, fd, &ev))
		return -errno;
	if (c->ctl_epfd >= 0 && ep_is_ctl(ref) &&
	    epoll_ctl(c->ctl_epfd, op, fd, &ev))
		return -errno;
	return 0;
}

/* ep_add() - EPOLL_CTL_ADD fd under ref; 0 or -errno. */
int ep_add(const struct ctx *c, int fd, uint32_t events, union eref ref)
{
	return ep_ctl(c, EPOLL_CTL_ADD, fd, events, ref);
}

/* ep_mod() - EPOLL_CTL_MOD fd's events and ref; 0 or -errno. */
int ep_mod(const struct ctx *c, int fd, uint32_t events, union eref ref)
{
	return ep_ctl(c, EPOLL_CTL_MOD, fd, events, ref);
}

/* ep_del() - EPOLL_CTL_DEL fd from both sets (errors ignored: closing
 * does it too, unless the fd is shared, say an inherited --fd; a host
 * socket is not in the control set: ENOENT there, only in VM mode). */
void ep_del(const struct ctx *c, int fd)
{
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (c->ctl_epfd >= 0)
		epoll_ctl(c->ctl_epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* timer_request() - the loop runs the module timers no later than ms
 * from c->now (the earliest request wins). */
void timer_request(struct ctx *c, int64_t ms)
{
	struct timespec t = ts_add_ms(c->now, ms);

	if (!c->timer_armed || ts_ms_diff(&t, &c->timer_due) < 0) {
		c->timer_due = t;
		c->timer_armed = true;
	}
}
