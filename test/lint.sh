#!/bin/bash
# lint.sh - static analysis (make lint): cppcheck, then clang-tidy with
# .clang-tidy, over ferry's sources and its C test code. Prints every
# finding and exits non-zero if there is any. Two jobs at a time (the
# machine is shared). Fails saying so when a tool is missing.
set -u
cd "$(dirname "$0")/.."
for t in cppcheck clang-tidy; do
	command -v $t >/dev/null || { echo "lint: $t not installed (apt-get install $t)"; exit 2; }
done
srcs=$(ls *.c test/unit/*.c test/fuzz/*.c test/wclamp.c)
rc=0

echo "== cppcheck"
cppcheck -q --enable=warning,performance,portability --std=c11 \
	--inline-suppr --error-exitcode=1 -D_GNU_SOURCE -DFERRY_TEST -I. -Ibuild \
	$srcs || rc=1

echo "== clang-tidy"
# Product code and the fuzz harnesses (unit tests: cppcheck only, their
# byte-array memcpy()s and strcpy()s are noise here). fuzz_netlink.c
# includes netlink.c: checked through netlink.c itself.
out=$(ls *.c test/fuzz/*.c | grep -v fuzz_netlink.c | xargs -P2 -n4 \
	clang-tidy --quiet --extra-arg=-std=gnu11 --extra-arg=-D_GNU_SOURCE \
	--extra-arg=-DFERRY_TEST --extra-arg=-DFERRY_VERSION=\"lint\" \
	--extra-arg=-I. --extra-arg=-Ibuild 2>/dev/null |
	grep -E "^[^ ]+:[0-9]+:[0-9]+: (warning|error)" | sort -u)
if [ -n "$out" ]; then
	echo "$out"
	rc=1
fi
[ $rc = 0 ] && echo "lint: clean"
exit $rc
