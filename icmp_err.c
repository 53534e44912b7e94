/* icmp_err.c - ICMP and ICMPv6 errors towards the guest.
 *
 * Theory of operation: ferry's host sockets ask the kernel to queue the
 * ICMP errors they receive (IP_RECVERR / IPV6_RECVERR). Each queued error
 * carries the payload of the datagram it is about, the ICMP type and code,
 * who reported it (the offender) and, for "too big" errors, the MTU.
 * icmp_err_read() dequeues one; icmp_err_to_guest() turns it into the
 * ICMP (RFC 792) or ICMPv6 (RFC 4443) error the guest would have received
 * had it been on the host's network itself, quoting the guest's own
 * datagram as the guest sent it (its addresses and ports, not the host
 * socket's), within the minimum MTU (576 bytes for IPv4, 1280 for IPv6)
 * as both RFCs require.
 *
 * What is translated: destination unreachable (network, host, port,
 * administratively prohibited), fragmentation needed / packet too big,
 * also when the host stack itself reports a too-big datagram, and time
 * exceeded in transit or in reassembly: UDP and echo flows send with the
 * guest's own TTL / hop limit (udp.c, icmp.c), so a router's time
 * exceeded is about the guest's probe (traceroute). Parameter problems
 * and anything else stay on the host: they are about the host socket's
 * packets (its options), not the guest's.
 *
 * Source address: an error reported by the destination host appears to
 * come from the remote address the guest addressed (which may be a
 * mapped one, e.g. the gateway standing for host loopback). One reported
 * by a router on the host's path comes from that router's address, as it
 * would on the host (traceroute lists the real hops; upstream relays them
 * so since 2025-04). Host-side addresses the guest could not address
 * itself stay hidden behind the guest's gateway: the host stack's own
 * errors (no reporter), loopback, link-local and the host's own
 * addresses as reporter. Errors are only ever produced for datagrams of
 * the guest's own flows.
 */
#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <sys/socket.h>

#include "checksum.h"
#include "ferry.h"
#include "icmp_err.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

/* seccomp(all): recvmsg
 *   (the socket error queue) */

#define ICMP_TIME_EXCEEDED_	11	/* RFC 792 */
#define ICMP6_TIME_EXCEEDED_	3	/* RFC 4443 */

#define ICMP4_QUOTE_MAX	(576 - IP4_HLEN - ICMP_HLEN)	/* quoted bytes */
#define ICMP6_QUOTE_MAX	(1280 - IP6_HLEN - ICMP6_HLEN)

int icmp_err_read(int fd, struct icmp_err *e, uint8_t *buf, size_t size)
{
	union {
		char b[CMSG_SPACE(sizeof(struct sock_extended_err) +
				  sizeof(struct sockaddr_in6)) + 64];
		struct cmsghdr align;
	} cb;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	sockaddr_inany dst;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_name = &dst, .msg_namelen = sizeof(dst),
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct sock_extended_err ee;
	struct cmsghdr *cm;
	ssize_t n;

	n = recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	memset(e, 0, sizeof(*e));
	e->len = (size_t)n;
	e->truncated = mh.msg_flags & MSG_TRUNC;
	if (mh.msg_namelen >= (dst.sa.sa_family == AF_INET6
			       ? sizeof(struct sockaddr_in6)
			       : sizeof(struct sockaddr_in)) &&
	    (dst.sa.sa_family == AF_INET || dst.sa.sa_family == AF_INET6)) {
		inany_from_sa(&dst, &e->dst, &e->dst_port);
		e->has_dst = true;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		const uint8_t *d = CMSG_DATA(cm);
		size_t dlen = cm->cmsg_len - CMSG_LEN(0);
		sa_family_t fam;

		if (!(cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) &&
		    !(cm->cmsg_level == SOL_IPV6 &&
		      cm->cmsg_type == IPV6_RECVERR))
			continue;
		if (dlen < sizeof(ee))
			continue;
		memcpy(&ee, d, sizeof(ee));
		e->origin = ee.ee_origin;
		e->type = ee.ee_type;
		e->code = ee.ee_code;
		e->errnum = (int)ee.ee_errno;
		e->info = ee.ee_info;
		if (dlen < sizeof(ee) + sizeof(struct sockaddr_in))
			break;
		memcpy(&fam, d + sizeof(ee), sizeof(fam));
		if (fam == AF_INET) {
			struct sockaddr_in sa;

			memcpy(&sa, d + sizeof(ee), sizeof(sa));
			inany_from4(&e->offender, sa.sin_addr);
			e->has_offender = true;
		} else if (fam == AF_INET6 &&
			   dlen >= sizeof(ee) + sizeof(struct sockaddr_in6)) {
			struct sockaddr_in6 sa;

			memcpy(&sa, d + sizeof(ee), sizeof(sa));
			inany_from6(&e->offender, &sa.sin6_addr);
			e->has_offender = true;
		}
		break;
	}
	return 1;
}

/* map4() - ICMPv4 type/code (and MTU) for error e, false: not ours. */
static bool map4(const struct icmp_err *e, uint8_t *type, uint8_t *code,
		 uint32_t *mtu)
{
	*type = 3;				/* destination unreachable */
	if (e->origin == SO_EE_ORIGIN_LOCAL && e->errnum == EMSGSIZE) {
		*code = 4;
		*mtu = e->info;
		return true;
	}
	if (e->origin == SO_EE_ORIGIN_ICMP && e->type == ICMP_TIME_EXCEEDED_ &&
	    e->code <= 1) {			/* in transit, reassembly */
		*type = ICMP_TIME_EXCEEDED_;
		*code = e->code;
		return true;
	}
	if (e->origin != SO_EE_ORIGIN_ICMP || e->type != 3)
		return false;
	switch (e->code) {
	case 0: case 1: case 3: case 13:	/* net, host, port, prohibited */
		*code = e->code;
		break;
	case 4:					/* fragmentation needed */
		*code = 4;
		*mtu = e->info;
		break;
	case 9: case 10:			/* net/host prohibited */
		*code = 13;
		break;
	default:
		*code = 1;
		break;
	}
	return true;
}

/* map6() - ICMPv6 type/code (and MTU) for error e, false: not ours. */
static bool map6(const struct icmp_err *e, uint8_t *type, uint8_t *code,
		 uint32_t *mtu)
{
	if ((e->origin == SO_EE_ORIGIN_LOCAL && e->errnum == EMSGSIZE) ||
	    (e->origin == SO_EE_ORIGIN_ICMP6 && e->type == 2)) {
		*type = 2;			/* packet too big */
		*code = 0;
		*mtu = e->info;
		return true;
	}
	if (e->origin == SO_EE_ORIGIN_ICMP6 &&
	    e->type == ICMP6_TIME_EXCEEDED_ && e->code <= 1) {
		*type = ICMP6_TIME_EXCEEDED_;	/* hop limit, reassembly */
		*code = e->code;
		return true;
	}
	if (e->origin != SO_EE_ORIGIN_ICMP6 || e->type != 1)
		return false;
	*type = 1;				/* destination unreachable */
	switch (e->code) {
	case 0: case 1: case 3: case 4:	/* route, prohibited, addr, port */
		*code = e->code;
		break;
	case 5: case 6:				/* policy, reject route */
		*code = 1;
		break;
	default:
		*code = 3;
		break;
	}
	return true;
}

/* router_visible() - may the guest see router address a (of the flow's
 * family) as an error's source? Not the host's own addresses (the guest
 * shares them), nor loopback, link-local or unspecified ones. */
static bool router_visible(const struct ctx *c, const union inany *a,
			   bool v6)
{
	if (inany_is4(a) == v6)
		return false;
	if (!v6) {
		struct in_addr a4 = a->v4m.a4;

		return !in4_is_unspec(&a4) && (ntohl(a4.s_addr) >> 24) != 127 &&
		       !in4_eq(&a4, &c->conf.ip4.host_addr) &&
		       !in4_eq(&a4, &c->conf.ip4.addr) &&
		       !in4_is_mcast_or_bcast(a4);
	}
	return !in6_is_unspec(&a->a6) && !IN6_IS_ADDR_LOOPBACK(&a->a6) &&
	       !IN6_IS_ADDR_LINKLOCAL(&a->a6) && !in6_is_mcast(&a->a6) &&
	       !in6_eq(&a->a6, &c->conf.ip6.host_addr) &&
	       !in6_eq(&a->a6, &c->conf.ip6.addr);
}

/* reporter() - the source address the guest sees on the error: the
 * remote it addressed when that reported it, a router as itself, else
 * the gateway (see top). */
static union inany reporter(const struct ctx *c, const struct icmp_err *e,
			    const struct icmp_err_orig *o)
{
	bool v6 = !inany_is4(&o->src);
	union inany r = o->dst;

	if (e->has_offender && inany_eq(&e->offender, &o->host_dst))
		return r;
	if (e->has_offender && (e->origin == SO_EE_ORIGIN_ICMP ||
				e->origin == SO_EE_ORIGIN_ICMP6) &&
	    router_visible(c, &e->offender, v6))
		return e->offender;
	if (inany_is4(&o->src) && !in4_is_unspec(&c->conf.ip4.gw))
		inany_from4(&r, c->conf.ip4.gw);
	else if (!inany_is4(&o->src) && !in6_is_unspec(&c->conf.ip6.gw))
		inany_from6(&r, &c->conf.ip6.gw);
	return r;
}

/* csum_update() - RFC 1624 (eqn. 3): checksum field value check after
 * the len bytes it covers change from from to to (even len, 16-bit
 * aligned within the sum): HC' = ~(~HC + ~m + m'). */
static uint16_t csum_update(uint16_t check, const void *from, const void *to,
			    size_t len)
{
	uint32_t sum = (uint16_t)~check;

	sum += csum_fold(csum_add(0, from, len));	/* ~m */
	return csum_fold(csum_add(sum, to, len));
}

void icmp_echo_requote(uint8_t *m, size_t len, uint16_t id,
		       const struct in6_addr *from6,
		       const struct in6_addr *to6)
{
	uint8_t new_id[2];
	uint16_t check;

	if (len < ICMP_HLEN)
		return;
	wr16(new_id, id);
	check = csum_update(rd16(m + ICMP_OFF_CSUM), m + ICMP_OFF_ID, new_id,
			    2);
	if (from6 && to6)
		check = csum_update(check, from6, to6,
				    2 * sizeof(struct in6_addr));
	memcpy(m + ICMP_OFF_ID, new_id, 2);
	wr16(m + ICMP_OFF_CSUM, check);
}

/* quote_udp() - the guest's UDP header and payload at q (room: max
 * bytes); returns the bytes written. The checksum is correct when the
 * whole payload is known, else zero (nobody verifies a quote). */
static size_t quote_udp(uint8_t *q, size_t max, const struct icmp_err_orig *o)
{
	size_t ulen = MIN(UDP_HLEN + o->full_len, 65535u);
	size_t n = MIN(o->len, max - UDP_HLEN);

	udp_hdr_put(q, o->sport, o->dport, (uint16_t)ulen);
	memcpy(q + UDP_HLEN, o->payload, n);
	if (o->len == o->full_len) {
		uint16_t s = inany_is4(&o->src)
			? csum_l4_4(o->src.v4m.a4, o->dst.v4m.a4, IPPROTO_UDP,
				    q, UDP_HLEN + n)
			: csum_l4_6(&o->src.a6, &o->dst.a6, IPPROTO_UDP, q,
				    UDP_HLEN + n);
		wr16(q + UDP_OFF_CSUM, s ? s : 0xffff);
	}
	return UDP_HLEN + n;
}

/* quote() - what the error quotes of the guest's datagram after the IP
 * header: UDP header and payload, or the echo message as it was. */
static size_t quote(uint8_t *q, size_t max, const struct icmp_err_orig *o)
{
	size_t n = MIN(o->len, max);

	if (!o->echo)
		return quote_udp(q, max, o);
	memcpy(q, o->payload, n);
	return n;
}

bool icmp_err_to_guest(struct ctx *c, const struct icmp_err *e,
		       const struct icmp_err_orig *o)
{
	uint8_t buf[ICMP6_HLEN + ICMP6_QUOTE_MAX], type = 0, code = 0;
	bool v6 = !inany_is4(&o->src);
	size_t ulen = (o->echo ? 0 : UDP_HLEN) + o->full_len, n;
	uint8_t proto = !o->echo ? IPPROTO_UDP
			: v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
	uint32_t mtu = 0;
	union inany src;

	if (!(v6 ? map6(e, &type, &code, &mtu) : map4(e, &type, &code, &mtu)))
		return false;
	src = reporter(c, e, o);
	memset(buf, 0, ICMP_HLEN);
	buf[ICMP_OFF_TYPE] = type;
	buf[ICMP_OFF_CODE] = code;
	if (v6) {
		uint8_t *q = ip6_build(buf + ICMP6_HLEN, &o->src.a6, &o->dst.a6,
				       proto, MIN(ulen, 65535u), 64);

		if (type == 2)
			wr32(buf + ICMP_OFF_MTU6, mtu);
		n = quote(q, ICMP6_QUOTE_MAX - IP6_HLEN, o);
		return tap_send_ip6(c, &src.a6, &o->src.a6, IPPROTO_ICMPV6,
				    buf, ICMP6_HLEN + IP6_HLEN + n);
	}
	uint8_t *q = ip4_build(buf + ICMP_HLEN, o->src.v4m.a4, o->dst.v4m.a4,
			       proto, MIN(ulen, 65535u - IP4_HLEN), 0);

	if (code == 4)
		wr16(buf + ICMP_OFF_MTU4, (uint16_t)MIN(mtu, 65535u));
	n = quote(q, ICMP4_QUOTE_MAX - IP4_HLEN, o);
	return tap_send_ip4(c, src.v4m.a4, o->src.v4m.a4, IPPROTO_ICMP, buf,
			    ICMP_HLEN + IP4_HLEN + n);
}
