/* tcp_guard.c - TCP connections that must not hold resources for ever:
 * the fd budget, the half-open connections' share of it, and keepalives
 * toward a guest that may be gone.
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
 * Established connections are never abandoned for a new one. The list
 * itself is kept by tcp_conn.c (tcp_half_open_add(), _del()), below the
 * close that leaves it; the policy is here.
 *
 * The fd budget (tcp_fd_room()): TCP's half of the fd limit, counted
 * over connections through the link and spliced ones; a host client
 * beyond it is refused (tcp_fwd_abort()).
 *
 * Keepalives toward the guest. A guest that reboots, or a container
 * whose process died without closing, leaves its connections open on
 * ferry's side: host sockets and remote peers hanging until the 2-hour
 * inactivity limit. Once an established connection has been idle for
 * --tcp-keepalive seconds (last_ms: the last segment from the guest or
 * read from the host), ferry probes the guest with RFC 9293 3.8.4's
 * keep-alive, an ACK at SND.NXT - 1 without data (tcp_out.c
 * tcp_send_probe()): a live guest answers with an ACK (any segment from
 * it counts), one that lost the connection with an RST (which resets the
 * host side: tcp.c), a gone one not at all. Probes go every
 * tcp_ka_intvl_ms(), and after TCP_KA_PROBES unanswered ones the
 * connection is reset both ways and its socket freed. A connection with
 * data in flight needs none: its retransmission timer gives up after
 * TCP_DATA_RETRIES.
 *
 * Their timers cost no scan of their own: the keepalive deadline is one
 * more of the connection's deadlines in the TCP timer's deadline heap
 * (tcp_timer.c tcp_timer()), rounded up to a quarter of the probe
 * interval.
 */
#include <unistd.h>
#include <sys/socket.h>

#include "ferry.h"
#include "log.h"
#include "tcp_conn.h"
#include "util.h"

/* seccomp(all): close setsockopt
 *   (a host client refused: tcp_fwd_abort()) */

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
		tcp_reset_both(c, oldest, TCP_END_EVICTED);	/* unlinks it */
	}
	return tcp_fd_room(c, 1);
}

/* tcp_ka_intvl_ms() - the time between keepalive probes: a fifth of the
 * idle time, within [TCP_KA_INTVL_MIN_MS, TCP_KA_INTVL_MAX_MS]. */
static int64_t tcp_ka_intvl_ms(const struct ctx *c)
{
	int64_t i = (int64_t)c->conf.tcp_ka_s * 1000 / 5;

	return MIN(MAX(i, TCP_KA_INTVL_MIN_MS), TCP_KA_INTVL_MAX_MS);
}

bool tcp_keepalive(struct ctx *c, struct flow *fl, int64_t now,
		   int64_t *next)
{
	struct tcp_conn *conn = FLOW_PRIV(fl, struct tcp_conn);
	int64_t intvl = tcp_ka_intvl_ms(c), grain = intvl / 4, due;

	if (!c->conf.tcp_ka_s || conn->state != TCP_CS_ESTABLISHED)
		return false;
	due = conn->last_ms + (int64_t)c->conf.tcp_ka_s * 1000 +
	      conn->ka_probes * intvl;
	if (now >= due) {
		if (conn->ka_probes >= TCP_KA_PROBES) {
			debug("tcp: the guest did not answer %d keepalives",
			      TCP_KA_PROBES);
			c->tcp.st.ka_resets++;
			tcp_reset_both(c, fl, TCP_END_KEEPALIVE);
			return true;
		}
		tcp_send_probe(c, fl);
		conn->ka_probes++;
		c->tcp.st.ka_probes++;
		due += intvl;
	}
	*next = MIN(*next, (due + grain - 1) / grain * grain);
	return false;
}

void tcp_keepalive_heard(struct ctx *c, struct tcp_conn *conn, bool rst)
{
	if (!conn->ka_probes)
		return;
	if (rst)
		c->tcp.st.ka_resets++;
	else
		c->tcp.st.ka_answered++;
	conn->ka_probes = 0;
}

/* --- File-descriptor budget (tcp_conn.h) ------------------------------ */

uint32_t tcp_fd_budget(uint32_t nofile)
{
	return fd_budget(nofile);
}

bool tcp_fd_room(const struct ctx *c, unsigned int n)
{
	uint64_t used = c->flows.count[FLOW_TCP] +
			(uint64_t)TCP_SPLICE_FDS * c->flows.count[FLOW_TCP_SPLICE];

	return !c->tcp.max_fds || used + n <= c->tcp.max_fds;
}

void tcp_fwd_abort(struct ctx *c, int s)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(s);
	c->tcp_fwd.st.refused++;
}
