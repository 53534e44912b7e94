/* tap_dev.c - guest link backend for a tap device (namespace mode).
 *
 * Buffer plumbing only: a tap fd returns one frame per read() and takes
 * one per write(), so a batch is a loop of reads into consecutive slots of
 * the rx buffer, and a flush is a loop of writes over the queued frames.
 * A frame the kernel refuses (EAGAIN when the device queue is full, or any
 * error) is dropped and counted: the guest's transport recovers it.
 *
 * Offloads: a tap opened with IFF_VNET_HDR (the default; --no-offload
 * turns it off) prefixes every frame, both ways, with a 12-byte
 * virtio-net header (vnet.h). tapdev_attach() sets its size and byte
 * order and asks the kernel for checksum offload and TSO for IPv4 and
 * IPv6, and UDP segmentation (USO, Linux >= 6.2) when the kernel has it
 * (TUNSETOFFLOAD, probed from the largest set down, logged). With TSO
 * on, the guest's kernel hands us TCP segments of up to 64 KiB whatever
 * the MTU, with
 * checksums left partial, and takes 64 KiB GSO frames from us, cutting
 * them itself only if it forwards them: per-frame costs stop depending on
 * the MTU. This file only moves the headers with the frames (rx frames
 * are recorded after their header, tx frames are written with it); what
 * goes in them is tap.c's and tcp_out.c's business.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"
#include "vnet.h"

/* seccomp(ns): read write
 *   (the tap's frames) */
/* seccomp(setup): ioctl */

/* USO flags (Linux 6.2 uapi), for older headers. */
#ifndef TUN_F_USO4
#define TUN_F_USO4	0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6	0x40
#endif

/* Slot size for one frame read from the tap (MTU up to 65520 or a 64 KiB
 * GSO frame, plus the virtio-net header). */
#define TAPDEV_SLOT	ROUND_UP(VNET_HLEN + FRAME_MAX + 64, 64)

/* Frame bytes one read round takes before they are handed on (rx.more
 * asks for the next round): a round's payload is written to the sockets
 * and acknowledged to the guest while it sends more, instead of the
 * guest waiting for ferry to read its whole window first, and the frames
 * are still in the CPU's cache when sendmsg() copies them out. */
#define TAPDEV_ROUND_BYTES	(1u << 20)

/* tapdev_read() - read frames into c->link.rx, each pfx bytes of header
 * before it, up to TAPDEV_ROUND_BYTES. Returns frames read, or -1 when
 * the device went away. */
static int tapdev_read(struct ctx *c, size_t pfx)
{
	struct rx_batch *rx = &c->link.rx;
	unsigned int want = rx->want ? rx->want : RX_FRAMES_MAX;
	size_t off = 0;

	rx->n = 0;
	rx->more = false;
	while (rx->n < want && off < TAPDEV_ROUND_BYTES &&
	       off + TAPDEV_SLOT <= RX_BUF_SIZE) {
		ssize_t n = read(c->link.fd, rx->buf + off, TAPDEV_SLOT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return (int)rx->n;
			err("tap read: %s", strerror(errno));
			return -1;
		}
		if (n == 0)
			return -1;
		if ((size_t)n < pfx) {
			drop(c, DROP_VNET_SHORT);
			continue;
		}
		rx->f[rx->n].off = (uint32_t)(off + pfx);
		rx->f[rx->n].len = (uint32_t)((size_t)n - pfx);
		rx->n++;
		off += ROUND_UP((size_t)n, 64);
	}
	rx->more = true;
	return (int)rx->n;
}

/* tapdev_rx() - read frames from a tap without virtio-net headers. */
static int tapdev_rx(struct ctx *c)
{
	return tapdev_read(c, 0);
}

/* tapvnet_rx() - read frames from a tap with virtio-net headers. */
static int tapvnet_rx(struct ctx *c)
{
	return tapdev_read(c, VNET_HLEN);
}

/* tapdev_flush() - one write() per queued frame, prefix included. */
static int tapdev_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	size_t pfx = c->link.ops->tx_prefix;
	unsigned int i;

	for (i = 0; i < tx->n; i++) {
		ssize_t n = write(c->link.fd, tx->buf + tx->f[i].off,
				  pfx + tx->f[i].len);

		if (n < 0 && errno == EINTR) {
			i--;
			continue;
		}
		if (n < 0) {
			if (errno == EBADFD) {
				err("tap write: %s", strerror(errno));
				return -1;
			}
			/* EIO: the guest has not set the interface up (yet);
			 * EINVAL: the kernel refused the virtio-net header */
			drop(c, errno == EIO ? DROP_LINK_DOWN : DROP_TX_FULL);
		}
	}
	return 0;
}

/* tapvnet_fill_prefix() - the header of a frame without offloads. */
static void tapvnet_fill_prefix(uint8_t *pfx, size_t len)
{
	vnet_hdr_write(pfx, len, NULL);
}

const struct link_ops link_tapdev_ops = {
	.name = "tap",
	.tx_prefix = 0,
	.rx = tapdev_rx,
	.flush = tapdev_flush,
	.fill_prefix = NULL,
};

const struct link_ops link_tapvnet_ops = {
	.name = "tap (offloads)",
	.tx_prefix = VNET_HLEN,
	.vnet_hdr = true,
	.rx = tapvnet_rx,
	.flush = tapdev_flush,
	.fill_prefix = tapvnet_fill_prefix,
};

/* tapdev_offload() - ask for the largest offload set the kernel takes.
 * Returns the TUN_F_* flags enabled (0: none, or the ioctl failed). */
static unsigned int tapdev_offload(int fd)
{
	static const unsigned int sets[] = {
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 | TUN_F_USO6,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6,	/* before Linux 6.2 */
		TUN_F_CSUM,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sets); i++)
		if (!ioctl(fd, TUNSETOFFLOAD, (unsigned long)sets[i]))
			return sets[i];
	return 0;
}

/* tapdev_attach() - use tap fd as the guest link (vnet: IFF_VNET_HDR,
 * offloads probed and enabled; see tap.h). */
void tapdev_attach(struct ctx *c, int fd, bool vnet)
{
	int sz = VNET_HLEN, le = 1;
	unsigned int f;

	if (!vnet) {
		tap_attach(c, &link_tapdev_ops, fd);
		info("tap: no offloads");
		return;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &sz))
		die("tap: cannot set the virtio-net header size: %s "
		    "(--no-offload works without it)", strerror(errno));
	if (ioctl(fd, TUNSETVNETLE, &le) &&
	    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		die("tap: cannot make virtio-net headers little-endian: %s "
		    "(--no-offload works without them)", strerror(errno));
	f = tapdev_offload(fd);
	tap_attach(c, &link_tapvnet_ops, fd);
	c->link.tx_gso = f & TUN_F_TSO4;
	c->link.tx_csum_partial = f & TUN_F_CSUM;
	c->link.tx_uso = f & TUN_F_USO4;
	c->link.rx_tso = (f & (TUN_F_TSO4 | TUN_F_TSO6)) ==
			 (TUN_F_TSO4 | TUN_F_TSO6);
	info("tap: offloads%s%s%s%s", f & TUN_F_CSUM ? " checksum" : " none",
	     f & TUN_F_TSO4 ? " TSO4" : "", f & TUN_F_TSO6 ? " TSO6" : "",
	     f & TUN_F_USO4 ? " USO4 USO6" : "");
}
