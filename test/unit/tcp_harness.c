/* tcp_harness.c - the test guest of tcp_harness.h: frames from the
 * guest's side, the loop driven by hand (pump, timers), host listeners and
 * the handshake. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "nat.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "unit.h"
#include "util.h"
#include "tcp_harness.h"

size_t guest_frame(struct tguest *g, uint8_t *f, uint32_t seq,
		   uint8_t flags, const void *data, size_t len,
		   const uint8_t *opts, size_t optlen)
{
	uint8_t l4[9100];	/* up to MTU 9000 */

	memset(l4, 0, TCP_HLEN + optlen);
	wr16(l4, g->sport);
	wr16(l4 + 2, g->dport);
	wr32(l4 + 4, seq);
	wr32(l4 + 8, (flags & TCP_F_ACK) ? g->ack : 0);
	l4[12] = (uint8_t)(((TCP_HLEN + optlen) / 4) << 4);
	l4[13] = flags;
	wr16(l4 + 14, g->wnd || g->wnd_raw ? g->wnd : 65535);
	if (optlen)
		memcpy(l4 + TCP_HLEN, opts, optlen);
	if (len)
		memcpy(l4 + TCP_HLEN + optlen, data, len);
	return g->v6 ? test_frame_ip6(f, "2001:db8::2", "fe80::1", IPPROTO_TCP,
				      l4, TCP_HLEN + optlen + len)
		     : test_frame_ip4(f, "198.51.100.2", "198.51.100.1",
				      IPPROTO_TCP, l4, TCP_HLEN + optlen + len);
}

void guest_send(struct tguest *g, uint8_t flags, const void *data,
		size_t len, const uint8_t *opts, size_t optlen)
{
	uint8_t f[9200];
	size_t n = guest_frame(g, f, g->seq, flags, data, len, opts, optlen);

	test_input(g->c, f, n);
	g->seq += (uint32_t)len + !!(flags & (TCP_F_SYN | TCP_F_FIN));
}

/* pump_clock() - the loop's time inside a pump: its time when the pump
 * began (base) plus the real time since (start), at most ms. The time the
 * test spends between pumps, preempted or not, is not the loop's: the
 * guest it plays answers at once, as far as ferry's timers can tell (a
 * test held 150 ms on a loaded machine saw the 200 ms RTO fire in a 50 ms
 * window). Returns the real milliseconds since start. */
static int64_t pump_clock(struct ctx *c, const struct timespec *base,
			  const struct timespec *start, int ms)
{
	struct timespec real;
	int64_t ns;

	now_mono(&real);
	ns = (int64_t)(real.tv_sec - start->tv_sec) * 1000000000LL +
	     (real.tv_nsec - start->tv_nsec);
	if (ns > (int64_t)ms * 1000000)
		ns = (int64_t)ms * 1000000;
	c->now.tv_sec = base->tv_sec + (time_t)(ns / 1000000000LL);
	c->now.tv_nsec = base->tv_nsec + (long)(ns % 1000000000LL);
	if (c->now.tv_nsec >= 1000000000L) {
		c->now.tv_sec++;
		c->now.tv_nsec -= 1000000000L;
	}
	return ts_ms_diff(&real, start);
}

void pump(struct ctx *c, int ms, size_t want)
{
	struct timespec start, base = c->now;

	now_mono(&start);
	for (;;) {
		struct epoll_event ev[16];
		int n;

		if (pump_clock(c, &base, &start, ms) > ms ||
		    test_tx_n(c) >= want)
			return;
		n = epoll_wait(c->epfd, ev, 16, 5);
		pump_clock(c, &base, &start, ms);
		loop_dispatch(c, ev, n);
	}
}

void loop_dispatch(struct ctx *c, const struct epoll_event *ev, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		union eref ref = { .u64 = ev[i].data.u64 };

		if (ref.type == EREF_TCP_LISTEN)	/* fwd_listener()'s */
			tcp_fwd_listen_handler(c, ref.u64, ev[i].events);
		else
			tcp_sock_handler(c, ev[i].data.u64, ev[i].events);
	}
	if (c->timer_armed && ts_ms_diff(&c->now, &c->timer_due) >= 0) {
		c->timer_armed = false;
		tcp_timer(c);
	}
}

void advance(struct ctx *c, int ms)
{
	test_advance(c, ms);
	c->timer_armed = false;
	tcp_timer(c);
}

bool seg_at(struct ctx *c, size_t i, struct pkt *p)
{
	size_t len;
	const uint8_t *f = test_tx(c, i, &len);

	return f && pkt_parse(f, len, true, p) == DROP_NONE &&
	       p->l4proto == IPPROTO_TCP;
}

int listener(bool v6, uint16_t *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = v6 ? sizeof(a6) : sizeof(a4);
	int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);

	if (s < 0 || bind(s, v6 ? (void *)&a6 : (void *)&a4, sl) ||
	    listen(s, 8) || getsockname(s, v6 ? (void *)&a6 : (void *)&a4, &sl))
		return -1;
	*port = ntohs(v6 ? a6.sin6_port : a4.sin_port);
	return s;
}

int fwd_listener(struct ctx *c, bool v6, uint16_t *port, uint16_t target)
{
	union eref ref = { .type = EREF_TCP_LISTEN, .side = v6 };
	int s = listener(v6, port), zero = 0;

	if (s < 0)
		return -1;
	fcntl(s, F_SETFL, O_NONBLOCK);
	tcp_sock_opts(s);	/* as listen_sock(): accepted sockets inherit */
	if (c->tcp.peek_off &&
	    !setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)))
		ref.side |= LISTEN_PEEK_OFF;
	ref.idx = (uint32_t)s;
	ref.aux = *port;
	c->conf.tcp_in.delta[*port] = (uint16_t)(target - *port);
	if (ep_add(c, s, EPOLLIN, ref)) {
		close(s);
		return -1;
	}
	return s;
}

struct ctx *tcp_test_ctx(void)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	inet_pton(AF_INET6, "fe80::1", &c->conf.ip6.gw);
	nat_init(c);
	tcp_init(c);
	/* The clock starts now, not when test_ctx() began: setting up the
	 * tables can take over a second under ASan on a loaded machine, and a
	 * SYN-ACK sent in the SYN's round with that stale time would be due
	 * for retransmission at the first pump(). */
	now_mono(&c->now);
	return c;
}

void tcp_test_free(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl; fl = nx) {
		nx = flow_next(&c->flows, fl);
		tcp_conn_close(c, fl, TCP_END_ABORT);
	}
	tcp_ooo_pool_free(c->tcp.ooo);
	tcp_tw_free(&c->tcp.tw);
	munmap(c->tcp.due.e, sizeof(*c->tcp.due.e) * c->tcp.due.cap);
	munmap(c->tcp.due.pos, sizeof(*c->tcp.due.pos) * c->tcp.due.cap);
	close(c->epfd);
	test_ctx_free(c);
}

/* syn_exchange() - the part handshake() and handshake_sack() share: the
 * guest's SYN with opts, ferry's answer in *p (false if there was none),
 * then the host's accept() and the guest's ACK once check(p) holds.
 * Returns the accepted socket, -1 on failure. */
static int syn_exchange(struct tguest *g, int ls, const uint8_t *opts,
			size_t optlen, bool (*check)(const struct pkt *p),
			struct pkt *p)
{
	int a;

	test_tx_reset(g->c);
	g->seq = 1000;
	guest_send(g, TCP_F_SYN, NULL, 0, opts, optlen);
	pump(g->c, 2000, 1);
	if (!seg_at(g->c, 0, p) || !check(p))
		return -1;
	g->ack = p->tcp.seq + 1;
	a = accept(ls, NULL, NULL);
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(g->c);
	return a;
}

static bool synack_ok(const struct pkt *p)
{
	return p->tcp.flags == (TCP_F_SYN | TCP_F_ACK) && p->tcp.ack == 1001 &&
	       p->tcp.has_mss && p->tcp.has_wscale &&
	       p->tcp.wscale == TCP_WS_TO_GUEST;
}

static bool synack_sack(const struct pkt *p)
{
	return p->tcp.has_sack_perm;
}

int handshake(struct tguest *g, int ls, uint32_t *isn)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7 };
	struct pkt p;
	int a = syn_exchange(g, ls, opts, sizeof(opts), synack_ok, &p);

	if (a >= 0 && isn)
		*isn = p.tcp.seq;
	return a;
}

int handshake_sack(struct tguest *g, int ls)
{
	static const uint8_t opts[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7,
					1, 1, 4, 2 };
	struct pkt p;

	return syn_exchange(g, ls, opts, sizeof(opts), synack_sack, &p);
}

int tconn_open(struct tguest *g, bool sack, uint32_t *isn)
{
	g->ls = listener(g->v6, &g->dport);
	if (g->ls < 0)
		return -1;
	return sack ? handshake_sack(g, g->ls) : handshake(g, g->ls, isn);
}

void tconn_close(struct tguest *g, int a)
{
	if (a >= 0)
		close(a);
	close(g->ls);
	tcp_test_free(g->c);
}

ssize_t recv_all(int a, uint8_t *buf, size_t size)
{
	ssize_t n, got = 0;

	while ((size_t)got < size &&
	       (n = recv(a, buf + got, size - (size_t)got, MSG_DONTWAIT)) > 0)
		got += n;
	return got;
}

void loop_timers(struct ctx *c, int ms)
{
	struct timespec end = c->now;

	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (c->timer_armed && ts_ms_diff(&c->timer_due, &end) <= 0) {
		c->now = c->timer_due;
		c->timer_armed = false;
		tcp_timer(c);
	}
	c->now = end;
}

void guest_ack_wnd(struct tguest *g, uint16_t wnd)
{
	uint8_t l4[TCP_HLEN] = { 0 }, f[128];
	size_t n;

	wr16(l4, g->sport);
	wr16(l4 + 2, g->dport);
	wr32(l4 + 4, g->seq);
	wr32(l4 + 8, g->ack);
	l4[12] = (TCP_HLEN / 4) << 4;
	l4[13] = TCP_F_ACK;
	wr16(l4 + 14, wnd);
	n = test_frame_ip4(f, "198.51.100.2", "198.51.100.1", IPPROTO_TCP,
			   l4, sizeof(l4));
	test_input(g->c, f, n);
}

bool fin_delivered(int a)
{
	struct tcp_info ti;
	socklen_t sl;
	int i;

	for (i = 0; i < 5000; i++) {
		sl = sizeof(ti);
		if (!getsockopt(a, IPPROTO_TCP, TCP_INFO, &ti, &sl) &&
		    ti.tcpi_state == TCP_FIN_WAIT2)
			return true;
		poll(NULL, 0, 1);
	}
	return false;
}
