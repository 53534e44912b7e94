/* notify.c - the caller's hand-shake through inherited file descriptors.
 *
 * Theory of operation
 *
 * A caller that keeps ferry in the foreground and supervises it (podman
 * running it as slirp4netns, see slirp.c; a service manager; a script)
 * needs two things a pid file does not give: to know when the network is
 * up, and a way to end ferry that cannot be lost if the caller dies.
 *
 * --ready-fd FD: once the whole set-up is done (guest link, listeners,
 * the sandbox and seccomp included), ferry writes the byte "1" to FD and
 * closes it. A caller blocked reading the other end of a pipe wakes then,
 * or at EOF if ferry died during set-up.
 *
 * --exit-fd FD: ferry watches FD; when it becomes readable (a byte, or
 * EOF because the caller closed or lost the write end of the pipe) ferry
 * exits as when its namespace goes away: it drains the open connections
 * (drain.c, --linger) and ends. It is told once: the fd is closed then.
 *
 * Both fds are checked at start-up (an fd that is not open is a one-line
 * error, exit 1) and marked close-on-exec, so the namespace command does
 * not inherit them and cannot hold the caller's pipe open.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "drain.h"
#include "ev.h"
#include "ferry.h"
#include "log.h"
#include "notify.h"

/* seccomp(setup): fcntl
 *   (notify_init(): the fds are open; FD_CLOEXEC) */
/* seccomp(all): write close
 *   (notify_ready(): the byte and the close; notify_exit_handler()) */

/* fd_keep() - fd is open: mark it close-on-exec; else die naming opt. */
static void fd_keep(int fd, const char *opt)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		die("%s: %d is not an open file descriptor", opt, fd);
}

void notify_init(struct ctx *c)
{
	union eref ref = { .type = EREF_EXIT_FD };

	if (c->conf.ready_fd >= 0)
		fd_keep(c->conf.ready_fd, "--ready-fd");
	if (c->conf.exit_fd < 0)
		return;
	fd_keep(c->conf.exit_fd, "--exit-fd");
	if (ep_add(c, c->conf.exit_fd, EPOLLIN, ref))
		die("--exit-fd: cannot watch %d: %s", c->conf.exit_fd,
		    strerror(errno));
}

void notify_ready(struct ctx *c)
{
	int fd = c->conf.ready_fd;

	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		warn("--ready-fd: writing to %d: %s", fd, strerror(errno));
	close(fd);
	c->conf.ready_fd = -1;
}

void notify_exit_handler(struct ctx *c, uint32_t events)
{
	(void)events;
	ep_del(c, c->conf.exit_fd);
	close(c->conf.exit_fd);
	c->conf.exit_fd = -1;
	drain_begin(c, "exit fd readable (the caller asked ferry to exit)");
}
