/* arp.c - ARP responder (RFC 826) for the guest's off-link neighbours.
 *
 * ferry is the guest's only neighbour: whatever IPv4 address the guest
 * resolves, other than its own (duplicate address detection, gratuitous
 * announcements), ferry answers with its own MAC so the frame comes to
 * ferry, which translates it to host sockets. Replies are never broadcast.
 */
#include "arp.h"
#include "ferry.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

enum drop_reason arp_input(struct ctx *c, const struct pkt *p)
{
	const struct arp_view *a = &p->arp;
	uint8_t *f, *b;

	if (a->op != 1)				/* replies: nothing to learn */
		return DROP_ARP_IGNORED;
	if (in4_eq(&a->tpa, &a->spa) || in4_is_unspec(&a->tpa) ||
	    in4_eq(&a->tpa, &c->conf.ip4.addr) ||
	    in4_is_mcast_or_bcast(a->tpa))
		return DROP_ARP_IGNORED;	/* DAD, announcements, own */
	if (!(f = tap_tx_reserve(c, ETH_HLEN_ + ARP_LEN)))
		return DROP_TX_FULL;
	b = eth_build(f, a->sha, c->conf.our_mac, ETH_P_ARP_);
	wr16(b + ARP_OFF_HTYPE, ARP_HTYPE_ETH);
	wr16(b + ARP_OFF_PTYPE, ETH_P_IP_);
	b[ARP_OFF_HALEN] = 6;
	b[ARP_OFF_PALEN] = 4;
	wr16(b + ARP_OFF_OP, ARP_OP_REPLY);
	memcpy(b + ARP_OFF_SHA, c->conf.our_mac, 6);
	memcpy(b + ARP_OFF_SPA, &a->tpa, 4);
	memcpy(b + ARP_OFF_THA, a->sha, 6);
	memcpy(b + ARP_OFF_TPA, &a->spa, 4);
	tap_tx_commit(c, ETH_HLEN_ + ARP_LEN);
	return DROP_NONE;
}
