/* test_slirp.c - ferry started as slirp4netns (slirp.c): the command
 * lines podman 4.x and rootlesskit pass, translated and then parsed by
 * conf.c as ferry would, the network slirp4netns documents (CIDR + 100,
 * + 2, + 3), and every bad input as one error line naming the option. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "slirp.h"
#include "unit.h"

struct srun {
	struct slirp_argv out;
	char *argv[40];
	char err[256];
	enum slirp_result res;
	struct conf *c;
	char cerr[256];
	bool conf_ok;
};

/* srun_() - translate "slirp4netns" + the NULL-terminated arguments; on
 * SLIRP_RUN also parse the result with conf_parse_args() (namespace
 * mode). The caller frees r->c. */
static struct srun *srun_(struct srun *r, ...)
{
	const char *a;
	va_list ap;
	int n = 0;

	memset(r, 0, sizeof(*r));
	r->argv[n++] = (char *)"/usr/libexec/ferry/slirp4netns";
	va_start(ap, r);
	while ((a = va_arg(ap, const char *)) && n < 39)
		r->argv[n++] = (char *)a;
	va_end(ap);
	r->res = slirp_translate(n, r->argv, &r->out, r->err, sizeof(r->err));
	if (r->res == SLIRP_RUN) {
		r->c = calloc(1, sizeof(*r->c));
		r->conf_ok = conf_parse_args(r->c, MODE_NS, r->out.argc,
					     r->out.argv, r->cerr,
					     sizeof(r->cerr));
		if (!r->conf_ok)
			printf("  conf refused the translation: %s\n", r->cerr);
	}
	return r;
}
#define SLIRP(r, ...)	srun_(r, __VA_ARGS__, (const char *)NULL)

static bool ip4_is(struct in_addr a, const char *s)
{
	struct in_addr b;

	return inet_pton(AF_INET, s, &b) == 1 && a.s_addr == b.s_addr;
}

static bool ip6_is(const struct in6_addr *a, const char *s)
{
	struct in6_addr b;

	return inet_pton(AF_INET6, s, &b) == 1 && !memcmp(a, &b, 16);
}

/* bad() - refused with one line holding part. */
static bool bad(const struct srun *r, const char *part)
{
	bool ok = r->res == SLIRP_BAD && r->err[0] &&
		  !strchr(r->err, '\n') && strstr(r->err, part);

	if (!ok)
		printf("  expected one error line with '%s', got %d '%s'\n",
		       part, r->res, r->err);
	return ok;
}

TEST(slirp_named_by_basename)
{
	CHECK(slirp_named("slirp4netns"));
	CHECK(slirp_named("/usr/local/libexec/ferry/slirp4netns"));
	CHECK(slirp_named("slirp4netns.ferry"));
	CHECK(!slirp_named("/usr/bin/slirp"));
	CHECK(!slirp_named("pasta"));
	CHECK(!slirp_named("/opt/slirp4netns/ferry"));
}

TEST(slirp_podman_43_path_command_line)
{
	static struct srun r;

	/* libpod/networking_slirp4netns.go, a container's own netns */
	SLIRP(&r, "--disable-host-loopback", "--mtu=65520", "--enable-sandbox",
	      "--enable-seccomp", "-c", "-e", "3", "-r", "4",
	      "--netns-type=path", "/run/user/0/netns/netns-1234", "tap0");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(r.conf_ok);
	CHECK(r.c->foreground && r.c->config_net && r.c->no_map_gw);
	CHECK_EQ(r.c->mtu, 65520);
	CHECK(!strcmp(r.c->ns_ifname, "tap0"));
	CHECK(!strcmp(r.c->netns_path, "/run/user/0/netns/netns-1234"));
	CHECK_EQ(r.c->exit_fd, 3);
	CHECK_EQ(r.c->ready_fd, 4);
	CHECK(ip4_is(r.c->ip4.addr, "10.0.2.100"));
	CHECK_EQ(r.c->ip4.prefix_len, 24);
	CHECK(ip4_is(r.c->ip4.gw, "10.0.2.2"));
	CHECK(ip4_is(r.c->ip4.dns_fwd, "10.0.2.3"));
	CHECK(r.c->ip4.enabled && !r.c->ip6.enabled);	/* no --enable-ipv6 */
	/* slirp4netns forwards nothing by itself: rootlessport does it */
	CHECK_EQ(r.c->tcp_in.mode, FWD_NONE);
	CHECK_EQ(r.c->udp_in.mode, FWD_NONE);
	CHECK_EQ(r.c->tcp_out.mode, FWD_NONE);
	CHECK_EQ(r.c->udp_out.mode, FWD_NONE);
	free(r.c);
}

TEST(slirp_pid_ipv6_cidr_and_loopback)
{
	static struct srun r;

	/* the PostConfigureNetNS form: a PID; IPv6; host loopback allowed */
	SLIRP(&r, "--mtu", "1500", "--cidr=192.168.77.0/24", "-6", "-c",
	      "4242", "eth7");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(r.conf_ok);
	CHECK_EQ(r.c->ns_pid, 4242);
	CHECK(!r.c->no_map_gw);		/* the gateway reaches host loopback */
	CHECK(ip4_is(r.c->ip4.addr, "192.168.77.100"));
	CHECK(ip4_is(r.c->ip4.gw, "192.168.77.2"));
	CHECK(ip4_is(r.c->ip4.dns_fwd, "192.168.77.3"));
	CHECK(r.c->ip6.enabled);
	CHECK(ip6_is(&r.c->ip6.addr, "fd00::100"));
	CHECK(ip6_is(&r.c->ip6.gw, "fd00::2"));
	CHECK(ip6_is(&r.c->ip6.dns_fwd, "fd00::3"));
	CHECK_EQ(r.c->exit_fd, -1);
	CHECK_EQ(r.c->ready_fd, -1);
	free(r.c);
	/* a network address with host bits is taken as its network */
	SLIRP(&r, "--cidr", "10.9.8.77/25", "--disable-dns", "-c6", "1", "t");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(r.conf_ok);
	CHECK(ip4_is(r.c->ip4.addr, "10.9.8.100"));
	CHECK_EQ(r.c->ip4.prefix_len, 25);
	CHECK(ip4_is(r.c->ip4.dns_fwd, "0.0.0.0"));	/* --disable-dns */
	CHECK(r.c->ip6.enabled);
	free(r.c);
}

TEST(slirp_outbound_mac_userns)
{
	static struct srun r;

	SLIRP(&r, "-c", "-6", "--outbound-addr=198.51.100.9",
	      "--outbound-addr6=eth1", "--macaddress=02:11:22:33:44:55",
	      "--userns-path=/proc/9/ns/user", "--netns-type", "path",
	      "/proc/9/ns/net", "tap0");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(r.conf_ok);
	CHECK(ip4_is(r.c->ip4.outbound, "198.51.100.9"));
	CHECK(!strcmp(r.c->outbound_if6, "eth1"));
	CHECK(r.c->guest_mac[0] == 0x02 && r.c->guest_mac[5] == 0x55);
	CHECK(!strcmp(r.c->userns_path, "/proc/9/ns/user"));
	free(r.c);
}

TEST(slirp_help_and_version)
{
	static const char *const podman_greps[] = {
		"--disable-host-loopback", "--mtu", "--enable-sandbox",
		"--enable-seccomp", "--cidr", "--outbound-addr",
		"--enable-ipv6", "--netns-type", "--userns-path",
	};
	static struct srun r;
	char buf[4096] = "";
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
	size_t i;

	CHECK(f);
	slirp_usage(f);
	fclose(f);
	for (i = 0; i < sizeof(podman_greps) / sizeof(podman_greps[0]); i++)
		CHECK(strstr(buf, podman_greps[i]));
	CHECK_EQ(SLIRP(&r, "--help")->res, SLIRP_HELP);
	CHECK_EQ(SLIRP(&r, "-h")->res, SLIRP_HELP);
	CHECK_EQ(SLIRP(&r, "-v")->res, SLIRP_VERSION);
	CHECK_EQ(SLIRP(&r, "--version")->res, SLIRP_VERSION);
}

TEST(slirp_bad_input_one_line_each)
{
	static struct srun r;

	CHECK(bad(SLIRP(&r, "--api-socket", "/tmp/a", "1", "t"),
		  "--api-socket"));
	CHECK(bad(SLIRP(&r, "-a", "/tmp/a", "1", "t"), "--api-socket"));
	CHECK(bad(SLIRP(&r, "--target-type=bess", "1", "t"), "--target-type"));
	CHECK(bad(SLIRP(&r, "--bogus", "1", "t"), "--bogus"));
	CHECK(bad(SLIRP(&r, "-x", "1", "t"), "-x"));
	CHECK(bad(SLIRP(&r, "--mtu=67", "1", "t"), "--mtu"));
	CHECK(bad(SLIRP(&r, "--mtu=65521", "1", "t"), "--mtu"));
	CHECK(bad(SLIRP(&r, "--mtu=15x", "1", "t"), "--mtu"));
	CHECK(bad(SLIRP(&r, "-m", "", "1", "t"), "--mtu"));
	CHECK(bad(SLIRP(&r, "--cidr=10.0.2.0/26", "1", "t"), "--cidr"));
	CHECK(bad(SLIRP(&r, "--cidr=10.0.2.0", "1", "t"), "--cidr"));
	CHECK(bad(SLIRP(&r, "--cidr=10.0.2.0/-1", "1", "t"), "--cidr"));
	CHECK(bad(SLIRP(&r, "--cidr=fd00::/64", "1", "t"), "--cidr"));
	CHECK(bad(SLIRP(&r, "--cidr=999.0.2.0/24", "1", "t"), "--cidr"));
	CHECK(bad(SLIRP(&r, "--netns-type=file", "1", "t"), "--netns-type"));
	CHECK(bad(SLIRP(&r, "--configure=yes", "1", "t"), "--configure"));
	CHECK(bad(SLIRP(&r, "1", "t", "--mtu"), "--mtu"));	/* no value */
	CHECK(bad(SLIRP(&r, "1", "t", "-e"), "-e"));
	CHECK(bad(SLIRP(&r, "/run/netns/x", "t"), "not a PID"));
	CHECK(bad(SLIRP(&r, "12a", "t"), "not a PID"));
	CHECK(bad(SLIRP(&r, "1"), "TAPNAME"));
	CHECK(bad(SLIRP(&r, (const char *)"-c"), "TAPNAME"));
	CHECK(bad(SLIRP(&r, "1", "t", "extra"), "extra"));
	CHECK(bad(SLIRP(&r, "--macaddress=02:00:00:00:00:01", "1", "t"),
		  "--macaddress"));
	CHECK(bad(SLIRP(&r, "--outbound-addr6=::1", "1", "t"),
		  "--outbound-addr6"));
}

TEST(slirp_values_conf_refuses)
{
	static struct srun r;

	/* what slirp.c passes on unchecked, conf.c checks: still one line */
	SLIRP(&r, "-e", "x3", "1", "t");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(!r.conf_ok && strstr(r.cerr, "--exit-fd"));
	free(r.c);
	SLIRP(&r, "-c", "--macaddress=zz", "1", "t");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(!r.conf_ok && strstr(r.cerr, "--ns-mac-addr"));
	free(r.c);
	/* "--" ends the options: a tap named like an option */
	SLIRP(&r, "-c", "--", "1", "-tap");
	CHECK_EQ(r.res, SLIRP_RUN);
	CHECK(r.conf_ok && !strcmp(r.c->ns_ifname, "-tap"));
	free(r.c);
}
