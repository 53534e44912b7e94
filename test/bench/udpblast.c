/* udpblast.c - a UDP throughput probe for test/bench/udp.sh.
 *
 *   udpblast send ADDR PORT SIZE SECONDS [MBIT]   (MBIT 0: unthrottled)
 *   udpblast recv PORT SECONDS
 *   udpblast serve PORT SIZE SECONDS [MBIT]  wait for a datagram, then send
 *                                            to its source (like send)
 *   udpblast pull ADDR PORT SECONDS          send a 1-byte hello every 200 ms
 *                                            until data comes, count it (recv)
 *
 * UDPBLAST_GSO=N in the environment makes send/serve send N datagrams per
 * message with UDP_SEGMENT (UDP GSO, as applications such as QUIC stacks
 * do), at most what fits a 64 KiB datagram.
 *
 * serve/pull measure host->guest along a flow the guest opened (no port
 * forwarding needed: every tool under test supports that alike); make
 * bench uses all four modes (test/bench/measure.py).
 *
 * The sender sends SIZE-byte datagrams in sendmmsg() batches, each
 * carrying a sequence number; the receiver counts what arrives (recvmmsg)
 * until SECONDS passed or the flow stopped for 1 s, and prints one line:
 * "RESULT datagrams=N bytes=B seconds=T mbit=X lost=L" (lost: sequence
 * numbers never seen below the highest seen).
 *
 * Where the loss happens: the sender also prints txdrop=, the transmit
 * drops of its network namespace's devices over the run (/proc/net/dev,
 * loopback excluded: a tap whose reader is slower than the sender drops
 * there, its ring full), and the receiver rcvbuferr=, its namespace's UDP
 * RcvbufErrors over the run (/proc/net/snmp: a socket whose reader is
 * slower than the datagrams arrive). Both are namespace-wide, fine in a
 * bench sandbox where nothing else sends.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH	32
#define MAXSZ	65507

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* tx_drops() - the transmit drops of every device but lo in this network
 * namespace (/proc/net/dev is per namespace, /sys/class/net may not be). */
static unsigned long long tx_drops(void)
{
	unsigned long long sum = 0, v[16];
	char line[512], name[64];
	FILE *f = fopen("/proc/net/dev", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!c || sscanf(line, " %63[^:]", name) != 1 ||
		    !strcmp(name, "lo"))
			continue;
		/* rx: bytes packets errs drop fifo frame compressed multicast,
		 * tx: bytes packets errs drop ... */
		if (sscanf(c + 1, "%llu %llu %llu %llu %llu %llu %llu %llu "
			   "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
			   &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
			   &v[11]) == 12)
			sum += v[11];
	}
	fclose(f);
	return sum;
}

/* rcvbuf_errors() - this namespace's UDP RcvbufErrors (the "Udp:" rows of /proc/net/snmp, header then values). */
static unsigned long long rcvbuf_errors(void)
{
	char hdr[1024], val[1024], *h, *v, *hs, *vs;
	unsigned long long r = 0;
	FILE *f = fopen("/proc/net/snmp", "r");

	if (!f)
		return 0;
	while (fgets(hdr, sizeof(hdr), f)) {
		if (strncmp(hdr, "Udp: ", 5) || !fgets(val, sizeof(val), f))
			continue;
		h = strtok_r(hdr, " \n", &hs);
		v = strtok_r(val, " \n", &vs);
		while (h && v) {
			if (!strcmp(h, "RcvbufErrors"))
				r = strtoull(v, NULL, 10);
			h = strtok_r(NULL, " \n", &hs);
			v = strtok_r(NULL, " \n", &vs);
		}
		break;
	}
	fclose(f);
	return r;
}

/* Control data of a UDP_SEGMENT send. */
union gso_cmsg {
	uint8_t b[CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

/* Send SIZE-byte numbered datagrams on connected fd for secs seconds;
 * with segs > 1 (UDPBLAST_GSO), each message is segs datagrams as one
 * UDP_SEGMENT send (as an application using UDP GSO does; through a tap
 * with USO the guest's kernel hands the translator the whole run). */
static int blast(int fd, size_t size, double secs, double mbit)
{
	static uint8_t buf[BATCH][MAXSZ];
	static union gso_cmsg cb;
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	uint64_t seq = 0, sent_bytes = 0;
	unsigned long long d0 = tx_drops();
	const char *g = getenv("UDPBLAST_GSO");
	size_t segs = g ? (size_t)atoi(g) : 1, k;
	double t0, t;
	int i, sb = 4 << 20;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	if (size < 8 || size > MAXSZ)
		return fprintf(stderr, "bad size\n"), 1;
	segs = segs < 1 ? 1 : segs > MAXSZ / size ? MAXSZ / size : segs;
	if (segs > 1) {
		struct cmsghdr *cm = (struct cmsghdr *)cb.b;
		uint16_t sz = (uint16_t)size;

		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(sz));
		memcpy(CMSG_DATA(cm), &sz, sizeof(sz));
	}
	for (i = 0; i < BATCH; i++) {
		memset(buf[i], 0xa5, size * segs);
		iov[i] = (struct iovec){ buf[i], size * segs };
		mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
						 .msg_iovlen = 1 };
		if (segs > 1) {
			mm[i].msg_hdr.msg_control = cb.b;
			mm[i].msg_hdr.msg_controllen = sizeof(cb.b);
		}
	}
	t0 = now();
	while ((t = now()) - t0 < secs) {
		int n;

		if (mbit > 0 && sent_bytes * 8 / 1e6 > mbit * (t - t0)) {
			usleep(50);
			continue;
		}
		for (i = 0; i < BATCH; i++)
			for (k = 0; k < segs; k++)
				memcpy(buf[i] + k * size,
				       &(uint64_t){ seq + i * segs + k }, 8);
		n = sendmmsg(fd, mm, BATCH, 0);
		if (n > 0) {
			seq += (uint64_t)n * segs;
			sent_bytes += (uint64_t)n * segs * size;
		}
	}
	printf("SENT datagrams=%llu mbit=%.0f txdrop=%llu\n",
	       (unsigned long long)seq, sent_bytes * 8 / 1e6 / (now() - t0),
	       tx_drops() - d0);
	return 0;
}

/* A dual-stack UDP socket bound to [::]:port with a large receive buffer,
 * "READY" printed once it is bound; -1 on error. */
static int bound(const char *port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(atoi(port)) };
	int fd, rb = 8 << 20, zero = 0;

	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("bind");
		return -1;
	}
	printf("READY\n");
	fflush(stdout);
	return fd;
}

/* A UDP socket connected to addr:port; -1 on error. */
static int connected(const char *addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *ai;
	int fd, rb = 8 << 20;

	if (getaddrinfo(addr, port, &hints, &ai))
		return fprintf(stderr, "bad address %s\n", addr), -1;
	fd = socket(ai->ai_family, SOCK_DGRAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		perror("connect");
		return -1;
	}
	return fd;
}

/* Count datagrams on fd until secs of data or 1 s of silence; with hello,
 * send a 1-byte datagram every poll timeout until the first data. */
static int count(int fd, double secs, int hello)
{
	static uint8_t buf[BATCH][MAXSZ];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	uint64_t n = 0, bytes = 0, maxseq = 0;
	unsigned long long e0 = rcvbuf_errors();
	double t0 = 0, tl = 0, start = now();
	int i;

	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], MAXSZ };
		mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
						 .msg_iovlen = 1 };
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r;

		if (hello && !n && send(fd, "h", 1, 0) < 0)
			perror("hello");
		if (poll(&p, 1, 200) <= 0) {
			if ((n && now() - tl > 1.0) || now() - start > secs + 30)
				break;
			continue;
		}
		r = recvmmsg(fd, mm, BATCH, MSG_DONTWAIT, NULL);
		for (i = 0; i < r; i++) {
			uint64_t s;

			if (mm[i].msg_len < 8)
				continue;	/* a hello, not data */
			memcpy(&s, buf[i], 8);
			if (s + 1 > maxseq)
				maxseq = s + 1;
			bytes += mm[i].msg_len;
		}
		if (r > 0) {
			if (!n)
				t0 = now();
			n += r;
			tl = now();
		}
		if (n && tl - t0 > secs)
			break;
	}
	printf("RESULT datagrams=%llu bytes=%llu seconds=%.2f mbit=%.0f "
	       "lost=%llu rcvbuferr=%llu\n", (unsigned long long)n,
	       (unsigned long long)bytes, tl - t0,
	       tl > t0 ? bytes * 8 / 1e6 / (tl - t0) : 0.0,
	       (unsigned long long)(maxseq - n), rcvbuf_errors() - e0);
	return 0;
}

/* serve: wait for a datagram on [::]:port, connect to its source, blast. */
static int do_serve(const char *port, size_t size, double secs, double mbit)
{
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	char b[16];
	int fd = bound(port);

	if (fd < 0)
		return 1;
	for (;;) {	/* only a hello counts: strays of earlier flows do not */
		ssize_t r = recvfrom(fd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);

		if (r < 0)
			return perror("serve"), 1;
		if (r == 1 && b[0] == 'h')
			break;
		fl = sizeof(from);
	}
	if (connect(fd, (struct sockaddr *)&from, fl))
		return perror("serve"), 1;
	return blast(fd, size, secs, mbit);
}

int main(int argc, char **argv)
{
	int fd;

	if (argc >= 6 && !strcmp(argv[1], "send")) {
		fd = connected(argv[2], argv[3]);
		return fd < 0 ? 1 : blast(fd, (size_t)atoi(argv[4]), atof(argv[5]),
					  argc > 6 ? atof(argv[6]) : 0);
	}
	if (argc >= 4 && !strcmp(argv[1], "recv")) {
		fd = bound(argv[2]);
		return fd < 0 ? 1 : count(fd, atof(argv[3]), 0);
	}
	if (argc >= 5 && !strcmp(argv[1], "serve"))
		return do_serve(argv[2], (size_t)atoi(argv[3]), atof(argv[4]),
				argc > 5 ? atof(argv[5]) : 0);
	if (argc >= 5 && !strcmp(argv[1], "pull")) {
		fd = connected(argv[2], argv[3]);
		return fd < 0 ? 1 : count(fd, atof(argv[4]), 1);
	}
	fprintf(stderr, "usage: udpblast send ADDR PORT SIZE SECONDS [MBIT] | "
		"recv PORT SECONDS | serve PORT SIZE SECONDS [MBIT] | "
		"pull ADDR PORT SECONDS\n");
	return 2;
}
