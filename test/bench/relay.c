/* relay.c - the least a TCP relay between two kernel stacks can cost:
 * the floor under any translator that terminates the guest's connection
 * in one stack and opens its own in another (ferry, pasta).
 *
 *   relay IN_ADDR OUT_ADDR PORT...
 *
 * For each PORT, listens on IN_ADDR:PORT; every accepted connection is
 * joined to a new connection to OUT_ADDR:PORT (TCP_NODELAY both ways),
 * and one single-threaded epoll loop copies whatever one side can read
 * to the other with one read() and one blocking write() per wake-up:
 * per request/response exchange two sleeps, two reads and two writes, no
 * frame parsing, no TCP state of its own. test/bench/ab.py runs it in
 * the veth guest ("relay" variant): client -> guest loopback -> relay ->
 * veth -> server, the same two kernel TCP connections per exchange that
 * a translator's path has. With RELAY_POLL_US=N in the environment,
 * each wait first polls (epoll_wait() with a zero timeout) for up to N
 * microseconds: the floor with busy polling. A bench tool, not part of
 * ferry.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PORTS_MAX	8
#define FDS_MAX		4096

static int peer[FDS_MAX];		/* fd -> the other side, -1 if none */
static int listen_port[FDS_MAX];	/* listening fd -> port, 0 if not */
static char buf[65536];

static int addr_of(const char *s, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		return sizeof(*a4);
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		return sizeof(*a6);
	}
	fprintf(stderr, "relay: bad address %s\n", s);
	exit(2);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void drop_pair(int ep, int fd)
{
	int p = peer[fd];

	epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	peer[fd] = -1;
	if (p >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, p, NULL);
		close(p);
		peer[p] = -1;
	}
}

static void add(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd >= FDS_MAX || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		die("relay: epoll_ctl");
}

static void accept_one(int ep, int lfd, const char *out)
{
	struct sockaddr_storage ss;
	int one = 1, in, o;
	socklen_t len;

	in = accept(lfd, NULL, NULL);
	if (in < 0)
		return;
	len = addr_of(out, listen_port[lfd], &ss);
	o = socket(ss.ss_family, SOCK_STREAM, 0);
	if (o < 0 || o >= FDS_MAX || in >= FDS_MAX ||
	    connect(o, (struct sockaddr *)&ss, len)) {
		close(in);
		if (o >= 0)
			close(o);
		return;
	}
	setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(o, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	peer[in] = o;
	peer[o] = in;
	add(ep, in);
	add(ep, o);
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* wait_events() - epoll_wait(), after polling for up to poll_ns. */
static int wait_events(int ep, struct epoll_event *ev, long long poll_ns)
{
	long long end = now_ns() + poll_ns;
	int n;

	while (poll_ns && now_ns() < end)
		if ((n = epoll_wait(ep, ev, 64, 0)))
			return n;
	return epoll_wait(ep, ev, 64, -1);
}

int main(int argc, char **argv)
{
	const char *p = getenv("RELAY_POLL_US");
	long long poll_ns = p ? atoll(p) * 1000 : 0;
	struct epoll_event ev[64];
	int ep, i, n;

	if (argc < 4 || argc - 3 > PORTS_MAX) {
		fprintf(stderr, "usage: relay IN_ADDR OUT_ADDR PORT...\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);	/* a write to a reset peer drops the pair */
	memset(peer, -1, sizeof(peer));
	ep = epoll_create1(0);
	if (ep < 0)
		die("relay: epoll_create1");
	for (i = 3; i < argc; i++) {
		struct sockaddr_storage ss;
		int port = atoi(argv[i]), one = 1, fd;
		socklen_t len = addr_of(argv[1], port, &ss);

		fd = socket(ss.ss_family, SOCK_STREAM, 0);
		if (fd < 0 || fd >= FDS_MAX)
			die("relay: socket");
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1024))
			die("relay: bind/listen");
		listen_port[fd] = port;
		add(ep, fd);
	}
	printf("relay: ready\n");
	fflush(stdout);
	for (;;) {
		n = wait_events(ep, ev, poll_ns);
		if (n < 0 && errno != EINTR)
			die("relay: epoll_wait");
		for (i = 0; i < n; i++) {
			int fd = ev[i].data.fd;
			ssize_t r, w, off;

			if (listen_port[fd]) {
				accept_one(ep, fd, argv[2]);
				continue;
			}
			if (peer[fd] < 0)
				continue;	/* closed with its pair */
			r = read(fd, buf, sizeof(buf));
			if (r <= 0) {
				drop_pair(ep, fd);
				continue;
			}
			for (off = 0; off < r; off += w) {
				w = write(peer[fd], buf + off, r - off);
				if (w <= 0)
					break;
			}
			if (off < r)
				drop_pair(ep, fd);
		}
	}
}
