/* mcast.c - the guest's multicast and broadcast datagrams to the host's
 * network.
 *
 * Theory of operation
 *
 * A guest datagram to a multicast group (SSDP's 239.255.255.250:1900,
 * mDNS's 224.0.0.251 and ff02::fb, LLMNR's 224.0.0.252 and ff02::1:3)
 * or to a broadcast address becomes an ordinary UDP flow (udp.c) whose
 * socket is prepared here and left unconnected: answers to such a query
 * come from any host of the network, unicast, to the port the query was
 * sent from, and each one reaches the guest from its sender's address
 * (udp.c gives every received datagram its own source).
 *
 * The host socket sends the way the guest asked, where a router would
 * not change it: on the template interface (IP_MULTICAST_IF,
 * IPV6_MULTICAST_IF: ferry is the guest's link to that network), with
 * the guest's own TTL or hop limit (1 for the link-local groups, as the
 * guest's stack sets it), without looping back to the host's own
 * sockets unless --mcast-loop, and with IP_MULTICAST_ALL off so the
 * socket only hears its own flow's answers, never the traffic of
 * groups other sockets of the host joined.
 *
 * Broadcast. The guest shares the host's address and prefix, so its
 * subnet broadcast and the limited broadcast (255.255.255.255) both go
 * to the directed broadcast of the template interface's subnet
 * (SO_BROADCAST on the socket): the routing table sends that out of the
 * template interface, where the limited broadcast would follow the
 * default route. A host address without a subnet (/31, /32, none)
 * leaves no broadcast to send to: refused.
 *
 * Refused (MCAST_REFUSED, counted as DROP_MCAST_BCAST by the caller):
 * everything with --no-multicast; IPv6 scopes 0 (reserved) and 1
 * (interface-local: the guest's own interface, which is not the host's).
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ferry.h"
#include "mcast.h"
#include "pkt.h"

/* seccomp(all): setsockopt
 *   (multicast and broadcast options of UDP flow sockets) */

/* bcast4() - the directed broadcast of the template interface's subnet
 * (host order), 0 when the host has no address with a subnet. */
static uint32_t bcast4(const struct ctx *c)
{
	uint32_t h = ntohl(c->conf.ip4.host_addr.s_addr);
	int len = c->conf.ip4.prefix_len;

	if (!h || len <= 0 || len >= 31)
		return 0;
	return h | (0xffffffffu >> len);
}

/* is_bcast4() - a is the limited broadcast or the guest's subnet's
 * directed broadcast (host order). */
static bool is_bcast4(const struct ctx *c, uint32_t a)
{
	uint32_t g = ntohl(c->conf.ip4.addr.s_addr);
	int len = c->conf.ip4.prefix_len;

	if (a == INADDR_BROADCAST)
		return true;
	if (!g || len <= 0 || len >= 31)
		return false;
	return a == (g | (0xffffffffu >> len));
}

enum mcast_kind mcast_out_dst(const struct ctx *c, union inany *dst)
{
	if (inany_is4(dst)) {
		uint32_t a = ntohl(dst->v4m.a4.s_addr), b;

		if (IN_MULTICAST(a))
			return c->conf.no_multicast ? MCAST_REFUSED
						    : MCAST_GROUP;
		if (!is_bcast4(c, a))
			return MCAST_NONE;
		b = bcast4(c);
		if (c->conf.no_multicast || !b)
			return MCAST_REFUSED;
		dst->v4m.a4.s_addr = htonl(b);
		return MCAST_BCAST;
	}
	if (!in6_is_mcast(&dst->a6))
		return MCAST_NONE;
	if (c->conf.no_multicast || (dst->a6.s6_addr[1] & 0x0f) <= 1)
		return MCAST_REFUSED;
	return MCAST_GROUP;
}

int mcast_out_ttl(int fd, bool v6, enum mcast_kind k, uint8_t ttl)
{
	int v = ttl, lvl = v6 ? IPPROTO_IPV6 : IPPROTO_IP, opt;

	if (v6)
		opt = IPV6_MULTICAST_HOPS;
	else
		opt = k == MCAST_BCAST ? IP_TTL : IP_MULTICAST_TTL;
	if (!v)		/* TTL 0 would not leave the host at all */
		v = 1;
	if (setsockopt(fd, lvl, opt, &v, sizeof(v)))
		return -errno;
	return 0;
}

/* out_if() - multicast sends of socket fd leave by the template
 * interface (its index in the configuration; none known: the routing
 * table's choice). Returns 0 or -errno. */
static int out_if(const struct ctx *c, int fd, bool v6)
{
	if (v6) {
		int idx = (int)c->conf.ifindex6;

		if (idx && setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF,
				      &idx, sizeof(idx)))
			return -errno;
		return 0;
	}
	struct ip_mreqn m = { .imr_ifindex = (int)c->conf.ifindex4 };

	if (m.imr_ifindex && setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF,
					&m, sizeof(m)))
		return -errno;
	return 0;
}

int mcast_out_sock(const struct ctx *c, int fd, bool v6, enum mcast_kind k,
		   uint8_t ttl)
{
	int one = 1, zero = 0, loop = c->conf.mcast_loop, rc;

	if (k == MCAST_BCAST) {
		if (setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)))
			return -errno;
		return mcast_out_ttl(fd, v6, k, ttl);
	}
	if ((rc = out_if(c, fd, v6)))
		return rc;
	if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       v6 ? IPV6_MULTICAST_LOOP : IP_MULTICAST_LOOP, &loop,
		       sizeof(loop)))
		return -errno;
	/* Best effort: IPV6_MULTICAST_ALL is Linux 4.20's. */
	setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		   v6 ? IPV6_MULTICAST_ALL : IP_MULTICAST_ALL, &zero,
		   sizeof(zero));
	return mcast_out_ttl(fd, v6, k, ttl);
}
