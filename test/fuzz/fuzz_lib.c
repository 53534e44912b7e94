/* fuzz_lib.c - network isolation, the all-services context, the frame
 * input decoder and the vhost-user device set-up shared by the fuzz
 * targets and the unit tests (see fuzz.h for the input format and why
 * isolation is needed).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "checksum.h"
#include "ferry.h"
#include "fuzz.h"
#include "log.h"
#include "nat.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "util.h"
#include "vhost_user.h"
#include "virtq.h"
#include "vnet.h"
#include "test/unit/unit.h"

/* Loopback peers inside the namespace, so that flows to the gateway
 * (mapped to host loopback) meet real sockets: a TCP listener on port 80
 * (v4 and v6) that accepts, writes a little and closes, and a UDP socket
 * on port 53 that answers every datagram. */
#define PEER_PORT_TCP	80
#define PEER_PORT_UDP	53
static int peer_fd[4] = { -1, -1, -1, -1 };	/* tcp4, tcp6, udp4, udp6 */

/* write_file() - write s to path; false on any failure. */
static bool write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok;
}

bool fuzz_isolate(void)
{
	struct ifreq ifr = { 0 };
	int s;

	if (unshare(CLONE_NEWNET) && unshare(CLONE_NEWUSER | CLONE_NEWNET))
		return false;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		close(s);
		return false;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		close(s);
		return false;
	}
	close(s);
	/* Optional: ping sockets for our group (fails harmlessly if the
	 * namespace belongs to a user namespace without the right). */
	write_file("/proc/sys/net/ipv4/ping_group_range", "0 2147483647");
	return true;
}

void fuzz_isolate_or_exit(const char *target)
{
	if (fuzz_isolate())
		return;
	fprintf(stderr, "%s: no private network namespace (%s): refusing "
		"to run\n", target, strerror(errno));
	exit(2);
}

/* peer_open() - one loopback peer socket; -1 if it cannot be had. */
static int peer_open(bool v6, int type, uint16_t port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT,
				   .sin6_port = htons(port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, s = socket(v6 ? AF_INET6 : AF_INET,
				type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
		 v6 ? sizeof(a6) : sizeof(a4)) ||
	    (type == SOCK_STREAM && listen(s, 128))) {
		close(s);
		return -1;
	}
	return s;
}

struct ctx *fuzz_frame_ctx(void)
{
	struct ctx *c = test_ctx();

	log_set_level(LOG_LVL_ERR);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->pcap_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	nat_init(c);
	icmp_init(c);
	udp_init(c);
	tcp_init(c);
	ndp_init(c);
	peer_fd[0] = peer_open(false, SOCK_STREAM, PEER_PORT_TCP);
	peer_fd[1] = peer_open(true, SOCK_STREAM, PEER_PORT_TCP);
	peer_fd[2] = peer_open(false, SOCK_DGRAM, PEER_PORT_UDP);
	peer_fd[3] = peer_open(true, SOCK_DGRAM, PEER_PORT_UDP);
	return c;
}

/* peers_serve() - the loopback peers' side: accept, say hello, close;
 * answer datagrams. Non-blocking, bounded. */
static void peers_serve(void)
{
	static const char hello[] = "HTTP/1.0 200 OK\r\n\r\nhello";
	uint8_t buf[2048];
	int i, k;

	for (i = 0; i < 2; i++) {
		for (k = 0; peer_fd[i] >= 0 && k < 16; k++) {
			int a = accept4(peer_fd[i], NULL, NULL, SOCK_CLOEXEC);

			if (a < 0)
				break;
			if (write(a, hello, sizeof(hello) - 1) < 0)
				k = 16;
			close(a);
		}
	}
	for (i = 2; i < 4; i++) {
		for (k = 0; peer_fd[i] >= 0 && k < 16; k++) {
			struct sockaddr_in6 sa;
			socklen_t sl = sizeof(sa);
			ssize_t n = recvfrom(peer_fd[i], buf, sizeof(buf),
					     MSG_DONTWAIT,
					     (struct sockaddr *)&sa, &sl);

			if (n < 0)
				break;
			sendto(peer_fd[i], buf, (size_t)n, MSG_DONTWAIT,
			       (struct sockaddr *)&sa, sl);
		}
	}
}

/* events() - what the loop does with ready sockets (loop.c dispatch()
 * for the socket types), a few rounds while anything is ready. */
static void events(struct ctx *c)
{
	struct epoll_event ev[64];
	int round, i, n;

	for (round = 0; round < 4; round++) {
		peers_serve();
		n = epoll_wait(c->epfd, ev, 64, 0);
		for (i = 0; i < n; i++) {
			union eref ref = { .u64 = ev[i].data.u64 };

			switch (ref.type) {
			case EREF_PING:
				icmp_sock_handler(c, ref.idx, ev[i].events);
				break;
			case EREF_TCP:
			case EREF_TCP_LISTEN:
			case EREF_TCP_TIMER:
			case EREF_TCP_SPLICE:
				tcp_sock_handler(c, ref.u64, ev[i].events);
				break;
			case EREF_UDP:
			case EREF_UDP_LISTEN:
				udp_sock_handler(c, ref.u64, ev[i].events);
				break;
			default:
				break;
			}
		}
		tap_flush(c);
		if (n <= 0)
			break;
	}
}

/* timers() - what the loop does when module timers are due. */
static void timers(struct ctx *c)
{
	c->timer_armed = false;
	ndp_timer(c);
	icmp_timer(c);
	tcp_timer(c);
	udp_timer(c);
}

void fuzz_frame_ctx_reset(struct ctx *c)
{
	struct flow *fl, *nx;

	for (fl = flow_first(&c->flows, FLOW_TCP); fl; fl = nx) {
		nx = flow_next(&c->flows, fl);
		tcp_conn_close(c, fl, true);
	}
	udp_close_all(c);
	test_advance(c, 24 * 3600 * 1000);	/* every ping flow idles out */
	icmp_timer(c);
	c->guest_mac_known = false;
	memset(&c->guest_seen4, 0, sizeof(c->guest_seen4));
	memset(&c->guest_seen6, 0, sizeof(c->guest_seen6));
	memset(&c->guest_ll6, 0, sizeof(c->guest_ll6));
	test_tx_reset(c);
}

/* fix_l4() - transport checksum of proto over l4[0..l4len). */
static void fix_l4(uint8_t *l4, size_t l4len, uint8_t proto, bool v6,
		   const uint8_t *src, const uint8_t *dst)
{
	size_t off;
	uint16_t s;

	switch (proto) {
	case IPPROTO_TCP:
		off = 16;
		break;
	case IPPROTO_UDP:
		off = 6;
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		off = 2;
		break;
	default:
		return;
	}
	if (off + 2 > l4len)
		return;
	wr16(l4 + off, 0);
	if (v6) {
		struct in6_addr a, b;

		memcpy(&a, src, 16);
		memcpy(&b, dst, 16);
		s = csum_l4_6(&a, &b, proto, l4, l4len);
	} else if (proto == IPPROTO_ICMP) {
		s = csum(l4, l4len);
	} else {
		struct in_addr a, b;

		memcpy(&a, src, 4);
		memcpy(&b, dst, 4);
		s = csum_l4_4(a, b, proto, l4, l4len);
	}
	if (proto == IPPROTO_UDP && !s)
		s = 0xffff;
	wr16(l4 + off, s);
}

/* fix_ip4() - IPv4 header checksum, then the transport one. */
static void fix_ip4(uint8_t *l3, size_t len)
{
	size_t ihl, tot;

	if (len < IP4_HLEN)
		return;
	ihl = (size_t)(l3[0] & 0xf) * 4;
	tot = rd16(l3 + 2);
	if (ihl < IP4_HLEN || ihl > len || tot < ihl || tot > len)
		return;
	wr16(l3 + 10, 0);
	wr16(l3 + 10, csum(l3, ihl));
	fix_l4(l3 + ihl, tot - ihl, l3[9], false, l3 + 12, l3 + 16);
}

/* fix_ip6() - walk extension headers like pkt_parse(), then fix_l4(). */
static void fix_ip6(uint8_t *l3, size_t len)
{
	size_t end, off = IP6_HLEN;
	uint8_t nh;
	int hops;

	if (len < IP6_HLEN)
		return;
	end = IP6_HLEN + rd16(l3 + 4);
	if (end > len)
		return;
	nh = l3[6];
	for (hops = 0; hops < 8; hops++) {
		if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING &&
		    nh != IPPROTO_DSTOPTS)
			break;
		if (end - off < 8 || ((size_t)l3[off + 1] + 1) * 8 > end - off)
			return;
		nh = l3[off];
		off += ((size_t)l3[off + 1] + 1) * 8;
	}
	fix_l4(l3 + off, end - off, nh, true, l3 + 8, l3 + 24);
}

void fuzz_fix_csums(uint8_t *f, size_t len)
{
	if (len < ETH_HLEN_)
		return;
	if (rd16(f + 12) == ETH_P_IP_)
		fix_ip4(f + ETH_HLEN_, len - ETH_HLEN_);
	else if (rd16(f + 12) == ETH_P_IPV6_)
		fix_ip6(f + ETH_HLEN_, len - ETH_HLEN_);
}

/* batch_add() - append frame [d, d+len) to the receive batch; its first
 * pfx bytes are the link prefix (a virtio-net header) before the frame.
 * Shorter input is dropped as the tap backend drops it. */
static void batch_add(struct ctx *c, size_t *used, const uint8_t *d,
		      size_t len, bool fix, size_t pfx)
{
	struct rx_batch *rx = &c->link.rx;

	if (rx->n == RX_FRAMES_MAX || *used + len > RX_BUF_SIZE)
		return;
	if (len < pfx) {
		drop(c, DROP_VNET_SHORT);
		return;
	}
	memcpy(rx->buf + *used, d, len);
	if (fix)
		fuzz_fix_csums(rx->buf + *used + pfx, len - pfx);
	rx->f[rx->n].off = (uint32_t)(*used + pfx);
	rx->f[rx->n].len = (uint32_t)(len - pfx);
	rx->n++;
	*used += len;
}

/* vnet_fill_prefix() - the zero header of a frame without offloads. */
static void vnet_fill_prefix(uint8_t *pfx, size_t len)
{
	vnet_hdr_write(pfx, len, NULL);
}

/* link_mode() - the harness's capture link, or (FZ_VNET) the same with
 * virtio-net headers and offloads towards the guest. */
static void link_mode(struct ctx *c, bool vnet)
{
	static const struct link_ops *plain;
	static struct link_ops vops;

	if (!plain) {
		plain = c->link.ops;
		vops = *plain;
		vops.name = "capture (vnet)";
		vops.tx_prefix = VNET_HLEN;
		vops.vnet_hdr = true;
		vops.fill_prefix = vnet_fill_prefix;
	}
	if (c->link.ops != (vnet ? &vops : plain))
		tap_attach(c, vnet ? &vops : plain, -1);
	c->link.tx_gso = c->link.tx_csum_partial = vnet;
}

void fuzz_frames_feed(struct ctx *c, const uint8_t *data, size_t size)
{
	size_t used = 0, off = 1, pfx;
	uint8_t flags;

	if (!size)
		return;
	flags = data[0];
	pfx = flags & FZ_VNET ? VNET_HLEN : 0;
	link_mode(c, flags & FZ_VNET);
	c->link.rx.n = 0;
	if (!(flags & FZ_BATCH)) {
		batch_add(c, &used, data + 1, size - 1, flags & FZ_FIX_CSUM,
			  pfx);
	} else {
		while (size - off >= 2) {
			size_t len = MIN((size_t)rd16(data + off), size - off - 2);

			batch_add(c, &used, data + off + 2, len,
				  flags & FZ_FIX_CSUM, pfx);
			off += 2 + len;
		}
	}
	tap_input(c);
	if (flags & FZ_EVENTS)
		events(c);
	if (flags & FZ_TIMERS) {
		test_advance(c, 61000);
		timers(c);
	}
	tap_flush(c);
}

void fuzz_vu_mem(struct vu_dev *d, uint8_t *host, uint64_t gpa,
		 uint64_t uva, uint64_t size)
{
	memset(&d->mem, 0, sizeof(d->mem));
	d->mem.n = 1;
	d->mem.r[0].gpa = gpa;
	d->mem.r[0].size = size;
	d->mem.r[0].uva = uva;
	d->mem.r[0].host = host;
}

bool fuzz_vu_ring(struct vu_dev *d, unsigned int q, uint16_t num,
		  uint64_t desc, uint64_t stride)
{
	struct virtq *v = &d->vq[q];

	v->num = num;
	v->desc_uva = desc;
	v->avail_uva = desc + stride;
	v->used_uva = desc + 2 * stride;
	v->addr_set = v->started = v->enabled = true;
	return virtq_map(v, &d->mem);
}

bool fuzz_chunk_write(int fd, const uint8_t *data, size_t size, size_t *off)
{
	size_t n;

	if (*off >= size)
		return false;
	n = data[*off] == 255 ? size - *off - 1
			      : MIN((size_t)data[*off], size - *off - 1);
	if (n && write(fd, data + *off + 1, n) != (ssize_t)n)
		abort();
	*off += 1 + n;
	return true;
}

void fuzz_drain(int fd)
{
	char buf[65536];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}
