/* fuzz_lib.c - network isolation, the all-services context and the frame
 * input decoder shared by the fuzz targets and the corpus replay test
 * (see fuzz.h for the input format and why isolation is needed).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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
#include "util.h"
#include "test/unit/unit.h"

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

struct ctx *fuzz_frame_ctx(void)
{
	struct ctx *c = test_ctx();

	log_set_level(LOG_LVL_ERR);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->pcap_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	nat_init(c);
	icmp_init(c);
	udp_init(c);
	ndp_init(c);
	return c;
}

/* advance() - move the context's clock forward by ms. */
static void advance(struct ctx *c, int64_t ms)
{
	c->now.tv_sec += ms / 1000;
	c->now.tv_nsec += (ms % 1000) * 1000000;
	if (c->now.tv_nsec >= 1000000000) {
		c->now.tv_sec++;
		c->now.tv_nsec -= 1000000000;
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
	udp_close_all(c);
	advance(c, 24 * 3600 * 1000);	/* every ping flow idles out */
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

/* batch_add() - append frame [d, d+len) to the receive batch. */
static void batch_add(struct ctx *c, size_t *used, const uint8_t *d,
		      size_t len, bool fix)
{
	struct rx_batch *rx = &c->link.rx;

	if (rx->n == RX_FRAMES_MAX || *used + len > RX_BUF_SIZE)
		return;
	memcpy(rx->buf + *used, d, len);
	if (fix)
		fuzz_fix_csums(rx->buf + *used, len);
	rx->f[rx->n].off = (uint32_t)*used;
	rx->f[rx->n].len = (uint32_t)len;
	rx->n++;
	*used += len;
}

void fuzz_frames_feed(struct ctx *c, const uint8_t *data, size_t size)
{
	size_t used = 0, off = 1;
	uint8_t flags;

	if (!size)
		return;
	flags = data[0];
	c->link.rx.n = 0;
	if (!(flags & FZ_BATCH)) {
		batch_add(c, &used, data + 1, size - 1, flags & FZ_FIX_CSUM);
	} else {
		while (size - off >= 2) {
			size_t len = MIN((size_t)rd16(data + off), size - off - 2);

			batch_add(c, &used, data + off + 2, len,
				  flags & FZ_FIX_CSUM);
			off += 2 + len;
		}
	}
	tap_input(c);
	if (flags & FZ_TIMERS) {
		advance(c, 61000);
		timers(c);
	}
	tap_flush(c);
}
