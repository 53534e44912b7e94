/* tap.h - the guest link: frame batches in both directions, shared by all
 * guest backends (tap device, qemu stream socket, vhost-user).
 *
 * Backends are buffer plumbing only: they move bytes between their fd and
 * the batches below through struct link_ops. Every decision about frames
 * lives above them: receive (parsing, dispatch, MAC learning) in tap.c,
 * transmit (the batch, its flush, pcap, drops) in tap_tx.c.
 *
 * Transmit: protocol code calls tap_tx_reserve() for room for one frame,
 * writes the Ethernet frame there, then tap_tx_commit() with its length.
 * Frames accumulate in one preallocated buffer, each preceded by the
 * backend's prefix (4-byte length for qemu streams, virtio-net header for
 * a tap with IFF_VNET_HDR), and go out in one flush per loop iteration or
 * when the batch is full.
 *
 * A backend that finds its peer gone says so with tap_link_down(); the
 * loop tears the link down after the current work (link.closing).
 */
#ifndef FERRY_TAP_H
#define FERRY_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/uio.h>
#include <time.h>

struct ctx;
struct pkt;
struct vu_dev;

#define TX_BUF_SIZE	(8u << 20)	/* bytes of queued frames */
#define TX_FRAMES_MAX	512
#define RX_BUF_SIZE	(8u << 20)
#define RX_FRAMES_MAX	256

struct tx_batch {
	uint8_t *buf;			/* TX_BUF_SIZE bytes */
	size_t used;			/* bytes used in buf */
	unsigned int n;			/* frames queued */
	/* While the link is stalled: the first hold frames were handed to
	 * the backend (captured, faults applied) and not all written yet;
	 * hold_done bytes of the first one (prefix included) are. */
	unsigned int hold;
	size_t hold_done;
	size_t pending_off;		/* reserved, not yet committed */
	size_t pending_stride;		/* tap_tx_reserve_many() slot size */
	struct { uint32_t off, len; } f[TX_FRAMES_MAX]; /* off: prefix */
};

struct rx_batch {
	uint8_t *buf;			/* RX_BUF_SIZE bytes */
	size_t fill;			/* stream backends: bytes buffered */
	size_t consumed;		/* stream: bytes of whole frames */
	bool backlog;			/* stream: whole frames wait in buf */
	bool more;			/* rx stopped before the fd was empty */
	bool burst;			/* the last tap read found >1 frame */
	bool next_round;		/* tap_handler() reads another round
					 * right after this batch: ACKs well
					 * inside the window may wait for it */
	unsigned int want;		/* frames rx may read (0: all it can) */
	uint64_t iter;			/* loop iteration of the last read */
	unsigned int n;
	struct { uint32_t off, len; } f[RX_FRAMES_MAX]; /* frame, no prefix */
};

struct link_ops {
	const char *name;
	size_t tx_prefix;		/* bytes before each frame */
	bool vnet_hdr;			/* frames both ways carry a virtio-net
					 * header (vnet.h) as their prefix; rx
					 * frames have it right before f[].off */
	/* Read available frames into c->link.rx, at most rx.want if the
	 * backend reads frame by frame; return frames read, 0 when none are
	 * pending, -1 when the peer went away. Sets rx.more when it stopped
	 * at a limit rather than at an empty fd. */
	int (*rx)(struct ctx *c);
	/* Write queued frames; return 0, or -1 when the peer went away.
	 * Must leave c->link.tx empty (dropping and counting frames it
	 * cannot send), unless it sets c->link.tx_stalled: a backend whose
	 * fd may take only part of the batch (ending inside a frame) never
	 * waits; it leaves the unwritten frames at the front of the batch
	 * (tx.hold, tx.hold_done) and tap_tx.c queues new ones behind them
	 * until tx_resume() has written them. */
	int (*flush)(struct ctx *c);
	/* Only with tx_stalled (NULL for backends that never stall): write
	 * the held frames, without waiting, and take them off the batch.
	 * Return 1 when all are written (tx_stalled cleared), 0 when the fd
	 * cannot take the rest now (the backend waits for EPOLLOUT on the
	 * link fd), -1 when the peer went away. */
	int (*tx_resume)(struct ctx *c);
	/* Write the prefix for a frame of len bytes at pfx. */
	void (*fill_prefix)(uint8_t *pfx, size_t len);
};

struct link {
	const struct link_ops *ops;
	int fd;				/* connected link fd, -1 if none */
	int listen_fd;			/* vm mode listener, -1 if none */
	int spare_fd;			/* vm mode: fd kept to refuse with */
	bool up;
	/* The peer went away (tap_link_down(), found by a backend's read or
	 * write): up is false from then on, and the loop tears the link
	 * down after the work that found it (loop.c link_close_pending()),
	 * never from inside a send. */
	bool closing;
	/* The link cannot take frames now: the backend's last write was cut
	 * short (see link_ops flush and tx_resume). Frames stay queued in tx
	 * until it can; tap_handler() resumes on EPOLLOUT. Meanwhile the
	 * loop stops reading host sockets (loop.c): back-pressure. */
	bool tx_stalled;
	/* Stream links: when the stall began (c->now at the cut write) and
	 * whether stream_timer() logged it as long (STALL_LOG_MS). */
	struct timespec stall_t0;
	bool stall_logged;
	/* Offloads (tap with virtio-net headers, set by tapdev_attach()):
	 * TCP frames to the guest may be GSO super-frames, and may carry a
	 * partial checksum the guest's kernel need not verify. */
	bool tx_gso, tx_csum_partial;
	/* USO (tap offers TUN_F_USO4/6): UDP frames to the guest may be
	 * GSO super-frames of equal-sized datagrams (udp.c), and the
	 * guest's kernel may send us such frames (split by udp.c). */
	bool tx_uso;
	/* The guest's kernel may hand us TCP segmentation offload frames
	 * (TUN_F_TSO4 and TUN_F_TSO6): up to 64 KiB of payload per frame. */
	bool rx_tso;
	/* A live migration brought the guest here: announce the gateway to
	 * it once frames can reach it (migrate.c migrate_timer()). */
	bool announce;
	struct tx_batch tx;
	struct rx_batch rx;
	struct vu_dev *vu;		/* vhost-user device (vhost_user.h),
					 * NULL unless --vhost-user */
};

/* tap_init() - allocate batch buffers (once, at start-up). */
void tap_init(struct ctx *c);

/* tap_attach() - start using fd with the given backend. */
void tap_attach(struct ctx *c, const struct link_ops *ops, int fd);

/* tap_detach() - forget the current peer (vm mode: client gone). */
void tap_detach(struct ctx *c);

/* tap_link_down() - the peer is gone: refuse frames from now on (up
 * false) and leave the teardown to the loop (link.closing). */
void tap_link_down(struct ctx *c);

/* tap_handler() - epoll event on the link fd: finish a stalled write
 * (EPOLLOUT), read batches until empty (bounded per call), parse and
 * dispatch every frame, flush the frames each batch produced. */
void tap_handler(struct ctx *c, uint32_t events);

/* tap_input() - parse and dispatch the frames in c->link.rx. */
void tap_input(struct ctx *c);

/* tap_tx_reserve() - room for one frame of up to max_len bytes; flushes a
 * full batch first. If the link is stalled, the queued frames are moved
 * to the start of the buffer instead; only when the batch is still full
 * (TX_FRAMES_MAX frames or TX_BUF_SIZE bytes held) are they dropped,
 * DROP_TX_FULL, all but a partly written first one: the newest go on.
 * Returns the frame start (Ethernet header), or NULL when max_len can
 * never fit or no peer is connected. */
uint8_t *tap_tx_reserve(struct ctx *c, size_t max_len);

/* tap_tx_commit() - queue the frame started by the last reserve, len
 * bytes long (len <= the reserved max_len); a frame shorter than
 * ETH_ZLEN_ is zero-padded to it (the reserve left the room). */
void tap_tx_commit(struct ctx *c, size_t len);

/* tap_tx_reserve_many() - room for up to n frames of up to max_len bytes
 * each, at a fixed stride (so a batch receive can fill them in place);
 * flushes first when fewer than n would fit (a stalled link: as
 * tap_tx_reserve(), but fewer slots than n are given rather than queued
 * frames dropped, as long as one fits). Fills frames[] and returns
 * how many slots there are (0: no peer, or max_len can never fit).
 * Nothing else may reserve or commit until tap_tx_commit_many(). */
unsigned int tap_tx_reserve_many(struct ctx *c, size_t max_len,
				 uint8_t **frames, unsigned int n);

/* tap_tx_commit_many() - queue slots 0..k-1 of the last
 * tap_tx_reserve_many(), slot i lens[i] bytes long (0: skip the slot).
 * Frames are moved down to stay contiguous in the batch buffer and padded
 * to ETH_ZLEN_ as tap_tx_commit() pads. */
void tap_tx_commit_many(struct ctx *c, const size_t *lens, unsigned int k);

/* tap_tx_commit_many_off() - the same, each frame with the offload state
 * o (GSO announced only for frames longer than one segment; see
 * vnet_hdr_write()). On links without virtio-net headers o is ignored:
 * the caller must only ask for what c->link.tx_gso / tx_csum_partial
 * allow. */
struct pkt_off;
void tap_tx_commit_many_off(struct ctx *c, const size_t *lens, unsigned int k,
			    const struct pkt_off *o);

/* tap_tx_commit_many_offv() - the same, frame i with its own offload
 * state offs[i] (same rules; offs NULL: none for any frame). */
void tap_tx_commit_many_offv(struct ctx *c, const size_t *lens,
			     unsigned int k, const struct pkt_off *offs);

/* tap_flush() - write out queued frames (end of each loop iteration); while
 * the link is stalled they stay queued. */
void tap_flush(struct ctx *c);

/* tap_eth_to_guest() - Ethernet header from ferry to the guest at f;
 * returns the L3 start. */
uint8_t *tap_eth_to_guest(const struct ctx *c, uint8_t *f, uint16_t type);

/* tap_send_ip4()/tap_send_ip6() - queue one IP packet to the guest with
 * the given transport bytes; the transport checksum (TCP, UDP, ICMP,
 * ICMPv6) is computed here. Return false if the frame could not be
 * queued. */
bool tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		  uint8_t proto, const void *l4, size_t l4len);
bool tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		  const struct in6_addr *dst, uint8_t proto, const void *l4,
		  size_t l4len);
/* tap_send_ip4_mac()/tap_send_ip6_mac() - the same, to Ethernet
 * destination mac (broadcast, multicast) instead of the guest's MAC;
 * mac NULL means the guest's. */
bool tap_send_ip4_mac(struct ctx *c, const uint8_t *mac, struct in_addr src,
		      struct in_addr dst, uint8_t proto, const void *l4,
		      size_t l4len);
bool tap_send_ip6_mac(struct ctx *c, const uint8_t *mac,
		      const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, const void *l4, size_t l4len);

/* Backends */
extern const struct link_ops link_tapdev_ops;	/* tap_dev.c */
extern const struct link_ops link_stream_ops;	/* tap_stream.c */
extern const struct link_ops link_tapvnet_ops;	/* tap_dev.c, offloads */
extern const struct link_ops link_vu_ops;	/* tap_vu.c, vhost-user */

/* stream_timer() - module timer for a qemu stream link: a stall that has
 * lasted STALL_LOG_MS (2 s) is logged once, with what waits in the socket
 * (the peer stopped taking frames: a paused qemu, or a guest that gives
 * it no receive buffers); its end is logged too. No-op for other links. */
void stream_timer(struct ctx *c);

/* tapdev_attach() - attach the tap device fd; vnet: it was opened with
 * IFF_VNET_HDR, so set the header size and byte order, probe which
 * offloads the kernel accepts (TUNSETOFFLOAD, logged) and use them. */
void tapdev_attach(struct ctx *c, int fd, bool vnet);

#endif /* FERRY_TAP_H */
