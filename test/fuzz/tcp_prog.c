/* tcp_prog.c - the TCP program interpreter of fuzz_tcp and of the corpus
 * replay (test/unit/test_regress.c): a guest played against one live
 * connection through ferry, with invariants checked after every step.
 *
 * Theory of operation
 *
 * fuzz_frame mutates raw frames, which almost never carry a sequence
 * number inside a live connection's window. Here the input is a program
 * of guest actions whose numbers are relative to the connection's state
 * (what the guest sent, what ferry sent, what the guest acknowledged), so
 * every mutation stays meaningful: data in order, duplicated, beyond a
 * gap or overlapping; ACKs of old, current or never-sent bytes; SACK
 * blocks; windows (zero, shrinking); FIN, RST, a SYN again; the host
 * peer's writes, reads, shutdown, close and abort; the clock. The guest
 * side is the unit tests' (tcp_harness.c: frames through tap_input(),
 * real loopback sockets for the host side); the loop is driven by hand,
 * with the injected clock only (no sleeping).
 *
 * Input: an 8-byte header (TP_H_*: family, the SYN's options, MTU, the
 * host socket's buffer), then 4-byte steps [op a b c] (a SACK step takes
 * 2 more bytes per block). The guest sends the pattern tp_gbyte(i) at
 * stream offset i, the host tp_hbyte(i), so every delivered byte can be
 * checked against its offset.
 *
 * Every frame to the guest is checked as it is flushed (test_tx_hook),
 * the connection record after every step (fuzz_tcp_conn_check()), and
 * the host's bytes as they are read. A violation prints what and aborts
 * (libFuzzer reports it; the replay's child dies). Each invariant names
 * its reason where it is checked.
 *
 * Host-initiated connections (a -t forwarded port: ferry's SYN-SENT
 * toward the guest): an input that begins with TP_HOST_MAGIC, then the
 * same header and steps. A host client connects to a port ferry forwards
 * (fwd_listener(), VM mode: a loopback client is not spliced), ferry
 * sends the guest its SYN, and the header's options go into the guest's
 * SYN-ACK instead (sent at once unless TP_H_MANUAL). One more step,
 * TP_SYNACK, answers with an acceptable or a wrong ACK, data, a FIN;
 * the other steps do what they do in SYN-SENT too (a bare SYN is a
 * simultaneous open, RSTs and ACKs carry the ACK TP_ACK set, the clock
 * drives ferry's SYN retries, the host client writes, closes or aborts
 * before the guest answered). The old inputs keep their meaning: the
 * magic is four bytes no header of theirs starts with, and TP_SYNACK is
 * only an operation after it.
 *
 * At the end of an input the host aborts its socket, the loop runs until
 * the flow is gone (it must be: bounded life), the clock passes
 * TIME-WAIT, and the pools must be back to empty: the next input starts
 * from the same state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ferry.h"
#include "fuzz.h"
#include "log.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "tcp_ooo.h"
#include "util.h"
#include "test/unit/tcp_harness.h"
#include "test/unit/unit.h"

/* Header bits (byte 0). */
#define TP_H_V6		0x01	/* IPv6, else IPv4 */
#define TP_H_SACK	0x02	/* SACK-permitted in the SYN */
#define TP_H_WS		0x04	/* window scale (byte 1) in the SYN */
#define TP_H_MSS	0x08	/* MSS (bytes 2-3) in the SYN */
#define TP_H_JUMBO	0x10	/* MTU 9000, else 1500 */
#define TP_H_MANUAL	0x20	/* no automatic ACK of the SYN-ACK */
#define TP_H_AUTOACK	0x40	/* after each step, the guest ACKs all
				 * ferry sent, if that is news */
#define TP_H_AUTOREAD	0x80	/* after each step, the host reads all */
#define TP_HDR		8	/* bytes 4-5: the SYN's window; 6: the host
				 * socket's SO_RCVBUF in KiB (0: default);
				 * 7: the first window field (KiB, 0: 64) */
/* Before the header: the host connects, ferry sends the SYN, the
 * header's options (bits and bytes as above) are the guest's SYN-ACK's;
 * TP_H_MANUAL: the program sends the SYN-ACK (TP_SYNACK). */
#define TP_HOST_MAGIC	"host"

enum tp_op {
	TP_SEND,	/* a b: length; c: offset from the highest sent (x64) */
	TP_BURST,	/* a: full segments in one batch, in order */
	TP_ACK,		/* a b: k; c: base (snd_max - k, una + k, snd_max + k,
			 * the last ACK - k) */
	TP_SACK,	/* a: blocks; then 2 bytes each, in ferry's segments */
	TP_DUPACK,	/* c: pure ACKs of the current ACK, 1..4 */
	TP_WND,		/* a b: window field; c & 1: announce it now */
	TP_FIN,		/* a b: data with it; c & 1: at the first unsent */
	TP_RST,		/* a b: seq offset from ferry's ACK (signed); c: ACK */
	TP_SYN,		/* c & 1: another ISN; dead: a new connection */
	TP_HWRITE,	/* a b << (c % 5): bytes the host writes */
	TP_HREAD,	/* a b << (c % 5): bytes the host reads */
	TP_HSHUT,	/* c % 3: shutdown(SHUT_WR), close(), abort */
	TP_CLOCK,	/* a % 16: a step of tp_ms[], + b ms */
	TP_LOOP,	/* the event loop once more */
	TP_OPS,
	/* host-initiated inputs only (after TP_HOST_MAGIC): */
	TP_SYNACK = TP_OPS,	/* a & 3: ACK ISS + 1, =< ISS (- b), beyond
				 * SND.NXT (+ b), far (b c); a & 4: FIN;
				 * a >> 3: data (x32 bytes) */
	TP_OPS_HOST
};

static const int tp_ms[16] = { 1, 2, 3, 5, 10, 20, 50, 100, 199, 200, 201,
			       400, 1000, 5000, 10000, 61000 };

#define TP_GMAX		(1u << 20)	/* guest stream bytes tracked */
#define TP_HMAX		(8u << 20)	/* host stream bytes written at most */
#define TP_SPORT	40000
#define TP_GPORT	8080		/* the guest's port a -t port forwards to */

/* The connection as the guest and the host peer see it. Sequence numbers
 * are kept raw (seq_t); offsets are stream positions. */
struct tp {
	struct ctx *c;
	struct tguest g;
	int ls4, ls6;			/* the host's listeners ... */
	uint16_t port4, port6;		/* ... and their ports */
	int host;			/* accepted socket, -1: none */
	uint8_t hdr[TP_HDR];
	bool v6;
	bool hmode;			/* host-initiated (TP_HOST_MAGIC) */
	int fls4, fls6;			/* the forwarded ports' listeners ... */
	uint16_t fport4, fport6;	/* ... and their ports */

	/* guest's connection */
	bool live;			/* our SYN was answered, no RST since */
	bool est;			/* the guest acknowledged the SYN-ACK */
	bool clean;			/* the flow ended without RST (TIME-WAIT) */
	seq_t isn_g;			/* the guest's ISN */
	uint8_t *gmap;			/* guest offsets sent (bitmap) */
	uint32_t ghi;			/* one past the highest offset sent */
	uint32_t gpfx;			/* gmap_prefix()'s last answer */
	bool gfin;			/* the guest sent its FIN ... */
	uint32_t gfin_off;		/* ... after this many bytes */
	uint8_t ws;			/* the guest's window scale in use */
	uint32_t gmss;			/* the largest payload ferry may send */

	/* ferry's side as the guest saw it */
	bool synack;			/* ferry's SYN-ACK (hmode: its SYN) */
	seq_t isn_f;
	seq_t snd_max;			/* one past the highest seq ferry sent */
	seq_t una;			/* highest ACK ferry took (model) */
	seq_t edge;			/* the guest's right edge, as ferry took
					 * it: una + the last window taken */
	seq_t wl1, wl2;			/* SEG.SEQ and SEG.ACK of the segment
					 * that window came from (RFC 9293
					 * SND.WL1/2) */
	bool fin;			/* ferry's FIN ... */
	seq_t fin_seq;			/* ... at this seq */
	bool acked;			/* ferry sent an ACK ... */
	seq_t ack_hi;			/* ... and the highest was this */
	uint32_t fmss;			/* payload size ferry's SYN-ACK allows */
	uint32_t seg_hi;		/* largest data segment seen */

	/* host-initiated: ferry's SYN-SENT */
	unsigned int nsyn;		/* ferry's SYNs for this connection */
	int64_t syn_ms, syn_gap;	/* the last one's time, the gap before */
	bool f_ws;			/* ferry's SYN offered a window scale */
	bool gsyn;			/* the guest sent a bare SYN (simultaneous
					 * open) ... */
	bool sim;			/* ... and ferry answered with a SYN-ACK */
	bool rst_want;			/* an RST must answer the guest's segment */
	bool rst_answer;		/* ... and RSTs now are such answers (a
					 * burst draws one per segment) */

	/* what may come now (set per step) */
	bool rst_ok;			/* an RST from ferry is allowed */
	bool rst_reply;			/* ... as an answer to this segment: */
	uint8_t last_flags;		/* the guest's last segment */
	seq_t last_seq, last_ack;
	uint32_t last_len;
	bool tw_ack_ok;			/* TIME-WAIT may answer with its ACK */

	/* host peer */
	uint64_t hw, hr;		/* bytes written, read */
	bool hfin, hclosed, heof, hreset;
};

static struct tp tp_state;
static bool tp_verbose;		/* FUZZ_TCP_VERBOSE set: a line per step */

/* tp_fail() - an invariant is violated: say which, and abort. */
static void __attribute__((format(printf, 1, 2), noreturn))
tp_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz_tcp: invariant violated: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

uint8_t tp_gbyte(uint64_t i)
{
	return (uint8_t)((i * 2654435761u) >> 24 ^ (i >> 16));
}

uint8_t tp_hbyte(uint64_t i)
{
	return (uint8_t)(((i * 2246822519u) >> 24) ^ 0x5a ^ (i >> 13));
}

/* gmap_set()/gmap_prefix() - guest offsets sent, and the first one not. */
static void gmap_set(struct tp *t, uint32_t off, uint32_t len)
{
	uint32_t i;

	for (i = off; i < off + len && i < TP_GMAX; i++)
		t->gmap[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static uint32_t gmap_prefix(struct tp *t)
{
	/* Bits are only ever set until the next connection's reset: the
	 * prefix only grows, so the scan resumes where it last stopped
	 * (scanning from 0 on every frame made long inputs quadratic:
	 * 10 s for one input of 64 bytes). */
	uint32_t i = t->gpfx;

	while (i < TP_GMAX && i < t->ghi && !(i & 7) && t->gmap[i >> 3] == 0xff)
		i += 8;
	while (i < TP_GMAX && i < t->ghi && (t->gmap[i >> 3] >> (i & 7)) & 1)
		i++;
	t->gpfx = i;
	return i;
}

/* tp_conn() - ferry's connection for the guest's port, NULL: none. */
static struct tcp_conn *tp_conn(struct tp *t)
{
	struct flow *fl;

	for (fl = flow_first(&t->c->flows, FLOW_TCP); fl;
	     fl = flow_next(&t->c->flows, fl))
		if (fl->f.key[FLOW_SIDE_GUEST].pa == t->g.sport)
			return FLOW_PRIV(fl, struct tcp_conn);
	return NULL;
}

const char *fuzz_tcp_conn_check(const struct tcp_conn *conn)
{
	seq_t max = tcp_snd_max(conn), una = conn->seq_acked_by_guest;
	unsigned int i;

	if (conn->state != TCP_CS_ESTABLISHED)
		return NULL;
	/* snd_una <= snd_nxt <= snd_max: nothing is acknowledged that was
	 * not sent, a rewind goes back, never forward. */
	if (seq_gt(una, conn->seq_to_guest))
		return "seq_acked_by_guest beyond seq_to_guest";
	if (seq_gt(conn->seq_to_guest, max))
		return "seq_to_guest beyond snd_max";
	/* Our ACK never passes what was written to the socket (an
	 * acknowledged byte is a promise, tcp.c), the FIN included. */
	if (seq_gt(conn->ack_sent, seq_add(conn->seq_from_guest, 1)))
		return "ack_sent beyond seq_from_guest + 1";
	if ((conn->flags & TCP_C_FIN_ACKED) && !(conn->flags & TCP_C_FIN_SENT) &&
	    !conn->fin_rewound)
		return "FIN acked but not sent";
	if (conn->nsacked > TCP_SACK_BLKS)
		return "nsacked beyond the scoreboard";
	/* The scoreboard: sorted, disjoint ranges in (una, snd_max]. */
	for (i = 0; i < conn->nsacked; i++) {
		const struct tcp_sack_blk *b = &conn->sacked[i];

		if (!seq_lt(b->l, b->r))
			return "empty or inverted SACK range";
		if (seq_lt(b->l, una) || seq_gt(b->r, max))
			return "SACK range outside (una, snd_max]";
		if (i && !seq_lt(conn->sacked[i - 1].r, b->l))
			return "SACK ranges unsorted, overlapping or adjacent";
	}
	if (seq_lt(conn->sack_rxt, una) && conn->sack_rec &&
	    seq_gt(conn->sack_rxt, max))
		return "sack_rxt beyond snd_max";
	if (conn->dup_acks > 3)
		return "dup_acks beyond 3";
	if (conn->mss_to_guest < 64)
		return "mss_to_guest below 64";
	return NULL;
}

/* tp_off() - stream offset of ferry's sequence number s. */
static uint32_t tp_off(const struct tp *t, seq_t s)
{
	return (uint32_t)seq_diff(s, seq_add(t->isn_f, 1));
}

/* tp_guest_mss() - the largest payload ferry may send the guest, from
 * the MSS of the guest's SYN (or SYN-ACK), as the header has it. */
static uint32_t tp_guest_mss(const struct tp *t)
{
	uint32_t mtu = t->c->conf.mtu, hl = (t->v6 ? 40 : 20) + TCP_HLEN;
	uint32_t g = (t->hdr[0] & TP_H_MSS) ? rd16(t->hdr + 2)
					    : (t->v6 ? 1220 : 536);

	/* RFC 9293 3.7.1: at most the guest's MSS (536/1220 when it sent
	 * none), and what its MTU carries; ferry never goes below 64 (as
	 * Linux's tcp_min_snd_mss floor: a smaller MSS is a denial-of-
	 * service lever, not a constraint). */
	return MAX(MIN(g, mtu - hl), 64u);
}

/* tp_syn_seen() - ferry's SYN-ACK: its ISN, MSS, window scale. */
static void tp_syn_seen(struct tp *t, const struct pkt *p)
{
	if (!(p->tcp.flags & TCP_F_ACK))
		tp_fail("a SYN without ACK to a guest-initiated connection");
	/* Host-initiated: a SYN-ACK only answers the guest's own SYN in
	 * SYN-SENT (RFC 9293 3.10.7.3, fourth: simultaneous open, SYN-
	 * RECEIVED), with the ISN of ferry's SYN (checked below). */
	if (t->hmode && !t->gsyn)
		tp_fail("a SYN-ACK from ferry, the guest sent no SYN");
	if (t->hmode && t->est)
		tp_fail("a SYN-ACK from ferry after the handshake");
	if (p->tcp.ack != t->isn_g.v + 1)
		tp_fail("SYN-ACK acknowledges %u, the guest's SYN was %u",
			p->tcp.ack, t->isn_g.v);
	if (t->synack && p->tcp.seq != t->isn_f.v)
		tp_fail("SYN-ACK again with another ISN (%u, was %u)",
			p->tcp.seq, t->isn_f.v);
	/* RFC 7323 2.2: a window scale only when the guest offered one;
	 * RFC 2018: SACK-permitted only when the guest's SYN had it. */
	if (p->tcp.has_wscale && !(t->hdr[0] & TP_H_WS))
		tp_fail("window scale in the SYN-ACK, none in the SYN");
	if (p->tcp.has_sack_perm && !(t->hdr[0] & TP_H_SACK))
		tp_fail("SACK-permitted in the SYN-ACK, not in the SYN");
	if (!t->synack) {
		t->isn_f = seq_make(p->tcp.seq);
		t->snd_max = t->una = t->edge = seq_add(t->isn_f, 1);
		t->edge = seq_add(t->una, rd16(t->hdr + 4));	/* unscaled */
		t->ws = p->tcp.has_wscale ? MIN(t->hdr[1], 14) : 0;
		t->gmss = tp_guest_mss(t);
		t->fmss = p->tcp.has_mss ? p->tcp.mss : 536;
	}
	if (t->hmode && !t->sim) {	/* ferry's SYN set the rest */
		t->edge = seq_add(t->isn_f, 1 + rd16(t->hdr + 4));
		t->ws = p->tcp.has_wscale && (t->hdr[0] & TP_H_WS) ?
			MIN(t->hdr[1], 14) : 0;
		t->gmss = tp_guest_mss(t);
		t->sim = true;
	}
	t->synack = true;
	t->live = true;
	t->snd_max = seq_add(t->isn_f, 1);
	if (seq_gt(t->snd_max, t->una))
		t->una = t->snd_max;
}

/* tp_syn_host() - ferry's SYN to the guest (host-initiated): its ISN
 * and options, its retransmissions. */
static void tp_syn_host(struct tp *t, const struct pkt *p)
{
	uint32_t mtu = t->c->conf.mtu, hl = (t->v6 ? 40 : 20) + TCP_HLEN;
	int64_t now = tcp_now_ms(t->c), gap = now - t->syn_ms;

	if (t->est || t->sim)
		tp_fail("a SYN from ferry after the handshake");
	if (t->synack && !t->live)
		tp_fail("a SYN from ferry after the connection ended");
	/* RFC 9293 3.7.1 (MUST-14/15): the MSS option goes in the SYN, and
	 * it is what ferry can take: a frame on the guest's link (the MTU,
	 * less the IP and TCP headers); 64 is the least a sane one says. */
	if (!p->tcp.has_mss)
		tp_fail("ferry's SYN carries no MSS");
	if (p->tcp.mss > mtu - hl || p->tcp.mss < 64)
		tp_fail("ferry's SYN says MSS %u, the link (MTU %u) carries %u",
			p->tcp.mss, mtu, mtu - hl);
	/* RFC 9293 3.4: ISS is chosen once; a retransmitted SYN carries it
	 * again (SND.UNA = ISS, SND.NXT = ISS + 1 until the SYN-ACK). */
	if (t->synack && p->tcp.seq != t->isn_f.v)
		tp_fail("ferry's SYN again with another ISN (%u, was %u)",
			p->tcp.seq, t->isn_f.v);
	/* Data or a FIN in the SYN would be the host's bytes before the
	 * guest's ISN is known: ferry holds them until ESTABLISHED (RFC
	 * 9293 3.10.7.3 queues them), so the model checks them there. */
	if (p->payload_len || (p->tcp.flags & TCP_F_FIN))
		tp_fail("ferry's SYN carries %zu bytes%s", p->payload_len,
			(p->tcp.flags & TCP_F_FIN) ? " and a FIN" : "");
	/* RFC 9293 3.8.3: retransmissions of the SYN are bounded (R2), and
	 * the flow goes with the last (tp_check()). */
	if (t->nsyn >= 1 + TCP_SYN_RETRIES)
		tp_fail("ferry's SYN number %u, %d retransmissions allowed",
			t->nsyn + 1, TCP_SYN_RETRIES);
	/* RFC 6298 2.1 and 2.4: the first retransmission after one second
	 * at the least; 5.5: each later one backs off, RTO doubled (it may
	 * stop at 60 s, 2.5; 2 ms for the clock's rounding). */
	if (t->nsyn && gap < 1000)
		tp_fail("ferry's SYN retransmitted after %lld ms (RFC 6298: "
			"1 s at least)", (long long)gap);
	if (t->nsyn > 1 && (gap < MIN(2 * t->syn_gap, 60000) - 2 ||
			    gap > 2 * t->syn_gap + 2))
		tp_fail("ferry's SYN retransmitted after %lld ms, %lld before: "
			"RTO not doubled", (long long)gap,
			(long long)t->syn_gap);
	if (t->nsyn)
		t->syn_gap = gap;
	t->syn_ms = now;
	t->nsyn++;
	if (!t->synack) {
		t->isn_f = seq_make(p->tcp.seq);
		t->snd_max = t->una = t->edge = seq_add(t->isn_f, 1);
		t->fmss = p->tcp.mss;
		t->f_ws = p->tcp.has_wscale;
		t->g.ack = t->isn_f.v + 1;
	}
	t->synack = true;
	t->live = true;
}

/* tp_ack_seen() - the ACK field of a ferry segment (not an RST's). */
static void tp_ack_seen(struct tp *t, seq_t ack)
{
	seq_t base = seq_add(t->isn_g, 1);
	uint32_t pfx = gmap_prefix(t), max = pfx;

	if (t->gfin && pfx >= t->gfin_off)
		max = t->gfin_off + 1;
	/* An ACK is a promise that the bytes reached the host (tcp.c): it
	 * cannot cover bytes the guest never sent, nor a FIN it did not. */
	if (seq_diff(ack, base) > (int32_t)max || seq_diff(ack, base) < 0)
		tp_fail("ACK %u covers %d guest bytes, %u were sent in order%s",
			ack.v, seq_diff(ack, base), pfx,
			t->gfin ? " (and a FIN)" : "");
	/* RFC 9293 3.4: RCV.NXT never moves back, nor does our ACK. */
	if (t->acked && seq_lt(ack, t->ack_hi))
		tp_fail("ACK moved back: %u after %u", ack.v, t->ack_hi.v);
	if (!t->acked || seq_gt(ack, t->ack_hi))
		t->ack_hi = ack;
	t->acked = true;
}

/* tp_data_seen() - a data segment (or FIN) of the live connection. */
static void tp_data_seen(struct tp *t, const struct pkt *p)
{
	seq_t s = seq_make(p->tcp.seq);
	uint32_t len = (uint32_t)p->payload_len, off = tp_off(t, s), i;
	bool fin = p->tcp.flags & TCP_F_FIN;
	seq_t end = seq_add(s, len);

	if (!len && !fin)
		return;
	if (!t->est)
		tp_fail("data or FIN before the handshake completed");
	if (seq_lt(s, seq_add(t->isn_f, 1)))
		tp_fail("data at %u, before ferry's ISN + 1", s.v);
	/* Every byte carries the host's byte at its offset, resends
	 * included, and none lies beyond what the host wrote. */
	if ((uint64_t)off + len > t->hw)
		tp_fail("data [%u, %u) beyond the %llu bytes the host wrote",
			off, off + len, (unsigned long long)t->hw);
	for (i = 0; i < len; i++)
		if (p->payload[i] != tp_hbyte((uint64_t)off + i))
			tp_fail("data byte at offset %u is %#x, not the host's "
				"%#x", off + i, p->payload[i],
				tp_hbyte((uint64_t)off + i));
	/* RFC 9293 3.7.1: no segment larger than the guest's MSS. */
	if (len > t->gmss)
		tp_fail("a segment of %u bytes, the guest's MSS is %u", len,
			t->gmss);
	/* RFC 9293 3.8.6: nothing beyond the guest's right edge, SND.UNA +
	 * SND.WND as of the last ACK taken, checked when a byte is sent:
	 * a shrunk window may leave bytes sent before beyond it, but after
	 * the shrink neither new data (SHLD-15) nor a resend (SHLD-16:
	 * only what lies between SND.UNA and SND.UNA + SND.WND) goes past
	 * it. ferry's zero-window probe carries no byte (tcp_send_probe()),
	 * so no exception for the one byte RFC 9293 3.8.6.1 would allow. */
	if (len && seq_gt(end, t->edge))
		tp_fail("data [%u, %u) beyond the guest's right edge %u",
			off, off + len, tp_off(t, t->edge));
	/* Acknowledged bytes left the retransmission queue (RFC 9293
	 * 3.10.7.4: SND.UNA advanced); ferry dropped them from the socket,
	 * so a byte below the guest's ACK is one ferry cannot have. */
	if (len && seq_lt(s, t->una))
		tp_fail("data at offset %u below the guest's ACK %u", off,
			tp_off(t, t->una));
	/* Our FIN has one sequence number for the connection's life, the
	 * end of the host's stream, only after the host's FIN, and nothing
	 * comes after it. */
	if (t->fin && seq_gt(end, t->fin_seq))
		tp_fail("data [%u, %u) after our FIN at %u", off, off + len,
			tp_off(t, t->fin_seq));
	if (fin) {
		seq_t f = end;

		if (!t->hfin)
			tp_fail("FIN at %u, the host did not close", off + len);
		if ((uint64_t)off + len != t->hw)
			tp_fail("FIN at %u, the host wrote %llu", off + len,
				(unsigned long long)t->hw);
		if (t->fin && !seq_eq(f, t->fin_seq))
			tp_fail("second FIN at %u, the first at %u", off + len,
				tp_off(t, t->fin_seq));
		t->fin = true;
		t->fin_seq = f;
	}
	if (len > t->seg_hi)
		t->seg_hi = len;
	end = seq_add(end, fin);
	if (seq_gt(end, t->snd_max))
		t->snd_max = end;
}

/* tp_rst_seen() - an RST from ferry on the guest's 4-tuple: only where
 * RFC 9293 has one. As the answer to a segment for no connection
 * (3.10.7.1: seq from its ACK, else ACK of its seq + len), or when
 * ferry gives up the connection: the host aborted (its socket's error),
 * retransmissions or the handshake timed out (3.8.3's R2), or it was
 * idle for hours. In SYN-SENT (host-initiated) the answer to an
 * unacceptable ACK, which leaves the connection as it was. */
static void tp_rst_seen(struct tp *t, const struct pkt *p)
{
	if (!t->rst_ok)
		tp_fail("RST to the guest out of the blue");
	if (t->rst_answer) {
		/* RFC 9293 3.10.7.3, first (SYN-SENT, ACK bit set): SEG.ACK
		 * =< ISS or > SND.NXT: <SEQ=SEG.ACK><CTL=RST>, the segment
		 * discarded, the connection still in SYN-SENT. */
		if (p->tcp.seq != t->last_ack.v || (p->tcp.flags & TCP_F_ACK))
			tp_fail("RST answer in SYN-SENT: seq %u%s, the segment's "
				"ACK was %u", p->tcp.seq,
				(p->tcp.flags & TCP_F_ACK) ? " with ACK" : "",
				t->last_ack.v);
		t->rst_want = false;
		return;
	}
	if (t->rst_reply) {
		if ((t->last_flags & TCP_F_ACK) && p->tcp.seq != t->last_ack.v)
			tp_fail("RST reply seq %u, the segment's ACK was %u",
				p->tcp.seq, t->last_ack.v);
		if (!(t->last_flags & TCP_F_ACK) &&
		    p->tcp.ack != t->last_seq.v + t->last_len +
				  !!(t->last_flags & (TCP_F_SYN | TCP_F_FIN)))
			tp_fail("RST reply acknowledges %u, not the segment",
				p->tcp.ack);
	}
	t->live = false;
}

/* tp_frame() - test_tx_hook: every frame ferry sends the guest. */
static void tp_frame(const uint8_t *f, size_t len)
{
	struct tp *t = &tp_state;
	struct pkt p;

	if (pkt_parse(f, len, true, &p) != DROP_NONE)
		tp_fail("a frame to the guest does not parse (%zu bytes)", len);
	if (len > (size_t)t->c->conf.mtu + ETH_HLEN_)
		tp_fail("a frame of %zu bytes, MTU %u", len, t->c->conf.mtu);
	if (p.l4proto != IPPROTO_TCP)
		return;		/* NDP and the like: not ours to judge */
	if (p.tcp.dport != t->g.sport)
		tp_fail("a segment to guest port %u, no connection there",
			p.tcp.dport);
	if (p.tcp.flags & TCP_F_RST) {
		tp_rst_seen(t, &p);
		return;
	}
	if (p.tcp.flags & TCP_F_SYN) {
		if (t->hmode && !(p.tcp.flags & TCP_F_ACK)) {
			tp_syn_host(t, &p);
			return;
		}
		tp_syn_seen(t, &p);
		tp_ack_seen(t, seq_make(p.tcp.ack));
		return;
	}
	/* RFC 9293 3.10.7.3: in SYN-SENT ferry knows no sequence number of
	 * the guest's to acknowledge: its SYN (and RSTs) are all it sends
	 * until the SYN-ACK (or, in a simultaneous open, its SYN-ACK). */
	if (t->hmode && t->live && !t->est && !t->sim)
		tp_fail("a segment (flags %#x) from ferry in SYN-SENT",
			p.tcp.flags);
	if (!t->live) {
		/* A forgotten flow (tcp_tw.c): TIME-WAIT answers late data or
		 * FIN with the connection's last ACK, nothing else. */
		if (!t->clean || !t->tw_ack_ok)
			tp_fail("a segment (flags %#x) for a closed connection",
				p.tcp.flags);
		if (p.payload_len || (p.tcp.flags & TCP_F_FIN) ||
		    !t->fin || p.tcp.seq != t->fin_seq.v + 1 ||
		    !t->gfin || p.tcp.ack != t->isn_g.v + 1 + t->gfin_off + 1)
			tp_fail("TIME-WAIT answer is not the last ACK (seq %u "
				"ack %u)", p.tcp.seq, p.tcp.ack);
		return;
	}
	if (!(p.tcp.flags & TCP_F_ACK))
		tp_fail("a segment without ACK (flags %#x)", p.tcp.flags);
	tp_ack_seen(t, seq_make(p.tcp.ack));
	tp_data_seen(t, &p);
}

/* tp_input() - frames built into the receive batch, run as one. */
static void tp_input(struct tp *t, uint8_t *const *fr, const size_t *len,
		     unsigned int n)
{
	struct rx_batch *rx = &t->c->link.rx;
	size_t used = 0;
	unsigned int i;

	rx->n = 0;
	for (i = 0; i < n; i++) {
		memcpy(rx->buf + used, fr[i], len[i]);
		rx->f[i].off = (uint32_t)used;
		rx->f[i].len = (uint32_t)len[i];
		used += len[i];
		rx->n++;
	}
	tap_input(t->c);
	tap_flush(t->c);
	if (t->rst_want)
		tp_fail("no RST answered an ACK of %u in SYN-SENT (ISS + 1 is "
			"%u)", t->last_ack.v, t->isn_f.v + 1);
	t->rst_answer = false;
}

/* tp_events() - the loop's socket and timer handling at the current
 * time, until nothing is ready (bounded). */
static void tp_events(struct tp *t)
{
	struct ctx *c = t->c;
	int round, n;

	for (round = 0; round < 32; round++) {
		struct epoll_event ev[16];

		n = epoll_wait(c->epfd, ev, 16, 0);
		loop_dispatch(c, ev, n);
		tap_flush(c);
		if (n <= 0)
			break;
	}
}

/* tp_frame_build() - a guest segment into buf: flags, payload of the
 * guest pattern at offset off (seq from it, or seq itself for SYN/RST),
 * options. */
static size_t tp_build(struct tp *t, uint8_t *buf, uint8_t flags, seq_t seq,
		       uint32_t off, uint32_t len, const uint8_t *opts,
		       size_t optlen)
{
	static uint8_t pay[9100];
	uint32_t i;

	for (i = 0; i < len; i++)
		pay[i] = tp_gbyte((uint64_t)off + i);
	t->last_flags = flags;
	t->last_seq = seq;
	t->last_ack = seq_make(t->g.ack);
	t->last_len = len;
	return guest_frame(&t->g, buf, seq.v, flags, pay, len, opts, optlen);
}

/* tp_max_pay() - the largest payload a guest frame carries. */
static uint32_t tp_max_pay(const struct tp *t)
{
	return t->c->conf.mtu - (t->v6 ? 40 : 20) - TCP_HLEN;
}

/* tp_wnd_field() - the window field of the guest's next segment. */
static uint16_t tp_wnd_field(const struct tp *t)
{
	return t->g.wnd || t->g.wnd_raw ? t->g.wnd : 65535;
}

/* tp_took_ack() - the model of ferry taking the ACK field ack with
 * window field w of the guest's segment at seq (tcp_in.c tcp_conn_input(),
 * tcp_ack_input(): established, ACK, no SYN, no RST, not starting beyond
 * the right edge ferry advertised, between SND.UNA and what was sent,
 * RFC 9293 3.10.7.4): una and the right edge move with it (the edge back
 * too, when the guest shrinks its window), but only from a segment newer
 * than the one the window came from last (SND.WL1/2), or one whose ACK
 * moves una. The edge ferry advertised is read from ferry before the
 * segment: a decision about ferry's own receive window, not what the
 * invariants check. */
static void tp_took_ack(struct tp *t, seq_t seq, seq_t ack, uint16_t w,
			uint8_t flags)
{
	struct tcp_conn *conn = tp_conn(t);

	if (!t->live || !(flags & TCP_F_ACK) || (flags & (TCP_F_SYN | TCP_F_RST)))
		return;
	if (!t->est) {
		/* Host-initiated: in SYN-SENT an ACK alone establishes
		 * nothing (RFC 9293 3.10.7.3, fifth: neither SYN nor RST,
		 * dropped); in SYN-RECEIVED (simultaneous open) it does. */
		if (t->hmode && !t->sim)
			return;
		if (!seq_eq(ack, seq_add(t->isn_f, 1)))
			return;
		t->est = true;
	} else if (conn && seq_gt(seq, conn->wnd_edge)) {
		return;
	}
	if (seq_gt(ack, t->snd_max) || seq_lt(ack, t->una))
		return;
	if (!seq_gt(ack, t->una) && !seq_gt(seq, t->wl1) &&
	    !(seq_eq(seq, t->wl1) && seq_ge(ack, t->wl2)))
		return;
	t->edge = seq_add(ack, (uint32_t)w << t->ws);
	t->una = ack;
	t->wl1 = seq;
	t->wl2 = ack;
}

/* tp_rst_scope() - before a guest segment: whether ferry has no flow for
 * it (an RST may answer it), and whether TIME-WAIT may answer. */
static void tp_scope(struct tp *t, uint8_t flags, uint32_t len)
{
	struct tcp_conn *conn = tp_conn(t);
	bool none = !conn;

	t->rst_ok = t->rst_reply = none && !(flags & TCP_F_RST);
	t->tw_ack_ok = none && t->clean && (flags & TCP_F_ACK) &&
		       (len || (flags & TCP_F_FIN)) && !(flags & TCP_F_RST);
	/* RFC 9293 3.10.7.3, first: in SYN-SENT an ACK that is not ISS + 1
	 * (the SYN is all ferry sent) gets an RST (unless it is one). The
	 * segment's ACK is g.ack (tp_burst() scopes before it builds). */
	t->rst_want = t->hmode && conn &&
		      conn->state == TCP_CS_SYN_TO_GUEST &&
		      (flags & TCP_F_ACK) && !(flags & TCP_F_RST) &&
		      !seq_eq(seq_make(t->g.ack), seq_add(t->isn_f, 1));
	t->rst_answer = t->rst_want;
	if (t->rst_want)
		t->rst_ok = t->rst_reply = true;
	if (t->hclosed || t->hreset)
		t->rst_ok = true;	/* the host's RST may be passed on */
}

/* tp_send() - one guest segment at offset off, with the current ACK and
 * window, through the loop. */
static void tp_send(struct tp *t, uint8_t flags, uint32_t off, uint32_t len,
		    const uint8_t *opts, size_t optlen)
{
	static uint8_t buf[9300];
	uint8_t *fr[1] = { buf };
	size_t n;

	len = MIN(len, tp_max_pay(t) - (uint32_t)optlen);
	if (off >= TP_GMAX || len > TP_GMAX - off)
		return;
	if (t->gfin && (flags & TCP_F_FIN) && off + len != t->gfin_off)
		return;		/* a guest has one FIN */
	if (t->gfin && off + len > t->gfin_off)
		len = off < t->gfin_off ? t->gfin_off - off : 0;
	n = tp_build(t, buf, flags, seq_add(t->isn_g, 1 + off), off, len,
		     opts, optlen);
	gmap_set(t, off, len);
	t->ghi = MAX(t->ghi, off + len);
	if (flags & TCP_F_FIN) {
		t->gfin = true;
		t->gfin_off = off + len;
	}
	tp_scope(t, flags, len);
	tp_took_ack(t, seq_add(t->isn_g, 1 + off), seq_make(t->g.ack),
		    tp_wnd_field(t), flags);
	tp_input(t, fr, &n, 1);
	tp_events(t);
}

/* tp_host_error() - a host socket call failed: a reset is told once
 * (to a read or a write; reads after it see an end). Only ferry's abort
 * resets the host side: after the guest's RST, or with ferry's RST to
 * the guest. */
static void tp_host_error(struct tp *t)
{
	if (errno != ECONNRESET && errno != EPIPE)
		return;
	if (t->live)
		tp_fail("host socket reset (%s), the connection is live",
			strerror(errno));
	t->hreset = true;
}

/* tp_host_reset_due() - ferry gave up a connection in SYN-SENT (why):
 * the host client must hear "connection reset" (RFC 9293 3.10.7.3: an
 * acceptable RST, "error: connection reset"; 3.8.3: R2 reached, the
 * open fails), not an orderly end. The reset crosses the loopback,
 * perhaps by ksoftirqd: waited for, with a deadline. */
static void tp_host_reset_due(struct tp *t, const char *why)
{
	struct pollfd pfd = { .fd = t->host, .events = POLLIN };
	uint8_t b;
	ssize_t r;

	if (t->host < 0 || t->hreset)
		return;
	poll(&pfd, 1, 5000);
	r = recv(t->host, &b, 1, MSG_DONTWAIT);
	if (r >= 0 || errno != ECONNRESET)
		tp_fail("the host client saw %s after %s, not a reset",
			r > 0 ? "data" : r == 0 ? "an orderly end" :
			strerror(errno), why);
	t->hreset = true;
}

/* tp_host_read() - what the host can read, checked: exactly the guest's
 * stream in order, no byte the guest did not send in order before it,
 * the end only at the guest's FIN. */
static void tp_host_read(struct tp *t, uint64_t max)
{
	static uint8_t buf[65536];

	while (t->host >= 0 && !t->heof && !t->hreset && max) {
		ssize_t r = recv(t->host, buf, MIN(max, sizeof(buf)),
				 MSG_DONTWAIT);
		ssize_t i;

		if (r < 0) {
			tp_host_error(t);
			return;
		}
		if (!r) {
			uint32_t pfx = gmap_prefix(t);

			if (!t->gfin || t->hr != t->gfin_off || pfx < t->gfin_off)
				tp_fail("host EOF after %llu bytes, the guest's "
					"FIN %s %u", (unsigned long long)t->hr,
					t->gfin ? "at" : "not sent, sent",
					t->gfin ? t->gfin_off : pfx);
			t->heof = true;
			return;
		}
		if (t->hr + (uint64_t)r > gmap_prefix(t))
			tp_fail("host read %llu bytes, the guest sent %u in "
				"order", (unsigned long long)t->hr + (uint64_t)r,
				gmap_prefix(t));
		for (i = 0; i < r; i++)
			if (buf[i] != tp_gbyte(t->hr + (uint64_t)i))
				tp_fail("host byte at offset %llu is %#x, not "
					"the guest's %#x",
					(unsigned long long)t->hr + i,
					buf[i], tp_gbyte(t->hr + (uint64_t)i));
		t->hr += (uint64_t)r;
		max -= MIN(max, (uint64_t)r);
	}
}

/* tp_host_write() - the host writes up to n bytes of its pattern. */
static void tp_host_write(struct tp *t, uint64_t n)
{
	static uint8_t buf[65536];

	while (t->host >= 0 && !t->hfin && !t->hreset && n && t->hw < TP_HMAX) {
		size_t k = (size_t)MIN(MIN(n, sizeof(buf)), TP_HMAX - t->hw), i;
		ssize_t w;

		for (i = 0; i < k; i++)
			buf[i] = tp_hbyte(t->hw + i);
		w = send(t->host, buf, k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			tp_host_error(t);
		if (w <= 0)
			return;
		t->hw += (uint64_t)w;
		n -= (uint64_t)w;
	}
}

/* tp_host_close() - the host's socket goes (abort: SO_LINGER 0). */
static void tp_host_close(struct tp *t, bool abort_)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	if (t->host < 0)
		return;
	if (abort_)
		setsockopt(t->host, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(t->host);
	t->host = -1;
	t->hfin = t->hclosed = true;
}

/* tp_syn_opts() - the options of the guest's SYN (or SYN-ACK) into
 * opts, as the header has them; returns their length. */
static size_t tp_syn_opts(const struct tp *t, uint8_t *opts)
{
	size_t n = 0;

	if (t->hdr[0] & TP_H_MSS) {
		opts[n++] = 2;
		opts[n++] = 4;
		opts[n++] = t->hdr[2];
		opts[n++] = t->hdr[3];
	}
	if (t->hdr[0] & TP_H_WS) {
		opts[n++] = 1;
		opts[n++] = 3;
		opts[n++] = 3;
		opts[n++] = t->hdr[1];
	}
	if (t->hdr[0] & TP_H_SACK) {
		opts[n++] = 1;
		opts[n++] = 1;
		opts[n++] = 4;
		opts[n++] = 2;
	}
	return n;
}

/* tp_synack() - the guest's SYN-ACK to ferry's SYN (host-initiated):
 * options and window from the header, the ACK as kind (TP_SYNACK's a)
 * says, b and c its distance; data and a FIN as a asks. An acceptable
 * one (ISS + 1) in SYN-SENT must establish the connection and be
 * acknowledged; any other must not (tp_scope(): an RST answers it). */
static void tp_synack(struct tp *t, uint8_t a, uint8_t b, uint8_t c)
{
	static uint8_t buf[9300];
	uint8_t opts[20], *fr[1] = { buf }, fl = TCP_F_SYN | TCP_F_ACK;
	struct tcp_conn *conn = tp_conn(t);
	bool syn_sent = conn && conn->state == TCP_CS_SYN_TO_GUEST;
	seq_t good = seq_add(t->isn_f, 1), ack;
	uint16_t wnd = t->g.wnd;
	bool wnd_raw = t->g.wnd_raw, take;
	size_t n = tp_syn_opts(t, opts), len;
	uint32_t dlen = MIN((uint32_t)(a >> 3) * 32, tp_max_pay(t) - (uint32_t)n);

	if (!t->synack)
		return;			/* no SYN of ferry's to answer */
	switch (a & 3) {
	case 0: ack = good; break;
	case 1: ack = seq_add(good, -(1 + (uint32_t)b)); break;
	case 2: ack = seq_add(good, 1 + (uint32_t)b); break;
	default: ack = seq_add(good, (uint32_t)b << 24 | (uint32_t)c << 16 | 1);
	}
	/* A guest's stream has one end: no FIN below bytes it sent. */
	if ((a & 4) && !t->gfin && dlen >= t->ghi)
		fl |= TCP_F_FIN;
	if (t->gfin)
		dlen = MIN(dlen, t->gfin_off);
	t->g.ack = ack.v;
	t->g.wnd = rd16(t->hdr + 4);
	t->g.wnd_raw = true;
	len = tp_build(t, buf, fl, t->isn_g, 0, dlen, opts, n);
	t->g.wnd = wnd;
	t->g.wnd_raw = wnd_raw;
	gmap_set(t, 0, dlen);
	t->ghi = MAX(t->ghi, dlen);
	if (fl & TCP_F_FIN) {
		t->gfin = true;
		t->gfin_off = dlen;
	}
	tp_scope(t, fl, dlen);
	take = syn_sent && seq_eq(ack, good);
	if (take) {
		/* RFC 9293 3.10.7.3, fourth: SND.UNA > ISS, ESTABLISHED;
		 * the window is the SYN-ACK's, never scaled (RFC 7323 2.2),
		 * later ones by the guest's shift if both offered one. */
		t->est = true;
		t->una = good;
		t->wl1 = t->isn_g;	/* SND.WL1, SND.WL2: the SYN-ACK's */
		t->wl2 = good;
		t->edge = seq_add(good, rd16(t->hdr + 4));
		t->ws = t->f_ws && (t->hdr[0] & TP_H_WS) ? MIN(t->hdr[1], 14)
							 : 0;
		t->gmss = tp_guest_mss(t);
	}
	tp_input(t, fr, &len, 1);
	conn = tp_conn(t);	/* before the host's news, if any */
	if (take && (!conn || conn->state != TCP_CS_ESTABLISHED))
		tp_fail("a SYN-ACK acknowledging ISS + 1 left the connection "
			"%s", conn ? "in SYN-SENT" : "gone");
	/* ... and "form an ACK segment <SEQ=SND.NXT><ACK=RCV.NXT>" */
	if (take && !t->acked)
		tp_fail("no ACK for the guest's SYN-ACK");
	if (syn_sent && !take && conn && conn->state == TCP_CS_ESTABLISHED)
		tp_fail("a SYN-ACK acknowledging %u established the connection "
			"(ISS + 1 is %u)", ack.v, good.v);
	tp_events(t);
}

/* tp_open_host() - a host-initiated connection: the host client connects
 * to the forwarded port, ferry accepts it and sends its SYN, and (unless
 * TP_H_MANUAL) the guest answers with its SYN-ACK. */
static void tp_open_host(struct tp *t)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT,
				   .sin6_port = htons(t->fport6) };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(t->fport4) };
	struct pollfd pfd = { .fd = t->v6 ? t->fls6 : t->fls4,
			      .events = POLLIN };
	socklen_t sl = t->v6 ? sizeof(a6) : sizeof(a4);
	int s = socket(t->v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
		       0), rcvbuf = t->hdr[6] * 1024;

	if (s < 0)
		tp_fail("no host client socket (%s)", strerror(errno));
	if (rcvbuf)
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	/* On the loopback connect() returns once the listener's kernel
	 * queued the connection: ferry accepts it in the next round. */
	if (connect(s, t->v6 ? (void *)&a6 : (void *)&a4, sl) ||
	    getsockname(s, t->v6 ? (void *)&a6 : (void *)&a4, &sl))
		tp_fail("the host client cannot connect (%s)", strerror(errno));
	fcntl(s, F_SETFL, O_NONBLOCK);
	t->host = s;
	t->g.dport = ntohs(t->v6 ? a6.sin6_port : a4.sin_port);
	t->g.ack = 0;
	t->rst_ok = t->rst_reply = false;
	poll(&pfd, 1, 5000);		/* the kernel's last ACK, ksoftirqd */
	tp_events(t);
	/* RFC 9293 3.10.1: an OPEN sends the SYN at once. */
	if (!t->synack)
		tp_fail("no SYN to the guest for the host's connection");
	if (!(t->hdr[0] & TP_H_MANUAL))
		tp_synack(t, 0, 0, 0);
}

/* tp_open() - a connection: the guest's SYN (options from the header),
 * the host's accept, and (unless TP_H_MANUAL) the guest's ACK; or the
 * host-initiated one (tp_open_host()). */
static void tp_open(struct tp *t, uint32_t isn)
{
	uint8_t opts[20], buf[256], *fr[1] = { buf };
	size_t n, len;
	int a, rcvbuf = t->hdr[6] * 1024;

	if (t->host >= 0)
		tp_host_close(t, true);
	memset(t->gmap, 0, TP_GMAX / 8);
	t->ghi = 0;
	t->gpfx = 0;
	t->gfin = t->live = t->est = t->clean = t->synack = t->fin = false;
	t->acked = false;
	t->seg_hi = 0;
	t->hw = t->hr = 0;
	t->hfin = t->hclosed = t->heof = t->hreset = false;
	t->nsyn = 0;
	t->syn_ms = t->syn_gap = 0;
	t->f_ws = t->gsyn = t->sim = t->rst_want = t->rst_answer = false;
	t->isn_g = seq_make(isn);
	t->wl1 = t->wl2 = t->isn_g;	/* ferry's SND.WL1: the SYN's seq */
	t->g.wnd = t->hdr[7] ? (uint16_t)(t->hdr[7] * 1024) : 65535;
	t->g.wnd_raw = true;
	if (t->hmode) {
		tp_open_host(t);
		return;
	}
	n = tp_syn_opts(t, opts);
	t->g.ack = 0;
	t->g.wnd = rd16(t->hdr + 4);
	t->g.wnd_raw = true;
	len = tp_build(t, buf, TCP_F_SYN, t->isn_g, 0, 0, opts, n);
	tp_scope(t, TCP_F_SYN, 0);
	tp_input(t, fr, &len, 1);
	tp_events(t);
	t->g.wnd = t->hdr[7] ? (uint16_t)(t->hdr[7] * 1024) : 65535;
	if (!t->synack)
		return;
	a = accept4(t->v6 ? t->ls6 : t->ls4, NULL, NULL, SOCK_NONBLOCK);
	if (a < 0)
		return;
	if (rcvbuf)
		setsockopt(a, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	t->host = a;
	t->g.ack = t->isn_f.v + 1;
	if (!(t->hdr[0] & TP_H_MANUAL))
		tp_send(t, TCP_F_ACK, 0, 0, NULL, 0);
}

/* tp_clock() - ms of injected time: each due timer at its own time, the
 * loop's sockets after it. An RST may come when ferry can give up: data
 * or a FIN unacknowledged (the retransmission limit), a handshake not
 * completed, or an idle limit. */
static void tp_clock(struct tp *t, int64_t ms)
{
	struct ctx *c = t->c;
	struct timespec end = ts_add_ms(c->now, ms);

	t->rst_ok = t->hclosed || t->hreset || seq_lt(t->una, t->snd_max) ||
		    !t->est || ms >= 60000 || (t->live && !tp_conn(t));
	t->rst_reply = false;
	t->tw_ack_ok = false;
	while (c->timer_armed && ts_ms_diff(&c->timer_due, &end) <= 0) {
		struct tcp_conn *conn = tp_conn(t);

		/* the idle limit, counted from the connection's last sign */
		if (conn && tcp_now_ms(c) + ms - conn->last_ms >= TCP_IDLE_MS)
			t->rst_ok = true;
		if (ts_ms_diff(&c->timer_due, &c->now) > 0)
			c->now = c->timer_due;
		c->timer_armed = false;
		tcp_timer(c);
		tap_flush(c);
		tp_events(t);
	}
	c->now = end;
	tp_events(t);
}

/* tp_check() - after each step: the connection record's own consistency,
 * and the model against it. */
static void tp_check(struct tp *t)
{
	struct tcp_conn *conn = tp_conn(t);
	const char *why;

	if (!conn) {
		/* Gone in SYN-SENT without an RST either way: only when the
		 * SYN's retransmissions ran out (RFC 9293 3.8.3, R2), and
		 * the host client hears of it as a reset. */
		if (t->hmode && t->live && !t->est) {
			if (t->nsyn < 1 + TCP_SYN_RETRIES)
				tp_fail("the flow left SYN-SENT after %u SYNs, "
					"without an RST", t->nsyn);
			t->live = false;
			tp_host_reset_due(t, "the SYN's retries ran out");
			return;
		}
		/* Gone without an RST either way: a clean close, so both
		 * FINs went through and ours was acknowledged (tcp.c
		 * tcp_conn_finished()). */
		if (t->live && t->est) {
			if (!t->fin || !seq_gt(t->una, t->fin_seq) || !t->gfin)
				tp_fail("the flow went without RST or FINs both "
					"ways (our FIN %s, the guest's %s)",
					t->fin ? "sent" : "not sent",
					t->gfin ? "sent" : "not sent");
			t->clean = true;
			t->live = false;
		}
		return;
	}
	if ((why = fuzz_tcp_conn_check(conn)))
		tp_fail("connection record: %s", why);
	/* Host-initiated: only the guest's acceptable SYN-ACK (or the ACK
	 * of ferry's SYN-ACK in a simultaneous open) establishes. */
	if (t->hmode && conn->state == TCP_CS_ESTABLISHED && !t->est)
		tp_fail("the connection is established, the guest's SYN-ACK "
			"was not taken");
	/* ... and SYN-SENT ends: the next SYN comes within the doubled
	 * gap (RFC 6298 5.5; 3 s for the first: RFC 6298 2.1 leaves 1 s,
	 * RFC 1122 had 3), or, after the last, the flow goes (R2). */
	if (t->hmode && conn->state == TCP_CS_SYN_TO_GUEST && t->nsyn) {
		int64_t idle = tcp_now_ms(t->c) - t->syn_ms;
		int64_t due = t->syn_gap ? 2 * t->syn_gap + 2 : 3000;

		if (idle > due)
			tp_fail("SYN-SENT %lld ms after ferry's SYN number %u "
				"(gap before it %lld ms): %s", (long long)idle,
				t->nsyn, (long long)t->syn_gap,
				t->nsyn < 1 + TCP_SYN_RETRIES ?
				"no retransmission" : "the flow outlived R2");
	}
	if (conn->state != TCP_CS_ESTABLISHED || !t->live)
		return;
	/* The model's una is ferry's at most (it takes fewer ACKs). */
	if (seq_lt(conn->seq_acked_by_guest, t->una))
		tp_fail("ferry's snd_una %u behind the guest's ACK %u",
			tp_off(t, conn->seq_acked_by_guest), tp_off(t, t->una));
	if (seq_gt(conn->seq_acked_by_guest, t->snd_max))
		tp_fail("ferry's snd_una beyond what it sent");
	if ((uint32_t)seq_diff(conn->seq_from_guest, seq_add(t->isn_g, 1)) >
	    gmap_prefix(t) + (t->gfin && gmap_prefix(t) >= t->gfin_off))
		tp_fail("ferry wrote %d guest bytes, %u were sent in order",
			seq_diff(conn->seq_from_guest, seq_add(t->isn_g, 1)),
			gmap_prefix(t));
}

/* tp_sack() - a pure ACK with up to four SACK blocks, in units of
 * ferry's segments from the guest's ACK (any order, overlapping, stale
 * or beyond what was sent, as the bytes say). */
static size_t tp_sack(struct tp *t, const uint8_t *d, size_t left, uint8_t a)
{
	uint32_t u = MAX(t->seg_hi ? t->seg_hi : t->gmss, 1u) / 2;
	unsigned int nb = a % 4 + 1, i;
	uint8_t opts[40];
	size_t n = 0;
	seq_t base = t->una;

	if (left < nb * 2)
		return left;
	opts[n++] = 1;
	opts[n++] = 1;
	opts[n++] = 5;
	opts[n++] = (uint8_t)(2 + 8 * nb);
	for (i = 0; i < nb; i++) {
		seq_t l = seq_add(base, (uint32_t)d[2 * i] * u);
		seq_t r = seq_add(base, (uint32_t)d[2 * i + 1] * u);

		wr32(opts + n, l.v);
		wr32(opts + n + 4, r.v);
		n += 8;
	}
	tp_send(t, TCP_F_ACK, t->ghi, 0, opts, n);
	return nb * 2;
}

/* tp_burst() - n full in-order segments in one input batch. */
static void tp_burst(struct tp *t, unsigned int n)
{
	static uint8_t bufs[8][9300];
	uint8_t *fr[8];
	size_t len[8];
	uint32_t pay = tp_max_pay(t);
	unsigned int i;

	if (t->gfin)
		return;
	tp_scope(t, TCP_F_ACK, pay);
	for (i = 0; i < n && i < 8 && t->ghi + pay < TP_GMAX; i++) {
		tp_took_ack(t, seq_add(t->isn_g, 1 + t->ghi),
			    seq_make(t->g.ack), tp_wnd_field(t), TCP_F_ACK);
		fr[i] = bufs[i];
		len[i] = tp_build(t, bufs[i], TCP_F_ACK,
				  seq_add(t->isn_g, 1 + t->ghi), t->ghi, pay,
				  NULL, 0);
		gmap_set(t, t->ghi, pay);
		t->ghi += pay;
	}
	tp_input(t, fr, len, i);
	tp_events(t);
}

/* tp_step() - one step of the program at d; returns the bytes it used. */
static size_t tp_step(struct tp *t, const uint8_t *d, size_t left)
{
	uint8_t op = d[0] % (t->hmode ? TP_OPS_HOST : TP_OPS), a = d[1],
		b = d[2], c = d[3];
	uint32_t ab = (uint32_t)a << 8 | b;
	size_t used = 4;
	seq_t ack;

	switch (op) {
	case TP_SEND: {
		int64_t off = (int64_t)t->ghi + (int8_t)c * 64;

		tp_send(t, TCP_F_ACK | TCP_F_PSH, (uint32_t)MAX(off, 0),
			ab % (tp_max_pay(t) + 1), NULL, 0);
		break;
	}
	case TP_BURST:
		tp_burst(t, a % 8 + 1);
		break;
	case TP_ACK:
		switch (c % 4) {
		case 0: ack = seq_add(t->snd_max, -ab); break;
		case 1: ack = seq_add(t->una, ab); break;
		case 2: ack = seq_add(t->snd_max, ab); break;
		default: ack = seq_add(seq_make(t->g.ack), -ab); break;
		}
		t->g.ack = ack.v;
		tp_send(t, TCP_F_ACK, t->ghi, 0, NULL, 0);
		break;
	case TP_SACK:
		used += tp_sack(t, d + 4, left - 4, a);
		break;
	case TP_DUPACK: {
		unsigned int i;

		for (i = 0; i <= c % 4u; i++)
			tp_send(t, TCP_F_ACK, t->ghi, 0, NULL, 0);
		break;
	}
	case TP_WND:
		t->g.wnd = (uint16_t)ab;
		t->g.wnd_raw = true;
		if (c & 1)
			tp_send(t, TCP_F_ACK, t->ghi, 0, NULL, 0);
		break;
	case TP_FIN:
		if (t->gfin)
			tp_send(t, TCP_F_ACK | TCP_F_FIN, t->gfin_off, 0, NULL, 0);
		else
			tp_send(t, TCP_F_ACK | TCP_F_FIN,
				(c & 1) ? gmap_prefix(t) : t->ghi,
				ab % (tp_max_pay(t) + 1) / 64 * 64, NULL, 0);
		break;
	case TP_RST: {
		static uint8_t buf[256];
		uint8_t *fr[1] = { buf };
		uint8_t fl = (c & 1) ? TCP_F_RST | TCP_F_ACK : TCP_F_RST;
		seq_t s = seq_add(t->acked ? t->ack_hi : seq_add(t->isn_g, 1),
				  (uint32_t)(int16_t)ab);
		struct tcp_conn *conn = tp_conn(t);
		size_t n = tp_build(t, buf, fl, s, 0, 0, NULL, 0);
		bool syn_sent = t->hmode && conn &&
				conn->state == TCP_CS_SYN_TO_GUEST;
		bool ok = (fl & TCP_F_ACK) &&
			  seq_eq(t->last_ack, seq_add(t->isn_f, 1)), taken;

		tp_scope(t, fl, 0);
		tp_input(t, fr, &n, 1);
		taken = !tp_conn(t);	/* before the host's news, if any */
		tp_events(t);
		if (syn_sent) {
			/* RFC 9293 3.10.7.3, second: in SYN-SENT an RST
			 * counts only if its ACK was acceptable (SND.UNA <
			 * SEG.ACK =< SND.NXT: ISS + 1); without ACK, or
			 * with another, it is dropped. One that counts
			 * closes the connection, the user hears "connection
			 * reset" (its SEQ is not checked there: RFC 5961 3.2
			 * is for the synchronized states). */
			if (taken && !ok)
				tp_fail("RST %s taken in SYN-SENT", (fl & TCP_F_ACK) ?
					"with an ACK other than ISS + 1" :
					"without ACK");
			if (!taken && ok)
				tp_fail("RST acknowledging ISS + 1 ignored in "
					"SYN-SENT");
			if (taken) {
				t->live = false;
				tp_host_reset_due(t, "the guest's RST in "
						  "SYN-SENT");
			}
		} else if (conn && !tp_conn(t)) {	/* taken: gone */
			t->live = false;
			if (t->clean)
				tp_fail("RST taken in TIME-WAIT");
		}
		break;
	}
	case TP_SYN:
		if (!tp_conn(t) && (t->clean || !t->live)) {
			tp_open(t, t->isn_g.v + 100000 + ab);
		} else {
			static uint8_t buf[256];
			uint8_t *fr[1] = { buf }, opts[20];
			seq_t s = (c & 1) ? seq_add(t->isn_g, ab) : t->isn_g;
			struct tcp_conn *conn = tp_conn(t);
			size_t n = 0;

			/* Host-initiated, in SYN-SENT: a simultaneous open,
			 * the guest's SYN with its ISN and options. */
			if (t->hmode && conn &&
			    conn->state == TCP_CS_SYN_TO_GUEST) {
				s = t->isn_g;
				n = tp_syn_opts(t, opts);
				t->gsyn = true;
			}
			n = tp_build(t, buf, TCP_F_SYN, s, 0, 0, opts, n);
			tp_scope(t, TCP_F_SYN, 0);
			tp_input(t, fr, &n, 1);
			tp_events(t);
		}
		break;
	case TP_HWRITE:
		tp_host_write(t, (uint64_t)ab << (c % 5));
		tp_events(t);
		break;
	case TP_HREAD:
		tp_host_read(t, (uint64_t)ab << (c % 5));
		tp_events(t);
		break;
	case TP_HSHUT:
		t->rst_ok = c % 3 != 0 || t->hclosed || t->hreset;
		t->rst_reply = false;
		if (c % 3 == 0 && t->host >= 0 && !t->hfin) {
			shutdown(t->host, SHUT_WR);
			t->hfin = true;
		} else if (c % 3) {
			tp_host_close(t, c % 3 == 2);
		}
		tp_events(t);
		break;
	case TP_CLOCK:
		tp_clock(t, tp_ms[a % 16] + b);
		break;
	case TP_SYNACK:
		tp_synack(t, a, b, c);
		break;
	default:
		t->rst_ok = t->hclosed || t->hreset;
		t->rst_reply = false;
		tp_events(t);
		break;
	}
	return MIN(used, left);
}

/* tp_auto() - a well-behaved guest and host between the steps, as the
 * header asks: the guest acknowledges what ferry sent, the host reads. */
static void tp_auto(struct tp *t)
{
	if ((t->hdr[0] & TP_H_AUTOREAD) && t->host >= 0) {
		tp_host_read(t, UINT64_MAX);
		tp_events(t);
	}
	if ((t->hdr[0] & TP_H_AUTOACK) && t->live && t->est &&
	    !seq_eq(seq_make(t->g.ack), t->snd_max) &&
	    seq_gt(t->snd_max, t->una)) {
		t->g.ack = t->snd_max.v;
		tp_send(t, TCP_F_ACK, t->ghi, 0, NULL, 0);
	}
	tp_check(t);
}

/* tp_drain_listener() - connections the host never accepted go. */
static void tp_drain_listener(int ls)
{
	int a;

	while ((a = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(a, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(a);
	}
}

/* tp_end() - the host aborts, the flow must go (its socket's error ends
 * it), then TIME-WAIT passes: every pool back to empty. */
static void tp_end(struct tp *t)
{
	struct ctx *c = t->c;
	struct pollfd pfd = { .fd = c->epfd, .events = POLLIN };
	bool aborted = t->host >= 0;
	int i;

	tp_host_read(t, UINT64_MAX);
	tp_host_close(t, true);
	tp_drain_listener(t->ls4);
	tp_drain_listener(t->ls6);
	tp_drain_listener(t->fls4);
	tp_drain_listener(t->fls6);
	t->rst_ok = true;
	t->rst_reply = false;
	/* The reset travels through the loopback, perhaps by ksoftirqd on
	 * a loaded machine: wait for it, with a deadline. */
	for (i = 0; aborted && i < 100 && flow_first(&c->flows, FLOW_TCP);
	     i++) {
		poll(&pfd, 1, 1);
		tp_events(t);
	}
	/* Not reset: the host had closed before (a half-closed connection
	 * waits for the guest), or the loopback is slow. The inactivity
	 * limit ends any connection (tcp_timer()). */
	if (flow_first(&c->flows, FLOW_TCP))
		tp_clock(t, TCP_IDLE_MS + 1000);
	if (flow_first(&c->flows, FLOW_TCP))
		tp_fail("a flow outlived its host socket's abort and the "
			"inactivity limit");
	t->live = false;
	t->clean = false;
	tp_clock(t, TCP_TW_MS + 1);
	if (c->tcp.ooo->st.blks_used)
		tp_fail("%u out-of-order blocks held with no flow",
			c->tcp.ooo->st.blks_used);
	for (i = 0; i < (int)TCP_OOO_SLOTS; i++)
		if (c->tcp.ooo->q[i].used)
			tp_fail("out-of-order slot %d held with no flow", i);
	if (c->tcp.pend_n || c->tcp.dirty_n)
		tp_fail("batch work left with no flow (%u slices, %u dirty)",
			c->tcp.pend_n, c->tcp.dirty_n);
	if (c->tcp.tw.live) {
		tcp_tw_free(&c->tcp.tw);
		tcp_tw_init(&c->tcp.tw);
	}
}

void fuzz_tcp_init(void)
{
	struct tp *t = &tp_state;

	log_set_level(LOG_LVL_ERR);
	t->c = tcp_test_ctx();
	/* As "ferry vm -t": a loopback client goes through the guest link
	 * (in ns mode it would be spliced); nothing else depends on it. */
	t->c->conf.mode = MODE_VM;
	t->gmap = calloc(TP_GMAX / 8, 1);
	t->ls4 = listener(false, &t->port4);
	t->ls6 = listener(true, &t->port6);
	t->fls4 = fwd_listener(t->c, false, &t->fport4, TP_GPORT);
	t->fls6 = fwd_listener(t->c, true, &t->fport6, TP_GPORT);
	if (!t->gmap || t->ls4 < 0 || t->ls6 < 0 || t->fls4 < 0 || t->fls6 < 0)
		tp_fail("no listeners (%s)", strerror(errno));
	fcntl(t->ls4, F_SETFL, O_NONBLOCK);
	fcntl(t->ls6, F_SETFL, O_NONBLOCK);
	t->g.c = t->c;
	t->g.ls = -1;
	t->g.sport = TP_SPORT;
	t->host = -1;
	test_tx_hook = tp_frame;
	tp_verbose = getenv("FUZZ_TCP_VERBOSE");
}

void fuzz_tcp_run(const uint8_t *data, size_t size)
{
	struct tp *t = &tp_state;
	size_t off = TP_HDR;

	if (!t->c)
		fuzz_tcp_init();
	t->hmode = size >= 4 + TP_HDR && !memcmp(data, TP_HOST_MAGIC, 4);
	if (t->hmode) {
		data += 4;
		size -= 4;
	}
	if (size < TP_HDR)
		return;
	memcpy(t->hdr, data, TP_HDR);
	t->v6 = t->hdr[0] & TP_H_V6;
	t->g.v6 = t->v6;
	t->g.dport = t->v6 ? t->port6 : t->port4;
	t->g.sport = t->hmode ? TP_GPORT : TP_SPORT;
	t->c->conf.mtu = (t->hdr[0] & TP_H_JUMBO) ? 9000 : 1500;
	tp_open(t, rd32(data) ^ 0x5eed);
	tp_check(t);
	while (off + 4 <= size) {
		if (tp_verbose)
			fprintf(stderr, "tcp_prog: step %u %u %u %u: ferry sent "
				"%u, una %u, edge %u\n",
				(unsigned int)(data[off] %
					       (t->hmode ? TP_OPS_HOST : TP_OPS)),
				(unsigned int)data[off + 1],
				(unsigned int)data[off + 2],
				(unsigned int)data[off + 3],
				t->synack ? tp_off(t, t->snd_max) : 0,
				t->synack ? tp_off(t, t->una) : 0,
				t->synack ? tp_off(t, t->edge) : 0);
		off += tp_step(t, data + off, size - off);
		tp_check(t);
		tp_auto(t);
	}
	if (tp_verbose)
		fprintf(stderr, "tcp_prog: end: live %d est %d clean %d, ferry "
			"sent %u (una %u, fin %d), guest sent %u (fin %d), "
			"host wrote %llu read %llu\n", t->live, t->est, t->clean,
			t->synack ? tp_off(t, t->snd_max) : 0,
			t->synack ? tp_off(t, t->una) : 0, t->fin, t->ghi,
			t->gfin, (unsigned long long)t->hw,
			(unsigned long long)t->hr);
	tp_end(t);
}
