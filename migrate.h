/* migrate.h - the device state of a live migration (migrate.c). */
#ifndef FERRY_MIGRATE_H
#define FERRY_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

struct ctx;

/* migrate_init() - vhost-user: what a migration needs (start-up). */
void migrate_init(struct ctx *c);

/* migrate_save() - encode what the destination needs into buf (cap
 * bytes); the state's length, or 0 if it does not fit (logged). */
size_t migrate_save(struct ctx *c, uint8_t *buf, size_t cap);

/* migrate_load() - decode and apply a state of len bytes; one that does
 * not decode is refused whole (logged): nothing of it is applied. */
void migrate_load(struct ctx *c, const uint8_t *buf, size_t len);

/* migrate_timer() - the loop's timer: after a state was taken, announce
 * the gateway to the guest once its receive ring runs (then nothing). */
void migrate_timer(struct ctx *c);

/* For vhost_user.c's SET_DEVICE_STATE_FD (vm.c hands them over). */
extern const struct vu_state_ops migrate_vu_ops;

#endif /* FERRY_MIGRATE_H */
