/* tcp.h - TCP translation between guest frames and host sockets: the
 * module's state in struct ctx and its entry points (see tcp.c for the
 * theory of operation, tcp_conn.h for the connection record). */
#ifndef FERRY_TCP_H
#define FERRY_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include "dheap.h"
#include "drop.h"
#include "tcp_tw.h"

struct ctx;
struct pkt;
struct tcp_ooo_pool;

/* Guest payload slices waiting for the end-of-batch sendmsg(): at most
 * one per frame of an input batch (RX_FRAMES_MAX, checked in tcp_in.c). */
#define TCP_PEND_MAX	256
/* Connections with end-of-batch work: one per frame of a batch plus
 * those whose ACK waits for the next read round (tcp_in.c, tcp_ack_carry();
 * at most TCP_DIRTY_MAX - RX_FRAMES_MAX of them). */
#define TCP_DIRTY_MAX	512
#define TCP_DELACK_MAX	512	/* delayed ACKs waiting; full: ACK at once */

struct tcp_pend {
	const uint8_t *data;
	uint32_t len;
	uint16_t next;			/* next slice of the same connection */
};

/* Counters (logged with the statistics, read by tests). */
struct tcp_stats {
	uint64_t opened, refused, fwd_accepted;
	uint64_t connect_now;		/* SYN-ACK in the SYN's round (tests) */
	uint64_t rst_to_guest, rst_from_guest;
	uint64_t host_errors;		/* host socket errors and resets that
					 * reset the guest (EPOLLERR, an
					 * unexpected hang-up, a failed call) */
	uint64_t half_open_evicted;	/* half-open connections abandoned to
					 * admit a new SYN (tcp_guard.c) */
	uint64_t ka_probes, ka_answered;	/* keepalives to the guest,
					 * and the guest's answers to them */
	uint64_t ka_resets;		/* ... connections they reset: no
					 * answer, or the guest's RST */
	uint64_t chacks;		/* ACKs answering an RST or SYN that
					 * does not fit the connection, or a
					 * segment outside the window (RFC 5961;
					 * tcp_in.c tcp_chack()) */
	uint64_t chacks_limited;	/* ... not sent: over the limit */
	uint64_t rewinds_dupack, rewinds_rto;
	uint64_t sack_rewinds;		/* resends from a hole found lost in a
					 * fast recovery (tcp_sack_lost()) */
	uint64_t sack_skips;		/* SACKed ranges a resend stepped over */
	uint64_t sack_skipped;		/* ... their bytes, not resent */
	uint64_t sack_ignored;		/* guest SACK blocks out of range or
					 * malformed (tcp_sack_input()) */
	uint64_t early_rexmits;		/* dupack rewinds by RFC 5827's lower
					 * threshold (tcp_early_rexmit()) */
	uint64_t tlp_probes;		/* tail loss probes (tcp_out.c) */
	uint64_t tlp_rewinds;		/* recoveries a probe began: on its
					 * timer over SACKed data, or on the
					 * guest's SACK of its segment */
	uint64_t short_writes;		/* guest data the socket refused */
	uint64_t wnd_updates;		/* window updates on socket drain */
	uint64_t wnd_polls;		/* window short of a segment measured
					 * again on the timer (tcp_wnd_poll()) */
	uint64_t wnd_poll_updates;	/* ... and found a segment's room */
	uint64_t clamp_sets, clamp_fallbacks;
	uint64_t timeouts;
	uint64_t timer_visits;		/* connections tcp_timer() came to
					 * (their deadline heap entry due) */
	uint64_t acks_delayed;		/* ACKs deferred (tcp_delack()) */
	uint64_t acks_delack_timer;	/* ... sent alone when the delay ran
					 * out: the rest rode on host data */
	uint64_t acks_carried;		/* batch ends that left a connection's
					 * ACK to the next read round of the
					 * same wake-up (tcp_ack_carry()) */
	uint64_t drain_resets;		/* connections reset at the --linger
					 * deadline (tcp_drain_end()) */
};

struct tcp_state {
	uint64_t isn_k0, isn_k1;	/* RFC 6528 secret */
	bool peek_off;			/* SO_PEEK_OFF works for TCP */
	bool clamp_off;			/* TCP_WINDOW_CLAMP disabled */
	uint16_t pend_n;
	uint16_t dirty_n;
	struct tcp_pend pend[TCP_PEND_MAX];
	uint32_t dirty[TCP_DIRTY_MAX];	/* flow indices with batch work */
	struct tcp_ooo_pool *ooo;	/* out-of-order queue (tcp_ooo.c) */
	uint32_t max_fds;		/* fd budget of TCP (tcp_fd_room()) */
	uint32_t ho_head, ho_tail;	/* half-open connections, oldest first
					 * (tcp_guard.c), valid with ho_n */
	uint32_t ho_n;
	/* Delayed ACKs, a ring in deadline order (one fixed delay); ack_sent:
	 * the connection's at queueing, an entry is stale once it moved */
	struct { uint32_t idx; uint32_t ack_sent; int64_t due_ms; }
		delack[TCP_DELACK_MAX];
	uint16_t delack_head, delack_n;
	struct dheap due;		/* each connection's earliest deadline,
					 * by flow index (tcp_timer()) */
	uint32_t sndbuf_first;		/* send buffer of a new connection ... */
	uint16_t sndbuf_first_mss;	/* ... whose path MSS was this */
	struct tcp_tw_table tw;		/* closed connections (tcp_tw.c) */
	struct tcp_stats st;
	struct tcp_tw_stats tw_st;
};

/* tcp_init() - probe kernel features, draw the ISN secret. */
void tcp_init(struct ctx *c);
/* tcp_input() - one validated TCP segment from the guest. Payload
 * pointers are kept until tcp_input_done() (end of the input batch). */
enum drop_reason tcp_input(struct ctx *c, const struct pkt *p);
/* tcp_input_done() - end of an input batch: write batched guest payload
 * (one sendmsg per connection), acknowledge, update windows, send. */
void tcp_input_done(struct ctx *c);
/* tcp_input_pending() - whether end-of-batch work is queued without a
 * batch (ACKs carried to a read round that did not come). */
bool tcp_input_pending(const struct ctx *c);
/* tcp_sock_handler() - epoll event on a TCP socket (eref type/idx). */
void tcp_sock_handler(struct ctx *c, uint64_t ref, uint32_t events);
/* tcp_timer() - retransmission, handshake, inactivity timers. */
void tcp_timer(struct ctx *c);
/* tcp_drain_busy() - drain before exit (drain.c): does any connection
 * (spliced ones included) still have something to carry? */
bool tcp_drain_busy(const struct ctx *c);
/* tcp_drain_end() - the drain is over: close the finished connections
 * cleanly, reset the others both ways, each logged with its 4-tuple
 * (spliced ones too: tcp_splice_drain_end()). */
void tcp_drain_end(struct ctx *c);
/* tcp_splice_drain_end() - reset every spliced connection, logged. */
void tcp_splice_drain_end(struct ctx *c);

#endif /* FERRY_TCP_H */
