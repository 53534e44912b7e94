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
