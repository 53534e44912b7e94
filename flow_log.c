/* flow_log.c - per-flow debug lines: a flow's open, a TCP flow's state
 * changes, and its close or reset with the reason.
 *
 * Theory of operation
 *
 * A maintainer triaging a report needs each flow's story: when it was
 * opened, between which addresses and by whom, and how it ended, with
 * what moved. The lines are made at two places every flow passes, so no
 * protocol path carries logging of its own:
 *
 *   open:  the first guest-side key a flow gets (flow_hash_add()),
 *          "flow 12: tcp open 198.51.100.2:41000 -> 203.0.113.1:80 by the
 *          guest" (or "by a host client: -t forward", FLOW_TCP flows with
 *          TCP_C_FWD)
 *   state: TCP in tcp_conn_set(), the one setter of a connection's state
 *          and closing flags after its set-up: old and new state and what
 *          caused the step, "flow 12: tcp established -> close-wait: the
 *          guest's FIN"; a step on the host's side only (host EOF, the
 *          guest's FIN passed on) keeps the name: "flow 12: tcp
 *          established: host EOF". A rewind that sends our FIN again is
 *          no new step (tcp_conn.closing keeps the bits ever set).
 *   close: TCP in tcp_conn_close(), while the host socket still exists:
 *          its final state, "closed" or "reset" with the cause (enum
 *          tcp_end: the guest's RST, which timer, a socket error, the
 *          drain deadline, ...), the host socket's two ends, the bytes
 *          each way (TCP_INFO) and the socket error that ended it; any
 *          other flow in flow_free(): its age.
 *
 * With --trace, tap.c adds a line per TCP segment from the guest
 * (flow_log_segment()). All of them are debug or trace lines, written
 * only at that level, and pass the log's token bucket (log_flow_ok()),
 * so a flood of flows cannot fill a disk: what it holds back is counted
 * and said.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/tcp.h>
#include <sys/socket.h>

#include "flow.h"
#include "flow_log.h"
#include "log.h"
#include "pkt.h"
#include "tcp_conn.h"

/* seccomp(all): getsockopt getsockname getpeername
 *   (the close line: the host socket's ends and TCP_INFO) */

static const char *const type_names[FLOW_TYPES] = {
	[FLOW_PING] = "icmp", [FLOW_TCP] = "tcp", [FLOW_TCP_SPLICE] = "tcp splice",
	[FLOW_UDP] = "udp",
};

static const char *const state_names[] = {
	[TCP_CS_CONNECTING] = "connecting", [TCP_CS_SYNACK_SENT] = "syn-rcvd",
	[TCP_CS_SYN_TO_GUEST] = "syn-sent", [TCP_CS_ESTABLISHED] = "established",
};

static const char *const event_texts[] = {
#define TCP_EV_TEXT(name, text) text,
	TCP_EVENTS(TCP_EV_TEXT)
#undef TCP_EV_TEXT
};
_Static_assert(sizeof(event_texts) / sizeof(event_texts[0]) == TCP_EV_MAX,
	       "one text per event");

static const char *const end_texts[] = {
#define TCP_END_TEXT(name, text) text,
	TCP_ENDS(TCP_END_TEXT)
#undef TCP_END_TEXT
};
_Static_assert(sizeof(end_texts) / sizeof(end_texts[0]) == TCP_END_MAX,
	       "one text per end");

const char *tcp_state_name(unsigned int state, unsigned int closing)
{
	bool gfin = closing & TCP_C_GUEST_FIN, sent = closing & TCP_C_FIN_SENT;
	bool acked = closing & TCP_C_FIN_ACKED;

	if (state != TCP_CS_ESTABLISHED || !(gfin || sent || acked))
		return state < sizeof(state_names) / sizeof(state_names[0]) &&
		       state_names[state] ? state_names[state] : "?";
	/* The side facing the guest, as RFC 9293 names it: the guest's FIN
	 * makes us the passive closer (close-wait), our FIN after the
	 * host's EOF the active one (fin-wait-1, fin-wait-2). Both FINs
	 * through: time-wait, which tcp_tw.c keeps once the flow goes. */
	if (!gfin)
		return acked ? "fin-wait-2" : "fin-wait-1";
	if (!sent && !acked)
		return "close-wait";
	return acked ? "time-wait" : "last-ack";
}

/* idx_of() - a flow's slot, for the lines (the control socket's flow
 * list and the epoll references name the same index). */
static unsigned int idx_of(const struct flowtab *ft, const struct flow *fl)
{
	return (unsigned int)(fl - ft->slots);
}

void flow_log_open(const struct flowtab *ft, const struct flow *fl,
		   const struct flow_key *k)
{
	char keys[FLOW_KEY_STRLEN];
	const char *by = "by the guest";

	if (!log_flow_ok(LOG_LVL_DEBUG))
		return;
	if (fl->f.type == FLOW_TCP &&
	    (FLOW_PRIV(fl, const struct tcp_conn)->flags & TCP_C_FWD))
		by = "by a host client (a -t forward)";
	else if (fl->f.type != FLOW_TCP && fl->f.type != FLOW_PING)
		by = "";
	flow_key_str(k, keys, sizeof(keys));
	log_msg(LOG_LVL_DEBUG, "flow %u: %s open %s%s%s", idx_of(ft, fl),
		type_names[fl->f.type], keys, *by ? " " : "", by);
}

/* sock_ends() - "local -> peer" of socket fd into buf ("?" for an end
 * it cannot tell). */
static void sock_ends(int fd, char *buf, size_t len)
{
	char a[2][INET6_ADDRSTRLEN + 16] = { "?", "?" };
	sockaddr_inany sa;
	socklen_t sl;
	union inany ia;
	uint16_t port;
	int i;

	for (i = 0; i < 2; i++) {
		memset(&sa, 0, sizeof(sa));
		sl = sizeof(sa);
		if ((i ? getpeername(fd, &sa.sa, &sl) : getsockname(fd, &sa.sa, &sl)) ||
		    (sa.sa.sa_family != AF_INET && sa.sa.sa_family != AF_INET6))
			continue;
		inany_from_sa(&sa, &ia, &port);
		flow_addr_str(&ia, port, a[i], sizeof(a[i]));
	}
	snprintf(buf, len, "%s -> %s", a[0], a[1]);
}

uint64_t tcp_info_received(const struct tcp_info *ti, uint16_t flags)
{
	uint64_t n = ti->tcpi_bytes_received;

	return n && (flags & TCP_C_SOCK_EOF) ? n - 1 : n;  /* less the FIN */
}

void flow_log_tcp_step(const struct flowtab *ft, const struct flow *fl,
		       unsigned int state, unsigned int closing,
		       unsigned int ev)
{
	const struct tcp_conn *t = FLOW_PRIV(fl, const struct tcp_conn);
	const char *from = tcp_state_name(state, closing);
	const char *to = tcp_state_name(t->state, t->closing);

	if (!log_flow_ok(LOG_LVL_DEBUG))
		return;
	log_msg(LOG_LVL_DEBUG, "flow %u: tcp %s%s%s: %s", idx_of(ft, fl), from,
		strcmp(from, to) ? " -> " : "", strcmp(from, to) ? to : "",
		ev < TCP_EV_MAX ? event_texts[ev] : "?");
}

/* end_str() - "closed", or "reset (CAUSE)" for why into buf; a reset by
 * the retransmission timer says how many timeouts in a row. */
static void end_str(const struct tcp_conn *t, unsigned int why, char *buf,
		    size_t len)
{
	const char *cause = why < TCP_END_MAX ? end_texts[why] : "?";

	if (why == TCP_END_CLOSE)
		snprintf(buf, len, "closed");
	else if (why == TCP_END_RTO)
		snprintf(buf, len, "reset (%s, %u timeouts)", cause,
			 t->retries);
	else
		snprintf(buf, len, "reset (%s)", cause);
}

void flow_log_tcp_close(const struct flowtab *ft, struct flow *fl,
			unsigned int why)
{
	const struct tcp_conn *t = FLOW_PRIV(fl, const struct tcp_conn);
	char host[2 * INET6_ADDRSTRLEN + 40] = "no socket", err[64] = "";
	char end[96];
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);

	fl->f.logged = true;		/* flow_free(): said already */
	if (!log_flow_ok(LOG_LVL_DEBUG))
		return;
	memset(&ti, 0, sizeof(ti));
	if (t->sock >= 0) {
		sock_ends(t->sock, host, sizeof(host));
		if (getsockopt(t->sock, IPPROTO_TCP, TCP_INFO, &ti, &tl))
			memset(&ti, 0, sizeof(ti));
	}
	if (t->sock_err)
		snprintf(err, sizeof(err), ", socket error: %s",
			 strerror(t->sock_err));
	end_str(t, why, end, sizeof(end));
	log_msg(LOG_LVL_DEBUG, "flow %u: tcp %s in %s after %lld ms, host %s, "
		"from guest %llu bytes, to guest %llu bytes, %u retransmitted"
		"%s%s%s", idx_of(ft, fl), end,
		tcp_state_name(t->state, t->closing),
		(long long)(flow_now_ms() - fl->f.born_ms), host,
		(unsigned long long)ti.tcpi_bytes_acked,
		(unsigned long long)tcp_info_received(&ti, t->flags),
		ti.tcpi_total_retrans, err,
		t->flags & TCP_C_GUEST_FIN ? ", guest FIN" : "",
		t->flags & TCP_C_SOCK_EOF ? ", host EOF" : "");
}

void flow_log_free(const struct flowtab *ft, const struct flow *fl)
{
	if (fl->f.logged || !log_flow_ok(LOG_LVL_DEBUG))
		return;
	log_msg(LOG_LVL_DEBUG, "flow %u: %s closed after %lld ms",
		idx_of(ft, fl), type_names[fl->f.type],
		(long long)(flow_now_ms() - fl->f.born_ms));
}

void flow_log_segment(const struct pkt *p)
{
	const struct tcp_view *t = &p->tcp;
	union inany s, d;
	char a[INET6_ADDRSTRLEN + 16], b[INET6_ADDRSTRLEN + 16];

	if (!log_flow_ok(LOG_LVL_TRACE))
		return;
	if (p->is_v6) {
		inany_from6(&s, &p->src6);
		inany_from6(&d, &p->dst6);
	} else {
		inany_from4(&s, p->src4);
		inany_from4(&d, p->dst4);
	}
	flow_addr_str(&s, t->sport, a, sizeof(a));
	flow_addr_str(&d, t->dport, b, sizeof(b));
	log_msg(LOG_LVL_TRACE, "tcp from guest %s -> %s %s%s%s%s%s seq %u "
		"ack %u win %u len %zu%s", a, b,
		t->flags & TCP_F_SYN ? "S" : "", t->flags & TCP_F_FIN ? "F" : "",
		t->flags & TCP_F_RST ? "R" : "", t->flags & TCP_F_ACK ? "." : "",
		t->flags & (TCP_F_SYN | TCP_F_FIN | TCP_F_RST | TCP_F_ACK)
		? "" : "-", t->seq, t->ack, t->window, p->payload_len,
		t->nsack ? " sack" : "");
}
