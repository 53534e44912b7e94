/* fault.h - test-only fault injection on the guest link (--fault): drop,
 * duplicate or reorder a share of the frames from and to the guest.
 *
 * Only the test build (-DFERRY_TEST: build/ferry-test, build/unit) has
 * it; a release build refuses the option (conf.c). See fault.c.
 */
#ifndef FERRY_FAULT_H
#define FERRY_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;

enum fault_dir { FAULT_FROM_GUEST = 0, FAULT_TO_GUEST = 1 };

/* Per-mille rates of one direction. */
struct fault_rates {
	uint16_t drop, dup, reorder;
};

struct fault_conf {
	bool on;
	struct fault_rates r[2];	/* [enum fault_dir] */
	uint64_t seed;			/* PRNG seed (seed=N, default 1) */
};

#ifdef FERRY_TEST

struct fault_state {
	uint64_t rng;			/* splitmix64 state */
	uint8_t *hold[2];		/* one reordered frame per direction */
	uint32_t held_len[2];		/* 0: nothing held */
	uint64_t dropped[2], duped[2], reordered[2];
};

/* fault_parse() - one --fault value, e.g. "drop=10,reorder=10",
 * "to:drop=20,from:dup=5,seed=7" (per mille, 0-1000; no prefix: both
 * directions; "to:" toward the guest, "from:" from the guest), merged
 * into *f. On error writes a message naming the bad part into err and
 * returns false. */
bool fault_parse(struct fault_conf *f, const char *arg, char *err,
		 size_t errlen);
/* fault_init() - seed the PRNG, allocate the hold buffers (start-up). */
void fault_init(struct ctx *c);
/* fault_roll() - true with probability permille/1000 (next PRNG draw). */
bool fault_roll(struct fault_state *fs, unsigned int permille);
/* fault_rx() - apply the from-guest faults to c->link.rx before it is
 * dispatched: drop (counted as DROP_FAULT_INJECTED), duplicate, or hold
 * a frame back and deliver it after the next batch's frames. */
void fault_rx(struct ctx *c);
/* fault_tx() - the same for the frames queued to the guest, before a
 * flush. */
void fault_tx(struct ctx *c);

#endif /* FERRY_TEST */
#endif /* FERRY_FAULT_H */
