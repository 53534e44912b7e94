/* tcp_harness.h - the test guest shared by the TCP unit tests
 * (test_tcp.c, test_tcp_conn.c): one side of a connection built as
 * frames and fed through tap_input(), real sockets on the host loopback
 * for the other, and an injected clock. Definitions in tcp_harness.c. */
#ifndef FERRY_TEST_TCP_HARNESS_H
#define FERRY_TEST_TCP_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ferry.h"
#include "pkt.h"

/* A test guest: its side of one connection. */
struct tguest {
	struct ctx *c;
	bool v6;
	uint16_t sport, dport;
	uint32_t seq, ack;	/* next seq we send, what we acknowledge */
	uint16_t wnd;		/* window field we send, 0: 65535 */
	bool wnd_raw;		/* ... or exactly wnd, 0 included */
	int ls;			/* the host's listener of tconn_open() */
};

/* guest_frame() - a frame from the guest at f: seq, flags, options,
 * payload; returns its length. */
size_t guest_frame(struct tguest *g, uint8_t *f, uint32_t seq,
		   uint8_t flags, const void *data, size_t len,
		   const uint8_t *opts, size_t optlen);

/* guest_send() - build that frame at the guest's next seq and feed it
 * through tap_input(). */
void guest_send(struct tguest *g, uint8_t flags, const void *data,
		size_t len, const uint8_t *opts, size_t optlen);

/* pump() - run the TCP part of the event loop for up to ms or until
 * at least want frames went to the guest. The loop's clock (c->now) runs
 * only inside pumps, from where the last left it (or advance() put it),
 * by at most ms: a test's own delays are not the loop's time. */
void pump(struct ctx *c, int ms, size_t want);

/* loop_dispatch() - the loop's work for n socket events ev (from
 * epoll_wait() on c->epfd): their handlers, then the TCP timer if it is
 * due at c->now. */
struct epoll_event;
void loop_dispatch(struct ctx *c, const struct epoll_event *ev, int n);

/* advance() - move the injected clock on by ms and run the TCP timers
 * that are due (the loop would). */
void advance(struct ctx *c, int ms);

/* seg_at() - parse the i-th frame to the guest (checksums verified). */
bool seg_at(struct ctx *c, size_t i, struct pkt *p);

/* listener() - a listening socket on the host loopback, its port in
 * *port. */
int listener(bool v6, uint16_t *port);

/* fwd_listener() - a forwarded port (-t) as tcp_fwd.c's listeners are,
 * made by hand on the host loopback (its port in *port, chosen by the
 * kernel) so that tests never collide on a fixed one: the loop's
 * dispatch (loop_dispatch()) hands its connections to
 * tcp_fwd_listen_handler(), which sends the guest a SYN to port target
 * (with c->conf.mode MODE_VM: in MODE_NS a loopback client is spliced).
 * Returns the listener, -1 on failure. */
int fwd_listener(struct ctx *c, bool v6, uint16_t *port, uint16_t target);

/* tcp_test_ctx()/tcp_test_free() - a context with TCP set up and the
 * test clock started, and its release. */
struct ctx *tcp_test_ctx(void);
void tcp_test_free(struct ctx *c);

/* handshake() - SYN from the guest, accept on the host, SYN-ACK back,
 * ACK from the guest. Returns the accepted socket, -1 on failure; ferry's
 * ISN in *isn unless isn is NULL. */
int handshake(struct tguest *g, int ls, uint32_t *isn);

/* handshake_sack() - handshake() with SACK-permitted in the guest's SYN;
 * the SYN-ACK must carry it too. */
int handshake_sack(struct tguest *g, int ls);

/* tconn_open() - the start most TCP tests share, for a guest g whose
 * context (g->c, from tcp_test_ctx()), family and source port are set: a
 * host listener of that family (g->ls, its port in g->dport) and a
 * connection to it through handshake(), or handshake_sack() if sack.
 * Returns the host's accepted socket, -1 if a step failed; ferry's ISN in
 * *isn unless isn is NULL (handshake() only). */
int tconn_open(struct tguest *g, bool sack, uint32_t *isn);

/* tconn_close() - the matching end: closes a (unless < 0) and g's
 * listener, and frees g->c. */
void tconn_close(struct tguest *g, int a);

/* fin_delivered() - poll (1 ms steps, 5 s deadline) until the FIN sent on
 * host socket a was taken in by its peer's kernel (a in FIN_WAIT2): under
 * load the loopback delivery may be left to ksoftirqd, after send() and
 * shutdown() have returned, and ferry would see the data and the FIN in
 * separate rounds. */
bool fin_delivered(int a);

/* recv_all() - what the host peer can read now (non-blocking). */
ssize_t recv_all(int a, uint8_t *buf, size_t size);

/* loop_timers() - the event loop's timer handling for ms of injected
 * time: tcp_timer() runs only when a timer was requested and is due
 * (loop.c timers_run() disarms first, so every module must re-request). */
void loop_timers(struct ctx *c, int ms);

/* guest_ack_wnd() - a pure ACK from the guest advertising wnd (unscaled
 * field value). */
void guest_ack_wnd(struct tguest *g, uint16_t wnd);

#endif
