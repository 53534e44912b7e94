/* ctl.c - the control socket: forwards, flows, counters and the log level
 * of a running ferry, over one-line JSON requests.
 *
 * Theory of operation
 *
 * -c PATH (--control, pasta's option) makes a UNIX stream socket at PATH
 * before anything else is set up, mode 0600 (umask 0177 around bind()),
 * replacing a stale socket nobody accepts on. The socket's fd outlives
 * the sandbox (isolate.c): accept4() needs no path. At exit the file is
 * removed (ctl_stop()) through an O_PATH fd of its directory, opened at
 * start-up: Landlock allows removing a file beneath it and nothing else,
 * so the sandbox stays whole (as VM mode's socket, vm.c). Clients are served by
 * the one loop, like every other fd (EREF_CTL_LISTEN, EREF_CTL), also
 * while a stream link is stalled (ev.c puts them in the control set).
 *
 * A request is one JSON object on one line (json.c reads it); every
 * request gets one reply line, {"ok":true,...} or {"ok":false,"error":
 * "..."} and its "id" echoed when it had one. Bounds: a request is at
 * most CTL_LINE_MAX bytes (a longer line gets an error and the client is
 * closed once the reply is out), at most CTL_CLIENTS_MAX clients (one
 * more gets an error line and is closed), replies queue up to
 * CTL_OUT_MAX bytes per client, and a client that leaves replies unread
 * (its queue full, or not drained for CTL_STALL_MS) is dropped. Sockets
 * are non-blocking: nothing a client does or fails to do holds the loop.
 * The flow list, which can be long, is written as the client reads it: a
 * cursor over the flow table's slots, so a reply is not a snapshot (flows
 * opened or closed meanwhile may be missed).
 *
 * Forwards change atomically. An add parses the request's specs with the
 * option parser (fwd_spec_parse()) into scratch specs, merges them into
 * the live ones (fwd_spec_merge(): adding a forward that exists the same
 * way is a no-op, a port forwarded otherwise refuses the request) and
 * opens every new listener, all or none (tcp_fwd_ports_open(),
 * udp_fwd_ports_open()). On any failure the listeners opened so far are
 * closed and the specs restored from a copy, and the reply names the
 * port and errno. A delete checks every port first (fwd_spec_remove()),
 * then closes the listeners: accepted TCP connections have sockets of
 * their own and live on; UDP flows of a closed port end with it.
 *
 * Memory: the client buffers and scratch specs are mapped once at
 * ctl_init() (alloc_startup(), touched only as used); nothing is
 * allocated per request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ctl.h"
#include "ferry.h"
#include "flow_log.h"
#include "json.h"
#include "log.h"
#include "tcp_conn.h"
#include "udp_int.h"
#include "util.h"

/* seccomp(all): accept4 close read write epoll_ctl
 *   (clients: requests, replies) */
/* seccomp(all): getsockname getpeername getsockopt
 *   (the flow list: host sockets' addresses, TCP_INFO) */
/* seccomp(all): ioctl(1=SIOCINQ) ioctl(1=SIOCOUTQ)
 *   (the flow list: host sockets' queues) */
/* seccomp(setup): socket bind listen umask unlink unlinkat
 *   (listen_path(): a stale socket replaced) */

#define DIRS		4	/* -t -u -T -U */

/* One client. */
struct ctl_client {
	int fd;				/* -1: free slot */
	bool closing;			/* close once out is written */
	bool listing;			/* a flow list is being written */
	uint32_t cursor;		/* ... next flow slot */
	bool listed;			/* ... some flow is written */
	size_t inlen, outlen, outoff;
	int64_t stall_ms;		/* output waiting since, 0: none */
	char *in;			/* CTL_LINE_MAX + 1 */
	char *out;			/* CTL_OUT_MAX */
};

struct ctl_state {
	int lfd;
	unsigned int n;			/* clients */
	struct ctl_client cl[CTL_CLIENTS_MAX];
	struct fwd_spec *req[DIRS];	/* a request's parsed specs */
	struct fwd_spec *backup[DIRS];	/* the live ones before it */
	uint64_t changed[DIRS][FWD_BITMAP_WORDS];
	uint64_t accepted, refused, requests, errors, dropped;
};

STAT_GROUP(ctl_stats) = {
	.order = 900, .what = "control", .when = STAT_ANY,
	.via = offsetof(struct ctx, ctl),
	.items = (const struct stat_item[]){
		STAT("clients", struct ctl_state, accepted),
		STAT("refused", struct ctl_state, refused),
		STAT("requests", struct ctl_state, requests),
		STAT("errors", struct ctl_state, errors),
		STAT("dropped", struct ctl_state, dropped),
	},
	.n = 5,
};

/* The four directions, as requests name them. */
static const struct {
	const char *key, *opt;
	bool udp, ns_only;
	unsigned int fwd_dir;		/* TCP_FWD_* / UDP_FWD_* */
} dirs[DIRS] = {
	{ "tcp", "-t", false, false, TCP_FWD_IN },
	{ "udp", "-u", true, false, UDP_FWD_IN },
	{ "tcp_ns", "-T", false, true, TCP_FWD_OUT },
	{ "udp_ns", "-U", true, true, UDP_FWD_OUT },
};

/* live_spec() - the configuration's spec of direction d. */
static struct fwd_spec *live_spec(struct ctx *c, unsigned int d)
{
	static const size_t off[DIRS] = {
		offsetof(struct conf, tcp_in), offsetof(struct conf, udp_in),
		offsetof(struct conf, tcp_out), offsetof(struct conf, udp_out),
	};

	return (struct fwd_spec *)(void *)((char *)&c->conf + off[d]);
}

/* --- Set-up ---------------------------------------------------------- */

/* listen_path() - the listening socket at path, mode 0600; fd or -errno. */
static int listen_path(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, rc = 0;

	if (!str_copy(a.sun_path, path, sizeof(a.sun_path)))
		return -ENAMETOOLONG;
	if (unix_refused(path))		/* a ferry that died left it */
		unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(fd, SOMAXCONN))
		rc = -errno;
	umask(old);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

void ctl_init(struct ctx *c)
{
	union eref ref = { .type = EREF_CTL_LISTEN };
	struct ctl_state *s;
	unsigned int i;
	char *bufs;
	int fd;

	if (!c->conf.control_path[0])
		return;
	fd = listen_path(c->conf.control_path);
	if (fd < 0)
		die("-c: cannot listen on %s: %s", c->conf.control_path,
		    strerror(-fd));
	s = alloc_startup(sizeof(*s));
	bufs = alloc_startup((size_t)CTL_CLIENTS_MAX *
			     (CTL_LINE_MAX + 1 + CTL_OUT_MAX));
	for (i = 0; i < CTL_CLIENTS_MAX; i++) {
		s->cl[i].fd = -1;
		s->cl[i].in = bufs;
		s->cl[i].out = bufs + CTL_LINE_MAX + 1;
		bufs += CTL_LINE_MAX + 1 + CTL_OUT_MAX;
	}
	for (i = 0; i < DIRS; i++) {
		s->req[i] = alloc_startup(sizeof(struct fwd_spec));
		s->backup[i] = alloc_startup(sizeof(struct fwd_spec));
	}
	s->lfd = fd;
	c->ctl = s;
	unix_file_keep(&c->ctl_file, c->conf.control_path);	/* ctl_stop() */
	if (ep_add(c, fd, EPOLLIN, ref))
		die("-c: cannot watch the socket");
	info("control socket at %s", c->conf.control_path);
}

void ctl_stop(const struct ctx *c)
{
	if (c->ctl && c->conf.control_path[0])
		unix_file_remove(&c->ctl_file, c->conf.control_path);
}

/* --- Clients --------------------------------------------------------- */

/* client_close() - drop client cl. */
static void client_close(struct ctx *c, struct ctl_client *cl)
{
	ep_del(c, cl->fd);
	close(cl->fd);
	cl->fd = -1;
	cl->closing = cl->listing = false;
	cl->inlen = cl->outlen = cl->outoff = 0;
	cl->stall_ms = 0;
	c->ctl->n--;
}

/* client_events() - what the loop should wait for on cl: input unless
 * it is closing or a list is being written, output while some waits. */
static void client_events(struct ctx *c, struct ctl_client *cl)
{
	union eref ref = { .type = EREF_CTL,
			   .idx = (uint32_t)(cl - c->ctl->cl) };
	uint32_t ev = 0;

	if (!cl->closing && !cl->listing)
		ev |= EPOLLIN;
	if (cl->outlen > cl->outoff)
		ev |= EPOLLOUT;
	ep_mod(c, cl->fd, ev, ref);
}

/* flush() - write what cl has queued. False if the client is gone
 * (closed here). */
static bool flush(struct ctx *c, struct ctl_client *cl)
{
	while (cl->outoff < cl->outlen) {
		ssize_t n = write(cl->fd, cl->out + cl->outoff,
				  cl->outlen - cl->outoff);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!cl->stall_ms) {
				cl->stall_ms = flow_now_ms();
				timer_request(c, CTL_STALL_MS);
			}
			return true;
		}
		if (n <= 0) {
			client_close(c, cl);
			return false;
		}
		cl->outoff += (size_t)n;
	}
	cl->outoff = cl->outlen = 0;
	cl->stall_ms = 0;
	return true;
}

/* queue() - reply text onto cl's output; a client whose queue is full
 * (it does not read) is dropped: false. */
static bool queue(struct ctx *c, struct ctl_client *cl, const char *s,
		  size_t n)
{
	if (cl->outoff && cl->outlen + n > CTL_OUT_MAX) {
		memmove(cl->out, cl->out + cl->outoff, cl->outlen - cl->outoff);
		cl->outlen -= cl->outoff;
		cl->outoff = 0;
	}
	if (cl->outlen + n > CTL_OUT_MAX) {
		c->ctl->dropped++;
		debug("control: a client not reading its replies dropped");
		client_close(c, cl);
		return false;
	}
	memcpy(cl->out + cl->outlen, s, n);
	cl->outlen += n;
	return true;
}

void ctl_listen_handler(struct ctx *c, uint32_t events)
{
	static const char full[] = "{\"ok\":false,\"error\":\"too many "
				   "clients\"}\n";
	struct ctl_state *s = c->ctl;
	unsigned int i;
	int fd;

	(void)events;
	while ((fd = accept4(s->lfd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		union eref ref = { .type = EREF_CTL };

		for (i = 0; i < CTL_CLIENTS_MAX && s->cl[i].fd >= 0; i++)
			;
		if (i == CTL_CLIENTS_MAX) {
			s->refused++;
			if (write(fd, full, sizeof(full) - 1) < 0)
				debug("control: refusing a client: %s",
				      strerror(errno));
			close(fd);
			continue;
		}
		ref.idx = i;
		if (ep_add(c, fd, EPOLLIN, ref)) {
			close(fd);
			continue;
		}
		s->cl[i].fd = fd;
		s->n++;
		s->accepted++;
	}
}

/* --- Replies --------------------------------------------------------- */

/* reply_start() - {"ok":OK and the request's "id", if any. */
static void reply_start(struct jw *w, bool ok, const struct json_obj *req)
{
	const struct json_field *id = req ? json_get(req, "id") : NULL;

	jw_open(w, '{');
	jw_kbool(w, "ok", ok);
	if (id && id->type == JSON_INT) {
		jw_key(w, "id");
		jw_i64(w, id->n);
	} else if (id && id->type == JSON_STR) {
		jw_kstr(w, "id", id->s);
	}
}

/* reply_end() - close the object, the line, queue it. */
static bool reply_end(struct ctx *c, struct ctl_client *cl, struct jw *w)
{
	jw_close(w, '}');
	jw_raw(w, "\n");
	if (w->over) {		/* cannot be: replies are bounded */
		static const char big[] = "{\"ok\":false,\"error\":\"reply "
					  "too long\"}\n";

		return queue(c, cl, big, sizeof(big) - 1);
	}
	return queue(c, cl, w->buf, w->len);
}

/* reply_in_place() - end a reply written at the end of cl's queue
 * (w over cl->out + cl->outlen): keep it, or drop the client whose queue
 * had no room for it. */
static bool reply_in_place(struct ctx *c, struct ctl_client *cl,
			   struct jw *w)
{
	jw_close(w, '}');
	jw_raw(w, "\n");
	if (w->over) {
		c->ctl->dropped++;
		client_close(c, cl);
		return false;
	}
	cl->outlen += w->len;
	return true;
}

/* reply_error() - {"ok":false,"error":msg[,"port":..,"errno":..]}. */
static bool reply_error(struct ctx *c, struct ctl_client *cl,
			const struct json_obj *req, const char *msg,
			unsigned int port, int errnum)
{
	char buf[1024];
	struct jw w;

	c->ctl->errors++;
	jw_init(&w, buf, sizeof(buf));
	reply_start(&w, false, req);
	jw_kstr(&w, "error", msg);
	if (port)
		jw_ku64(&w, "port", port);
	if (errnum) {
		const char *name = strerrorname_np(errnum);

		jw_ku64(&w, "errno", (uint64_t)errnum);
		jw_kstr(&w, "errno_name", name ? name : "?");
	}
	return reply_end(c, cl, &w);
}

/* The writer the list callbacks append to. */
static void item_out(void *arg, const char *item)
{
	jw_str(arg, item);
}

/* op_forwards() - every direction's forwards, in the options' language. */
static bool op_forwards(struct ctx *c, struct ctl_client *cl,
			const struct json_obj *req)
{
	unsigned int d;
	struct jw w;

	/* Written in place at the end of the client's queue: no global
	 * buffer (ASan clears a large global's shadow at exit by mmap()) */
	jw_init(&w, cl->out + cl->outlen, CTL_OUT_MAX - cl->outlen);
	reply_start(&w, true, req);
	for (d = 0; d < DIRS; d++) {
		if (dirs[d].ns_only && c->conf.mode != MODE_NS)
			continue;
		jw_key(&w, dirs[d].key);
		jw_open(&w, '[');
		fwd_spec_items(live_spec(c, d), item_out, &w);
		jw_close(&w, ']');
	}
	return reply_in_place(c, cl, &w);
}

/* dir_off() - why direction d cannot change now, NULL if it can. */
static const char *dir_off(const struct ctx *c, unsigned int d)
{
	if (dirs[d].ns_only && c->conf.mode != MODE_NS)
		return "only in namespace mode";
	if (dirs[d].udp ? c->conf.no_udp : c->conf.no_tcp)
		return dirs[d].udp ? "UDP is off (--no-udp)"
				   : "TCP is off (--no-tcp)";
	if (c->draining)
		return "ferry is exiting";
	return NULL;
}

/* parse_dir() - the request's specs for direction d into s->req[d];
 * false with a message when one is bad. *any: d had some. */
static bool parse_dir(struct ctx *c, const struct json_obj *req,
		      unsigned int d, bool *any, char *err, size_t errlen)
{
	const struct json_field *f = json_get(req, dirs[d].key);
	struct fwd_spec *r = c->ctl->req[d];
	char e[200];
	const char *why;
	unsigned int i, n;

	*any = false;
	if (!f)
		return true;
	if (f->type != JSON_STR && f->type != JSON_ARR) {
		snprintf(err, errlen, "\"%s\": a spec or a list of specs",
			 dirs[d].key);
		return false;
	}
	if ((why = dir_off(c, d))) {
		snprintf(err, errlen, "%s: %s", dirs[d].opt, why);
		return false;
	}
	memset(r, 0, sizeof(*r));
	n = f->type == JSON_STR ? 1 : f->count;
	for (i = 0; i < n; i++) {
		const char *spec = f->type == JSON_STR ? f->s
						       : req->items[f->first + i];

		if (!fwd_spec_parse(r, spec, false, e, sizeof(e))) {
			snprintf(err, errlen, "%s %s: %s", dirs[d].opt, spec, e);
			return false;
		}
	}
	if (n && r->mode != FWD_SPEC) {
		snprintf(err, errlen, "%s: name the ports (no all, none or "
			 "exclusions alone at run time)", dirs[d].opt);
		return false;
	}
	*any = n > 0;
	return true;
}

/* ports_open() - the listeners of direction d for map; 0 or -errno. */
static int ports_open(struct ctx *c, unsigned int d, const uint64_t *map,
		      uint16_t *bad)
{
	if (dirs[d].udp)
		return udp_fwd_ports_open(c, dirs[d].fwd_dir, map, bad);
	return tcp_fwd_ports_open(c, (enum tcp_fwd_dir)dirs[d].fwd_dir, map,
				  bad);
}

/* ports_close() - close direction d's listeners of map. */
static void ports_close(struct ctx *c, unsigned int d, const uint64_t *map)
{
	if (dirs[d].udp)
		udp_fwd_ports_close(c, dirs[d].fwd_dir, map);
	else
		tcp_fwd_ports_close(c, (enum tcp_fwd_dir)dirs[d].fwd_dir, map);
}

/* restore() - put back the specs of the directions in mask. */
static void restore(struct ctx *c, unsigned int mask)
{
	unsigned int d;

	for (d = 0; d < DIRS; d++)
		if (mask & (1u << d))
			memcpy(live_spec(c, d), c->ctl->backup[d],
			       sizeof(struct fwd_spec));
}

/* change() - apply an add (add) or delete request to the specs of the
 * directions in mask, all or none; 0, or a message in err and the
 * failing port and errno. */
static bool change(struct ctx *c, unsigned int mask, bool add, char *err,
		   size_t errlen, uint16_t *port, int *errnum)
{
	struct ctl_state *s = c->ctl;
	unsigned int d, opened = 0;
	int rc;

	for (d = 0; d < DIRS; d++) {
		if (!(mask & (1u << d)))
			continue;
		memcpy(s->backup[d], live_spec(c, d), sizeof(struct fwd_spec));
		if (!(add ? fwd_spec_merge : fwd_spec_remove)(live_spec(c, d),
							   s->req[d],
							   s->changed[d],
							   err, errlen)) {
			restore(c, mask & ((2u << d) - 1));
			return false;
		}
	}
	if (!add) {
		for (d = 0; d < DIRS; d++)
			if (mask & (1u << d))
				ports_close(c, d, s->changed[d]);
		return true;
	}
	for (d = 0; d < DIRS; d++) {
		if (!(mask & (1u << d)))
			continue;
		if ((rc = ports_open(c, d, s->changed[d], port)) < 0) {
			*errnum = -rc;
			snprintf(err, errlen, "%s port %u: cannot listen: %s",
				 dirs[d].opt, *port, strerror(-rc));
			restore(c, mask);	/* then close what it lost */
			for (d = 0; d < DIRS; d++)
				if (opened & (1u << d))
					ports_close(c, d, s->changed[d]);
			return false;
		}
		opened |= 1u << d;
	}
	return true;
}

/* op_change() - "add" or "del": forwards of up to four directions. */
static bool op_change(struct ctx *c, struct ctl_client *cl,
		      const struct json_obj *req, bool add)
{
	unsigned int d, mask = 0;
	char err[512], buf[256];
	uint16_t port = 0;
	int errnum = 0;
	struct jw w;
	bool any;

	for (d = 0; d < DIRS; d++) {
		if (!parse_dir(c, req, d, &any, err, sizeof(err)))
			return reply_error(c, cl, req, err, 0, 0);
		mask |= any ? 1u << d : 0;
	}
	if (!mask)
		return reply_error(c, cl, req, "no forwards: give \"tcp\", "
				   "\"udp\", \"tcp_ns\" or \"udp_ns\"", 0, 0);
	if (!change(c, mask, add, err, sizeof(err), &port, &errnum))
		return reply_error(c, cl, req, err, port, errnum);
	for (d = 0; d < DIRS; d++)
		if (mask & (1u << d))
			info("control: %s %s forwards", add ? "added" : "deleted",
			     dirs[d].opt);
	jw_init(&w, buf, sizeof(buf));
	reply_start(&w, true, req);
	return reply_end(c, cl, &w);
}

/* stat_out() - one counters line into the reply's list. */
static void stat_out(void *arg, const char *line)
{
	jw_str(arg, line);
}

/* op_stats() - the counters: the statistics lines and every drop reason. */
static bool op_stats(struct ctx *c, struct ctl_client *cl,
		     const struct json_obj *req)
{
	struct jw w;
	int r;

	jw_init(&w, cl->out + cl->outlen, CTL_OUT_MAX - cl->outlen);
	reply_start(&w, true, req);
	jw_key(&w, "lines");
	jw_open(&w, '[');
	stats_lines(c, stat_out, &w);
	jw_close(&w, ']');
	jw_key(&w, "traffic");
	jw_open(&w, '{');
	jw_ku64(&w, "rx_frames", c->stats.rx_frames);
	jw_ku64(&w, "rx_bytes", c->stats.rx_bytes);
	jw_ku64(&w, "tx_frames", c->stats.tx_frames);
	jw_ku64(&w, "tx_bytes", c->stats.tx_bytes);
	jw_close(&w, '}');
	jw_key(&w, "drops");
	jw_open(&w, '{');
	for (r = 1; r < DROP_MAX; r++)
		jw_ku64(&w, drop_name((enum drop_reason)r), c->stats.drops[r]);
	jw_close(&w, '}');
	return reply_in_place(c, cl, &w);
}

static const char *const level_names[] = {
	[LOG_LVL_ERR] = "error", [LOG_LVL_WARN] = "warning",
	[LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
	[LOG_LVL_TRACE] = "trace",
};

/* op_log_level() - set (with "level") or read the log level. */
static bool op_log_level(struct ctx *c, struct ctl_client *cl,
			 const struct json_obj *req)
{
	const struct json_field *f = json_get(req, "level");
	enum log_level was = log_get_level();
	char buf[256];
	unsigned int i;
	struct jw w;

	if (f && f->type != JSON_STR)
		return reply_error(c, cl, req, "\"level\": a string", 0, 0);
	if (f) {
		for (i = 0; i < ARRAY_SIZE(level_names); i++)
			if (!strcmp(f->s, level_names[i]) ||
			    (i == LOG_LVL_WARN && !strcmp(f->s, "warn")))
				break;
		if (i == ARRAY_SIZE(level_names))
			return reply_error(c, cl, req, "unknown level: give "
					   "error, warning, info, debug or "
					   "trace", 0, 0);
		log_set_level((enum log_level)i);
		if (i != was)
			info("control: log level %s (was %s)", level_names[i],
			     level_names[was]);
	}
	jw_init(&w, buf, sizeof(buf));
	reply_start(&w, true, req);
	jw_kstr(&w, "level", level_names[log_get_level()]);
	jw_kstr(&w, "was", level_names[was]);
	return reply_end(c, cl, &w);
}

/* op_version() - ferry's version and mode. */
static bool op_version(struct ctx *c, struct ctl_client *cl,
		       const struct json_obj *req)
{
	char buf[256];
	struct jw w;

	jw_init(&w, buf, sizeof(buf));
	reply_start(&w, true, req);
	jw_kstr(&w, "version", FERRY_VERSION);
	jw_kstr(&w, "mode", c->conf.mode == MODE_NS ? "ns" : "vm");
	return reply_end(c, cl, &w);
}

/* --- The flow list --------------------------------------------------- */

/* kaddr() - "key": a:port. */
static void kaddr(struct jw *w, const char *key, const union inany *a,
		  uint16_t port)
{
	char b[INET6_ADDRSTRLEN + 16];

	flow_addr_str(a, port, b, sizeof(b));
	jw_kstr(w, key, b);
}

/* ksock() - "local"/"peer" of host socket fd, when it has them. */
static void ksock(struct jw *w, const char *lkey, const char *pkey, int fd)
{
	sockaddr_inany sa;
	socklen_t sl = sizeof(sa);
	union inany a;
	uint16_t port;

	if (fd < 0)
		return;
	memset(&sa, 0, sizeof(sa));
	if (!getsockname(fd, &sa.sa, &sl) &&
	    (sa.sa.sa_family == AF_INET || sa.sa.sa_family == AF_INET6)) {
		inany_from_sa(&sa, &a, &port);
		kaddr(w, lkey, &a, port);
	}
	sl = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	if (pkey && !getpeername(fd, &sa.sa, &sl) &&
	    (sa.sa.sa_family == AF_INET || sa.sa.sa_family == AF_INET6)) {
		inany_from_sa(&sa, &a, &port);
		kaddr(w, pkey, &a, port);
	}
}

/* tcp_fields() - a translated TCP connection's own figures. */
static void tcp_fields(struct jw *w, const struct tcp_conn *t)
{
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);
	int q;

	jw_kstr(w, "state", tcp_state_name(t->state, t->closing));
	jw_kbool(w, "forwarded", t->flags & TCP_C_FWD);
	jw_kbool(w, "guest_fin", t->flags & TCP_C_GUEST_FIN);
	jw_kbool(w, "host_eof", t->flags & TCP_C_SOCK_EOF);
	ksock(w, "host_local", "host_peer", t->sock);
	jw_ku64(w, "wnd_from_guest", t->wnd_from_guest);
	jw_ku64(w, "wnd_to_guest", t->wnd_to_guest);
	jw_ku64(w, "guest_rtt_us", t->srtt_us);
	if (!ioctl(t->sock, SIOCINQ, &q))
		jw_ku64(w, "sock_inq", (uint64_t)q);
	if (!ioctl(t->sock, SIOCOUTQ, &q))
		jw_ku64(w, "sock_outq", (uint64_t)q);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(t->sock, IPPROTO_TCP, TCP_INFO, &ti, &tl))
		return;
	jw_ku64(w, "bytes_from_guest", ti.tcpi_bytes_acked);
	jw_ku64(w, "bytes_to_guest", tcp_info_received(&ti, t->flags));
	jw_ku64(w, "rtt_us", ti.tcpi_rtt);
	jw_ku64(w, "retrans", ti.tcpi_total_retrans);
}

/* flow_json() - one flow's object. */
static void flow_json(struct jw *w, struct flow *fl, int64_t now)
{
	static const char *const names[FLOW_TYPES] = {
		[FLOW_PING] = "icmp", [FLOW_TCP] = "tcp",
		[FLOW_TCP_SPLICE] = "tcp-splice", [FLOW_UDP] = "udp",
	};
	const struct flow_key *k = &fl->f.key[FLOW_SIDE_GUEST];

	jw_open(w, '{');
	jw_kstr(w, "proto", names[fl->f.type]);
	if (fl->f.hashed[FLOW_SIDE_GUEST]) {
		kaddr(w, "guest", &k->a, k->pa);
		kaddr(w, "remote", &k->b, k->pb);
	}
	jw_key(w, "age_ms");
	jw_i64(w, now - fl->f.born_ms);
	if (fl->f.type == FLOW_TCP) {
		tcp_fields(w, FLOW_PRIV(fl, struct tcp_conn));
	} else if (fl->f.type == FLOW_UDP) {
		const struct udp_flow *u = UDP_FLOW(fl);

		kaddr(w, "host_peer", &u->peer, u->peer_port);
		if (!u->shared)
			ksock(w, "host_local", NULL, u->sock);
		jw_kbool(w, "inbound", u->inbound);
		jw_kbool(w, "replied", u->replied);
	}
	jw_close(w, '}');
}

/* list_more() - write flows from cl's cursor while its queue has room;
 * the closing of the reply once the table's end is reached. */
static bool list_more(struct ctx *c, struct ctl_client *cl)
{
	const struct flowtab *ft = &c->flows;
	int64_t now = flow_now_ms();
	char buf[2048];
	struct jw w;

	while (cl->cursor < ft->hw) {
		struct flow *fl = flow_at(ft, cl->cursor);

		if (cl->outlen + sizeof(buf) > CTL_OUT_MAX)
			return true;		/* more once it reads */
		cl->cursor++;
		if (!fl)
			continue;
		jw_init(&w, buf, sizeof(buf));
		jw_raw(&w, cl->listed ? "," : "");
		flow_json(&w, fl, now);
		if (w.over)
			continue;		/* cannot be: 2 KiB is plenty */
		if (!queue(c, cl, w.buf, w.len))
			return false;
		cl->listed = true;
	}
	cl->listing = false;
	return queue(c, cl, "]}\n", 3);
}

/* op_flows() - start the flow list: its head now, flows as read. */
static bool op_flows(struct ctx *c, struct ctl_client *cl,
		     const struct json_obj *req)
{
	char buf[256];
	struct jw w;

	jw_init(&w, buf, sizeof(buf));
	reply_start(&w, true, req);
	jw_ku64(&w, "count", c->flows.used);
	jw_key(&w, "flows");
	jw_raw(&w, "[");
	if (!queue(c, cl, w.buf, w.len))
		return false;
	cl->listing = true;
	cl->cursor = 0;
	cl->listed = false;
	return list_more(c, cl);
}

/* --- Requests -------------------------------------------------------- */

/* request() - answer one line (NUL-terminated at len). False if the
 * client is gone. */
static bool request(struct ctx *c, struct ctl_client *cl, char *line,
		    size_t len)
{
	static const struct {
		const char *name;
		bool (*fn)(struct ctx *, struct ctl_client *,
			   const struct json_obj *);
	} ops[] = {
		{ "forwards", op_forwards }, { "stats", op_stats },
		{ "flows", op_flows }, { "log-level", op_log_level },
		{ "version", op_version },
	};
	static struct json_obj o;
	const struct json_field *op;
	char err[160];
	unsigned int i;

	c->ctl->requests++;
	if (!json_parse(line, len, &o, err, sizeof(err))) {
		char msg[200];

		snprintf(msg, sizeof(msg), "bad request: %s", err);
		return reply_error(c, cl, NULL, msg, 0, 0);
	}
	op = json_get(&o, "op");
	if (!op || op->type != JSON_STR)
		return reply_error(c, cl, &o, "no \"op\"", 0, 0);
	if (!strcmp(op->s, "add") || !strcmp(op->s, "del"))
		return op_change(c, cl, &o, op->s[0] == 'a');
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (!strcmp(op->s, ops[i].name))
			return ops[i].fn(c, cl, &o);
	return reply_error(c, cl, &o, "unknown op", 0, 0);
}

/* lines() - answer the whole lines in cl's input (not while a list is
 * being written: the next waits). False if the client is gone. */
static bool lines(struct ctx *c, struct ctl_client *cl)
{
	char *nl;

	while (!cl->listing && !cl->closing &&
	       (nl = memchr(cl->in, '\n', cl->inlen))) {
		size_t len = (size_t)(nl - cl->in);

		*nl = '\0';
		if (len && !request(c, cl, cl->in, len))
			return false;
		memmove(cl->in, nl + 1, cl->inlen - len - 1);
		cl->inlen -= len + 1;
	}
	if (cl->inlen >= CTL_LINE_MAX && !cl->listing) {
		char msg[80];

		snprintf(msg, sizeof(msg), "request longer than %d bytes",
			 CTL_LINE_MAX);
		cl->inlen = 0;
		cl->closing = true;
		return reply_error(c, cl, NULL, msg, 0, 0);
	}
	return true;
}

/* input() - read what cl sent; EOF: answer what is complete, close
 * after. False if the client is gone. */
static bool input(struct ctx *c, struct ctl_client *cl)
{
	while (!cl->closing && !cl->listing && cl->inlen < CTL_LINE_MAX) {
		ssize_t n = read(cl->fd, cl->in + cl->inlen,
				 CTL_LINE_MAX - cl->inlen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			if (!lines(c, cl))
				return false;
			cl->closing = true;
			break;
		}
		cl->inlen += (size_t)n;
		if (!lines(c, cl))
			return false;
	}
	return true;
}

void ctl_handler(struct ctx *c, uint32_t idx, uint32_t events)
{
	struct ctl_client *cl;

	if (!c->ctl || idx >= CTL_CLIENTS_MAX || c->ctl->cl[idx].fd < 0)
		return;
	cl = &c->ctl->cl[idx];
	if (events & EPOLLERR) {
		client_close(c, cl);
		return;
	}
	if (!flush(c, cl))
		return;
	if (cl->listing && (!list_more(c, cl) || !flush(c, cl)))
		return;
	if ((events & (EPOLLIN | EPOLLHUP)) && !input(c, cl))
		return;
	if (!lines(c, cl) || !flush(c, cl))
		return;
	if (cl->closing && cl->outlen == cl->outoff) {
		client_close(c, cl);
		return;
	}
	client_events(c, cl);
}

void ctl_timer(struct ctx *c)
{
	int64_t now, next = INT64_MAX;
	unsigned int i;

	if (!c->ctl)
		return;
	now = flow_now_ms();
	for (i = 0; i < CTL_CLIENTS_MAX; i++) {
		struct ctl_client *cl = &c->ctl->cl[i];

		if (cl->fd < 0 || !cl->stall_ms)
			continue;
		if (now - cl->stall_ms >= CTL_STALL_MS) {
			c->ctl->dropped++;
			debug("control: a client not reading for %d ms dropped",
			      CTL_STALL_MS);
			client_close(c, cl);
			continue;
		}
		next = MIN(next, cl->stall_ms + CTL_STALL_MS - now);
	}
	if (next != INT64_MAX)
		timer_request(c, MAX(next, 1));
}
