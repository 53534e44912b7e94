/* test_busypoll.c - adaptive busy polling (busypoll.c): when a wait may
 * poll and for how long, the back-off after a preemption, the misses
 * that stop polling and the short sleep that restarts it, the CPU
 * pressure samples (good, contended, unreadable, a counter going back),
 * and bp_wait() on a real epoll set: a poll that finds an event, one
 * that finds none and sleeps. */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "busypoll.h"
#include "ferry.h"
#include "unit.h"

static struct timespec at_ms(int64_t ms)
{
	return (struct timespec){ .tv_sec = 100 + ms / 1000,
				  .tv_nsec = (ms % 1000) * 1000000 };
}

/* quiet() - a polling state as after two samples of an idle machine and
 * a wait that returned events. */
static void quiet(struct busypoll *bp, unsigned int us)
{
	struct timespec t0 = at_ms(0), t1 = at_ms(100);

	bp_init(bp, us);
	bp_pressure(bp, &t0, 5000, true);
	bp_pressure(bp, &t1, 5000 + 1000, true);	/* 1% of 100 ms */
	bp->last_found = true;
}

TEST(busypoll_off_idle_timers_and_timeout)
{
	struct busypoll bp;
	struct timespec now = at_ms(200);

	bp_init(&bp, 0);
	bp.last_found = true;
	bp.contended = false;
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 0);		/* --busy-poll 0 */
	quiet(&bp, 50);
	CHECK(!bp.contended);
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 50000);
	CHECK_EQ(bp_poll_ns(&bp, &now, 1000), 50000);
	CHECK_EQ(bp_poll_ns(&bp, &now, 0), 0);		/* timers due */
	quiet(&bp, 1000);
	CHECK_EQ(bp_poll_ns(&bp, &now, 1), 1000000);	/* the timeout bounds */
	bp.last_found = false;				/* idle: sleep */
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 0);
	if (bp.psi_fd >= 0)
		close(bp.psi_fd);
}

TEST(busypoll_pressure_samples)
{
	struct busypoll bp;
	struct timespec t;

	bp_init(&bp, 50);
	bp.last_found = true;
	t = at_ms(0);
	CHECK(bp.contended);		/* no decision before two samples */
	bp_pressure(&bp, &t, 1000, true);
	CHECK(bp.contended);
	CHECK_EQ(bp_poll_ns(&bp, &t, -1), 0);
	t = at_ms(100);
	bp_pressure(&bp, &t, 1000 + 4900, true);	/* 4.9% */
	CHECK(!bp.contended);
	t = at_ms(200);
	bp_pressure(&bp, &t, 5900 + 5100, true);	/* 5.1% */
	CHECK(bp.contended);
	CHECK_EQ(bp_poll_ns(&bp, &t, -1), 0);
	t = at_ms(300);
	bp_pressure(&bp, &t, 11000, true);		/* 0% */
	CHECK(!bp.contended);
	t = at_ms(400);
	bp_pressure(&bp, &t, 10, true);			/* went back */
	CHECK(bp.contended);
	t = at_ms(500);
	bp_pressure(&bp, &t, 10, true);
	CHECK(!bp.contended);
	t = at_ms(600);
	bp_pressure(&bp, &t, 0, false);			/* unreadable */
	CHECK(bp.contended);
	t = at_ms(700);
	bp_pressure(&bp, &t, 10, true);	/* a sample after a failure only
					 * starts again */
	CHECK(bp.contended);
	t = at_ms(700);
	bp_pressure(&bp, &t, 10, true);			/* no time passed */
	CHECK(bp.contended);
	CHECK_EQ(bp.samples, 9);
	if (bp.psi_fd >= 0)
		close(bp.psi_fd);
}

TEST(busypoll_misses_stop_and_short_sleep_restarts)
{
	struct busypoll bp;
	struct timespec now = at_ms(200);
	int i;

	quiet(&bp, 50);
	for (i = 0; i < 7; i++) {
		bp_poll_done(&bp, &now, false, false);
		bp.last_found = true;	/* a sleep that found events */
		CHECK(bp_poll_ns(&bp, &now, -1) > 0);
	}
	bp_poll_done(&bp, &now, false, false);		/* eighth miss */
	bp.last_found = true;
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 0);
	bp_wait_done(&bp, 2000000, true);	/* a long sleep: still off */
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 0);
	bp_wait_done(&bp, 20000, true);		/* within the budget */
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 50000);
	bp_wait_done(&bp, 20000, false);	/* a timer's wake-up: idle */
	CHECK_EQ(bp_poll_ns(&bp, &now, -1), 0);
	CHECK_EQ(bp.polls, 8);
	CHECK_EQ(bp.hits, 0);
	if (bp.psi_fd >= 0)
		close(bp.psi_fd);
}

TEST(busypoll_preemption_backs_off)
{
	struct busypoll bp;
	struct timespec now = at_ms(200), t;
	int i;

	quiet(&bp, 50);
	bp_poll_done(&bp, &now, false, true);		/* 10 ms quiet */
	bp.last_found = true;
	t = at_ms(209);
	CHECK_EQ(bp_poll_ns(&bp, &t, -1), 0);
	t = at_ms(210);
	CHECK_EQ(bp_poll_ns(&bp, &t, -1), 50000);
	bp_poll_done(&bp, &t, true, true);		/* 20 ms, found */
	t = at_ms(229);
	CHECK_EQ(bp_poll_ns(&bp, &t, -1), 0);
	t = at_ms(230);
	CHECK(bp_poll_ns(&bp, &t, -1) > 0);
	for (i = 0; i < 20; i++)
		bp_poll_done(&bp, &t, false, true);
	CHECK_EQ(bp.backoff_ms, 1000);			/* capped */
	bp_poll_done(&bp, &t, true, false);		/* halved by a hit */
	CHECK_EQ(bp.backoff_ms, 500);
	for (i = 0; i < 10; i++)
		bp_poll_done(&bp, &t, true, false);
	CHECK_EQ(bp.backoff_ms, 10);			/* floor */
	CHECK_EQ(bp.preempts, 22);
	CHECK_EQ(bp.hits, 11);
	CHECK_EQ(bp.misses, 0);
	if (bp.psi_fd >= 0)
		close(bp.psi_fd);
}

TEST(busypoll_wait_polls_a_real_epoll_set)
{
	struct ctx *c = test_ctx();
	struct epoll_event ev, out[4];
	uint64_t one = 1;
	int ep = epoll_create1(0), efd = eventfd(0, EFD_NONBLOCK);

	CHECK(ep >= 0 && efd >= 0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 7 };
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
	quiet(&c->bp, 200);
	c->now = at_ms(140);	/* the last sample is 40 ms old: no new one */
	c->bp.psi_at = at_ms(100);
	CHECK(write(efd, &one, sizeof(one)) == sizeof(one));
	CHECK_EQ(bp_wait(c, ep, out, 4, 1000), 1);	/* found by the poll */
	CHECK_EQ(out[0].data.u64, 7);
	CHECK_EQ(c->bp.polls, 1);
	CHECK(read(efd, &one, sizeof(one)) == sizeof(one));
	/* Nothing ready: the poll ends after its budget, the sleep after
	 * its 1 ms timeout. */
	CHECK_EQ(bp_wait(c, ep, out, 4, 1), 0);
	CHECK_EQ(c->bp.polls, 2);
	CHECK_EQ(c->bp.misses, 1);
	CHECK(!c->bp.last_found);
	if (c->bp.psi_fd >= 0)
		close(c->bp.psi_fd);
	close(efd);
	close(ep);
	test_ctx_free(c);
}
