/* netlink.c - a small rtnetlink client, libc only.
 *
 * Theory of operation: every operation is one request on a NETLINK_ROUTE
 * socket, answered synchronously. Requests that change something carry
 * NLM_F_ACK and end at the kernel's NLMSG_ERROR acknowledgement (error 0
 * means success); dumps (NLM_F_DUMP) end at NLMSG_DONE. nl_xfer() owns
 * that exchange: it matches sequence numbers, skips stray messages, checks
 * every message and attribute length with NLMSG_OK()/RTA_OK() before use,
 * and hands each reply message of the request to a parser callback.
 *
 * Buffers are fixed-size and on the stack: requests are built in a small
 * struct nl_msg with bounds-checked attribute appends; replies are read
 * into NL_RX_SIZE bytes, the largest dump chunk the kernel produces, and a
 * truncated datagram is an error rather than a silent cut.
 *
 * A socket stays bound to the network namespace it was created in, so the
 * same code configures the host (ferry's own namespace) and the guest (a
 * socket opened by ns.c's helper task, nsexec.c).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include "netlink.h"
#include "util.h"

/* seccomp(setup): bind close setsockopt socket
 *   (the guest's and host's configuration, start-up only) */
/* seccomp(all): recvmsg sendto
 *   (also after start-up: neigh.c's neighbour dump on a miss) */

#define NL_RX_SIZE	32768	/* kernel dump chunks are at most 32 KiB */
#define NL_TX_ATTRS	256	/* room for a request's attributes */

/* A request under construction: header, family message, attributes. */
struct nl_msg {
	struct nlmsghdr nh;
	union {
		struct ifinfomsg ifi;
		struct ifaddrmsg ifa;
		struct rtmsg rtm;
		struct ndmsg ndm;
	};
	uint8_t attrs[NL_TX_ATTRS];
};

/* Reply parser: called once per reply message of the request. */
typedef void (*nl_parse_fn)(const struct nlmsghdr *nh, void *arg);

int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 5 };
	int one = 1, fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	/* A kernel that never answers must not hang start-up. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* Optional: let the kernel filter dumps strictly (Linux >= 4.20). */
	setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	return fd;
}

/* nl_msg_init() - header for a request of type with fixed part size. */
static void nl_msg_init(struct nl_msg *m, uint16_t type, uint16_t flags,
			size_t fixed)
{
	memset(m, 0, sizeof(*m));
	m->nh.nlmsg_len = NLMSG_LENGTH(fixed);
	m->nh.nlmsg_type = type;
	m->nh.nlmsg_flags = NLM_F_REQUEST | flags;
}

/* nl_attr_put() - append one attribute; false if it does not fit. */
static bool nl_attr_put(struct nl_msg *m, uint16_t type, const void *data,
			size_t len)
{
	size_t off = NLMSG_ALIGN(m->nh.nlmsg_len);
	struct rtattr *rta;

	if (off + RTA_SPACE(len) > sizeof(*m))
		return false;
	rta = (struct rtattr *)((uint8_t *)m + off);
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	m->nh.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
	return true;
}

/* nl_reply_error() - error carried by an NLMSG_ERROR message (0 for an
 * acknowledgement), -EBADMSG if it is too short to hold one. */
static int nl_reply_error(const struct nlmsghdr *nh)
{
	const struct nlmsgerr *e = NLMSG_DATA(nh);

	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return -EBADMSG;
	return e->error > 0 ? -e->error : e->error;
}

/* nl_handle() - one reply message: returns 1 if the exchange goes on, 0
 * when it is complete, or -errno (stored in *rc as the final result). */
static int nl_handle(const struct nlmsghdr *nh, uint32_t seq, nl_parse_fn fn,
		     void *arg, int *rc)
{
	if (nh->nlmsg_seq != seq)
		return 1;			/* stale: not ours */
	switch (nh->nlmsg_type) {
	case NLMSG_NOOP:
		return 1;
	case NLMSG_ERROR:
		*rc = nl_reply_error(nh);
		return 0;
	case NLMSG_DONE:
		/* A dump that failed half-way reports the error here. */
		if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
			int e;

			memcpy(&e, NLMSG_DATA(nh), sizeof(e));
			if (e < 0)
				*rc = e;
		}
		return 0;
	default:
		if (fn)
			fn(nh, arg);
		return 1;
	}
}

/* nl_xfer() - send request m and process its replies (see top). Returns
 * 0 or -errno: the kernel's error, or a transport failure. */
static int nl_xfer(int fd, struct nl_msg *m, nl_parse_fn fn, void *arg)
{
	uint8_t buf[NL_RX_SIZE] __attribute__((aligned(NLMSG_ALIGNTO)));
	uint32_t seq;
	int rc = 0;

	random_bytes(&seq, sizeof(seq));
	m->nh.nlmsg_seq = seq;
	/* No address: an unconnected netlink socket sends to the kernel
	 * (and the unit tests can stand in for it with a socketpair). */
	if (send(fd, m, m->nh.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		const struct nlmsghdr *nh;
		ssize_t n = recvmsg(fd, &mh, 0);
		int len;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (!n)			/* no reply, yet the exchange is open */
			return -EBADMSG;
		if (mh.msg_flags & MSG_TRUNC)
			return -EMSGSIZE;
		len = (int)n;
		for (nh = (const struct nlmsghdr *)buf; NLMSG_OK(nh, len);
		     nh = NLMSG_NEXT(nh, len)) {
			if (!nl_handle(nh, seq, fn, arg, &rc))
				return rc;
		}
		if (len)		/* trailing bytes that are no message */
			return -EBADMSG;
	}
}

/* Attribute iteration over the payload of a reply message. */
#define for_each_rta(rta, start, len) \
	for ((rta) = (start); RTA_OK((rta), (len)); \
	     (rta) = RTA_NEXT((rta), (len)))

/* rta_walk_ok() - after for_each_rta(): the attributes filled the payload
 * exactly (only the last one's alignment padding may be missing), so no
 * attribute was cut off or hidden behind a bad length. */
static bool rta_walk_ok(int left)
{
	return left <= 0 && left > -(int)RTA_ALIGNTO;
}

/* fam_alen() - address size of family (AF_INET or AF_INET6). */
static size_t fam_alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* rta_u32() - a u32 attribute's value, false if it is not 4 bytes. */
static bool rta_u32(const struct rtattr *rta, uint32_t *v)
{
	if (RTA_PAYLOAD(rta) != sizeof(*v))
		return false;
	memcpy(v, RTA_DATA(rta), sizeof(*v));
	return true;
}

/* rta_addr() - copy an address attribute of the family's size. */
static bool rta_addr(const struct rtattr *rta, int family, void *addr)
{
	size_t alen = fam_alen(family);

	if (RTA_PAYLOAD(rta) != alen)
		return false;
	memcpy(addr, RTA_DATA(rta), alen);
	return true;
}

/* addr_link_local() - a (fe80::/10 or 169.254.0.0/16) address? */
static bool addr_link_local(int family, const uint8_t *a)
{
	if (family == AF_INET)
		return a[0] == 169 && a[1] == 254;
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* --- routes ----------------------------------------------------------- */

/* route_multipath() - from an RTA_MULTIPATH payload, the next hop with
 * the highest weight, through oif only if oif is non-zero, into *ifindex
 * and gw. Every rtnexthop and its attributes are length-checked: false if
 * the payload is malformed or no next hop qualifies. */
static bool route_multipath(const struct rtattr *mp, int family,
			    unsigned int oif, unsigned int *ifindex,
			    uint8_t *gw)
{
	const struct rtnexthop *rtnh = RTA_DATA(mp);
	int left = (int)RTA_PAYLOAD(mp), best = -1;

	while (left >= (int)sizeof(*rtnh)) {
		uint8_t hop_gw[16] = { 0 };
		const struct rtattr *rta;
		int alen;

		if (rtnh->rtnh_len < sizeof(*rtnh) || rtnh->rtnh_len > left)
			return false;
		alen = rtnh->rtnh_len - (int)RTNH_LENGTH(0);
		for_each_rta(rta, RTNH_DATA(rtnh), alen)
			if (rta->rta_type == RTA_GATEWAY &&
			    !rta_addr(rta, family, hop_gw))
				return false;
		if (!rta_walk_ok(alen))
			return false;
		if (rtnh->rtnh_hops > best &&
		    (!oif || (unsigned int)rtnh->rtnh_ifindex == oif)) {
			best = rtnh->rtnh_hops;
			*ifindex = (unsigned int)rtnh->rtnh_ifindex;
			memcpy(gw, hop_gw, sizeof(hop_gw));
		}
		if ((int)RTNH_ALIGN(rtnh->rtnh_len) >= left)
			break;
		left -= (int)RTNH_ALIGN(rtnh->rtnh_len);
		rtnh = RTNH_NEXT(rtnh);
	}
	return best >= 0;
}

/* route_attrs() - the attributes of a route message into *r, *table and
 * *oif (multipath: see route_multipath(), through want_oif if non-zero).
 * Returns false if one ferry reads has the wrong size, one it cannot
 * express is there (RTA_VIA), RTA_DST is missing though r->dst_len is
 * not zero, or the walk did not end cleanly. */
static bool route_attrs(const struct rtmsg *rtm, int len, int family,
			unsigned int want_oif, struct nl_route *r,
			uint32_t *table, unsigned int *oif)
{
	bool ok = true, has_dst = false;
	const struct rtattr *rta;
	uint32_t v = 0;

	for_each_rta(rta, RTM_RTA(rtm), len) {
		switch (rta->rta_type) {
		case RTA_TABLE:
			ok = ok && rta_u32(rta, table);
			break;
		case RTA_OIF:
			ok = ok && rta_u32(rta, &v);
			*oif = v;
			break;
		case RTA_DST:
			ok = ok && (has_dst = rta_addr(rta, family, r->dst));
			break;
		case RTA_GATEWAY:
			ok = ok && rta_addr(rta, family, r->gw);
			break;
		case RTA_PREFSRC:
			ok = ok && rta_addr(rta, family, r->prefsrc);
			break;
		case RTA_PRIORITY:
			ok = ok && rta_u32(rta, &r->metric);
			break;
		case RTA_MULTIPATH:
			ok = ok && route_multipath(rta, family, want_oif, oif,
						   r->gw);
			break;
		case RTA_VIA:		/* gateway of the other family */
			ok = false;
			break;
		}
	}
	return ok && rta_walk_ok(len) && (has_dst || !r->dst_len);
}

/* route_decode() - an RTM_NEWROUTE message: a unicast route of family in
 * the main table, not cached, leaving through want_oif if that is
 * non-zero, into *r and its output interface *oif. False for anything
 * else, or anything malformed (route_attrs()). */
static bool route_decode(const struct nlmsghdr *nh, int family,
			 unsigned int want_oif, struct nl_route *r,
			 unsigned int *oif)
{
	const struct rtmsg *rtm = NLMSG_DATA(nh);
	uint32_t table;

	if (nh->nlmsg_type != RTM_NEWROUTE ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return false;
	if (rtm->rtm_family != family || rtm->rtm_type != RTN_UNICAST ||
	    (rtm->rtm_flags & RTM_F_CLONED) ||
	    rtm->rtm_dst_len > fam_alen(family) * 8)
		return false;
	memset(r, 0, sizeof(*r));
	*oif = 0;
	r->dst_len = rtm->rtm_dst_len;
	r->protocol = rtm->rtm_protocol;
	r->scope = rtm->rtm_scope;
	r->onlink = rtm->rtm_flags & RTNH_F_ONLINK;
	table = rtm->rtm_table;
	if (!route_attrs(rtm, (int)RTM_PAYLOAD(nh), family, want_oif, r,
			 &table, oif))
		return false;
	return table == RT_TABLE_MAIN && *oif && (!want_oif || *oif == want_oif);
}

struct route_q {
	int family;
	unsigned int oif;		/* filter, 0: any */
	bool found;
	unsigned int ifindex;
	uint8_t gw[16];
};

/* route_default_parse() - the first default route of the query. */
static void route_default_parse(const struct nlmsghdr *nh, void *arg)
{
	struct route_q *q = arg;
	unsigned int ifindex;
	struct nl_route r;

	if (q->found || !route_decode(nh, q->family, q->oif, &r, &ifindex) ||
	    r.dst_len)
		return;
	q->found = true;
	q->ifindex = ifindex;
	memcpy(q->gw, r.gw, sizeof(q->gw));
}

/* nl_dump() - dump request of type (RTM_GETADDR or RTM_GETNEIGH, for
 * ifindex if non-zero, or RTM_GETROUTE) for family; each reply message
 * goes to fn. */
static int nl_dump(int fd, uint16_t type, int family, unsigned int ifindex,
		   nl_parse_fn fn, void *arg)
{
	struct nl_msg m;

	if (type == RTM_GETADDR) {
		nl_msg_init(&m, type, NLM_F_DUMP, sizeof(m.ifa));
		m.ifa.ifa_family = (uint8_t)family;
		m.ifa.ifa_index = ifindex;
	} else if (type == RTM_GETNEIGH) {
		uint32_t ifi = ifindex;

		/* The interface as an attribute: strict checking refuses a
		 * dump request with ndm_ifindex set (EINVAL). */
		nl_msg_init(&m, type, NLM_F_DUMP, sizeof(m.ndm));
		m.ndm.ndm_family = (uint8_t)family;
		if (ifi && !nl_attr_put(&m, NDA_IFINDEX, &ifi, sizeof(ifi)))
			return -ENOSPC;
	} else {
		nl_msg_init(&m, type, NLM_F_DUMP, sizeof(m.rtm));
		m.rtm.rtm_family = (uint8_t)family;
	}
	return nl_xfer(fd, &m, fn, arg);
}

int nl_default_route(int fd, int family, unsigned int oif,
		     unsigned int *ifindex, void *gw)
{
	struct route_q q = { .family = family, .oif = oif };
	int rc;

	rc = nl_dump(fd, RTM_GETROUTE, family, 0, route_default_parse, &q);
	if (rc)
		return rc;
	if (!q.found)
		return -ENOENT;
	*ifindex = q.ifindex;
	memcpy(gw, q.gw, fam_alen(family));
	return 0;
}

/* A bounded table a dump fills: n counts every match, tab holds the
 * first max of them. */
struct dump_tab {
	int family;
	unsigned int ifindex;
	void *tab;
	int max, n;
};

/* route_tab_parse() - one route for nl_route_dump() (see netlink.h). */
static void route_tab_parse(const struct nlmsghdr *nh, void *arg)
{
	struct dump_tab *t = arg;
	unsigned int oif;
	struct nl_route r;

	/* Source-specific routes: struct nl_route cannot say "from". */
	if (!route_decode(nh, t->family, t->ifindex, &r, &oif) ||
	    ((const struct rtmsg *)NLMSG_DATA(nh))->rtm_src_len ||
	    !r.dst_len || (t->family == AF_INET6 &&
			   (addr_link_local(AF_INET6, r.dst) ||
			    r.dst[0] == 0xff)))
		return;
	if (t->n < t->max)
		((struct nl_route *)t->tab)[t->n] = r;
	t->n++;
}

int nl_route_dump(int fd, int family, unsigned int ifindex,
		  struct nl_route *tab, int max)
{
	struct dump_tab t = { family, ifindex, tab, max, 0 };
	int rc;

	rc = nl_dump(fd, RTM_GETROUTE, family, 0, route_tab_parse, &t);
	return rc ? rc : t.n;
}

int nl_route_add(int fd, int family, unsigned int ifindex,
		 const struct nl_route *r)
{
	static const uint8_t zero[16];
	size_t alen = fam_alen(family);
	uint32_t oif = ifindex;
	struct nl_msg m;

	nl_msg_init(&m, RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
		    sizeof(m.rtm));
	m.rtm.rtm_family = (uint8_t)family;
	m.rtm.rtm_table = RT_TABLE_MAIN;
	m.rtm.rtm_protocol = r->protocol ? r->protocol : RTPROT_BOOT;
	m.rtm.rtm_scope = r->scope;
	m.rtm.rtm_type = RTN_UNICAST;
	m.rtm.rtm_dst_len = r->dst_len;
	if (r->onlink)
		m.rtm.rtm_flags = RTNH_F_ONLINK;
	if ((r->dst_len && !nl_attr_put(&m, RTA_DST, r->dst, alen)) ||
	    !nl_attr_put(&m, RTA_OIF, &oif, sizeof(oif)) ||
	    (memcmp(r->gw, zero, alen) &&
	     !nl_attr_put(&m, RTA_GATEWAY, r->gw, alen)) ||
	    (memcmp(r->prefsrc, zero, alen) &&
	     !nl_attr_put(&m, RTA_PREFSRC, r->prefsrc, alen)) ||
	    (r->metric && !nl_attr_put(&m, RTA_PRIORITY, &r->metric,
				       sizeof(r->metric))))
		return -ENOSPC;
	return nl_xfer(fd, &m, NULL, NULL);
}

int nl_route_add_default(int fd, int family, unsigned int ifindex,
			 const void *gw)
{
	struct nl_route r = { .protocol = RTPROT_BOOT,
			      .scope = RT_SCOPE_UNIVERSE };

	memcpy(r.gw, gw, fam_alen(family));
	/* IPv4 and global IPv6 gateways may lie outside the guest's prefix. */
	r.onlink = family == AF_INET || !addr_link_local(AF_INET6, r.gw);
	return nl_route_add(fd, family, ifindex, &r);
}

/* --- links ------------------------------------------------------------ */

struct link_q {
	unsigned int ifindex;
	bool found;
	char name[IFNAMSIZ];
	unsigned int mtu;
	uint8_t mac[6];
};

/* link_parse() - nl_xfer() callback: name, MTU and MAC of the link
 * q->ifindex from an RTM_NEWLINK message, if it is that link. */
static void link_parse(const struct nlmsghdr *nh, void *arg)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);
	struct link_q *q = arg;
	const struct rtattr *rta;
	uint32_t v;
	int len;

	if (nh->nlmsg_type != RTM_NEWLINK ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)) ||
	    (unsigned int)ifi->ifi_index != q->ifindex)
		return;
	q->found = true;
	len = (int)IFLA_PAYLOAD(nh);
	for_each_rta(rta, IFLA_RTA(ifi), len) {
		size_t plen = RTA_PAYLOAD(rta);

		if (rta->rta_type == IFLA_IFNAME && plen &&
		    memchr(RTA_DATA(rta), '\0', plen))
			str_copy(q->name, RTA_DATA(rta), IFNAMSIZ);
		else if (rta->rta_type == IFLA_MTU && rta_u32(rta, &v))
			q->mtu = v;
		else if (rta->rta_type == IFLA_ADDRESS && plen == 6)
			memcpy(q->mac, RTA_DATA(rta), 6);
	}
}

int nl_link_get(int fd, unsigned int ifindex, char name[IFNAMSIZ],
		unsigned int *mtu, uint8_t mac[6])
{
	struct link_q q = { .ifindex = ifindex };
	struct nl_msg m;
	int rc;

	nl_msg_init(&m, RTM_GETLINK, NLM_F_ACK, sizeof(m.ifi));
	m.ifi.ifi_family = AF_UNSPEC;
	m.ifi.ifi_index = (int)ifindex;
	rc = nl_xfer(fd, &m, link_parse, &q);
	if (rc)
		return rc;
	if (!q.found)
		return -ENODEV;
	if (name)
		memcpy(name, q.name, IFNAMSIZ);
	if (mtu)
		*mtu = q.mtu;
	if (mac)
		memcpy(mac, q.mac, 6);
	return 0;
}

int nl_link_set(int fd, unsigned int ifindex, const uint8_t *mac,
		unsigned int mtu, bool up)
{
	uint32_t mtu32 = mtu;
	struct nl_msg m;

	nl_msg_init(&m, RTM_NEWLINK, NLM_F_ACK, sizeof(m.ifi));
	m.ifi.ifi_family = AF_UNSPEC;
	m.ifi.ifi_index = (int)ifindex;
	if (up) {
		m.ifi.ifi_change = IFF_UP;
		m.ifi.ifi_flags = IFF_UP;
	}
	if (mac && !nl_attr_put(&m, IFLA_ADDRESS, mac, 6))
		return -ENOSPC;
	if (mtu && !nl_attr_put(&m, IFLA_MTU, &mtu32, sizeof(mtu32)))
		return -ENOSPC;
	return nl_xfer(fd, &m, NULL, NULL);
}

int nl_link_txqlen(int fd, unsigned int ifindex, unsigned int qlen)
{
	uint32_t q = qlen;
	struct nl_msg m;

	nl_msg_init(&m, RTM_NEWLINK, NLM_F_ACK, sizeof(m.ifi));
	m.ifi.ifi_family = AF_UNSPEC;
	m.ifi.ifi_index = (int)ifindex;
	if (!nl_attr_put(&m, IFLA_TXQLEN, &q, sizeof(q)))
		return -ENOSPC;
	return nl_xfer(fd, &m, NULL, NULL);
}

/* --- addresses -------------------------------------------------------- */

/* addr_decode() - an RTM_NEWADDR message: a global-scope address of
 * family on ifindex, into *a (IPv4 point-to-point: IFA_LOCAL, our end,
 * rather than IFA_ADDRESS, the peer). False for anything else, or if an
 * attribute ferry reads has the wrong size or the walk did not end
 * cleanly. */
static bool addr_decode(const struct nlmsghdr *nh, int family,
			unsigned int ifindex, struct nl_addr *a)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(nh);
	uint8_t addr[16] = { 0 }, local[16] = { 0 };
	bool has_addr = false, has_local = false, ok = true;
	const struct rtattr *rta;
	int len;

	if (nh->nlmsg_type != RTM_NEWADDR ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return false;
	if (ifa->ifa_family != family || ifa->ifa_index != ifindex ||
	    ifa->ifa_scope != RT_SCOPE_UNIVERSE ||
	    ifa->ifa_prefixlen > fam_alen(family) * 8)
		return false;
	a->flags = ifa->ifa_flags;
	a->prefix_len = ifa->ifa_prefixlen;
	len = (int)IFA_PAYLOAD(nh);
	for_each_rta(rta, IFA_RTA(ifa), len) {
		if (rta->rta_type == IFA_ADDRESS)
			ok = ok && (has_addr = rta_addr(rta, family, addr));
		else if (rta->rta_type == IFA_LOCAL)
			ok = ok && (has_local = rta_addr(rta, family, local));
		else if (rta->rta_type == IFA_FLAGS)
			ok = ok && rta_u32(rta, &a->flags);
	}
	if (!ok || !rta_walk_ok(len) || (!has_addr && !has_local))
		return false;
	memcpy(a->addr, has_local ? local : addr, sizeof(a->addr));
	return true;
}

struct addr_q {
	int family;
	unsigned int ifindex;
	int rank;			/* of the best so far, 0: none */
	struct nl_addr best;
};

/* addr_rank() - 2 for a preferred address, 1 for one to use only if
 * nothing better exists. */
static int addr_rank(uint32_t flags)
{
	return flags & (IFA_F_TENTATIVE | IFA_F_DEPRECATED |
			IFA_F_TEMPORARY | IFA_F_DADFAILED) ? 1 : 2;
}

/* addr_best_parse() - keep the first address of the best rank. */
static void addr_best_parse(const struct nlmsghdr *nh, void *arg)
{
	struct addr_q *q = arg;
	struct nl_addr a;

	if (addr_decode(nh, q->family, q->ifindex, &a) &&
	    addr_rank(a.flags) > q->rank) {
		q->rank = addr_rank(a.flags);
		q->best = a;
	}
}

int nl_addr_get(int fd, int family, unsigned int ifindex, void *addr,
		int *prefix_len)
{
	struct addr_q q = { .family = family, .ifindex = ifindex };
	int rc;

	rc = nl_dump(fd, RTM_GETADDR, family, ifindex, addr_best_parse, &q);
	if (rc)
		return rc;
	if (!q.rank)
		return -ENOENT;
	memcpy(addr, q.best.addr, fam_alen(family));
	*prefix_len = q.best.prefix_len;
	return 0;
}

/* addr_tab_parse() - one address for nl_addr_dump() (see netlink.h). */
static void addr_tab_parse(const struct nlmsghdr *nh, void *arg)
{
	struct dump_tab *t = arg;
	struct nl_addr a;

	if (!addr_decode(nh, t->family, t->ifindex, &a) ||
	    (a.flags & IFA_F_DADFAILED) || addr_link_local(t->family, a.addr))
		return;
	if (t->n < t->max)
		((struct nl_addr *)t->tab)[t->n] = a;
	t->n++;
}

int nl_addr_dump(int fd, int family, unsigned int ifindex,
		 struct nl_addr *tab, int max)
{
	struct dump_tab t = { family, ifindex, tab, max, 0 };
	int rc;

	rc = nl_dump(fd, RTM_GETADDR, family, ifindex, addr_tab_parse, &t);
	return rc ? rc : t.n;
}

/* --- neighbours -------------------------------------------------------- */

#define NEIGH_USABLE	(NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | \
			 NUD_PERMANENT)

/* neigh_tab_parse() - one entry for nl_neigh_dump() (see netlink.h):
 * RTM_NEWNEIGH of the family and interface, usable, with a destination
 * of the family's size and a 6-byte unicast, non-zero MAC. */
static void neigh_tab_parse(const struct nlmsghdr *nh, void *arg)
{
	static const uint8_t zero[6];
	const struct ndmsg *nd = NLMSG_DATA(nh);
	struct dump_tab *t = arg;
	const struct rtattr *rta;
	bool has_dst = false, has_mac = false;
	struct nl_neigh e = { 0 };
	int left;

	if (nh->nlmsg_type != RTM_NEWNEIGH ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)) ||
	    nd->ndm_family != t->family ||
	    nd->ndm_ifindex != (int)t->ifindex ||
	    !(nd->ndm_state & NEIGH_USABLE))
		return;
	left = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));
	for_each_rta(rta, (const struct rtattr *)((const uint8_t *)nd +
						  NLMSG_ALIGN(sizeof(*nd))),
		     left) {
		if (rta->rta_type == NDA_DST)
			has_dst = rta_addr(rta, t->family, e.addr);
		else if (rta->rta_type == NDA_LLADDR &&
			 RTA_PAYLOAD(rta) == sizeof(e.mac)) {
			memcpy(e.mac, RTA_DATA(rta), sizeof(e.mac));
			has_mac = true;
		}
	}
	if (!rta_walk_ok(left) || !has_dst || !has_mac ||
	    (e.mac[0] & 1) || !memcmp(e.mac, zero, sizeof(zero)))
		return;
	if (t->n < t->max)
		((struct nl_neigh *)t->tab)[t->n] = e;
	t->n++;
}

int nl_neigh_dump(int fd, int family, unsigned int ifindex,
		  struct nl_neigh *tab, int max)
{
	struct dump_tab t = { family, ifindex, tab, max, 0 };
	int rc;

	rc = nl_dump(fd, RTM_GETNEIGH, family, ifindex, neigh_tab_parse, &t);
	return rc ? rc : t.n;
}

int nl_addr_add(int fd, int family, unsigned int ifindex, const void *addr,
		int prefix_len)
{
	size_t alen = fam_alen(family);
	uint32_t flags = family == AF_INET6 ? IFA_F_NODAD : 0;
	struct nl_msg m;

	nl_msg_init(&m, RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
		    sizeof(m.ifa));
	m.ifa.ifa_family = (uint8_t)family;
	m.ifa.ifa_prefixlen = (uint8_t)prefix_len;
	m.ifa.ifa_flags = (uint8_t)flags;
	m.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
	m.ifa.ifa_index = ifindex;
	if (!nl_attr_put(&m, IFA_LOCAL, addr, alen) ||
	    !nl_attr_put(&m, IFA_ADDRESS, addr, alen) ||
	    !nl_attr_put(&m, IFA_FLAGS, &flags, sizeof(flags)))
		return -ENOSPC;
	return nl_xfer(fd, &m, NULL, NULL);
}
