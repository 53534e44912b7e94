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
 * prefix, so one sendmsg() with one iovec per frame writes the batch.
 * The socket is never waited for. If it takes only part of the batch,
 * the frames written leave the batch, the rest stay at its front (held:
 * tx.hold frames, tx.hold_done bytes of the first already written),
 * and the link is marked stalled (c->link.tx_stalled) with EPOLLOUT
 * armed on the socket. While it is stalled tap.c queues new frames
 * behind the held ones and the loop reads no host socket (loop.c): TCP
 * flow control, not a drop, slows the senders. On EPOLLOUT,
 * stream_tx_resume() writes the held frames (in as many non-blocking
 * sends as the socket needs) and only then does the next batch go. So
 * the peer always sees whole frames, one after the other, none lost to
 * a cut, and no peer can hold the loop: a reader that drains a byte a
 * second only slows its own link.
 *
 * A stall is the peer's doing (qemu reads the socket only while the
 * guest gives it receive buffers), so a long one is logged, once, after
 * STALL_LOG_MS, with the bytes unread in the socket (SIOCOUTQ), and so
 * is its end; the statistics keep the longest. Whoever reads the log of
 * a dead link can tell which side stopped: this line means the peer.
 *
 * A peer that stops reading altogether (a paused or stopped qemu, a
 * broken client) keeps its connection: the socket is the guest's only
 * link, and a VM paused for minutes must find it again. Meanwhile the
 * loop still serves signals, timers and the peer's own frames (read and
 * handled); the host sockets wait. Frames the guest's input produces
 * queue behind the held ones until the batch is full: then they are
 * dropped and counted (TX_FULL, tap.c), and TCP connections towards the
 * guest end by their own retransmission limits. Whole frames left in
 * the receive buffer wait for the peer's next write or for the socket to
 * become writable again.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"

/* seccomp(vm): recvfrom sendmsg
 *   (qemu's stream socket) */
/* seccomp(vm): ioctl(1=SIOCOUTQ)
 *   (the stall's queue length) */

#define STREAM_PFX	4
#define STALL_LOG_MS	2000	/* a stall this long is logged */

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

/* stream_want_out() - set the two reasons to wait for EPOLLOUT: whole
 * frames wait in the receive buffer (backlog: a socket is nearly always
 * writable, so the loop comes back for them even if the guest sends
 * nothing more), and the rest of a cut frame waits to be written
 * (stalled). EPOLLOUT is armed while either holds; both are false, and
 * it is not armed, when a client is attached. */
static void stream_want_out(struct ctx *c, bool backlog, bool stalled)
{
	union eref ref = { .type = EREF_LINK };
	bool before = c->link.rx.backlog || c->link.tx_stalled;
	bool out = backlog || stalled;

	c->link.rx.backlog = backlog;
	c->link.tx_stalled = stalled;
	if (before == out)
		return;
	if (ep_mod(c, c->link.fd, EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0),
		   ref))
		warn("guest stream: epoll: %s", strerror(errno));
}

/* stream_set_backlog() - whole frames wait in the buffer, or not. */
static void stream_set_backlog(struct ctx *c, bool backlog)
{
	stream_want_out(c, backlog, c->link.tx_stalled);
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

/* stream_write() - one sendmsg() of the first k queued frames, the first
 * from its byte tx->hold_done on (each frame addressed by its offset:
 * slots of tap_tx_reserve_many() may leave gaps between them). The
 * frames written leave the batch; hold_done becomes what was written of
 * the new first one. Returns how many of the k are left (0: all went),
 * -1 when the peer went away. */
static int stream_write(struct ctx *c, unsigned int k)
{
	struct tx_batch *tx = &c->link.tx;
	struct iovec iov[TX_FRAMES_MAX];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = k };
	unsigned int i;
	size_t sent;
	ssize_t n;

	if (!k)
		return 0;
	for (i = 0; i < k; i++) {
		iov[i].iov_base = tx->buf + tx->f[i].off;
		iov[i].iov_len = STREAM_PFX + tx->f[i].len;
	}
	iov[0].iov_base = (uint8_t *)iov[0].iov_base + tx->hold_done;
	iov[0].iov_len -= tx->hold_done;
	do {
		n = sendmsg(c->link.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && errno != EAGAIN) {
		info("guest stream write: %s", strerror(errno));
		return -1;
	}
	sent = n < 0 ? 0 : (size_t)n;
	for (i = 0; i < k && sent >= iov[i].iov_len; i++)
		sent -= iov[i].iov_len;
	if (i < k)		/* frame i was cut after sent of its bytes */
		tx->hold_done = (i ? 0 : tx->hold_done) + sent;
	else
		tx->hold_done = 0;
	memmove(tx->f, tx->f + i, (tx->n - i) * sizeof(tx->f[0]));
	tx->n -= i;
	return (int)(k - i);
}

/* stream_stall_begin() - a write was cut: the stall starts now; the
 * timer comes back when it would be long. */
static void stream_stall_begin(struct ctx *c)
{
	c->stats.tx_stalls++;
	c->link.stall_t0 = c->now;
	c->link.stall_logged = false;
	timer_request(c, STALL_LOG_MS);
}

/* stream_stall_end() - the held frames are all written: keep the longest
 * stall, and say so when one that was logged ends. */
static void stream_stall_end(struct ctx *c)
{
	int64_t ms = ts_ms_diff(&c->now, &c->link.stall_t0);

	if (ms > 0 && (uint64_t)ms > c->stats.tx_stall_max_ms)
		c->stats.tx_stall_max_ms = (uint64_t)ms;
	if (c->link.stall_logged)
		info("guest stream: the peer reads again, after %lld ms",
		     (long long)ms);
	c->link.stall_logged = false;
}

void stream_timer(struct ctx *c)
{
	int64_t ms;
	int outq;

	if (!c->link.up || c->link.ops != &link_stream_ops ||
	    !c->link.tx_stalled || c->link.stall_logged)
		return;
	ms = ts_ms_diff(&c->now, &c->link.stall_t0);
	if (ms < STALL_LOG_MS) {
		timer_request(c, STALL_LOG_MS - ms);
		return;
	}
	if (ioctl(c->link.fd, SIOCOUTQ, &outq))
		outq = -1;
	info("guest stream: the peer has not read our frames for %lld ms "
	     "(%d bytes unread in the socket, %u frames held); host sockets "
	     "wait", (long long)ms, outq, c->link.tx.n);
	c->link.stall_logged = true;
}

/* stream_tx_resume() - link_ops tx_resume: write the held frames, as much
 * as the socket takes now. 1 when they are all written (the link takes
 * frames again), 0 when the socket is full again (EPOLLOUT stays armed),
 * -1 when the peer went away. */
static int stream_tx_resume(struct ctx *c)
{
	int left = stream_write(c, c->link.tx.hold);

	if (left < 0)
		return -1;
	c->link.tx.hold = (unsigned int)left;
	if (left)
		return 0;
	stream_stall_end(c);
	stream_want_out(c, c->link.rx.backlog, false);
	return 1;
}

/* stream_flush() - link_ops flush: write the batch; what the socket does
 * not take stays held, the link stalled (see the top of the file).
 * Called only while the link is not stalled (tap.c). */
static int stream_flush(struct ctx *c)
{
	int left = stream_write(c, c->link.tx.n);

	if (left < 0)
		return -1;
	if (left) {
		stream_stall_begin(c);
		c->link.tx.hold = (unsigned int)left;
		stream_want_out(c, c->link.rx.backlog, true);
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
	.tx_resume = stream_tx_resume,
	.fill_prefix = stream_fill_prefix,
};
