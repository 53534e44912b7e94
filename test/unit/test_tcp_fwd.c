/* test_tcp_fwd.c - host-initiated connections through the guest link
 * (tcp_fwd.c, state TCP_CS_SYN_TO_GUEST: ferry's SYN-SENT toward the
 * guest): what the guest's answers to ferry's SYN do. A host client
 * connects to a forwarded port made by hand (fwd_listener(), VM mode),
 * ferry sends the test guest its SYN; the guest is tcp_harness.c's.
 */
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "unit.h"
#include "util.h"
#include "tcp_harness.h"

#define GPORT	8080		/* the guest's port the forwarded one goes to */

/* fwd_open() - a VM-mode context, a forwarded port, and a host client
 * connected to it: ferry's SYN to the guest g (its ports set from the
 * client's) is the only frame sent. Returns the client socket, -1 on
 * failure; ferry's ISN in *iss, the listener in *ls. */
static int fwd_open(struct tguest *g, uint32_t *iss, int *ls)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(a);
	uint16_t port;
	struct pkt p;
	int s;

	g->c = tcp_test_ctx();
	g->c->conf.mode = MODE_VM;	/* a loopback client is not spliced */
	g->v6 = false;
	g->sport = GPORT;
	*ls = fwd_listener(g->c, false, &port, GPORT);
	s = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_port = htons(port);
	if (*ls < 0 || s < 0 || connect(s, (struct sockaddr *)&a, sl) ||
	    getsockname(s, (struct sockaddr *)&a, &sl))
		return -1;
	g->dport = ntohs(a.sin_port);
	pump(g->c, 2000, 1);
	if (test_tx_n(g->c) != 1 || !seg_at(g->c, 0, &p) ||
	    p.tcp.flags != TCP_F_SYN || p.tcp.dport != GPORT)
		return -1;
	*iss = p.tcp.seq;
	g->seq = 5000;
	test_tx_reset(g->c);
	return s;
}

/* syn_sent() - is the connection still in SYN-SENT? */
static bool syn_sent(struct ctx *c)
{
	struct flow *fl = flow_first(&c->flows, FLOW_TCP);

	return fl && FLOW_PRIV(fl, struct tcp_conn)->state ==
		     TCP_CS_SYN_TO_GUEST;
}

/* A SYN-ACK (or an ACK) acknowledging anything but ferry's SYN gets an
 * RST <SEQ=SEG.ACK> and changes nothing (RFC 9293 3.10.7.3); the right
 * one then establishes. Before, both were dropped without a word: the
 * guest, holding a half-open connection of an earlier life of the
 * 4-tuple, kept answering with its stale ACK until ferry gave up. */
TEST(tcp_fwd_synack_bad_ack_rst)
{
	static const uint32_t bad[] = { 0, (uint32_t)-1, 2, 100000 };
	struct tguest g = { 0 };
	uint32_t iss;
	struct pkt p;
	int ls, s = fwd_open(&g, &iss, &ls);
	unsigned int i;

	CHECK(s >= 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		g.ack = iss + bad[i];		/* ISS, ISS - 1, beyond */
		guest_send(&g, i & 1 ? TCP_F_ACK : TCP_F_SYN | TCP_F_ACK, NULL,
			   0, NULL, 0);
		g.seq = 5000;
		CHECK_EQ(test_tx_n(g.c), 1);
		CHECK(seg_at(g.c, 0, &p));
		CHECK_EQ(p.tcp.flags, TCP_F_RST);
		CHECK_EQ(p.tcp.seq, iss + bad[i]);
		CHECK(syn_sent(g.c));
		test_tx_reset(g.c);
	}
	g.ack = iss + 1;
	guest_send(&g, TCP_F_SYN | TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK(test_tx_n(g.c) >= 1);
	CHECK(seg_at(g.c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK);
	CHECK_EQ(p.tcp.ack, 5001);
	CHECK(g.c->flows.count[FLOW_TCP] == 1 && !syn_sent(g.c));
	close(s);
	close(ls);
	tcp_test_free(g.c);
}

/* In SYN-SENT an RST counts only with the ACK of ferry's SYN (RFC 9293
 * 3.10.7.3): without ACK, or with another, it is dropped; with it the
 * host client is reset. Before, any RST ended the connection. */
TEST(tcp_fwd_rst_needs_ack_of_syn)
{
	struct tguest g = { 0 };
	struct pollfd pfd;
	uint32_t iss;
	char b;
	int ls, s = fwd_open(&g, &iss, &ls);

	CHECK(s >= 0);
	g.seq = 5001;
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);
	CHECK(syn_sent(g.c));
	g.ack = iss + 2;
	guest_send(&g, TCP_F_RST | TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK(syn_sent(g.c));
	g.ack = iss;
	guest_send(&g, TCP_F_RST | TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK(syn_sent(g.c));
	CHECK_EQ(test_tx_n(g.c), 0);		/* no RST for an RST */
	g.ack = iss + 1;
	guest_send(&g, TCP_F_RST | TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(g.c->flows.count[FLOW_TCP], 0);
	pfd.fd = s;
	pfd.events = POLLIN;
	CHECK_EQ(poll(&pfd, 1, 5000), 1);
	CHECK(recv(s, &b, 1, MSG_DONTWAIT) < 0 && errno == ECONNRESET);
	close(s);
	close(ls);
	tcp_test_free(g.c);
}
