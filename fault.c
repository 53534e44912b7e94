/* fault.c - test-only fault injection on the guest link (--fault).
 *
 * Theory of operation
 *
 * Namespace mode loses no packets by itself, so the paths that recover
 * from loss (retransmission, duplicate ACKs, out-of-order segments) would
 * go untested. With --fault, frames are dropped, duplicated or reordered
 * at the one place every frame passes: tap_input() hands the input batch
 * to fault_rx() before dispatching it, tap_flush() hands the output batch
 * to fault_tx() before the backend writes it. Both only rewrite the
 * batch's frame list (offset, length): a dropped frame leaves the list
 * (and counts as DROP_FAULT_INJECTED), a duplicate appears twice, a
 * reordered frame is copied aside and appended after the frames of the
 * next non-empty batch of its direction (at most one frame is held per
 * direction; a held frame nothing follows stays held, which its sender
 * sees as a loss).
 *
 * Decisions come from a splitmix64 generator seeded by seed=N (default
 * 1): the sequence of decisions is the same in every run, though which
 * frame meets which decision depends on how frames fall into batches.
 * With -d each drop, hold and release is logged with the frame's TCP
 * header fields and the --pcap clock's time, and so is each SYN let
 * through (fault_log()): a test or a person can then tell a pause the
 * injector caused (the same segment dropped or held again and again)
 * from one ferry caused (test_tcp_faults.py reads these lines).
 *
 * Compiled only into the test build (-DFERRY_TEST): the release binary
 * has no such code and refuses the option.
 */
#ifdef FERRY_TEST

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"
#include "vnet.h"

/* parse_rate() - "KEY=N" with N 0..1000 into *v. */
static bool parse_rate(const char *val, uint16_t *v)
{
	char *end;
	unsigned long n;

	if (*val < '0' || *val > '9')
		return false;
	n = strtoul(val, &end, 10);
	if (*end || n > 1000)
		return false;
	*v = (uint16_t)n;
	return true;
}

/* parse_item() - one "[to:|from:]KEY=VAL" or "seed=N". */
static bool parse_item(struct fault_conf *f, char *item, char *err,
		       size_t errlen)
{
	bool dirs[2] = { true, true };
	char *key = item, *eq = strchr(item, '=');
	uint16_t v;
	int d;

	if (!strncmp(key, "to:", 3)) {
		dirs[FAULT_FROM_GUEST] = false;
		key += 3;
	} else if (!strncmp(key, "from:", 5)) {
		dirs[FAULT_TO_GUEST] = false;
		key += 5;
	}
	if (!eq) {
		snprintf(err, errlen, "'%s' is not KEY=VALUE", item);
		return false;
	}
	*eq = '\0';
	if (!strcmp(key, "seed") && key == item) {
		char *end;

		errno = 0;
		f->seed = strtoull(eq + 1, &end, 0);
		if (!isdigit((unsigned char)eq[1]) || *end || errno) {
			snprintf(err, errlen, "bad seed '%s'", eq + 1);
			return false;
		}
		return true;
	}
	if (strcmp(key, "drop") && strcmp(key, "dup") &&
	    strcmp(key, "reorder")) {
		snprintf(err, errlen, "unknown fault '%s' (drop, dup, reorder, "
			 "seed; prefix to: or from:)", item);
		return false;
	}
	if (!parse_rate(eq + 1, &v)) {
		snprintf(err, errlen, "bad rate '%s=%s' (per mille, 0-1000)",
			 key, eq + 1);
		return false;
	}
	for (d = 0; d < 2; d++) {
		if (!dirs[d])
			continue;
		if (key[1] == 'r')
			f->r[d].drop = v;
		else if (key[1] == 'u')
			f->r[d].dup = v;
		else
			f->r[d].reorder = v;
	}
	return true;
}

bool fault_parse(struct fault_conf *f, const char *arg, char *err,
		 size_t errlen)
{
	char buf[256], *item, *save = NULL;

	if (!*arg || strlen(arg) >= sizeof(buf)) {
		snprintf(err, errlen, "bad fault list '%.40s'", arg);
		return false;
	}
	memcpy(buf, arg, strlen(arg) + 1);
	for (item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save))
		if (!parse_item(f, item, err, errlen))
			return false;
	f->on = true;
	if (!f->seed)
		f->seed = 1;
	return true;
}

void fault_init(struct ctx *c)
{
	struct fault_state *fs = &c->fault;
	const struct fault_conf *f = &c->conf.fault;
	int d;

	if (!f->on)
		return;
	fs->rng = f->seed;
	for (d = 0; d < 2; d++)
		fs->hold[d] = alloc_startup(FRAME_MAX + 64);
	warn("fault injection (test build): from guest drop/dup/reorder "
	     "%u/%u/%u, to guest %u/%u/%u per mille, seed %llu",
	     f->r[0].drop, f->r[0].dup, f->r[0].reorder, f->r[1].drop,
	     f->r[1].dup, f->r[1].reorder, (unsigned long long)f->seed);
}

bool fault_roll(struct fault_state *fs, unsigned int permille)
{
	uint64_t z;

	if (!permille)
		return false;
	z = (fs->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z % 1000 < permille;
}

/* fault_log() - with -d, one line per injected drop ("drop"): the
 * direction, and for a TCP segment its ports, sequence number, payload
 * length, ACK and flags, other frames by their EtherType; and one per
 * TCP SYN let through ("pass", syn true: only those are logged then),
 * whose sequence number makes a later drop's relative to its stream.
 * So a capture's or a receiver's gaps can be matched to the injector's
 * decisions; "hold" and "release" for a frame held back (reordered)
 * and delivered later. A TCP line carries the wall-clock time --pcap
 * stamps records with. Reads only within the len bytes. */
static void fault_log(enum fault_dir d, const char *verb, bool syn,
		      const uint8_t *f, size_t len)
{
	const char *dir = d == FAULT_TO_GUEST ? "to" : "from";
	size_t l3 = ETH_HLEN_, l4, end;
	unsigned int type = len >= ETH_HLEN_ ? rd16(f + 12) : 0;
	struct timespec ts;

	if (type == 0x0800 && len >= l3 + 20 && f[l3 + 9] == 6) {
		l4 = l3 + (size_t)(f[l3] & 0xf) * 4;
		end = l3 + rd16(f + l3 + 2);
	} else if (type == 0x86dd && len >= l3 + 40 && f[l3 + 6] == 6) {
		l4 = l3 + 40;
		end = l4 + rd16(f + l3 + 4);
	} else {
		if (!syn)
			debug("fault: %s %s guest: ethertype 0x%04x len %zu",
			      verb, dir, type, len);
		return;
	}
	if (end > len || l4 + 20 > end ||
	    l4 + (size_t)(f[l4 + 12] >> 4) * 4 > end) {
		if (!syn)
			debug("fault: %s %s guest: short TCP frame len %zu",
			      verb, dir, len);
		return;
	}
	if (syn && !(f[l4 + 13] & TCP_F_SYN))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);	/* the clock of --pcap */
	debug("fault: %s %s guest at %lld.%06ld: tcp %u>%u seq %u len %zu ack "
	      "%u flags 0x%02x", verb, dir, (long long)ts.tv_sec,
	      ts.tv_nsec / 1000, rd16(f + l4), rd16(f + l4 + 2),
	      rd32(f + l4 + 4), end - l4 - (size_t)(f[l4 + 12] >> 4) * 4,
	      rd32(f + l4 + 8), f[l4 + 13]);
}

/* Where a frame of a batch lies: offset into the batch buffer, length. */
struct fault_ent {
	uint32_t off, len;
};

/* fault_list() - apply direction d's faults to the n entries at e[]
 * (room for max, one of which stays free for a held frame's return: the
 * caller returns one only when n < max), reading frame bytes at base +
 * e.off + pfx. A frame taken out for reordering is copied into the hold
 * buffer with the keep bytes before it (its link prefix: a virtio-net
 * header must travel with its frame). Returns the new count (below max
 * when n was). */
static unsigned int fault_list(struct ctx *c, enum fault_dir d,
			       struct fault_ent *e, unsigned int n,
			       unsigned int max, const uint8_t *base,
			       size_t pfx, size_t keep)
{
	const struct fault_rates *r = &c->conf.fault.r[d];
	struct fault_state *fs = &c->fault;
	struct fault_ent out[TX_FRAMES_MAX + RX_FRAMES_MAX];
	bool log_on = log_get_level() >= LOG_LVL_DEBUG;
	unsigned int i, k = 0;

	for (i = 0; i < n; i++) {
		const uint8_t *f = base + e[i].off + pfx;

		if (fault_roll(fs, r->drop)) {
			if (log_on)
				fault_log(d, "drop", false, f, e[i].len);
			drop(c, DROP_FAULT_INJECTED);
			fs->dropped[d]++;
			continue;
		}
		if (log_on)
			fault_log(d, "pass", true, f, e[i].len);
		if (!fs->held_len[d] && e[i].len <= FRAME_MAX &&
		    fault_roll(fs, r->reorder)) {
			if (log_on)
				fault_log(d, "hold", false, f, e[i].len);
			memcpy(fs->hold[d], f - keep, keep + e[i].len);
			fs->held_len[d] = e[i].len;
			fs->reordered[d]++;
			continue;
		}
		out[k++] = e[i];
		/* A duplicate only where the rest still fits. */
		if (k + (n - i) < max && fault_roll(fs, r->dup)) {
			out[k++] = e[i];
			fs->duped[d]++;
		}
	}
	/* cppcheck-suppress uninitvar ; only the k entries set are read */
	memcpy(e, out, k * sizeof(*e));
	return k;
}

void fault_rx(struct ctx *c)
{
	struct rx_batch *rx = &c->link.rx;
	struct fault_state *fs = &c->fault;
	struct fault_ent e[RX_FRAMES_MAX];
	uint32_t held = fs->held_len[FAULT_FROM_GUEST];
	size_t end = rx->fill, pos = 0;
	size_t keep = c->link.ops->vnet_hdr ? VNET_HLEN : 0;
	unsigned int i, n;

	if (!c->conf.fault.on || !rx->n)
		return;
	for (i = 0; i < rx->n; i++) {
		e[i].off = rx->f[i].off;
		e[i].len = rx->f[i].len;
		end = MAX(end, (size_t)e[i].off + e[i].len);
	}
	/* The frame held from an earlier batch goes after this one's. */
	pos = ROUND_UP(end, 64);
	if (held && rx->n < RX_FRAMES_MAX && pos + keep + held <= RX_BUF_SIZE) {
		memcpy(rx->buf + pos, fs->hold[FAULT_FROM_GUEST], keep + held);
		pos += keep;
		if (log_get_level() >= LOG_LVL_DEBUG)
			fault_log(FAULT_FROM_GUEST, "release", false,
				  rx->buf + pos, held);
		fs->held_len[FAULT_FROM_GUEST] = 0;
	} else {
		held = 0;
	}
	n = fault_list(c, FAULT_FROM_GUEST, e, rx->n, RX_FRAMES_MAX, rx->buf,
		       0, keep);
	if (held) {
		e[n].off = (uint32_t)pos;
		e[n++].len = held;
	}
	for (i = 0; i < n; i++) {
		rx->f[i].off = e[i].off;
		rx->f[i].len = e[i].len;
	}
	rx->n = n;
}

void fault_tx(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	struct fault_state *fs = &c->fault;
	struct fault_ent e[TX_FRAMES_MAX];
	size_t pfx, held = fs->held_len[FAULT_TO_GUEST], at = tx->used;
	unsigned int i, n;

	if (!c->conf.fault.on || !tx->n)
		return;
	pfx = c->link.ops->tx_prefix;
	for (i = 0; i < tx->n; i++) {
		e[i].off = tx->f[i].off;
		e[i].len = tx->f[i].len;
	}
	if (held && tx->n < TX_FRAMES_MAX && at + pfx + held <= TX_BUF_SIZE) {
		memcpy(tx->buf + at, fs->hold[FAULT_TO_GUEST], pfx + held);
		if (log_get_level() >= LOG_LVL_DEBUG)
			fault_log(FAULT_TO_GUEST, "release", false,
				  tx->buf + at + pfx, held);
		fs->held_len[FAULT_TO_GUEST] = 0;
		tx->used = at + pfx + held;
	} else {
		held = 0;
	}
	n = fault_list(c, FAULT_TO_GUEST, e, tx->n, TX_FRAMES_MAX, tx->buf,
		       pfx, pfx);
	if (held) {
		e[n].off = (uint32_t)at;
		e[n++].len = (uint32_t)held;
	}
	for (i = 0; i < n; i++) {
		tx->f[i].off = e[i].off;
		tx->f[i].len = e[i].len;
	}
	tx->n = n;
	if (!n)
		tx->used = 0;
}

/* The counters per direction (drop.h's registry), with --fault. */
static const struct stat_item fault_stat_items[] = {
	STAT("from guest dropped", struct ctx, fault.dropped[0]),
	STAT("duplicated", struct ctx, fault.duped[0]),
	STAT("reordered", struct ctx, fault.reordered[0]),
	STAT_TEXT(", to guest dropped ", "", struct ctx, fault.dropped[1]),
	STAT("duplicated", struct ctx, fault.duped[1]),
	STAT("reordered", struct ctx, fault.reordered[1]),
};

STAT_GROUP(fault_stats) = {
	.order = 50, .what = "fault", .when = STAT_GATE,
	.gate_off = STAT_FIELD(struct ctx, conf.fault.on), .via = -1,
	.items = fault_stat_items, .n = ARRAY_SIZE(fault_stat_items),
};

#else
typedef int fault_c_is_test_only_;	/* ISO C: no empty translation unit */
#endif /* FERRY_TEST */
