/* tap_dev.c - guest link backend for a tap device (namespace mode).
 *
 * Buffer plumbing only: a tap fd returns one frame per read() and takes
 * one per write(), so a batch is a loop of reads into consecutive slots of
 * the rx buffer, and a flush is a loop of writes over the queued frames.
 * A frame the kernel refuses (EAGAIN when the device queue is full, or any
 * error) is dropped and counted: the guest's transport recovers it.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"

/* Slot size for one frame read from the tap (MTU up to 65520 + header). */
#define TAPDEV_SLOT	ROUND_UP(ETH_HLEN_ + 65535 + 64, 64)

static int tapdev_rx(struct ctx *c)
{
	struct rx_batch *rx = &c->link.rx;
	unsigned int want = rx->want ? rx->want : RX_FRAMES_MAX;
	size_t off = 0;

	rx->n = 0;
	rx->more = false;
	while (rx->n < want && off + TAPDEV_SLOT <= RX_BUF_SIZE) {
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
		rx->f[rx->n].off = (uint32_t)off;
		rx->f[rx->n].len = (uint32_t)n;
		rx->n++;
		off += ROUND_UP((size_t)n, 64);
	}
	rx->more = true;
	return (int)rx->n;
}

static int tapdev_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	unsigned int i;

	for (i = 0; i < tx->n; i++) {
		ssize_t n = write(c->link.fd, tx->buf + tx->f[i].off,
				  tx->f[i].len);

		if (n < 0 && errno == EINTR) {
			i--;
			continue;
		}
		if (n < 0) {
			if (errno == EBADFD) {
				err("tap write: %s", strerror(errno));
				return -1;
			}
			/* EIO: the guest has not set the interface up (yet) */
			drop(c, errno == EIO ? DROP_LINK_DOWN : DROP_TX_FULL);
		}
	}
	return 0;
}

const struct link_ops link_tapdev_ops = {
	.name = "tap",
	.tx_prefix = 0,
	.rx = tapdev_rx,
	.flush = tapdev_flush,
	.fill_prefix = NULL,
};
