/* vhost_user.c - the vhost-user control protocol, back-end side.
 *
 * Theory of operation: in VM mode with --vhost-user, the UNIX socket that
 * qemu connects to carries control messages, not frames: a 12-byte header
 * (request, flags, payload size; host byte order) and a payload, with
 * file descriptors passed alongside (SCM_RIGHTS): guest memory regions
 * (SET_MEM_TABLE) and the eventfds of each ring (kick: the guest has
 * offered buffers; call: we have used some; err). Frames then move
 * through shared memory (virtq.c), and the guest link backend (tap_vu.c)
 * copies them between the rings and the link batches of tap.c.
 *
 * This file owns the device state (struct vu_dev): negotiated features,
 * the memory table, ring configuration and eventfds. Messages are read
 * without blocking, header first (the fds come with its first bytes),
 * then the payload; each complete message goes to vu_msg_handle(), which
 * checks the version, the payload size and every index before acting.
 * Replies go back on the same socket. A malformed message (bad version,
 * size, queue index, fd count, a ring fd that is not an eventfd) is a
 * protocol error: the connection is closed and ferry waits for the next
 * front-end. A request that is valid
 * but fails (say, a memory region that cannot be mapped) is answered
 * with a non-zero status when the front-end asked for one (REPLY_ACK).
 * Unknown requests get an error status when a reply was asked for, and
 * otherwise close the connection (the front-end may be waiting for a
 * reply we cannot give).
 *
 * Offered: VERSION_1, MRG_RXBUF, checksum and TSO offloads both ways,
 * PROTOCOL_FEATURES with MQ (GET_QUEUE_NUM answers 1: qemu refuses to
 * start more queue pairs) and REPLY_ACK, and for live migration LOG_ALL
 * with LOG_SHMFD: the dirty log of vu_log.c, mapped on SET_LOG_BASE and
 * written while SET_FEATURES has LOG_ALL on (log_update() hands it to
 * the rings that asked for used-ring logging in SET_VRING_ADDR), and
 * DEVICE_STATE: ferry's own state rides in qemu's migration stream.
 * Not offered: indirect descriptors, EVENT_IDX, the config space,
 * inflight tracking.
 *
 * Device state (vhost-user spec, "Migrating back-end state"): with the
 * rings stopped, SET_DEVICE_STATE_FD hands us one end of a pipe and a
 * direction. We answer first (no fd of our own), then move the whole
 * state through the pipe at once (state_transfer(): the front-end reads
 * or writes its end right after our answer): on the source we write what
 * the layer above encodes (struct vu_state_ops, migrate.c) and close, on
 * the destination we read to the end of file and hand it up. The loop
 * waits on the pipe meanwhile, for VU_STATE_MS at most. CHECK_DEVICE_STATE
 * then answers whether the transfer went through; a state that arrived
 * but does not decode is the layer above's to refuse (it starts without
 * it), not a failed transfer.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "ferry.h"
#include "log.h"
#include "util.h"
#include "mig_state.h"
#include "vhost_user.h"

/* seccomp(vu): close mmap munmap newfstatat readlink recvmsg sendmsg write
 *   (the control socket, guest memory and the dirty log, the ring fds
 *   checked) */
/* seccomp(vu): read poll clock_gettime
 *   (the device state's pipe) */
/* seccomp(setup): readlinkat */

#define VU_MSGS_PER_EVENT	64	/* then back to the loop */
#define VU_VRING_NOFD		(1ULL << 8)	/* KICK/CALL/ERR: no fd */
#define VU_VRING_IDX_MASK	0xffULL

/* Handler results besides 0 (success, no payload) */
#define VU_R_FAIL	1	/* valid request that failed: status 1 */
#define VU_R_REPLY	2	/* reply payload prepared in the message */
#define VU_R_PROTO	(-1)	/* protocol error: close */

static const char *const vu_names[VU_REQUEST_MAX] = {
	[VU_GET_FEATURES] = "GET_FEATURES",
	[VU_SET_FEATURES] = "SET_FEATURES",
	[VU_SET_OWNER] = "SET_OWNER",
	[VU_RESET_OWNER] = "RESET_OWNER",
	[VU_SET_MEM_TABLE] = "SET_MEM_TABLE",
	[VU_SET_LOG_BASE] = "SET_LOG_BASE",
	[VU_SET_LOG_FD] = "SET_LOG_FD",
	[VU_SET_VRING_NUM] = "SET_VRING_NUM",
	[VU_SET_VRING_ADDR] = "SET_VRING_ADDR",
	[VU_SET_VRING_BASE] = "SET_VRING_BASE",
	[VU_GET_VRING_BASE] = "GET_VRING_BASE",
	[VU_SET_VRING_KICK] = "SET_VRING_KICK",
	[VU_SET_VRING_CALL] = "SET_VRING_CALL",
	[VU_SET_VRING_ERR] = "SET_VRING_ERR",
	[VU_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
	[VU_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
	[VU_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
	[VU_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	[VU_SET_DEVICE_STATE_FD] = "SET_DEVICE_STATE_FD",
	[VU_CHECK_DEVICE_STATE] = "CHECK_DEVICE_STATE",
};

/* The largest state: the guest, then a TCP record with its socket for
 * every flow slot, and the queues' bytes in data records. */
#define VU_STATE_MAX	(MIG_HDR_LEN + MIG_REC_HDR + MIG_GUEST_LEN +	\
			 (size_t)FLOW_MAX * (2 * MIG_REC_HDR + MIG_TCP_LEN +	\
			 MIG_TCP_SOCK_LEN + 2 * (MIG_REC_HDR + MIG_DATA_HDR)) + \
			 MIG_QUEUES_MAX + (MIG_QUEUES_MAX /	\
			 MIG_DATA_MAX + 1) * (MIG_REC_HDR + MIG_DATA_HDR))

const char *vu_request_name(uint32_t request)
{
	if (request < VU_REQUEST_MAX && vu_names[request])
		return vu_names[request];
	return "?";
}

void vu_init(struct ctx *c)
{
	struct vu_dev *d = alloc_startup(sizeof(*d));
	unsigned int i;

	d->fd = -1;
	d->xfer_fd = -1;
	d->state_cap = VU_STATE_MAX;	/* touched only by a migration */
	d->state_buf = alloc_startup(d->state_cap);
	for (i = 0; i < VU_QUEUES; i++)
		virtq_reset(&d->vq[i]);
	c->link.vu = d;
}

void vu_state_ops_set(struct ctx *c, const struct vu_state_ops *ops)
{
	c->link.vu->state_ops = ops;
}

/* close_fd() - close *fd if open, mark it closed. */
static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* mem_unmap() - unmap every region of m. */
static void mem_unmap(struct vu_mem *m)
{
	unsigned int i;

	for (i = 0; i < m->n; i++)
		if (m->r[i].map)
			munmap(m->r[i].map, m->r[i].map_len);
	memset(m, 0, sizeof(*m));
}

/* vq_stop() - stop ring q: forget its kick fd (and its loop entry). */
static void vq_stop(struct ctx *c, struct virtq *q)
{
	if (q->kick_fd >= 0)
		ep_del(c, q->kick_fd);
	close_fd(&q->kick_fd);
	q->started = false;
}

/* vq_close() - stop q and close all its fds; q is reset. */
static void vq_close(struct ctx *c, struct virtq *q)
{
	vq_stop(c, q);
	close_fd(&q->call_fd);
	close_fd(&q->err_fd);
	virtq_reset(q);
}

/* link_offloads() - what the guest takes from us, from the features. */
static void link_offloads(struct ctx *c, uint64_t f)
{
	c->link.tx_csum_partial = f & VU_F_GUEST_CSUM;
	c->link.tx_gso = (f & VU_F_GUEST_CSUM) && (f & VU_F_GUEST_TSO4) &&
			 (f & VU_F_GUEST_TSO6);
}

/* log_update() - hand the dirty log to whoever writes guest memory:
 * frame data (d->data_log) while LOG_ALL is on and a log is mapped, each
 * used ring (q->log) when it asked for logging too. */
static void log_update(struct vu_dev *d)
{
	bool on = (d->features & VU_F_LOG_ALL) && d->log.bits;
	unsigned int i;

	d->data_log = on ? &d->log : NULL;
	for (i = 0; i < VU_QUEUES; i++)
		d->vq[i].log = on && d->vq[i].log_used ? &d->log : NULL;
}

void vu_detach(struct ctx *c)
{
	struct vu_dev *d = c->link.vu;
	unsigned int i;

	for (i = 0; i < VU_QUEUES; i++)
		vq_close(c, &d->vq[i]);
	for (i = 0; i < d->in.nfds; i++)
		close_fd(&d->in.fds[i]);
	d->in.nfds = 0;
	d->in_fill = 0;
	mem_unmap(&d->mem);
	vu_log_unmap(&d->log);
	close_fd(&d->xfer_fd);
	d->state_failed = false;
	if (d->state_ops && d->state_ops->end)
		d->state_ops->end(c);
	d->features = d->protocol_features = 0;
	log_update(d);
	d->fd = -1;
	info("vhost-user: %llu messages, %llu guest notifications, "
	     "%llu transmit kicks", (unsigned long long)d->msgs,
	     (unsigned long long)d->notifies, (unsigned long long)d->kicks);
	d->msgs = d->notifies = d->kicks = 0;
}

/* reply_u64() - prepare a 64-bit reply payload in m. */
static int reply_u64(struct vu_msg *m, uint64_t v)
{
	m->p.u64 = v;
	m->size = sizeof(uint64_t);
	return VU_R_REPLY;
}

/* send_reply() - header (reply flag) and size bytes of payload from m. */
static int send_reply(const struct vu_dev *d, const struct vu_msg *m)
{
	uint32_t hdr[3] = { m->request, VU_VERSION | VU_FLAG_REPLY, m->size };
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)&m->p, .iov_len = m->size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	do {
		n = sendmsg(d->fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)(sizeof(hdr) + m->size)) {
		warn("vhost-user: cannot reply to %s: %s",
		     vu_request_name(m->request),
		     n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

/* --- requests ----------------------------------------------------- */

/* vu_get_features() - the virtio and vhost-user feature bits we offer. */
static int vu_get_features(struct ctx *c, struct vu_msg *m)
{
	(void)c;
	return reply_u64(m, VU_FEATURES);
}

/* vu_set_features() - the front-end's choice: only bits we offered; sets the
 * header size (mergeable buffers) and the link's offloads. */
static int vu_set_features(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;
	unsigned int i;

	if (m->p.u64 & ~VU_FEATURES) {
		warn("vhost-user: front-end set features %#llx not offered",
		     (unsigned long long)(m->p.u64 & ~VU_FEATURES));
		return VU_R_PROTO;
	}
	if (!(m->p.u64 & VU_F_VERSION_1)) {
		warn("vhost-user: legacy virtio (no VERSION_1) not supported");
		return VU_R_PROTO;
	}
	d->features = m->p.u64;
	/* Without protocol features, rings are enabled from the start. */
	for (i = 0; i < VU_QUEUES; i++)
		if (!(d->features & VU_F_PROTOCOL_FEATURES))
			d->vq[i].enabled = true;
	link_offloads(c, d->features);
	log_update(d);
	debug("vhost-user: features %#llx", (unsigned long long)d->features);
	return 0;
}

/* vu_get_protocol_features() - the protocol features we implement. */
static int vu_get_protocol_features(struct ctx *c, struct vu_msg *m)
{
	(void)c;
	return reply_u64(m, VU_PROTOCOL_FEATURES);
}

/* vu_set_protocol_features() - record the front-end's choice (only bits
 * we offered). */
static int vu_set_protocol_features(struct ctx *c, struct vu_msg *m)
{
	if (m->p.u64 & ~VU_PROTOCOL_FEATURES)
		return VU_R_PROTO;
	c->link.vu->protocol_features = m->p.u64;
	return 0;
}

/* vu_get_queue_num() - the number of queues we serve (one pair). */
static int vu_get_queue_num(struct ctx *c, struct vu_msg *m)
{
	(void)c;
	return reply_u64(m, 1);		/* queue pairs */
}

/* vu_set_owner() - the front-end takes the device; nothing to set up. */
static int vu_set_owner(struct ctx *c, struct vu_msg *m)
{
	(void)c;
	(void)m;
	return 0;
}

/* vu_reset_owner() - forget features and stop the rings (deprecated). */
static int vu_reset_owner(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;
	unsigned int i;

	(void)m;
	for (i = 0; i < VU_QUEUES; i++)
		vq_close(c, &d->vq[i]);
	d->features = 0;
	link_offloads(c, 0);
	log_update(d);
	return 0;
}

/* map_region() - mmap one region described in m from fd into r.
 * Returns 0 or VU_R_FAIL (logged). */
static int map_region(int fd, uint64_t gpa, uint64_t size, uint64_t uva,
		      uint64_t off, struct vu_region *r)
{
	struct stat st;
	void *p;

	if (!size || gpa + size < gpa || uva + size < uva ||
	    off + size < off || off + size > SIZE_MAX) {
		warn("vhost-user: memory region out of range");
		return VU_R_FAIL;
	}
	/* A regular file (memfd, shm, hugetlbfs) must hold the region: a
	 * mapping past its end maps, but touching it is SIGBUS. Devices
	 * (DAX) have no size to check. */
	if (fstat(fd, &st) ||
	    (S_ISREG(st.st_mode) && (uint64_t)st.st_size < off + size)) {
		warn("vhost-user: memory region beyond its file");
		return VU_R_FAIL;
	}
	p = mmap(NULL, (size_t)(off + size), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED) {
		warn("vhost-user: cannot map guest memory: %s",
		     strerror(errno));
		return VU_R_FAIL;
	}
	r->gpa = gpa;
	r->size = size;
	r->uva = uva;
	r->map = p;
	r->map_len = (size_t)(off + size);
	r->host = (uint8_t *)p + off;
	return 0;
}

/* vu_set_mem_table() - map the new table, then drop the old one and
 * translate the rings again. On failure the old table stays. */
static int vu_set_mem_table(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;
	struct vu_mem mem = { 0 };
	uint32_t n = m->p.mem.nregions;
	unsigned int i;
	int rc = 0;

	if (!n || n > VU_REGIONS_MAX || m->size != 8 + 32 * n ||
	    m->nfds != n)
		return VU_R_PROTO;
	for (i = 0; i < n && !rc; i++) {
		rc = map_region(m->fds[i], m->p.mem.r[i].gpa,
				m->p.mem.r[i].size, m->p.mem.r[i].uva,
				m->p.mem.r[i].mmap_offset, &mem.r[i]);
		mem.n = rc ? i : i + 1;
	}
	if (rc) {
		mem_unmap(&mem);
		return rc;
	}
	mem_unmap(&d->mem);
	d->mem = mem;
	for (i = 0; i < VU_QUEUES; i++)
		if (d->vq[i].addr_set && !virtq_map(&d->vq[i], &d->mem))
			warn("vhost-user: ring %u outside the new memory", i);
	info("vhost-user: guest memory: %u region(s)", n);
	return 0;
}

/* vu_set_log_base() - the dirty log: with LOG_SHMFD, one shared memory
 * fd, its size and offset; mapped (the previous one dropped) and
 * answered with a status, which the front-end always waits for. Without
 * LOG_SHMFD the log would be an address in qemu's own memory: refused. */
static int vu_set_log_base(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;
	int rc;

	if (!(d->protocol_features & VU_PF_LOG_SHMFD) || m->nfds != 1 ||
	    m->size != sizeof(m->p.log))
		return VU_R_PROTO;
	rc = vu_log_map(&d->log, m->fds[0], m->p.log.size, m->p.log.offset);
	log_update(d);
	if (!rc)
		debug("vhost-user: dirty log of %llu bytes",
		      (unsigned long long)d->log.size);
	return reply_u64(m, rc ? 1 : 0);
}

/* vu_set_log_fd() - an eventfd to tell the front-end the log changed:
 * optional, never signalled (the front-end reads the log when it syncs):
 * the fd is closed with the message. */
static int vu_set_log_fd(struct ctx *c, struct vu_msg *m)
{
	(void)c;
	return m->nfds == 1 ? 0 : VU_R_PROTO;
}

/* vu_set_device_state_fd() - the pipe of a state transfer: taken (moved
 * after the reply, see state_transfer()) for a known direction in the
 * stopped phase, answered "no fd of ours"; anything else fails (status
 * 1, the fd closed). */
static int vu_set_device_state_fd(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;
	uint32_t dir = m->p.state.index, phase = m->p.state.num;

	if (m->nfds != 1)
		return VU_R_PROTO;
	if ((dir != VU_STATE_SAVE && dir != VU_STATE_LOAD) ||
	    phase != VU_STATE_PHASE_STOPPED) {
		warn("vhost-user: device state: direction %u, phase %u "
		     "not supported", dir, phase);
		return reply_u64(m, 1);
	}
	close_fd(&d->xfer_fd);
	d->xfer_fd = m->fds[0];
	m->fds[0] = -1;
	m->nfds = 0;
	d->xfer_dir = dir;
	d->state_failed = false;
	return reply_u64(m, VU_STATE_NO_FD);
}

/* vu_check_device_state() - did the last transfer go through? */
static int vu_check_device_state(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;

	if (!d->state_failed && d->xfer_dir == VU_STATE_SAVE &&
	    d->state_ops && d->state_ops->saved)
		d->state_ops->saved(c);
	return reply_u64(m, d->state_failed ? 1 : 0);
}

/* vq_of() - the ring a state/addr/fd message names, or NULL. */
static struct virtq *vq_of(struct ctx *c, uint64_t index)
{
	return index < VU_QUEUES ? &c->link.vu->vq[index] : NULL;
}

/* vu_set_vring_num() - a ring's size (power of two, <= VQ_NUM_MAX); rings
 * already mapped are checked again for it. */
static int vu_set_vring_num(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.state.index);
	uint32_t num = m->p.state.num;

	if (!q || !num || num > VQ_NUM_MAX || (num & (num - 1)))
		return VU_R_PROTO;
	q->num = (uint16_t)num;
	/* Rings mapped for the old size: check them again (a failure only
	 * unmaps them, SET_VRING_ADDR may follow). */
	if (q->addr_set)
		virtq_map(q, &c->link.vu->mem);
	return 0;
}

/* vu_set_vring_addr() - a ring's descriptor/avail/used addresses, translated
 * and range-checked for its size. */
static int vu_set_vring_addr(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.addr.index);

	if (!q)
		return VU_R_PROTO;
	q->desc_uva = m->p.addr.desc;
	q->avail_uva = m->p.addr.avail;
	q->used_uva = m->p.addr.used;
	q->addr_set = true;
	q->log_used = m->p.addr.flags & VU_VRING_F_LOG;
	q->log_gpa = m->p.addr.log;
	log_update(c->link.vu);
	if (!virtq_map(q, &c->link.vu->mem)) {
		warn("vhost-user: ring %u addresses invalid", m->p.addr.index);
		return VU_R_FAIL;
	}
	/* Entries we fill continue from what the guest last saw. */
	q->used_idx = q->used_pub = le16toh(q->used->idx);
	return 0;
}

/* vu_set_vring_base() - the next avail index to read (ring stopped). */
static int vu_set_vring_base(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.state.index);

	if (!q || m->p.state.num > 0xffff)
		return VU_R_PROTO;
	q->last_avail = (uint16_t)m->p.state.num;
	return 0;
}

/* vu_get_vring_base() - stop the ring, report where it stopped. */
static int vu_get_vring_base(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.state.index);

	if (!q)
		return VU_R_PROTO;
	vq_stop(c, q);
	m->p.state.num = q->last_avail;
	m->size = sizeof(m->p.state);
	return VU_R_REPLY;
}

/* fd_kind() - what fd is, for a log line, when it is not an eventfd;
 * NULL when it is one. An eventfd is an anonymous inode: no file type
 * in its mode, which rules out what could block the loop or stay
 * readable for ever (a pipe or FIFO, a regular or FUSE file, a socket, a
 * device). Other anonymous inodes (epoll, timerfd, signalfd) share its
 * inode: the name /proc gives the fd tells them apart; without /proc
 * the mode's check stands alone (none of them blocks). */
static const char *fd_kind(int fd)
{
	char path[32], name[32];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st))
		return "unusable";
	switch (st.st_mode & S_IFMT) {
	case 0:
		break;
	case S_IFIFO:
		return "a pipe";
	case S_IFREG:
		return "a file";
	case S_IFSOCK:
		return "a socket";
	default:
		return "a device or directory";
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, name, sizeof(name) - 1);
	if (n < 0)
		return NULL;
	name[n] = '\0';
	return strcmp(name, "anon_inode:[eventfd]") ? "another kind of fd"
						    : NULL;
}

/* take_fd() - the single fd of a KICK/CALL/ERR message into *slot (the
 * previous one closed), or none with the no-fd bit. Anything but an
 * eventfd is refused (logged, counted as DROP_VU_FD): a protocol error. */
static int take_fd(struct ctx *c, struct vu_msg *m, int *slot)
{
	bool nofd = m->p.u64 & VU_VRING_NOFD;
	const char *kind;

	if (m->nfds != (nofd ? 0u : 1u))
		return VU_R_PROTO;
	close_fd(slot);
	if (nofd)
		return 0;
	if ((kind = fd_kind(m->fds[0]))) {
		warn("vhost-user: %s: the fd is %s, not an eventfd: refused",
		     vu_request_name(m->request), kind);
		drop(c, DROP_VU_FD);
		return VU_R_PROTO;	/* the caller closes m->fds[0] */
	}
	*slot = m->fds[0];
	m->fds[0] = -1;
	m->nfds = 0;
	if (fd_set_nonblock(*slot))
		debug("vhost-user: eventfd: %s", strerror(errno));
	return 0;
}

/* vu_set_vring_kick() - the ring starts. The transmit ring's kicks wake
 * the link handler; a first kick of our own catches chains offered
 * before we listened. Polling (no fd) is not supported. */
static int vu_set_vring_kick(struct ctx *c, struct vu_msg *m)
{
	union eref ref = { .type = EREF_LINK };
	uint64_t idx = m->p.u64 & VU_VRING_IDX_MASK, one = 1;
	struct virtq *q = vq_of(c, idx);
	int rc;

	if (!q || (m->p.u64 & VU_VRING_NOFD))
		return VU_R_PROTO;
	vq_stop(c, q);
	if ((rc = take_fd(c, m, &q->kick_fd)))
		return rc;
	q->started = true;
	q->broken = false;	/* a new start (say, after a guest reboot) */
	if (!(c->link.vu->features & VU_F_PROTOCOL_FEATURES))
		q->enabled = true;
	if (idx == VU_TXQ) {
		if (ep_add(c, q->kick_fd, EPOLLIN, ref))
			warn("vhost-user: epoll: %s", strerror(errno));
		if (write(q->kick_fd, &one, sizeof(one)) < 0)
			debug("vhost-user: self-kick: %s", strerror(errno));
	}
	return 0;
}

/* vu_set_vring_call() - the eventfd we signal after using buffers. */
static int vu_set_vring_call(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.u64 & VU_VRING_IDX_MASK);

	return q ? take_fd(c, m, &q->call_fd) : VU_R_PROTO;
}

/* vu_set_vring_err() - the error eventfd (kept, never signalled). */
static int vu_set_vring_err(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.u64 & VU_VRING_IDX_MASK);

	return q ? take_fd(c, m, &q->err_fd) : VU_R_PROTO;
}

/* vu_set_vring_enable() - enable or disable a ring. */
static int vu_set_vring_enable(struct ctx *c, struct vu_msg *m)
{
	struct virtq *q = vq_of(c, m->p.state.index);

	if (!q || m->p.state.num > 1)
		return VU_R_PROTO;
	q->enabled = m->p.state.num;
	return 0;
}

/* Request table: handler and payload size (exact, or -1: any). */
static const struct {
	int (*fn)(struct ctx *c, struct vu_msg *m);
	int size;
} vu_reqs[VU_REQUEST_MAX] = {
	[VU_GET_FEATURES] = { vu_get_features, -1 },
	[VU_SET_FEATURES] = { vu_set_features, 8 },
	[VU_SET_OWNER] = { vu_set_owner, -1 },
	[VU_RESET_OWNER] = { vu_reset_owner, -1 },
	[VU_SET_MEM_TABLE] = { vu_set_mem_table, -1 },	/* checked there */
	[VU_SET_LOG_BASE] = { vu_set_log_base, -1 },	/* checked there */
	[VU_SET_LOG_FD] = { vu_set_log_fd, 0 },
	[VU_SET_VRING_NUM] = { vu_set_vring_num, 8 },
	[VU_SET_VRING_ADDR] = { vu_set_vring_addr, 40 },
	[VU_SET_VRING_BASE] = { vu_set_vring_base, 8 },
	[VU_GET_VRING_BASE] = { vu_get_vring_base, 8 },
	[VU_SET_VRING_KICK] = { vu_set_vring_kick, 8 },
	[VU_SET_VRING_CALL] = { vu_set_vring_call, 8 },
	[VU_SET_VRING_ERR] = { vu_set_vring_err, 8 },
	[VU_GET_PROTOCOL_FEATURES] = { vu_get_protocol_features, -1 },
	[VU_SET_PROTOCOL_FEATURES] = { vu_set_protocol_features, 8 },
	[VU_GET_QUEUE_NUM] = { vu_get_queue_num, -1 },
	[VU_SET_VRING_ENABLE] = { vu_set_vring_enable, 8 },
	[VU_SET_DEVICE_STATE_FD] = { vu_set_device_state_fd, 8 },
	[VU_CHECK_DEVICE_STATE] = { vu_check_device_state, -1 },
};

/* takes_fds() - may a request of this kind come with fds? */
static bool takes_fds(uint32_t request)
{
	switch (request) {
	case VU_SET_MEM_TABLE:
	case VU_SET_LOG_BASE:
	case VU_SET_LOG_FD:
	case VU_SET_VRING_KICK:
	case VU_SET_VRING_CALL:
	case VU_SET_VRING_ERR:
	case VU_SET_DEVICE_STATE_FD:
		return true;
	default:
		return false;
	}
}

/* msg_dispatch() - run the handler of a well-formed message; unknown
 * requests fail (VU_R_FAIL if a status was asked for, else VU_R_PROTO). */
static int msg_dispatch(struct ctx *c, struct vu_msg *m)
{
	bool ack = m->flags & VU_FLAG_NEED_REPLY;

	if (m->request >= VU_REQUEST_MAX || !vu_reqs[m->request].fn) {
		warn("vhost-user: unsupported request %u (%s)", m->request,
		     vu_request_name(m->request));
		return ack ? VU_R_FAIL : VU_R_PROTO;
	}
	if (vu_reqs[m->request].size >= 0 &&
	    m->size != (uint32_t)vu_reqs[m->request].size)
		return VU_R_PROTO;
	if (m->nfds && !takes_fds(m->request))
		return VU_R_PROTO;		/* fds where none belong */
	return vu_reqs[m->request].fn(c, m);
}

/* pipe_wait() - wait until fd is ready for events, up to *left_ms (what
 * is left of it written back); false on a timeout or an error. */
static bool pipe_wait(int fd, short events, int *left_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	struct timespec t0, t1;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = poll(&p, 1, *left_ms);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*left_ms -= (int)((t1.tv_sec - t0.tv_sec) * 1000 +
			  (t1.tv_nsec - t0.tv_nsec) / 1000000);
	return n == 1 && *left_ms > 0;
}

/* state_write() - all len bytes of buf into the pipe; 0 or -1 (logged). */
static int state_write(int fd, const uint8_t *buf, size_t len)
{
	int left = VU_STATE_MS;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && pipe_wait(fd, POLLOUT, &left))
			continue;
		warn("vhost-user: device state: write: %s",
		     n < 0 && errno != EAGAIN ? strerror(errno) : "timed out");
		return -1;
	}
	return 0;
}

/* state_read() - the pipe's contents to its end of file into buf (at most
 * cap bytes); their length, or -1 (logged) on an error, a timeout or more
 * than cap bytes. */
static ssize_t state_read(int fd, uint8_t *buf, size_t cap)
{
	int left = VU_STATE_MS;
	size_t done = 0;

	for (;;) {
		uint8_t extra;
		ssize_t n = done < cap ? read(fd, buf + done, cap - done)
				       : read(fd, &extra, 1);

		if (n == 0)
			return (ssize_t)done;
		if (n > 0 && done < cap) {
			done += (size_t)n;
			continue;
		}
		if (n > 0) {
			warn("vhost-user: device state over %zu bytes", cap);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && pipe_wait(fd, POLLIN, &left))
			continue;
		warn("vhost-user: device state: read: %s",
		     errno != EAGAIN ? strerror(errno) : "timed out");
		return -1;
	}
}

/* state_transfer() - move the state through the pipe SET_DEVICE_STATE_FD
 * gave (the front-end has our answer): encode and write it (source), or
 * read it to the end and hand it up (destination); the pipe is closed,
 * d->state_failed tells CHECK_DEVICE_STATE how it went. */
static void state_transfer(struct ctx *c)
{
	struct vu_dev *d = c->link.vu;
	int fd = d->xfer_fd;
	ssize_t n;

	d->xfer_fd = -1;
	if (fd_set_nonblock(fd))
		debug("vhost-user: state pipe: %s", strerror(errno));
	if (d->xfer_dir == VU_STATE_SAVE) {
		size_t len = d->state_ops ? d->state_ops->save(c, d->state_buf,
							      d->state_cap)
					  : 0;

		d->state_failed = (d->state_ops && !len) ||
				  state_write(fd, d->state_buf, len);
		if (!d->state_failed)
			info("vhost-user: device state sent: %zu bytes", len);
	} else {
		n = state_read(fd, d->state_buf, d->state_cap);
		d->state_failed = n < 0;
		if (n >= 0) {
			info("vhost-user: device state received: %zd bytes",
			     n);
			if (d->state_ops)
				d->state_ops->load(c, d->state_buf, (size_t)n);
		}
	}
	close(fd);
}

int vu_msg_handle(struct ctx *c, struct vu_msg *m)
{
	struct vu_dev *d = c->link.vu;
	uint32_t req = m->request;
	unsigned int i;
	int rc;

	d->msgs++;
	if ((m->flags & VU_FLAG_VERSION_MASK) != VU_VERSION ||
	    (m->flags & VU_FLAG_REPLY) || m->size > VU_PAYLOAD_MAX)
		rc = VU_R_PROTO;
	else
		rc = msg_dispatch(c, m);
	for (i = 0; i < m->nfds; i++)
		close_fd(&m->fds[i]);
	m->nfds = 0;
	debug("vhost-user: %s (%u bytes): %d", vu_request_name(req), m->size,
	      rc);
	if (rc == VU_R_PROTO) {
		warn("vhost-user: protocol error in %s, closing",
		     vu_request_name(req));
		return -1;
	}
	m->request = req;
	if (rc == VU_R_REPLY)
		rc = send_reply(d, m);
	else if ((m->flags & VU_FLAG_NEED_REPLY) &&
		 (d->protocol_features & VU_PF_REPLY_ACK)) {
		reply_u64(m, rc == VU_R_FAIL);
		rc = send_reply(d, m);
	} else {
		rc = 0;
	}
	if (d->xfer_fd >= 0)		/* after the reply: see there */
		state_transfer(c);
	return rc;
}

/* --- reading messages ---------------------------------------------- */

/* collect_fds() - move the fds of cmsg into m; false if there are too
 * many (all of them are closed then). */
static bool collect_fds(struct msghdr *mh, struct vu_msg *m)
{
	struct cmsghdr *cm;
	bool ok = !(mh->msg_flags & MSG_CTRUNC);

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t k, n;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < n; k++) {
			memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(fd));
			if (m->nfds < VU_FDS_MAX && ok)
				m->fds[m->nfds++] = fd;
			else {
				close(fd);
				ok = false;
			}
		}
	}
	return ok;
}

/* read_some() - read into the message being received: the header, then
 * its payload. Returns 1 when the message is complete, 2 after reading
 * part of it, 0 when the socket is empty, -1 on EOF or a protocol
 * error. */
static int read_some(struct vu_dev *d)
{
	union {
		char buf[CMSG_SPACE(VU_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct vu_msg *m = &d->in;
	bool in_hdr = d->in_fill < VU_HDR_SIZE;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	ssize_t n;

	if (in_hdr) {		/* request, flags, size: the first 12 bytes */
		iov.iov_base = d->in_hdr + d->in_fill;
		iov.iov_len = VU_HDR_SIZE - d->in_fill;
	} else {
		iov.iov_base = m->p.raw + (d->in_fill - VU_HDR_SIZE);
		iov.iov_len = VU_HDR_SIZE + m->size - d->in_fill;
	}
	do {
		n = recvmsg(d->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0 || !collect_fds(&mh, m))
		return -1;
	d->in_fill += (size_t)n;
	if (d->in_fill < VU_HDR_SIZE)
		return 2;
	if (in_hdr) {
		memcpy(&m->request, d->in_hdr, 4);
		memcpy(&m->flags, d->in_hdr + 4, 4);
		memcpy(&m->size, d->in_hdr + 8, 4);
	}
	if (m->size > VU_PAYLOAD_MAX) {
		warn("vhost-user: message of %u bytes", m->size);
		return -1;
	}
	return d->in_fill == VU_HDR_SIZE + (size_t)m->size ? 1 : 2;
}

/* drop_pending_fds() - close fds of a message that will not be served. */
static void drop_pending_fds(struct vu_dev *d)
{
	unsigned int k;

	for (k = 0; k < d->in.nfds; k++)
		close_fd(&d->in.fds[k]);
	d->in.nfds = 0;
}

void vu_ctrl_handler(struct ctx *c, uint32_t events)
{
	struct vu_dev *d = c->link.vu;
	int i, rc = 0;

	(void)events;		/* EOF shows as a read of 0 bytes */
	for (i = 0; i < VU_MSGS_PER_EVENT && c->link.up; i++) {
		rc = read_some(d);
		if (rc == 2)
			continue;
		if (rc <= 0)
			break;
		d->in_fill = 0;
		rc = vu_msg_handle(c, &d->in);
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		drop_pending_fds(d);
		tap_link_down(c);
	}
}

void vu_attach(struct ctx *c, int fd)
{
	union eref ref = { .type = EREF_VU };
	struct vu_dev *d = c->link.vu;

	d->fd = fd;
	d->in_fill = 0;
	d->in.nfds = 0;
	if (ep_add(c, fd, EPOLLIN | EPOLLRDHUP, ref))
		die("cannot use the vhost-user socket: %s", strerror(errno));
	tap_attach(c, &link_vu_ops, fd);
}
