/* fuzz_mig.c - libFuzzer target: the live-migration device state decoder,
 * mig_decode(), and migrate_load() applying what it accepts to a context.
 *
 * Input: the state's bytes as a destination ferry would receive them from
 * qemu. When the last byte is odd, the header's body length and checksum
 * are made right first (the byte itself dropped), so mutations reach the
 * record checks behind the checksum. A refusal must come with a reason; an accepted state hands on at
 * most one guest record, and every record it hands on has been checked
 * first (nothing is handed on when the decode fails); a socket record's
 * data records add up to its queues' lengths, the send queue first.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mig_state.h"
#include "migrate.h"
#include "util.h"
#include "../unit/unit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned int guests, records;

static void on_guest(void *o, const struct mig_guest *g)
{
	(void)o;
	(void)g;
	guests++;
	records++;
}

static void on_tcp(void *o, const struct mig_tcp *t)
{
	(void)o;
	(void)t;
	records++;
}

static void on_udp(void *o, const struct mig_udp *u)
{
	(void)o;
	(void)u;
	records++;
}

/* A socket record's queues: its data records add up to them exactly. */
static uint64_t q_left[2];
static bool sock_open;

static void sock_check(void)
{
	if (sock_open && (q_left[0] || q_left[1]))
		abort();
	sock_open = false;
}

static void on_sock(void *o, const struct mig_tcp_sock *k)
{
	(void)o;
	sock_check();
	if (k->notsent > k->sndq)
		abort();
	q_left[0] = k->sndq;
	q_left[1] = k->rcvq;
	sock_open = true;
	records++;
}

static void on_data(void *o, unsigned int q, const uint8_t *p, size_t n)
{
	(void)o;
	(void)p;
	if (!sock_open || q > 1 || !n || n > MIG_DATA_MAX || n > q_left[q] ||
	    (q == MIG_Q_RECV && q_left[MIG_Q_SEND]))
		abort();
	q_left[q] -= n;
	records++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mig_visit v = { on_guest, on_tcp, on_udp,
					    on_sock, on_data };
	static uint8_t buf[65536];
	static struct ctx *c;
	const char *why = NULL;

	if (!c)
		c = test_ctx();
	if (size > MIG_HDR_LEN && size <= sizeof(buf) && (data[size - 1] & 1)) {
		size--;
		memcpy(buf, data, size);
		wr32(buf + 16, (uint32_t)(size - MIG_HDR_LEN));
		wr32(buf + 20, mig_crc32(buf + MIG_HDR_LEN, size - MIG_HDR_LEN));
		data = buf;
	}
	guests = records = 0;
	sock_open = false;
	if (mig_decode(data, size, &v, NULL, &why)) {
		if (!why || !*why || records)
			abort();
	} else if (guests > 1 || why) {
		abort();
	} else {
		sock_check();
	}
	migrate_load(c, data, size);
	return 0;
}
