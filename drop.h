/* drop.h - every frame ferry refuses has a reason and a counter.
 *
 * Reasons are listed once in DROP_REASONS (X-macro) so the enum, the names
 * printed by the statistics dump and the tests stay in step. Code never
 * drops with a bare "continue": it calls drop(ctx, reason), which counts
 * and emits a rate-limited trace line. Add new reasons at the end of a
 * group; names are stable identifiers used by tests.
 */
#ifndef FERRY_DROP_H
#define FERRY_DROP_H

#include <stddef.h>

#define DROP_REASONS(X)						\
	X(NONE,			"not dropped")				\
	/* Link layer */						\
	X(ETH_SHORT,		"frame shorter than Ethernet header")	\
	X(ETH_TOO_BIG,		"frame longer than the link maximum")	\
	X(ETH_TYPE,		"unsupported ethertype")		\
	X(ETH_SRC_MCAST,	"multicast Ethernet source")		\
	X(ARP_MALFORMED,	"malformed ARP")			\
	X(ARP_IGNORED,		"ARP not for an address we answer")	\
	/* IPv4 */							\
	X(IP4_SHORT,		"IPv4 header truncated")		\
	X(IP4_VERSION,		"IPv4 version field wrong")		\
	X(IP4_HDRLEN,		"IPv4 header length invalid")		\
	X(IP4_TOTLEN,		"IPv4 total length inconsistent")	\
	X(IP4_CSUM,		"IPv4 header checksum wrong")		\
	X(IP4_FRAG,		"IPv4 fragment (not supported)")	\
	X(IP4_SRC,		"IPv4 source not the guest's")		\
	X(IP4_DST,		"IPv4 destination not routable")	\
	/* IPv6 */							\
	X(IP6_SHORT,		"IPv6 header truncated")		\
	X(IP6_VERSION,		"IPv6 version field wrong")		\
	X(IP6_PLEN,		"IPv6 payload length inconsistent")	\
	X(IP6_EXTHDR,		"IPv6 extension header malformed")	\
	X(IP6_FRAG,		"IPv6 fragment (not supported)")	\
	X(IP6_SRC,		"IPv6 source not the guest's")		\
	X(IP6_DST,		"IPv6 destination not routable")	\
	X(IP_PROTO,		"unsupported IP protocol")		\
	X(IP_DISABLED,		"IP version disabled (-4/-6)")		\
	/* Transport */							\
	X(L4_SHORT,		"transport header truncated")		\
	X(L4_CSUM,		"transport checksum wrong")		\
	X(TCP_DOFF,		"TCP data offset invalid")		\
	X(TCP_OPTS,		"TCP options malformed")		\
	X(UDP_LEN,		"UDP length inconsistent")		\
	X(L4_PORT_ZERO,		"zero port")				\
	X(MCAST_BCAST,		"broadcast/multicast destination")	\
	X(MCAST_REPORT,		"malformed IGMP/MLD message")		\
	X(MCAST_QUERY,		"IGMP/MLD query or other type from the guest") \
	X(MCAST_GROUPS,		"multicast group cap reached")		\
	/* Services */							\
	X(ICMP_TYPE,		"ICMP type not handled")		\
	X(ICMP_DISABLED,	"ICMP echo forwarding disabled/unavailable") \
	X(NDP_MALFORMED,	"malformed NDP message")		\
	X(NDP_IGNORED,		"NDP message not for us")		\
	X(DHCP_MALFORMED,	"malformed DHCP message")		\
	X(DHCP_IGNORED,		"DHCP message not for us")		\
	X(DHCP6_MALFORMED,	"malformed DHCPv6 message")		\
	X(DHCP6_IGNORED,	"DHCPv6 message not for us")		\
	X(DHCP_NOT_REQUEST,	"DHCP message not a BOOTREQUEST")	\
	X(DHCP_HWTYPE,		"DHCP hardware type/length not Ethernet") \
	X(NDP_HOPLIMIT,		"NDP hop limit not 255")		\
	X(SERVICE_DISABLED,	"service disabled by option")		\
	/* Resources */							\
	X(FLOW_TABLE_FULL,	"flow table full")			\
	X(NO_FLOW,		"no matching flow")			\
	X(SOCKET_ERROR,		"host socket error")			\
	X(TX_FULL,		"guest transmit queue full")		\
	X(NOT_IMPLEMENTED,	"protocol path not implemented yet")	\
	X(FAULT_INJECTED,	"dropped by test fault injection")	\
	X(UDP_TOO_BIG,		"host datagram larger than the guest MTU") \
	X(LINK_DOWN,		"guest interface down (tap write EIO)")	\
	X(NO_LINK,		"no guest link (--splice-only)")	\
	X(TCP_STATE,		"TCP segment not valid in this state")	\
	X(TCP_SEQ,		"TCP segment outside the window")	\
	X(TCP_OOO_FULL,		"TCP out-of-order queue full")		\
	X(TCP_OOO_REACH,	"TCP segment beyond the reassembly reach") \
	X(TCP_FD_BUDGET,	"TCP at its file-descriptor budget")	\
	X(ICMP_TOO_BIG,		"host ICMP message larger than the guest MTU") \
	X(TCP_TIME_WAIT,	"TCP segment of a closed connection (TIME-WAIT)") \
	X(GUEST_ADDR_UNKNOWN,	"guest address not known yet")		\
	X(UDP_TUPLE_TAKEN,	"-u client's tuple taken by a guest flow") \
	X(TCP_CHALLENGE,	"TCP RST or SYN not at RCV.NXT (challenge ACK)") \
	X(TCP_ACK_UNSENT,	"TCP ACK of data never sent")		\
	X(TCP_DRAINING,		"TCP SYN while draining before exit")	\
	/* Offloads (virtio-net header of a tap with offloads) */	\
	X(VNET_SHORT,		"frame shorter than its virtio-net header") \
	X(VNET_GSO,		"GSO type unknown or not the frame's protocol") \
	X(VNET_HDRLEN,		"virtio-net header length beyond the frame") \
	X(VNET_CSUM,		"checksum offload offsets out of range") \
	/* vhost-user rings (virtq.c, tap_vu.c) */			\
	X(VU_NOT_READY,		"vhost-user queue not ready")		\
	X(VU_RING,		"vhost-user ring index out of range")	\
	X(VU_CHAIN,		"vhost-user descriptor chain malformed") \
	X(VU_NO_BUFFER,		"no guest receive buffer (vhost-user)")	\
	X(VU_BUF_SMALL,		"guest receive buffers too small")	\
	X(VU_FD,		"vhost-user ring fd not an eventfd")

enum drop_reason {
#define DROP_ENUM(name, text) DROP_##name,
	DROP_REASONS(DROP_ENUM)
#undef DROP_ENUM
	DROP_MAX
};

/* Stable identifier ("IP4_CSUM") and human text for a reason. */
const char *drop_name(enum drop_reason r);
const char *drop_text(enum drop_reason r);

/* The counter registry: every module's statistics line is a const
 * struct stat_group it places in the ferry_stats section (STAT_GROUP());
 * the statistics dump (stats_log(), drop.c) prints them all in their
 * order and knows no module. A line is "stats: WHAT" and then, for each
 * item, its text before, its counter, its text after: " opened " 3,
 * "/" 4 (the second of a pair: "rst to/from guest 3/4"), ", " 7
 * " created". */
struct stat_item {
	const char *pre, *post;
	size_t off;			/* in the group's record */
	size_t size;			/* 1, 4 or 8 bytes (unsigned) */
};

/* STAT() - item " name value" of field in record type rec; STAT_PAIR()
 * "/value"; STAT_TEXT() pre value post. */
#define STAT(name, rec, field)	{ " " name " ", "", STAT_FIELD(rec, field) }
#define STAT_PAIR(rec, field)	{ "/", "", STAT_FIELD(rec, field) }
#define STAT_TEXT(pre, post, rec, field)				\
	{ pre, post, STAT_FIELD(rec, field) }

/* When a group's line is printed. */
enum stat_when {
	STAT_ALWAYS,
	STAT_ANY,			/* some item is not 0 */
	STAT_GATE,			/* the gate field is not 0 */
};

struct stat_group {
	unsigned int order;		/* lines print in ascending order */
	const char *what;
	enum stat_when when;
	size_t gate_off, gate_size;	/* STAT_GATE: a field of struct ctx */
	/* The record the items' offsets are in: struct ctx itself (via -1),
	 * or what the pointer at offset via in struct ctx points to (no
	 * line while it is NULL). */
	long via;
	const struct stat_item *items;
	unsigned int n;
};

/* STAT_FIELD() - offset and size of field in record type rec. */
#define STAT_FIELD(rec, field)						\
	offsetof(rec, field), sizeof(((rec *)0)->field)

/* STAT_GROUP() - define a registered group (static, in the section). */
#define STAT_GROUP(name)						\
	static const struct stat_group name				\
	__attribute__((section("ferry_stats"), used, aligned(8)))

#endif /* FERRY_DROP_H */
