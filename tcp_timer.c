/* tcp_timer.c - TCP timers: the per-connection deadline (handshake,
 * retransmission, zero-window probe, tail loss probe), delayed ACKs,
 * host-side keepalives, the stuck-window check, and the deadline heap
 * that runs them.
 *
 * Theory of operation
 *
 * The loop calls tcp_timer() from its module timer. Delayed ACKs are a
 * ring in deadline order (one fixed delay, tcp_delack()), served first
 * and on their own: most wake-ups end there. Then the connections whose
 * deadline came: each has one entry in a deadline heap (c->tcp.due,
 * dheap.c) at its earliest deadline, lowered by tcp_conn.c
 * tcp_timer_set() and tcp_due_in(), so the work follows the connections
 * due, not the idle ones. An entry may come up early (a deadline moved
 * later, a freed flow's index), never late. Per connection
 * (tcp_conn_due()) it takes, in order: the connection's
 * timer (tcp_conn_timeout(): the handshake's retries, a forwarded SYN's
 * (tcp_fwd.c), else tcp_probe_or_rto()), the window poll (tcp_out.c
 * tcp_wnd_poll()), the host-side keepalive's late arming, the
 * inactivity limit, keepalives toward the guest (tcp_guard.c) and the
 * stuck-window check, then puts the connection back at its earliest
 * deadline.
 *
 * Retransmission is a rewind (tcp_out.c): on the RTO, seq_to_guest goes
 * back to the guest's ACK and the next read resends (RFC 6298 backoff,
 * TCP_DATA_RETRIES); a zero window gets a probe instead. While it comes
 * first, the tail loss probe's deadline stands in the connection's
 * timer, the RTO's kept aside (rto_ms, tcp_out.c tcp_tlp_arm()); when it
 * fires, tcp_tlp_send() probes and the RTO goes back where it was.
 *
 * Calls go down only: to output (tcp_out.c), the guards and the
 * forwarders' SYN timeout; nothing here is called by them. A flow freed
 * on the way (a reset, a socket error found dead) is skipped at once.
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "util.h"

/* seccomp(all): getsockopt setsockopt
 *   (host sockets: keepalive, the stuck-window check) */
/* seccomp(all): ioctl(1=SIOCINQ)
 *   (an empty queue, for the stuck-window check) */

#define CLAMP_OPEN	(1u << 30)	/* "no clamp" after a fallback */
/* tcpi_rcv_wnd (Linux 6.2+) follows tcpi_snd_wnd at offset 228 of the
 * uapi struct tcp_info; libc's copy of the struct ends before both. */
#define TCPI_RCV_WND_OFF	232

#ifdef FERRY_TEST
int64_t tcp_test_stuck_wnd = -1;
#endif

/* conn_of() - the connection record in a FLOW_TCP flow's private area. */
static struct tcp_conn *conn_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct tcp_conn);
}

/* tcp_stuck_check() - a connection whose guest window re-opened but whose
 * socket still advertises zero (clamp stuck): clamping off for it and
 * the socket's window re-opened. */
void tcp_stuck_check(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	size_t off = TCPI_RCV_WND_OFF;
	uint8_t raw[512];
	socklen_t len = sizeof(raw);
	uint32_t rcv_wnd, open = CLAMP_OPEN;
	int inq = 0;

	if (!(conn->flags & TCP_C_WAS_ZERO) || c->tcp.clamp_off ||
	    (conn->flags & (TCP_C_SOCK_EOF | TCP_C_STALLED)) || !conn->clamp ||
	    tcp_now_ms(c) - conn->last_ms < TCP_STUCK_MS)
		return;
	conn->flags &= (uint16_t)~TCP_C_WAS_ZERO;
	if (ioctl(conn->sock, SIOCINQ, &inq) || inq > 0)
		return;
	if (getsockopt(conn->sock, IPPROTO_TCP, TCP_INFO, raw, &len) ||
	    len < off + 4)
		return;
	memcpy(&rcv_wnd, raw + off, 4);
#ifdef FERRY_TEST
	if (tcp_test_stuck_wnd >= 0)	/* 6.18 never sticks: the unit test */
		rcv_wnd = (uint32_t)tcp_test_stuck_wnd;
#endif
	if (rcv_wnd)
		return;
	/* An empty queue that still advertises a zero window: the clamp
	 * misbehaves on this kernel. Stop clamping, everywhere. */
	warn("tcp: receive window stuck at zero with an empty queue: "
	     "TCP_WINDOW_CLAMP disabled");
	c->tcp.clamp_off = true;
	c->tcp.st.clamp_fallbacks++;
	setsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &open,
		   sizeof(open));
}

/* tcp_tlp_send() - the probe (tcp_out.c, above tcp_tlp_ok()): a fast
 * recovery over what the guest SACKed, else new data, else the last
 * segment (at most the guest's MSS, our FIN with it) sent again, inside
 * the guest's window as every read is. */
static void tcp_tlp_send(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t fin = (conn->flags & TCP_C_FIN_SENT) ? 1 : 0, len;
	seq_t max = tcp_snd_max(conn), end;

	c->tcp.st.tlp_probes++;
	conn->tlp = TCP_TLP_SENT;
	if (conn->nsacked || conn->sack_trunc) {
		c->tcp.st.tlp_rewinds++;
		tcp_rewind(c, fl, true);
		tcp_data_to_guest(c, fl);
		return;
	}
	if (!fin && conn->wnd_from_guest > (uint32_t)seq_diff(
			max, conn->seq_acked_by_guest)) {
		tcp_data_to_guest(c, fl);
		if (seq_gt(tcp_snd_max(conn), max))
			return;
	}
	end = seq_add(max, (uint32_t)-fin);
	len = MIN((uint32_t)seq_diff(end, conn->seq_acked_by_guest),
		  (uint32_t)conn->mss_to_guest);
	tcp_rewind_seq(c, fl, seq_add(end, (uint32_t)-len));
	tcp_data_to_guest(c, fl);
}

/* tcp_probe_or_rto() - data timer of an established connection: rewind
 * and resend what the guest has not acknowledged, or probe a zero
 * window. Returns false when the connection gave up (caller resets). */
bool tcp_probe_or_rto(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	int64_t rto, now = tcp_now_ms(c);

	if (conn->tlp == TCP_TLP_ARMED && now < conn->rto_ms) {
		rto = conn->rto_ms;
		conn->tlp = TCP_TLP_NONE;
		if (tcp_tlp_ok(conn))
			tcp_tlp_send(c, fl);
		tcp_timer_set(c, conn, rto - now);	/* where it was */
		return true;
	}
	conn->tlp = TCP_TLP_NONE;
	if (++conn->retries > TCP_DATA_RETRIES)
		return false;
	rto = MIN((int64_t)TCP_RTO_MS << MIN(conn->retries, 8),
		  (int64_t)TCP_RTO_MAX_MS);
	if (seq_lt(conn->seq_acked_by_guest, conn->seq_to_guest)) {
		c->tcp.st.rewinds_rto++;
		tcp_rewind(c, fl, false);
		tcp_data_to_guest(c, fl);
	} else if (!conn->wnd_from_guest) {
		tcp_send_probe(c, fl);
		conn->retries--;	/* a closed window is no failure */
	} else {
		conn->retries = 0;
		return true;
	}
	tcp_timer_set(c, conn, rto);
	return true;
}

/* tcp_delack() - acknowledge the guest data just written, now or a little
 * later (RFC 9293 3.8.6.3, RFC 1122 4.2.3.2): in request/response traffic
 * the host's answer follows within microseconds, and the ACK then rides
 * on it instead of costing a frame (and a write) of its own. Only small
 * amounts wait: at least one full segment, or a quarter of the window we
 * offered, is acknowledged at once, so a bulk sender is never slowed and
 * never waits for window. ACKs that must not wait (window updates, FIN,
 * duplicates, old data, short writes) use TCP_C_ACK_NOW instead. */
void tcp_delack(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	struct tcp_state *ts = &c->tcp;
	uint32_t unacked = (uint32_t)seq_diff(conn->seq_from_guest,
					      conn->ack_sent);
	unsigned int tail;

	if (unacked >= tcp_mss_from_guest(c, fl) ||
	    unacked >= conn->wnd_sent / 4 || ts->delack_n == TCP_DELACK_MAX) {
		/* a ring entry left behind is skipped: ack_state changes */
		tcp_send_flags(c, fl, TCP_F_ACK);
		return;
	}
	if (conn->ack_state == TCP_ACK_QUEUED)
		return;
	tail = (ts->delack_head + ts->delack_n++) % TCP_DELACK_MAX;
	ts->delack[tail].idx = flow_idx(&c->flows, fl);
	ts->delack[tail].ack_sent = conn->ack_sent.v;
	ts->delack[tail].due_ms = tcp_now_ms(c) + TCP_DELACK_MS;
	conn->ack_state = TCP_ACK_QUEUED;
	ts->st.acks_delayed++;
	if (ts->delack_n == 1)
		timer_request(c, TCP_DELACK_MS);
}

/* tcp_delack_run() - send the delayed ACKs whose time has come. An entry
 * is stale when an ACK went since it was queued (host data carried it):
 * its connection's ack_sent moved on. A newer entry of the same
 * connection (the next request, queued after that ACK) waits for its own
 * deadline instead of going out early with this one. */
static void tcp_delack_run(struct ctx *c, int64_t now)
{
	struct tcp_state *ts = &c->tcp;

	while (ts->delack_n && ts->delack[ts->delack_head].due_ms <= now) {
		uint32_t acked = ts->delack[ts->delack_head].ack_sent;
		struct flow *fl = flow_at(&c->flows,
					  ts->delack[ts->delack_head].idx);

		ts->delack_head = (uint16_t)((ts->delack_head + 1) %
					     TCP_DELACK_MAX);
		ts->delack_n--;
		if (!fl || fl->f.type != FLOW_TCP ||
		    conn_of(fl)->ack_state != TCP_ACK_QUEUED ||
		    conn_of(fl)->ack_sent.v != acked)
			continue;
		ts->st.acks_delack_timer++;
		if (!tcp_send_flags(c, fl, TCP_F_ACK))
			conn_of(fl)->ack_state = TCP_ACK_NONE;
	}
	if (ts->delack_n)
		timer_request(c, MAX(ts->delack[ts->delack_head].due_ms - now,
				     1));
}

/* tcp_conn_timeout() - a connection's deadline passed. Returns true when
 * the flow was freed. */
static bool tcp_conn_timeout(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	switch (conn->state) {
	case TCP_CS_CONNECTING:
		c->tcp.st.timeouts++;
		tcp_reset_both(c, fl, TCP_END_CONNECT_TIMEOUT);
		return true;
	case TCP_CS_SYNACK_SENT:
		if (++conn->retries > TCP_SYN_RETRIES) {
			c->tcp.st.timeouts++;
			tcp_reset_both(c, fl, TCP_END_SYNACK_TIMEOUT);
			return true;
		}
		tcp_send_flags(c, fl, TCP_F_SYN | TCP_F_ACK);
		tcp_timer_set(c, conn, (int64_t)TCP_SYN_RTO_MS << conn->retries);
		return false;
	case TCP_CS_SYN_TO_GUEST:			/* tcp_fwd.c */
		return tcp_fwd_syn_timeout(c, fl);
	default:
		if (tcp_probe_or_rto(c, fl)) {
			tcp_events_update(c, fl);
			return false;
		}
		c->tcp.st.timeouts++;
		tcp_reset_both(c, fl, TCP_END_RTO);
		return true;
	}
}

/* tcp_keepalive_arm() - host-side keepalives (the kernel's, SO_KEEPALIVE)
 * for a connection that lived TCP_KA_ARM_MS: they only matter after hours
 * of silence (tcp_keepalive_time), so setting the option late changes
 * nothing but the system call a short connection no longer makes. */
static void tcp_keepalive_arm(struct tcp_conn *conn)
{
	int one = 1;

	setsockopt(conn->sock, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	conn->ka_ms = 0;
}

/* tcp_conn_due() - one connection came up in tcp_timer(): run what is
 * due of its deadlines (retransmission or handshake timer, window poll,
 * keepalive, inactivity, the stuck check). Returns false when the flow
 * was freed, else true with *next its earliest deadline from now on. */
static bool tcp_conn_due(struct ctx *c, struct flow *fl, int64_t now,
			 int64_t *next)
{
	struct tcp_conn *conn = conn_of(fl);

	if (conn->timer_ms && now >= conn->timer_ms) {
		conn->timer_ms = 0;
		if (tcp_conn_timeout(c, fl) || tcp_sock_dead(c, fl))
			return false;
	}
	if (conn->wnd_poll_ms && now >= conn->wnd_poll_ms)
		tcp_wnd_poll(c, fl);
	if (conn->ka_ms && now >= conn->ka_ms)
		tcp_keepalive_arm(conn);
	if (now - conn->last_ms >= TCP_IDLE_MS) {
		c->tcp.st.timeouts++;
		tcp_reset_both(c, fl, TCP_END_IDLE);
		return false;
	}
	if (tcp_keepalive(c, fl, now, next))
		return false;
	if (conn->flags & TCP_C_WAS_ZERO) {
		tcp_stuck_check(c, fl);
		*next = MIN(*next, now + TCP_STUCK_MS);
	}
	if (conn->timer_ms)
		*next = MIN(*next, conn->timer_ms);
	if (conn->wnd_poll_ms)
		*next = MIN(*next, conn->wnd_poll_ms);
	if (conn->ka_ms)
		*next = MIN(*next, conn->ka_ms);
	*next = MIN(*next, conn->last_ms + TCP_IDLE_MS);
	return true;
}

/* tcp_timer() - the connections whose deadline came, from the deadline
 * heap (c->tcp.due, one entry per connection at its earliest deadline):
 * the cost follows the connections due, not the idle ones. An entry may
 * be early (a deadline moved later, or a freed flow's index), never
 * late: every deadline set earlier lowers it (tcp_due_in()). */
void tcp_timer(struct ctx *c)
{
	int64_t now = tcp_now_ms(c);
	const struct dheap_ent *t;

	tcp_delack_run(c, now);
	while ((t = dheap_top(&c->tcp.due)) && t->due <= now) {
		uint32_t idx = t->id;
		struct flow *fl = flow_at(&c->flows, idx);
		int64_t next = INT64_MAX;

		c->tcp.st.timer_visits++;
		if (fl && fl->f.type == FLOW_TCP && tcp_conn_due(c, fl, now, &next))
			dheap_set(&c->tcp.due, idx, next);
		else if (!(fl = flow_at(&c->flows, idx)) || fl->f.type != FLOW_TCP)
			dheap_del(&c->tcp.due, idx);	/* freed, or not TCP */
	}
	if (t)
		timer_request(c, MAX(t->due - now, 1));
}
