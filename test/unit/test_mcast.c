/* test_mcast.c - the guest's multicast and broadcast datagrams (mcast.c,
 * udp.c): which destinations become flows, and the host socket each one
 * gets (unconnected, the guest's TTL, no loopback, SO_BROADCAST).
 *
 * The unit tests' network namespace has only lo up and no multicast
 * route, so the sends themselves fail there; the integration tests
 * (test_mcast.py) carry datagrams over a LAN.
 */
#include <errno.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "checksum.h"
#include "ferry.h"
#include "mcast.h"
#include "pkt.h"
#include "udp_int.h"
#include "unit.h"
#include "wire.h"

/* mc_ctx() - a harness context with UDP up and a host address on a /24. */
static struct ctx *mc_ctx(void)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->conf.ip4.host_addr = c->conf.ip4.addr;
	udp_init(c);
	return c;
}

static void mc_ctx_free(struct ctx *c)
{
	udp_close_all(c);
	close(c->epfd);
	test_ctx_free(c);
}

/* kind_of() - mcast_out_dst() for the textual address a; *out what the
 * destination became. */
static enum mcast_kind kind_of(const struct ctx *c, const char *a,
			       char *out, size_t len)
{
	union inany d;
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, a, &a4) == 1)
		inany_from4(&d, a4);
	else if (inet_pton(AF_INET6, a, &a6) == 1)
		inany_from6(&d, &a6);
	else
		return MCAST_REFUSED;
	enum mcast_kind k = mcast_out_dst(c, &d);

	if (inany_is4(&d))
		inet_ntop(AF_INET, &d.v4m.a4, out, (socklen_t)len);
	else
		inet_ntop(AF_INET6, &d.a6, out, (socklen_t)len);
	return k;
}

TEST(mcast_destinations_classified)
{
	struct ctx *c = mc_ctx();
	char b[INET6_ADDRSTRLEN];

	CHECK_EQ(kind_of(c, "198.51.100.1", b, sizeof(b)), MCAST_NONE);
	CHECK_EQ(kind_of(c, "239.255.255.250", b, sizeof(b)), MCAST_GROUP);
	CHECK_EQ(kind_of(c, "224.0.0.251", b, sizeof(b)), MCAST_GROUP);
	CHECK_EQ(kind_of(c, "ff02::fb", b, sizeof(b)), MCAST_GROUP);
	CHECK_EQ(kind_of(c, "ff05::c", b, sizeof(b)), MCAST_GROUP);
	CHECK_EQ(kind_of(c, "ff01::1", b, sizeof(b)), MCAST_REFUSED);
	CHECK_EQ(kind_of(c, "ff00::1", b, sizeof(b)), MCAST_REFUSED);
	CHECK_EQ(kind_of(c, "2001:db8::1", b, sizeof(b)), MCAST_NONE);
	/* Both broadcasts: the template interface's directed broadcast. */
	CHECK_EQ(kind_of(c, "255.255.255.255", b, sizeof(b)), MCAST_BCAST);
	CHECK(!strcmp(b, "198.51.100.255"));
	CHECK_EQ(kind_of(c, "198.51.100.255", b, sizeof(b)), MCAST_BCAST);
	CHECK(!strcmp(b, "198.51.100.255"));
	/* No subnet to broadcast on. */
	c->conf.ip4.prefix_len = 32;
	CHECK_EQ(kind_of(c, "255.255.255.255", b, sizeof(b)), MCAST_REFUSED);
	c->conf.ip4.prefix_len = 24;
	c->conf.no_multicast = true;
	CHECK_EQ(kind_of(c, "239.255.255.250", b, sizeof(b)), MCAST_REFUSED);
	CHECK_EQ(kind_of(c, "255.255.255.255", b, sizeof(b)), MCAST_REFUSED);
	CHECK_EQ(kind_of(c, "ff02::fb", b, sizeof(b)), MCAST_REFUSED);
	CHECK_EQ(kind_of(c, "198.51.100.1", b, sizeof(b)), MCAST_NONE);
	mc_ctx_free(c);
}

/* guest_udp_ttl() - a guest datagram src:sp -> dst:dp with TTL or hop
 * limit ttl, through tap_input(). */
static void guest_udp_ttl(struct ctx *c, const char *src, uint16_t sp,
			  const char *dst, uint16_t dp, uint8_t ttl)
{
	static uint8_t l4[64], frame[256];
	bool v6 = strchr(dst, ':');
	size_t n;

	wr16(l4, sp);
	wr16(l4 + 2, dp);
	wr16(l4 + 4, UDP_HLEN + 4);
	wr16(l4 + 6, 0);
	memcpy(l4 + UDP_HLEN, "ping", 4);
	n = v6 ? test_frame_ip6(frame, src, dst, IPPROTO_UDP, l4, UDP_HLEN + 4)
	       : test_frame_ip4(frame, src, dst, IPPROTO_UDP, l4, UDP_HLEN + 4);
	if (v6) {
		frame[ETH_HLEN_ + IP6_OFF_HLIM] = ttl;
	} else {	/* TTL and the header checksum again */
		uint8_t *l3 = frame + ETH_HLEN_;

		l3[IP4_OFF_TTL] = ttl;
		wr16(l3 + IP4_OFF_CSUM, 0);
		wr16(l3 + IP4_OFF_CSUM, csum(l3, IP4_HLEN));
	}
	test_input(c, frame, n);
}

/* the_flow() - the one UDP flow's private state. */
static struct udp_flow *the_flow(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_UDP);

	return fl ? UDP_FLOW(fl) : NULL;
}

/* sockopt() - an integer option of fd, -1 if unreadable. */
static int sockopt(int fd, int lvl, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, lvl, opt, &v, &l))
		return -1;
	return v;
}

/* unconnected() - fd has no peer. */
static bool unconnected(int fd)
{
	sockaddr_inany sa;
	socklen_t l = sizeof(sa);

	return getpeername(fd, (struct sockaddr *)&sa, &l) && errno == ENOTCONN;
}

TEST(mcast_group_flow_socket)
{
	struct ctx *c = mc_ctx();
	struct udp_flow *u;

	guest_udp_ttl(c, "198.51.100.2", 40001, "239.255.255.250", 1900, 4);
	udp_input_done(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);
	CHECK((u = the_flow(c)) != NULL);
	CHECK_EQ(u->mkind, MCAST_GROUP);
	CHECK(unconnected(u->sock));
	CHECK_EQ(sockopt(u->sock, IPPROTO_IP, IP_MULTICAST_TTL), 4);
	CHECK_EQ(sockopt(u->sock, IPPROTO_IP, IP_MULTICAST_LOOP), 0);
	CHECK_EQ(sockopt(u->sock, IPPROTO_IP, IP_MULTICAST_ALL), 0);
	/* The guest changes its TTL: so does the socket. */
	guest_udp_ttl(c, "198.51.100.2", 40001, "239.255.255.250", 1900, 1);
	udp_input_done(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);
	CHECK_EQ(sockopt(u->sock, IPPROTO_IP, IP_MULTICAST_TTL), 1);
	CHECK_EQ(c->stats.drops[DROP_MCAST_BCAST], 0);

	guest_udp_ttl(c, "2001:db8::2", 40002, "ff02::fb", 5353, 255);
	udp_input_done(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 2);
	mc_ctx_free(c);
}

TEST(mcast_broadcast_flow_socket)
{
	struct ctx *c = mc_ctx();
	struct udp_flow *u;
	char b[INET_ADDRSTRLEN];

	guest_udp_ttl(c, "198.51.100.2", 40003, "255.255.255.255", 9, 64);
	udp_input_done(c);
	CHECK((u = the_flow(c)) != NULL);
	CHECK_EQ(u->mkind, MCAST_BCAST);
	CHECK(unconnected(u->sock));
	CHECK_EQ(sockopt(u->sock, SOL_SOCKET, SO_BROADCAST), 1);
	CHECK_EQ(sockopt(u->sock, IPPROTO_IP, IP_TTL), 64);
	inet_ntop(AF_INET, &u->peer.v4m.a4, b, sizeof(b));
	CHECK(!strcmp(b, "198.51.100.255"));
	mc_ctx_free(c);
}

TEST(mcast_off_drops_and_opens_nothing)
{
	struct ctx *c = mc_ctx();

	c->conf.no_multicast = true;
	guest_udp_ttl(c, "198.51.100.2", 40004, "239.255.255.250", 1900, 1);
	guest_udp_ttl(c, "198.51.100.2", 40004, "255.255.255.255", 9, 1);
	guest_udp_ttl(c, "198.51.100.2", 40004, "198.51.100.255", 9, 1);
	guest_udp_ttl(c, "2001:db8::2", 40004, "ff02::fb", 5353, 1);
	udp_input_done(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 0);
	CHECK_EQ(c->stats.drops[DROP_MCAST_BCAST], 4);
	c->conf.no_multicast = false;	/* interface-local: never */
	guest_udp_ttl(c, "2001:db8::2", 40004, "ff01::1", 9, 1);
	udp_input_done(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 0);
	CHECK_EQ(c->stats.drops[DROP_MCAST_BCAST], 5);
	mc_ctx_free(c);
}
