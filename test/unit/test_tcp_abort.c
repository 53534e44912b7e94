/* test_tcp_abort.c - connections ended before their time (issue 25):
 * a host peer's reset or a socket error reaches the guest as an RST
 * whatever ferry was doing with the socket, and the flow and its socket
 * are freed. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/tcp.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "unit.h"
#include "util.h"
#include "tcp_harness.h"

/* sock_closed() - poll (1 ms steps, 5 s) until the kernel closed ferry's
 * socket s (the peer's RST taken in: TCP_CLOSE), without reading its
 * error (TCP_INFO leaves SO_ERROR alone). */
static bool sock_closed(int s)
{
	struct timespec t0, now;

	now_mono(&t0);
	do {
		struct tcp_info ti;
		socklen_t sl = sizeof(ti);

		if (!getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl) &&
		    ti.tcpi_state == TCP_CLOSE)
			return true;
		usleep(1000);
		now_mono(&now);
	} while (ts_ms_diff(&now, &t0) < 5000);
	return false;
}

/* rst_sent() - whether one of the frames to the guest is an RST. */
static bool rst_sent(struct ctx *c)
{
	struct pkt p;
	size_t i;

	for (i = 0; i < test_tx_n(c); i++)
		if (seg_at(c, i, &p) && (p.tcp.flags & TCP_F_RST))
			return true;
	return false;
}

/* abort_peer() - the host peer closes with SO_LINGER {1, 0}: an RST. */
static void abort_peer(int a)
{
	struct linger l = { 1, 0 };

	setsockopt(a, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(a);
}

/* reset_then_send() - the host peer a aborts; once ferry's socket took
 * the RST in (and before ferry saw any event of it), the guest sends.
 * Whether the guest then got an RST and the flow is gone. */
static bool reset_then_send(struct tguest *g, int a)
{
	struct ctx *c = g->c;
	struct tcp_conn *conn = FLOW_PRIV(flow_first(&c->flows, FLOW_TCP),
					  struct tcp_conn);

	guest_send(g, TCP_F_ACK, "abc", 3, NULL, 0);
	pump(c, 20, 0);
	abort_peer(a);
	if (!sock_closed(conn->sock))
		return false;
	test_tx_reset(c);
	guest_send(g, TCP_F_ACK, "def", 3, NULL, 0);
	pump(c, 200, 1);
	return rst_sent(c) && !c->flows.count[FLOW_TCP];
}

/* The host peer resets while the guest sends: the guest's next data
 * meets the reset in ferry's sendmsg(), which takes the socket's error
 * with it, so the EPOLLERR that would have said it never comes; the
 * socket then reports a bare hang-up. Until issue 25 that hang-up was
 * taken for the peer's orderly close: the guest got a FIN, its data
 * went nowhere (no RST, the flow and its socket kept for 2 hours). */
TEST(tcp_abort_host_rst_seen_by_write)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40700 };
	int a = tconn_open(&g, false, NULL);

	CHECK(a >= 0);
	CHECK(reset_then_send(&g, a));
	CHECK_EQ(c->tcp.st.host_errors, 1);
	tconn_close(&g, -1);
}

/* The same reset during a half-close: the host shut its sending side
 * (ferry sent the guest its FIN) and reads on, then aborts. */
TEST(tcp_abort_host_rst_after_host_fin)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40701 };
	struct pkt p;
	int a = tconn_open(&g, false, NULL);

	CHECK(a >= 0);
	shutdown(a, SHUT_WR);
	CHECK(fin_delivered(a));
	test_tx_reset(c);
	pump(c, 200, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	g.ack = p.tcp.seq + 1;
	CHECK(reset_then_send(&g, a));
	tconn_close(&g, -1);
}

/* The reset while nothing is written (the guest idle): EPOLLERR, an RST
 * to the guest, counted as a host error. */
TEST(tcp_abort_host_rst_idle)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40702 };
	int a = tconn_open(&g, false, NULL);

	CHECK(a >= 0);
	test_tx_reset(c);
	abort_peer(a);
	pump(c, 2000, 1);
	CHECK(rst_sent(c));
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.st.host_errors, 1);
	tconn_close(&g, -1);
}

/* half_open_syn() - a guest SYN from port sport; returns the first frame
 * ferry sent back in *p (false: none). */
static bool half_open_syn(struct tguest *g, uint16_t sport, struct pkt *p)
{
	test_tx_reset(g->c);
	g->sport = sport;
	g->seq = 1000u * sport;
	guest_send(g, TCP_F_SYN, NULL, 0, NULL, 0);
	pump(g->c, 2000, 1);
	return seg_at(g->c, 0, p);
}

/* A SYN flood whose SYN-ACKs the guest never answers held the whole fd
 * budget, and every new connection was refused (issue 25, item 6): now
 * half-open connections hold at most half of it, and a new SYN beyond
 * that abandons the oldest (RST to it) and is admitted. Fails before:
 * the fifth SYN fit the budget, nothing was abandoned. */
TEST(tcp_half_open_share_abandons_oldest)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c };
	int ls = listener(false, &g.dport);
	struct pkt p, q;
	uint16_t i;

	CHECK(ls >= 0);
	c->tcp.max_fds = 8;		/* half-open: 4 at most */
	for (i = 0; i < 4; i++) {
		CHECK(half_open_syn(&g, (uint16_t)(40710 + i), &p));
		CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	}
	CHECK(half_open_syn(&g, 40714, &p));
	CHECK_EQ(test_tx_n(c), 2);
	CHECK(seg_at(c, 1, &q));
	/* the oldest (40710) is reset, the new one answered */
	CHECK_EQ(p.tcp.flags & TCP_F_RST, TCP_F_RST);
	CHECK_EQ(p.tcp.dport, 40710);
	CHECK_EQ(q.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	CHECK_EQ(q.tcp.dport, 40714);
	CHECK_EQ(c->flows.count[FLOW_TCP], 4);
	CHECK_EQ(c->tcp.ho_n, 4);
	CHECK_EQ(c->tcp.st.half_open_evicted, 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_FD_BUDGET], 0);
	close(ls);
	tcp_test_free(c);
}

/* Established connections keep their place: with the budget full of
 * them but one half-open, a SYN abandons that one; once all are
 * established, a SYN is refused as before. */
TEST(tcp_half_open_never_established)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c };
	int ls = listener(false, &g.dport);
	struct pkt p;
	uint16_t i;

	CHECK(ls >= 0);
	c->tcp.max_fds = 4;
	for (i = 0; i < 3; i++) {	/* three established */
		CHECK(half_open_syn(&g, (uint16_t)(40720 + i), &p));
		g.ack = p.tcp.seq + 1;
		guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	}
	CHECK_EQ(c->tcp.ho_n, 0);
	CHECK(half_open_syn(&g, 40723, &p));	/* the budget's last fd */
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	CHECK(half_open_syn(&g, 40724, &p));	/* abandons 40723 */
	CHECK_EQ(p.tcp.dport, 40723);
	CHECK(p.tcp.flags & TCP_F_RST);
	CHECK_EQ(c->flows.count[FLOW_TCP], 4);
	g.ack = 0;
	CHECK(seg_at(c, 1, &p));
	g.ack = p.tcp.seq + 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);	/* all established */
	CHECK(half_open_syn(&g, 40725, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_RST | TCP_F_ACK);
	CHECK_EQ(p.tcp.dport, 40725);
	CHECK_EQ(c->stats.drops[DROP_TCP_FD_BUDGET], 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 4);
	close(ls);
	tcp_test_free(c);
}

/* ka_run() - advance the clock in 250 ms steps for ms, counting the
 * keepalive probes (ACK at snd_nxt - 1, no data) and RSTs sent to the
 * guest; stops at the first RST. */
static void ka_run(struct ctx *c, uint32_t snd_nxt, int ms, int *probes,
		   int *rsts)
{
	struct pkt p;
	size_t i;

	for (; ms > 0 && !*rsts; ms -= 250) {
		test_tx_reset(c);
		advance(c, 250);
		for (i = 0; i < test_tx_n(c); i++) {
			if (!seg_at(c, i, &p))
				continue;
			if (p.tcp.flags & TCP_F_RST)
				(*rsts)++;
			else if (p.tcp.seq == snd_nxt - 1 && !p.payload_len)
				(*probes)++;
		}
	}
}

/* ka_open() - a connection for g with --tcp-keepalive 2; returns the
 * host's socket (-1: failed), ferry's ISN in *isn. */
static int ka_open(struct tguest *g, uint32_t *isn)
{
	g->c->conf.tcp_ka_s = 2;
	return tconn_open(g, false, isn);
}

/* peer_reset() - whether the host peer a finds its connection reset
 * (waiting up to 2 s: loopback may deliver the RST from ksoftirqd). */
static bool peer_reset(int a)
{
	struct pollfd pfd = { .fd = a, .events = POLLIN };
	char b[4];

	poll(&pfd, 1, 2000);
	return recv(a, b, sizeof(b), MSG_DONTWAIT) == -1 &&
	       errno == ECONNRESET;
}

/* A guest gone silent (rebooted, its link down) left the connection and
 * the host socket open for the 2-hour inactivity limit (issue 25, item
 * 4): now, idle for --tcp-keepalive (here 2 s), ferry probes it every
 * second (the interval's floor), and after 4 probes unanswered resets
 * both ways within a second more. Fails before: no probe, no reset. */
TEST(tcp_keepalive_silent_guest_reset)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40730 };
	int probes = 0, rsts = 0;
	uint32_t isn;
	int a = ka_open(&g, &isn);

	CHECK(a >= 0);
	ka_run(c, isn + 1, 1750, &probes, &rsts);
	CHECK_EQ(probes, 0);			/* not idle long enough */
	ka_run(c, isn + 1, 6000, &probes, &rsts);
	CHECK_EQ(probes, TCP_KA_PROBES);
	CHECK_EQ(rsts, 1);
	CHECK_EQ(c->tcp.st.ka_probes, TCP_KA_PROBES);
	CHECK_EQ(c->tcp.st.ka_resets, 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK(peer_reset(a));
	tconn_close(&g, a);
}

/* A live guest answers the probe with an ACK: counted, and the
 * connection lives on (its next probe an idle time later); a guest that
 * lost the connection answers with an RST, which resets the host side. */
TEST(tcp_keepalive_answered)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40731 };
	int probes = 0, rsts = 0;
	uint32_t isn;
	int a = ka_open(&g, &isn);

	CHECK(a >= 0);
	ka_run(c, isn + 1, 2500, &probes, &rsts);
	CHECK_EQ(probes, 1);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);	/* alive */
	CHECK_EQ(c->tcp.st.ka_answered, 1);
	ka_run(c, isn + 1, 1500, &probes, &rsts);
	CHECK_EQ(probes, 1);			/* idle again from its answer */
	ka_run(c, isn + 1, 1000, &probes, &rsts);
	CHECK_EQ(probes, 2);
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);	/* rebooted */
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.st.ka_resets, 1);
	CHECK_EQ(rsts, 0);
	CHECK(peer_reset(a));
	tconn_close(&g, a);
}
