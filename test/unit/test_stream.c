/* test_stream.c - qemu stream framing: whole, split and bad frames. */
#include <string.h>
#include <unistd.h>
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
	CHECK_EQ(n, 3 * 46);
	CHECK_EQ(rd32(out), 42);
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
