#!/bin/bash
# udp.sh - UDP throughput through ferry vs. a veth pair, in the sandbox.
#
# Runs build/udpblast (a sendmmsg/recvmmsg probe, test/bench/udpblast.c)
# for SECS seconds per case, unthrottled, and prints received Mbit/s and
# the loss (sent - received) per case, with where it happened (the
# sender's device drops, the receiver's socket buffer overflows):
#   veth:        a namespace behind a veth pair -> sandbox host
#   ferry out:   guest -> its gateway (host loopback), ferry ns
#   pasta out:   the same through pasta, when it is installed
#   ferry in:    host -> forwarded port (-u) -> guest
# Usage: [RATE=MBIT] [UDPBLAST_GSO=N] test/bench/udp.sh [SIZE [SECS]]
#   (default 1400 bytes, 5 s, unthrottled sender; UDPBLAST_GSO: senders
#   use UDP_SEGMENT, N datagrams per send, see udpblast.c)
# iperf3 -u needs a TCP control connection: it is used once ferry has TCP
# (set IPERF=1).
set -eu
cd "$(dirname "$0")/../.."
if [ "${FERRY_SANDBOX:-}" != 1 ]; then
	make -s ferry
	mkdir -p build
	gcc -O2 -Wall -Wextra -Werror -o build/udpblast test/bench/udpblast.c
	exec bash test/sandbox.sh bash "$0" "$@"
fi
SIZE=${1:-1400}; SECS=${2:-5}; RATE=${RATE:-0}
B=$PWD/build/udpblast; F=$PWD/ferry
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# report NAME: one line from $tmp/recv and $tmp/send, with where the loss
# happened: txdrop (the sender namespace's device drops, e.g. a full tap
# ring) and rcvbuferr (the receiver namespace's UDP RcvbufErrors).
report() {
	local got sent mbit txd rbe
	got=$(grep -o 'datagrams=[0-9]*' "$tmp/recv" | cut -d= -f2)
	mbit=$(grep -o 'mbit=[0-9]*' "$tmp/recv" | cut -d= -f2)
	rbe=$(grep -o 'rcvbuferr=[0-9]*' "$tmp/recv" | cut -d= -f2)
	sent=$(grep -o 'datagrams=[0-9]*' "$tmp/send" | cut -d= -f2)
	txd=$(grep -o 'txdrop=[0-9]*' "$tmp/send" | cut -d= -f2)
	printf '%-10s size %5s: %6s Mbit/s received, loss %s%% (%s of %s; txdrop %s, rcvbuferr %s)\n' \
		"$1" "$SIZE" "${mbit:-0}" \
		"$(awk -v s="${sent:-0}" -v g="${got:-0}" 'BEGIN{printf "%.1f", s ? (s-g)*100/s : 100}')" \
		"$(( ${sent:-0} - ${got:-0} ))" "${sent:-0}" "${txd:-?}" "${rbe:-?}"
	echo "$1 ${mbit:-0}" >> "$tmp/results"
}

# measure NAME RECV_CMD... -- SEND_CMD...: run a receiver, then a sender.
measure() {
	local name=$1; shift
	local recv=() send=()
	while [ "$1" != -- ]; do recv+=("$1"); shift; done; shift
	send=("$@")
	"${recv[@]}" > "$tmp/recv" 2>&1 & local rp=$!
	for _ in $(seq 100); do grep -q READY "$tmp/recv" && break; sleep 0.05; done
	"${send[@]}" > "$tmp/send" 2>&1 || true
	wait $rp || true
	report "$name"
}

# veth baseline: a plain namespace with a veth pair to the sandbox host.
unshare -n sleep 600 & nsp=$!
sleep 0.2
ip link add bveth0 type veth peer name bveth1
ip link set bveth1 netns $nsp
ip link set bveth0 mtu 65520 up
ip addr add 198.51.100.250/32 dev bveth0
ip route add 198.51.100.251/32 dev bveth0
nsenter -t $nsp -n sh -c 'ip link set lo up; ip link set bveth1 mtu 65520 up;
	ip addr add 198.51.100.251/32 dev bveth1;
	ip route add 198.51.100.250/32 dev bveth1'
measure veth "$B" recv 5301 "$SECS" -- \
	nsenter -t $nsp -n "$B" send 198.51.100.250 5301 "$SIZE" "$SECS" "$RATE"
kill $nsp

measure ferry-out "$B" recv 5302 "$SECS" -- \
	"$F" ns -q -f --config-net -- "$B" send 198.51.100.1 5302 "$SIZE" "$SECS" "$RATE"

if command -v pasta > /dev/null; then
	measure pasta-out "$B" recv 5304 "$SECS" -- \
		pasta -q -f --runas 0 --config-net -t none -u none -T none -U none \
		-- "$B" send 198.51.100.1 5304 "$SIZE" "$SECS" "$RATE"
fi

# Host -> guest: the receiver runs in the guest behind -u 5303.
"$F" ns -q -f --config-net -u 5303 -- "$B" recv 5303 "$SECS" > "$tmp/recv" 2>&1 &
fp=$!
for _ in $(seq 100); do grep -q READY "$tmp/recv" && break; sleep 0.05; done
# ferry's forwarded-port socket is in this (host) namespace: its
# overflows are this namespace's RcvbufErrors, not the receiver's.
rbe0=$(awk '/^Udp:/ { if (h) print $6; h = 1 }' /proc/net/snmp)
${PERF:-} "$B" send 127.0.0.1 5303 "$SIZE" "$SECS" "$RATE" > "$tmp/send" 2>&1 || true
wait $fp || true
report ferry-in
echo "ferry-in   ferry's socket on the host: rcvbuferr $(( $(awk '/^Udp:/ { if (h) print $6; h = 1 }' /proc/net/snmp) - rbe0 ))"

awk '$1 == "veth" { v = $2 } $1 != "veth" { r[$1] = $2 }
     END { for (k in r) printf "ratio %s/veth: %.2f\n", k, v ? r[k] / v : 0 }' \
	"$tmp/results"
