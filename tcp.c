/* tcp.c - TCP translation: dispatch (segments, socket events) and the
 * connection lifecycle (opening, the drain before exit).
 *
 * Theory of operation
 *
 * ferry terminates the guest's TCP connections itself and carries their
 * byte streams over ordinary host sockets. Each connection is a FLOW_TCP
 * flow (tcp_conn.h) found by the guest-side 4-tuple.
 *
 * Opening (guest-initiated): a SYN from the guest makes a non-blocking
 * host socket connect() to nat_outbound(destination). The guest hears
 * nothing until the kernel reports the outcome (EPOLLOUT): success gives
 * the guest a SYN-ACK, failure (refused, unreachable) an RST, and so does
 * a connect that takes longer than TCP_CONNECT_TIMEOUT_MS. Retransmitted
 * SYNs meanwhile are absorbed. The SYN-ACK carries our MSS (from the
 * guest's MTU, tcp_mss_from_guest()) and a window scale when the
 * guest offered one; ISNs follow RFC 6528 (tcp_isn()). The SYN-ACK is
 * retransmitted until the guest's ACK arrives, then the host socket is
 * reset (a guest that never completes the handshake).
 *
 * Guest -> host and segment arrival: tcp_in.c (tcp_input() here finds
 * the connection and hands it the segment, tcp_conn_input()).
 *
 * Host -> guest (tcp_out.c): MSG_PEEK into frames, MSG_TRUNC on ACK,
 * rewind on duplicate ACKs (fewer for a small flight: early
 * retransmit), a tail loss probe or a timeout, window clamp.
 *
 * Closing: each direction closes on its own (half-close): the guest's FIN
 * becomes shutdown(SHUT_WR), the peer's EOF our FIN once all its data is
 * sent. When both FINs are through and acknowledged, the socket is closed
 * normally. Resets travel both ways: a guest RST (at RCV.NXT) closes the
 * socket with SO_LINGER 0 (the peer gets an RST, and no TIME_WAIT is left
 * behind on the host), a socket error becomes an RST to the guest, also
 * when a sendmsg() or recv() took the error before EPOLLERR could report
 * it (tcp_sock_failed(), tcp_sock_dead()). Only
 * aborted connections use SO_LINGER 0; a clean close keeps TCP's
 * TIME_WAIT semantics, which fall on ferry's socket only when the guest
 * closed first (see doc/tcp.md). Toward the guest, a clean close is
 * remembered for a while by its 4-tuple (tcp_tw.c): the guest's
 * retransmitted FIN or data gets our last ACK again, not an RST; a new
 * SYN opens a new connection.
 *
 * Timers run from the event loop's module timer (tcp_timer.c): each
 * connection has one deadline (handshake, retransmission, zero-window
 * probe; while it comes first, the tail loss probe's, with the RTO's
 * kept aside) plus an inactivity limit and keepalives toward the guest
 * (tcp_guard.c); host-side keepalives are the kernel's (SO_KEEPALIVE).
 * The window offered to the guest is output's (tcp_out.c, as Linux's
 * tcp_select_window() is tcp_output.c's).
 *
 * The TCP files by role, each calling only the ones below it: tcp.c
 * (dispatch, opening) above tcp_in.c (segment arrival), above
 * tcp_timer.c (timers), above tcp_fwd.c and tcp_splice.c (forwarded
 * ports), above tcp_tw.c (closed connections) and tcp_guard.c (budgets,
 * keepalives), above tcp_out.c (output), above tcp_conn.c (the record's
 * helpers) and the leaves tcp_sack.c and tcp_ooo.c.
 */
#include <errno.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "log.h"
#include "nat.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "util.h"

/* seccomp(all): bind close connect getsockopt recvfrom sendmsg setsockopt */
/* seccomp(all): shutdown
 *   (host sockets of TCP flows) */
/* seccomp(all): socket(0=AF_INET) socket(0=AF_INET6) */
/* seccomp(all): ioctl(1=SIOCINQ)
 *   (a socket's unread bytes, before exit) */

_Static_assert(sizeof(struct tcp_conn) <= FLOW_PRIV_SIZE, "fits a flow");

/* conn_of() - the connection record in a FLOW_TCP flow's private area. */
static struct tcp_conn *conn_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct tcp_conn);
}

/* tcp_init() - the out-of-order pool, the closed connections' table
 * (tcp_tw.c), the fd budget, the ISN secret and
 * whether SO_PEEK_OFF works (probed on a throw-away socket). */
void tcp_init(struct ctx *c)
{
	int s, zero = 0;

	if (!c->tcp.ooo)
		c->tcp.ooo = tcp_ooo_pool_new(TCP_OOO_POOL_BLKS);
	tcp_tw_init(&c->tcp.tw);
	if (!c->tcp.due.e)
		dheap_init(&c->tcp.due, FLOW_MAX);
	c->tcp.max_fds = tcp_fd_budget(fd_limit());
	random_bytes(&c->tcp.isn_k0, sizeof(c->tcp.isn_k0));
	random_bytes(&c->tcp.isn_k1, sizeof(c->tcp.isn_k1));
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (s < 0)
		s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	c->tcp.peek_off = s >= 0 && !setsockopt(s, SOL_SOCKET, SO_PEEK_OFF,
						&zero, sizeof(zero));
	if (s >= 0)
		close(s);
	debug("tcp: SO_PEEK_OFF %s", c->tcp.peek_off ? "supported"
						     : "not supported");
}

/* tcp_sock_connect() - non-blocking socket connecting to dst:port, bound
 * to the configured outbound address and interface (-o, --outbound-if4/6)
 * if any. Returns the fd or -errno. */
static int tcp_sock_connect(const struct ctx *c, const union inany *dst,
			    uint16_t port)
{
	bool v4 = inany_is4(dst);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	int s, e, r = 0;

	s = socket(v4 ? AF_INET : AF_INET6,
		   SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (s < 0)
		return -errno;
	/* No options yet: TCP_NODELAY before the second write
	 * (tcp_nodelay_lazy()), SO_KEEPALIVE once the connection lived
	 * TCP_KA_ARM_MS (tcp_timer()): a short one needs neither. */
	if (v4 && !in4_is_unspec(&c->conf.ip4.outbound)) {
		a4.sin_addr = c->conf.ip4.outbound;
		r = bind(s, (struct sockaddr *)&a4, sizeof(a4));
	} else if (!v4 && !in6_is_unspec(&c->conf.ip6.outbound)) {
		a6.sin6_addr = c->conf.ip6.outbound;
		r = bind(s, (struct sockaddr *)&a6, sizeof(a6));
	}
	if (r < 0)	/* as pasta: go on from the kernel's choice of source */
		debug("tcp: outbound address not usable: %s", strerror(errno));
	if ((r = sock_bind_dev(s, v4 ? c->conf.outbound_if4
				     : c->conf.outbound_if6))) {
		close(s);
		return r;
	}
	a4.sin_addr = dst->v4m.a4;
	a4.sin_port = htons(port);
	a6.sin6_addr = dst->a6;
	a6.sin6_port = htons(port);
	if (v4 ? connect(s, (struct sockaddr *)&a4, sizeof(a4))
	       : connect(s, (struct sockaddr *)&a6, sizeof(a6))) {
		if (errno != EINPROGRESS) {
			e = errno;
			close(s);
			return -e;
		}
	}
	return s;
}

/* tcp_key_from_pkt() - the guest-side flow key of a segment. */
static void tcp_key_from_pkt(const struct pkt *p, struct flow_key *k)
{
	union inany a, b;

	if (p->is_v6) {
		inany_from6(&a, &p->src6);
		inany_from6(&b, &p->dst6);
	} else {
		inany_from4(&a, p->src4);
		inany_from4(&b, p->dst4);
	}
	flow_key_make(k, IPPROTO_TCP, &a, p->tcp.sport, &b, p->tcp.dport);
}

static void tcp_connected(struct ctx *c, struct flow *fl);

/* tcp_conn_open() - a guest SYN without a flow: start the host connect. */
static enum drop_reason tcp_conn_open(struct ctx *c, const struct pkt *p,
				      const struct flow_key *k)
{
	union inany dst = k->b;
	struct tcp_conn *conn;
	struct flow *fl;
	int s;

	if (!nat_outbound_l4(c, &dst, k->pb)) {
		tcp_rst_reply(c, p);
		return p->is_v6 ? DROP_IP6_DST : DROP_IP4_DST;
	}
	if (!tcp_half_open_admit(c)) {	/* the oldest half-open may go */
		tcp_rst_reply(c, p);
		return DROP_TCP_FD_BUDGET;
	}
	if (!(fl = flow_alloc(&c->flows, FLOW_TCP))) {
		tcp_rst_reply(c, p);
		return DROP_FLOW_TABLE_FULL;
	}
	s = tcp_sock_connect(c, &dst, k->pb);
	if (s < 0) {
		flow_free(&c->flows, fl);
		c->tcp.st.refused++;
		tcp_rst_reply(c, p);
		return DROP_NONE;	/* answered: the guest got its RST */
	}
	conn = conn_of(fl);
	conn->sock = s;
	conn->pend_head = conn->pend_tail = TCP_PEND_NONE;
	conn->state = TCP_CS_CONNECTING;
	/* The socket is empty: no read when the guest's ACK completes the
	 * handshake unless the peer sent something first (tcp_sock_handler()
	 * notes it), and the first read guesses (no SIOCINQ): one system
	 * call less for a client-first protocol such as HTTP. */
	conn->sock_sent = conn->read_drained = true;
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, k);
	tcp_guest_syn_params(c, fl, &p->tcp, p->is_v6);
	conn->isn_to_guest = seq_make(tcp_tw_reopen(c, k, tcp_isn(c, fl)));
	conn->seq_to_guest = seq_add(conn->isn_to_guest, 1);
	conn->seq_acked_by_guest = conn->seq_to_guest;
	conn->last_ms = tcp_now_ms(c);
	conn->ka_ms = conn->last_ms + TCP_KA_ARM_MS;
	tcp_half_open_add(c, fl);
	if (tcp_ep_add(c, fl)) {
		tcp_rst_reply(c, p);
		tcp_conn_close(c, fl, TCP_END_EPOLL);
		return DROP_SOCKET_ERROR;
	}
	tcp_timer_set(c, conn, TCP_CONNECT_TIMEOUT_MS);
	c->tcp.st.opened++;
	/* Loopback: the whole handshake with a listening peer runs inside
	 * connect() (the kernel's softirq and the socket's backlog, before
	 * it returns EINPROGRESS), so the SYN-ACK goes out in this round
	 * instead of after one more epoll_wait() for EPOLLOUT. The
	 * TCP_INFO is the one tcp_connect_done() needs anyway; a peer that
	 * did not answer yet is left to EPOLLOUT as any other. */
	if (inany_is_loopback(&dst) && tcp_sock_mss(conn) == TCP_ESTABLISHED) {
		c->tcp.st.connect_now++;
		tcp_connected(c, fl);
	}
	return DROP_NONE;
}

/* tcp_connect_done() - the host connect() finished (or failed). */
static void tcp_connect_done(struct ctx *c, struct flow *fl, uint32_t events)
{
	struct tcp_conn *conn = conn_of(fl);
	socklen_t sl = sizeof(int);
	int err = 0;

	/* A non-blocking connect() reports EPOLLOUT alone once connected,
	 * EPOLLERR/EPOLLHUP when it failed. */
	if (events & (EPOLLERR | EPOLLHUP)) {
		getsockopt(conn->sock, SOL_SOCKET, SO_ERROR, &err, &sl);
		if (!err)
			err = ECONNRESET;
	} else if (!(events & EPOLLOUT)) {
		return;
	}
	if (err) {
		debug("tcp: connect failed: %s", strerror(err));
		c->tcp.st.refused++;
		tcp_sock_failed(conn, err);	/* the close line says it */
		tcp_reset_both(c, fl, TCP_END_CONNECT);
		return;
	}
	tcp_sock_mss(conn);
	tcp_connected(c, fl);
}

/* tcp_connected() - the host socket is connected (its segment sizes
 * known, tcp_sock_mss()): SYN-ACK to the guest. */
static void tcp_connected(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	tcp_conn_set(c, fl, TCP_CS_SYNACK_SENT, 0, TCP_EV_CONNECTED);
	tcp_wnd_first(c, fl);
	tcp_send_flags(c, fl, TCP_F_SYN | TCP_F_ACK);
	conn->retries = 0;
	tcp_timer_set(c, conn, TCP_SYN_RTO_MS);
	tcp_events_update(c, fl);
}

enum drop_reason tcp_input(struct ctx *c, const struct pkt *p)
{
	const struct tcp_view *t = &p->tcp;
	enum drop_reason r;
	struct flow_key k;
	struct flow *fl;

	if (!t->sport || !t->dport)
		return DROP_L4_PORT_ZERO;
	tcp_key_from_pkt(p, &k);
	fl = flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k);
	if (fl && fl->f.type == FLOW_TCP)
		return tcp_conn_input(c, fl, p);
	if (tcp_tw_input(c, p, &k, &r))		/* a closed connection's */
		return r;
	if (t->flags & TCP_F_RST)
		return DROP_NO_FLOW;
	if ((t->flags & (TCP_F_SYN | TCP_F_ACK | TCP_F_FIN)) == TCP_F_SYN) {
		if (!c->draining)
			return tcp_conn_open(c, p, &k);
		tcp_rst_reply(c, p);	/* no new connections (drain.c) */
		return DROP_TCP_DRAINING;
	}
	tcp_rst_reply(c, p);
	return DROP_NO_FLOW;
}

/* tcp_sock_error() - EPOLLERR/EPOLLHUP on a connected socket. Returns
 * true when the connection was reset and freed.
 *
 * A hang-up (EPOLLHUP: both directions shut, or the socket closed)
 * without EPOLLERR is orderly only once our own shutdown(SHUT_WR) went:
 * nothing but the kernel's abort of the connection (the peer's RST, a
 * timeout) shuts our sending side otherwise. Its error may be gone
 * already, taken by a sendmsg() or recv() before this report (the
 * socket's error is reported once), so the hang-up alone says it. */
static bool tcp_sock_error(struct ctx *c, struct flow *fl, uint32_t events)
{
	struct tcp_conn *conn = conn_of(fl);
	socklen_t sl = sizeof(int);
	int err = 0;

	if (!(events & EPOLLERR) && (conn->flags & TCP_C_SHUT_WR)) {
		/* Orderly: nothing more will come. */
		tcp_conn_set(c, fl, 0, TCP_C_SOCK_EOF, TCP_EV_HOST_HUP);
		return false;
	}
	if (events & EPOLLERR)
		getsockopt(conn->sock, SOL_SOCKET, SO_ERROR, &err, &sl);
	tcp_sock_failed(conn, err ? err : ECONNRESET);
	return tcp_sock_dead(c, fl);
}

void tcp_sock_handler(struct ctx *c, uint64_t ref_u64, uint32_t events)
{
	union eref ref = { .u64 = ref_u64 };
	struct tcp_conn *conn;
	struct flow *fl;

	if (ref.type != EREF_TCP)
		return;
	fl = flow_at(&c->flows, ref.idx);
	if (!fl || fl->f.type != FLOW_TCP)
		return;
	conn = conn_of(fl);
	/* The peer's FIN is a fact in any state, wanted or not: this may be
	 * its only report (edge-triggered: while connecting it comes with
	 * EPOLLOUT, before a forwarded connection's handshake on its own).
	 * A connect() that failed reports EPOLLRDHUP with its EPOLLERR: no
	 * FIN came, and the log should not say one did. */
	if ((events & EPOLLRDHUP) && !(conn->flags & TCP_C_SOCK_EOF) &&
	    !(conn->state == TCP_CS_CONNECTING && (events & EPOLLERR)))
		tcp_conn_set(c, fl, 0, TCP_C_SOCK_EOF, TCP_EV_HOST_EOF);
	else
		events &= ~(uint32_t)EPOLLRDHUP;
	if (conn->state == TCP_CS_CONNECTING) {
		if (events & EPOLLIN)	/* data with the connect's EPOLLOUT */
			conn->sock_sent = false;
		tcp_connect_done(c, fl, events);
		return;
	}
	/* An orderly hang-up already seen is no news (edge-triggered, it
	 * comes again with each later wake-up of the socket). */
	if ((conn->flags & TCP_C_SOCK_EOF) && (conn->flags & TCP_C_SHUT_WR) &&
	    !(events & EPOLLERR))
		events &= ~(uint32_t)EPOLLHUP;
	if ((events & (EPOLLERR | EPOLLHUP)) && tcp_sock_error(c, fl, events))
		return;
	/* Registered for everything once (tcp_ep_add()): act on what the
	 * connection wants now, and on a first hang-up or FIN. */
	events &= conn->ev | EPOLLHUP | EPOLLRDHUP;
	if (!events)
		return;
	if (conn->state != TCP_CS_ESTABLISHED) {
		/* Read once the guest completes the handshake (TX_NOW). */
		if (events & EPOLLIN)
			conn->sock_sent = false;
		tcp_events_update(c, fl);
		return;
	}
	if (events & EPOLLOUT) {
		/* Room again: queued bytes a short write left behind go
		 * first, then the guest hears about the window. */
		conn->flags &= (uint16_t)~TCP_C_ACK_NOW;
		if (conn->ooo) {
			tcp_flush_pending(c, fl);
			tcp_fin_to_host(c, fl);
		}
		if (tcp_wnd_refresh(c, fl)) {
			c->tcp.st.wnd_updates++;
			conn->flags |= TCP_C_ACK_NOW;
		}
		if (conn->flags & TCP_C_ACK_NOW)
			tcp_send_flags(c, fl, TCP_F_ACK);
		conn->flags &= (uint16_t)~(TCP_C_ACK_NOW | TCP_C_WANT_OUT);
		if (conn->ooo && tcp_ooo_continues(c->tcp.ooo, conn,
						   conn->seq_from_guest))
			conn->flags |= TCP_C_WANT_OUT;
		if (tcp_sock_dead(c, fl) || tcp_conn_finished(c, fl))
			return;
		if (!conn->wnd_poll_ms)		/* no EPOLLOUT until refused */
			tcp_wnd_poll_arm(c, fl);
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
		conn->sock_sent = false;
		tcp_data_to_guest(c, fl);
		if (tcp_sock_dead(c, fl))
			return;
	}
	tcp_events_update(c, fl);
}

/* tcp_conn_drained() - drain before exit (drain.c): is the connection
 * finished as far as the exit is concerned? Every guest byte written to
 * the socket, the guest's FIN passed on and acknowledged; every host byte
 * delivered and acknowledged by the guest (nothing sent and unacknowledged,
 * nothing in the socket beyond what the guest acknowledged) and the host's
 * FIN, if any, acknowledged. The host may still hold its side open: the
 * guest's side is closed, there is nothing left to carry. */
static bool tcp_conn_drained(const struct tcp_conn *conn)
{
	int inq = 0;

	if (conn->state != TCP_CS_ESTABLISHED ||
	    !(conn->flags & TCP_C_SHUT_WR) ||
	    !seq_eq(conn->ack_sent, conn->seq_from_guest) || conn->pend_bytes)
		return false;
	if ((conn->flags & TCP_C_SOCK_EOF) && !(conn->flags & TCP_C_FIN_ACKED))
		return false;
	if (!seq_eq(conn->seq_acked_by_guest, conn->seq_to_guest) ||
	    conn->rewound)
		return false;
	return !ioctl(conn->sock, SIOCINQ, &inq) && inq >= 0 &&
	       (uint32_t)inq <= conn->consume;
}

bool tcp_drain_busy(const struct ctx *c)
{
	struct flow *fl;

	if (c->flows.count[FLOW_TCP_SPLICE])
		return true;
	for (fl = flow_first(&c->flows, FLOW_TCP); fl;
	     fl = flow_next(&c->flows, fl))
		if (!tcp_conn_drained(conn_of(fl)))
			return true;
	return false;
}

void tcp_drain_end(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl; fl = nx) {
		struct tcp_conn *conn = conn_of(fl);
		char t[FLOW_KEY_STRLEN];

		nx = flow_next(&c->flows, fl);
		if (tcp_conn_drained(conn)) {
			/* close() with unread bytes would reset the peer */
			if (conn->consume)
				recv(conn->sock, NULL, conn->consume,
				     MSG_TRUNC | MSG_DONTWAIT);
			tcp_conn_close(c, fl, TCP_END_CLOSE);
			continue;
		}
		flow_key_str(&fl->f.key[FLOW_SIDE_GUEST], t, sizeof(t));
		warn("tcp: %s reset at the linger deadline", t);
		c->tcp.st.drain_resets++;
		tcp_reset_both(c, fl, TCP_END_DRAIN);
	}
	tcp_splice_drain_end(c);
}

/* The statistics lines (drop.h's registry): the counters, those of the
 * out-of-order pool while there is one, the closed connections'. */
static const struct stat_item tcp_stat_items[] = {
	STAT("opened", struct ctx, tcp.st.opened),
	STAT("refused", struct ctx, tcp.st.refused),
	STAT("rst to/from guest", struct ctx, tcp.st.rst_to_guest),
	STAT_PAIR(struct ctx, tcp.st.rst_from_guest),
	STAT("rewinds dupack/rto", struct ctx, tcp.st.rewinds_dupack),
	STAT_PAIR(struct ctx, tcp.st.rewinds_rto),
	STAT("short writes", struct ctx, tcp.st.short_writes),
	STAT("wnd updates", struct ctx, tcp.st.wnd_updates),
	STAT("wnd polls/updates", struct ctx, tcp.st.wnd_polls),
	STAT_PAIR(struct ctx, tcp.st.wnd_poll_updates),
	STAT("clamp sets", struct ctx, tcp.st.clamp_sets),
	STAT("fallbacks", struct ctx, tcp.st.clamp_fallbacks),
	STAT("timeouts", struct ctx, tcp.st.timeouts),
	STAT("acks delayed", struct ctx, tcp.st.acks_delayed),
	STAT("sent by timer", struct ctx, tcp.st.acks_delack_timer),
	STAT("acks carried", struct ctx, tcp.st.acks_carried),
	STAT("sack rewinds/skips/bytes/ignored", struct ctx,
	     tcp.st.sack_rewinds),
	STAT_PAIR(struct ctx, tcp.st.sack_skips),
	STAT_PAIR(struct ctx, tcp.st.sack_skipped),
	STAT_PAIR(struct ctx, tcp.st.sack_ignored),
	STAT("early rexmits", struct ctx, tcp.st.early_rexmits),
	STAT("tlp probes/rewinds", struct ctx, tcp.st.tlp_probes),
	STAT_PAIR(struct ctx, tcp.st.tlp_rewinds),
	STAT("challenge acks/limited", struct ctx, tcp.st.chacks),
	STAT_PAIR(struct ctx, tcp.st.chacks_limited),
	STAT("drain resets", struct ctx, tcp.st.drain_resets),
	STAT("timer visits", struct ctx, tcp.st.timer_visits),
};

STAT_GROUP(tcp_stats) = {
	.order = 20, .what = "tcp", .when = STAT_ALWAYS, .via = -1,
	.items = tcp_stat_items, .n = ARRAY_SIZE(tcp_stat_items),
};

static const struct stat_item tcp_ooo_stat_items[] = {
	STAT("segments", struct tcp_ooo_pool, st.segs),
	STAT("bytes", struct tcp_ooo_pool, st.bytes),
	STAT("delivered", struct tcp_ooo_pool, st.delivered),
	STAT("drops full/reach", struct tcp_ooo_pool, st.full_drops),
	STAT_PAIR(struct tcp_ooo_pool, st.reach_drops),
	STAT("sack acks", struct tcp_ooo_pool, st.sack_sent),
	STAT("blocks", struct tcp_ooo_pool, st.blks_used),
	STAT("peak", struct tcp_ooo_pool, st.blks_peak),
};

STAT_GROUP(tcp_ooo_stats) = {
	.order = 21, .what = "tcp ooo", .when = STAT_ALWAYS,
	.via = offsetof(struct ctx, tcp.ooo),
	.items = tcp_ooo_stat_items, .n = ARRAY_SIZE(tcp_ooo_stat_items),
};

/* The counters of connections ended early (tcp_guard.c), once any is not
 * 0: host socket errors passed to the guest as RSTs, half-open
 * connections abandoned for new ones, keepalives to the guest. */
static const struct stat_item tcp_abort_stat_items[] = {
	STAT("host errors", struct ctx, tcp.st.host_errors),
	STAT("half-open evicted", struct ctx, tcp.st.half_open_evicted),
	STAT("keepalives sent/answered/resets", struct ctx, tcp.st.ka_probes),
	STAT_PAIR(struct ctx, tcp.st.ka_answered),
	STAT_PAIR(struct ctx, tcp.st.ka_resets),
};

STAT_GROUP(tcp_abort_stats) = {
	.order = 23, .what = "tcp aborts", .when = STAT_ANY, .via = -1,
	.items = tcp_abort_stat_items, .n = ARRAY_SIZE(tcp_abort_stat_items),
};
