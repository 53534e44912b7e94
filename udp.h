/* udp.h - see udp.c: UDP flows, forwarded UDP ports. */
#ifndef FERRY_UDP_H
#define FERRY_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "drop.h"
#include "fwd.h"
#include "mcast.h"
#include "tap.h"

struct ctx;
struct pkt;

#define UDP_MAX_FLOWS_DEFAULT	4096
#define UDP_TIMEOUT_MS		30000	/* no reply seen yet */
#define UDP_TIMEOUT_REPLIED_MS	180000	/* replies seen ("assured") */
#define UDP_BATCH		32	/* datagrams per recvmmsg/sendmmsg */
#define UDP_SCRATCH_SIZE	65536	/* error queue payloads */

#define UDP_NS_POOL		16	/* namespace sockets made per helper task */

/* Forwarded-port listeners of one direction (udp_fwd.c). */
enum { UDP_FWD_IN = 0, UDP_FWD_OUT = 1 };	/* -u (host), -U (namespace) */
struct udp_fwd_dir {
	uint64_t bound[FWD_BITMAP_WORDS];	/* ports with a listener open */
	struct fwd_retry retry;		/* ports with a listener to retry */
	int *fds;		/* listener fd + 1 per port * 2 + v6 */
	int scan_fd[2];		/* auto: the other side's /proc/net/udp[6] */
};

/* A guest datagram waiting for udp_input_done(): payload in the rx batch. */
struct udp_pend {
	const uint8_t *data;
	uint32_t len;
	uint32_t next;			/* next of the same flow, or FLOW_NONE */
};

/* Control data of one message udp_flow_send() sends: the segment size,
 * then pktinfo. Kept in the context, zeroed with it once: the cmsg
 * headers' padding is never written, and sendmmsg() hands all of
 * msg_controllen to the kernel (uninitialised bytes under valgrind). */
union udp_cmsg {
	uint8_t b[CMSG_SPACE(sizeof(uint16_t)) +
		  CMSG_SPACE(sizeof(struct in6_pktinfo))];
	struct cmsghdr align;
};

struct udp_state {
	bool ready;			/* udp_init() ran */
	uint32_t max_flows;		/* configured, capped by RLIMIT_NOFILE */
	uint32_t timeout_ms, timeout_replied_ms;
	/* Flows, least recently active first: [0] the guest's own, [1]
	 * those of -u clients (struct udp_flow's inbound). */
	uint32_t lru_head[2], lru_tail[2];
	uint32_t inbound;		/* flows on lru_head[1] */
	uint8_t *scratch;		/* UDP_SCRATCH_SIZE bytes */
	unsigned int listeners;		/* forwarded-port sockets open */

	/* Forwarded ports, auto scanning, loopback path (udp_fwd.c) */
	struct udp_fwd_dir fwd[2];		/* [UDP_FWD_IN/OUT] */
	uint32_t scan_ms;			/* auto: period, 0: no auto */
	int64_t scan_due_ms;
	uint8_t *splice_buf;			/* UDP_BATCH full-size slots */
	int ns_pool[2][UDP_NS_POOL];		/* [v6]: sockets made in the
						 * guest namespace, unused */
	unsigned int ns_pool_n[2];

	/* Counters (statistics dump, tests) */
	uint64_t flows_created, flows_evicted, flows_expired;
	uint64_t inbound_evicted;	/* -u clients' flows at their half */
	uint64_t icmp_to_guest, spliced;

	/* Guest datagrams of the current input batch, chained per flow. */
	unsigned int npend, nqueued;
	struct udp_pend pend[RX_FRAMES_MAX];
	uint32_t queued[RX_FRAMES_MAX];	/* flows with pending datagrams */
	union udp_cmsg send_cb[UDP_BATCH];	/* udp_flow_send() */

	struct mcast_state mc;		/* groups the guest joined (mcast.c) */
};

/* udp_init() - limits, forwarded-port sockets (-u). Start-up only. */
void udp_init(struct ctx *c);
/* udp_input() - one validated UDP datagram from the guest: find or create
 * its flow and queue it for udp_input_done(). */
enum drop_reason udp_input(struct ctx *c, const struct pkt *p);
/* udp_each_datagram() - hand fn(c, d) each datagram the validated UDP
 * frame p stands for: p itself, or for a UDP GSO frame (USO) a copy of p
 * per gso_size bytes of payload (the last maybe shorter), GSO cleared.
 * fn's drop reasons are counted here, but for the last datagram's, which
 * is returned (the caller counts it, as for any handler). */
enum drop_reason udp_each_datagram(struct ctx *c, const struct pkt *p,
				   enum drop_reason (*fn)(struct ctx *c,
							  const struct pkt *d));
/* udp_input_done() - end of an input batch: send the queued datagrams,
 * one sendmmsg() per flow. */
void udp_input_done(struct ctx *c);
/* udp_sock_handler() - epoll event on a UDP flow socket (EREF_UDP) or a
 * forwarded-port socket (EREF_UDP_LISTEN). */
void udp_sock_handler(struct ctx *c, uint64_t ref, uint32_t events);
/* udp_timer() - expire idle flows. */
void udp_timer(struct ctx *c);
/* udp_fwd_stop() - drain before exit (drain.c): close every -u and -U
 * socket and their clients' flows, for good (no "auto" scans, no
 * retries any more). */
void udp_fwd_stop(struct ctx *c);
/* udp_listen_init() - open the host sockets of the ports forwarded by -u
 * (c->conf.udp_in), per family enabled and allowed by the spec's bind
 * address; none with --no-udp. Called by udp_init(); tests call it
 * after filling a spec. */
void udp_listen_init(struct ctx *c);
/* udp_ns_init() - namespace mode, after ns_start(): -U listeners in the
 * guest namespace, "auto" scanning (-u/-U auto), the loopback path
 * (nothing with --no-udp). */
void udp_ns_init(struct ctx *c);
/* udp_mcast_learn() - the guest joined group g: hear it on the ports
 * its flows to g send to too (mcast_port_seen()). */
void udp_mcast_learn(struct ctx *c, const union inany *g);
/* udp_fwd_ports_open() - run time (the control socket): the sockets of
 * direction dir (UDP_FWD_IN/OUT) the spec asks for now for the ports in
 * map (one already open, say by "auto", is taken as it is), all or none:
 * on the first failure those this call opened are closed and -errno
 * returned with that port in *bad. */
int udp_fwd_ports_open(struct ctx *c, unsigned int dir, const uint64_t *map,
		       uint16_t *bad);
/* udp_fwd_ports_close() - close dir's sockets of the ports in map in each
 * family the spec no longer asks for, with the flows of their clients
 * (UDP has no connection to keep). */
void udp_fwd_ports_close(struct ctx *c, unsigned int dir, const uint64_t *map);
/* udp_close_all() - close and free every UDP flow (shutdown, tests). */
void udp_close_all(struct ctx *c);

#endif /* FERRY_UDP_H */
