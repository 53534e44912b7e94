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

/* udp_any() - the guest's datagram src:9 -> dst:port, one byte, over
 * IPv6 or IPv4. */
static void udp_any(struct ctx *c, bool v6, const char *src,
		    const char *dst, uint16_t port)
{
	uint8_t l4[UDP_HLEN + 1], f[ETH_HLEN_ + IP6_HLEN + sizeof(l4)];

	wr16(l4, 9);
	wr16(l4 + 2, port);
	wr16(l4 + 4, sizeof(l4));
	wr16(l4 + 6, 0);
	l4[UDP_HLEN] = 'a';
	test_input(c, f, v6 ? test_frame_ip6(f, src, dst, IPPROTO_UDP, l4,
					     sizeof(l4))
			    : test_frame_ip4(f, src, dst, IPPROTO_UDP, l4,
					     sizeof(l4)));
}

#define udp6(c, s, d, p)	udp_any(c, true, s, d, p)
#define udp4(c, s, d, p)	udp_any(c, false, s, d, p)

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

/* A frame dropped for its source address teaches nothing: the addresses
 * ferry takes for the guest's own (inbound connections without a
 * configured address go there; nat_outbound() keeps traffic to them off
 * the host) are learned only from sources the checks accept, so one
 * forged loopback, broadcast or multicast source cannot redirect the
 * guest's forwarded connections. Valid sources still teach. */
TEST(hostile_dropped_source_not_learned)
{
	struct ctx *c = tcp_test_ctx();
	struct in6_addr g6;

	udp_init(c);
	c->conf.ip4.addr.s_addr = 0;		/* learned, not configured */
	c->guest_seen4.s_addr = 0;
	memset(&c->guest_seen6, 0, sizeof(c->guest_seen6));
	memset(&c->guest_ll6, 0, sizeof(c->guest_ll6));
	udp4(c, "127.0.0.1", "198.51.100.1", 53);
	udp4(c, "255.255.255.255", "198.51.100.1", 53);
	udp4(c, "224.0.0.1", "198.51.100.1", 53);
	CHECK_EQ(c->stats.drops[DROP_IP4_SRC], 3);
	CHECK(in4_is_unspec(&c->guest_seen4));
	udp6(c, "::1", "2001:db8::1", 53);
	udp6(c, "ff02::1", "2001:db8::1", 53);
	CHECK_EQ(c->stats.drops[DROP_IP6_SRC], 2);
	CHECK(in6_is_unspec(&c->guest_seen6));
	CHECK(in6_is_unspec(&c->guest_ll6));
	/* Valid sources teach, dropped or not later (a multicast
	 * destination here, dropped with --no-multicast). */
	c->conf.no_multicast = true;
	udp4(c, "198.51.100.7", "224.0.0.251", 5353);
	CHECK_EQ(ntohl(c->guest_seen4.s_addr), 0xc6336407u);
	udp6(c, "fe80::7", "ff02::fb", 5353);
	udp6(c, G6, "ff02::fb", 5353);
	inet_pton(AF_INET6, G6, &g6);
	CHECK(in6_eq(&c->guest_seen6, &g6));
	inet_pton(AF_INET6, "fe80::7", &g6);
	CHECK(in6_eq(&c->guest_ll6, &g6));
	CHECK_EQ(c->stats.drops[DROP_MCAST_BCAST], 3);
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
