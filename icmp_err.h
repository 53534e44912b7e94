/* icmp_err.h - see icmp_err.c: ICMP/ICMPv6 errors towards the guest. */
#ifndef FERRY_ICMP_ERR_H
#define FERRY_ICMP_ERR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "flow.h"

struct ctx;

/* One entry of a socket's error queue (IP_RECVERR / IPV6_RECVERR). */
struct icmp_err {
	uint8_t origin;			/* SO_EE_ORIGIN_* */
	uint8_t type, code;		/* ICMP/ICMPv6 type and code */
	int errnum;			/* errno the kernel derived */
	uint32_t info;			/* MTU for "too big" errors */
	bool has_offender;
	union inany offender;		/* who reported it (ICMP origin) */
	size_t len;			/* payload bytes read into the buffer */
	bool truncated;			/* the payload was longer than that */
	bool has_dst;			/* the failed datagram's destination: */
	union inany dst;		/* (msg_name of the error queue entry; */
	uint16_t dst_port;		/* what tells clients of a shared socket
					 * apart) */
};

/* The guest's datagram an error is about, as the guest sent it. */
struct icmp_err_orig {
	union inany src, dst;		/* guest address, remote as it sees it */
	uint16_t sport, dport;
	union inany host_dst;		/* where ferry sent it on the host */
	const uint8_t *payload;		/* what is known of the payload */
	size_t len;			/* bytes at payload */
	size_t full_len;		/* the payload's original length */
	bool echo;			/* not UDP: an ICMP/ICMPv6 echo request,
					 * payload the whole message (header
					 * included, as the guest sent it);
					 * ports unused */
};

/* icmp_err_read() - dequeue one error from fd's error queue, the original
 * payload going to buf (size bytes). Return 1 with *e filled, 0 when the
 * queue is empty, -errno on other failures. */
int icmp_err_read(int fd, struct icmp_err *e, uint8_t *buf, size_t size);

/* icmp_echo_requote() - make the echo request an error quotes (len
 * bytes at m, maybe cut short) look as the guest sent it: the guest's
 * id, and the checksum updated for the change alone (RFC 1624), so it
 * verifies again over the whole message without needing all of it. For
 * ICMPv6, whose checksum covers the addresses too, from6 and to6 (else
 * NULL) are the (source, destination) pair the host socket used and the
 * pair the guest did. Quotes shorter than an ICMP header stay as they
 * are. */
void icmp_echo_requote(uint8_t *m, size_t len, uint16_t id,
		       const struct in6_addr *from6,
		       const struct in6_addr *to6);

/* icmp_err_to_guest() - send the guest the ICMP (IPv4 flows) or ICMPv6
 * error matching e about datagram o, quoting o within the minimum MTU.
 * Only destination unreachable (port, host, network, prohibited),
 * fragmentation needed / packet too big and time exceeded are
 * translated. The error comes from the remote the guest addressed when
 * that reported it, from the router that did when the guest may see its
 * address, else from the guest's gateway. Return true if a frame was
 * queued. */
bool icmp_err_to_guest(struct ctx *c, const struct icmp_err *e,
		       const struct icmp_err_orig *o);

#endif /* FERRY_ICMP_ERR_H */
