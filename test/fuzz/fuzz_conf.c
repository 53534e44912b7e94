/* fuzz_conf.c - libFuzzer target: the command-line parser core,
 * conf_parse_args() (no exits, no printing).
 *
 * Input: byte 0 picks the mode (even: ns, odd: vm); the rest is split at
 * NUL bytes into at most 63 arguments after argv[0]. A failed parse must
 * leave a non-empty one-line message.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"

#define ARGS_MAX	64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct conf c;
	static char buf[8192];
	char *argv[ARGS_MAX + 1], err[768];
	enum mode mode;
	size_t off = 0;
	int argc = 1;

	if (!size || size >= sizeof(buf))
		return 0;
	mode = data[0] & 1 ? MODE_VM : MODE_NS;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	argv[0] = (char *)"ferry";
	while (off < size - 1 && argc < ARGS_MAX) {
		argv[argc++] = buf + off;
		off += strlen(buf + off) + 1;
	}
	argv[argc] = NULL;
	memset(&c, 0, sizeof(c));
	err[0] = '\0';
	if (!conf_parse_args(&c, mode, argc, argv, err, sizeof(err)) &&
	    !err[0])
		abort();		/* every error says what is wrong */
	return 0;
}
