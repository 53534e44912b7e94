/* tcp_conn.h - the TCP connection record and sequence-number arithmetic,
 * shared by every TCP file (tcp.c dispatch, tcp_in.c segment arrival,
 * tcp_out.c output, tcp_timer.c timers, tcp_conn.c the record's helpers,
 * the forwarders, guards and leaves) and the unit tests; the functions
 * each file offers the others are declared here, grouped by file.
 *
 * A connection lives in the private area of a FLOW_TCP flow. The guest
 * side key (flow.h) holds the addresses and ports as the guest's frames
 * carry them: a = guest address, pa = guest port, b = the remote as the
 * guest sees it, pb = remote port. The connection itself keeps only the
 * socket, the two sequence spaces and the windows.
 *
 * Naming follows the direction of the bytes: *_from_guest is the guest ->
 * host stream (the guest's sequence space, written to the socket),
 * *_to_guest the host -> guest stream (ferry's sequence space, read from
 * the socket with MSG_PEEK and only dropped from it once the guest
 * acknowledged it).
 */
#ifndef FERRY_TCP_CONN_H
#define FERRY_TCP_CONN_H

#include <stdbool.h>
#include <stdint.h>

/* seq_t - a TCP sequence number. A struct, so that a raw '<' between two
 * sequence numbers does not compile: compare with seq_lt() and friends
 * (RFC 9293 3.4 modular arithmetic). */
typedef struct { uint32_t v; } seq_t;

static inline seq_t seq_make(uint32_t v)
{
	return (seq_t){ v };
}

/* seq_add() - s + n (mod 2^32). */
static inline seq_t seq_add(seq_t s, uint32_t n)
{
	return (seq_t){ s.v + n };
}

/* seq_diff() - a - b as a signed distance (valid within 2^31). */
static inline int32_t seq_diff(seq_t a, seq_t b)
{
	return (int32_t)(a.v - b.v);
}

static inline bool seq_eq(seq_t a, seq_t b) { return a.v == b.v; }
static inline bool seq_lt(seq_t a, seq_t b) { return seq_diff(a, b) < 0; }
static inline bool seq_le(seq_t a, seq_t b) { return seq_diff(a, b) <= 0; }
static inline bool seq_gt(seq_t a, seq_t b) { return seq_diff(a, b) > 0; }
static inline bool seq_ge(seq_t a, seq_t b) { return seq_diff(a, b) >= 0; }

/* Connection states (the handshake; the data phase is one state whose
 * closing progress is kept in flags, because each direction closes on its
 * own). */
enum tcp_cstate {
	TCP_CS_CONNECTING = 1,	/* guest SYN seen, host connect() running */
	TCP_CS_SYNACK_SENT,	/* SYN-ACK sent to the guest, awaiting ACK */
	TCP_CS_SYN_TO_GUEST,	/* forwarded: SYN sent to guest, awaiting SYN-ACK */
	TCP_CS_ESTABLISHED,	/* data phase, both directions */
};

/* Connection flags (TCP_F_* in pkt.h are header flags). */
#define TCP_C_GUEST_FIN		0x0001	/* guest sent FIN at seq_fin_from_guest */
#define TCP_C_SHUT_WR		0x0002	/* FIN passed on: shutdown(SHUT_WR) done */
#define TCP_C_SOCK_EOF		0x0004	/* host peer closed its sending side */
#define TCP_C_FIN_SENT		0x0008	/* our FIN to the guest is in flight */
#define TCP_C_FIN_ACKED		0x0010	/* the guest acknowledged our FIN */
#define TCP_C_STALLED		0x0020	/* guest window full: stop reading */
#define TCP_C_DIRTY		0x0040	/* in the per-batch work list */
#define TCP_C_ACK_NOW		0x0080	/* send an ACK at the end of the batch */
#define TCP_C_WND_LOW		0x0100	/* our window to the guest is small */
#define TCP_C_TX_NOW		0x0200	/* try host->guest data at batch end */
#define TCP_C_WAS_ZERO		0x0400	/* guest window was zero/stalled */
#define TCP_C_CLAMP_OFF		0x0800	/* no TCP_WINDOW_CLAMP on this socket */
#define TCP_C_FWD		0x1000	/* host-initiated (port forwarding) */
#define TCP_C_WANT_OUT		0x2000	/* EPOLLOUT: tell the guest when it drains */
#define TCP_C_PEEK_OFF		0x4000	/* the kernel's peek offset is on (set
					 * when skips grow, tcp_out.c, or from a
					 * -t listener) */
#define TCP_C_SACK		0x8000	/* guest agreed to SACK (RFC 2018) */

/* The closing progress (TCP_C_GUEST_FIN .. TCP_C_FIN_ACKED): what the
 * --debug state lines follow (tcp_conn.closing, tcp_conn_set()). */
#define TCP_C_CLOSING		0x001f

/* What made a connection change state or closing progress, for the
 * --debug lines (tcp_conn_set(), flow_log.c): the enum and its text. */
#define TCP_EVENTS(X)							\
	X(CONNECTED,	"host connect() done")				\
	X(GUEST_ACK,	"the guest's ACK of our SYN-ACK")		\
	X(GUEST_SYNACK,	"the guest's SYN-ACK")				\
	X(GUEST_FIN,	"the guest's FIN")				\
	X(SHUT_WR,	"the guest's FIN passed on (shutdown)")		\
	X(HOST_EOF,	"host EOF")					\
	X(HOST_HUP,	"host hang-up after our shutdown")		\
	X(FIN_SENT,	"our FIN to the guest (host EOF, its data sent)") \
	X(FIN_ACKED,	"the guest's ACK of our FIN")

enum tcp_event {
#define TCP_EV_ENUM(name, text) TCP_EV_##name,
	TCP_EVENTS(TCP_EV_ENUM)
#undef TCP_EV_ENUM
	TCP_EV_MAX
};

/* Why a connection ends (tcp_conn_close(), the --debug close line):
 * TCP_END_CLOSE is the orderly close, every other value a reset and its
 * cause. TCP_END_ABORT is 1, so a caller's "true" still means a reset. */
#define TCP_ENDS(X)							\
	X(CLOSE,	"closed")					\
	X(ABORT,	"aborted")					\
	X(GUEST_RST,	"the guest's RST")				\
	X(CONNECT,	"host connect() failed")			\
	X(CONNECT_TIMEOUT, "host connect() timed out")			\
	X(SYNACK_TIMEOUT, "the guest did not ACK our SYN-ACK")		\
	X(SYN_TIMEOUT,	"the guest did not answer our SYN")		\
	X(RTO,		"retransmissions to the guest gave up")		\
	X(IDLE,		"idle timeout")					\
	X(KEEPALIVE,	"the guest did not answer keepalives")		\
	X(SOCK_ERR,	"host socket error")				\
	X(EVICTED,	"evicted: too many half-open connections")	\
	X(DRAIN,	"still open at the drain deadline")		\
	X(EPOLL,	"epoll registration failed")			\
	X(MIGRATED,	"moved to a live migration's destination")

enum tcp_end {
#define TCP_END_ENUM(name, text) TCP_END_##name,
	TCP_ENDS(TCP_END_ENUM)
#undef TCP_END_ENUM
	TCP_END_MAX
};

/* Socket options set only once they matter (tcp_conn.sockopt): a
 * Connection: close exchange never needs them, and each is a system call
 * per connection (doc/bench.md, "Connection rate"). */
#define TCP_SO_NODELAY		0x01	/* TCP_NODELAY on (set, or from a
					 * -t listener) */
#define TCP_SO_WRITTEN		0x02	/* a write went to the socket: the
					 * next one needs TCP_NODELAY */

#define TCP_PEND_NONE	UINT16_MAX

/* A range of ferry's data the guest reported holding (SACK, tcp_sack.c):
 * [l, r) in our sequence space. */
struct tcp_sack_blk {
	seq_t l, r;
};
#define TCP_SACK_BLKS	16	/* scoreboard ranges per connection */
#define TCP_SACK_LOST_SEGS	3	/* segments SACKed above a hole that
					 * make it lost (RFC 6675 DupThresh) */

struct tcp_conn {
	int sock;			/* host socket */
	uint32_t ev;			/* epoll events acted on now (the
					 * socket has TCP_EP_EVENTS) */
	uint16_t flags;			/* TCP_C_* */
	uint8_t state;			/* enum tcp_cstate */
	uint8_t ws_from_guest;		/* guest's window scale (0: none) */
	uint8_t ws_to_guest;		/* our window scale towards the guest */
	uint8_t retries;		/* consecutive timeouts */
	uint8_t dup_acks;		/* duplicate ACKs from the guest */
	uint8_t ooo;			/* out-of-order queue slot + 1, 0: none
					 * (tcp_ooo.c) */
	uint8_t sockopt;		/* TCP_SO_*: lazily set options */
	uint8_t sock_err;		/* a hard error (errno) a call on the
					 * socket returned, 0: none; reset
					 * at the next safe point
					 * (tcp_sock_failed()) */
	uint16_t mss_to_guest;		/* payload bytes per segment to guest */
	uint16_t mss_host;		/* TCP_MAXSEG of the socket */
	bool half_open;			/* in the half-open list (tcp_guard.c):
					 * guest SYN seen, handshake not done */
	uint8_t ka_probes;		/* keepalive probes to the guest sent
					 * since it was last heard of */
	uint8_t closing;		/* TCP_C_CLOSING bits ever set (a
					 * rewind clears TCP_C_FIN_SENT, not
					 * this): the --debug lines' state */

	/* host -> guest (our sequence space) */
	seq_t isn_to_guest;		/* our ISN */
	seq_t seq_to_guest;		/* next byte we send (snd_nxt) */
	seq_t seq_acked_by_guest;	/* oldest unacknowledged (snd_una) */
	uint32_t rewound;		/* data sent beyond seq_to_guest before
					 * a rewind (snd_max - snd_nxt) */
	bool fin_rewound;		/* our FIN was sent after those bytes:
					 * an ACK of rewound + 1 acks it */
	uint32_t wnd_from_guest;	/* guest's window, scaled, bytes */
	seq_t snd_wl1;			/* the guest's SEG.SEQ and SEG.ACK of */
	seq_t snd_wl2;			/* the segment whose window was taken
					 * last (RFC 9293 SND.WL1, SND.WL2;
					 * tcp_in.c tcp_wnd_from_seg()) */
	uint32_t consume;		/* acked bytes still in the socket */
	uint32_t clamp;			/* TCP_WINDOW_CLAMP last set, 0: none */
	uint32_t clamp_wnd;		/* wnd_from_guest the clamp was last
					 * computed for (tcp_clamp_refresh()) */
	uint32_t mss_peer;		/* host socket's advertised MSS, 0: not
					 * looked up yet (tcp_out.c) */
	int64_t chack_ms;		/* challenge ACKs (RFC 5961): the
					 * current limit period began here */
	uint8_t chack_n;		/* ... and this many went in it
					 * (tcp_in.c tcp_chack()) */

	/* guest -> host (the guest's sequence space) */
	seq_t seq_from_guest;		/* next byte expected (all before it
					 * are written to the socket) */
	seq_t seq_fin_from_guest;	/* valid with TCP_C_GUEST_FIN */
	uint32_t wnd_to_guest;		/* window last advertised, bytes */
	uint32_t sndbuf;		/* cached SO_SNDBUF */

	/* Batch of guest payload waiting for one sendmsg() */
	uint16_t pend_head, pend_tail;	/* indices into tcp_state.pend */
	uint32_t pend_bytes;

	int64_t timer_ms;		/* deadline on the tcp clock, 0: none */
	int64_t wnd_poll_ms;		/* measure the window to the guest
					 * again (tcp_out.c tcp_wnd_poll()), 0:
					 * not due */
	uint8_t wnd_poll_shift;		/* ... TCP_WND_POLL_MS doubled this
					 * many times since the last success */
	int64_t last_ms;		/* last activity, for inactivity */
	int64_t ka_ms;			/* SO_KEEPALIVE due (tcp_timer()), 0:
					 * set (or inherited from a listener) */

	/* Our ACKs to the guest (delayed ACK, tcp_in.c, tcp_timer.c) */
	seq_t ack_sent;			/* ACK field of our last segment */
	uint32_t wnd_sent;		/* window (bytes) of our last segment */
	seq_t wnd_edge;			/* highest right edge we advertised
					 * (ack + window); the out-of-order
					 * queue keeps nothing beyond it */
	uint8_t ack_state;		/* enum tcp_ack_state */
	uint32_t wnd_base;		/* window level, from the last
					 * measurement (tcp_wnd_set()) */
	uint32_t wnd_written;		/* bytes written to the socket since */
	bool sock_sent;			/* every byte in the socket was sent
					 * to the guest, as of the last read
					 * (new data wakes us: EPOLLET) */
	bool peek_behind;		/* an ACK skipped seq_to_guest ahead
					 * (tcp_in.c): the kernel's peek offset
					 * is right only once consumed */
	bool read_drained;		/* the last read left nothing unsent:
					 * the next one guesses, no SIOCINQ
					 * (tcp_out.c, tcp_read_batch()) */

	/* The guest's SACK blocks and loss recovery (tcp_sack.c) */
	bool sack_rec;			/* in a recovery (rewound, until the
					 * ACK reaches sack_recover) */
	bool sack_fast;			/* ... begun by a fast retransmit */
	uint8_t nsacked;		/* ranges in sacked[] */
	seq_t sack_recover;		/* snd_max when the recovery began */
	seq_t sack_rxt;			/* resent up to here in the recovery
					 * (RFC 6675 HighRxt) */
	bool sack_trunc;		/* a full scoreboard dropped ranges:
					 * nothing known from trunc_l on */
	seq_t sack_trunc_l, sack_trunc_r;	/* ... what was dropped spans
					 * [trunc_l, trunc_r) at most */
	struct tcp_sack_blk sacked[TCP_SACK_BLKS];	/* scoreboard: sorted,
					 * disjoint, in (seq_acked_by_guest,
					 * snd_max] */

	/* Round-trip time and the tail loss probe (tcp_out.c) */
	int64_t rtt_start_us;		/* a segment ending at rtt_seq is
					 * timed since (tcp clock, us), 0:
					 * none (Karn: a rewind drops it) */
	seq_t rtt_seq;
	uint32_t srtt_us;		/* smoothed RTT (RFC 6298), 0: no
					 * sample yet */
	uint8_t tlp;			/* enum tcp_tlp_state */
	int64_t rto_ms;			/* with TCP_TLP_ARMED: the RTO's
					 * deadline, timer_ms the probe's */

	uint32_t ho_prev, ho_next;	/* the half-open list, oldest first
					 * (flow indices, FLOW_NONE: end) */
};

/* The tail loss probe (RFC 8985 section 7, tcp_out.c tcp_tlp_arm()). */
enum tcp_tlp_state {
	TCP_TLP_NONE = 0,	/* timer_ms, if set, is the RTO (or another
				 * timer of the connection) */
	TCP_TLP_ARMED,		/* timer_ms is the probe's timeout (PTO) */
	TCP_TLP_SENT,		/* a probe went: none again before an ACK
				 * moves snd_una */
};

/* An ACK for guest data written to the socket may wait a little for host
 * data going the other way to carry it (tcp_timer.c, tcp_delack()). */
enum tcp_ack_state {
	TCP_ACK_NONE = 0,	/* our last segment acknowledged everything */
	TCP_ACK_DUE,		/* new guest data to acknowledge */
	TCP_ACK_QUEUED,		/* ... and in the delayed-ACK queue */
};

struct ctx;
struct flow;
struct pkt;

/* Timers and limits (milliseconds unless noted). */
#define TCP_CONNECT_TIMEOUT_MS	10000	/* host connect() before RST */
#define TCP_SYN_RTO_MS		1000	/* SYN / SYN-ACK retransmission */
#define TCP_SYN_RETRIES		4
#define TCP_RTO_MS		200	/* data to the guest, doubled */
#define TCP_RTO_MAX_MS		10000
#define TCP_DATA_RETRIES	10	/* then the connection is reset */
#define TCP_IDLE_MS		(2 * 3600 * 1000)	/* inactivity */
#define TCP_KA_ARM_MS		30000	/* connection age for SO_KEEPALIVE */
#define TCP_STUCK_MS		1000	/* zero-window detection delay */
#define TCP_WS_TO_GUEST		9	/* our window scale: 32 MiB max */
#define TCP_WND_SEGS		256	/* window to the guest: max segments */
#define TCP_DELACK_MS		2	/* longest wait of a delayed ACK */
#define TCP_WND_POLL_MS		1	/* window short of a segment after */
#define TCP_WND_POLL_MAX_MS	64	/* EPOLLOUT: measured again, doubled */
#define TCP_PTO_MIN_MS		10	/* tail loss probe: 2 SRTT, at least */
#define TCP_PTO_DELACK_MS	200	/* ... plus the guest's worst delayed
					 * ACK with one segment out (RFC 8985
					 * WCDelAckT) */
#define TCP_CHACK_MAX		10	/* challenge ACKs per connection ... */
#define TCP_CHACK_MS		5000	/* ... in this period (RFC 5961 7) */
#define TCP_CONSUME_LAZY	(16u << 10)	/* acked bytes that may stay in
						 * the socket (tcp_consume_lazy) */

/* The most TCP payload the guest's kernel puts in one TSO frame for the
 * tap: the device's GSO limit (64 KiB) less the header room it reserves
 * (MAX_TCP_HEADER + 1, at most 321 bytes), cut to whole segments
 * (tcp_mss_from_guest(), the window cap). */
#define TCP_GUEST_TSO_BYTES	(65536u - 321u)

/* tcp_conn.c */
/* tcp_now_ms() - the loop's clock (c->now) in milliseconds. */
int64_t tcp_now_ms(const struct ctx *c);
/* tcp_now_us() - c->now in microseconds, never 0 (0: "not timing"). */
int64_t tcp_now_us(const struct ctx *c);
/* tcp_due_in() - have tcp_timer() come to the connection ms from now at
 * the latest (its deadline heap entry lowered); returns that time on the
 * tcp clock. */
int64_t tcp_due_in(struct ctx *c, struct tcp_conn *conn, int64_t ms);
void tcp_timer_set(struct ctx *c, struct tcp_conn *conn, int64_t ms);
/* tcp_sock_failed() - a system call on the connection's socket failed
 * with err. A hard error (the peer's RST, a timeout, unreachable) is
 * kept in sock_err: the call took the socket's pending error with it, so
 * EPOLLERR may never report it, and the caller may not be where the
 * flow can be freed. Soft ones (EAGAIN, EINTR, ENOBUFS, ENOMEM) are not
 * kept. */
void tcp_sock_failed(struct tcp_conn *conn, int err);
/* TCP_EP_EVENTS - a TCP socket's epoll registration, for its life */
#define TCP_EP_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
/* tcp_ep_add() - register a new connection's socket (its sock, state and
 * flags set) with the loop. Returns 0 or -errno. */
int tcp_ep_add(const struct ctx *c, struct flow *fl);
/* tcp_events_update() - the events the connection acts on, after a
 * change of state or flags (a system call only when EPOLLOUT is newly
 * wanted). */
void tcp_events_update(struct ctx *c, struct flow *fl);
/* tcp_events_rearm() - re-register the socket's events so that epoll
 * reports it again if it is ready now (the reader left data behind). */
void tcp_events_rearm(const struct ctx *c, struct flow *fl);
struct tcp_view;
void tcp_sock_opts(int s);
int tcp_sock_mss(struct tcp_conn *conn);
/* tcp_mss_from_guest() - the MSS we advertise to the guest, the largest
 * segment it sends us (a TSO frame carries several). */
uint32_t tcp_mss_from_guest(const struct ctx *c, const struct flow *fl);
void tcp_guest_syn_params(const struct ctx *c, struct flow *fl,
			  const struct tcp_view *t, bool v6);
void tcp_established(struct ctx *c, struct flow *fl);
/* tcp_ack_sent() - a segment carrying our current ACK and window is
 * queued to the guest: nothing is left to acknowledge. */
void tcp_ack_sent(struct tcp_conn *conn, uint32_t wnd);
uint32_t tcp_isn(const struct ctx *c, const struct flow *fl);
/* tcp_rtt_sample() - the guest acknowledged up to ack: an RTT sample
 * when that covers the timed segment. */
void tcp_rtt_sample(const struct ctx *c, struct tcp_conn *conn, seq_t ack);
/* tcp_half_open_add() - a new guest-initiated connection: at the end of
 * the half-open list (the newest). */
void tcp_half_open_add(struct ctx *c, struct flow *fl);
/* tcp_half_open_del() - the connection is established or closing: off
 * the list (nothing if not on it). */
void tcp_half_open_del(struct ctx *c, struct flow *fl);
/* tcp_conn_set() - the one place a connection's state or closing
 * progress changes after its set-up: state (0: kept) and the flags set
 * (TCP_C_*, any), because of ev. --debug gets a line when the state or
 * a TCP_C_CLOSING bit is new (flow_log_tcp_step()). */
void tcp_conn_set(const struct ctx *c, struct flow *fl, uint8_t state,
		  uint16_t flags, enum tcp_event ev);
/* tcp_conn_close() - close the socket (why other than TCP_END_CLOSE:
 * SO_LINGER 0, the peer gets a RST), release out-of-order blocks, free
 * the flow; the --debug close line says why. Sends nothing to the
 * guest. */
void tcp_conn_close(struct ctx *c, struct flow *fl, enum tcp_end why);

/* tcp_guard.c */
/* File descriptors a spliced connection holds: two sockets, two pipes. */
#define TCP_SPLICE_FDS		6
/* tcp_fd_budget() - TCP's share of an fd limit of nofile: fd_budget(),
 * half less 64 (UDP and ICMP echo flows share the other half), the rest
 * left to listeners, the link and the files. */
uint32_t tcp_fd_budget(uint32_t nofile);
/* tcp_fd_room() - may TCP take n more descriptors? Counts one per
 * FLOW_TCP flow and TCP_SPLICE_FDS per spliced one against
 * c->tcp.max_fds (0: tcp_init() did not run, no budget): pending host
 * connects (which can wait TCP_CONNECT_TIMEOUT_MS each) never hold
 * every fd. */
bool tcp_fd_room(const struct ctx *c, unsigned int n);
/* tcp_fwd_abort() - refuse an accepted connection: the client gets an
 * RST (SO_LINGER 0), the socket is closed. */
void tcp_fwd_abort(struct ctx *c, int s);
/* TCP_HALF_OPEN_SHARE - half-open connections (guest SYN seen, the
 * host connect() running or our SYN-ACK unanswered) hold at most
 * 1/TCP_HALF_OPEN_SHARE of the TCP fd budget (tcp_guard.c). */
#define TCP_HALF_OPEN_SHARE	2
/* tcp_half_open_admit() - before a guest SYN takes a socket: abandon
 * the oldest half-open connections (RST to the guest) while the
 * half-open share is taken or the budget is full. Returns whether the
 * budget has room for the new one. */
bool tcp_half_open_admit(struct ctx *c);
/* Keepalives toward the guest (tcp_guard.c): the idle time is
 * --tcp-keepalive (conf.tcp_ka_s); then probes every fifth of it, within
 * these bounds, and a reset after this many unanswered. */
#define TCP_KA_INTVL_MIN_MS	1000
#define TCP_KA_INTVL_MAX_MS	75000
#define TCP_KA_PROBES		4
/* tcp_keepalive() - from the TCP timer, for an established connection:
 * a keepalive probe when it is due, a reset both ways after TCP_KA_PROBES
 * unanswered; *next lowered to its next keepalive deadline. Returns true
 * when the flow was freed. */
bool tcp_keepalive(struct ctx *c, struct flow *fl, int64_t now,
		   int64_t *next);
/* tcp_keepalive_heard() - a segment from the guest (rst: an RST that
 * ends the connection) after keepalive probes: they are answered. */
void tcp_keepalive_heard(struct ctx *c, struct tcp_conn *conn, bool rst);

/* tcp_out.c */
bool tcp_send_flags(struct ctx *c, struct flow *fl, uint8_t flags);
void tcp_rst_reply(struct ctx *c, const struct pkt *p);
/* tcp_send_probe() - an ACK one byte below snd_nxt, no data: the
 * guest answers with its ACK and window (zero-window probe, keepalive). */
void tcp_send_probe(struct ctx *c, struct flow *fl);
/* tcp_reply() - a bare segment answering guest segment p, which has no
 * connection (RST, or a closed connection's ACK: tcp_tw.c). */
void tcp_reply(struct ctx *c, const struct pkt *p, uint32_t seq, uint32_t ack,
	       uint8_t flags, uint16_t wnd);
/* tcp_reset_both() - give up on a connection: RST to the guest, the
 * socket aborted, the flow freed (tcp_out.c). */
void tcp_reset_both(struct ctx *c, struct flow *fl, enum tcp_end why);
/* tcp_sock_dead() - where the flow may be freed: after a hard socket
 * error (tcp_sock_failed()) an RST to the guest and the flow gone.
 * Returns true when the flow was freed. */
bool tcp_sock_dead(struct ctx *c, struct flow *fl);
/* tcp_wnd_quantize() - w rounded down to its four most significant bits:
 * the levels of the window to the guest. */
uint32_t tcp_wnd_quantize(uint32_t w);
/* tcp_wnd_refresh() - the window offered to the guest measured again
 * (SO_MEMINFO); true when it grew from low: the guest should hear. */
bool tcp_wnd_refresh(const struct ctx *c, struct flow *fl);
/* tcp_wnd_first() - the window of a just-connected socket (SYN-ACK). */
void tcp_wnd_first(struct ctx *c, struct flow *fl);
/* tcp_wnd_update() - the window at the end of an input batch, measured
 * again only when due; tcp_wnd_refresh()'s answer, or false. */
bool tcp_wnd_update(const struct ctx *c, struct flow *fl);
/* tcp_wnd_poll_arm() - after EPOLLOUT: poll the window while it is
 * short of a segment. */
void tcp_wnd_poll_arm(struct ctx *c, struct flow *fl);
/* tcp_wnd_poll() - the window poll's step ran out (timer scan). */
void tcp_wnd_poll(struct ctx *c, struct flow *fl);
void tcp_data_to_guest(struct ctx *c, struct flow *fl);
void tcp_consume(struct ctx *c, struct flow *fl);
/* tcp_consume_lazy() - tcp_consume(), unless the acknowledged bytes are
 * few (request/response traffic): they stay in the socket, and the clamp
 * as it is, until more gather or tcp_consume() is called (rewind, close).
 * Returns true when the consumption was deferred. */
bool tcp_consume_lazy(struct ctx *c, struct flow *fl);
/* tcp_clamp_update() - re-compute the window clamp (tcp_out.c); stale:
 * set it even if unchanged (the kernel may have rewritten it). */
void tcp_clamp_update(struct ctx *c, struct flow *fl, bool stale);
/* tcp_clamp_refresh() - the clamp at the end of an input batch with
 * nothing to consume: tcp_clamp_update() only when the guest's window
 * changed since the clamp was last computed (or none is set yet); none
 * while the peer has sent nothing (tcp_out.c). */
void tcp_clamp_refresh(struct ctx *c, struct flow *fl);
/* tcp_rewind_seq() - seq_to_guest back to to, the peek offset along,
 * what was sent before remembered (the rewinds' common step). */
void tcp_rewind_seq(struct ctx *c, struct flow *fl, seq_t to);
/* tcp_rewind() - resend from the guest's cumulative ACK; fast: after
 * three duplicate ACKs (else a timeout), see tcp_sack.c. */
void tcp_rewind(struct ctx *c, struct flow *fl, bool fast);
/* tcp_rewind_to() - tcp_rewind() to seq to (acked .. seq_to_guest):
 * resend from a hole the guest's SACK blocks show lost (fast). */
void tcp_rewind_to(struct ctx *c, struct flow *fl, seq_t to, bool fast);
/* tcp_tlp_ok() - whether a tail loss probe may be armed or sent now. */
bool tcp_tlp_ok(const struct tcp_conn *conn);
/* tcp_tlp_arm() - after new data went to the guest, or an ACK moved
 * snd_una with data still out (its RTO set): the tail loss probe's
 * timer in place of the RTO's when the probe is due first (tcp_out.c). */
void tcp_tlp_arm(struct ctx *c, struct flow *fl);

/* tcp_timer.c */
/* tcp_delack() - acknowledge the guest's data just written now, or
 * queue the ACK for TCP_DELACK_MS (tcp_timer.c). */
void tcp_delack(struct ctx *c, struct flow *fl);
bool tcp_probe_or_rto(struct ctx *c, struct flow *fl);
void tcp_stuck_check(struct ctx *c, struct flow *fl);
#ifdef FERRY_TEST
/* tcp_test_stuck_wnd - test build only: >= 0 replaces the tcpi_rcv_wnd
 * tcp_stuck_check() reads (no kernel here sticks at zero), -1: none. */
extern int64_t tcp_test_stuck_wnd;
#endif

/* tcp_in.c */
/* tcp_conn_input() - a guest segment for the existing connection fl
 * (RFC 9293 3.10.7.4's order). Returns the drop reason. */
enum drop_reason tcp_conn_input(struct ctx *c, struct flow *fl,
				const struct pkt *p);
/* tcp_flush_pending() - write the batch's in-order guest payload and the
 * queued run it reaches; acknowledge only what the socket took. */
void tcp_flush_pending(struct ctx *c, struct flow *fl);
/* tcp_fin_to_host() - the guest's FIN to the host (shutdown(SHUT_WR))
 * once every byte before it is written. */
void tcp_fin_to_host(const struct ctx *c, struct flow *fl);
/* tcp_conn_finished() - both directions through: the flow closed (and
 * remembered, tcp_tw.c). Returns true if the flow is gone. */
bool tcp_conn_finished(struct ctx *c, struct flow *fl);
/* tcp_early_rexmit() - a duplicate ACK (window wnd) outside a recovery:
 * whether RFC 5827's early retransmit resends now (SACK variant,
 * tcp_out.c). */
bool tcp_early_rexmit(struct tcp_conn *conn, uint32_t wnd);
/* tcp_sack.c */
struct tcp_stats;
/* tcp_snd_max() - one past the highest sequence number sent (snd_max). */
seq_t tcp_snd_max(const struct tcp_conn *conn);
/* tcp_sack_input() - the guest segment t's SACK blocks into the
 * scoreboard, after its ACK was taken; ignored blocks counted in st. */
void tcp_sack_input(struct tcp_conn *conn, const struct tcp_view *t,
		    struct tcp_stats *st);
/* tcp_sack_skip_len() - SACKed bytes a resend steps over at seq_to_guest
 * (after a fast retransmit, up to snd_max past the highest range). */
uint32_t tcp_sack_skip_len(const struct tcp_conn *conn);
/* tcp_sack_hole_len() - bytes a resend may read before the next SACKed
 * range, UINT32_MAX: none ahead. */
uint32_t tcp_sack_hole_len(const struct tcp_conn *conn);
/* tcp_sack_lost() - in a recovery, the first hole not resent yet that
 * the guest's SACK blocks or ACK show lost: true, its start in *hole.
 * moved: the ACK being taken advanced the cumulative ACK. */
bool tcp_sack_lost(const struct tcp_conn *conn, seq_t *hole, bool moved);
/* tcp_sack_una_lost() - outside a recovery, the SACK blocks show the
 * segment at the ACK lost (one duplicate ACK then does, RFC 6675). */
bool tcp_sack_una_lost(const struct tcp_conn *conn);
/* tcp_sack_er() - the scoreboard's half of early retransmit (RFC 5827
 * section 3.2): fewer than four segments out, all but one SACKed. */
bool tcp_sack_er(const struct tcp_conn *conn);
/* tcp_sack_in_recovery() - a recovery runs: snd_una below its end. */
bool tcp_sack_in_recovery(const struct tcp_conn *conn);
/* tcp_sack_tail_sacked() - the highest SACKed range reaches snd_max. */
bool tcp_sack_tail_sacked(const struct tcp_conn *conn);
/* tcp_sack_rewound() - a rewind (fast: duplicate ACKs or a lost hole)
 * starts or continues the recovery; a timeout ends it. */
void tcp_sack_rewound(struct tcp_conn *conn, bool fast);
/* tcp_sack_resent() - a resend read ended at seq_to_guest. */
void tcp_sack_resent(struct tcp_conn *conn);

#endif /* FERRY_TCP_CONN_H */
