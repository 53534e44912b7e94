/* fuzz_scan.c - libFuzzer target: fwd_scan_fd(), the /proc/net/{tcp,udp}
 * table reader behind auto port forwarding (line splitting across reads,
 * field parsing). Input: byte 0 picks TCP (even) or UDP (odd); the rest
 * is the file's content, served from a memfd.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include "fwd_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t map[65536 / 64];
	static int fd = -1;

	if (!size)
		return 0;
	if (fd < 0 && (fd = memfd_create("fuzz_scan", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) || pwrite(fd, data + 1, size - 1, 0) !=
	    (ssize_t)(size - 1) || lseek(fd, 0, SEEK_SET))
		abort();
	memset(map, 0, sizeof(map));
	fwd_scan_fd(fd, data[0] & 1 ? IPPROTO_UDP : IPPROTO_TCP, map);
	return 0;
}
