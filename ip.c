/* ip.c - frame parsing into checked views, and header building.
 *
 * pkt_parse() is the single entry point for untrusted bytes from the guest
 * (see the theory block in pkt.h). It walks Ethernet, then ARP or
 * IPv4/IPv6 (with IPv6 extension headers), then the transport header, and
 * checks each length against the bytes that remain before reading any
 * field. Fragments are refused: ferry terminates transport connections
 * itself and the guest's stack never needs to fragment towards a tap whose
 * MTU it knows.
 */
#include "checksum.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

static enum drop_reason parse_l4(struct pkt *p, bool verify);

/* parse_arp() - Ethernet/IPv4 ARP body, 28 bytes. */
static enum drop_reason parse_arp(struct pkt *p, const uint8_t *b, size_t len)
{
	if (len < ARP_LEN || rd16(b + ARP_OFF_HTYPE) != ARP_HTYPE_ETH ||
	    rd16(b + ARP_OFF_PTYPE) != ETH_P_IP_ || b[ARP_OFF_HALEN] != 6 ||
	    b[ARP_OFF_PALEN] != 4)
		return DROP_ARP_MALFORMED;
	p->arp.op = rd16(b + ARP_OFF_OP);
	memcpy(p->arp.sha, b + ARP_OFF_SHA, 6);
	memcpy(&p->arp.spa, b + ARP_OFF_SPA, 4);
	memcpy(p->arp.tha, b + ARP_OFF_THA, 6);
	memcpy(&p->arp.tpa, b + ARP_OFF_TPA, 4);
	return DROP_NONE;
}

/* parse_ip4() - IPv4 header at b with len bytes after the Ethernet header. */
static enum drop_reason parse_ip4(struct pkt *p, const uint8_t *b, size_t len)
{
	size_t ihl, tot;

	if (len < IP4_HLEN)
		return DROP_IP4_SHORT;
	if (ip4_version(b) != 4)
		return DROP_IP4_VERSION;
	ihl = ip4_hlen(b);
	if (ihl < IP4_HLEN || ihl > len)
		return DROP_IP4_HDRLEN;
	tot = rd16(b + IP4_OFF_TOTLEN);
	if (tot < ihl || tot > len)
		return DROP_IP4_TOTLEN;
	if (csum(b, ihl) != 0)
		return DROP_IP4_CSUM;
	if (rd16(b + IP4_OFF_FRAG) & IP4_FRAG_MASK)
		return DROP_IP4_FRAG;

	p->is_ip = true;
	p->l3 = b;
	p->l3len = tot;
	p->tos = b[IP4_OFF_TOS];
	p->ttl = b[IP4_OFF_TTL];
	p->l4proto = b[IP4_OFF_PROTO];
	memcpy(&p->src4, b + IP4_OFF_SRC, 4);
	memcpy(&p->dst4, b + IP4_OFF_DST, 4);
	p->l4 = b + ihl;
	p->l4len = tot - ihl;
	return DROP_NONE;
}

/* parse_ip6() - IPv6 header and extension header chain. */
static enum drop_reason parse_ip6(struct pkt *p, const uint8_t *b, size_t len)
{
	size_t plen, off = IP6_HLEN;
	uint8_t nh;
	int hops;

	if (len < IP6_HLEN)
		return DROP_IP6_SHORT;
	if (ip6_version(b) != 6)
		return DROP_IP6_VERSION;
	plen = rd16(b + IP6_OFF_PLEN);
	if (plen == 0 || IP6_HLEN + plen > len)	/* no jumbograms */
		return DROP_IP6_PLEN;

	p->is_ip = p->is_v6 = true;
	p->l3 = b;
	p->l3len = IP6_HLEN + plen;
	p->tos = (uint8_t)(rd16(b + IP6_OFF_VTCFL) >> 4);
	p->flowlabel = rd32(b + IP6_OFF_VTCFL) & 0xfffff;
	p->ttl = b[IP6_OFF_HLIM];
	memcpy(&p->src6, b + IP6_OFF_SRC, 16);
	memcpy(&p->dst6, b + IP6_OFF_DST, 16);

	nh = b[IP6_OFF_NEXT];
	for (hops = 0; hops < 8; hops++) {
		size_t elen;

		if (nh == IPPROTO_FRAGMENT)
			return DROP_IP6_FRAG;
		if (nh != IPPROTO_HOPOPTS && nh != IPPROTO_ROUTING &&
		    nh != IPPROTO_DSTOPTS)
			break;
		if (p->l3len - off < IP6X_MIN)
			return DROP_IP6_EXTHDR;
		elen = ((size_t)b[off + IP6X_OFF_LEN] + 1) * 8;
		if (elen > p->l3len - off)
			return DROP_IP6_EXTHDR;
		nh = b[off + IP6X_OFF_NEXT];
		off += elen;
	}
	if (hops == 8)
		return DROP_IP6_EXTHDR;
	p->l4proto = nh;
	p->l4 = b + off;
	p->l4len = p->l3len - off;
	return DROP_NONE;
}

/* tcp_sack_opt_parse() - a SACK option of olen bytes at o (olen checked
 * against the option area by the caller): present when it holds at
 * least one block; its blocks kept when the length is 2 + 8 n with
 * n <= TCP_SACK_OPT_MAX, none otherwise (malformed: only its presence
 * counts, as before the blocks were read). */
static void tcp_sack_opt_parse(const uint8_t *o, uint8_t olen,
			       struct tcp_view *t)
{
	unsigned int i, n = (olen - TCPOPT_SACK_HLEN) / TCPOPT_SACK_BLK;
	const uint8_t *blk;

	t->has_sack = olen >= TCPOPT_SACK_HLEN + TCPOPT_SACK_BLK;
	t->nsack = 0;
	if (!t->has_sack || (olen - TCPOPT_SACK_HLEN) % TCPOPT_SACK_BLK ||
	    n > TCP_SACK_OPT_MAX)
		return;
	for (i = 0; i < n; i++) {
		blk = o + TCPOPT_SACK_HLEN + TCPOPT_SACK_BLK * i;
		t->sack[i][0] = rd32(blk);
		t->sack[i][1] = rd32(blk + TCPOPT_SACK_RIGHT);
	}
	t->nsack = (uint8_t)n;
}

bool tcp_opts_parse(const uint8_t *opt, size_t len, struct tcp_view *t)
{
	size_t i = 0;

	while (i < len) {
		const uint8_t *o = opt + i;
		uint8_t kind = o[TCPOPT_OFF_KIND], olen;

		if (kind == TCPOPT_EOL)
			break;
		if (kind == TCPOPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2)
			return false;
		olen = o[TCPOPT_OFF_LEN];
		if (olen < 2 || olen > len - i)
			return false;
		switch (kind) {
		case TCPOPT_MAXSEG:
			if (olen != TCPOLEN_MAXSEG)
				return false;
			t->has_mss = true;
			t->mss = rd16(o + TCPOPT_OFF_VAL);
			break;
		case TCPOPT_WINDOW:
			if (olen != TCPOLEN_WINDOW)
				return false;
			t->has_wscale = true;
			t->wscale = MIN(o[TCPOPT_OFF_VAL], 14);
			break;
		case TCPOPT_SACK_PERMITTED:
			if (olen != TCPOLEN_SACK_PERMITTED)
				return false;
			t->has_sack_perm = true;
			break;
		case TCPOPT_TIMESTAMP:
			if (olen != TCPOLEN_TIMESTAMP)
				return false;
			t->has_ts = true;
			t->tsval = rd32(o + TCPOPT_OFF_VAL);
			t->tsecr = rd32(o + TCPOPT_OFF_TSECR);
			break;
		case TCPOPT_SACK:
			tcp_sack_opt_parse(o, olen, t);
			break;
		default:		/* MD5, ...: skipped */
			break;
		}
		i += olen;
	}
	return true;
}

/* l4_csum_ok() - verify the transport checksum over pseudo-header. */
static bool l4_csum_ok(const struct pkt *p)
{
	if (p->is_v6)
		return csum_l4_6(&p->src6, &p->dst6, p->l4proto, p->l4,
				 p->l4len) == 0;
	return csum_l4_4(p->src4, p->dst4, p->l4proto, p->l4, p->l4len) == 0;
}

/* parse_tcp() - TCP header at p->l4: data offset within l4len, options
 * bounded (tcp_opts_parse()); fills p->tcp and the payload. */
static enum drop_reason parse_tcp(struct pkt *p)
{
	struct tcp_view *t = &p->tcp;
	const uint8_t *b = p->l4;

	if (p->l4len < TCP_HLEN)
		return DROP_L4_SHORT;
	t->doff = (uint8_t)tcp_doff(b);
	if (t->doff < TCP_HLEN || t->doff > p->l4len)
		return DROP_TCP_DOFF;
	t->sport = rd16(b + TCP_OFF_SPORT);
	t->dport = rd16(b + TCP_OFF_DPORT);
	t->seq = rd32(b + TCP_OFF_SEQ);
	t->ack = rd32(b + TCP_OFF_ACK);
	t->flags = b[TCP_OFF_FLAGS];
	t->window = rd16(b + TCP_OFF_WND);
	if (!tcp_opts_parse(b + TCP_HLEN, t->doff - TCP_HLEN, t))
		return DROP_TCP_OPTS;
	p->payload = b + t->doff;
	p->payload_len = p->l4len - t->doff;
	return DROP_NONE;
}

/* parse_udp() - UDP header at p->l4: length field equal to l4len,
 * checksum verified if verify (zero: none on IPv4, always refused on
 * IPv6); fills p->udp and the payload. */
static enum drop_reason parse_udp(struct pkt *p, bool verify)
{
	const uint8_t *b = p->l4;

	if (p->l4len < UDP_HLEN)
		return DROP_L4_SHORT;
	p->udp.sport = rd16(b + UDP_OFF_SPORT);
	p->udp.dport = rd16(b + UDP_OFF_DPORT);
	p->udp.len = rd16(b + UDP_OFF_LEN);
	if (p->udp.len != p->l4len)
		return DROP_UDP_LEN;
	/* IPv4 allows "no checksum" (0); IPv6 requires one (RFC 8200 8.1). */
	if (verify && (p->is_v6 || rd16(b + UDP_OFF_CSUM)) && !l4_csum_ok(p))
		return DROP_L4_CSUM;
	if (p->is_v6 && !rd16(b + UDP_OFF_CSUM))
		return DROP_L4_CSUM;
	p->payload = b + UDP_HLEN;
	p->payload_len = p->l4len - UDP_HLEN;
	return DROP_NONE;
}

/* parse_icmp() - ICMP/ICMPv6 header at p->l4, checksum verified if
 * verify; fills p->icmp (id and seq for echo messages). */
static enum drop_reason parse_icmp(struct pkt *p, bool verify)
{
	const uint8_t *b = p->l4;

	if (p->l4len < ICMP_MIN)
		return DROP_L4_SHORT;
	if (verify) {
		if (p->is_v6 ? !l4_csum_ok(p) : csum(b, p->l4len) != 0)
			return DROP_L4_CSUM;
	}
	p->icmp.type = b[ICMP_OFF_TYPE];
	p->icmp.code = b[ICMP_OFF_CODE];
	if (p->l4len >= ICMP_HLEN) {
		p->icmp.id = rd16(b + ICMP_OFF_ID);
		p->icmp.seq = rd16(b + ICMP_OFF_SEQ);
		p->payload = b + ICMP_HLEN;
		p->payload_len = p->l4len - ICMP_HLEN;
	} else {
		p->payload = b + ICMP_MIN;
		p->payload_len = p->l4len - ICMP_MIN;
	}
	return DROP_NONE;
}

static enum drop_reason parse_l4(struct pkt *p, bool verify)
{
	enum drop_reason r;

	switch (p->l4proto) {
	case IPPROTO_TCP:
		r = parse_tcp(p);
		if (r == DROP_NONE && verify && !l4_csum_ok(p))
			r = DROP_L4_CSUM;
		return r;
	case IPPROTO_UDP:
		return parse_udp(p, verify);
	case IPPROTO_ICMP:
		if (p->is_v6)
			return DROP_IP_PROTO;
		return parse_icmp(p, verify);
	case IPPROTO_ICMPV6:
		if (!p->is_v6)
			return DROP_IP_PROTO;
		return parse_icmp(p, verify);
	default:
		return DROP_NONE;	/* the dispatcher decides */
	}
}

/* off_check() - does the offload state o fit the parsed frame? A GSO
 * type must name the frame's transport and family; a partial checksum
 * must start at the transport header and name its checksum field. */
static enum drop_reason off_check(const struct pkt *p, const struct pkt_off *o)
{
	size_t l4off = p->l4 ? (size_t)(p->l4 - p->frame) : 0;

	switch (o->gso) {
	case PKT_GSO_NONE:
		break;
	case PKT_GSO_TCP4:
	case PKT_GSO_TCP6:
		if (!p->is_ip || p->l4proto != IPPROTO_TCP ||
		    p->is_v6 != (o->gso == PKT_GSO_TCP6) || !o->gso_size)
			return DROP_VNET_GSO;
		break;
	case PKT_GSO_UDP:	/* USO: udp_input() sends one datagram per
				 * gso_size bytes; no more of them than a
				 * kernel socket may send at once */
		if (!p->is_ip || p->l4proto != IPPROTO_UDP || !o->gso_size ||
		    p->payload_len > (size_t)o->gso_size * PKT_USO_SEGS_MAX)
			return DROP_VNET_GSO;
		break;
	default:
		return DROP_VNET_GSO;
	}
	if (!o->csum_partial)
		return DROP_NONE;
	if (!p->is_ip || o->csum_start != l4off ||
	    (p->l4proto == IPPROTO_TCP ? o->csum_off != TCP_OFF_CSUM :
	     p->l4proto == IPPROTO_UDP ? o->csum_off != UDP_OFF_CSUM : true))
		return DROP_VNET_CSUM;
	return DROP_NONE;
}

enum drop_reason pkt_parse_off(const uint8_t *frame, size_t len,
			       bool verify_l4_csum, const struct pkt_off *o,
			       struct pkt *p)
{
	enum drop_reason r;

	if (!o || (!o->gso && !o->csum_partial && !o->csum_valid))
		return pkt_parse(frame, len, verify_l4_csum, p);
	if (o->csum_partial || o->csum_valid)
		verify_l4_csum = false;
	r = pkt_parse(frame, len, verify_l4_csum, p);
	if (r == DROP_NONE)
		r = off_check(p, o);
	p->gso = o->gso;
	p->gso_size = o->gso ? o->gso_size : 0;
	return r;
}

enum drop_reason pkt_parse(const uint8_t *frame, size_t len,
			   bool verify_l4_csum, struct pkt *p)
{
	enum drop_reason r;

	memset(p, 0, sizeof(*p));
	p->frame = frame;
	p->len = len;
	if (len < ETH_HLEN_)
		return DROP_ETH_SHORT;
	if (len > FRAME_MAX)
		return DROP_ETH_TOO_BIG;
	memcpy(p->eth_dst, frame + ETH_OFF_DST, 6);
	memcpy(p->eth_src, frame + ETH_OFF_SRC, 6);
	if (p->eth_src[0] & 1)	/* wire: the group bit of an address */
		return DROP_ETH_SRC_MCAST;
	p->ethertype = rd16(frame + ETH_OFF_TYPE);

	switch (p->ethertype) {
	case ETH_P_ARP_:
		return parse_arp(p, frame + ETH_HLEN_, len - ETH_HLEN_);
	case ETH_P_IP_:
		r = parse_ip4(p, frame + ETH_HLEN_, len - ETH_HLEN_);
		break;
	case ETH_P_IPV6_:
		r = parse_ip6(p, frame + ETH_HLEN_, len - ETH_HLEN_);
		break;
	default:
		return DROP_ETH_TYPE;
	}
	if (r != DROP_NONE)
		return r;
	return parse_l4(p, verify_l4_csum);
}

uint8_t *eth_build(uint8_t *f, const uint8_t dst[6], const uint8_t src[6],
		   uint16_t ethertype)
{
	memcpy(f + ETH_OFF_DST, dst, 6);
	memcpy(f + ETH_OFF_SRC, src, 6);
	wr16(f + ETH_OFF_TYPE, ethertype);
	return f + ETH_HLEN_;
}

uint8_t *ip4_build(uint8_t *l3, struct in_addr src, struct in_addr dst,
		   uint8_t proto, size_t l4len, uint16_t id)
{
	l3[IP4_OFF_VIHL] = 4 << 4 | IP4_HLEN / 4;
	l3[IP4_OFF_TOS] = 0;
	wr16(l3 + IP4_OFF_TOTLEN, (uint16_t)(IP4_HLEN + l4len));
	wr16(l3 + IP4_OFF_ID, id);
	wr16(l3 + IP4_OFF_FRAG, IP4_F_DF);
	l3[IP4_OFF_TTL] = 64;
	l3[IP4_OFF_PROTO] = proto;
	wr16(l3 + IP4_OFF_CSUM, 0);
	memcpy(l3 + IP4_OFF_SRC, &src, 4);
	memcpy(l3 + IP4_OFF_DST, &dst, 4);
	wr16(l3 + IP4_OFF_CSUM, csum(l3, IP4_HLEN));
	return l3 + IP4_HLEN;
}

uint8_t *ip6_build(uint8_t *l3, const struct in6_addr *src,
		   const struct in6_addr *dst, uint8_t proto, size_t l4len,
		   uint8_t hlim)
{
	wr32(l3 + IP6_OFF_VTCFL, 6u << 28);
	wr16(l3 + IP6_OFF_PLEN, (uint16_t)l4len);
	l3[IP6_OFF_NEXT] = proto;
	l3[IP6_OFF_HLIM] = hlim;
	memcpy(l3 + IP6_OFF_SRC, src, 16);
	memcpy(l3 + IP6_OFF_DST, dst, 16);
	return l3 + IP6_HLEN;
}

bool in4_is_mcast_or_bcast(struct in_addr a)
{
	uint32_t h = ntohl(a.s_addr);

	return IN_MULTICAST(h) || h == INADDR_BROADCAST;
}

/* in6_is_mcast() - is a multicast (ff00::/8)? */
bool in6_is_mcast(const struct in6_addr *a)
{
	return a->s6_addr[0] == 0xff;
}
