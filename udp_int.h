/* udp_int.h - what udp.c (flows, the guest path) and udp_fwd.c
 * (forwarded ports, the loopback path) share; private to those two. */
#ifndef FERRY_UDP_INT_H
#define FERRY_UDP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ferry.h"

#define UDP_RECV_ROUNDS	4	/* recvmmsg batches per event */
#define UDP_ERR_ROUNDS	16	/* error queue entries per event */
#define UDP_SPLICE_SLOT	65536	/* loopback path: one datagram, any size */

struct udp_flow {
	int sock;			/* own socket, or the shared listener */
	bool shared;			/* sock is a forwarded-port socket */
	bool replied;			/* the host side has answered */
	bool queued;			/* in c->udp.queued[] this batch */
	bool splice;			/* loopback path: sock is our own socket
					 * on the far side, lsock the listener */
	bool no_gso;			/* a UDP_SEGMENT send failed: one
					 * datagram per message from now on */
	bool inbound;			/* a -u client's: on lru_head[1] */
	uint8_t mkind;			/* enum mcast_kind: to a group or a
					 * broadcast, sock unconnected */
	uint8_t ttl;			/* TTL / hop limit the socket sends
					 * with (UDP_TTL_HOST until the guest
					 * asks for another) */
	uint16_t hport;			/* mkind: sock's port on the host */
	uint16_t peer_port;
	union inany peer;		/* host side: destination / client */
	union inany local;		/* shared: address the client used */
	int lsock;			/* splice: the forwarded-port socket */
	int64_t last_ms;		/* last activity (c->now, ms) */
	uint32_t lru_prev, lru_next;
	uint32_t pend_head, pend_tail;	/* datagrams queued this batch */
};

#define UDP_FLOW(fl)	FLOW_PRIV(fl, struct udp_flow)

#define UDP_RX_NONE	SIZE_MAX

/* The TTL / hop limit a new socket sends with (Linux's default for both,
 * net.ipv4.ip_default_ttl and hop_limit): a guest using it costs no
 * setsockopt(). */
#define UDP_TTL_HOST	64

/* One recvmmsg() batch received in place into guest frames. */
struct udp_rxb {
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	uint8_t *frames[UDP_BATCH];
	size_t lens[UDP_BATCH];		/* payload, then frame lengths */
	struct flow_key keys[UDP_BATCH];	/* guest side of each one's flow */
	sockaddr_inany names[UDP_BATCH];
	bool group;			/* to a group the guest joined */
	union {
		uint8_t b[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
			  CMSG_SPACE(sizeof(int))];	/* pktinfo, TTL */
		struct cmsghdr align;
	} cb[UDP_BATCH];
};

static inline int64_t udp_now_ms(const struct ctx *c)
{
	return (int64_t)c->now.tv_sec * 1000 + c->now.tv_nsec / 1000000;
}

/* --- udp.c ------------------------------------------------------------ */

/* udp_flow_alloc() - a fresh flow (sock -1), evicting the least recently
 * active one at the limit; inbound: a -u client's, within half the limit
 * (the inbound client idle longest evicted beyond). NULL if impossible. */
struct flow *udp_flow_alloc(struct ctx *c, bool inbound);
/* udp_flow_free() - close its own socket (not a shared one), release. */
void udp_flow_free(struct ctx *c, struct flow *fl);
/* udp_flow_touch() - traffic on fl: the most recently active flow. */
void udp_flow_touch(struct ctx *c, struct flow *fl);
/* udp_socket() - a non-blocking UDP socket bound to a:port (see udp.c),
 * flags UDP_SOCK_*. Returns the fd or -errno. */
#define UDP_SOCK_MAY_MOVE	1	/* port taken: any port will do */
#define UDP_SOCK_FREEBIND	2	/* a need not be the host's (yet) */
#define UDP_SOCK_REUSE		4	/* SO_REUSEADDR: a group's port */
int udp_socket(const union inany *a, uint16_t port, unsigned int flags,
	       const char *ifname);
/* udp_sock_setup() - buffer sizes, error queueing and V6ONLY on a fresh
 * UDP socket fd of family v6. Returns 0 or -errno. */
int udp_sock_setup(int fd, bool v6);
/* udp_send_all() - sendmmsg() mm[0, n) on fd, retrying partial sends and
 * errors that only report an earlier ICMP error; the rest is dropped and
 * counted (DROP_SOCKET_ERROR), one per datagram (see udp.c for messages
 * carrying several with UDP_SEGMENT, and gso_off). */
void udp_send_all(struct ctx *c, int fd, struct mmsghdr *mm, unsigned int n,
		  bool *gso_off);
/* udp_pktinfo_set() - control message asking for source address src;
 * returns its length (0: src unspecified, nothing to ask). */
size_t udp_pktinfo_set(uint8_t *cbuf, size_t size, const union inany *src);
/* udp_rxb_slot() - point slot i of b at len bytes at buf, with room for
 * the sender's address and pktinfo when meta. */
void udp_rxb_slot(struct udp_rxb *b, unsigned int i, uint8_t *buf,
		  size_t len, bool meta);
/* udp_rxb_recv() - receive into reserved guest frames (see udp.c). */
unsigned int udp_rxb_recv(struct ctx *c, int fd, bool v6, bool meta,
			  struct udp_rxb *b, bool *full);
/* udp_frames_commit() - received datagrams to the guest (see udp.c). */
void udp_frames_commit(struct ctx *c, struct udp_rxb *b, unsigned int n,
		       bool v6);
/* udp_err_to_guest() - socket error e about a datagram of fl's guest:
 * ICMP error to the guest (see udp.c). */
struct icmp_err;
void udp_err_to_guest(struct ctx *c, struct flow *fl,
		      const struct icmp_err *e);

/* udp_mcast_ports() - set in bits (FWD_BITMAP_WORDS words) the host
 * ports ferry's multicast sockets hold, unconnected: "auto" must not
 * take them for a service's (udp_fwd.c). */
void udp_mcast_ports(const struct ctx *c, uint64_t *bits);

/* --- udp_fwd.c ------------------------------------------------------- */

/* udp_listen_handler() - event on a forwarded-port socket. */
void udp_listen_handler(struct ctx *c, union eref ref, uint32_t events);
/* udp_splice_handler() - event on a loopback-path flow's own socket. */
void udp_splice_handler(struct ctx *c, struct flow *fl, uint32_t events);
/* udp_client_flow() - the guest flow of the client of -u port port
 * (socket fd) that error e's failed datagram went to, NULL if none (or
 * the loopback path's): a lookup by the guest-side key, which the
 * client's address and port give (the host-side key would need the
 * local address the client used, which the error does not tell), so a
 * peer forging errors costs one hash lookup each, whatever the number
 * of flows. */
struct flow *udp_client_flow(struct ctx *c, int fd, uint16_t port,
			     const struct icmp_err *e);
/* udp_fwd_timer() - auto forwarding: rescan when due; returns the ms
 * until the next scan (INT64_MAX: none). */
int64_t udp_fwd_timer(struct ctx *c);

#endif /* FERRY_UDP_INT_H */
