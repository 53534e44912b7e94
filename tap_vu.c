/* tap_vu.c - guest link backend for vhost-user: frames through the
 * guest's virtqueues in shared memory.
 *
 * Buffer plumbing only, like the other backends (tap.h): every frame, both
 * ways, carries the 12-byte virtio-net header (virtio 1.x), which tap.c
 * decodes (vnet_hdr_parse(), so the guest's checksum and TSO offloads go
 * through the same checks as a tap's) and encodes.
 *
 * Receive (frames from the guest, its transmit queue 1): each chain the
 * guest offers is copied, header and frame, into the link's rx batch, and
 * returned to the used ring at once (a copy, so the guest may reuse the
 * buffer while we parse). The used ring is published and the guest
 * notified once per batch. When the batch fills up before the ring is
 * empty, we kick the queue's eventfd ourselves so the loop comes back.
 * While we drain the ring the guest is asked not to kick
 * (VQ_USED_F_NO_NOTIFY): a kick then would only wake us for chains this
 * drain takes anyway. Kicks are on again before we look at the ring for
 * the last time, so a chain offered after that look is always kicked.
 *
 * Flush (frames to the guest, its receive queue 0): each queued frame is
 * copied into the chains the guest posted. With MRG_RXBUF (always
 * negotiated by Linux) one frame may span several chains; num_buffers in
 * the header says how many. If the guest has posted too little room, the
 * chains taken for that frame are given back unused and the frame is
 * dropped and counted (TCP recovers it). Used entries are published and
 * the guest notified once per flush. We never wait for receive buffers
 * (a frame without room is dropped), so the guest is asked never to kick
 * the receive queue: each kick costs it an exit to qemu for nothing.
 *
 * While the guest migrates, the pages each frame is written into are
 * marked in the dirty log (vu_log.c), as virtq.c marks the used rings.
 *
 * Guest memory is shared with a guest that may rewrite it at any time:
 * virtq.c checks every index and address; here lengths come from our own
 * copies only.
 */
#include <errno.h>
#include <unistd.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"
#include "vhost_user.h"
#include "vnet.h"
#include "wire.h"

/* seccomp(vu): read write
 *   (kick and call eventfds) */

/* Slot of one received frame: header + largest frame, 64-byte aligned. */
#define VU_SLOT		ROUND_UP(VNET_HLEN + FRAME_MAX, 64)
#define VU_MRG_MAX	256	/* chains for one frame to the guest */

/* kick_self() - make the loop come back to queue q. */
static void kick_self(const struct virtq *q)
{
	uint64_t one = 1;

	if (q->kick_fd >= 0 && write(q->kick_fd, &one, sizeof(one)) < 0)
		debug("vhost-user: self-kick: %s", strerror(errno));
}

/* kick_read() - consume the transmit ring's kick. An end of file or an
 * error means the front-end passed something other than an eventfd: it
 * would stay readable and spin the loop, so the ring stops (counted)
 * until the front-end starts it again. Returns false then. */
static bool kick_read(struct ctx *c, struct virtq *q)
{
	uint64_t ev;
	ssize_t n = read(q->kick_fd, &ev, sizeof(ev));

	if (n == sizeof(ev))
		c->link.vu->kicks += ev;	/* ours included */
	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
		return true;
	warn("vhost-user: transmit kick fd %s: ring stopped",
	     n ? strerror(errno) : "at end of file");
	ep_del(c, q->kick_fd);
	q->broken = true;
	drop(c, DROP_VU_RING);
	return false;
}

/* take_chain() - copy one transmit chain into rx at *off; returns
 * DROP_NONE with the frame recorded, or why it was refused. */
static enum drop_reason take_chain(struct rx_batch *rx, size_t *off,
				   const struct vq_elem *e)
{
	if (e->len < VNET_HLEN)
		return DROP_VNET_SHORT;
	if (e->len > VNET_HLEN + FRAME_MAX)
		return DROP_ETH_TOO_BIG;
	iov_copy_out(e->iov, e->niov, rx->buf + *off, e->len);
	rx->f[rx->n].off = (uint32_t)(*off + VNET_HLEN);
	rx->f[rx->n].len = (uint32_t)(e->len - VNET_HLEN);
	rx->n++;
	*off += ROUND_UP(e->len, 64);
	return DROP_NONE;
}

/* vu_rx() - frames the guest transmitted, into c->link.rx. */
static int vu_rx(struct ctx *c)
{
	struct vu_dev *d = c->link.vu;
	struct virtq *q = &d->vq[VU_TXQ];
	struct rx_batch *rx = &c->link.rx;
	unsigned int popped = 0;
	struct vq_elem e;
	size_t off = 0;

	rx->n = 0;
	rx->more = false;
	if (q->kick_fd >= 0 && !kick_read(c, q))
		return 0;
	virtq_set_no_notify(q, true);
	/* At most a ring's worth of chains: refused ones take no room in
	 * the batch, and a guest offering them as fast as we take them
	 * would keep us here for ever. */
	while (rx->n < RX_FRAMES_MAX && off + VU_SLOT <= RX_BUF_SIZE &&
	       popped++ < q->num) {
		enum drop_reason r;
		int k = virtq_pop(q, &d->mem, false, &e);

		if (k == 0)
			break;
		if (k == -2) {
			warn("vhost-user: transmit ring broken, stopped");
			drop(c, DROP_VU_RING);
			break;
		}
		r = k < 0 ? DROP_VU_CHAIN : take_chain(rx, &off, &e);
		virtq_push(q, e.head, 0);
		if (r != DROP_NONE)
			drop(c, r);
	}
	virtq_set_no_notify(q, false);
	if (virtq_publish(q))
		d->notifies++;
	rx->more = virtq_pending(q);	/* after kicks are back on */
	if (rx->more)
		kick_self(q);
	return (int)rx->n;
}

/* iov_write_at() - write len bytes at offset off of the pieces. */
static void iov_write_at(const struct iovec *iov, unsigned int n, size_t off,
			 const void *buf, size_t len)
{
	unsigned int i;

	for (i = 0; i < n && len; i++) {
		size_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		k = MIN(iov[i].iov_len - off, len);
		memcpy((uint8_t *)iov[i].iov_base + off, buf, k);
		buf = (const uint8_t *)buf + k;
		len -= k;
		off = 0;
	}
}

/* put_frame() - copy len bytes at p (header, then frame) into receive
 * chains; returns DROP_NONE, or the reason (chains given back). A
 * malformed chain (or a first one too short for the header, which holds
 * num_buffers) is returned to the guest empty (and counted), with the
 * chains taken before it for the same frame (their used entries must
 * stay contiguous): the frame starts again after it. Every chain popped
 * is consumed, and *bad_left (malformed chains this flush still takes)
 * bounds the loop even against a guest offering bad chains as fast as
 * we take them: once it is spent, a malformed chain drops the frame. */
static enum drop_reason put_frame(struct ctx *c, struct virtq *q,
				  const uint8_t *p, size_t len,
				  unsigned int *bad_left)
{
	struct vu_dev *d = c->link.vu;
	unsigned int max = d->features & VU_F_MRG_RXBUF ? VU_MRG_MAX : 1;
	uint16_t heads[VU_MRG_MAX];
	struct vq_elem el[2];	/* the frame's first chain, the current one */
	unsigned int k = 0, i;
	size_t done = 0;
	uint8_t nb[2];

	if (!len)
		return DROP_NONE;
	while (done < len) {
		struct vq_elem *cur = &el[k ? 1 : 0];
		int r = k < max ? virtq_pop(q, &d->mem, true, cur) : 0;
		size_t n;

		if (r == 1 && !k && cur->len < VNET_HLEN)
			r = -1;		/* num_buffers must fit in it */
		if (r == -1) {		/* return it and the frame's so far */
			q->used_idx = (uint16_t)(q->used_idx - k);
			for (i = 0; i < k; i++)
				virtq_push(q, heads[i], 0);
			virtq_push(q, cur->head, 0);
			drop(c, DROP_VU_CHAIN);
			if (!*bad_left || !--*bad_left)
				return DROP_VU_CHAIN;
			k = 0;
			done = 0;
			continue;
		}
		if (r <= 0)
			goto undo;
		n = iov_copy_in(cur->iov, cur->niov, p + done, len - done);
		/* num_buffers, written below, is in the first chain's n */
		vu_log_iov(d->data_log, &d->mem, cur->iov, cur->niov, n);
		virtq_push(q, cur->head, (uint32_t)n);
		heads[k++] = cur->head;
		done += n;
	}
	nb[0] = (uint8_t)k;		/* wire: little-endian bytes */
	nb[1] = (uint8_t)(k >> 8);	/* wire: little-endian bytes */
	iov_write_at(el[0].iov, el[0].niov, VNET_OFF_NUM_BUFFERS, nb, 2);
	return DROP_NONE;
undo:
	/* Entries of this frame are not published yet: take them back. */
	q->used_idx = (uint16_t)(q->used_idx - k);
	virtq_unpop(q, k);
	if (q->broken)
		return DROP_VU_RING;
	return k == max ? DROP_VU_BUF_SMALL : DROP_VU_NO_BUFFER;
}

/* vu_flush() - copy the queued frames into the guest's receive queue. */
static int vu_flush(struct ctx *c)
{
	struct vu_dev *d = c->link.vu;
	struct virtq *q = &d->vq[VU_RXQ];
	struct tx_batch *tx = &c->link.tx;
	unsigned int i, bad_left = q->num;

	virtq_set_no_notify(q, true);	/* receive buffers: no kicks */
	for (i = 0; i < tx->n; i++) {
		enum drop_reason r = DROP_VU_NOT_READY;

		if (virtq_ready(q))
			r = put_frame(c, q, tx->buf + tx->f[i].off,
				      VNET_HLEN + tx->f[i].len, &bad_left);
		if (r != DROP_NONE)
			drop(c, r);
	}
	if (virtq_publish(q))
		d->notifies++;
	return 0;
}

/* vu_fill_prefix() - the header of a frame without offloads. */
static void vu_fill_prefix(uint8_t *pfx, size_t len)
{
	vnet_hdr_write(pfx, len, NULL);
}

const struct link_ops link_vu_ops = {
	.name = "vhost-user",
	.tx_prefix = VNET_HLEN,
	.vnet_hdr = true,
	.rx = vu_rx,
	.flush = vu_flush,
	.fill_prefix = vu_fill_prefix,
};
