/* test_tcp_tw.c - closed TCP connections (tcp_tw.c): a late FIN or data
 * segment of a cleanly closed connection gets the connection's ACK again,
 * a late pure ACK is dropped with a reason, an RST is ignored, a SYN opens
 * a new connection with an ISN beyond the old one; expiry, the FIN's
 * restart, a full table and sequence numbers at the wrap. The test guest
 * is tcp_harness.c's. */
#include <arpa/inet.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "ferry.h"
#include "pkt.h"
#include "tcp_conn.h"
#include "unit.h"
#include "util.h"
#include "tcp_harness.h"

/* closed_host_first() - a connection closed by the host first (ferry's
 * FIN, the guest's ACK, then the guest's FIN and ferry's ACK: the flow is
 * gone). Returns the host socket, -1 on failure; ferry's last ACK in
 * *last. g->seq ends after the guest's FIN. */
static int closed_host_first(struct tguest *g, struct pkt *last)
{
	struct pkt p;
	uint32_t isn;
	int a = tconn_open(g, false, &isn);

	if (a < 0)
		return -1;
	shutdown(a, SHUT_WR);
	pump(g->c, 2000, 1);
	if (!seg_at(g->c, 0, &p) || !(p.tcp.flags & TCP_F_FIN) ||
	    p.tcp.seq != isn + 1)
		return -1;
	g->ack = isn + 2;
	guest_send(g, TCP_F_ACK, NULL, 0, NULL, 0);
	test_tx_reset(g->c);
	guest_send(g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	if (test_tx_n(g->c) != 1 || !seg_at(g->c, 0, last) ||
	    last->tcp.flags != TCP_F_ACK || last->tcp.ack != g->seq ||
	    g->c->flows.count[FLOW_TCP])
		return -1;
	test_tx_reset(g->c);
	return a;
}

/* fin_again() - the guest's FIN once more (its ACK from ferry lost):
 * true when ferry answers it with exactly the ACK it sent before. */
static bool fin_again(struct tguest *g, const struct pkt *last)
{
	struct pkt p;
	bool ok;

	g->seq--;
	test_tx_reset(g->c);
	guest_send(g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	ok = test_tx_n(g->c) == 1 && seg_at(g->c, 0, &p) &&
	     p.tcp.flags == TCP_F_ACK && p.tcp.seq == last->tcp.seq &&
	     p.tcp.ack == last->tcp.ack && p.tcp.window == last->tcp.window &&
	     !p.payload_len;
	test_tx_reset(g->c);
	return ok;
}

static void fin_reacked(bool v6)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .v6 = v6, .sport = 40100 };
	struct pkt last;
	int a = closed_host_first(&g, &last);

	CHECK(a >= 0);
	CHECK_EQ(c->tcp.tw_st.added, 1);
	CHECK(fin_again(&g, &last));
	CHECK(fin_again(&g, &last));		/* and again */
	CHECK_EQ(c->tcp.st.rst_to_guest, 0);
	CHECK_EQ(c->tcp.tw_st.acked, 2);
	CHECK_EQ(c->stats.drops[DROP_NO_FLOW], 0);
	tconn_close(&g, a);
}

/* The host closed first, the guest's FIN came, ferry's ACK of it was
 * lost: the retransmitted FIN gets the same ACK, not an RST. */
TEST(tcp_tw_fin_reacked_v4)
{
	fin_reacked(false);
}

TEST(tcp_tw_fin_reacked_v6)
{
	fin_reacked(true);
}

/* The guest closed first (after data), then the host: late duplicates
 * of the guest's data get ferry's last ACK again (its ACK may have been
 * lost); late pure ACKs, old or current, and segments without the ACK
 * bit are dropped with DROP_TCP_TIME_WAIT and no answer. */
TEST(tcp_tw_guest_first_late_segments)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40101 };
	uint32_t isn, fin_seq;
	uint8_t buf[16];
	struct pkt p;
	int a;

	a = tconn_open(&g, false, &isn);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "hello", 5, NULL, 0);
	fin_seq = g.seq;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 5);
	CHECK_EQ(recv(a, buf, sizeof(buf), 0), 0);
	close(a);
	test_tx_reset(c);
	pump(c, 2000, 1);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_FIN);
	CHECK_EQ(p.tcp.seq, isn + 1);
	CHECK_EQ(p.tcp.ack, fin_seq + 1);
	g.ack = isn + 2;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.tw_st.added, 1);

	/* a late duplicate of the data */
	test_tx_reset(c);
	g.seq = 1001;
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "hello", 5, NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK);
	CHECK_EQ(p.tcp.seq, isn + 2);
	CHECK_EQ(p.tcp.ack, fin_seq + 1);
	CHECK_EQ(c->tcp.tw_st.acked, 1);

	/* pure ACKs, the current one and an old one: nothing */
	test_tx_reset(c);
	g.seq = fin_seq + 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	g.seq = 1001;
	g.ack = isn + 1;
	guest_send(&g, TCP_F_ACK, NULL, 0, NULL, 0);
	/* data without the ACK bit: nothing either */
	guest_send(&g, TCP_F_PSH, "x", 1, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->stats.drops[DROP_TCP_TIME_WAIT], 3);
	CHECK_EQ(c->tcp.tw_st.dropped, 3);
	CHECK_EQ(c->stats.drops[DROP_NO_FLOW], 0);
	CHECK_EQ(c->tcp.st.rst_to_guest, 0);
	tconn_close(&g, -1);
}

/* A new SYN on the 4-tuple of a closed connection opens a new one at
 * once; its ISN toward the guest lies TCP_TW_ISN_GAP beyond the old
 * snd_nxt, although the ISN secret is made to put the RFC 6528 ISN below
 * it. */
TEST(tcp_tw_syn_reopens_above_old_snd_nxt)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40102 };
	struct flow_key k;
	struct flow fake;
	struct pkt last;
	uint32_t isn, old_nxt, tries = 0;
	int a = closed_host_first(&g, &last), b;

	CHECK(a >= 0);
	old_nxt = last.tcp.seq;
	/* the ISN the new SYN would get without the table: behind */
	memset(&fake, 0, sizeof(fake));
	{
		union inany ga, gb;

		inany_from4(&ga, (struct in_addr){ inet_addr("198.51.100.2") });
		inany_from4(&gb, (struct in_addr){ inet_addr("198.51.100.1") });
		flow_key_make(&k, IPPROTO_TCP, &ga, g.sport, &gb, g.dport);
	}
	fake.f.key[FLOW_SIDE_GUEST] = k;
	do {
		c->tcp.isn_k0++;
		isn = tcp_isn(c, &fake);
	} while (!seq_lt(seq_make(isn), seq_make(old_nxt)) && ++tries < 1000);
	CHECK(seq_lt(seq_make(isn), seq_make(old_nxt)));

	b = handshake(&g, g.ls, &isn);
	CHECK(b >= 0);
	CHECK_EQ(isn, old_nxt + TCP_TW_ISN_GAP);
	CHECK_EQ(c->tcp.tw_st.reopened, 1);
	CHECK_EQ(c->flows.count[FLOW_TCP], 1);
	/* the new connection carries data */
	guest_send(&g, TCP_F_ACK | TCP_F_PSH, "new", 3, NULL, 0);
	{
		char buf[8];

		CHECK_EQ(recv(b, buf, sizeof(buf), 0), 3);
	}
	close(b);
	tconn_close(&g, a);
}

/* The guest's RST is ignored, without an answer (RFC 1337): the entry
 * stays, and a late segment of the guest's sent before that RST (the
 * fault injector reorders them) gets the closed connection's answer,
 * not an RST of a connection nobody knows. A connection ended by an RST
 * is not remembered. */
TEST(tcp_tw_rst_ignored)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40103 };
	struct pkt last, p;
	int a = closed_host_first(&g, &last);

	CHECK(a >= 0);
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);
	CHECK_EQ(test_tx_n(c), 0);
	CHECK_EQ(c->tcp.tw_st.reset, 1);
	CHECK_EQ(c->tcp.tw.live, 1);
	CHECK_EQ(c->stats.drops[DROP_TCP_TIME_WAIT], 1);
	g.seq--;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_ACK);
	CHECK_EQ(p.tcp.seq, last.tcp.seq);
	CHECK_EQ(p.tcp.ack, last.tcp.ack);
	CHECK_EQ(c->stats.drops[DROP_NO_FLOW], 0);
	close(a);

	/* reset by the guest: nothing remembered */
	test_tx_reset(c);
	g.sport++;
	a = handshake(&g, g.ls, NULL);
	CHECK(a >= 0);
	guest_send(&g, TCP_F_RST, NULL, 0, NULL, 0);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	CHECK_EQ(c->tcp.tw_st.added, 1);
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK(p.tcp.flags & TCP_F_RST);
	tconn_close(&g, a);
}

/* A SYN-ACK on a remembered 4-tuple is no closed connection's business:
 * an RST, as without the entry, which stays. */
TEST(tcp_tw_synack_gets_rst)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40104 };
	struct pkt last, p;
	int a = closed_host_first(&g, &last);

	CHECK(a >= 0);
	guest_send(&g, TCP_F_SYN | TCP_F_ACK, NULL, 0, NULL, 0);
	CHECK_EQ(test_tx_n(c), 1);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_RST);
	CHECK_EQ(c->tcp.tw.live, 1);
	tconn_close(&g, a);
}

/* An entry lives TCP_TW_MS: a FIN just before gets the ACK and starts
 * the time again, so one TCP_TW_MS - 1 later is still answered; after
 * TCP_TW_MS of silence the FIN gets an RST (expired, counted). */
TEST(tcp_tw_expiry_and_fin_restart)
{
	struct ctx *c = tcp_test_ctx();
	struct tguest g = { .c = c, .sport = 40105 };
	struct pkt last, p;
	int a = closed_host_first(&g, &last);

	CHECK(a >= 0);
	test_advance(c, TCP_TW_MS - 1);
	CHECK(fin_again(&g, &last));
	test_advance(c, TCP_TW_MS - 1);
	CHECK(fin_again(&g, &last));
	test_advance(c, TCP_TW_MS);
	g.seq--;
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	CHECK(seg_at(c, 0, &p));
	CHECK_EQ(p.tcp.flags, TCP_F_RST);
	CHECK_EQ(c->tcp.tw_st.expired, 1);
	CHECK_EQ(c->tcp.tw.live, 0);
	tconn_close(&g, a);
}

/* tw_remember() - put a closed connection of guest port port into the
 * table directly (a flow made for it and freed): our snd_nxt snd, the
 * guest's FIN + 1 rcv, window field 0. */
static void tw_remember(struct ctx *c, uint16_t port, uint32_t snd,
			uint32_t rcv)
{
	struct flow *fl = flow_alloc(&c->flows, FLOW_TCP);
	struct tcp_conn *conn = FLOW_PRIV(fl, struct tcp_conn);
	union inany ga, gb;
	struct flow_key k;

	inany_from4(&ga, (struct in_addr){ inet_addr("198.51.100.2") });
	inany_from4(&gb, (struct in_addr){ inet_addr("198.51.100.1") });
	flow_key_make(&k, IPPROTO_TCP, &ga, port, &gb, 80);
	flow_hash_add(&c->flows, fl, FLOW_SIDE_GUEST, &k);
	conn->seq_to_guest = seq_make(snd);
	conn->seq_from_guest = seq_make(rcv);
	tcp_tw_add(c, fl);
	flow_free(&c->flows, fl);
}

/* fin_from() - the guest's FIN from port port at seq (ack ack): the
 * flags of ferry's answer, its seq and ack in *p; 0 if none. */
static uint8_t fin_from(struct ctx *c, uint16_t port, uint32_t seq,
			uint32_t ack, struct pkt *p)
{
	struct tguest g = { .c = c, .sport = port, .dport = 80,
			    .seq = seq, .ack = ack };

	test_tx_reset(c);
	guest_send(&g, TCP_F_ACK | TCP_F_FIN, NULL, 0, NULL, 0);
	if (test_tx_n(c) != 1 || !seg_at(c, 0, p))
		return 0;
	return p->tcp.flags;
}

/* A full table takes the oldest entry's slot (counted); every other
 * entry is still answered; a new close of a remembered 4-tuple replaces
 * its entry. */
TEST(tcp_tw_table_full_recycles_oldest)
{
	struct ctx *c = tcp_test_ctx();
	struct pkt p;
	uint32_t i;

	for (i = 0; i <= TCP_TW_MAX; i++)
		tw_remember(c, (uint16_t)(10000 + i), 5000 + i, 7000 + i);
	CHECK_EQ(c->tcp.tw_st.recycled, 1);
	CHECK_EQ(c->tcp.tw.live, TCP_TW_MAX);
	CHECK_EQ(c->tcp.tw.n, TCP_TW_MAX);
	CHECK_EQ(fin_from(c, 10000, 6999, 5000, &p), TCP_F_RST);
	for (i = 1; i <= TCP_TW_MAX; i += 997) {
		CHECK_EQ(fin_from(c, (uint16_t)(10000 + i), 6999 + i, 5000 + i,
				  &p), TCP_F_ACK);
		CHECK_EQ(p.tcp.seq, 5000 + i);
		CHECK_EQ(p.tcp.ack, 7000 + i);
	}
	/* the same 4-tuple closed again: the newer numbers answer */
	tw_remember(c, 10001, 9000, 9500);
	CHECK_EQ(fin_from(c, 10001, 9499, 9000, &p), TCP_F_ACK);
	CHECK_EQ(p.tcp.seq, 9000);
	CHECK_EQ(p.tcp.ack, 9500);
	CHECK(c->tcp.tw.live <= TCP_TW_MAX);
	CHECK_EQ(c->flows.count[FLOW_TCP], 0);
	tcp_test_free(c);
}

/* Sequence numbers at the 2^32 wrap: the answer carries them as they
 * were, and a new ISN on the 4-tuple is compared modulo 2^32. */
TEST(tcp_tw_seq_wrap)
{
	struct ctx *c = tcp_test_ctx();
	union inany ga, gb;
	struct flow_key k;
	struct pkt p;

	inany_from4(&ga, (struct in_addr){ inet_addr("198.51.100.2") });
	inany_from4(&gb, (struct in_addr){ inet_addr("198.51.100.1") });
	tw_remember(c, 20000, 0xfffffff6u, 0xffffffffu);
	CHECK_EQ(fin_from(c, 20000, 0xfffffffeu, 0xfffffff6u, &p), TCP_F_ACK);
	CHECK_EQ(p.tcp.seq, 0xfffffff6u);
	CHECK_EQ(p.tcp.ack, 0xffffffffu);
	flow_key_make(&k, IPPROTO_TCP, &ga, 20000, &gb, 80);
	/* 5 is beyond 0xfffffff6 by 15 only: moved past the gap */
	CHECK_EQ(tcp_tw_reopen(c, &k, 5), 0xfffffff6u + TCP_TW_ISN_GAP);
	CHECK_EQ(c->tcp.tw.live, 0);
	/* far enough beyond: kept */
	tw_remember(c, 20000, 0xfffffff6u, 0xffffffffu);
	CHECK_EQ(tcp_tw_reopen(c, &k, 0x00020000u), 0x00020000u);
	/* the floor itself past the wrap (0xffff0000 + 64 KiB = 0): an ISN
	 * just below 2^32 is behind it, one just past 0 beyond it */
	tw_remember(c, 20000, 0xffff0000u, 0xffffffffu);
	CHECK_EQ(tcp_tw_reopen(c, &k, 0xfffffff0u), 0);
	tw_remember(c, 20000, 0xffff0000u, 0xffffffffu);
	CHECK_EQ(tcp_tw_reopen(c, &k, 0x10), 0x10);
	/* no entry: any ISN is kept */
	CHECK_EQ(tcp_tw_reopen(c, &k, 3), 3);
	CHECK_EQ(c->tcp.tw_st.reopened, 4);
	tcp_test_free(c);
}
