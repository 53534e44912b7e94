/* udp_fwd.c - forwarded UDP ports: -u (host -> guest) and, in namespace
 * mode, -U (guest namespace -> host); port lists or "auto"; the loopback
 * path.
 *
 * Theory of operation
 *
 * Listeners. Each forwarded port has one socket per family, shared by all
 * its clients: for -u on the host (any address, or the spec's ADDR%IF/),
 * for -U inside the guest namespace on its loopback (127.0.0.1 and ::1,
 * or the spec's address). Namespace sockets are created by a helper task
 * inside the namespace (ns_call()); a socket stays in the namespace it
 * was created in, so ferry uses them afterwards like any other. Epoll
 * references: EREF_UDP_LISTEN, idx the fd, aux the port, side LREF_V6 |
 * LREF_NS.
 *
 * Whose datagram. A datagram on a listener belongs to the flow of its
 * client, found by a host-side key (client address and port, the local
 * address it was sent to, the port; keys of namespace listeners carry a
 * tag, so the two sides never collide). A new client creates one:
 *  - -u, client not on loopback (or vm mode): a guest flow, its
 *    datagrams become frames to the guest from the client's address as
 *    the guest sees it (frames built by udp.c); with --splice-only (no
 *    guest link) none: dropped (DROP_NO_LINK);
 *  - -u in namespace mode, client on the host's loopback: a loopback
 *    ("splice") flow: a socket created in the guest namespace, connected
 *    to the guest's own address and the target port, or to its loopback
 *    with --host-lo-to-ns-lo (by default a service bound only to the
 *    guest's loopback is not exposed), both over the namespace's lo;
 *  - -U: a splice flow the other way, a host socket connected to the
 *    host's loopback and the target port.
 * A splice flow's own socket receives the replies, which go back through
 * the listener to the client, from the address it used. Nothing of this
 * goes through the tap: recvmmsg() into a buffer of UDP_BATCH full-size
 * slots, sendmmsg() from it, one copy. (-u listeners receive into guest
 * frames since most of their clients are not on loopback; a loopback
 * client's datagrams are sent from the frame, which is then not used, so
 * they are bounded by the guest MTU like the others. With --splice-only
 * there are no guest frames: -u listeners receive into the splice slots
 * as -U listeners do, splice_listen_recv().)
 *
 * auto. -u auto forwards the ports bound in the guest namespace, -U auto
 * those bound on the host: every UDP_SCAN_MS fwd_scan() reads the other
 * side's /proc/net/udp and udp6 (opened once; for -u inside the
 * namespace, where the file stays tied to it), then listeners open for
 * new ports and close, with their flows, for ports gone. Ports that
 * ferry's own listeners hold on that side (those of the other direction)
 * are never forwarded back, so nothing loops; ~exclusions apply.
 *
 * Retries. A listener that cannot be opened for a reason that may pass
 * (port taken on this side, address or interface missing:
 * fwd_retriable()) is retried from the timer with backoff (struct
 * fwd_retry, fwd.c), per family, for as long as the port is forwarded.
 * An explicit port warns once per family and says when it works; one
 * that opens in no family at start-up is fatal for -u (as in pasta),
 * retried for -U. "auto" retries quietly; "all" never retries (as for
 * TCP, tcp_fwd.c: a port busy at start-up is a host service's).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "fwd_scan.h"
#include "icmp_err.h"
#include "log.h"
#include "nat.h"
#include "nsexec.h"
#include "udp_int.h"
#include "util.h"

/* seccomp(all): close connect recvmmsg setsockopt
 *   (forwarded UDP ports) */
/* seccomp(all): socket(0=AF_INET) socket(0=AF_INET6) */
/* seccomp(setup): mmap openat */

#define LREF_V6		1	/* eref side bits of a listener */
#define LREF_NS		2
#define UDP_SCAN_MS	1000
#define KEY_TAG_NS	1	/* flow_key pad[0]: namespace-listener key */

/* dir_spec() - the forwarding spec of direction dir (-u or -U). */
static const struct fwd_spec *dir_spec(const struct ctx *c, unsigned int dir)
{
	return dir == UDP_FWD_OUT ? &c->conf.udp_out : &c->conf.udp_in;
}

/* inany_loopback() - 127.0.0.1 or ::1 into a. */
static void inany_loopback(union inany *a, bool v6)
{
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	if (v6)
		inany_from6(a, &in6addr_loopback);
	else
		inany_from4(a, lo);
}

/* in_guest_key() - the guest-side key of the inbound flow of client
 * peer:pport of -u port port: the guest's address and target port, the
 * client as the guest sees it. False if the guest's address is not
 * known. One client has one such flow whatever local address it used:
 * a second local address finds this key taken (udp_flow_in()). */
static bool in_guest_key(const struct ctx *c, uint16_t port,
			 const union inany *peer, uint16_t pport,
			 struct flow_key *gk)
{
	union inany gaddr, seen = nat_inbound_fwd(c, peer, pport);

	if (!fwd_target_inany(&c->conf.udp_in, port, !inany_is4(&seen),
			      &gaddr) &&	/* the spec's target address */
	    !nat_guest_addr(c, &seen, &gaddr))
		return false;
	flow_key_make(gk, IPPROTO_UDP, &gaddr,
		      fwd_target(&c->conf.udp_in, port), &seen, pport);
	return true;
}

/* udp_flow_in() - a new inbound flow: client peer:pport sent to
 * local:port on the forwarded-port socket fd. NULL if impossible, *r
 * saying why. */
static struct flow *udp_flow_in(struct ctx *c, int fd, uint16_t port,
				const struct flow_key *hk,
				enum drop_reason *r)
{
	struct flow_key gk;
	struct udp_flow *u;
	struct flow *fl;

	*r = DROP_GUEST_ADDR_UNKNOWN;
	if (!in_guest_key(c, port, &hk->a, hk->pa, &gk))
		return NULL;
	*r = DROP_UDP_TUPLE_TAKEN;
	if (flow_lookup(&c->flows, FLOW_SIDE_GUEST, &gk))
		return NULL;		/* the guest's own flow has it */
	*r = DROP_FLOW_TABLE_FULL;
	fl = udp_flow_alloc(c, true);
	if (!fl)
		return NULL;
	u = UDP_FLOW(fl);
	u->sock = fd;
	u->shared = true;
	u->peer = hk->a;
	u->peer_port = hk->pa;
	u->local = hk->b;
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, &gk);
	flow_hash_add(&c->flows, fl, FLOW_SIDE_HOST, hk);
	return fl;
}

/* recv_meta() - client and local address of a received datagram. */
static void recv_meta(const struct msghdr *mh, bool v6, union inany *peer,
		      uint16_t *pport, union inany *local)
{
	const sockaddr_inany *sa = mh->msg_name;
	struct cmsghdr *cm;

	if (v6) {
		inany_from6(peer, &sa->v6.sin6_addr);
		*pport = ntohs(sa->v6.sin6_port);
		inany_from6(local, &in6addr_any);
	} else {
		struct in_addr any = { 0 };

		inany_from4(peer, sa->v4.sin_addr);
		*pport = ntohs(sa->v4.sin_port);
		inany_from4(local, any);
	}
	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR((struct msghdr *)mh, cm)) {
		if (!v6 && cm->cmsg_level == IPPROTO_IP &&
		    cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			inany_from4(local, pi.ipi_addr);
		} else if (v6 && cm->cmsg_level == IPPROTO_IPV6 &&
			   cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi6;

			memcpy(&pi6, CMSG_DATA(cm), sizeof(pi6));
			inany_from6(local, &pi6.ipi6_addr);
		}
	}
}

/* --- the loopback path ---------------------------------------------------- */

/* splice_dst() - where a loopback flow from a listener of direction dir
 * goes (see the top); false when the guest's address is not known. */
static bool splice_dst(const struct ctx *c, unsigned int dir, bool v6,
		       union inany *a)
{
	if (dir == UDP_FWD_IN)
		return nat_splice_dst(c, v6, a);
	inany_loopback(a, v6);
	return true;
}

struct pool_job {
	struct ctx *c;
	bool v6;
};

/* pool_fill() - in the guest namespace: fill the socket pool of a family. */
static int pool_fill(void *arg)
{
	struct pool_job *j = arg;
	struct udp_state *u = &j->c->udp;

	while (u->ns_pool_n[j->v6] < UDP_NS_POOL) {
		int fd = socket(j->v6 ? AF_INET6 : AF_INET,
				SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				IPPROTO_UDP);

		if (fd < 0)
			return -errno;
		u->ns_pool[j->v6][u->ns_pool_n[j->v6]++] = fd;
	}
	return 0;
}

/* ns_socket() - a new UDP socket of the guest namespace, set up like our
 * others; the pool is refilled by one helper task per UDP_NS_POOL
 * sockets. Returns the fd or -errno. */
static int ns_socket(struct ctx *c, bool v6)
{
	struct pool_job j = { c, v6 };
	int fd, rc;

	if (!c->udp.ns_pool_n[v6]) {
		rc = ns_call(c, pool_fill, &j);
		if (!c->udp.ns_pool_n[v6])
			return rc < 0 ? rc : -EMFILE;
	}
	fd = c->udp.ns_pool[v6][--c->udp.ns_pool_n[v6]];
	if ((rc = udp_sock_setup(fd, v6))) {
		close(fd);
		return rc;
	}
	return fd;
}

/* splice_flow_new() - a loopback flow for client key hk on listener lfd
 * of direction dir, to port tport on the other side. NULL if impossible
 * (the caller counts the drop). */
static struct flow *splice_flow_new(struct ctx *c, unsigned int dir, int lfd,
				    const struct flow_key *hk, uint16_t tport)
{
	bool v6 = !inany_is4(&hk->a);
	union eref ref = { .type = EREF_UDP };
	union inany dst, any;
	sockaddr_inany sa;
	struct udp_flow *u;
	struct flow *fl;
	socklen_t sl;
	int fd;

	/* hk->pb is the listener's port: a target address of its spec */
	if ((!fwd_target_inany(dir_spec(c, dir), hk->pb, v6, &dst) &&
	     !splice_dst(c, dir, v6, &dst)) ||
	    !(fl = udp_flow_alloc(c, dir == UDP_FWD_IN)))
		return NULL;
	u = UDP_FLOW(fl);
	memset(&any, 0, sizeof(any));
	if (!v6)
		inany_from4(&any, (struct in_addr){ 0 });
	fd = dir == UDP_FWD_OUT ? udp_socket(&any, 0, 0, NULL)
				: ns_socket(c, v6);
	if (fd < 0)
		goto fail;
	u->sock = fd;
	u->splice = true;
	u->lsock = lfd;
	u->peer = hk->a;
	u->peer_port = hk->pa;
	u->local = hk->b;
	sl = inany_to_sa(&sa, &dst, tport);
	if (connect(fd, (struct sockaddr *)&sa, sl))
		goto fail;
	ref.idx = flow_idx(&c->flows, fl);
	if (ep_add(c, fd, EPOLLIN, ref))
		goto fail;
	flow_hash_add(&c->flows, fl, FLOW_SIDE_HOST, hk);
	return fl;
fail:
	debug("udp: loopback flow to port %u: %s", tport,
	      fd < 0 ? strerror(-fd) : strerror(errno));
	udp_flow_free(c, fl);
	return NULL;
}

/* Datagrams for loopback flows' own sockets, sent in runs per flow. */
struct splice_out {
	unsigned int n;
	uint32_t flow[UDP_BATCH];
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
};

/* splice_out_add() - queue len bytes at data for loopback flow fl as
 * the next message of batch o (the caller checks there is room). */
static void splice_out_add(struct splice_out *o, const struct ctx *c,
			   const struct flow *fl, void *data, size_t len)
{
	o->flow[o->n] = flow_idx(&c->flows, fl);
	o->iov[o->n].iov_base = data;
	o->iov[o->n].iov_len = len;
	o->mm[o->n].msg_hdr = (struct msghdr){ .msg_iov = &o->iov[o->n],
					       .msg_iovlen = 1 };
	o->n++;
}

/* splice_out_flush() - send what o holds: one sendmmsg() per run of
 * datagrams of the same flow. Call before anything that may free or
 * create flows (a freed index could be reused). */
static void splice_out_flush(struct ctx *c, struct splice_out *o)
{
	unsigned int i, j;

	for (i = 0; i < o->n; i = j) {
		struct flow *fl = flow_at(&c->flows, o->flow[i]);

		for (j = i + 1; j < o->n && o->flow[j] == o->flow[i]; j++)
			;
		udp_send_all(c, UDP_FLOW(fl)->sock, o->mm + i, j - i, NULL);
		c->udp.spliced += j - i;
	}
	o->n = 0;
}

/* splice_rxb_recv() - up to UDP_BATCH datagrams from fd into the splice
 * slots, with sender and local address (meta); lens[i] their lengths.
 * Returns how many (0 when drained). */
static unsigned int splice_rxb_recv(struct ctx *c, int fd, bool meta,
				    struct udp_rxb *b)
{
	unsigned int i;
	int r;

	for (i = 0; i < UDP_BATCH; i++) {
		b->frames[i] = c->udp.splice_buf + (size_t)i * UDP_SPLICE_SLOT;
		udp_rxb_slot(b, i, b->frames[i], UDP_SPLICE_SLOT, meta);
	}
	r = recvmmsg(fd, b->mm, UDP_BATCH, MSG_DONTWAIT, NULL);
	if (r <= 0)
		return 0;
	for (i = 0; i < (unsigned int)r; i++)
		b->lens[i] = b->mm[i].msg_len;
	return (unsigned int)r;
}

/* splice_listen_recv() - datagrams on a -U listener (in the namespace)
 * to the host, or on a -u listener without a guest link (--splice-only:
 * loopback clients only, to the namespace), each through its client's
 * flow. False when drained. */
static bool splice_listen_recv(struct ctx *c, union eref ref,
			       struct udp_rxb *b)
{
	unsigned int dir = ref.side & LREF_NS ? UDP_FWD_OUT : UDP_FWD_IN;
	const struct fwd_spec *spec = dir == UDP_FWD_OUT ? &c->conf.udp_out
							 : &c->conf.udp_in;
	bool v6 = ref.side & LREF_V6;
	struct splice_out o = { 0 };
	unsigned int n, i;

	n = splice_rxb_recv(c, (int)ref.idx, true, b);
	for (i = 0; i < n; i++) {
		union inany peer, local;
		struct flow_key hk;
		struct flow *fl;
		uint16_t pport;

		recv_meta(&b->mm[i].msg_hdr, v6, &peer, &pport, &local);
		if (dir == UDP_FWD_IN && !inany_is_loopback(&peer)) {
			drop(c, DROP_NO_LINK);
			continue;
		}
		flow_key_make(&hk, IPPROTO_UDP, &peer, pport, &local, ref.aux);
		if (dir == UDP_FWD_OUT)
			hk.pad[0] = KEY_TAG_NS;
		fl = flow_lookup(&c->flows, FLOW_SIDE_HOST, &hk);
		if (!fl) {
			splice_out_flush(c, &o);
			fl = splice_flow_new(c, dir, (int)ref.idx, &hk,
					     fwd_target(spec, ref.aux));
		}
		if (!fl) {
			drop(c, DROP_FLOW_TABLE_FULL);
			continue;
		}
		udp_flow_touch(c, fl);
		splice_out_add(&o, c, fl, b->frames[i], b->lens[i]);
	}
	splice_out_flush(c, &o);
	return n == UDP_BATCH;
}

/* splice_reply() - datagrams on a loopback flow's own socket back to its
 * client, through the listener. False when drained. */
static bool splice_reply(struct ctx *c, struct flow *fl, struct udp_rxb *b)
{
	struct udp_flow *u = UDP_FLOW(fl);
	union {
		uint8_t b[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} cb;
	size_t clen = udp_pktinfo_set(cb.b, sizeof(cb.b), &u->local);
	sockaddr_inany sa;
	socklen_t sl = inany_to_sa(&sa, &u->peer, u->peer_port);
	unsigned int n, i;

	n = splice_rxb_recv(c, u->sock, false, b);
	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		b->iov[i].iov_len = b->lens[i];
		b->mm[i].msg_hdr = (struct msghdr){
			.msg_name = &sa, .msg_namelen = sl,
			.msg_iov = &b->iov[i], .msg_iovlen = 1,
			.msg_control = clen ? cb.b : NULL,
			.msg_controllen = clen };
	}
	udp_send_all(c, u->lsock, b->mm, n, NULL);
	c->udp.spliced += n;
	u->replied = true;
	udp_flow_touch(c, fl);
	return n == UDP_BATCH;
}

void udp_splice_handler(struct ctx *c, struct flow *fl, uint32_t events)
{
	struct icmp_err e;
	struct udp_rxb b;
	int i;

	/* Errors (nobody on the target port): no way to pass them on. */
	for (i = 0; (events & EPOLLERR) && i < UDP_ERR_ROUNDS; i++)
		if (icmp_err_read(UDP_FLOW(fl)->sock, &e, c->udp.scratch,
				  UDP_SCRATCH_SIZE) <= 0)
			break;
	for (i = 0; (events & EPOLLIN) && i < UDP_RECV_ROUNDS; i++)
		if (!splice_reply(c, fl, &b))
			break;
}

/* --- listeners --------------------------------------------------------------- */

/* udp_listen_recv() - datagrams on -u port ref.aux's socket: to the guest
 * as frames, each on its client's flow, or (loopback clients in
 * namespace mode) through loopback flows. Returns false when drained. */
static bool udp_listen_recv(struct ctx *c, union eref ref, struct udp_rxb *b)
{
	bool v6 = ref.side & LREF_V6, full, ns = c->udp.splice_buf;
	uint16_t tport = fwd_target(&c->conf.udp_in, ref.aux);
	struct splice_out o = { 0 };
	unsigned int n, i;

	n = udp_rxb_recv(c, (int)ref.idx, v6, true, b, &full);
	for (i = 0; i < n; i++) {
		enum drop_reason r = DROP_FLOW_TABLE_FULL;
		struct flow_key hk;
		union inany peer, local;
		uint16_t pport;
		struct flow *fl;

		if (b->lens[i] == UDP_RX_NONE)
			continue;
		recv_meta(&b->mm[i].msg_hdr, v6, &peer, &pport, &local);
		flow_key_make(&hk, IPPROTO_UDP, &peer, pport, &local, ref.aux);
		fl = flow_lookup(&c->flows, FLOW_SIDE_HOST, &hk);
		if (!fl) {
			splice_out_flush(c, &o);
			fl = ns && inany_is_loopback(&peer)
			     ? splice_flow_new(c, UDP_FWD_IN, (int)ref.idx,
					       &hk, tport)
			     : udp_flow_in(c, (int)ref.idx, ref.aux, &hk, &r);
		}
		if (!fl)
			drop(c, r);
		else
			udp_flow_touch(c, fl);
		if (fl && UDP_FLOW(fl)->splice)
			splice_out_add(&o, c, fl, b->iov[i].iov_base,
				       b->lens[i]);
		if (fl && !UDP_FLOW(fl)->splice)
			b->keys[i] = fl->f.key[FLOW_SIDE_GUEST];
		else
			b->lens[i] = UDP_RX_NONE;	/* no frame */
	}
	splice_out_flush(c, &o);
	if (n)
		udp_frames_commit(c, b, n, v6);
	return full;
}

struct flow *udp_client_flow(struct ctx *c, int fd, uint16_t port,
			     const struct icmp_err *e)
{
	struct flow_key gk;
	struct flow *fl;
	struct udp_flow *u;

	if (!e->has_dst || !in_guest_key(c, port, &e->dst, e->dst_port, &gk) ||
	    !(fl = flow_lookup(&c->flows, FLOW_SIDE_GUEST, &gk)))
		return NULL;
	u = UDP_FLOW(fl);
	if (!u->shared || u->splice || u->sock != fd ||
	    u->peer_port != e->dst_port || !inany_eq(&u->peer, &e->dst))
		return NULL;	/* the guest's own flow, another port's */
	return fl;
}

void udp_listen_handler(struct ctx *c, union eref ref, uint32_t events)
{
	bool via_splice = ref.side & LREF_NS ||
			   (c->conf.splice_only && c->udp.splice_buf);
	struct icmp_err e;
	struct udp_rxb b;
	int i;

	/* Errors about clients: on -u sockets, about the guest's reply to
	 * one (-U: clients in the namespace, whose kernel tells them). */
	for (i = 0; (events & EPOLLERR) && i < UDP_ERR_ROUNDS; i++) {
		struct flow *fl;

		if (icmp_err_read((int)ref.idx, &e, c->udp.scratch,
				  UDP_SCRATCH_SIZE) <= 0)
			break;
		fl = ref.side & LREF_NS ? NULL
			 : udp_client_flow(c, (int)ref.idx, ref.aux, &e);
		if (fl)
			udp_err_to_guest(c, fl, &e);
	}
	for (i = 0; (events & EPOLLIN) && i < UDP_RECV_ROUNDS; i++)
		if (!(via_splice ? splice_listen_recv(c, ref, &b)
				 : udp_listen_recv(c, ref, &b)))
			break;
}

/* listen_one() - open a listener of direction dir on bind_to:port;
 * returns 0 or -errno. Namespace listeners: call in the namespace. */
static int listen_one(struct ctx *c, unsigned int dir,
		      const union inany *bind_to, uint16_t port,
		      const char *ifname)
{
	bool v6 = !inany_is4(bind_to);
	union eref ref = { .type = EREF_UDP_LISTEN,
			   .side = (uint8_t)(v6 | (dir == UDP_FWD_OUT ?
						   LREF_NS : 0)),
			   .aux = port };
	int fd, one = 1, rc;

	fd = udp_socket(bind_to, port,
			c->conf.freebind ? UDP_SOCK_FREEBIND : 0, ifname);
	if (fd < 0)
		return fd;
	if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_RECVPKTINFO : IP_PKTINFO, &one, sizeof(one))) {
		rc = -errno;
		close(fd);
		return rc;
	}
	ref.idx = (uint32_t)fd;
	if ((rc = ep_add(c, fd, EPOLLIN, ref))) {
		close(fd);
		return rc;
	}
	c->udp.listeners++;
	c->udp.fwd[dir].fds[port * 2 + v6] = fd + 1;
	return 0;
}

/* listen_fam() - port's listener of family v6, unless it is open or the
 * family is off or excluded by the port's bind address (fwd_bind_addr():
 * -U defaults to the namespace's loopback). Returns 1 if it opened one,
 * 0 if there was nothing to do, else -errno. */
static int listen_fam(struct ctx *c, unsigned int dir, uint16_t port, bool v6)
{
	struct in6_addr a6;
	struct in_addr a4;
	const char *ifn;
	union inany a;
	int rc;

	if (c->udp.fwd[dir].fds[port * 2 + v6] > 0 ||
	    !(v6 ? c->conf.ip6.enabled : c->conf.ip4.enabled) ||
	    !fwd_bind_addr(dir_spec(c, dir), port, v6, dir == UDP_FWD_OUT,
			   &a6, &a4, &ifn))
		return 0;
	if (v6)
		inany_from6(&a, &a6);
	else
		inany_from4(&a, a4);
	rc = listen_one(c, dir, &a, port, ifn);
	return rc ? rc : 1;
}

struct listen_job {
	struct ctx *c;
	unsigned int dir;
	const uint64_t *ports;
	bool quiet;		/* "all", "auto", retries: no warnings */
	bool once;		/* "all": no retries */
	bool emfile;		/* out of fds: the rest only wait for retry */
	int fatal_err;		/* first port open in no family: its errno */
	uint16_t fatal_port;
};

/* udp_opt() - the option of direction dir, for messages. */
static const char *udp_opt(unsigned int dir)
{
	return dir == UDP_FWD_OUT ? "-U" : "-u";
}

/* listen_port() - port's listeners that are not open yet; failures worth
 * it join the retry set, a port open in no family is noted in j. */
static void listen_port(struct listen_job *j, uint16_t port)
{
	struct udp_fwd_dir *d = &j->c->udp.fwd[j->dir];
	int64_t now = udp_now_ms(j->c);
	bool again = d->retry.map[port / 64] >> (port % 64) & 1, wait = false;
	int rc[2] = { 0, 0 }, v6;

	for (v6 = 0; v6 < 2 && !j->emfile; v6++) {
		rc[v6] = listen_fam(j->c, j->dir, port, v6);
		if (rc[v6] == 1 && again)
			info("udp: %s port %u (IPv%d) forwarded now",
			     udp_opt(j->dir), port, v6 ? 6 : 4);
		if (rc[v6] >= 0)
			continue;
		/* auto: even a lasting failure waits (backing off) rather
		 * than being tried again by every scan */
		wait |= fwd_retriable(-rc[v6]) ||
			dir_spec(j->c, j->dir)->mode == FWD_AUTO;
		j->emfile = rc[v6] == -EMFILE;
		if (!j->quiet && !again)
			warn("udp: cannot forward %s port %u (IPv%d): %s%s",
			     udp_opt(j->dir), port, v6 ? 6 : 4,
			     strerror(-rc[v6]),
			     fwd_retriable(-rc[v6]) ? ", retrying" : "");
	}
	if (d->fds[port * 2] > 0 || d->fds[port * 2 + 1] > 0)
		d->bound[port / 64] |= 1ULL << (port % 64);
	else if ((rc[0] < 0 || rc[1] < 0) && !j->fatal_err) {
		j->fatal_err = rc[0] < 0 ? -rc[0] : -rc[1];
		j->fatal_port = port;
	}
	fwd_retry_mark(&d->retry, port, (wait || j->emfile) && !j->once, now);
}

/* listen_ports_fn() - open listeners for the ports in j->ports (in the
 * namespace for -U: run through ns_call()). */
static int listen_ports_fn(void *arg)
{
	struct listen_job *j = arg;
	unsigned int w;

	for (w = 0; w < FWD_BITMAP_WORDS; w++) {
		uint64_t m = j->ports[w];

		for (; m; m &= m - 1)
			listen_port(j, (uint16_t)(w * 64 + (unsigned int)
						  __builtin_ctzll(m)));
	}
	return 0;
}

/* listen_ports() - listeners of direction dir for the ports in map.
 * Returns the first port open in no family (0: none), its errno in *err.
 * Callers outside the timer ask for it if some wait for a retry. */
static uint16_t listen_ports(struct ctx *c, unsigned int dir,
			     const uint64_t *map, bool quiet, int *err)
{
	struct listen_job j = { c, dir, map, quiet,
				dir_spec(c, dir)->mode == FWD_ALL, false, 0, 0 };
	int rc;

	if (dir == UDP_FWD_IN)
		listen_ports_fn(&j);
	else if ((rc = ns_call(c, listen_ports_fn, &j)) < 0 && !quiet)
		warn("udp: -U: cannot enter the namespace: %s", strerror(-rc));
	*err = j.fatal_err;
	return j.fatal_port;
}

/* listener_close() - close port's listener of family v6 in direction dir
 * (auto) and free the flows that use it. */
static void listener_close(struct ctx *c, unsigned int dir, uint16_t port,
			   bool v6)
{
	int *slot = &c->udp.fwd[dir].fds[port * 2 + v6], fd = *slot - 1;
	struct flow *fl, *nx;

	if (fd < 0)
		return;
	for (fl = flow_first(&c->flows, FLOW_UDP); fl; fl = nx) {
		struct udp_flow *u = UDP_FLOW(fl);

		nx = flow_next(&c->flows, fl);
		if ((u->shared && u->sock == fd) || (u->splice && u->lsock == fd))
			udp_flow_free(c, fl);
	}
	ep_del(c, fd);
	close(fd);
	*slot = 0;
	c->udp.listeners--;
}

/* What ports_open_fn() opens, all or none. */
struct strict_job {
	struct ctx *c;
	unsigned int dir;
	const uint64_t *ports;
	int err;		/* the first failure's errno, 0: none */
	uint16_t port;		/* ... and its port */
};

/* ports_open_fn() - every listener of j->ports not open yet, stopping
 * at the first failure (in the namespace for -U: through ns_call()). */
static int ports_open_fn(void *arg)
{
	struct strict_job *j = arg;
	unsigned int w;
	int v6, rc;

	for (w = 0; w < FWD_BITMAP_WORDS && !j->err; w++) {
		uint64_t m = j->ports[w];

		for (; m && !j->err; m &= m - 1) {
			uint16_t port = (uint16_t)(w * 64 + (unsigned int)
						   __builtin_ctzll(m));

			for (v6 = 0; v6 < 2 && !j->err; v6++)
				if ((rc = listen_fam(j->c, j->dir, port, v6)) < 0) {
					j->err = -rc;
					j->port = port;
				}
			j->c->udp.fwd[j->dir].bound[port / 64] |=
				1ULL << (port % 64);
		}
	}
	return 0;
}

int udp_fwd_ports_open(struct ctx *c, unsigned int dir, const uint64_t *map,
		       uint16_t *bad)
{
	uint64_t was[2][FWD_BITMAP_WORDS] = { { 0 } };
	struct strict_job j = { c, dir, map, 0, 0 };
	struct udp_fwd_dir *d = &c->udp.fwd[dir];
	unsigned int w;
	int rc, v6;

	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		for (uint64_t m = map[w]; m; m &= m - 1) {
			unsigned int port = w * 64 + (unsigned int)
					    __builtin_ctzll(m);

			for (v6 = 0; v6 < 2; v6++)
				if (d->fds[port * 2 + v6] > 0)
					was[v6][w] |= 1ULL << (port % 64);
		}
	if (dir == UDP_FWD_IN)
		ports_open_fn(&j);
	else if ((rc = ns_call(c, ports_open_fn, &j)) < 0)
		j.err = -rc;
	if (!j.err)
		return 0;
	*bad = j.port;
	for (w = 0; w < FWD_BITMAP_WORDS; w++)	/* what this call opened */
		for (uint64_t m = map[w]; m; m &= m - 1) {
			uint16_t port = (uint16_t)(w * 64 + (unsigned int)
						   __builtin_ctzll(m));

			for (v6 = 0; v6 < 2; v6++)
				if (!(was[v6][w] >> (port % 64) & 1))
					listener_close(c, dir, port, v6);
			if (!((was[0][w] | was[1][w]) >> (port % 64) & 1))
				d->bound[w] &= ~(1ULL << (port % 64));
		}
	return -j.err;
}

void udp_fwd_ports_close(struct ctx *c, unsigned int dir, const uint64_t *map)
{
	const struct fwd_spec *f = dir_spec(c, dir);
	struct udp_fwd_dir *d = &c->udp.fwd[dir];
	struct in6_addr a6;
	struct in_addr a4;
	const char *ifn;
	unsigned int w;
	int v6;

	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		for (uint64_t m = map[w]; m; m &= m - 1) {
			uint16_t port = (uint16_t)(w * 64 + (unsigned int)
						   __builtin_ctzll(m));
			bool on = fwd_port_set(f, port);

			for (v6 = 0; v6 < 2; v6++)
				if (!on || !fwd_bind_addr(f, port, v6,
							  dir == UDP_FWD_OUT,
							  &a6, &a4, &ifn))
					listener_close(c, dir, port, v6);
			if (!on) {
				d->retry.map[w] &= ~(1ULL << (port % 64));
				d->bound[w] &= ~(1ULL << (port % 64));
			}
		}
}

void udp_fwd_stop(struct ctx *c)
{
	unsigned int dir, port;

	c->udp.scan_ms = 0;			/* no "auto" scans */
	for (dir = 0; dir < 2; dir++) {
		struct udp_fwd_dir *d = &c->udp.fwd[dir];

		memset(&d->retry, 0, sizeof(d->retry));	/* no retries */
		memset(d->bound, 0, sizeof(d->bound));
		for (port = 0; d->fds && port < 65536; port++) {
			listener_close(c, dir, (uint16_t)port, false);
			listener_close(c, dir, (uint16_t)port, true);
		}
	}
}

void udp_listen_init(struct ctx *c)
{
	const struct fwd_spec *f = &c->conf.udp_in;
	unsigned int dir;
	uint16_t port;
	int err;

	for (dir = 0; dir < 2; dir++)
		if (!c->udp.fwd[dir].fds)
			c->udp.fwd[dir].fds = alloc_startup(65536 * 2 *
							    sizeof(int));
	if (c->conf.no_udp)	/* as pasta: no host-side UDP either */
		return;
	if (f->mode == FWD_ALL)
		listen_ports(c, UDP_FWD_IN, f->map, true, &err);
	else if (f->mode == FWD_SPEC &&
		 (port = listen_ports(c, UDP_FWD_IN, f->map, false, &err)))
		/* As pasta: a port asked for by number that cannot be
		 * bound at all is fatal (one family open: retry the other). */
		die("udp: cannot forward -u port %u: %s", port, strerror(err));
	if (c->udp.fwd[UDP_FWD_IN].retry.pending)
		timer_request(c, FWD_RETRY_MS);
}

/* --- auto ------------------------------------------------------------------ */

/* excl_mcast() - take out of want the ports of ferry's multicast
 * sockets (udp_mcast_ports()): on the host they are ferry's own, not a
 * service's (-U); in the guest they are a group's port, heard by the
 * group's socket on the host, which a -u listener would keep from
 * binding (-u). */
static void excl_mcast(const struct ctx *c, uint64_t *want)
{
	uint64_t m[FWD_BITMAP_WORDS] = { 0 };
	unsigned int w;

	udp_mcast_ports(c, m);
	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		want[w] &= ~m[w];
}

/* scan_side() - ports bound on the far side of direction dir, less our
 * own listeners there, our multicast sockets' ports and the spec's
 * exclusions. False if unreadable. */
static bool scan_side(const struct ctx *c, unsigned int dir, uint64_t *want)
{
	const struct udp_fwd_dir *d = &c->udp.fwd[dir];
	const uint64_t *ours = c->udp.fwd[!dir].bound;
	const uint64_t *excl = dir_spec(c, dir)->excl;
	unsigned int f, w;

	memset(want, 0, FWD_BITMAP_WORDS * sizeof(*want));
	for (f = 0; f < 2; f++)
		if (d->scan_fd[f] >= 0 &&
		    fwd_scan_fd(d->scan_fd[f], IPPROTO_UDP, want))
			return false;
	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		want[w] &= ~(ours[w] | excl[w]);
	want[0] &= ~1ULL;
	excl_mcast(c, want);
	return true;
}

/* auto_apply() - close listeners of ports no longer wanted (and forget
 * their retries), open new ones (not those waiting for a retry). */
static void auto_apply(struct ctx *c, unsigned int dir, const uint64_t *want)
{
	struct udp_fwd_dir *d = &c->udp.fwd[dir];
	const uint64_t *fixed = dir_spec(c, dir)->map;	/* ctl.c's adds */
	uint64_t add[FWD_BITMAP_WORDS];
	bool any = false;
	unsigned int w;
	int err;

	for (w = 0; w < FWD_BITMAP_WORDS; w++) {
		uint64_t gone = d->bound[w] & ~want[w] & ~fixed[w];

		d->retry.map[w] &= want[w];
		for (; gone; gone &= gone - 1) {
			uint16_t port = (uint16_t)(w * 64 +
						   (unsigned)__builtin_ctzll(gone));

			listener_close(c, dir, port, false);
			listener_close(c, dir, port, true);
			d->bound[w] &= ~(1ULL << (port % 64));
			info("udp: auto %s port %u closed", udp_opt(dir), port);
		}
		add[w] = want[w] & ~d->bound[w] & ~d->retry.map[w] & ~fixed[w];
		any |= add[w] != 0;
	}
	if (any)
		listen_ports(c, dir, add, true, &err);
}

/* retry_timer() - a retry round for dir's listeners if due; returns ms
 * until the next, INT64_MAX when none waits. */
static int64_t retry_timer(struct ctx *c, unsigned int dir, int64_t now)
{
	struct fwd_retry *r = &c->udp.fwd[dir].retry;
	uint64_t map[FWD_BITMAP_WORDS];
	int64_t left = fwd_retry_left(r, now);
	int err;

	if (left)
		return left;
	memcpy(map, r->map, sizeof(map));
	listen_ports(c, dir, map, true, &err);
	return fwd_retry_round(r, now);
}

int64_t udp_fwd_timer(struct ctx *c)
{
	uint64_t want[2][FWD_BITMAP_WORDS];
	int64_t now = udp_now_ms(c), next = INT64_MAX;
	bool ok[2] = { false, false };
	unsigned int dir;

	if (c->udp.scan_ms && now >= c->udp.scan_due_ms) {
		/* Both sides first, so that this round's new listeners
		 * are not taken for the other side's ports. */
		for (dir = 0; dir < 2; dir++)
			ok[dir] = dir_spec(c, dir)->mode == FWD_AUTO &&
				  scan_side(c, dir, want[dir]);
		for (dir = 0; dir < 2; dir++)
			if (ok[dir])
				auto_apply(c, dir, want[dir]);
		c->udp.scan_due_ms = now + c->udp.scan_ms;
	}
	if (c->udp.scan_ms)
		next = c->udp.scan_due_ms - now;
	for (dir = 0; dir < 2; dir++) {
		int64_t r = retry_timer(c, dir, now);	/* acts: once */

		next = MIN(next, r);
	}
	return next;
}

struct open_job {
	int fd[2];
};

/* open_tables() - in the guest namespace: its /proc/net/udp and udp6. */
static int open_tables(void *arg)
{
	struct open_job *j = arg;

	j->fd[0] = open("/proc/self/net/udp", O_RDONLY | O_CLOEXEC);
	j->fd[1] = open("/proc/self/net/udp6", O_RDONLY | O_CLOEXEC);
	return j->fd[0] < 0 ? -errno : 0;
}

/* auto_init() - direction dir follows the other side's bound ports. */
static void auto_init(struct ctx *c, unsigned int dir)
{
	struct udp_fwd_dir *d = &c->udp.fwd[dir];
	struct open_job j = { { -1, -1 } };
	int rc;

	if (dir == UDP_FWD_OUT) {
		j.fd[0] = open("/proc/net/udp", O_RDONLY | O_CLOEXEC);
		j.fd[1] = open("/proc/net/udp6", O_RDONLY | O_CLOEXEC);
		rc = j.fd[0] < 0 ? -errno : 0;
	} else {
		rc = ns_call(c, open_tables, &j);
	}
	if (rc < 0)
		warn("udp: %s auto: cannot read the socket table: %s",
		     dir == UDP_FWD_OUT ? "-U" : "-u", strerror(-rc));
	d->scan_fd[0] = j.fd[0];
	d->scan_fd[1] = j.fd[1];
	c->udp.scan_ms = test_env_u32("FERRY_TEST_UDP_SCAN_MS", UDP_SCAN_MS);
}

void udp_ns_init(struct ctx *c)
{
	const struct fwd_spec *out = &c->conf.udp_out;
	void *p;
	int err;

	if (c->conf.mode != MODE_NS || !c->udp.ready || c->conf.no_udp)
		return;
	p = mmap(NULL, (size_t)UDP_BATCH * UDP_SPLICE_SLOT,
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("udp: cannot allocate the loopback path buffer");
	c->udp.splice_buf = p;
	if (out->mode == FWD_SPEC || out->mode == FWD_ALL)
		listen_ports(c, UDP_FWD_OUT, out->map, out->mode == FWD_ALL,
			     &err);
	if (c->udp.fwd[UDP_FWD_OUT].retry.pending)
		timer_request(c, FWD_RETRY_MS);
	if (c->conf.udp_in.mode == FWD_AUTO)
		auto_init(c, UDP_FWD_IN);
	if (out->mode == FWD_AUTO)
		auto_init(c, UDP_FWD_OUT);
	if (c->udp.scan_ms) {
		c->udp.scan_due_ms = udp_now_ms(c);
		timer_request(c, udp_fwd_timer(c));
	}
}
