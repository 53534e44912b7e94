/* drain.c - drain before exit.
 *
 * Theory of operation
 *
 * A reason to exit (the command exited, the joined namespace's process
 * exited or its file was removed, SIGTERM or SIGINT) does not end the
 * loop at once: the guest's kernel still holds data of sockets whose
 * close() returned (an upload's tail, the FIN), and those bytes were
 * promised to the application. drain_begin() instead closes every
 * forwarding listener (no new host-initiated flows), makes tcp.c refuse
 * new connections from the guest (RST, DROP_TCP_DRAINING) and lets the
 * loop serve the open flows. The namespace lives on meanwhile: ferry
 * holds its tap and its namespace file.
 *
 * drain_step() runs after each loop iteration's events and quits once no
 * TCP connection holds the exit (tcp_drain_busy(): each one's guest
 * bytes written to the host socket and the guest's FIN passed on and
 * acknowledged, each host byte delivered and acknowledged by the guest,
 * or the connection reset and gone; a spliced connection until it is
 * closed) or when --linger seconds have passed: then every connection
 * still open is reset both ways and logged with its 4-tuple
 * (tcp_drain_end()). UDP flows never hold the exit: ferry sends a guest
 * datagram at the end of the input batch it came in, so none is queued
 * toward the host when the check runs. --linger 0 quits at once. In VM
 * mode with no guest connected nothing can drain (no frame can reach the
 * guest or come from it): the open connections are reset at once, so a
 * VM manager's SIGTERM after its guest left is not held for --linger.
 * A second SIGTERM or SIGINT quits at once (loop.c).
 */
#include "drain.h"
#include "ferry.h"
#include "log.h"
#include "tcp.h"
#include "tcp_fwd.h"
#include "udp.h"

/* drain_now_ms() - the loop's clock (c->now) in milliseconds. */
static int64_t drain_now_ms(const struct ctx *c)
{
	return (int64_t)c->now.tv_sec * 1000 + c->now.tv_nsec / 1000000;
}

void drain_begin(struct ctx *c, const char *why)
{
	if (c->draining || c->quit)
		return;
	if (!c->conf.linger_s) {
		info("%s: quitting", why);
		c->quit = true;
		return;
	}
	info("%s: draining open flows (at most %u s)", why, c->conf.linger_s);
	c->draining = true;
	c->drain_due_ms = drain_now_ms(c) + (int64_t)c->conf.linger_s * 1000;
	tcp_fwd_stop(c);
	if (c->udp.ready)
		udp_fwd_stop(c);
}

void drain_step(struct ctx *c)
{
	int64_t now;

	if (!c->draining || c->quit)
		return;
	now = drain_now_ms(c);
	if (!tcp_drain_busy(c)) {
		info("drained: every flow finished");
	} else if (c->conf.mode == MODE_VM && !c->link.up) {
		info("no guest connected: the open flows cannot drain");
	} else if (now >= c->drain_due_ms) {
		warn("linger deadline (%u s): resetting the open flows",
		     c->conf.linger_s);
	} else {
		timer_request(c, c->drain_due_ms - now);
		return;
	}
	tcp_drain_end(c);
	c->quit = true;
}
