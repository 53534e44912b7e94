/* loop.c - the event loop: wait, dispatch, timers, flush.
 *
 * One single-threaded epoll loop serves everything:
 *
 *   wait (timeout = earliest module timer; busypoll.c may poll first)
 *   -> handle each ready fd by the type in its union eref
 *   -> run module timers if due
 *   -> flush frames queued for the guest (one batch per iteration)
 *
 * Modules register fds with ep_add() under a reference and ask for timer
 * callbacks with timer_request() (ev.c, registration apart from
 * dispatch); dispatch() maps reference types to module handlers.
 *
 * Back-pressure: while the guest link is stalled (a qemu stream socket
 * took only part of a batch, tap_stream.c) the loop waits on a second
 * epoll set, c->ctl_epfd, holding only the control fds (ev.c puts them
 * there: the link, its listener, the vhost-user socket, signals, the
 * child) and no host socket. Host data then waits in the kernel, where
 * TCP flow control pushes back on the sender, instead of filling the
 * link's queue only to be dropped. The sockets' readiness is kept by the
 * main set (level-triggered, or an edge not yet collected) and reported
 * as soon as the loop waits on it again. Only stream links stall: in
 * namespace mode and with vhost-user there is no control set.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include "ctl.h"
#include "drain.h"
#include "ferry.h"
#include "igmp.h"
#include "log.h"
#include "migrate.h"
#include "ndp.h"
#include "notify.h"
#include "ns.h"
#include "repair.h"
#include "seccomp.h"
#include "util.h"
#include "vhost_user.h"
#include "vm.h"

/* seccomp(all): epoll_ctl read
 *   (registrations, the signalfd) */
/* seccomp(setup): rt_sigaction rt_sigprocmask signalfd4 */

#define EVENTS_MAX	128

/* link_closed() - the guest link went away: the mode decides (exit, or
 * wait for the next client). */
void link_closed(struct ctx *c)
{
	if (c->conf.mode == MODE_VM) {
		vm_link_closed(c);
		return;
	}
	err("tap device closed");
	c->quit = true;
	c->exit_code = 1;
}

void link_close_pending(struct ctx *c)
{
	if (!c->link.closing)
		return;
	c->link.closing = false;
	link_closed(c);
}

/* signal_handler() - SIGTERM/SIGINT drain before exit (drain.c), a
 * second one quits at once; SIGHUP quits at once; SIGUSR1 dumps
 * statistics. The exit status stays the command's, if it exited. */
static void signal_handler(struct ctx *c)
{
	struct signalfd_siginfo si;
	char why[32];

	while (read(c->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			stats_log(c);
			continue;
		}
#ifdef FERRY_TEST
		if (si.ssi_signo == SIGUSR2) {
			seccomp_test_violate();
			continue;
		}
#endif
		if (si.ssi_signo == SIGHUP || c->draining) {
			info("signal %u: exiting", si.ssi_signo);
			c->quit = true;
			continue;
		}
		snprintf(why, sizeof(why), "signal %u", si.ssi_signo);
		drain_begin(c, why);
	}
}

/* signals_init() - block the handled signals and read them from a
 * signalfd registered with the loop. */
void signals_init(struct ctx *c)
{
	union eref ref = { .type = EREF_SIGNAL };
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
#ifdef FERRY_TEST
	sigaddset(&set, SIGUSR2);	/* seccomp_test_violate() */
#endif
	sigprocmask(SIG_BLOCK, &set, NULL);
	c->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (c->sigfd < 0 || ep_add(c, c->sigfd, EPOLLIN, ref))
		die("signalfd: %s", strerror(errno));
}

/* dispatch() - one ready fd, by the type in its reference. */
static void dispatch(struct ctx *c, union eref ref, uint32_t events)
{
	switch (ref.type) {
	case EREF_LINK:
		tap_handler(c, events);
		break;
	case EREF_LINK_LISTEN:
		vm_listen_handler(c, events);
		break;
	case EREF_VU:
		vu_ctrl_handler(c, events);
		break;
	case EREF_SIGNAL:
		signal_handler(c);
		break;
	case EREF_CHILD:
		ns_child_handler(c, events);
		break;
	case EREF_EXIT_FD:
		notify_exit_handler(c, events);
		break;
	case EREF_PING:
		icmp_sock_handler(c, ref.idx, events);
		break;
	case EREF_TCP:
	case EREF_TCP_TIMER:
		tcp_sock_handler(c, ref.u64, events);
		break;
	case EREF_TCP_LISTEN:
		tcp_fwd_listen_handler(c, ref.u64, events);
		break;
	case EREF_TCP_SPLICE:
		tcp_splice_handler(c, ref.u64, events);
		break;
	case EREF_UDP:
	case EREF_UDP_LISTEN:
	case EREF_UDP_MCAST:
		udp_sock_handler(c, ref.u64, events);
		break;
	case EREF_CTL_LISTEN:
		ctl_listen_handler(c, events);
		break;
	case EREF_CTL:
		ctl_handler(c, ref.idx, events);
		break;
	case EREF_REPAIR_LISTEN:
		repair_listen_handler(c, events);
		break;
	case EREF_REPAIR:
		repair_handler(c, events);
		break;
	default:
		err("event for unknown reference type %u", ref.type);
		break;
	}
}

/* stats_timer() - --stats DELAY: the statistics on the log every DELAY
 * seconds, the first DELAY seconds after start (pasta's option: it shows
 * its counters at most that often). */
static void stats_timer(struct ctx *c)
{
	int64_t every = (int64_t)c->conf.stats_s * 1000;

	if (!every)
		return;
	if (!c->stats_due.tv_sec && !c->stats_due.tv_nsec) {
		c->stats_due = ts_add_ms(c->now, every);
	} else if (ts_ms_diff(&c->now, &c->stats_due) >= 0) {
		stats_log(c);
		c->stats_due = ts_add_ms(c->now, every);
	}
	timer_request(c, ts_ms_diff(&c->stats_due, &c->now));
}

/* timers_run() - let every module do its periodic work. */
static void timers_run(struct ctx *c)
{
	c->timer_armed = false;
	stats_timer(c);
	ndp_timer(c);
	icmp_timer(c);
	tcp_timer(c);
	tcp_fwd_timer(c);
	udp_timer(c);
	igmp_timer(c);
	stream_timer(c);
	migrate_timer(c);
	ctl_timer(c);
}

/* loop_timeout() - epoll_wait() timeout in ms: until the earliest timer
 * request (at most 60 s), -1 when none. */
static int loop_timeout(const struct ctx *c)
{
	int64_t ms;

	if (!c->timer_armed)
		return -1;
	ms = ts_ms_diff(&c->timer_due, &c->now);
	return ms < 0 ? 0 : (int)MIN(ms + 1, 60000);
}

/* loop() - wait, dispatch, run due timers, flush frames; until c->quit. */
void loop(struct ctx *c)
{
	struct epoll_event ev[EVENTS_MAX];

	stats_timer(c);			/* arms the first dump */
	while (!c->quit) {
		int epfd = c->link.tx_stalled && c->ctl_epfd >= 0 ?
			   c->ctl_epfd : c->epfd;	/* back-pressure */
		int i, n = bp_wait(c, epfd, ev, EVENTS_MAX, loop_timeout(c));

		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		now_mono(&c->now);
		c->loop_iter++;
		for (i = 0; i < n && !c->quit; i++) {
			union eref ref = { .u64 = ev[i].data.u64 };

			dispatch(c, ref, ev[i].events);
			link_close_pending(c);
		}
		if (c->timer_armed && ts_ms_diff(&c->now, &c->timer_due) >= 0)
			timers_run(c);
		link_close_pending(c);
		drain_step(c);		/* its resets go out with the flush */
		tap_flush(c);
		link_close_pending(c);
	}
}

