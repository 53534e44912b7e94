/* tcp_in.c - TCP segment arrival: the guest's segments on an existing
 * connection, its ACKs and windows, its data to the host socket, and the
 * end-of-batch work.
 *
 * Theory of operation
 *
 * Guest -> host: tcp_conn_input() sees each segment of an input batch. In-order
 * payload is not written at once: a slice (pointer, length) is queued on
 * the connection, and tcp_input_done() writes all slices of a connection
 * with one sendmsg(). Only bytes the socket accepted advance
 * seq_from_guest and are acknowledged: an acknowledged byte is a promise.
 * The window offered to the guest is the free space of the socket's send
 * buffer (SO_MEMINFO, measured again after each eighth of it written), so
 * the guest is not invited to send what would be refused; it moves in
 * coarse steps, so that a bulk sender's ACKs carry the same window, and
 * its right edge never moves back (tcp_wnd_set()). When it is low,
 * EPOLLOUT is armed and the guest gets a window update as soon as the
 * buffer drains; if that still leaves less than one of the guest's
 * segments, a timer measures again until one fits (tcp_wnd_poll()). The
 * guest's FIN is
 * passed on with shutdown(SHUT_WR) only once every byte before it has
 * been written.
 *
 * Segment arrival (tcp_conn_input()) follows RFC 9293 3.10.7.4 step by
 * step, with RFC 5961's challenge ACKs for an RST that is not at
 * RCV.NXT and for a SYN, limited per connection (tcp_chack()); the
 * guest's window is taken only from a newer segment (SND.WL1/2,
 * tcp_wnd_from_seg()). doc/tcp.md "Segment arrival" has the table of
 * rules, what ferry does and the deviations.
 *
 * Sits above the timers (tcp_timer.c: the delayed ACK it queues), the
 * forwarders (tcp_fwd.c: a forwarded connection's SYN-ACK), the closed
 * connections (tcp_tw.c), the guards and output (tcp_out.c), which it
 * drives: acknowledged bytes consumed, rewinds, reads when the guest's
 * ACK or window lets more out. tcp.c's dispatch calls it.
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "util.h"

/* seccomp(all): recvfrom sendmsg setsockopt shutdown
 *   (guest data to host sockets, the guest's FIN, acked bytes dropped) */
/* seccomp(all): ioctl(1=SIOCINQ)
 *   (unsent bytes in a host socket: early retransmit) */

#define TCP_IOV_MAX	1024	/* iovecs per sendmsg() (UIO_MAXIOV) */

_Static_assert(TCP_PEND_MAX >= RX_FRAMES_MAX, "one slice per input frame");
_Static_assert(TCP_PEND_MAX < TCP_IOV_MAX, "room for the queued run");
_Static_assert(TCP_PEND_MAX < TCP_PEND_NONE, "slice index fits");

/* conn_of() - the connection record in a FLOW_TCP flow's private area. */
static struct tcp_conn *conn_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct tcp_conn);
}

/* tcp_early_rexmit() - a duplicate ACK outside a recovery: RFC 5827's
 * early retransmit (the SACK variant, section 3.2) resends the segment
 * at the ACK once the scoreboard shows all of a flight of fewer than
 * four segments SACKed but that one (tcp_sack_er()), when no new data
 * can go out to draw more duplicates: our FIN is sent, the guest's
 * window wnd (this duplicate's, taken after it) is full, or the socket
 * holds nothing unsent (one SIOCINQ, on this path only). Needs SACK:
 * without it a duplicate ACK cannot be told from the answer to a
 * duplicate segment. */
bool tcp_early_rexmit(struct tcp_conn *conn, uint32_t wnd)
{
	uint32_t out = (uint32_t)seq_diff(conn->seq_to_guest,
					  conn->seq_acked_by_guest);
	int inq = 0;

	if (!(conn->flags & TCP_C_SACK) || conn->rewound ||
	    !tcp_sack_er(conn))
		return false;
	if ((conn->flags & TCP_C_FIN_SENT) || wnd <= out)
		return true;
	if (ioctl(conn->sock, SIOCINQ, &inq) || inq < 0)
		return false;
	return (uint32_t)inq <= conn->consume + out;
}

/* tcp_dirty() - queue the connection for end-of-batch work. */
static void tcp_dirty(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if (conn->flags & TCP_C_DIRTY)
		return;
	if (c->tcp.dirty_n == TCP_DIRTY_MAX)
		tcp_input_done(c);	/* cannot happen: one per frame */
	conn->flags |= TCP_C_DIRTY;
	c->tcp.dirty[c->tcp.dirty_n++] = flow_idx(&c->flows, fl);
}

/* tcp_dupack_loss() - a duplicate ACK, counted here: whether the
 * segment at the ACK counts as lost now. On the third duplicate; on one
 * when the SACK blocks show it lost (tcp_sack_una_lost()), when they
 * show the tail loss probe's segment delivered (everything below not
 * SACKed went out at least a PTO before it: RFC 8985's RACK inference,
 * for the probe only), or by early retransmit (tcp_early_rexmit(), with
 * wnd, the duplicate's window). */
static bool tcp_dupack_loss(struct ctx *c, struct tcp_conn *conn,
			    uint32_t wnd)
{
	if (++conn->dup_acks == 3 || tcp_sack_una_lost(conn))
		return true;
	if (conn->tlp == TCP_TLP_SENT && !tcp_sack_in_recovery(conn) &&
	    tcp_sack_tail_sacked(conn)) {
		c->tcp.st.tlp_rewinds++;
		return true;
	}
	if (tcp_early_rexmit(conn, wnd)) {
		c->tcp.st.early_rexmits++;
		return true;
	}
	return false;
}

/* tcp_chack() - answer a guest segment that does not fit the connection
 * with our ACK at the end of the batch: an RST inside the window but not
 * at RCV.NXT, a SYN once synchronized (RFC 5961 sections 3.2 and 4:
 * "challenge ACKs"; a guest that lost the connection answers with an RST
 * at our ACK, which then resets it), a segment beyond the window or
 * acknowledging what was never sent (RFC 9293 3.10.7.4, first and fifth
 * steps). At most TCP_CHACK_MAX per TCP_CHACK_MS per connection (RFC 5961
 * section 7, its example values): a hostile guest gets no more than that
 * out of ferry, and an ACK loop with a confused peer stops. Per
 * connection, so that one connection's flood costs no other its answers
 * (a global limit is also a side channel, CVE-2016-5696). Returns true
 * when the ACK will go. */
static bool tcp_chack(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	int64_t now = tcp_now_ms(c);

	if (!conn->chack_n || now - conn->chack_ms >= TCP_CHACK_MS) {
		conn->chack_ms = now;
		conn->chack_n = 0;
	}
	if (conn->chack_n >= TCP_CHACK_MAX) {
		c->tcp.st.chacks_limited++;
		return false;
	}
	conn->chack_n++;
	c->tcp.st.chacks++;
	conn->flags |= TCP_C_ACK_NOW;
	tcp_dirty(c, fl);
	return true;
}

/* tcp_guest_fin_at() - the guest's FIN is at seq and not passed on to
 * the host yet (no shutdown(SHUT_WR) for it). */
static bool tcp_guest_fin_at(const struct tcp_conn *conn, seq_t seq)
{
	return (conn->flags & TCP_C_GUEST_FIN) &&
	       !(conn->flags & TCP_C_SHUT_WR) &&
	       seq_eq(seq, conn->seq_fin_from_guest);
}

/* tcp_rcv_nxt() - RCV.NXT as far as this batch took the guest's stream
 * in: the bytes written, those queued for the batch's write, and a FIN
 * reached but not yet passed on. */
static seq_t tcp_rcv_nxt(const struct tcp_conn *conn)
{
	seq_t nxt = seq_add(conn->seq_from_guest, conn->pend_bytes);

	return tcp_guest_fin_at(conn, nxt) ? seq_add(nxt, 1) : nxt;
}

/* tcp_wnd_from_seg() - whether the window of a guest segment (seq, ack;
 * ack at or past SND.UNA, not past what was sent) is newer than the one
 * taken last, before SND.UNA moves (RFC 9293 3.10.7.4, fifth step): its
 * SEG.SEQ lies past SND.WL1, or is SND.WL1 with an ACK at or past
 * SND.WL2, so that a reordered older segment (a retransmission, an
 * earlier window update) cannot put back an older window: a larger one
 * let ferry send beyond the guest's right edge. Or its ACK moves SND.UNA
 * (as Linux's tcp_may_update_window()): the guest's ACKs only grow, so
 * the newest ACK is the guest's newest state whatever its SEG.SEQ (a
 * retransmission of a hole below data sent before it), and taking the
 * ACK without its window would move the right edge past the guest's. */
static bool tcp_wnd_from_seg(const struct tcp_conn *conn, seq_t seq, seq_t ack)
{
	return seq_gt(ack, conn->seq_acked_by_guest) ||
	       seq_gt(seq, conn->snd_wl1) ||
	       (seq_eq(seq, conn->snd_wl1) && seq_ge(ack, conn->snd_wl2));
}

/* tcp_ack_input() - the guest's ACK and window (RFC 9293 3.10.7.4 step
 * 5): acknowledged bytes are marked for consumption, three duplicate ACKs
 * rewind (one, when the SACK blocks already show the segment at the ACK
 * lost: tcp_sack_una_lost()), a grown window lets more data out. The
 * window is taken only from a segment newer than the one it was taken
 * from last (tcp_wnd_from_seg()), never from an ACK below SND.UNA. A
 * duplicate ACK has the
 * window of the ACK before (RFC 5681), or SACK blocks whatever its window
 * (RFC 6675): a guest receiving beyond a hole may grow its window in
 * every one of them. The SACK blocks go to the scoreboard, which the
 * rewind's resend steps over (tcp_sack.c). Returns DROP_TCP_ACK_UNSENT
 * for an ACK of data never sent: the segment is dropped (its payload
 * too) and answered with our ACK; DROP_NONE otherwise. */
static enum drop_reason tcp_ack_input(struct ctx *c, struct flow *fl,
				      const struct pkt *p)
{
	struct tcp_conn *conn = conn_of(fl);
	const struct tcp_view *t = &p->tcp;
	seq_t ack = seq_make(t->ack), seq = seq_make(t->seq);
	uint32_t wnd = (uint32_t)t->window << conn->ws_from_guest;
	/* An ACK below snd_una is old, and so is its window: not taken
	 * (RFC 9293 3.10.7.4: the window moves only for SND.UNA =< SEG.ACK),
	 * or a reordered ACK with a larger window would let data out beyond
	 * the guest's right edge; nor is an older segment's (SND.WL1/2). */
	bool take = !seq_lt(ack, conn->seq_acked_by_guest) &&
		    tcp_wnd_from_seg(conn, seq, ack);
	bool dup = seq_eq(ack, conn->seq_acked_by_guest), moved = false;
	bool wnd_same = wnd == conn->wnd_from_guest;
	seq_t hole;

	if (seq_gt(ack, conn->seq_to_guest)) {
		uint32_t d = (uint32_t)seq_diff(ack, conn->seq_to_guest);
		bool fin = conn->fin_rewound && d == conn->rewound + 1;

		if (d > conn->rewound && !fin) {
			/* Never sent: ACK, drop the segment (RFC 9293
			 * 3.10.7.4, fifth step). */
			tcp_chack(c, fl);
			return DROP_TCP_ACK_UNSENT;
		}
		/* Sent before a rewind: the guest has it, skip ahead (the
		 * peek offset follows when the acked bytes are dropped).
		 * With the FIN too, it counts as sent (acked just below). */
		conn->rewound -= d - fin;
		conn->seq_to_guest = ack;
		conn->peek_behind = true;
		if (fin) {
			tcp_conn_set(c, fl, 0, TCP_C_FIN_SENT, TCP_EV_FIN_SENT);
			conn->fin_rewound = false;
		}
	}
	if (seq_gt(ack, conn->seq_acked_by_guest)) {
		uint32_t n = (uint32_t)seq_diff(ack, conn->seq_acked_by_guest);

		if ((conn->flags & TCP_C_FIN_SENT) &&
		    seq_eq(ack, conn->seq_to_guest)) {
			tcp_conn_set(c, fl, 0, TCP_C_FIN_ACKED, TCP_EV_FIN_ACKED);
			n--;
		}
		conn->consume += n;
		conn->seq_acked_by_guest = ack;
		moved = true;
		conn->dup_acks = 0;
		conn->retries = 0;
		conn->timer_ms = 0;
		conn->tlp = TCP_TLP_NONE;
		tcp_rtt_sample(c, conn, ack);
		if (seq_lt(ack, conn->seq_to_guest))
			tcp_timer_set(c, conn, TCP_RTO_MS);
		conn->flags |= TCP_C_TX_NOW;
	}
	tcp_sack_input(conn, t, &c->tcp.st);
	if (dup && conn->dup_acks < 3 &&
	    !p->payload_len && (wnd_same || t->has_sack) &&
	    !(t->flags & (TCP_F_SYN | TCP_F_FIN)) &&
	    seq_lt(ack, conn->seq_to_guest) &&
	    tcp_dupack_loss(c, conn, wnd)) {
		c->tcp.st.rewinds_dupack++;
		tcp_rewind(c, fl, true);
		conn->flags |= TCP_C_TX_NOW;
	} else if (tcp_sack_lost(conn, &hole, moved)) {
		c->tcp.st.sack_rewinds++;
		tcp_rewind_to(c, fl, hole, true);
		conn->flags |= TCP_C_TX_NOW;
	}
	if (take) {
		if (wnd > conn->wnd_from_guest)
			conn->flags |= TCP_C_TX_NOW;
		conn->wnd_from_guest = wnd;
		conn->snd_wl1 = seq;
		conn->snd_wl2 = ack;
	}
	if (moved && conn->timer_ms)	/* RFC 8985 7.2: on progress */
		tcp_tlp_arm(c, fl);
	return DROP_NONE;
}

/* tcp_pend_iov() - iovecs for the batch's in-order slices, followed by
 * the out-of-order queue's run that continues them (unless the guest's
 * FIN ends the stream there). Returns the count; *bytes their total. */
static size_t tcp_pend_iov(const struct ctx *c, struct flow *fl,
			   struct iovec *iov, size_t *bytes)
{
	struct tcp_conn *conn = conn_of(fl);
	size_t n = 0, run = 0;
	uint16_t i;

	for (i = conn->pend_head; i != TCP_PEND_NONE; i = c->tcp.pend[i].next) {
		iov[n].iov_base = (void *)c->tcp.pend[i].data;
		iov[n++].iov_len = c->tcp.pend[i].len;
	}
	if (conn->ooo && !(conn->flags & TCP_C_GUEST_FIN))
		n += tcp_ooo_run(c->tcp.ooo, conn,
				 seq_add(conn->seq_from_guest, conn->pend_bytes),
				 iov + n, TCP_IOV_MAX - n, &run);
	*bytes = conn->pend_bytes + run;
	return n;
}

/* tcp_nodelay_lazy() - before a write to the socket: TCP_NODELAY from
 * the second write on. Nagle's algorithm (with Minshall's refinement,
 * tcp_nagle_check()) holds back a short segment only while an earlier
 * short one is unacknowledged, so a connection's first write goes out
 * whole either way; an HTTP request on a new connection (Connection:
 * close: the only write) then costs no setsockopt. */
static void tcp_nodelay_lazy(struct tcp_conn *conn)
{
	int one = 1;

	if (conn->sockopt & TCP_SO_NODELAY)
		return;
	if (!(conn->sockopt & TCP_SO_WRITTEN)) {
		conn->sockopt |= TCP_SO_WRITTEN;
		return;
	}
	if (!setsockopt(conn->sock, IPPROTO_TCP, TCP_NODELAY, &one,
			sizeof(one)))
		conn->sockopt |= TCP_SO_NODELAY;
}

/* tcp_flush_pending() - write the batch's in-order guest payload, and
 * the queued out-of-order bytes it connects to, with one sendmsg() (more
 * only for a run longer than TCP_IOV_MAX pieces); acknowledge only what
 * the socket took. */
void tcp_flush_pending(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	struct iovec iov[TCP_IOV_MAX];
	struct msghdr mh = { .msg_iov = iov };
	size_t total;
	ssize_t w;

	while ((mh.msg_iovlen = tcp_pend_iov(c, fl, iov, &total))) {
		tcp_nodelay_lazy(conn);
		w = sendmsg(conn->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {	/* EAGAIN, or the peer's RST: tcp_sock_dead() */
			tcp_sock_failed(conn, errno);
			w = 0;
		}
		if ((size_t)w < total) {
			c->tcp.st.short_writes++;
			conn->flags |= TCP_C_WANT_OUT;
			if (conn->flags & TCP_C_GUEST_FIN)  /* FIN not reached */
				conn->flags &= (uint16_t)~TCP_C_GUEST_FIN;
		}
		conn->seq_from_guest = seq_add(conn->seq_from_guest,
					       (uint32_t)w);
		conn->wnd_written += (uint32_t)w;
		conn->pend_head = conn->pend_tail = TCP_PEND_NONE;
		conn->pend_bytes = 0;
		/* An ACK may wait (tcp_delack()) unless the socket refused
		 * bytes or the out-of-order queue is in play: a guest in
		 * loss recovery needs every ACK at once. */
		if ((size_t)w < total || conn->ooo)
			conn->flags |= TCP_C_ACK_NOW;
		else if (conn->ack_state == TCP_ACK_NONE)
			conn->ack_state = TCP_ACK_DUE;
		if (conn->ooo && tcp_ooo_advance(c->tcp.ooo, conn,
						 conn->seq_from_guest)) {
			/* A FIN queued out of order is reached. */
			tcp_conn_set(c, fl, 0, TCP_C_GUEST_FIN, TCP_EV_GUEST_FIN);
			conn->seq_fin_from_guest = conn->seq_from_guest;
		}
		if ((size_t)w < total || !conn->ooo)
			break;
	}
}

/* tcp_data_ooo() - a segment beyond a hole (seq after seq_from_guest, no
 * in-order bytes pending): keep a copy in the out-of-order queue, and one
 * duplicate ACK per segment at once, with SACK blocks where the guest
 * agreed, so the guest's fast retransmit resends just the hole. Returns
 * the reason when the payload was dropped, DROP_NONE otherwise. */
static enum drop_reason tcp_data_ooo(struct ctx *c, struct flow *fl,
				     const struct pkt *p, seq_t seq)
{
	struct tcp_conn *conn = conn_of(fl);
	size_t len = p->payload_len;
	enum drop_reason r = DROP_NONE;

	if (seq_gt(seq_add(seq, (uint32_t)len), conn->wnd_edge))
		r = DROP_TCP_SEQ;	/* beyond our window: keep none */
	else if (len)
		r = tcp_ooo_insert(c->tcp.ooo, conn, conn->seq_from_guest, seq,
				   p->payload, len, p->tcp.flags & TCP_F_FIN);
	tcp_send_flags(c, fl, TCP_F_ACK);
	return r;
}

/* tcp_data_input() - the guest's payload and FIN: in-order bytes are
 * queued for the end-of-batch write; old bytes (retransmissions, window
 * probes, keepalives) get an ACK at the end of the batch; bytes beyond a
 * hole go to tcp_data_ooo(). Returns the reason when the segment's
 * payload was dropped, DROP_NONE otherwise. */
static enum drop_reason tcp_data_input(struct ctx *c, struct flow *fl,
				       const struct pkt *p)
{
	struct tcp_conn *conn = conn_of(fl);
	const struct tcp_view *t = &p->tcp;
	seq_t seq = seq_make(t->seq);
	seq_t next = seq_add(conn->seq_from_guest, conn->pend_bytes);
	size_t len = p->payload_len;
	int32_t off;

	if (conn->flags & TCP_C_GUEST_FIN) {
		if (len || (t->flags & TCP_F_FIN))
			conn->flags |= TCP_C_ACK_NOW;
		return DROP_NONE;
	}
	/* A hole seems to come before this segment (a pure ACK carries
	 * nothing to keep). In-order bytes of this batch go out first: the
	 * duplicate ACK must cover them, or the guest takes them for lost
	 * (its SACK scoreboard sees blocks beyond an ACK that lags). The
	 * write takes the queued run they connect to along, which can end
	 * just where this segment starts (the guest's retransmission of the
	 * last hole, behind the one of the hole before it): then it is in
	 * order after all, and is no more "beyond a hole" than it is old. */
	if (seq_lt(next, seq) && (len || (t->flags & TCP_F_FIN)) &&
	    conn->pend_bytes) {
		tcp_flush_pending(c, fl);
		if (conn->flags & TCP_C_GUEST_FIN) {	/* queued FIN reached */
			conn->flags |= TCP_C_ACK_NOW;
			return DROP_NONE;
		}
		next = conn->seq_from_guest;
	}
	off = seq_diff(next, seq);
	if (off < 0)
		return len || (t->flags & TCP_F_FIN) ? tcp_data_ooo(c, fl, p, seq)
						      : DROP_NONE;
	if ((len && (size_t)off >= len) || (!len && off > 0)) {
		conn->flags |= TCP_C_ACK_NOW;
		return DROP_NONE;
	}
	if (len > (size_t)off && c->tcp.pend_n < TCP_PEND_MAX) {
		struct tcp_pend *pe = &c->tcp.pend[c->tcp.pend_n];

		pe->data = p->payload + off;
		pe->len = (uint32_t)(len - (size_t)off);
		pe->next = TCP_PEND_NONE;
		if (conn->pend_tail != TCP_PEND_NONE)
			c->tcp.pend[conn->pend_tail].next = c->tcp.pend_n;
		else
			conn->pend_head = c->tcp.pend_n;
		conn->pend_tail = c->tcp.pend_n++;
		conn->pend_bytes += pe->len;
		next = seq_add(next, pe->len);
	}
	if ((t->flags & TCP_F_FIN) &&
	    seq_eq(seq_add(seq, (uint32_t)len), next)) {
		tcp_conn_set(c, fl, 0, TCP_C_GUEST_FIN | TCP_C_ACK_NOW,
			     TCP_EV_GUEST_FIN);
		conn->seq_fin_from_guest = next;
	}
	return DROP_NONE;
}

/* tcp_handshake_input() - a segment while the handshake is incomplete.
 * Returns true when processing goes on into the data phase. */
static bool tcp_handshake_input(struct ctx *c, struct flow *fl,
				const struct pkt *p, enum drop_reason *r)
{
	struct tcp_conn *conn = conn_of(fl);
	const struct tcp_view *t = &p->tcp;

	*r = DROP_NONE;
	if (conn->state == TCP_CS_SYN_TO_GUEST)		/* tcp_fwd.c */
		return tcp_fwd_synack(c, fl, p, r);
	if (conn->state == TCP_CS_CONNECTING)
		return false;		/* SYN retransmission: still waiting */
	if (conn->state != TCP_CS_SYNACK_SENT) {
		*r = DROP_TCP_STATE;
		return false;
	}
	if ((t->flags & (TCP_F_SYN | TCP_F_ACK)) == TCP_F_SYN) {
		tcp_send_flags(c, fl, TCP_F_SYN | TCP_F_ACK);
		return false;
	}
	if (!(t->flags & TCP_F_ACK) ||
	    !seq_eq(seq_make(t->ack), conn->seq_to_guest)) {
		*r = DROP_TCP_SEQ;
		return false;
	}
	tcp_established(c, fl);
	return true;
}

/* tcp_rst_input() - the guest's RST (RFC 9293 3.10.7.4 second step, RFC
 * 5961 section 3): it resets the connection only at RCV.NXT exactly
 * (tcp_rcv_nxt()); elsewhere in the window it draws a challenge ACK
 * (tcp_chack(): a guest that really reset answers it with an RST at
 * our ACK), outside it it is dropped. Before the guest's ACK of our
 * SYN-ACK the window is not open: RCV.NXT only. Toward a forwarded
 * connection's SYN (SYN-SENT, RFC 9293 3.10.7.3) only an RST whose ACK
 * acknowledges the SYN counts. Returns the drop reason. */
static enum drop_reason tcp_rst_input(struct ctx *c, struct flow *fl,
				      const struct pkt *p)
{
	struct tcp_conn *conn = conn_of(fl);
	const struct tcp_view *t = &p->tcp;
	seq_t seq = seq_make(t->seq), nxt = tcp_rcv_nxt(conn);

	if (conn->state == TCP_CS_SYN_TO_GUEST) {
		if (!(t->flags & TCP_F_ACK) ||
		    !seq_eq(seq_make(t->ack), conn->seq_to_guest))
			return DROP_TCP_SEQ;
	} else if (!seq_eq(seq, nxt)) {
		if (conn->state != TCP_CS_ESTABLISHED || seq_lt(seq, nxt) ||
		    !seq_lt(seq, conn->wnd_edge))
			return DROP_TCP_SEQ;
		tcp_chack(c, fl);
		return DROP_TCP_CHALLENGE;
	}
	c->tcp.st.rst_from_guest++;
	tcp_keepalive_heard(c, conn, true);
	tcp_conn_close(c, fl, TCP_END_GUEST_RST);
	return DROP_NONE;
}

/* tcp_conn_input() - a segment for an existing connection, in the order
 * of RFC 9293 3.10.7.4 (doc/tcp.md, "Segment arrival"): RST, the
 * handshake, a SYN, the ACK bit, the sequence number (a segment that
 * starts beyond the right edge we advertised is answered and dropped,
 * its ACK not taken: a SEG.SEQ from beyond would hold SND.WL1 there and
 * freeze the window), the ACK, the payload and FIN. Old segments (a
 * retransmission, a window probe) keep their ACK: it can only be the
 * guest's newest or older, and older ACKs and windows are not taken. */
enum drop_reason tcp_conn_input(struct ctx *c, struct flow *fl,
				const struct pkt *p)
{
	struct tcp_conn *conn = conn_of(fl);
	const struct tcp_view *t = &p->tcp;
	bool synced = conn->state == TCP_CS_ESTABLISHED;
	enum drop_reason r = DROP_NONE;

	if (t->flags & TCP_F_RST)
		return tcp_rst_input(c, fl, p);
	conn->last_ms = tcp_now_ms(c);
	tcp_keepalive_heard(c, conn, false);
	if (!synced && !tcp_handshake_input(c, fl, p, &r))
		return r;
	if (t->flags & TCP_F_SYN) {
		if (!synced) {	/* a forwarded one's SYN-ACK */
			conn->flags |= TCP_C_ACK_NOW;
			tcp_dirty(c, fl);
			return DROP_NONE;
		}
		/* A SYN-ACK again (our ACK lost), or a new SYN on the
		 * tuple: challenge ACK (RFC 5961 section 4). */
		return tcp_chack(c, fl) ? DROP_NONE : DROP_TCP_CHALLENGE;
	}
	if (!(t->flags & TCP_F_ACK))
		return DROP_TCP_STATE;
	if (seq_gt(seq_make(t->seq), conn->wnd_edge)) {
		tcp_chack(c, fl);
		return DROP_TCP_SEQ;
	}
	if ((r = tcp_ack_input(c, fl, p)))
		return r;
	r = tcp_data_input(c, fl, p);
	tcp_dirty(c, fl);
	return r;
}

/* tcp_fin_to_host() - pass the guest's FIN on once every byte before it
 * is written. */
void tcp_fin_to_host(const struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	(void)c;
	if (tcp_guest_fin_at(conn, conn->seq_from_guest)) {
		/* With our FIN acknowledged, both directions are through:
		 * the caller's tcp_conn_finished() closes the socket, and
		 * close() sends the FIN (the host closed first, e.g. HTTP
		 * Connection: close: one system call less). */
		if (!(conn->flags & TCP_C_FIN_ACKED) &&
		    shutdown(conn->sock, SHUT_WR))
			tcp_sock_failed(conn, errno);
		tcp_conn_set(c, fl, 0, TCP_C_SHUT_WR | TCP_C_ACK_NOW,
			     TCP_EV_SHUT_WR);
		conn->seq_from_guest = seq_add(conn->seq_from_guest, 1);
	}
}

/* tcp_conn_finished() - close when both directions are through: our
 * shutdown(SHUT_WR) done and our FIN acknowledged. Returns true if the
 * flow is gone. */
bool tcp_conn_finished(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if (!(conn->flags & TCP_C_SHUT_WR) || !(conn->flags & TCP_C_FIN_ACKED))
		return false;
	/* Unread data would make close() reset: drop what the guest
	 * acknowledged (all there is), without tcp_consume()'s clamp. */
	if (conn->consume)
		recv(conn->sock, NULL, conn->consume, MSG_TRUNC | MSG_DONTWAIT);
	tcp_tw_add(c, fl);	/* the guest's late segments: tcp_tw.c */
	tcp_conn_close(c, fl, TCP_END_CLOSE);
	return true;
}

/* tcp_ack_carry() - whether the ACK of guest data just written may wait
 * for the end of the next read round of the same wake-up (a round is
 * at most 1 MiB of frames, tap_dev.c), which acknowledges the data of
 * both: a guest sending on several connections at once gets one ACK per
 * connection every few rounds instead of one per connection per round
 * (tap writes, and the guest's ACK processing inside them). Only while
 * what is unacknowledged stays under half the window we last offered,
 * so the guest never waits for it (a quarter gave 1.3-1.5x the ACK
 * frames per GiB with 4 streams, and more CPU: doc/bench.md); never for
 * ACKs that must go now (TCP_C_ACK_NOW: window updates, FIN, short
 * writes, loss recovery) and never past the wake-up (tap_handler() ends
 * with a batch that carries nothing). */
static bool tcp_ack_carry(const struct ctx *c, const struct tcp_conn *conn,
			  unsigned int carried)
{
	uint32_t unacked = (uint32_t)seq_diff(conn->seq_from_guest,
					      conn->ack_sent);

	return c->link.rx.next_round && !conn->ooo &&
	       conn->ack_state == TCP_ACK_DUE &&
	       !(conn->flags & (TCP_C_ACK_NOW | TCP_C_GUEST_FIN)) &&
	       unacked < conn->wnd_sent / 2 &&
	       carried < TCP_DIRTY_MAX - RX_FRAMES_MAX;
}

/* tcp_batch_end() - per-connection work at the end of an input batch.
 * Returns true when the connection's ACK was carried to the next batch
 * (tcp_ack_carry()): the caller keeps it in the work list. */
static bool tcp_batch_end(struct ctx *c, struct flow *fl, unsigned int carried)
{
	struct tcp_conn *conn = conn_of(fl);
	bool announce, read_now;

	tcp_flush_pending(c, fl);
	tcp_fin_to_host(c, fl);
	if (tcp_sock_dead(c, fl))
		return false;
	/* No SIOCINQ when the last read sent all the socket had (and no FIN
	 * is owed): the guest's ACK or window cannot make more to send. */
	read_now = (conn->flags & TCP_C_TX_NOW) &&
		   (!conn->sock_sent || ((conn->flags & TCP_C_SOCK_EOF) &&
					 !(conn->flags & TCP_C_FIN_SENT)));
	if (conn->consume)
		tcp_consume_lazy(c, fl);	/* deferred: the clamp too */
	else if (!read_now)	/* a read sets the clamp (tcp_out.c) */
		tcp_clamp_refresh(c, fl);
	announce = tcp_wnd_update(c, fl);
	if (conn->ooo && tcp_ooo_continues(c->tcp.ooo, conn,
					   conn->seq_from_guest))
		conn->flags |= TCP_C_WANT_OUT;	/* in order, not yet written */
	if (announce)
		conn->flags |= TCP_C_ACK_NOW;
	/* Data first: its segments carry the ACK (tcp_ack_sent() clears
	 * ACK_NOW and the due state), a pure ACK only when none went. */
	if (read_now)
		tcp_data_to_guest(c, fl);
	if (tcp_sock_dead(c, fl))
		return false;
	if (tcp_ack_carry(c, conn, carried)) {
		c->tcp.st.acks_carried++;
		conn->flags &= (uint16_t)~TCP_C_TX_NOW;
		conn->flags |= TCP_C_DIRTY;
		tcp_events_update(c, fl);
		return true;
	}
	if (conn->flags & TCP_C_ACK_NOW)
		tcp_send_flags(c, fl, TCP_F_ACK);
	else if (conn->ack_state != TCP_ACK_NONE)
		tcp_delack(c, fl);
	conn->flags &= (uint16_t)~(TCP_C_ACK_NOW | TCP_C_TX_NOW);
	if (tcp_conn_finished(c, fl))
		return false;
	tcp_events_update(c, fl);
	return false;
}

void tcp_input_done(struct ctx *c)
{
	uint16_t i, n = c->tcp.dirty_n, keep = 0;

	for (i = 0; i < n; i++) {
		uint32_t idx = c->tcp.dirty[i];
		struct flow *fl = flow_at(&c->flows, idx);
		struct tcp_conn *conn;

		if (!fl || fl->f.type != FLOW_TCP)
			continue;
		conn = conn_of(fl);
		if (!(conn->flags & TCP_C_DIRTY))
			continue;
		conn->flags &= (uint16_t)~TCP_C_DIRTY;
		if (tcp_batch_end(c, fl, keep))
			c->tcp.dirty[keep++] = idx;	/* keep <= i */
	}
	c->tcp.dirty_n = keep;
	c->tcp.pend_n = 0;
}

bool tcp_input_pending(const struct ctx *c)
{
	return c->tcp.dirty_n;
}
