/* tap.c - the guest link's receive dispatcher: parsing, dispatch.
 *
 * Theory of operation: the backend (tap_dev.c, tap_stream.c, ...) fills
 * c->link.rx with whole frames. tap_input() parses each once with
 * pkt_parse(), learns the guest's MAC and addresses, and hands the checked
 * view to exactly one protocol handler, which returns DROP_NONE or a drop
 * reason that is counted here. After the batch, TCP and UDP get a
 * callback to flush deferred socket writes.
 *
 * Outbound frames go through the transmit service (tap_tx.c); the frames
 * each read round produced are flushed before the next round is read
 * (tap_handler()), and on EPOLLOUT a stalled link's backend first writes
 * what it held (tx_resume()).
 * pcap capture of received frames happens here, so it is the same for
 * every backend.
 *
 * Offloads: on a tap with virtio-net headers (link ops vnet_hdr) each
 * received frame's header is decoded here (vnet_hdr_parse()) and its
 * offload state handed to pkt_parse_off(); malformed headers are dropped
 * with a VNET_* reason. pcap sees GSO frames as they are, one big frame
 * (PCAP_SNAPLEN is above FRAME_MAX); partial checksums of received frames
 * are completed before capture, so the capture shows valid checksums.
 */
#include <sys/epoll.h>

#include "flow_log.h"
#include "arp.h"
#include "dhcp.h"
#include "dhcpv6.h"
#include "ferry.h"
#include "igmp.h"
#include "ndp.h"
#include "pcap.h"
#include "pkt.h"
#include "util.h"
#include "vnet.h"

/* learn_guest_mac() - remember the guest's MAC (pkt_parse() refused a
 * multicast source already). */
static void learn_guest_mac(struct ctx *c, const struct pkt *p)
{
	if (!c->guest_mac_known || memcmp(c->guest_mac, p->eth_src, 6)) {
		memcpy(c->guest_mac, p->eth_src, 6);
		c->guest_mac_known = true;
	}
}

/* src4_ok() - whether an IPv4 source (host order) can be a guest's own
 * address: not unspecified, multicast, broadcast or loopback. */
static bool src4_ok(uint32_t s)
{
	return s && !IN_MULTICAST(s) && s != INADDR_BROADCAST &&
	       (s >> 24) != 127;
}

/* learn_guest6() - remember the guest's IPv6 source address, link-local
 * or not, if it can be the guest's own: the caller refused IPv4-mapped
 * sources; multicast, loopback and unspecified ones teach nothing (the
 * frame is dropped for them later, or is NDP's DAD). */
static void learn_guest6(struct ctx *c, const struct in6_addr *a)
{
	if (in6_is_mcast(a) || IN6_IS_ADDR_LOOPBACK(a) || in6_is_unspec(a))
		return;
	if (IN6_IS_ADDR_LINKLOCAL(a))
		c->guest_ll6 = *a;
	else
		c->guest_seen6 = *a;
}

/* dispatch_l4() - transport handler for a packet that passed the
 * family's address checks (ICMP here means ICMPv4 or ICMPv6 echo). */
static enum drop_reason dispatch_l4(struct ctx *c, const struct pkt *p)
{
	switch (p->l4proto) {
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return icmp_input(c, p);
	case IPPROTO_TCP:
		flow_log_segment(p);		/* --trace, rate-limited */
		return c->conf.no_tcp ? DROP_SERVICE_DISABLED : tcp_input(c, p);
	case IPPROTO_UDP:
		return c->conf.no_udp ? DROP_SERVICE_DISABLED : udp_input(c, p);
	default:
		return DROP_IP_PROTO;
	}
}

/* dispatch_mcast() - a packet to a multicast or broadcast address:
 * UDP goes to udp.c, which forwards it (mcast.c) unless --no-multicast;
 * any other protocol is refused. */
static enum drop_reason dispatch_mcast(struct ctx *c, const struct pkt *p)
{
	if (p->l4proto != IPPROTO_UDP || c->conf.no_multicast)
		return DROP_MCAST_BCAST;
	return c->conf.no_udp ? DROP_SERVICE_DISABLED : udp_input(c, p);
}

/* dispatch_ip4() - choose the handler for a validated IPv4 packet. */
static enum drop_reason dispatch_ip4(struct ctx *c, const struct pkt *p)
{
	uint32_t s = ntohl(p->src4.s_addr);

	if (!c->conf.ip4.enabled)
		return DROP_IP_DISABLED;
	if (src4_ok(s))		/* only a source the checks accept */
		c->guest_seen4 = p->src4;
	if (p->l4proto == IPPROTO_UDP && p->udp.dport == 67)
		return c->conf.no_dhcp ? DROP_SERVICE_DISABLED
				       : dhcp_input(c, p);
	if (p->l4proto == IPPROTO_IGMP)	/* from 0.0.0.0 too (RFC 3376 4.2.13) */
		return igmp_input(c, p);
	if (!src4_ok(s))
		return DROP_IP4_SRC;
	if (in4_is_mcast_or_bcast(p->dst4))
		return dispatch_mcast(c, p);
	return dispatch_l4(c, p);
}

/* dispatch_ip6() - choose the handler for a validated IPv6 packet. */
static enum drop_reason dispatch_ip6(struct ctx *c, const struct pkt *p)
{
	if (!c->conf.ip6.enabled)
		return DROP_IP_DISABLED;
	/* IPv4-mapped addresses never appear on the wire (RFC 4291
	 * 2.5.5.2), and flows hold IPv4 addresses in that very form (union
	 * inany): such a frame would become an IPv4 flow, -6 or not. */
	if (IN6_IS_ADDR_V4MAPPED(&p->src6))
		return DROP_IP6_SRC;
	if (IN6_IS_ADDR_V4MAPPED(&p->dst6))
		return DROP_IP6_DST;
	learn_guest6(c, &p->src6);
	if (p->l4proto == IPPROTO_ICMPV6 && p->icmp.type >= 133 &&
	    p->icmp.type <= 137)
		return c->conf.no_ndp ? DROP_SERVICE_DISABLED : ndp_input(c, p);
	if (p->l4proto == IPPROTO_ICMPV6 && igmp_is_mld(p->icmp.type))
		return igmp_input(c, p);	/* from :: too (RFC 3810 5.2.13) */
	if (p->l4proto == IPPROTO_UDP && p->udp.dport == 547)
		return c->conf.no_dhcpv6 ? DROP_SERVICE_DISABLED
					 : dhcpv6_input(c, p);
	if (in6_is_mcast(&p->src6) || IN6_IS_ADDR_LOOPBACK(&p->src6))
		return DROP_IP6_SRC;
	if (in6_is_unspec(&p->src6))
		return DROP_IP6_SRC;
	if (in6_is_mcast(&p->dst6))
		return dispatch_mcast(c, p);
	return dispatch_l4(c, p);
}

/* tap_dispatch() - parse one frame (and its virtio-net header, on links
 * that have one) and hand it to its handler. */
static void tap_dispatch(struct ctx *c, const uint8_t *frame, size_t len)
{
	enum drop_reason r = DROP_NONE;
	struct pkt_off o = { 0 };
	struct pkt p;

	c->stats.rx_frames++;
	c->stats.rx_bytes += len;
	if (c->link.ops->vnet_hdr)
		r = vnet_hdr_parse(frame - VNET_HLEN, len, &o);
	if (r == DROP_NONE)
		r = pkt_parse_off(frame, len, true, &o, &p);
	if (r == DROP_NONE) {
		learn_guest_mac(c, &p);
		if (p.ethertype == ETH_P_ARP_)
			r = arp_input(c, &p);
		else if (!p.is_v6)
			r = dispatch_ip4(c, &p);
		else
			r = dispatch_ip6(c, &p);
	}
	if (r != DROP_NONE)
		drop(c, r);
}

void tap_input(struct ctx *c)
{
	struct rx_batch *rx = &c->link.rx;
	struct iovec iov[RX_FRAMES_MAX];
	unsigned int i;

#ifdef FERRY_TEST
	fault_rx(c);		/* --fault: drop, duplicate, reorder */
#endif
	if (c->pcap_fd >= 0) {
		for (i = 0; i < rx->n; i++) {
			uint8_t *f = rx->buf + rx->f[i].off;
			struct pkt_off o;

			if (c->link.ops->vnet_hdr &&
			    vnet_hdr_parse(f - VNET_HLEN, rx->f[i].len,
					   &o) == DROP_NONE)
				vnet_csum_complete(f, rx->f[i].len, &o);
			iov[i].iov_base = f;
			iov[i].iov_len = rx->f[i].len;
		}
		pcap_frames(c, iov, rx->n);
	}
	for (i = 0; i < rx->n; i++)
		tap_dispatch(c, rx->buf + rx->f[i].off, rx->f[i].len);
	rx->n = 0;
	tcp_input_done(c);
	udp_input_done(c);
}

/* tap_rx_want() - how many frames to read from a tap fd now. A tap fd
 * gives one frame per read(), and only a read that fails with EAGAIN
 * tells that no more are queued. When the guest sends one frame at a
 * time (request/response), that empty read is a third of the calls per
 * frame: read just one and let the (level-triggered) epoll_wait report
 * the fd again if more came. Read until empty after a read that found
 * more than one frame, and when the link was busy in the loop iteration
 * before this one too. */
static unsigned int tap_rx_want(struct ctx *c)
{
	struct rx_batch *rx = &c->link.rx;
	bool busy = rx->iter + 1 == c->loop_iter;

	rx->iter = c->loop_iter;
	return rx->burst || busy ? RX_FRAMES_MAX : 1;
}

void tap_handler(struct ctx *c, uint32_t events)
{
	struct rx_batch *rx = &c->link.rx;
	unsigned int frames = 0;
	int rounds, n = 0;

	/* The link can take frames again: the rest of the cut frame first,
	 * then what was queued behind it. */
	if ((events & EPOLLOUT) && c->link.tx_stalled) {
		n = c->link.ops->tx_resume(c);
		if (n < 0) {
			tap_link_down(c);
			return;
		}
		if (n > 0)
			tap_flush(c);
		n = 0;
	}
	rx->want = tap_rx_want(c);
	/* Bounded: a flooding guest cannot starve host sockets. */
	for (rounds = 0; rounds < 64 && frames < 8 * RX_FRAMES_MAX &&
	     c->link.up; rounds++) {
		n = c->link.ops->rx(c);
		if (rx->want > 1)
			rx->burst = n > 1 || rx->more;
		frames += rx->n;
		/* the loop's conditions below, known before the input */
		rx->next_round = n > 0 && rx->more && rx->want > 1 &&
				 rounds + 1 < 64 && frames < 8 * RX_FRAMES_MAX;
		if (rx->n)
			tap_input(c);
		/* The round's ACKs (and the data they let out) go now: the
		 * guest sends on while we read the next round. Only ACKs
		 * well inside the window wait for the next round's
		 * (rx->next_round, tcp_in.c tcp_ack_carry()). */
		tap_flush(c);
		if (n <= 0 || !rx->more || rx->want == 1)
			break;
	}
	rx->next_round = false;
	if (n >= 0 && tcp_input_pending(c)) {	/* ACKs carried on */
		tcp_input_done(c);
		tap_flush(c);
	}
	if (n < 0)
		tap_link_down(c);
}
