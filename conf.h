/* conf.h - configuration: what the command line (and the host's own
 * network setup) says ferry should do.
 *
 * conf_parse() fills struct conf from argv; conf_derive() completes it from
 * the host (template interface, addresses, routes, nameservers) once the
 * mode is known. After start-up the configuration is read-only.
 */
#ifndef FERRY_CONF_H
#define FERRY_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/types.h>

#include "fault.h"
#include "fwd.h"
#include "netlink.h"

enum mode { MODE_NS, MODE_VM };

/* What --help, --version or --print-capabilities asked to print (then
 * exit 0); the parser stops at the first of them. */
enum conf_print { CONF_PRINT_NONE = 0, CONF_PRINT_HELP, CONF_PRINT_VERSION,
		  CONF_PRINT_CAPS };

/* --sandbox: how far ferry confines itself after set-up (isolate.c,
 * seccomp.c). ON (the default) applies every layer the kernel and the
 * caller's privileges allow and says which; OFF applies none but the
 * privilege drop (priv.c), with a warning; STRICT refuses to start if
 * any layer cannot be applied. */
enum sandbox_mode { SANDBOX_ON = 0, SANDBOX_OFF, SANDBOX_STRICT };

/* --tcp-keepalive: the default idle time (seconds, tcp_guard.c). */
#define TCP_KA_IDLE_S		300

#define CONF_MAX_DNS	4
#define CONF_MAX_SEARCH	6
#define CONF_NAME_MAX	256
#define CONF_MAX_ADDRS	16		/* host addresses copied, per family */
#define CONF_MAX_ROUTES	64		/* host routes copied, per family */
#define CONF_LINGER_DEFAULT	30	/* --linger: seconds (drain.c) */
#define CONF_LINGER_MAX		86400	/* --linger, --stats, --tcp-keepalive */

/* What --config-net copies from the template interface besides the
 * guest's address and default route (hostconf.c fills it, ns.c applies
 * it): the interface's other addresses and its routes. */
struct conf_copied {
	struct nl_addr addrs[CONF_MAX_ADDRS];
	int addr_count;
	struct nl_route routes[CONF_MAX_ROUTES];
	int route_count;
};

struct conf_ip4 {
	bool enabled;			/* not disabled by -6, and usable */
	struct in_addr addr;		/* guest address (-a), default host's */
	int prefix_len;			/* -n */
	struct in_addr gw;		/* -g: the guest's default gateway */
	struct in_addr host_addr;	/* host's address on the template if */
	struct in_addr map_host_lo;	/* guest addr that maps to host 127.0.0.1 */
	struct in_addr map_guest;	/* guest addr that maps to host's own */
	struct in_addr dns[CONF_MAX_DNS];	/* advertised to the guest */
	int dns_count;
	struct in_addr dns_fwd;		/* --dns-forward (guest side) */
	struct in_addr dns_host;	/* --dns-host (host side target) */
	struct in_addr outbound;	/* -o: bind host sockets here */
	bool no_copy_routes, no_copy_addrs;	/* also implied by -g, -a */
	struct conf_copied copied;
};

struct conf_ip6 {
	bool enabled;
	struct in6_addr addr;		/* guest global address */
	int prefix_len;
	struct in6_addr gw;		/* router address (link-local or global) */
	struct in6_addr host_addr;
	struct in6_addr map_host_lo;
	struct in6_addr map_host_lo_ll;	/* fe80::1 beside a global gateway */
	struct in6_addr map_guest;
	struct in6_addr dns[CONF_MAX_DNS];
	int dns_count;
	struct in6_addr dns_fwd;
	struct in6_addr dns_host;
	struct in6_addr outbound;
	bool no_copy_routes, no_copy_addrs;	/* also implied by -g, -a */
	struct conf_copied copied;
};

struct conf {
	enum mode mode;
	const char *prog;		/* argv[0] basename, for messages */

	/* Host side */
	char ifname4[IFNAMSIZ];		/* template interface (-i) for IPv4 */
	char ifname6[IFNAMSIZ];
	char outbound_if4[IFNAMSIZ];	/* --outbound-if4 */
	char outbound_if6[IFNAMSIZ];
	unsigned int ifindex4, ifindex6;
	bool local_mode;		/* no usable host route: link-local */

	struct conf_ip4 ip4;
	struct conf_ip6 ip6;

	/* Link */
	unsigned int mtu;		/* -m, default 65520 */
	uint8_t our_mac[6];		/* -M: gateway MAC as the guest sees */
	uint8_t guest_mac[6];		/* --ns-mac-addr / learnt */
	bool guest_mac_set;

	/* Names for DHCP/DHCPv6/NDP */
	char search[CONF_MAX_SEARCH][CONF_NAME_MAX];
	int search_count;
	char hostname[CONF_NAME_MAX];	/* -H */
	char fqdn[CONF_NAME_MAX];	/* --fqdn */

	/* Services */
	bool no_dhcp, no_dhcpv6, no_ndp, no_ra, no_icmp, no_tcp, no_udp;
	bool no_multicast;		/* --no-multicast: ferry's own */
	bool mcast_loop;		/* --mcast-loop: the host hears the guest */
	bool no_dhcp_dns, no_dhcp_search;
	bool no_map_gw;

	/* Port forwarding (fwd.h) */
	struct fwd_spec tcp_in, udp_in;		/* -t, -u: host -> guest */
	struct fwd_spec tcp_out, udp_out;	/* -T, -U: ns -> host (ns mode) */

	/* Operations */
	bool foreground;		/* -f */
	bool quiet, debug, trace;
	char log_file[PATH_MAX];
	size_t log_size;
	char pcap_file[PATH_MAX];
	char pid_file[PATH_MAX];
	char control_path[108];		/* -c: control socket, sun_path size */
	uid_t run_uid;			/* --runas */
	gid_t run_gid;
	bool runas_set;
	unsigned int busy_poll_us;	/* --busy-poll: poll before a sleep */
	enum sandbox_mode sandbox;	/* --sandbox, default SANDBOX_ON */
	unsigned int linger_s;		/* --linger: drain before exit, at
					 * most this long (drain.c) */
	unsigned int stats_s;		/* --stats: log the statistics every
					 * so many seconds, 0: never */
	unsigned int tcp_ka_s;		/* --tcp-keepalive: seconds a TCP
					 * connection is idle before ferry
					 * probes the guest, 0: never */

	/* Namespace mode */
	bool config_net;		/* --config-net */
	char ns_ifname[IFNAMSIZ];	/* --ns-ifname */
	char netns_path[PATH_MAX];	/* --netns or derived from PID */
	char userns_path[PATH_MAX];	/* --userns */
	pid_t ns_pid;			/* PID argument */
	bool netns_only;		/* --netns-only: no user namespace */
	bool no_netns_quit;
	bool no_offload;		/* --no-offload: plain tap, no vnet hdr */
	bool splice_only;		/* --splice-only: no tap, loopback only */
	char **cmd;			/* -- CMD ARGS (NULL: the user's shell) */

	/* VM mode */
	char socket_path[108];		/* -s, sun_path size */
	int fd;				/* -F: inherited connected socket, -1 */
	int ready_fd, exit_fd;		/* --ready-fd, --exit-fd (notify.c),
					 * -1: none */
	bool one_off;			/* -1 */
	bool vhost_user;		/* --vhost-user */
	char repair_path[108];		/* --repair-path (repair.c), "": none */
	bool repair_path_set;		/* ... given (else socket + .repair) */
	bool migrate_exit;		/* --migrate-exit: quit once migrated */
	bool migrate_no_linger;		/* --migrate-no-linger: close the
					 * migrated sockets at once */

	/* More command-line state (conf.c) */
	enum conf_print print;		/* --help/--version/... seen */
	bool mtu_set, our_mac_set;	/* -m, -M given (else defaults) */
	bool mtu_disabled_ip6;		/* -m below 1280 turned IPv6 off */
	bool no_dns, no_search;		/* -D none, -S none: derive nothing */
	bool no_map_host_lo, no_map_guest;	/* --map-*-... none */
	bool freebind;			/* --freebind */
	bool host_lo_to_ns_lo;		/* --host-lo-to-ns-lo (ns mode) */

	/* --fault: test-only fault injection (fault.h; refused unless
	 * built with -DFERRY_TEST). */
	struct fault_conf fault;
};

/* conf_parse() - parse argv for the given mode (from "ns"/"vm" or the
 * program name pasta/passt) into *c, applying defaults. Prints one line
 * naming the offending option and exits 1 on bad input; handles --help
 * and --version (exit 0). */
void conf_parse(struct conf *c, enum mode mode, int argc, char **argv);

/* conf_parse_args() - the non-exiting core of conf_parse(): defaults, then
 * argv. On bad input writes one line (no "ferry: " prefix, no newline)
 * into err and returns false. --help/--version/--print-capabilities set
 * c->print and stop parsing (nothing is printed). */
bool conf_parse_args(struct conf *c, enum mode mode, int argc, char **argv,
		     char *err, size_t errlen);

/* conf_print_usage() - the --help text for a mode, into out. */
void conf_print_usage(FILE *out, enum mode mode);

/* conf_derive() - fill host-derived defaults (template interface,
 * addresses, gateway, MTU, nameservers, search list) for options not given
 * on the command line, and decide local mode. Logs what was chosen. */
void conf_derive(struct conf *c);

#endif /* FERRY_CONF_H */
