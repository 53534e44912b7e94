/* test_util.c - util.c helpers that touch the kernel: the spare fd that
 * refuses a waiting connection when the process is out of descriptors
 * (accept_refuse_spare(), used by tcp_fwd.c and vm.c). Loopback only. */
#include <errno.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "unit.h"
#include "util.h"

/* lowest_free_fd() - the number the next open() would return. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

/* refuse_body() - lfd listens (non-blocking) with client waiting in its
 * queue; the fd limit is lowered to the lowest free number so accept()
 * fails; the spare must refuse the client (a reset) and come back. */
static void refuse_body(int lfd, int client, int *spare, bool *ok)
{
	struct rlimit rl;
	char b;
	int s;

	CHECK(!getrlimit(RLIMIT_NOFILE, &rl));
	rl.rlim_cur = (rlim_t)lowest_free_fd();
	CHECK(!setrlimit(RLIMIT_NOFILE, &rl));
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(s < 0 && errno == EMFILE);
	CHECK(accept_refuse_spare(lfd, spare));
	CHECK(*spare >= 0);
	/* Nothing waits any more: nothing refused, the spare stays. */
	CHECK(!accept_refuse_spare(lfd, spare));
	CHECK(*spare >= 0);
	CHECK(recv(client, &b, 1, 0) < 0 && errno == ECONNRESET);
	*ok = true;
}

TEST(util_accept_refuse_spare)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int lfd, client, spare, none = -1;
	struct rlimit rl;
	bool ok = false;

	CHECK(!getrlimit(RLIMIT_NOFILE, &rl));
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(lfd >= 0);
	CHECK(!bind(lfd, (struct sockaddr *)&a, sizeof(a)));
	CHECK(!listen(lfd, 4));
	CHECK(!getsockname(lfd, (struct sockaddr *)&a, &al));
	client = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(client >= 0);
	CHECK(!connect(client, (struct sockaddr *)&a, sizeof(a)));
	spare = spare_fd_open();
	CHECK(spare >= 0);
	CHECK(!accept_refuse_spare(lfd, &none));	/* no spare: no refusal */
	refuse_body(lfd, client, &spare, &ok);
	setrlimit(RLIMIT_NOFILE, &rl);
	close(spare);
	close(client);
	close(lfd);
	CHECK(ok);
}
