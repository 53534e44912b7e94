/* checksum.h - the Internet checksum (RFC 1071) and its IPv4/IPv6
 * pseudo-header variants for TCP, UDP and ICMPv6. */
#ifndef FERRY_CHECKSUM_H
#define FERRY_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* Add len bytes at buf to a 32-bit running sum (big-endian 16-bit words;
 * an odd trailing byte is padded with zero). Returns the new sum. */
uint32_t csum_add(uint32_t sum, const void *buf, size_t len);
/* Fold a running sum to 16 bits and complement it: the field value, in
 * host order (store with wr16()). */
uint16_t csum_fold(uint32_t sum);
/* Checksum of a buffer (IPv4 header, ICMPv4). */
uint16_t csum(const void *buf, size_t len);
/* Pseudo-header sums (RFC 793 / RFC 8200 section 8.1). */
uint32_t csum_pseudo4(struct in_addr src, struct in_addr dst, uint8_t proto,
		      uint32_t l4len);
uint32_t csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, uint32_t l4len);
/* Full L4 checksum over pseudo-header plus l4 bytes (checksum field must
 * be zero when computing, or left in place when verifying: a correct
 * packet then yields 0). */
uint16_t csum_l4_4(struct in_addr src, struct in_addr dst, uint8_t proto,
		   const void *l4, size_t len);
uint16_t csum_l4_6(const struct in6_addr *src, const struct in6_addr *dst,
		   uint8_t proto, const void *l4, size_t len);

#endif /* FERRY_CHECKSUM_H */
