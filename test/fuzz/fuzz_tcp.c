/* fuzz_tcp.c - libFuzzer target: programs of guest and host actions
 * against one live TCP connection (tcp_prog.c: the input format, the
 * invariants). Runs in a private network namespace, like fuzz_frame: the
 * host side is real loopback sockets there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_isolate_or_exit("fuzz_tcp");
	fuzz_tcp_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_tcp_run(data, size);
	return 0;
}
