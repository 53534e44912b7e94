/* tcp_repair.c - a TCP connection's host socket read out and built
 * again in repair mode (TCP_REPAIR), so that it survives a live
 * migration: same 4-tuple, same sequence numbers, same queues, and the
 * peer never sees a handshake, a FIN or an RST.
 *
 * Theory of operation: a socket in repair mode (switched by the helper,
 * repair.c) exposes what a connection is. On the source,
 * tcp_repair_dump() reads its addresses, the options the handshake
 * agreed (TCP_INFO, TCP_MAXSEG: the MSS clamp in repair mode), its
 * timestamp clock (TCP_TIMESTAMP), its windows (TCP_REPAIR_WINDOW), and
 * per queue (TCP_REPAIR_QUEUE) the sequence number at its end
 * (TCP_QUEUE_SEQ), its length (SIOCOUTQ, SIOCOUTQNSD, SIOCINQ) and its
 * bytes (recv() with MSG_PEEK reads either queue in repair mode). The
 * send queue holds what the peer has not acknowledged; the receive queue
 * what ferry has not dropped: the bytes the guest has not acknowledged
 * yet (ferry reads with MSG_PEEK, tcp_out.c) and those it acknowledged
 * that ferry did not drop yet (tcp_conn.consume), which the caller skips.
 * The caller then closes the socket, still in repair mode: the kernel
 * forgets it without a segment.
 *
 * A socket in repair mode still takes what the peer sends, and
 * acknowledges it: bytes arriving after the dump would be acknowledged
 * and lost. So as it goes into repair mode, the socket gets a filter
 * that drops every segment (SO_ATTACH_FILTER, one BPF "return 0": the
 * helper attaches it, repair.c REPAIR_FREEZE, as that needs a
 * capability): the peer sees no ACK and sends again, later, to the
 * socket that replaced this one. tcp_repair_thaw() removes it if the
 * connection stays. A socket closed in repair mode is
 * gone without a segment, but the peer's next one then gets an RST from
 * the kernel: so the source keeps it, frozen, until the destination's
 * socket exists (migrate.c, --migrate-no-linger).
 *
 * On the destination, tcp_repair_bind() and tcp_repair_connect() do it
 * backwards on a fresh socket in repair mode: bind() to the same local
 * address and port (repair mode forces the reuse), the sequence numbers
 * at each queue's start (TCP_QUEUE_SEQ, only possible before connect()),
 * connect() (in repair mode: established at once, no SYN; it fails with
 * EADDRNOTAVAIL while the source's socket of the same 4-tuple lives on
 * this host, and may be tried again), the options
 * (TCP_REPAIR_OPTIONS) and the timestamp offset; tcp_repair_queue() then
 * writes each queue's bytes back (a send() in repair mode queues them as
 * sent, or as received for the receive queue), and tcp_repair_window()
 * the windows, which the kernel checks against the receive queue's end.
 * Leaving repair mode (the helper again) sends a window probe: the peer
 * answers with its ACK and window and the connection runs on. Bytes the
 * peer had not acknowledged go again after the retransmission timeout.
 *
 * A queue that does not fit the socket's buffer as it is made one is
 * given room first (SO_SNDBUF, SO_RCVBUF: twice its length), as the
 * source's buffer had grown to hold it.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "flow.h"
#include "mig_state.h"
#include "tcp_repair.h"

/* seccomp(vu): getsockopt setsockopt getsockname getpeername recvfrom
 *   (reading a socket in repair mode) */
/* seccomp(vu): ioctl(1=SIOCINQ) ioctl(1=SIOCOUTQ) ioctl(1=SIOCOUTQNSD)
 *   (its queues' lengths) */
/* seccomp(vu): bind connect sendmsg
 *   (building one again) */
/* seccomp(vu): setsockopt
 *   (SO_DETACH_FILTER: a frozen socket thawed) */

int tcp_repair_thaw(int s)
{
	int zero = 0;

	return setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero,
			  sizeof(zero)) ? -errno : 0;
}

/* fail() - -errno of the call named what (in *out). */
static int fail(const char *what, const char **out)
{
	*out = what;
	return errno ? -errno : -EIO;
}

/* opt_get()/opt_set() - a TCP-level int option. */
static int opt_get(int s, int name, int *v)
{
	socklen_t sl = sizeof(*v);

	return getsockopt(s, IPPROTO_TCP, name, v, &sl);
}

static int opt_set(int s, int name, int v)
{
	return setsockopt(s, IPPROTO_TCP, name, &v, sizeof(v));
}

/* addr_get() - a socket address into 16 bytes and a port. */
static void addr_get(const sockaddr_inany *sa, uint8_t *a, uint16_t *port)
{
	memset(a, 0, 16);
	if (sa->sa.sa_family == AF_INET6) {
		memcpy(a, &sa->v6.sin6_addr, 16);
		*port = ntohs(sa->v6.sin6_port);
	} else {
		memcpy(a, &sa->v4.sin_addr, 4);
		*port = ntohs(sa->v4.sin_port);
	}
}

/* addr_make() - 16 bytes and a port as a socket address of family v6;
 * its length. */
static socklen_t addr_make(sockaddr_inany *sa, bool v6, const uint8_t *a,
			   uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (v6) {
		sa->v6.sin6_family = AF_INET6;
		memcpy(&sa->v6.sin6_addr, a, 16);
		sa->v6.sin6_port = htons(port);
		return sizeof(sa->v6);
	}
	sa->v4.sin_family = AF_INET;
	memcpy(&sa->v4.sin_addr, a, 4);
	sa->v4.sin_port = htons(port);
	return sizeof(sa->v4);
}

/* dump_ids() - addresses, options, MSS, timestamp, windows. */
static int dump_ids(int s, struct mig_tcp_sock *d, const char **what)
{
	struct tcp_repair_window w;
	sockaddr_inany la = { .ss = { .ss_family = AF_UNSPEC } }, pa = la;
	socklen_t sl = sizeof(la);
	struct tcp_info ti;
	int v;

	if (getsockname(s, &la.sa, &sl))
		return fail("getsockname", what);
	sl = sizeof(pa);
	if (getpeername(s, &pa.sa, &sl))
		return fail("getpeername", what);
	d->v6 = la.sa.sa_family == AF_INET6;
	addr_get(&la, d->local, &d->lport);
	addr_get(&pa, d->peer, &d->pport);
	sl = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl))
		return fail("TCP_INFO", what);
	d->opts = ((ti.tcpi_options & TCPI_OPT_SACK) ? MIG_SOCK_SACK : 0) |
		  ((ti.tcpi_options & TCPI_OPT_TIMESTAMPS) ? MIG_SOCK_TS : 0) |
		  ((ti.tcpi_options & TCPI_OPT_WSCALE) ? MIG_SOCK_WS : 0);
	d->snd_ws = ti.tcpi_snd_wscale;
	d->rcv_ws = ti.tcpi_rcv_wscale;
	if (opt_get(s, TCP_MAXSEG, &v))
		return fail("TCP_MAXSEG", what);
	d->mss = (uint16_t)v;
	if (opt_get(s, TCP_TIMESTAMP, &v))
		return fail("TCP_TIMESTAMP", what);
	d->ts = (uint32_t)v;
	sl = sizeof(w);
	if (getsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, &sl))
		return fail("TCP_REPAIR_WINDOW", what);
	d->snd_wl1 = w.snd_wl1;
	d->snd_wnd = w.snd_wnd;
	d->max_window = w.max_window;
	d->rcv_wnd = w.rcv_wnd;
	d->rcv_wup = w.rcv_wup;
	return 0;
}

/* peek() - n bytes of the selected queue into p: 0, or -errno (a short
 * read is -EIO). */
static int peek(int s, uint8_t *p, size_t n, const char **what)
{
	ssize_t r;

	if (!n)
		return 0;
	r = recv(s, p, n, MSG_PEEK | MSG_DONTWAIT);
	if (r < 0)
		return fail("recv(MSG_PEEK)", what);
	if ((size_t)r != n) {
		*what = "recv(MSG_PEEK): short";
		return -EIO;
	}
	return 0;
}

int tcp_repair_dump(int s, uint32_t rskip, struct mig_tcp_sock *d,
		    uint8_t *buf, size_t cap, const char **what)
{
	int sq, ns, rq, seq;
	int rc;

	memset(d, 0, sizeof(*d));
	if ((rc = dump_ids(s, d, what)))
		return rc;
	if (opt_set(s, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE))
		return fail("TCP_REPAIR_QUEUE", what);
	if (opt_get(s, TCP_QUEUE_SEQ, &seq))
		return fail("TCP_QUEUE_SEQ (send)", what);
	if (ioctl(s, SIOCOUTQ, &sq) || ioctl(s, SIOCOUTQNSD, &ns))
		return fail("SIOCOUTQ", what);
	if (ioctl(s, SIOCINQ, &rq))
		return fail("SIOCINQ", what);
	if (sq < 0 || ns < 0 || ns > sq || rq < 0 || (uint32_t)rq < rskip ||
	    (size_t)sq + (size_t)rq > cap) {
		*what = "queues larger than the state allows";
		return -ENOBUFS;
	}
	d->sndq = (uint32_t)sq;
	d->notsent = (uint32_t)ns;
	d->snd_seq = (uint32_t)seq - d->sndq;
	if ((rc = peek(s, buf, d->sndq, what)))
		return rc;
	if (opt_set(s, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE))
		return fail("TCP_REPAIR_QUEUE", what);
	if (opt_get(s, TCP_QUEUE_SEQ, &seq))
		return fail("TCP_QUEUE_SEQ (receive)", what);
	if ((rc = peek(s, buf + d->sndq, (size_t)rq, what)))
		return rc;
	/* What ferry may drop is not moved: the queue starts after it. */
	memmove(buf + d->sndq, buf + d->sndq + rskip, (size_t)rq - rskip);
	d->rcvq = (uint32_t)rq - rskip;
	d->rcv_seq = (uint32_t)seq - d->rcvq;
	return 0;
}

/* set_seq() - the start of queue q (TCP_QUEUE_SEQ, before connect()). */
static int set_seq(int s, int q, uint32_t seq, const char **what)
{
	if (opt_set(s, TCP_REPAIR_QUEUE, q))
		return fail("TCP_REPAIR_QUEUE", what);
	if (opt_set(s, TCP_QUEUE_SEQ, (int)seq))
		return fail("TCP_QUEUE_SEQ", what);
	return 0;
}

/* set_opts() - what the handshake agreed, after connect(). */
static int set_opts(int s, const struct mig_tcp_sock *d, const char **what)
{
	struct tcp_repair_opt o[4];
	unsigned int n = 0;

	o[n++] = (struct tcp_repair_opt){ TCPOPT_MAXSEG, d->mss };
	if (d->opts & MIG_SOCK_WS)
		o[n++] = (struct tcp_repair_opt){
			TCPOPT_WINDOW, d->snd_ws + ((uint32_t)d->rcv_ws << 16) };
	if (d->opts & MIG_SOCK_SACK)
		o[n++] = (struct tcp_repair_opt){ TCPOPT_SACK_PERMITTED, 0 };
	if (d->opts & MIG_SOCK_TS)
		o[n++] = (struct tcp_repair_opt){ TCPOPT_TIMESTAMP, 0 };
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_OPTIONS, o,
		       (socklen_t)(n * sizeof(o[0]))))
		return fail("TCP_REPAIR_OPTIONS", what);
	if ((d->opts & MIG_SOCK_TS) && opt_set(s, TCP_TIMESTAMP, (int)d->ts))
		return fail("TCP_TIMESTAMP", what);
	return 0;
}

/* room() - a buffer (SO_SNDBUF or SO_RCVBUF) for a queue of n bytes. */
static int room(int s, int name, uint32_t n, const char **what)
{
	socklen_t sl = sizeof(int);
	int v = 0;

	if (!n || getsockopt(s, SOL_SOCKET, name, &v, &sl))
		return 0;
	if (v >= 0 && (uint64_t)v >= 2ull * n)
		return 0;
	v = n > (1u << 29) ? INT32_MAX : (int)(2 * n);
	if (setsockopt(s, SOL_SOCKET, name, &v, sizeof(v)))
		return fail(name == SO_SNDBUF ? "SO_SNDBUF" : "SO_RCVBUF",
			    what);
	return 0;
}

int tcp_repair_bind(int s, const struct mig_tcp_sock *d, const char **what)
{
	sockaddr_inany a;
	socklen_t al = addr_make(&a, d->v6, d->local, d->lport);

	if (bind(s, &a.sa, al))
		return fail("bind", what);
	return 0;
}

int tcp_repair_connect(int s, const struct mig_tcp_sock *d,
		       const char **what)
{
	sockaddr_inany a;
	socklen_t al;
	int rc;

	if ((rc = set_seq(s, TCP_SEND_QUEUE, d->snd_seq, what)) ||
	    (rc = set_seq(s, TCP_RECV_QUEUE, d->rcv_seq, what)))
		return rc;
	al = addr_make(&a, d->v6, d->peer, d->pport);
	if (connect(s, &a.sa, al))
		return fail("connect", what);
	if ((rc = set_opts(s, d, what)))
		return rc;
	if ((rc = room(s, SO_SNDBUF, d->sndq, what)) ||
	    (rc = room(s, SO_RCVBUF, d->rcvq, what)))
		return rc;
	return 0;
}

int tcp_repair_queue(int s, unsigned int q, const uint8_t *p, size_t n,
		     const char **what)
{
	if (opt_set(s, TCP_REPAIR_QUEUE,
		    q == MIG_Q_SEND ? TCP_SEND_QUEUE : TCP_RECV_QUEUE))
		return fail("TCP_REPAIR_QUEUE", what);
	while (n) {
		struct iovec iov = { (void *)p, n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t r = sendmsg(s, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r <= 0)
			return fail(q == MIG_Q_SEND ? "send (send queue)"
						    : "send (receive queue)",
				    what);
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int tcp_repair_window(int s, const struct mig_tcp_sock *d,
		      const char **what)
{
	struct tcp_repair_window w = {
		.snd_wl1 = d->snd_wl1, .snd_wnd = d->snd_wnd,
		.max_window = d->max_window, .rcv_wnd = d->rcv_wnd,
		.rcv_wup = d->rcv_wup,
	};

	if (opt_set(s, TCP_REPAIR_QUEUE, TCP_NO_QUEUE))
		return fail("TCP_REPAIR_QUEUE", what);
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)))
		return fail("TCP_REPAIR_WINDOW", what);
	return 0;
}
