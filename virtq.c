/* virtq.c - guest memory translation and split virtqueues, as a
 * vhost-user back-end sees them (virtio 1.x, "Split Virtqueues").
 *
 * Theory of operation: the front-end (qemu) shares the guest's RAM as a
 * few file descriptors (SET_MEM_TABLE, mapped by vhost_user.c into a
 * struct vu_mem). Ring addresses arrive in the front-end's own address
 * space (uva); buffer addresses in descriptors are guest physical (gpa).
 * Both are translated here, and only here, with every range checked
 * against the table: a hostile guest may point descriptors anywhere, loop
 * chains, or move indices far ahead.
 *
 * A ring has three parts: the descriptor table (the guest writes, we
 * read), the available ring (guest writes heads of chains it offers, then
 * bumps avail->idx) and the used ring (we write the heads we are done
 * with and bytes written, then bump used->idx). The guest writes rings
 * concurrently with us: every field is read once into a local and checked
 * there. Ordering: avail->idx is read with acquire semantics before the
 * ring entries it covers; used entries are written before used->idx is
 * stored with release semantics; a full barrier separates that store
 * from reading avail->flags to decide whether to notify (otherwise the
 * guest could switch interrupts back on unseen and sleep forever).
 *
 * Chains are walked with a step limit of the ring size (loop detection),
 * every next index < num, directions checked (a transmit chain is
 * device-readable, a receive chain device-writable), and indirect
 * descriptors refused (VIRTIO_RING_F_INDIRECT_DESC is never offered).
 * EVENT_IDX is not offered either: notifications follow the flags,
 * both ways: we read avail->flags before notifying, and set
 * VQ_USED_F_NO_NOTIFY in used->flags while kicks would only wake us for
 * work we are already doing (tap_vu.c).
 *
 * While the front-end migrates the guest, every write to a used ring
 * (entries, index, flags) is marked in the dirty log at the ring's log
 * address (vq_log_used(); vu_log.c).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include "virtq.h"
#include "vu_log.h"

/* seccomp(vu): write
 *   (the call eventfd) */

/* Guest memory is little-endian (virtio 1.x); fields are read once. */
static uint16_t rd_le16(const uint16_t *p)
{
	return le16toh(__atomic_load_n(p, __ATOMIC_RELAXED));
}

int vu_mem_iov(const struct vu_mem *m, uint64_t gpa, uint64_t len,
	       struct iovec *iov, unsigned int max)
{
	unsigned int n = 0, i;

	while (len) {
		const struct vu_region *r = NULL;
		uint64_t off, piece;

		for (i = 0; i < m->n; i++) {
			if (gpa >= m->r[i].gpa &&
			    gpa - m->r[i].gpa < m->r[i].size) {
				r = &m->r[i];
				break;
			}
		}
		if (!r || n == max)
			return -1;
		off = gpa - r->gpa;
		piece = r->size - off < len ? r->size - off : len;
		iov[n].iov_base = r->host + off;
		iov[n].iov_len = (size_t)piece;
		n++;
		gpa += piece;
		len -= piece;
		if (len && !gpa)
			return -1;		/* wrapped around */
	}
	return (int)n;
}

void *vu_mem_uva(const struct vu_mem *m, uint64_t uva, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < m->n; i++) {
		const struct vu_region *r = &m->r[i];

		if (uva >= r->uva && uva - r->uva <= r->size &&
		    len <= r->size - (uva - r->uva))
			return r->host + (uva - r->uva);
	}
	return NULL;
}

/* vq_log_used() - mark len bytes at offset off of q's used ring dirty,
 * when the ring is logged. */
static void vq_log_used(struct virtq *q, uint64_t off, uint64_t len)
{
	if (q->log)
		vu_log_gpa(q->log, q->log_gpa + off, len);
}

void virtq_reset(struct virtq *q)
{
	memset(q, 0, sizeof(*q));
	q->kick_fd = q->call_fd = q->err_fd = -1;
}

bool virtq_map(struct virtq *q, const struct vu_mem *m)
{
	uint64_t num = q->num;

	q->desc = NULL;
	q->avail = NULL;
	q->used = NULL;
	if (!num || (num & (num - 1)) || num > VQ_NUM_MAX || !q->addr_set)
		return false;
	if ((q->desc_uva & 15) || (q->avail_uva & 1) || (q->used_uva & 3))
		return false;
	q->desc = vu_mem_uva(m, q->desc_uva, 16 * num);
	q->avail = vu_mem_uva(m, q->avail_uva, 6 + 2 * num);
	q->used = vu_mem_uva(m, q->used_uva, 6 + 8 * num);
	if (!q->desc || !q->avail || !q->used) {
		q->desc = NULL;
		q->avail = NULL;
		q->used = NULL;
		return false;
	}
	return true;
}

bool virtq_ready(const struct virtq *q)
{
	return q->started && q->enabled && !q->broken && q->desc;
}

/* avail_count() - chains the guest offers beyond last_avail; -1 if the
 * index moved further than the ring size (broken). Acquire: the entries
 * covered by the index are read after it. */
static int avail_count(const struct virtq *q)
{
	uint16_t idx = le16toh(__atomic_load_n(&q->avail->idx,
					       __ATOMIC_ACQUIRE));
	uint16_t n = (uint16_t)(idx - q->last_avail);

	return n > q->num ? -1 : n;
}

void virtq_set_no_notify(struct virtq *q, bool on)
{
	uint16_t v = htole16(on ? VQ_USED_F_NO_NOTIFY : 0);

	if (!virtq_ready(q))
		return;
	if (__atomic_load_n(&q->used->flags, __ATOMIC_RELAXED) != v) {
		__atomic_store_n(&q->used->flags, v, __ATOMIC_RELAXED);
		vq_log_used(q, offsetof(struct vq_used, flags), 2);
	}
	if (!on)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

bool virtq_pending(const struct virtq *q)
{
	return virtq_ready(q) && avail_count(q) > 0;
}

/* walk_chain() - translate the chain starting at e->head into e.
 * Returns 0, or -1 if it is malformed. */
static int walk_chain(const struct virtq *q, const struct vu_mem *m,
		      bool writable, struct vq_elem *e)
{
	uint16_t i = e->head;
	unsigned int steps;

	e->niov = 0;
	e->len = 0;
	for (steps = 0; steps < q->num; steps++) {
		struct vq_desc d;
		int k;

		memcpy(&d, &q->desc[i], sizeof(d));	/* one read */
		d.addr = le64toh(d.addr);
		d.len = le32toh(d.len);
		d.flags = le16toh(d.flags);
		d.next = le16toh(d.next);
		if (d.flags & VQ_DESC_F_INDIRECT)
			return -1;
		if (!!(d.flags & VQ_DESC_F_WRITE) != writable)
			return -1;
		k = vu_mem_iov(m, d.addr, d.len, e->iov + e->niov,
			       VQ_IOV_MAX - e->niov);
		if (k < 0 || e->len + d.len > UINT32_MAX)
			return -1;
		e->niov += (unsigned int)k;
		e->len += d.len;
		if (!(d.flags & VQ_DESC_F_NEXT))
			return 0;
		if (d.next >= q->num)
			return -1;
		i = d.next;
	}
	return -1;				/* loop */
}

int virtq_pop(struct virtq *q, const struct vu_mem *m, bool writable,
	      struct vq_elem *e)
{
	int avail;
	uint16_t head;

	if (!virtq_ready(q))
		return 0;
	avail = avail_count(q);
	if (avail < 0) {
		q->broken = true;
		return -2;
	}
	if (!avail)
		return 0;
	head = rd_le16(&q->avail->ring[q->last_avail & (q->num - 1)]);
	if (head >= q->num) {
		q->broken = true;
		return -2;
	}
	q->last_avail++;
	e->head = head;
	return walk_chain(q, m, writable, e) ? -1 : 1;
}

void virtq_unpop(struct virtq *q, unsigned int n)
{
	q->last_avail = (uint16_t)(q->last_avail - n);
}

void virtq_push(struct virtq *q, uint16_t head, uint32_t len)
{
	unsigned int slot = q->used_idx & (q->num - 1);
	struct vq_used_elem *u = &q->used->ring[slot];

	__atomic_store_n(&u->id, htole32(head), __ATOMIC_RELAXED);
	__atomic_store_n(&u->len, htole32(len), __ATOMIC_RELAXED);
	vq_log_used(q, offsetof(struct vq_used, ring) + slot * sizeof(*u),
		    sizeof(*u));
	q->used_idx++;
}

bool virtq_publish(struct virtq *q)
{
	uint64_t one = 1;

	if (q->used_idx == q->used_pub || !q->used)
		return false;
	__atomic_store_n(&q->used->idx, htole16(q->used_idx),
			 __ATOMIC_RELEASE);
	vq_log_used(q, offsetof(struct vq_used, idx), 2);
	q->used_pub = q->used_idx;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (rd_le16(&q->avail->flags) & VQ_AVAIL_F_NO_INTERRUPT)
		return false;
	if (q->call_fd < 0)
		return false;
	if (write(q->call_fd, &one, sizeof(one)) != sizeof(one) &&
	    errno != EAGAIN)
		return false;
	return true;
}

/* iov_copy() - copy up to len bytes between buf and the pieces; out:
 * from the pieces into buf, else from buf into the pieces. */
static size_t iov_copy(const struct iovec *iov, unsigned int n, uint8_t *buf,
		       size_t len, bool out)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < n && done < len; i++) {
		size_t k = iov[i].iov_len < len - done ? iov[i].iov_len
						       : len - done;

		if (out)
			memcpy(buf + done, iov[i].iov_base, k);
		else
			memcpy(iov[i].iov_base, buf + done, k);
		done += k;
	}
	return done;
}

size_t iov_copy_out(const struct iovec *iov, unsigned int n, void *buf,
		    size_t len)
{
	return iov_copy(iov, n, buf, len, true);
}

size_t iov_copy_in(const struct iovec *iov, unsigned int n, const void *buf,
		   size_t len)
{
	return iov_copy(iov, n, (uint8_t *)buf, len, false);
}
