/* vnet.c - encoding and decoding of the virtio-net header (see vnet.h for
 * the layout and the theory). Only this file knows the wire format; tap.c
 * decides what goes in, pkt_parse_off() checks what came in against the
 * frame.
 */
#include <string.h>

#include "checksum.h"
#include "util.h"
#include "vnet.h"
#include "wire.h"

/* le16_rd() - little-endian 16-bit field at p (virtio 1.x). */
static uint16_t le16_rd(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);	/* wire: little-endian bytes */
}

/* le16_wr() - store v little-endian at p. */
static void le16_wr(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;			/* wire: little-endian bytes */
	p[1] = (uint8_t)(v >> 8);		/* wire: little-endian bytes */
}

enum drop_reason vnet_hdr_parse(const uint8_t *h, size_t len,
				struct pkt_off *o)
{
	uint8_t flags = h[VNET_OFF_FLAGS];

	memset(o, 0, sizeof(*o));
	switch (h[VNET_OFF_GSO_TYPE] & (uint8_t)~VNET_GSO_ECN) {
	case VNET_GSO_NONE:
		o->gso = PKT_GSO_NONE;
		break;
	case VNET_GSO_TCPV4:
		o->gso = PKT_GSO_TCP4;
		break;
	case VNET_GSO_TCPV6:
		o->gso = PKT_GSO_TCP6;
		break;
	case VNET_GSO_UDP_L4:
		o->gso = PKT_GSO_UDP;
		break;
	default:			/* UFO, unknown */
		return DROP_VNET_GSO;
	}
	o->hdr_len = le16_rd(h + VNET_OFF_HDR_LEN);
	o->gso_size = le16_rd(h + VNET_OFF_GSO_SIZE);
	o->csum_start = le16_rd(h + VNET_OFF_CSUM_START);
	o->csum_off = le16_rd(h + VNET_OFF_CSUM_OFF);
	if (o->gso != PKT_GSO_NONE && !o->gso_size)
		return DROP_VNET_GSO;
	if (o->hdr_len > len)
		return DROP_VNET_HDRLEN;
	if (flags & VNET_F_NEEDS_CSUM) {
		if ((size_t)o->csum_start + o->csum_off + 2 > len)
			return DROP_VNET_CSUM;
		o->csum_partial = true;
	} else if (flags & VNET_F_DATA_VALID) {
		o->csum_valid = true;
	}
	return DROP_NONE;
}

void vnet_hdr_write(uint8_t *h, size_t len, const struct pkt_off *o)
{
	static const uint8_t gso_type[] = {
		[PKT_GSO_NONE] = VNET_GSO_NONE, [PKT_GSO_TCP4] = VNET_GSO_TCPV4,
		[PKT_GSO_TCP6] = VNET_GSO_TCPV6, [PKT_GSO_UDP] = VNET_GSO_UDP_L4,
	};

	memset(h, 0, VNET_HLEN);
	if (!o)
		return;
	if (o->csum_partial) {
		h[VNET_OFF_FLAGS] = VNET_F_NEEDS_CSUM;
		le16_wr(h + VNET_OFF_CSUM_START, o->csum_start);
		le16_wr(h + VNET_OFF_CSUM_OFF, o->csum_off);
	}
	le16_wr(h + VNET_OFF_HDR_LEN, o->hdr_len);
	if (o->gso && o->gso < sizeof(gso_type) && o->gso_size &&
	    len > o->hdr_len && len - o->hdr_len > o->gso_size) {
		h[VNET_OFF_GSO_TYPE] = gso_type[o->gso];
		le16_wr(h + VNET_OFF_GSO_SIZE, o->gso_size);
	}
}

void vnet_csum_complete(uint8_t *frame, size_t len, const struct pkt_off *o)
{
	size_t start = o->csum_start, field = start + o->csum_off;
	uint16_t sum;

	if (!o->csum_partial || field + 2 > len)
		return;
	/* The field holds the pseudo-header sum: summing over it adds it. */
	sum = csum_fold(csum_add(0, frame + start, len - start));
	if (!sum && o->csum_off == UDP_OFF_CSUM)	/* UDP: 0, "none" */
		sum = 0xffff;
	wr16(frame + field, sum);
}
