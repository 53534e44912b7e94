/* checksum.c - Internet checksum (RFC 1071), with pseudo-headers.
 *
 * This is on the data path (every TCP segment's checksum is verified and
 * computed), so csum_add() sums 64-bit words; see its comment. All
 * results are in host order; callers store them with wr16() into the
 * big-endian field. x86-64 (little-endian) only, like the rest of ferry.
 */
#include "checksum.h"
#include "util.h"

/* fold64() - end-around-carry fold of a 64-bit ones'-complement sum to
 * 16 bits. */
static uint16_t fold64(uint64_t s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* csum_add() - the ones'-complement sum is independent of byte order up
 * to a final byte swap (RFC 1071 section 2(B)), so whole 64-bit words are
 * added in native order into a 128-bit accumulator (add + add-with-carry
 * per 8 bytes), folded, and swapped once at the end. A trailing partial
 * word is zero-padded, which keeps an odd last byte in the high half of
 * its 16-bit word, as the RFC requires. */
uint32_t csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	unsigned __int128 acc = 0;
	uint64_t w, lo, hi, s;
	uint16_t r;

	while (len >= 32) {
		uint64_t a, b, c, d;

		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		memcpy(&c, p + 16, 8);
		memcpy(&d, p + 24, 8);
		acc += a;
		acc += b;
		acc += c;
		acc += d;
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		memcpy(&w, p, 8);
		acc += w;
		p += 8;
		len -= 8;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		acc += w;
	}
	lo = (uint64_t)acc;
	hi = (uint64_t)(acc >> 64);
	s = lo + hi;
	s += s < lo;			/* end-around carry */
	r = fold64(s);
	r = (uint16_t)(r >> 8 | r << 8);	/* native (LE) -> network */
	return (uint32_t)r + (sum & 0xffff) + (sum >> 16);
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
