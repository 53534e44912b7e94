/* test_conf.c - the command line: defaults, the command lines podman,
 * libvirt and qemu really use, positionals, every option class with good
 * and bad values (one-line errors naming option and value), mode checks,
 * and --help covering every long option. */
#include <arpa/inet.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "unit.h"

struct run {
	struct conf *c;
	char *argv[80];
	char err[512];
	bool ok;
};

/* run_() - parse "ferry" + the NULL-terminated arguments in mode m.
 * Frees the previous conf of r, if any. */
static bool run_(struct run *r, enum mode m, ...)
{
	const char *a;
	va_list ap;
	int n = 0;

	free(r->c);
	r->c = calloc(1, sizeof(*r->c));
	r->argv[n++] = (char *)"ferry";
	va_start(ap, m);
	while ((a = va_arg(ap, const char *)) && n < 79)
		r->argv[n++] = (char *)a;
	va_end(ap);
	r->argv[n] = NULL;
	r->err[0] = '\0';
	r->ok = conf_parse_args(r->c, m, n, r->argv, r->err, sizeof(r->err));
	if (!r->ok && (strchr(r->err, '\n') || !r->err[0]))
		printf("  error is not one non-empty line: '%s'\n", r->err);
	return r->ok;
}
#define NS(r, ...)	run_(r, MODE_NS, __VA_ARGS__, (const char *)NULL)
#define VM(r, ...)	run_(r, MODE_VM, __VA_ARGS__, (const char *)NULL)

/* err_has() - the run failed and its error names all given parts. */
static bool err_has(const struct run *r, const char *a, const char *b)
{
	bool ok = !r->ok && r->err[0] && !strchr(r->err, '\n') &&
		  strstr(r->err, a) && (!b || strstr(r->err, b));

	if (!ok)
		printf("  expected error with '%s' '%s', got ok=%d '%s'\n", a,
		       b ? b : "", r->ok, r->err);
	return ok;
}

static bool ip4_is(const struct in_addr *a, const char *s)
{
	struct in_addr b;

	return inet_pton(AF_INET, s, &b) == 1 && a->s_addr == b.s_addr;
}

static bool ip6_is(const struct in6_addr *a, const char *s)
{
	struct in6_addr b;

	return inet_pton(AF_INET6, s, &b) == 1 && !memcmp(a, &b, 16);
}

TEST(conf_defaults)
{
	static const uint8_t mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
	struct run r = { 0 };

	CHECK(run_(&r, MODE_NS, (const char *)NULL));
	CHECK_EQ(r.c->mode, MODE_NS);
	CHECK_EQ(r.c->mtu, 65520);
	CHECK(!memcmp(r.c->our_mac, mac, 6));
	CHECK(r.c->ip4.enabled && r.c->ip6.enabled);
	CHECK_EQ(r.c->fd, -1);
	CHECK_EQ(r.c->log_size, 1024 * 1024);
	CHECK(!r.c->cmd && !r.c->ns_pid && !r.c->netns_path[0]);
	/* pasta forwards "auto" by default, passt nothing. */
	CHECK_EQ(r.c->tcp_in.mode, FWD_AUTO);
	CHECK_EQ(r.c->udp_out.mode, FWD_AUTO);
	CHECK(run_(&r, MODE_VM, (const char *)NULL));
	CHECK_EQ(r.c->tcp_in.mode, FWD_NONE);
	CHECK_EQ(r.c->udp_in.mode, FWD_NONE);
	free(r.c);
}

/* What podman (containers/common libnetwork/pasta) runs for a rootless
 * container with "-p 127.0.0.1:8080:80 -p 5353:53/udp". */
TEST(conf_podman_container)
{
	struct run r = { 0 };

	CHECK(NS(&r, "--config-net", "-t", "127.0.0.1/8080-8080:80-80",
		 "-u", "5353-5353:53-53", "--dns-forward", "169.254.1.1",
		 "-T", "none", "-U", "none", "--no-map-gw", "--quiet",
		 "--map-guest-addr", "169.254.1.2", "--pid",
		 "/tmp/pasta123/pasta.pid", "--netns",
		 "/run/user/1000/netns/netns-5b2e"));
	CHECK(r.c->config_net && r.c->no_map_gw && r.c->quiet);
	CHECK_EQ(r.c->tcp_in.mode, FWD_SPEC);
	CHECK(fwd_port_set(&r.c->tcp_in, 8080));
	CHECK_EQ(fwd_target(&r.c->tcp_in, 8080), 80);
	CHECK(fwd_port_bind(&r.c->tcp_in, 8080)->has_addr4);
	CHECK_EQ(fwd_target(&r.c->udp_in, 5353), 53);
	CHECK_EQ(r.c->tcp_out.mode, FWD_NONE);
	CHECK_EQ(r.c->udp_out.mode, FWD_NONE);
	CHECK(ip4_is(&r.c->ip4.dns_fwd, "169.254.1.1"));
	CHECK(ip4_is(&r.c->ip4.map_guest, "169.254.1.2"));
	CHECK(!strcmp(r.c->pid_file, "/tmp/pasta123/pasta.pid"));
	CHECK(!strcmp(r.c->netns_path, "/run/user/1000/netns/netns-5b2e"));
	CHECK(!r.c->cmd && !r.c->ns_pid);

	/* No published ports, older podman, plus "--dns none" and user
	 * pasta_options (containers.conf) in front. */
	CHECK(NS(&r, "--config-net", "-I", "eth0", "--ipv4-only", "-a",
		 "10.0.2.100", "-n", "24", "-g", "10.0.2.2", "-m", "1500",
		 "--dns-forward", "169.254.0.1", "-t", "none", "-u", "none",
		 "-T", "none", "-U", "none", "--no-map-gw", "--dns", "none",
		 "--quiet", "--netns", "/run/user/1000/netns/x"));
	CHECK_EQ(r.c->tcp_in.mode, FWD_NONE);
	CHECK(!r.c->ip6.enabled && r.c->ip4.enabled);
	CHECK(r.c->no_dns);
	CHECK(!strcmp(r.c->ns_ifname, "eth0"));
	CHECK_EQ(r.c->ip4.prefix_len, 24);
	CHECK(ip4_is(&r.c->ip4.gw, "10.0.2.2"));
	CHECK_EQ(r.c->mtu, 1500);

	/* Rootless netns (podman 5) adds --pid; the user may give -T/-U
	 * themselves and IPv6 extras. */
	CHECK(NS(&r, "--config-net", "--pid", "/run/user/1000/rootless-netns/"
		 "rootless-netns-conn.pid", "-T", "auto", "-U", "53",
		 "--dns-forward", "169.254.1.1", "-t", "none", "-u", "none",
		 "--no-map-gw", "--quiet", "--map-guest-addr", "169.254.1.2",
		 "--map-guest-addr", "fc00::2", "-a", "fc00::3", "-g", "fc00::1",
		 "--netns", "/run/user/1000/rootless-netns/rootless-netns"));
	CHECK_EQ(r.c->tcp_out.mode, FWD_AUTO);
	CHECK(fwd_port_set(&r.c->udp_out, 53));
	CHECK(ip6_is(&r.c->ip6.map_guest, "fc00::2"));
	CHECK(ip4_is(&r.c->ip4.map_guest, "169.254.1.2"));
	CHECK(ip6_is(&r.c->ip6.addr, "fc00::3"));
	CHECK(ip6_is(&r.c->ip6.gw, "fc00::1"));
	free(r.c);
}

/* libvirt's qemuPasstStart(): passt with a socket for qemu. */
TEST(conf_libvirt_passt)
{
	struct run r = { 0 };

	CHECK(VM(&r, "--one-off", "--socket",
		 "/run/libvirt/qemu/passt/1-vm1-net0.socket", "--mac-addr",
		 "52:54:00:12:34:56", "--pid",
		 "/run/libvirt/qemu/passt/1-vm1-net0-passt.pid", "--mtu", "1500",
		 "--interface", "eth0", "--log-file", "/var/log/passt.log",
		 "--hostname", "vm1", "--fqdn", "vm1.example.test",
		 "--address", "198.51.100.10", "--netmask", "24",
		 "--address", "2001:db8::10", "--tcp-ports",
		 "198.51.100.1%eth0/2222:22", "--tcp-ports", "%eth0/8080:80",
		 "--udp-ports", "~53,~67-68", "--tcp-ports", "443"));
	CHECK(r.c->one_off);
	CHECK(!strcmp(r.c->socket_path,
		      "/run/libvirt/qemu/passt/1-vm1-net0.socket"));
	CHECK(r.c->our_mac_set && r.c->our_mac[5] == 0x56);
	CHECK_EQ(r.c->mtu, 1500);
	CHECK(!strcmp(r.c->ifname4, "eth0") && !strcmp(r.c->ifname6, "eth0"));
	CHECK(!strcmp(r.c->log_file, "/var/log/passt.log"));
	CHECK(!strcmp(r.c->hostname, "vm1"));
	CHECK(!strcmp(r.c->fqdn, "vm1.example.test"));
	CHECK(ip4_is(&r.c->ip4.addr, "198.51.100.10"));
	CHECK_EQ(r.c->ip4.prefix_len, 24);
	CHECK(ip6_is(&r.c->ip6.addr, "2001:db8::10"));
	CHECK_EQ(fwd_target(&r.c->tcp_in, 2222), 22);
	CHECK(!strcmp(fwd_port_bind(&r.c->tcp_in, 8080)->ifname, "eth0"));
	CHECK(fwd_port_set(&r.c->tcp_in, 443));
	CHECK_EQ(r.c->udp_in.mode, FWD_ALL);
	CHECK(!fwd_port_set(&r.c->udp_in, 53) && !fwd_port_set(&r.c->udp_in, 67));
	CHECK(fwd_port_set(&r.c->udp_in, 69));

	/* Newer libvirt may use vhost-user; libvirt without ranges: all. */
	CHECK(VM(&r, "--one-off", "--vhost-user", "--socket", "/run/x.sock",
		 "--pid", "/run/x.pid", "--repair-path", "/run/x.repair",
		 "--tcp-ports", "198.51.100.1/all"));
	CHECK(r.c->vhost_user);
	CHECK_EQ(r.c->tcp_in.mode, FWD_ALL);
	free(r.c);
}

/* qemu 10.1 "-netdev passt,...": every property it turns into options. */
TEST(conf_qemu_netdev_passt)
{
	struct run r = { 0 };

	CHECK(VM(&r, "--vhost-user", "--quiet", "--mtu", "9000",
		 "--address", "198.51.100.5", "--netmask", "255.255.255.0",
		 "--mac-addr", "9a:55:9a:55:9a:56", "--gateway", "198.51.100.1",
		 "--interface", "eth0", "--outbound", "198.51.100.2",
		 "--outbound-if4", "eth0", "--outbound-if6", "eth1",
		 "--dns", "198.51.100.53", "--fqdn", "h.example.test",
		 "--no-dhcp-dns", "--no-dhcp-search", "--map-host-loopback",
		 "198.51.100.9", "--map-guest-addr", "198.51.100.8",
		 "--dns-forward", "198.51.100.7", "--dns-host", "198.51.100.53",
		 "--no-tcp", "--no-udp", "--no-icmp", "--no-dhcp", "--no-ndp",
		 "--no-dhcpv6", "--no-ra", "--freebind", "--ipv4-only",
		 "--search", "a.example.test b.example.test",
		 "--tcp-ports", "80,443", "--udp-ports", "53",
		 "--pid", "/tmp/passt-Ab12.pid", "--fd", "3"));
	CHECK(r.c->vhost_user && r.c->quiet && r.c->freebind);
	CHECK_EQ(r.c->mtu, 9000);
	CHECK_EQ(r.c->ip4.prefix_len, 24);
	CHECK(ip4_is(&r.c->ip4.outbound, "198.51.100.2"));
	CHECK(!strcmp(r.c->outbound_if6, "eth1"));
	CHECK_EQ(r.c->ip4.dns_count, 1);
	CHECK(ip4_is(&r.c->ip4.dns_host, "198.51.100.53"));
	CHECK(ip4_is(&r.c->ip4.map_host_lo, "198.51.100.9"));
	CHECK(r.c->no_dhcp_dns && r.c->no_dhcp_search);
	CHECK(r.c->no_tcp && r.c->no_udp && r.c->no_icmp && r.c->no_dhcp);
	CHECK(r.c->no_ndp && r.c->no_dhcpv6 && r.c->no_ra);
	CHECK(!r.c->ip6.enabled);
	CHECK_EQ(r.c->search_count, 2);
	CHECK(!strcmp(r.c->search[1], "b.example.test"));
	CHECK_EQ(r.c->fd, 3);
	CHECK(fwd_port_set(&r.c->tcp_in, 443));

	/* "=" forms, short clusters and a unique long prefix work too. */
	CHECK(VM(&r, "--mtu=1400", "-fq1", "-s/tmp/s", "--one", "-m1500"));
	CHECK_EQ(r.c->mtu, 1500);
	CHECK(r.c->foreground && r.c->quiet && r.c->one_off);
	CHECK(!strcmp(r.c->socket_path, "/tmp/s"));
	free(r.c);
}

TEST(conf_ns_positionals)
{
	struct run r = { 0 };

	CHECK(NS(&r, "-f", "1234"));
	CHECK_EQ(r.c->ns_pid, 1234);
	CHECK(NS(&r, "--config-net", "--", "sh", "-c", "echo hi"));
	CHECK(r.c->cmd && !strcmp(r.c->cmd[0], "sh"));
	CHECK(!strcmp(r.c->cmd[2], "echo hi") && !r.c->cmd[3]);
	/* pasta: a non-numeric first argument is the command, and the
	 * options after it belong to the command. */
	CHECK(NS(&r, "-q", "ip", "-4", "addr"));
	CHECK(!strcmp(r.c->cmd[0], "ip") && !strcmp(r.c->cmd[1], "-4"));
	CHECK(r.c->ip6.enabled);
	/* After "--", a number is a command, not a PID. */
	CHECK(NS(&r, "--", "123"));
	CHECK(!r.c->ns_pid && !strcmp(r.c->cmd[0], "123"));
	/* "--" as an option's value is not the separator. */
	CHECK(NS(&r, "-l", "--", "99"));
	CHECK(!strcmp(r.c->log_file, "--") && r.c->ns_pid == 99);
	CHECK(NS(&r, "--netns", "blue"));
	CHECK(!strcmp(r.c->netns_path, "/run/netns/blue"));
	CHECK(NS(&r, "--userns", "/proc/77/ns/user", "--netns-only", "77"));
	CHECK(r.c->netns_only && !strcmp(r.c->userns_path, "/proc/77/ns/user"));

	CHECK(!NS(&r, "0"));
	CHECK(err_has(&r, "'0'", "PID"));
	CHECK(!NS(&r, "99999999999"));
	CHECK(err_has(&r, "99999999999", "PID"));
	CHECK(!NS(&r, "12", "34"));
	CHECK(err_has(&r, "'34'", NULL));
	CHECK(!NS(&r, "--netns", "/run/netns/a", "sh"));
	CHECK(err_has(&r, "'sh'", "--netns"));
	CHECK(!NS(&r, "--userns", "/proc/1/ns/user"));
	CHECK(err_has(&r, "--userns", NULL));
	CHECK(!VM(&r, "extra"));
	CHECK(err_has(&r, "'extra'", "vm"));
	free(r.c);
}

TEST(conf_mtu)
{
	static const char *const bad[] = { "67", "65521", "00x", "-1", "1500x",
					   "abc", "", "99999999999999999999" };
	struct run r = { 0 };
	size_t i;

	CHECK(NS(&r, "--mtu", "65520"));
	CHECK(r.c->mtu_set && r.c->ip6.enabled);
	CHECK(NS(&r, "-m", "1280"));
	CHECK(r.c->ip6.enabled && !r.c->mtu_disabled_ip6);
	/* Below IPv6's minimum: IPv6 is turned off, with a warning. */
	CHECK(NS(&r, "-m", "1279"));
	CHECK(!r.c->ip6.enabled && r.c->mtu_disabled_ip6);
	CHECK(NS(&r, "-4", "-m", "68"));
	CHECK(!r.c->mtu_disabled_ip6);
	CHECK(!NS(&r, "-6", "-m", "1000"));	/* nothing would be left */
	CHECK(err_has(&r, "--mtu", "'1000'"));
	/* 0, as in passt: no MTU advertised; not "below IPv6's minimum". */
	CHECK(NS(&r, "-6", "-m", "0"));
	CHECK(r.c->mtu == 0 && r.c->mtu_set && !r.c->mtu_disabled_ip6);
	CHECK(VM(&r, "--mtu", "0"));
	CHECK(r.c->mtu == 0 && r.c->ip6.enabled);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!NS(&r, "--mtu", bad[i]));
		CHECK(err_has(&r, "--mtu", "MTU (68-65520, or 0"));
	}
	CHECK(!NS(&r, "--mtu", "70000"));
	CHECK(!strcmp(r.err, "--mtu: '70000' is not a valid MTU (68-65520, "
		      "or 0: none advertised)"));
	free(r.c);
}

TEST(conf_addresses)
{
	struct run r = { 0 };

	CHECK(NS(&r, "-a", "198.51.100.7/25", "-a", "2001:db8::7/64"));
	CHECK(ip4_is(&r.c->ip4.addr, "198.51.100.7"));
	CHECK_EQ(r.c->ip4.prefix_len, 25);
	CHECK_EQ(r.c->ip6.prefix_len, 64);
	CHECK(NS(&r, "-n", "255.255.255.255", "-o", "2001:db8::2",
		 "-g", "fe80::1", "--dns-host", "127.0.0.53"));
	CHECK_EQ(r.c->ip4.prefix_len, 32);
	CHECK(ip6_is(&r.c->ip6.outbound, "2001:db8::2"));
	CHECK(ip6_is(&r.c->ip6.gw, "fe80::1"));
	CHECK(ip4_is(&r.c->ip4.dns_host, "127.0.0.53"));
	CHECK(NS(&r, "-n", "255.255.240.0"));
	CHECK_EQ(r.c->ip4.prefix_len, 20);
	CHECK(NS(&r, "--map-host-loopback", "none", "--map-guest-addr",
		 "none"));
	CHECK(r.c->no_map_host_lo && r.c->no_map_guest);

	CHECK(!NS(&r, "-a", "198.51.100"));
	CHECK(err_has(&r, "-a", "'198.51.100'"));
	CHECK(!NS(&r, "--address", "198.51.100.7/33"));
	CHECK(err_has(&r, "--address", "'33'"));
	CHECK(!NS(&r, "-a", "198.51.100.7/0"));
	CHECK(err_has(&r, "-a", "'0'"));
	CHECK(!NS(&r, "-a", "2001:db8::1/129"));
	CHECK(err_has(&r, "-a", "'129'"));
	CHECK(!NS(&r, "-a", "127.0.0.1"));
	CHECK(err_has(&r, "-a", "'127.0.0.1'"));
	CHECK(!NS(&r, "-a", "::"));
	CHECK(err_has(&r, "-a", "'::'"));
	CHECK(!NS(&r, "-g", "224.0.0.1"));
	CHECK(err_has(&r, "-g", "'224.0.0.1'"));
	CHECK(!NS(&r, "-g", "ff02::1"));
	CHECK(err_has(&r, "-g", "'ff02::1'"));
	CHECK(!NS(&r, "--outbound", "255.255.255.255"));
	CHECK(err_has(&r, "--outbound", "255.255.255.255"));
	CHECK(!NS(&r, "--dns-forward", "nonsense"));
	CHECK(err_has(&r, "--dns-forward", "'nonsense'"));
	CHECK(!NS(&r, "--map-guest-addr", "::1"));
	CHECK(err_has(&r, "--map-guest-addr", "'::1'"));
	CHECK(!NS(&r, "-n", "255.0.255.0"));
	CHECK(err_has(&r, "-n", "'255.0.255.0'"));
	CHECK(!NS(&r, "--netmask", "33"));
	CHECK(err_has(&r, "--netmask", "'33'"));
	CHECK(!NS(&r, "-n", "0.0.0.0"));
	CHECK(err_has(&r, "-n", "'0.0.0.0'"));
	CHECK(!NS(&r, "-4", "-6"));
	CHECK(err_has(&r, "-6", "-4"));
	CHECK(!NS(&r, "--ipv6-only", "--ipv4-only"));
	CHECK(err_has(&r, "--ipv4-only", "-6"));
	free(r.c);
}

TEST(conf_mac)
{
	static const char *const bad[] = { "9a:55:9a:55:9a", "9a-55-9a-55-9a-55",
		"zz:55:9a:55:9a:55", "9a:55:9a:55:9a:55:00", "9a:5:9a:55:9a:55",
		"" };
	struct run r = { 0 };
	size_t i;

	CHECK(NS(&r, "-M", "02:00:00:AB:cd:01", "--ns-mac-addr",
		 "02:00:00:00:00:02"));
	CHECK(r.c->our_mac[3] == 0xab && r.c->our_mac[4] == 0xcd);
	CHECK(r.c->guest_mac_set && r.c->guest_mac[5] == 2);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!NS(&r, "--mac-addr", bad[i]));
		CHECK(err_has(&r, "--mac-addr", bad[i]));
	}
	CHECK(!NS(&r, "-M", "01:00:5e:00:00:01"));
	CHECK(err_has(&r, "-M", "unicast"));
	CHECK(!NS(&r, "-M", "00:00:00:00:00:00"));
	CHECK(err_has(&r, "-M", "unicast"));
	free(r.c);
}

TEST(conf_dns_and_names)
{
	char longname[300];
	struct run r = { 0 };

	CHECK(NS(&r, "-D", "198.51.100.53", "-D", "2001:db8::53", "-D",
		 "198.51.100.54"));
	CHECK_EQ(r.c->ip4.dns_count, 2);
	CHECK_EQ(r.c->ip6.dns_count, 1);
	CHECK(NS(&r, "-D", "198.51.100.53", "-D", "none"));
	CHECK(r.c->no_dns && !r.c->ip4.dns_count);
	CHECK(!NS(&r, "-D", "203.0.113.1", "-D", "203.0.113.2", "-D", "203.0.113.3",
		  "-D", "203.0.113.4", "-D", "203.0.113.5"));
	CHECK(err_has(&r, "-D", "'203.0.113.5'"));
	CHECK(!NS(&r, "--dns", "ns.example.test"));
	CHECK(err_has(&r, "--dns", "'ns.example.test'"));

	CHECK(NS(&r, "-S", "a.example.test", "-S", "b.example, c.example."));
	CHECK_EQ(r.c->search_count, 3);
	CHECK(!strcmp(r.c->search[2], "c.example."));
	CHECK(NS(&r, "--search", "none"));
	CHECK(r.c->no_search && !r.c->search_count);
	CHECK(!NS(&r, "-S", "a b c d e f g"));
	CHECK(err_has(&r, "-S", "more than 6"));
	CHECK(!NS(&r, "-S", "bad..example"));
	CHECK(err_has(&r, "-S", "'bad..example'"));
	CHECK(!NS(&r, "-S", " "));
	CHECK(err_has(&r, "-S", "empty"));

	CHECK(NS(&r, "-H", "vm-1", "--fqdn", "vm-1.example.test"));
	CHECK(!strcmp(r.c->hostname, "vm-1"));
	CHECK(!NS(&r, "--hostname", "has space"));
	CHECK(err_has(&r, "--hostname", "'has space'"));
	CHECK(!NS(&r, "--fqdn", ""));
	CHECK(err_has(&r, "--fqdn", "''"));
	memset(longname, 'a', sizeof(longname));
	longname[sizeof(longname) - 1] = '\0';
	CHECK(!NS(&r, "-H", longname));
	CHECK(err_has(&r, "-H", "not a valid host name"));
	memset(longname, 'a', 64);		/* label over 63 */
	strcpy(longname + 64, ".example");
	CHECK(!NS(&r, "--fqdn", longname));
	CHECK(err_has(&r, "--fqdn", "not a valid host name"));
	free(r.c);
}

TEST(conf_paths_sizes_ids)
{
	static char longpath[PATH_MAX + 10];
	const struct passwd *pw;
	struct run r = { 0 };

	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[0] = '/';
	CHECK(!NS(&r, "--log-file", longpath));
	CHECK(err_has(&r, "--log-file", "too long"));
	CHECK(!NS(&r, "--netns", longpath));
	CHECK(err_has(&r, "--netns", "too long"));
	CHECK(!NS(&r, "--netns", longpath + 1));	/* a name, no '/' */
	CHECK(err_has(&r, "--netns", "too long"));
	CHECK(!NS(&r, "-P", ""));
	CHECK(err_has(&r, "-P", "empty"));
	longpath[120] = '\0';
	CHECK(!VM(&r, "--socket", longpath));
	CHECK(err_has(&r, "--socket", "too long"));
	CHECK(NS(&r, "-p", "/tmp/x.pcap", "-P", "/tmp/x.pid"));
	CHECK(!strcmp(r.c->pcap_file, "/tmp/x.pcap"));

	CHECK(NS(&r, "--log-size", "4096"));
	CHECK_EQ(r.c->log_size, 4096);
	CHECK(NS(&r, "--log-size", "4k"));
	CHECK_EQ(r.c->log_size, 4096);
	CHECK(NS(&r, "--log-size", "2M"));
	CHECK_EQ(r.c->log_size, 2 * 1024 * 1024);
	CHECK(!NS(&r, "--log-size", "2k"));
	CHECK(err_has(&r, "--log-size", "'2k'"));
	CHECK(!NS(&r, "--log-size", "1T"));
	CHECK(err_has(&r, "--log-size", "'1T'"));
	CHECK(!NS(&r, "--log-size", "-5"));
	CHECK(err_has(&r, "--log-size", "'-5'"));

	CHECK(NS(&r, "-q"));
	CHECK_EQ(r.c->linger_s, 30);
	CHECK(NS(&r, "--linger", "0"));
	CHECK_EQ(r.c->linger_s, 0);
	CHECK(VM(&r, "--linger", "86400"));
	CHECK_EQ(r.c->linger_s, 86400);
	CHECK(!NS(&r, "--linger", "86401"));
	CHECK(err_has(&r, "--linger", "'86401'"));
	CHECK(!NS(&r, "--linger", "-1"));
	CHECK(err_has(&r, "--linger", "'-1'"));
	CHECK(!NS(&r, "--linger", "3s"));
	CHECK(err_has(&r, "--linger", "'3s'"));

	CHECK(NS(&r, "--runas", "0"));
	CHECK(r.c->runas_set && r.c->run_uid == 0 && r.c->run_gid == 0);
	CHECK(NS(&r, "--runas", "1000:1001"));
	CHECK(r.c->run_uid == 1000 && r.c->run_gid == 1001);
	CHECK(NS(&r, "--runas", "root:root"));
	CHECK(r.c->run_uid == 0 && r.c->run_gid == 0);
	CHECK(NS(&r, "--runas", "1000"));	/* no entry: gid = uid */
	CHECK(r.c->run_uid == 1000 && r.c->run_gid == 1000);
	CHECK(NS(&r, "--runas", "root:7"));
	CHECK(r.c->run_uid == 0 && r.c->run_gid == 7);
	CHECK(VM(&r, "--runas", "7:root"));
	CHECK(r.c->run_uid == 7 && r.c->run_gid == 0);
	if ((pw = getpwnam("nobody"))) {	/* its primary group */
		CHECK(NS(&r, "--runas", "nobody"));
		CHECK(r.c->run_uid == pw->pw_uid && r.c->run_gid == pw->pw_gid);
	}
	CHECK(!NS(&r, "--runas", ""));
	CHECK(err_has(&r, "--runas", "''"));
	CHECK(!NS(&r, "--runas", ":0"));
	CHECK(err_has(&r, "--runas", "''"));
	CHECK(!NS(&r, "--runas", "0:"));
	CHECK(err_has(&r, "--runas", "''"));
	CHECK(!NS(&r, "--runas", "-1"));
	CHECK(err_has(&r, "--runas", "'-1'"));
	CHECK(!NS(&r, "--runas", "4294967295"));	/* (uid_t)-1 */
	CHECK(err_has(&r, "--runas", "'4294967295'"));
	CHECK(!NS(&r, "--runas", "0:4294967295"));
	CHECK(err_has(&r, "--runas", "'4294967295'"));
	CHECK(!NS(&r, "--runas", "1:2:3"));
	CHECK(err_has(&r, "--runas", "'2:3'"));
	CHECK(!NS(&r, "--runas", "12abc"));
	CHECK(err_has(&r, "--runas", "'12abc'"));
	CHECK(!NS(&r, "--runas", "no-such-user-x"));
	CHECK(err_has(&r, "--runas", "'no-such-user-x'"));
	CHECK(!NS(&r, "--runas", "0:no-such-group-x"));
	CHECK(err_has(&r, "--runas", "'no-such-group-x'"));

	CHECK(VM(&r, "-F", "0"));
	CHECK_EQ(r.c->fd, 0);
	CHECK(!VM(&r, "--fd", "-1"));
	CHECK(err_has(&r, "--fd", "'-1'"));
	CHECK(!VM(&r, "-F", "3", "-s", "/tmp/s"));
	CHECK(err_has(&r, "--fd", "--socket"));
	CHECK(!NS(&r, "-i", "abcdefghijklmnopq"));
	CHECK(err_has(&r, "-i", "too long"));
	CHECK(!NS(&r, "--outbound-if4", "a/b"));
	CHECK(err_has(&r, "--outbound-if4", "'a/b'"));
	free(r.c);
}

TEST(conf_flags_and_logging)
{
	struct run r = { 0 };

	CHECK(NS(&r, "-d", "--trace", "-e", "--no-dhcp-dns", "--dhcp-dns",
		 "--no-dhcp-search", "--no-netns-quit", "--no-copy-routes",
		 "--no-copy-addrs", "--host-lo-to-ns-lo", "--config-net"));
	CHECK(r.c->debug && r.c->trace);
	CHECK(!r.c->no_dhcp_dns && r.c->no_dhcp_search);
	CHECK(r.c->no_netns_quit && r.c->ip4.no_copy_routes);
	CHECK(r.c->ip4.no_copy_addrs && r.c->host_lo_to_ns_lo);
	CHECK(NS(&r, "--trace"));
	CHECK(r.c->debug);		/* --trace implies --debug */
	CHECK(VM(&r, "--migrate-exit", "--migrate-no-linger",
		 "--repair-path", "none"));
	CHECK(r.c->migrate_exit && r.c->migrate_no_linger);
	CHECK(r.c->repair_path_set && !r.c->repair_path[0]);
	CHECK(VM(&r, "--repair-path", "/run/x.repair"));
	CHECK(!strcmp(r.c->repair_path, "/run/x.repair"));
	CHECK(!r.c->migrate_exit);
	free(r.c);
}

TEST(conf_sandbox)
{
	struct run r = { 0 };

	CHECK(NS(&r, "--config-net"));
	CHECK_EQ(r.c->sandbox, SANDBOX_ON);
	CHECK(NS(&r, "--sandbox", "off"));
	CHECK_EQ(r.c->sandbox, SANDBOX_OFF);
	CHECK(VM(&r, "--sandbox=strict"));
	CHECK_EQ(r.c->sandbox, SANDBOX_STRICT);
	CHECK(VM(&r, "--sandbox=on"));
	CHECK_EQ(r.c->sandbox, SANDBOX_ON);
	CHECK(!VM(&r, "--sandbox=tight"));
	CHECK(err_has(&r, "--sandbox", "'tight'"));
	CHECK(!NS(&r, "--sandbox", ""));
	CHECK(err_has(&r, "--sandbox", "sandbox mode"));
	free(r.c);
}

TEST(conf_wrong_mode_and_unknown)
{
	static const char *const vm_only[] = { "--one-off", "-1", "--vhost-user",
		"--print-capabilities", "--migrate-exit" };
	static const char *const ns_only[] = { "--config-net", "--netns-only",
		"--no-netns-quit", "--host-lo-to-ns-lo", "--no-copy-routes" };
	struct run r = { 0 };
	size_t i;

	for (i = 0; i < sizeof(vm_only) / sizeof(vm_only[0]); i++) {
		CHECK(!NS(&r, vm_only[i]));
		CHECK(err_has(&r, vm_only[i], "vm (passt) mode"));
	}
	for (i = 0; i < sizeof(ns_only) / sizeof(ns_only[0]); i++) {
		CHECK(!VM(&r, ns_only[i]));
		CHECK(err_has(&r, ns_only[i], "ns (pasta) mode"));
	}
	CHECK(!VM(&r, "-T", "80"));
	CHECK(err_has(&r, "-T", "ns (pasta) mode"));
	CHECK(!VM(&r, "--udp-ns", "80"));
	CHECK(err_has(&r, "--udp-ns", "ns (pasta)"));
	CHECK(!VM(&r, "--netns", "/run/netns/x"));
	CHECK(err_has(&r, "--netns", "ns (pasta)"));
	CHECK(!VM(&r, "-I", "eth0"));
	CHECK(err_has(&r, "-I", "ns (pasta)"));
	CHECK(!NS(&r, "-s", "/tmp/s"));
	CHECK(err_has(&r, "-s", "vm (passt)"));
	/* "auto" is for pasta only. */
	CHECK(!VM(&r, "-t", "auto"));
	CHECK(err_has(&r, "-t", "'auto'"));

	CHECK(!NS(&r, "--no-such-option"));
	CHECK(err_has(&r, "'--no-such-option'", NULL));
	CHECK(!NS(&r, "--no-such=1"));
	CHECK(err_has(&r, "'--no-such'", NULL));
	CHECK(!NS(&r, "-fZ"));
	CHECK(err_has(&r, "'-Z'", NULL));
	CHECK(!NS(&r, "--mtu"));
	CHECK(err_has(&r, "--mtu", "needs a value"));
	CHECK(!NS(&r, "-f", "-t"));
	CHECK(err_has(&r, "-t", "needs a value"));
	CHECK(!NS(&r, "--no"));			/* ambiguous prefix */
	CHECK(err_has(&r, "'--no'", NULL));
	CHECK(!NS(&r, "-t", "90-80"));
	CHECK(!strcmp(r.err, "-t: bad port range '90-80'"));
	CHECK(!NS(&r, "--tcp-ports", "80", "--tcp-ports", "none"));
	CHECK(err_has(&r, "--tcp-ports", "'none'"));
	free(r.c);
}

TEST(conf_print_requests)
{
	struct run r = { 0 };

	CHECK(NS(&r, "--help", "--mtu", "1"));	/* stops at --help */
	CHECK_EQ(r.c->print, CONF_PRINT_HELP);
	CHECK(VM(&r, "-h"));
	CHECK_EQ(r.c->print, CONF_PRINT_HELP);
	CHECK(NS(&r, "--version"));
	CHECK_EQ(r.c->print, CONF_PRINT_VERSION);
	CHECK(VM(&r, "--print-capabilities"));
	CHECK_EQ(r.c->print, CONF_PRINT_CAPS);
	CHECK(NS(&r, "-f"));
	CHECK_EQ(r.c->print, CONF_PRINT_NONE);
	free(r.c);
}

/* --help of each mode documents every option of that mode. */
TEST(conf_usage_lists_everything)
{
	static const char *const both[] = { "debug", "trace", "quiet",
		"foreground", "stderr", "log-file", "log-size", "version",
		"help", "pcap", "pid", "mtu", "address", "netmask",
		"mac-addr", "gateway", "interface", "outbound", "outbound-if4",
		"outbound-if6", "dns", "dns-forward", "dns-host", "search",
		"no-dhcp-dns", "no-dhcp-search", "dhcp-dns", "dhcp-search",
		"hostname", "fqdn", "no-tcp", "no-udp", "no-icmp", "no-dhcp",
		"no-ndp", "no-dhcpv6", "no-ra", "no-map-gw", "freebind",
		"map-host-loopback", "map-guest-addr", "ipv4-only", "ipv6-only",
		"tcp-ports", "udp-ports", "runas", "linger" };
	static const char *const vm[] = { "fd", "socket", "socket-path", "one-off",
		"vhost-user", "print-capabilities", "repair-path",
		"migrate-exit", "migrate-no-linger" };
	static const char *const ns[] = { "ns-ifname", "tcp-ns", "udp-ns",
		"userns", "netns", "netns-only", "no-netns-quit", "config-net",
		"no-copy-routes", "no-copy-addrs", "ns-mac-addr",
		"host-lo-to-ns-lo" };
	char *text[2], needle[64];
	size_t len, i;
	FILE *f;
	int m;

	for (m = 0; m < 2; m++) {
		f = open_memstream(&text[m], &len);
		conf_print_usage(f, m ? MODE_VM : MODE_NS);
		fclose(f);
	}
	for (i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
		snprintf(needle, sizeof(needle), "--%s ", both[i]);
		CHECK(strstr(text[0], needle) && strstr(text[1], needle));
	}
	for (i = 0; i < sizeof(vm) / sizeof(vm[0]); i++) {
		snprintf(needle, sizeof(needle), "--%s ", vm[i]);
		CHECK(strstr(text[1], needle) && !strstr(text[0], needle));
	}
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		snprintf(needle, sizeof(needle), "--%s ", ns[i]);
		CHECK(strstr(text[0], needle) && !strstr(text[1], needle));
	}
	CHECK(strstr(text[0], "-t, --tcp-ports SPEC"));
	free(text[0]);
	free(text[1]);
}
