/* pcap.h - see pcap.c. */
#ifndef FERRY_PCAP_H
#define FERRY_PCAP_H

#include <stddef.h>
#include <sys/uio.h>

struct ctx;

/* pcap_init() - open conf.pcap_file (if set) and write the file header;
 * exits with a clear message on failure. */
void pcap_init(struct ctx *c);
/* pcap_frames() - record n frames (iov[i] is one whole Ethernet frame). */
void pcap_frames(struct ctx *c, const struct iovec *iov, size_t n);

#endif /* FERRY_PCAP_H */
