/* fwd_scan.h - see fwd_scan.c: which ports are bound, from /proc/net. */
#ifndef FERRY_FWD_SCAN_H
#define FERRY_FWD_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* fwd_scan_line() - the local port of one line of /proc/net/{tcp,udp}[6]
 * when that socket is one "auto" forwarding follows (TCP: listening;
 * UDP: bound and unconnected), else 0 (header, other states, bad lines). */
uint16_t fwd_scan_line(const char *line, size_t len, uint8_t proto);

/* fwd_scan_fd() - read the whole table behind fd (a /proc/net file, read
 * again from its start on every call) and set the bit of every port
 * fwd_scan_line() reports in map (65536 bits; bits are only set, never
 * cleared). Returns 0 or -errno. */
int fwd_scan_fd(int fd, uint8_t proto, uint64_t *map);

/* fwd_scan() - fwd_scan_fd() on a path (e.g. "/proc/net/udp6",
 * "/proc/1234/net/tcp"). Returns 0 or -errno. */
int fwd_scan(const char *path, uint8_t proto, uint64_t *map);

#endif /* FERRY_FWD_SCAN_H */
