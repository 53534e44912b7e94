/* ferry.h - the execution context: one struct ctx holds all run-time state
 * (configuration, event loop, guest link, counters, per-protocol tables).
 * Every function that needs state takes a struct ctx *; there are no other
 * mutable globals besides the log sink (log.c).
 *
 * Event loop references: each fd registered with epoll carries a union
 * eref naming its type and an index (flow, listener, ...). ferry.c maps
 * types to handlers.
 */
#ifndef FERRY_H
#define FERRY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>

#include "busypoll.h"
#include "conf.h"
#include "drop.h"
#include "flow.h"
#include "tap.h"
#include "icmp.h"
#include "isolate.h"
#include "ndp.h"
#include "priv.h"
#include "tcp.h"
#include "tcp_fwd.h"
#include "udp.h"

enum eref_type {
	EREF_NONE = 0,
	EREF_LINK,		/* guest link fd (tap device, qemu socket) */
	EREF_LINK_LISTEN,	/* vm mode: listening UNIX socket */
	EREF_SIGNAL,		/* signalfd */
	EREF_CHILD,		/* pidfd of the namespace command / ns holder */
	EREF_PING,		/* ping socket of an ICMP echo flow */
	EREF_TCP,		/* TCP flow socket */
	EREF_TCP_LISTEN,	/* TCP forwarded-port listener */
	EREF_TCP_TIMER,		/* TCP timer */
	EREF_TCP_SPLICE,	/* loopback splice socket */
	EREF_UDP,		/* UDP flow socket */
	EREF_UDP_LISTEN,	/* UDP forwarded-port socket */
	EREF_VU,		/* vm mode: vhost-user control socket */
	EREF_TYPE_MAX
};

union eref {
	struct {
		uint8_t type;
		uint8_t side;
		uint16_t aux;
		uint32_t idx;
	};
	uint64_t u64;
};

struct stats {
	uint64_t rx_frames, rx_bytes;	/* from the guest */
	uint64_t tx_frames, tx_bytes;	/* to the guest */
	uint64_t tx_stalls;		/* writes cut short (tap_stream.c) */
	uint64_t tx_stall_max_ms;	/* the longest stall that ended */
	uint64_t drops[DROP_MAX];
	time_t drop_trace_sec;		/* rate limit for drop traces */
	unsigned int drop_trace_n;
};

struct ctx {
	struct conf conf;
	int epfd;
	/* The loop's control set (loop.c): the fds served while the guest
	 * link is stalled (link, listener, signals, child); -1 when the
	 * link never stalls (namespace mode, vhost-user). */
	int ctl_epfd;
	struct timespec now;		/* updated once per loop iteration */
	struct timespec timer_due;	/* earliest module timer requested */
	struct timespec stats_due;	/* --stats: the next statistics dump */
	bool timer_armed;
	uint64_t loop_iter;		/* loop iterations so far */
	struct busypoll bp;		/* polling before a sleep (busypoll.c) */

	struct link link;		/* guest link and its frame batches */
	struct stats stats;

	/* What the guest showed us (learnt from its frames). */
	bool guest_mac_known;
	uint8_t guest_mac[6];
	struct in_addr guest_seen4;
	struct in6_addr guest_seen6, guest_ll6;

	int pcap_fd;			/* -1 when not capturing */
	uint64_t pcap_bytes;		/* written to it (cap: PCAP_MAX_BYTES) */
	int sigfd;
	int child_pidfd;		/* ns mode: the command we started */
	int sock_dirfd;			/* vm mode: the directory holding the
					 * listening socket (O_PATH), to remove
					 * it at exit from inside the sandbox;
					 * -1: none */
	int ns_user_fd, ns_net_fd;	/* ns mode: guest namespaces (ns_call),
					 * user -1: not entered; valid once
					 * ns_ready */
	bool ns_ready;			/* ns_start() set the namespace up */
	struct ns_agent *ns_agent;	/* resident helper running ns_call()
					 * jobs (ns.c), or NULL */
	pid_t child_pid;
	bool tty_taken;			/* ns mode: ferry was in the terminal's
					 * foreground and handed it to the
					 * command (ns.c ns_tty_back()) */
	struct priv priv;		/* giving up root (priv.c) */
	struct isolate iso;		/* confinement layers (isolate.c) */
	bool quit;
	bool draining;			/* serving open flows before exit,
					 * until drain_due_ms (drain.c) */
	int64_t drain_due_ms;
	int exit_code;

	struct flowtab flows;		/* all ICMP/UDP/TCP flows */
	struct ndp_state ndp;
	struct icmp_state icmp;
	struct tcp_state tcp;
	struct tcp_fwd_state tcp_fwd;
#ifdef FERRY_TEST
	struct fault_state fault;	/* --fault (fault.c) */
#endif
	struct udp_state udp;
};

/* ep_add()/ep_mod()/ep_del() - register fd with the loop under a
 * reference (control fds also in the control set, see loop.c). Return 0
 * or -errno. */
int ep_add(struct ctx *c, int fd, uint32_t events, union eref ref);
int ep_mod(struct ctx *c, int fd, uint32_t events, union eref ref);
void ep_del(struct ctx *c, int fd);

/* timer_request() - ask the loop to call module timers no later than
 * ms milliseconds from c->now. */
void timer_request(struct ctx *c, int64_t ms);

/* drop() - count a refused frame under reason r, trace it (rate-limited). */
void drop(struct ctx *c, enum drop_reason r);

/* signals_init() - block and route SIGTERM/SIGINT/SIGHUP/SIGUSR1 to a
 * signalfd in the loop. */
void signals_init(struct ctx *c);
/* loop() - run until c->quit. */
void loop(struct ctx *c);

/* link_closed() - the guest link's peer went away: exit (ns mode, or vm
 * mode with --one-off) or wait for the next client (vm mode). */
void link_closed(struct ctx *c);

/* stats_log() - log traffic and non-zero drop counters (SIGUSR1, exit). */
void stats_log(const struct ctx *c);

#endif /* FERRY_H */
