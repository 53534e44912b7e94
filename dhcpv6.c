/* dhcpv6.c - stateful DHCPv6 server (RFC 8415) with a single address.
 *
 * Theory of operation: like the DHCPv4 server, there is one client and
 * one address, conf.ip6.addr, given with infinite lifetimes (T1 and T2
 * infinite too: the client never needs to renew, but renewing works).
 * No binding table is kept: the first IA_NA of any SOLICIT, REQUEST,
 * RENEW or REBIND gets the address, further IA_NAs get NoAddrsAvail, and
 * addresses the client holds in an IA that are not ours come back with
 * zero lifetimes (RFC 8415 18.3.4/18.3.5). Prefix delegation is not
 * offered: each IA_PD comes back with NoPrefixAvail. SOLICIT gets an ADVERTISE, or
 * a REPLY when it carries Rapid Commit; CONFIRM is answered Success or
 * NotOnLink by whether the client's addresses are in our prefix; RELEASE
 * and DECLINE are acknowledged with Success and change nothing;
 * INFORMATION-REQUEST gets configuration only.
 *
 * Every reply carries our server DUID (DUID-LL, RFC 8415 11.4, from our
 * MAC), echoes the client's DUID, and, except for RELEASE/DECLINE, the
 * DNS servers (option 23, RFC 3646) and domain search list (24) unless
 * disabled, and the client FQDN (39, RFC 4704) when configured and the
 * client asked. Messages that must (not) carry a server identifier, or
 * carry someone else's, are ignored as RFC 8415 section 16 says.
 *
 * Parsing checks every option length, at the top level and inside IA_NA
 * and IA Address options, before reading a value; any inconsistency
 * drops the message as DHCP6_MALFORMED, and so does a reply (which
 * echoes the client's old addresses) that the guest's MTU cannot carry.
 * A UDP GSO frame is one message per gso_size bytes
 * (udp_each_datagram()).
 *
 * Addressing: replies come from our link-local address (ndp_router_ll(),
 * the same address our router advertisements use), port 547, and go to
 * the client's source address, port 546.
 */
#include "dhcpv6.h"
#include "dns.h"
#include "ferry.h"
#include "log.h"
#include "ndp.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

/* Message types */
enum {
	SOLICIT = 1, ADVERTISE, REQUEST, CONFIRM, RENEW, REBIND, REPLY,
	RELEASE, DECLINE, RECONFIGURE, INFORMATION_REQUEST,
};

/* Options */
enum {
	OPT_CLIENTID = 1, OPT_SERVERID = 2, OPT_IA_NA = 3, OPT_IA_TA = 4,
	OPT_IAADDR = 5, OPT_ORO = 6, OPT_ELAPSED = 8, OPT_STATUS = 13,
	OPT_RAPID = 14, OPT_DNS = 23, OPT_DOMAINS = 24, OPT_IA_PD = 25,
	OPT_IAPREFIX = 26, OPT_FQDN = 39,
};

/* Status codes */
enum {
	ST_SUCCESS = 0, ST_NOADDRS = 2, ST_NOTONLINK = 4, ST_NOPREFIX = 6,
};

/* Message and option layout (RFC 8415 8, 21): the offsets d6_parse()
 * reads and the reply builders write. */
enum {
	D6_OFF_TYPE		= 0,	/* message: type, transaction id */
	D6_OFF_XID		= 1,
	D6_HLEN			= 4,
	D6OPT_OFF_CODE		= 0,	/* option: code, length, value */
	D6OPT_OFF_LEN		= 2,
	D6OPT_HLEN		= 4,
	D6_IA_OFF_IAID		= 0,	/* IA_NA, IA_PD: IAID, T1, T2 */
	D6_IA_OFF_T1		= 4,
	D6_IA_OFF_T2		= 8,
	D6_IA_LEN		= 12,	/* then the IA's own options */
	D6_IA_TA_LEN		= 4,	/* IA_TA: IAID */
	D6_IAADDR_OFF_PREF	= 16,	/* IA Address: address, lifetimes */
	D6_IAADDR_OFF_VALID	= 20,
	D6_IAADDR_LEN		= 24,
	D6_IAPREFIX_LEN		= 25,	/* IA Prefix: lifetimes, length, prefix */
	D6_STATUS_OFF_TEXT	= 2,	/* Status Code: code, message */
	D6_DUID_OFF_HWTYPE	= 2,	/* DUID-LL: type, hardware type, address */
	D6_DUID_OFF_LLADDR	= 4,
	D6_DUID_LL_LEN		= 10,
	D6_FQDN_OFF_FLAGS	= 0,	/* Client FQDN: flags, name */
	D6_FQDN_OFF_NAME	= 1,
};
#define D6_FQDN_N	0x04		/* FQDN flag: the server updates nothing */
#define D6_DUID_LL	3
#define D6_HWTYPE_ETH	1

#define D6_PORT_CLIENT	546
#define D6_PORT_SERVER	547
#define D6_IA_MAX	8		/* IA_NAs looked at per message */
#define D6_DUID_MAX	130		/* type + 128 bytes (RFC 8415 11.1) */
#define D6_INFINITE	0xffffffffu
#define D6_BUF		2048

/* A parsed message: pointers into the validated UDP payload. */
struct d6_req {
	uint8_t type;
	const uint8_t *xid;
	const uint8_t *client_id, *server_id, *oro;
	uint16_t client_id_len, server_id_len, oro_len;
	bool rapid, has_fqdn, has_ia;
	unsigned int n_ia;
	const uint8_t *ia[D6_IA_MAX];	/* IA_NA option bodies */
	uint16_t ia_len[D6_IA_MAX];
	unsigned int n_pd;
	const uint8_t *pd[D6_IA_MAX];	/* IA_PD option bodies */
};

/* A reply being written. */
struct d6_out {
	uint8_t b[D6_BUF];
	size_t len;
	size_t max;			/* what the guest's MTU carries */
	bool full;			/* something did not fit */
};

/* opt_next() - next option of [b, b+len) at *off: code, value, length.
 * Return 1 with an option, 0 at the end, -1 if it overruns. */
static int opt_next(const uint8_t *b, size_t len, size_t *off,
		    uint16_t *code, const uint8_t **v, uint16_t *vlen)
{
	const uint8_t *o = b + *off;

	if (*off == len)
		return 0;
	if (len - *off < D6OPT_HLEN)
		return -1;
	*code = rd16(o + D6OPT_OFF_CODE);
	*vlen = rd16(o + D6OPT_OFF_LEN);
	if (*vlen > len - *off - D6OPT_HLEN)
		return -1;
	*v = o + D6OPT_HLEN;
	*off += D6OPT_HLEN + (size_t)*vlen;
	return 1;
}

static bool opts_ok(const uint8_t *b, size_t len);

/* opts_after() - an option value v of vlen bytes holds its fixed part of
 * fixed bytes, and the options after it fit (opts_ok()). */
static bool opts_after(const uint8_t *v, uint16_t vlen, size_t fixed)
{
	return vlen >= fixed && opts_ok(v + fixed, vlen - fixed);
}

/* opts_ok() - every option in [b, b+len) fits; IA addresses and status
 * codes have their minimum size, and their own options fit. */
static bool opts_ok(const uint8_t *b, size_t len)
{
	const uint8_t *v;
	uint16_t code, vlen;
	size_t off = 0;
	int r;

	while ((r = opt_next(b, len, &off, &code, &v, &vlen)) > 0) {
		if (code == OPT_STATUS && vlen < D6_STATUS_OFF_TEXT)
			return false;
		if (code == OPT_IAADDR && !opts_after(v, vlen, D6_IAADDR_LEN))
			return false;
		if (code == OPT_IAPREFIX &&
		    !opts_after(v, vlen, D6_IAPREFIX_LEN))
			return false;
	}
	return r == 0;
}

/* take_opt() - check and record one top-level option. Return false if
 * it is malformed. */
static bool take_opt(struct d6_req *r, uint16_t code, const uint8_t *v,
		     uint16_t vlen)
{
	switch (code) {
	case OPT_CLIENTID:
	case OPT_SERVERID:
		if (vlen < 2 || vlen > D6_DUID_MAX)
			return false;
		if (code == OPT_CLIENTID) {
			r->client_id = v;
			r->client_id_len = vlen;
		} else {
			r->server_id = v;
			r->server_id_len = vlen;
		}
		return true;
	case OPT_IA_NA:
		if (!opts_after(v, vlen, D6_IA_LEN))
			return false;
		r->has_ia = true;
		if (r->n_ia < D6_IA_MAX) {
			r->ia[r->n_ia] = v;
			r->ia_len[r->n_ia++] = vlen;
		}
		return true;
	case OPT_IA_PD:
		if (!opts_after(v, vlen, D6_IA_LEN))
			return false;
		r->has_ia = true;
		if (r->n_pd < D6_IA_MAX)
			r->pd[r->n_pd++] = v;
		return true;
	case OPT_IA_TA:
		r->has_ia = true;
		return opts_after(v, vlen, D6_IA_TA_LEN);
	case OPT_ORO:
		if (vlen % 2)
			return false;
		r->oro = v;
		r->oro_len = vlen;
		return true;
	case OPT_ELAPSED:
		return vlen == 2;
	case OPT_RAPID:
		r->rapid = true;
		return vlen == 0;
	case OPT_FQDN:
		r->has_fqdn = true;
		return vlen >= 1;
	default:
		return true;
	}
}

/* d6_parse() - message b[0..len) into *r. Return DROP_NONE or the reason
 * to refuse it. */
static enum drop_reason d6_parse(const uint8_t *b, size_t len,
				 struct d6_req *r)
{
	const uint8_t *v;
	uint16_t code, vlen;
	size_t off = D6_HLEN;
	int n;

	memset(r, 0, sizeof(*r));
	if (len < D6_HLEN)
		return DROP_DHCP6_MALFORMED;
	r->type = b[D6_OFF_TYPE];
	r->xid = b + D6_OFF_XID;
	while ((n = opt_next(b, len, &off, &code, &v, &vlen)) > 0)
		if (!take_opt(r, code, v, vlen))
			return DROP_DHCP6_MALFORMED;
	return n ? DROP_DHCP6_MALFORMED : DROP_NONE;
}

/* opt_put() - an option's code and value length vlen at p; returns
 * where its value goes. */
static uint8_t *opt_put(uint8_t *p, uint16_t code, size_t vlen)
{
	wr16(p + D6OPT_OFF_CODE, code);
	wr16(p + D6OPT_OFF_LEN, (uint16_t)vlen);
	return p + D6OPT_HLEN;
}

/* out_opt() - start option code with vlen value bytes (copied from v
 * unless NULL); returns where the value goes, NULL if it does not fit. */
static uint8_t *out_opt(struct d6_out *o, uint16_t code, const void *v,
			size_t vlen)
{
	uint8_t *p;

	if (o->full || vlen > 0xffff || o->len + D6OPT_HLEN + vlen > o->max) {
		o->full = true;
		return NULL;
	}
	p = opt_put(o->b + o->len, code, vlen);
	if (v && vlen)
		memcpy(p, v, vlen);
	o->len += D6OPT_HLEN + vlen;
	return p;
}

/* status_put() - Status Code option value (code, text) at p, unless p
 * is NULL; returns its length. */
static size_t status_put(uint8_t *p, uint16_t st)
{
	static const char *const text[] = {
		[ST_SUCCESS] = "ok",
		[ST_NOADDRS] = "no addresses available",
		[ST_NOTONLINK] = "not on link",
		[ST_NOPREFIX] = "no prefixes delegated",
	};
	size_t n = strlen(text[st]);

	if (p) {
		wr16(p, st);
		memcpy(p + D6_STATUS_OFF_TEXT, text[st], n);
	}
	return D6_STATUS_OFF_TEXT + n;
}

/* out_status() - a top-level Status Code option st (if it fits). */
static void out_status(struct d6_out *o, uint16_t st)
{
	uint8_t *p = out_opt(o, OPT_STATUS, NULL, status_put(NULL, st));

	if (p)
		status_put(p, st);
}

/* server_duid() - DUID-LL (type 3, hardware type 1, our MAC). */
static void server_duid(const struct ctx *c, uint8_t duid[D6_DUID_LL_LEN])
{
	wr16(duid, D6_DUID_LL);
	wr16(duid + D6_DUID_OFF_HWTYPE, D6_HWTYPE_ETH);
	memcpy(duid + D6_DUID_OFF_LLADDR, c->conf.our_mac, 6);
}

/* is_ours() - is the address at v (unaligned) our one address? */
static bool is_ours(const struct ctx *c, const uint8_t *v)
{
	return !memcmp(v, &c->conf.ip6.addr, 16);
}

/* ia_addr_put() - IA Address option value at p: a, lifetimes. */
static void ia_addr_put(uint8_t *p, const struct in6_addr *a, uint32_t life)
{
	memcpy(p, a, 16);
	wr32(p + D6_IAADDR_OFF_PREF, life);
	wr32(p + D6_IAADDR_OFF_VALID, life);
}

/* ia_size() - value size of our IA_NA answering client IA ia. */
static size_t ia_size(const struct ctx *c, const uint8_t *ia, uint16_t len,
		      bool first)
{
	size_t n = D6_IA_LEN, off = D6_IA_LEN;
	const uint8_t *v;
	uint16_t code, vlen;

	if (!first || in6_is_unspec(&c->conf.ip6.addr))
		return n + D6OPT_HLEN + status_put(NULL, ST_NOADDRS);
	n += D6OPT_HLEN + D6_IAADDR_LEN;
	while (opt_next(ia, len, &off, &code, &v, &vlen) > 0)
		if (code == OPT_IAADDR && !is_ours(c, v))
			n += D6OPT_HLEN + D6_IAADDR_LEN;
	return n;
}

/* ia_status_put() - the IA (IA_NA or IA_PD) value at p, its IAID
 * written: T1 and T2 zero, then only a Status Code option st. */
static void ia_status_put(uint8_t *p, uint16_t st)
{
	uint8_t *s = opt_put(p + D6_IA_LEN, OPT_STATUS, status_put(NULL, st));

	wr32(p + D6_IA_OFF_T1, 0);
	wr32(p + D6_IA_OFF_T2, 0);
	status_put(s, st);
}

/* out_ia() - our IA_NA for client IA ia: the address for the first IA,
 * old addresses with zero lifetimes, NoAddrsAvail for the others. */
static void out_ia(const struct ctx *c, struct d6_out *o, const uint8_t *ia,
		   uint16_t len, bool first)
{
	uint8_t *p = out_opt(o, OPT_IA_NA, NULL, ia_size(c, ia, len, first));
	size_t off = D6_IA_LEN, n = D6_IA_LEN;
	struct in6_addr old;
	const uint8_t *v;
	uint16_t code, vlen;

	if (!p)
		return;
	memcpy(p + D6_IA_OFF_IAID, ia + D6_IA_OFF_IAID, 4);
	if (!first || in6_is_unspec(&c->conf.ip6.addr)) {
		ia_status_put(p, ST_NOADDRS);
		return;
	}
	wr32(p + D6_IA_OFF_T1, D6_INFINITE);
	wr32(p + D6_IA_OFF_T2, D6_INFINITE);
	ia_addr_put(opt_put(p + n, OPT_IAADDR, D6_IAADDR_LEN),
		    &c->conf.ip6.addr, D6_INFINITE);
	n += D6OPT_HLEN + D6_IAADDR_LEN;
	while (opt_next(ia, len, &off, &code, &v, &vlen) > 0) {
		if (code != OPT_IAADDR || is_ours(c, v))
			continue;
		memcpy(&old, v, 16);
		ia_addr_put(opt_put(p + n, OPT_IAADDR, D6_IAADDR_LEN), &old,
			    0);
		n += D6OPT_HLEN + D6_IAADDR_LEN;
	}
}

/* out_pd_none() - IA_PD for client IA_PD pd: no prefixes here. */
static void out_pd_none(struct d6_out *o, const uint8_t *pd)
{
	size_t st = status_put(NULL, ST_NOPREFIX);
	uint8_t *p = out_opt(o, OPT_IA_PD, NULL, D6_IA_LEN + D6OPT_HLEN + st);

	if (!p)
		return;
	memcpy(p + D6_IA_OFF_IAID, pd + D6_IA_OFF_IAID, 4);
	ia_status_put(p, ST_NOPREFIX);
}

/* oro_has() - did the client request option code? */
static bool oro_has(const struct d6_req *r, uint16_t code)
{
	uint16_t i;

	for (i = 0; i + 1 < r->oro_len; i += 2)
		if (rd16(r->oro + i) == code)
			return true;
	return false;
}

/* out_config() - DNS servers, domain list, FQDN. */
static void out_config(const struct ctx *c, const struct d6_req *r,
		       struct d6_out *o)
{
	const struct conf *cf = &c->conf;
	uint8_t v[CONF_MAX_SEARCH * 256 + 1];
	size_t n = 0;
	int i;

	for (i = 0; i < cf->ip6.dns_count && i < CONF_MAX_DNS; i++) {
		if (in6_is_unspec(&cf->ip6.dns[i]))
			continue;
		memcpy(v + n, &cf->ip6.dns[i], 16);
		n += 16;
	}
	if (n && !cf->no_dhcp_dns)
		out_opt(o, OPT_DNS, v, n);
	if (!cf->no_dhcp_search && (n = dns_names_put(v, sizeof(v), cf)))
		out_opt(o, OPT_DOMAINS, v, n);
	if (cf->fqdn[0] && (r->has_fqdn || oro_has(r, OPT_FQDN))) {
		v[D6_FQDN_OFF_FLAGS] = D6_FQDN_N;
		if ((n = dns_name_put(v + D6_FQDN_OFF_NAME,
				      sizeof(v) - D6_FQDN_OFF_NAME, cf->fqdn)))
			out_opt(o, OPT_FQDN, v, D6_FQDN_OFF_NAME + n);
	}
}

/* d6_name() - message type name for debug output. */
static const char *d6_name(uint8_t type)
{
	static const char *const names[] = {
		[SOLICIT] = "SOLICIT", [ADVERTISE] = "ADVERTISE",
		[REQUEST] = "REQUEST", [CONFIRM] = "CONFIRM",
		[RENEW] = "RENEW", [REBIND] = "REBIND", [REPLY] = "REPLY",
		[RELEASE] = "RELEASE", [DECLINE] = "DECLINE",
		[INFORMATION_REQUEST] = "INFORMATION-REQUEST",
	};

	return type < ARRAY_SIZE(names) && names[type] ? names[type] : "?";
}

/* server_id_ok() - the message names us as its server. */
static bool server_id_ok(const struct ctx *c, const struct d6_req *r)
{
	uint8_t duid[D6_DUID_LL_LEN];

	server_duid(c, duid);
	return r->server_id && r->server_id_len == sizeof(duid) &&
	       !memcmp(r->server_id, duid, sizeof(duid));
}

/* prefix_eq() - do a and b share their first bits bits? */
static bool prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
	int n = bits / 8, rest = bits % 8;

	if (memcmp(a, b, (size_t)n))
		return false;
	return !rest || !((a[n] ^ b[n]) & (0xff << (8 - rest)));
}

/* confirm_status() - CONFIRM: NotOnLink if any address the client holds
 * is outside our prefix, Success if all are inside, -1 if it holds
 * none (then there must be no reply, RFC 8415 18.3.3). */
static int confirm_status(const struct ctx *c, const struct d6_req *r)
{
	int plen = c->conf.ip6.prefix_len, st = -1;
	const uint8_t *v;
	uint16_t code, vlen;
	unsigned int i;

	if (plen <= 0 || plen > 128)
		plen = 64;
	for (i = 0; i < r->n_ia; i++) {
		size_t off = 12;

		while (opt_next(r->ia[i], r->ia_len[i], &off, &code, &v,
				&vlen) > 0) {
			if (code != OPT_IAADDR)
				continue;
			if (in6_is_unspec(&c->conf.ip6.addr) ||
			    !prefix_eq(v, c->conf.ip6.addr.s6_addr, plen))
				return ST_NOTONLINK;
			st = ST_SUCCESS;
		}
	}
	return st;
}

/* d6_max() - the largest reply the guest's link carries in one frame. */
static size_t d6_max(const struct ctx *c)
{
	size_t mtu = c->conf.mtu ? c->conf.mtu : 65520;

	return mtu > IP6_HLEN + UDP_HLEN ? mtu - IP6_HLEN - UDP_HLEN : 0;
}

/* d6_reply() - send reply type to the client of r: top-level status st
 * (-1: none), our IA_NAs if ias, configuration options if config. */
static enum drop_reason d6_reply(struct ctx *c, const struct pkt *p,
				 const struct d6_req *r, uint8_t type, int st,
				 bool ias, bool config)
{
	struct d6_out o;
	uint8_t duid[D6_DUID_LL_LEN], l4[UDP_HLEN + D6_BUF];
	struct in6_addr src;
	unsigned int i;

	o.len = D6_HLEN;
	o.max = MIN(sizeof(o.b), d6_max(c));
	o.full = false;
	o.b[D6_OFF_TYPE] = type;
	memcpy(o.b + D6_OFF_XID, r->xid, D6_HLEN - D6_OFF_XID);
	server_duid(c, duid);
	out_opt(&o, OPT_SERVERID, duid, sizeof(duid));
	if (r->client_id)
		out_opt(&o, OPT_CLIENTID, r->client_id, r->client_id_len);
	if (st >= 0)
		out_status(&o, (uint16_t)st);
	if (r->rapid && r->type == SOLICIT && type == REPLY)
		out_opt(&o, OPT_RAPID, NULL, 0);
	for (i = 0; ias && i < r->n_ia; i++)
		out_ia(c, &o, r->ia[i], r->ia_len[i], i == 0);
	for (i = 0; ias && i < r->n_pd; i++)
		out_pd_none(&o, r->pd[i]);
	if (config)
		out_config(c, r, &o);
	if (o.full)	/* absurdly many addresses, IAs or a tiny MTU */
		return DROP_DHCP6_MALFORMED;
	debug("DHCPv6: %s (%u IA_NA, %u IA_PD) answered with %s",
	      d6_name(r->type), r->n_ia, r->n_pd, d6_name(type));

	udp_hdr_put(l4, D6_PORT_SERVER, D6_PORT_CLIENT,
		    (uint16_t)(UDP_HLEN + o.len));
	memcpy(l4 + UDP_HLEN, o.b, o.len);
	ndp_router_ll(c, &src);
	if (!tap_send_ip6(c, &src, &p->src6, IPPROTO_UDP, l4,
			  UDP_HLEN + o.len))
		return DROP_TX_FULL;
	return DROP_NONE;
}

/* d6_assign() - SOLICIT/REQUEST/RENEW/REBIND: the address in the first
 * IA_NA, NoAddrsAvail at the top when the client asked for none. */
static enum drop_reason d6_assign(struct ctx *c, const struct pkt *p,
				  const struct d6_req *r, uint8_t type)
{
	return d6_reply(c, p, r, type, r->n_ia ? -1 : ST_NOADDRS, true, true);
}

/* d6_msg() - one DHCPv6 message from the guest (one datagram). */
static enum drop_reason d6_msg(struct ctx *c, const struct pkt *p)
{
	enum drop_reason d;
	struct d6_req r;
	int st;

	d = d6_parse(p->payload, p->payload_len, &r);
	if (d != DROP_NONE)
		return d;
	if (in6_is_unspec(&p->src6) || in6_is_mcast(&p->src6))
		return DROP_DHCP6_IGNORED;
	switch (r.type) {
	case SOLICIT:
		if (!r.client_id || r.server_id)
			return DROP_DHCP6_IGNORED;
		return d6_assign(c, p, &r, r.rapid ? REPLY : ADVERTISE);
	case REQUEST:
	case RENEW:
		if (!r.client_id || !server_id_ok(c, &r))
			return DROP_DHCP6_IGNORED;
		return d6_assign(c, p, &r, REPLY);
	case REBIND:
		if (!r.client_id || r.server_id)
			return DROP_DHCP6_IGNORED;
		return d6_assign(c, p, &r, REPLY);
	case CONFIRM:
		if (!r.client_id || r.server_id ||
		    (st = confirm_status(c, &r)) < 0)
			return DROP_DHCP6_IGNORED;
		return d6_reply(c, p, &r, REPLY, st, false, false);
	case RELEASE:
	case DECLINE:
		if (!r.client_id || !server_id_ok(c, &r))
			return DROP_DHCP6_IGNORED;
		return d6_reply(c, p, &r, REPLY, ST_SUCCESS, false, false);
	case INFORMATION_REQUEST:
		if ((r.server_id && !server_id_ok(c, &r)) || r.has_ia)
			return DROP_DHCP6_IGNORED;
		return d6_reply(c, p, &r, REPLY, -1, false, true);
	default:			/* server messages, relays */
		return DROP_DHCP6_IGNORED;
	}
}

enum drop_reason dhcpv6_input(struct ctx *c, const struct pkt *p)
{
	return udp_each_datagram(c, p, d6_msg);		/* USO: each message */
}
