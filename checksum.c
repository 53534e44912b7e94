/* checksum.c - Internet checksum (RFC 1071), with pseudo-headers.
 *
 * The running sum is kept in 64 bits while summing 32-bit chunks, which
 * the compiler vectorises well, then folded. All results are in host order;
 * callers store them with wr16() into the big-endian field.
 */
#include "checksum.h"
#include "util.h"

uint32_t csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t s = sum;

	while (len >= 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		w = ntohl(w);
		s += (w >> 16) + (w & 0xffff);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		s += rd16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t csum(const void *buf, size_t len)
{
	return csum_fold(csum_add(0, buf, len));
}

uint32_t csum_pseudo4(struct in_addr src, struct in_addr dst, uint8_t proto,
		      uint32_t l4len)
{
	uint32_t sum = 0;

	sum = csum_add(sum, &src, 4);
	sum = csum_add(sum, &dst, 4);
	return sum + proto + (l4len >> 16) + (l4len & 0xffff);
}

uint32_t csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, uint32_t l4len)
{
	uint32_t sum = 0;

	sum = csum_add(sum, src, 16);
	sum = csum_add(sum, dst, 16);
	return sum + proto + (l4len >> 16) + (l4len & 0xffff);
}

uint16_t csum_l4_4(struct in_addr src, struct in_addr dst, uint8_t proto,
		   const void *l4, size_t len)
{
	return csum_fold(csum_add(csum_pseudo4(src, dst, proto, (uint32_t)len),
				  l4, len));
}

uint16_t csum_l4_6(const struct in6_addr *src, const struct in6_addr *dst,
		   uint8_t proto, const void *l4, size_t len)
{
	return csum_fold(csum_add(csum_pseudo6(src, dst, proto, (uint32_t)len),
				  l4, len));
}
