/* pkt.h - checked views of guest frames, and frame building.
 *
 * Theory of operation: a frame read from the guest is parsed exactly once,
 * by pkt_parse(), into a struct pkt. The parser validates every length
 * relation (Ethernet -> IPv4/IPv6 header and extension headers -> transport
 * header, TCP data offset and each option, UDP length, IP total length
 * against what was received) and copies the header fields protocol code
 * needs into host-order values. After a successful parse, nothing in the
 * view can point outside the frame: l3/l4/payload pointers come with their
 * lengths, and Ethernet padding past the IP length is already cut off.
 * Protocol handlers (arp, ndp, dhcp, icmp, udp, tcp) consume the view and
 * never compute offsets into raw frames themselves. The parser reads, and
 * every builder writes, each header field at the offset wire.h names.
 *
 * The view points into the frame buffer: it is valid until that buffer is
 * reused (the end of the current input batch).
 *
 * Offloads (a tap with virtio-net headers, see vnet.h): the link layer
 * decodes the header into a struct pkt_off and passes it to
 * pkt_parse_off(). A GSO frame is one TCP segment of up to 64 KiB that
 * the guest's kernel did not cut to its MTU; it is accepted only when the
 * frame really is TCP of the family the GSO type names (or, for USO, UDP
 * carrying datagrams of gso_size bytes, the last maybe shorter). A partial
 * checksum (NEEDS_CSUM: only the pseudo-header sum is in the field) is
 * not verified: it comes from the local kernel, which offloaded it; its
 * offsets must name exactly the parsed transport checksum field.
 */
#ifndef FERRY_PKT_H
#define FERRY_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "drop.h"

#define ETH_HLEN_	14
/* The shortest Ethernet frame without its FCS (IEEE 802.3 minimum of 64
 * bytes less the 4-byte FCS): tap_tx.c pads every frame it sends to this. */
#define ETH_ZLEN_	60
#define ETH_P_IP_	0x0800
#define ETH_P_ARP_	0x0806
#define ETH_P_IPV6_	0x86dd
#define IP4_HLEN	20
#define IP6_HLEN	40
#define TCP_HLEN	20
#define UDP_HLEN	8
#define ICMP_HLEN	8	/* ICMPv4 echo / error header */
#define ICMP6_HLEN	8
/* Largest frame ferry handles (65535-byte IPv6 payload + headers). */
#define FRAME_MAX	(ETH_HLEN_ + IP6_HLEN + 65535)

/* ARP (RFC 826) for Ethernet/IPv4 only. */
struct arp_view {
	uint16_t op;			/* 1 request, 2 reply */
	uint8_t sha[6], tha[6];
	struct in_addr spa, tpa;
};

/* TCP header and options, validated (RFC 9293, RFC 7323, RFC 2018). */
#define TCP_SACK_OPT_MAX	4	/* blocks in one SACK option */

struct tcp_view {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;			/* TCP_F_* */
	uint16_t window;		/* raw, unscaled */
	uint8_t doff;			/* header length in bytes */
	/* Options: valid only when the has_* flag is set. */
	bool has_mss, has_wscale, has_sack_perm, has_ts;
	bool has_sack;			/* a SACK option (RFC 2018) */
	uint8_t nsack;			/* its blocks, when well-formed (a
					 * length of 2 + 8 n, n <= 4): 0 else */
	uint16_t mss;
	uint8_t wscale;			/* clamped to 14 (RFC 7323 2.3) */
	uint32_t tsval, tsecr;
	uint32_t sack[TCP_SACK_OPT_MAX][2];	/* left, right edge (raw) */
};

#define TCP_F_FIN	0x01
#define TCP_F_SYN	0x02
#define TCP_F_RST	0x04
#define TCP_F_PSH	0x08
#define TCP_F_ACK	0x10
#define TCP_F_URG	0x20
#define TCP_F_ECE	0x40
#define TCP_F_CWR	0x80

struct udp_view {
	uint16_t sport, dport;
	uint16_t len;			/* UDP length field, == l4len */
};

/* ICMPv4 / ICMPv6: type, code, and for echo the identifier/sequence. */
struct icmp_view {
	uint8_t type, code;
	uint16_t id, seq;		/* meaningful for echo messages */
};

/* GSO types of a frame (virtio-net header), host values. */
enum pkt_gso {
	PKT_GSO_NONE = 0,
	PKT_GSO_TCP4,			/* IPv4 TCP, cut into gso_size pieces */
	PKT_GSO_TCP6,			/* IPv6 TCP */
	PKT_GSO_UDP,			/* UDP datagrams of gso_size (USO) */
};

/* Most datagrams one USO frame may stand for: a Linux socket's
 * UDP_SEGMENT send is limited to 64 segments (128 in recent kernels). */
#define PKT_USO_SEGS_MAX	128

/* pkt_off - offload state of one frame, decoded from (or to be encoded
 * into) a virtio-net header; all zero on links without one. */
struct pkt_off {
	uint8_t gso;			/* enum pkt_gso */
	bool csum_partial;		/* field holds the pseudo-header sum */
	bool csum_valid;		/* the sending kernel verified it */
	uint16_t gso_size;		/* payload bytes per segment */
	uint16_t hdr_len;		/* header bytes (a hint for the kernel) */
	uint16_t csum_start;		/* frame offset where the sum starts */
	uint16_t csum_off;		/* checksum field, from csum_start */
};

struct pkt {
	/* Link layer */
	const uint8_t *frame;
	size_t len;
	uint8_t eth_dst[6], eth_src[6];
	uint16_t ethertype;
	uint8_t gso;			/* enum pkt_gso: a GSO super-frame */
	uint16_t gso_size;		/* its segment payload size */

	/* Network layer: is_ip set for IPv4/IPv6 frames */
	bool is_ip, is_v6;
	const uint8_t *l3;
	size_t l3len;			/* IP header + payload, padding cut */
	uint8_t l4proto;		/* IPPROTO_* after extension headers */
	uint8_t ttl;			/* TTL / hop limit */
	uint8_t tos;			/* TOS / traffic class */
	uint32_t flowlabel;		/* IPv6 only */
	struct in_addr src4, dst4;
	struct in6_addr src6, dst6;

	/* Transport layer: l4 is the transport header, l4len runs to the
	 * end of the IP payload; payload is what follows the header. */
	const uint8_t *l4;
	size_t l4len;
	const uint8_t *payload;
	size_t payload_len;
	union {
		struct arp_view arp;
		struct tcp_view tcp;
		struct udp_view udp;
		struct icmp_view icmp;
	};
};

/* pkt_parse() - validate frame[0..len) and fill *p.
 * @verify_l4_csum: check TCP/UDP/ICMP checksums (false only when the
 *                  backend vouches for them, e.g. virtio DATA_VALID).
 * Return: DROP_NONE on success, else the reason the frame is refused
 * (in which case *p is partially filled and must not be used).
 * Unknown transport protocols are not an error here: l4proto says what it
 * is and the dispatcher decides. */
enum drop_reason pkt_parse(const uint8_t *frame, size_t len,
			   bool verify_l4_csum, struct pkt *p);

/* pkt_parse_off() - pkt_parse() for a frame that came with offload state
 * o (NULL: none). A GSO frame must be TCP (or UDP for PKT_GSO_UDP) of the
 * matching family, else DROP_VNET_GSO; a partial checksum must name the
 * parsed transport checksum field, else DROP_VNET_CSUM, and is not
 * verified (nor is one the kernel marked valid). */
enum drop_reason pkt_parse_off(const uint8_t *frame, size_t len,
			       bool verify_l4_csum, const struct pkt_off *o,
			       struct pkt *p);

/* tcp_opts_parse() - parse TCP options [opt, opt+len) into *t.
 * Return: false if any option overruns the area or has a bad length. */
bool tcp_opts_parse(const uint8_t *opt, size_t len, struct tcp_view *t);

/* Frame building. All builders write at the given buffer, which must have
 * room for the headers; lengths are host order.
 *
 * eth_build() writes the Ethernet header; returns the byte after it. */
uint8_t *eth_build(uint8_t *f, const uint8_t dst[6], const uint8_t src[6],
		   uint16_t ethertype);
/* ip4_build() - IPv4 header (no options, DF set, TTL 64, checksum filled)
 * for an L4 part of l4len bytes; returns the byte after it. */
uint8_t *ip4_build(uint8_t *l3, struct in_addr src, struct in_addr dst,
		   uint8_t proto, size_t l4len, uint16_t id);
/* ip6_build() - IPv6 header (hop limit hlim) for l4len payload bytes. */
uint8_t *ip6_build(uint8_t *l3, const struct in6_addr *src,
		   const struct in6_addr *dst, uint8_t proto, size_t l4len,
		   uint8_t hlim);

/* Address classification helpers used by the dispatcher and services. */
bool in4_is_mcast_or_bcast(struct in_addr a);
bool in6_is_mcast(const struct in6_addr *a);

#endif /* FERRY_PKT_H */
