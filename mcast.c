/* mcast.c - the guest's multicast and broadcast datagrams to the host's
 * network, and the groups the guest joined.
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
 *
 * Groups the guest joined. igmp.c turns the guest's reports into
 * mcast_apply() calls on a fixed table (MCAST_GROUPS_MAX groups, the cap
 * counted and logged once). A host socket receives a group's datagrams
 * only for one UDP port, and a report names no port, so each group has a
 * socket per port it is heard on (at most MCAST_PORTS_MAX):
 *
 *  - its well-known port: mDNS 5353 (224.0.0.251, ff02::fb), SSDP 1900
 *    (239.255.255.250, ff0X::c), LLMNR 5355 (224.0.0.252, ff02::1:3);
 *  - each port the guest sends to in the group (mcast_port_seen(), and
 *    udp_mcast_learn() for datagrams sent just before the report): an
 *    application that talks to a group listens on its port.
 *
 * A group an application only listens to, on another port, is not
 * heard. Each socket is bound to the group and port (SO_REUSEADDR, so the
 * host's own mDNS or SSDP daemon keeps its port, and so do the guest's
 * outbound flows), hears only its group (IP_MULTICAST_ALL off), joins it
 * on the template interface (MCAST_JOIN_GROUP, or MCAST_JOIN_SOURCE_GROUP
 * per source of an include-mode report) and asks each datagram's TTL.
 * udp.c delivers what it receives. A change of sources reopens the
 * group's sockets; a socket that failed is tried again every
 * MCAST_RETRY_MS while the group lasts.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "log.h"
#include "mcast.h"
#include "pkt.h"
#include "util.h"

/* seccomp(all): bind close setsockopt
 *   (multicast and broadcast options of UDP flow sockets; the sockets
 *   of the groups the guest joined) */
/* seccomp(all): socket(0=AF_INET) socket(0=AF_INET6) */

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

/* --- groups the guest joined ------------------------------------------- */

#define MCAST_RETRY_MS	1000	/* a group's failed socket: again after */

/* mcast_group_mac() - see mcast.h: 01:00:5e and the group's low 23 bits, or
 * 33:33 and its low 32 bits. */
void mcast_group_mac(const union inany *g, uint8_t mac[6])
{
	static const uint8_t pfx4[3] = { 0x01, 0x00, 0x5e };
	static const uint8_t pfx6[2] = { 0x33, 0x33 };

	if (inany_is4(g)) {
		uint32_t low = htonl(ntohl(g->v4m.a4.s_addr) & 0x7fffff);

		memcpy(mac, pfx4, sizeof(pfx4));
		memcpy(mac + 3, (const uint8_t *)&low + 1, 3); /* wire: MAC bytes */
		return;
	}
	memcpy(mac, pfx6, sizeof(pfx6));
	memcpy(mac + 2, g->a6.s6_addr + 12, 4);	/* wire: an address's bytes */
}

void mcast_init(struct ctx *c, int64_t member_ms)
{
	struct mcast_state *m = &c->udp.mc;
	unsigned int i, k;

	memset(m->g, 0, sizeof(m->g));
	for (i = 0; i < MCAST_GROUPS_MAX; i++)
		for (k = 0; k < MCAST_PORTS_MAX; k++)
			m->g[i].fd[k] = -1;
	m->n = 0;
	m->max = MIN(test_env_u32("FERRY_TEST_MCAST_GROUPS", MCAST_GROUPS_MAX),
		     (uint32_t)MCAST_GROUPS_MAX);
	m->member_ms = member_ms;
}

/* well_known_port() - the port a group's service is heard on: mDNS
 * (RFC 6762), SSDP (UPnP Device Architecture 1.1, 1.3.2; ff0X::c for
 * any scope X), LLMNR (RFC 4795); 0 for other groups. */
static uint16_t well_known_port(const union inany *g)
{
	static const struct in6_addr mdns6 = { .s6_addr = {
		0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfb } };
	static const struct in6_addr llmnr6 = { .s6_addr = {
		0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 3 } };
	static const struct in6_addr ssdp6 = { .s6_addr = {	/* ff0X::c */
		0xff, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0c } };
	struct in6_addr x;

	if (inany_is4(g)) {
		switch (ntohl(g->v4m.a4.s_addr)) {
		case 0xe00000fb:	return 5353;	/* 224.0.0.251 */
		case 0xeffffffa:	return 1900;	/* 239.255.255.250 */
		case 0xe00000fc:	return 5355;	/* 224.0.0.252 */
		default:		return 0;
		}
	}
	if (in6_eq(&g->a6, &mdns6))
		return 5353;
	if (in6_eq(&g->a6, &llmnr6))
		return 5355;
	x = g->a6;
	x.s6_addr[1] &= 0xf0;		/* any scope */
	return in6_eq(&x, &ssdp6) ? 1900 : 0;
}

/* group_sa() - the group's socket address at port, with the template
 * interface as scope for an IPv6 link-local group. */
static socklen_t group_sa(const struct ctx *c, const union inany *g,
			  uint16_t port, struct sockaddr_storage *ss)
{
	socklen_t sl = inany_to_sa((sockaddr_inany *)ss, g, port);

	if (!inany_is4(g) && (g->a6.s6_addr[1] & 0x0f) == 2)
		((struct sockaddr_in6 *)ss)->sin6_scope_id = c->conf.ifindex6;
	return sl;
}

/* group_join() - socket fd (of g's family) joins g on the template
 * interface: from any source, or from each of g's sources. Returns 0
 * or -errno. */
static int group_join(const struct ctx *c, int fd, const struct mcast_group *g)
{
	bool v6 = !inany_is4(&g->group);
	int lvl = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
	unsigned int idx = v6 ? c->conf.ifindex6 : c->conf.ifindex4, i;

	if (!g->ssm) {
		struct group_req r = { .gr_interface = idx };

		group_sa(c, &g->group, 0, &r.gr_group);
		return setsockopt(fd, lvl, MCAST_JOIN_GROUP, &r, sizeof(r))
		       ? -errno : 0;
	}
	for (i = 0; i < g->nsrc; i++) {
		struct group_source_req r = { .gsr_interface = idx };

		group_sa(c, &g->group, 0, &r.gsr_group);
		group_sa(c, &g->src[i], 0, &r.gsr_source);
		if (setsockopt(fd, lvl, MCAST_JOIN_SOURCE_GROUP, &r, sizeof(r)))
			return -errno;
	}
	return 0;
}

/* group_sock() - a socket of group g (index gi) for port slot k: bound
 * to the group and port (SO_REUSEADDR: the host's own mDNS or SSDP
 * daemon and the guest's outbound flows share the port), hearing only
 * that group (IP_MULTICAST_ALL off), with the TTL of each datagram,
 * joined, registered. Returns the fd or -errno. */
static int group_sock(struct ctx *c, const struct mcast_group *g,
		      unsigned int gi, unsigned int k)
{
	union eref ref = { .type = EREF_UDP_MCAST,
			   .idx = gi * MCAST_PORTS_MAX + k };
	bool v6 = !inany_is4(&g->group);
	int fd, one = 1, zero = 0, rc;
	struct sockaddr_storage ss;
	socklen_t sl;

	fd = socket(v6 ? AF_INET6 : AF_INET,
		    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	if (v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		   v6 ? IPV6_MULTICAST_ALL : IP_MULTICAST_ALL, &zero,
		   sizeof(zero));
	setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
		   v6 ? IPV6_RECVHOPLIMIT : IP_RECVTTL, &one, sizeof(one));
	sl = group_sa(c, &g->group, g->port[k], &ss);
	if (bind(fd, (struct sockaddr *)&ss, sl) || group_join(c, fd, g) ||
	    ep_add(c, fd, EPOLLIN, ref)) {	/* each leaves errno set */
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* group_close() - close g's sockets (leaving it on the host). */
static void group_close(struct ctx *c, struct mcast_group *g)
{
	unsigned int k;

	for (k = 0; k < g->nport; k++) {
		if (g->fd[k] < 0)
			continue;
		ep_del(c, g->fd[k]);
		close(g->fd[k]);
		g->fd[k] = -1;
	}
}

/* group_open() - (re)open g's sockets, one per port, after a change of
 * its sources or ports; a port whose socket fails is logged and left
 * closed until the next change. */
static void group_open(struct ctx *c, struct mcast_group *g)
{
	unsigned int gi = (unsigned int)(g - c->udp.mc.g), k;

	group_close(c, g);
	for (k = 0; k < g->nport; k++) {
		int fd = group_sock(c, g, gi, k);

		if (fd < 0)
			debug("mcast: group socket for port %u: %s",
			      g->port[k], strerror(-fd));
		g->fd[k] = fd;
	}
}

/* group_find() - the joined group g, or a free slot (*fresh) within the
 * cap; NULL when neither. */
static struct mcast_group *group_find(struct ctx *c, const union inany *g,
				      bool *fresh)
{
	struct mcast_state *m = &c->udp.mc;
	struct mcast_group *free_slot = NULL;
	unsigned int i;

	*fresh = false;
	for (i = 0; i < MCAST_GROUPS_MAX; i++) {
		if (m->g[i].used && inany_eq(&m->g[i].group, g))
			return &m->g[i];
		if (!m->g[i].used && !free_slot)
			free_slot = &m->g[i];
	}
	if (m->n >= m->max)
		return NULL;
	*fresh = free_slot != NULL;
	return free_slot;
}

/* group_leave() - the guest left g: close its sockets, free the slot. */
static void group_leave(struct ctx *c, struct mcast_group *g)
{
	group_close(c, g);
	g->used = false;
	g->nport = g->nsrc = 0;
	c->udp.mc.n--;
	c->udp.mc.leaves++;
}

/* src_index() - where source s (len bytes) is in g's list, or -1. */
static int src_index(const struct mcast_group *g, const uint8_t *s, size_t len)
{
	unsigned int i;

	for (i = 0; i < g->nsrc; i++) {
		const uint8_t *b = len == 4 ? (const uint8_t *)&g->src[i].v4m.a4
					    : g->src[i].a6.s6_addr;

		if (!memcmp(b, s, len))
			return (int)i;
	}
	return -1;
}

/* src_add() - add the n sources at s to g's list (those that fit). */
static void src_add(struct mcast_group *g, const uint8_t *s, unsigned int n)
{
	size_t len = inany_is4(&g->group) ? 4 : 16;
	unsigned int i;

	for (i = 0; i < n && g->nsrc < MCAST_SRCS_MAX; i++, s += len) {
		struct in_addr a4;
		struct in6_addr a6;

		if (src_index(g, s, len) >= 0)
			continue;
		if (len == 4) {
			memcpy(&a4, s, 4);
			inany_from4(&g->src[g->nsrc++], a4);
		} else {
			memcpy(&a6, s, 16);
			inany_from6(&g->src[g->nsrc++], &a6);
		}
	}
}

/* src_del() - take the n sources at s out of g's list. */
static void src_del(struct mcast_group *g, const uint8_t *s, unsigned int n)
{
	size_t len = inany_is4(&g->group) ? 4 : 16;
	unsigned int i;

	for (i = 0; i < n; i++, s += len) {
		int j = src_index(g, s, len);

		if (j >= 0)
			g->src[j] = g->src[--g->nsrc];
	}
}

/* group_new() - slot g becomes group a, heard on its well-known port. */
static void group_new(struct ctx *c, struct mcast_group *g,
		      const union inany *a)
{
	uint16_t wk = well_known_port(a);

	memset(g, 0, sizeof(*g));
	memset(g->fd, 0xff, sizeof(g->fd));	/* all -1 */
	g->used = true;
	g->group = *a;
	if (wk)
		g->port[g->nport++] = wk;
	c->udp.mc.n++;
	c->udp.mc.joins++;
}

/* cap_hit() - a new group beyond the cap: counted, logged once. */
static enum drop_reason cap_hit(struct ctx *c, const union inany *a)
{
	char buf[INET6_ADDRSTRLEN];

	c->udp.mc.capped++;
	if (!c->udp.mc.cap_logged) {
		if (inany_is4(a))
			inet_ntop(AF_INET, &a->v4m.a4, buf, sizeof(buf));
		else
			inet_ntop(AF_INET6, &a->a6, buf, sizeof(buf));
		info("mcast: group cap reached (%u groups): not joining %s "
		     "(and later ones, counted)", c->udp.mc.max, buf);
		c->udp.mc.cap_logged = true;
	}
	return DROP_MCAST_GROUPS;
}

enum drop_reason mcast_apply(struct ctx *c, const union inany *a,
			     enum mcast_op op, const uint8_t *src,
			     unsigned int n)
{
	struct mcast_group *g;
	bool fresh, was_ssm;
	uint8_t had;

	g = group_find(c, a, &fresh);
	if (!g)
		return op == MCAST_OP_LEAVE || op == MCAST_OP_BLOCK
		       ? DROP_NONE : cap_hit(c, a);
	if (fresh) {
		if (op == MCAST_OP_LEAVE || op == MCAST_OP_BLOCK)
			return DROP_NONE;	/* not a member: nothing */
		group_new(c, g, a);
	}
	g->expires_ms = mcast_now_ms(c) + c->udp.mc.member_ms;
	timer_request(c, c->udp.mc.member_ms);
	was_ssm = g->ssm;
	had = g->nsrc;
	switch (op) {
	case MCAST_OP_LEAVE:
		group_leave(c, g);
		return DROP_NONE;
	case MCAST_OP_JOIN:
		g->ssm = false;
		g->nsrc = 0;
		break;
	case MCAST_OP_INCLUDE:
		g->ssm = true;
		g->nsrc = 0;
		src_add(g, src, n);
		break;
	case MCAST_OP_ALLOW:
		if (fresh || g->ssm) {	/* any-source already hears them */
			g->ssm = true;
			src_add(g, src, n);
		}
		break;
	case MCAST_OP_BLOCK:
		if (g->ssm)		/* any-source: the guest filters */
			src_del(g, src, n);
		break;
	}
	if (g->ssm && !g->nsrc) {
		group_leave(c, g);
		return DROP_NONE;
	}
	if (fresh || was_ssm != g->ssm || (g->ssm && had != g->nsrc) ||
	    op == MCAST_OP_INCLUDE)
		group_open(c, g);
	return DROP_NONE;
}

void mcast_port_seen(struct ctx *c, const union inany *a, uint16_t port)
{
	struct mcast_group *g;
	unsigned int i, k;

	for (i = 0; i < MCAST_GROUPS_MAX; i++) {
		g = &c->udp.mc.g[i];
		if (!g->used || !inany_eq(&g->group, a))
			continue;
		for (k = 0; k < g->nport; k++)
			if (g->port[k] == port)
				return;
		if (g->nport == MCAST_PORTS_MAX)
			return;
		g->port[g->nport] = port;
		g->fd[g->nport] = group_sock(c, g, i, g->nport);
		g->nport++;
		return;
	}
}

/* group_retry() - open g's sockets that failed (a port another socket
 * held without SO_REUSEADDR, say); true if one is still missing. */
static bool group_retry(struct ctx *c, struct mcast_group *g)
{
	unsigned int gi = (unsigned int)(g - c->udp.mc.g), k;
	bool missing = false;

	for (k = 0; k < g->nport; k++) {
		if (g->fd[k] < 0)
			g->fd[k] = group_sock(c, g, gi, k);
		missing |= g->fd[k] < 0;
	}
	return missing;
}

int64_t mcast_expire(struct ctx *c)
{
	int64_t now = mcast_now_ms(c), next = INT64_MAX;
	unsigned int i;

	for (i = 0; i < MCAST_GROUPS_MAX; i++) {
		struct mcast_group *g = &c->udp.mc.g[i];

		if (!g->used)
			continue;
		if (g->expires_ms <= now) {
			c->udp.mc.expired++;
			group_leave(c, g);
			continue;
		}
		next = MIN(next, g->expires_ms - now);
		if (group_retry(c, g))
			next = MIN(next, (int64_t)MCAST_RETRY_MS);
	}
	return next;
}

void mcast_ports(const struct ctx *c, uint64_t *bits)
{
	unsigned int i, k;

	for (i = 0; i < MCAST_GROUPS_MAX; i++)
		for (k = 0; c->udp.mc.g[i].used && k < c->udp.mc.g[i].nport;
		     k++) {
			uint16_t p = c->udp.mc.g[i].port[k];

			bits[p / 64] |= 1ULL << (p % 64);
		}
}

struct mcast_group *mcast_group_at(struct ctx *c, uint32_t idx,
				   uint16_t *port, int *fd)
{
	struct mcast_group *g;
	unsigned int k = idx % MCAST_PORTS_MAX;

	if (idx / MCAST_PORTS_MAX >= MCAST_GROUPS_MAX)
		return NULL;
	g = &c->udp.mc.g[idx / MCAST_PORTS_MAX];
	if (!g->used || k >= g->nport || g->fd[k] < 0)
		return NULL;
	*port = g->port[k];
	*fd = g->fd[k];
	return g;
}

void mcast_close_all(struct ctx *c)
{
	unsigned int i;

	for (i = 0; i < MCAST_GROUPS_MAX; i++)
		if (c->udp.mc.g[i].used)
			group_leave(c, &c->udp.mc.g[i]);
}

/* The groups' statistics line (drop.h's registry), once the guest sent
 * a report. */
static const struct stat_item mcast_stat_items[] = {
	STAT_TEXT(" ", " groups", struct ctx, udp.mc.n),
	STAT_TEXT(", ", " joined", struct ctx, udp.mc.joins),
	STAT_TEXT(", ", " left", struct ctx, udp.mc.leaves),
	STAT_TEXT(" (", " timed out)", struct ctx, udp.mc.expired),
	STAT_TEXT(", ", " beyond the cap", struct ctx, udp.mc.capped),
	STAT_TEXT(", ", " reports", struct ctx, udp.mc.reports),
	STAT_TEXT(", ", " queries sent", struct ctx, udp.mc.queries),
	STAT_TEXT(", ", " datagrams to the groups", struct ctx,
		  udp.mc.delivered),
};

STAT_GROUP(mcast_stats) = {
	.order = 11, .what = "multicast", .when = STAT_GATE,
	.gate_off = STAT_FIELD(struct ctx, udp.mc.reports), .via = -1,
	.items = mcast_stat_items, .n = ARRAY_SIZE(mcast_stat_items),
};
