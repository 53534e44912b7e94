/* harness.c - a ferry context for unit tests, with a capture link: frames
 * "sent to the guest" are copied into a list the test can inspect. */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/mman.h>

#include "checksum.h"
#include "ferry.h"
#include "pkt.h"
#include "unit.h"
#include "util.h"

static struct {
	uint8_t *buf[TEST_TX_MAX];
	size_t len[TEST_TX_MAX];
	size_t n;
} cap;

static int cap_rx(struct ctx *c)
{
	(void)c;
	return 0;
}

void (*test_tx_hook)(const uint8_t *f, size_t len);

static int cap_flush(struct ctx *c)
{
	struct tx_batch *tx = &c->link.tx;
	unsigned int i;

	if (test_tx_hook) {
		for (i = 0; i < tx->n; i++)
			test_tx_hook(tx->buf + tx->f[i].off, tx->f[i].len);
		return 0;
	}
	for (i = 0; i < tx->n && cap.n < TEST_TX_MAX; i++) {
		cap.buf[cap.n] = malloc(tx->f[i].len);
		memcpy(cap.buf[cap.n], tx->buf + tx->f[i].off, tx->f[i].len);
		cap.len[cap.n++] = tx->f[i].len;
	}
	return 0;
}

static const struct link_ops cap_ops = {
	.name = "capture", .tx_prefix = 0, .rx = cap_rx, .flush = cap_flush,
};

struct ctx *test_ctx(void)
{
	static const uint8_t our[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
	static const uint8_t guest[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	struct ctx *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct conf *f = &c->conf;

	c->pcap_fd = c->sigfd = c->child_pidfd = c->epfd = -1;
	c->ctl_epfd = -1;
	f->mtu = 1500;
	f->fd = -1;
	memcpy(f->our_mac, our, 6);
	memcpy(f->guest_mac, guest, 6);
	f->ip4.enabled = f->ip6.enabled = true;
	inet_pton(AF_INET, "198.51.100.2", &f->ip4.addr);
	f->ip4.prefix_len = 24;
	inet_pton(AF_INET, "198.51.100.1", &f->ip4.gw);
	inet_pton(AF_INET, "198.51.100.53", &f->ip4.dns[0]);
	f->ip4.dns_count = 1;
	inet_pton(AF_INET6, "2001:db8::2", &f->ip6.addr);
	f->ip6.prefix_len = 64;
	inet_pton(AF_INET6, "fe80::1", &f->ip6.gw);
	inet_pton(AF_INET6, "2001:db8::53", &f->ip6.dns[0]);
	f->ip6.dns_count = 1;
	strcpy(f->search[0], "example.test");
	f->search_count = 1;
	now_mono(&c->now);
	flow_init(&c->flows, 0);
	tap_init(c);
	tap_attach(c, &cap_ops, -1);
	test_tx_reset(c);
	return c;
}

void test_ctx_free(struct ctx *c)
{
	test_tx_reset(c);
	munmap(c->flows.slots, sizeof(struct flow) * FLOW_MAX);
	munmap(c->flows.buckets, sizeof(uint32_t) * FLOW_HASH_SIZE);
	munmap(c->link.tx.buf, TX_BUF_SIZE);
	munmap(c->link.rx.buf, RX_BUF_SIZE);
	munmap(c, sizeof(*c));
}

void test_advance(struct ctx *c, int64_t ms)
{
	c->now.tv_sec += ms / 1000;
	c->now.tv_nsec += (ms % 1000) * 1000000;
	if (c->now.tv_nsec >= 1000000000) {
		c->now.tv_sec++;
		c->now.tv_nsec -= 1000000000;
	}
}

void test_input(struct ctx *c, const void *frame, size_t len)
{
	memcpy(c->link.rx.buf, frame, len);
	c->link.rx.f[0].off = 0;
	c->link.rx.f[0].len = (uint32_t)len;
	c->link.rx.n = 1;
	tap_input(c);
}

size_t test_tx_n(struct ctx *c)
{
	tap_flush(c);
	return cap.n;
}

const uint8_t *test_tx(struct ctx *c, size_t i, size_t *len)
{
	tap_flush(c);
	if (i >= cap.n)
		return NULL;
	*len = cap.len[i];
	return cap.buf[i];
}

void test_tx_reset(struct ctx *c)
{
	size_t i;

	tap_flush(c);
	for (i = 0; i < cap.n; i++)
		free(cap.buf[i]);
	cap.n = 0;
}

/* fill_csum() - transport checksum for a test frame. */
static void fill_csum(uint8_t *l4, size_t l4len, uint8_t proto, bool v6,
		      const void *src, const void *dst)
{
	int off = proto == IPPROTO_TCP ? 16 : proto == IPPROTO_UDP ? 6 : 2;
	uint16_t s;

	if ((size_t)off + 2 > l4len)
		return;
	wr16(l4 + off, 0);
	if (v6)
		s = csum_l4_6(src, dst, proto, l4, l4len);
	else if (proto == IPPROTO_ICMP)
		s = csum(l4, l4len);
	else
		s = csum_l4_4(*(const struct in_addr *)src,
			      *(const struct in_addr *)dst, proto, l4, l4len);
	if (proto == IPPROTO_UDP && !s)
		s = 0xffff;
	wr16(l4 + off, s);
}

static const uint8_t guest_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t our_mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };

size_t test_frame_arp_req(uint8_t *buf)
{
	uint8_t *a = buf + 14;

	memset(buf, 0, 42);
	memset(buf, 0xff, 6);
	memcpy(buf + 6, guest_mac, 6);
	wr16(buf + 12, ETH_P_ARP_);
	wr16(a, 1);
	wr16(a + 2, ETH_P_IP_);
	a[4] = 6;
	a[5] = 4;
	wr16(a + 6, 1);
	memcpy(a + 8, guest_mac, 6);
	inet_pton(AF_INET, "198.51.100.2", a + 14);
	inet_pton(AF_INET, "198.51.100.1", a + 24);
	return 42;
}

size_t test_frame_ip4(uint8_t *buf, const char *src, const char *dst,
		      uint8_t proto, const void *l4, size_t l4len)
{
	struct in_addr s, d;
	uint8_t *l3, *t;

	inet_pton(AF_INET, src, &s);
	inet_pton(AF_INET, dst, &d);
	l3 = eth_build(buf, our_mac, guest_mac, ETH_P_IP_);
	t = ip4_build(l3, s, d, proto, l4len, 1);
	memcpy(t, l4, l4len);
	fill_csum(t, l4len, proto, false, &s, &d);
	return ETH_HLEN_ + IP4_HLEN + l4len;
}

size_t test_frame_ip6(uint8_t *buf, const char *src, const char *dst,
		      uint8_t proto, const void *l4, size_t l4len)
{
	struct in6_addr s, d;
	uint8_t *l3, *t;

	inet_pton(AF_INET6, src, &s);
	inet_pton(AF_INET6, dst, &d);
	l3 = eth_build(buf, our_mac, guest_mac, ETH_P_IPV6_);
	t = ip6_build(l3, &s, &d, proto, l4len, 255);
	memcpy(t, l4, l4len);
	fill_csum(t, l4len, proto, true, &s, &d);
	return ETH_HLEN_ + IP6_HLEN + l4len;
}
