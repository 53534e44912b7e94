/* arp.c - ARP responder (RFC 826) for the guest's off-link neighbours.
 *
 * ferry is the guest's only neighbour: whatever IPv4 address the guest
 * resolves, other than its own (duplicate address detection, gratuitous
 * announcements), ferry answers, so the frame comes to ferry, which
 * translates it to host sockets. The answer carries ferry's MAC, or for a
 * neighbour on the host's LAN that the host knows its real MAC (neigh.c):
 * the guest link is point to point, so the frames come to ferry all the
 * same. Replies are never broadcast.
 *
 * One exception: after a live migration the destination announces the
 * gateway's address with its MAC (arp_announce(): a gratuitous ARP
 * request, broadcast), so the guest's neighbour entry is fresh at once.
 */
#include "arp.h"
#include "ferry.h"
#include "neigh.h"
#include "pkt.h"
#include "util.h"
#include "wire.h"

/* arp_send() - queue an ARP message of ours to the guest: Ethernet to
 * dst, op, sha (NULL: our MAC) as sender at spa, target tha/tpa. False if
 * the batch has no room. */
static bool arp_send(struct ctx *c, const uint8_t *dst, uint16_t op,
		     const uint8_t *sha, const void *spa, const uint8_t *tha,
		     const void *tpa)
{
	uint8_t *f, *b;

	if (!(f = tap_tx_reserve(c, ETH_HLEN_ + ARP_LEN)))
		return false;
	b = eth_build(f, dst, c->conf.our_mac, ETH_P_ARP_);
	wr16(b + ARP_OFF_HTYPE, ARP_HTYPE_ETH);
	wr16(b + ARP_OFF_PTYPE, ETH_P_IP_);
	b[ARP_OFF_HALEN] = 6;
	b[ARP_OFF_PALEN] = 4;
	wr16(b + ARP_OFF_OP, op);
	memcpy(b + ARP_OFF_SHA, sha ? sha : c->conf.our_mac, 6);
	memcpy(b + ARP_OFF_SPA, spa, 4);
	memcpy(b + ARP_OFF_THA, tha, 6);
	memcpy(b + ARP_OFF_TPA, tpa, 4);
	tap_tx_commit(c, ETH_HLEN_ + ARP_LEN);
	return true;
}

enum drop_reason arp_input(struct ctx *c, const struct pkt *p)
{
	const struct arp_view *a = &p->arp;
	uint8_t mac[6];
	bool real;

	if (a->op != 1)				/* replies: nothing to learn */
		return DROP_ARP_IGNORED;
	if (in4_eq(&a->tpa, &a->spa) || in4_is_unspec(&a->tpa) ||
	    in4_eq(&a->tpa, &c->conf.ip4.addr) ||
	    in4_is_mcast_or_bcast(a->tpa))
		return DROP_ARP_IGNORED;	/* DAD, announcements, own */
	real = neigh_mac(c, AF_INET, &a->tpa, mac);	/* a real neighbour */
	if (!arp_send(c, a->sha, ARP_OP_REPLY, real ? mac : NULL, &a->tpa,
		      a->sha, &a->spa))
		return DROP_TX_FULL;
	return DROP_NONE;
}

void arp_announce(struct ctx *c)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t none[6] = { 0 };

	if (!arp_send(c, bcast, ARP_OP_REQUEST, NULL, &c->conf.ip4.gw, none,
		      &c->conf.ip4.gw))
		drop(c, DROP_TX_FULL);
}
