/* notify.h - the caller's hand-shake through inherited file descriptors:
 * --ready-fd and --exit-fd (see notify.c). */
#ifndef FERRY_NOTIFY_H
#define FERRY_NOTIFY_H

#include <stdint.h>

struct ctx;

/* notify_init() - check that the fds given are open (one error line and
 * exit 1 if not), keep them from the namespace command, and watch the
 * exit fd. Start-up, before the sandbox. */
void notify_init(struct ctx *c);

/* notify_ready() - the set-up is complete: write "1" to the ready fd
 * and close it (once; nothing without --ready-fd). */
void notify_ready(struct ctx *c);

/* notify_exit_handler() - the exit fd became readable or was closed at
 * the other end: start the exit, as a removed namespace does. */
void notify_exit_handler(struct ctx *c, uint32_t events);

#endif /* FERRY_NOTIFY_H */
