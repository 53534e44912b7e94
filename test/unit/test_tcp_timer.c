/* test_tcp_timer.c - the TCP timer's deadline heap (tcp.c tcp_timer(),
 * dheap.c): with many idle connections and one whose deadline comes
 * every 10 ms, the timer comes to that one only; a freed connection's
 * entry is dropped when it comes up; a deadline set earlier is kept. */
#include "ferry.h"
#include "tcp_conn.h"
#include "unit.h"
#include "tcp_harness.h"

#define IDLE_CONNS	200

/* idle_conn() - a connection record with no socket and nothing armed
 * but its inactivity deadline, as every connection has one. */
static struct tcp_conn *idle_conn(struct ctx *c)
{
	struct flow *fl = flow_alloc(&c->flows, FLOW_TCP);
	struct tcp_conn *conn;

	if (!fl)
		return NULL;
	conn = FLOW_PRIV(fl, struct tcp_conn);
	conn->sock = -1;
	conn->state = TCP_CS_SYNACK_SENT;	/* no keepalive, no data */
	conn->last_ms = tcp_now_ms(c);
	tcp_due_in(c, conn, TCP_IDLE_MS);
	return conn;
}

/* free_all() - the records made here, returned without a socket call. */
static void free_all(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl; fl = nx) {
		nx = flow_next(&c->flows, fl);
		flow_free(&c->flows, fl);
	}
}

TEST(tcp_timer_visits_only_due_connections)
{
	struct ctx *c = tcp_test_ctx();
	struct tcp_conn *busy = NULL;
	uint64_t v0;
	int i;

	for (i = 0; i < IDLE_CONNS; i++) {
		struct tcp_conn *conn = idle_conn(c);

		CHECK(conn);
		if (i == IDLE_CONNS / 2)
			busy = conn;
	}
	v0 = c->tcp.st.timer_visits;
	for (i = 0; i < 100; i++) {
		/* a window poll every 10 ms, as a probe re-armed by each
		 * ACK comes while data flows */
		busy->wnd_poll_ms = tcp_due_in(c, busy, 10);
		advance(c, 10);
		CHECK_EQ(busy->wnd_poll_ms, 0);		/* it ran */
	}
	/* a scan of every connection would have come to 200 each time */
	CHECK_EQ(c->tcp.st.timer_visits - v0, 100);
	CHECK_EQ(c->tcp.due.n, IDLE_CONNS);
	free_all(c);
	tcp_test_free(c);
}

TEST(tcp_timer_drops_freed_and_keeps_earlier_deadlines)
{
	struct ctx *c = tcp_test_ctx();
	struct tcp_conn *a = idle_conn(c), *b = idle_conn(c);
	struct flow *fa;

	CHECK(a && b);
	CHECK_EQ(c->tcp.due.n, 2);
	b->wnd_poll_ms = tcp_due_in(c, b, 50);
	tcp_due_in(c, b, 5000);		/* later: the 50 ms stays */
	CHECK_EQ(dheap_top(&c->tcp.due)->due, tcp_now_ms(c) + 50);
	fa = flow_first(&c->flows, FLOW_TCP);
	if (FLOW_PRIV(fa, struct tcp_conn) != a)
		fa = flow_next(&c->flows, fa);
	a->wnd_poll_ms = tcp_due_in(c, a, 20);
	flow_free(&c->flows, fa);	/* freed with its entry left */
	advance(c, 20);			/* its entry comes up: dropped */
	CHECK_EQ(c->tcp.due.n, 1);
	CHECK(b->wnd_poll_ms);
	advance(c, 30);
	CHECK_EQ(b->wnd_poll_ms, 0);
	CHECK_EQ(c->tcp.due.n, 1);	/* b again, at its idle deadline */
	CHECK_EQ(dheap_top(&c->tcp.due)->due, b->last_ms + TCP_IDLE_MS);
	free_all(c);
	tcp_test_free(c);
}
