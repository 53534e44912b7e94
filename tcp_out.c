/* tcp_out.c - TCP output: segments to the guest, host data, the rewind
 * (retransmission), the window clamp, the window offered to the guest.
 *
 * Theory of operation
 *
 * Output sits above the connection record's helpers (tcp_conn.c) and
 * below segment arrival, the timers (tcp_timer.c) and the dispatch: it
 * calls nothing above it. A socket error met inside a send is only
 * noted (tcp_sock_failed()); the caller frees the flow after the send
 * (tcp_sock_dead()), never from inside it.
 *
 * The window offered to the guest (tcp_wnd_set() and its callers) is
 * chosen here, as Linux chooses it in tcp_output.c: from the host
 * socket's free send buffer (the design is in tcp.c's theory block, the
 * measurements in doc/tcp.md).
 *
 * Data from the host peer stays in the host socket's receive queue until
 * the guest acknowledges it: there is no retransmission buffer in ferry.
 * tcp_data_to_guest() reserves frames in the guest link's transmit batch
 * (tap_tx_reserve_many()), points one iovec at the payload area of each,
 * and reads with a single recvmsg(MSG_PEEK): the bytes are copied once,
 * from the socket straight into the frames. Headers and checksums are
 * written afterwards, when the read length is known, and only the frames
 * the read filled are committed (tap_tx_commit_many()).
 *
 * Where the next unsent byte sits in the queue: with SO_PEEK_OFF (TCP
 * supports it on recent kernels, probed at start-up) the kernel keeps a
 * peek offset that advances with every peek and moves back when acked
 * bytes are dropped. Without it, the first iovecs of every read point at
 * a write-only scratch buffer covering the bytes already in flight. A
 * connection turns SO_PEEK_OFF on only when a read would skip more than
 * TCP_PEEK_COPY_MAX bytes (tcp_peek_skip()): until then the scratch
 * buffer does it, so a short exchange (an HTTP reply, then the peek that
 * finds the peer's EOF behind it) pays no setsockopt.
 *
 * Offloads (a tap with virtio-net headers, tap_dev.c): when the link has
 * TSO, each frame carries up to 64 KiB of payload whatever the guest's
 * MTU, sent as a GSO frame with gso_size = the guest's MSS; the guest's
 * kernel takes it as one segment (it only cuts it if it forwards it).
 * With checksum offload the TCP checksum is left partial (only the
 * pseudo-header sum, NEEDS_CSUM): the local kernel does not verify it,
 * so the payload is never summed (measured cheaper than a full checksum,
 * doc/bench.md "Offloads"). While --pcap captures, full checksums are
 * written so the capture stays valid. Links without offloads (qemu
 * stream, --no-offload) get MSS-sized frames with full checksums.
 *
 * Acknowledged bytes are dropped with recv(MSG_TRUNC) at the end of an
 * input batch (tcp_consume()), lazily: while fewer than
 * TCP_CONSUME_LAZY bytes are acknowledged they stay in the socket (with
 * SO_PEEK_OFF the peek offset stays behind them, without it the skip
 * covers them), so request/response traffic does not pay a recv, a
 * SIOCINQ and a TCP_WINDOW_CLAMP per exchange (doc/bench.md). Rewinds,
 * closes, a guest window that closed and an ACK that moved seq_to_guest
 * past the kernel's peek offset consume at once. Retransmission is a
 * rewind: seq_to_guest goes back to the guest's ACK (or a later hole),
 * the peek offset with it, and the next reads send the same bytes again
 * (three duplicate ACKs, a hole found lost, early retransmit of a small
 * flight, a tail loss probe, or a timeout; below). Before each
 * read of a resend, tcp_resend_skip() steps seq_to_guest over what the
 * guest SACKed (tcp_sack.c) and the read stops at the next SACKed range:
 * only the holes go out again (one SO_PEEK_OFF setsockopt per range
 * stepped over when the kernel's offset is on; else the scratch-buffer
 * skip covers them at no extra call).
 *
 * Reads after one that drained the socket skip the SIOCINQ: they ask
 * for up to TCP_READ_GUESS bytes, and a short read says the socket is
 * empty again (the clamp is then applied for the queue that read saw).
 * When the peer's EOF is reached (EPOLLRDHUP: every byte is queued) and
 * the guest's window has room for it, our FIN rides on the last data
 * frame instead of a frame of its own.
 *
 * Window clamp (doc/tcp.md "Window clamp", doc/window-clamp.md): the
 * guest's flow control is mirrored onto the host socket with
 * TCP_WINDOW_CLAMP, so the remote sender's right edge lands a slack
 * beyond the guest's right edge instead of MiBs of kernel buffer later:
 *
 *   clamp = max(guest window + slack - bytes past the guest's ack, slack)
 *   slack = max(4 * MSS of the host path, 64 KiB, the peer's segment)
 *
 * The kernel counts its window from the last byte received and never
 * takes back a right edge it advertised, so the clamp is re-computed on
 * every read, right after every consumption (receive-buffer autotuning
 * rewrites window_clamp inside that recv()), and while the guest's
 * window is full on every arrival (EPOLLIN stays registered,
 * edge-triggered). A smaller clamp also cuts the socket's rcv_ssthresh,
 * which a larger one does not restore (the window then regrows only
 * from arriving segments), so the clamp never goes below the slack: full
 * segments of the host path stay in flight (a clamp below the peer's
 * segment degenerates into persist-timer crawling, and after one the
 * window regrows by two of the probes' size per probe: seconds). This
 * does not bound what queues up while the guest is paused: every ACK the
 * kernel sends moves the peer's edge by the clamp, at line rate
 * (doc/window-clamp.md "The clamp as a bound"). The clamp is never zero,
 * so it cannot lock a window at zero; should a zero window stick anyway
 * (tcp_stuck_check()), clamping is switched off for good and the socket
 * re-opened with a large clamp.
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "checksum.h"
#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "util.h"
#include "wire.h"

/* seccomp(all): getsockopt recvfrom recvmsg setsockopt
 *   (data from host sockets) */
/* seccomp(all): ioctl(1=SIOCINQ)
 *   (bytes waiting in a host socket) */

#define TCP_SEG_BATCH	128		/* segments per socket read */
#define DISCARD_SIZE	(1u << 16)
#define DISCARD_IOV	512		/* fallback: up to 32 MiB in flight */
#define CLAMP_FLOOR_MIN	(64u << 10)
#define TCP_READ_GUESS	(64u << 10)	/* first read after a drained one */
#define TCP_PEEK_COPY_MAX	2048	/* bytes a peek skips by copying them
					 * before SO_PEEK_OFF is worth it */
/* Write-only sink for the peek fallback: the kernel copies bytes already
 * in flight here; nothing ever reads it, so sharing it is harmless. */
static uint8_t discard_sink[DISCARD_SIZE];

/* conn_of() - the connection record in a FLOW_TCP flow's private area. */
static struct tcp_conn *conn_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct tcp_conn);
}

/* flow_v4() - the connection is IPv4 (by its guest-side address). */
static bool flow_v4(const struct flow *fl)
{
	return inany_is4(&fl->f.key[FLOW_SIDE_GUEST].a);
}

/* tcp_hdr_len() - Ethernet + IP + TCP header bytes of a data segment. */
static size_t tcp_hdr_len(const struct flow *fl)
{
	return ETH_HLEN_ + (flow_v4(fl) ? IP4_HLEN : IP6_HLEN) + TCP_HLEN;
}

/* l3_build() - Ethernet and IP headers at f for l4len transport bytes,
 * from the remote (as the guest sees it) to the guest. Returns the TCP
 * header position. */
static uint8_t *l3_build(const struct ctx *c, const struct flow *fl, uint8_t *f,
			 size_t l4len)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	uint8_t *l3;

	if (flow_v4(fl)) {
		l3 = tap_eth_to_guest(c, f, ETH_P_IP_);
		return ip4_build(l3, k->b.v4m.a4, k->a.v4m.a4, IPPROTO_TCP,
				 l4len, 0);
	}
	l3 = tap_eth_to_guest(c, f, ETH_P_IPV6_);
	return ip6_build(l3, &k->b.a6, &k->a.a6, IPPROTO_TCP, l4len, 64);
}

/* tcp_hdr_fill() - the TCP header at t: ports, seq, our ACK (when the ACK
 * flag is set), flags, data offset and our current window. */
static void tcp_hdr_fill(const struct flow *fl, struct tcp_conn *conn,
			 uint8_t *t, seq_t seq, uint8_t flags, size_t optlen)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	uint32_t w = conn->wnd_to_guest;

	if (!(flags & TCP_F_SYN))
		w >>= conn->ws_to_guest;
	tcp_hdr_put(t, k->pb, k->pa, seq.v,
		    (flags & TCP_F_ACK) ? conn->seq_from_guest.v : 0,
		    TCP_HLEN + optlen, flags, (uint16_t)MIN(w, 65535u));
	if (flags & TCP_F_ACK)
		tcp_ack_sent(conn, (flags & TCP_F_SYN) ? MIN(w, 65535u) :
				   MIN(w, 65535u) << conn->ws_to_guest);
}

/* tcp_csum_fill() - TCP checksum over pseudo-header, header and payload
 * (l4len bytes at t). */
static void tcp_csum_fill(const struct flow *fl, uint8_t *t, size_t l4len)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	uint16_t sum;

	if (flow_v4(fl))
		sum = csum_l4_4(k->b.v4m.a4, k->a.v4m.a4, IPPROTO_TCP, t,
				l4len);
	else
		sum = csum_l4_6(&k->b.a6, &k->a.a6, IPPROTO_TCP, t, l4len);
	wr16(t + TCP_OFF_CSUM, sum);
}

/* tcp_syn_opts() - options of our SYN / SYN-ACK: MSS (what the guest may
 * send us: its MTU, and the host path's MSS once known), window scale
 * when the guest offered one, SACK-permitted in our SYN and, when the
 * guest's SYN had it, in the SYN-ACK. Returns the option length (<= 12). */
static size_t tcp_syn_opts(const struct ctx *c, const struct flow *fl,
			   const struct tcp_conn *conn, uint8_t *o)
{
	uint32_t mss = tcp_mss_from_guest(c, fl);
	size_t n;

	o[TCPOPT_OFF_KIND] = TCPOPT_MAXSEG;
	o[TCPOPT_OFF_LEN] = TCPOLEN_MAXSEG;
	wr16(o + TCPOPT_OFF_VAL, (uint16_t)mss);
	n = TCPOLEN_MAXSEG;
	if (conn->ws_to_guest || (conn->flags & TCP_C_FWD)) {
		o[n++] = TCPOPT_NOP;
		o[n++] = TCPOPT_WINDOW;
		o[n++] = TCPOLEN_WINDOW;
		o[n++] = conn->ws_to_guest;
	}
	if (conn->state == TCP_CS_SYN_TO_GUEST || (conn->flags & TCP_C_SACK)) {
		o[n++] = TCPOPT_NOP;
		o[n++] = TCPOPT_NOP;
		o[n++] = TCPOPT_SACK_PERMITTED;
		o[n++] = TCPOLEN_SACK_PERMITTED;
	}
	return n;
}

/* tcp_send_flags() - queue a segment without payload to the guest with
 * flags (SYN: our ISN and options; a bare ACK: SACK blocks when the
 * out-of-order queue holds data). Returns false if the batch was full. */
bool tcp_send_flags(struct ctx *c, struct flow *fl, uint8_t flags)
{
	struct tcp_conn *conn = conn_of(fl);
	seq_t seq = (flags & TCP_F_SYN) ? conn->isn_to_guest
					: conn->seq_to_guest;
	uint8_t opts[40];
	size_t optlen = 0, len;
	uint8_t *f, *t;

	if (flags & TCP_F_SYN) {
		seq_t syn_end = seq_add(conn->isn_to_guest, 1);

		optlen = tcp_syn_opts(c, fl, conn, opts);
		/* The handshake's RTT sample: the first SYN (or SYN-ACK)
		 * only (Karn), rtt_seq marks it sent. */
		conn->rtt_start_us = conn->retries ||
				     seq_eq(conn->rtt_seq, syn_end) ?
				     0 : tcp_now_us(c);
		conn->rtt_seq = syn_end;
	}
	else if (flags == TCP_F_ACK && conn->ooo && (conn->flags & TCP_C_SACK))
		optlen = tcp_ooo_sack(c->tcp.ooo, conn, conn->seq_from_guest,
				      opts);
	if (optlen && !(flags & TCP_F_SYN))
		c->tcp.ooo->st.sack_sent++;
	len = tcp_hdr_len(fl) + optlen;
	if (!(f = tap_tx_reserve(c, len)))
		return false;
	t = l3_build(c, fl, f, TCP_HLEN + optlen);
	tcp_hdr_fill(fl, conn, t, seq, flags, optlen);
	memcpy(t + TCP_HLEN, opts, optlen);
	tcp_csum_fill(fl, t, TCP_HLEN + optlen);
	tap_tx_commit(c, len);
	if (flags & TCP_F_FIN) {
		conn->seq_to_guest = seq_add(seq, 1);
		tcp_conn_set(c, fl, 0, TCP_C_FIN_SENT, TCP_EV_FIN_SENT);
		conn->fin_rewound = false;
	}
	return true;
}

/* tcp_send_probe() - a zero-window probe / keepalive to the guest: an
 * ACK one byte below the next sequence number, which the guest answers
 * with its current ACK and window (RFC 9293 3.8.6.1). */
void tcp_send_probe(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	seq_t saved = conn->seq_to_guest;

	conn->seq_to_guest = seq_add(saved, (uint32_t)-1);
	tcp_send_flags(c, fl, TCP_F_ACK);
	conn->seq_to_guest = saved;
}

/* tcp_reply() - a segment without payload answering guest segment p
 * with no connection behind it: its ports swapped, seq, ack, flags and
 * window field as given (TCP_HLEN bytes, no options). */
void tcp_reply(struct ctx *c, const struct pkt *p, uint32_t seq, uint32_t ack,
	       uint8_t flags, uint16_t wnd)
{
	uint8_t h[TCP_HLEN];

	tcp_hdr_put(h, p->tcp.dport, p->tcp.sport, seq, ack, TCP_HLEN, flags,
		    wnd);
	if (p->is_v6)
		tap_send_ip6(c, &p->dst6, &p->src6, IPPROTO_TCP, h, TCP_HLEN);
	else
		tap_send_ip4(c, p->dst4, p->src4, IPPROTO_TCP, h, TCP_HLEN);
}

/* tcp_rst_reply() - answer guest segment p, which has no connection, with
 * a RST built from its own fields (RFC 9293 3.10.7.1). */
void tcp_rst_reply(struct ctx *c, const struct pkt *p)
{
	const struct tcp_view *t = &p->tcp;
	uint32_t seglen = (uint32_t)p->payload_len;

	c->tcp.st.rst_to_guest++;
	if (t->flags & TCP_F_ACK) {
		tcp_reply(c, p, t->ack, 0, TCP_F_RST, 0);
		return;
	}
	seglen += !!(t->flags & TCP_F_SYN) + !!(t->flags & TCP_F_FIN);
	tcp_reply(c, p, 0, t->seq + seglen, TCP_F_RST | TCP_F_ACK, 0);
}

/* tcp_clamp_slack() - how far beyond the guest's right edge the host peer
 * may send: full segments of the host path in flight, never
 * silly-window sized. */
static uint32_t tcp_clamp_slack(const struct tcp_conn *conn)
{
	uint32_t mss = conn->mss_host ? conn->mss_host : 1460;

	return MAX(4 * mss, CLAMP_FLOOR_MIN);
}

/* tcp_clamp_seg() - the largest segment the peer may send us (our
 * advertised MSS, tcpi_advmss), looked up once. */
static uint32_t tcp_clamp_seg(struct tcp_conn *conn)
{
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);

	if (conn->mss_peer)
		return conn->mss_peer;
	conn->mss_peer = conn->mss_host ? conn->mss_host : 1460;
	if (!getsockopt(conn->sock, IPPROTO_TCP, TCP_INFO, &ti, &sl))
		conn->mss_peer = ti.tcpi_advmss;
	return conn->mss_peer;
}

/* tcp_clamp_apply() - set the clamp for inq bytes queued in the socket:
 * the peer's right edge lands a slack beyond the guest's right edge (the
 * kernel counts its window from the last byte received, so the clamp is
 * that edge minus what the socket already holds past the guest's
 * acknowledgement), never below the slack. One setsockopt when the
 * value changes (or when stale is set: the kernel may have rewritten
 * it), none otherwise; a shrink by less than a quarter of the slack
 * waits for the next change. */
static void tcp_clamp_apply(struct ctx *c, struct flow *fl, uint32_t inq,
			    bool stale)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t beyond = inq > conn->consume ? inq - conn->consume : 0;
	uint32_t slack = tcp_clamp_slack(conn);
	uint32_t allow = conn->wnd_from_guest + slack, clamp, low;

	/* After the peer's FIN nothing more can arrive: no clamp (a
	 * Connection: close reply paid one setsockopt for it). */
	if (c->tcp.clamp_off || (conn->flags & (TCP_C_CLAMP_OFF |
						TCP_C_SOCK_EOF)) ||
	    conn->state != TCP_CS_ESTABLISHED || conn->sock < 0)
		return;
	conn->clamp_wnd = conn->wnd_from_guest;
	low = MAX(slack, tcp_clamp_seg(conn));
	clamp = allow > beyond ? allow - beyond : 0;
	clamp = MAX(clamp, low);
	if (!stale && (clamp == conn->clamp ||
		       (clamp < conn->clamp && clamp > low &&
			conn->clamp - clamp < slack / 4)))
		return;
	if (setsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp,
		       sizeof(clamp)))
		return;
	conn->clamp = clamp;
	c->tcp.st.clamp_sets++;
}

/* tcp_clamp_update() - re-apply the window clamp for the bytes queued in
 * the socket now (SIOCINQ); stale: set it even if unchanged. */
void tcp_clamp_update(struct ctx *c, struct flow *fl, bool stale)
{
	struct tcp_conn *conn = conn_of(fl);
	int inq = 0;

	if (conn->sock < 0 || ioctl(conn->sock, SIOCINQ, &inq) || inq < 0)
		return;
	tcp_clamp_apply(c, fl, (uint32_t)inq, stale);
}

/* The inputs of the clamp are the guest's window, the bytes queued in the
 * socket and those the guest acknowledged (consume). Arrivals in the
 * socket re-compute it where they are read (tcp_sendable(),
 * tcp_read_end()), consumption right after its recv(): what an input
 * batch can change on its own is the guest's window. A guest->host bulk
 * transfer keeps that constant, so its batches cost no SIOCINQ each. */
void tcp_clamp_refresh(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if (c->tcp.clamp_off ||
	    (conn->flags & (TCP_C_CLAMP_OFF | TCP_C_SOCK_EOF)) ||
	    (conn->clamp && conn->clamp_wnd == conn->wnd_from_guest))
		return;		/* nothing to do, or no clamp after EOF */
	/* A new connection that received nothing yet (its socket counts as
	 * sent, tcp_conn_open()): no clamp, no system call. The kernel's
	 * first window is at most 64 KiB (tcp_select_initial_window() caps
	 * it at U16_MAX, rounded up to the window scale's unit), within any
	 * clamp (the slack is 64 KiB or more), and it grows only from
	 * arriving segments (unit test tcp_conn_no_clamp_before_arrival). Each arrival's
	 * EPOLLIN brings a read, and every read sets the clamp (or the
	 * stalled path does); until then the socket is left as the kernel
	 * made it. A Connection: close exchange whose reply comes with the
	 * peer's EOF (after which no clamp is needed) never sets one. */
	if (conn->sock_sent && !conn->consume &&
	    seq_eq(conn->seq_to_guest, seq_add(conn->isn_to_guest, 1)))
		return;
	tcp_clamp_update(c, fl, false);
}

/* tcp_consume() - drop the bytes the guest acknowledged from the socket
 * (recv(MSG_TRUNC)), then re-set the clamp. */
void tcp_consume(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	ssize_t n;

	if (!conn->consume || conn->sock < 0)
		return;
	n = recv(conn->sock, NULL, conn->consume, MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0)
		tcp_sock_failed(conn, errno);
	if (n <= 0)
		return;
	conn->consume -= (uint32_t)MIN((size_t)n, (size_t)conn->consume);
	if (!conn->consume)
		conn->peek_behind = false;
	/* Receive-buffer autotuning may have rewritten the clamp inside that
	 * recv() (to MiBs): set ours again at once, before the peer's next
	 * segments grow the window to match. */
	tcp_clamp_update(c, fl, true);
}

/* tcp_consume_lazy() - tcp_consume() unless few acknowledged bytes wait;
 * returns true when it deferred (see tcp_conn.h). */
bool tcp_consume_lazy(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	/* A connection whose guest window closed consumes at once (the
	 * stuck-window check reads an empty queue as a sign), and so does
	 * one whose peek offset waits for the consumption. */
	if (conn->consume && conn->consume < TCP_CONSUME_LAZY &&
	    !(conn->flags & TCP_C_WAS_ZERO) && !conn->peek_behind)
		return true;
	tcp_consume(c, fl);
	return false;
}

/* tcp_peek_off_to_next() - with the kernel's peek offset on
 * (TCP_C_PEEK_OFF), move it to seq_to_guest: past the bytes acknowledged
 * but not yet consumed and those up to it. True when it was set. */
static bool tcp_peek_off_to_next(struct tcp_conn *conn)
{
	int off = (int)(conn->consume + (uint32_t)seq_diff(
			conn->seq_to_guest, conn->seq_acked_by_guest));

	return (conn->flags & TCP_C_PEEK_OFF) &&
	       !setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &off,
			   sizeof(off));
}

/* tcp_rewind_seq() - move seq_to_guest back to to (acked ..
 * seq_to_guest): consume what the guest acknowledged, the peek offset
 * follows; remembers how much was sent before (late ACKs), our FIN too.
 * No RTT sample spans a resend (Karn). */
void tcp_rewind_seq(struct ctx *c, struct flow *fl, seq_t to)
{
	struct tcp_conn *conn = conn_of(fl);

	tcp_consume(c, fl);
	conn->rtt_start_us = 0;
	/* The guest may still acknowledge what was sent before (its ACKs
	 * were lost or late): remember how far that went, data only. */
	conn->rewound += (uint32_t)seq_diff(conn->seq_to_guest, to);
	if ((conn->flags & TCP_C_FIN_SENT) && conn->rewound &&
	    !(conn->flags & TCP_C_FIN_ACKED)) {
		conn->rewound--;		/* the FIN is not data */
		conn->fin_rewound = true;
	}
	conn->seq_to_guest = to;
	conn->sock_sent = false;
	if (!(conn->flags & TCP_C_FIN_ACKED))
		conn->flags &= (uint16_t)~TCP_C_FIN_SENT;
	tcp_peek_off_to_next(conn);
	conn->peek_behind = false;
}

/* tcp_rewind_to() - retransmit from seq to, the last byte the guest
 * acknowledged or a later hole (tcp_rewind_seq()). fast: duplicate ACKs
 * or a hole the guest's SACK blocks show lost, else a timeout
 * (tcp_sack.c). */
void tcp_rewind_to(struct ctx *c, struct flow *fl, seq_t to, bool fast)
{
	struct tcp_conn *conn = conn_of(fl);

	tcp_rewind_seq(c, fl, to);
	/* Resending from the ACK: further duplicates of it are ignored
	 * until progress. A later hole (tcp_sack_lost()) leaves the count
	 * alone: the segment at the ACK, resent once already in this
	 * recovery and lost again, is still resent on its third duplicate
	 * (it is below HighRxt: nothing else resends it but the timer). */
	if (seq_eq(to, conn->seq_acked_by_guest))
		conn->dup_acks = 3;
	tcp_sack_rewound(conn, fast);
}

/* tcp_rewind() - tcp_rewind_to() the guest's cumulative ACK. */
void tcp_rewind(struct ctx *c, struct flow *fl, bool fast)
{
	struct tcp_conn *conn = conn_of(fl);

	tcp_rewind_to(c, fl, conn->seq_acked_by_guest, fast);
}

/* tcp_resend_skip() - before a read while resending: step seq_to_guest
 * over what the guest SACKed (tcp_sack_skip_len()), moving the kernel's
 * peek offset along when the connection uses it (one setsockopt per
 * range stepped over; without it the next read's skip covers them).
 * Returns the most the read may send: up to the next SACKed range. */
static size_t tcp_resend_skip(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t skip = tcp_sack_skip_len(conn);

	if (skip) {
		conn->seq_to_guest = seq_add(conn->seq_to_guest, skip);
		conn->rewound -= skip;
		c->tcp.st.sack_skips++;
		c->tcp.st.sack_skipped += skip;
		if (tcp_peek_off_to_next(conn))
			conn->peek_behind = false;
	}
	return (size_t)tcp_sack_hole_len(conn);
}

/* tcp_csum_partial_fill() - a partial checksum (offloaded): only the
 * pseudo-header sum, not complemented, as the receiving kernel expects
 * with NEEDS_CSUM. */
static void tcp_csum_partial_fill(const struct flow *fl, uint8_t *t,
				  size_t l4len)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	uint32_t sum;

	if (flow_v4(fl))
		sum = csum_pseudo4(k->b.v4m.a4, k->a.v4m.a4, IPPROTO_TCP,
				   (uint32_t)l4len);
	else
		sum = csum_pseudo6(&k->b.a6, &k->a.a6, IPPROTO_TCP,
				   (uint32_t)l4len);
	wr16(t + TCP_OFF_CSUM, (uint16_t)~csum_fold(sum));
}

/* tcp_tx_off() - offload state of fl's data frames into *o: GSO with the
 * guest's MSS when the link has TSO, a partial checksum when it has
 * checksum offload and no capture wants full ones. Returns o, or NULL
 * when the link has no offloads. */
static const struct pkt_off *tcp_tx_off(const struct ctx *c,
					const struct flow *fl,
					struct pkt_off *o)
{
	size_t hlen = tcp_hdr_len(fl);

	if (!c->link.ops->vnet_hdr)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->hdr_len = (uint16_t)hlen;
	if (c->link.tx_gso) {
		o->gso = flow_v4(fl) ? PKT_GSO_TCP4 : PKT_GSO_TCP6;
		o->gso_size = conn_of((struct flow *)fl)->mss_to_guest;
	}
	if (c->link.tx_csum_partial && c->pcap_fd < 0) {
		o->csum_partial = true;
		o->csum_start = (uint16_t)(hlen - TCP_HLEN);
		o->csum_off = TCP_OFF_CSUM;
	}
	return o;
}

/* tcp_frames_fill() - after the peek: headers and checksums of the first
 * keep frames (starting at f[]), got payload bytes in all, seg bytes in
 * each but the last, which carries our FIN when fin is set; their
 * lengths go to lens[] for the commit. */
static void tcp_frames_fill(const struct ctx *c, struct flow *fl, uint8_t **f,
			    size_t *lens, unsigned int keep, size_t got,
			    size_t seg, const struct pkt_off *o, bool fin)
{
	struct tcp_conn *conn = conn_of(fl);
	size_t hlen = tcp_hdr_len(fl);
	unsigned int i;

	for (i = 0; i < keep; i++) {
		size_t len = i + 1 < keep ? seg : got - (size_t)i * seg;
		uint8_t flags = TCP_F_ACK, *t;

		if (i + 1 == keep)
			flags |= TCP_F_PSH | (fin ? TCP_F_FIN : 0);
		t = l3_build(c, fl, f[i], TCP_HLEN + len);

		tcp_hdr_fill(fl, conn, t,
			     seq_add(conn->seq_to_guest, (uint32_t)(i * seg)),
			     flags, 0);
		if (o && o->csum_partial)
			tcp_csum_partial_fill(fl, t, TCP_HLEN + len);
		else
			tcp_csum_fill(fl, t, TCP_HLEN + len);
		lens[i] = hlen + len;
	}
}

/* tcp_peek_skip() - how a read skips the skip bytes before the next
 * unsent one (acknowledged but not consumed, and in flight): 0 where the
 * kernel's peek offset does it (TCP_C_PEEK_OFF); else by copying them
 * to the scratch buffer (returns skip) while they are few, or when the
 * kernel has no SO_PEEK_OFF; else SO_PEEK_OFF is turned on here, at the
 * offset of the next unsent byte, and stays on (returns 0). */
static size_t tcp_peek_skip(const struct ctx *c, struct flow *fl, size_t skip)
{
	struct tcp_conn *conn = conn_of(fl);
	int off = (int)skip;

	if (conn->flags & TCP_C_PEEK_OFF)
		return 0;
	if (!c->tcp.peek_off || skip <= TCP_PEEK_COPY_MAX ||
	    skip > INT32_MAX ||
	    setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off)))
		return skip;
	conn->flags |= TCP_C_PEEK_OFF;
	conn->peek_behind = false;	/* the offset is set from seq_to_guest */
	return 0;
}

/* tcp_sendable() - bytes we may send now: unsent bytes in the socket
 * within the guest's window (and the peek fallback's reach). Sets or
 * clears STALLED; sends our FIN once the peer's EOF is reached. *avail
 * gets the unsent bytes in the socket, window or not, or SIZE_MAX when
 * it is not known: after a read that drained the socket, the next one
 * (new data, in request/response traffic a small reply) asks for what
 * the window allows up to TCP_READ_GUESS without a SIOCINQ first, and
 * its length says whether the socket is empty again. */
static size_t tcp_sendable(struct ctx *c, struct flow *fl, size_t *skip,
			   size_t *avail)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t inflight = (uint32_t)seq_diff(conn->seq_to_guest,
					       conn->seq_acked_by_guest);
	uint32_t wnd = conn->wnd_from_guest;
	size_t n, reach = (size_t)DISCARD_IOV * DISCARD_SIZE;
	int inq = 0;

	if (inflight < wnd && conn->read_drained && c->tcp.peek_off) {
		*skip = tcp_peek_skip(c, fl, (size_t)conn->consume + inflight);
		if (*skip <= reach - TCP_READ_GUESS) {
			conn->flags &= (uint16_t)~TCP_C_STALLED;
			*avail = SIZE_MAX;
			return MIN((size_t)(wnd - inflight),
				   (size_t)TCP_READ_GUESS);
		}
	}
	if (ioctl(conn->sock, SIOCINQ, &inq) || inq < 0)
		return 0;
	if (inflight >= wnd) {
		/* Stalled: arrivals still wake us (EPOLLET), only to tighten
		 * the clamp; the guest's ACK brings the next read. */
		if (!(conn->flags & TCP_C_WAS_ZERO))	/* its stuck check */
			tcp_due_in(c, conn, TCP_STUCK_MS);
		conn->flags |= TCP_C_STALLED | TCP_C_WAS_ZERO;
		conn->sock_sent = false;
		tcp_clamp_apply(c, fl, (uint32_t)inq, false);
		return 0;
	}
	conn->flags &= (uint16_t)~TCP_C_STALLED;
	tcp_clamp_apply(c, fl, (uint32_t)inq, false);
	*skip = (size_t)conn->consume + inflight;
	if ((size_t)inq <= *skip) {
		conn->sock_sent = conn->read_drained = true;
		if (conn->flags & TCP_C_SOCK_EOF)
			tcp_send_flags(c, fl, TCP_F_FIN | TCP_F_ACK);
		return 0;
	}
	*avail = (size_t)inq - *skip;
	n = MIN(*avail, (size_t)(wnd - inflight));
	*skip = tcp_peek_skip(c, fl, *skip);
	if (*skip + n > reach)
		n = *skip < reach ? reach - *skip : 0;
	return n;
}

/* tcp_seg_size() - payload bytes per data frame: the guest's MSS, or with
 * TSO as much as one IP packet holds (GSO cuts it into MSS pieces only if
 * the guest forwards it); large sizes are trimmed (by < 64 bytes) so that
 * full frames exactly fill the link batch's 64-byte slot stride and need
 * no compaction. */
static size_t tcp_seg_size(const struct ctx *c, const struct flow *fl)
{
	size_t mss = conn_of((struct flow *)fl)->mss_to_guest;
	size_t pre = c->link.ops->tx_prefix + tcp_hdr_len(fl);

	if (c->link.tx_gso)	/* IP total length / payload length <= 65535 */
		mss = 65535 - TCP_HLEN - (flow_v4(fl) ? IP4_HLEN : 0);
	if (mss < 8192)
		return mss;
	return (pre + mss) / 64 * 64 - pre;
}

/* tcp_read_end() - after a read of got bytes (n asked, avail unsent in
 * the socket or SIZE_MAX when unknown, room left in the guest's window
 * before it): whether the socket is drained now; after a guess that
 * drained it, the clamp for the queue it saw. Returns whether our FIN
 * rides on the last frame: the peer's EOF is reached and it fits. */
static bool tcp_read_end(struct ctx *c, struct flow *fl, size_t got,
			 size_t n, size_t avail, size_t room)
{
	struct tcp_conn *conn = conn_of(fl);
	bool guessed = avail == SIZE_MAX;
	uint32_t inflight = (uint32_t)seq_diff(conn->seq_to_guest,
					       conn->seq_acked_by_guest);

	conn->sock_sent = guessed ? got < n : got >= avail;
	conn->read_drained = conn->sock_sent;
	if (guessed && conn->sock_sent)
		tcp_clamp_apply(c, fl, conn->consume + inflight + (uint32_t)got,
				false);
	return conn->sock_sent && (conn->flags & TCP_C_SOCK_EOF) && got < room;
}

/* tcp_read_batch() - one MSG_PEEK read into freshly reserved frames.
 * Returns payload bytes queued to the guest, 0 when nothing was (empty,
 * window full, no room), -1 on a socket error. *more is set when another
 * read could send more now (bytes left in the socket and in the window,
 * a window just filled, whose STALLED mark the next call sets, or the
 * peer's EOF reached and our FIN not yet sent, which the next call
 * sends). */
static long tcp_read_batch(struct ctx *c, struct flow *fl, bool *more)
{
	struct tcp_conn *conn = conn_of(fl);
	struct iovec iov[DISCARD_IOV + TCP_SEG_BATCH];
	size_t hlen = tcp_hdr_len(fl), mss = tcp_seg_size(c, fl), skip = 0;
	size_t hole = tcp_resend_skip(c, fl), avail = 0, got, left;
	/* It acts (it may send our FIN): called once, here. */
	size_t n = tcp_sendable(c, fl, &skip, &avail);
	bool resend = conn->rewound, fin;
	size_t room = conn->wnd_from_guest - (uint32_t)seq_diff(
			conn->seq_to_guest, conn->seq_acked_by_guest);
	size_t lens[TCP_SEG_BATCH] = { 0 };
	uint8_t *f[TCP_SEG_BATCH];
	const struct pkt_off *o;
	struct pkt_off off;
	unsigned int nseg, i, ni = 0, keep;
	struct msghdr mh = { 0 };
	ssize_t r;

	n = MIN(n, hole);
	if (!n)
		return 0;
	nseg = (unsigned int)MIN((n + mss - 1) / mss, (size_t)TCP_SEG_BATCH);
	nseg = tap_tx_reserve_many(c, hlen + mss, f, nseg);
	if (!nseg)
		return 0;
	n = MIN(n, (size_t)nseg * mss);
	for (left = skip; left; left -= iov[ni++].iov_len) {
		iov[ni].iov_base = discard_sink;
		iov[ni].iov_len = MIN(left, (size_t)DISCARD_SIZE);
	}
	for (i = 0; i < nseg; i++) {
		iov[ni].iov_base = f[i] + hlen;
		iov[ni++].iov_len = MIN(mss, n - (size_t)i * mss);
	}
	mh.msg_iov = iov;
	mh.msg_iovlen = ni;
	r = recvmsg(conn->sock, &mh, MSG_PEEK | MSG_DONTWAIT);
	if (r < 0 && errno != EAGAIN && errno != EINTR) {
		tcp_sock_failed(conn, errno);
		return -1;
	}
	if (r <= (ssize_t)skip) {
		/* a guess found nothing (EAGAIN, or 0 at the EOF) */
		if (avail == SIZE_MAX && tcp_read_end(c, fl, 0, n, avail, room))
			tcp_send_flags(c, fl, TCP_F_FIN | TCP_F_ACK);
		return 0;
	}
	got = (size_t)r - skip;
	fin = tcp_read_end(c, fl, got, n, avail, room);
	keep = (unsigned int)((got + mss - 1) / mss);
	o = tcp_tx_off(c, fl, &off);
	tcp_frames_fill(c, fl, f, lens, keep, got, mss, o, fin);
	tap_tx_commit_many_off(c, lens, keep, o);
	conn->seq_to_guest = seq_add(conn->seq_to_guest, (uint32_t)got + fin);
	if (fin) {
		tcp_conn_set(c, fl, 0, TCP_C_FIN_SENT, TCP_EV_FIN_SENT);
		conn->fin_rewound = false;
	}
	conn->rewound -= (uint32_t)MIN((size_t)conn->rewound, got);
	if (resend)
		tcp_sack_resent(conn);
	else if (!conn->rtt_start_us) {	/* new data only (Karn) */
		conn->rtt_start_us = tcp_now_us(c);
		conn->rtt_seq = conn->seq_to_guest;
	}
	*more = !fin && got == n &&
		(avail == SIZE_MAX || n < avail ||
		 (conn->flags & TCP_C_SOCK_EOF) ||
		 seq_diff(conn->seq_to_guest, conn->seq_acked_by_guest)
		 >= (int32_t)conn->wnd_from_guest);
	return (long)got;
}

/* tcp_data_to_guest() - peek host data into frames to the guest, within
 * its window, in at most 8 rounds per call (established only). */
void tcp_data_to_guest(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	seq_t max = tcp_snd_max(conn);
	int round;

	if (conn->state != TCP_CS_ESTABLISHED || conn->sock < 0 ||
	    (conn->flags & TCP_C_FIN_SENT) || !c->link.up)
		return;
	tcp_consume_lazy(c, fl);
	/* Bounded: one busy connection cannot starve the loop. A read that
	 * took everything there was ends it without another SIOCINQ: new
	 * data wakes the loop (EPOLLET, see tcp_events_update()). */
	for (round = 0; round < 8; round++) {
		bool more = false;
		long got = tcp_read_batch(c, fl, &more);

		if (got <= 0)
			break;
		conn->last_ms = tcp_now_ms(c);
		if (!more)
			break;
		if (round == 7)		/* data left: come back for it */
			tcp_events_rearm(c, fl);
	}
	/* Data in flight needs its retransmission timer; a closed window
	 * needs its probe even with nothing in flight (RFC 9293 3.8.6.1:
	 * the guest's window update may be lost). */
	if (!conn->timer_ms &&
	    (seq_lt(conn->seq_acked_by_guest, conn->seq_to_guest) ||
	     !conn->wnd_from_guest))
		tcp_timer_set(c, conn, TCP_RTO_MS);
	if (seq_gt(tcp_snd_max(conn), max))	/* new data: RFC 8985 7.2 */
		tcp_tlp_arm(c, fl);
}

/* The tail loss probe (RFC 8985 section 7). A flight whose tail is lost
 * draws no duplicate ACK, and a lost flight of one to three segments
 * cannot draw three: both waited for the 200 ms RTO. With data out and
 * no ACK for a probe timeout (PTO: twice the smoothed RTT, at least
 * TCP_PTO_MIN_MS; with one segment out the guest may delay its ACK, so
 * TCP_PTO_DELACK_MS more, which puts the PTO past the RTO: no probe
 * then), ferry sends one probe: new data where the window lets some
 * out, else the last segment sent again, whose ACK (its SACK block)
 * starts the recovery of what is missing below it (tcp_dupack_loss(),
 * early retransmit). When the guest already SACKed data above the ACK,
 * the holes below it went out at least a PTO before what it holds and
 * count as lost (RACK's inference, RFC 8985 6.2): the probe is a fast
 * recovery from the ACK. One probe until an ACK moves snd_una; then the
 * RTO where it was, the probe never delays it. Only with SACK, outside
 * a recovery or a timeout's resend, with an open window (a zero window
 * has its own probes). A probe that repaired a loss is not told from a
 * spurious one (RFC 8985 7.4: ferry reads no D-SACK and has no
 * congestion window to restore). */

/* tcp_tlp_ok() - whether a tail loss probe may be armed or sent now. */
bool tcp_tlp_ok(const struct tcp_conn *conn)
{
	return conn->state == TCP_CS_ESTABLISHED && conn->sock >= 0 &&
	       (conn->flags & TCP_C_SACK) && !conn->retries &&
	       !conn->rewound && !conn->fin_rewound &&
	       conn->wnd_from_guest &&
	       seq_lt(conn->seq_acked_by_guest, conn->seq_to_guest) &&
	       !tcp_sack_in_recovery(conn);
}

/* tcp_pto_ms() - the probe timeout: 2 SRTT, at least TCP_PTO_MIN_MS,
 * plus TCP_PTO_DELACK_MS with at most one segment out; INT64_MAX
 * without an RTT sample (RFC 8985: 1 s, after the RTO). */
static int64_t tcp_pto_ms(const struct tcp_conn *conn)
{
	uint32_t out = (uint32_t)seq_diff(conn->seq_to_guest,
					  conn->seq_acked_by_guest);
	int64_t pto;

	if (!conn->srtt_us)
		return INT64_MAX;
	pto = MAX(((int64_t)conn->srtt_us * 2 + 999) / 1000,
		  (int64_t)TCP_PTO_MIN_MS);
	if (out <= (uint32_t)conn->mss_to_guest +
		   !!(conn->flags & TCP_C_FIN_SENT))
		pto += TCP_PTO_DELACK_MS;
	return pto;
}

void tcp_tlp_arm(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	int64_t now = tcp_now_ms(c), rto, pto;

	if (conn->tlp == TCP_TLP_SENT)
		return;
	rto = conn->tlp == TCP_TLP_ARMED ? conn->rto_ms : conn->timer_ms;
	conn->tlp = TCP_TLP_NONE;
	if (!rto)
		return;
	pto = tcp_tlp_ok(conn) ? tcp_pto_ms(conn) : INT64_MAX;
	if (pto >= rto - now) {		/* the RTO comes first */
		if (conn->timer_ms != rto)
			tcp_timer_set(c, conn, MAX(rto - now, 1));
		return;
	}
	conn->rto_ms = rto;
	conn->tlp = TCP_TLP_ARMED;
	tcp_timer_set(c, conn, pto);
}

/* tcp_reset_both() - give up on a connection: RST to the guest, and the
 * socket aborted (RST to the peer, no TIME_WAIT). */
void tcp_reset_both(struct ctx *c, struct flow *fl, enum tcp_end why)
{
	tcp_send_flags(c, fl, TCP_F_RST | TCP_F_ACK);
	c->tcp.st.rst_to_guest++;
	tcp_conn_close(c, fl, why);
}

/* tcp_sock_dead() - where the flow may be freed: if a call on the socket
 * failed hard (tcp_sock_failed()), the peer or the path is gone, so the
 * guest gets an RST at once and the flow and its socket go. Returns true
 * when the flow was freed. */
bool tcp_sock_dead(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if (!conn->sock_err)
		return false;
	debug("tcp: socket error: %s", strerror(conn->sock_err));
	c->tcp.st.host_errors++;
	tcp_reset_both(c, fl, TCP_END_SOCK_ERR);
	return true;
}

/* tcp_frame_from_guest() - the most payload one frame from the guest
 * carries: a TSO frame's worth where the tap has TSO, else one segment. */
static uint32_t tcp_frame_from_guest(const struct ctx *c,
				     const struct flow *fl)
{
	return c->link.rx_tso ? TCP_GUEST_TSO_BYTES : tcp_mss_from_guest(c, fl);
}

/* tcp_wnd_quantize() - w rounded down to its four most significant bits
 * (steps of 1/16 to 1/8 of it): the levels the window to the guest moves
 * between. */
uint32_t tcp_wnd_quantize(uint32_t w)
{
	unsigned int b;

	if (w < 16)
		return w;
	b = 31u - (unsigned int)__builtin_clz(w);	/* highest bit set */
	return w & ~((1u << (b - 3)) - 1);
}

/* tcp_wnd_held() - what is left of the window already offered: from the
 * next byte expected to the highest right edge advertised, in whole units
 * of our window scale. 0 when the guest reached the edge.
 * Cut to the unit, the edge can fall short of the highest one by less
 * than a unit (RFC 7323 appendix F: the scale's granularity against ACKs
 * of any size); rounded up, it would creep forward by up to a unit per
 * ACK while the window closes (130 KB over a 370 KB window in 1460-byte
 * segments, tcp_wnd_edge_never_retracts), a promise the socket's buffer
 * may not keep: a write it refuses costs the guest a retransmission. */
static uint32_t tcp_wnd_held(const struct tcp_conn *conn)
{
	int32_t d = seq_diff(conn->wnd_edge, conn->seq_from_guest);

	if (d <= 0)
		return 0;
	return (uint32_t)d & ~((1u << conn->ws_to_guest) - 1);
}

/* tcp_wnd_set() - the window offered to the guest for free_ bytes of
 * free send-buffer space (conn->sndbuf set). The measurement m (3/4 of
 * free_, capped) sets a level (wnd_base): a step of tcp_wnd_quantize(),
 * kept while m stays within 1/16 below it and under the next step above,
 * so that a bulk sender sees the same window on every ACK (the right edge
 * moves with the ACK; the guest's header prediction, Linux's
 * tcp_rcv_established() fast path, takes only ACKs whose window field is
 * unchanged). A low m is taken as it is. The window offered is the level,
 * or what is left of the right edge already advertised when that is
 * more: the edge does not move back (RFC 9293 3.8.6; by less than a unit
 * of the scale, tcp_wnd_held()); a lower level closes the window as the
 * guest fills it. Returns true
 * when the window grew from a low value, i.e. the guest should hear about
 * it now. */
static bool tcp_wnd_set(const struct ctx *c, struct flow *fl, uint32_t free_)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t old = conn->wnd_to_guest, cap, low, m;
	bool was_low = conn->flags & TCP_C_WND_LOW;

	/* A tap device drops frames beyond its queue (500): keep a window's
	 * worth of the guest's frames well inside it. */
	cap = MIN(65535u << TCP_WS_TO_GUEST,
		  (uint32_t)TCP_WND_SEGS * tcp_frame_from_guest(c, fl));
	/* Whatever the guest sends inside the window fits the out-of-order
	 * queue's per-connection limit. */
	cap = MIN(cap, TCP_OOO_CONN_BYTES);
	if (!conn->ws_to_guest)
		cap = MIN(cap, 65535u);
	/* Queued memory counts skb overhead: offer 3/4 of it as payload. */
	m = MIN(free_ / 4 * 3, cap);
	/* Low: the socket's free space, not a cap, holds the window down
	 * (at MTU 1500 without TSO the 256-segment cap, 373 KB, sits below
	 * a quarter of a 4 MiB send buffer: that is not a full socket, and
	 * it must not cost an SO_MEMINFO per batch and EPOLLOUT for good). */
	low = MIN(MAX(conn->sndbuf / 4, 2u * conn->mss_to_guest), cap);
	if (m < low)
		conn->wnd_base = m;
	else if (m < conn->wnd_base - conn->wnd_base / 16 ||
		 tcp_wnd_quantize(m) > conn->wnd_base)
		conn->wnd_base = tcp_wnd_quantize(m);
	conn->wnd_written = 0;
	conn->wnd_to_guest = MAX(conn->wnd_base, tcp_wnd_held(conn));
	if (m < low)
		conn->flags |= TCP_C_WND_LOW | TCP_C_WANT_OUT;
	else
		conn->flags &= (uint16_t)~(TCP_C_WND_LOW | TCP_C_WANT_OUT);
	return was_low && conn->wnd_to_guest > old;
}

/* tcp_wnd_refresh() - recompute the window offered to the guest from the
 * socket's free send-buffer space (SO_MEMINFO). Returns tcp_wnd_set()'s
 * answer. */
bool tcp_wnd_refresh(const struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	uint32_t mi[SK_MEMINFO_VARS] = { 0 };
	socklen_t len = sizeof(mi);
	uint32_t free_ = 0;

	if (conn->flags & TCP_C_SHUT_WR) {
		conn->wnd_to_guest = 0;
		return false;
	}
	if (!getsockopt(conn->sock, SOL_SOCKET, SO_MEMINFO, mi, &len) &&
	    len >= sizeof(uint32_t) * (SK_MEMINFO_WMEM_QUEUED + 1)) {
		conn->sndbuf = mi[SK_MEMINFO_SNDBUF];
		if (mi[SK_MEMINFO_SNDBUF] > mi[SK_MEMINFO_WMEM_QUEUED])
			free_ = mi[SK_MEMINFO_SNDBUF] -
				mi[SK_MEMINFO_WMEM_QUEUED];
	}
	return tcp_wnd_set(c, fl, free_);
}

/* tcp_wnd_first() - the window of a just-connected socket, for the
 * SYN-ACK and the first batches: its send buffer is empty, and its size
 * (the kernel sizes it from the path's MSS when the connection is
 * established) is the one the last connection with the same MSS measured:
 * no SO_MEMINFO per connection. The guess only has to be close: the
 * window is measured again once the guest filled an eighth of it
 * (tcp_wnd_update()), and a write the socket refuses is not acknowledged
 * (the guest retransmits). */
void tcp_wnd_first(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);
	struct tcp_state *ts = &c->tcp;

	if (!ts->sndbuf_first || ts->sndbuf_first_mss != conn->mss_host) {
		tcp_wnd_refresh(c, fl);
		ts->sndbuf_first = conn->sndbuf;
		ts->sndbuf_first_mss = conn->mss_host;
		return;
	}
	conn->sndbuf = ts->sndbuf_first;
	tcp_wnd_set(c, fl, ts->sndbuf_first);
}

/* tcp_wnd_update() - the window to the guest at the end of a batch, from
 * the last measurement where that is close enough: while the guest has
 * sent less than an eighth of the level measured last, the level stays
 * (tcp_wnd_set()): the real free space is at most that eighth below the
 * measurement, well inside the quarter of it never offered; no
 * SO_MEMINFO per request. Measured again after an eighth, and always
 * while the window is low. Returns tcp_wnd_refresh()'s answer, or false. */
bool tcp_wnd_update(const struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if ((conn->flags & (TCP_C_WND_LOW | TCP_C_SHUT_WR)) ||
	    conn->wnd_written >= conn->wnd_base / 8)
		return tcp_wnd_refresh(c, fl);
	conn->wnd_to_guest = MAX(conn->wnd_base, tcp_wnd_held(conn));
	return false;
}

/* Window short of a segment. The kernel reports room in a send buffer
 * (EPOLLOUT) once a third of it is free, and after that only when a write
 * was refused or a poll found no room (SOCK_NOSPACE): ferry's writes are
 * never refused, the window keeps them inside the buffer. Where the buffer
 * is smaller than four of the guest's segments (a small tcp_wmem, or one
 * the kernel cut under memory pressure), 3/4 of that third is less than a
 * segment: the window measured at EPOLLOUT can hold less than one, and a
 * sender that filled its window sends no part of a segment into it (RFC
 * 9293 3.8.6.2.1, Linux tcp_snd_wnd_test()); it waits for its persist
 * timer, 200 ms at least and doubled per probe (measured: 256 MiB with
 * tcp_wmem max 128 KiB stopped 0.2 s about 25 times). So from such an
 * EPOLLOUT on, ferry measures again on a timer until a segment fits and
 * then tells the guest: TCP_WND_POLL_MS, doubled per miss up to
 * TCP_WND_POLL_MAX_MS (a host peer that stopped reading costs one
 * SO_MEMINFO per 64 ms). */

/* tcp_wnd_short() - whether the window offered leaves the guest less than
 * one of its segments while an emptier send buffer could offer one. */
static bool tcp_wnd_short(const struct ctx *c, struct flow *fl)
{
	const struct tcp_conn *conn = conn_of(fl);
	uint32_t seg = tcp_mss_from_guest(c, fl);

	return conn->wnd_to_guest < seg && conn->sndbuf / 4 * 3 >= seg &&
	       !(conn->flags & (TCP_C_SHUT_WR | TCP_C_GUEST_FIN));
}

/* tcp_wnd_poll_arm() - after EPOLLOUT: while the window is short of a
 * segment, measure it again after the current poll step; else end the
 * polling (the next short window starts from the first step). */
void tcp_wnd_poll_arm(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	if (!tcp_wnd_short(c, fl)) {
		conn->wnd_poll_ms = 0;
		conn->wnd_poll_shift = 0;
		return;
	}
	conn->wnd_poll_ms = tcp_due_in(c, conn, MIN(TCP_WND_POLL_MS <<
						    conn->wnd_poll_shift,
						    TCP_WND_POLL_MAX_MS));
}

/* tcp_wnd_poll() - the poll step ran out: measure the send buffer again;
 * when a segment fits and the right edge moves, send the window update,
 * else wait one step longer. */
void tcp_wnd_poll(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = conn_of(fl);

	conn->wnd_poll_ms = 0;
	if (conn->state != TCP_CS_ESTABLISHED || !tcp_wnd_short(c, fl)) {
		conn->wnd_poll_shift = 0;
		return;
	}
	c->tcp.st.wnd_polls++;
	tcp_wnd_refresh(c, fl);
	if (!tcp_wnd_short(c, fl)) {
		if (seq_gt(seq_add(conn->seq_from_guest, conn->wnd_to_guest),
			   conn->wnd_edge)) {
			c->tcp.st.wnd_poll_updates++;
			tcp_send_flags(c, fl, TCP_F_ACK);
		}
		conn->wnd_poll_shift = 0;
		return;
	}
	if (TCP_WND_POLL_MS << conn->wnd_poll_shift < TCP_WND_POLL_MAX_MS)
		conn->wnd_poll_shift++;
	tcp_wnd_poll_arm(c, fl);
}
