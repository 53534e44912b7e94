/* fuzz_frame.c - libFuzzer target: arbitrary bytes as guest frames
 * through the whole input path (tap_input(): parse, dispatch, ARP, NDP,
 * DHCP, DHCPv6, ICMP echo, UDP, TCP, replies to the guest, pcap).
 *
 * Input format: see fuzz.h. Runs in a private network namespace (set up
 * once, before the first input) so datagrams to fuzzed destinations stay
 * on this machine; the target aborts rather than run without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static struct ctx *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_isolate_or_exit("fuzz_frame");
	ctx = fuzz_frame_ctx();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_frames_feed(ctx, data, size);
	fuzz_frame_ctx_reset(ctx);
	return 0;
}
