/* udp.c - UDP translation between guest datagrams and host sockets.
 *
 * Theory of operation
 *
 * Flows. Every UDP conversation is a FLOW_UDP entry in the shared flow
 * table, found by its guest-side key (guest address and port, remote
 * address and port as the guest's frames carry them). Two kinds:
 *
 *  - outbound (the guest spoke first): the flow owns a host socket bound
 *    to the guest's source port when that port is free on the host (so
 *    port-sensitive protocols keep working), else to an ephemeral port,
 *    and connected to the destination as nat_outbound_l4() translates it
 *    (gateway -> host loopback, --dns-forward -> --dns-host, ...).
 *    Replies arrive on that socket; the kernel filters everything else.
 *  - inbound (-u forwarded ports): one socket per forwarded port and
 *    family is shared by all its clients. A datagram from a new client
 *    creates a flow keyed on the host side too (client address and port,
 *    the local address it was sent to, the port); the guest sees it from
 *    the client's address (host loopback shown as the gateway) to the
 *    target port. The guest's replies go back through the shared socket,
 *    from the forwarded port and the address the client used.
 *    (Forwarded-port sockets, -U, "auto" and the loopback path, whose
 *    flows never reach the guest, live in udp_fwd.c.)
 *
 * Data path, without allocation and with each payload copied once:
 *  - guest -> host: udp_input() queues datagrams per flow (payload
 *    pointers into the rx batch, valid until the batch ends) and
 *    udp_input_done() sends each flow's queue with one sendmmsg(), each
 *    message a run of equal-sized datagrams as one UDP_SEGMENT send (one
 *    pass through the host's stack per run; a socket that refuses it,
 *    e.g. on a route whose MTU the datagrams exceed, falls back to one
 *    datagram per message for good). A
 *    UDP GSO frame (USO, from a guest socket using UDP_SEGMENT) is
 *    queued as the datagrams it stands for, one per gso_size bytes;
 *    DHCP and DHCPv6 get it the same way, one message per datagram
 *    (udp_each_datagram()).
 *  - host -> guest: on readability, recvmmsg() receives up to UDP_BATCH
 *    datagrams straight into frames reserved in the guest tx batch
 *    (tap_tx_reserve_many()), each slot sized for the largest datagram
 *    the guest MTU allows; Ethernet, IP and UDP headers are then written
 *    in front of each payload in place. Datagrams larger than the guest
 *    MTU allows are dropped (DROP_UDP_TOO_BIG): ferry does not fragment.
 *    On a tap with USO, consecutive datagrams of one flow in a batch are
 *    moved together behind the first one's headers and go as one UDP
 *    GSO frame (udp_frames_commit()): one write() to the tap for up to
 *    UDP_BATCH datagrams, which the guest's kernel cuts apart again.
 *
 * Limits. Flows expire after UDP_TIMEOUT_MS without traffic, or
 * UDP_TIMEOUT_REPLIED_MS once the host side has answered (like conntrack's
 * unreplied/assured UDP timeouts). Their number is capped (default
 * UDP_MAX_FLOWS_DEFAULT, and within half of the fd limit less 64, since
 * each outbound flow holds a socket: fd_budget(), shared with ICMP echo
 * flows, which take icmp_flow_cap() of it; fd_limit() raises the soft
 * RLIMIT_NOFILE to the hard one, as for TCP's budget): a new flow beyond
 * the cap evicts the least recently active flow (LRU lists through the
 * flows) and counts the eviction, so a flood of destinations costs old
 * flows, never file descriptors beyond the limit. Flows of forwarded-port
 * clients (-u: remote senders choose their source ports, even spoof
 * them) have their own LRU list and at most half the cap: a new one
 * beyond that evicts the client idle longest (counted apart), never the
 * guest's own flows (its DNS, QUIC), which keep the other half at least.
 *
 * ICMP errors. Flow sockets set IP_RECVERR / IPV6_RECVERR; queued errors
 * (EPOLLERR) become ICMP/ICMPv6 errors to the guest about the datagram it
 * sent (icmp_err.c), so its applications see ECONNREFUSED etc. at once.
 * On a forwarded port's shared socket (-u) an error is about one client:
 * the failed datagram's destination (the error's address) names the
 * client, whose flow tells which of the guest's replies it was about
 * (udp_fwd.c).
 *
 * Multicast and broadcast: a guest datagram to a group or a broadcast
 * address (DHCP's own broadcast is the DHCP server's, handled first)
 * makes a flow like any other, keyed on the group as the guest sent it,
 * whose socket mcast.c prepares (interface, TTL, loop, SO_BROADCAST) and
 * which stays unconnected: datagrams go with sendmmsg() to the group,
 * and answers come from any sender of the network to the guest's port,
 * each one to the guest from its own sender (udp_flow_recv()). The
 * guest's TTL is set on the socket when it changes (the last datagram's
 * of a batch applies to the batch). With --no-multicast, and for what
 * mcast_out_dst() refuses, they are dropped as DROP_MCAST_BCAST.
 *
 * Bad input: zero ports, sources the guest does not own, inconsistent
 * lengths and wrong checksums (the last two refused by pkt_parse()) are
 * dropped and counted, never forwarded.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/udp.h>

#include "checksum.h"
#include "ferry.h"
#include "icmp_err.h"
#include "log.h"
#include "mcast.h"
#include "nat.h"
#include "pkt.h"
#include "udp_int.h"
#include "util.h"
#include "wire.h"

/* seccomp(all): bind close connect getsockname recvmmsg sendmmsg setsockopt
 *   (UDP flows' host sockets) */
/* seccomp(all): socket(0=AF_INET) socket(0=AF_INET6) */
/* seccomp(setup): mmap */

#define UDP_PAYLOAD_MAX4	(65535 - IP4_HLEN - UDP_HLEN)	/* 65507 */
#define UDP_PAYLOAD_MAX6	(65535 - UDP_HLEN)		/* 65527 */
#define UDP_SOCK_BUF		(4 << 20)	/* SO_RCVBUF/SO_SNDBUF asked */
#define UDP_GSO_SEGS		64	/* datagrams per UDP_SEGMENT send (the
					 * kernel's UDP_MAX_SEGMENTS: 64 before
					 * Linux 5.x, more since) */

/* payload_max() - largest datagram payload the guest link can carry. */
static size_t payload_max(const struct ctx *c, bool v6)
{
	size_t mtu = c->conf.mtu ? c->conf.mtu : 65520;
	size_t hdr = (v6 ? IP6_HLEN : IP4_HLEN) + UDP_HLEN;

	if (mtu <= hdr)
		return 0;
	return MIN(mtu - hdr, (size_t)(v6 ? UDP_PAYLOAD_MAX6 : UDP_PAYLOAD_MAX4));
}

/* frame_hdrlen() - Ethernet, IP and UDP header bytes of a frame. */
static size_t frame_hdrlen(bool v6)
{
	return ETH_HLEN_ + (v6 ? IP6_HLEN : IP4_HLEN) + UDP_HLEN;
}

/* --- LRU list of flows ----------------------------------------------- */

/* lru_unlink() - take flow fl out of its LRU list. */
static void lru_unlink(struct ctx *c, struct flow *fl)
{
	struct udp_flow *u = UDP_FLOW(fl);
	struct flowtab *ft = &c->flows;

	if (u->lru_prev != FLOW_NONE)
		UDP_FLOW(&ft->slots[u->lru_prev])->lru_next = u->lru_next;
	else
		c->udp.lru_head[u->inbound] = u->lru_next;
	if (u->lru_next != FLOW_NONE)
		UDP_FLOW(&ft->slots[u->lru_next])->lru_prev = u->lru_prev;
	else
		c->udp.lru_tail[u->inbound] = u->lru_prev;
	u->lru_prev = u->lru_next = FLOW_NONE;
}

/* lru_append() - put flow fl at the tail (most recently active) of its
 * list. */
static void lru_append(struct ctx *c, struct flow *fl)
{
	struct udp_flow *u = UDP_FLOW(fl);
	uint32_t idx = flow_idx(&c->flows, fl);
	uint32_t *tail = &c->udp.lru_tail[u->inbound];

	u->lru_prev = *tail;
	u->lru_next = FLOW_NONE;
	if (*tail != FLOW_NONE)
		UDP_FLOW(&c->flows.slots[*tail])->lru_next = idx;
	else
		c->udp.lru_head[u->inbound] = idx;
	*tail = idx;
}

/* udp_flow_touch() - traffic on fl: now the most recently active flow. */
void udp_flow_touch(struct ctx *c, struct flow *fl)
{
	UDP_FLOW(fl)->last_ms = udp_now_ms(c);
	if (c->udp.lru_tail[UDP_FLOW(fl)->inbound] != flow_idx(&c->flows, fl)) {
		lru_unlink(c, fl);
		lru_append(c, fl);
	}
}

/* --- flow life cycle -------------------------------------------------- */

/* pend_discard() - drop fl's datagrams still queued in this batch. */
static void pend_discard(struct ctx *c, struct flow *fl)
{
	struct udp_flow *u = UDP_FLOW(fl);
	uint32_t e, idx = flow_idx(&c->flows, fl);
	unsigned int i;

	for (e = u->pend_head; e != FLOW_NONE; e = c->udp.pend[e].next)
		drop(c, DROP_FLOW_TABLE_FULL);
	u->pend_head = u->pend_tail = FLOW_NONE;
	for (i = 0; i < c->udp.nqueued; i++)
		if (c->udp.queued[i] == idx)
			c->udp.queued[i] = FLOW_NONE;
	u->queued = false;
}

/* udp_flow_free() - close (unless shared) and release a flow. */
void udp_flow_free(struct ctx *c, struct flow *fl)
{
	struct udp_flow *u = UDP_FLOW(fl);

	if (u->queued)
		pend_discard(c, fl);
	if (!u->shared && u->sock >= 0) {
		ep_del(c, u->sock);
		close(u->sock);
	}
	lru_unlink(c, fl);
	c->udp.inbound -= u->inbound;
	flow_free(&c->flows, fl);
}

/* udp_evict() - free the least recently active flow, of forwarded-port
 * clients only if inbound_only; false if none. */
static bool udp_evict(struct ctx *c, bool inbound_only)
{
	struct flow *g = flow_at(&c->flows, c->udp.lru_head[0]);
	struct flow *fl = flow_at(&c->flows, c->udp.lru_head[1]);

	if (!inbound_only && g &&
	    (!fl || UDP_FLOW(g)->last_ms <= UDP_FLOW(fl)->last_ms))
		fl = g;		/* the heads are each list's oldest */
	if (!fl)
		return false;
	c->udp.flows_evicted++;
	if (c->udp.flows_evicted == 1 ||
	    !(c->udp.flows_evicted & (c->udp.flows_evicted - 1)))
		info("udp: flow limit reached (%u): evicted %llu idle flows",
		     c->udp.max_flows,
		     (unsigned long long)c->udp.flows_evicted);
	udp_flow_free(c, fl);
	return true;
}

/* udp_flow_alloc() - a fresh flow, evicting the least recently active one
 * when the UDP limit or the whole table is full, or for an inbound flow
 * the least recently active inbound one when they hold half the limit;
 * NULL if impossible. */
struct flow *udp_flow_alloc(struct ctx *c, bool inbound)
{
	struct flow *fl;
	struct udp_flow *u;

	if (inbound && c->udp.inbound >= MAX(c->udp.max_flows / 2, 1u)) {
		if (!udp_evict(c, true))
			return NULL;
		c->udp.inbound_evicted++;
	} else if (c->flows.count[FLOW_UDP] >= c->udp.max_flows &&
		   !udp_evict(c, false)) {
		return NULL;
	}
	fl = flow_alloc(&c->flows, FLOW_UDP);
	if (!fl && udp_evict(c, false))
		fl = flow_alloc(&c->flows, FLOW_UDP);
	if (!fl)
		return NULL;
	u = UDP_FLOW(fl);
	u->sock = u->lsock = -1;
	u->pend_head = u->pend_tail = FLOW_NONE;
	u->lru_prev = u->lru_next = FLOW_NONE;
	u->last_ms = udp_now_ms(c);
	u->ttl = UDP_TTL_HOST;
	u->inbound = inbound;
	c->udp.inbound += inbound;
	lru_append(c, fl);
	c->udp.flows_created++;
	timer_request(c, c->udp.timeout_ms);
	return fl;
}

/* --- sockets ----------------------------------------------------------- */

int udp_sock_setup(int fd, bool v6)
{
	int one = 1, bufsz = UDP_SOCK_BUF;

	if (v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* Room for bursts while the loop writes frames to the guest (the
	 * kernel caps this at net.core.[rw]mem_max). Best effort. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	/* Only the groups a socket joined itself (none but mcast.c's): a
	 * port's other sockets would hear every group the host joined.
	 * Best effort (IPV6_MULTICAST_ALL is Linux 4.20's). */
	setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		   v6 ? IPV6_MULTICAST_ALL : IP_MULTICAST_ALL, &(int){ 0 },
		   sizeof(int));
	if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_RECVERR : IP_RECVERR, &one, sizeof(one)))
		return -errno;
	return 0;
}

/* udp_socket() - a non-blocking UDP socket of a's family with error
 * queueing on, bound to interface ifname if any and to a (any address
 * when unspecified) and port, falling back to an ephemeral port when
 * port is taken and flags has UDP_SOCK_MAY_MOVE; UDP_SOCK_FREEBIND: a
 * may be an address the host does not have (yet). Returns the fd or
 * -errno. */
int udp_socket(const union inany *a, uint16_t port, unsigned int flags,
	       const char *ifname)
{
	bool v6 = !inany_is4(a);
	sockaddr_inany sa;
	socklen_t sl;
	int fd, rc;

	fd = socket(v6 ? AF_INET6 : AF_INET,
		    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	if ((rc = udp_sock_setup(fd, v6)))
		goto out;
	if ((rc = sock_bind_dev(fd, ifname)))
		goto out;
	if ((flags & UDP_SOCK_FREEBIND) && (rc = sock_freebind(fd, v6)))
		goto out;
	if ((flags & UDP_SOCK_REUSE) &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int)))
		goto fail;
	sl = inany_to_sa(&sa, a, port);
	rc = bind(fd, (struct sockaddr *)&sa, sl);
	if (rc && (flags & UDP_SOCK_MAY_MOVE) && port && (errno == EADDRINUSE || errno == EACCES)) {
		sl = inany_to_sa(&sa, a, 0);
		rc = bind(fd, (struct sockaddr *)&sa, sl);
	}
	if (rc)
		goto fail;
	return fd;
fail:
	rc = -errno;
out:
	close(fd);
	return rc;
}

/* out_bind_addr() - the host address outbound sockets bind to (-o). */
static void out_bind_addr(const struct ctx *c, bool v6, union inany *a)
{
	if (v6)
		inany_from6(a, &c->conf.ip6.outbound);
	else
		inany_from4(a, c->conf.ip4.outbound);
}

/* sock_port() - the local port socket fd is bound to, 0 if unknown. */
static uint16_t sock_port(int fd)
{
	sockaddr_inany sa;
	socklen_t sl = sizeof(sa);
	union inany a;
	uint16_t port = 0;

	if (!getsockname(fd, (struct sockaddr *)&sa, &sl))
		inany_from_sa(&sa, &a, &port);
	return port;
}

/* udp_mcast_ports() - see udp_int.h: the multicast flows' host ports,
 * then the groups'. */
void udp_mcast_ports(const struct ctx *c, uint64_t *bits)
{
	const struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_UDP); fl;
	     fl = flow_next(&c->flows, fl)) {
		const struct udp_flow *u = UDP_FLOW(fl);

		if (u->mkind && u->hport)
			bits[u->hport / 64] |= 1ULL << (u->hport % 64);
	}
	mcast_ports(c, bits);
}

/* udp_mcast_learn() - see udp.h: the ports of the guest's flows to
 * group g (a datagram it sent just before its report came). */
void udp_mcast_learn(struct ctx *c, const union inany *g)
{
	const struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_UDP); fl;
	     fl = flow_next(&c->flows, fl)) {
		const struct udp_flow *u = UDP_FLOW(fl);

		if (u->mkind == MCAST_GROUP && inany_eq(&u->peer, g))
			mcast_port_seen(c, g, u->peer_port);
	}
}

/* udp_flow_out() - a new outbound flow for guest datagram p with key k.
 * Returns DROP_NONE with *out set, or why it cannot exist. */
static enum drop_reason udp_flow_out(struct ctx *c, const struct pkt *p,
				     const struct flow_key *k,
				     struct flow **out)
{
	union eref ref = { .type = EREF_UDP };
	union inany dst = k->b, local;
	enum mcast_kind mk;
	sockaddr_inany sa;
	struct udp_flow *u;
	struct flow *fl;
	socklen_t sl;
	int fd;

	mk = mcast_out_dst(c, &dst);
	if (mk == MCAST_REFUSED)
		return DROP_MCAST_BCAST;
	if (mk == MCAST_NONE && !nat_outbound_l4(c, &dst, k->pb))
		return p->is_v6 ? DROP_IP6_DST : DROP_IP4_DST;
	out_bind_addr(c, p->is_v6, &local);
	fl = udp_flow_alloc(c, false);
	if (!fl)
		return DROP_FLOW_TABLE_FULL;
	u = UDP_FLOW(fl);
	fd = udp_socket(&local, k->pa, UDP_SOCK_MAY_MOVE |
			(mk != MCAST_NONE ? UDP_SOCK_REUSE : 0),
			p->is_v6 ? c->conf.outbound_if6 : c->conf.outbound_if4);
	if (fd < 0)
		goto fail;
	u->sock = fd;
	u->peer = dst;
	u->peer_port = k->pb;
	u->mkind = (uint8_t)mk;
	/* a group's or broadcast socket gets the guest's TTL now
	 * (mcast_out_sock()), a unicast one on its first datagram
	 * (udp_ttl_follow()) */
	u->ttl = mk != MCAST_NONE ? p->ttl : UDP_TTL_HOST;
	sl = inany_to_sa(&sa, &dst, k->pb);
	if (mk != MCAST_NONE) {		/* unconnected: answers from anyone */
		if (mcast_out_sock(c, fd, p->is_v6, mk, p->ttl))
			goto fail;
		u->hport = sock_port(fd);
	} else if (connect(fd, (struct sockaddr *)&sa, sl) &&
		   errno != EINPROGRESS) {
		debug("udp: connect: %s", strerror(errno));
		goto fail;
	}
	ref.idx = flow_idx(&c->flows, fl);
	if (ep_add(c, fd, EPOLLIN, ref))
		goto fail;
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, k);
	*out = fl;
	return DROP_NONE;
fail:
	udp_flow_free(c, fl);
	return DROP_SOCKET_ERROR;
}

/* --- guest -> host ------------------------------------------------------ */

/* src_owned() - may the guest send from this source address? Its
 * configured address, or (IPv6) a link-local or same-prefix address
 * (SLAAC, privacy addresses); anything when none is configured. */
static bool src_owned(const struct ctx *c, const struct pkt *p)
{
	if (!p->is_v6)
		return in4_is_unspec(&c->conf.ip4.addr) ||
		       in4_eq(&p->src4, &c->conf.ip4.addr);
	const struct conf_ip6 *ip = &c->conf.ip6;
	int i, bits = ip->prefix_len > 0 && ip->prefix_len <= 128
		      ? ip->prefix_len : 64;

	if (in6_is_unspec(&ip->addr) || IN6_IS_ADDR_LINKLOCAL(&p->src6))
		return true;
	for (i = 0; i < bits / 8; i++)
		if (p->src6.s6_addr[i] != ip->addr.s6_addr[i])
			return false;
	if (bits % 8) {
		uint8_t m = (uint8_t)(0xff << (8 - bits % 8));

		return (p->src6.s6_addr[i] & m) == (ip->addr.s6_addr[i] & m);
	}
	return true;
}

/* udp_queue() - hold payload for fl until udp_input_done(). */
static void udp_queue(struct ctx *c, struct flow *fl, const uint8_t *data,
		      size_t len)
{
	struct udp_flow *u = UDP_FLOW(fl);
	uint32_t e;

	if (c->udp.npend == RX_FRAMES_MAX || c->udp.nqueued == RX_FRAMES_MAX)
		udp_input_done(c);	/* a batch of USO frames: send now */
	e = c->udp.npend++;
	c->udp.pend[e].data = data;
	c->udp.pend[e].len = (uint32_t)len;
	c->udp.pend[e].next = FLOW_NONE;
	if (u->pend_tail != FLOW_NONE)
		c->udp.pend[u->pend_tail].next = e;
	else
		u->pend_head = e;
	u->pend_tail = e;
	if (!u->queued) {
		u->queued = true;
		c->udp.queued[c->udp.nqueued++] = flow_idx(&c->flows, fl);
	}
}

static void udp_ttl_follow(struct ctx *c, struct flow *fl, uint8_t ttl);

enum drop_reason udp_input(struct ctx *c, const struct pkt *p)
{
	union inany src, dst;
	struct flow_key k;
	struct flow *fl;

	if (!c->udp.ready)
		return DROP_SERVICE_DISABLED;
	if (!p->udp.sport || !p->udp.dport)
		return DROP_L4_PORT_ZERO;
	if (p->is_v6) {
		inany_from6(&src, &p->src6);
		inany_from6(&dst, &p->dst6);
	} else {
		inany_from4(&src, p->src4);
		inany_from4(&dst, p->dst4);
	}
	flow_key_make(&k, IPPROTO_UDP, &src, p->udp.sport, &dst, p->udp.dport);
	fl = flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k);
	if (fl && fl->f.type != FLOW_UDP)
		return DROP_NO_FLOW;
	/* A flow's own guest address is the guest's (a -u forward's target
	 * address, fwd.h, is one); a new flow needs a source it owns. */
	if (!fl && !src_owned(c, p))
		return p->is_v6 ? DROP_IP6_SRC : DROP_IP4_SRC;
	if (!fl) {
		enum drop_reason r = udp_flow_out(c, p, &k, &fl);

		if (r != DROP_NONE)
			return r;
	}
	udp_flow_touch(c, fl);
	if (UDP_FLOW(fl)->mkind == MCAST_GROUP)
		mcast_port_seen(c, &dst, p->udp.dport);
	udp_ttl_follow(c, fl, p->ttl);
	if (p->gso == PKT_GSO_UDP && p->gso_size) {
		size_t off = 0, n;

		/* USO: the datagrams the guest's socket handed its kernel,
		 * gso_size bytes each, the last maybe shorter. */
		do {
			n = MIN((size_t)p->gso_size, p->payload_len - off);
			udp_queue(c, fl, p->payload + off, n);
			off += n;
		} while (off < p->payload_len);
		return DROP_NONE;
	}
	udp_queue(c, fl, p->payload, p->payload_len);
	return DROP_NONE;
}

enum drop_reason udp_each_datagram(struct ctx *c, const struct pkt *p,
				   enum drop_reason (*fn)(struct ctx *c,
							  const struct pkt *d))
{
	struct pkt d = *p;
	enum drop_reason r;
	size_t off = 0;

	if (p->gso != PKT_GSO_UDP || !p->gso_size)
		return fn(c, p);
	d.gso = PKT_GSO_NONE;
	d.gso_size = 0;
	for (;;) {
		d.payload = p->payload + off;
		d.payload_len = MIN((size_t)p->gso_size, p->payload_len - off);
		d.l4len = UDP_HLEN + d.payload_len;
		d.udp.len = (uint16_t)d.l4len;
		off += d.payload_len;
		r = fn(c, &d);
		if (off >= p->payload_len)
			return r;
		if (r != DROP_NONE)
			drop(c, r);
	}
}

/* udp_pktinfo_set() - ask for source address src on a sendmsg (shared
 * sockets answer from the address the client used). Returns the control
 * length, 0 when src is unspecified. */
size_t udp_pktinfo_set(uint8_t *cbuf, size_t size, const union inany *src)
{
	struct msghdr mh = { .msg_control = cbuf, .msg_controllen = size };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(cbuf, 0, size);
	if (inany_is4(src)) {
		struct in_pktinfo pi = { .ipi_spec_dst = src->v4m.a4 };

		if (in4_is_unspec(&src->v4m.a4))
			return 0;
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		return CMSG_SPACE(sizeof(pi));
	}
	struct in6_pktinfo pi6 = { .ipi6_addr = src->a6 };

	if (in6_is_unspec(&src->a6))
		return 0;
	cm->cmsg_level = IPPROTO_IPV6;
	cm->cmsg_type = IPV6_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof(pi6));
	memcpy(CMSG_DATA(cm), &pi6, sizeof(pi6));
	return CMSG_SPACE(sizeof(pi6));
}

/* gso_fallback() - a UDP_SEGMENT message the kernel refused (no
 * segmentation on that route, a segment beyond its MTU, an old kernel):
 * send its datagrams one per message, with its control data but the
 * segment size (the first control message, see udp_gso_msg()). */
static void gso_fallback(struct ctx *c, int fd, const struct msghdr *mh)
{
	struct mmsghdr one[UDP_GSO_SEGS];
	struct cmsghdr *seg = CMSG_FIRSTHDR(mh);
	size_t skip = CMSG_SPACE(sizeof(uint16_t));
	unsigned int k;

	for (k = 0; k < mh->msg_iovlen && k < UDP_GSO_SEGS; k++)
		one[k].msg_hdr = (struct msghdr){
			.msg_name = mh->msg_name, .msg_namelen = mh->msg_namelen,
			.msg_iov = &mh->msg_iov[k], .msg_iovlen = 1,
			.msg_control = mh->msg_controllen > skip
				       ? (uint8_t *)seg + skip : NULL,
			.msg_controllen = mh->msg_controllen > skip
					  ? mh->msg_controllen - skip : 0 };
	udp_send_all(c, fd, one, k, NULL);
}

/* udp_send_all() - see udp_int.h. A message of several datagrams (a
 * UDP_SEGMENT send built by udp_gso_msg(), which is only done when
 * gso_off is given) that the kernel refuses as such is sent again one
 * datagram at a time, and *gso_off is set so that the flow stops
 * trying. */
void udp_send_all(struct ctx *c, int fd, struct mmsghdr *mm, unsigned int n,
		  bool *gso_off)
{
	unsigned int i = 0, retry = 0;

	while (i < n) {
		int r = sendmmsg(fd, mm + i, n - i, MSG_DONTWAIT | MSG_NOSIGNAL);
		size_t k;

		if (r > 0) {
			i += (unsigned int)r;
			continue;
		}
		if (r < 0 && (errno == EINTR || send_error_reported(errno)) &&
		    retry++ < 2)
			continue;
		if (r < 0 && gso_off && mm[i].msg_hdr.msg_iovlen > 1 &&
		    (errno == EINVAL || errno == EIO || errno == EMSGSIZE ||
		     errno == ENOPROTOOPT)) {
			*gso_off = true;
			gso_fallback(c, fd, &mm[i++].msg_hdr);
			continue;
		}
		for (; i < n; i++)
			for (k = 0; k < mm[i].msg_hdr.msg_iovlen; k++)
				drop(c, DROP_SOCKET_ERROR);
	}
}

/* udp_gso_msg() - the datagrams from pend entry *e on of fl's queue that
 * one UDP_SEGMENT send can carry (unless gso: just one): up to
 * UDP_GSO_SEGS, the first one's size, not empty, the last maybe shorter,
 * within the largest datagram; their iovecs from iov (room for max).
 * The control data: the segment size (several datagrams only), then
 * pinfo (plen bytes). Advances *e; returns the iovecs used. */
static unsigned int udp_gso_msg(const struct ctx *c, uint32_t *e, bool gso,
				bool v6, struct iovec *iov, unsigned int max,
				union udp_cmsg *cb, const uint8_t *pinfo,
				size_t plen, struct msghdr *mh)
{
	size_t s = c->udp.pend[*e].len, tot = s;
	size_t cap = v6 ? UDP_PAYLOAD_MAX6 : UDP_PAYLOAD_MAX4;
	unsigned int k = 0, lim = MIN(max, (unsigned int)UDP_GSO_SEGS);
	size_t clen = 0, l;

	do {
		l = c->udp.pend[*e].len;
		iov[k].iov_base = (void *)c->udp.pend[*e].data;
		iov[k++].iov_len = l;
		*e = c->udp.pend[*e].next;
		if (k > 1 && l < s)
			break;
		if (*e == FLOW_NONE || !gso || !s)
			break;
		l = c->udp.pend[*e].len;
		tot += l;
	} while (k < lim && l && l <= s && tot <= cap);
	if (k > 1) {
		struct cmsghdr *cm = (struct cmsghdr *)cb->b;
		uint16_t seg = (uint16_t)s;

		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
		clen = CMSG_SPACE(sizeof(seg));
	}
	if (plen)
		memcpy(cb->b + clen, pinfo, plen);
	mh->msg_iov = iov;
	mh->msg_iovlen = k;
	mh->msg_control = clen + plen ? cb->b : NULL;
	mh->msg_controllen = clen + plen;
	return k;
}

/* udp_flow_send() - send fl's queued datagrams: up to UDP_BATCH messages
 * per sendmmsg(), each a run of datagrams as one UDP_SEGMENT send (the
 * host's kernel carries it as one packet as far as it can and cuts it
 * where it must: one pass through its stack for up to UDP_GSO_SEGS
 * datagrams) unless the flow's socket refused that once. */
static void udp_flow_send(struct ctx *c, struct flow *fl)
{
	struct udp_flow *u = UDP_FLOW(fl);
	bool v6 = !inany_is4(&u->peer);
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[RX_FRAMES_MAX];
	union udp_cmsg *cb = c->udp.send_cb;
	union {
		uint8_t b[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} pi;
	size_t plen = 0;
	sockaddr_inany sa;
	socklen_t sl = 0;
	uint32_t e = u->pend_head;

	if (u->shared || u->mkind)	/* unconnected: each one addressed */
		sl = inany_to_sa(&sa, &u->peer, u->peer_port);
	if (u->shared)
		plen = udp_pktinfo_set(pi.b, sizeof(pi.b), &u->local);
	while (e != FLOW_NONE) {
		unsigned int m = 0, ni = 0;

		for (; e != FLOW_NONE && m < UDP_BATCH && ni < RX_FRAMES_MAX;
		     m++) {
			mm[m].msg_hdr = (struct msghdr){
				.msg_name = sl ? &sa : NULL,
				.msg_namelen = sl };
			ni += udp_gso_msg(c, &e, !u->no_gso, v6, iov + ni,
					  RX_FRAMES_MAX - ni, &cb[m], pi.b,
					  plen, &mm[m].msg_hdr);
		}
		udp_send_all(c, u->sock, mm, m, &u->no_gso);
	}
	u->pend_head = u->pend_tail = FLOW_NONE;
	u->queued = false;
}

/* udp_ttl_follow() - make fl's socket send with the guest's TTL / hop
 * limit ttl (traceroute): one setsockopt() when it differs from the last
 * one the flow used, after sending what the flow queued with the old one
 * (to a group or a broadcast: the multicast TTL too, mcast_out_ttl()).
 * A forwarded port's shared socket keeps the host's (the option would
 * apply to all its clients); a TTL of 0 (never sent) is left alone. */
static void udp_ttl_follow(struct ctx *c, struct flow *fl, uint8_t ttl)
{
	struct udp_flow *u = UDP_FLOW(fl);
	bool v6 = !inany_is4(&u->peer);
	int v = ttl;

	if (ttl == u->ttl || !ttl || u->shared || u->splice || u->sock < 0)
		return;
	if (u->queued)
		udp_flow_send(c, fl);
	if (u->mkind ? mcast_out_ttl(u->sock, v6, u->mkind, ttl)
		     : setsockopt(u->sock, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
				  v6 ? IPV6_UNICAST_HOPS : IP_TTL, &v,
				  sizeof(v))) {
		debug("udp: TTL %u: %s", ttl, strerror(errno));
		return;
	}
	u->ttl = ttl;
}

void udp_input_done(struct ctx *c)
{
	unsigned int i;

	for (i = 0; i < c->udp.nqueued; i++) {
		struct flow *fl = flow_at(&c->flows, c->udp.queued[i]);

		if (fl && fl->f.type == FLOW_UDP && UDP_FLOW(fl)->queued)
			udp_flow_send(c, fl);
	}
	c->udp.nqueued = 0;
	c->udp.npend = 0;
}

/* --- host -> guest ------------------------------------------------------ */

/* udp_frame_hdrs() - Ethernet, IP and UDP headers in front of the plen
 * payload bytes already at f + frame_hdrlen(), from the remote to the
 * guest as key k (guest side) names them; the UDP checksum in full, or
 * when partial only the pseudo-header sum, which the guest's kernel
 * completes (NEEDS_CSUM). Returns the frame length. */
static size_t udp_frame_hdrs(const struct ctx *c, uint8_t *f,
			     const struct flow_key *k, size_t plen,
			     bool partial)
{
	bool v6 = !inany_is4(&k->a);
	size_t l4len = UDP_HLEN + plen;
	uint8_t *l3, *t;
	uint16_t sum;

	l3 = tap_eth_to_guest(c, f, v6 ? ETH_P_IPV6_ : ETH_P_IP_);
	if (v6)
		t = ip6_build(l3, &k->b.a6, &k->a.a6, IPPROTO_UDP, l4len, 64);
	else
		t = ip4_build(l3, k->b.v4m.a4, k->a.v4m.a4, IPPROTO_UDP, l4len,
			      0);
	udp_hdr_put(t, k->pb, k->pa, (uint16_t)l4len);
	if (partial) {
		uint32_t ps = v6 ? csum_pseudo6(&k->b.a6, &k->a.a6,
						IPPROTO_UDP, (uint32_t)l4len)
				 : csum_pseudo4(k->b.v4m.a4, k->a.v4m.a4,
						IPPROTO_UDP, (uint32_t)l4len);

		wr16(t + UDP_OFF_CSUM, (uint16_t)~csum_fold(ps));
		return (size_t)(t - f) + l4len;
	}
	sum = v6 ? csum_l4_6(&k->b.a6, &k->a.a6, IPPROTO_UDP, t, l4len)
		 : csum_l4_4(k->b.v4m.a4, k->a.v4m.a4, IPPROTO_UDP, t, l4len);
	wr16(t + UDP_OFF_CSUM, sum ? sum : 0xffff);
	return (size_t)(t - f) + l4len;
}

/* rx_ttl() - the TTL / hop limit control message of received message
 * mh, 0 when it has none. */
static uint8_t rx_ttl(const struct msghdr *mh)
{
	struct cmsghdr *cm;
	int v;

	for (cm = CMSG_FIRSTHDR(mh); cm;
	     cm = CMSG_NXTHDR((struct msghdr *)mh, cm)) {
		if ((cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TTL) ||
		    (cm->cmsg_level == IPPROTO_IPV6 &&
		     cm->cmsg_type == IPV6_HOPLIMIT)) {
			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			return (uint8_t)v;
		}
	}
	return 0;
}

/* group_frame_fix() - frame f (headers by udp_frame_hdrs()) carries a
 * datagram to one of the guest's groups: to the group's Ethernet
 * address, with the TTL / hop limit it arrived with (ttl 0: as built;
 * the IPv4 header checksum again). */
static void group_frame_fix(uint8_t *f, const union inany *g, uint8_t ttl)
{
	uint8_t *l3 = f + ETH_HLEN_;

	mcast_group_mac(g, f + ETH_OFF_DST);
	if (!ttl)
		return;
	if (!inany_is4(g)) {
		l3[IP6_OFF_HLIM] = ttl;
		return;
	}
	l3[IP4_OFF_TTL] = ttl;
	wr16(l3 + IP4_OFF_CSUM, 0);
	wr16(l3 + IP4_OFF_CSUM, csum(l3, IP4_HLEN));
}

/* uso_run() - on a USO link, append to the datagram of slot i (tot
 * payload bytes so far, the first one's size s) the payloads of the
 * slots after it that may share its GSO frame: same flow, not empty, of
 * size s, the last one possibly shorter (it ends the run), within an IP
 * packet's limit. Each is moved down behind the previous one, in place
 * (its source lies beyond the destination: slots are a full datagram
 * apart), and its slot emptied. Returns the slot after the run; *tot
 * grows by what was appended. */
static unsigned int uso_run(struct udp_rxb *b, unsigned int i, unsigned int n,
			    size_t hl, size_t cap, size_t *tot)
{
	size_t s = b->lens[i];
	unsigned int j = i + 1;

	while (s && j < n && b->lens[j] != UDP_RX_NONE && b->lens[j] &&
	       b->lens[j] <= s && *tot + b->lens[j] <= cap &&
	       !memcmp(&b->keys[j], &b->keys[i], sizeof(b->keys[i]))) {
		size_t l = b->lens[j];

		memmove(b->frames[i] + hl + *tot, b->frames[j] + hl, l);
		*tot += l;
		b->lens[j++] = 0;
		if (l < s)
			break;
	}
	return j;
}

/* udp_frames_commit() - queue the n datagrams udp_rxb_recv() put in b
 * (lens[i]: payload bytes, UDP_RX_NONE: no frame) as frames to the guest,
 * slot i from the flow whose guest-side key is keys[i]. With checksum
 * offload (and no capture, which wants full checksums) the UDP checksums
 * are left partial; with USO too, each run of datagrams uso_run() finds
 * becomes one GSO frame (gso_size: the run's first datagram), which the
 * guest's kernel splits back into the very same datagrams. */
void udp_frames_commit(struct ctx *c, struct udp_rxb *b, unsigned int n,
		       bool v6)
{
	bool partial = c->link.ops->vnet_hdr && c->link.tx_csum_partial &&
		       c->pcap_fd < 0;
	bool uso = partial && c->link.tx_uso;
	size_t hl = frame_hdrlen(v6);
	size_t cap = v6 ? UDP_PAYLOAD_MAX6 : UDP_PAYLOAD_MAX4;
	struct pkt_off offs[UDP_BATCH];
	unsigned int i, j;

	for (i = 0; i < n; i = j) {
		size_t tot = b->lens[i];

		j = i + 1;
		if (tot == UDP_RX_NONE) {
			b->lens[i] = 0;
			continue;
		}
		if (uso)
			j = uso_run(b, i, n, hl, cap, &tot);
		offs[i] = (struct pkt_off){
			.gso = uso ? PKT_GSO_UDP : PKT_GSO_NONE,
			.gso_size = (uint16_t)b->lens[i],
			.hdr_len = (uint16_t)hl, .csum_partial = true,
			.csum_start = (uint16_t)(hl - UDP_HLEN),
			.csum_off = UDP_OFF_CSUM,
		};
		b->lens[i] = udp_frame_hdrs(c, b->frames[i], &b->keys[i], tot,
					    partial);
		if (b->group)
			group_frame_fix(b->frames[i], &b->keys[i].a,
					rx_ttl(&b->mm[i].msg_hdr));
	}
	if (partial)
		tap_tx_commit_many_offv(c, b->lens, n, offs);
	else
		tap_tx_commit_many(c, b->lens, n);
}

/* udp_discard() - no guest to deliver to (vm mode between clients):
 * read and drop a batch, so a readable socket cannot spin the loop. */
static void udp_discard(struct ctx *c, int fd, struct udp_rxb *b)
{
	int i, r;

	for (i = 0; i < UDP_BATCH; i++) {
		b->iov[i].iov_base = c->udp.scratch;
		b->iov[i].iov_len = 1;
		b->mm[i].msg_hdr = (struct msghdr){ .msg_iov = &b->iov[i],
						    .msg_iovlen = 1 };
	}
	r = recvmmsg(fd, b->mm, UDP_BATCH, MSG_DONTWAIT, NULL);
	for (i = 0; i < r; i++)
		drop(c, DROP_LINK_DOWN);
}

void udp_rxb_slot(struct udp_rxb *b, unsigned int i, uint8_t *buf,
		  size_t len, bool meta)
{
	b->iov[i].iov_base = buf;
	b->iov[i].iov_len = len;
	b->mm[i].msg_hdr = (struct msghdr){ .msg_iov = &b->iov[i],
					    .msg_iovlen = 1 };
	if (meta) {
		b->mm[i].msg_hdr.msg_name = &b->names[i];
		b->mm[i].msg_hdr.msg_namelen = sizeof(b->names[i]);
		b->mm[i].msg_hdr.msg_control = b->cb[i].b;
		b->mm[i].msg_hdr.msg_controllen = sizeof(b->cb[i]);
	}
}

/* udp_rxb_recv() - reserve guest frames for family v6 and receive up to
 * UDP_BATCH datagrams from fd, each payload right after its frame's
 * headers (with sender and pktinfo when meta), lens[i] its length.
 * Datagrams too big for the guest are dropped (lens[i] UDP_RX_NONE).
 * Callers turn lens[] into frame lengths (0: no frame). Returns how
 * many were received (commit them with tap_tx_commit_many()); *full when
 * the batch was filled. */
unsigned int udp_rxb_recv(struct ctx *c, int fd, bool v6, bool meta,
				 struct udp_rxb *b, bool *full)
{
	size_t hl = frame_hdrlen(v6), pmax = payload_max(c, v6);
	unsigned int n, i;
	int r;

	*full = false;
	b->group = false;
	n = tap_tx_reserve_many(c, hl + pmax, b->frames, UDP_BATCH);
	if (!n) {
		udp_discard(c, fd, b);
		return 0;
	}
	for (i = 0; i < n; i++)
		udp_rxb_slot(b, i, b->frames[i] + hl, pmax, meta);
	r = recvmmsg(fd, b->mm, n, MSG_DONTWAIT, NULL);
	if (r <= 0)
		return 0;
	for (i = 0; i < (unsigned int)r; i++) {
		b->lens[i] = b->mm[i].msg_len;
		if (b->mm[i].msg_hdr.msg_flags & MSG_TRUNC) {
			drop(c, DROP_UDP_TOO_BIG);
			b->lens[i] = UDP_RX_NONE;
		}
	}
	*full = (unsigned int)r == n;
	return (unsigned int)r;
}

/* udp_sender_key() - the guest-side key k of a datagram an unconnected
 * flow socket received from sa: from its sender, as the guest sees it
 * (nat_inbound_l4()), to the guest's address and port. */
static void udp_sender_key(const struct ctx *c, struct flow_key *k,
			   const sockaddr_inany *sa)
{
	inany_from_sa(sa, &k->b, &k->pb);
	nat_inbound_l4(c, &k->b, k->pb);
}

/* udp_flow_recv() - datagrams on an outbound flow's socket to the guest.
 * Returns false when the socket is drained. */
static bool udp_flow_recv(struct ctx *c, struct flow *fl, struct udp_rxb *b)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	unsigned int n, i;
	bool full;

	bool any = UDP_FLOW(fl)->mkind;	/* unconnected: any sender */

	n = udp_rxb_recv(c, UDP_FLOW(fl)->sock, !inany_is4(&k->a), any, b,
			 &full);
	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		b->keys[i] = *k;
		if (any)
			udp_sender_key(c, &b->keys[i], &b->names[i]);
	}
	udp_frames_commit(c, b, n, !inany_is4(&k->a));
	UDP_FLOW(fl)->replied = true;
	udp_flow_touch(c, fl);
	return full;
}

/* udp_group_recv() - datagrams on the socket of a group the guest
 * joined (slot idx, mcast.c) to the guest: from each sender (as
 * nat_inbound_l4() shows it) to the group and the socket's port, on
 * the group's Ethernet address. Returns false when the socket is
 * drained or the group gone. */
static bool udp_group_recv(struct ctx *c, uint32_t idx, struct udp_rxb *b)
{
	struct mcast_group *g;
	unsigned int n, i;
	uint16_t port;
	bool full;
	int fd;

	g = mcast_group_at(c, idx, &port, &fd);
	if (!g)
		return false;
	n = udp_rxb_recv(c, fd, !inany_is4(&g->group), true, b, &full);
	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		flow_key_make(&b->keys[i], IPPROTO_UDP, &g->group, port,
			      &g->group, 0);
		udp_sender_key(c, &b->keys[i], &b->names[i]);
	}
	b->group = true;
	udp_frames_commit(c, b, n, !inany_is4(&g->group));
	b->group = false;
	c->udp.mc.delivered += n;
	return full;
}

/* udp_err_to_guest() - socket error e (its payload in the scratch
 * buffer) about a datagram fl's guest side sent: the matching ICMP or
 * ICMPv6 error to the guest, counted. */
void udp_err_to_guest(struct ctx *c, struct flow *fl,
		      const struct icmp_err *e)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	struct icmp_err_orig o = {
		.src = k->a, .dst = k->b, .sport = k->pa, .dport = k->pb,
		.host_dst = UDP_FLOW(fl)->peer, .payload = c->udp.scratch,
		.len = e->len, .full_len = e->len,
	};

	if (icmp_err_to_guest(c, e, &o))
		c->udp.icmp_to_guest++;
}

/* udp_flow_errors() - translate fl's queued socket errors for the guest
 * (an outbound flow's own socket: every error is about its datagrams). */
static void udp_flow_errors(struct ctx *c, struct flow *fl)
{
	struct icmp_err e;
	int i;

	for (i = 0; i < UDP_ERR_ROUNDS; i++) {
		if (icmp_err_read(UDP_FLOW(fl)->sock, &e, c->udp.scratch,
				  UDP_SCRATCH_SIZE) <= 0)
			break;
		udp_err_to_guest(c, fl, &e);
	}
}

/* --- events, timers, start-up ------------------------------------------- */

void udp_sock_handler(struct ctx *c, uint64_t ref64, uint32_t events)
{
	union eref ref = { .u64 = ref64 };
	struct udp_rxb b;
	struct flow *fl;
	int i;

	if (ref.type == EREF_UDP_LISTEN) {
		udp_listen_handler(c, ref, events);
		return;
	}
	if (ref.type == EREF_UDP_MCAST) {
		for (i = 0; (events & EPOLLIN) && i < UDP_RECV_ROUNDS; i++)
			if (!udp_group_recv(c, ref.idx, &b))
				break;
		return;
	}
	fl = flow_at(&c->flows, ref.idx);
	if (!fl || fl->f.type != FLOW_UDP)
		return;
	if (UDP_FLOW(fl)->splice) {
		udp_splice_handler(c, fl, events);
		return;
	}
	if (events & EPOLLERR)
		udp_flow_errors(c, fl);
	for (i = 0; (events & EPOLLIN) && i < UDP_RECV_ROUNDS; i++)
		if (!udp_flow_recv(c, fl, &b))
			break;
}

void udp_timer(struct ctx *c)
{
	int64_t now = udp_now_ms(c), next = INT64_MAX, gran;
	int64_t scan = udp_fwd_timer(c);
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_UDP); fl; fl = nx) {
		struct udp_flow *u = UDP_FLOW(fl);
		int64_t due = u->last_ms + (u->replied ? c->udp.timeout_replied_ms
							: c->udp.timeout_ms);

		nx = flow_next(&c->flows, fl);
		if (due <= now) {
			c->udp.flows_expired++;
			udp_flow_free(c, fl);
		} else if (due < next) {
			next = due;
		}
	}
	if (next == INT64_MAX) {
		if (scan != INT64_MAX)
			timer_request(c, scan);
		return;
	}
	/* Coarse ticks: one walk per second at most (finer for short test
	 * timeouts), whatever the number of flows. */
	gran = MIN(1000, (int64_t)c->udp.timeout_ms / 10 + 1);
	timer_request(c, MIN(MAX(next - now, gran), scan));
}

/* udp_limits() - flow cap and timeouts, the cap within the fd budget. */
static void udp_limits(struct ctx *c)
{
	uint32_t cap = test_env_u32("FERRY_TEST_UDP_MAX_FLOWS",
			       UDP_MAX_FLOWS_DEFAULT);
	uint32_t half = fd_budget(fd_limit());	/* flows cost fds */
	uint32_t room = half - MIN(icmp_flow_cap(half), half - 1);

	cap = MIN(cap, room);	/* echo flows take the rest of the half */
	c->udp.max_flows = MIN(cap, FLOW_MAX);
	c->udp.timeout_ms = test_env_u32("FERRY_TEST_UDP_TIMEOUT_MS", UDP_TIMEOUT_MS);
	c->udp.timeout_replied_ms = test_env_u32("FERRY_TEST_UDP_TIMEOUT_REPLIED_MS",
					    UDP_TIMEOUT_REPLIED_MS);
	debug("udp: at most %u flows, idle timeouts %u/%u ms",
	      c->udp.max_flows, c->udp.timeout_ms, c->udp.timeout_replied_ms);
}

void udp_init(struct ctx *c)
{
	void *p = mmap(NULL, UDP_SCRATCH_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("udp: cannot allocate buffers");
	c->udp.scratch = p;
	c->udp.lru_head[0] = c->udp.lru_tail[0] = FLOW_NONE;
	c->udp.lru_head[1] = c->udp.lru_tail[1] = FLOW_NONE;
	udp_limits(c);
	c->udp.fwd[0].scan_fd[0] = c->udp.fwd[0].scan_fd[1] = -1;
	c->udp.fwd[1].scan_fd[0] = c->udp.fwd[1].scan_fd[1] = -1;
	c->udp.ready = true;
	udp_listen_init(c);
}

void udp_close_all(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_UDP); fl; fl = nx) {
		nx = flow_next(&c->flows, fl);
		udp_flow_free(c, fl);
	}
}

/* The flow counters' statistics line (drop.h's registry), once a flow
 * was created. */
static const struct stat_item udp_stat_items[] = {
	STAT_TEXT(" ", " open", struct ctx, flows.count[FLOW_UDP]),
	STAT_TEXT(", ", " created", struct ctx, udp.flows_created),
	STAT_TEXT(", ", " expired", struct ctx, udp.flows_expired),
	STAT_TEXT(", ", " evicted", struct ctx, udp.flows_evicted),
	STAT_TEXT(" (", " of them forwarded-port clients at their half)",
		  struct ctx, udp.inbound_evicted),
	STAT_TEXT(", ", " ICMP errors to guest", struct ctx, udp.icmp_to_guest),
	STAT_TEXT(", ", " datagrams on the loopback path", struct ctx,
		  udp.spliced),
};

STAT_GROUP(udp_stats) = {
	.order = 10, .what = "udp flows", .when = STAT_GATE,
	.gate_off = STAT_FIELD(struct ctx, udp.flows_created), .via = -1,
	.items = udp_stat_items, .n = ARRAY_SIZE(udp_stat_items),
};
