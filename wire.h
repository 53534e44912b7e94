/* wire.h - the byte layout of every header ferry parses and builds.
 *
 * Theory of operation: each header's fields are named here once, as byte
 * offsets from the start of that header (or of one option), and both
 * sides use them: the parser (ip.c pkt_parse(), ndp.c, dhcpv6.c, ...)
 * reads a field at its name and every builder (arp.c, ip.c, ndp.c,
 * icmp_err.c, udp.c, tcp_out.c, ...) writes it there, with util.h's
 * rd16()/rd32()/wr16()/wr32() (unaligned, network order). As smoltcp's
 * wire modules keep one `field` table per header for parse and emit, a
 * header learns a new field in one place, and a parser and its builder
 * cannot disagree on where it is. No protocol file holds a numeric
 * header offset: test/wire_offsets.py checks that in make check.
 *
 * Header lengths (ETH_HLEN_, IP4_HLEN, TCP_HLEN, ...) stay in pkt.h with
 * the parsed views. Everything here is a compile-time constant or an
 * inline accessor: the data path pays nothing for the names.
 */
#ifndef FERRY_WIRE_H
#define FERRY_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <netinet/tcp.h>

#include "util.h"

/* The virtio-net header before a frame on a tap with offloads or a
 * vhost-user queue (virtio 1.x 5.1.6: little-endian fields, vnet.c). */
enum {
	VNET_OFF_FLAGS		= 0,
	VNET_OFF_GSO_TYPE	= 1,
	VNET_OFF_HDR_LEN	= 2,
	VNET_OFF_GSO_SIZE	= 4,
	VNET_OFF_CSUM_START	= 6,
	VNET_OFF_CSUM_OFF	= 8,
	VNET_OFF_NUM_BUFFERS	= 10,	/* mergeable receive buffers */
};

/* Ethernet II (IEEE 802.3). */
enum {
	ETH_OFF_DST	= 0,
	ETH_OFF_SRC	= 6,
	ETH_OFF_TYPE	= 12,
};

/* ARP for Ethernet and IPv4 (RFC 826): 28 bytes. */
enum {
	ARP_OFF_HTYPE	= 0,		/* 1: Ethernet */
	ARP_OFF_PTYPE	= 2,		/* ETH_P_IP_ */
	ARP_OFF_HALEN	= 4,		/* 6 */
	ARP_OFF_PALEN	= 5,		/* 4 */
	ARP_OFF_OP	= 6,
	ARP_OFF_SHA	= 8,
	ARP_OFF_SPA	= 14,
	ARP_OFF_THA	= 18,
	ARP_OFF_TPA	= 24,
	ARP_LEN		= 28,
};
#define ARP_HTYPE_ETH	1
#define ARP_OP_REQUEST	1
#define ARP_OP_REPLY	2

/* IPv4 (RFC 791), without options. */
enum {
	IP4_OFF_VIHL	= 0,		/* version << 4 | header words */
	IP4_OFF_TOS	= 1,
	IP4_OFF_TOTLEN	= 2,
	IP4_OFF_ID	= 4,
	IP4_OFF_FRAG	= 6,		/* flags << 13 | fragment offset */
	IP4_OFF_TTL	= 8,
	IP4_OFF_PROTO	= 9,
	IP4_OFF_CSUM	= 10,
	IP4_OFF_SRC	= 12,
	IP4_OFF_DST	= 16,
};
#define IP4_F_DF	0x4000		/* in the 16 bits at IP4_OFF_FRAG */
#define IP4_FRAG_MASK	0x3fff		/* MF and the fragment offset */

/* ip4_version()/ip4_hlen() - the version and header length in bytes of
 * the IPv4 header at b. */
static inline unsigned int ip4_version(const uint8_t *b)
{
	return b[IP4_OFF_VIHL] >> 4;
}

static inline size_t ip4_hlen(const uint8_t *b)
{
	return (size_t)(b[IP4_OFF_VIHL] & 0xf) * 4;
}

/* IPv6 (RFC 8200) and its extension headers' common start. */
enum {
	IP6_OFF_VTCFL	= 0,		/* version, traffic class, flow label */
	IP6_OFF_PLEN	= 4,
	IP6_OFF_NEXT	= 6,
	IP6_OFF_HLIM	= 7,
	IP6_OFF_SRC	= 8,
	IP6_OFF_DST	= 24,
};
enum {
	IP6X_OFF_NEXT	= 0,		/* extension header: next header */
	IP6X_OFF_LEN	= 1,		/* its length in 8-byte units - 1 */
	IP6X_MIN	= 8,		/* the shortest one */
};

/* ip6_version() - the version of the IPv6 header at b. */
static inline unsigned int ip6_version(const uint8_t *b)
{
	return b[IP6_OFF_VTCFL] >> 4;
}

/* UDP (RFC 768). */
enum {
	UDP_OFF_SPORT	= 0,
	UDP_OFF_DPORT	= 2,
	UDP_OFF_LEN	= 4,
	UDP_OFF_CSUM	= 6,
};

/* udp_hdr_put() - the UDP header at u: ports, length len (header
 * included), checksum 0 (for the caller to fill, or none). */
static inline void udp_hdr_put(uint8_t *u, uint16_t sport, uint16_t dport,
			       uint16_t len)
{
	wr16(u + UDP_OFF_SPORT, sport);
	wr16(u + UDP_OFF_DPORT, dport);
	wr16(u + UDP_OFF_LEN, len);
	wr16(u + UDP_OFF_CSUM, 0);
}

/* TCP (RFC 9293), and the options ferry reads or writes (RFC 9293 MSS,
 * RFC 7323 window scale and timestamps, RFC 2018 SACK). */
enum {
	TCP_OFF_SPORT	= 0,
	TCP_OFF_DPORT	= 2,
	TCP_OFF_SEQ	= 4,
	TCP_OFF_ACK	= 8,
	TCP_OFF_DOFF	= 12,		/* header words << 4 */
	TCP_OFF_FLAGS	= 13,
	TCP_OFF_WND	= 14,
	TCP_OFF_CSUM	= 16,
	TCP_OFF_URG	= 18,
};
enum {
	TCPOPT_OFF_KIND	= 0,
	TCPOPT_OFF_LEN	= 1,
	TCPOPT_OFF_VAL	= 2,		/* MSS, window scale, first SACK block */
	TCPOPT_OFF_TSECR = 6,		/* timestamps: TSval at TCPOPT_OFF_VAL */
	TCPOPT_SACK_BLK	= 8,		/* bytes per SACK block */
	TCPOPT_SACK_RIGHT = 4,		/* right edge, within a block */
};
/* Kinds and lengths: <netinet/tcp.h>'s TCPOPT_* and TCPOLEN_*. */
#define TCPOPT_SACK_HLEN	2	/* kind, length; then the blocks */

/* tcp_doff() - the data offset in bytes of the TCP header at b;
 * tcp_doff_put() writes header length hlen (a multiple of 4) there. */
static inline size_t tcp_doff(const uint8_t *b)
{
	return (size_t)(b[TCP_OFF_DOFF] >> 4) * 4;
}

static inline void tcp_doff_put(uint8_t *b, size_t hlen)
{
	b[TCP_OFF_DOFF] = (uint8_t)((hlen / 4) << 4);
}

/* tcp_hdr_put() - the TCP header at t without options' bytes: ports,
 * seq, ack, header length hlen (options included), flags, window field
 * wnd, checksum and urgent pointer 0. */
static inline void tcp_hdr_put(uint8_t *t, uint16_t sport, uint16_t dport,
			       uint32_t seq, uint32_t ack, size_t hlen,
			       uint8_t flags, uint16_t wnd)
{
	wr16(t + TCP_OFF_SPORT, sport);
	wr16(t + TCP_OFF_DPORT, dport);
	wr32(t + TCP_OFF_SEQ, seq);
	wr32(t + TCP_OFF_ACK, ack);
	tcp_doff_put(t, hlen);
	t[TCP_OFF_FLAGS] = flags;
	wr16(t + TCP_OFF_WND, wnd);
	wr16(t + TCP_OFF_CSUM, 0);
	wr16(t + TCP_OFF_URG, 0);
}

/* ICMP (RFC 792) and ICMPv6 (RFC 4443): the common start, echo's
 * identifier and sequence number, and the errors' extra fields. */
enum {
	ICMP_OFF_TYPE	= 0,
	ICMP_OFF_CODE	= 1,
	ICMP_OFF_CSUM	= 2,
	ICMP_OFF_ID	= 4,		/* echo request / reply */
	ICMP_OFF_SEQ	= 6,
	ICMP_OFF_MTU4	= 6,		/* v4 fragmentation needed: next-hop MTU */
	ICMP_OFF_MTU6	= 4,		/* v6 packet too big: 32-bit MTU */
	ICMP_OFF_PTR	= 4,		/* parameter problem: pointer */
	ICMP_MIN	= 4,		/* type, code, checksum */
};

/* Neighbor Discovery (RFC 4861) messages after the ICMPv6 start, and
 * the options that follow them (type, length in 8-byte units, value). */
enum {
	NDP_OFF_NA_FLAGS	= 4,	/* NA: router, solicited, override */
	NDP_OFF_TARGET		= 8,	/* NS / NA target address */
	NDP_NS_LEN		= 24,	/* NS / NA up to the options */
	NDP_RS_LEN		= 8,
	NDP_OFF_RA_HOPLIMIT	= 4,
	NDP_OFF_RA_FLAGS	= 5,	/* managed, other */
	NDP_OFF_RA_LIFETIME	= 6,	/* router lifetime, s */
	NDP_OFF_RA_REACHABLE	= 8,
	NDP_OFF_RA_RETRANS	= 12,
	NDP_RA_LEN		= 16,
	NDP_REDIRECT_LEN	= 40,	/* target and destination after it */
};
enum {
	NDOPT_OFF_TYPE		= 0,
	NDOPT_OFF_LEN		= 1,	/* in 8-byte units */
	NDOPT_OFF_LLADDR	= 2,	/* source / target link-layer address */
	NDOPT_OFF_MTU		= 4,	/* MTU option: 32 bits */
	NDOPT_OFF_PFX_LEN	= 2,	/* prefix information (RFC 4861 4.6.2) */
	NDOPT_OFF_PFX_FLAGS	= 3,
	NDOPT_OFF_PFX_VALID	= 4,
	NDOPT_OFF_PFX_PREF	= 8,
	NDOPT_OFF_PFX		= 16,
	NDOPT_PFX_LEN		= 32,
	NDOPT_OFF_RESERVED	= 2,	/* RDNSS, DNSSL (RFC 8106) */
	NDOPT_OFF_LIFETIME	= 4,
	NDOPT_OFF_LIST		= 8,	/* their addresses or names */
	NDOPT_UNIT		= 8,	/* the length field's unit */
};

/* ndopt_put() - the start of an NDP option at o: type, and its length
 * len in bytes (a multiple of NDOPT_UNIT). */
static inline void ndopt_put(uint8_t *o, uint8_t type, size_t len)
{
	o[NDOPT_OFF_TYPE] = type;
	o[NDOPT_OFF_LEN] = (uint8_t)(len / NDOPT_UNIT);
}

/* IGMP (RFC 2236 2, RFC 3376 4) and MLD (RFC 2710 3, RFC 3810 5): the
 * messages share their start (type, a code or maximum response field,
 * the checksum) with ICMP's. Version 1/2 messages and MLDv1 carry one
 * group; a version 3 report / MLDv2 report carries records after a
 * count, each a type, an auxiliary length (32-bit words), a source
 * count, the group, the sources and the auxiliary data. */
enum {
	IGMP_OFF_TYPE		= 0,
	IGMP_OFF_MAXRESP	= 1,	/* query: maximum response time/code */
	IGMP_OFF_CSUM		= 2,
	IGMP_OFF_GROUP		= 4,	/* v1/v2 message, v3 query */
	IGMP_LEN		= 8,	/* a v1/v2 message */
	IGMP_OFF_QRV		= 8,	/* v3 query: S flag, QRV */
	IGMP_OFF_QQIC		= 9,
	IGMP_OFF_QNSRC		= 10,
	IGMP_QUERY3_LEN		= 12,	/* a v3 query without sources */
	IGMP_OFF_NREC		= 6,	/* v3 report (MLDv2's too) */
	IGMP_REPORT3_HLEN	= 8,	/* v3 report up to its records */
	MREC_OFF_TYPE		= 0,	/* a group record (IGMPv3, MLDv2) */
	MREC_OFF_AUXLEN		= 1,
	MREC_OFF_NSRC		= 2,
	MREC_OFF_GROUP		= 4,
	MREC_HLEN		= 4,	/* up to its group */
	MLD_OFF_MAXRESP		= 4,	/* MLD query: ms (v2: a code) */
	MLD_OFF_GROUP		= 8,	/* MLDv1 message, MLDv2 query */
	MLD_LEN			= 24,	/* an MLDv1 message */
	MLD_OFF_QRV		= 24,	/* MLDv2 query: S flag, QRV */
	MLD_OFF_QQIC		= 25,
	MLD_OFF_QNSRC		= 26,
	MLD_QUERY2_LEN		= 28,	/* an MLDv2 query without sources */
};

/* IP options before a router's IGMP/MLD message: the IPv4 Router Alert
 * option (RFC 2113), 4 bytes, and the IPv6 hop-by-hop header carrying
 * it (RFC 2711) with two bytes of padding (PadN), 8 bytes. */
enum {
	IP4_OPT_RA_LEN		= 4,
	IP6_HBH_RA_LEN		= 8,
	IP6_HBH_OFF_NEXT	= 0,
	IP6_HBH_OFF_LEN		= 1,
	IP6_HBH_OFF_OPT		= 2,	/* option type, length, value */
	IP6_HBH_OFF_PAD		= 6,	/* PadN: type 1, length 0 */
};

#endif /* FERRY_WIRE_H */
