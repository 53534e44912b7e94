/* tcp_fwd.c - forwarded TCP ports: listeners, "auto" detection, and
 * host-initiated connections through the guest link.
 *
 * Theory of operation
 *
 * Listeners. -t (TCP_FWD_IN) listens on the host, -T (TCP_FWD_OUT, ns mode
 * only) inside the guest's namespace: its sockets are made by a helper
 * task in the namespace (ns_call()) and then served by ferry like any
 * other fd. A forwarded port gets one socket per enabled family (IPv6
 * with IPV6_V6ONLY), SO_REUSEADDR, bound to the spec's address or
 * interface (SO_BINDTODEVICE) for that port; -T binds the namespace's
 * loopback unless the spec names an address. The table lfd[] maps
 * (direction, family, port) to the listener, so ports can be closed again
 * and each direction can tell its own listeners from the user's.
 *
 * A listener that cannot be opened because of something that may change
 * (port taken, address or interface missing: fwd_retriable()) is retried
 * from the timer with backoff (struct fwd_retry, fwd.c) for as long as
 * its port is forwarded; its slot holds -errno meanwhile. An explicit -t
 * port warns once when a family fails and says when it works; one that
 * opens in no family at start-up is fatal, as in pasta (podman -p
 * expects a busy host port to fail loudly). "auto" retries quietly (the
 * other side listens there: the user wants the port). "all" takes what
 * is free at start-up and never retries: a port busy then belongs to a
 * host service, which must find it free again when it restarts.
 *
 * "auto" re-reads /proc/net/tcp and tcp6 every TCP_FWD_SCAN_MS: for -t the
 * namespace's files (opened once by the helper task: a /proc/net file
 * stays bound to the namespace it was opened in), for -T the host's.
 * Every listening port, minus the spec's exclusions and minus ports the
 * other direction listens on itself (ferry's own listeners would
 * otherwise be mirrored back), gets a listener; ports that stop listening
 * lose theirs.
 *
 * Connections. An accepted connection whose client is on the same
 * loopback (ns mode) is spliced to the other side's loopback at the target
 * port without touching the guest link (tcp_splice.c); so is every -T
 * connection. Any other -t connection goes through the guest link (with
 * --splice-only there is none: the client is reset): a FLOW_TCP flow (tcp_conn.h) in state TCP_CS_SYN_TO_GUEST sends a SYN to
 * the guest's address and target port, from the client's own address
 * unless that is local to the host (then from the gateway, as
 * nat_inbound_fwd() decides). The guest's SYN-ACK establishes the
 * connection (tcp_fwd_synack()) and tcp_in.c / tcp_out.c take over; a
 * segment acknowledging anything else gets an RST and changes nothing
 * (RFC 9293 3.10.7.3). The guest's RST with the ACK of our SYN (one
 * without is dropped), or no answer after TCP_SYN_RETRIES
 * retransmissions, resets the client.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "fwd_scan.h"
#include "log.h"
#include "nat.h"
#include "nsexec.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "util.h"

/* seccomp(all): accept4 close setsockopt
 *   (forwarded ports' connections) */
/* seccomp(all): bind listen socket(0=AF_INET) socket(0=AF_INET6)
 *   (auto forwards: listeners opened later) */
/* seccomp(setup): openat */

#define LFD_SLOTS	(2 * 2 * 65536)
#define LFD_NEW		(1 << 30)	/* opened, not yet registered */

/* lfd_idx() - index of the listener of (dir, family, port) in lfd. */
static size_t lfd_idx(enum tcp_fwd_dir dir, bool v6, unsigned int port)
{
	return ((size_t)dir * 2 + v6) * 65536 + port;
}

/* spec_of() - the forwarding spec of direction dir (-t or -T). */
static const struct fwd_spec *spec_of(const struct ctx *c,
				      enum tcp_fwd_dir dir)
{
	return dir == TCP_FWD_IN ? &c->conf.tcp_in : &c->conf.tcp_out;
}

/* family_on() - is IPv6 (v6) or IPv4 enabled? */
static bool family_on(const struct ctx *c, bool v6)
{
	return v6 ? c->conf.ip6.enabled : c->conf.ip4.enabled;
}

/* listen_sock() - a non-blocking listening socket on a:port (in the
 * calling task's network namespace). Returns the fd or -errno. */
static int listen_sock(const union inany *a, uint16_t port, const char *ifname,
		       bool freebind)
{
	bool v6 = !inany_is4(a);
	int s, one = 1, e;
	sockaddr_inany sa;
	socklen_t sl = inany_to_sa(&sa, a, port);

	s = socket(v6 ? AF_INET6 : AF_INET,
		   SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tcp_sock_opts(s);	/* inherited by every accepted socket */
	if (v6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (freebind)
		sock_freebind(s, v6);
	if ((e = sock_bind_dev(s, ifname))) {
		close(s);
		return e;
	}
	if (bind(s, &sa.sa, sl) || listen(s, TCP_FWD_BACKLOG)) {
		e = errno;
		close(s);
		return -e;
	}
	return s;
}

/* bind_addr() - where dir's listener for port binds in family v6: false
 * if the spec's bind address excludes that family (fwd_bind_addr()). */
static bool bind_addr(const struct ctx *c, enum tcp_fwd_dir dir, bool v6,
		      uint16_t port, union inany *a, const char **ifname)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (!fwd_bind_addr(spec_of(c, dir), port, v6, dir == TCP_FWD_OUT,
			   &a6, &a4, ifname))
		return false;
	inany_pick(a, v6, &a6, a4);
	return true;
}

/* in_map() - is port set in a FWD_BITMAP_WORDS bitmap? */
static bool in_map(const uint64_t *map, uint16_t port)
{
	return map[port / 64] >> (port % 64) & 1;
}

/* opt_name() - the option of direction dir, for messages. */
static const char *opt_name(enum tcp_fwd_dir dir)
{
	return dir == TCP_FWD_IN ? "-t" : "-T";
}

/* for_each_port() - iterate the ports set in a FWD_BITMAP_WORDS map. */
#define for_each_port(map, w, b, port)					\
	for ((w) = 0; (w) < FWD_BITMAP_WORDS; (w)++)			\
		for ((b) = 0; (b) < 64 && (map)[(w)] >> (b); (b)++)	\
			if (((map)[(w)] >> (b) & 1) &&			\
			    ((port) = (uint16_t)((w) * 64 + (b))))

/* What open_job() opens: ports in map, for direction dir. */
struct open_job {
	struct ctx *c;
	enum tcp_fwd_dir dir;
	const uint64_t *map;
};

/* open_job() - open the listeners of job->map that are not open (none
 * yet, or failed before) in the calling task's namespace; a new one's
 * slot in lfd[] gets (fd + 1) | LFD_NEW, a failure -errno. */
static int open_job(void *arg)
{
	struct open_job *j = arg;
	struct ctx *c = j->c;
	unsigned int w, b;
	uint16_t port = 0;
	const char *ifn;
	union inany a;
	int v6, fd;

	for_each_port(j->map, w, b, port) {
		for (v6 = 0; v6 < 2; v6++) {
			int32_t *slot = &c->tcp_fwd.lfd[lfd_idx(j->dir, v6,
								port)];

			if (*slot > 0 || !family_on(c, v6) ||
			    !bind_addr(c, j->dir, v6, port, &a, &ifn))
				continue;
			fd = listen_sock(&a, port, ifn, c->conf.freebind);
			*slot = fd < 0 ? fd : (fd + 1) | LFD_NEW;
		}
	}
	return 0;
}

/* register_slot() - put a listener open_job() made into the loop (again:
 * the port was waiting for a retry: say it works now). Returns the errno
 * of a failure to open it, else 0; a failure worth retrying stays in the
 * slot as -errno (unless once), any other clears it. */
static int register_slot(struct ctx *c, enum tcp_fwd_dir dir, bool v6,
			 uint16_t port, bool again, bool once)
{
	int32_t *slot = &c->tcp_fwd.lfd[lfd_idx(dir, v6, port)];
	union eref ref = { .type = EREF_TCP_LISTEN,
			   .side = (uint8_t)(v6 | dir << 1), .aux = port };
	int fd, rc, err, zero = 0;

	if (*slot < 0) {
		err = -*slot;
		if (once || !fwd_retriable(err))
			*slot = 0;
		return err;
	}
	if (!(*slot & LFD_NEW))
		return 0;
	fd = (*slot & ~LFD_NEW) - 1;
	ref.idx = (uint32_t)fd;
	/* Accepted sockets inherit the peek offset: one setsockopt per
	 * listener instead of one per connection (tcp_established()). */
	if (dir == TCP_FWD_IN && c->tcp.peek_off &&
	    !setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)))
		ref.side |= LISTEN_PEEK_OFF;
	if ((rc = ep_add(c, fd, EPOLLIN, ref))) {
		close(fd);
		*slot = rc;
		return register_slot(c, dir, v6, port, again, once);
	}
	*slot = fd + 1;
	c->tcp_fwd.st.listeners++;
	if (again)
		info("tcp: %s port %u (IPv%d) forwarded now", opt_name(dir),
		     port, v6 ? 6 : 4);
	return 0;
}

#define OPEN_QUIET	1	/* "all", "auto", retries: no warnings */
#define OPEN_FATAL	2	/* exit if a port opens in no family */
#define OPEN_ONCE	4	/* "all": no retries (see the top) */

/* open_ports() - listeners for the ports in map (in the namespace for
 * TCP_FWD_OUT), registered with the loop; failures worth it join the
 * retry set. how: OPEN_QUIET, OPEN_FATAL (explicit -t ports at start-up:
 * see the man page). */
static void open_ports(struct ctx *c, enum tcp_fwd_dir dir,
		       const uint64_t *map, unsigned int how)
{
	struct tcp_fwd_state *fs = &c->tcp_fwd;
	struct fwd_retry *r = &fs->retry[dir];
	struct open_job j = { c, dir, map };
	int64_t now = tcp_now_ms(c);
	unsigned int w, b;
	uint16_t port = 0;
	int rc, v6;

	rc = dir == TCP_FWD_OUT ? ns_call(c, open_job, &j) : open_job(&j);
	if (rc) {
		if (!(how & OPEN_QUIET))
			warn("tcp: cannot open -T listeners: %s", strerror(-rc));
		return;
	}
	for_each_port(map, w, b, port) {
		bool again = in_map(r->map, port), up = false, wait = false;
		int err[2];

		for (v6 = 0; v6 < 2; v6++) {
			int32_t s;

			err[v6] = register_slot(c, dir, v6, port, again,
						how & OPEN_ONCE);
			s = fs->lfd[lfd_idx(dir, v6, port)];
			up |= s > 0;
			wait |= s < 0;
		}
		fwd_retry_mark(r, port, wait, now);
		if ((how & OPEN_FATAL) && !up && (err[0] || err[1]))
			die("tcp: cannot forward %s port %u: %s", opt_name(dir),
			    port, strerror(err[0] ? err[0] : err[1]));
		for (v6 = 0; v6 < 2; v6++)
			if (err[v6] && !(how & OPEN_QUIET) && !again)
				warn("tcp: cannot forward %s port %u (IPv%d): "
				     "%s%s", opt_name(dir), port, v6 ? 6 : 4,
				     strerror(err[v6]),
				     fwd_retriable(err[v6]) ? ", retrying" : "");
	}
}

/* close_port() - close dir's listeners of port, forget its retries. */
static void close_port(struct ctx *c, enum tcp_fwd_dir dir, uint16_t port)
{
	int v6;

	for (v6 = 0; v6 < 2; v6++) {
		int32_t *slot = &c->tcp_fwd.lfd[lfd_idx(dir, v6, port)];

		if (*slot > 0) {
			ep_del(c, *slot - 1);
			close(*slot - 1);
		}
		*slot = 0;
	}
	fwd_retry_mark(&c->tcp_fwd.retry[dir], port, false, 0);
}

/* listening() - does dir have a listener of its own on port? */
static bool listening(const struct ctx *c, enum tcp_fwd_dir dir,
		      uint16_t port)
{
	return c->tcp_fwd.lfd[lfd_idx(dir, false, port)] > 0 ||
	       c->tcp_fwd.lfd[lfd_idx(dir, true, port)] > 0;
}

/* auto_scan() - one "auto" round for dir: listen where the watched side
 * listens, stop where it stopped. */
static void auto_scan(struct ctx *c, enum tcp_fwd_dir dir)
{
	struct tcp_fwd_state *fs = &c->tcp_fwd;
	const struct fwd_spec *f = spec_of(c, dir);
	uint64_t want[FWD_BITMAP_WORDS] = { 0 }, add[FWD_BITMAP_WORDS];
	uint64_t *have = fs->auto_map[dir];
	unsigned int w, b;
	uint16_t port = 0;
	bool any = false;
	int v6;

	for (v6 = 0; v6 < 2; v6++)
		if (fs->proc[dir][v6] >= 0 &&
		    fwd_scan_fd(fs->proc[dir][v6], IPPROTO_TCP, want))
			return;		/* unreadable now: change nothing */
	for (w = 0; w < FWD_BITMAP_WORDS; w++)	/* less explicit forwards */
		want[w] &= ~(f->excl[w] | f->map[w]);	/* (ctl.c adds them) */
	for_each_port(want, w, b, port)
		if (listening(c, !dir, port))
			want[w] &= ~(1ULL << b);
	for (w = 0; w < FWD_BITMAP_WORDS; w++) {
		uint64_t gone = have[w] & ~want[w] & ~f->map[w];

		add[w] = want[w] & ~have[w];
		any |= !!add[w];
		for (b = 0; b < 64 && gone >> b; b++)
			if (gone >> b & 1)
				close_port(c, dir, (uint16_t)(w * 64 + b));
		have[w] = want[w];
	}
	if (any)
		open_ports(c, dir, add, OPEN_QUIET);
}

/* retry_timer() - a retry round for dir's listeners if due. Returns
 * the ms until the next one, INT64_MAX when none waits. */
static int64_t retry_timer(struct ctx *c, enum tcp_fwd_dir dir, int64_t now)
{
	struct fwd_retry *r = &c->tcp_fwd.retry[dir];
	uint64_t map[FWD_BITMAP_WORDS];
	int64_t left = fwd_retry_left(r, now);

	if (left)
		return left;
	memcpy(map, r->map, sizeof(map));
	open_ports(c, dir, map, OPEN_QUIET);
	return fwd_retry_round(r, now);
}

void tcp_fwd_timer(struct ctx *c)
{
	struct tcp_fwd_state *fs = &c->tcp_fwd;
	int64_t now = tcp_now_ms(c), next = INT64_MAX, left;
	int dir;

	if (!fs->ready)
		return;
	if (fs->stopped)		/* draining: no listener again */
		goto splice;
	if (fs->proc[0][0] >= 0 || fs->proc[0][1] >= 0 ||
	    fs->proc[1][0] >= 0 || fs->proc[1][1] >= 0) {
		if (now >= fs->next_scan_ms) {
			auto_scan(c, TCP_FWD_IN);
			auto_scan(c, TCP_FWD_OUT);
			fs->st.scans++;
			fs->next_scan_ms = now + TCP_FWD_SCAN_MS;
		}
		next = fs->next_scan_ms;
	}
	for (dir = TCP_FWD_IN; dir <= TCP_FWD_OUT; dir++)
		if ((left = retry_timer(c, dir, now)) != INT64_MAX)
			next = MIN(next, now + left);
splice:
	if ((left = tcp_splice_timer(c, now)) != INT64_MAX)
		next = MIN(next, now + left);
	if (next != INT64_MAX)
		timer_request(c, MAX(next - now, 1));
}

void tcp_fwd_stop(struct ctx *c)
{
	struct tcp_fwd_state *fs = &c->tcp_fwd;
	unsigned int port;
	int dir;

	if (!fs->ready || fs->stopped)
		return;
	fs->stopped = true;
	for (dir = TCP_FWD_IN; dir <= TCP_FWD_OUT; dir++)
		for (port = 0; port < 65536; port++)
			close_port(c, (enum tcp_fwd_dir)dir, (uint16_t)port);
}

/* close_slot() - close dir's listener of port in family v6, if any. */
static void close_slot(struct ctx *c, enum tcp_fwd_dir dir, bool v6,
		       uint16_t port)
{
	int32_t *slot = &c->tcp_fwd.lfd[lfd_idx(dir, v6, port)];

	if (*slot > 0) {
		ep_del(c, *slot - 1);
		close(*slot - 1);
	}
	*slot = 0;
}

int tcp_fwd_ports_open(struct ctx *c, enum tcp_fwd_dir dir,
		       const uint64_t *map, uint16_t *bad)
{
	uint64_t was[2][FWD_BITMAP_WORDS] = { { 0 } };
	struct open_job j = { c, dir, map };
	unsigned int w, b;
	uint16_t port = 0;
	int rc = 0, v6;

	for_each_port(map, w, b, port)
		for (v6 = 0; v6 < 2; v6++)
			if (c->tcp_fwd.lfd[lfd_idx(dir, v6, port)] > 0)
				was[v6][w] |= 1ULL << b;
	if ((rc = dir == TCP_FWD_OUT ? ns_call(c, open_job, &j)
				     : open_job(&j))) {
		*bad = 0;
		return rc < 0 ? rc : -EIO;
	}
	for_each_port(map, w, b, port) {
		for (v6 = 0; v6 < 2; v6++) {
			int err = register_slot(c, dir, v6, port, false, true);

			if (err && !rc) {
				rc = -err;
				*bad = port;
			}
		}
	}
	if (!rc)
		return 0;
	for_each_port(map, w, b, port)		/* what this call opened */
		for (v6 = 0; v6 < 2; v6++)
			if (!(was[v6][w] >> b & 1))
				close_slot(c, dir, v6, port);
	return rc;
}

void tcp_fwd_ports_close(struct ctx *c, enum tcp_fwd_dir dir,
			 const uint64_t *map)
{
	const struct fwd_spec *f = spec_of(c, dir);
	unsigned int w, b;
	uint16_t port = 0;
	const char *ifn;
	union inany a;
	int v6;

	for_each_port(map, w, b, port) {
		for (v6 = 0; v6 < 2; v6++)
			if (!fwd_port_set(f, port) ||
			    !bind_addr(c, dir, v6, port, &a, &ifn))
				close_slot(c, dir, v6, port);
		if (!fwd_port_set(f, port))
			fwd_retry_mark(&c->tcp_fwd.retry[dir], port, false, 0);
	}
}

/* proc_job() - open /proc/net/tcp and tcp6 of the calling task's network
 * namespace into fds[2]. */
static int proc_job(void *arg)
{
	int *fds = arg;

	fds[0] = open("/proc/self/net/tcp", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/proc/self/net/tcp6", O_RDONLY | O_CLOEXEC);
	return 0;
}

void tcp_fwd_init(struct ctx *c)
{
	struct tcp_fwd_state *fs = &c->tcp_fwd;
	bool ns = c->conf.mode == MODE_NS;
	enum tcp_fwd_dir dir;

	fs->lfd = alloc_startup(LFD_SLOTS * sizeof(*fs->lfd));
	fs->proc[0][0] = fs->proc[0][1] = fs->proc[1][0] = fs->proc[1][1] = -1;
	fs->spare_fd = spare_fd_open();
	fs->ready = true;
	if (c->conf.no_tcp)
		return;
	for (dir = TCP_FWD_IN; dir <= TCP_FWD_OUT; dir++) {
		const struct fwd_spec *f = spec_of(c, dir);

		if (dir == TCP_FWD_OUT && !ns)
			break;
		if (f->mode == FWD_ALL)
			open_ports(c, dir, f->map, OPEN_QUIET | OPEN_ONCE);
		else if (f->mode == FWD_SPEC)
			open_ports(c, dir, f->map,
				   dir == TCP_FWD_IN ? OPEN_FATAL : 0);
		if (f->mode != FWD_AUTO || !ns)
			continue;
		if (dir == TCP_FWD_IN)
			ns_call(c, proc_job, fs->proc[dir]);
		else
			proc_job(fs->proc[dir]);
		if (fs->proc[dir][0] < 0 && fs->proc[dir][1] < 0)
			warn("tcp: %s auto: cannot read listening ports",
			     dir == TCP_FWD_IN ? "-t" : "-T");
	}
	tcp_fwd_timer(c);
}

/* --- Connections through the guest link ------------------------------- */

/* fwd_to_guest() - a -t connection from peer:pport through the guest
 * link to the guest's port, at its address or at to (the spec's target
 * address; NULL: none): a FLOW_TCP flow sending the guest a SYN;
 * peek_off: the socket's peek offset is 0 already (from the listener). */
static void fwd_to_guest(struct ctx *c, int s, const union inany *peer,
			 uint16_t pport, uint16_t port,
			 const union inany *to, bool peek_off)
{
	union inany seen = nat_inbound_fwd(c, peer, pport), ga;
	struct tcp_conn *conn;
	struct flow_key k;
	struct flow *fl;

	if (to)
		ga = *to;
	if (!c->link.up || (!to && !nat_guest_addr(c, &seen, &ga)) ||
	    inany_is4(&seen) != inany_is4(&ga)) {
		tcp_fwd_abort(c, s);
		return;
	}
	flow_key_make(&k, IPPROTO_TCP, &ga, port, &seen, pport);
	if (!tcp_fd_room(c, 1) ||
	    flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k) ||
	    !(fl = flow_alloc(&c->flows, FLOW_TCP))) {
		tcp_fwd_abort(c, s);
		return;
	}
	conn = FLOW_PRIV(fl, struct tcp_conn);
	conn->sock = s;
	conn->pend_head = conn->pend_tail = TCP_PEND_NONE;
	conn->state = TCP_CS_SYN_TO_GUEST;
	conn->flags = TCP_C_FWD | (peek_off ? TCP_C_PEEK_OFF : 0);
	conn->sockopt = TCP_SO_NODELAY;		/* from the listener */
	conn->ws_to_guest = TCP_WS_TO_GUEST;
	conn->wnd_to_guest = 65535;	/* SYN windows are never scaled */
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, &k);
	conn->isn_to_guest = seq_make(tcp_tw_reopen(c, &k, tcp_isn(c, fl)));
	conn->seq_to_guest = seq_add(conn->isn_to_guest, 1);
	conn->seq_acked_by_guest = conn->seq_to_guest;
	conn->last_ms = tcp_now_ms(c);
	tcp_sock_mss(conn);
	/* TCP_NODELAY and SO_KEEPALIVE came from the listener (accept()
	 * copies them: listen_sock()). */
	if (tcp_ep_add(c, fl)) {
		tcp_conn_close(c, fl, TCP_END_EPOLL);
		c->tcp_fwd.st.refused++;
		return;
	}
	tcp_send_flags(c, fl, TCP_F_SYN);
	tcp_timer_set(c, conn, TCP_SYN_RTO_MS);
	c->tcp_fwd.st.to_guest++;
	c->tcp.st.fwd_accepted++;
}

bool tcp_fwd_synack(struct ctx *c, struct flow *fl, const struct pkt *p,
		    enum drop_reason *r)
{
	struct tcp_conn *conn = FLOW_PRIV(fl, struct tcp_conn);
	const struct tcp_view *t = &p->tcp;

	/* RFC 9293 3.10.7.3 (SYN-SENT), first: an ACK of anything but our
	 * SYN (SEG.ACK =< ISS or > SND.NXT, ISS + 1 here) is answered with
	 * <SEQ=SEG.ACK><CTL=RST> and dropped; the connection stays. RSTs
	 * never come here (tcp_conn_input()). */
	if ((t->flags & TCP_F_ACK) &&
	    !seq_eq(seq_make(t->ack), conn->seq_to_guest)) {
		tcp_rst_reply(c, p);
		*r = DROP_TCP_SEQ;
		return false;
	}
	if ((t->flags & (TCP_F_SYN | TCP_F_ACK)) != (TCP_F_SYN | TCP_F_ACK)) {
		*r = DROP_TCP_STATE;
		return false;
	}
	tcp_guest_syn_params(c, fl, t, p->is_v6);
	tcp_established(c, fl);
	*r = DROP_NONE;
	return true;
}

bool tcp_fwd_syn_timeout(struct ctx *c, struct flow *fl)
{
	struct tcp_conn *conn = FLOW_PRIV(fl, struct tcp_conn);

	if (++conn->retries > TCP_SYN_RETRIES) {
		c->tcp.st.timeouts++;
		c->tcp_fwd.st.refused++;
		tcp_conn_close(c, fl, TCP_END_SYN_TIMEOUT);
		return true;
	}
	tcp_send_flags(c, fl, TCP_F_SYN);
	tcp_timer_set(c, conn, (int64_t)TCP_SYN_RTO_MS << conn->retries);
	return false;
}

void tcp_fwd_listen_handler(struct ctx *c, uint64_t ref64, uint32_t events)
{
	union eref ref = { .u64 = ref64 };
	enum tcp_fwd_dir dir = (ref.side >> 1) & 1 ? TCP_FWD_OUT : TCP_FWD_IN;
	bool v6 = ref.side & 1;
	uint16_t port = fwd_target(spec_of(c, dir), ref.aux);
	union inany taddr;
	bool to = fwd_target_inany(spec_of(c, dir), ref.aux, v6, &taddr);
	int i;

	(void)events;
	for (i = 0; i < TCP_FWD_ACCEPT_BATCH; i++) {
		sockaddr_inany sa;
		socklen_t sl = sizeof(sa);
		union inany peer;
		uint16_t pport;
		int s;

		s = accept4((int)ref.idx, &sa.sa, &sl,
			    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (s < 0 && (errno == EMFILE || errno == ENFILE)) {
			debug("tcp: accept: %s: connection refused",
			      strerror(errno));
			if (c->tcp_fwd.ready &&
			    accept_refuse_spare((int)ref.idx,
						&c->tcp_fwd.spare_fd)) {
				c->tcp_fwd.st.refused++;
				continue;
			}
		}
		if (s < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				debug("tcp: accept: %s", strerror(errno));
			return;
		}
		c->tcp_fwd.st.accepted++;
		inany_from_sa(&sa, &peer, &pport);
		if (dir == TCP_FWD_OUT ||
		    (c->conf.mode == MODE_NS && inany_is_loopback(&peer)))
			tcp_splice_start(c, s, v6, port, to ? &taddr : NULL,
					 dir);
		else
			fwd_to_guest(c, s, &peer, pport, port,
				     to ? &taddr : NULL,
				     ref.side & LISTEN_PEEK_OFF);
	}
}

/* The counters' statistics line (drop.h's registry), once there was a
 * listener, a connection or a scan (the others count connections). */
static const struct stat_item tcp_fwd_stat_items[] = {
	STAT("listeners", struct ctx, tcp_fwd.st.listeners),
	STAT("accepted", struct ctx, tcp_fwd.st.accepted),
	STAT("to guest", struct ctx, tcp_fwd.st.to_guest),
	STAT("spliced", struct ctx, tcp_fwd.st.spliced),
	STAT("refused", struct ctx, tcp_fwd.st.refused),
	STAT("splice resets", struct ctx, tcp_fwd.st.splice_rst),
	STAT("scans", struct ctx, tcp_fwd.st.scans),
	STAT("idle resets", struct ctx, tcp_fwd.st.splice_idle),
};

STAT_GROUP(tcp_fwd_stats) = {
	.order = 30, .what = "tcp forwarding", .when = STAT_ANY, .via = -1,
	.items = tcp_fwd_stat_items, .n = ARRAY_SIZE(tcp_fwd_stat_items),
};
