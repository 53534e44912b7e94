/* test_fault.c - --fault (test builds only): option parsing with errors
 * naming the bad part, the PRNG's determinism and rates, and what drop,
 * duplicate and reorder do to input and output batches. */
#include <string.h>
#include <sys/mman.h>

#include "fault.h"
#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static char err[256];

static bool parse(struct fault_conf *f, const char *arg)
{
	err[0] = '\0';
	return fault_parse(f, arg, err, sizeof(err));
}

TEST(fault_parse_rates_and_directions)
{
	struct fault_conf f = { 0 };

	CHECK(parse(&f, "drop=10,dup=5,reorder=10"));
	CHECK(f.on);
	CHECK_EQ(f.seed, 1);
	CHECK_EQ(f.r[FAULT_FROM_GUEST].drop, 10);
	CHECK_EQ(f.r[FAULT_TO_GUEST].drop, 10);
	CHECK_EQ(f.r[FAULT_TO_GUEST].dup, 5);
	CHECK_EQ(f.r[FAULT_FROM_GUEST].reorder, 10);
	CHECK(parse(&f, "to:drop=20,from:dup=3,seed=7"));
	CHECK_EQ(f.r[FAULT_TO_GUEST].drop, 20);
	CHECK_EQ(f.r[FAULT_FROM_GUEST].drop, 10);	/* kept */
	CHECK_EQ(f.r[FAULT_FROM_GUEST].dup, 3);
	CHECK_EQ(f.r[FAULT_TO_GUEST].dup, 5);
	CHECK_EQ(f.seed, 7);
	CHECK(parse(&f, "reorder=1000,drop=0"));
	CHECK_EQ(f.r[FAULT_TO_GUEST].reorder, 1000);
	CHECK_EQ(f.r[FAULT_TO_GUEST].drop, 0);
}

TEST(fault_parse_errors_name_the_part)
{
	struct fault_conf f = { 0 };

	CHECK(!parse(&f, "drop=1001"));
	CHECK(strstr(err, "drop=1001"));
	CHECK(!parse(&f, "drop=10,lose=3"));
	CHECK(strstr(err, "lose"));
	CHECK(!parse(&f, "drop"));
	CHECK(strstr(err, "'drop'"));
	CHECK(!parse(&f, "dup=-1"));
	CHECK(strstr(err, "dup=-1"));
	CHECK(!parse(&f, "seed=x"));
	CHECK(strstr(err, "x"));
	CHECK(!parse(&f, "to:seed=3"));
	CHECK(strstr(err, "to:seed"));
	CHECK(!parse(&f, "sideways:drop=1"));
	CHECK(strstr(err, "sideways:drop"));
	CHECK(!parse(&f, ""));
}

TEST(fault_roll_deterministic_and_rates)
{
	struct fault_state a = { .rng = 42 }, b = { .rng = 42 };
	unsigned int i, hits = 0;

	for (i = 0; i < 1000; i++)
		CHECK_EQ(fault_roll(&a, 500), fault_roll(&b, 500));
	for (i = 0; i < 100000; i++)
		hits += fault_roll(&a, 10);
	CHECK(hits > 800 && hits < 1200);
	for (i = 0; i < 1000; i++) {
		CHECK(!fault_roll(&a, 0));
		CHECK(fault_roll(&a, 1000));
	}
}

/* fctx() - a test context with faults on in both directions. */
static struct ctx *fctx(const char *spec)
{
	struct ctx *c = test_ctx();

	if (!fault_parse(&c->conf.fault, spec, err, sizeof(err)))
		return NULL;
	fault_init(c);
	return c;
}

static void fctx_free(struct ctx *c)
{
	munmap(c->fault.hold[0], FRAME_MAX);
	munmap(c->fault.hold[1], FRAME_MAX);
	test_ctx_free(c);
}

/* rx_fill() - n input frames of 100 bytes, frame i filled with 'a' + i. */
static void rx_fill(struct ctx *c, unsigned int n, char first)
{
	struct rx_batch *rx = &c->link.rx;
	unsigned int i;

	rx->n = n;
	for (i = 0; i < n; i++) {
		rx->f[i].off = i * 128;
		rx->f[i].len = 100;
		memset(rx->buf + i * 128, first + (int)i, 100);
	}
}

static char rx_tag(const struct ctx *c, unsigned int i)
{
	return (char)c->link.rx.buf[c->link.rx.f[i].off];
}

TEST(fault_rx_drop_and_dup)
{
	struct ctx *c = fctx("from:drop=1000");

	CHECK(c);
	rx_fill(c, 5, 'a');
	fault_rx(c);
	CHECK_EQ(c->link.rx.n, 0);
	CHECK_EQ(c->stats.drops[DROP_FAULT_INJECTED], 5);
	CHECK_EQ(c->fault.dropped[FAULT_FROM_GUEST], 5);
	fctx_free(c);

	c = fctx("from:dup=1000");
	CHECK(c);
	rx_fill(c, 3, 'a');
	fault_rx(c);
	CHECK_EQ(c->link.rx.n, 6);
	CHECK_EQ(rx_tag(c, 0), 'a');
	CHECK_EQ(rx_tag(c, 1), 'a');
	CHECK_EQ(rx_tag(c, 5), 'c');
	/* A full batch gets no duplicates that would not fit. */
	rx_fill(c, RX_FRAMES_MAX, 'A');
	fault_rx(c);
	CHECK_EQ(c->link.rx.n, RX_FRAMES_MAX);
	fctx_free(c);
}

TEST(fault_rx_reorder_delivers_after_next_batch)
{
	struct ctx *c = fctx("from:reorder=1000");

	CHECK(c);
	rx_fill(c, 3, 'a');
	fault_rx(c);			/* 'a' held, b and c pass */
	CHECK_EQ(c->link.rx.n, 2);
	CHECK_EQ(rx_tag(c, 0), 'b');
	CHECK_EQ(c->fault.held_len[FAULT_FROM_GUEST], 100);
	rx_fill(c, 2, 'd');
	fault_rx(c);			/* 'a' returns last; 'd' held now */
	CHECK_EQ(c->link.rx.n, 2);
	CHECK_EQ(rx_tag(c, 0), 'e');
	CHECK_EQ(rx_tag(c, 1), 'a');
	CHECK_EQ(c->link.rx.f[1].len, 100);
	CHECK_EQ(c->link.rx.buf[c->link.rx.f[1].off + 99], 'a');
	CHECK_EQ(c->fault.reordered[FAULT_FROM_GUEST], 2);
	fctx_free(c);
}

/* tx_fill() - n output frames of 60 bytes, frame i filled with first+i. */
static void tx_fill(struct ctx *c, unsigned int n, char first)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint8_t *f = tap_tx_reserve(c, 60);

		memset(f, first + (int)i, 60);
		tap_tx_commit(c, 60);
	}
}

TEST(fault_tx_drop_dup_reorder)
{
	struct ctx *c = fctx("to:reorder=1000,from:drop=1000");
	size_t len;

	CHECK(c);
	tx_fill(c, 3, 'a');
	CHECK_EQ(test_tx_n(c), 2);	/* flushed: 'a' held */
	CHECK_EQ(test_tx(c, 0, &len)[0], 'b');
	tx_fill(c, 1, 'x');
	CHECK_EQ(test_tx_n(c), 3);	/* 'x' held, 'a' after the batch */
	CHECK_EQ(test_tx(c, 2, &len)[59], 'a');
	CHECK_EQ(len, 60);
	CHECK_EQ(c->fault.reordered[FAULT_TO_GUEST], 2);
	CHECK_EQ(c->stats.drops[DROP_FAULT_INJECTED], 0);
	fctx_free(c);

	c = fctx("to:drop=1000,to:dup=1000");
	CHECK(c);
	tx_fill(c, 4, 'a');
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->link.tx.used, 0);
	CHECK_EQ(c->stats.drops[DROP_FAULT_INJECTED], 4);
	fctx_free(c);

	c = fctx("to:dup=1000");
	CHECK(c);
	tx_fill(c, 2, 'a');
	CHECK_EQ(test_tx_n(c), 4);
	CHECK_EQ(test_tx(c, 1, &len)[0], 'a');
	CHECK_EQ(test_tx(c, 2, &len)[0], 'b');
	fctx_free(c);
}
