/* fuzz_mig.c - libFuzzer target: the live-migration device state decoder,
 * mig_decode(), and migrate_load() applying what it accepts to a context.
 *
 * Input: the state's bytes as a destination ferry would receive them from
 * qemu. When the last byte is odd, the header's body length and checksum
 * are made right first (the byte itself dropped), so mutations reach the
 * record checks behind the checksum. A refusal must come with a reason; an accepted state hands on at
 * most one guest record, and every record it hands on has been checked
 * first (nothing is handed on when the decode fails).
 */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mig_visit v = { on_guest, on_tcp, on_udp };
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
	if (mig_decode(data, size, &v, NULL, &why)) {
		if (!why || !*why || records)
			abort();
	} else if (guests > 1 || why) {
		abort();
	}
	migrate_load(c, data, size);
	return 0;
}
