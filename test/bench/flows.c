/* flows.c - many idle flows for the bench's 10k-flow row (test/bench/flows.py).
 *
 *   flows serve PORT            host: accept TCP connections on PORT and
 *                               hold them; answer each UDP datagram on
 *                               PORT once (its flow then counts as
 *                               answered in a translator: the longer
 *                               timeout)
 *   flows tcp ADDR PORT N       guest: open N TCP connections to ADDR,
 *                               at most INFLIGHT at a time, then hold them
 *   flows udp ADDR PORT N       guest: N UDP sockets, one datagram each to
 *                               ADDR (a flow each; again, twice at most,
 *                               to those with no answer), count the
 *                               answers, then hold them
 *
 * The guest modes print one line when done, then sleep until a signal
 * ends them (closing every socket):
 *   "READY tcp=N ms=T failed=F" (T: wall time to establish all N)
 *   "READY udp=N ms=T answered=A rounds=R"
 * The set-up time is a wall-clock figure: on a busy machine it moves
 * with the load. The process raises its soft fd limit to the hard one;
 * N beyond that limit fails with a message.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define INFLIGHT	256	/* connections in SYN-SENT at once */
#define WAIT_MS		10000	/* for one batch of connections */
#define UDP_ROUNDS	3	/* datagrams sent to a flow with no answer yet */
#define UDP_ROUND_MS	2000	/* answers awaited after each round */
#define UDP_BURST	256	/* datagrams sent before answers are read */
#define MAX(a, b)	((a) > (b) ? (a) : (b))

/* now_ms() - monotonic milliseconds. */
static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* die() - print the reason and exit 1. */
static void die(const char *what)
{
	fprintf(stderr, "flows: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* nofile_raise() - soft fd limit to the hard one; returns it. */
static long nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit");
	return (long)rl.rlim_cur;
}

/* resolve() - ADDR PORT as a socket address (numeric, v4 or v6). */
static void resolve(const char *addr, const char *port, struct sockaddr_storage *ss,
		    socklen_t *len, int type)
{
	struct addrinfo hints = { .ai_socktype = type, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	int rc = getaddrinfo(addr, port, &hints, &ai);

	if (rc) {
		fprintf(stderr, "flows: %s: %s\n", addr, gai_strerror(rc));
		exit(1);
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
}

/* hold() - sleep until a signal ends the process (its default action). */
static void hold(void)
{
	for (;;)
		pause();
}

/* serve() - the host side: TCP accepted and held, UDP answered. */
static _Noreturn void serve(int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, lt, lu, ep;
	struct epoll_event ev = { .events = EPOLLIN };

	nofile_raise();
	lt = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
	lu = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (lt < 0 || lu < 0)
		die("socket");
	setsockopt(lt, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lt, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	setsockopt(lu, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lt, (void *)&a, sizeof(a)) || bind(lu, (void *)&a, sizeof(a)))
		die("bind");
	if (listen(lt, 4096))
		die("listen");
	ep = epoll_create1(0);
	ev.data.fd = lt;
	epoll_ctl(ep, EPOLL_CTL_ADD, lt, &ev);
	ev.data.fd = lu;
	epoll_ctl(ep, EPOLL_CTL_ADD, lu, &ev);
	printf("LISTENING %d\n", port);
	fflush(stdout);
	for (;;) {
		struct epoll_event got[64];
		int n = epoll_wait(ep, got, 64, -1), i;

		for (i = 0; i < n; i++) {
			int fd = got[i].data.fd;

			if (fd == lt) {
				int s;

				while ((s = accept4(lt, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					struct epoll_event e = { .events = EPOLLRDHUP,
								 .data.fd = s };

					epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
				}
			} else if (fd == lu) {
				struct sockaddr_storage from;
				socklen_t fl = sizeof(from);
				char buf[64];
				ssize_t r;

				while ((r = recvfrom(lu, buf, sizeof(buf), 0, (void *)&from,
						     &fl)) >= 0) {
					sendto(lu, buf, (size_t)r, 0, (void *)&from, fl);
					fl = sizeof(from);
				}
			} else {		/* the peer closed: let go */
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
	}
}

/* tcp_open() - N connections, INFLIGHT at a time; prints READY. */
static int tcp_open(const char *addr, const char *port, long n)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct pollfd *pf;
	long opened = 0, failed = 0;
	double t0;

	if (nofile_raise() < n + 16) {
		fprintf(stderr, "flows: %ld connections exceed the fd limit\n", n);
		return 1;
	}
	pf = calloc(INFLIGHT, sizeof(*pf));
	if (!pf)
		die("calloc");
	resolve(addr, port, &ss, &len, SOCK_STREAM);
	t0 = now_ms();
	while (opened + failed < n) {
		int k = 0, i, left;

		for (; k < INFLIGHT && opened + failed + k < n; k++) {
			int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);

			if (s < 0)
				die("socket");
			if (connect(s, (void *)&ss, len) && errno != EINPROGRESS)
				die("connect");
			pf[k] = (struct pollfd){ .fd = s, .events = POLLOUT };
		}
		left = k;
		while (left) {
			double w0 = now_ms();
			int r = poll(pf, (nfds_t)k, WAIT_MS);

			if (r <= 0 && now_ms() - w0 >= WAIT_MS) {
				fprintf(stderr, "flows: %d connections stuck\n", left);
				return 1;
			}
			for (i = 0; i < k; i++) {
				int err = 0;
				socklen_t el = sizeof(err);

				if (pf[i].fd < 0 || !pf[i].revents)
					continue;
				getsockopt(pf[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
				if (err) {
					failed++;
					close(pf[i].fd);
				} else {
					opened++;
				}
				pf[i].fd = -1;	/* kept open: poll() skips it */
				left--;
			}
		}
	}
	printf("READY tcp=%ld ms=%.0f failed=%ld\n", opened, now_ms() - t0, failed);
	fflush(stdout);
	free(pf);
	hold();
	return 0;
}

/* udp_collect() - answers for up to ms or until want came; marks them in
 * got[], returns how many came. */
static long udp_collect(int ep, char *got, long want, int ms)
{
	struct epoll_event ev[256];
	double t0 = now_ms();
	long n = 0;
	int r, j;

	while (n < want &&
	       (r = epoll_wait(ep, ev, 256, MAX(1, ms - (int)(now_ms() - t0)))) > 0) {
		for (j = 0; j < r; j++) {
			char buf[64];
			int fd = (int)(ev[j].data.u64 >> 32);

			if (recv(fd, buf, sizeof(buf), 0) >= 0 && !got[ev[j].data.u32]) {
				got[ev[j].data.u32] = 1;
				n++;
			}
			epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
		}
		if (now_ms() - t0 >= ms)
			break;
	}
	return n;
}

/* udp_open() - N sockets, one datagram each (sent again, up to
 * UDP_ROUNDS times, to those with no answer yet: a neighbour resolution
 * or a full queue may drop the first), answers counted; READY. */
static int udp_open(const char *addr, const char *port, long n)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int *fds, ep, round;
	char *got;
	long i, answered = 0;
	double t0;

	if (nofile_raise() < n + 16) {
		fprintf(stderr, "flows: %ld UDP sockets exceed the fd limit\n", n);
		return 1;
	}
	fds = calloc((size_t)n, sizeof(int));
	got = calloc((size_t)n, 1);
	if (!fds || !got)
		die("calloc");
	resolve(addr, port, &ss, &len, SOCK_DGRAM);
	ep = epoll_create1(0);
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN };

		fds[i] = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (fds[i] < 0)
			die("socket");
		if (connect(fds[i], (void *)&ss, len))
			die("connect");
		ev.data.u64 = (uint64_t)fds[i] << 32 | (uint32_t)i;
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	for (round = 0; round < UDP_ROUNDS && answered < n; round++) {
		for (i = 0; i < n; i++) {
			if (!got[i])
				send(fds[i], "flows", 5, 0);	/* a loss: the next round */
			if (i % UDP_BURST == UDP_BURST - 1)	/* queues stay short */
				answered += udp_collect(ep, got, n - answered, 1);
		}
		answered += udp_collect(ep, got, n - answered, UDP_ROUND_MS);
	}
	printf("READY udp=%ld ms=%.0f answered=%ld rounds=%d\n", n, now_ms() - t0,
	       answered, round);
	fflush(stdout);
	hold();
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(argv[1], "serve"))
		serve(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "tcp"))
		return tcp_open(argv[2], argv[3], atol(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "udp"))
		return udp_open(argv[2], argv[3], atol(argv[4]));
	fprintf(stderr, "usage: flows serve PORT | flows tcp|udp ADDR PORT N\n");
	return 2;
}
