#!/bin/bash
# run.sh - run one libFuzzer target for a while: test/fuzz/run.sh TARGET [SECONDS]
#
# TARGET is frame, stream, conf, fwd, netlink, scan, vu, vu_sock, tcp or mig
# (build/fuzz/fuzz_TARGET, built by "make fuzz"). New interesting inputs
# go to a working corpus in build/fuzz/corpus/TARGET (seeded from
# test/fuzz/corpus/TARGET, which stays small and committed); crashes to
# build/fuzz/artifacts/TARGET/.
# One job, one process: the machine is shared. Extra arguments after
# SECONDS go to libFuzzer (e.g. -max_len=2048).
set -eu
cd "$(dirname "$0")/../.."
t=${1:?usage: run.sh frame|stream|conf|fwd|netlink|scan|vu|vu_sock|tcp [SECONDS] [libFuzzer args]}
secs=${2:-180}
shift $(( $# >= 2 ? 2 : 1 ))
bin=build/fuzz/fuzz_$t
[ -x "$bin" ] || make "$bin"
mkdir -p "build/fuzz/corpus/$t" "build/fuzz/artifacts/$t"
exec "$bin" -max_total_time="$secs" -print_final_stats=1 \
	-artifact_prefix="build/fuzz/artifacts/$t/" "$@" \
	"build/fuzz/corpus/$t" "test/fuzz/corpus/$t"
