/* test_hostile.c - a hostile guest (and host peer) against dispatch,
 * flow creation and the vhost-user rings: regressions of the second
 * audit, each failing before its fix. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "ferry.h"
#include "nat.h"
#include "pkt.h"
#include "tcp_harness.h"
#include "unit.h"
#include "util.h"

#define G6	"2001:db8::2"

/* udp6() - the guest's IPv6 datagram src:9 -> dst:port, one byte. */
static void udp6(struct ctx *c, const char *src, const char *dst,
		 uint16_t port)
{
	uint8_t l4[UDP_HLEN + 1], f[ETH_HLEN_ + IP6_HLEN + sizeof(l4)];

	wr16(l4, 9);
	wr16(l4 + 2, port);
	wr16(l4 + 4, sizeof(l4));
	wr16(l4 + 6, 0);
	l4[UDP_HLEN] = 'a';
	test_input(c, f, test_frame_ip6(f, src, dst, IPPROTO_UDP, l4,
					sizeof(l4)));
}

/* syn6() - the guest's IPv6 SYN src:40000 -> dst:port. */
static void syn6(struct ctx *c, const char *src, const char *dst,
		 uint16_t port)
{
	uint8_t l4[TCP_HLEN] = { 0 }, f[ETH_HLEN_ + IP6_HLEN + TCP_HLEN];

	wr16(l4, 40000);
	wr16(l4 + 2, port);
	wr32(l4 + 4, 1000);
	l4[12] = 5 << 4;
	l4[13] = TCP_F_SYN;
	wr16(l4 + 14, 65535);
	test_input(c, f, test_frame_ip6(f, src, dst, IPPROTO_TCP, l4,
					sizeof(l4)));
}

/* IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) never appear on the wire
 * (RFC 4291 2.5.5.2), and ferry's flows keep IPv4 addresses in exactly
 * that form: an IPv6 frame carrying one became an IPv4 flow, so a guest
 * given IPv6 only (-6) reached IPv4 hosts, and host loopback through
 * ::ffff:<IPv4 gateway>. Such frames are refused, counted. */
TEST(hostile_v4mapped_ipv6_refused)
{
	struct ctx *c = tcp_test_ctx();
	uint16_t port;
	int ls = listener(false, &port);	/* 127.0.0.1 */

	CHECK(ls >= 0);
	c->conf.ip4.enabled = false;		/* -6 */
	syn6(c, G6, "::ffff:198.51.100.1", port);
	CHECK_EQ(c->stats.drops[DROP_IP6_DST], 1);
	syn6(c, "::ffff:198.51.100.2", "2001:db8::1", port);
	CHECK_EQ(c->stats.drops[DROP_IP6_SRC], 1);
	udp_init(c);
	udp6(c, G6, "::ffff:198.51.100.1", port);
	CHECK_EQ(c->stats.drops[DROP_IP6_DST], 2);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->flows.count[FLOW_UDP], 0);
	CHECK(in6_is_unspec(&c->guest_seen6) ||
	      !IN6_IS_ADDR_V4MAPPED(&c->guest_seen6));
	close(ls);
	udp_close_all(c);
	tcp_test_free(c);
}

/* A SOLICIT whose IA_NA lists 50 addresses that are not ours: the reply
 * gives each back with zero lifetimes (RFC 8415 18.3.4) besides ours, so
 * it outgrows the request, and went to the guest in one frame over its
 * MTU. A reply the MTU cannot carry is refused, counted. */
TEST(hostile_dhcpv6_reply_within_mtu)
{
	static const uint8_t duid[10] = { 0, 3, 0, 1, 2, 0, 0, 0, 0, 2 };
	static uint8_t l4[1500], f[1600];
	struct ctx *c = test_ctx();
	uint8_t *m = l4 + UDP_HLEN, *ia;
	size_t n = 4, i, len;
	const uint8_t *out;

	CHECK_EQ(c->conf.mtu, 1500);
	m[0] = 1;				/* SOLICIT */
	m[1] = m[2] = m[3] = 7;
	wr16(m + n, 1);				/* client identifier */
	wr16(m + n + 2, sizeof(duid));
	memcpy(m + n + 4, duid, sizeof(duid));
	n += 4 + sizeof(duid);
	ia = m + n;
	wr16(ia, 3);				/* IA_NA, IAID 1, T1 T2 0 */
	wr16(ia + 2, 12 + 50 * 28);
	memset(ia + 4, 0, 12);
	ia[7] = 1;
	for (i = 0; i < 50; i++) {
		uint8_t *a = ia + 16 + i * 28;

		wr16(a, 5);			/* IA Address 2001:db8:1::i */
		wr16(a + 2, 24);
		memset(a + 4, 0, 24);
		wr16(a + 4, 0x2001);
		wr16(a + 6, 0x0db8);
		wr16(a + 8, 1);
		a[19] = (uint8_t)(i + 1);
	}
	n += 16 + 50 * 28;
	wr16(l4, 546);
	wr16(l4 + 2, 547);
	wr16(l4 + 4, (uint16_t)(UDP_HLEN + n));
	wr16(l4 + 6, 0);
	len = test_frame_ip6(f, "fe80::2", "ff02::1:2", IPPROTO_UDP, l4,
			     UDP_HLEN + n);
	CHECK(len <= ETH_HLEN_ + 1500);		/* the request fits */
	test_input(c, f, len);
	for (i = 0; i < test_tx_n(c); i++) {
		CHECK((out = test_tx(c, i, &len)) != NULL);
		CHECK(len <= ETH_HLEN_ + 1500);
	}
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_DHCP6_MALFORMED], 1);
	test_ctx_free(c);
}

/* udp_cap_child() - in a child: the UDP flow cap under an fd limit of
 * lim, exit status 0 if it stays within half of it (TCP has the other
 * half, tcp_fd_budget()). */
static int udp_cap_child(rlim_t lim)
{
	struct rlimit rl = { lim, lim };
	struct ctx *c;
	bool ok;

	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 2;
	c = test_ctx();
	udp_init(c);
	ok = c->udp.max_flows >= 1 && c->udp.max_flows <= lim / 2;
	if (!ok)
		printf("  fd limit %llu: %u UDP flows\n",
		       (unsigned long long)lim, c->udp.max_flows);
	fflush(stdout);
	return ok ? 0 : 1;
}

/* Under a low fd limit (the integration tests run ferry under ulimit -n
 * 64) UDP's flow cap fell back to 64 flows, each with its socket: a
 * guest spraying destinations could take every fd, TCP's half too. */
TEST(hostile_udp_cap_within_low_fd_limit)
{
	static const rlim_t lims[] = { 64, 100, 300 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lims); i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(udp_cap_child(lims[i]));
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}
