/* test_udp_scan.c - /proc/net socket table scanning for "auto" port
 * forwarding (fwd_scan.c): states per protocol, IPv4 and IPv6 lines,
 * headers and malformed lines, chunked reads of a long table, and a live
 * scan finding a socket this test binds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "fwd.h"
#include "fwd_scan.h"
#include "unit.h"

#define L(s)	s, strlen(s)

static bool bit(const uint64_t *map, unsigned int port)
{
	return map[port / 64] >> (port % 64) & 1;
}

static unsigned int bits(const uint64_t *map)
{
	unsigned int w, n = 0;

	for (w = 0; w < FWD_BITMAP_WORDS; w++)
		n += (unsigned int)__builtin_popcountll(map[w]);
	return n;
}

TEST(scan_line_states)
{
	const char *u4 = "  133: 00000000:0044 00000000:0000 07 00000000:00000000 "
			 "00:00000000 00000000     0        0 19420 2 "
			 "0000000000000000 0";
	const char *u4c = "  134: 0100007F:9C40 0100007F:0035 01 00000000:00000000"
			  " 00:00000000 00000000     0        0 19421 2 0 0";
	const char *t4 = "   0: 0100007F:0035 00000000:0000 0A 00000000:00000000"
			 " 00:00000000 00000000   101        0 1 1 0 100 0 0 10 0";
	const char *t4e = "   1: 0100007F:8A2C 0100007F:0035 01 00000000:00000000"
			  " 00:00000000 00000000   101        0 1 1 0";
	const char *u6 = "  200: 00000000000000000000000001000000:7A69 "
			 "00000000000000000000000000000000:0000 07 "
			 "00000000:00000000 00:00000000 00000000 0 0 1 2 0 0";

	CHECK_EQ(fwd_scan_line(L(u4), IPPROTO_UDP), 0x44);
	CHECK_EQ(fwd_scan_line(L(u4), IPPROTO_TCP), 0);
	CHECK_EQ(fwd_scan_line(L(u4c), IPPROTO_UDP), 0);	/* connected */
	CHECK_EQ(fwd_scan_line(L(t4), IPPROTO_TCP), 53);
	CHECK_EQ(fwd_scan_line(L(t4), IPPROTO_UDP), 0);
	CHECK_EQ(fwd_scan_line(L(t4e), IPPROTO_TCP), 0);	/* established */
	CHECK_EQ(fwd_scan_line(L(u6), IPPROTO_UDP), 31337);
	CHECK_EQ(fwd_scan_line(L(u6), IPPROTO_ICMP), 0);
}

TEST(scan_line_bad)
{
	static const char *bad[] = {
		"   sl  local_address rem_address   st tx_queue rx_queue",
		"",
		"   0:",
		"   0: 0100007F:0035",
		"   0: 0100007F:0035 00000000:0000",
		"   0: 0100007F:0035 00000000:0000 7",	/* one-digit state */
		"   0: 0100007F:0035 00000000:0000 0G 0",
		"   0: 0100007G:0035 00000000:0000 07 0",	/* address */
		"   0: 0100007F:035 00000000:0000 07 0",	/* port digits */
		"   0: 0100007F:00350 00000000:0000 07 0",
		"   0: 0100007F:0000 00000000:0000 07 0",	/* port 0 */
		"   0: 0100007F0035 00000000:0000 07 0",	/* no colon */
		"   0: 100007F:0035 00000000:0000 07 0",	/* 7 digits */
		"   x: 0100007F:0035 00000000:0000 07 0",
		"   0 0100007F:0035 00000000:0000 07 0",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fwd_scan_line(L(bad[i]), IPPROTO_UDP)) {
			printf("  accepted: '%s'\n", bad[i]);
			CHECK(0);
		}
	}
	/* No NUL needed: the length bounds the line. */
	CHECK_EQ(fwd_scan_line("   0: 0100007F:0035 00000000:0000 07", 30,
			       IPPROTO_UDP), 0);
}

/* A table longer than the reader's buffer, with a last line that has no
 * newline, read from a file: every port found, nothing else. */
TEST(scan_file_chunks)
{
	char path[] = "/tmp/ferry-scan-XXXXXX";
	uint64_t map[FWD_BITMAP_WORDS] = { 0 };
	int fd = mkstemp(path), i;
	FILE *f;

	CHECK(fd >= 0);
	unlink(path);
	f = fdopen(fd, "w+");
	CHECK(f);
	fprintf(f, "  sl  local_address rem_address   st tx_queue rx_queue tr "
		"tm->when retrnsmt   uid  timeout inode ref pointer drops\n");
	for (i = 0; i < 600; i++)
		fprintf(f, "%5d: 0100007F:%04X 00000000:0000 %s 00000000:00000000"
			" 00:00000000 00000000     0        0 %d 2 "
			"0000000000000000 0%s", i, 1000 + i,
			i % 3 ? "07" : "01", 20000 + i, i == 599 ? "" : "\n");
	fflush(f);
	CHECK_EQ(fwd_scan_fd(fd, IPPROTO_UDP, map), 0);
	CHECK_EQ(bits(map), 400);
	CHECK(!bit(map, 1000) && bit(map, 1001) && bit(map, 1002));
	CHECK(bit(map, 1598));		/* 599 % 3 == 2: last, no newline */
	/* Scanning again reads from the start: same result. */
	memset(map, 0, sizeof(map));
	CHECK_EQ(fwd_scan_fd(fd, IPPROTO_UDP, map), 0);
	CHECK_EQ(bits(map), 400);
	CHECK_EQ(fwd_scan_fd(fd, IPPROTO_TCP, map), 0);	/* ORs: no state 0A */
	CHECK_EQ(bits(map), 400);
	fclose(f);
	CHECK_EQ(fwd_scan("/nonexistent/udp", IPPROTO_UDP, map), -ENOENT);
}

/* The real table: a UDP socket we bind shows up, and not once connected. */
TEST(scan_proc_live)
{
	uint64_t map[FWD_BITMAP_WORDS] = { 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	uint16_t port;

	CHECK(s >= 0);
	CHECK(!bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	CHECK(!getsockname(s, (struct sockaddr *)&sa, &sl));
	port = ntohs(sa.sin_port);
	CHECK_EQ(fwd_scan("/proc/net/udp", IPPROTO_UDP, map), 0);
	CHECK(bit(map, port));
	CHECK(!connect(s, (struct sockaddr *)&sa, sizeof(sa)));
	memset(map, 0, sizeof(map));
	CHECK_EQ(fwd_scan("/proc/net/udp", IPPROTO_UDP, map), 0);
	CHECK(!bit(map, port));
	close(s);
}
