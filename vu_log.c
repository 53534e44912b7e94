/* vu_log.c - the vhost-user dirty log (live migration).
 *
 * Theory of operation: while qemu migrates a guest it copies the guest's
 * memory to the destination over and over, each time only the pages
 * written since the last pass. It learns of the guest's own writes from
 * the hypervisor; ours, into shared memory behind its back, it learns
 * from a bitmap we keep for it (vhost-user spec, "Migration"). The
 * front-end offers the bitmap with SET_LOG_BASE (LOG_SHMFD: a shared
 * memory fd, a size and an offset), turns logging on with the LOG_ALL
 * feature bit in SET_FEATURES, and asks for used-ring logging per ring
 * with VHOST_VRING_F_LOG in SET_VRING_ADDR (whose log address gives the
 * guest physical address of that ring's used part).
 *
 * One bit per 4 KiB page of guest physical address space, page p at bit
 * p % 8 of byte p / 8. qemu reads and clears the bytes concurrently, so
 * bits are set with an atomic OR. A mark beyond the bitmap's size is not
 * made: the front-end sized it for all of guest memory, so such a write
 * came from a range it does not know, and is counted (l->outside).
 *
 * What we write into guest memory, and where it is marked: the data of
 * frames to the guest (tap_vu.c, through vu_log_iov() on the pieces of
 * each receive chain, the num_buffers header field included, which lies
 * in the first bytes written) and the used rings' entries, index and
 * flags (virtq.c, vq_log_used() at the ring's log address). The
 * descriptor tables and available rings are only read.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "log.h"
#include "vu_log.h"

/* seccomp(vu): mmap munmap newfstatat
 *   (the log's shared memory, its size checked) */

int vu_log_map(struct vu_log *l, int fd, uint64_t size, uint64_t offset)
{
	struct stat st;
	void *p;

	if (!size || offset + size < offset || offset + size > SIZE_MAX) {
		warn("vhost-user: dirty log out of range");
		return -1;
	}
	/* Touching a mapping past the end of a file is SIGBUS. */
	if (fstat(fd, &st) ||
	    (S_ISREG(st.st_mode) && (uint64_t)st.st_size < offset + size)) {
		warn("vhost-user: dirty log beyond its file");
		return -1;
	}
	p = mmap(NULL, (size_t)(offset + size), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED) {
		warn("vhost-user: cannot map the dirty log: %s",
		     strerror(errno));
		return -1;
	}
	vu_log_unmap(l);
	l->map = p;
	l->map_len = (size_t)(offset + size);
	l->bits = (uint8_t *)p + offset;
	l->size = size;
	return 0;
}

void vu_log_unmap(struct vu_log *l)
{
	if (l->map)
		munmap(l->map, l->map_len);
	l->map = NULL;
	l->map_len = 0;
	l->bits = NULL;
	l->size = 0;
}

void vu_log_gpa(struct vu_log *l, uint64_t gpa, uint64_t len)
{
	uint64_t p, last;

	if (!l || !l->bits || !len)
		return;
	if (gpa + len - 1 < gpa) {		/* wraps: mark up to the top */
		len = UINT64_MAX - gpa + 1;
		l->outside++;
	}
	last = (gpa + len - 1) / VU_LOG_PAGE;
	for (p = gpa / VU_LOG_PAGE; p <= last; p++) {
		if (p / 8 >= l->size) {
			l->outside++;
			return;
		}
		__atomic_fetch_or(&l->bits[p / 8], (uint8_t)(1u << (p % 8)),
				  __ATOMIC_RELAXED);
		l->pages++;
	}
}

/* host_to_gpa() - the guest physical address of our pointer h into m;
 * false if it is in none of its regions. */
static bool host_to_gpa(const struct vu_mem *m, const void *h, uint64_t *gpa)
{
	uintptr_t a = (uintptr_t)h;
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		uintptr_t s = (uintptr_t)m->r[i].host;

		if (s && a >= s && a - s < m->r[i].size) {
			*gpa = m->r[i].gpa + (a - s);
			return true;
		}
	}
	return false;
}

void vu_log_iov(struct vu_log *l, const struct vu_mem *m,
		const struct iovec *iov, unsigned int n, size_t len)
{
	unsigned int i;

	if (!l || !l->bits)
		return;
	for (i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		uint64_t gpa;

		if (!k)
			continue;
		if (host_to_gpa(m, iov[i].iov_base, &gpa))
			vu_log_gpa(l, gpa, k);
		else
			l->outside++;
		len -= k;
	}
}
