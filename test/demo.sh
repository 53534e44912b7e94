#!/bin/bash
# demo.sh - "make run": ferry's namespace mode in action.
#
# On a terminal: an interactive shell ($SHELL) in a new user and network
# namespace connected through ferry, like pasta with no arguments
# ("ferry ns --config-net"); leave it with exit.
#
# Otherwise (or with FERRY_DEMO=script): a short scripted demo inside
# test/sandbox.sh, whose "host" network goes nowhere, so it is safe on
# any machine: show the guest's addresses and routes, ping the gateway,
# then summarise what was shown.
set -eu
cd "$(dirname "$0")/.."
FERRY=${FERRY_BIN:-$PWD/ferry}

if [ -t 0 ] && [ -t 1 ] && [ "${FERRY_DEMO:-}" != script ]; then
	echo "ferry: ${SHELL:-/bin/sh} in a new network namespace; 'exit' leaves"
	# ferry exits with the shell's status, which is the user's last
	# command's: not a failure of ferry or of make. Only a ferry that
	# never started the shell (the marker is not there) failed.
	mark=$(mktemp -u "${TMPDIR:-/tmp}/ferry-run.XXXXXX")
	rc=0
	"$FERRY" ns --config-net -- sh -c ': > "$1"; exec "$2"' sh "$mark" \
		"${SHELL:-/bin/sh}" || rc=$?
	if [ -e "$mark" ]; then
		rm -f "$mark"
		[ "$rc" = 0 ] || echo "ferry: the shell exited with status $rc" \
			"(its last command's); ferry ran fine"
		exit 0
	fi
	exit "$rc"
fi

if [ "${FERRY_SANDBOX:-}" != 1 ]; then
	exec bash test/sandbox.sh bash "$0" "$@"
fi

# Inside the sandbox: run the guest script through ferry.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$FERRY" ns -f --config-net -- sh -c '
	echo "guest\$ ip addr show"; ip addr show
	echo; echo "guest\$ ip route; ip -6 route"; ip route; ip -6 route
	gw=$(ip route show default | sed -n "s/.*via \([^ ]*\).*/\1/p")
	echo; echo "guest\$ ping -c 2 -W 1 $gw"; ping -c 2 -W 1 "$gw"
	true' 2>&1 | tee "$out"

echo
echo "== summary"
grep -Eo 'inet6? [0-9a-f.:]+/[0-9]+ scope global' "$out" |
	sed 's/^/guest address:  /; s/ scope global//'
grep -E '^default' "$out" | sed 's/^/guest route:    /'
grep -E 'packets transmitted' "$out" | sed 's/^/gateway ping:   /' ||
	echo "gateway ping:   no answer"
