/* pingpong.c - TCP request/response latency, for IPv6 (sockperf 3.7 in
 * Debian 12 speaks IPv4 only).
 *
 *   pingpong server PORT             echo SIZE-byte messages on [::]:PORT
 *   pingpong client ADDR PORT SECS   ping-pong for SECS seconds, then print
 *                                    "count N p50 US p99 US" (round trip)
 *
 * One message (64 bytes) in flight at a time, TCP_NODELAY on both ends;
 * the first 10% of the round trips are a warm-up and not counted. The
 * server handles one client at a time, which is all the benchmark needs.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64
#define MAXN (1 << 22)

/* Read or write exactly n bytes; 0 on success, -1 on error or EOF. */
static int full(int fd, char *buf, size_t n, int wr)
{
	while (n) {
		ssize_t r = wr ? write(fd, buf, n) : read(fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		buf += r;
		n -= (size_t)r;
	}
	return 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Serve clients one after another on [::]:port (dual stack), forever. */
static int server(const char *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
	int one = 1, zero = 0, s = socket(AF_INET6, SOCK_STREAM, 0);
	char buf[MSG];

	a.sin6_port = htons((unsigned short)atoi(port));
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 16)) {
		perror("pingpong: listen");
		return 1;
	}
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (!full(c, buf, MSG, 0) && !full(c, buf, MSG, 1))
			;
		close(c);
	}
}

/* Ping-pong against addr:port for secs seconds; print the percentiles. */
static int client(const char *addr, const char *port, double secs)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	static double rtt[MAXN];
	char buf[MSG] = { 0 };
	int one = 1, s;
	size_t n = 0, skip;
	double end;

	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "pingpong: bad address %s\n", addr);
		return 1;
	}
	s = socket(ai->ai_family, SOCK_STREAM, 0);
	if (s < 0 || connect(s, ai->ai_addr, ai->ai_addrlen)) {
		perror("pingpong: connect");
		return 1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	end = now() + secs;
	while (n < MAXN) {
		double t0 = now();

		if (full(s, buf, MSG, 1) || full(s, buf, MSG, 0)) {
			perror("pingpong: exchange");
			return 1;
		}
		rtt[n++] = (now() - t0) * 1e6;
		if (t0 > end)
			break;
	}
	skip = n / 10;
	qsort(rtt + skip, n - skip, sizeof(double), cmp);
	n -= skip;
	printf("count %zu p50 %.3f p99 %.3f\n", n, rtt[skip + n / 2],
	       rtt[skip + (n * 99) / 100]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], atof(argv[4]));
	fprintf(stderr, "usage: pingpong server PORT | client ADDR PORT SECS\n");
	return 2;
}
