/* vnet.h - the virtio-net header in front of every frame on a tap device
 * opened with IFF_VNET_HDR (namespace mode with offloads).
 *
 * Layout (virtio 1.x, struct virtio_net_hdr_v1; 12 bytes, set with
 * TUNSETVNETHDRSZ; little-endian, set with TUNSETVNETLE):
 *
 *   0  flags        NEEDS_CSUM (1): the checksum field holds only the
 *                   pseudo-header sum, the rest is left to the receiver;
 *                   DATA_VALID (2): the sender's kernel checked it
 *   1  gso_type     NONE 0, TCPV4 1, UDP 3 (UFO, refused), TCPV6 4,
 *                   UDP_L4 5 (USO); bit 0x80 ECN
 *   2  hdr_len      Ethernet + IP + transport header bytes (a hint)
 *   4  gso_size     payload bytes per segment
 *   6  csum_start   where the checksum starts, from the frame start
 *   8  csum_offset  the checksum field, from csum_start
 *  10  num_buffers  (mergeable rx buffers; zero here)
 *
 * The 12-byte form (rather than the legacy 10 bytes) is chosen because it
 * is the one every virtio 1.x implementation uses, and it keeps the frame
 * start 4-byte aligned after the prefix.
 *
 * vnet_hdr_parse() decodes and range-checks a received header into a
 * struct pkt_off (pkt.h); pkt_parse_off() then checks it against the
 * frame's real headers. vnet_hdr_write() encodes what ferry sends.
 */
#ifndef FERRY_VNET_H
#define FERRY_VNET_H

#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "pkt.h"

#define VNET_HLEN		12

#define VNET_F_NEEDS_CSUM	0x01
#define VNET_F_DATA_VALID	0x02

#define VNET_GSO_NONE		0
#define VNET_GSO_TCPV4		1
#define VNET_GSO_UDP		3
#define VNET_GSO_TCPV6		4
#define VNET_GSO_UDP_L4		5
#define VNET_GSO_ECN		0x80

/* vnet_hdr_parse() - decode the header at h of a frame of len bytes (the
 * bytes after the header) into *o. Unknown flag bits are ignored; the ECN
 * bit of the GSO type is accepted (ferry terminates TCP itself).
 * Return: DROP_NONE, DROP_VNET_GSO (unknown or UFO type, zero gso_size),
 * DROP_VNET_HDRLEN (hdr_len > len) or DROP_VNET_CSUM (a partial checksum
 * whose field does not lie within the frame). */
enum drop_reason vnet_hdr_parse(const uint8_t *h, size_t len,
				struct pkt_off *o);

/* vnet_hdr_write() - encode o (NULL: no offload, all zero) into h for a
 * frame of len bytes. GSO is only announced when the payload after
 * hdr_len exceeds gso_size: a frame that fits one segment is sent plain. */
void vnet_hdr_write(uint8_t *h, size_t len, const struct pkt_off *o);

/* vnet_csum_complete() - fill in the partial checksum of a frame (o as
 * vnet_hdr_parse() returned it, csum_partial set): the sum from
 * csum_start to the end, folded, stored in the field. Used where a full
 * checksum must be visible (pcap capture). */
void vnet_csum_complete(uint8_t *frame, size_t len, const struct pkt_off *o);

#endif /* FERRY_VNET_H */
