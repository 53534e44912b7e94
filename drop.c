/* drop.c - names of drop reasons, counting, and the statistics dump.
 *
 * Every frame ferry refuses goes through drop() with a reason from
 * drop.h: a per-reason counter in c->stats, and with --trace a line per
 * drop, at most 20 a second so a flood cannot flood the log too. The
 * statistics dump (stats_log(): SIGUSR1, and at exit) prints the traffic
 * totals, every non-zero drop counter by its stable name, then each
 * registered counter group, one "stats: WHAT name value ..." line each
 * (tests parse these lines, test_stats.c pins them).
 *
 * The registry: a module declares its counters as a const struct
 * stat_group (drop.h STAT_GROUP()): the offsets of its fields in struct
 * ctx, or in a record a pointer in struct ctx leads to, the text around
 * each value, when the line is due. The linker gathers the groups in the
 * ferry_stats section; this file walks it and calls no module.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ferry.h"
#include "log.h"
#include "util.h"

static const char *const drop_names[] = {
#define DROP_NAME(name, text) #name,
	DROP_REASONS(DROP_NAME)
#undef DROP_NAME
};

static const char *const drop_texts[] = {
#define DROP_TEXT(name, text) text,
	DROP_REASONS(DROP_TEXT)
#undef DROP_TEXT
};

_Static_assert(sizeof(drop_names) / sizeof(drop_names[0]) == DROP_MAX,
	       "drop reason table size");

const char *drop_name(enum drop_reason r)
{
	return (unsigned int)r < DROP_MAX ? drop_names[r] : "?";
}

const char *drop_text(enum drop_reason r)
{
	return (unsigned int)r < DROP_MAX ? drop_texts[r] : "?";
}

/* drop() - count, and trace at most 20 drops per second. */
void drop(struct ctx *c, enum drop_reason r)
{
	if ((unsigned int)r >= DROP_MAX)
		r = DROP_NONE;
	c->stats.drops[r]++;
	if (log_get_level() < LOG_LVL_TRACE)
		return;
	if (c->now.tv_sec != c->stats.drop_trace_sec) {
		c->stats.drop_trace_sec = c->now.tv_sec;
		c->stats.drop_trace_n = 0;
	}
	if (c->stats.drop_trace_n++ < 20)
		trace("drop: %s (%s)", drop_name(r), drop_text(r));
}

/* The registered groups (drop.h STAT_GROUP()): the linker collects the
 * ferry_stats section and names its bounds. */
extern const struct stat_group __start_ferry_stats[] __attribute__((weak));
extern const struct stat_group __stop_ferry_stats[] __attribute__((weak));

/* stat_read() - the unsigned counter of size bytes at p. */
static unsigned long long stat_read(const uint8_t *p, size_t size)
{
	uint64_t v64;
	uint32_t v32;

	if (size == 8) {
		memcpy(&v64, p, 8);
		return v64;
	}
	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	return size == 1 ? *p : 0;
}

/* stat_record() - the record a group's items are in, NULL for none. */
static const uint8_t *stat_record(const struct ctx *c,
				  const struct stat_group *g)
{
	const uint8_t *base = (const uint8_t *)c;
	const uint8_t *rec;

	if (g->via < 0)
		return base;
	memcpy(&rec, base + g->via, sizeof(rec));
	return rec;
}

/* stat_due() - whether group g's line is printed now (its record rec). */
static bool stat_due(const struct ctx *c, const struct stat_group *g,
		     const uint8_t *rec)
{
	unsigned int i;

	switch (g->when) {
	case STAT_GATE:
		return stat_read((const uint8_t *)c + g->gate_off,
				 g->gate_size);
	case STAT_ANY:
		for (i = 0; i < g->n; i++)
			if (stat_read(rec + g->items[i].off, g->items[i].size))
				return true;
		return false;
	default:
		return true;
	}
}

/* stat_group_line() - one group's line through out; a line too long for
 * the buffer is cut at the last item that fits (none is: the longest is
 * some 250 bytes). */
static void stat_group_line(const struct ctx *c, const struct stat_group *g,
			    void (*out)(void *arg, const char *line), void *arg)
{
	const uint8_t *rec = stat_record(c, g);
	char line[768];
	size_t len;
	unsigned int i;
	int k;

	if (!rec || !stat_due(c, g, rec))
		return;
	len = (size_t)snprintf(line, sizeof(line), "%s", g->what);
	for (i = 0; i < g->n && len < sizeof(line); i++, len += (size_t)k) {
		const struct stat_item *it = &g->items[i];

		k = snprintf(line + len, sizeof(line) - len, "%s%llu%s",
			     it->pre, stat_read(rec + it->off, it->size),
			     it->post);
		if (k < 0 || (size_t)k >= sizeof(line) - len)
			break;			/* cut at the last whole item */
	}
	line[MIN(len, sizeof(line) - 1)] = '\0';
	out(arg, line);
}

/* stat_groups() - how many groups the section holds (0 without one). */
static size_t stat_groups(void)
{
	uintptr_t start = (uintptr_t)__start_ferry_stats;
	uintptr_t stop = (uintptr_t)__stop_ferry_stats;

	return start ? (stop - start) / sizeof(struct stat_group) : 0;
}

/* stat_next() - the registered group with the lowest order above after
 * (any order when first), NULL when none is left. */
static const struct stat_group *stat_next(unsigned int after, bool first)
{
	const struct stat_group *best = NULL;
	size_t i, n = stat_groups();

	for (i = 0; i < n; i++) {
		const struct stat_group *g = &__start_ferry_stats[i];

		if ((first || g->order > after) &&
		    (!best || g->order < best->order))
			best = g;
	}
	return best;
}

void stats_lines(const struct ctx *c,
		 void (*out)(void *arg, const char *line), void *arg)
{
	const struct stat_group *g;
	char line[256];
	int r;

	snprintf(line, sizeof(line), "from guest %llu frames %llu bytes, to "
		 "guest %llu frames %llu bytes",
		 (unsigned long long)c->stats.rx_frames,
		 (unsigned long long)c->stats.rx_bytes,
		 (unsigned long long)c->stats.tx_frames,
		 (unsigned long long)c->stats.tx_bytes);
	out(arg, line);
	for (r = 1; r < DROP_MAX; r++) {
		if (!c->stats.drops[r])
			continue;
		snprintf(line, sizeof(line), "drop %s %llu", drop_names[r],
			 (unsigned long long)c->stats.drops[r]);
		out(arg, line);
	}
	if (c->stats.tx_stalls) {
		snprintf(line, sizeof(line), "link stalls %llu (writes cut "
			 "short, the frames behind held), longest %llu ms",
			 (unsigned long long)c->stats.tx_stalls,
			 (unsigned long long)c->stats.tx_stall_max_ms);
		out(arg, line);
	}
	if (c->link.up && c->link.tx_stalled) {
		snprintf(line, sizeof(line), "link stalled now, for %lld ms (%u "
			 "frames held)",
			 (long long)ts_ms_diff(&c->now, &c->link.stall_t0),
			 c->link.tx.n);
		out(arg, line);
	}
	for (g = stat_next(0, true); g; g = stat_next(g->order, false))
		stat_group_line(c, g, out, arg);
}

/* log_line() - stats_lines()'s output on the log. */
static void log_line(void *arg, const char *line)
{
	(void)arg;
	info("stats: %s", line);
}

void stats_log(const struct ctx *c)
{
	stats_lines(c, log_line, NULL);
}
