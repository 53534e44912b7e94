/* drop.c - names of drop reasons, counting, and the statistics dump.
 *
 * Every frame ferry refuses goes through drop() with a reason from
 * drop.h: a per-reason counter in c->stats, and with --trace a line per
 * drop, at most 20 a second so a flood cannot flood the log too. The
 * statistics dump (stats_log(): SIGUSR1, and at exit) prints the traffic
 * totals, every non-zero drop counter by its stable name, then each
 * module's counters, one "stats: MODULE name value ..." line each
 * (stats_line(); tests parse these lines, test_stats.c pins them).
 */
#include <stdio.h>

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

/* stats_line() - see drop.h; a line too long for the buffer is cut at
 * the last item that fits (none is: the longest is some 250 bytes). */
void stats_line(const char *what, const struct stat_item *it, unsigned int n)
{
	char line[768] = "";
	size_t len = 0;
	unsigned int i;
	int k;

	for (i = 0; i < n; i++, len += (size_t)k) {
		k = it[i].name ? snprintf(line + len, sizeof(line) - len,
					  "%s%s %llu",
					  *it[i].name == ',' ? "" : " ",
					  it[i].name, it[i].v)
			       : snprintf(line + len, sizeof(line) - len,
					  "/%llu", it[i].v);
		if (k < 0 || (size_t)k >= sizeof(line) - len)
			break;			/* cut at the last whole item */
	}
	line[len] = '\0';
	info("stats: %s%s", what, line);
}

void stats_log(const struct ctx *c)
{
	int r;

	info("stats: from guest %llu frames %llu bytes, to guest %llu frames "
	     "%llu bytes", (unsigned long long)c->stats.rx_frames,
	     (unsigned long long)c->stats.rx_bytes,
	     (unsigned long long)c->stats.tx_frames,
	     (unsigned long long)c->stats.tx_bytes);
	for (r = 1; r < DROP_MAX; r++)
		if (c->stats.drops[r])
			info("stats: drop %s %llu", drop_names[r],
			     (unsigned long long)c->stats.drops[r]);
	if (c->stats.tx_stalls)
		info("stats: link stalls %llu (writes cut short, the frames "
		     "behind held), longest %llu ms",
		     (unsigned long long)c->stats.tx_stalls,
		     (unsigned long long)c->stats.tx_stall_max_ms);
	if (c->link.up && c->link.tx_stalled)
		info("stats: link stalled now, for %lld ms (%u frames held)",
		     (long long)ts_ms_diff(&c->now, &c->link.stall_t0),
		     c->link.tx.n);
	udp_stats_log(c);
	tcp_stats_log(c);
	tcp_fwd_stats_log(c);
	bp_stats_log(c);
#ifdef FERRY_TEST
	fault_stats_log(c);
#endif
}
