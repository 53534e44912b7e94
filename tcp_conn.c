/* tcp_conn.c - the TCP connection record's small helpers: the clock and
 * the per-connection timer, the socket's epoll registration, sizes
 * (MSS), socket options, the ISN, the RTT estimate, the handshake's
 * parameters, the half-open list, the state setter and the close.
 *
 * Theory of operation
 *
 * The bottom of the TCP files. Segment arrival (tcp_in.c), output
 * (tcp_out.c), the timers (tcp_timer.c), the forwarders (tcp_fwd.c,
 * tcp_splice.c), the closed connections (tcp_tw.c), the guards
 * (tcp_guard.c) and the dispatch (tcp.c) all use these, and these call
 * no other TCP file but the out-of-order queue's release (tcp_ooo.c):
 * nothing here sends a segment or frees a flow other than the one being
 * closed. The record itself and the constants are in tcp_conn.h.
 *
 * Time: c->now in milliseconds (tcp_now_ms()) for deadlines and in
 * microseconds (tcp_now_us()) for RTT samples. Each connection has one
 * timer deadline (timer_ms, tcp_timer_set()) among others (window poll,
 * keepalives, inactivity); its entry in the deadline heap (c->tcp.due,
 * dheap.c) is never later than the earliest, so tcp_timer.c comes to it
 * in time (tcp_due_in()).
 *
 * State: after set-up, a connection's state and closing flags change in
 * tcp_conn_set() only, which hands each step and its cause to the
 * --debug lines (flow_log.c); tcp_conn_close() gets why it ends.
 *
 * A socket error taken by a system call is only noted here
 * (tcp_sock_failed()): the caller may be deep inside a send, where the
 * flow must not be freed; whoever may free it checks later (tcp_out.c
 * tcp_sock_dead()).
 */
#include <errno.h>
#include <stddef.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "flow_log.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "util.h"

/* seccomp(all): close getsockopt setsockopt
 *   (host sockets of TCP flows: options, TCP_INFO, the close) */

/* conn_of() - the connection record in a FLOW_TCP flow's private area. */
static struct tcp_conn *conn_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct tcp_conn);
}

/* conn_at() - the connection record of TCP flow idx. */
static struct tcp_conn *conn_at(struct ctx *c, uint32_t idx)
{
	return FLOW_PRIV(flow_at(&c->flows, idx), struct tcp_conn);
}

/* tcp_now_ms() - the loop's current time (c->now) in milliseconds. */
int64_t tcp_now_ms(const struct ctx *c)
{
	return (int64_t)c->now.tv_sec * 1000 + c->now.tv_nsec / 1000000;
}

/* tcp_conn_idx() - the flow index of a connection record (it lives in
 * its flow's private area, FLOW_PRIV()). */
static uint32_t tcp_conn_idx(const struct ctx *c, const struct tcp_conn *conn)
{
	const struct flow *fl = (const struct flow *)(const void *)
		((const uint8_t *)conn - offsetof(struct flow, u));

	return flow_idx(&c->flows, fl);
}

/* tcp_due_in() - have the connection come up in tcp_timer() ms from now
 * at the latest (its entry in the deadline heap moves earlier, never
 * later); returns that time on the tcp clock, the caller's deadline. */
int64_t tcp_due_in(struct ctx *c, struct tcp_conn *conn, int64_t ms)
{
	int64_t when = tcp_now_ms(c) + ms;

	dheap_lower(&c->tcp.due, tcp_conn_idx(c, conn), when);
	timer_request(c, ms);
	return when;
}

/* tcp_timer_set() - arm the connection's timer ms from now, and have
 * tcp_timer() come to it no later. */
void tcp_timer_set(struct ctx *c, struct tcp_conn *conn, int64_t ms)
{
	conn->timer_ms = tcp_due_in(c, conn, ms);
}

/* tcp_ack_sent() - record that our ACK and window wnd went to the guest:
 * the window edge only moves forward, nothing is left to acknowledge. */
void tcp_ack_sent(struct tcp_conn *conn, uint32_t wnd)
{
	seq_t edge = seq_add(conn->seq_from_guest, wnd);

	conn->ack_sent = conn->seq_from_guest;
	conn->wnd_sent = wnd;
	if (seq_gt(edge, conn->wnd_edge))
		conn->wnd_edge = edge;
	conn->ack_state = TCP_ACK_NONE;
	conn->flags &= (uint16_t)~TCP_C_ACK_NOW;
}

/* tcp_events_want() - the socket events the connection acts on in its
 * present state (EPOLLERR and EPOLLHUP always count). */
static uint32_t tcp_events_want(const struct tcp_conn *conn)
{
	uint32_t want = 0;

	if ((conn->flags & TCP_C_SOCK_EOF) && (conn->flags & TCP_C_SHUT_WR))
		return 0;	/* the guest's ACKs drive the rest */
	if (conn->state == TCP_CS_CONNECTING)
		return EPOLLOUT;
	if (conn->state == TCP_CS_SYNACK_SENT) {
		/* Data (or EOF) the peer sends before the guest completes
		 * the handshake is read when it does (TCP_C_TX_NOW). */
		if (!(conn->flags & TCP_C_SOCK_EOF))
			want = EPOLLRDHUP | EPOLLIN;
	} else if (conn->state == TCP_CS_ESTABLISHED) {
		if (!(conn->flags & TCP_C_SOCK_EOF)) {
			/* Also while stalled: arrivals then only tighten the
			 * window clamp (tcp_out.c, tcp_sendable()). */
			want |= EPOLLRDHUP | EPOLLIN;
		}
		if ((conn->flags & TCP_C_WANT_OUT) &&
		    !(conn->flags & TCP_C_SHUT_WR))
			want |= EPOLLOUT;
	}
	return want;
}

/* tcp_ep_add() - register a new connection's socket, once for its life:
 * every event it may ever want, edge-triggered. Returns 0 or -errno. */
int tcp_ep_add(const struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	union eref ref = { .type = EREF_TCP, .idx = flow_idx(&c->flows, fl) };

	conn->ev = tcp_events_want(conn);
	return ep_add(c, conn->sock, TCP_EP_EVENTS, ref);
}

/* Connection-rate cost: one epoll_ctl() per connection. The socket is
 * registered once (tcp_ep_add()) with every event it may ever want,
 * edge-triggered, and conn->ev holds the events the connection acts on
 * now (tcp_events_want()); tcp_sock_handler() drops the others. No
 * EPOLL_CTL_MOD per state change and no EPOLL_CTL_DEL: close() ends the
 * registration (a TCP socket's fd is never shared: ferry forks only at
 * start-up, its ns_call() helpers share the fd table). Edge-triggered,
 * an event nobody wants costs at most one report per wake-up of the
 * socket (new data, a state change, room after a full buffer), never a
 * busy loop.
 *
 * Edge-triggered also means: data ferry peeked at stays in the socket
 * until the guest acknowledges it, so a level-triggered EPOLLIN would fire
 * on every wait in between (a busy loop for the whole round trip). With
 * EPOLLET each arrival of new data wakes the loop once; whoever stops
 * reading with data left behind re-arms (tcp_events_rearm()) or waits for
 * the guest's ACK (TCP_C_STALLED, then TCP_C_TX_NOW).
 *
 * The one change that needs a system call: EPOLLOUT newly wanted. The
 * kernel only signals room in the send buffer after a write found it full
 * or a poll found it not writable; the window can be low (SO_MEMINFO)
 * without either, so EPOLL_CTL_MOD polls the socket once (reported at
 * once if writable already). */
void tcp_events_update(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t want;

	if (conn->sock < 0)
		return;
	want = tcp_events_want(conn);
	if ((want & EPOLLOUT) && !(conn->ev & EPOLLOUT)) {
		conn->ev = want;
		tcp_events_rearm(c, fl);
		return;
	}
	conn->ev = want;
}

/* tcp_events_rearm() - EPOLL_CTL_MOD with the same events, so that an
 * edge-triggered socket with data left behind is reported again. */
void tcp_events_rearm(const struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	union eref ref = { .type = EREF_TCP, .idx = flow_idx(&c->flows, fl) };

	if (conn->sock >= 0)	/* EPOLL_CTL_MOD polls the socket again */
		ep_mod(c, conn->sock, TCP_EP_EVENTS, ref);
}

void tcp_sock_failed(struct tcp_conn *conn, int err)
{
	if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR ||
	    err == ENOBUFS || err == ENOMEM || conn->sock_err)
		return;
	conn->sock_err = (uint8_t)MIN(err, UINT8_MAX);
}

/* tcp_mss_from_guest() - the MSS we advertise to the guest (see
 * tcp_conn.h): whole segments in a TSO frame on an offloading tap. */
uint32_t tcp_mss_from_guest(const struct ctx *c, const struct flow *fl)
{
	unsigned int mtu = c->conf.mtu ? c->conf.mtu : 1500;
	uint32_t l3 = inany_is4(&fl->f.key[FLOW_SIDE_GUEST].a) ? IP4_HLEN
							       : IP6_HLEN;
	uint32_t mss = MAX(MIN(mtu - l3 - TCP_HLEN, 65535u), 536u);

	/* Not bounded by the host socket's segment size (mss_host): the
	 * kernel holds that at half the peer's first window (32 KiB on
	 * loopback) until it sees more, and the host's segmentation is no
	 * concern of the guest's. Without TSO (a qemu stream) each frame
	 * is one segment: the MTU's MSS makes them 64 KiB, not 32
	 * (doc/bench.md, VM mode guest->host).
	 * With TSO, at a big MTU, one segment nearly fills the 64 KiB
	 * frame and the guest's kernel starts at half the SYN-ACK's window
	 * (64 KiB, never scaled): a third of the TSO limit makes every
	 * frame carry three whole segments from the start. Only where
	 * frames are TSO frames. */
	if (c->link.rx_tso && mss > TCP_GUEST_TSO_BYTES / 2)
		mss = TCP_GUEST_TSO_BYTES / 3;
	return mss;
}

/* tcp_sock_mss() - a connected socket's segment sizes, with one TCP_INFO:
 * the path's (mss_host, what TCP_MAXSEG reads) and the one we advertised
 * to the peer (mss_peer, for the window clamp in tcp_out.c). Returns the
 * socket's TCP state (TCP_ESTABLISHED, TCP_SYN_SENT, ...; the values of
 * <netinet/tcp.h>), -1 when TCP_INFO failed. */
int tcp_sock_mss(struct tcp_conn *conn)
{
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);

	if (getsockopt(conn->sock, IPPROTO_TCP, TCP_INFO, &ti, &sl) ||
	    sl < offsetof(struct tcp_info, tcpi_advmss) + sizeof(ti.tcpi_advmss))
		return -1;
	if (ti.tcpi_snd_mss)
		conn->mss_host = (uint16_t)MIN(ti.tcpi_snd_mss, 65535u);
	if (ti.tcpi_advmss)
		conn->mss_peer = ti.tcpi_advmss;
	return ti.tcpi_state;
}

/* tcp_sock_opts() - options of a new host socket. */
void tcp_sock_opts(int s)
{
	int one = 1;

	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

/* tcp_guest_syn_params() - what the guest's SYN (or SYN-ACK) tells us:
 * its ISN, window, window scale, MSS and SACK-permitted. */
void tcp_guest_syn_params(const struct ctx *c, struct flow *fl,
			  const struct tcp_view *t, bool v6)
{
	struct tcp_conn *conn = conn_of(fl);
	unsigned int mtu = c->conf.mtu ? c->conf.mtu : 1500;
	uint32_t mss = t->has_mss ? t->mss : (v6 ? 1220 : 536);
	uint32_t l3 = v6 ? IP6_HLEN : IP4_HLEN;

	conn->seq_from_guest = seq_add(seq_make(t->seq), 1);
	conn->wnd_edge = conn->seq_from_guest;
	conn->ws_from_guest = t->has_wscale ? t->wscale : 0;
	conn->ws_to_guest = t->has_wscale ? TCP_WS_TO_GUEST : 0;
	conn->wnd_from_guest = t->window;	/* never scaled in a SYN */
	/* RFC 9293 3.10.7.3/4: SND.WL1 <- SEG.SEQ, SND.WL2 <- SEG.ACK of the
	 * SYN-ACK (forwarded). For the guest's SYN, which acknowledges
	 * nothing, WL1 = its ISN is enough: every later segment lies beyond
	 * it, so the handshake's ACK takes its window whatever WL2 says. */
	conn->snd_wl1 = seq_make(t->seq);
	conn->snd_wl2 = seq_make(t->ack);
	if (t->has_sack_perm)
		conn->flags |= TCP_C_SACK;
	else
		conn->flags &= (uint16_t)~TCP_C_SACK;
	mss = MIN(mss, mtu - l3 - TCP_HLEN);
	conn->mss_to_guest = (uint16_t)MAX(mss, 64u);
}

/* tcp_now_us() - the loop's current time (c->now) in microseconds,
 * never 0 (0 marks "not timing"). */
int64_t tcp_now_us(const struct ctx *c)
{
	int64_t us = (int64_t)c->now.tv_sec * 1000000 + c->now.tv_nsec / 1000;

	return us ? us : 1;
}

/* tcp_isn() - our initial sequence number for the flow (RFC 6528). */
uint32_t tcp_isn(const struct ctx *c, const struct flow *fl)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	uint64_t ns = (uint64_t)c->now.tv_sec * 1000000000ull +
		      (uint64_t)c->now.tv_nsec;
	uint64_t h = siphash24(c->tcp.isn_k0, c->tcp.isn_k1, k, sizeof(*k));

	/* RFC 6528: ISN = M + F(4-tuple, secret), M a ~4 us clock. */
	return (uint32_t)h + (uint32_t)(ns >> 12);
}

/* tcp_rtt_sample() - an ACK up to ack: when it covers the segment being
 * timed, its round trip goes into the smoothed RTT (RFC 6298 2.2/2.3,
 * alpha 1/8; microseconds of the loop's clock, so a sample includes the
 * loop's own delays and the guest's delayed ACKs, which is what a probe
 * must wait for). */
void tcp_rtt_sample(const struct ctx *c, struct tcp_conn *conn, seq_t ack)
{
	int64_t r;

	if (!conn->rtt_start_us || seq_lt(ack, conn->rtt_seq))
		return;
	r = tcp_now_us(c) - conn->rtt_start_us;
	conn->rtt_start_us = 0;
	r = MIN(MAX(r, 1), (int64_t)TCP_RTO_MAX_MS * 1000);
	conn->srtt_us = conn->srtt_us ? conn->srtt_us - conn->srtt_us / 8 +
					(uint32_t)r / 8
				      : (uint32_t)r;
}

/* tcp_established() - the guest acknowledged our SYN-ACK. */
void tcp_established(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if (!conn->retries)	/* Karn: not after a retransmission */
		tcp_rtt_sample(c, conn, seq_add(conn->isn_to_guest, 1));
	tcp_conn_set(c, fl, TCP_CS_ESTABLISHED, 0,
		     conn->state == TCP_CS_SYN_TO_GUEST ? TCP_EV_GUEST_SYNACK
							: TCP_EV_GUEST_ACK);
	tcp_half_open_del(c, fl);
	conn->retries = 0;
	conn->timer_ms = 0;
	/* No SO_PEEK_OFF yet: tcp_out.c turns it on once a read has more
	 * than a few bytes to skip (tcp_peek_skip()). */
	conn->flags |= TCP_C_TX_NOW;
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

void tcp_conn_set(const struct ctx *c, struct flow *fl, uint8_t state,
		  uint16_t flags, enum tcp_event ev)
{
	struct tcp_conn *conn = conn_of(fl);
	/* The one place a TCP_C_CLOSING bit is set (a migrated connection
	 * arrives established with none), so closing holds them all. */
	uint8_t old = conn->state, closing = conn->closing;

	if (state)
		conn->state = state;
	conn->flags |= flags;
	conn->closing = (uint8_t)(closing | (flags & TCP_C_CLOSING));
	if (conn->state != old || conn->closing != closing)	/* --debug */
		flow_log_tcp_step(&c->flows, fl, old, closing, ev);
}

void tcp_conn_close(struct ctx *c, struct flow *fl, enum tcp_end why)
{
	struct tcp_conn *conn = conn_of(fl);

	flow_log_tcp_close(&c->flows, fl, why);	/* --debug */
	if (conn->sock >= 0) {
		if (why != TCP_END_CLOSE) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(conn->sock, SOL_SOCKET, SO_LINGER, &l,
				   sizeof(l));
		}
		close(conn->sock);	/* also ends the epoll registration */
		conn->sock = -1;
	}
	tcp_ooo_release(c->tcp.ooo, conn);
	tcp_half_open_del(c, fl);
	flow_free(&c->flows, fl);
}
