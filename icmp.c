/* icmp.c - ICMP/ICMPv6 echo forwarding through unprivileged ping sockets.
 *
 * Theory of operation: ferry owns no raw sockets. An echo request from
 * the guest becomes a datagram on a "ping socket" (SOCK_DGRAM with
 * IPPROTO_ICMP / IPPROTO_ICMPV6), which the kernel allows to groups in
 * net.ipv4.ping_group_range (the one sysctl covers both families). The
 * kernel then owns the echo identifier: it rewrites the id of everything
 * we send to the socket's local "port", and delivers to the socket only
 * the replies carrying that id. So each echo flow gets its own socket,
 * and replies are rewritten back to the id the guest chose.
 *
 * A flow is a FLOW_PING slot in the shared flow table, found by the guest
 * side key (proto, guest address, echo id, destination as the guest
 * addressed it). Its socket is connected to nat_outbound() of that
 * destination (the gateway maps to host loopback) and registered with the
 * loop as EREF_PING carrying the flow index. Replies are read in a
 * bounded burst and sent to the guest from nat_inbound() of the peer the
 * socket reports, with the checksum filled by tap_send_ip4/ip6(); one
 * larger than the guest's MTU is dropped (ICMP_TOO_BIG), as UDP does.
 *
 * Bounds: each echo flow holds a socket, so their number is capped
 * within the fd limit: UDP's flows and these share half of it
 * (fd_budget(); TCP has the other half), echo flows an eighth of that
 * half, at most ICMP_FLOWS_MAX (icmp_flow_cap()). A new flow beyond the
 * cap evicts the one idle longest (counted), so pinging many ids costs
 * old echo flows, never descriptors TCP or UDP count on. Flows idle for
 * ICMP_TIMEOUT_MS are closed by icmp_timer(), which walks only FLOW_PING
 * flows.
 *
 * When ping sockets cannot be opened (sysctl excludes our group, or IPv6
 * is absent) icmp_init() says so once and echo requests of that family
 * are dropped with DROP_ICMP_DISABLED: ferry never fakes a reply.
 *
 * Started as root, ferry gives up root (priv.c) for a group the sysctl
 * may leave out although root's is in (the test sandbox's "0 0"). The
 * kernel checks the group only when a ping socket is created, so
 * icmp_keep_for() opens a pool of ICMP_POOL_MAX per family (fewer under a
 * low fd limit: half the echo flows' cap each) before the drop, and flows then borrow one: on release it is disconnected (which
 * unhashes its id: no more replies reach it) and drained, and the next
 * connect() gives it a new id. More flows of a family than the pool holds
 * evict the one idle longest. A raw ICMP socket opened as root would
 * also outlive the drop, but it receives every ICMP message of the host
 * (ferry would read other programs' echoes, pick ids that collide with
 * theirs and parse errors itself): the pool keeps the kernel's per-socket
 * demultiplexing and this file's one path. Other
 * ICMP types from the guest (replies, errors, ...) are not forwarded.
 * Errors the host sees for our echoes (unreachable, too big) are
 * relayed: ping sockets queue them (IP_RECVERR / IPV6_RECVERR), and each
 * becomes the matching ICMP/ICMPv6 error to the guest quoting its echo
 * request as it sent it (icmp_err.c): its own id, and the checksum
 * updated to match (for ICMPv6 also from the host socket's addresses to
 * the guest's), so its ping reports the unreachable host instead of
 * timing out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "ferry.h"
#include "icmp_err.h"
#include "log.h"
#include "nat.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

/* seccomp(all): bind close connect getsockname recvfrom recvmsg sendmsg */
/* seccomp(all): setsockopt
 *   (ping sockets, one per echo flow) */
/* seccomp(all): socket(0=AF_INET) socket(0=AF_INET6) */
/* seccomp(setup): getegid mmap openat read */

#define ICMP_ECHO_REQ4		8
#define ICMP_ECHO_REPLY4	0
#define ICMP_ECHO_REQ6		128
#define ICMP_ECHO_REPLY6	129

/* The private part of a FLOW_PING flow. */
struct ping_flow {
	int sock;			/* connected ping socket */
	uint16_t guest_id;		/* echo id the guest chose */
	uint16_t sock_id;		/* id the kernel uses (0: not known) */
	union inany peer;		/* host address the socket talks to */
	struct timespec last;		/* last request or reply */
	uint8_t ttl;			/* TTL / hop limit the socket sends
					 * with (PING_TTL_HOST at first) */
};

/* What a new ping socket sends with (Linux's default TTL and hop limit):
 * echo requests that keep it cost no setsockopt(). */
#define PING_TTL_HOST	64

/* ping_of() - the private part of FLOW_PING flow fl. */
static struct ping_flow *ping_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct ping_flow);
}

/* ping_socket() - a non-blocking ping socket of family af, or -errno. */
static int ping_socket(int af)
{
	int s = socket(af, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       af == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);

	return s < 0 ? -errno : s;
}

/* pool_of() - the pool of kept sockets for an IPv6 (or IPv4) flow. */
static struct icmp_pool *pool_of(struct ctx *c, bool v6)
{
	return &c->icmp.pool[v6];
}

/* probe() - can a ping socket of family af be opened? */
static bool probe(int af, int *why)
{
	int s = ping_socket(af);

	if (s < 0) {
		*why = -s;
		return false;
	}
	close(s);
	return true;
}

uint32_t icmp_flow_cap(uint32_t budget)
{
	return MIN(MAX(budget / 8, 1u), (uint32_t)ICMP_FLOWS_MAX);
}

void icmp_init(struct ctx *c)
{
	struct icmp_state *st = &c->icmp;
	int e4 = 0, e6 = 0;

	st->max_flows = icmp_flow_cap(fd_budget(fd_limit()));
	st->ping4_ok = st->ping6_ok = false;
	if (c->conf.no_icmp) {
		debug("ICMP echo forwarding disabled (--no-icmp)");
		return;
	}
	st->ping4_ok = c->conf.ip4.enabled && probe(AF_INET, &e4);
	st->ping6_ok = c->conf.ip6.enabled && probe(AF_INET6, &e6);
	if (e4 || e6)
		warn("ICMP echo forwarding disabled for %s%s%s: cannot open "
		     "ping sockets (%s); allow group %u in sysctl "
		     "net.ipv4.ping_group_range to enable it",
		     e4 ? "IPv4" : "", e4 && e6 ? " and " : "", e6 ? "IPv6" : "",
		     strerror(e4 ? e4 : e6), (unsigned int)getegid());
	if (!st->ping4_ok && !st->ping6_ok)
		return;
	st->rxbuf = mmap(NULL, ICMP_RX_BUF, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (st->rxbuf == MAP_FAILED)
		die("cannot allocate the ICMP receive buffer");
}

/* sockaddr_of() - socket address for a (v4-mapped or IPv6) address. */
static socklen_t sockaddr_of(const union inany *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inany_is4(a)) {
		struct sockaddr_in *sa = (struct sockaddr_in *)ss;

		sa->sin_family = AF_INET;
		sa->sin_addr = a->v4m.a4;
		return sizeof(*sa);
	}
	struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *)ss;

	sa6->sin6_family = AF_INET6;
	sa6->sin6_addr = a->a6;
	return sizeof(*sa6);
}

/* sock_release() - a flow's socket s is done with: closed, or, borrowed
 * from the pool, disconnected (its id unhashed: nothing more arrives),
 * drained of replies and errors, and given back. */
static void sock_release(struct ctx *c, int s, bool v6)
{
	struct icmp_pool *pl = pool_of(c, v6);
	struct sockaddr sa = { .sa_family = AF_UNSPEC };
	struct msghdr mh = { 0 };
	int i;

	if (!pl->on) {
		close(s);
		return;
	}
	if (connect(s, &sa, sizeof(sa)) || pl->free >= ICMP_POOL_MAX) {
		close(s);		/* not reusable: one fewer kept */
		return;
	}
	/* Bounded by the socket's buffers: nothing new is queued. */
	for (i = 0; i < 4096 && recv(s, NULL, 0, MSG_DONTWAIT | MSG_TRUNC) >= 0;
	     i++)
		;
	for (i = 0; i < 4096 && recvmsg(s, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) >= 0;
	     i++)
		;
	pl->fd[pl->free++] = s;
}

/* ping_close() - unregister and close a flow's socket, free the flow. */
static void ping_close(struct ctx *c, struct flow *fl)
{
	struct ping_flow *pf = ping_of(fl);

	if (pf->sock >= 0) {
		if (c->epfd >= 0)
			ep_del(c, pf->sock);
		sock_release(c, pf->sock, !inany_is4(&pf->peer));
	}
	flow_free(&c->flows, fl);
}

/* ping_evict_oldest() - make room: close the flow idle longest (of
 * family v6 only if one_af). */
static void ping_evict_oldest(struct ctx *c, bool one_af, bool v6)
{
	struct flow *fl, *old = NULL;

	for (fl = flow_first(&c->flows, FLOW_PING); fl;
	     fl = flow_next(&c->flows, fl)) {
		if (one_af && inany_is4(&ping_of(fl)->peer) == v6)
			continue;
		if (!old || ts_ms_diff(&ping_of(fl)->last,
				       &ping_of(old)->last) < 0)
			old = fl;
	}
	if (old) {
		ping_close(c, old);
		c->icmp.evicted++;
	}
}

/* ping_bind_outbound() - bind to the configured outbound interface
 * (--outbound-if4/6) and address (-o). Returns 0 or -errno. */
static int ping_bind_outbound(const struct ctx *c, int s, bool v6)
{
	union inany a;
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc;

	if ((rc = sock_bind_dev(s, v6 ? c->conf.outbound_if6
				      : c->conf.outbound_if4)))
		return rc;
	if (v6) {
		if (in6_is_unspec(&c->conf.ip6.outbound))
			return 0;
		inany_from6(&a, &c->conf.ip6.outbound);
	} else {
		if (in4_is_unspec(&c->conf.ip4.outbound))
			return 0;
		inany_from4(&a, c->conf.ip4.outbound);
	}
	sl = sockaddr_of(&a, &ss);
	return bind(s, (struct sockaddr *)&ss, sl) ? -errno : 0;
}

bool icmp_group_allowed(const char *path, uint32_t gid)
{
	unsigned long lo, hi;
	char buf[64], *p;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	errno = 0;
	lo = strtoul(buf, &p, 10);
	if (p == buf || errno)
		return false;
	hi = strtoul(p, &p, 10);
	return !errno && gid >= lo && gid <= hi;
}

/* pool_fill() - open family v6's pool: sockets set up as ping_open()
 * would (error queue, -o / --outbound-if bound once here), as many as
 * half the echo flows' cap allows (they are those flows' descriptors),
 * at most ICMP_POOL_MAX. Returns how many it opened. */
static unsigned int pool_fill(struct ctx *c, bool v6)
{
	unsigned int want = MIN(MAX(c->icmp.max_flows / 2, 1u), (unsigned int)ICMP_POOL_MAX);
	struct icmp_pool *pl = pool_of(c, v6);
	int s;

	while (pl->free < want) {
		s = ping_socket(v6 ? AF_INET6 : AF_INET);
		if (s < 0)
			break;
		if (ping_bind_outbound(c, s, v6) ||
		    setsockopt(s, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
			       v6 ? IPV6_RECVERR : IP_RECVERR, &(int){ 1 },
			       sizeof(int))) {
			close(s);
			break;
		}
		pl->fd[pl->free++] = s;
	}
	pl->on = pl->free > 0;
	return pl->free;
}

void icmp_keep_for(struct ctx *c, uint32_t gid)
{
	const char *path = "/proc/sys/net/ipv4/ping_group_range";
	struct icmp_state *st = &c->icmp;
	unsigned int n4 = 0, n6 = 0;

	if ((!st->ping4_ok && !st->ping6_ok) || icmp_group_allowed(path, gid))
		return;
	if (st->ping4_ok && !(n4 = pool_fill(c, false)))
		st->ping4_ok = false;
	if (st->ping6_ok && !(n6 = pool_fill(c, true)))
		st->ping6_ok = false;
	info("ICMP echo: group %u may not open ping sockets "
	     "(net.ipv4.ping_group_range): keeping %u IPv4 and %u IPv6 ones "
	     "opened before giving up root, for as many echo flows at once",
	     (unsigned int)gid, n4, n6);
	if (!st->ping4_ok || !st->ping6_ok)
		warn("ICMP echo forwarding disabled for %s: no ping socket "
		     "could be kept", !st->ping4_ok && !st->ping6_ok ?
		     "IPv4 and IPv6" : !st->ping4_ok ? "IPv4" : "IPv6");
}

/* ping_take() - a socket for a new flow of family v6: from the pool if
 * it is on (-ENOBUFS if none is free), else a new one; or -errno. */
static int ping_take(struct ctx *c, bool v6)
{
	struct icmp_pool *pl = pool_of(c, v6);

	if (!pl->on)
		return ping_socket(v6 ? AF_INET6 : AF_INET);
	return pl->free ? pl->fd[--pl->free] : -ENOBUFS;
}

/* ping_open() - new flow for key k towards host address dst, with its
 * connected socket registered in the loop. Returns NULL and sets *r. */
static struct flow *ping_open(struct ctx *c, const struct flow_key *k,
			      const union inany *dst, enum drop_reason *r)
{
	union eref ref = { .type = EREF_PING };
	bool v6 = !inany_is4(dst);
	struct sockaddr_storage ss;
	struct ping_flow *pf;
	struct flow *fl;
	socklen_t sl;
	int s;

	if (c->flows.count[FLOW_PING] >= c->icmp.max_flows)
		ping_evict_oldest(c, false, v6);
	if (pool_of(c, v6)->on && !pool_of(c, v6)->free)
		ping_evict_oldest(c, true, v6);
	fl = flow_alloc(&c->flows, FLOW_PING);
	if (!fl) {
		*r = DROP_FLOW_TABLE_FULL;
		return NULL;
	}
	pf = ping_of(fl);
	pf->sock = -1;
	pf->guest_id = k->pa;
	pf->peer = *dst;
	pf->last = c->now;
	/* a pooled socket may keep the TTL of the flow that had it last:
	 * unknown (0), set on the first request */
	pf->ttl = pool_of(c, v6)->on ? 0 : PING_TTL_HOST;
	s = ping_take(c, v6);
	sl = sockaddr_of(dst, &ss);
	ref.idx = flow_idx(&c->flows, fl);
	if (s < 0 || (!pool_of(c, v6)->on &&
		      (ping_bind_outbound(c, s, v6) ||
		       setsockopt(s, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
				  v6 ? IPV6_RECVERR : IP_RECVERR, &(int){ 1 },
				  sizeof(int)))) ||
	    connect(s, (struct sockaddr *)&ss, sl) ||
	    ep_add(c, s, EPOLLIN, ref)) {
		debug("icmp: cannot open echo flow: %s",
		      strerror(s < 0 ? -s : errno));
		if (s >= 0)
			sock_release(c, s, v6);
		flow_free(&c->flows, fl);
		*r = DROP_SOCKET_ERROR;
		return NULL;
	}
	pf->sock = s;
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, k);
	timer_request(c, ICMP_TIMEOUT_MS);
	return fl;
}

/* ping_note_id() - learn the id the kernel bound the socket to. */
static void ping_note_id(struct ping_flow *pf)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (pf->sock_id || getsockname(pf->sock, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET)
		pf->sock_id = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else
		pf->sock_id = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (pf->sock_id != pf->guest_id)
		trace("icmp: echo id %u is %u on the host", pf->guest_id,
		      pf->sock_id);
}

/* ping_ttl_follow() - the guest's TTL / hop limit ttl on pf's socket
 * (traceroute -I): one setsockopt() when it changes, none while the
 * guest keeps the host's default. */
static void ping_ttl_follow(struct ping_flow *pf, bool v6, uint8_t ttl)
{
	int v = ttl;

	if (ttl == pf->ttl || !ttl)
		return;
	if (setsockopt(pf->sock, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_UNICAST_HOPS : IP_TTL, &v, sizeof(v))) {
		debug("icmp: TTL %u: %s", ttl, strerror(errno));
		return;
	}
	pf->ttl = ttl;
}

/* ping_send() - send the guest's echo request (header rebuilt, payload
 * as is) on the flow's socket, with the guest's TTL. The kernel fills id
 * and checksum. */
static enum drop_reason ping_send(struct ctx *c, struct ping_flow *pf,
				  const struct pkt *p)
{
	uint8_t h[ICMP_HLEN] = { p->icmp.type, 0 };
	struct iovec iov[2] = {
		{ .iov_base = h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)p->payload, .iov_len = p->payload_len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	wr16(h + ICMP_OFF_ID, p->icmp.id);
	wr16(h + ICMP_OFF_SEQ, p->icmp.seq);
	ping_ttl_follow(pf, p->is_v6, p->ttl);
	/* An error queued since the last send (a router's time exceeded,
	 * relayed by ping_errors()) fails this one once: send again. */
	if (sendmsg(pf->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    (!send_error_reported(errno) ||
	     sendmsg(pf->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)) {
		debug("icmp: send: %s", strerror(errno));
		return DROP_SOCKET_ERROR;
	}
	pf->last = c->now;
	ping_note_id(pf);
	c->icmp.requests++;
	return DROP_NONE;
}

enum drop_reason icmp_input(struct ctx *c, const struct pkt *p)
{
	uint8_t req = p->is_v6 ? ICMP_ECHO_REQ6 : ICMP_ECHO_REQ4;
	enum drop_reason r = DROP_NONE;
	union inany guest, dst, host;
	struct flow_key k;
	struct flow *fl;

	if (p->icmp.type != req || p->icmp.code != 0)
		return DROP_ICMP_TYPE;
	if (p->l4len < ICMP_HLEN)
		return DROP_L4_SHORT;
	if (!(p->is_v6 ? c->icmp.ping6_ok : c->icmp.ping4_ok))
		return DROP_ICMP_DISABLED;
	if (p->is_v6) {
		inany_from6(&guest, &p->src6);
		inany_from6(&dst, &p->dst6);
	} else {
		inany_from4(&guest, p->src4);
		inany_from4(&dst, p->dst4);
	}
	flow_key_make(&k, p->l4proto, &guest, p->icmp.id, &dst, 0);
	fl = flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k);
	if (!fl) {
		host = dst;
		if (!nat_outbound(c, &host))
			return p->is_v6 ? DROP_IP6_DST : DROP_IP4_DST;
		fl = ping_open(c, &k, &host, &r);
		if (!fl)
			return r;
	}
	return ping_send(c, ping_of(fl), p);
}

/* ping_reply() - one message read from flow fl's socket: if it is an
 * echo reply, hand it to the guest with the guest's own id. A reply the
 * guest's MTU cannot carry (the peer may answer with more than it was
 * sent) is dropped: ferry does not fragment. */
static void ping_reply(struct ctx *c, struct flow *fl, uint8_t *m, size_t len,
		       const struct sockaddr_storage *from)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	struct ping_flow *pf = ping_of(fl);
	bool v6 = !inany_is4(&k->a);
	size_t mtu = c->conf.mtu ? c->conf.mtu : 65520;
	union inany src;

	if (len < ICMP_HLEN ||
	    m[ICMP_OFF_TYPE] != (v6 ? ICMP_ECHO_REPLY6 : ICMP_ECHO_REPLY4))
		return;
	if (len + (v6 ? IP6_HLEN : IP4_HLEN) > mtu) {
		drop(c, DROP_ICMP_TOO_BIG);
		return;
	}
	if (from->ss_family == AF_INET6 && v6)
		inany_from6(&src, &((const struct sockaddr_in6 *)from)->sin6_addr);
	else if (from->ss_family == AF_INET && !v6)
		inany_from4(&src, ((const struct sockaddr_in *)from)->sin_addr);
	else
		return;
	nat_inbound(c, &src);
	wr16(m + ICMP_OFF_ID, pf->guest_id);
	if (v6 ? tap_send_ip6(c, &src.a6, &k->a.a6, IPPROTO_ICMPV6, m, len)
	       : tap_send_ip4(c, src.v4m.a4, k->a.v4m.a4, IPPROTO_ICMP, m, len))
		c->icmp.replies++;
	else
		drop(c, DROP_TX_FULL);
}

/* ping_addrs6() - the ICMPv6 pseudo-header addresses of flow key k's
 * echoes on the host (host[0]: the socket's local address, host[1] the
 * peer) and as the guest sent them (guest[0], guest[1]). False if the
 * socket has no local IPv6 address to tell. */
static bool ping_addrs6(const struct ping_flow *pf, const struct flow_key *k,
			struct in6_addr host[2], struct in6_addr guest[2])
{
	struct sockaddr_in6 sa = { 0 };
	socklen_t sl = sizeof(sa);

	if (getsockname(pf->sock, (struct sockaddr *)&sa, &sl) ||
	    sa.sin6_family != AF_INET6)
		return false;
	host[0] = sa.sin6_addr;
	host[1] = pf->peer.a6;
	guest[0] = k->a.a6;
	guest[1] = k->b.a6;
	return true;
}

/* ping_errors() - relay the errors queued on fl's socket to the guest,
 * each quoting its echo request as the guest sent it (its id, the
 * checksum to match: icmp_echo_requote()). */
static void ping_errors(struct ctx *c, struct flow *fl)
{
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];
	struct ping_flow *pf = ping_of(fl);
	struct icmp_err_orig o = {
		.src = k->a, .dst = k->b, .echo = true,
		.payload = c->icmp.rxbuf,
	};
	struct in6_addr host6[2], guest6[2];
	bool v6 = !inany_is4(&k->a);
	struct icmp_err e;
	int i;

	o.host_dst = pf->peer;
	if (v6 && !ping_addrs6(pf, k, host6, guest6))
		v6 = false;	/* no local address: the id alone is fixed */
	for (i = 0; i < ICMP_RX_BURST; i++) {
		if (icmp_err_read(pf->sock, &e, c->icmp.rxbuf,
				  ICMP_RX_BUF) <= 0)
			break;
		icmp_echo_requote(c->icmp.rxbuf, e.len, pf->guest_id,
				  v6 ? host6 : NULL, v6 ? guest6 : NULL);
		o.len = o.full_len = e.len;
		if (icmp_err_to_guest(c, &e, &o))
			c->icmp.errors++;
	}
}

void icmp_sock_handler(struct ctx *c, uint32_t idx, uint32_t events)
{
	struct flow *fl = flow_at(&c->flows, idx);
	struct ping_flow *pf;
	int i;

	if (!fl || fl->f.type != FLOW_PING || !c->icmp.rxbuf)
		return;
	pf = ping_of(fl);
	if (events & EPOLLERR)
		ping_errors(c, fl);
	/* Bounded: one busy flow cannot starve the loop. */
	for (i = 0; i < ICMP_RX_BURST; i++) {
		struct sockaddr_storage from;
		socklen_t fl_len = sizeof(from);
		ssize_t n;

		from.ss_family = AF_UNSPEC;	/* if no address comes back */
		n = recvfrom(pf->sock, c->icmp.rxbuf, ICMP_RX_BUF, MSG_DONTWAIT,
			     (struct sockaddr *)&from, &fl_len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* A pending error (e.g. host unreachable): reading
			 * it clears it. Not relayed to the guest. */
			debug("icmp: echo flow %u: %s", idx, strerror(errno));
			continue;
		}
		pf->last = c->now;
		ping_reply(c, fl, c->icmp.rxbuf, (size_t)n, &from);
	}
}

void icmp_timer(struct ctx *c)
{
	int64_t next = -1;
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_PING); fl; fl = nx) {
		int64_t idle = ts_ms_diff(&c->now, &ping_of(fl)->last);

		nx = flow_next(&c->flows, fl);
		if (idle >= ICMP_TIMEOUT_MS) {
			ping_close(c, fl);
			c->icmp.expired++;
			continue;
		}
		if (next < 0 || ICMP_TIMEOUT_MS - idle < next)
			next = ICMP_TIMEOUT_MS - idle;
	}
	if (next >= 0)
		timer_request(c, next);
}
