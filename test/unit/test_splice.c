/* test_splice.c - the loopback splice path (tcp_splice.c) with injected
 * time: an idle spliced connection is reset after TCP_IDLE_MS, and
 * traffic postpones that.
 *
 * Everything is on this machine's IPv4 loopback: a "client" connects to
 * a front listener, the accepted socket is handed to tcp_splice_start()
 * as a -T connection would be, and the splice connects to a back
 * listener standing for the host server. Events are dispatched by hand;
 * c->now is moved forward instead of waiting.
 */
#include <errno.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "tcp_conn.h"
#include "util.h"
#include "unit.h"

/* lo_listen() - a listener on 127.0.0.1, its port in *port. */
static int lo_listen(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || bind(s, (struct sockaddr *)&a, sl) || listen(s, 4) ||
	    getsockname(s, (struct sockaddr *)&a, &sl))
		return -1;
	*port = ntohs(a.sin_port);
	return s;
}

static int lo_connect(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	return s;
}

/* pump() - dispatch splice events for up to ms of real time, or until
 * fd has something to read (fd < 0: the whole time). */
static void pump(struct ctx *c, int fd, int ms)
{
	struct epoll_event ev[8];
	int i, n, t;

	for (t = 0; t < ms; t += 10) {
		if (fd >= 0) {
			char b;

			if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0 ||
			    (errno != EAGAIN && errno != EWOULDBLOCK))
				return;
		}
		n = epoll_wait(c->epfd, ev, 8, 10);
		for (i = 0; i < n; i++) {
			union eref ref = { .u64 = ev[i].data.u64 };

			if (ref.type == EREF_TCP_SPLICE)
				tcp_splice_handler(c, ref.u64, ev[i].events);
		}
	}
}

TEST(tcp_splice_idle_reset)
{
	struct ctx *c = test_ctx();
	uint16_t fport, bport;
	int front, back, cli, acc, srv = -1;
	char b[4];

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	tcp_fwd_init(c);
	front = lo_listen(&fport);
	back = lo_listen(&bport);
	CHECK(front >= 0 && back >= 0);
	cli = lo_connect(fport);
	CHECK(cli >= 0);
	acc = accept4(front, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK(acc >= 0);
	tcp_splice_start(c, acc, false, bport, NULL, TCP_FWD_OUT);
	CHECK_EQ(c->flows.count[FLOW_TCP_SPLICE], 1);
	pump(c, -1, 50);
	srv = accept(back, NULL, NULL);
	CHECK(srv >= 0);
	CHECK(send(cli, "ab", 2, 0) == 2);
	pump(c, srv, 2000);
	CHECK(recv(srv, b, sizeof(b), MSG_DONTWAIT) == 2);

	/* Just short of the limit: nothing happens; then traffic. */
	test_advance(c, TCP_IDLE_MS - 1000);
	tcp_fwd_timer(c);
	CHECK_EQ(c->flows.count[FLOW_TCP_SPLICE], 1);
	CHECK(send(srv, "c", 1, 0) == 1);
	pump(c, cli, 2000);
	CHECK(recv(cli, b, sizeof(b), MSG_DONTWAIT) == 1);
	/* The traffic moved the limit: 1 s later still there... */
	test_advance(c, 1000);
	c->timer_armed = false;
	tcp_fwd_timer(c);
	CHECK_EQ(c->flows.count[FLOW_TCP_SPLICE], 1);
	CHECK(c->timer_armed);
	CHECK(ts_ms_diff(&c->timer_due, &c->now) >= TCP_IDLE_MS - 1001 &&
	      ts_ms_diff(&c->timer_due, &c->now) <= TCP_IDLE_MS - 1000);
	/* ... and gone, both ends reset, once idle for TCP_IDLE_MS. */
	test_advance(c, TCP_IDLE_MS - 1000);
	tcp_fwd_timer(c);
	CHECK_EQ(c->flows.count[FLOW_TCP_SPLICE], 0);
	CHECK_EQ(c->tcp_fwd.st.splice_idle, 1);
	CHECK(recv(cli, b, 1, 0) < 0 && errno == ECONNRESET);
	CHECK(recv(srv, b, 1, 0) < 0 && errno == ECONNRESET);

	close(cli);
	close(srv);
	close(front);
	close(back);
	close(c->epfd);
	test_ctx_free(c);
}
