/* fuzz.h - shared pieces of ferry's fuzz targets and of the corpus replay
 * unit test (test/unit/test_regress.c).
 *
 * Theory of operation: every target feeds untrusted bytes into the same
 * entry point ferry uses at run time. Targets that create host sockets
 * (the frame path opens UDP sockets and ping sockets for whatever the
 * guest addresses) first move into a private network namespace with only
 * loopback up (fuzz_isolate()), so no fuzzed datagram can leave the
 * machine: the hard network rule holds even for random destinations.
 *
 * Frame input format (fuzz_frames_feed()), chosen so that one file is
 * both a readable seed and a good mutation target:
 *
 *   byte 0      flags: FZ_FIX_CSUM  recompute IPv4 header and transport
 *                                   checksums first (else random bytes
 *                                   almost never get past pkt_parse())
 *                      FZ_BATCH     the rest is a batch of frames, each
 *                                   [2-byte big-endian length][frame]
 *                                   (else the rest is one frame)
 *                      FZ_TIMERS    advance time 61 s and run module timers
 *                                   after the batch
 *                      FZ_EVENTS    then handle ready host sockets, as the
 *                                   loop would (loopback peers answer: TCP
 *                                   port 80, UDP port 53, ping)
 *                      FZ_VNET      the link has virtio-net headers (tap
 *                                   offloads, vnet.h): each frame starts
 *                                   with its 12-byte header (FZ_FIX_CSUM
 *                                   fixes the frame after it), and frames
 *                                   to the guest may be GSO / partial
 *   byte 1..    the frame(s)
 */
#ifndef FERRY_FUZZ_H
#define FERRY_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;

#define FZ_FIX_CSUM	0x01
#define FZ_BATCH	0x02
#define FZ_TIMERS	0x04
#define FZ_EVENTS	0x08
#define FZ_VNET		0x10

/* fuzz_isolate() - enter a new network namespace (a new user namespace
 * too when not root) and bring loopback up. Returns false, with errno,
 * when that is impossible: callers must then not touch the network. */
bool fuzz_isolate(void);
/* fuzz_isolate_or_exit() - fuzz_isolate(), or one line naming the
 * target and exit status 2: a fuzz target never runs outside. */
void fuzz_isolate_or_exit(const char *target);

/* fuzz_frame_ctx() - the unit-test harness context with every service
 * on: ARP, NDP, DHCP, DHCPv6, ICMP echo (ping sockets, if the namespace
 * allows them), UDP, TCP, gateway mapping, pcap capture into /dev/null,
 * and loopback peers (call only after fuzz_isolate()). */
struct ctx *fuzz_frame_ctx(void);

/* fuzz_frame_ctx_reset() - forget what earlier inputs taught the context
 * (guest MAC and addresses, TCP, UDP and ICMP flows), frames to the guest
 * included, so each input starts from the same state. */
void fuzz_frame_ctx_reset(struct ctx *c);

/* fuzz_frames_feed() - decode data (format above) into the context's
 * receive batch and run it through tap_input(). */
void fuzz_frames_feed(struct ctx *c, const uint8_t *data, size_t size);

/* fuzz_vu_mem() - vhost-user device d's memory table: one region of
 * size bytes at host, seen at guest address gpa and front-end address
 * uva (no mapping of ours). */
struct vu_dev;
void fuzz_vu_mem(struct vu_dev *d, uint8_t *host, uint64_t gpa,
		 uint64_t uva, uint64_t size);

/* fuzz_vu_ring() - queue q of d with num entries: descriptor table at
 * front-end address desc, avail ring stride bytes after it, used ring
 * 2 * stride after it; addressed, started, enabled, then mapped through
 * the memory table. Returns virtq_map()'s verdict. */
bool fuzz_vu_ring(struct vu_dev *d, unsigned int q, uint16_t num,
		  uint64_t desc, uint64_t stride);

/* fuzz_fix_csums() - make the IPv4 header checksum and the transport
 * checksum of frame f (len bytes) right, wherever its headers allow. */
void fuzz_fix_csums(uint8_t *f, size_t len);

/* fuzz_chunk_write() - write the chunk of data at *off to fd and step
 * past it. A chunk is [n][n bytes]; n = 255: the rest of the input.
 * Returns false when the input is used up. */
bool fuzz_chunk_write(int fd, const uint8_t *data, size_t size, size_t *off);

/* fuzz_drain() - read and discard what is queued on fd (what ferry sent
 * to the peer end of a socketpair). */
void fuzz_drain(int fd);

/* fuzz_tcp (tcp_prog.c): a program of guest and host actions against one
 * live TCP connection, with invariants checked after every step (abort()
 * on a violation). fuzz_tcp_init() once (after fuzz_isolate()), then
 * fuzz_tcp_run() per input; each run ends with the pools empty. */
void fuzz_tcp_init(void);
void fuzz_tcp_run(const uint8_t *data, size_t size);
/* tp_gbyte()/tp_hbyte() - the guest's and the host's byte at stream
 * offset i (the programs' patterns). */
uint8_t tp_gbyte(uint64_t i);
uint8_t tp_hbyte(uint64_t i);
/* fuzz_tcp_conn_check() - an established connection record's own
 * consistency (snd_una <= snd_nxt <= snd_max, the SACK scoreboard, our
 * ACK within what was written): NULL, or what is wrong. For the fuzz
 * target and unit tests; never called in the data path. */
struct tcp_conn;
const char *fuzz_tcp_conn_check(const struct tcp_conn *conn);

#endif /* FERRY_FUZZ_H */
