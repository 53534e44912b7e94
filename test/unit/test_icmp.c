/* test_icmp.c - ICMP/ICMPv6 echo forwarding: refused and malformed input
 * (in any namespace), and real echo round trips through ping sockets in a
 * private network namespace (forked child: unshare(CLONE_NEWNET), lo up,
 * net.ipv4.ping_group_range "0 0"), so the host's sysctl never matters. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <grp.h>

#include "checksum.h"
#include "ferry.h"
#include "nat.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

#define G4	"198.51.100.2"
#define GW4	"198.51.100.1"
#define G6	"2001:db8::2"
#define GW6	"fe80::1"

/* echo() - an ICMP echo message (type t) with id/seq and plen payload
 * bytes of a pattern; returns its length. */
static size_t echo(uint8_t *b, uint8_t t, uint16_t id, uint16_t seq,
		   size_t plen)
{
	size_t i;

	b[0] = t;
	b[1] = 0;
	wr16(b + 2, 0);
	wr16(b + 4, id);
	wr16(b + 6, seq);
	for (i = 0; i < plen; i++)
		b[8 + i] = (uint8_t)(i * 7 + 1);
	return 8 + plen;
}

static void send4(struct ctx *c, const char *dst, uint8_t t, uint16_t id,
		  uint16_t seq, size_t plen)
{
	uint8_t l4[2048], f[2200];
	size_t n = echo(l4, t, id, seq, plen);

	test_input(c, f, test_frame_ip4(f, G4, dst, IPPROTO_ICMP, l4, n));
}

static void send6(struct ctx *c, const char *src, const char *dst,
		  uint8_t t, uint16_t id, uint16_t seq, size_t plen)
{
	uint8_t l4[2048], f[2200];
	size_t n = echo(l4, t, id, seq, plen);

	test_input(c, f, test_frame_ip6(f, src, dst, IPPROTO_ICMPV6, l4, n));
}

TEST(icmp_no_icmp_option_drops_echo)
{
	struct ctx *c = test_ctx();

	c->conf.no_icmp = true;
	icmp_init(c);
	CHECK(!c->icmp.ping4_ok && !c->icmp.ping6_ok);
	send4(c, GW4, 8, 1, 1, 16);
	send6(c, G6, GW6, 128, 1, 1, 16);
	CHECK_EQ(c->stats.drops[DROP_ICMP_DISABLED], 2);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	test_ctx_free(c);
}

TEST(icmp_unavailable_drops_echo_no_fake_reply)
{
	struct ctx *c = test_ctx();

	/* As after a failed probe: never answer in the host's place. */
	c->icmp.ping4_ok = c->icmp.ping6_ok = false;
	send4(c, GW4, 8, 7, 1, 56);
	send4(c, "203.0.113.9", 8, 7, 2, 56);
	send6(c, G6, "2001:db8::1", 128, 7, 1, 56);
	CHECK_EQ(c->stats.drops[DROP_ICMP_DISABLED], 3);
	CHECK_EQ(test_tx_n(c), 0);
	test_ctx_free(c);
}

TEST(icmp_other_types_refused)
{
	struct ctx *c = test_ctx();
	uint8_t l4[64], f[200];

	c->icmp.ping4_ok = c->icmp.ping6_ok = true;
	send4(c, GW4, 0, 1, 1, 8);		/* echo reply */
	send4(c, GW4, 13, 1, 1, 12);		/* timestamp */
	send6(c, G6, GW6, 129, 1, 1, 8);	/* echo reply */
	send6(c, G6, GW6, 1, 0, 0, 40);		/* destination unreachable */
	/* Echo request with a non-zero code. */
	echo(l4, 8, 1, 1, 8);
	l4[1] = 1;
	test_input(c, f, test_frame_ip4(f, G4, GW4, IPPROTO_ICMP, l4, 16));
	CHECK_EQ(c->stats.drops[DROP_ICMP_TYPE], 5);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	test_ctx_free(c);
}

TEST(icmp_malformed_never_crashes)
{
	struct ctx *c = test_ctx();
	uint8_t l4[64], f[200];
	size_t n;

	c->icmp.ping4_ok = c->icmp.ping6_ok = true;
	/* Echo header cut at 4, 5 and 7 bytes: no id/seq to use. */
	for (n = 4; n < 8; n++) {
		echo(l4, 8, 1, 1, 0);
		test_input(c, f, test_frame_ip4(f, G4, GW4, IPPROTO_ICMP, l4, n));
		echo(l4, 128, 1, 1, 0);
		test_input(c, f, test_frame_ip6(f, G6, GW6, IPPROTO_ICMPV6,
						l4, n));
	}
	CHECK_EQ(c->stats.drops[DROP_L4_SHORT], 8);
	/* Shorter than the parser's minimum. */
	echo(l4, 8, 1, 1, 0);
	test_input(c, f, test_frame_ip4(f, G4, GW4, IPPROTO_ICMP, l4, 2));
	CHECK_EQ(c->stats.drops[DROP_L4_SHORT], 9);
	/* Bad checksum. */
	n = test_frame_ip4(f, G4, GW4, IPPROTO_ICMP, l4, echo(l4, 8, 1, 1, 9));
	f[n - 1] ^= 0x55;
	test_input(c, f, n);
	CHECK_EQ(c->stats.drops[DROP_L4_CSUM], 1);
	/* Destinations the guest may not reach through ferry. */
	send4(c, "127.0.0.1", 8, 1, 1, 8);
	send4(c, G4, 8, 1, 1, 8);		/* itself */
	send6(c, G6, "::1", 128, 1, 1, 8);
	CHECK_EQ(c->stats.drops[DROP_IP4_DST], 2);
	CHECK_EQ(c->stats.drops[DROP_IP6_DST], 1);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	test_ctx_free(c);
}

TEST(icmp_socket_failure_is_clean)
{
	struct ctx *c = test_ctx();
	uint64_t before;

	/* The harness has no epoll (epfd -1): whether or not this namespace
	 * allows ping sockets, opening the flow fails and leaves nothing. */
	c->icmp.ping4_ok = c->icmp.ping6_ok = true;
	nat_init(c);
	before = c->stats.drops[DROP_SOCKET_ERROR];
	send4(c, GW4, 8, 0x4242, 1, 13);		/* odd payload */
	send6(c, G6, GW6, 128, 0x4242, 1, 13);
	CHECK_EQ(c->stats.drops[DROP_SOCKET_ERROR] - before, 2);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	CHECK_EQ(c->flows.used, 0);
	CHECK_EQ(test_tx_n(c), 0);
	icmp_sock_handler(c, 0, EPOLLIN);	/* stale index: ignored */
	icmp_sock_handler(c, FLOW_MAX + 5, EPOLLIN);
	test_ctx_free(c);
}

/* --- Real round trips, in a private network namespace -------------- */

/* netns_setup() - new netns with lo up; ping sockets allowed for gid 0
 * unless !allow_ping (the kernel's default range then excludes all). */
static bool netns_setup(bool allow_ping)
{
	struct ifreq ifr = { 0 };
	int s, fd;

	if (unshare(CLONE_NEWNET))
		return false;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return false;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return false;
	close(s);
	if (!allow_ping)
		return true;
	fd = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0 0", 3) != 3)
		return false;
	close(fd);
	return true;
}

/* in_netns_ping() - run body in a forked child inside a private netns
 * (ping sockets allowed or not); body sets *ok when it reaches its end.
 * True if the child did. */
static bool in_netns_ping(void (*body)(bool *ok), bool allow_ping)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		bool ok = false;

		if (!netns_setup(allow_ping)) {
			printf("  cannot set up a network namespace: %s "
			       "(unit tests need root)\n", strerror(errno));
			_exit(2);
		}
		body(&ok);
		fflush(stdout);
		_exit(ok ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static bool in_netns(void (*body)(bool *ok))
{
	return in_netns_ping(body, true);
}

/* ctx_live() - a test context with epoll, gateway mapping and ICMP. */
static struct ctx *ctx_live(void)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	nat_init(c);
	icmp_init(c);
	return c;
}

static void ctx_live_free(struct ctx *c)
{
	/* Expire everything so sockets are closed. */
	c->now.tv_sec += ICMP_TIMEOUT_MS / 1000 + 1;
	icmp_timer(c);
	close(c->epfd);
	test_ctx_free(c);
}

/* pump() - dispatch ping socket events until want frames reached the
 * guest or ms passed. Returns the number of frames sent to the guest. */
static size_t pump(struct ctx *c, size_t want, int64_t ms)
{
	struct timespec t0, t;
	struct epoll_event ev[16];

	now_mono(&t0);
	while (test_tx_n(c) < want) {
		int i, n = epoll_wait(c->epfd, ev, 16, 20);

		for (i = 0; i < n; i++) {
			union eref ref = { .u64 = ev[i].data.u64 };

			if (ref.type == EREF_PING)
				icmp_sock_handler(c, ref.idx, ev[i].events);
		}
		now_mono(&t);
		if (ts_ms_diff(&t, &t0) > ms)
			break;
	}
	return test_tx_n(c);
}

/* check_reply() - frame i is an echo reply from src to dst with id, seq
 * and plen bytes of the echo() pattern, and every checksum right. */
static bool check_reply(struct ctx *c, size_t i, bool v6, const char *src,
			const char *dst, uint16_t id, uint16_t seq, size_t plen)
{
	uint8_t want[2048];
	const uint8_t *f;
	struct in6_addr s6, d6;
	struct in_addr s4, d4;
	struct pkt p;
	size_t len;

	f = test_tx(c, i, &len);
	if (!f || pkt_parse(f, len, true, &p) != DROP_NONE || p.is_v6 != v6)
		return false;
	echo(want, v6 ? 129 : 0, id, seq, plen);
	if (p.icmp.type != (v6 ? 129 : 0) || p.icmp.code || p.icmp.id != id ||
	    p.icmp.seq != seq || p.payload_len != plen ||
	    memcmp(p.payload, want + 8, plen))
		return false;
	if (v6) {
		inet_pton(AF_INET6, src, &s6);
		inet_pton(AF_INET6, dst, &d6);
		return in6_eq(&p.src6, &s6) && in6_eq(&p.dst6, &d6);
	}
	inet_pton(AF_INET, src, &s4);
	inet_pton(AF_INET, dst, &d4);
	return in4_eq(&p.src4, &s4) && in4_eq(&p.dst4, &d4);
}

static void echo_roundtrip_body(bool *ok)
{
	struct ctx *c = ctx_live();

	CHECK(c->epfd >= 0 && c->icmp.ping4_ok && c->icmp.ping6_ok);
	/* IPv4 to the gateway (host loopback), odd payload, then a second
	 * request on the same flow. */
	send4(c, GW4, 8, 0x1234, 1, 57);
	CHECK_EQ(c->flows.count[FLOW_PING], 1);
	CHECK_EQ(pump(c, 1, 2000), 1);
	CHECK(check_reply(c, 0, false, GW4, G4, 0x1234, 1, 57));
	send4(c, GW4, 8, 0x1234, 2, 0);
	CHECK_EQ(c->flows.count[FLOW_PING], 1);
	CHECK_EQ(pump(c, 2, 2000), 2);
	CHECK(check_reply(c, 1, false, GW4, G4, 0x1234, 2, 0));
	/* IPv6 to the (link-local) router address, guest's global and
	 * link-local sources: separate flows. */
	send6(c, G6, GW6, 128, 0x1234, 9, 1000);
	send6(c, "fe80::2", GW6, 128, 0x1234, 10, 3);
	CHECK_EQ(c->flows.count[FLOW_PING], 3);
	CHECK_EQ(pump(c, 4, 2000), 4);
	CHECK(check_reply(c, 2, true, GW6, G6, 0x1234, 9, 1000) ||
	      check_reply(c, 3, true, GW6, G6, 0x1234, 9, 1000));
	CHECK(check_reply(c, 2, true, GW6, "fe80::2", 0x1234, 10, 3) ||
	      check_reply(c, 3, true, GW6, "fe80::2", 0x1234, 10, 3));
	CHECK_EQ(c->icmp.requests, 4);
	CHECK_EQ(c->icmp.replies, 4);
	CHECK_EQ(c->stats.drops[DROP_SOCKET_ERROR], 0);

	/* Idle flows expire; active ones stay. */
	c->now.tv_sec += ICMP_TIMEOUT_MS / 1000 - 1;
	icmp_timer(c);
	CHECK_EQ(c->flows.count[FLOW_PING], 3);
	CHECK(c->timer_armed);
	c->now.tv_sec += 2;
	icmp_timer(c);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	CHECK_EQ(c->icmp.expired, 3);
	ctx_live_free(c);
	*ok = true;
}

TEST(icmp_echo_roundtrip_netns)
{
	CHECK(in_netns(echo_roundtrip_body));
}

static void unanswered_body(bool *ok)
{
	struct ctx *c = ctx_live();

	/* No route in the fresh namespace: the flow cannot be connected
	 * (counted), and the guest gets nothing, certainly no fake reply.
	 * (Unanswered routed destinations: test/integration/test_icmp.py) */
	send4(c, "203.0.113.9", 8, 5, 1, 8);
	CHECK_EQ(c->stats.drops[DROP_SOCKET_ERROR], 1);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	CHECK_EQ(pump(c, 1, 300), 0);
	CHECK_EQ(c->icmp.replies, 0);
	ctx_live_free(c);
	*ok = true;
}

TEST(icmp_unanswered_gets_no_reply_netns)
{
	CHECK(in_netns(unanswered_body));
}

/* pump_big() - dispatch ping socket events until the guest got two
 * frames or a reply was dropped as too big, or ms passed. */
static void pump_big(struct ctx *c, int64_t ms)
{
	struct timespec t0, t;

	now_mono(&t0);
	while (test_tx_n(c) < 2 && !c->stats.drops[DROP_ICMP_TOO_BIG]) {
		pump(c, 2, 20);
		now_mono(&t);
		if (ts_ms_diff(&t, &t0) > ms)
			break;
	}
}

/* request_id() - the id of the first echo request a raw ICMP socket
 * sees within 2 s (the kernel's, on the ping socket), 0 if none. */
static uint16_t request_id(int raw)
{
	struct pollfd pfd = { .fd = raw, .events = POLLIN };
	uint8_t b[2048];
	ssize_t n;

	while (poll(&pfd, 1, 2000) == 1) {
		size_t ihl;

		n = recv(raw, b, sizeof(b), MSG_DONTWAIT);
		if (n < IP4_HLEN)
			return 0;
		ihl = (size_t)(b[0] & 0xf) * 4;
		if ((size_t)n >= ihl + ICMP_HLEN && b[ihl] == 8)
			return rd16(b + ihl + 4);
	}
	return 0;
}

/* A host peer may answer an echo request with more than it was sent:
 * an echo reply the guest's MTU cannot carry was sent to it as an
 * oversized frame. It is dropped and counted (ICMP_TOO_BIG), as UDP
 * drops such datagrams; replies that fit still go through. */
static void big_reply_body(bool *ok)
{
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	struct ctx *c = ctx_live();
	static uint8_t b[4096];
	const uint8_t *f;
	uint16_t id;
	size_t i, n, len;

	CHECK(raw >= 0 && c->icmp.ping4_ok && c->conf.mtu == 1500);
	send4(c, GW4, 8, 0x77, 1, 16);
	CHECK((id = request_id(raw)) != 0);
	n = echo(b, 0, id, 2, 3000 - ICMP_HLEN);	/* 3000 bytes > MTU */
	wr16(b + 2, csum(b, n));
	CHECK(sendto(raw, b, n, 0, (struct sockaddr *)&lo, sizeof(lo)) ==
	      (ssize_t)n);
	pump_big(c, 2000);
	for (i = 0; i < test_tx_n(c); i++) {
		f = test_tx(c, i, &len);
		CHECK(f && len <= ETH_HLEN_ + 1500);
	}
	CHECK_EQ(c->stats.drops[DROP_ICMP_TOO_BIG], 1);
	CHECK_EQ(pump(c, 1, 2000), 1);		/* the kernel's own reply */
	CHECK(check_reply(c, 0, false, GW4, G4, 0x77, 1, 16));
	close(raw);
	ctx_live_free(c);
	*ok = true;
}

TEST(icmp_reply_beyond_mtu_dropped_netns)
{
	CHECK(in_netns(big_reply_body));
}

/* has_flow4() - is there an echo flow from the guest to GW4 with id? */
static bool has_flow4(struct ctx *c, uint16_t id)
{
	struct in_addr g, d;
	union inany a, b;
	struct flow_key k;

	inet_pton(AF_INET, G4, &g);
	inet_pton(AF_INET, GW4, &d);
	inany_from4(&a, g);
	inany_from4(&b, d);
	flow_key_make(&k, IPPROTO_ICMP, &a, id, &b, 0);
	return flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k) != NULL;
}

static void eviction_body(bool *ok)
{
	struct rlimit rl;
	struct ctx *c;
	unsigned int i, n;

	/* Each flow holds a socket: make room for them. */
	CHECK(!getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < ICMP_FLOWS_MAX + 64) {
		rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)ICMP_FLOWS_MAX + 64);
		CHECK(!setrlimit(RLIMIT_NOFILE, &rl));
	}
	c = ctx_live();
	n = c->icmp.max_flows;		/* within the fd limit */
	CHECK(n >= 3 && n <= ICMP_FLOWS_MAX);
	for (i = 0; i < n; i++) {
		send4(c, GW4, 8, (uint16_t)i, 1, 0);
		test_advance(c, 1);	/* 1 ms apart */
	}
	CHECK_EQ(c->flows.count[FLOW_PING], n);
	CHECK_EQ(c->icmp.evicted, 0);
	/* Refresh flow 0: flow 1 is now the one idle longest. */
	c->now.tv_sec++;
	send4(c, GW4, 8, 0, 2, 0);
	send4(c, GW4, 8, 60000, 1, 0);
	CHECK_EQ(c->flows.count[FLOW_PING], n);
	CHECK_EQ(c->icmp.evicted, 1);
	CHECK(has_flow4(c, 0) && !has_flow4(c, 1) && has_flow4(c, 2));
	CHECK(has_flow4(c, 60000));
	CHECK_EQ(c->stats.drops[DROP_SOCKET_ERROR], 0);
	/* The evicted flow's id gets a new flow (evicting the next). */
	send4(c, GW4, 8, 1, 2, 0);
	CHECK_EQ(c->icmp.evicted, 2);
	CHECK(has_flow4(c, 1) && !has_flow4(c, 2));
	CHECK_EQ(c->flows.count[FLOW_PING], n);
	ctx_live_free(c);
	*ok = true;
}

TEST(icmp_flow_limit_evicts_oldest_netns)
{
	CHECK(in_netns(eviction_body));
}

/* Under a low fd limit a guest pinging many ids took a socket per id up
 * to ICMP_FLOWS_MAX (1024), beyond the half of the limit UDP and ICMP
 * share (TCP has the other): at ulimit -n 64, 40 ids held 40 sockets
 * besides UDP's 32 flows. Echo flows now stay within their share, and so
 * do the sockets kept for them before giving up root (the pool). */
static void low_fd_limit_body(bool *ok)
{
	static const rlim_t lim = 64;
	struct rlimit rl = { lim, lim };
	struct ctx *c;
	unsigned int i;

	CHECK(!setrlimit(RLIMIT_NOFILE, &rl));
	c = ctx_live();
	udp_init(c);
	CHECK(c->icmp.ping4_ok && c->udp.max_flows >= 1);
	icmp_keep_for(c, 65534);	/* "0 0" here: 65534 is out */
	CHECK(c->icmp.pool[0].on && c->icmp.pool[1].on);
	CHECK(c->icmp.pool[0].free + c->icmp.pool[1].free <=
	      c->icmp.max_flows);
	for (i = 0; i < 40; i++)
		send4(c, GW4, 8, (uint16_t)(100 + i), 1, 0);
	CHECK(c->flows.count[FLOW_PING] >= 1);
	CHECK(c->flows.count[FLOW_PING] + c->udp.max_flows <= lim / 2);
	CHECK(c->icmp.evicted >= 40 - c->flows.count[FLOW_PING]);
	CHECK(has_flow4(c, 139));		/* the newest has its flow */
	CHECK_EQ(c->stats.drops[DROP_SOCKET_ERROR], 0);
	udp_close_all(c);
	ctx_live_free(c);
	*ok = true;
}

TEST(icmp_flows_within_low_fd_limit_netns)
{
	CHECK(in_netns(low_fd_limit_body));
}

static void probe_fails_body(bool *ok)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	nat_init(c);
	icmp_init(c);			/* warns once, on stderr */
	CHECK(!c->icmp.ping4_ok && !c->icmp.ping6_ok && !c->icmp.rxbuf);
	send4(c, GW4, 8, 3, 1, 8);
	send6(c, G6, GW6, 128, 3, 1, 8);
	CHECK_EQ(c->stats.drops[DROP_ICMP_DISABLED], 2);
	CHECK_EQ(c->flows.count[FLOW_PING], 0);
	CHECK_EQ(pump(c, 1, 300), 0);		/* and no fake reply */
	close(c->epfd);
	test_ctx_free(c);
	*ok = true;
}

TEST(icmp_probe_fails_without_ping_group_netns)
{
	CHECK(in_netns_ping(probe_fails_body, false));
}

/* replies_consistent() - every echo reply frame to the guest carries the
 * sequence number its flow used (kept_pool_body(): seq = id - 999, and 1
 * for id 0x77), so no reply for an evicted flow reached the flow that
 * got its socket. Sets *found when the reply (id, seq) is there. */
static bool replies_consistent(struct ctx *c, uint16_t id, uint16_t seq,
			       bool *found)
{
	const uint8_t *f;
	struct pkt p;
	size_t i, len;

	*found = false;
	for (i = 0; i < test_tx_n(c); i++) {
		f = test_tx(c, i, &len);
		if (!f || pkt_parse(f, len, true, &p) != DROP_NONE ||
		    p.is_v6 || p.icmp.type != 0)
			continue;
		if (p.icmp.seq != (p.icmp.id == 0x77 ? 1 : p.icmp.id - 999))
			return false;
		*found |= p.icmp.id == id && p.icmp.seq == seq;
	}
	return true;
}

static void kept_pool_body(bool *ok)
{
	struct ctx *c = ctx_live();
	struct timespec t0, t;
	bool found = false;
	unsigned int i;
	int s;

	CHECK(c->icmp.ping4_ok && c->icmp.ping6_ok);
	/* "0 0" in this namespace: gid 65534 is out, as nobody's would be
	 * in the test sandbox when ferry started as root gives up root. */
	icmp_keep_for(c, 65534);
	CHECK(c->icmp.pool[0].on && c->icmp.pool[1].on);
	CHECK_EQ(c->icmp.pool[0].free, ICMP_POOL_MAX);
	CHECK_EQ(c->icmp.pool[1].free, ICMP_POOL_MAX);
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534)) {
		printf("  cannot change to gid 65534: %s\n", strerror(errno));
		return;
	}
	s = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	CHECK(s < 0 && errno == EACCES);	/* the kernel refuses us now */
	/* Echo through the kept sockets, both families. */
	send4(c, GW4, 8, 0x77, 1, 20);
	CHECK_EQ(pump(c, 1, 2000), 1);
	CHECK(check_reply(c, 0, false, GW4, G4, 0x77, 1, 20));
	send6(c, G6, GW6, 128, 0x77, 1, 20);
	CHECK_EQ(pump(c, 2, 2000), 2);
	CHECK(check_reply(c, 1, true, GW6, G6, 0x77, 1, 20));
	CHECK_EQ(c->icmp.pool[0].free, ICMP_POOL_MAX - 1);
	/* More IPv4 flows than kept sockets: each beyond evicts the IPv4
	 * flow idle longest and reuses its socket; the IPv6 flow stays. */
	for (i = 0; i < ICMP_POOL_MAX + 3; i++) {
		send4(c, GW4, 8, (uint16_t)(1000 + i), (uint16_t)(i + 1), 0);
		test_advance(c, 1);
	}
	CHECK_EQ(c->icmp.evicted, 4);
	CHECK_EQ(c->flows.count[FLOW_PING], ICMP_POOL_MAX + 1);
	CHECK_EQ(c->icmp.pool[0].free, 0);
	CHECK_EQ(c->icmp.pool[1].free, ICMP_POOL_MAX - 1);
	CHECK(!has_flow4(c, 0x77) && !has_flow4(c, 1002) && has_flow4(c, 1003));
	CHECK_EQ(c->stats.drops[DROP_SOCKET_ERROR], 0);
	/* The newest flow, on a reused socket, gets its own reply. */
	now_mono(&t0);
	do {
		pump(c, test_tx_n(c) + 1, 100);
		CHECK(replies_consistent(c, (uint16_t)(1000 + ICMP_POOL_MAX + 2),
					 ICMP_POOL_MAX + 3, &found));
		now_mono(&t);
	} while (!found && ts_ms_diff(&t, &t0) < 3000);
	CHECK(found);
	/* Expired flows give their sockets back. */
	c->now.tv_sec += ICMP_TIMEOUT_MS / 1000 + 1;
	icmp_timer(c);
	CHECK_EQ(c->icmp.pool[0].free, ICMP_POOL_MAX);
	CHECK_EQ(c->icmp.pool[1].free, ICMP_POOL_MAX);
	ctx_live_free(c);
	*ok = true;
}

TEST(icmp_kept_sockets_outlive_the_group_netns)
{
	CHECK(in_netns(kept_pool_body));
}
