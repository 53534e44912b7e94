/* virtq.h - guest memory table and split virtqueues (vhost-user back-end).
 *
 * See virtq.c for the theory of operation. Everything a guest (or its
 * front-end) hands us is untrusted: ring addresses, descriptor addresses,
 * lengths, indices and flags are checked before use, and every guest
 * address is translated through the memory table with range checks.
 */
#ifndef FERRY_VIRTQ_H
#define FERRY_VIRTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define VU_REGIONS_MAX	8	/* memory regions of one table (spec: 8) */
#define VQ_NUM_MAX	32768	/* largest split ring (virtio 1.x) */
#define VQ_IOV_MAX	64	/* pieces of one descriptor chain */

struct vu_log;

/* Descriptor flags (virtio 1.x 2.7.5) */
#define VQ_DESC_F_NEXT		1
#define VQ_DESC_F_WRITE		2
#define VQ_DESC_F_INDIRECT	4	/* not offered: refused */

#define VQ_AVAIL_F_NO_INTERRUPT	1
#define VQ_USED_F_NO_NOTIFY	1	/* device to driver: do not kick */

/* One region of guest memory, mapped from the fd the front-end passed. */
struct vu_region {
	uint64_t gpa;		/* guest physical start */
	uint64_t size;		/* bytes */
	uint64_t uva;		/* start in the front-end's address space */
	uint8_t *host;		/* start in ours */
	void *map;		/* the whole mapping (munmap), NULL: none */
	size_t map_len;
};

struct vu_mem {
	unsigned int n;
	struct vu_region r[VU_REGIONS_MAX];
};

/* The rings as laid out in guest memory (little-endian, virtio 1.x). */
struct vq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];	/* num entries, then used_event */
};

struct vq_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vq_used {
	uint16_t flags;
	uint16_t idx;
	struct vq_used_elem ring[];	/* num entries, then avail_event */
};

struct virtq {
	uint16_t num;			/* ring size (power of 2), 0: unset */
	uint64_t desc_uva, avail_uva, used_uva;	/* SET_VRING_ADDR */
	bool addr_set;
	struct vq_desc *desc;		/* mapped rings, NULL until */
	struct vq_avail *avail;		/* virtq_map() succeeds */
	struct vq_used *used;
	uint16_t last_avail;		/* next avail entry to take */
	uint16_t used_idx;		/* next used entry to fill */
	uint16_t used_pub;		/* used->idx as last published */
	bool started;			/* kick fd received, not stopped */
	bool enabled;			/* SET_VRING_ENABLE (or no protocol
					 * features: enabled at start) */
	bool broken;			/* index or ring error: stopped */
	int kick_fd, call_fd, err_fd;	/* -1: none */
	/* Dirty logging (live migration, vu_log.c) */
	bool log_used;			/* VHOST_VRING_F_LOG in SET_VRING_ADDR */
	uint64_t log_gpa;		/* where the used ring is logged */
	struct vu_log *log;		/* its log while logging is on, or NULL
					 * (set by vhost_user.c) */
};

/* One popped descriptor chain, translated to our addresses. */
struct vq_elem {
	uint16_t head;			/* chain id for the used ring */
	unsigned int niov;
	size_t len;			/* total bytes */
	struct iovec iov[VQ_IOV_MAX];
};

/* vu_mem_iov() - translate guest physical range [gpa, gpa+len) into up to
 * max pieces of our memory (a range may span adjacent regions). Returns
 * the number of pieces, or -1 if any byte is outside the table, or the
 * range needs more than max pieces. len 0 gives 0 pieces. */
int vu_mem_iov(const struct vu_mem *m, uint64_t gpa, uint64_t len,
	       struct iovec *iov, unsigned int max);

/* vu_mem_uva() - our address of the front-end's [uva, uva+len), which
 * must lie within one region; NULL otherwise. */
void *vu_mem_uva(const struct vu_mem *m, uint64_t uva, uint64_t len);

/* virtq_reset() - forget everything about q (fds are not closed). */
void virtq_reset(struct virtq *q);

/* virtq_map() - translate q's ring addresses through m. False (rings
 * unmapped) if the size or addresses are unset, misaligned or outside
 * the table. */
bool virtq_map(struct virtq *q, const struct vu_mem *m);

/* virtq_ready() - may frames move on q? */
bool virtq_ready(const struct virtq *q);

/* virtq_pop() - take the next available chain into e: device-readable
 * buffers only (writable false, a transmit queue) or device-writable only
 * (writable true, a receive queue). Returns 1 with e filled; 0 if none is
 * available; -1 if the chain is malformed (loop, bad index, wrong
 * direction, indirect, out of memory, too many pieces, longer than
 * 4 GiB): e->head is valid, the caller returns it with virtq_push(q,
 * head, 0); -2 if the ring itself is broken (q->broken is set and the
 * queue stops). */
int virtq_pop(struct virtq *q, const struct vu_mem *m, bool writable,
	      struct vq_elem *e);

/* virtq_unpop() - give back the last n popped chains, not yet pushed. */
void virtq_unpop(struct virtq *q, unsigned int n);

/* virtq_push() - fill the next used entry (chain head, bytes written);
 * not visible to the guest until virtq_publish(). Like every write to
 * the used ring (its index, its flags), marked in q->log if set. */
void virtq_push(struct virtq *q, uint16_t head, uint32_t len);

/* virtq_publish() - make pushed entries visible (used->idx, with the
 * barrier before it) and notify the guest through the call eventfd
 * unless it asked not to be interrupted. Returns true if it notified. */
bool virtq_publish(struct virtq *q);

/* virtq_set_no_notify() - ask the guest not to kick q (on), or to kick
 * again (off), through used->flags; nothing if q is not ready. Turning
 * kicks back on ends with a full barrier, so the caller's next
 * virtq_pending() sees every chain offered while they were off (a guest
 * that read the flag still set did not kick for it). */
void virtq_set_no_notify(struct virtq *q, bool on);

/* virtq_pending() - are chains available beyond what was taken? */
bool virtq_pending(const struct virtq *q);

/* iov_copy_out()/iov_copy_in() - copy between a flat buffer and pieces:
 * out: up to len bytes from the pieces into buf; in: up to len bytes from
 * buf into the pieces. Return bytes copied. */
size_t iov_copy_out(const struct iovec *iov, unsigned int n, void *buf,
		    size_t len);
size_t iov_copy_in(const struct iovec *iov, unsigned int n, const void *buf,
		   size_t len);

#endif /* FERRY_VIRTQ_H */
