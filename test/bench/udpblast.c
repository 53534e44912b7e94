/* udpblast.c - a UDP throughput probe for test/bench/udp.sh.
 *
 *   udpblast send ADDR PORT SIZE SECONDS [MBIT]   (MBIT 0: unthrottled)
 *   udpblast recv PORT SECONDS
 *
 * The sender sends SIZE-byte datagrams in sendmmsg() batches, each
 * carrying a sequence number; the receiver counts what arrives (recvmmsg)
 * until SECONDS passed or the flow stopped for 1 s, and prints one line:
 * "RESULT datagrams=N bytes=B seconds=T mbit=X lost=L" (lost: sequence
 * numbers never seen below the highest seen).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
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

static int do_send(const char *addr, const char *port, size_t size,
		   double secs, double mbit)
{
	static uint8_t buf[BATCH][MAXSZ];
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *ai;
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	uint64_t seq = 0, sent_bytes = 0;
	double t0, t;
	int fd, i, sb = 4 << 20;

	if (getaddrinfo(addr, port, &hints, &ai))
		return 1;
	fd = socket(ai->ai_family, SOCK_DGRAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
		return perror("connect"), 1;
	for (i = 0; i < BATCH; i++) {
		memset(buf[i], 0xa5, size);
		iov[i] = (struct iovec){ buf[i], size };
		mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
						 .msg_iovlen = 1 };
	}
	t0 = now();
	while ((t = now()) - t0 < secs) {
		int n;

		if (mbit > 0 && sent_bytes * 8 / 1e6 > mbit * (t - t0)) {
			usleep(50);
			continue;
		}
		for (i = 0; i < BATCH; i++)
			memcpy(buf[i], &(uint64_t){ seq + i }, 8);
		n = sendmmsg(fd, mm, BATCH, 0);
		if (n > 0) {
			seq += n;
			sent_bytes += (uint64_t)n * size;
		}
	}
	printf("SENT datagrams=%llu mbit=%.0f\n", (unsigned long long)seq,
	       sent_bytes * 8 / 1e6 / (now() - t0));
	return 0;
}

static int do_recv(const char *port, double secs)
{
	static uint8_t buf[BATCH][MAXSZ];
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(atoi(port)) };
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	uint64_t n = 0, bytes = 0, maxseq = 0;
	double t0 = 0, tl = 0, start = now();
	int fd, i, rb = 8 << 20, zero = 0;

	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return perror("bind"), 1;
	printf("READY\n");
	fflush(stdout);
	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], MAXSZ };
		mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i],
						 .msg_iovlen = 1 };
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r;

		if (poll(&p, 1, 200) <= 0) {
			if ((n && now() - tl > 1.0) || now() - start > secs + 30)
				break;
			continue;
		}
		r = recvmmsg(fd, mm, BATCH, MSG_DONTWAIT, NULL);
		for (i = 0; i < r; i++) {
			uint64_t s;

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
	       "lost=%llu\n", (unsigned long long)n, (unsigned long long)bytes,
	       tl - t0, tl > t0 ? bytes * 8 / 1e6 / (tl - t0) : 0.0,
	       (unsigned long long)(maxseq - n));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "send"))
		return do_send(argv[2], argv[3], (size_t)atoi(argv[4]),
			       atof(argv[5]), argc > 6 ? atof(argv[6]) : 0);
	if (argc >= 4 && !strcmp(argv[1], "recv"))
		return do_recv(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: udpblast send ADDR PORT SIZE SECONDS [MBIT] | "
		"recv PORT SECONDS\n");
	return 2;
}
