#!/bin/bash
# run.sh - boot the ferry test guest under qemu and run one test script in it
#
# Theory of operation
# -------------------
# build.sh (called here, cheap when up to date) provides a kernel and a base
# initramfs.  For each run we append a small uncompressed newc cpio holding
# the test script as /test.sh (and any -f files under /root/) to a copy of
# the base initramfs; the guest's /init configures the network and runs it.
# qemu's only NIC is a virtio-net-pci device on a `-netdev stream` UNIX
# socket client, or with -u on `-netdev vhost-user` (the socket ferry's VM
# mode listens on; qemu 7.2 cannot reconnect, so the listener must be up
# first: we poll for it).  The serial
# console goes to a log file as the guest writes it; /init prints
# "FERRY-GUEST-EXIT <code>" and powers off, qemu exits (-no-reboot also
# turns a panic or reboot into an exit), and we exit with that code.
#
# usage: run.sh [options] SOCKET|none SCRIPT
#   -t SEC      deadline for the whole run (default $FERRY_GUEST_TIMEOUT or 120)
#   -l LOG      console log file (default: a new file under ${TMPDIR:-/tmp},
#               removed when the guest exits 0)
#   -m MAC      guest MAC (default 52:54:00:12:34:56)
#   -a ARGS     extra kernel command line (see init: ferry.slaac_wait=0 ...)
#   -f FILE     copy FILE into the guest's /root (repeatable)
#   -k KERNEL   vmlinux (PVH, default) or bzImage
#   -v          also stream the console to stderr
#   -u          vhost-user: SOCKET is a vhost-user back-end (guest RAM in a
#               shared memfd, -netdev vhost-user), not a -netdev stream one;
#               the NIC gets no MSI-X vectors (vectors=0): qemu 7.2 under
#               TCG crashes setting up MSI-X notifiers for vhost-user
# SOCKET "none" boots without a NIC.
#
# stdout: the test script's output (console lines between the begin marker
# and the exit marker, CR stripped).  stderr: progress, timings and, on
# failure, the tail of the console log.
# Exit: the guest's exit code; 124 deadline hit; 125 guest stopped without
# an exit marker (panic, crash); 2 usage or set-up error.
#
# Environment: FERRY_GUEST_CACHE (build cache), FERRY_GUEST_ACCEL=kvm|tcg
# (skip detection), FERRY_GUEST_TIMEOUT, FERRY_GUEST_MONITOR (qemu's -monitor,
# default none; e.g. unix:/tmp/mon,server,nowait to look at a running guest:
# info network, info virtio-queue-status).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TIMEOUT=${FERRY_GUEST_TIMEOUT:-120}
LOG="" MAC=52:54:00:12:34:56 APPEND="" KERNEL=vmlinux VERBOSE=0 VHOST=0
EXTRA=()

log() { echo "run.sh: $*" >&2; }
usage() { sed -n '/^# usage:/,/^# SOCKET/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# now_ms() - monotonic-enough wall clock in milliseconds
now_ms() { date +%s%3N; }

# wait_socket() - poll up to 10 s for the UNIX socket $1 to exist
wait_socket() {
	local end=$(( $(now_ms) + 10000 ))
	while [ ! -S "$1" ]; do
		if [ "$(now_ms)" -ge "$end" ]; then
			log "socket $1 did not appear"
			exit 2
		fi
		sleep 0.05
	done
}

# kvm_works() - true if qemu can boot this guest with KVM here.  A
# /dev/kvm that opens is not enough (some hosts offer a paravirtual KVM
# that stock kernels cannot boot on), so boot the guest once with a trivial
# script and remember the answer for this host boot in the cache.
kvm_works() {
	local cache=$1 probe ok
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	probe="$cache/kvm-ok.$(cat /proc/sys/kernel/random/boot_id)"
	if [ ! -f "$probe" ]; then
		ok=no
		echo 'exit 0' > "$cache/kvm-probe.sh"
		FERRY_GUEST_ACCEL=kvm "$0" -t 30 -a ferry.dhcp=0 -l /dev/null \
			none "$cache/kvm-probe.sh" >/dev/null 2>&1 && ok=yes
		echo "$ok" > "$probe"
	fi
	[ "$(cat "$probe")" = yes ]
}

# make_initrd() - write base initramfs $1 + a cpio of $2 as /test.sh and
# the EXTRA files under /root to $3
make_initrd() {
	local base=$1 script=$2 out=$3 stage f
	stage=$(dirname "$out")/stage
	mkdir -p "$stage/root"
	install -m 755 "$script" "$stage/test.sh"
	for f in "${EXTRA[@]}"; do
		cp -p "$f" "$stage/root/"
	done
	cp "$base" "$out"
	(cd "$stage" && find . -mindepth 1 | cpio --quiet -o -H newc -R 0:0) \
		>> "$out"
}

# print_test_output() - print the test's console output from log $1
print_test_output() {
	tr -d '\r' < "$1" | sed -n '/^FERRY-GUEST-TEST-BEGIN$/,/^FERRY-GUEST-EXIT /{
		/^FERRY-GUEST-TEST-BEGIN$/d; /^FERRY-GUEST-EXIT /d; p; }'
}

while getopts "t:l:m:a:f:k:vuh" opt; do
	case "$opt" in
	t) TIMEOUT=$OPTARG ;;
	l) LOG=$OPTARG ;;
	m) MAC=$OPTARG ;;
	a) APPEND="$APPEND $OPTARG" ;;
	f) EXTRA+=("$OPTARG") ;;
	k) KERNEL=$OPTARG ;;
	v) VERBOSE=1 ;;
	u) VHOST=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 2 ] || usage
SOCK=$1 SCRIPT=$2
[ -f "$SCRIPT" ] || { log "no test script $SCRIPT"; exit 2; }
case "$KERNEL" in vmlinux|bzImage) ;; *) usage ;; esac

T0=$(now_ms)
CACHE=$("$HERE/build.sh" | tail -n1)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ferry-guest.XXXXXX")
QPID=""
cleanup() {
	[ -n "$QPID" ] && kill "$QPID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
KEEPLOG=1
if [ -z "$LOG" ]; then
	LOG=$(mktemp "${TMPDIR:-/tmp}/ferry-guest-console.XXXXXX")
	KEEPLOG=0	# our own log: removed after a passing run
fi
: > "$LOG"

ACCEL=${FERRY_GUEST_ACCEL:-}
if [ -z "$ACCEL" ]; then
	if kvm_works "$CACHE"; then ACCEL=kvm; else ACCEL=tcg; fi
fi
if [ "$ACCEL" = kvm ]; then CPU=host; else CPU=qemu64; fi

make_initrd "$CACHE/initramfs.cpio.gz" "$SCRIPT" "$WORK/initrd"

NET=()
if [ "$SOCK" != none ]; then
	wait_socket "$SOCK"
	NET=(-netdev "stream,id=n0,server=off,addr.type=unix,addr.path=$SOCK"
	     -device "virtio-net-pci,netdev=n0,mac=$MAC")
	if [ "$VHOST" = 1 ]; then
		NET=(-object memory-backend-memfd,id=mem,size=256M,share=on
		     -numa node,memdev=mem
		     -chardev "socket,id=c0,path=$SOCK"
		     -netdev vhost-user,id=n0,chardev=c0
		     -device "virtio-net-pci,netdev=n0,mac=$MAC,vectors=0")
	fi
fi

# -nodefaults: no VGA, no default NIC, no floppy/CD probing in the guest.
# no_timer_check: the kernel trusts the emulated timer instead of timing
# it against the IO-APIC at boot; under TCG on a loaded host that check
# fails ("IO-APIC + timer doesn't work": a panic, or a boot whose serial
# output is lost: exit 125 without the test's lines).
T1=$(now_ms)
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 \
	-nodefaults -no-user-config -no-reboot \
	-machine pc,accel="$ACCEL" -cpu "$CPU" -smp 1 -m 256 \
	-display none -monitor "${FERRY_GUEST_MONITOR:-none}" -serial "file:$LOG" \
	-kernel "$CACHE/$KERNEL" -initrd "$WORK/initrd" \
	-append "console=ttyS0 quiet panic=-1 8250.nr_uarts=1 no_timer_check$APPEND" \
	-nic none "${NET[@]}" \
	> "$WORK/qemu.out" 2>&1 &
QPID=$!
TAILPID=""
if [ "$VERBOSE" = 1 ]; then
	tail -n +1 -f --pid="$QPID" "$LOG" >&2 &
	TAILPID=$!
fi
RC=0
wait "$QPID" || RC=$?
QPID=""
[ -n "$TAILPID" ] && wait "$TAILPID" 2>/dev/null
T2=$(now_ms)

print_test_output "$LOG"
GUEST_RC=$(tr -d '\r' < "$LOG" | sed -n 's/^FERRY-GUEST-EXIT \([0-9]*\)$/\1/p' |
	   tail -n1)
BOOT=$(tr -d '\r' < "$LOG" | sed -n 's/^FERRY-GUEST-NET \([0-9.]*\).*/\1/p')
if [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
	log "deadline of ${TIMEOUT}s hit; console log $LOG, last lines:"
	tail -n 30 "$LOG" | tr -d '\r' >&2
	exit 124
fi
if [ -z "$GUEST_RC" ]; then
	log "guest stopped without exit marker (qemu rc $RC); console $LOG:"
	tail -n 30 "$LOG" | tr -d '\r' >&2
	sed 's/^/qemu: /' "$WORK/qemu.out" >&2
	exit 125
fi
if [ "$GUEST_RC" = 0 ] && [ "$KEEPLOG" = 0 ]; then
	rm -f "$LOG"
	LOG="removed"
fi
log "accel $ACCEL kernel $KERNEL: guest ready at ${BOOT:-?}s guest time," \
    "qemu $(( T2 - T1 )) ms, total $(( T2 - T0 )) ms, exit $GUEST_RC" \
    "(log $LOG)"
exit "$GUEST_RC"
