/* dhcp.c - DHCPv4 server (RFC 2131, options RFC 2132) with one lease.
 *
 * Theory of operation: the guest is ferry's only client, and it gets
 * exactly one address, conf.ip4.addr/prefix_len, with an infinite lease.
 * There is no lease table: every DISCOVER is offered that address, every
 * REQUEST for it is acknowledged and a REQUEST for anything else gets a
 * NAK. INFORM is answered with configuration only; RELEASE and DECLINE
 * change nothing (the address is the guest's whatever it says) and are
 * consumed silently. A DISCOVER carrying Rapid Commit (RFC 4039, option
 * 80) is answered directly with an ACK.
 *
 * Parsing: the UDP payload (already bounded by pkt_parse(); a UDP GSO
 * frame is one message per gso_size bytes, see udp_each_datagram()) is
 * checked for the fixed BOOTP header and the magic cookie, then every option's
 * length is checked against the end before its value is touched. The
 * option overload option (52) is accepted but the sname/file fields are
 * not searched for options. Duplicate single-value options: the last one
 * wins; the parameter request list is taken from its first instance.
 *
 * Replies: the server identifier and IP source are the guest's gateway,
 * conf.ip4.gw. Options are written mandatory first (53, 54, 61, 51),
 * then classless routes when needed, then in the order of the client's
 * parameter request list, then the rest we always offer; an option that
 * does not fit the client's maximum message size (option 57, at least
 * 576, at most the MTU) is left out. Values longer than 255 bytes
 * (domain search) are split into consecutive instances (RFC 3396).
 * Replies are padded to 300 bytes for BOOTP relays and old clients.
 * Destination (RFC 2131 4.1): giaddr (port 67) when relayed; broadcast
 * for a NAK or when the client without ciaddr asks for it (flags bit
 * 15); ciaddr when the client has one; else unicast to yiaddr at chaddr.
 *
 * When the gateway is not on the guest's subnet (a /32 address, or a
 * gateway outside the prefix), a Classless Static Routes option (121,
 * RFC 3442) gives the on-link host route to the gateway and the default
 * route through it; clients that understand 121 ignore option 3.
 *
 * Domain names go out in DNS wire format (dns.c dns_name_put(), shared
 * with DHCPv6 option 24 and NDP's DNSSL).
 */
#include "dhcp.h"
#include "dns.h"
#include "ferry.h"
#include "log.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

#define BOOTP_HLEN	236		/* fixed BOOTP header */
#define DHCP_COOKIE	0x63825363u
#define DHCP_OPTS_OFF	(BOOTP_HLEN + 4)
#define DHCP_MIN_REPLY	300		/* BOOTP minimum message size */
#define DHCP_DEF_MAX	576		/* IP datagram every client takes */
#define DHCP_MSG_MAX	1472		/* our reply buffer: 1500 - IP - UDP */
#define DHCP_INFINITE	0xffffffffu

/* Message types (option 53) */
enum {
	DHCPDISCOVER = 1, DHCPOFFER, DHCPREQUEST, DHCPDECLINE, DHCPACK,
	DHCPNAK, DHCPRELEASE, DHCPINFORM,
};

/* Option codes */
enum {
	OPT_PAD = 0, OPT_MASK = 1, OPT_ROUTER = 3, OPT_DNS = 6,
	OPT_HOSTNAME = 12, OPT_DOMAIN = 15, OPT_MTU = 26, OPT_BCAST = 28,
	OPT_REQ_IP = 50, OPT_LEASE = 51, OPT_OVERLOAD = 52, OPT_MSGTYPE = 53,
	OPT_SERVER_ID = 54, OPT_PRL = 55, OPT_MESSAGE = 56, OPT_MAX_SIZE = 57,
	OPT_CLIENT_ID = 61, OPT_RAPID = 80, OPT_FQDN = 81, OPT_SEARCH = 119,
	OPT_ROUTES = 121, OPT_END = 255,
};

/* Header field offsets */
#define F_OP		0
#define F_HTYPE		1
#define F_HLEN		2
#define F_XID		4
#define F_FLAGS		10
#define F_CIADDR	12
#define F_YIADDR	16
#define F_GIADDR	24
#define F_CHADDR	28
#define FLAG_BROADCAST	0x8000

/* Options (RFC 2132 2): code, length, value; the Client FQDN value
 * (RFC 4702 2): flags, two RCODEs, the name. */
#define DOPT_OFF_LEN	1
#define DOPT_HLEN	2
#define FQDN_OFF_FLAGS	0
#define FQDN_OFF_RCODE1	1
#define FQDN_OFF_RCODE2	2
#define FQDN_OFF_NAME	3
#define FQDN_F_E	0x04		/* the name in wire format */
#define FQDN_F_N	0x08		/* the server updates no records */

/* A parsed request: pointers into the validated UDP payload. */
struct dhcp_req {
	const uint8_t *b;
	size_t len;
	uint8_t type;			/* 0: no option 53 (plain BOOTP) */
	bool has_reqip, has_server_id, rapid, has_fqdn;
	struct in_addr reqip, server_id, ciaddr, giaddr;
	const uint8_t *prl, *client_id;
	size_t prl_len, client_id_len;
	uint16_t max_size;		/* 0: not given */
};

/* A reply being written. */
struct dhcp_out {
	uint8_t b[DHCP_MSG_MAX];
	size_t len;			/* bytes written */
	size_t max;			/* limit, room for OPT_END kept */
	bool sent[256];			/* options already written */
};

/* opt_len_ok() - fixed-length options must have exactly their size. */
static bool opt_len_ok(uint8_t code, uint8_t olen)
{
	switch (code) {
	case OPT_MSGTYPE:
	case OPT_OVERLOAD:
		return olen == 1;
	case OPT_REQ_IP:
	case OPT_SERVER_ID:
		return olen == 4;
	case OPT_MAX_SIZE:
		return olen == 2;
	case OPT_RAPID:
		return olen == 0;
	case OPT_CLIENT_ID:
		return olen >= 2;
	default:
		return true;
	}
}

/* opt_take() - record one option of the request (value at v, olen). */
static void opt_take(struct dhcp_req *r, uint8_t code, const uint8_t *v,
		     uint8_t olen)
{
	switch (code) {
	case OPT_MSGTYPE:
		r->type = *v;
		break;
	case OPT_REQ_IP:
		r->has_reqip = true;
		memcpy(&r->reqip, v, 4);
		break;
	case OPT_SERVER_ID:
		r->has_server_id = true;
		memcpy(&r->server_id, v, 4);
		break;
	case OPT_MAX_SIZE:
		r->max_size = rd16(v);
		break;
	case OPT_RAPID:
		r->rapid = true;
		break;
	case OPT_FQDN:
		r->has_fqdn = true;
		break;
	case OPT_PRL:
		if (!r->prl) {
			r->prl = v;
			r->prl_len = olen;
		}
		break;
	case OPT_CLIENT_ID:
		r->client_id = v;
		r->client_id_len = olen;
		break;
	default:			/* includes 52: overload ignored */
		break;
	}
}

/* dhcp_parse() - check the fixed header and walk the options of the
 * message b[0..len) into *r. Return DROP_NONE or the reason to refuse. */
static enum drop_reason dhcp_parse(const uint8_t *b, size_t len,
				   struct dhcp_req *r)
{
	size_t i = DHCP_OPTS_OFF;

	memset(r, 0, sizeof(*r));
	if (len < DHCP_OPTS_OFF)
		return DROP_DHCP_MALFORMED;
	if (b[F_OP] != 1)
		return DROP_DHCP_NOT_REQUEST;
	if (b[F_HTYPE] != 1 || b[F_HLEN] != 6)
		return DROP_DHCP_HWTYPE;
	if (rd32(b + BOOTP_HLEN) != DHCP_COOKIE)
		return DROP_DHCP_MALFORMED;
	r->b = b;
	r->len = len;
	memcpy(&r->ciaddr, b + F_CIADDR, 4);
	memcpy(&r->giaddr, b + F_GIADDR, 4);
	while (i < len) {
		uint8_t code = b[i], olen;

		if (code == OPT_PAD) {
			i++;
			continue;
		}
		if (code == OPT_END)
			break;
		if (len - i < DOPT_HLEN)
			return DROP_DHCP_MALFORMED;
		olen = b[i + DOPT_OFF_LEN];
		if (olen > len - i - DOPT_HLEN || !opt_len_ok(code, olen))
			return DROP_DHCP_MALFORMED;
		opt_take(r, code, b + i + DOPT_HLEN, olen);
		i += DOPT_HLEN + (size_t)olen;
	}
	return DROP_NONE;
}

/* opt_put() - write option code with len value bytes, split into
 * instances of at most 255 bytes (RFC 3396). Returns false, writing
 * nothing, when it does not fit or was already written. */
static bool opt_put(struct dhcp_out *o, uint8_t code, const void *v,
		    size_t len)
{
	size_t chunks = len ? (len + 254) / 255 : 1, done = 0;

	if (o->sent[code] || o->len + chunks * DOPT_HLEN + len > o->max)
		return false;
	do {
		size_t n = MIN(len - done, 255u);

		o->b[o->len++] = code;
		o->b[o->len++] = (uint8_t)n;
		if (n)
			memcpy(o->b + o->len, (const uint8_t *)v + done, n);
		o->len += n;
		done += n;
	} while (done < len);
	o->sent[code] = true;
	return true;
}

/* opt_put16() - option code with a 16-bit value; false when full. */
static bool opt_put16(struct dhcp_out *o, uint8_t code, uint16_t v)
{
	uint8_t b[2];

	wr16(b, v);
	return opt_put(o, code, b, 2);
}

/* opt_put32() - option code with a 32-bit value; false when full. */
static bool opt_put32(struct dhcp_out *o, uint8_t code, uint32_t v)
{
	uint8_t b[4];

	wr32(b, v);
	return opt_put(o, code, b, 4);
}

/* prl_has() - did the client list code in its parameter request list? */
static bool prl_has(const struct dhcp_req *r, uint8_t code)
{
	size_t i;

	for (i = 0; i < r->prl_len; i++)
		if (r->prl[i] == code)
			return true;
	return false;
}

/* prefix_mask() - the IPv4 netmask of a prefix length (clamped to
 * 0..32), host order. */
static uint32_t prefix_mask(int prefix_len)
{
	if (prefix_len <= 0)
		return 0;
	if (prefix_len >= 32)
		return ~0u;
	return ~0u << (32 - prefix_len);
}

/* gw_on_link() - is the gateway inside the guest's subnet? */
static bool gw_on_link(const struct conf_ip4 *ip4)
{
	uint32_t a = ntohl(ip4->addr.s_addr), g = ntohl(ip4->gw.s_addr);
	uint32_t mask = prefix_mask(ip4->prefix_len);

	if (ip4->prefix_len <= 0 || ip4->prefix_len >= 32)
		return false;
	return (a & mask) == (g & mask) && a != g;
}

/* route_put() - one classless static route (RFC 3442: the prefix
 * width, the destination's significant octets, the router) at e, for
 * width 32 or 0; returns the byte after it. */
static uint8_t *route_put(uint8_t *e, uint8_t width, struct in_addr dst,
			  struct in_addr router)
{
	size_t octets = width / 8;

	*e = width;
	memcpy(e + sizeof(width), &dst, octets);
	memcpy(e + sizeof(width) + octets, &router, sizeof(router));
	return e + sizeof(width) + octets + sizeof(router);
}

/* put_routes() - option 121: host route to the gateway, then default. */
static void put_routes(struct dhcp_out *o, struct in_addr gw)
{
	struct in_addr on_link = { 0 }, any = { 0 };
	uint8_t v[2 * (1 + 4 + 4)], *e;

	e = route_put(v, 32, gw, on_link);
	e = route_put(e, 0, any, gw);
	opt_put(o, OPT_ROUTES, v, (size_t)(e - v));
}

/* put_fqdn() - option 81 (RFC 4702): flags N|E (we update no DNS
 * records, name in wire format), RCODEs 255, then the name. */
static void put_fqdn(struct dhcp_out *o, const char *fqdn)
{
	uint8_t v[FQDN_OFF_NAME + 256];
	size_t n = dns_name_put(v + FQDN_OFF_NAME, sizeof(v) - FQDN_OFF_NAME,
				fqdn);

	if (!n)
		return;
	v[FQDN_OFF_FLAGS] = FQDN_F_N | FQDN_F_E;
	v[FQDN_OFF_RCODE1] = v[FQDN_OFF_RCODE2] = 255;
	opt_put(o, OPT_FQDN, v, FQDN_OFF_NAME + n);
}

/* put_dns() - option 6 with the configured IPv4 nameservers. */
static void put_dns(const struct conf *cf, struct dhcp_out *o)
{
	uint8_t v[CONF_MAX_DNS * 4];
	size_t n = 0;
	int i;

	for (i = 0; i < cf->ip4.dns_count && i < CONF_MAX_DNS; i++) {
		if (in4_is_unspec(&cf->ip4.dns[i]))
			continue;
		memcpy(v + n, &cf->ip4.dns[i], 4);
		n += 4;
	}
	if (n && !cf->no_dhcp_dns)
		opt_put(o, OPT_DNS, v, n);
}

/* put_option() - write option code if we have a value for it; codes we
 * know nothing about write nothing. */
static void put_option(const struct ctx *c, const struct dhcp_req *r,
		       struct dhcp_out *o, uint8_t code)
{
	const struct conf *cf = &c->conf;
	const struct conf_ip4 *ip4 = &cf->ip4;
	uint8_t v[CONF_MAX_SEARCH * 256];
	size_t n;

	switch (code) {
	case OPT_MASK:
		opt_put32(o, code, prefix_mask(ip4->prefix_len));
		break;
	case OPT_ROUTER:
		if (!in4_is_unspec(&ip4->gw))
			opt_put(o, code, &ip4->gw, 4);
		break;
	case OPT_DNS:
		put_dns(cf, o);
		break;
	case OPT_HOSTNAME:
		if ((n = strnlen(cf->hostname, sizeof(cf->hostname))))
			opt_put(o, code, cf->hostname, MIN(n, 255u));
		break;
	case OPT_DOMAIN:
		if (cf->search_count && !cf->no_dhcp_search &&
		    (n = strnlen(cf->search[0], CONF_NAME_MAX)))
			opt_put(o, code, cf->search[0], n);
		break;
	case OPT_MTU:
		if (cf->mtu)
			opt_put16(o, code, (uint16_t)MAX(MIN(cf->mtu, 65535u),
							 68u));
		break;
	case OPT_BCAST:
		if (ip4->prefix_len > 0 && ip4->prefix_len < 31)
			opt_put32(o, code, ntohl(ip4->addr.s_addr) |
					   ~prefix_mask(ip4->prefix_len));
		break;
	case OPT_SEARCH:
		if (!cf->no_dhcp_search &&
		    (n = dns_names_put(v, sizeof(v), cf)))
			opt_put(o, code, v, n);
		break;
	case OPT_ROUTES:
		if (!in4_is_unspec(&ip4->gw) && !gw_on_link(ip4))
			put_routes(o, ip4->gw);
		break;
	case OPT_FQDN:
		if (cf->fqdn[0] && (r->has_fqdn || prl_has(r, OPT_FQDN)))
			put_fqdn(o, cf->fqdn);
		break;
	default:
		break;
	}
}

/* reply_limit() - largest DHCP message the client takes (RFC 2131 2:
 * 576-byte datagrams, more if option 57 says so), within our buffer
 * and the link MTU. */
static size_t reply_limit(const struct ctx *c, const struct dhcp_req *r)
{
	size_t lim = DHCP_DEF_MAX;

	if (r->max_size > lim)
		lim = r->max_size;
	if (c->conf.mtu && c->conf.mtu < lim)
		lim = MAX(c->conf.mtu, (unsigned int)DHCP_DEF_MAX);
	lim -= IP4_HLEN + UDP_HLEN;
	return MIN(lim, (size_t)DHCP_MSG_MAX);
}

/* reply_start() - BOOTREPLY header for request r, message type t,
 * offering yiaddr (0 for INFORM and NAK), and the options every reply
 * starts with. */
static void reply_start(const struct ctx *c, const struct dhcp_req *r,
			struct dhcp_out *o, uint8_t t, struct in_addr yiaddr)
{
	memset(o, 0, sizeof(*o));
	o->b[F_OP] = 2;
	o->b[F_HTYPE] = 1;
	o->b[F_HLEN] = 6;
	memcpy(o->b + F_XID, r->b + F_XID, 4);
	memcpy(o->b + F_FLAGS, r->b + F_FLAGS, 2);
	if (t != DHCPNAK && t != DHCPOFFER)
		memcpy(o->b + F_CIADDR, &r->ciaddr, 4);
	memcpy(o->b + F_YIADDR, &yiaddr, 4);
	memcpy(o->b + F_GIADDR, &r->giaddr, 4);
	memcpy(o->b + F_CHADDR, r->b + F_CHADDR, 16);
	wr32(o->b + BOOTP_HLEN, DHCP_COOKIE);
	o->len = DHCP_OPTS_OFF;
	o->max = reply_limit(c, r) - 1;		/* OPT_END */
	opt_put(o, OPT_MSGTYPE, &t, 1);
	opt_put(o, OPT_SERVER_ID, &c->conf.ip4.gw, 4);
	/* RFC 6842: the client identifier is echoed. */
	if (r->client_id)
		opt_put(o, OPT_CLIENT_ID, r->client_id, r->client_id_len);
}

/* put_config() - lease time (not for INFORM), then configuration
 * options: routes when needed, those the client asked for in its order,
 * then the ones we always offer. */
static void put_config(const struct ctx *c, const struct dhcp_req *r,
		       struct dhcp_out *o)
{
	static const uint8_t always[] = {
		OPT_MASK, OPT_ROUTER, OPT_DNS, OPT_HOSTNAME, OPT_DOMAIN,
		OPT_MTU, OPT_BCAST, OPT_SEARCH, OPT_FQDN,
	};
	size_t i;

	if (r->type != DHCPINFORM)
		opt_put32(o, OPT_LEASE, DHCP_INFINITE);
	if (r->rapid && r->type == DHCPDISCOVER)
		opt_put(o, OPT_RAPID, "", 0);
	/* Clients honouring 121 ignore the router option: it must not be
	 * crowded out. */
	put_option(c, r, o, OPT_ROUTES);
	for (i = 0; i < r->prl_len; i++)
		put_option(c, r, o, r->prl[i]);
	for (i = 0; i < ARRAY_SIZE(always); i++)
		put_option(c, r, o, always[i]);
}

/* reply_send() - end, pad and send the reply to where RFC 2131 4.1 says.
 * Return DROP_NONE or DROP_TX_FULL. */
static enum drop_reason reply_send(struct ctx *c, const struct dhcp_req *r,
				   struct dhcp_out *o, uint8_t t)
{
	static const uint8_t bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff,
					      0xff };
	uint8_t l4[UDP_HLEN + DHCP_MSG_MAX];
	const uint8_t *mac = r->b + F_CHADDR;
	struct in_addr dst, yiaddr;
	uint16_t dport = 68;

	o->b[o->len++] = OPT_END;
	if (o->len < DHCP_MIN_REPLY)
		o->len = DHCP_MIN_REPLY;	/* zero padding */
	memcpy(&yiaddr, o->b + F_YIADDR, 4);
	if (!in4_is_unspec(&r->giaddr)) {
		dst = r->giaddr;
		dport = 67;
		mac = NULL;			/* the relay is the guest */
	} else if (t == DHCPNAK ||
		   (in4_is_unspec(&r->ciaddr) &&
		    (rd16(r->b + F_FLAGS) & FLAG_BROADCAST))) {
		dst.s_addr = htonl(INADDR_BROADCAST);
		mac = bcast_mac;
	} else if (!in4_is_unspec(&r->ciaddr)) {
		dst = r->ciaddr;
	} else if (!in4_is_unspec(&yiaddr)) {
		dst = yiaddr;
	} else {			/* INFORM without ciaddr */
		dst.s_addr = htonl(INADDR_BROADCAST);
		mac = bcast_mac;
	}
	udp_hdr_put(l4, 67, dport, (uint16_t)(UDP_HLEN + o->len));
	memcpy(l4 + UDP_HLEN, o->b, o->len);
	if (!tap_send_ip4_mac(c, mac, c->conf.ip4.gw, dst, IPPROTO_UDP, l4,
			      UDP_HLEN + o->len))
		return DROP_TX_FULL;
	return DROP_NONE;
}

/* dhcp_answer() - build and send reply type t for request r. */
static enum drop_reason dhcp_answer(struct ctx *c, const struct dhcp_req *r,
				    uint8_t t)
{
	const uint8_t *ch = r->b + F_CHADDR;
	struct in_addr yiaddr = { 0 };
	struct dhcp_out o;

	if (t == DHCPOFFER || (t == DHCPACK && r->type != DHCPINFORM))
		yiaddr = c->conf.ip4.addr;
	reply_start(c, r, &o, t, yiaddr);
	if (t == DHCPNAK) {
		static const char msg[] = "requested address not available";

		opt_put(&o, OPT_MESSAGE, msg, sizeof(msg) - 1);
	} else {
		put_config(c, r, &o);
	}
	debug("DHCP: %s to %02x:%02x:%02x:%02x:%02x:%02x",
	      t == DHCPOFFER ? "OFFER" : t == DHCPACK ? "ACK" : "NAK",
	      ch[0], ch[1], ch[2], ch[3], ch[4], ch[5]);	/* wire: MAC */
	return reply_send(c, r, &o, t);
}

/* dhcp_request() - REQUEST: ACK our address, NAK anything else, stay
 * silent when the client chose another server (RFC 2131 4.3.2). */
static enum drop_reason dhcp_request(struct ctx *c, const struct dhcp_req *r)
{
	struct in_addr want = r->has_reqip ? r->reqip : r->ciaddr;

	if (r->has_server_id && !in4_eq(&r->server_id, &c->conf.ip4.gw))
		return DROP_DHCP_IGNORED;
	if (!in4_eq(&want, &c->conf.ip4.addr))
		return dhcp_answer(c, r, DHCPNAK);
	return dhcp_answer(c, r, DHCPACK);
}

/* dhcp_msg() - one DHCP message from the guest (one datagram). */
static enum drop_reason dhcp_msg(struct ctx *c, const struct pkt *p)
{
	struct dhcp_req r;
	enum drop_reason d;

	d = dhcp_parse(p->payload, p->payload_len, &r);
	if (d != DROP_NONE)
		return d;
	if (in4_is_unspec(&c->conf.ip4.addr))
		return DROP_DHCP_IGNORED;	/* nothing to hand out */
	switch (r.type) {
	case DHCPDISCOVER:
		return dhcp_answer(c, &r, r.rapid ? DHCPACK : DHCPOFFER);
	case DHCPREQUEST:
		return dhcp_request(c, &r);
	case DHCPINFORM:
		return dhcp_answer(c, &r, DHCPACK);
	case DHCPRELEASE:
	case DHCPDECLINE:
		/* The one address stays the guest's: nothing to undo. */
		debug("DHCP: %s ignored", r.type == DHCPRELEASE ? "RELEASE"
							       : "DECLINE");
		return DROP_NONE;
	default:			/* BOOTP, server messages, unknown */
		return DROP_DHCP_IGNORED;
	}
}

enum drop_reason dhcp_input(struct ctx *c, const struct pkt *p)
{
	return udp_each_datagram(c, p, dhcp_msg);	/* USO: each message */
}
