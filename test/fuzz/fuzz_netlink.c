/* fuzz_netlink.c - libFuzzer target: rtnetlink reply parsing (netlink.c).
 *
 * netlink.c is compiled into this file with its socket calls replaced:
 * send() accepts the request, recvmsg() returns the fuzz input as
 * reply datagrams, and the sequence number is fixed at 0 so fuzzed
 * replies can match it. Everything past the kernel boundary runs for
 * real: nl_xfer()'s message walk, the error/done handling and the route,
 * link and address parsers with their attribute checks.
 *
 * Input: byte 0 picks the query (default route v4/v6, link, address
 * v4/v6, address table v4/v6, route table v4/v6); the rest is datagrams,
 * each [2-byte big-endian length][bytes].
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

static const uint8_t *fz_data;
static size_t fz_size, fz_off;

static ssize_t fz_send(int fd, const void *buf, size_t len, int flags)
{
	(void)fd;
	(void)buf;
	(void)flags;
	return (ssize_t)len;
}

static ssize_t fz_recvmsg(int fd, struct msghdr *mh, int flags)
{
	size_t len, n;

	(void)fd;
	(void)flags;
	mh->msg_flags = 0;
	if (fz_size - fz_off < 2) {
		errno = EAGAIN;
		return -1;
	}
	len = (size_t)fz_data[fz_off] << 8 | fz_data[fz_off + 1];
	fz_off += 2;
	len = len < fz_size - fz_off ? len : fz_size - fz_off;
	n = len < mh->msg_iov[0].iov_len ? len : mh->msg_iov[0].iov_len;
	if (n < len)
		mh->msg_flags = MSG_TRUNC;
	memcpy(mh->msg_iov[0].iov_base, fz_data + fz_off, n);
	fz_off += len;
	return (ssize_t)n;
}

static void fz_random_bytes(void *buf, size_t len)
{
	memset(buf, 0, len);
}

#define send		fz_send
#define recvmsg		fz_recvmsg
#define random_bytes	fz_random_bytes
#include "netlink.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nl_addr atab[3];
	struct nl_route rtab[3];
	uint8_t addr[16], mac[6];
	char name[IFNAMSIZ];
	unsigned int ifindex, mtu;
	int plen;

	if (!size)
		return 0;
	fz_data = data;
	fz_size = size;
	fz_off = 1;
	switch (data[0] % 9) {
	case 0:
		nl_default_route(-1, AF_INET, data[0] & 0x80 ? 2 : 0, &ifindex,
				 addr);
		break;
	case 1:
		nl_default_route(-1, AF_INET6, 0, &ifindex, addr);
		break;
	case 2:
		nl_link_get(-1, 2, name, &mtu, mac);
		break;
	case 3:
		nl_addr_get(-1, AF_INET, 2, addr, &plen);
		break;
	case 4:
		nl_addr_get(-1, AF_INET6, 2, addr, &plen);
		break;
	case 5:
	case 6:
		nl_addr_dump(-1, data[0] % 9 == 5 ? AF_INET : AF_INET6, 2,
			     atab, (int)ARRAY_SIZE(atab));
		break;
	default:
		nl_route_dump(-1, data[0] % 9 == 7 ? AF_INET : AF_INET6, 2,
			      rtab, (int)ARRAY_SIZE(rtab));
		break;
	}
	return 0;
}
