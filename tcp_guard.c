/* tcp_guard.c - TCP connections that must not hold resources for ever:
 * the half-open connections' share of the fd budget.
 *
 * Theory of operation
 *
 * Half-open connections. A guest SYN costs ferry a host socket at once
 * (tcp.c tcp_conn_open()), and the connection stays half-open while the
 * host connect() runs (up to TCP_CONNECT_TIMEOUT_MS) and while ferry's
 * SYN-ACK waits for the guest's ACK (retransmitted, about 31 s in all).
 * A port scanner, or a flood of SYNs whose SYN-ACKs the guest's kernel
 * never answers (spoofed sources), used to fill the whole TCP fd budget
 * that way, and every ordinary new connection was refused until they
 * timed out. Now half-open connections hold at most a share of the
 * budget (TCP_HALF_OPEN_SHARE): they are kept in a list in the order
 * their SYNs came (linked through the connection records: no allocation,
 * O(1) to add, remove and find the oldest), and a SYN that finds the
 * share taken, or the budget full while some are half-open, abandons the
 * oldest one (an RST to the guest, the socket aborted) to be admitted.
 * Established connections are never abandoned for a new one.
 */
#include "ferry.h"
#include "log.h"
#include "tcp_conn.h"

/* conn_at() - the connection record of TCP flow idx. */
static struct tcp_conn *conn_at(struct ctx *c, uint32_t idx)
{
	return FLOW_PRIV(flow_at(&c->flows, idx), struct tcp_conn);
}

void tcp_half_open_add(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = FLOW_PRIV(fl, struct tcp_conn);
	struct tcp_state *ts = &c->tcp;
	uint32_t idx = flow_idx(&c->flows, fl);

	conn->ho_prev = ts->ho_n ? ts->ho_tail : FLOW_NONE;
	conn->ho_next = FLOW_NONE;
	if (ts->ho_n)
		conn_at(c, ts->ho_tail)->ho_next = idx;
	else
		ts->ho_head = idx;
	ts->ho_tail = idx;
	ts->ho_n++;
	conn->half_open = true;
}

void tcp_half_open_del(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = FLOW_PRIV(fl, struct tcp_conn);
	struct tcp_state *ts = &c->tcp;

	if (!conn->half_open)
		return;
	if (conn->ho_prev != FLOW_NONE)
		conn_at(c, conn->ho_prev)->ho_next = conn->ho_next;
	else
		ts->ho_head = conn->ho_next;
	if (conn->ho_next != FLOW_NONE)
		conn_at(c, conn->ho_next)->ho_prev = conn->ho_prev;
	else
		ts->ho_tail = conn->ho_prev;
	ts->ho_n--;
	conn->half_open = false;
}

/* tcp_half_open_max() - how many half-open connections the budget
 * allows (0: no budget, no limit). */
static uint32_t tcp_half_open_max(const struct ctx *c)
{
	return c->tcp.max_fds / TCP_HALF_OPEN_SHARE;
}

bool tcp_half_open_admit(struct ctx *c)
{
	struct tcp_state *ts = &c->tcp;

	while (ts->ho_n && (!tcp_fd_room(c, 1) ||
			    (ts->max_fds && ts->ho_n >= tcp_half_open_max(c)))) {
		struct flow *oldest = flow_at(&c->flows, ts->ho_head);

		ts->st.half_open_evicted++;
		tcp_reset_both(c, oldest);	/* unlinks it */
	}
	return tcp_fd_room(c, 1);
}
