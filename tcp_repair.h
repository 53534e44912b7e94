/* tcp_repair.h - a TCP socket's state read and written in repair mode
 * (tcp_repair.c), for live migration (migrate.c). No ctx: the sockets
 * are switched into and out of repair mode by the helper (repair.c).
 */
#ifndef FERRY_TCP_REPAIR_H
#define FERRY_TCP_REPAIR_H

#include <stddef.h>
#include <stdint.h>

struct mig_tcp_sock;

/* tcp_repair_dump() - read socket s (in repair mode) into *d, the bytes
 * of its send queue, then those of its receive queue from rskip bytes on
 * (the ones before are what ferry may drop), into buf (cap bytes): the
 * send queue at buf, the receive queue right after it (d->sndq, d->rcvq
 * say how long). 0, or -errno with *what naming the call that failed. */
int tcp_repair_dump(int s, uint32_t rskip, struct mig_tcp_sock *d,
		    uint8_t *buf, size_t cap, const char **what);

/* tcp_repair_thaw() - the filter that froze socket s (the helper's,
 * REPAIR_FREEZE) removed: it takes segments again. 0 or -errno. */
int tcp_repair_thaw(int s);

/* tcp_repair_bind() - a new socket s of d's family, in repair mode:
 * bound to d's local address and port. 0, or -errno with *what set. */
int tcp_repair_bind(int s, const struct mig_tcp_sock *d, const char **what);

/* tcp_repair_connect() - then: given d's sequence numbers, "connected"
 * to d's peer (no segment is sent), its options and timestamp set.
 * 0, or -errno with *what set: -EADDRNOTAVAIL while another socket has
 * the same 4-tuple (the source's, on this host): it may be called again. */
int tcp_repair_connect(int s, const struct mig_tcp_sock *d,
		       const char **what);

/* tcp_repair_queue() - n bytes more of queue q (MIG_Q_*) into s, after
 * tcp_repair_connect(). 0, or -errno with *what set. */
int tcp_repair_queue(int s, unsigned int q, const uint8_t *p, size_t n,
		     const char **what);

/* tcp_repair_window() - the windows, once the queues are in. 0, or
 * -errno with *what set. */
int tcp_repair_window(int s, const struct mig_tcp_sock *d,
		      const char **what);

#endif /* FERRY_TCP_REPAIR_H */
