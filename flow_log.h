/* flow_log.h - per-flow debug lines (flow_log.c): a flow's open and
 * close with both sides and what moved, a TCP flow's state changes and
 * why it was reset; per-segment trace lines. All rate-limited (log.h
 * log_flow_ok()). */
#ifndef FERRY_FLOW_LOG_H
#define FERRY_FLOW_LOG_H

#include <stdbool.h>
#include <stdint.h>

struct flow;
struct flow_key;
struct flowtab;
struct pkt;

/* flow_log_open() - fl got its first guest-side key k (flow_hash_add()). */
void flow_log_open(const struct flowtab *ft, const struct flow *fl,
		   const struct flow_key *k);
/* flow_log_tcp_step() - TCP flow fl's state or closing progress changed
 * from state and closing (its enum tcp_cstate and TCP_C_CLOSING bits)
 * because of ev (enum tcp_event; tcp_conn_set()). */
void flow_log_tcp_step(const struct flowtab *ft, const struct flow *fl,
		       unsigned int state, unsigned int closing,
		       unsigned int ev);
/* flow_log_tcp_close() - TCP flow fl ends for why (enum tcp_end: closed,
 * or a reset and its cause), its host socket still open
 * (tcp_conn_close()); flow_free() then says nothing more. */
void flow_log_tcp_close(const struct flowtab *ft, struct flow *fl,
			unsigned int why);
/* flow_log_free() - fl is freed (flow_free()): its age, unless said. */
void flow_log_free(const struct flowtab *ft, const struct flow *fl);
/* tcp_state_name() - a TCP flow's state (enum tcp_cstate) and closing
 * progress (its TCP_C_CLOSING bits ever set) as the logs and the control
 * socket name it: the handshake's states, then RFC 9293's names of the
 * side facing the guest ("established", "close-wait", "fin-wait-1",
 * "fin-wait-2", "last-ack", "time-wait"). */
const char *tcp_state_name(unsigned int state, unsigned int closing);
/* tcp_info_received() - the data bytes a host socket received, from
 * its TCP_INFO: the kernel counts the peer's FIN in tcpi_bytes_received
 * (flags: the connection's TCP_C_*, TCP_C_SOCK_EOF says it came). */
struct tcp_info;
uint64_t tcp_info_received(const struct tcp_info *ti, uint16_t flags);
/* flow_log_segment() - --trace: a TCP segment from the guest (tap.c). */
void flow_log_segment(const struct pkt *p);

#endif /* FERRY_FLOW_LOG_H */
