/* pcap.c - capture of every guest-side frame to a pcap file (--pcap).
 *
 * Theory of operation: the file is the classic libpcap format (what
 * tcpdump, tshark and wireshark read): a 24-byte file header (magic
 * 0xa1b2c3d4 in host byte order = microsecond timestamps, version 2.4,
 * link type 1 = Ethernet, snap length PCAP_SNAPLEN), then per frame a
 * 16-byte record header (seconds, microseconds, captured length, original
 * length) followed by the frame bytes.
 *
 * tap.c (received) and tap_tx.c (sent) call pcap_frames() once per batch, so the
 * capture is the same for every guest backend. A batch is written with
 * one writev(): record headers are built in a fixed array on the stack
 * and interleaved with the frames' own iovecs; nothing is allocated. All
 * frames of a batch share one CLOCK_REALTIME timestamp.
 *
 * Failing to open the file is a start-up error (exit 1, one line naming
 * --pcap). A write error later is reported once and capture stops: a
 * full disk must not take the guest's network down.
 *
 * Size cap. The file never grows past PCAP_MAX_BYTES (2 GiB: a few
 * seconds of bulk traffic, far more than a debugging session reads; also
 * within the signed 32-bit offsets of old readers): the first record that
 * would cross it is not written, one line says capture stopped, and the
 * file is closed, holding whole records only. There is no option: the
 * cap is a guard against filling the disk unattended (passt's manual
 * documents no limit for its --pcap), not a rotation scheme.
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>

#include "ferry.h"
#include "log.h"
#include "pcap.h"
#include "util.h"

/* seccomp(all): clock_gettime writev
 *   (a record per frame) */
/* seccomp(setup): openat close */

/* pcap_open() - create path and write the file header: fd or -errno. */
int pcap_open(const char *path)
{
	struct pcap_file_hdr h = {
		.magic = PCAP_MAGIC_US, .major = 2, .minor = 4,
		.snaplen = PCAP_SNAPLEN, .linktype = PCAP_LINKTYPE_ETHERNET,
	};
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc;

	if (fd < 0)
		return -errno;
	rc = write_all(fd, &h, sizeof(h));
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

void pcap_init(struct ctx *c)
{
	int fd;

	c->pcap_fd = -1;
	if (!c->conf.pcap_file[0])
		return;
	fd = pcap_open(c->conf.pcap_file);
	if (fd < 0)
		die("--pcap %s: cannot write capture file: %s",
		    c->conf.pcap_file, strerror(-fd));
	c->pcap_fd = fd;
	c->pcap_bytes = sizeof(struct pcap_file_hdr);
	info("capturing guest frames to %s", c->conf.pcap_file);
}

/* pcap_stop() - a write failed: say so once, stop capturing. */
static void pcap_stop(struct ctx *c, int e)
{
	warn("--pcap: write failed (%s): capture stopped", strerror(e));
	close(c->pcap_fd);
	c->pcap_fd = -1;
}

/* pcap_full() - the next record would pass PCAP_MAX_BYTES: say so once,
 * stop capturing. */
static void pcap_full(struct ctx *c)
{
	warn("--pcap: %s reached its size cap (%llu MiB): capture stopped",
	     c->conf.pcap_file, (unsigned long long)(PCAP_MAX_BYTES >> 20));
	close(c->pcap_fd);
	c->pcap_fd = -1;
}

/* pcap_writev() - write all of iov[0..n), resuming after short writes.
 * Consumes (modifies) iov. Returns 0 or an errno value. */
static int pcap_writev(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (w == 0)
			return EIO;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

void pcap_frames(struct ctx *c, const struct iovec *iov, size_t n)
{
	struct pcap_rec_hdr rh[PCAP_BATCH];
	struct iovec v[PCAP_BATCH * 2];
	struct timespec now;
	size_t i, done;

	if (c->pcap_fd < 0 || !n)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	for (done = 0; done < n; done += i) {
		bool full = false;
		int e = 0;

		for (i = 0; i < PCAP_BATCH && done + i < n; i++) {
			size_t len = iov[done + i].iov_len;
			size_t cap = MIN(len, (size_t)PCAP_SNAPLEN);

			if (c->pcap_bytes + sizeof(rh[i]) + cap >
			    PCAP_MAX_BYTES) {
				full = true;
				break;
			}
			c->pcap_bytes += sizeof(rh[i]) + cap;
			rh[i].sec = (uint32_t)now.tv_sec;
			rh[i].usec = (uint32_t)(now.tv_nsec / 1000);
			rh[i].caplen = (uint32_t)cap;
			rh[i].len = (uint32_t)MIN(len, (size_t)UINT32_MAX);
			v[2 * i].iov_base = &rh[i];
			v[2 * i].iov_len = sizeof(rh[i]);
			v[2 * i + 1].iov_base = iov[done + i].iov_base;
			v[2 * i + 1].iov_len = cap;
		}
		if (i)
			e = pcap_writev(c->pcap_fd, v, (int)(2 * i));
		if (e) {
			pcap_stop(c, e);
			return;
		}
		if (full) {
			pcap_full(c);
			return;
		}
	}
}
