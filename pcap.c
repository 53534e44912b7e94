/* pcap.c - placeholder until capture lands. */
#include "ferry.h"
#include "pcap.h"

void pcap_init(struct ctx *c)
{
	c->pcap_fd = -1;
}

void pcap_frames(struct ctx *c, const struct iovec *iov, size_t n)
{
	(void)c;
	(void)iov;
	(void)n;
}
