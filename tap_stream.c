/* tap_stream.c - guest link backend for a qemu stream socket.
 *
 * qemu's "-netdev stream" and "-netdev socket" (and passt's protocol)
 * carry each Ethernet frame on a stream socket as a 4-byte big-endian
 * length followed by the frame. One read() brings many frames; the last
 * one may be partial and is kept for the next read. Whole frames left
 * over from a large read are used before reading again (so the buffer
 * never fills up), and while they wait the link fd also waits for EPOLLOUT
 * so the loop returns to them even if the guest then stays silent. A
 * length of zero or above FRAME_MAX is a protocol error: the client is
 * dropped (the caller waits for the next one).
 *
 * Transmit: each queued frame in c->link.tx already has its length
 * prefix, so one sendmsg() with one iovec per frame writes the batch. If
 * the socket takes only part of it, the frame that was cut is completed
 * (waiting for the socket with a bounded poll, so the stream never
 * desynchronises) and the frames after it are dropped and counted
 * (TX_FULL): TCP recovers them.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"

#define STREAM_PFX	4

/* A partial frame always leaves room to read; one sendmsg() per batch. */
_Static_assert(RX_BUF_SIZE > 2 * (STREAM_PFX + FRAME_MAX), "rx buffer");
_Static_assert(TX_FRAMES_MAX <= IOV_MAX, "iovecs per flush");

/* stream_index() - index the whole frames buffered from rx->consumed on,
 * up to RX_FRAMES_MAX of them. False on a protocol error (length 0 or
 * above FRAME_MAX): the client must be dropped. */
static bool stream_index(struct rx_batch *rx)
{
	size_t pos = rx->consumed;

	while (rx->n < RX_FRAMES_MAX && rx->fill - pos >= STREAM_PFX) {
		uint32_t len = rd32(rx->buf + pos);

		if (len == 0 || len > FRAME_MAX) {
			warn("guest stream: bad frame length %u, dropping client",
			     len);
			rx->n = 0;
			return false;
		}
		if (rx->fill - pos - STREAM_PFX < len)
			break;
		rx->f[rx->n].off = (uint32_t)(pos + STREAM_PFX);
		rx->f[rx->n].len = len;
		rx->n++;
		pos += STREAM_PFX + len;
	}
	rx->consumed = pos;
	return true;
}

/* stream_whole_frame() - does a whole frame (or a bad length) wait in the
 * buffer at rx->consumed? */
static bool stream_whole_frame(const struct rx_batch *rx)
{
	size_t left = rx->fill - rx->consumed;

	return left >= STREAM_PFX &&
	       left - STREAM_PFX >= rd32(rx->buf + rx->consumed);
}

/* stream_set_backlog() - while whole frames wait in the buffer, also wait
 * for EPOLLOUT (a socket nearly always writable) so the loop comes back
 * for them even if the guest sends nothing more. */
static void stream_set_backlog(struct ctx *c, bool backlog)
{
	union eref ref = { .type = EREF_LINK };
	uint32_t ev = EPOLLIN | EPOLLRDHUP | (backlog ? EPOLLOUT : 0);

	if (c->link.rx.backlog == backlog)
		return;
	c->link.rx.backlog = backlog;
	if (ep_mod(c, c->link.fd, ev, ref))
		warn("guest stream: epoll: %s", strerror(errno));
}

/* stream_rx() - link_ops rx: whole frames into c->link.rx (see the
 * top of the file); frames read, 0 if none, -1 if the peer went away
 * or broke the framing. */
static int stream_rx(struct ctx *c)
{
	struct rx_batch *rx = &c->link.rx;
	ssize_t n;

	/* Frames left over from a large read come first, without reading:
	 * reading before they are used up would fill the buffer (and a read
	 * into no room returns 0, which looks like the peer closing). */
	rx->n = 0;
	rx->more = false;
	if (!stream_index(rx))
		return -1;
	if (rx->n) {
		rx->more = true;
		stream_set_backlog(c, stream_whole_frame(rx));
		return (int)rx->n;
	}
	/* At most a partial frame is left: move it to the start, read. */
	memmove(rx->buf, rx->buf + rx->consumed, rx->fill - rx->consumed);
	rx->fill -= rx->consumed;
	rx->consumed = 0;
	do {
		n = recv(c->link.fd, rx->buf + rx->fill, RX_BUF_SIZE - rx->fill,
			 MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n == 0)
		return -1;
	if (n < 0) {
		if (errno == EAGAIN) {
			stream_set_backlog(c, false);
			return 0;
		}
		info("guest stream: %s", strerror(errno));
		return -1;
	}
	rx->more = rx->fill + (size_t)n == RX_BUF_SIZE;	/* filled: read on */
	rx->fill += (size_t)n;
	if (!stream_index(rx))
		return -1;
	stream_set_backlog(c, stream_whole_frame(rx));
	rx->more = rx->more || rx->backlog;
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

/* stream_flush() - one sendmsg() of all queued frames (each addressed by
 * its offset: slots of tap_tx_reserve_many() leave gaps between them). */
static int stream_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	struct iovec iov[TX_FRAMES_MAX];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = tx->n };
	unsigned int i;
	size_t sent;
	ssize_t n;

	for (i = 0; i < tx->n; i++) {
		iov[i].iov_base = tx->buf + tx->f[i].off;
		iov[i].iov_len = STREAM_PFX + tx->f[i].len;
	}
	do {
		n = sendmsg(c->link.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN) {
		info("guest stream write: %s", strerror(errno));
		return -1;
	}
	sent = n < 0 ? 0 : (size_t)n;
	/* Find the frame that was cut, complete it, drop the rest. */
	for (i = 0; i < tx->n; i++) {
		if (sent >= iov[i].iov_len) {
			sent -= iov[i].iov_len;
			continue;
		}
		if (sent && finish_write(c->link.fd,
					 (uint8_t *)iov[i].iov_base + sent,
					 iov[i].iov_len - sent) < 0)
			return -1;
		for (i += sent ? 1 : 0; i < tx->n; i++)
			drop(c, DROP_TX_FULL);
		break;
	}
	return 0;
}

/* stream_fill_prefix() - the 4-byte big-endian length of a frame. */
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
