/* test_pcap.c - pcap capture: write frames, parse the file back (file
 * header, record lengths and bytes), both link directions, batches larger
 * than one writev, oversized frames, write errors and the size cap. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ferry.h"
#include "pcap.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

/* cap_file() - a test context capturing to a fresh temporary file. */
static struct ctx *cap_ctx(char *path)
{
	struct ctx *c = test_ctx();
	int fd;

	strcpy(path, "/tmp/ferry-pcap-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
	str_copy(c->conf.pcap_file, path, sizeof(c->conf.pcap_file));
	pcap_init(c);
	return c;
}

/* cap_finish() - stop capturing, read the whole file into a malloc()ed
 * buffer (test code only) and remove it. */
static uint8_t *cap_finish(struct ctx *c, const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;
	int fd;

	close(c->pcap_fd);
	c->pcap_fd = -1;
	fd = open(path, O_RDONLY);
	unlink(path);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	b = malloc((size_t)st.st_size + 1);
	*len = (size_t)read(fd, b, (size_t)st.st_size);
	close(fd);
	return b;
}

/* Parsed records of a capture file. */
struct rec {
	uint32_t caplen, len, sec;
	const uint8_t *data;
};

/* parse() - check the file header, split records; returns the number
 * of records or -1 when the file is malformed. */
static int parse(const uint8_t *b, size_t len, struct rec *r, int max)
{
	const struct pcap_file_hdr *h = (const void *)b;
	size_t off = sizeof(*h);
	int n = 0;

	if (len < sizeof(*h) || h->magic != PCAP_MAGIC_US || h->major != 2 ||
	    h->minor != 4 || h->linktype != 1 || h->snaplen < 65535 ||
	    h->thiszone || h->sigfigs)
		return -1;
	while (off < len) {
		struct pcap_rec_hdr rh;

		if (len - off < sizeof(rh) || n == max)
			return -1;
		memcpy(&rh, b + off, sizeof(rh));
		off += sizeof(rh);
		if (rh.caplen > rh.len || rh.caplen > h->snaplen ||
		    rh.usec >= 1000000 || len - off < rh.caplen)
			return -1;
		r[n].caplen = rh.caplen;
		r[n].len = rh.len;
		r[n].sec = rh.sec;
		r[n].data = b + off;
		off += rh.caplen;
		n++;
	}
	return n;
}

static void pattern(uint8_t *b, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(seed + i * 13);
}

TEST(pcap_off_by_default)
{
	struct ctx *c = test_ctx();

	pcap_init(c);
	CHECK_EQ(c->pcap_fd, -1);
	test_ctx_free(c);
}

TEST(pcap_writes_batch_and_parses_back)
{
	static uint8_t f[3][1600];
	static const size_t lens[3] = { 60, 1514, 0 };
	struct iovec iov[3];
	char path[64];
	struct ctx *c = cap_ctx(path);
	struct rec r[8];
	uint8_t *b;
	size_t len;
	int i, n;

	CHECK(c->pcap_fd >= 0);
	for (i = 0; i < 3; i++) {
		pattern(f[i], sizeof(f[i]), (uint8_t)i);
		iov[i].iov_base = f[i];
		iov[i].iov_len = lens[i];
	}
	pcap_frames(c, iov, 3);
	pcap_frames(c, iov, 0);
	b = cap_finish(c, path, &len);
	CHECK(b);
	n = parse(b, len, r, 8);
	CHECK_EQ(n, 3);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(r[i].caplen, lens[i]);
		CHECK_EQ(r[i].len, lens[i]);
		CHECK(!memcmp(r[i].data, f[i], lens[i]));
		CHECK(r[i].sec > 1600000000);	/* wall clock, not monotonic */
	}
	CHECK_EQ(len, 24 + 3 * 16 + 60 + 1514);
	free(b);
	test_ctx_free(c);
}

TEST(pcap_captures_both_link_directions)
{
	static const uint8_t payload[5] = { 1, 2, 3, 4, 5 };
	uint8_t f[200], udp[8 + sizeof(payload)] = { 0 };
	struct in_addr s, d;
	char path[64];
	struct ctx *c = cap_ctx(path);
	struct rec r[8];
	size_t len, flen;
	uint8_t *b;
	int n;

	CHECK(c->pcap_fd >= 0);
	/* From the guest: any frame, even one that is then dropped. */
	memcpy(udp + 8, payload, sizeof(payload));
	flen = test_frame_ip4(f, "198.51.100.2", "198.51.100.1", 253, udp,
			      sizeof(udp));
	test_input(c, f, flen);
	CHECK_EQ(c->stats.drops[DROP_IP_PROTO], 1);
	/* To the guest: captured at flush. */
	inet_pton(AF_INET, "198.51.100.1", &s);
	inet_pton(AF_INET, "198.51.100.2", &d);
	CHECK(tap_send_ip4(c, s, d, IPPROTO_ICMP, udp, sizeof(udp)));
	CHECK_EQ(test_tx_n(c), 1);
	b = cap_finish(c, path, &len);
	CHECK(b);
	n = parse(b, len, r, 8);
	CHECK_EQ(n, 2);
	CHECK_EQ(r[0].len, flen);
	CHECK(!memcmp(r[0].data, f, flen));
	/* 42 bytes of frame, padded to the 802.3 minimum */
	CHECK_EQ(r[1].len, ETH_ZLEN_);
	CHECK(ETH_HLEN_ + IP4_HLEN + sizeof(udp) < ETH_ZLEN_);
	CHECK(!memcmp(r[1].data + 6, c->conf.our_mac, 6));	/* from us */
	free(b);
	test_ctx_free(c);
}

TEST(pcap_large_batch_and_oversized_frame)
{
	enum { N = PCAP_BATCH + 77 };
	static struct iovec iov[N];
	static uint8_t small[N][64];
	size_t big_len = PCAP_SNAPLEN + 1000, len;
	uint8_t *big = malloc(big_len), *b;
	char path[64];
	struct ctx *c = cap_ctx(path);
	static struct rec r[N + 2];
	int i, n;

	CHECK(c->pcap_fd >= 0 && big);
	for (i = 0; i < N; i++) {
		pattern(small[i], 64, (uint8_t)i);
		iov[i].iov_base = small[i];
		iov[i].iov_len = 14 + (size_t)(i % 50);
	}
	pcap_frames(c, iov, N);
	pattern(big, big_len, 9);
	iov[0].iov_base = big;
	iov[0].iov_len = big_len;
	pcap_frames(c, iov, 1);
	b = cap_finish(c, path, &len);
	CHECK(b);
	n = parse(b, len, r, N + 2);
	CHECK_EQ(n, N + 1);
	for (i = 0; i < N; i++) {
		CHECK_EQ(r[i].len, 14 + i % 50);
		CHECK(!memcmp(r[i].data, small[i], r[i].caplen));
	}
	/* Longer than the snap length: cut, original length kept. */
	CHECK_EQ(r[N].caplen, PCAP_SNAPLEN);
	CHECK_EQ(r[N].len, big_len);
	CHECK(!memcmp(r[N].data, big, PCAP_SNAPLEN));
	free(b);
	free(big);
	test_ctx_free(c);
}

TEST(pcap_write_error_stops_capture)
{
	struct ctx *c = test_ctx();
	uint8_t f[64] = { 0 };
	struct iovec iov = { f, sizeof(f) };

	c->pcap_fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	CHECK(c->pcap_fd >= 0);
	pcap_frames(c, &iov, 1);
	CHECK_EQ(c->pcap_fd, -1);
	pcap_frames(c, &iov, 1);		/* a no-op now */
	CHECK_EQ(c->pcap_fd, -1);
	test_ctx_free(c);
}

TEST(pcap_size_cap_stops_at_whole_record)
{
	char path[64];
	struct ctx *c = cap_ctx(path);
	uint8_t f[5][100], *b;
	struct iovec iov[5];
	struct rec r[8];
	size_t len = 0;
	int i;

	CHECK(c->pcap_fd >= 0);
	CHECK_EQ(c->pcap_bytes, sizeof(struct pcap_file_hdr));
	for (i = 0; i < 5; i++) {
		pattern(f[i], sizeof(f[i]), (uint8_t)i);
		iov[i].iov_base = f[i];
		iov[i].iov_len = sizeof(f[i]);
	}
	pcap_frames(c, iov, 3);
	CHECK_EQ(c->pcap_bytes, 24 + 3 * (16 + 100));
	/* Pretend the file is close to the cap: room for exactly two more
	 * records of the batch of five; the third would cross it. */
	c->pcap_bytes = PCAP_MAX_BYTES - 2 * (16 + 100);
	pcap_frames(c, iov, 5);
	CHECK_EQ(c->pcap_fd, -1);
	CHECK_EQ(c->pcap_bytes, PCAP_MAX_BYTES);
	pcap_frames(c, iov, 5);			/* a no-op now */
	b = cap_finish(c, path, &len);
	CHECK(b);
	CHECK_EQ(parse(b, len, r, 8), 5);	/* whole records only */
	CHECK(!memcmp(r[4].data, f[1], sizeof(f[1])));
	free(b);
	test_ctx_free(c);
}

TEST(pcap_open_failure_reported)
{
	CHECK_EQ(pcap_open("/nonexistent-dir/x.pcap"), -ENOENT);
}
