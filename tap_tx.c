/* tap_tx.c - the guest link's transmit service: the batch, reserve and
 * commit, flush, and the small senders (tap_send_ip4/6()).
 *
 * Theory of operation: protocol code reserves room for a frame inside
 * c->link.tx (tap_tx_reserve(), or a run of equal slots with
 * tap_tx_reserve_many()), builds it in place after the backend's prefix
 * and commits its length; tap_flush() hands the batch to the backend
 * (link_ops flush), after each read round (tap.c tap_handler()) and once
 * per event-loop iteration. This file calls only down: the backend
 * through link_ops, pcap, fault injection, the drop counters.
 *
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
 *
 * Offloads: on a link with virtio-net headers every frame gets one: zero
 * for ordinary frames (the backend's fill_prefix), GSO and partial
 * checksum for TCP data when the sender asks (tap_tx_commit_many_off()).
 * Frames sent are captured here (pcap), before the backend writes them;
 * senders use full checksums while capturing (tcp_out.c), so the capture
 * always shows valid checksums.
 *
 * Padding: every frame leaves at least ETH_ZLEN_ (60) bytes long, the
 * 802.3 minimum without the FCS, on every backend: a commit zero-fills
 * what a short frame lacks and queues the padded length, so the stream
 * socket's length prefix, the vnet header and pcap all see 60 bytes. The
 * L3 lengths inside are left as they were: the receiver ignores the
 * padding (RFC 894). Reservations therefore take room for at least
 * ETH_ZLEN_ bytes, whatever the caller asked. A virtio-net header's GSO
 * decision looks at the unpadded length: the guest's kernel would split
 * the padding of a short UDP frame into datagrams of its own.
 *
 * Attaching and detaching a backend (tap_attach(), tap_detach()) resets
 * the batches; they live here, with the buffers (tap_init()).
 */
#include <string.h>

#include "checksum.h"
#include "ferry.h"
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

/* tx_pad() - zero-fill frame (len bytes) up to ETH_ZLEN_; the length to
 * queue. The reservation left room for ETH_ZLEN_ bytes. */
static size_t tx_pad(uint8_t *frame, size_t len)
{
	if (len >= ETH_ZLEN_)
		return len;
	memset(frame + len, 0, ETH_ZLEN_ - len);
	return ETH_ZLEN_;
}

uint8_t *tap_tx_reserve(struct ctx *c, size_t max_len)
{
	struct tx_batch *tx = &c->link.tx;
	size_t need;

	if (!c->link.up)
		return NULL;
	need = c->link.ops->tx_prefix + MAX(max_len, (size_t)ETH_ZLEN_);
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

	len = tx_pad(tx->buf + tx->pending_off + pfx, len);
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
	stride = ROUND_UP(pfx + MAX(max_len, (size_t)ETH_ZLEN_), 64);
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
		size_t off = tx->used, len;

		if (!lens[i])
			continue;
		/* Keep frames contiguous (stream backends send the buffer
		 * as one run): move the frame down to the end of the last
		 * one; off <= slot, so the move never overlaps wrongly. */
		if (off != slot)
			memmove(tx->buf + off + pfx, tx->buf + slot + pfx,
				lens[i]);
		len = tx_pad(tx->buf + off + pfx, lens[i]);
		/* GSO is decided on the frame's own bytes: padding after a
		 * one-byte datagram must not look like more segments. */
		if (o && c->link.ops->vnet_hdr)
			vnet_hdr_write(tx->buf + off, lens[i],
				       each ? &o[i] : o);
		else if (pfx)
			c->link.ops->fill_prefix(tx->buf + off, len);
		tx->f[tx->n].off = (uint32_t)off;
		tx->f[tx->n].len = (uint32_t)len;
		tx->n++;
		tx->used = off + pfx + len;
		c->stats.tx_frames++;
		c->stats.tx_bytes += len;
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
