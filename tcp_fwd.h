/* tcp_fwd.h - forwarded TCP ports: listeners for -t (host -> guest) and
 * -T (namespace -> host), automatic detection of listening ports, inbound
 * connections through the guest link (tcp_fwd.c) and the loopback splice
 * path (tcp_splice.c). */
#ifndef FERRY_TCP_FWD_H
#define FERRY_TCP_FWD_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"
#include "fwd.h"

struct ctx;
struct flow;
struct pkt;

/* Directions of a forwarded port (the side a listener lives on). */
enum tcp_fwd_dir {
	TCP_FWD_IN = 0,		/* -t: listens on the host, to the guest */
	TCP_FWD_OUT = 1,	/* -T: listens in the namespace, to the host */
};

#define TCP_FWD_SCAN_MS		1000	/* "auto": /proc/net/tcp{,6} period */
#define TCP_FWD_BACKLOG		256
#define TCP_FWD_ACCEPT_BATCH	64	/* accepts per listener event */
#define TCP_SPLICE_POOL		16	/* pre-made namespace sockets per family */

/* A listener's eref side: bit 0 IPv6, bit 1 TCP_FWD_OUT, and: */
#define LISTEN_PEEK_OFF	4	/* SO_PEEK_OFF 0 set, accepted sockets inherit it */

struct tcp_fwd_stats {
	uint64_t listeners;		/* listening sockets opened */
	uint64_t accepted;		/* connections accepted */
	uint64_t to_guest;		/* ... that went through the guest link */
	uint64_t spliced;		/* ... that were spliced loopback<->loopback */
	uint64_t refused;		/* ... that could not be forwarded */
	uint64_t splice_rst;		/* spliced connections aborted */
	uint64_t splice_idle;		/* ... of which for inactivity */
	uint64_t scans;			/* auto-detection rounds */
};

struct tcp_fwd_state {
	bool ready;			/* tcp_fwd_init() ran */
	bool stopped;			/* tcp_fwd_stop(): listeners closed */
	/* Listener fds + 1 (0: none, -errno: failed, to be retried),
	 * index lfd_idx(dir, v6, port). */
	int32_t *lfd;
	/* Ports whose listener failed to open, retried per direction. */
	struct fwd_retry retry[2];
	/* Ports opened by "auto", per direction (closed when they go). */
	uint64_t auto_map[2][FWD_BITMAP_WORDS];
	/* /proc/net/tcp and tcp6 fds, [dir][v6], -1 if unused: TCP_FWD_IN
	 * reads the namespace's (what the guest listens on), TCP_FWD_OUT the
	 * host's. */
	int proc[2][2];
	int64_t next_scan_ms;
	/* Unconnected sockets made inside the namespace, per family: the
	 * splice path connects them to the namespace's loopback. */
	int pool[2][TCP_SPLICE_POOL];
	unsigned int pool_n[2];
	struct tcp_fwd_stats st;
	/* An fd held in reserve (/dev/null, -1: none): closed to accept and
	 * refuse one connection (accept_refuse_spare()) when ferry is out of
	 * fds, so a listener with connections waiting does not stay
	 * readable forever. */
	int spare_fd;
};

/* tcp_fwd_init() - open the listeners of -t and -T, and the /proc files
 * "auto" reads. After ns_start()/vm_start() (-T listeners live in the
 * namespace). */
void tcp_fwd_init(struct ctx *c);
/* tcp_fwd_stop() - drain before exit (drain.c): close every -t and -T
 * listener, for good (no "auto" scans, no retries any more); spliced
 * connections are served on. */
void tcp_fwd_stop(struct ctx *c);
/* tcp_fwd_ports_open() - run time (the control socket): the listeners
 * of dir the spec asks for now for the ports in map (one already open,
 * say by "auto", is taken as it is), all or none: on the first failure
 * every listener this call opened is closed again and -errno returned
 * with that port in *bad. */
int tcp_fwd_ports_open(struct ctx *c, enum tcp_fwd_dir dir,
		       const uint64_t *map, uint16_t *bad);
/* tcp_fwd_ports_close() - close dir's listeners of the ports in map in
 * each family the spec no longer asks for (connections already accepted
 * live on). */
void tcp_fwd_ports_close(struct ctx *c, enum tcp_fwd_dir dir,
			 const uint64_t *map);
/* tcp_fwd_listen_handler() - EREF_TCP_LISTEN: accept and forward. */
void tcp_fwd_listen_handler(struct ctx *c, uint64_t ref, uint32_t events);
/* tcp_fwd_timer() - periodic "auto" detection, retries of listeners
 * that failed to open, idle spliced connections. */
void tcp_fwd_timer(struct ctx *c);
/* tcp_fwd_synack() - the guest's answer to our SYN on a forwarded
 * connection (state TCP_CS_SYN_TO_GUEST; not an RST). Returns true
 * when the connection is established and the segment's processing goes
 * on (its SYN makes tcp_in.c acknowledge it); else sets *r, having answered
 * a segment whose ACK is not ISS + 1 with an RST (RFC 9293 3.10.7.3). */
bool tcp_fwd_synack(struct ctx *c, struct flow *fl, const struct pkt *p,
		    enum drop_reason *r);
/* tcp_fwd_syn_timeout() - retransmit our SYN to the guest, or give up
 * (the host client gets an RST). Returns true when the flow was freed. */
bool tcp_fwd_syn_timeout(struct ctx *c, struct flow *fl);

/* tcp_splice.c */
/* tcp_splice_start() - splice accepted socket s (loopback peer) to a new
 * connection towards the other side's loopback at port: the namespace's
 * for TCP_FWD_IN, the host's for TCP_FWD_OUT; or towards to there, the
 * spec's target address (NULL: none). Takes ownership of s. */
union inany;
void tcp_splice_start(struct ctx *c, int s, bool v6, uint16_t port,
		      const union inany *to, enum tcp_fwd_dir dir);
/* tcp_splice_handler() - EREF_TCP_SPLICE: move data, propagate EOF and
 * resets. */
void tcp_splice_handler(struct ctx *c, uint64_t ref, uint32_t events);
/* tcp_splice_timer() - reset spliced connections idle for TCP_IDLE_MS
 * (now: tcp_now_ms()). Returns ms until the next may expire, INT64_MAX
 * when there are none. */
int64_t tcp_splice_timer(struct ctx *c, int64_t now);

#endif /* FERRY_TCP_FWD_H */
