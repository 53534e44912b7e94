/* mig_state.h - the device state ferry moves in a live migration: its
 * wire format, encoder and checked decoder (mig_state.c). No ctx, no I/O:
 * migrate.c fills and applies it, the fuzz target feeds the decoder.
 */
#ifndef FERRY_MIG_STATE_H
#define FERRY_MIG_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIG_MAGIC	"FERRYMIG"	/* 8 bytes, no terminator on the wire */
#define MIG_VERSION	2u
#define MIG_HDR_LEN	24u		/* magic, version, flags, length, crc */
#define MIG_REC_HDR	4u		/* type (2 bytes), length (2) */

enum mig_rec_type {
	MIG_REC_GUEST = 1,	/* what ferry learnt of the guest */
	MIG_REC_TCP = 2,	/* one TCP connection's translation state */
	MIG_REC_UDP = 3,	/* one UDP flow */
	MIG_REC_TCP_SOCK = 4,	/* the host socket of the TCP record before */
	MIG_REC_TCP_DATA = 5,	/* bytes of one of its queues */
	MIG_REC_TYPES
};

/* The guest: its MAC (if known) and the addresses it used. */
struct mig_guest {
	bool mac_known;
	uint8_t mac[6];
	uint8_t seen4[4];
	uint8_t seen6[16], ll6[16];
};
#define MIG_GUEST_LEN	44u

/* A flow's guest-side key: addresses (IPv4 v4-mapped) and ports. */
struct mig_key {
	uint8_t a[16], b[16];	/* guest's address, the remote it sees */
	uint16_t pa, pb;
};
#define MIG_KEY_LEN	36u

/* A TCP connection as the guest sees it: sequence numbers both ways,
 * windows, scales and MSS (the host socket's state travels apart). */
#define MIG_TCP_F_FWD	0x01	/* host-initiated (a -t forward) */
#define MIG_TCP_F_SACK	0x02	/* the guest agreed to SACK */
struct mig_tcp {
	struct mig_key key;
	uint8_t state;			/* enum tcp_cstate */
	uint8_t flags;			/* MIG_TCP_F_* */
	uint8_t ws_from_guest, ws_to_guest;
	uint16_t mss_to_guest;
	uint32_t seq_to_guest, seq_acked_by_guest, seq_from_guest;
	uint32_t wnd_from_guest, wnd_to_guest;
};
#define MIG_TCP_LEN	(MIG_KEY_LEN + 6u + 20u)

struct mig_udp {
	struct mig_key key;
};
#define MIG_UDP_LEN	MIG_KEY_LEN

/* The host socket of a TCP connection, as TCP_REPAIR reads it
 * (tcp_repair.c): its addresses, the kernel's sequence numbers at the
 * start of each queue (send: the oldest unacknowledged byte; receive:
 * the oldest byte ferry still needs), the queues' lengths (their bytes
 * follow in MIG_REC_TCP_DATA records, send queue first), the options
 * the handshake agreed and the windows (struct tcp_repair_window). */
#define MIG_SOCK_SACK	0x01	/* TCPI_OPT_SACK */
#define MIG_SOCK_TS	0x02	/* TCPI_OPT_TIMESTAMPS */
#define MIG_SOCK_WS	0x04	/* TCPI_OPT_WSCALE */
struct mig_tcp_sock {
	uint8_t v6;			/* 0: AF_INET, 1: AF_INET6 */
	uint8_t opts;			/* MIG_SOCK_* */
	uint8_t snd_ws, rcv_ws;		/* window scales */
	uint16_t mss;
	uint8_t local[16], peer[16];	/* IPv4: the first 4 bytes */
	uint16_t lport, pport;
	uint32_t snd_seq, rcv_seq;
	uint32_t sndq, notsent, rcvq;	/* bytes; notsent: the send
					 * queue's tail never sent */
	uint32_t ts;			/* TCP_TIMESTAMP */
	uint32_t snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;
};
#define MIG_TCP_SOCK_LEN	88u

/* The most queue bytes one connection moves (its send and receive
 * queues together), and all of them together in one state. */
#define MIG_QUEUES_MAX	(32u << 20)

/* Queue bytes: a record carries MIG_DATA_MAX at most. */
#define MIG_Q_SEND	0u
#define MIG_Q_RECV	1u
#define MIG_DATA_HDR	2u		/* queue, zero */
#define MIG_DATA_MAX	65000u

/* The encoder writes into a buffer the caller owns. */
struct mig_enc {
	uint8_t *buf;
	size_t cap, len;
	bool full;		/* a record did not fit: the state is lost */
};

/* mig_enc_start() - begin a state in buf (cap bytes). */
void mig_enc_start(struct mig_enc *e, uint8_t *buf, size_t cap);

/* mig_put_guest()/mig_put_tcp()/mig_put_udp() - append one record;
 * false (and e->full) if it does not fit. */
bool mig_put_guest(struct mig_enc *e, const struct mig_guest *g);
bool mig_put_tcp(struct mig_enc *e, const struct mig_tcp *t);
bool mig_put_udp(struct mig_enc *e, const struct mig_udp *u);
/* mig_put_tcp_sock() - the socket record (after its TCP record).
 * mig_put_tcp_data() - n bytes of queue q (MIG_Q_*) after it, in as many
 * records as it takes. Both false (and e->full) if they do not fit. */
bool mig_put_tcp_sock(struct mig_enc *e, const struct mig_tcp_sock *s);
bool mig_put_tcp_data(struct mig_enc *e, unsigned int q, const uint8_t *p,
		      size_t n);

/* mig_enc_finish() - write the header (length, checksum); the state's
 * length in bytes, or 0 if a record did not fit. */
size_t mig_enc_finish(struct mig_enc *e);

/* What the decoder hands each record to (any may be NULL: skipped). */
struct mig_visit {
	void (*guest)(void *opaque, const struct mig_guest *g);
	void (*tcp)(void *opaque, const struct mig_tcp *t);
	void (*udp)(void *opaque, const struct mig_udp *u);
	void (*tcp_sock)(void *opaque, const struct mig_tcp_sock *s);
	void (*tcp_data)(void *opaque, unsigned int q, const uint8_t *p,
			 size_t n);
};

/* mig_decode() - check the whole state in buf (len bytes: magic, version,
 * length, checksum, every record's type and length, at most one guest
 * record, a socket record only right after a TCP record, data only
 * after a socket record and adding up to its queues' lengths), then,
 * only if all of it is good, hand each record to v.
 * Returns 0, or -1 with *why set to one line saying what is wrong (and
 * nothing handed on). */
int mig_decode(const uint8_t *buf, size_t len, const struct mig_visit *v,
	       void *opaque, const char **why);

/* mig_crc32() - CRC-32 (IEEE 802.3, reflected) of len bytes at p. */
uint32_t mig_crc32(const uint8_t *p, size_t len);

#endif /* FERRY_MIG_STATE_H */
