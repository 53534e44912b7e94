/* vm.c - VM mode: serve one qemu at a time on a UNIX stream socket.
 *
 * ferry listens on -s PATH (default: the first free /tmp/ferry_N.socket,
 * printed at start-up), or adopts an inherited connected socket with -F.
 * One client is served at a time: a second connection while one is
 * active is refused (closed at once). When the client goes away, ferry
 * waits for the next one, or exits with --one-off (libvirt's usage).
 * Frames move through the stream backend (tap_stream.c), or with
 * --vhost-user the socket carries vhost-user control messages
 * (vhost_user.c) and frames move through the guest's rings (tap_vu.c);
 * every frame decision is the shared link code's, exactly as in
 * namespace mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ferry.h"
#include "log.h"
#include "migrate.h"
#include "util.h"
#include "vhost_user.h"
#include "vm.h"

/* seccomp(vm vu): accept4 close
 *   (the next client) */
/* seccomp(setup): bind connect getpid link linkat listen newfstatat */
/* seccomp(setup): setsockopt socket unlink unlinkat
 *   (bind_path(), listen_socket(): temporary names, stale sockets) */
/* seccomp(setup): openat read write brk mmap munmap
 *   (stale_socket(): /proc/net/unix, read before listening) */

#define SOCKET_TRIES	64

/* listen_at() - a listening socket bound to path; fd or -errno. */
static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, rc;

	if (!str_copy(a.sun_path, path, sizeof(a.sun_path)))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* bind_path() - listen on path; returns fd or -errno. The socket is
 * bound and listening under a temporary name first, then linked to path
 * (failing if path exists), so a client that sees path never finds it
 * refusing connections (bind creates the file before listen). */
static int bind_path(const char *path)
{
	char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd, n, rc;

	n = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return listen_at(path);		/* no room: bind directly */
	unlink(tmp);
	fd = listen_at(tmp);
	if (fd < 0)
		return fd;
	rc = link(tmp, path) ? -(errno == EEXIST ? EADDRINUSE : errno) : 0;
	unlink(tmp);
	if (rc) {
		close(fd);
		/* a filesystem without hard links: bind directly */
		return rc == -EADDRINUSE ? rc : listen_at(path);
	}
	return fd;
}

/* unix_name_is() - does the bound name from /proc/net/unix match path,
 * itself or the temporary name bind_path() binds first ("PATH.PID.tmp",
 * the name the kernel keeps showing after the link)? */
static bool unix_name_is(const char *name, const char *path)
{
	size_t n = strlen(path);
	const char *p;

	if (strncmp(name, path, n))
		return false;
	if (!name[n])
		return true;
	if (name[n] != '.' || !name[n + 1])
		return false;
	for (p = name + n + 1; *p >= '0' && *p <= '9'; p++)
		;
	return p > name + n + 1 && !strcmp(p, ".tmp");
}

/* listening_here() - does a socket in this network namespace listen at
 * path (/proc/net/unix: the listening flag, __SO_ACCEPTCON)? Lets a
 * second ferry tell a live socket without connecting to it, which the
 * first would take for a guest that came and went. */
static bool listening_here(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char line[PATH_MAX + 128];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* Num RefCount Protocol Flags Type St Inode Path */
		char *save = NULL, *tok = strtok_r(line, " \n", &save);
		unsigned long flags = 0;
		int i;

		for (i = 1; tok && i < 8; i++) {
			tok = strtok_r(NULL, " \n", &save);
			if (i == 3 && tok)
				flags = strtoul(tok, NULL, 16);
		}
		found = tok && (flags & 0x10000) && unix_name_is(tok, path);
	}
	fclose(f);
	return found;
}

/* stale_socket() - is path a socket nobody listens on any more? A socket
 * this namespace shows listening there is live without a probe; else a
 * connect() decides (another namespace's listener answers it). */
static bool stale_socket(const char *path)
{
	return !listening_here(path) && unix_refused(path);
}

/* listen_socket() - the listening socket: at -s PATH, else at the first
 * free /tmp/ferry_N.socket (stored in f); stale sockets (nobody accepting)
 * are replaced. Dies when none can be had. */
static int listen_socket(struct conf *f)
{
	char path[sizeof(f->socket_path)];
	int i, fd;

	if (f->socket_path[0]) {
		struct stat st;

		if (stale_socket(f->socket_path))
			unlink(f->socket_path);
		else if (!stat(f->socket_path, &st) && !S_ISSOCK(st.st_mode))
			die("--socket: %s exists and is not a socket",
			    f->socket_path);
		fd = bind_path(f->socket_path);
		if (fd == -EADDRINUSE)
			die("--socket: %s is in use: another process listens "
			    "there", f->socket_path);
		if (fd < 0)
			die("--socket: cannot listen on %s: %s", f->socket_path,
			    strerror(-fd));
		return fd;
	}
	for (i = 1; i <= SOCKET_TRIES; i++) {
		snprintf(path, sizeof(path), "/tmp/ferry_%d.socket", i);
		if (stale_socket(path))
			unlink(path);
		fd = bind_path(path);
		if (fd >= 0) {
			str_copy(f->socket_path, path, sizeof(f->socket_path));
			return fd;
		}
	}
	die("cannot find a free socket path /tmp/ferry_N.socket; use --socket");
}

/* attach_client() - start serving a connected stream socket. Its send
 * buffer is made as large as allowed (net.core.wmem_max): a write that
 * the socket takes only in part stalls the link (see tap_stream.c). The
 * test build takes another size from FERRY_TEST_SNDBUF (a host with the
 * default wmem_max, whatever this one has). */
static void attach_client(struct ctx *c, int fd)
{
	union eref ref = { .type = EREF_LINK };
	int big = (int)MIN(test_env_u32("FERRY_TEST_SNDBUF", INT_MAX),
			   (uint32_t)INT_MAX);

	if (c->conf.vhost_user) {
		if (fd_set_nonblock(fd))
			die("cannot use the vhost-user socket: %s",
			    strerror(errno));
		vu_attach(c, fd);
		info("vhost-user front-end connected");
		return;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)))
		debug("guest socket: SO_SNDBUF: %s", strerror(errno));

	if (fd_set_nonblock(fd) ||
	    ep_add(c, fd, EPOLLIN | EPOLLRDHUP, ref))
		die("cannot use the guest socket: %s", strerror(errno));
	tap_attach(c, &link_stream_ops, fd);
	c->link.rx.backlog = false;	/* matches the events just added */
	info("guest connected");
}

void vm_start(struct ctx *c)
{
	union eref ref = { .type = EREF_LINK_LISTEN };

	if (c->conf.vhost_user) {
		vu_init(c);
		migrate_init(c);
		vu_state_ops_set(c, &migrate_vu_ops);
	}
	if (c->conf.fd >= 0) {
		struct stat st;

		if (fstat(c->conf.fd, &st))
			die("--fd: %d: %s", c->conf.fd, strerror(errno));
		if (!S_ISSOCK(st.st_mode))
			die("--fd: %d is not a socket", c->conf.fd);
		attach_client(c, c->conf.fd);
		c->conf.one_off = true;		/* nothing to wait for after */
		return;
	}
	c->link.listen_fd = listen_socket(&c->conf);
	unix_file_keep(&c->sock_file, c->conf.socket_path);	/* vm_stop() */
	c->link.spare_fd = spare_fd_open();
	if (ep_add(c, c->link.listen_fd, EPOLLIN, ref))
		die("epoll: %s", strerror(errno));
	info("UNIX domain socket bound at %s", c->conf.socket_path);
	if (c->conf.vhost_user)
		info("qemu: -chardev socket,id=c0,path=%s -netdev vhost-user,"
		     "id=n0,chardev=c0 -device virtio-net-pci,netdev=n0 "
		     "-object memory-backend-memfd,id=mem,size=RAM,share=on "
		     "-numa node,memdev=mem", c->conf.socket_path);
	else
		info("qemu: -netdev stream,id=n0,server=off,addr.type=unix,"
		     "addr.path=%s -device virtio-net-pci,netdev=n0",
		     c->conf.socket_path);
}

void vm_listen_handler(struct ctx *c, uint32_t events)
{
	int fd;

	(void)events;
	for (;;) {
		fd = accept4(c->link.listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE) &&
			    accept_refuse_spare(c->link.listen_fd,
						&c->link.spare_fd)) {
				warn("out of file descriptors: refusing a "
				     "guest connection");
				continue;
			}
			return;
		}
		if (c->link.up) {
			info("refusing a second guest connection");
			close(fd);
			continue;
		}
		attach_client(c, fd);
	}
}

void vm_link_closed(struct ctx *c)
{
	if (c->link.vu && c->link.fd >= 0)
		vu_detach(c);
	if (c->link.fd >= 0) {
		ep_del(c, c->link.fd);
		close(c->link.fd);
	}
	tap_detach(c);
	info("guest disconnected");
	if (c->conf.one_off || c->link.listen_fd < 0) {
		c->quit = true;
		c->exit_code = 0;
	}
}

void vm_stop(const struct ctx *c)
{
	if (c->link.listen_fd >= 0 && c->conf.socket_path[0])
		unix_file_remove(&c->sock_file, c->conf.socket_path);
}
