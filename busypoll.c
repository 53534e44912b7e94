/* busypoll.c - adaptive busy polling before the loop sleeps.
 *
 * A request/response exchange through ferry wakes it twice: once for the
 * guest's request, once for the host's reply. On a virtual machine a
 * wake-up (an interrupt to an idle CPU, the scheduler, the return to user
 * space) costs more than the relay's own work, and it lies on the
 * exchange's critical path. So after a wait that returned events, the
 * next wait first polls, epoll_wait() with a zero timeout, for up to the
 * budget (--busy-poll, BP_DEFAULT_US), and sleeps only when nothing came.
 * The answer to a request usually comes within tens of microseconds, and
 * the poll catches it without a wake-up.
 *
 * Polling costs CPU, which on a small machine the guest's and the host's
 * applications need, so it stops where it does not pay:
 *
 *   pressure the kernel's CPU pressure (/proc/pressure/cpu, PSI: the time
 *            in which some runnable task waited for a CPU), sampled at
 *            most every BP_PSI_EVERY_MS while ferry would poll: above
 *            BP_PSI_PERMILLE of the time since the last sample, the CPUs
 *            are all wanted and ferry does not poll until a sample says
 *            otherwise. Polling then only uses a CPU nobody else wants;
 *            without the file (a kernel without PSI) ferry never polls;
 *   idle     polling follows only a wait that returned events: an idle
 *            ferry sleeps, and a single event costs at most one budget;
 *   misses   after BP_MISS_MAX polls in a row that found nothing, ferry
 *            sleeps at once, until a sleep that ended within the budget
 *            (an event a poll would have caught) shows polling pays again;
 *   CPU      a poll preempted (two clock reads around one epoll_wait()
 *            further apart than BP_PREEMPT_NS: another task ran on this
 *            CPU meanwhile) means the CPU is wanted: no polling for a
 *            backoff period, doubled at each preemption (BP_BACKOFF_MIN_MS
 *            to BP_BACKOFF_MAX_MS), halved by each poll that found events
 *            without being preempted;
 *   timers   no poll when a timer is due (timeout 0), and never beyond the
 *            wait's timeout.
 *
 * Bulk transfers always find events and never reach the poll's end; they
 * are unchanged. The decisions are pure functions of the clock and the
 * counters (bp_poll_ns(), bp_poll_done(), bp_wait_done()), unit-tested;
 * bp_wait() only runs them around the system calls.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "busypoll.h"
#include "ferry.h"
#include "log.h"
#include "util.h"

/* seccomp(all): epoll_wait pread64
 *   (the loop's wait; the PSI file read before a poll) */
/* seccomp(setup): openat */

#define BP_MISS_MAX		8
#define BP_PREEMPT_NS		50000
#define BP_BACKOFF_MIN_MS	10
#define BP_BACKOFF_MAX_MS	1000
#define BP_PSI_PATH		"/proc/pressure/cpu"
#define BP_PSI_EVERY_MS		50
#define BP_PSI_PERMILLE		50

/* ts_ns_diff() - a - b in nanoseconds. */
static int64_t ts_ns_diff(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(a->tv_sec - b->tv_sec) * 1000000000 +
	       (a->tv_nsec - b->tv_nsec);
}

void bp_init(struct busypoll *bp, unsigned int budget_us)
{
	*bp = (struct busypoll){ .budget_ns = (int64_t)budget_us * 1000,
				 .backoff_ms = BP_BACKOFF_MIN_MS,
				 .psi_fd = -1, .contended = true };
	if (!budget_us)
		return;
	bp->psi_fd = open(BP_PSI_PATH, O_RDONLY | O_CLOEXEC);
	if (bp->psi_fd < 0)
		info("busy polling off: %s: %s", BP_PSI_PATH, strerror(errno));
}

void bp_pressure(struct busypoll *bp, const struct timespec *now,
		 uint64_t total_us, bool ok)
{
	bp->samples++;
	if (!ok) {
		bp->psi_known = false;
		bp->contended = true;
	} else if (bp->psi_known) {
		int64_t wall_us = ts_ns_diff(now, &bp->psi_at) / 1000;

		bp->contended = total_us < bp->psi_total || wall_us <= 0 ||
				(total_us - bp->psi_total) * 1000 >
				(uint64_t)wall_us * BP_PSI_PERMILLE;
	}
	if (bp->contended)
		bp->contended_samples++;
	if (ok) {
		bp->psi_at = *now;
		bp->psi_total = total_us;
		bp->psi_known = true;
	}
}

/* bp_psi_read() - the "some" stall total (us) from the pressure file. */
static bool bp_psi_read(int fd, uint64_t *total_us)
{
	char buf[256], *end;
	const char *t;
	unsigned long long v;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	t = strstr(buf, "total=");	/* the first line is "some" */
	if (!t || !isdigit((unsigned char)t[6]))
		return false;
	errno = 0;
	v = strtoull(t + 6, &end, 10);
	if (errno)
		return false;
	*total_us = v;
	return true;
}

/* bp_sample() - read the pressure when a poll may follow and the last
 * sample is older than BP_PSI_EVERY_MS. */
static void bp_sample(struct busypoll *bp, const struct timespec *now)
{
	uint64_t total = 0;
	bool ok;

	if (bp->psi_fd < 0 || !bp->last_found ||
	    (bp->psi_known && ts_ns_diff(now, &bp->psi_at) <
			      (int64_t)BP_PSI_EVERY_MS * 1000000))
		return;
	ok = bp_psi_read(bp->psi_fd, &total);
	bp_pressure(bp, now, total, ok);
}

int64_t bp_poll_ns(const struct busypoll *bp, const struct timespec *now,
		   int timeout_ms)
{
	if (!bp->budget_ns || !bp->last_found || !timeout_ms || bp->contended ||
	    bp->misses >= BP_MISS_MAX || ts_ns_diff(now, &bp->quiet_until) < 0)
		return 0;
	if (timeout_ms > 0 && (int64_t)timeout_ms * 1000000 < bp->budget_ns)
		return (int64_t)timeout_ms * 1000000;
	return bp->budget_ns;
}

void bp_poll_done(struct busypoll *bp, const struct timespec *now,
		  bool found, bool preempted)
{
	bp->polls++;
	bp->last_found = found;
	if (preempted) {
		bp->preempts++;
		bp->quiet_until = ts_add_ms(*now, bp->backoff_ms);
		bp->backoff_ms = MIN(bp->backoff_ms * 2, BP_BACKOFF_MAX_MS);
	}
	if (found) {
		bp->misses = 0;
		if (!preempted) {
			bp->hits++;
			bp->backoff_ms = MAX(bp->backoff_ms / 2,
					     BP_BACKOFF_MIN_MS);
		}
	} else if (bp->misses < BP_MISS_MAX) {
		bp->misses++;
	}
}

void bp_wait_done(struct busypoll *bp, int64_t waited_ns, bool found)
{
	bp->last_found = found;
	if (found && waited_ns <= bp->budget_ns)
		bp->misses = 0;
}

/* bp_poll() - poll epfd for up to ns; the events found (0: none) or -1
 * with errno. */
static int bp_poll(struct busypoll *bp, int epfd, struct epoll_event *ev,
		   int max, int64_t ns)
{
	struct timespec start, prev, t;
	bool preempted = false;
	int n;

	now_mono(&start);
	prev = start;
	for (;;) {
		n = epoll_wait(epfd, ev, max, 0);
		now_mono(&t);
		if (ts_ns_diff(&t, &prev) > BP_PREEMPT_NS)
			preempted = true;
		if (n || preempted || ts_ns_diff(&t, &start) >= ns)
			break;
		prev = t;
	}
	bp_poll_done(bp, &t, n > 0, preempted);
	return n;
}

int bp_wait(struct ctx *c, int epfd, struct epoll_event *ev, int max,
	    int timeout_ms)
{
	struct busypoll *bp = &c->bp;
	struct timespec start, end;
	int64_t ns;
	int n;

	bp_sample(bp, &c->now);
	ns = bp_poll_ns(bp, &c->now, timeout_ms);

	if (ns && (n = bp_poll(bp, epfd, ev, max, ns)))
		return n;
	if (!bp->budget_ns)
		return epoll_wait(epfd, ev, max, timeout_ms);
	now_mono(&start);
	n = epoll_wait(epfd, ev, max, timeout_ms);
	now_mono(&end);
	bp_wait_done(bp, ts_ns_diff(&end, &start), n > 0);
	return n;
}

/* The polling counters' statistics line (drop.h's registry), when
 * polling is on (it samples the CPU pressure). */
static const struct stat_item bp_stat_items[] = {
	STAT_TEXT(" ", "", struct ctx, bp.polls),
	STAT_TEXT(", found events ", "", struct ctx, bp.hits),
	STAT_TEXT(", preempted ", "", struct ctx, bp.preempts),
	STAT_TEXT(", CPU pressure samples ", "", struct ctx, bp.samples),
	STAT_TEXT(", contended ", "", struct ctx, bp.contended_samples),
};

STAT_GROUP(bp_stats) = {
	.order = 40, .what = "busy polls", .when = STAT_GATE,
	.gate_off = STAT_FIELD(struct ctx, bp.samples), .via = -1,
	.items = bp_stat_items, .n = ARRAY_SIZE(bp_stat_items),
};
