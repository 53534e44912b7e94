/* tcp_sack.c - the guest's SACK blocks about ferry's data (host ->
 * guest): a scoreboard, and which bytes a resend may skip.
 *
 * Theory of operation
 *
 * ferry keeps no retransmission buffer: a retransmission is a rewind of
 * seq_to_guest to the guest's cumulative ACK (tcp_out.c tcp_rewind()),
 * after which the next reads peek the same bytes from the socket again.
 * Without more, a rewind resends the whole window. A guest that agreed
 * to SACK (RFC 2018) says in its duplicate ACKs which bytes beyond the
 * hole it already holds; this file keeps those ranges and tells the
 * reader to step over them, so that a rewind resends the holes only
 * (RFC 6675 in spirit, without its pipe: the guest's window, counted
 * from its cumulative ACK, still bounds what is out).
 *
 * The scoreboard is fixed-size, in the connection (TCP_SACK_BLKS
 * ranges, sorted, disjoint and not adjacent, merged on insertion).
 * A block is taken only when it is well-formed and inside what was
 * sent: left edge above the cumulative ACK (a block at or below it is a
 * D-SACK or stale, RFC 2883), left below right, right at most snd_max
 * (one past the highest byte sent, the FIN included). Other blocks are
 * counted and ignored. A full scoreboard drops its highest range: the
 * holes below are resent first, and forgetting a range only costs its
 * resend. A cumulative ACK prunes what it covers.
 *
 * During a resend (seq_to_guest below snd_max), before each read:
 * seq_to_guest at a SACKed range moves to its end (tcp_sack_skip_len()),
 * and a read stops where the next range starts (tcp_sack_hole_len()).
 * After a fast retransmit (three duplicate ACKs), bytes above the
 * highest SACKed range were not reported lost, most are still on their
 * way: the resend ends there and new data follows from snd_max (RFC 6675
 * NextSeg() rule 2 before rule 3). After a timeout the resend goes on
 * from there, and only the first timeout keeps the scoreboard: a guest
 * may renege (RFC 2018 section 8), and a second timeout without progress
 * sends everything again. A later rewind in a recovery the timer began
 * (three duplicate ACKs, a lost hole) ends at the highest SACKed range
 * once past the timeout's end, sack_recover (tcp_sack_fast_at()): what
 * went out after the timeout's resend was not reported lost, and RFC
 * 6675 section 5.1 leaves the resends after a timeout to the SACK
 * information. Outside a recovery, one duplicate ACK starts one when
 * the blocks already show the segment at the ACK lost (RFC 6675 section
 * 5, IsLost(HighACK + 1), tcp_sack_una_lost()), or, for a flight of
 * fewer than four segments, all of it SACKed but one segment at the ACK
 * (RFC 5827 early retransmit, tcp_sack_er(); tcp_out.c adds that no new
 * data can go out).
 */
#include <string.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "util.h"

/* tcp_snd_max() - one past the highest sequence number sent to the
 * guest: seq_to_guest, plus what a rewind took back (and our FIN when it
 * went out after those bytes). */
seq_t tcp_snd_max(const struct tcp_conn *conn)
{
	return seq_add(conn->seq_to_guest,
		       conn->rewound + (conn->fin_rewound ? 1 : 0));
}

/* tcp_sack_prune() - drop what the cumulative ACK una covers. */
static void tcp_sack_prune(struct tcp_conn *conn, seq_t una)
{
	unsigned int i, n = 0;

	if (conn->sack_trunc && seq_ge(una, conn->sack_trunc_r))
		conn->sack_trunc = false;
	for (i = 0; i < conn->nsacked; i++) {
		struct tcp_sack_blk b = conn->sacked[i];

		if (seq_le(b.r, una))
			continue;
		if (seq_lt(b.l, una))
			b.l = una;
		conn->sacked[n++] = b;
	}
	conn->nsacked = (uint8_t)n;
}

/* tcp_sack_forget() - the full scoreboard drops [l, r): from l on it
 * knows nothing for sure (tcp_sack_known()). */
static void tcp_sack_forget(struct tcp_conn *conn, seq_t l, seq_t r)
{
	if (!conn->sack_trunc || seq_lt(l, conn->sack_trunc_l))
		conn->sack_trunc_l = l;
	if (!conn->sack_trunc || seq_gt(r, conn->sack_trunc_r))
		conn->sack_trunc_r = r;
	conn->sack_trunc = true;
}

/* tcp_sack_known() - where what the scoreboard knows ends: the start
 * of the dropped ranges (or the cumulative ACK, once past it) up to
 * sack_trunc_r, else snd_max. */
static seq_t tcp_sack_known(const struct tcp_conn *conn)
{
	seq_t una = conn->seq_acked_by_guest;

	if (!conn->sack_trunc)
		return tcp_snd_max(conn);
	return seq_gt(conn->sack_trunc_l, una) ? conn->sack_trunc_l : una;
}

/* tcp_sack_add() - merge [l, r) into the sorted scoreboard; full, the
 * highest range goes (the new one, if it is the highest). */
static void tcp_sack_add(struct tcp_conn *conn, seq_t l, seq_t r)
{
	struct tcp_sack_blk *s = conn->sacked;
	unsigned int i = 0, j, n = conn->nsacked;

	while (i < n && seq_lt(s[i].r, l))	/* wholly below, not adjacent */
		i++;
	for (j = i; j < n && seq_le(s[j].l, r); j++) {	/* touching: merge */
		if (seq_lt(s[j].l, l))
			l = s[j].l;
		if (seq_gt(s[j].r, r))
			r = s[j].r;
	}
	if (j == i && n == TCP_SACK_BLKS) {	/* disjoint, no room */
		if (i == n) {
			tcp_sack_forget(conn, l, r);
			return;
		}
		n--;
		tcp_sack_forget(conn, s[n].l, s[n].r);
	}
	/* ranges i..j-1 become one: shift the rest to i + 1 */
	memmove(s + i + 1, s + j, (n - j) * sizeof(*s));
	s[i].l = l;
	s[i].r = r;
	conn->nsacked = (uint8_t)(n - (j - i) + 1);
}

/* tcp_sack_input() - the SACK blocks of the guest's segment t, whose ACK
 * was taken (the cumulative ACK is seq_acked_by_guest now): prune, then
 * merge the valid blocks. Ignored blocks are counted in st. */
void tcp_sack_input(struct tcp_conn *conn, const struct tcp_view *t,
		    struct tcp_stats *st)
{
	seq_t una = conn->seq_acked_by_guest, max = tcp_snd_max(conn);
	unsigned int i;

	tcp_sack_prune(conn, una);
	if (!(conn->flags & TCP_C_SACK) || seq_lt(seq_make(t->ack), una))
		return;		/* not negotiated, or an old segment */
	for (i = 0; i < t->nsack; i++) {
		seq_t l = seq_make(t->sack[i][0]), r = seq_make(t->sack[i][1]);

		if (!seq_gt(l, una) || !seq_lt(l, r) || seq_gt(r, max)) {
			st->sack_ignored++;
			continue;
		}
		tcp_sack_add(conn, l, r);
	}
}

/* tcp_sack_fast_at() - whether a resend at nxt ends at the highest
 * SACKed range, as a fast retransmit's does: in a fast recovery, and in
 * one the timer began once past its end (sack_recover): the bytes there
 * were sent after the timeout's resend, and no block showed them lost. */
static bool tcp_sack_fast_at(const struct tcp_conn *conn, seq_t nxt)
{
	return conn->sack_fast ||
	       (conn->sack_rec && seq_ge(nxt, conn->sack_recover));
}

/* tcp_sack_skip_len() - during a resend, the bytes from seq_to_guest the
 * next read steps over (none at the cumulative ACK: that hole is always
 * resent): in a recovery what it resent already; SACKed ranges;
 * the span whose ranges a full scoreboard dropped (tcp_sack_known()),
 * whose holes wait for the guest's next duplicate ACKs; and where the
 * resend ends at the highest SACKed range (tcp_sack_fast_at()), at it or
 * at that span, everything up to snd_max (not reported lost). Never more
 * than the rewound data. */
uint32_t tcp_sack_skip_len(const struct tcp_conn *conn)
{
	seq_t nxt = conn->seq_to_guest, una = conn->seq_acked_by_guest;
	unsigned int i, n = conn->nsacked;

	if (!conn->rewound || (!conn->nsacked && !conn->sack_trunc) ||
	    seq_eq(nxt, una))
		return 0;
	if (conn->sack_rec && seq_lt(nxt, conn->sack_rxt))
		nxt = conn->sack_rxt;
	for (i = 0; i <= n; i++) {	/* ranges in order, the span too */
		if (conn->sack_trunc && seq_ge(nxt, tcp_sack_known(conn)) &&
		    seq_lt(nxt, conn->sack_trunc_r)) {
			if (tcp_sack_fast_at(conn, nxt))
				return conn->rewound;
			nxt = conn->sack_trunc_r;
		}
		if (i < n && seq_le(conn->sacked[i].l, nxt) &&
		    seq_lt(nxt, conn->sacked[i].r))
			nxt = conn->sacked[i].r;
	}
	if (tcp_sack_fast_at(conn, nxt) &&
	    ((n && seq_ge(nxt, conn->sacked[n - 1].r)) ||
	     (conn->sack_trunc && seq_ge(nxt, tcp_sack_known(conn)))))
		return conn->rewound;
	return MIN((uint32_t)seq_diff(nxt, conn->seq_to_guest), conn->rewound);
}

/* tcp_sack_hole_len() - during a resend, the bytes from seq_to_guest to
 * the next SACKed range or the span a full scoreboard forgot (one
 * segment at the cumulative ACK inside that span): the most the next
 * read may send; UINT32_MAX when nothing lies ahead. */
uint32_t tcp_sack_hole_len(const struct tcp_conn *conn)
{
	seq_t nxt = conn->seq_to_guest, end = nxt, u;
	bool stop = false;
	unsigned int i;

	if (!conn->rewound)
		return UINT32_MAX;
	for (i = 0; i < conn->nsacked && !stop; i++)
		if (seq_gt(conn->sacked[i].l, nxt)) {
			end = conn->sacked[i].l;
			stop = true;
		}
	if (conn->sack_trunc && seq_lt(nxt, conn->sack_trunc_r)) {
		u = tcp_sack_known(conn);
		if (!seq_gt(u, nxt))	/* at the ACK, inside the span */
			u = seq_add(nxt, conn->mss_to_guest);
		if (!stop || seq_lt(u, end))
			end = u;
		stop = true;
	}
	return stop ? (uint32_t)seq_diff(end, nxt) : UINT32_MAX;
}

/* tcp_sack_lost() - in a recovery, the first hole not resent yet that
 * counts as lost, below where the resend got to: one with
 * TCP_SACK_LOST_SEGS guest segments SACKed above it (RFC 6675 IsLost(),
 * so a reordered segment is not resent at once), or the cumulative ACK
 * itself inside the span a full scoreboard forgot (a partial ACK: the
 * guest holds SACKed data above it, RFC 6582's rule), when the resend
 * has not got past it or this ACK (moved: it advanced the cumulative
 * ACK) just brought it there: the resend steps over that span, so being
 * past it says nothing of the segment at the ACK. Returns true and its
 * start in *hole, or false. */
bool tcp_sack_lost(const struct tcp_conn *conn, seq_t *hole, bool moved)
{
	seq_t una = conn->seq_acked_by_guest, p;
	uint32_t above = 0;
	int i, first = -1;

	if (!conn->sack_rec || !seq_lt(una, conn->sack_recover))
		return false;
	p = seq_gt(conn->sack_rxt, una) ? conn->sack_rxt : una;
	if (conn->sack_trunc && (moved || seq_eq(p, una)) &&
	    seq_ge(una, conn->sack_trunc_l) && seq_lt(una, conn->sack_trunc_r)) {
		*hole = una;
		return seq_lt(una, conn->seq_to_guest);
	}
	for (i = 0; i < conn->nsacked; i++) {
		const struct tcp_sack_blk *b = conn->sacked + i;

		if (first < 0 && seq_lt(p, b->l))
			first = i;
		if (first < 0 && seq_gt(b->r, p))
			p = b->r;
		if (first >= 0)
			above += (uint32_t)seq_diff(b->r, b->l);
	}
	if (first < 0 || above < TCP_SACK_LOST_SEGS * conn->mss_to_guest ||
	    !seq_lt(p, tcp_sack_known(conn)) ||
	    !seq_lt(p, conn->seq_to_guest))
		return false;
	*hole = p;
	return true;
}

/* tcp_sack_in_recovery() - whether a recovery runs: one began and the
 * cumulative ACK has not reached its end (sack_recover). */
bool tcp_sack_in_recovery(const struct tcp_conn *conn)
{
	return conn->sack_rec && seq_lt(conn->seq_acked_by_guest,
					conn->sack_recover);
}

/* tcp_fin_out() - 1 while our FIN is sent (or rewound) and not yet
 * acknowledged: the sequence number it takes in snd_max. */
static uint32_t tcp_fin_out(const struct tcp_conn *conn)
{
	return conn->fin_rewound || ((conn->flags & TCP_C_FIN_SENT) &&
				     !(conn->flags & TCP_C_FIN_ACKED));
}

/* tcp_sack_sacked() - the bytes the scoreboard holds (all above the
 * cumulative ACK). */
static uint32_t tcp_sack_sacked(const struct tcp_conn *conn)
{
	uint32_t n = 0;
	unsigned int i;

	for (i = 0; i < conn->nsacked; i++)
		n += (uint32_t)seq_diff(conn->sacked[i].r, conn->sacked[i].l);
	return n;
}

/* tcp_sack_er() - outside a recovery, the scoreboard's condition for
 * RFC 5827's early retransmit (SACK variant, section 3.2): fewer than
 * four segments out (oseg), ER_thresh = oseg - 1 of them SACKed, that
 * is all of the flight but one segment, at the ACK. Counted in bytes
 * (oseg = ceil(FlightSize / SMSS), section 3.3) as out - SACKed <= SMSS:
 * ferry keeps no segment boundaries, and its segments are cut by what a
 * read found, so a flight is often runts; section 3.3's own byte rule
 * (SACKed >= ER_thresh * SMSS) would never fire for them, and for full
 * segments both agree. Our FIN counts in neither. A full scoreboard
 * (which forgot ranges) says nothing. */
bool tcp_sack_er(const struct tcp_conn *conn)
{
	uint32_t fin = tcp_fin_out(conn), mss = conn->mss_to_guest;
	uint32_t out = (uint32_t)seq_diff(tcp_snd_max(conn),
					  conn->seq_acked_by_guest);

	if (tcp_sack_in_recovery(conn) || !conn->nsacked || conn->sack_trunc ||
	    out - fin > 3 * mss)
		return false;
	return out - tcp_sack_sacked(conn) <= mss + fin;
}

/* tcp_sack_tail_sacked() - the highest SACKed range reaches the end of
 * the data sent (snd_max, less our FIN): the guest holds the tail. */
bool tcp_sack_tail_sacked(const struct tcp_conn *conn)
{
	seq_t end = seq_add(tcp_snd_max(conn), (uint32_t)-tcp_fin_out(conn));

	return conn->nsacked && seq_ge(conn->sacked[conn->nsacked - 1].r, end);
}

/* tcp_sack_una_lost() - outside a recovery: whether the scoreboard shows
 * the segment at the cumulative ACK lost, TCP_SACK_LOST_SEGS segments
 * SACKed above it (RFC 6675 section 5, step 3.2: a duplicate ACK then
 * starts the recovery without waiting for the third). A sender the
 * guest's window holds to a short segment per round draws one duplicate
 * ACK per round, never three. */
bool tcp_sack_una_lost(const struct tcp_conn *conn)
{
	return !tcp_sack_in_recovery(conn) &&
	       tcp_sack_sacked(conn) >= TCP_SACK_LOST_SEGS * conn->mss_to_guest;
}

/* tcp_sack_rewound() - after a rewind: a recovery starts unless one is
 * running (its end, sack_recover, is snd_max now; HighRxt the ACK). A
 * fast one (three duplicate ACKs) ends its resend at the highest SACKed
 * range; a timeout resends everything not SACKed from the ACK, and a
 * second one in a row forgets the scoreboard (top of the file). */
void tcp_sack_rewound(struct tcp_conn *conn, bool fast)
{
	seq_t una = conn->seq_acked_by_guest;

	if (!fast) {
		conn->sack_fast = false;
		if (conn->retries > 1) {
			conn->nsacked = 0;
			conn->sack_trunc = false;
		}
	} else if (conn->sack_rec && seq_lt(una, conn->sack_recover)) {
		return;
	}
	conn->sack_rec = true;
	conn->sack_fast = fast;
	conn->sack_recover = tcp_snd_max(conn);
	conn->sack_rxt = una;
}

/* tcp_sack_resent() - a read during a recovery's resend ended at
 * seq_to_guest: holes below it are not resent again in this recovery. */
void tcp_sack_resent(struct tcp_conn *conn)
{
	if (conn->sack_rec && seq_gt(conn->seq_to_guest, conn->sack_rxt))
		conn->sack_rxt = conn->seq_to_guest;
}
