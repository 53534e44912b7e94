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

	if (recv(k->fd, req, sizeof(req), 0) < (ssize_t)sizeof(k->req))
		return NULL;
	memcpy(&k->req, req, sizeof(k->req));
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
