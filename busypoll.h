/* busypoll.h - adaptive busy polling before the loop sleeps (busypoll.c). */
#ifndef BUSYPOLL_H
#define BUSYPOLL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define BP_DEFAULT_US	50	/* --busy-poll default */
#define BP_MAX_US	1000	/* --busy-poll upper bound */

struct busypoll {
	int64_t budget_ns;		/* --busy-poll; 0: never poll */
	bool last_found;		/* the last wait returned events */
	unsigned int misses;		/* polls in a row that found nothing */
	struct timespec quiet_until;	/* no polling before (preempted) */
	int64_t backoff_ms;		/* next quiet period after a preemption */
	int psi_fd;			/* /proc/pressure/cpu, -1: none */
	struct timespec psi_at;		/* last pressure sample */
	uint64_t psi_total;		/* its "some" stall total, us */
	bool psi_known;			/* psi_at/psi_total hold a sample */
	bool contended;			/* tasks waited for a CPU lately */
	uint64_t polls, hits, preempts;	/* statistics */
	uint64_t samples, contended_samples;
};

struct ctx;
struct epoll_event;

/* bp_init() - polling for budget_us microseconds per wait (0: off);
 * opens the CPU pressure file (before the privilege drop). */
void bp_init(struct busypoll *bp, unsigned int budget_us);

/* bp_pressure() - a CPU pressure sample at now: the "some" stall total
 * in us, or ok false when it could not be read. Sets bp->contended. */
void bp_pressure(struct busypoll *bp, const struct timespec *now,
		 uint64_t total_us, bool ok);

/* bp_poll_ns() - how long the next wait may poll before it sleeps, in
 * ns (0: sleep at once), given the loop's clock and the wait's timeout
 * (ms, -1: none, 0: timers due). */
int64_t bp_poll_ns(const struct busypoll *bp, const struct timespec *now,
		   int timeout_ms);

/* bp_poll_done() - a poll ended at now: it found events, or not, and
 * whether the task was preempted while polling. */
void bp_poll_done(struct busypoll *bp, const struct timespec *now,
		  bool found, bool preempted);

/* bp_wait_done() - a sleeping wait ended after waited_ns, with events or
 * not. */
void bp_wait_done(struct busypoll *bp, int64_t waited_ns, bool found);

/* bp_wait() - epoll_wait() on epfd that polls first when bp_poll_ns()
 * says so; the same return value as epoll_wait(). */
int bp_wait(struct ctx *c, int epfd, struct epoll_event *ev, int max,
	    int timeout_ms);


#endif /* BUSYPOLL_H */
