/* fuzz_fwd.c - libFuzzer target: fwd_spec_parse(), the -t/-u/-T/-U value
 * parser. The input is split at NUL bytes into up to 4 values given to
 * the same spec in order (repeated options merge), alternating whether
 * "auto" is allowed. Every error must leave a terminated message.
 */
#include <stdlib.h>
#include <string.h>

#include "fwd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fwd_spec f;
	char buf[4096], err[256];
	size_t off = 0;
	int i;

	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	memset(&f, 0, sizeof(f));
	for (i = 0; i < 4 && off <= size; i++) {
		const char *arg = buf + off;

		err[0] = '\0';
		if (!fwd_spec_parse(&f, arg, i % 2 == 0, err, sizeof(err)) &&
		    (!err[0] || !memchr(err, '\0', sizeof(err))))
			abort();	/* an error must say something */
		off += strlen(arg) + 1;
	}
	return 0;
}
