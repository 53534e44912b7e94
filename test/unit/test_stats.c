/* test_stats.c - the statistics dump (stats_log(): SIGUSR1 and exit):
 * its lines are read by people and by the integration tests' regular
 * expressions, so their exact text is pinned here, every counter a
 * different value in its own place. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ferry.h"
#include "log.h"
#include "tcp_ooo.h"
#include "unit.h"

/* stats_capture() - stats_log(c) as text (stderr redirected to a
 * temporary file at the info level); free() the result. */
static char *stats_capture(const struct ctx *c)
{
	enum log_level lvl = log_get_level();
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	char *out = calloc(1, 8192);
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	log_set_level(LOG_LVL_INFO);
	stats_log(c);
	log_set_level(lvl);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, 8191, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

TEST(stats_lines_exact)
{
	struct ctx *c = test_ctx();
	struct tcp_ooo_pool ooo = { 0 };
	struct tcp_stats *t = &c->tcp.st;
	struct tcp_fwd_stats *f = &c->tcp_fwd.st;
	char *out;

	c->stats.rx_frames = 1; c->stats.rx_bytes = 2;
	c->stats.tx_frames = 3; c->stats.tx_bytes = 4;
	c->stats.drops[DROP_ETH_TYPE] = 5;
	c->stats.drops[DROP_TX_FULL] = 6;
	c->udp.flows_created = 7; c->udp.flows_expired = 8;
	c->udp.flows_evicted = 9; c->udp.icmp_to_guest = 10;
	c->udp.spliced = 11;
	t->opened = 12; t->refused = 13; t->rst_to_guest = 14;
	t->rst_from_guest = 15; t->rewinds_dupack = 16; t->rewinds_rto = 17;
	t->short_writes = 18; t->wnd_updates = 19; t->clamp_sets = 20;
	t->wnd_polls = 59; t->wnd_poll_updates = 60;
	t->clamp_fallbacks = 21; t->timeouts = 22; t->acks_delayed = 23;
	t->acks_delack_timer = 24; t->acks_carried = 47;
	t->sack_rewinds = 51; t->sack_skips = 48; t->sack_skipped = 49;
	t->sack_ignored = 50; t->early_rexmits = 61; t->tlp_probes = 62;
	t->tlp_rewinds = 63;
	t->chacks = 64;
	t->chacks_limited = 65;
	t->drain_resets = 66;
	t->timer_visits = 67;
	c->tcp.tw_st = (struct tcp_tw_stats){ 52, 53, 54, 55, 56, 57, 58 };
	ooo.st = (struct tcp_ooo_stats){ 25, 26, 27, 28, 29, 30, 31, 32 };
	c->tcp.ooo = &ooo;
	*f = (struct tcp_fwd_stats){ .listeners = 33, .accepted = 34,
		.to_guest = 35, .spliced = 36, .refused = 37, .splice_rst = 38,
		.splice_idle = 39, .scans = 40 };
	c->conf.fault.on = true;
	c->fault.dropped[0] = 41; c->fault.duped[0] = 42;
	c->fault.reordered[0] = 43; c->fault.dropped[1] = 44;
	c->fault.duped[1] = 45; c->fault.reordered[1] = 46;
	out = stats_capture(c);
	c->tcp.ooo = NULL;
	c->conf.fault.on = false;
	test_ctx_free(c);
	CHECK(!strcmp(out,
		"stats: from guest 1 frames 2 bytes, to guest 3 frames 4 bytes\n"
		"stats: drop ETH_TYPE 5\n"
		"stats: drop TX_FULL 6\n"
		"stats: udp flows 0 open, 7 created, 8 expired, 9 evicted "
		"(0 of them forwarded-port clients at their half), "
		"10 ICMP errors to guest, 11 datagrams on the loopback path\n"
		"stats: tcp opened 12 refused 13 rst to/from guest 14/15 "
		"rewinds dupack/rto 16/17 short writes 18 wnd updates 19 "
		"wnd polls/updates 59/60 clamp sets 20 fallbacks 21 timeouts 22 acks delayed 23 "
		"sent by timer 24 acks carried 47 "
		"sack rewinds/skips/bytes/ignored 51/48/49/50 "
		"early rexmits 61 tlp probes/rewinds 62/63 "
		"challenge acks/limited 64/65 drain resets 66 timer visits 67\n"
		"stats: tcp ooo segments 25 bytes 26 delivered 27 drops "
		"full/reach 28/29 sack acks 30 blocks 31 peak 32\n"
		"stats: tcp time-wait added 52 acked 53 dropped 54 reopened 55 "
		"reset 56 recycled 57 expired 58\n"
		"stats: tcp forwarding listeners 33 accepted 34 to guest 35 "
		"spliced 36 refused 37 splice resets 38 scans 40 "
		"idle resets 39\n"
		"stats: fault from guest dropped 41 duplicated 42 reordered 43, "
		"to guest dropped 44 duplicated 45 reordered 46\n"));
	free(out);
}

TEST(stats_quiet_modules_say_nothing)
{
	struct ctx *c = test_ctx();
	char *out = stats_capture(c);

	test_ctx_free(c);
	/* no UDP flow, no forwarding, no ooo pool, no --fault: only the
	 * traffic line and the TCP counters */
	CHECK(!strcmp(out,
		"stats: from guest 0 frames 0 bytes, to guest 0 frames 0 bytes\n"
		"stats: tcp opened 0 refused 0 rst to/from guest 0/0 "
		"rewinds dupack/rto 0/0 short writes 0 wnd updates 0 "
		"wnd polls/updates 0/0 clamp sets 0 fallbacks 0 timeouts 0 acks delayed 0 "
		"sent by timer 0 acks carried 0 "
		"sack rewinds/skips/bytes/ignored 0/0/0/0 "
		"early rexmits 0 tlp probes/rewinds 0/0 "
		"challenge acks/limited 0/0 drain resets 0 timer visits 0\n"));
	free(out);
}
