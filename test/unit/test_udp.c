/* test_udp.c - UDP flows against real host sockets on loopback.
 *
 * The guest is the harness context (198.51.100.2, 2001:db8::2); its
 * gateway (198.51.100.1, fe80::1) maps to host loopback, where each test
 * binds its own sockets on ephemeral ports. Socket events are collected
 * from the context's epoll fd with a deadline and handed to
 * udp_sock_handler(), as the event loop would.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "checksum.h"
#include "ferry.h"
#include "icmp_err.h"
#include "nat.h"
#include "pkt.h"
#include "udp_int.h"
#include "unit.h"
#include "util.h"
#include "wire.h"

#define GUEST4	"198.51.100.2"
#define GW4	"198.51.100.1"
#define GUEST6	"2001:db8::2"
#define GW6	"fe80::1"

/* udp_ctx() - a harness context with an epoll fd and UDP initialised. */
static struct ctx *udp_ctx(void)
{
	struct ctx *c = test_ctx();

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->conf.ip4.map_host_lo = c->conf.ip4.gw;
	c->conf.ip6.map_host_lo = c->conf.ip6.gw;
	udp_init(c);
	return c;
}

static void udp_ctx_free(struct ctx *c)
{
	udp_close_all(c);
	close(c->epfd);
	test_ctx_free(c);
}

/* host_sock() - a UDP socket on loopback (v4 or v6), ephemeral port. */
static int host_sock(bool v6, uint16_t *port)
{
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in s4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = v6 ? sizeof(s6) : sizeof(s4);
	struct sockaddr *sa = v6 ? (struct sockaddr *)&s6 : (struct sockaddr *)&s4;

	if (fd < 0 || bind(fd, sa, sl) || getsockname(fd, sa, &sl))
		return -1;
	*port = ntohs(v6 ? s6.sin6_port : s4.sin_port);
	return fd;
}

/* host_recv() - one datagram within 2 s; returns its length or -1. */
static ssize_t host_recv(int fd, void *buf, size_t size, uint16_t *from)
{
	struct sockaddr_in6 sa;
	socklen_t sl = sizeof(sa);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, 2000) != 1)
		return -1;
	ssize_t n = recvfrom(fd, buf, size, MSG_DONTWAIT,
			     (struct sockaddr *)&sa, &sl);
	if (from)
		*from = ntohs(sa.sin6_port);	/* same offset for v4 */
	return n;
}

/* pump_once() - deliver the socket events of up to 50 ms. */
static void pump_once(struct ctx *c)
{
	struct epoll_event ev[16];
	int i, n = epoll_wait(c->epfd, ev, 16, 50);

	for (i = 0; i < n; i++)
		udp_sock_handler(c, ev[i].data.u64, ev[i].events);
}

/* pump() - deliver socket events until the guest got want frames or 2 s
 * passed. Returns the number of frames sent to the guest. */
static size_t pump(struct ctx *c, size_t want)
{
	struct timespec t0, t;

	now_mono(&t0);
	while (test_tx_n(c) < want) {
		pump_once(c);
		now_mono(&t);
		if (ts_ms_diff(&t, &t0) > 2000)
			break;
	}
	return test_tx_n(c);
}

/* guest_udp() - a UDP datagram from the guest, through tap_input(). */
static void guest_udp(struct ctx *c, bool v6, const char *src, uint16_t sp,
		      const char *dst, uint16_t dp, const void *data,
		      size_t len)
{
	static uint8_t l4[65536], frame[65536 + 64];
	size_t n;

	wr16(l4, sp);
	wr16(l4 + 2, dp);
	wr16(l4 + 4, (uint16_t)(UDP_HLEN + len));
	wr16(l4 + 6, 0);
	memcpy(l4 + UDP_HLEN, data, len);
	n = v6 ? test_frame_ip6(frame, src, dst, IPPROTO_UDP, l4, UDP_HLEN + len)
	       : test_frame_ip4(frame, src, dst, IPPROTO_UDP, l4, UDP_HLEN + len);
	test_input(c, frame, n);
}

/* guest_udp_ttl() - guest_udp() with TTL / hop limit ttl (the IPv4
 * header checksum redone). */
static void guest_udp_ttl(struct ctx *c, bool v6, uint16_t sp, uint16_t dp,
			  uint8_t ttl)
{
	static uint8_t l4[UDP_HLEN + 4], frame[128];
	uint8_t *l3 = frame + ETH_HLEN_;
	size_t n;

	wr16(l4, sp);
	wr16(l4 + UDP_OFF_DPORT, dp);
	wr16(l4 + UDP_OFF_LEN, sizeof(l4));
	memcpy(l4 + UDP_HLEN, "ttl!", 4);
	n = v6 ? test_frame_ip6(frame, GUEST6, GW6, IPPROTO_UDP, l4, sizeof(l4))
	       : test_frame_ip4(frame, GUEST4, GW4, IPPROTO_UDP, l4, sizeof(l4));
	if (v6) {
		l3[IP6_OFF_HLIM] = ttl;
	} else {
		l3[IP4_OFF_TTL] = ttl;
		wr16(l3 + IP4_OFF_CSUM, 0);
		wr16(l3 + IP4_OFF_CSUM, csum(l3, IP4_HLEN));
	}
	test_input(c, frame, n);
}

/* host_recv_ttl() - one datagram within 2 s on fd (IP_RECVTTL or
 * IPV6_RECVHOPLIMIT on): its TTL / hop limit, -1 if none came. */
static int host_recv_ttl(int fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cb;
	char buf[64];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct cmsghdr *cm;
	int v;

	if (poll(&pfd, 1, 2000) != 1 || recvmsg(fd, &mh, MSG_DONTWAIT) < 0 ||
	    !(cm = CMSG_FIRSTHDR(&mh)))
		return -1;
	memcpy(&v, CMSG_DATA(cm), sizeof(v));
	return v;
}

/* The guest's TTL / hop limit goes with each datagram (traceroute), set
 * on the flow's socket only when it changes. */
static void ttl_follows_guest(bool v6)
{
	struct ctx *c = udp_ctx();
	uint16_t hp;
	int h = host_sock(v6, &hp), one = 1;

	CHECK(h >= 0);
	CHECK(!setsockopt(h, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
			  v6 ? IPV6_RECVHOPLIMIT : IP_RECVTTL, &one,
			  sizeof(one)));
	guest_udp_ttl(c, v6, 40124, hp, 3);
	CHECK_EQ(host_recv_ttl(h), 3);
	guest_udp_ttl(c, v6, 40124, hp, 3);
	CHECK_EQ(host_recv_ttl(h), 3);
	guest_udp_ttl(c, v6, 40124, hp, 64);
	CHECK_EQ(host_recv_ttl(h), 64);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);
	close(h);
	udp_ctx_free(c);
}

TEST(udp_ttl_follows_guest_ipv4)
{
	ttl_follows_guest(false);
}

TEST(udp_ttl_follows_guest_ipv6)
{
	ttl_follows_guest(true);
}

/* check_udp_frame() - frame i to the guest is UDP sport -> dport with
 * the given payload, and passes pkt_parse() with checksums verified. */
static bool check_udp_frame(struct ctx *c, size_t i, uint16_t sport,
			    uint16_t dport, const void *data, size_t len)
{
	const uint8_t *f;
	struct pkt p;
	size_t flen;

	f = test_tx(c, i, &flen);
	if (!f || pkt_parse(f, flen, true, &p) != DROP_NONE)
		return false;
	return p.l4proto == IPPROTO_UDP && p.udp.sport == sport &&
	       p.udp.dport == dport && p.payload_len == len &&
	       !memcmp(p.payload, data, len);
}

static void roundtrip(bool v6)
{
	struct ctx *c = udp_ctx();
	uint16_t hp, from;
	int h = host_sock(v6, &hp);
	char buf[64];
	struct sockaddr_in6 peer;
	socklen_t sl = sizeof(peer);
	struct pkt p;
	const uint8_t *f;
	size_t flen;

	CHECK(h >= 0);
	guest_udp(c, v6, v6 ? GUEST6 : GUEST4, 40123, v6 ? GW6 : GW4, hp,
		  "hello", 5);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);
	CHECK_EQ(host_recv(h, buf, sizeof(buf), &from), 5);
	CHECK(!memcmp(buf, "hello", 5));
	CHECK_EQ(from, 40123);		/* the guest's port was free */
	/* Reply to wherever it came from. */
	recvfrom(h, buf, 0, MSG_DONTWAIT | MSG_PEEK, NULL, NULL);
	memset(&peer, 0, sizeof(peer));
	CHECK(!getsockname(h, (struct sockaddr *)&peer, &sl));
	peer.sin6_port = htons(40123);	/* same port field offset in v4 */
	CHECK(sendto(h, "world!", 6, 0, (struct sockaddr *)&peer, sl) == 6);
	CHECK_EQ(pump(c, 1), 1);
	CHECK(check_udp_frame(c, 0, hp, 40123, "world!", 6));
	f = test_tx(c, 0, &flen);
	CHECK(pkt_parse(f, flen, true, &p) == DROP_NONE);
	if (v6) {
		struct in6_addr g, d;

		inet_pton(AF_INET6, GW6, &g);
		inet_pton(AF_INET6, GUEST6, &d);
		CHECK(in6_eq(&p.src6, &g) && in6_eq(&p.dst6, &d));
	} else {
		CHECK(p.src4.s_addr == inet_addr(GW4));
		CHECK(p.dst4.s_addr == inet_addr(GUEST4));
	}
	close(h);
	udp_ctx_free(c);
}

TEST(udp_roundtrip_ipv4)
{
	roundtrip(false);
}

TEST(udp_roundtrip_ipv6)
{
	roundtrip(true);
}

/* A batch of guest datagrams in one rx batch: one flow, order kept. */
TEST(udp_batch_guest_to_host_in_order)
{
	struct ctx *c = udp_ctx();
	static uint8_t l4[128], frame[256];
	uint16_t hp;
	int h = host_sock(false, &hp), i, rcvbuf = 1 << 20;
	size_t off = 0;

	CHECK(h >= 0);
	setsockopt(h, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	for (i = 0; i < 100; i++) {
		size_t n;

		wr16(l4, 40200);
		wr16(l4 + 2, hp);
		wr16(l4 + 4, UDP_HLEN + 4);
		wr16(l4 + 6, 0);
		wr32(l4 + UDP_HLEN, (uint32_t)i);
		n = test_frame_ip4(frame, GUEST4, GW4, IPPROTO_UDP, l4,
				   UDP_HLEN + 4);
		memcpy(c->link.rx.buf + off, frame, n);
		c->link.rx.f[i].off = (uint32_t)off;
		c->link.rx.f[i].len = (uint32_t)n;
		off += ROUND_UP(n, 64);
	}
	c->link.rx.n = 100;
	tap_input(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);
	for (i = 0; i < 100; i++) {
		uint8_t b[8];

		CHECK_EQ(host_recv(h, b, sizeof(b), NULL), 4);
		CHECK_EQ(rd32(b), i);
	}
	close(h);
	udp_ctx_free(c);
}

/* Host datagrams of many sizes arrive intact, batched by recvmmsg. */
TEST(udp_batch_host_to_guest_sizes)
{
	struct ctx *c = udp_ctx();
	static uint8_t big[1500];
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(40300) };
	uint16_t hp;
	int h = host_sock(false, &hp), i;

	CHECK(h >= 0);
	guest_udp(c, false, GUEST4, 40300, GW4, hp, "x", 1);
	CHECK(host_recv(h, big, sizeof(big), NULL) == 1);
	for (i = 0; i < (int)sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	/* 0 .. 1472 bytes: 1472 is the largest payload at MTU 1500. */
	for (i = 0; i < 60; i++) {
		size_t len = (size_t)i * 1472 / 59;

		CHECK(sendto(h, big, len, 0, (struct sockaddr *)&to,
			     sizeof(to)) == (ssize_t)len);
	}
	CHECK_EQ(pump(c, 60), 60);
	for (i = 0; i < 60; i++)
		CHECK(check_udp_frame(c, (size_t)i, hp, 40300, big,
				      (size_t)i * 1472 / 59));
	/* One byte over the MTU: dropped and counted, not truncated. */
	CHECK(sendto(h, big, 1473, 0, (struct sockaddr *)&to, sizeof(to)) ==
	      1473);
	CHECK(sendto(h, big, 3, 0, (struct sockaddr *)&to, sizeof(to)) == 3);
	CHECK_EQ(pump(c, 61), 61);
	CHECK(check_udp_frame(c, 60, hp, 40300, big, 3));
	CHECK_EQ(c->stats.drops[DROP_UDP_TOO_BIG], 1);
	close(h);
	udp_ctx_free(c);
}

/* check_icmp_unreach() - frame i is an ICMP(v6) port unreachable from
 * the gateway quoting guest port gp -> remote port rp. */
static bool check_icmp_unreach(struct ctx *c, size_t i, bool v6,
			       uint16_t gp, uint16_t rp)
{
	const uint8_t *f, *q;
	struct pkt p;
	size_t flen;

	f = test_tx(c, i, &flen);
	if (!f || pkt_parse(f, flen, true, &p) != DROP_NONE)
		return false;
	if (v6) {
		if (p.l4proto != IPPROTO_ICMPV6 || p.icmp.type != 1 ||
		    p.icmp.code != 4 || p.payload_len < IP6_HLEN + 8)
			return false;
		q = p.payload;
		return q[6] == IPPROTO_UDP && rd16(q + 40) == gp &&
		       rd16(q + 42) == rp && flen <= ETH_HLEN_ + 1280;
	}
	if (p.l4proto != IPPROTO_ICMP || p.icmp.type != 3 ||
	    p.icmp.code != 3 || p.payload_len < IP4_HLEN + 8)
		return false;
	q = p.payload;
	return q[9] == IPPROTO_UDP && !memcmp(q + 12, &p.dst4, 4) &&
	       rd16(q + 20) == gp && rd16(q + 22) == rp &&
	       p.src4.s_addr == inet_addr(GW4) && flen <= ETH_HLEN_ + 576;
}

static void port_unreachable(bool v6)
{
	struct ctx *c = udp_ctx();
	static uint8_t payload[1400];
	uint16_t hp;
	int h = host_sock(v6, &hp);

	CHECK(h >= 0);
	close(h);			/* nobody listens on hp now */
	guest_udp(c, v6, v6 ? GUEST6 : GUEST4, 40400, v6 ? GW6 : GW4, hp,
		  payload, sizeof(payload));
	CHECK_EQ(pump(c, 1), 1);
	CHECK(check_icmp_unreach(c, 0, v6, 40400, hp));
	CHECK_EQ(c->udp.icmp_to_guest, 1);
	udp_ctx_free(c);
}

TEST(udp_port_unreachable_ipv4)
{
	port_unreachable(false);
}

TEST(udp_port_unreachable_ipv6)
{
	port_unreachable(true);
}

TEST(udp_bad_input_dropped)
{
	struct ctx *c = udp_ctx();
	static uint8_t l4[64], frame[256];
	size_t n;

	guest_udp(c, false, GUEST4, 0, GW4, 9, "a", 1);
	CHECK_EQ(c->stats.drops[DROP_L4_PORT_ZERO], 1);
	guest_udp(c, false, GUEST4, 9, GW4, 0, "a", 1);
	CHECK_EQ(c->stats.drops[DROP_L4_PORT_ZERO], 2);
	guest_udp(c, false, "198.51.100.99", 9, GW4, 9, "a", 1);
	CHECK_EQ(c->stats.drops[DROP_IP4_SRC], 1);
	guest_udp(c, true, "2001:db9::2", 9, GW6, 9, "a", 1);
	CHECK_EQ(c->stats.drops[DROP_IP6_SRC], 1);
	guest_udp(c, false, GUEST4, 9, "127.0.0.1", 9, "a", 1);
	CHECK_EQ(c->stats.drops[DROP_IP4_DST], 1);
	c->conf.no_multicast = true;	/* else forwarded (test_mcast.c) */
	guest_udp(c, false, GUEST4, 9, "198.51.100.255", 9, "a", 1);
	guest_udp(c, false, GUEST4, 9, "255.255.255.255", 9, "a", 1);
	guest_udp(c, false, GUEST4, 9, "239.1.2.3", 9, "a", 1);
	guest_udp(c, true, GUEST6, 9, "ff02::fb", 9, "a", 1);
	CHECK_EQ(c->stats.drops[DROP_MCAST_BCAST], 4);
	c->conf.no_multicast = false;

	/* UDP length field larger than the datagram. */
	wr16(l4, 9);
	wr16(l4 + 2, 9);
	wr16(l4 + 4, 40);
	wr16(l4 + 6, 0);
	n = test_frame_ip4(frame, GUEST4, GW4, IPPROTO_UDP, l4, 12);
	test_input(c, frame, n);
	CHECK_EQ(c->stats.drops[DROP_UDP_LEN], 1);
	/* Checksum that does not verify. */
	wr16(l4 + 4, 12);
	n = test_frame_ip4(frame, GUEST4, GW4, IPPROTO_UDP, l4, 12);
	frame[n - 1] ^= 0x55;
	test_input(c, frame, n);
	CHECK_EQ(c->stats.drops[DROP_L4_CSUM], 1);
	CHECK(c->flows.count[FLOW_UDP] <= 1);	/* only the subnet bcast */
	udp_ctx_free(c);
}

TEST(udp_eviction_at_limit)
{
	struct ctx *c = udp_ctx();
	union inany g, r;
	struct flow_key k;
	uint16_t hp;
	int h = host_sock(false, &hp), i;

	CHECK(h >= 0);
	c->udp.max_flows = 3;
	for (i = 0; i < 5; i++) {
		c->now.tv_sec++;
		guest_udp(c, false, GUEST4, (uint16_t)(41000 + i), GW4, hp,
			  "e", 1);
	}
	CHECK_EQ(c->flows.count[FLOW_UDP], 3);
	CHECK_EQ(c->udp.flows_evicted, 2);
	inany_from4(&g, (struct in_addr){ inet_addr(GUEST4) });
	inany_from4(&r, (struct in_addr){ inet_addr(GW4) });
	flow_key_make(&k, IPPROTO_UDP, &g, 41000, &r, hp);
	CHECK(!flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k));
	flow_key_make(&k, IPPROTO_UDP, &g, 41004, &r, hp);
	CHECK(flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k));
	/* Traffic on the oldest survivor (41002) protects it. */
	guest_udp(c, false, GUEST4, 41002, GW4, hp, "e", 1);
	guest_udp(c, false, GUEST4, 41005, GW4, hp, "e", 1);
	flow_key_make(&k, IPPROTO_UDP, &g, 41002, &r, hp);
	CHECK(flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k));
	flow_key_make(&k, IPPROTO_UDP, &g, 41003, &r, hp);
	CHECK(!flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k));
	for (i = 0; i < 7; i++) {
		char b[4];

		CHECK_EQ(host_recv(h, b, sizeof(b), NULL), 1);
	}
	close(h);
	udp_ctx_free(c);
}

TEST(udp_expiry_unreplied_and_replied)
{
	struct ctx *c = udp_ctx();
	uint16_t hp;
	int h = host_sock(false, &hp);
	char b[8];
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(41100) };

	CHECK(h >= 0);
	guest_udp(c, false, GUEST4, 41100, GW4, hp, "a", 1);
	guest_udp(c, false, GUEST4, 41101, GW4, hp, "b", 1);
	CHECK_EQ(host_recv(h, b, sizeof(b), NULL), 1);
	CHECK_EQ(host_recv(h, b, sizeof(b), NULL), 1);
	CHECK(sendto(h, "r", 1, 0, (struct sockaddr *)&to, sizeof(to)) == 1);
	CHECK_EQ(pump(c, 1), 1);		/* 41100 has a reply */
	c->now.tv_sec += UDP_TIMEOUT_MS / 1000 - 1;
	udp_timer(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 2);
	c->now.tv_sec += 2;
	udp_timer(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);	/* unreplied 41101 gone */
	c->now.tv_sec += UDP_TIMEOUT_REPLIED_MS / 1000;
	udp_timer(c);
	CHECK_EQ(c->flows.count[FLOW_UDP], 0);
	CHECK_EQ(c->udp.flows_expired, 2);
	close(h);
	udp_ctx_free(c);
}

/* free_port() - a currently unused UDP port on loopback. */
static uint16_t free_port(void)
{
	uint16_t p = 0;
	int fd = host_sock(false, &p);

	close(fd);
	return p;
}

/* Forwarded ports: a client on host loopback reaches the guest's target
 * port; the guest's reply comes back from the forwarded port. */
TEST(udp_forwarded_port_range)
{
	struct ctx *c = udp_ctx();
	struct fwd_spec *spec = &c->conf.udp_in;
	uint16_t p0 = free_port(), p1 = free_port(), cp, from;
	uint16_t ports[2] = { p0, p1 };
	int cl, i;
	char b[16];

	CHECK(p0 && p1 && p0 != p1);
	spec->mode = FWD_SPEC;
	spec->binds[0].has_addr4 = true;
	spec->binds[0].addr4.s_addr = htonl(INADDR_LOOPBACK);
	spec->nbinds = 1;
	for (i = 0; i < 2; i++) {
		spec->map[ports[i] / 64] |= 1ULL << (ports[i] % 64);
		spec->delta[ports[i]] = (uint16_t)(5000 + i - ports[i]);
	}
	udp_listen_init(c);
	CHECK_EQ(c->udp.listeners, 2);
	cl = host_sock(false, &cp);
	CHECK(cl >= 0);
	for (i = 0; i < 2; i++) {
		struct sockaddr_in to = { .sin_family = AF_INET,
			.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
			.sin_port = htons(ports[i]) };
		const uint8_t *f;
		struct pkt p;
		size_t flen;

		test_tx_reset(c);
		CHECK(sendto(cl, "ping", 4, 0, (struct sockaddr *)&to,
			     sizeof(to)) == 4);
		CHECK_EQ(pump(c, 1), 1);
		CHECK(check_udp_frame(c, 0, cp, (uint16_t)(5000 + i), "ping", 4));
		f = test_tx(c, 0, &flen);
		CHECK(pkt_parse(f, flen, true, &p) == DROP_NONE);
		CHECK(p.src4.s_addr == inet_addr(GW4));	/* loopback shown */
		CHECK(p.dst4.s_addr == inet_addr(GUEST4));
		guest_udp(c, false, GUEST4, (uint16_t)(5000 + i), GW4, cp,
			  "pong", 4);
		CHECK_EQ(host_recv(cl, b, sizeof(b), &from), 4);
		CHECK(!memcmp(b, "pong", 4));
		CHECK_EQ(from, ports[i]);
	}
	CHECK_EQ(c->flows.count[FLOW_UDP], 2);
	close(cl);
	udp_ctx_free(c);
}

/* client_err() - an error as the kernel queues it on a -u socket about
 * a datagram to 127.0.0.1:port. */
static struct icmp_err client_err(uint16_t port)
{
	struct icmp_err e = { .has_dst = true, .dst_port = port };
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	inany_from4(&e.dst, lo);
	return e;
}

/* fwd_lo_port() - forward -u port on 127.0.0.1 to the guest's port 5000;
 * returns the listener's fd (-1 if it did not open). */
static int fwd_lo_port(struct ctx *c, uint16_t port)
{
	struct fwd_spec *spec = &c->conf.udp_in;

	spec->mode = FWD_SPEC;
	spec->binds[0].has_addr4 = true;
	spec->binds[0].addr4.s_addr = htonl(INADDR_LOOPBACK);
	spec->nbinds = 1;
	spec->map[port / 64] |= 1ULL << (port % 64);
	spec->delta[port] = (uint16_t)(5000 - port);
	udp_listen_init(c);
	return c->udp.listeners == 1 ? c->udp.fwd[UDP_FWD_IN].fds[port * 2] - 1
				     : -1;
}

/* send_lo() - "hi" from socket fd to 127.0.0.1:port; true if sent. */
static bool send_lo(int fd, uint16_t port)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		.sin_port = htons(port) };

	return sendto(fd, "hi", 2, 0, (struct sockaddr *)&to,
		      sizeof(to)) == 2;
}

/* guest_has_flow() - is there a flow from the guest's port gport to the
 * host (GW4) port hport? */
static bool guest_has_flow(struct ctx *c, uint16_t gport, uint16_t hport)
{
	struct in_addr g4 = { inet_addr(GUEST4) }, gw4 = { inet_addr(GW4) };
	union inany ga, gwa;
	struct flow_key k;

	inany_from4(&ga, g4);
	inany_from4(&gwa, gw4);
	flow_key_make(&k, IPPROTO_UDP, &ga, gport, &gwa, hport);
	return flow_lookup(&c->flows, FLOW_SIDE_GUEST, &k) != NULL;
}

/* An error on a -u socket names its client by the failed datagram's
 * destination: udp_client_flow() finds that client's flow by a keyed
 * lookup (it scanned every UDP flow, ~20 us per forged error at 4096
 * flows), and nothing for an address that is no client of that socket,
 * even when the guest's own flow has the tuple. */
TEST(udp_client_flow_keyed)
{
	struct ctx *c = udp_ctx();
	uint16_t port = free_port(), cp[3], own;
	int cl[3], ofd, lfd, i;
	struct icmp_err e;
	struct flow *fl;

	CHECK(port);
	CHECK((lfd = fwd_lo_port(c, port)) >= 0);
	for (i = 0; i < 3; i++) {
		CHECK((cl[i] = host_sock(false, &cp[i])) >= 0);
		CHECK(send_lo(cl[i], port));
	}
	CHECK_EQ(pump(c, 3), 3);
	/* The guest's own flow from its target port to a host socket. */
	CHECK((ofd = host_sock(false, &own)) >= 0);
	guest_udp(c, false, GUEST4, 5000, GW4, own, "x", 1);
	CHECK_EQ(c->flows.count[FLOW_UDP], 4);
	for (i = 0; i < 3; i++) {
		e = client_err(cp[i]);
		fl = udp_client_flow(c, lfd, port, &e);
		CHECK(fl != NULL);
		CHECK(fl && UDP_FLOW(fl)->shared &&
		      UDP_FLOW(fl)->peer_port == cp[i]);
	}
	e = client_err(own);		/* the guest's flow: no client */
	CHECK(udp_client_flow(c, lfd, port, &e) == NULL);
	/* A client whose tuple is the guest's own flow's gets none, and
	 * the drop says so, not "flow table full". */
	CHECK(send_lo(ofd, port));
	test_tx_reset(c);
	for (i = 0; i < 40 && !c->stats.drops[DROP_UDP_TUPLE_TAKEN]; i++)
		pump_once(c);		/* up to 2 s */
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_UDP_TUPLE_TAKEN], 1);
	CHECK_EQ(c->stats.drops[DROP_FLOW_TABLE_FULL], 0);
	CHECK_EQ(c->flows.count[FLOW_UDP], 4);
	e = client_err(port);		/* nobody */
	CHECK(udp_client_flow(c, lfd, port, &e) == NULL);
	e = client_err(cp[0]);		/* a client, another socket */
	CHECK(udp_client_flow(c, ofd, port, &e) == NULL);
	e.has_dst = false;		/* no address: no client */
	CHECK(udp_client_flow(c, lfd, port, &e) == NULL);
	for (i = 0; i < 3; i++)
		close(cl[i]);
	close(ofd);
	udp_ctx_free(c);
}

/* Remote clients of a -u port choose their source ports (or spoof them):
 * each new one took a flow from the one LRU and cap the guest's own
 * flows share, so a sender spraying ports evicted the guest's DNS and
 * QUIC flows. Clients' flows now hold at most half the cap and evict
 * among themselves. */
TEST(udp_inbound_clients_spare_guest_flows)
{
	struct ctx *c = udp_ctx();
	uint16_t port = free_port(), cp[10], own;
	int cl[10], ofd, i;

	CHECK(port);
	c->udp.max_flows = 8;
	CHECK(fwd_lo_port(c, port) >= 0);
	/* The guest's own flow first: the least recently active one. */
	CHECK((ofd = host_sock(false, &own)) >= 0);
	guest_udp(c, false, GUEST4, 40000, GW4, own, "q", 1);
	CHECK_EQ(c->flows.count[FLOW_UDP], 1);
	for (i = 0; i < 10; i++) {
		CHECK((cl[i] = host_sock(false, &cp[i])) >= 0);
		CHECK(send_lo(cl[i], port));
		test_advance(c, 1);
		CHECK_EQ(pump(c, (size_t)i + 1), (size_t)i + 1);
	}
	CHECK(guest_has_flow(c, 40000, own));
	CHECK_EQ(c->udp.inbound, 4);
	CHECK_EQ(c->flows.count[FLOW_UDP], 5);
	CHECK_EQ(c->udp.inbound_evicted, 6);
	CHECK_EQ(c->udp.flows_evicted, 6);
	/* The newest client has its flow, the oldest lost theirs. */
	CHECK(guest_has_flow(c, 5000, cp[9]));
	CHECK(!guest_has_flow(c, 5000, cp[0]));
	/* The guest's own flows may still fill the cap beyond that half. */
	for (i = 0; i < 4; i++)
		guest_udp(c, false, GUEST4, (uint16_t)(40001 + i), GW4, own,
			  "q", 1);
	CHECK_EQ(c->flows.count[FLOW_UDP], 8);
	CHECK_EQ(c->udp.inbound, 4);
	for (i = 0; i < 10; i++)
		close(cl[i]);
	close(ofd);
	udp_ctx_free(c);
}

/* tap_tx_reserve_many()/commit_many(): slots filled in place, skipped
 * ones left out, and the committed frames end up contiguous, each short
 * one zero-padded to the 802.3 minimum (ETH_ZLEN_). */
TEST(udp_tx_many_contiguous)
{
	struct ctx *c = udp_ctx();
	struct tx_batch *tx = &c->link.tx;
	uint8_t *fr[3], zero[ETH_ZLEN_] = { 0 };
	size_t lens[3] = { 10, 0, 80 };
	unsigned int n, i;

	n = tap_tx_reserve_many(c, 100, fr, 3);
	CHECK_EQ(n, 3);
	for (i = 0; i < 3; i++)
		memset(fr[i], 'a' + (int)i, 100);
	tap_tx_commit_many(c, lens, 3);
	CHECK_EQ(tx->n, 2);
	CHECK_EQ(tx->f[0].len, ETH_ZLEN_);
	CHECK_EQ(tx->f[1].len, 80);
	CHECK_EQ(tx->f[1].off, tx->f[0].off + ETH_ZLEN_);
	CHECK_EQ(tx->used, tx->f[1].off + 80);
	CHECK(tx->buf[tx->f[0].off] == 'a' && tx->buf[tx->f[0].off + 9] == 'a');
	CHECK(!memcmp(tx->buf + tx->f[0].off + 10, zero, ETH_ZLEN_ - 10));
	CHECK(tx->buf[tx->f[1].off] == 'c' && tx->buf[tx->f[1].off + 79] == 'c');
	udp_ctx_free(c);
}

/* No guest connected: datagrams are read and dropped, never left to
 * keep the socket readable (which would spin the event loop). */
TEST(udp_link_down_drains)
{
	struct ctx *c = udp_ctx();
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(41200) };
	struct epoll_event ev;
	uint16_t hp;
	int h = host_sock(false, &hp), i;

	CHECK(h >= 0);
	guest_udp(c, false, GUEST4, 41200, GW4, hp, "x", 1);
	c->link.up = false;
	for (i = 0; i < 3; i++)
		CHECK(sendto(h, "y", 1, 0, (struct sockaddr *)&to,
			     sizeof(to)) == 1);
	CHECK(epoll_wait(c->epfd, &ev, 1, 2000) == 1);
	udp_sock_handler(c, ev.data.u64, ev.events);
	CHECK_EQ(c->stats.drops[DROP_LINK_DOWN], 3);
	CHECK_EQ(epoll_wait(c->epfd, &ev, 1, 0), 0);
	c->link.up = true;
	close(h);
	udp_ctx_free(c);
}

/* Random datagrams and random corruption: never a crash, never more
 * flows (sockets) than the limit, every refused frame counted. */
TEST(udp_random_input_bounded)
{
	struct ctx *c = udp_ctx();
	static uint8_t l4[600], frame[800];
	uint64_t dropped = 0;
	unsigned int i, seed = 12345;
	int r;

	c->udp.max_flows = 8;
	for (i = 0; i < 3000; i++) {
		size_t len = (size_t)(rand_r(&seed) % 500), n, k;

		wr16(l4, (uint16_t)rand_r(&seed));
		wr16(l4 + 2, (uint16_t)(rand_r(&seed) % 64));
		wr16(l4 + 4, (uint16_t)(UDP_HLEN + len));
		wr16(l4 + 6, 0);
		for (k = 0; k < len; k++)
			l4[UDP_HLEN + k] = (uint8_t)rand_r(&seed);
		n = test_frame_ip4(frame, rand_r(&seed) % 4 ? GUEST4 : "198.51.100.7",
				   GW4, IPPROTO_UDP, l4, UDP_HLEN + len);
		if (rand_r(&seed) % 3 == 0)	/* corrupt a header byte */
			frame[14 + rand_r(&seed) % 28] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		test_input(c, frame, n - (rand_r(&seed) % 5 == 0 ? rand_r(&seed) % n : 0));
		CHECK(c->flows.count[FLOW_UDP] <= 8);
	}
	for (r = 1; r < DROP_MAX; r++)
		dropped += c->stats.drops[r];
	CHECK_EQ(c->stats.rx_frames, 3000);
	CHECK(dropped > 0 && dropped < 3000);
	CHECK(c->udp.flows_created > 8 && c->udp.flows_evicted > 0);
	udp_ctx_free(c);
}
