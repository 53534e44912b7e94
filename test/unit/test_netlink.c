/* test_netlink.c - the rtnetlink client against a fake kernel.
 *
 * A thread on the other end of a datagram socketpair plays the kernel: it
 * reads one request, then sends the replies a test scripted (with the
 * request's sequence number unless told otherwise). This drives every
 * length check in netlink.c with malformed and hostile replies.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "netlink.h"
#include "unit.h"

#define FK_MAX	4
#define FK_BUF	40000

/* One scripted reply datagram, built with the fk_* helpers. */
struct fk_dgram {
	uint8_t buf[FK_BUF] __attribute__((aligned(4)));
	size_t len;
};

struct fake_kernel {
	int fd;
	struct fk_dgram d[FK_MAX];
	int n;
	bool stale_seq;			/* reply with a wrong seq first */
	struct nlmsghdr req;		/* header of the request seen */
	uint8_t reqbuf[4096] __attribute__((aligned(4)));	/* all of it */
	ssize_t reqlen;
	pthread_t th;
};

/* fk_msg() - start a message of type in datagram d; returns its header. */
static struct nlmsghdr *fk_msg(struct fk_dgram *d, uint16_t type,
			       const void *fixed, size_t flen)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)(d->buf + d->len);

	memset(nh, 0, NLMSG_SPACE(flen));
	nh->nlmsg_len = NLMSG_LENGTH(flen);
	nh->nlmsg_type = type;
	if (flen)
		memcpy(NLMSG_DATA(nh), fixed, flen);
	return nh;
}

/* fk_attr() - append an attribute to message nh. */
static void fk_attr(struct nlmsghdr *nh, uint16_t type, const void *p,
		    size_t len)
{
	struct rtattr *rta = (struct rtattr *)((uint8_t *)nh +
					       NLMSG_ALIGN(nh->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), p, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_SPACE(len);
}

/* fk_end() - close message nh in d. */
static void fk_end(struct fk_dgram *d, struct nlmsghdr *nh)
{
	d->len += NLMSG_ALIGN(nh->nlmsg_len);
}

static void fk_done(struct fk_dgram *d)
{
	fk_end(d, fk_msg(d, NLMSG_DONE, NULL, 0));
}

static void fk_ack(struct fk_dgram *d, int error)
{
	struct nlmsgerr e = { .error = error };

	fk_end(d, fk_msg(d, NLMSG_ERROR, &e, sizeof(e)));
}

/* fk_route4() - a default IPv4 route message in table, with oif/gw. */
static struct nlmsghdr *fk_route4(struct fk_dgram *d, uint8_t table,
				  uint32_t oif, const char *gw)
{
	struct rtmsg r = { .rtm_family = AF_INET, .rtm_table = table,
			   .rtm_type = RTN_UNICAST };
	struct nlmsghdr *nh = fk_msg(d, RTM_NEWROUTE, &r, sizeof(r));
	struct in_addr a;

	if (oif)
		fk_attr(nh, RTA_OIF, &oif, sizeof(oif));
	if (gw) {
		inet_pton(AF_INET, gw, &a);
		fk_attr(nh, RTA_GATEWAY, &a, sizeof(a));
	}
	return nh;
}

static void *fk_thread(void *arg)
{
	struct fake_kernel *k = arg;
	uint8_t req[4096] __attribute__((aligned(4)));
	int i;

	k->reqlen = recv(k->fd, req, sizeof(req), 0);
	if (k->reqlen < (ssize_t)sizeof(k->req))
		return NULL;
	memcpy(&k->req, req, sizeof(k->req));
	memcpy(k->reqbuf, req, (size_t)k->reqlen);
	if (k->stale_seq) {
		struct fk_dgram s = { .len = 0 };
		struct nlmsghdr *nh = fk_msg(&s, NLMSG_ERROR, NULL, 0);

		nh->nlmsg_seq = k->req.nlmsg_seq + 1;
		fk_end(&s, nh);
		send(k->fd, s.buf, s.len, 0);
	}
	for (i = 0; i < k->n; i++) {
		size_t off = 0;

		/* Stamp the request's seq on every whole message. */
		while (off + sizeof(struct nlmsghdr) <= k->d[i].len) {
			struct nlmsghdr *nh = (void *)(k->d[i].buf + off);

			nh->nlmsg_seq = k->req.nlmsg_seq;
			if (nh->nlmsg_len < sizeof(*nh))
				break;
			off += NLMSG_ALIGN(nh->nlmsg_len);
		}
		send(k->fd, k->d[i].buf, k->d[i].len, 0);
	}
	shutdown(k->fd, SHUT_WR);	/* a reader wanting more sees EOF */
	return NULL;
}

/* fk_start() - socketpair and fake-kernel thread; returns ferry's fd. */
static int fk_start(struct fake_kernel *k)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return -1;
	k->fd = sv[1];
	pthread_create(&k->th, NULL, fk_thread, k);
	return sv[0];
}

static void fk_stop(struct fake_kernel *k, int fd)
{
	close(fd);
	pthread_join(k->th, NULL);
	close(k->fd);
}

static struct fake_kernel *fk_new(void)
{
	static struct fake_kernel k;

	memset(&k, 0, sizeof(k));
	return &k;
}

TEST(netlink_default_route_skips_other_tables)
{
	struct fake_kernel *k = fk_new();
	unsigned int ifindex = 0;
	struct in_addr gw;
	int fd, rc;

	fk_end(&k->d[0], fk_route4(&k->d[0], RT_TABLE_LOCAL, 9, "192.0.2.9"));
	fk_end(&k->d[0], fk_route4(&k->d[0], RT_TABLE_MAIN, 3,
				   "198.51.100.1"));
	fk_end(&k->d[0], fk_route4(&k->d[0], RT_TABLE_MAIN, 4, "192.0.2.4"));
	fk_done(&k->d[0]);
	k->n = 1;
	k->stale_seq = true;
	fd = fk_start(k);
	rc = nl_default_route(fd, AF_INET, 0, &ifindex, &gw);
	fk_stop(k, fd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(k->req.nlmsg_type, RTM_GETROUTE);
	CHECK(k->req.nlmsg_flags & NLM_F_DUMP);
	CHECK_EQ(ifindex, 3);
	CHECK_EQ(ntohl(gw.s_addr), 0xc6336401);
}

TEST(netlink_default_route_filter_and_none)
{
	struct fake_kernel *k = fk_new();
	unsigned int ifindex = 0;
	struct in_addr gw;
	int fd, rc;

	fk_end(&k->d[0], fk_route4(&k->d[0], RT_TABLE_MAIN, 3, "198.51.100.1"));
	fk_done(&k->d[0]);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_default_route(fd, AF_INET, 5, &ifindex, &gw);
	fk_stop(k, fd);
	CHECK_EQ(rc, -ENOENT);
}

TEST(netlink_multipath_highest_weight)
{
	struct fake_kernel *k = fk_new();
	uint8_t mp[64] __attribute__((aligned(4)));
	struct rtnexthop *h1 = (void *)mp, *h2;
	struct rtattr *a;
	struct nlmsghdr *nh;
	unsigned int ifindex = 0;
	struct in_addr gw, g2;
	int fd, rc;

	memset(mp, 0, sizeof(mp));
	h1->rtnh_len = sizeof(*h1);
	h1->rtnh_hops = 1;
	h1->rtnh_ifindex = 7;
	h2 = RTNH_NEXT(h1);
	h2->rtnh_hops = 5;
	h2->rtnh_ifindex = 8;
	a = RTNH_DATA(h2);
	a->rta_type = RTA_GATEWAY;
	a->rta_len = RTA_LENGTH(4);
	inet_pton(AF_INET, "192.0.2.8", &g2);
	memcpy(RTA_DATA(a), &g2, 4);
	h2->rtnh_len = (unsigned short)RTNH_LENGTH(RTA_SPACE(4));
	nh = fk_route4(&k->d[0], RT_TABLE_MAIN, 0, NULL);
	fk_attr(nh, RTA_MULTIPATH, mp, RTNH_ALIGN(h1->rtnh_len) + h2->rtnh_len);
	fk_end(&k->d[0], nh);
	fk_done(&k->d[0]);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_default_route(fd, AF_INET, 0, &ifindex, &gw);
	fk_stop(k, fd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(ifindex, 8);
	CHECK_EQ(gw.s_addr, g2.s_addr);
}

TEST(netlink_bad_lengths_refused)
{
	struct fake_kernel *k = fk_new();
	unsigned int ifindex = 0;
	struct in_addr gw;
	struct nlmsghdr *nh;
	struct rtattr *rta;
	int fd, rc;

	/* An attribute claiming more than its message holds: ignored. */
	nh = fk_route4(&k->d[0], RT_TABLE_MAIN, 3, NULL);
	rta = (struct rtattr *)((uint8_t *)nh + NLMSG_LENGTH(sizeof(struct rtmsg)));
	rta->rta_len = 200;
	fk_end(&k->d[0], nh);
	/* A message claiming more than the datagram holds: an error. */
	nh = fk_route4(&k->d[0], RT_TABLE_MAIN, 3, "198.51.100.1");
	k->d[0].len += NLMSG_ALIGN(nh->nlmsg_len);
	nh->nlmsg_len += 64;
	k->n = 1;
	fd = fk_start(k);
	rc = nl_default_route(fd, AF_INET, 0, &ifindex, &gw);
	fk_stop(k, fd);
	CHECK_EQ(rc, -EBADMSG);
}

TEST(netlink_oversized_reply_is_error)
{
	struct fake_kernel *k = fk_new();
	unsigned int ifindex;
	struct in_addr gw;
	struct nlmsghdr *nh;
	int fd, rc;

	nh = fk_msg(&k->d[0], NLMSG_NOOP, NULL, 0);
	nh->nlmsg_len = 36000;
	k->d[0].len = 36000;
	k->n = 1;
	fd = fk_start(k);
	rc = nl_default_route(fd, AF_INET, 0, &ifindex, &gw);
	fk_stop(k, fd);
	CHECK_EQ(rc, -EMSGSIZE);
}

TEST(netlink_acks_and_errors)
{
	struct fake_kernel *k = fk_new();
	struct in_addr a;
	struct nlmsghdr *nh;
	int fd, rc;

	inet_pton(AF_INET, "198.51.100.2", &a);
	fk_ack(&k->d[0], -EEXIST);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_addr_add(fd, AF_INET, 2, &a, 24);
	fk_stop(k, fd);
	CHECK_EQ(rc, -EEXIST);
	CHECK_EQ(k->req.nlmsg_type, RTM_NEWADDR);
	CHECK(k->req.nlmsg_flags & NLM_F_ACK);

	k = fk_new();
	fk_ack(&k->d[0], 0);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_route_add_default(fd, AF_INET, 2, &a);
	fk_stop(k, fd);
	CHECK_EQ(rc, 0);

	/* An error message too short to hold struct nlmsgerr. */
	k = fk_new();
	nh = fk_msg(&k->d[0], NLMSG_ERROR, NULL, 0);
	fk_end(&k->d[0], nh);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_link_set(fd, 2, NULL, 1500, true);
	fk_stop(k, fd);
	CHECK_EQ(rc, -EBADMSG);
}

TEST(netlink_link_get_checks_attributes)
{
	struct fake_kernel *k = fk_new();
	struct ifinfomsg ifi = { .ifi_index = 2 };
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };
	char name[IFNAMSIZ] = "unset", bad[4] = { 'a', 'b', 'c', 'd' };
	uint32_t mtu = 65520;
	unsigned int got_mtu = 0;
	uint8_t got_mac[6] = { 0 };
	struct nlmsghdr *nh;
	int fd, rc;

	nh = fk_msg(&k->d[0], RTM_NEWLINK, &ifi, sizeof(ifi));
	fk_attr(nh, IFLA_IFNAME, bad, sizeof(bad));	/* no terminator */
	fk_attr(nh, IFLA_MTU, &mtu, 2);			/* too short */
	fk_attr(nh, IFLA_ADDRESS, mac, 6);
	fk_end(&k->d[0], nh);
	fk_ack(&k->d[0], 0);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_link_get(fd, 2, name, &got_mtu, got_mac);
	fk_stop(k, fd);
	CHECK_EQ(rc, 0);
	CHECK(!strcmp(name, ""));
	CHECK_EQ(got_mtu, 0);
	CHECK(!memcmp(got_mac, mac, 6));
}

/* --- address and route tables (nl_addr_dump(), nl_route_dump()) ------ */

/* fk_addr() - an RTM_NEWADDR message: family, ifindex, scope, prefix and
 * the address as IFA_ADDRESS (and IFA_LOCAL if local is non-NULL). */
static struct nlmsghdr *fk_addr(struct fk_dgram *d, int family,
				uint32_t ifindex, uint8_t scope, uint8_t plen,
				const char *addr, const char *local)
{
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family,
				 .ifa_prefixlen = plen, .ifa_scope = scope,
				 .ifa_index = ifindex };
	struct nlmsghdr *nh = fk_msg(d, RTM_NEWADDR, &ifa, sizeof(ifa));
	uint8_t a[16];

	inet_pton(family, addr, a);
	fk_attr(nh, IFA_ADDRESS, a, family == AF_INET ? 4 : 16);
	if (local) {
		inet_pton(family, local, a);
		fk_attr(nh, IFA_LOCAL, a, family == AF_INET ? 4 : 16);
	}
	return nh;
}

/* addr_is() - tab entry a holds text address s with prefix length plen. */
static bool addr_is(const struct nl_addr *a, int family, const char *s,
		    int plen)
{
	uint8_t b[16];

	inet_pton(family, s, b);
	return !memcmp(a->addr, b, family == AF_INET ? 4 : 16) &&
	       a->prefix_len == plen;
}

TEST(netlink_addr_dump_keeps_only_wellformed_global)
{
	struct fake_kernel *k = fk_new();
	struct fk_dgram *d = &k->d[0];
	struct nl_addr tab[8];
	uint32_t dadfailed = IFA_F_DADFAILED;
	uint16_t shortv = 1;
	struct nlmsghdr *nh;
	struct rtattr *rta;
	int fd, n;

	fk_end(d, fk_addr(d, AF_INET, 2, RT_SCOPE_UNIVERSE, 24,
			  "198.51.100.2", NULL));
	/* Point-to-point: IFA_LOCAL is ours, IFA_ADDRESS the peer. */
	fk_end(d, fk_addr(d, AF_INET, 2, RT_SCOPE_UNIVERSE, 32,
			  "192.0.2.1", "203.0.113.7"));
	fk_end(d, fk_addr(d, AF_INET, 3, 0, 24, "192.0.2.3", NULL));
	fk_end(d, fk_addr(d, AF_INET, 2, RT_SCOPE_LINK, 24, "192.0.2.4",
			  NULL));
	fk_end(d, fk_addr(d, AF_INET, 2, 0, 16, "169.254.1.1", NULL));
	fk_end(d, fk_addr(d, AF_INET, 2, 0, 33, "192.0.2.5", NULL));
	nh = fk_addr(d, AF_INET, 2, 0, 24, "192.0.2.6", NULL);
	fk_attr(nh, IFA_FLAGS, &dadfailed, sizeof(dadfailed));
	fk_end(d, nh);
	nh = fk_addr(d, AF_INET, 2, 0, 24, "192.0.2.7", NULL);
	fk_attr(nh, IFA_FLAGS, &shortv, sizeof(shortv));	/* 2 bytes */
	fk_end(d, nh);
	/* An address attribute of 3 bytes. */
	nh = fk_addr(d, AF_INET, 2, 0, 24, "192.0.2.8", NULL);
	rta = (struct rtattr *)((uint8_t *)nh + NLMSG_LENGTH(sizeof(struct ifaddrmsg)));
	rta->rta_len = RTA_LENGTH(3);
	fk_end(d, nh);
	/* An attribute running past its message. */
	nh = fk_addr(d, AF_INET, 2, 0, 24, "192.0.2.9", NULL);
	rta = (struct rtattr *)((uint8_t *)nh + NLMSG_LENGTH(sizeof(struct ifaddrmsg)));
	rta->rta_len = 64;
	fk_end(d, nh);
	/* Bytes after the last attribute that are no attribute. */
	nh = fk_addr(d, AF_INET, 2, 0, 24, "192.0.2.10", NULL);
	nh->nlmsg_len += 2;
	fk_end(d, nh);
	/* A message too short for struct ifaddrmsg. */
	nh = fk_msg(d, RTM_NEWADDR, NULL, 0);
	nh->nlmsg_len = NLMSG_LENGTH(4);
	fk_end(d, nh);
	fk_done(d);
	k->n = 1;
	fd = fk_start(k);
	n = nl_addr_dump(fd, AF_INET, 2, tab, 8);
	fk_stop(k, fd);
	CHECK_EQ(n, 2);
	CHECK_EQ(k->req.nlmsg_type, RTM_GETADDR);
	CHECK(k->req.nlmsg_flags & NLM_F_DUMP);
	CHECK(addr_is(&tab[0], AF_INET, "198.51.100.2", 24));
	CHECK(addr_is(&tab[1], AF_INET, "203.0.113.7", 32));
}

TEST(netlink_addr_dump_bounded_and_ipv6_link_local)
{
	struct fake_kernel *k = fk_new();
	struct fk_dgram *d = &k->d[0];
	struct nl_addr tab[4];
	int fd, n;

	memset(tab, 0xa5, sizeof(tab));
	fk_end(d, fk_addr(d, AF_INET6, 2, 0, 64, "fe80::1", NULL));
	fk_end(d, fk_addr(d, AF_INET6, 2, 0, 64, "2001:db8::2", NULL));
	fk_end(d, fk_addr(d, AF_INET6, 2, 0, 129, "2001:db8::3", NULL));
	fk_end(d, fk_addr(d, AF_INET6, 2, 0, 64, "2001:db8:1::7", NULL));
	fk_end(d, fk_addr(d, AF_INET6, 2, 0, 48, "2001:db8:2::7", NULL));
	fk_end(d, fk_addr(d, AF_INET6, 2, 0, 128, "2001:db8:3::7", NULL));
	/* An IPv4 message in an IPv6 dump: not ours. */
	fk_end(d, fk_addr(d, AF_INET, 2, 0, 24, "192.0.2.1", NULL));
	fk_done(d);
	k->n = 1;
	fd = fk_start(k);
	n = nl_addr_dump(fd, AF_INET6, 2, tab, 3);
	fk_stop(k, fd);
	CHECK_EQ(n, 4);				/* four qualify ... */
	CHECK(addr_is(&tab[0], AF_INET6, "2001:db8::2", 64));
	CHECK(addr_is(&tab[1], AF_INET6, "2001:db8:1::7", 64));
	CHECK(addr_is(&tab[2], AF_INET6, "2001:db8:2::7", 48));
	CHECK_EQ(tab[3].prefix_len, 0xa5);	/* ... three fit */
}

TEST(netlink_addr_dump_cut_datagram_is_error)
{
	struct fake_kernel *k = fk_new();
	struct nl_addr tab[4];
	int fd, n;

	fk_end(&k->d[0], fk_addr(&k->d[0], AF_INET, 2, 0, 24, "192.0.2.1",
				 NULL));
	/* Second datagram: a message cut short by the datagram's end. */
	fk_end(&k->d[1], fk_addr(&k->d[1], AF_INET, 2, 0, 24, "192.0.2.2",
				 NULL));
	k->d[1].len -= 6;
	k->n = 2;
	fd = fk_start(k);
	n = nl_addr_dump(fd, AF_INET, 2, tab, 4);
	fk_stop(k, fd);
	CHECK_EQ(n, -EBADMSG);
}

/* fk_route() - a unicast route message: family, table, dst/len (dst NULL:
 * no RTA_DST), oif (0: none), gateway (NULL: none). */
static struct nlmsghdr *fk_route(struct fk_dgram *d, int family,
				 uint8_t table, const char *dst, uint8_t len,
				 uint32_t oif, const char *gw)
{
	struct rtmsg r = { .rtm_family = (uint8_t)family, .rtm_table = table,
			   .rtm_type = RTN_UNICAST, .rtm_dst_len = len,
			   .rtm_protocol = RTPROT_STATIC };
	struct nlmsghdr *nh = fk_msg(d, RTM_NEWROUTE, &r, sizeof(r));
	size_t alen = family == AF_INET ? 4 : 16;
	uint8_t a[16];

	if (dst) {
		inet_pton(family, dst, a);
		fk_attr(nh, RTA_DST, a, alen);
	}
	if (oif)
		fk_attr(nh, RTA_OIF, &oif, sizeof(oif));
	if (gw) {
		inet_pton(family, gw, a);
		fk_attr(nh, RTA_GATEWAY, a, alen);
	}
	return nh;
}

/* route_is() - tab entry r: dst/len via gw ("" for none). */
static bool route_is(const struct nl_route *r, int family, const char *dst,
		     int len, const char *gw)
{
	uint8_t a[16] = { 0 }, g[16] = { 0 };

	inet_pton(family, dst, a);
	if (*gw)
		inet_pton(family, gw, g);
	return r->dst_len == len && !memcmp(r->dst, a, 16) &&
	       !memcmp(r->gw, g, 16);
}

/* fk_multipath() - RTA_MULTIPATH: hop 1 (weight 1) on oif1 via gw1, hop
 * 2 (weight 5) on oif2 via gw2; bad: hop 2 claims more than there is. */
static void fk_multipath(struct nlmsghdr *nh, uint32_t oif1, const char *gw1,
			 uint32_t oif2, const char *gw2, bool bad)
{
	uint8_t mp[64] __attribute__((aligned(4)));
	struct rtnexthop *h[2] = { (void *)mp, NULL };
	const char *gw[2] = { gw1, gw2 };
	uint32_t oif[2] = { oif1, oif2 };
	size_t len = 0;
	int i;

	memset(mp, 0, sizeof(mp));
	for (i = 0; i < 2; i++) {
		struct rtattr *a;

		h[i] = (void *)(mp + len);
		h[i]->rtnh_hops = i ? 4 : 0;
		h[i]->rtnh_ifindex = (int)oif[i];
		a = RTNH_DATA(h[i]);
		a->rta_type = RTA_GATEWAY;
		a->rta_len = RTA_LENGTH(4);
		inet_pton(AF_INET, gw[i], RTA_DATA(a));
		h[i]->rtnh_len = (unsigned short)RTNH_LENGTH(RTA_SPACE(4));
		len += RTNH_ALIGN(h[i]->rtnh_len);
	}
	if (bad)
		h[1]->rtnh_len += 8;
	fk_attr(nh, RTA_MULTIPATH, mp, len);
}

TEST(netlink_route_dump_keeps_only_wellformed)
{
	struct fake_kernel *k = fk_new();
	struct fk_dgram *d = &k->d[0];
	struct nl_route tab[16];
	uint32_t metric = 50, table = 100;
	uint16_t shortv = 7;
	struct in_addr src;
	struct nlmsghdr *nh;
	int fd, n;

	/* Kept: a gateway route with a metric ... */
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 24, 2,
		      "198.51.100.254");
	fk_attr(nh, RTA_PRIORITY, &metric, sizeof(metric));
	fk_end(d, nh);
	/* ... a device route with a preferred source ... */
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "203.0.113.0", 24, 2, NULL);
	((struct rtmsg *)NLMSG_DATA(nh))->rtm_scope = RT_SCOPE_LINK;
	inet_pton(AF_INET, "203.0.113.7", &src);
	fk_attr(nh, RTA_PREFSRC, &src, 4);
	fk_end(d, nh);
	/* ... and a multipath route through a hop on oif 2. */
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "198.51.100.128", 25, 0,
		      NULL);
	fk_multipath(nh, 2, "198.51.100.3", 9, "198.51.100.9", false);
	fk_end(d, nh);
	/* Left out: default, other interface, other table (field and
	 * attribute), cached, source-specific, not unicast. */
	fk_end(d, fk_route(d, AF_INET, RT_TABLE_MAIN, NULL, 0, 2,
			   "198.51.100.1"));
	fk_end(d, fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 25, 3,
			   NULL));
	fk_end(d, fk_route(d, AF_INET, RT_TABLE_LOCAL, "192.0.2.0", 26, 2,
			   NULL));
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 27, 2, NULL);
	fk_attr(nh, RTA_TABLE, &table, sizeof(table));
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 28, 2, NULL);
	((struct rtmsg *)NLMSG_DATA(nh))->rtm_flags = RTM_F_CLONED;
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 29, 2, NULL);
	((struct rtmsg *)NLMSG_DATA(nh))->rtm_src_len = 8;
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 30, 2, NULL);
	((struct rtmsg *)NLMSG_DATA(nh))->rtm_type = RTN_BLACKHOLE;
	fk_end(d, nh);
	/* Malformed: prefix too long, RTA_DST missing or 3 bytes, short
	 * metric, RTA_VIA, a multipath hop running past its attribute,
	 * a multipath route with no hop on our interface. */
	fk_end(d, fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.0", 33, 2,
			   NULL));
	fk_end(d, fk_route(d, AF_INET, RT_TABLE_MAIN, NULL, 24, 2, NULL));
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, NULL, 24, 2, NULL);
	fk_attr(nh, RTA_DST, "\xc0\x00\x02", 3);
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.64", 26, 2, NULL);
	fk_attr(nh, RTA_PRIORITY, &shortv, sizeof(shortv));
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.128", 26, 2, NULL);
	fk_attr(nh, RTA_VIA, "\x0a\x00\x20\x01\x0d\xb8", 6);
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.192", 26, 0, NULL);
	fk_multipath(nh, 2, "198.51.100.3", 2, "198.51.100.4", true);
	fk_end(d, nh);
	nh = fk_route(d, AF_INET, RT_TABLE_MAIN, "192.0.2.224", 27, 0, NULL);
	fk_multipath(nh, 7, "198.51.100.3", 9, "198.51.100.4", false);
	fk_end(d, nh);
	fk_done(d);
	k->n = 1;
	fd = fk_start(k);
	n = nl_route_dump(fd, AF_INET, 2, tab, 16);
	fk_stop(k, fd);
	CHECK_EQ(n, 3);
	CHECK_EQ(k->req.nlmsg_type, RTM_GETROUTE);
	CHECK(route_is(&tab[0], AF_INET, "192.0.2.0", 24, "198.51.100.254"));
	CHECK_EQ(tab[0].metric, 50);
	CHECK_EQ(tab[0].protocol, RTPROT_STATIC);
	CHECK(route_is(&tab[1], AF_INET, "203.0.113.0", 24, ""));
	CHECK_EQ(tab[1].scope, RT_SCOPE_LINK);
	CHECK(!memcmp(tab[1].prefsrc, &src, 4));
	CHECK(route_is(&tab[2], AF_INET, "198.51.100.128", 25,
		       "198.51.100.3"));
}

TEST(netlink_route_dump_ipv6_bounded)
{
	struct fake_kernel *k = fk_new();
	struct fk_dgram *d = &k->d[0];
	struct nl_route tab[2];
	int fd, n;

	memset(tab, 0xa5, sizeof(tab));
	fk_end(d, fk_route(d, AF_INET6, RT_TABLE_MAIN, "fe80::", 64, 2, NULL));
	fk_end(d, fk_route(d, AF_INET6, RT_TABLE_MAIN, "ff00::", 8, 2, NULL));
	fk_end(d, fk_route(d, AF_INET6, RT_TABLE_MAIN, "2001:db8::", 64, 2,
			   NULL));
	fk_end(d, fk_route(d, AF_INET6, RT_TABLE_MAIN, "2001:db8:5::", 48, 2,
			   "2001:db8::fe"));
	fk_end(d, fk_route(d, AF_INET6, RT_TABLE_MAIN, "2001:db8:6::", 129, 2,
			   NULL));
	fk_end(d, fk_route(d, AF_INET6, RT_TABLE_MAIN, "2001:db8:7::", 64, 2,
			   NULL));
	fk_done(d);
	k->n = 1;
	fd = fk_start(k);
	n = nl_route_dump(fd, AF_INET6, 2, tab, 1);
	fk_stop(k, fd);
	CHECK_EQ(n, 3);
	CHECK(route_is(&tab[0], AF_INET6, "2001:db8::", 64, ""));
	CHECK_EQ(tab[1].dst_len, 0xa5);		/* untouched past max */
}

/* req_attr() - attribute type of the captured request, or NULL. */
static const struct rtattr *req_attr(const struct fake_kernel *k,
				     size_t fixed, uint16_t type)
{
	const struct nlmsghdr *nh = (const void *)k->reqbuf;
	const struct rtattr *rta = (const void *)(k->reqbuf +
						  NLMSG_SPACE(fixed));
	int len = (int)nh->nlmsg_len - (int)NLMSG_SPACE(fixed);

	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == type)
			return rta;
	return NULL;
}

TEST(netlink_route_add_request)
{
	struct fake_kernel *k = fk_new();
	struct nl_route r = { .dst_len = 48, .scope = RT_SCOPE_UNIVERSE,
			      .metric = 7 };
	const struct rtmsg *rtm = (const void *)(k->reqbuf +
						 NLMSG_HDRLEN);
	const struct rtattr *a;
	uint32_t v;
	int fd, rc;

	inet_pton(AF_INET6, "2001:db8:5::", r.dst);
	inet_pton(AF_INET6, "2001:db8::fe", r.gw);
	fk_ack(&k->d[0], 0);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_route_add(fd, AF_INET6, 4, &r);
	fk_stop(k, fd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(k->req.nlmsg_type, RTM_NEWROUTE);
	CHECK(k->req.nlmsg_flags & NLM_F_EXCL);
	CHECK_EQ(rtm->rtm_dst_len, 48);
	CHECK_EQ(rtm->rtm_table, RT_TABLE_MAIN);
	CHECK_EQ(rtm->rtm_protocol, RTPROT_BOOT);	/* 0 means boot */
	CHECK_EQ(rtm->rtm_flags, 0);
	CHECK((a = req_attr(k, sizeof(*rtm), RTA_DST)) &&
	      !memcmp(RTA_DATA(a), r.dst, 16));
	CHECK((a = req_attr(k, sizeof(*rtm), RTA_GATEWAY)) &&
	      !memcmp(RTA_DATA(a), r.gw, 16));
	CHECK((a = req_attr(k, sizeof(*rtm), RTA_OIF)));
	memcpy(&v, RTA_DATA(a), 4);
	CHECK_EQ(v, 4);
	CHECK((a = req_attr(k, sizeof(*rtm), RTA_PRIORITY)));
	memcpy(&v, RTA_DATA(a), 4);
	CHECK_EQ(v, 7);
	CHECK(!req_attr(k, sizeof(*rtm), RTA_PREFSRC));	/* zero: none */
}

TEST(netlink_default_route_source_specific_still_found)
{
	struct fake_kernel *k = fk_new();
	unsigned int ifindex = 0;
	struct nlmsghdr *nh;
	struct in_addr gw;
	int fd, rc;

	/* Left out of copies (nl_route_dump()), but as before a default. */
	nh = fk_route4(&k->d[0], RT_TABLE_MAIN, 3, "198.51.100.1");
	((struct rtmsg *)NLMSG_DATA(nh))->rtm_src_len = 24;
	fk_end(&k->d[0], nh);
	fk_done(&k->d[0]);
	k->n = 1;
	fd = fk_start(k);
	rc = nl_default_route(fd, AF_INET, 0, &ifindex, &gw);
	fk_stop(k, fd);
	CHECK_EQ(rc, 0);
	CHECK_EQ(ifindex, 3);
}

/* fk_neigh() - a neighbour entry on ifindex in state, to addr, with a
 * link-layer address of mlen bytes of mac (0: none). */
static struct nlmsghdr *fk_neigh(struct fk_dgram *d, int family,
				 int ifindex, uint16_t state,
				 const char *addr, const uint8_t *mac,
				 size_t mlen)
{
	struct ndmsg nd = { .ndm_family = (uint8_t)family,
			    .ndm_ifindex = ifindex, .ndm_state = state };
	struct nlmsghdr *nh = fk_msg(d, RTM_NEWNEIGH, &nd, sizeof(nd));
	uint8_t a[16];

	inet_pton(family, addr, a);
	fk_attr(nh, NDA_DST, a, family == AF_INET ? 4 : 16);
	if (mac && mlen)
		fk_attr(nh, NDA_LLADDR, mac, mlen);
	return nh;
}

/* Only usable entries of the interface with a 6-byte unicast MAC are
 * kept; the interface goes as NDA_IFINDEX (strict checking refuses it in
 * the header); the count tells how many there were beyond the table. */
TEST(netlink_neigh_dump_keeps_usable_unicast)
{
	static const uint8_t mac[6] = { 0x02, 0, 0x5e, 0x10, 0, 7 };
	static const uint8_t mcast[6] = { 0x01, 0, 0x5e, 0, 0, 1 };
	static const uint8_t zero[6];
	struct fake_kernel *k = fk_new();
	struct fk_dgram *d = &k->d[0];
	const struct rtattr *rta;
	const struct ndmsg *req;
	struct nl_neigh tab[1];
	uint32_t ifi;
	int fd, n;

	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_REACHABLE, "198.51.100.7",
			   mac, 6));
	fk_end(d, fk_neigh(d, AF_INET, 3, NUD_REACHABLE, "198.51.100.8",
			   mac, 6));				/* other link */
	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_FAILED, "198.51.100.9",
			   mac, 6));
	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_STALE, "198.51.100.10",
			   mcast, 6));
	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_STALE, "198.51.100.11",
			   zero, 6));
	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_STALE, "198.51.100.12",
			   mac, 4));				/* not Ethernet */
	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_INCOMPLETE, "198.51.100.13",
			   NULL, 0));
	fk_end(d, fk_neigh(d, AF_INET, 2, NUD_PERMANENT, "198.51.100.14",
			   mac, 6));				/* beyond max */
	fk_done(d);
	k->n = 1;
	fd = fk_start(k);
	n = nl_neigh_dump(fd, AF_INET, 2, tab, 1);
	fk_stop(k, fd);
	CHECK_EQ(n, 2);
	CHECK_EQ(k->req.nlmsg_type, RTM_GETNEIGH);
	CHECK(k->req.nlmsg_flags & NLM_F_DUMP);
	req = (const struct ndmsg *)(k->reqbuf + NLMSG_HDRLEN);
	CHECK_EQ(req->ndm_ifindex, 0);
	rta = (const struct rtattr *)(k->reqbuf +
				      NLMSG_LENGTH(sizeof(struct ndmsg)));
	CHECK_EQ(rta->rta_type, NDA_IFINDEX);
	memcpy(&ifi, RTA_DATA(rta), sizeof(ifi));
	CHECK_EQ(ifi, 2);
	CHECK(!memcmp(tab[0].mac, mac, 6));
	CHECK(!memcmp(tab[0].addr, "\xc6\x33\x64\x07", 4));
}
