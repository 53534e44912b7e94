/* tap_stream.c - guest link backend for a qemu stream socket.
 *
 * qemu's "-netdev stream" and "-netdev socket" (and passt's protocol)
 * carry each Ethernet frame on a stream socket as a 4-byte big-endian
 * length followed by the frame. One read() brings many frames; the last
 * one may be partial and is kept at the start of the buffer for the next
 * read. A length of zero or above FRAME_MAX is a protocol error: the
 * client is dropped (the caller waits for the next one).
 *
 * Transmit: the batch in c->link.tx is already laid out as
 * [len][frame][len][frame]..., so one send() writes it all. If the socket
 * takes only part of it, the frame that was cut is completed (waiting
 * for the socket with a bounded poll, so the stream never desynchronises)
 * and the frames after it are dropped and counted: TCP recovers them.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"

#define STREAM_PFX	4

static int stream_rx(struct ctx *c)
{
	struct rx_batch *rx = &c->link.rx;
	size_t pos = 0;
	ssize_t n;

	/* Keep the partial frame left over from the previous read. */
	if (rx->consumed) {
		memmove(rx->buf, rx->buf + rx->consumed, rx->fill - rx->consumed);
		rx->fill -= rx->consumed;
		rx->consumed = 0;
	}
	rx->n = 0;
	do {
		n = recv(c->link.fd, rx->buf + rx->fill, RX_BUF_SIZE - rx->fill,
			 MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n == 0)
		return -1;
	if (n < 0) {
		if (errno == EAGAIN)
			return 0;
		info("guest stream: %s", strerror(errno));
		return -1;
	}
	rx->fill += (size_t)n;

	while (rx->n < RX_FRAMES_MAX && rx->fill - pos >= STREAM_PFX) {
		uint32_t len = rd32(rx->buf + pos);

		if (len == 0 || len > FRAME_MAX) {
			warn("guest stream: bad frame length %u, dropping client",
			     len);
			rx->n = 0;
			return -1;
		}
		if (rx->fill - pos - STREAM_PFX < len)
			break;
		rx->f[rx->n].off = (uint32_t)(pos + STREAM_PFX);
		rx->f[rx->n].len = len;
		rx->n++;
		pos += STREAM_PFX + len;
	}
	rx->consumed = pos;
	return (int)rx->n;
}

/* finish_write() - complete a cut frame: wait for the socket, bounded. */
static int finish_write(int fd, const uint8_t *p, size_t left)
{
	while (left) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, 1000) <= 0)
			return -1;	/* stuck peer: give up on it */
		n = send(fd, p, left, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0) {
			p += n;
			left -= (size_t)n;
		}
	}
	return 0;
}

static int stream_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	size_t sent;
	ssize_t n;
	unsigned int i;

	do {
		n = send(c->link.fd, tx->buf, tx->used, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN) {
		info("guest stream write: %s", strerror(errno));
		return -1;
	}
	sent = n < 0 ? 0 : (size_t)n;
	if (sent == tx->used)
		return 0;
	/* Find the frame that was cut, complete it, drop the rest. */
	for (i = 0; i < tx->n; i++) {
		size_t end = tx->f[i].off + STREAM_PFX + tx->f[i].len;

		if (end <= sent)
			continue;
		if (sent > tx->f[i].off &&
		    finish_write(c->link.fd, tx->buf + sent, end - sent) < 0)
			return -1;
		for (i = sent > tx->f[i].off ? i + 1 : i; i < tx->n; i++)
			drop(c, DROP_TX_FULL);
		break;
	}
	return 0;
}

static void stream_fill_prefix(uint8_t *pfx, size_t len)
{
	wr32(pfx, (uint32_t)len);
}

const struct link_ops link_stream_ops = {
	.name = "qemu stream",
	.tx_prefix = STREAM_PFX,
	.rx = stream_rx,
	.flush = stream_flush,
	.fill_prefix = stream_fill_prefix,
};
