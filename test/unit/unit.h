/* unit.h - a minimal unit-test framework for ferry's C tests.
 *
 * Each test/unit/test_*.c file defines tests with TEST(name) { ... } and
 * checks with CHECK(cond) (stops the test on failure) or CHECK_EQ(a, b).
 * Tests register themselves at start-up; test/unit/main.c runs them all
 * (or those whose name contains argv[1]) and prints
 * "unit: N passed, N failed". All tests are built with ASan and UBSan.
 *
 * harness.c offers a context with documentation addresses and a capture
 * backend, so service tests can feed frames in and inspect frames out.
 */
#ifndef FERRY_UNIT_H
#define FERRY_UNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};

void unit_register(struct unit_test *t);
void unit_fail(const char *file, int line, const char *what);

#define TEST(name)							\
	static void name(void);						\
	static struct unit_test name##_reg_ = { #name, name, NULL };	\
	__attribute__((constructor)) static void name##_ctor_(void)	\
	{ unit_register(&name##_reg_); }				\
	static void name(void)

#define CHECK(cond) do {						\
	if (!(cond)) { unit_fail(__FILE__, __LINE__, #cond); return; }	\
} while (0)

#define CHECK_EQ(a, b) do {						\
	long long a_ = (long long)(a), b_ = (long long)(b);		\
	if (a_ != b_) {							\
		char m_[256];						\
		snprintf(m_, sizeof(m_), "%s == %s (%lld != %lld)",	\
			 #a, #b, a_, b_);				\
		unit_fail(__FILE__, __LINE__, m_);			\
		return;							\
	}								\
} while (0)

/* --- harness.c: a test context ------------------------------------- */
struct ctx;

#define TEST_TX_MAX	64

/* test_ctx() - a fresh zeroed context: IPv4 guest 198.51.100.2/24 via
 * 198.51.100.1, IPv6 2001:db8::2/64 via fe80::1 (router), DNS
 * 198.51.100.53 / 2001:db8::53, search "example.test", MTU 1500,
 * our MAC 9a:55:9a:55:9a:55, guest MAC 02:00:00:00:00:02, a capture link
 * attached. Call test_ctx_free() at the end. */
struct ctx *test_ctx(void);
void test_ctx_free(struct ctx *c);
/* test_advance() - move the context's clock (c->now) forward by ms. */
void test_advance(struct ctx *c, int64_t ms);
/* test_input() - feed one frame (copied) through tap_input(). */
void test_input(struct ctx *c, const void *frame, size_t len);
/* Frames the context sent to the guest since the last test_tx_reset():
 * test_tx_n() of them, frame i at test_tx(i, &len). Flushes first. */
size_t test_tx_n(struct ctx *c);
const uint8_t *test_tx(struct ctx *c, size_t i, size_t *len);
void test_tx_reset(struct ctx *c);
/* test_tx_hook - when set, every frame to the guest is handed to it as it
 * is flushed, instead of being kept for test_tx() (which holds at most
 * TEST_TX_MAX): the TCP fuzz target (test/fuzz/tcp_prog.c) sees them all. */
extern void (*test_tx_hook)(const uint8_t *f, size_t len);
/* Build frames from the guest for tests: returns the frame length.
 * buf must hold 14 + 40 + l4len bytes. Transport checksum is filled. */
size_t test_frame_ip4(uint8_t *buf, const char *src, const char *dst,
		      uint8_t proto, const void *l4, size_t l4len);
size_t test_frame_ip6(uint8_t *buf, const char *src, const char *dst,
		      uint8_t proto, const void *l4, size_t l4len);
/* test_frame_arp_req() - the guest's broadcast ARP request for the
 * gateway (198.51.100.2 asks for 198.51.100.1) into buf (42 bytes);
 * returns 42. */
size_t test_frame_arp_req(uint8_t *buf);

#endif /* FERRY_UNIT_H */
