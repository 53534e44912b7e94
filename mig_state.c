/* mig_state.c - the device state's wire format (live migration).
 *
 * Theory of operation: on the source, ferry writes what it knows of the
 * guest and its flows into one buffer (migrate.c); qemu carries it in its
 * migration stream, opaque; on the destination another ferry, perhaps
 * another build, reads it back. So the format is explicit, versioned and
 * checked; nothing is a memory image of a struct.
 *
 *   header (24 bytes): "FERRYMIG", version (4 bytes), flags (4, zero),
 *                      body length (4), CRC-32 of the body (4)
 *   body: records, each a type (2 bytes), a length (2) and that many
 *         bytes of payload
 *
 * Every number is big-endian (network order, util.h rd16()/wr32()). A
 * record's length is fixed by its type (MIG_*_LEN): a reader of this
 * version refuses a record of another length rather than guess. The one
 * exception is a queue's bytes (MIG_REC_TCP_DATA): a queue byte and a
 * zero, then 1 to MIG_DATA_MAX bytes. A new field means a new version;
 * a reader refuses every version but its own.
 *
 * Version 2 carries TCP connections whole: after a connection's TCP
 * record (the guest's side) may come its socket record (the host side,
 * TCP_REPAIR's figures: tcp_repair.c) and then the bytes of its send
 * queue and of its receive queue, in data records. A socket record
 * without its TCP record before it, data without a socket record, or
 * data that does not add up to the lengths the socket record gives is
 * a corrupted state.
 *
 * Decoding is two passes: the first checks everything (magic, version,
 * flags, length against the bytes received, checksum, each record's
 * type and length, the records filling the body exactly, one guest
 * record at most); only then the second hands the records on. A state
 * refused is refused whole, with one line saying why: the destination
 * then starts as a fresh ferry would, without those flows.
 */
#include <string.h>

#include "mig_state.h"
#include "util.h"

/* Payload length of each record type (0: not a type). */
static const uint16_t rec_len[MIG_REC_TYPES] = {
	[MIG_REC_GUEST] = MIG_GUEST_LEN,
	[MIG_REC_TCP] = MIG_TCP_LEN,
	[MIG_REC_UDP] = MIG_UDP_LEN,
	[MIG_REC_TCP_SOCK] = MIG_TCP_SOCK_LEN,
	[MIG_REC_TCP_DATA] = 0,		/* variable: rec_len_ok() */
};

/* rec_len_ok() - may a record of type t have payload length n? */
static bool rec_len_ok(uint16_t t, size_t n)
{
	if (t == MIG_REC_TCP_DATA)
		return n > MIG_DATA_HDR && n <= MIG_DATA_HDR + MIG_DATA_MAX;
	return t < MIG_REC_TYPES && rec_len[t] && n == rec_len[t];
}

uint32_t mig_crc32(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
	}
	return ~crc;
}

void mig_enc_start(struct mig_enc *e, uint8_t *buf, size_t cap)
{
	e->buf = buf;
	e->cap = cap;
	e->len = MIG_HDR_LEN;
	e->full = cap < MIG_HDR_LEN;
}

/* rec_open_len() - room for a record of type t with len payload bytes:
 * its payload's start in the buffer (header written, payload zeroed),
 * or NULL (e->full) when it does not fit. */
static uint8_t *rec_open_len(struct mig_enc *e, enum mig_rec_type t,
			     uint16_t len)
{
	size_t n = MIG_REC_HDR + (size_t)len;
	uint8_t *p;

	if (e->full || e->cap - e->len < n) {
		e->full = true;
		return NULL;
	}
	p = e->buf + e->len;
	wr16(p, (uint16_t)t);
	wr16(p + 2, len);
	memset(p + MIG_REC_HDR, 0, len);
	e->len += n;
	return p + MIG_REC_HDR;
}

/* rec_open() - rec_open_len() for a type of fixed length. */
static uint8_t *rec_open(struct mig_enc *e, enum mig_rec_type t)
{
	return rec_open_len(e, t, rec_len[t]);
}

bool mig_put_guest(struct mig_enc *e, const struct mig_guest *g)
{
	uint8_t *p = rec_open(e, MIG_REC_GUEST);

	if (!p)
		return false;
	p[0] = g->mac_known;
	memcpy(p + 2, g->mac, 6);
	memcpy(p + 8, g->seen4, 4);
	memcpy(p + 12, g->seen6, 16);
	memcpy(p + 28, g->ll6, 16);
	return true;
}

/* put_key()/get_key() - a flow key at p (MIG_KEY_LEN bytes). */
static void put_key(uint8_t *p, const struct mig_key *k)
{
	memcpy(p, k->a, 16);
	memcpy(p + 16, k->b, 16);
	wr16(p + 32, k->pa);
	wr16(p + 34, k->pb);
}

static void get_key(const uint8_t *p, struct mig_key *k)
{
	memcpy(k->a, p, 16);
	memcpy(k->b, p + 16, 16);
	k->pa = rd16(p + 32);
	k->pb = rd16(p + 34);
}

bool mig_put_tcp(struct mig_enc *e, const struct mig_tcp *t)
{
	uint8_t *p = rec_open(e, MIG_REC_TCP);

	if (!p)
		return false;
	put_key(p, &t->key);
	p += MIG_KEY_LEN;
	p[0] = t->state;
	p[1] = t->ws_from_guest;
	p[2] = t->ws_to_guest;
	p[3] = t->flags;
	wr16(p + 4, t->mss_to_guest);
	wr32(p + 6, t->seq_to_guest);
	wr32(p + 10, t->seq_acked_by_guest);
	wr32(p + 14, t->seq_from_guest);
	wr32(p + 18, t->wnd_from_guest);
	wr32(p + 22, t->wnd_to_guest);
	return true;
}

bool mig_put_udp(struct mig_enc *e, const struct mig_udp *u)
{
	uint8_t *p = rec_open(e, MIG_REC_UDP);

	if (!p)
		return false;
	put_key(p, &u->key);
	return true;
}

/* The socket record's layout (offsets in its payload). */
enum {
	SK_V6 = 0, SK_OPTS = 1, SK_SND_WS = 2, SK_RCV_WS = 3, SK_MSS = 4,
	SK_LOCAL = 8, SK_PEER = 24, SK_LPORT = 40, SK_PPORT = 42,
	SK_SND_SEQ = 44, SK_RCV_SEQ = 48, SK_SNDQ = 52, SK_NOTSENT = 56,
	SK_RCVQ = 60, SK_TS = 64, SK_WL1 = 68, SK_SND_WND = 72,
	SK_MAX_WND = 76, SK_RCV_WND = 80, SK_RCV_WUP = 84,
};
_Static_assert(SK_RCV_WUP + 4 == MIG_TCP_SOCK_LEN, "socket record layout");

bool mig_put_tcp_sock(struct mig_enc *e, const struct mig_tcp_sock *s)
{
	uint8_t *p = rec_open(e, MIG_REC_TCP_SOCK);

	if (!p)
		return false;
	p[SK_V6] = s->v6 ? 1 : 0;
	p[SK_OPTS] = s->opts;
	p[SK_SND_WS] = s->snd_ws;
	p[SK_RCV_WS] = s->rcv_ws;
	wr16(p + SK_MSS, s->mss);
	memcpy(p + SK_LOCAL, s->local, 16);
	memcpy(p + SK_PEER, s->peer, 16);
	wr16(p + SK_LPORT, s->lport);
	wr16(p + SK_PPORT, s->pport);
	wr32(p + SK_SND_SEQ, s->snd_seq);
	wr32(p + SK_RCV_SEQ, s->rcv_seq);
	wr32(p + SK_SNDQ, s->sndq);
	wr32(p + SK_NOTSENT, s->notsent);
	wr32(p + SK_RCVQ, s->rcvq);
	wr32(p + SK_TS, s->ts);
	wr32(p + SK_WL1, s->snd_wl1);
	wr32(p + SK_SND_WND, s->snd_wnd);
	wr32(p + SK_MAX_WND, s->max_window);
	wr32(p + SK_RCV_WND, s->rcv_wnd);
	wr32(p + SK_RCV_WUP, s->rcv_wup);
	return true;
}

/* get_tcp_sock() - the socket record at p. */
static void get_tcp_sock(const uint8_t *p, struct mig_tcp_sock *s)
{
	s->v6 = p[SK_V6] & 1;
	s->opts = p[SK_OPTS];
	s->snd_ws = p[SK_SND_WS];
	s->rcv_ws = p[SK_RCV_WS];
	s->mss = rd16(p + SK_MSS);
	memcpy(s->local, p + SK_LOCAL, 16);
	memcpy(s->peer, p + SK_PEER, 16);
	s->lport = rd16(p + SK_LPORT);
	s->pport = rd16(p + SK_PPORT);
	s->snd_seq = rd32(p + SK_SND_SEQ);
	s->rcv_seq = rd32(p + SK_RCV_SEQ);
	s->sndq = rd32(p + SK_SNDQ);
	s->notsent = rd32(p + SK_NOTSENT);
	s->rcvq = rd32(p + SK_RCVQ);
	s->ts = rd32(p + SK_TS);
	s->snd_wl1 = rd32(p + SK_WL1);
	s->snd_wnd = rd32(p + SK_SND_WND);
	s->max_window = rd32(p + SK_MAX_WND);
	s->rcv_wnd = rd32(p + SK_RCV_WND);
	s->rcv_wup = rd32(p + SK_RCV_WUP);
}

bool mig_put_tcp_data(struct mig_enc *e, unsigned int q, const uint8_t *p,
		      size_t n)
{
	while (n) {
		size_t k = n < MIG_DATA_MAX ? n : MIG_DATA_MAX;
		uint8_t *r = rec_open_len(e, MIG_REC_TCP_DATA,
					  (uint16_t)(MIG_DATA_HDR + k));

		if (!r)
			return false;
		r[0] = (uint8_t)q;
		memcpy(r + MIG_DATA_HDR, p, k);
		p += k;
		n -= k;
	}
	return true;
}

size_t mig_enc_finish(struct mig_enc *e)
{
	size_t body = e->len - MIG_HDR_LEN;

	if (e->full || body > UINT32_MAX)
		return 0;
	memcpy(e->buf, MIG_MAGIC, 8);
	wr32(e->buf + 8, MIG_VERSION);
	wr32(e->buf + 12, 0);
	wr32(e->buf + 16, (uint32_t)body);
	wr32(e->buf + 20, mig_crc32(e->buf + MIG_HDR_LEN, body));
	return e->len;
}

/* check_header() - the header's checks; NULL, or why the state is bad. */
static const char *check_header(const uint8_t *buf, size_t len)
{
	if (len < MIG_HDR_LEN)
		return "truncated: shorter than its header";
	if (memcmp(buf, MIG_MAGIC, 8))
		return "not a ferry device state (bad magic)";
	if (rd32(buf + 8) != MIG_VERSION)
		return "a version this ferry does not read";
	if (rd32(buf + 12))
		return "unknown flags";
	if (rd32(buf + 16) != len - MIG_HDR_LEN)
		return rd32(buf + 16) > len - MIG_HDR_LEN ? "truncated"
							  : "trailing bytes";
	if (rd32(buf + 20) != mig_crc32(buf + MIG_HDR_LEN, len - MIG_HDR_LEN))
		return "checksum mismatch (corrupted)";
	return NULL;
}

/* What check_records() expects of a socket's data records. */
struct q_left {
	bool open;		/* after a socket record */
	uint64_t send, recv;	/* bytes still to come */
};

/* check_order() - record t (payload p, n bytes) after what came before
 * (*prev: the previous record's type; *q: the socket's queues); NULL, or
 * why it is bad. */
static const char *check_order(uint16_t t, const uint8_t *p, size_t n,
			       uint16_t *prev, struct q_left *q)
{
	if (t != MIG_REC_TCP_DATA && q->open) {
		if (q->send || q->recv)
			return "a socket's queue data is short";
		q->open = false;
	}
	if (t == MIG_REC_TCP_SOCK) {
		if (*prev != MIG_REC_TCP)
			return "a socket record without its connection";
		q->open = true;
		q->send = rd32(p + SK_SNDQ);
		q->recv = rd32(p + SK_RCVQ);
		if (rd32(p + SK_NOTSENT) > q->send)
			return "a socket's unsent bytes exceed its queue";
	} else if (t == MIG_REC_TCP_DATA) {
		uint64_t *left = p[0] == MIG_Q_SEND ? &q->send :
				 p[0] == MIG_Q_RECV ? &q->recv : NULL;

		if (!q->open)
			return "queue data without a socket record";
		if (!left || p[1])
			return "queue data for an unknown queue";
		if (n - MIG_DATA_HDR > *left)
			return "a socket's queue data is too long";
		if (p[0] == MIG_Q_RECV && q->send)
			return "receive data before the send queue's end";
		*left -= n - MIG_DATA_HDR;
	}
	*prev = t;
	return NULL;
}

/* check_records() - the body's records; NULL, or why it is bad. */
static const char *check_records(const uint8_t *p, size_t len)
{
	struct q_left q = { .open = false };
	unsigned int guests = 0;
	uint16_t prev = 0;
	size_t off = 0;

	while (off < len) {
		const char *why;
		uint16_t t, n;

		if (len - off < MIG_REC_HDR)
			return "record header truncated";
		t = rd16(p + off);
		n = rd16(p + off + 2);
		if (t >= MIG_REC_TYPES || (!rec_len[t] &&
					   t != MIG_REC_TCP_DATA))
			return "unknown record type";
		if (!rec_len_ok(t, n))
			return "record of the wrong length";
		if (len - off - MIG_REC_HDR < n)
			return "record truncated";
		if (t == MIG_REC_GUEST && guests++)
			return "more than one guest record";
		if ((why = check_order(t, p + off + MIG_REC_HDR, n, &prev,
				       &q)))
			return why;
		off += MIG_REC_HDR + n;
	}
	if (q.open && (q.send || q.recv))
		return "a socket's queue data is short";
	return NULL;
}

/* visit() - hand the record of type t at p to v. */
static void visit(const struct mig_visit *v, void *opaque, uint16_t t,
		  const uint8_t *p, size_t n)
{
	struct mig_tcp_sock sk;
	struct mig_guest g;
	struct mig_tcp tc;
	struct mig_udp u;

	switch (t) {
	case MIG_REC_GUEST:
		if (!v->guest)
			return;
		g.mac_known = p[0] & 1;
		memcpy(g.mac, p + 2, 6);
		memcpy(g.seen4, p + 8, 4);
		memcpy(g.seen6, p + 12, 16);
		memcpy(g.ll6, p + 28, 16);
		v->guest(opaque, &g);
		return;
	case MIG_REC_TCP:
		if (!v->tcp)
			return;
		get_key(p, &tc.key);
		p += MIG_KEY_LEN;
		tc.state = p[0];
		tc.ws_from_guest = p[1];
		tc.ws_to_guest = p[2];
		tc.flags = p[3];
		tc.mss_to_guest = rd16(p + 4);
		tc.seq_to_guest = rd32(p + 6);
		tc.seq_acked_by_guest = rd32(p + 10);
		tc.seq_from_guest = rd32(p + 14);
		tc.wnd_from_guest = rd32(p + 18);
		tc.wnd_to_guest = rd32(p + 22);
		v->tcp(opaque, &tc);
		return;
	case MIG_REC_UDP:
		if (!v->udp)
			return;
		get_key(p, &u.key);
		v->udp(opaque, &u);
		return;
	case MIG_REC_TCP_SOCK:
		if (!v->tcp_sock)
			return;
		get_tcp_sock(p, &sk);
		v->tcp_sock(opaque, &sk);
		return;
	case MIG_REC_TCP_DATA:
		if (v->tcp_data)
			v->tcp_data(opaque, p[0], p + MIG_DATA_HDR,
				    n - MIG_DATA_HDR);
		return;
	default:
		return;
	}
}

int mig_decode(const uint8_t *buf, size_t len, const struct mig_visit *v,
	       void *opaque, const char **why)
{
	const uint8_t *body = buf + MIG_HDR_LEN;
	size_t off = 0, blen;

	if ((*why = check_header(buf, len)))
		return -1;
	blen = len - MIG_HDR_LEN;
	if ((*why = check_records(body, blen)))
		return -1;
	while (off < blen) {
		uint16_t t = rd16(body + off), n = rd16(body + off + 2);

		visit(v, opaque, t, body + off + MIG_REC_HDR, n);
		off += MIG_REC_HDR + n;
	}
	return 0;
}
