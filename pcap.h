/* pcap.h - see pcap.c: capture guest frames to a pcap file. */
#ifndef FERRY_PCAP_H
#define FERRY_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct ctx;

#define PCAP_MAGIC_US		0xa1b2c3d4u	/* microsecond timestamps */
#define PCAP_LINKTYPE_ETHERNET	1
#define PCAP_SNAPLEN		262144u		/* > FRAME_MAX: never cut */
#define PCAP_BATCH		512		/* frames per writev (IOV_MAX/2) */
/* Size cap of the capture file: the record that would pass it is not
 * written, capture stops with one log line (build-time override). */
#ifndef PCAP_MAX_BYTES
#define PCAP_MAX_BYTES		(2ull << 30)
#endif

/* File and record headers, host byte order (the magic tells readers). */
struct pcap_file_hdr {
	uint32_t magic;
	uint16_t major, minor;
	int32_t thiszone;
	uint32_t sigfigs;
	uint32_t snaplen;
	uint32_t linktype;
};

struct pcap_rec_hdr {
	uint32_t sec, usec;
	uint32_t caplen;		/* bytes stored */
	uint32_t len;			/* bytes on the wire */
};

_Static_assert(sizeof(struct pcap_file_hdr) == 24, "pcap file header");
_Static_assert(sizeof(struct pcap_rec_hdr) == 16, "pcap record header");

/* pcap_init() - open conf.pcap_file (if set) and write the file header;
 * exits with a clear message on failure. */
void pcap_init(struct ctx *c);
/* pcap_open() - create/truncate path and write the file header.
 * Returns the fd or -errno. */
int pcap_open(const char *path);
/* pcap_frames() - record n frames (iov[i] is one whole Ethernet frame).
 * On a write error, or at PCAP_MAX_BYTES: warn once, close the file, stop
 * capturing (the file stays a valid capture: whole records only). */
void pcap_frames(struct ctx *c, const struct iovec *iov, size_t n);

#endif /* FERRY_PCAP_H */
