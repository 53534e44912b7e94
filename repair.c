/* repair.c - switching TCP sockets into and out of repair mode, for the
 * live migration of their connections (tcp_repair.c, migrate.c).
 *
 * Theory of operation: TCP_REPAIR lets a process read a connection's
 * sequence numbers and queues and close it without a FIN or an RST, and
 * build it again elsewhere without a handshake. Setting it needs
 * CAP_NET_ADMIN over the socket's network namespace; ferry has none (it
 * gives all up, priv.c), and should not get one for this. So, as passt
 * does with passt-repair, a small helper holds the capability and does
 * only that: ferry listens on --repair-path (a UNIX socket made before
 * the sandbox, like the control socket), the helper connects, and
 * ferry sends it sockets (SCM_RIGHTS, at most REPAIR_FDS_MAX a message)
 * with a one-byte command: repair on (1), off (0), off without the
 * window probe (-1). The helper sets TCP_REPAIR to that value on each
 * socket, closes its copies, and echoes the byte; at the end of file it
 * exits. Every other repair call (TCP_REPAIR_QUEUE, TCP_QUEUE_SEQ,
 * TCP_REPAIR_WINDOW, TCP_REPAIR_OPTIONS) needs only a socket already in
 * repair mode, so ferry makes them itself.
 *
 * The helper is this same binary: `ferry repair PATH`, or a link named
 * passt-repair with passt-repair's command line (the socket's path). It
 * makes itself undumpable and takes no new privileges; it never runs
 * ferry's filter (it is not ferry's process). Like passt, ferry never
 * sets TCP_REPAIR itself, even where it could: the helper is the one
 * place the capability lives.
 *
 * One more command, for `ferry repair` only: REPAIR_FREEZE (2) gives
 * each socket a filter dropping every segment, then sets repair mode. A
 * socket in repair mode still acknowledges what the peer sends, which
 * would be lost after its queues were read (tcp_repair.c); attaching the
 * filter needs a capability where ferry has none (EPERM on this kernel
 * without CAP_NET_ADMIN or CAP_BPF), so the helper does it. `ferry
 * repair` says REPAIR_HELLO as it connects, and ferry uses the command
 * only then: passt-repair (upstream's, or this one under that name) is
 * spoken to as passt speaks to it, and bytes arriving while its sockets
 * are in repair mode may be lost.
 *
 * One helper at a time: another is accepted and closed at once. A
 * batch waits for its echo REPAIR_REPLY_MS at most; a helper that does
 * not answer, or answers something else, is dropped (the migration then
 * carries no sockets).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/filter.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ferry.h"
#include "log.h"
#include "repair.h"
#include "util.h"

/* seccomp(vu): accept4 close sendmsg recvfrom poll getsockopt epoll_ctl
 *   (the helper's connection, its batches and echoes) */
/* seccomp(setup): socket bind listen umask unlink unlinkat
 *   (the listening socket, before the sandbox) */
/* seccomp(setup): prctl connect recvmsg setsockopt sendto close write */
/* seccomp(setup): exit_group newfstatat brk mmap socket
 *   (the helper process, which never installs ferry's filter) */

struct repair_state {
	int listen_fd;
	struct file_id id;		/* its socket file, as bound */
	int fd;				/* the helper, -1: none */
	bool freeze;			/* it said REPAIR_HELLO */
	int8_t cmd;			/* the queued batch's command */
	unsigned int nfds;
	int fds[REPAIR_FDS_MAX];
};

/* --- the helper ----------------------------------------------------- */

/* helper_cmd_ok() - is cmd one of the commands (freeze: ferry's)? */
static bool helper_cmd_ok(int8_t cmd, bool freeze)
{
	return cmd == REPAIR_ON || cmd == REPAIR_OFF ||
	       cmd == REPAIR_OFF_NO_WP || (freeze && cmd == REPAIR_FREEZE);
}

/* helper_freeze() - a filter on s that drops every segment. */
static int helper_freeze(int s)
{
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = { .len = 1, .filter = &drop };

	return setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog));
}

/* helper_fds() - the sockets of message mh into fds; their number, or
 * 0 if the control data is missing or malformed. */
static unsigned int helper_fds(struct msghdr *mh, int *fds)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);
	size_t n;

	if (!cm || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS || (mh->msg_flags & MSG_CTRUNC) ||
	    cm->cmsg_len < CMSG_LEN(sizeof(int)))
		return 0;
	n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	if (!n || n > REPAIR_FDS_MAX || CMSG_LEN(n * sizeof(int)) !=
					 cm->cmsg_len)
		return 0;
	memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
	return (unsigned int)n;
}

/* helper_serve() - answer ferry on s until the end of file (freeze:
 * REPAIR_FREEZE is known); the exit status. */
static int helper_serve(int s, bool freeze)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * REPAIR_FDS_MAX)];
		struct cmsghdr align;
	} u;
	int fds[REPAIR_FDS_MAX];

	for (;;) {
		int8_t cmd = 0;
		struct iovec iov = { &cmd, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		unsigned int i, n;
		ssize_t r = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
		int op;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return 0;
		if (r < 0) {
			fprintf(stderr, "repair: recvmsg: %s\n",
				strerror(errno));
			return 1;
		}
		if (!(n = helper_fds(&mh, fds))) {
			fprintf(stderr, "repair: no or bad sockets in a "
				"message\n");
			return 1;
		}
		if (!helper_cmd_ok(cmd, freeze)) {
			fprintf(stderr, "repair: unknown command %d\n", cmd);
			return 1;
		}
		op = cmd == REPAIR_FREEZE ? REPAIR_ON : cmd;
		for (i = 0; i < n; i++) {
			if (cmd == REPAIR_FREEZE && helper_freeze(fds[i])) {
				fprintf(stderr, "repair: filter: %s\n",
					strerror(errno));
				return 1;
			}
			if (setsockopt(fds[i], IPPROTO_TCP, TCP_REPAIR, &op,
				       sizeof(op))) {
				fprintf(stderr, "repair: TCP_REPAIR %d: %s\n",
					op, strerror(errno));
				return 1;
			}
			close(fds[i]);
		}
		if (send(s, &cmd, 1, MSG_NOSIGNAL) != 1) {
			fprintf(stderr, "repair: reply: %s\n",
				strerror(errno));
			return 1;
		}
	}
}

int repair_main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	bool ours = strcmp(basename(argv[0]), "passt-repair");
	const char hello = REPAIR_HELLO;
	struct stat st;
	int s;

	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (argc != 2) {
		fprintf(stderr, "Usage: %s PATH\n", argv[0]);
		return 2;
	}
	if (!str_copy(a.sun_path, argv[1], sizeof(a.sun_path))) {
		fprintf(stderr, "repair: path too long: %s\n", argv[1]);
		return 2;
	}
	if (stat(argv[1], &st) || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "repair: %s is not a socket\n", argv[1]);
		return 2;
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "repair: cannot connect to %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	if (ours && send(s, &hello, 1, MSG_NOSIGNAL) != 1) {
		fprintf(stderr, "repair: hello: %s\n", strerror(errno));
		return 1;
	}
	return helper_serve(s, ours);
}

/* --- ferry's side --------------------------------------------------- */

void repair_init(struct ctx *c)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	union eref ref = { .type = EREF_REPAIR_LISTEN };
	const char *path = c->conf.repair_path;
	struct repair_state *r;
	mode_t old;
	int fd, rc = 0;

	if (!c->conf.vhost_user)
		return;
	if (!c->conf.repair_path_set && c->conf.socket_path[0] &&
	    snprintf(c->conf.repair_path, sizeof(c->conf.repair_path),
		     "%s.repair", c->conf.socket_path) >=
	    (int)sizeof(c->conf.repair_path))
		c->conf.repair_path[0] = '\0';	/* too long: no default */
	if (!path[0])
		return;
	if (!str_copy(a.sun_path, path, sizeof(a.sun_path)))
		die("--repair-path: too long: %s", path);
	if (unix_refused(path))		/* a ferry that died left it */
		unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("--repair-path: socket: %s", strerror(errno));
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1))
		rc = errno;
	umask(old);
	if (rc)
		die("--repair-path: cannot listen on %s: %s", path,
		    strerror(rc));
	r = alloc_startup(sizeof(*r));
	r->listen_fd = fd;
	r->id = file_id_at(AT_FDCWD, path);
	r->fd = -1;
	c->repair = r;
	if (ep_add(c, fd, EPOLLIN, ref))
		die("--repair-path: epoll: %s", strerror(errno));
	info("repair helper socket at %s", path);
}

/* helper_close() - forget the helper (and a batch queued for it). */
static void helper_close(struct ctx *c)
{
	struct repair_state *r = c->repair;

	if (r->fd < 0)
		return;
	ep_del(c, r->fd);
	close(r->fd);
	r->fd = -1;
	r->nfds = 0;
	info("repair helper gone");
}

/* read_hello() - did the new helper on fd say REPAIR_HELLO (within
 * REPAIR_WAIT_MS: it does so as it connects)? */
static bool read_hello(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b = 0;

	return poll(&p, 1, REPAIR_WAIT_MS) == 1 &&
	       recv(fd, &b, 1, MSG_DONTWAIT) == 1 && b == REPAIR_HELLO;
}

/* helper_accept() - take a connecting helper; true if one was taken. */
static bool helper_accept(struct ctx *c)
{
	struct repair_state *r = c->repair;
	union eref ref = { .type = EREF_REPAIR };
	struct ucred u = { .pid = 0 };
	socklen_t ul = sizeof(u);
	int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return false;
	if (r->fd >= 0) {
		info("repair helper refused: one is connected already");
		close(fd);
		return false;
	}
	if (ep_add(c, fd, EPOLLRDHUP, ref)) {
		close(fd);
		return false;
	}
	r->fd = fd;
	r->freeze = read_hello(fd);
	getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &u, &ul);
	info("repair helper connected (pid %d, %s)", (int)u.pid,
	     r->freeze ? "ferry repair" : "passt-repair");
	return true;
}

void repair_listen_handler(struct ctx *c, uint32_t events)
{
	(void)events;
	while (helper_accept(c))
		;
}

void repair_handler(struct ctx *c, uint32_t events)
{
	(void)events;
	helper_close(c);
}

bool repair_available(struct ctx *c)
{
	struct repair_state *r = c->repair;
	struct pollfd p;

	if (!r)
		return false;
	if (r->fd >= 0)
		return true;
	p = (struct pollfd){ .fd = r->listen_fd, .events = POLLIN };
	if (poll(&p, 1, REPAIR_WAIT_MS) == 1)
		helper_accept(c);
	return r->fd >= 0;
}

/* wait_reply() - the helper's one-byte echo within REPAIR_REPLY_MS;
 * 0 or -errno. */
static int wait_reply(int fd, int8_t want)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int8_t got;
	ssize_t n;

	if (poll(&p, 1, REPAIR_REPLY_MS) != 1)
		return -ETIMEDOUT;
	n = recv(fd, &got, 1, MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	return got == want ? 0 : -EPROTO;
}

int repair_flush(struct ctx *c)
{
	struct repair_state *r = c->repair;
	union {
		char buf[CMSG_SPACE(sizeof(int) * REPAIR_FDS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf };
	struct cmsghdr *cm;
	int rc;

	if (!r || r->fd < 0)
		return -ENOTCONN;
	if (!r->nfds)
		return 0;
	iov = (struct iovec){ &r->cmd, 1 };
	memset(u.buf, 0, sizeof(u.buf));
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * r->nfds);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * r->nfds);
	memcpy(CMSG_DATA(cm), r->fds, sizeof(int) * r->nfds);
	r->nfds = 0;
	if (sendmsg(r->fd, &mh, MSG_NOSIGNAL) < 0)
		rc = -errno;
	else
		rc = wait_reply(r->fd, r->cmd);
	if (rc) {
		warn("repair helper: %s: dropped", strerror(-rc));
		helper_close(c);
	}
	return rc;
}

bool repair_can_freeze(const struct ctx *c)
{
	return c->repair && c->repair->fd >= 0 && c->repair->freeze;
}

int repair_set(struct ctx *c, int s, int cmd)
{
	struct repair_state *r = c->repair;
	int rc;

	if (!r || r->fd < 0)
		return -ENOTCONN;
	if (r->nfds && r->cmd != cmd && (rc = repair_flush(c)))
		return rc;
	r->cmd = (int8_t)cmd;
	r->fds[r->nfds++] = s;
	if (r->nfds == REPAIR_FDS_MAX)
		return repair_flush(c);
	return 0;
}

void repair_stop(const struct ctx *c)
{
	char name[sizeof(c->conf.repair_path)];
	char dir[sizeof(c->conf.socket_path)];
	struct unix_file f = { .dirfd = -1 };

	if (!c->repair)
		return;
	/* The sandbox may leave only the directory of the vhost-user
	 * socket open (c->sock_file): there, remove through it. Only the
	 * file bound, as for that socket: another ferry's stays. */
	str_copy(name, c->conf.repair_path, sizeof(name));
	str_copy(dir, c->conf.socket_path, sizeof(dir));
	if (!strcmp(dirname(dir), dirname(name)))
		f.dirfd = c->sock_file.dirfd;
	f.id = c->repair->id;
	unix_file_remove(&f, c->conf.repair_path);
}
