/* test_tcp_conn.c - TCP translation, continued from test_tcp.c with the
 * same test guest (tcp_harness.h): request/response (lazy consumption,
 * guessed reads, FIN on data), connection set-up and teardown, keepalive,
 * the window clamp at EOF, the stuck-window detector, and several
 * connections in one wake-up. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
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

/* --- request/response: lazy consumption, guessed reads, FIN on data --- */

static struct tcp_conn *only_conn(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_TCP);

	return fl ? FLOW_PRIV(fl, struct tcp_conn) : NULL;
}

static int sock_inq(int s)
{
	int inq = -1;

	return ioctl(s, SIOCINQ, &inq) ? -1 : inq;
}

/* Many small exchanges: acknowledged replies stay in ferry's socket
 * until TCP_CONSUME_LAZY bytes gather (no recv(MSG_TRUNC) per
 * exchange), every reply still goes out once, in order, whole; the
 * close completes with acknowledged bytes still deferred. */
TEST(tcp_rr_lazy_consume)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40030 };
	int a, i;
	int rounds = TCP_CONSUME_LAZY / 64 + 20;
	bool deferred = false, consumed = false;
	char rep[64], buf[64];
	struct tcp_conn *conn;
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	for (i = 0; i < rounds; i++) {
		guest_send(&g, TCP_F_ACK | TCP_F_PSH, "req", 3, NULL, 0);
		CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
		memset(rep, 'a' + i % 26, sizeof(rep));
		CHECK_EQ(send(a, rep, sizeof(rep), 0), (ssize_t)sizeof(rep));
		test_tx_reset(c);
		pump(c, 2000, 1);
		CHECK_EQ(test_tx_n(c), 1);
		CHECK(seg_at(c, 0, &p));
		CHECK_EQ(p.tcp.seq, g.ack);
		CHECK_EQ(p.payload_len, sizeof(rep));
		CHECK(!memcmp(p.payload, rep, sizeof(rep)));
		g.ack += (uint32_t)p.payload_len;
		CHECK(conn->consume < TCP_CONSUME_LAZY);
		CHECK_EQ(sock_inq(conn->sock), (int)(conn->consume + 64));
		if (conn->consume)
			deferred = true;
		else if (i)
			consumed = true;
	}
	CHECK(deferred);
	CHECK(consumed);		/* TCP_CONSUME_LAZY reached once */
	/* the last reply's ACK, the guest's FIN; the host answers with its
	 * own FIN: the connection closes with the last ACK */
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK(conn->consume > 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 0);
	shutdown(a, SHUT_WR);
	test_tx_reset(c);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	g.ack += 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, a);
}

/* host_reply() - the host sends len bytes, one frame takes them to the
 * guest, whose ACK follows: the socket is drained after it. */
static bool host_reply(struct tguest *g, int a, const char *data, size_t len)
{
	if (send(a, data, len, 0) != (ssize_t)len)
		return false;
	pump(g->c, 2000, 1);
	if (test_tx_n(g->c) != 1)
		return false;
	g->ack += (uint32_t)len;
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(g->c);
	return only_conn(g->c)->read_drained;
}

/* fin_on_data() - the host's last bytes and its EOF reach ferry together
 * after an exchange (the socket was drained, the read guesses): one
 * frame carries both, the FIN is seen once and after the data, and the
 * close completes. */
static void fin_on_data(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40031 };
	int a;
	char buf[16];
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK(host_reply(&g, a, "hello", 5));
	CHECK_EQ(send(a, "bye", 3, 0), 3);
	shutdown(a, SHUT_WR);
	CHECK(fin_delivered(a));	/* both in ferry's socket first */
	pump(c, 2000, 1);
	pump(c, 50, 2);			/* nothing else follows */
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK | TCP_F_PSH | TCP_F_FIN);
	CHECK_EQ(p.tcp.seq, g.ack);
	CHECK_EQ(p.payload_len, 3);
	CHECK(!memcmp(p.payload, "bye", 3));
	g.ack += 3 + 1;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, a);
}

TEST(tcp_fin_on_data_v4)
{
	fin_on_data(false);
}

TEST(tcp_fin_on_data_v6)
{
	fin_on_data(true);
}

/* fin_after_window() - a 1024-byte guest window, the host sends len
 * bytes and its EOF at once. The first read fills the window (a guess:
 * no FIN, more may follow); after the guest's ACK the rest is counted
 * (SIOCINQ): it carries the FIN when it leaves room for it (len < 2048),
 * otherwise the FIN waits for the next ACK and goes alone. The FIN is
 * seen once. */
static void fin_after_window(size_t len)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40032 };
	int a, step;
	static char d[2048];
	size_t sent = 0, fins = 0;
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	g.wnd = 8;			/* << 7 (handshake): 1024 bytes */
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	memset(d, 'w', sizeof(d));
	CHECK_EQ(send(a, d, len, 0), (ssize_t)len);
	shutdown(a, SHUT_WR);
	CHECK(fin_delivered(a));	/* data and FIN in ferry's socket */
	test_tx_reset(c);
	pump(c, 2000, 1);
	for (step = 0; step < 3 && !fins; step++) {
		pump(c, 50, 2);		/* one frame per step, no more */
		CHECK_EQ(test_tx_n(c), 1);
		CHECK(seg_at(c, 0, &p));
		CHECK_EQ(p.tcp.seq, g.ack);
		sent += p.payload_len;
		fins += !!(p.tcp.flags & TCP_F_FIN);
		if (step == 0)
			CHECK_EQ(p.payload_len, 1024);
		if (fins)
			CHECK_EQ(sent, len);
		g.ack += (uint32_t)p.payload_len + !!(p.tcp.flags & TCP_F_FIN);
		test_tx_reset(c);
		guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
		pump(c, 2000, 1);	/* usually sent by the ACK's batch */
	}
	CHECK_EQ(fins, 1);
	CHECK_EQ(step, len < 2048 ? 2 : 3);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.st.rewinds_rto, 0);
	tconn_close(&g, a);
}

TEST(tcp_fin_on_data_after_window)
{
	fin_after_window(1500);
}

TEST(tcp_fin_waits_for_window)
{
	fin_after_window(2048);
}

/* After a drained read the next one guesses TCP_READ_GUESS bytes; more
 * than that arriving at once is still sent whole and in order. */
TEST(tcp_guessed_read_larger_reply)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40033 };
	int a;
	static uint8_t big[80 << 10];
	size_t i, n, total = 0;
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK(host_reply(&g, a, "x", 1));
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	n = (sizeof(big) + 1459) / 1460;
	pump(c, 2000, n);
	CHECK_EQ(test_tx_n(c), n);
	for (i = 0; i < n; i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.tcp.seq, g.ack + total);
		CHECK(!memcmp(p.payload, big + total, p.payload_len));
		total += p.payload_len;
	}
	CHECK_EQ(total, sizeof(big));
	tconn_close(&g, a);
}

/* One epoll registration per socket for its life (tcp_ep_add()): the
 * events a connection does not act on now are dropped, never lost when it
 * starts to. The peer's FIN reported with the connect's completion (no
 * later report comes: edge-triggered) still reaches the guest, after the
 * data it sent. */
TEST(tcp_conn_peer_fin_with_connect)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40040 };
	int ls = listener(false, &g.dport), a;
	struct pkt p;
	size_t i, fins = 0;

	g.seq = 1;
	now_mono(&c->now);		/* the loop's time for the SYN-ACK */
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	a = accept(ls, NULL, NULL);	/* loopback: connected at once */
	CHECK(a >= 0);
	CHECK_EQ(send(a, "hi", 2, 0), 2);
	shutdown(a, SHUT_WR);		/* data and FIN before the guest's ACK */
	CHECK(fin_delivered(a));	/* both in ferry's socket */
	pump(c, 100, 2);	/* the SYN-ACK went in the SYN's round: events */
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	g.ack = p.tcp.seq + 1;
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 200, 1);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		if (p.payload_len) {
			CHECK_EQ(p.payload_len, 2);
			CHECK(!memcmp(p.payload, "hi", 2));
		}
		fins += !!(p.tcp.flags & TCP_F_FIN);
	}
	CHECK_EQ(fins, 1);
	g.ack += 3;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* syn_now() - the guest's SYN to ls's port, whose SYN-ACK goes out in
 * the SYN's own round (loopback); g->ack follows it. Returns the host's
 * accepted socket, -1 if a step failed. */
static int syn_now(struct tguest *g, int ls)
{
	struct pkt p;

	g->seq = 1;
	now_mono(&g->c->now);		/* the loop's time for the SYN-ACK */
	guest_send(g, TCP_F_SYN, NULL, 0, NULL, 0);
	if (test_tx_n(g->c) != 1 || !seg_at(g->c, 0, &p) ||
	    p.tcp.flags != (TCP_F_SYN | TCP_F_ACK))
		return -1;
	g->ack = p.tcp.seq + 1;
	return accept(ls, NULL, NULL);
}

/* A server-first peer (a banner) sends before the guest's ACK completes
 * the handshake: the data is read when it does, although a new
 * connection's socket counts as empty (no read on the ACK otherwise). */
TEST(tcp_conn_banner_before_ack)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40045 };
	int ls = listener(false, &g.dport), a;
	struct pkt p;

	a = syn_now(&g, ls);
	CHECK(a >= 0);
	CHECK_EQ(send(a, "220 hi", 6, 0), 6);
	pump(c, 100, 2);		/* its event, before the ACK */
	CHECK_EQ(test_tx_n(c), 1);
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	pump(c, 200, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, g.ack);
	CHECK_EQ(p.payload_len, 6);
	CHECK(!memcmp(p.payload, "220 hi", 6));
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* Loopback: connect() completes the handshake with a listening peer
 * before it returns, so the SYN-ACK goes to the guest in the SYN's own
 * round (no epoll_wait() for EPOLLOUT first); the EPOLLOUT reported later
 * sends nothing more, and the connection carries data as any other. */
static void syn_ack_same_round(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40043 };
	int ls = listener(v6, &g.dport), a;
	char buf[8];
	struct pkt p;

	CHECK(ls >= 0);
	test_tx_reset(c);
	g.seq = 500;
	now_mono(&c->now);		/* the loop's time for the SYN-ACK */
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	CHECK_EQ(c->tcp.st.connect_now, 1);
	CHECK_EQ(test_tx_n(c), 1);		/* before any event was read */
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_SYN | TCP_F_ACK);
	CHECK_EQ(p.tcp.ack, 501);
	g.ack = p.tcp.seq + 1;
	pump(c, 50, 2);				/* the late EPOLLOUT */
	CHECK_EQ(test_tx_n(c), 1);
	a = accept(ls, NULL, NULL);
	CHECK(a >= 0);
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "ping", 4, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 4);
	CHECK_EQ(send(a, "pong", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 4);
	CHECK(!memcmp(p.payload, "pong", 4));
	CHECK_EQ(p.tcp.ack, 505);
	close(a);
	close(ls);
	tcp_test_free(c);
}

TEST(tcp_conn_syn_ack_same_round_v4)
{
	syn_ack_same_round(false);
}

TEST(tcp_conn_syn_ack_same_round_v6)
{
	syn_ack_same_round(true);
}

/* A connect the host never answers (the listener's accept queue is full:
 * the kernel drops the SYN) is given up after TCP_CONNECT_TIMEOUT_MS with
 * an RST to the guest. */
TEST(tcp_conn_connect_timeout_gets_rst)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40041 };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a4);
	int ls = socket(AF_INET, SOCK_STREAM, 0), cl;
	struct pkt p;

	CHECK(ls >= 0);
	CHECK(!bind(ls, (void *)&a4, sl) && !listen(ls, 0) &&
	      !getsockname(ls, (void *)&a4, &sl));
	g.dport = ntohs(a4.sin_port);
	cl = socket(AF_INET, SOCK_STREAM, 0);	/* fills the queue */
	CHECK(!connect(cl, (void *)&a4, sl));
	g.seq = 9000;
	guest_send(&g, TCP_F_SYN, NULL, 0, NULL, 0);
	pump(c, 100, 1);
	CHECK_EQ(test_tx_n(c), 0);		/* still connecting */
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	advance(c, TCP_CONNECT_TIMEOUT_MS + 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_RST);
	CHECK_EQ(p.tcp.ack, 9001);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	close(cl);
	close(ls);
	tcp_test_free(c);
}

/* Half-close, guest first: after its FIN (shutdown(SHUT_WR) on the host
 * socket, EPOLLOUT no longer of interest) the host's data still flows to
 * the guest, and the host's close ends the connection. */
TEST(tcp_conn_guest_fin_then_host_data)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40042 };
	int a;
	char b[16];
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(recv(a, b, sizeof(b), 0), 0);		/* EOF on the host */
	test_tx_reset(c);
	CHECK_EQ(send(a, "late", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 4);
	CHECK(!memcmp(p.payload, "late", 4));
	CHECK_EQ(p.tcp.ack, g.seq);			/* FIN acknowledged */
	g.ack += 4;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(c);
	close(a);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	g.ack += 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, -1);
}

/* so_keepalive() - SO_KEEPALIVE of the connection's host socket. */
static int so_keepalive(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_TCP);
	int v = -1;
	socklen_t sl = sizeof(v);

	if (!fl || getsockopt(FLOW_PRIV(fl, struct tcp_conn)->sock, SOL_SOCKET,
			      SO_KEEPALIVE, &v, &sl))
		return -1;
	return v;
}

/* Host-side keepalives are set once a connection lived TCP_KA_ARM_MS (a
 * short one never makes the call), by the timer scan that a later
 * deadline schedules. The age counts from the SYN's loop time; the
 * handshake's pump() moves the clock to real time, which under ASan on a
 * loaded machine can be more than a second later, so the test steps up
 * to the deadline from wherever the handshake left the clock. */
TEST(tcp_conn_keepalive_late)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40043 };
	int a, steps = 0;
	int64_t syn_ms = tcp_now_ms(c);
	struct tcp_conn *conn;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	CHECK_EQ(conn->ka_ms, syn_ms + TCP_KA_ARM_MS);
	CHECK_EQ(so_keepalive(c), 0);
	while (tcp_now_ms(c) + 1000 < conn->ka_ms) {
		advance(c, 1000);
		guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);	/* not idle */
		steps++;
	}
	CHECK(steps >= TCP_KA_ARM_MS / 1000 - 5);	/* it did live ~30 s */
	CHECK_EQ(so_keepalive(c), 0);
	CHECK(dheap_top(&c->tcp.due) &&
	      dheap_top(&c->tcp.due)->due <= tcp_now_ms(c) + 1000);
	advance(c, 1001);
	CHECK_EQ(so_keepalive(c), 1);
	tconn_close(&g, a);
}

/* zero_then_drain() - the guest acknowledges everything with a zero
 * window while the host has 4 more bytes (ferry marks the connection
 * WAS_ZERO and clamps), then re-opens: the 4 bytes go out and are
 * acknowledged, so ferry's socket is empty again. */
static void zero_then_drain(struct tguest *g, int a)
{
	g->ack += 4;
	guest_ack_wnd(g, 0);
	CHECK_EQ(send(a, "efgh", 4, 0), 4);
	test_tx_reset(g->c);
	pump(g->c, 50, 1);
	CHECK_EQ(test_tx_n(g->c), 0);
	CHECK(only_conn(g->c)->flags & TCP_C_WAS_ZERO);
	guest_ack_wnd(g, 65535);
	pump(g->c, 2000, 1);
	CHECK_EQ(test_tx_n(g->c), 1);
	g->ack += 4;
	guest_ack_wnd(g, 65535);
	CHECK_EQ(sock_inq(only_conn(g->c)->sock), 0);
}

/* A new connection's first request and reply: the window clamp is set in
 * the request's batch and the socket has it; after the peer's FIN (HTTP
 * Connection: close) the read that finds the EOF sets no clamp: nothing
 * more can arrive. */
TEST(tcp_conn_clamp_first_read_not_after_eof)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40044 };
	int a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	char buf[16];
	uint64_t sets;
	struct pkt p;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "GET", 3, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
	CHECK_EQ(send(a, "200 OK", 6, 0), 6);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 6);
	CHECK(conn->clamp != 0);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ((uint32_t)v, conn->clamp);
	sets = c->tcp.st.clamp_sets;
	g.ack += 6;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(c);
	close(a);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	CHECK_EQ(c->tcp.st.clamp_sets, sets);	/* none for the EOF */
	g.ack += 1;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tconn_close(&g, -1);
}

/* TCP_NODELAY is set before a connection's second write, not at its
 * socket's creation: the first write goes out whole without it (Nagle
 * holds a short segment only behind an unacknowledged short one), so an
 * HTTP Connection: close request costs no setsockopt. The second write
 * reaches the peer at once. */
TEST(tcp_conn_nodelay_from_second_write)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40046 };
	int a, v = -1;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	char buf[16];

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_NODELAY, &v, &sl));
	CHECK_EQ(v, 0);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "GET", 3, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_NODELAY, &v, &sl));
	CHECK_EQ(v, 0);				/* one write: not needed */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "MORE", 4, NULL, 0);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_NODELAY, &v, &sl));
	CHECK_EQ(v, 1);				/* set before the second */
	CHECK_EQ(recv(a, buf, sizeof(buf), MSG_DONTWAIT), 4);
	CHECK(!memcmp(buf, "MORE", 4));
	tconn_close(&g, a);
}

/* SO_PEEK_OFF is turned on only when a read has more than
 * TCP_PEEK_COPY_MAX bytes to skip: a reply and the read behind it (the
 * peer's EOF in HTTP Connection: close) skip the few bytes in flight by
 * copying them; a larger skip turns the kernel's offset on at the next
 * unsent byte, and every byte still reaches the guest once, in order. */
TEST(tcp_conn_peek_off_lazy)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40048 };
	int a, v = 0;
	socklen_t sl = sizeof(v);
	static char big[3000];
	struct tcp_conn *conn;
	uint32_t got = 0;
	char buf[16];
	struct pkt p;
	size_t i;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "GET", 3, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 3);
	CHECK_EQ(send(a, "200 OK", 6, 0), 6);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.payload_len, 6);
	CHECK(!(conn->flags & TCP_C_PEEK_OFF));
	CHECK(!getsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &v, &sl));
	CHECK_EQ(v, -1);			/* never set */
	/* not acknowledged: the next read skips 6 bytes by copying */
	memset(big, 'b', sizeof(big));
	test_tx_reset(c);
	CHECK_EQ(send(a, big, sizeof(big), 0), (ssize_t)sizeof(big));
	pump(c, 2000, 1);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK(seg_at(c, i, &p));
		CHECK_EQ(p.tcp.seq, g.ack + 6 + got);
		CHECK(p.payload_len && !memcmp(p.payload, big, p.payload_len));
		got += (uint32_t)p.payload_len;
	}
	CHECK_EQ(got, sizeof(big));
	CHECK(!(conn->flags & TCP_C_PEEK_OFF));
	/* 3006 bytes in flight: the next read turns the offset on */
	test_tx_reset(c);
	CHECK_EQ(send(a, "tail", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, g.ack + 6 + sizeof(big));
	CHECK_EQ(p.payload_len, 4);
	CHECK(!memcmp(p.payload, "tail", 4));
	CHECK(conn->flags & TCP_C_PEEK_OFF);
	CHECK(!getsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &v, &sl));
	CHECK_EQ(v, (int)(6 + sizeof(big) + 4));
	tconn_close(&g, a);
}

/* A new connection's socket counts as empty until an event says
 * otherwise: the batch of the guest's ACK that completes the handshake
 * reads nothing (no SIOCINQ, no clamp), even when the peer's first bytes
 * are there already, not yet reported; their EPOLLIN brings the read,
 * whole and in order, and that read sets the clamp. */
TEST(tcp_conn_first_batch_reads_nothing)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40047 };
	int ls = listener(false, &g.dport), a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	struct pkt p;

	a = syn_now(&g, ls);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	CHECK_EQ(send(a, "220 hi", 6, 0), 6);	/* no event read yet */
	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);		/* not read in that batch */
	CHECK_EQ(conn->clamp, 0);		/* nor clamped */
	CHECK_EQ(c->tcp.st.clamp_sets, 0);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.seq, g.ack);
	CHECK_EQ(p.payload_len, 6);
	CHECK(!memcmp(p.payload, "220 hi", 6));
	CHECK(conn->clamp != 0);		/* the read set it */
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ((uint32_t)v, conn->clamp);
	close(a);
	close(ls);
	tcp_test_free(c);
}

/* rcv_wnd() - the window a socket advertises now (tcp_info's
 * tcpi_rcv_wnd, Linux 5.4; not in glibc's struct), or -1. */
static long rcv_wnd(int s)
{
	uint8_t raw[512];
	socklen_t len = sizeof(raw);
	uint32_t w;

	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, raw, &len) || len < 236)
		return -1;
	memcpy(&w, raw + 232, sizeof(w));
	return (long)w;
}

/* No clamp before the peer's first byte (tcp_out.c tcp_clamp_refresh()):
 * a guest upload to a silent peer sets none in any batch, and what makes
 * that safe holds: the kernel's window stays within the smallest clamp
 * (the slack, 64 KiB or more) while nothing arrives. The peer's first byte is
 * read, and the clamp set, in the batch of its EPOLLIN. */
TEST(tcp_conn_no_clamp_before_arrival)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40048 };
	static uint8_t up[8000], got[sizeof(up)];
	ssize_t total = 0;
	int a, v = 0, i;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	for (i = 0; i < 12; i++) {
		memset(up, 'a' + i, sizeof(up));
		guest_send(&g, TCP_F_ACK | TCP_F_PSH, up, sizeof(up), NULL, 0);
		pump(c, 50, 0);
		total += recv_all(a, got, sizeof(got));
		CHECK(rcv_wnd(conn->sock) >= 0);
		/* 65535, rounded up to the window scale's unit */
		CHECK(rcv_wnd(conn->sock) <= 65536);
	}
	g.wnd = 100;				/* the guest's window changes */
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(conn->clamp, 0);
	CHECK_EQ(c->tcp.st.clamp_sets, 0);
	total += recv_all(a, got, sizeof(got));
	CHECK_EQ(total, (ssize_t)(12 * sizeof(up)));
	test_tx_reset(c);
	CHECK_EQ(send(a, "y", 1, 0), 1);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(conn->clamp != 0);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ((uint32_t)v, conn->clamp);
	tconn_close(&g, a);
}

/* The stuck-window detector (tcp_timer.c tcp_stuck_check()): a second after
 * a zero window, an empty socket that still advertises a window is left
 * alone; one whose tcpi_rcv_wnd reads zero (no kernel here does that, so
 * the test build's hook plays it) switches clamping off for good and
 * re-opens the socket with a large clamp: the window is never left
 * locked at zero. */
TEST(tcp_stuck_window_detector)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40040 };
	int a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	CHECK_EQ(send(a, "abcd", 4, 0), 4);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	zero_then_drain(&g, a);
	CHECK(conn->clamp != 0);
	loop_timers(c, TCP_STUCK_MS * 2);
	CHECK(!c->tcp.clamp_off);		/* the real window is open */
	CHECK_EQ(c->tcp.st.clamp_fallbacks, 0);
	CHECK(!(conn->flags & TCP_C_WAS_ZERO));	/* checked once */

	CHECK_EQ(send(a, "ijkl", 4, 0), 4);
	test_tx_reset(c);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	zero_then_drain(&g, a);
	tcp_test_stuck_wnd = 0;
	loop_timers(c, TCP_STUCK_MS * 2);
	tcp_test_stuck_wnd = -1;
	CHECK(c->tcp.clamp_off);
	CHECK_EQ(c->tcp.st.clamp_fallbacks, 1);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ(v, 1 << 30);
	tconn_close(&g, a);
}

/* --- several connections in one wake-up (issue 6, multistream) --- */

/* The clamp at a batch's end follows the guest's window: a batch that
 * leaves the window as it was costs no SIOCINQ and sets nothing, one that
 * changes it re-computes the clamp, and the socket has the new value.
 * (The peer's byte, read and not yet acknowledged by the guest, gives
 * the connection its first clamp: none is set before anything
 * arrives.) */
TEST(tcp_clamp_follows_guest_window)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40050 };
	int a, v = 0;
	socklen_t sl = sizeof(v);
	struct tcp_conn *conn;
	uint8_t got[64];
	uint64_t sets;
	uint32_t wide;

	a = tconn_open(&g, false, NULL);
	CHECK(a >= 0);
	CHECK((conn = only_conn(c)) != NULL);
	CHECK_EQ(send(a, "x", 1, 0), 1);
	pump(c, 2000, 1);
	CHECK_EQ(test_tx_n(c), 1);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "abc", 3, NULL, 0);
	CHECK(conn->clamp != 0);
	CHECK_EQ(conn->clamp_wnd, conn->wnd_from_guest);
	wide = conn->clamp;
	sets = c->tcp.st.clamp_sets;
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "def", 3, NULL, 0);
	CHECK_EQ(c->tcp.st.clamp_sets, sets);		/* same window */
	g.wnd = 100;			/* scaled by 2^7: 12800 bytes */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "ghi", 3, NULL, 0);
	CHECK_EQ(conn->wnd_from_guest, 100u << 7);
	CHECK_EQ(conn->clamp_wnd, conn->wnd_from_guest);
	CHECK(conn->clamp < wide);
	CHECK_EQ(c->tcp.st.clamp_sets, sets + 1);
	CHECK(!getsockopt(conn->sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &v, &sl));
	CHECK_EQ((uint32_t)v, conn->clamp);
	CHECK_EQ(recv_all(a, got, sizeof(got)), 9);
	CHECK(!memcmp(got, "abcdefghi", 9));
	tconn_close(&g, a);
}

/* conn_by_port() - the connection of the guest's port. */
static struct tcp_conn *conn_by_port(struct ctx *c, uint16_t port)
{
	struct flow *fl;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl;
	     fl = flow_next(&c->flows, fl))
		if (fl->f.key[FLOW_SIDE_GUEST].pa == port)
			return FLOW_PRIV(fl, struct tcp_conn);
	return NULL;
}

/* A wake-up that reads several rounds from the tap (rx.next_round):
 * data of interleaved connections is written at once, in order, each to
 * its own socket, but the ACKs of small amounts wait for the last round,
 * which acknowledges everything with one ACK per connection; a FIN, or
 * half the window offered, is acknowledged at once. */
TEST(tcp_ack_carried_across_rounds)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g1 = { .c = c, .sport = 40051 };
	struct tguest g2 = { .c = c, .sport = 40052 };
	struct tcp_conn *conn;
	static uint8_t data[1400], got[1 << 16];
	uint32_t isn, b1, b2, half;
	size_t i, sent, have;
	struct pkt p;
	int ls, a1, a2;
	ssize_t r;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 3 + 7);
	ls = listener(false, &g1.dport);
	g2.dport = g1.dport;
	a1 = handshake(&g1, ls, &isn);
	a2 = handshake(&g2, ls, &isn);
	CHECK(a1 >= 0 && a2 >= 0);
	b1 = g1.seq;
	b2 = g2.seq;
	c->link.rx.next_round = true;
	guest_send(&g1, TCP_F_ACK, data, 1000, NULL, 0);
	guest_send(&g2, TCP_F_ACK, data + 1000, 300, NULL, 0);
	guest_send(&g1, TCP_F_ACK, data, 1000, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);
	/* each batch looks at the connections carried into it again */
	CHECK_EQ(c->tcp.st.acks_carried, 1 + 2 + 2);
	CHECK(tcp_input_pending(c));
	CHECK_EQ(recv_all(a1, got, sizeof(got)), 2000);
	CHECK(!memcmp(got, data, 1000) && !memcmp(got + 1000, data, 1000));
	CHECK_EQ(recv_all(a2, got, sizeof(got)), 300);
	CHECK(!memcmp(got, data + 1000, 300));

	/* the last round: the ACK of a full segment goes, the one of a
	 * small write waits the delayed-ACK time (tcp_delack()) as ever */
	c->link.rx.next_round = false;
	tcp_input_done(c);
	CHECK(!tcp_input_pending(c));
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK);
	CHECK_EQ(p.tcp.dport, g1.sport);
	CHECK_EQ(p.tcp.ack, b1 + 2000);
	advance(c, TCP_DELACK_MS + 1);
	CHECK_EQ(test_tx_n(c), 2);
	CHECK(seg_at(c, 1, &p));
	CHECK_EQ(p.tcp.dport, g2.sport);
	CHECK_EQ(p.tcp.ack, b2 + 300);

	/* half the window unacknowledged: the ACK goes at once */
	test_tx_reset(c);
	conn = conn_by_port(c, g1.sport);
	CHECK(conn != NULL);
	half = conn->wnd_sent / 2;
	c->link.rx.next_round = true;
	for (sent = 0, have = 0; sent < half + sizeof(data) &&
	     !test_tx_n(c); sent += sizeof(data)) {
		guest_send(&g1, TCP_F_ACK, data, sizeof(data), NULL, 0);
		while ((r = recv(a1, got, sizeof(got), MSG_DONTWAIT)) > 0)
			have += (size_t)r;
	}
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(sent >= half && sent - sizeof(data) < half);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, b1 + 2000 + (uint32_t)sent);

	/* a FIN is acknowledged at once, even with rounds to come */
	test_tx_reset(c);
	guest_send(&g2, TCP_F_ACK | TCP_F_FIN, "end", 3, NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.ack, b2 + 300 + 3 + 1);
	c->link.rx.next_round = false;
	tcp_input_done(c);
	while ((r = recv(a1, got, sizeof(got), MSG_DONTWAIT)) > 0)
		have += (size_t)r;
	CHECK_EQ(have, sent);
	close(a1);
	close(a2);
	close(ls);
	tcp_test_free(c);
}
