/* tap.c - the guest link's shared logic: batches, parsing, dispatch.
 *
 * Theory of operation: the backend (tap_dev.c, tap_stream.c, ...) fills
 * c->link.rx with whole frames. tap_input() parses each once with
 * pkt_parse(), learns the guest's MAC and addresses, and hands the checked
 * view to exactly one protocol handler, which returns DROP_NONE or a drop
 * reason that is counted here. After the batch, TCP and UDP get a
 * callback to flush deferred socket writes.
 *
 * Outbound frames are reserved and committed into c->link.tx (see tap.h)
 * and flushed by the backend after each read round (tap_handler()) and
 * once per event-loop iteration.
 * A backend that cannot wait for its fd (the qemu stream socket, whose
 * writes may end inside a frame) marks the link stalled instead and
 * leaves what it could not write at the front of the batch (tx.hold):
 * new frames queue behind, unsent, until the backend's tx_resume() has
 * written the held ones on EPOLLOUT (tap_handler()). Meanwhile the loop
 * reads no host socket (loop.c), so what still comes is bounded: frames
 * answering the guest and TCP data its ACKs let out. When a reservation
 * finds no room, the held frames move to the start of the buffer
 * (tx_compact()); only a batch that is full even then is dropped and
 * counted (TX_FULL), all but a partly written first frame, so the
 * newest go on. Nothing here ever waits for the guest.
 * pcap capture of both directions happens here, so it is the same for
 * every backend.
 *
 * Offloads: on a tap with virtio-net headers (link ops vnet_hdr) each
 * received frame's header is decoded here (vnet_hdr_parse()) and its
 * offload state handed to pkt_parse_off(); malformed headers are dropped
 * with a VNET_* reason. Outbound, every frame gets a header: zero for
 * ordinary frames (the backend's fill_prefix), GSO and partial checksum
 * for TCP data when the sender asks (tap_tx_commit_many_off()).
 * pcap sees GSO frames as they are, one big frame (PCAP_SNAPLEN is above
 * FRAME_MAX); partial checksums of received frames are completed before
 * capture, and senders use full checksums while capturing (tcp_tx.c), so
 * the capture always shows valid checksums.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "arp.h"
#include "checksum.h"
#include "dhcp.h"
#include "dhcpv6.h"
#include "ferry.h"
#include "log.h"
#include "ndp.h"
#include "pcap.h"
#include "pkt.h"
#include "util.h"
#include "vnet.h"
#include "wire.h"

static const uint8_t mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

void tap_init(struct ctx *c)
{
	c->link.fd = c->link.listen_fd = c->link.spare_fd = -1;
	c->link.tx.buf = alloc_startup(TX_BUF_SIZE);
	c->link.rx.buf = alloc_startup(RX_BUF_SIZE);
}

/* tx_reset() - an empty batch: nothing queued, nothing held. */
static void tx_reset(struct tx_batch *tx)
{
	tx->n = tx->hold = 0;
	tx->used = tx->hold_done = 0;
}

void tap_attach(struct ctx *c, const struct link_ops *ops, int fd)
{
	c->link.ops = ops;
	c->link.fd = fd;
	c->link.up = true;
	c->link.closing = false;
	c->link.tx_stalled = false;
	c->link.tx_gso = c->link.tx_csum_partial = c->link.rx_tso = false;
	c->link.tx_uso = false;
	tx_reset(&c->link.tx);
	c->link.rx.n = 0;
	c->link.rx.fill = 0;
	c->link.rx.consumed = 0;
}

void tap_detach(struct ctx *c)
{
	c->link.fd = -1;
	c->link.up = false;
	c->link.closing = false;
	c->link.tx_stalled = false;
	tx_reset(&c->link.tx);
	c->link.rx.fill = 0;
	c->link.rx.consumed = 0;
	c->link.rx.n = 0;
	c->guest_mac_known = false;
}

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
		return c->conf.no_tcp ? DROP_SERVICE_DISABLED : tcp_input(c, p);
	case IPPROTO_UDP:
		return c->conf.no_udp ? DROP_SERVICE_DISABLED : udp_input(c, p);
	default:
		return DROP_IP_PROTO;
	}
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
	if (!src4_ok(s))
		return DROP_IP4_SRC;
	if (in4_is_mcast_or_bcast(p->dst4))
		return DROP_MCAST_BCAST;
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
	if (p->l4proto == IPPROTO_UDP && p->udp.dport == 547)
		return c->conf.no_dhcpv6 ? DROP_SERVICE_DISABLED
					 : dhcpv6_input(c, p);
	if (in6_is_mcast(&p->src6) || IN6_IS_ADDR_LOOPBACK(&p->src6))
		return DROP_IP6_SRC;
	if (in6_is_mcast(&p->dst6))
		return DROP_MCAST_BCAST;
	if (in6_is_unspec(&p->src6))
		return DROP_IP6_SRC;
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
		 * (rx->next_round, tcp.c tcp_ack_carry()). */
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

/* tx_compact() - move the queued frames (held by a stalled link) to the
 * start of the buffer: the space of frames written since the batch was
 * last empty becomes free. Offsets never decrease along f[] (commits and
 * fault.c append), so the first frame starts the live bytes. */
static void tx_compact(struct tx_batch *tx)
{
	size_t from = tx->n ? tx->f[0].off : tx->used;
	unsigned int i;

	if (!from)
		return;
	memmove(tx->buf, tx->buf + from, tx->used - from);
	for (i = 0; i < tx->n; i++)
		tx->f[i].off -= (uint32_t)from;
	tx->used -= from;
}

/* tx_drop_queued() - a stalled link's batch is full even compacted: drop
 * the queued frames (TX_FULL) but a partly written first one, which the
 * peer must get whole, rather than refuse new ones: TCP resends what it
 * lost, and a producer that finds no room would have no event to come
 * back on. */
static void tx_drop_queued(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	unsigned int keep = tx->hold && tx->hold_done ? 1 : 0;

	while (tx->n > keep) {
		drop(c, DROP_TX_FULL);
		tx->n--;
	}
	tx->hold = MIN(tx->hold, keep);
	tx->used = keep ? tx->f[0].off + c->link.ops->tx_prefix +
			  tx->f[0].len : 0;
	tx_compact(tx);
}

/* tx_make_room() - room for new frames: flush the batch; if the link is
 * stalled (the frames stayed queued), compact it instead. The caller
 * checks what fits then. */
static void tx_make_room(struct ctx *c)
{
	tap_flush(c);
	if (c->link.tx_stalled)
		tx_compact(&c->link.tx);
}

void tap_link_down(struct ctx *c)
{
	if (!c->link.up)
		return;
	c->link.up = false;
	c->link.closing = true;
}

uint8_t *tap_tx_reserve(struct ctx *c, size_t max_len)
{
	struct tx_batch *tx = &c->link.tx;
	size_t need;

	if (!c->link.up)
		return NULL;
	need = c->link.ops->tx_prefix + max_len;
	if (max_len > FRAME_MAX || need > TX_BUF_SIZE)
		return NULL;
	if (tx->n == TX_FRAMES_MAX || tx->used + need > TX_BUF_SIZE) {
		tx_make_room(c);
		if (!c->link.up)
			return NULL;
		if (tx->n == TX_FRAMES_MAX || tx->used + need > TX_BUF_SIZE)
			tx_drop_queued(c);
	}
	tx->pending_off = tx->used;
	return tx->buf + tx->used + c->link.ops->tx_prefix;
}

void tap_tx_commit(struct ctx *c, size_t len)
{
	struct tx_batch *tx = &c->link.tx;
	size_t pfx = c->link.ops->tx_prefix;

	if (pfx)
		c->link.ops->fill_prefix(tx->buf + tx->pending_off, len);
	tx->f[tx->n].off = (uint32_t)tx->pending_off;
	tx->f[tx->n].len = (uint32_t)len;
	tx->n++;
	tx->used = tx->pending_off + pfx + len;
	c->stats.tx_frames++;
	c->stats.tx_bytes += len;
}

/* tx_slots() - how many slots of stride bytes fit in the batch now. */
static unsigned int tx_slots(const struct tx_batch *tx, size_t stride,
			     unsigned int n)
{
	size_t room = (TX_BUF_SIZE - tx->used) / stride;

	return (unsigned int)MIN(MIN((size_t)n, room),
				 (size_t)(TX_FRAMES_MAX - tx->n));
}

unsigned int tap_tx_reserve_many(struct ctx *c, size_t max_len,
				 uint8_t **frames, unsigned int n)
{
	struct tx_batch *tx = &c->link.tx;
	size_t pfx, stride;
	unsigned int i, k;

	if (!c->link.up || max_len > FRAME_MAX || !n)
		return 0;
	pfx = c->link.ops->tx_prefix;
	stride = ROUND_UP(pfx + max_len, 64);
	if (stride > TX_BUF_SIZE)
		return 0;
	if (tx_slots(tx, stride, n) < n && tx->n) {
		tx_make_room(c);
		if (!c->link.up)
			return 0;
		if (!tx_slots(tx, stride, n))
			tx_drop_queued(c);
	}
	k = tx_slots(tx, stride, n);
	tx->pending_off = tx->used;
	tx->pending_stride = stride;
	for (i = 0; i < k; i++)
		frames[i] = tx->buf + tx->used + i * stride + pfx;
	return k;
}

void tap_tx_commit_many(struct ctx *c, const size_t *lens, unsigned int k)
{
	tap_tx_commit_many_off(c, lens, k, NULL);
}

/* commit_many() - tap_tx_commit_many_off() (each: false, o for every
 * frame) and tap_tx_commit_many_offv() (each: frame i takes o[i]). */
static void commit_many(struct ctx *c, const size_t *lens, unsigned int k,
			const struct pkt_off *o, bool each)
{
	struct tx_batch *tx = &c->link.tx;
	size_t pfx = c->link.ops->tx_prefix;
	unsigned int i;

	for (i = 0; i < k; i++) {
		size_t slot = tx->pending_off + i * tx->pending_stride;
		size_t off = tx->used;

		if (!lens[i])
			continue;
		/* Keep frames contiguous (stream backends send the buffer
		 * as one run): move the frame down to the end of the last
		 * one; off <= slot, so the move never overlaps wrongly. */
		if (off != slot)
			memmove(tx->buf + off + pfx, tx->buf + slot + pfx,
				lens[i]);
		if (o && c->link.ops->vnet_hdr)
			vnet_hdr_write(tx->buf + off, lens[i],
				       each ? &o[i] : o);
		else if (pfx)
			c->link.ops->fill_prefix(tx->buf + off, lens[i]);
		tx->f[tx->n].off = (uint32_t)off;
		tx->f[tx->n].len = (uint32_t)lens[i];
		tx->n++;
		tx->used = off + pfx + lens[i];
		c->stats.tx_frames++;
		c->stats.tx_bytes += lens[i];
	}
}

void tap_tx_commit_many_off(struct ctx *c, const size_t *lens, unsigned int k,
			    const struct pkt_off *o)
{
	commit_many(c, lens, k, o, false);
}

void tap_tx_commit_many_offv(struct ctx *c, const size_t *lens,
			     unsigned int k, const struct pkt_off *offs)
{
	commit_many(c, lens, k, offs, true);
}

void tap_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;

	if (c->link.tx_stalled)		/* queued until tx_resume() */
		return;
#ifdef FERRY_TEST
	fault_tx(c);		/* --fault: drop, duplicate, reorder */
#endif
	if (!tx->n) {
		tx->used = 0;	/* after the last held frames went */
		return;
	}
	if (c->pcap_fd >= 0) {
		struct iovec iov[TX_FRAMES_MAX];
		size_t pfx = c->link.ops->tx_prefix;
		unsigned int i;

		for (i = 0; i < tx->n; i++) {
			iov[i].iov_base = tx->buf + tx->f[i].off + pfx;
			iov[i].iov_len = tx->f[i].len;
		}
		pcap_frames(c, iov, tx->n);
	}
	if (c->link.ops->flush(c) < 0)
		tap_link_down(c);
	else if (c->link.tx_stalled)	/* the backend holds the rest */
		return;
	tx_reset(tx);
}

uint8_t *tap_eth_to_guest(const struct ctx *c, uint8_t *f, uint16_t type)
{
	const uint8_t *dst = c->guest_mac_known ? c->guest_mac : mac_bcast;

	return eth_build(f, dst, c->conf.our_mac, type);
}

/* l4_csum_field() - offset of the checksum in a transport header, or -1. */
static int l4_csum_field(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return TCP_OFF_CSUM;
	case IPPROTO_UDP:
		return UDP_OFF_CSUM;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return ICMP_OFF_CSUM;
	default:
		return -1;
	}
}

bool tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		  uint8_t proto, const void *l4, size_t l4len)
{
	return tap_send_ip4_mac(c, NULL, src, dst, proto, l4, l4len);
}

bool tap_send_ip4_mac(struct ctx *c, const uint8_t *mac, struct in_addr src,
		      struct in_addr dst, uint8_t proto, const void *l4,
		      size_t l4len)
{
	size_t len = ETH_HLEN_ + IP4_HLEN + l4len;
	int off = l4_csum_field(proto);
	uint8_t *f, *l3, *t;

	if (l4len > 65535 - IP4_HLEN || !(f = tap_tx_reserve(c, len)))
		return false;
	l3 = mac ? eth_build(f, mac, c->conf.our_mac, ETH_P_IP_)
		 : tap_eth_to_guest(c, f, ETH_P_IP_);
	t = ip4_build(l3, src, dst, proto, l4len, 0);
	memcpy(t, l4, l4len);
	if (off >= 0 && (size_t)off + 2 <= l4len) {
		uint16_t sum;

		wr16(t + off, 0);
		sum = proto == IPPROTO_ICMP ? csum(t, l4len)
					    : csum_l4_4(src, dst, proto, t, l4len);
		if (proto == IPPROTO_UDP && !sum)
			sum = 0xffff;
		wr16(t + off, sum);
	}
	tap_tx_commit(c, len);
	return true;
}

bool tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		  const struct in6_addr *dst, uint8_t proto, const void *l4,
		  size_t l4len)
{
	return tap_send_ip6_mac(c, NULL, src, dst, proto, l4, l4len);
}

bool tap_send_ip6_mac(struct ctx *c, const uint8_t *mac,
		      const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, const void *l4, size_t l4len)
{
	size_t len = ETH_HLEN_ + IP6_HLEN + l4len;
	int off = l4_csum_field(proto);
	uint8_t *f, *l3, *t;
	uint8_t hlim = proto == IPPROTO_ICMPV6 ? 255 : 64;

	if (l4len > 65535 || !(f = tap_tx_reserve(c, len)))
		return false;
	l3 = mac ? eth_build(f, mac, c->conf.our_mac, ETH_P_IPV6_)
		 : tap_eth_to_guest(c, f, ETH_P_IPV6_);
	t = ip6_build(l3, src, dst, proto, l4len, hlim);
	memcpy(t, l4, l4len);
	if (off >= 0 && (size_t)off + 2 <= l4len) {
		uint16_t sum;

		wr16(t + off, 0);
		sum = csum_l4_6(src, dst, proto, t, l4len);
		if (proto == IPPROTO_UDP && !sum)
			sum = 0xffff;
		wr16(t + off, sum);
	}
	tap_tx_commit(c, len);
	return true;
}
