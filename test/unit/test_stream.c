/* test_stream.c - qemu stream framing: whole, split and bad frames; a
 * write cut inside a frame finished from EPOLLOUT, never by waiting. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static struct ctx *stream_ctx(int *peer)
{
	struct ctx *c = test_ctx();
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	tap_attach(c, &link_stream_ops, sv[0]);
	*peer = sv[1];
	return c;
}

TEST(stream_frames_split_across_reads)
{
	uint8_t f[42], msg[3 * 46], out[256];
	int peer, i;
	struct ctx *c = stream_ctx(&peer);
	ssize_t n;

	test_frame_arp_req(f);
	for (i = 0; i < 3; i++) {
		wr32(msg + i * 46, 42);
		memcpy(msg + i * 46 + 4, f, 42);
	}
	/* First write ends in the middle of the second frame's header. */
	CHECK(write(peer, msg, 48) == 48);
	CHECK_EQ(c->link.ops->rx(c), 1);
	tap_input(c);
	CHECK(write(peer, msg + 48, sizeof(msg) - 48) ==
	      (ssize_t)(sizeof(msg) - 48));
	CHECK_EQ(c->link.ops->rx(c), 2);
	tap_input(c);
	CHECK_EQ(c->stats.rx_frames, 3);
	CHECK_EQ(c->stats.drops[DROP_ARP_MALFORMED], 0);
	/* Three ARP replies came back, each with its length prefix. */
	tap_flush(c);
	n = read(peer, out, sizeof(out));
	CHECK_EQ(n, 3 * (4 + ETH_ZLEN_));	/* each padded to 60 bytes */
	CHECK_EQ(rd32(out), ETH_ZLEN_);
	CHECK_EQ(rd32(out + 4 + ETH_ZLEN_), ETH_ZLEN_);
	CHECK_EQ(rd16(out + 4 + 14 + 6), 2);	/* ARP reply */
	CHECK_EQ(c->link.ops->rx(c), 0);	/* nothing pending: EAGAIN */
	close(peer);
	CHECK_EQ(c->link.ops->rx(c), -1);	/* peer gone */
	close(c->link.fd);
	test_ctx_free(c);
}

TEST(stream_bad_lengths_drop_client)
{
	uint8_t hdr[4];
	int peer;
	struct ctx *c = stream_ctx(&peer);

	wr32(hdr, 0);
	CHECK(write(peer, hdr, 4) == 4);
	CHECK_EQ(c->link.ops->rx(c), -1);
	close(peer);
	close(c->link.fd);
	test_ctx_free(c);

	c = stream_ctx(&peer);
	wr32(hdr, FRAME_MAX + 1);
	CHECK(write(peer, hdr, 4) == 4);
	CHECK_EQ(c->link.ops->rx(c), -1);
	close(peer);
	close(c->link.fd);
	test_ctx_free(c);
}

TEST(stream_garbage_frames_counted_not_fatal)
{
	uint8_t msg[4 + 20];
	int peer;
	struct ctx *c = stream_ctx(&peer);

	wr32(msg, 20);
	memset(msg + 4, 0x41, 20);		/* valid length, junk frame */
	CHECK(write(peer, msg, sizeof(msg)) == sizeof(msg));
	CHECK_EQ(c->link.ops->rx(c), 1);
	tap_input(c);
	CHECK_EQ(c->stats.drops[DROP_ETH_SRC_MCAST] +
		 c->stats.drops[DROP_ETH_TYPE], 1);
	close(peer);
	close(c->link.fd);
	test_ctx_free(c);
}

/* --- cut frames: the socket takes part of a batch --------------------- */

#define CUT_FLEN	3000	/* not a divisor of any buffer size */
#define CUT_MAX		(1u << 20)

/* stall_ctx() - a stream link with a small send buffer, registered with
 * an epoll instance of its own as vm.c registers it. */
static struct ctx *stall_ctx(int *peer)
{
	union eref ref = { .type = EREF_LINK };
	struct ctx *c = stream_ctx(peer);
	int small = 4096;

	setsockopt(c->link.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	c->epfd = epoll_create1(0);
	ep_add(c, c->link.fd, EPOLLIN | EPOLLRDHUP, ref);
	c->link.rx.backlog = false;
	return c;
}

static void stall_free(struct ctx *c, int peer)
{
	close(peer);
	close(c->link.fd);
	close(c->epfd);
	test_ctx_free(c);
}

/* queue_frames() - n frames of len bytes, frame i all bytes (first + i). */
static void queue_frames(struct ctx *c, unsigned int n, size_t len,
			 uint8_t first)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint8_t *f = tap_tx_reserve(c, len);

		if (!f)
			return;
		memset(f, first + i, len);
		tap_tx_commit(c, len);
	}
}

/* drain() - append everything the peer can read now to buf at *fill. */
static void drain(int peer, uint8_t *buf, size_t *fill)
{
	ssize_t n;

	while (*fill < CUT_MAX &&
	       (n = recv(peer, buf + *fill, CUT_MAX - *fill,
			 MSG_DONTWAIT)) > 0)
		*fill += (size_t)n;
}

/* link_events() - the link's ready events now (0: none). */
static uint32_t link_events(struct ctx *c)
{
	struct epoll_event ev;

	return epoll_wait(c->epfd, &ev, 1, 0) == 1 ? ev.events : 0;
}

/* run_until_idle() - the peer reads at full speed, ferry's loop serves
 * the link's events, until nothing is stalled, queued or readable. */
static void run_until_idle(struct ctx *c, int peer, uint8_t *buf,
			   size_t *fill)
{
	int i;

	for (i = 0; i < 10000; i++) {
		uint32_t ev;

		drain(peer, buf, fill);
		ev = link_events(c);
		if (ev)
			tap_handler(c, ev);
		else if (!c->link.tx_stalled && !c->link.tx.n)
			return;
	}
}

/* frames_ok() - buf holds whole frames only, each len bytes of one value,
 * the values in want[] in order. Returns the number of frames, -1 on a
 * framing error. */
static int frames_ok(const uint8_t *buf, size_t fill, size_t len,
		     const uint8_t *want, unsigned int nwant)
{
	unsigned int k = 0;
	size_t pos = 0, j;

	while (pos < fill) {
		if (fill - pos < 4 || rd32(buf + pos) != len ||
		    fill - pos - 4 < len || k >= nwant)
			return -1;
		for (j = 0; j < len; j++)
			if (buf[pos + 4 + j] != want[k])
				return -1;
		pos += 4 + len;
		k++;
	}
	return (int)k;
}

TEST(stream_cut_frame_held_and_finished_on_epollout)
{
	static uint8_t got[CUT_MAX];
	uint8_t want[18];
	unsigned int i, held;
	size_t fill = 0;
	int peer;
	struct ctx *c = stall_ctx(&peer);

	/* 16 frames of 3 KB against an 8 KB buffer: the write ends inside
	 * a frame. Nothing waits and nothing is dropped: the link is
	 * stalled, the frames not written stay held at the batch's front. */
	queue_frames(c, 16, CUT_FLEN, 0x10);
	tap_flush(c);
	CHECK(c->link.up && !c->quit);
	CHECK(c->link.tx_stalled);
	CHECK_EQ(c->stats.tx_stalls, 1);
	CHECK_EQ(c->stats.drops[DROP_TX_FULL], 0);
	held = c->link.tx.n;
	CHECK(held > 0 && held < 16);
	CHECK_EQ(c->link.tx.hold, held);
	CHECK(c->link.tx.hold_done > 0);	/* the test cut a frame */
	CHECK_EQ(c->link.tx.f[0].len, CUT_FLEN);
	/* The socket is full: no EPOLLOUT yet, and resuming writes nothing */
	CHECK_EQ(link_events(c), 0);
	CHECK_EQ(c->link.ops->tx_resume(c), 0);
	/* New frames wait behind the held ones, unsent. */
	queue_frames(c, 2, CUT_FLEN, 0x80);
	tap_flush(c);
	CHECK_EQ(c->link.tx.n, held + 2);
	CHECK_EQ(c->link.tx.hold, held);
	drain(peer, got, &fill);
	CHECK(fill % (4 + CUT_FLEN) != 0);
	/* The peer read: EPOLLOUT, the held frames, then the two. */
	CHECK(link_events(c) & EPOLLOUT);
	run_until_idle(c, peer, got, &fill);
	CHECK(!c->link.tx_stalled);
	CHECK_EQ(c->link.tx.n, 0);
	CHECK_EQ(c->link.tx.used, 0);
	for (i = 0; i < 16; i++)
		want[i] = (uint8_t)(0x10 + i);
	want[16] = 0x80;
	want[17] = 0x81;
	CHECK_EQ(frames_ok(got, fill, CUT_FLEN, want, 18), 18);
	/* Not stalled and nothing left over: EPOLLOUT disarmed again. */
	CHECK_EQ(link_events(c), 0);
	CHECK_EQ(c->stats.drops[DROP_TX_FULL], 0);
	stall_free(c, peer);
}

#define BIG_FLEN	60000	/* 139 fit the batch buffer */

TEST(stream_stalled_batch_compacted_not_dropped)
{
	static uint8_t got[CUT_MAX];
	unsigned int fit = TX_BUF_SIZE / (4 + BIG_FLEN), n0;
	int peer, i;
	struct ctx *c = stall_ctx(&peer);
	size_t fill = 0, total = 0;
	uint8_t v = 0;

	queue_frames(c, 16, BIG_FLEN, 0);
	tap_flush(c);
	CHECK(c->link.tx_stalled);
	/* The peer reads some: a few held frames are written, their space
	 * at the buffer's front is dead until the batch empties. */
	for (i = 0; i < 1000 && c->link.tx.n > 12; i++) {
		fill = 0;
		drain(peer, got, &fill);
		total += fill;
		CHECK(c->link.ops->tx_resume(c) >= 0);
	}
	CHECK(c->link.tx_stalled);
	n0 = c->link.tx.n;
	CHECK(n0 <= 12 && c->link.tx.f[0].off > 0);
	/* What is held plus new frames fill the buffer exactly: only
	 * compaction (moving the held frames to its start) makes room. */
	queue_frames(c, fit - n0, BIG_FLEN, 16);
	CHECK_EQ(c->stats.drops[DROP_TX_FULL], 0);
	CHECK_EQ(c->link.tx.n, fit);
	CHECK_EQ(c->link.tx.f[0].off, 0);
	/* One more is beyond the bound: all but the partly written first
	 * frame are dropped and counted, the newest goes on. */
	queue_frames(c, 1, BIG_FLEN, 0xf0);
	CHECK_EQ(c->stats.drops[DROP_TX_FULL], fit - 1);
	CHECK_EQ(c->link.tx.n, 2);
	/* Everything delivered is whole: the cut frame, then the newest. */
	fill = 0;
	run_until_idle(c, peer, got, &fill);
	CHECK(!c->link.tx_stalled);
	total += fill;
	v = got[fill - 1];
	CHECK_EQ(v, 0xf0);
	CHECK_EQ(total % (4 + BIG_FLEN), 0);
	CHECK_EQ(total / (4 + BIG_FLEN), 16 - n0 + 2);
	stall_free(c, peer);
}

TEST(stream_long_stall_logged_and_timed)
{
	static uint8_t got[CUT_MAX];
	size_t fill = 0;
	int peer;
	struct ctx *c = stall_ctx(&peer);

	/* A stall that lasts: the timer is asked for, and until 2 s have
	 * passed stream_timer() only asks again; then it logs, once. */
	c->now.tv_sec = 100;
	c->now.tv_nsec = 0;
	c->timer_armed = false;
	queue_frames(c, 16, CUT_FLEN, 0x10);
	tap_flush(c);
	CHECK(c->link.tx_stalled);
	CHECK(c->timer_armed);
	CHECK_EQ(c->timer_due.tv_sec, 102);
	c->now.tv_sec = 101;
	stream_timer(c);
	CHECK(!c->link.stall_logged);
	c->now.tv_sec = 103;
	c->now.tv_nsec = 500000000;
	stream_timer(c);
	CHECK(c->link.stall_logged);
	/* The peer reads again: the stall ends, 3.5 s long. */
	drain(peer, got, &fill);
	run_until_idle(c, peer, got, &fill);
	CHECK(!c->link.tx_stalled && !c->link.stall_logged);
	CHECK_EQ(c->stats.tx_stall_max_ms, 3500);
	/* A short one next does not lower the longest. */
	queue_frames(c, 16, CUT_FLEN, 0x10);
	tap_flush(c);
	CHECK(c->link.tx_stalled);
	c->now.tv_nsec = 600000000;
	run_until_idle(c, peer, got, &fill);
	CHECK(!c->link.tx_stalled);
	CHECK_EQ(c->stats.tx_stall_max_ms, 3500);
	stall_free(c, peer);
}

TEST(stream_peer_gone_while_stalled)
{
	int peer;
	struct ctx *c = stall_ctx(&peer);

	queue_frames(c, 16, CUT_FLEN, 0x10);
	tap_flush(c);
	CHECK(c->link.tx_stalled);
	close(peer);
	CHECK_EQ(c->link.ops->tx_resume(c), -1);
	close(c->link.fd);
	close(c->epfd);
	test_ctx_free(c);
}

/* A send that finds the peer gone (the flush tap_tx_reserve() makes room
 * with fails) only marks the link down: the fd stays open and attached
 * until the loop's link_close_pending(), after the work that found it
 * (before, tap_flush() called link_closed() from inside the reserve:
 * the fd was closed mid-send). */
TEST(stream_dead_peer_in_send_torn_down_after)
{
	int peer, fd, i;
	struct ctx *c = stall_ctx(&peer);

	c->conf.mode = MODE_VM;
	fd = c->link.fd;
	close(peer);
	for (i = 0; i < TX_FRAMES_MAX + 1; i++)
		if (!tap_tx_reserve(c, 64))
			break;
		else
			tap_tx_commit(c, 64);
	CHECK(i < TX_FRAMES_MAX + 1);		/* the reserve refused */
	CHECK(!c->link.up && c->link.closing);
	CHECK_EQ(c->link.fd, fd);		/* not torn down mid-send */
	CHECK(fcntl(fd, F_GETFD) >= 0);
	CHECK(!tap_tx_reserve(c, 64));
	CHECK(!c->quit);
	link_close_pending(c);			/* the loop, after the event */
	CHECK_EQ(c->link.fd, -1);
	CHECK(!c->link.closing);
	CHECK(c->quit);				/* no listener: vm mode ends */
	link_close_pending(c);			/* once only */
	close(c->epfd);
	test_ctx_free(c);
}

TEST(stream_next_client_gets_no_stale_rest)
{
	uint8_t got[2 * (4 + CUT_FLEN)];
	int peer, sv[2];
	struct ctx *c = stall_ctx(&peer);
	ssize_t n;

	queue_frames(c, 16, CUT_FLEN, 0x10);
	tap_flush(c);
	CHECK(c->link.tx_stalled);
	/* The client goes; the next one must see only its own frames. */
	close(peer);
	close(c->link.fd);
	tap_detach(c);
	CHECK(!c->link.tx_stalled);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	tap_attach(c, &link_stream_ops, sv[0]);
	CHECK(!c->link.tx_stalled);
	queue_frames(c, 1, CUT_FLEN, 0x42);
	tap_flush(c);
	n = recv(sv[1], got, sizeof(got), MSG_DONTWAIT);
	CHECK_EQ(n, 4 + CUT_FLEN);
	CHECK_EQ(frames_ok(got, (size_t)n, CUT_FLEN,
			   (const uint8_t []){ 0x42 }, 1), 1);
	close(sv[1]);
	close(sv[0]);
	close(c->epfd);
	test_ctx_free(c);
}
