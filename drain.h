/* drain.h - drain before exit: serve the open flows until each is
 * finished, at most --linger seconds (see drain.c). */
#ifndef FERRY_DRAIN_H
#define FERRY_DRAIN_H

struct ctx;

/* drain_begin() - the reason to exit came (why, for the log): with
 * --linger 0 quit at once; else stop taking new connections and serve
 * the open flows (drain_step() ends it). Again while draining: nothing. */
void drain_begin(struct ctx *c, const char *why);
/* drain_step() - once per loop iteration, after its events: while
 * draining, quit when no flow holds the exit or at the deadline (the
 * flows still open then are reset both ways and logged). */
void drain_step(struct ctx *c);

#endif /* FERRY_DRAIN_H */
