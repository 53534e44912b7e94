/* tcp_splice.c - the loopback fast path: forwarded connections whose both
 * ends are local are joined socket to socket with splice(), never
 * touching the guest link.
 *
 * Theory of operation
 *
 * A FLOW_TCP_SPLICE flow holds two connected sockets: s[0], accepted by a
 * forwarding listener, and s[1], ferry's connection to the target port
 * on the other side: for -t inside the namespace, from the pool of
 * sockets a helper task created there, to the guest's own address (its
 * loopback with --host-lo-to-ns-lo: nat_splice_dst(), as for UDP), which
 * the namespace routes over its lo; for -T an ordinary host socket to the
 * host's loopback. Bytes of direction d flow from s[d] to s[!d] through a
 * pipe of their own (pipe[d], at most TCP_SPLICE_PIPE bytes): splice()
 * moves page references, not bytes, so nothing is copied in user space
 * and nothing is buffered beyond the two sockets and the pipe.
 *
 * Moving (splice_move()) alternates socket -> pipe and pipe -> socket
 * until neither makes progress; everything is non-blocking. When the
 * writing side is full, direction d is BLOCKED: reading s[d] stops (no
 * EPOLLIN) and EPOLLOUT on s[!d] resumes it, so a slow reader throttles
 * the writer through TCP's own flow control.
 *
 * Closing follows TCP's: the end of one side's input (splice() returning
 * 0) is passed on with shutdown(SHUT_WR) on the other socket once the pipe
 * of that direction is empty (half-close); when both directions are shut,
 * both sockets are closed. An error on either socket (a reset, a failed
 * connect) aborts: both sockets are closed with SO_LINGER 0, so the
 * other peer gets an RST too and no TIME_WAIT is left behind. So does
 * inactivity: a connection on which nothing happened for TCP_IDLE_MS
 * (as for connections through the guest link, tcp.c) is reset from the
 * forwarding timer (tcp_splice_timer()).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "log.h"
#include "nat.h"
#include "nsexec.h"
#include "tcp_conn.h"
#include "util.h"

/* seccomp(ns): close connect fcntl getsockopt pipe2 setsockopt shutdown splice
 *   (loopback splicing) */
/* seccomp(ns): socket(0=AF_INET) socket(0=AF_INET6) */
/* seccomp(ns): getpeername
 *   (the peers named in the log) */

#ifndef TCP_SPLICE_PIPE
#define TCP_SPLICE_PIPE		(512u << 10)	/* pipe size per direction */
#endif
#define SPLICE_CHUNK		(1u << 20)	/* bytes asked per splice() */
#define SPLICE_ROUNDS		32		/* in/out rounds per event */

#define SPL_CONNECTING	0x0001
#define SPL_EOF(d)	(0x0002 << (d))	/* s[d] reached end of input */
#define SPL_SHUT(d)	(0x0008 << (d))	/* s[!d] shut for writing */
#define SPL_BLOCK(d)	(0x0020 << (d))	/* s[!d] full: wait for EPOLLOUT */
#define SPL_NOEP(i)	(0x0080 << (i))	/* s[i] done, out of epoll */

struct tcp_splice {
	int s[2];
	int pipe[2][2];			/* [direction][read end, write end] */
	uint32_t fill[2];		/* bytes in pipe[d] */
	uint32_t ev[2];			/* epoll events registered for s[i] */
	int64_t last_ms;		/* last event (tcp_now_ms()) */
	uint16_t flags;
};

_Static_assert(sizeof(struct tcp_splice) <= FLOW_PRIV_SIZE, "fits a flow");

/* spl_of() - the private part of spliced flow fl. */
static struct tcp_splice *spl_of(struct flow *fl)
{
	return FLOW_PRIV(fl, struct tcp_splice);
}

/* What pool_job() fills: the pool of one family. */
struct pool_req {
	struct ctx *c;
	bool v6;
};

/* pool_job() - fill the pool of one family with unconnected sockets,
 * created in the calling task's (the namespace's) network namespace. */
static int pool_job(void *arg)
{
	const struct pool_req *r = arg;
	struct tcp_fwd_state *fs = &r->c->tcp_fwd;
	bool v6 = r->v6;

	while (fs->pool_n[v6] < TCP_SPLICE_POOL) {
		int s = socket(v6 ? AF_INET6 : AF_INET,
			       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			       IPPROTO_TCP);

		if (s < 0)
			return -errno;
		fs->pool[v6][fs->pool_n[v6]++] = s;
	}
	return 0;
}

/* pool_take() - an unconnected namespace socket of the family, or
 * -errno. One helper task refills the whole pool. */
static int pool_take(struct ctx *c, bool v6)
{
	struct tcp_fwd_state *fs = &c->tcp_fwd;
	struct pool_req r = { c, v6 };
	int rc;

	if (!fs->pool_n[v6] && (rc = ns_call(c, pool_job, &r)) &&
	    !fs->pool_n[v6])
		return rc;
	return fs->pool[v6][--fs->pool_n[v6]];
}

/* spl_free() - close everything; abort: with SO_LINGER 0 (RST). */
static void spl_free(struct ctx *c, struct flow *fl, bool abort)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	struct tcp_splice *sp = spl_of(fl);
	int i;

	for (i = 0; i < 2; i++) {
		if (sp->s[i] >= 0) {
			if (abort)
				setsockopt(sp->s[i], SOL_SOCKET, SO_LINGER, &l,
					   sizeof(l));
			if (!(sp->flags & SPL_NOEP(i)))
				ep_del(c, sp->s[i]);
			close(sp->s[i]);
		}
		if (sp->pipe[i][0] >= 0)
			close(sp->pipe[i][0]);
		if (sp->pipe[i][1] >= 0)
			close(sp->pipe[i][1]);
	}
	if (abort)
		c->tcp_fwd.st.splice_rst++;
	flow_free(&c->flows, fl);
}

/* spl_events() - what each socket waits for now. */
static void spl_events(const struct ctx *c, struct flow *fl)
{
	struct tcp_splice *sp = spl_of(fl);
	int i;

	for (i = 0; i < 2; i++) {
		union eref ref = { .type = EREF_TCP_SPLICE, .side = (uint8_t)i,
				   .idx = flow_idx(&c->flows, fl) };
		uint32_t want = 0;

		if (sp->flags & SPL_NOEP(i))
			continue;
		if ((sp->flags & SPL_EOF(i)) && (sp->flags & SPL_SHUT(!i))) {
			/* Nothing to read or write on s[i] any more, and its
			 * EPOLLHUP cannot be masked: stop watching it. */
			ep_del(c, sp->s[i]);
			sp->flags |= SPL_NOEP(i);
			continue;
		}
		if (sp->flags & SPL_CONNECTING) {
			want = i ? EPOLLOUT : 0;
		} else {
			if (!(sp->flags & (SPL_EOF(i) | SPL_BLOCK(i))))
				want |= EPOLLIN;
			if (sp->flags & SPL_BLOCK(!i))
				want |= EPOLLOUT;
		}
		if (want != sp->ev[i] && !ep_mod(c, sp->s[i], want, ref))
			sp->ev[i] = want;
	}
}

/* splice_move() - move direction d (s[d] -> pipe[d] -> s[!d]) until
 * nothing moves; pass the end of input on once the pipe is empty.
 * Returns 0, or -1 on a socket error (the caller aborts). */
static int splice_move(struct tcp_splice *sp, int d)
{
	const unsigned int fl = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	int from = sp->s[d], to = sp->s[!d], round;
	ssize_t n;

	sp->flags &= (uint16_t)~SPL_BLOCK(d);
	for (round = 0; round < SPLICE_ROUNDS; round++) {
		bool progress = false;

		if (!(sp->flags & SPL_EOF(d))) {
			n = splice(from, NULL, sp->pipe[d][1], NULL,
				   SPLICE_CHUNK, fl);
			if (n > 0) {
				sp->fill[d] += (uint32_t)n;
				progress = true;
			} else if (!n) {
				sp->flags |= SPL_EOF(d);
			} else if (errno != EAGAIN && errno != EINTR) {
				return -1;
			}
		}
		if (sp->fill[d]) {
			n = splice(sp->pipe[d][0], NULL, to, NULL, sp->fill[d],
				   fl);
			if (n > 0) {
				sp->fill[d] -= (uint32_t)n;
				progress = true;
			} else if (n < 0 && errno == EAGAIN) {
				sp->flags |= SPL_BLOCK(d);
				break;
			} else if (n < 0 && errno != EINTR) {
				return -1;
			}
		}
		if (!progress)
			break;
	}
	if ((sp->flags & SPL_EOF(d)) && !sp->fill[d] &&
	    !(sp->flags & SPL_SHUT(d))) {
		shutdown(to, SHUT_WR);
		sp->flags |= SPL_SHUT(d);
	}
	return 0;
}

/* spl_connected() - the connection to the other side's loopback
 * completed (or failed). Returns false when the flow was freed. */
static bool spl_connected(struct ctx *c, struct flow *fl)
{
	struct tcp_splice *sp = spl_of(fl);
	socklen_t sl = sizeof(int);
	int err = 0;

	if (getsockopt(sp->s[1], SOL_SOCKET, SO_ERROR, &err, &sl) || err) {
		debug("tcp splice: connect: %s", strerror(err ? err : errno));
		spl_free(c, fl, true);
		return false;
	}
	sp->flags &= (uint16_t)~SPL_CONNECTING;
	return true;
}

void tcp_splice_handler(struct ctx *c, uint64_t ref64, uint32_t events)
{
	union eref ref = { .u64 = ref64 };
	struct flow *fl = flow_at(&c->flows, ref.idx);
	struct tcp_splice *sp;
	int i = ref.side & 1;
	bool bad;

	if (!fl || fl->f.type != FLOW_TCP_SPLICE)
		return;
	sp = spl_of(fl);
	sp->last_ms = tcp_now_ms(c);
	if (sp->flags & SPL_CONNECTING) {
		if (!i) {		/* only errors: the client left */
			if (events & (EPOLLERR | EPOLLHUP))
				spl_free(c, fl, true);
			return;
		}
		if (!spl_connected(c, fl))
			return;
		bad = splice_move(sp, 0) || splice_move(sp, 1);
	} else {
		bad = (events & EPOLLERR) ||
		      ((events & EPOLLOUT) && splice_move(sp, !i)) ||
		      ((events & (EPOLLIN | EPOLLHUP)) && splice_move(sp, i));
	}
	if (bad) {
		spl_free(c, fl, true);
		return;
	}
	if ((sp->flags & SPL_SHUT(0)) && (sp->flags & SPL_SHUT(1))) {
		spl_free(c, fl, false);
		return;
	}
	spl_events(c, fl);
}

/* spl_pipes() - the two pipes, sized to TCP_SPLICE_PIPE where allowed
 * (over the user's pipe quota the kernel keeps them small). */
static int spl_pipes(struct tcp_splice *sp)
{
	int d;

	for (d = 0; d < 2; d++) {
		if (pipe2(sp->pipe[d], O_NONBLOCK | O_CLOEXEC))
			return -errno;
		fcntl(sp->pipe[d][1], F_SETPIPE_SZ, (int)TCP_SPLICE_PIPE);
	}
	return 0;
}

/* spl_connect() - the socket towards the target port on the other side
 * (see the top), connecting. Returns the fd or -errno. */
static int spl_connect(struct ctx *c, bool v6, uint16_t port,
		       const union inany *to, enum tcp_fwd_dir dir)
{
	union inany dst;
	sockaddr_inany sa;
	socklen_t sl;
	int s, e;

	if (to) {
		dst = *to;		/* the spec's target address */
	} else if (dir == TCP_FWD_IN) {
		if (!nat_splice_dst(c, v6, &dst))
			return -EADDRNOTAVAIL;
	} else if (v6) {
		inany_from6(&dst, &in6addr_loopback);
	} else {
		inany_from4(&dst, (struct in_addr){ htonl(INADDR_LOOPBACK) });
	}
	sl = inany_to_sa(&sa, &dst, port);
	if (dir == TCP_FWD_IN)
		s = pool_take(c, v6);
	else if ((s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM |
			     SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP)) < 0)
		s = -errno;
	if (s < 0)
		return s;
	tcp_sock_opts(s);
	if (connect(s, &sa.sa, sl) && errno != EINPROGRESS) {
		e = errno;
		close(s);
		return -e;
	}
	return s;
}

void tcp_splice_start(struct ctx *c, int s, bool v6, uint16_t port,
		      const union inany *to, enum tcp_fwd_dir dir)
{
	union eref ref = { .type = EREF_TCP_SPLICE };
	struct tcp_splice *sp;
	struct flow *fl;
	int t;

	if (!tcp_fd_room(c, TCP_SPLICE_FDS) ||
	    !(fl = flow_alloc(&c->flows, FLOW_TCP_SPLICE))) {
		tcp_fwd_abort(c, s);
		return;
	}
	sp = spl_of(fl);
	sp->s[0] = s;
	sp->s[1] = -1;
	sp->pipe[0][0] = sp->pipe[0][1] = sp->pipe[1][0] = sp->pipe[1][1] = -1;
	sp->flags = SPL_CONNECTING;
	sp->last_ms = tcp_now_ms(c);
	/* s has TCP_NODELAY and SO_KEEPALIVE from its listener. */
	ref.idx = flow_idx(&c->flows, fl);
	if (spl_pipes(sp) || (t = spl_connect(c, v6, port, to, dir)) < 0) {
		spl_free(c, fl, true);
		c->tcp_fwd.st.refused++;
		return;
	}
	sp->s[1] = t;
	sp->ev[1] = EPOLLOUT;
	ref.side = 1;
	if (ep_add(c, t, EPOLLOUT, ref)) {
		sp->s[1] = -1;
		close(t);
	}
	ref.side = 0;
	if (sp->s[1] < 0 || ep_add(c, s, 0, ref)) {
		spl_free(c, fl, true);
		c->tcp_fwd.st.refused++;
		return;
	}
	c->tcp_fwd.st.spliced++;
	timer_request(c, TCP_IDLE_MS);
}

int64_t tcp_splice_timer(struct ctx *c, int64_t now)
{
	int64_t next = INT64_MAX;
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP_SPLICE); fl; fl = nx) {
		int64_t due = spl_of(fl)->last_ms + TCP_IDLE_MS;

		nx = flow_next(&c->flows, fl);
		if (due <= now) {
			c->tcp_fwd.st.splice_idle++;
			spl_free(c, fl, true);
		} else {
			next = MIN(next, due - now);
		}
	}
	return next;
}

/* spl_tuple() - "client -> target" of a spliced connection, as its two
 * sockets see their peers (s[0] accepted: its peer is the client; s[1]
 * ferry's: its peer is the target), for the log. */
static void spl_tuple(const struct tcp_splice *sp, char *buf, size_t len)
{
	struct flow_key k = { 0 };
	sockaddr_inany sa;
	socklen_t sl = sizeof(sa);

	if (!getpeername(sp->s[0], &sa.sa, &sl))
		inany_from_sa(&sa, &k.a, &k.pa);
	sl = sizeof(sa);
	if (sp->s[1] >= 0 && !getpeername(sp->s[1], &sa.sa, &sl))
		inany_from_sa(&sa, &k.b, &k.pb);
	flow_key_str(&k, buf, len);
}

void tcp_splice_drain_end(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP_SPLICE); fl; fl = nx) {
		char t[FLOW_KEY_STRLEN];

		nx = flow_next(&c->flows, fl);
		spl_tuple(spl_of(fl), t, sizeof(t));
		warn("tcp splice: %s reset at the linger deadline", t);
		spl_free(c, fl, true);
	}
}
