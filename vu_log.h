/* vu_log.h - the vhost-user dirty log: the bitmap the front-end (qemu)
 * shares during live migration, in which we mark every page of guest
 * memory we write. See vu_log.c for the theory of operation.
 */
#ifndef FERRY_VU_LOG_H
#define FERRY_VU_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "virtq.h"

#define VU_LOG_PAGE	4096ULL		/* one bit covers this much */

struct vu_log {
	uint8_t *bits;		/* the bitmap (in our mapping), NULL: none */
	uint64_t size;		/* bytes of bitmap */
	void *map;		/* the whole mapping (munmap) */
	size_t map_len;
	uint64_t pages;		/* page marks made (statistics) */
	uint64_t outside;	/* writes beyond the bitmap: not marked */
};

/* vu_log_map() - map the bitmap of size bytes at offset in fd (the
 * SET_LOG_BASE message) into l, replacing the one mapped before. The
 * file must hold it. Returns 0, or -1 (l unchanged, logged). */
int vu_log_map(struct vu_log *l, int fd, uint64_t size, uint64_t offset);

/* vu_log_unmap() - forget the bitmap (nothing if none). */
void vu_log_unmap(struct vu_log *l);

/* vu_log_gpa() - mark the pages of guest physical [gpa, gpa+len) dirty;
 * bits beyond the bitmap are not set and counted in l->outside. Nothing
 * when l is NULL or has no bitmap, or len is 0. Atomic: qemu reads and
 * clears the bitmap while we write it. */
void vu_log_gpa(struct vu_log *l, uint64_t gpa, uint64_t len);

/* vu_log_iov() - mark the pages under the first len bytes of the pieces,
 * which point into the guest memory m (translated back to guest physical
 * addresses through it). A piece outside m is not marked (counted). */
void vu_log_iov(struct vu_log *l, const struct vu_mem *m,
		const struct iovec *iov, unsigned int n, size_t len);

#endif /* FERRY_VU_LOG_H */
