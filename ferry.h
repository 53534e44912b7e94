/* ferry.h - the execution context: one struct ctx holds all run-time state
 * (configuration, event loop, guest link, counters, per-protocol tables).
 * Every function that needs state takes a struct ctx *; there are no other
 * mutable globals besides the log sink (log.c).
 *
 * Event loop references (union eref) and registration: ev.h.
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
#include "ev.h"
#include "flow.h"
#include "tap.h"
#include "icmp.h"
#include "isolate.h"
#include "ndp.h"
#include "neigh.h"
#include "priv.h"
#include "tcp.h"
#include "tcp_fwd.h"
#include "udp.h"
#include "util.h"

struct ctl_state;

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
	struct unix_file sock_file;	/* vm mode: the listening socket's
					 * file, removed at exit (util.h) */
	struct unix_file ctl_file;	/* -c: the control socket's (ctl.c) */
	int ns_user_fd, ns_net_fd;	/* ns mode: guest namespaces (ns_call),
					 * user -1: not entered; valid once
					 * ns_ready */
	bool ns_ready;			/* ns_start() set the namespace up */
	struct ns_agent *ns_agent;	/* resident helper running ns_call()
					 * jobs (nsexec.c), or NULL */
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
	struct neigh_table neigh;	/* the host's LAN neighbours (neigh.c) */
	struct icmp_state icmp;
	struct tcp_state tcp;
	struct tcp_fwd_state tcp_fwd;
#ifdef FERRY_TEST
	struct fault_state fault;	/* --fault (fault.c) */
#endif
	struct udp_state udp;
	struct mig_ctx *mig;		/* live migration (migrate.c), NULL:
					 * not vhost-user */
	struct repair_state *repair;	/* --repair-path (repair.c), NULL:
					 * none */
	struct ctl_state *ctl;		/* -c: the control socket (ctl.c),
					 * NULL without */
};

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

/* link_close_pending() - the teardown of a link the link layer found dead
 * (tap_link_down(), link.closing): link_closed(), once; nothing if none.
 * The loop calls it after each event, the timers and the flush. */
void link_close_pending(struct ctx *c);

/* stats_log() - log traffic and non-zero drop counters (SIGUSR1, exit). */
void stats_log(const struct ctx *c);
/* stats_lines() - the same lines, without the "stats: " prefix, each
 * handed to out (the control socket's counters reply). */
void stats_lines(const struct ctx *c,
		 void (*out)(void *arg, const char *line), void *arg);

#endif /* FERRY_H */
