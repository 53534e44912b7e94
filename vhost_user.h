/* vhost_user.h - the vhost-user back-end: control protocol (vhost_user.c)
 * and the device state the guest link backend (tap_vu.c) moves frames
 * through. One device with one queue pair: queue 0 receives (frames to
 * the guest), queue 1 transmits (frames from the guest).
 */
#ifndef FERRY_VHOST_USER_H
#define FERRY_VHOST_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "virtq.h"
#include "vu_log.h"

struct ctx;

#define VU_RXQ		0	/* the guest receives: we fill it */
#define VU_TXQ		1	/* the guest transmits: we drain it */
#define VU_QUEUES	2

#define VU_HDR_SIZE	12	/* request, flags, size */
#define VU_PAYLOAD_MAX	4096	/* larger: protocol error */
#define VU_FDS_MAX	8	/* fds with one message */

/* Requests (vhost-user spec, front-end to back-end) */
enum vu_request {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_SET_DEVICE_STATE_FD = 42,
	VU_CHECK_DEVICE_STATE = 43,
	VU_REQUEST_MAX
};

/* Header flags */
#define VU_VERSION		1u
#define VU_FLAG_VERSION_MASK	3u
#define VU_FLAG_REPLY		(1u << 2)
#define VU_FLAG_NEED_REPLY	(1u << 3)

/* Device features (virtio-net and transport bits) */
#define VU_F_CSUM		(1ULL << 0)	/* guest sends partial csum */
#define VU_F_GUEST_CSUM		(1ULL << 1)	/* we may send partial csum */
#define VU_F_GUEST_TSO4		(1ULL << 7)	/* we may send TSO frames */
#define VU_F_GUEST_TSO6		(1ULL << 8)
#define VU_F_HOST_TSO4		(1ULL << 11)	/* guest may send TSO */
#define VU_F_HOST_TSO6		(1ULL << 12)
#define VU_F_MRG_RXBUF		(1ULL << 15)
#define VU_F_LOG_ALL		(1ULL << 26)	/* dirty logging on */
#define VU_F_PROTOCOL_FEATURES	(1ULL << 30)
#define VU_F_VERSION_1		(1ULL << 32)

/* Protocol features */
#define VU_PF_MQ		(1ULL << 0)
#define VU_PF_LOG_SHMFD		(1ULL << 1)	/* SET_LOG_BASE with an fd */
#define VU_PF_REPLY_ACK		(1ULL << 3)
#define VU_PF_DEVICE_STATE	(1ULL << 19)	/* SET_DEVICE_STATE_FD */

#define VU_FEATURES	(VU_F_CSUM | VU_F_GUEST_CSUM | VU_F_GUEST_TSO4 | \
			 VU_F_GUEST_TSO6 | VU_F_HOST_TSO4 | VU_F_HOST_TSO6 | \
			 VU_F_MRG_RXBUF | VU_F_PROTOCOL_FEATURES |	   \
			 VU_F_VERSION_1 | VU_F_LOG_ALL)
#define VU_PROTOCOL_FEATURES	(VU_PF_MQ | VU_PF_LOG_SHMFD | VU_PF_REPLY_ACK | \
				 VU_PF_DEVICE_STATE)

/* SET_DEVICE_STATE_FD: direction, phase; its reply's no-fd bit */
#define VU_STATE_SAVE		0u	/* source: back-end to front-end */
#define VU_STATE_LOAD		1u	/* destination: front-end to back-end */
#define VU_STATE_PHASE_STOPPED	0u
#define VU_STATE_NO_FD		(1ULL << 8)
#define VU_STATE_MS		10000	/* a transfer's time limit */

#define VU_VRING_F_LOG		1u	/* SET_VRING_ADDR: log the used ring */

/* The device state of a live migration: filled on the source, applied on
 * the destination by the layer above (migrate.c, set by vm.c). save()
 * writes at most cap bytes at buf and returns their number (0: failed);
 * load() takes the len bytes received (it checks them); saved(): the
 * front-end found a saved state good (CHECK_DEVICE_STATE); end(): the
 * front-end left. */
struct vu_state_ops {
	size_t (*save)(struct ctx *c, uint8_t *buf, size_t cap);
	void (*load)(struct ctx *c, const uint8_t *buf, size_t len);
	void (*saved)(struct ctx *c);
	void (*end)(struct ctx *c);
};

/* One message: header fields, payload, the fds that came with it. */
struct vu_msg {
	uint32_t request, flags, size;
	union {
		uint64_t u64;
		struct { uint32_t index, num; } state;
		struct {
			uint32_t index, flags;
			uint64_t desc, used, avail, log;
		} addr;
		struct {
			uint64_t size, offset;
		} log;
		struct {
			uint32_t nregions, padding;
			struct {
				uint64_t gpa, size, uva, mmap_offset;
			} r[VU_REGIONS_MAX];
		} mem;
		uint8_t raw[VU_PAYLOAD_MAX];
	} p;
	int fds[VU_FDS_MAX];
	unsigned int nfds;
};

struct vu_dev {
	int fd;				/* control socket, -1: none */
	uint64_t features;		/* acknowledged by SET_FEATURES */
	uint64_t protocol_features;
	struct vu_mem mem;
	struct virtq vq[VU_QUEUES];
	struct vu_log log;		/* dirty log (SET_LOG_BASE) */
	struct vu_log *data_log;	/* &log while logging (LOG_ALL), or
					 * NULL: where frame data is marked */
	/* device state (live migration) */
	const struct vu_state_ops *state_ops;	/* NULL: nothing to move */
	uint8_t *state_buf;		/* VU_STATE_MAX bytes (start-up) */
	size_t state_cap;
	int xfer_fd;			/* SET_DEVICE_STATE_FD's, until the
					 * transfer after the reply; -1 */
	uint32_t xfer_dir;		/* VU_STATE_SAVE or VU_STATE_LOAD */
	bool state_failed;		/* the last transfer failed (CHECK) */
	/* message being received */
	struct vu_msg in;
	uint8_t in_hdr[VU_HDR_SIZE];	/* its header as read */
	size_t in_fill;			/* header + payload bytes so far */
	/* statistics */
	uint64_t msgs, notifies;
	uint64_t kicks;			/* transmit kicks from the guest */
};

/* vu_init() - allocate the device state (start-up, vm mode with
 * --vhost-user). */
void vu_init(struct ctx *c);

/* vu_state_ops_set() - what moves in a live migration (start-up, after
 * vu_init(); none before: an empty state is sent, one received dropped). */
void vu_state_ops_set(struct ctx *c, const struct vu_state_ops *ops);

/* vu_attach() - serve a front-end on the connected socket fd: register it
 * with the loop and attach the guest link (tap_vu.c's backend). */
void vu_attach(struct ctx *c, int fd);

/* vu_detach() - the front-end went away: stop the rings, close their
 * eventfds, unmap guest memory. The caller closes the socket. */
void vu_detach(struct ctx *c);

/* vu_ctrl_handler() - epoll event on the control socket: read and serve
 * messages (bounded per call); a protocol error or EOF closes the link. */
void vu_ctrl_handler(struct ctx *c, uint32_t events);

/* vu_msg_handle() - serve one complete message m (payload of m->size
 * bytes, m->nfds fds, which it owns: consumed or closed). Writes the
 * reply, if any, to the control socket. Returns 0, or -1 on a protocol
 * error (the connection must be closed). */
int vu_msg_handle(struct ctx *c, struct vu_msg *m);

/* vu_request_name() - the request's name for logs ("?" if unknown). */
const char *vu_request_name(uint32_t request);

#endif /* FERRY_VHOST_USER_H */
