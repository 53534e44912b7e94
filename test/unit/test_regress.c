/* test_regress.c - regression tests for bugs found by fuzzing and static
 * analysis, and the replay of the fuzz corpus through the frame path.
 *
 * The replays feed every file of test/fuzz/corpus/frame (seeds and the
 * crash-* reproducers of fixed bugs) through fuzz_frames_feed(), the same
 * decoder fuzz_frame uses, in a forked child inside a private network
 * namespace (UDP and ping sockets are real). Under ASan/UBSan any
 * regression is a crash; the test also checks that the seeds still reach
 * the services (so the corpus does not rot into frames pkt_parse()
 * refuses). test/fuzz/corpus/tcp goes the same way through fuzz_tcp's
 * program interpreter (tcp_prog.c), whose invariants abort the child.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "ferry.h"
#include "test/fuzz/fuzz.h"
#include "unit.h"
#include "util.h"

#define CORPUS_FRAMES	"test/fuzz/corpus/frame"
#define CORPUS_TCP	"test/fuzz/corpus/tcp"
#define CORPUS_MAX	512

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* corpus_list() - sorted file names in dir (caller frees); -1 on error. */
static int corpus_list(const char *dir, char **names, int max)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof(*names), name_cmp);
	return n;
}

/* read_file() - whole file into a malloc()ed buffer; NULL on error. */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET) && (b = malloc((size_t)n + 1)) &&
	    fread(b, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

/* corpus_open() - child side, before a replay: into a private network
 * namespace, and the sorted names of dir (at least 10, caller frees).
 * Returns their count, or minus the child's exit code. */
static int corpus_open(const char *dir, char **names)
{
	int n;

	if (!fuzz_isolate()) {
		printf("  cannot enter a private network namespace: %s "
		       "(unit tests need root)\n", strerror(errno));
		return -2;
	}
	n = corpus_list(dir, names, CORPUS_MAX);
	if (n < 10) {
		printf("  %s: %d files (run from the source tree)\n", dir, n);
		return -1;
	}
	return n;
}

/* replay() - child side: 0 if every file ran and seeds did their job. */
static int replay(void)
{
	char *names[CORPUS_MAX], path[512];
	uint64_t bad_csum = 0, tx = 0;
	int i, n, seeds = 0;
	struct ctx *c;

	if ((n = corpus_open(CORPUS_FRAMES, names)) < 0)
		return -n;
	c = fuzz_frame_ctx();
	for (i = 0; i < n; i++) {
		bool seed = strncmp(names[i], "bad_", 4) &&
			    strncmp(names[i], "crash-", 6);
		uint64_t csum_before = c->stats.drops[DROP_L4_CSUM] +
				       c->stats.drops[DROP_IP4_CSUM];
		size_t len = 0;
		uint8_t *d;

		snprintf(path, sizeof(path), "%s/%s", CORPUS_FRAMES, names[i]);
		if (!(d = read_file(path, &len))) {
			printf("  cannot read %s\n", path);
			return 1;
		}
		fuzz_frames_feed(c, d, len);
		if (seed) {
			seeds++;
			bad_csum += c->stats.drops[DROP_L4_CSUM] +
				    c->stats.drops[DROP_IP4_CSUM] - csum_before;
		}
		fuzz_frame_ctx_reset(c);
		free(d);
		free(names[i]);
	}
	tx = c->stats.tx_frames;
	printf("  replayed %d files (%d seeds), %llu frames to the guest\n",
	       n, seeds, (unsigned long long)tx);
	if (bad_csum) {
		printf("  %llu seed frames with wrong checksums\n",
		       (unsigned long long)bad_csum);
		return 1;
	}
	/* ARP, DHCP, DHCPv6, NDP seeds are all answered. */
	return tx >= 10 ? 0 : 1;
}

/* replay_tcp() - child side: every program of corpus/tcp through the
 * fuzz_tcp interpreter; an invariant it breaks aborts the child. */
static int replay_tcp(void)
{
	char *names[CORPUS_MAX], path[512];
	int i, n;

	if ((n = corpus_open(CORPUS_TCP, names)) < 0)
		return -n;
	fuzz_tcp_init();
	for (i = 0; i < n; i++) {
		size_t len = 0;
		uint8_t *d;

		snprintf(path, sizeof(path), "%s/%s", CORPUS_TCP, names[i]);
		if (!(d = read_file(path, &len))) {
			printf("  cannot read %s\n", path);
			return 1;
		}
		printf("  %s\n", names[i]);
		fflush(stdout);
		fuzz_tcp_run(d, len);
		free(d);
		free(names[i]);
	}
	printf("  replayed %d TCP programs\n", n);
	return 0;
}

/* in_child() - run fn in a forked child (it enters a namespace, and an
 * abort() there must fail the test, not end the run): its exit code,
 * -1 if it did not exit (killed by a signal: an invariant or a
 * sanitizer). */
static int in_child(int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int rc = fn();

		fflush(stdout);
		_exit(rc);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST(fuzz_corpus_frames_replay)
{
	CHECK_EQ(in_child(replay), 0);
}

/* The committed fuzz_tcp programs (seeds and the crash-* inputs of fixed
 * bugs) still keep every invariant of tcp_prog.c. */
TEST(fuzz_corpus_tcp_replay)
{
	CHECK_EQ(in_child(replay_tcp), 0);
}

/* A burst of small frames that arrives in one read and holds more than
 * one receive batch (RX_FRAMES_MAX) must all be handled although the
 * guest then stays silent (found while fuzzing the stream framing; fixed
 * in tap_stream.c by the EPOLLOUT backlog). Input shape: 3000 ARP
 * requests (46 bytes each with the length prefix) in one write, then
 * nothing: the loop below is the event loop's, with a deadline. */
TEST(stream_burst_beyond_one_batch_all_delivered)
{
	static const uint8_t arp[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 2,
		0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 2,
		198, 51, 100, 2, 0, 0, 0, 0, 0, 0, 198, 51, 100, 1,
	};
	enum { N = 3000 };
	static uint8_t msg[N * 46], drain[65536];
	union eref ref = { .type = EREF_LINK };
	struct ctx *c = test_ctx();
	int sv[2], i, sndbuf = sizeof(msg) * 2;
	struct epoll_event ev;

	for (i = 0; i < N; i++) {
		wr32(msg + i * 46, sizeof(arp));
		memcpy(msg + i * 46 + 4, arp, sizeof(arp));
	}
	CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	tap_attach(c, &link_stream_ops, sv[0]);
	CHECK(!ep_add(c, sv[0], EPOLLIN | EPOLLRDHUP, ref));
	CHECK(write(sv[1], msg, sizeof(msg)) == (ssize_t)sizeof(msg));
	/* Each wakeup is bounded; the rest must come back by itself. */
	for (i = 0; i < 100 && c->stats.rx_frames < N; i++) {
		if (epoll_wait(c->epfd, &ev, 1, 200) != 1)
			break;
		tap_handler(c, ev.events);
		tap_flush(c);
		while (recv(sv[1], drain, sizeof(drain), MSG_DONTWAIT) > 0)
			;			/* ARP replies */
	}
	CHECK_EQ(c->stats.rx_frames, N);
	CHECK(c->link.up);
	close(sv[1]);
	close(sv[0]);
	close(c->epfd);
	test_ctx_free(c);
}
