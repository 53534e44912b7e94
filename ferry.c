/* ferry.c - program entry: mode, configuration, start-up.
 *
 * main() picks the mode (ferry ns | ferry vm, or the program name pasta /
 * passt), parses the configuration, sets up the guest link and the
 * protocol modules and every forwarding listener, detaches (unless in the
 * foreground), confines itself and gives up root (isolate.c, priv.c;
 * seccomp.c last),
 * only then lets the namespace command run, and runs the event loop
 * (loop.c). All state is in one struct ctx, allocated once here.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>

#include "ctl.h"
#include "ctl_cmd.h"
#include "ferry.h"
#include "igmp.h"
#include "isolate.h"
#include "log.h"
#include "nat.h"
#include "ndp.h"
#include "notify.h"
#include "ns.h"
#include "pcap.h"
#include "priv.h"
#include "repair.h"
#include "seccomp.h"
#include "slirp.h"
#include "util.h"
#include "vm.h"

/* seccomp(all): exit_group
 *   (returning from main()) */
/* seccomp(setup): brk clone close dup2 epoll_create1 getpid kill mmap */
/* seccomp(setup): newfstatat openat setsid write */

/* pick_mode() - from the program name or the first argument. Returns
 * the number of arguments consumed before the options. */
static int pick_mode(int argc, char **argv, enum mode *mode)
{
	char *name = basename(argv[0]);

	if (!strncmp(name, "pesto", 5))
		exit(pesto_main(argc, argv));
	if (!strcmp(name, "passt-repair"))
		exit(repair_main(argc, argv));
	if (argc > 1 && !strcmp(argv[1], "repair"))
		exit(repair_main(argc - 1, argv + 1));
	if (argc > 1 && !strcmp(argv[1], "ctl"))
		exit(ctl_main(argc - 1, argv + 1));
	if (slirp_named(name)) {
		*mode = MODE_NS;
		return 0;
	}
	if (!strncmp(name, "pasta", 5)) {
		*mode = MODE_NS;
		return 0;
	}
	if (!strncmp(name, "passt", 5)) {
		*mode = MODE_VM;
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "ns")) {
		*mode = MODE_NS;
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "vm")) {
		*mode = MODE_VM;
		return 1;
	}
	if (argc > 1 && (!strcmp(argv[1], "--version") ||
			 !strcmp(argv[1], "-v"))) {
		printf("ferry %s\n", FERRY_VERSION);
		exit(0);
	}
	if (argc > 1 && (!strcmp(argv[1], "--help") ||
			 !strcmp(argv[1], "-h"))) {
		printf("Usage: ferry ns [OPTIONS] [PID | --netns PATH | -- CMD [ARGS]]\n"
		       "       ferry vm [OPTIONS]\n"
		       "       ferry ctl PATH COMMAND ...  (ferry ctl --help)\n"
		       "       ferry repair PATH  (TCP_REPAIR helper, as "
		       "passt-repair)\n"
		       "Run 'ferry ns --help' or 'ferry vm --help' for the options.\n");
		exit(0);
	}
	fprintf(stderr, "ferry: first argument must be 'ns' or 'vm' "
		"(got '%s'); see ferry --help\n", argc > 1 ? argv[1] : "");
	exit(1);
}

/* daemonize() - detach unless -f, or unless ns mode runs a command in
 * the foreground; the pid file holds the pid of the process that stays.
 * The parent writes it before exiting (pasta's callers, podman among
 * them, read it as soon as the parent is gone). */
static void daemonize(struct ctx *c)
{
	bool fg = c->conf.foreground ||
		  (c->conf.mode == MODE_NS && c->child_pid > 0);
	int fd, pidfd = -1;
	pid_t pid;

	if (c->conf.pid_file[0]) {
		pidfd = open(c->conf.pid_file,
			     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (pidfd < 0)
			die("--pid: cannot write %s: %s", c->conf.pid_file,
			    strerror(errno));
	}
	if (!fg)
		isolate_pid(c);		/* the daemon: PID 1 of its own */
	pid = fg ? getpid() : fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid > 0 && pidfd >= 0 && write_pidfile(pidfd, pid)) {
		if (!fg)
			kill(pid, SIGKILL);
		die("--pid: cannot write %s", c->conf.pid_file);
	}
	if (fg)
		return;
	if (pid > 0)
		_exit(0);
	log_file_pid();		/* the log file's header names this process */
	if (pidfd >= 0)
		close(pidfd);
	/* epoll reports a signalfd ready only for signals to the process
	 * that added it (signalfd(2)): the daemon adds its own, or SIGTERM
	 * would never end it. */
	ep_del(c, c->sigfd);
	close(c->sigfd);
	signals_init(c);
	setsid();
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	if (!c->conf.log_file[0])
		log_to_syslog();
}

/* filter_start() - the last set-up step: the seccomp allow-list
 * (seccomp.c), unless --sandbox=off; recorded as a layer of the
 * start-up line (a refusal: strict dies, on warns, isolate_layer()). */
static void filter_start(struct ctx *c)
{
	int rc;

	if (c->conf.sandbox == SANDBOX_OFF)
		return;
	rc = seccomp_install(c);
	isolate_layer(c, ISO_SECCOMP, !rc, "cannot install the filter", -rc);
	if (!rc)
		info("seccomp: %u system calls allowed", seccomp_count(c));
}

/* slirp_args() - started as slirp4netns: its command line as ferry's
 * (slirp.c); --help and --version are answered here. */
static char **slirp_args(int *argc, char **argv)
{
	static struct slirp_argv sa;	/* conf keeps pointers into it */
	char err[256];

	switch (slirp_translate(*argc, argv, &sa, err, sizeof(err))) {
	case SLIRP_HELP:
		slirp_usage(stdout);
		exit(0);
	case SLIRP_VERSION:
		printf("slirp4netns version 1.2.0 (ferry %s, which takes "
		       "slirp4netns 1.2's command line)\n", FERRY_VERSION);
		exit(0);
	case SLIRP_BAD:
		fprintf(stderr, "ferry: %s\n", err);
		exit(1);
	case SLIRP_RUN:
		break;
	}
	*argc = sa.argc;
	return sa.argv;
}

int main(int argc, char **argv)
{
	struct ctx *c;
	enum mode mode;
	int skip, go = -1;

	skip = pick_mode(argc, argv, &mode);
	if (slirp_named(argv[0]))
		argv = slirp_args(&argc, argv);
	/* The context is large (port maps): allocate it once, zeroed. */
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		die("cannot allocate context");
	c->pcap_fd = c->sigfd = c->child_pidfd = c->sock_file.dirfd = -1;
	c->ctl_file.dirfd = -1;
	argv[skip] = argv[0];
	conf_parse(&c->conf, mode, argc - skip, argv + skip);
	if (mode == MODE_NS)
		ns_cmd_check(c->conf.cmd);
	priv_plan(c);

	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0)
		die("epoll_create1: %s", strerror(errno));
	c->ctl_epfd = -1;		/* only a stream link stalls (loop.c) */
	if (mode == MODE_VM && !c->conf.vhost_user &&
	    (c->ctl_epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		die("epoll_create1: %s", strerror(errno));
	notify_init(c);		/* before anything is logged: bad fds */
	now_mono(&c->now);
	bp_init(&c->bp, c->conf.busy_poll_us);
	tap_init(c);
	conf_derive(&c->conf);
	nat_init(c);
	neigh_init(c);
	pcap_init(c);
	flow_init(&c->flows, 0);
	ndp_init(c);
	icmp_init(c);
	tcp_init(c);
	udp_init(c);
	igmp_init(c);
#ifdef FERRY_TEST
	fault_init(c);
#endif
	signals_init(c);
	ctl_init(c);		/* -c: before the namespace and the sandbox */

	/* Every listener exists before the command runs (ns_run_command()):
	 * it may connect to a -T/-U port at once. */
	if (mode == MODE_NS) {
		go = ns_start(c);
		isolate_user(c);
		priv_ns_check(c);
		udp_ns_init(c);
	} else {
		vm_start(c);
		repair_init(c);		/* after -s: its default path */
		isolate_user(c);
	}
	tcp_fwd_init(c);
	daemonize(c);
	isolate_apply(c);		/* namespaces, Landlock, priv_drop() */
	filter_start(c);		/* seccomp: the last set-up step */
	isolate_report(c);
	ns_run_command(go);
	notify_ready(c);

	loop(c);
	if (mode == MODE_VM) {
		repair_stop(c);
		vm_stop(c);
	}
	ctl_stop(c);		/* -c: the socket file goes */
	if (c->conf.debug || c->conf.stats_s)	/* quiet by default */
		stats_log(c);
	return c->exit_code;
}
