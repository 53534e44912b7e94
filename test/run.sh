#!/bin/bash
# run.sh - the whole test suite (make check): unit tests under ASan and
# UBSan, then integration tests in a sandbox (test/sandbox.sh) with pytest.
# Ends with one line "N passed, N failed" and a non-zero exit on failure.
# The header-offset check (test/wire_offsets.py) counts as one test, and
# so do the layering check (test/layers.py) and the documentation's
# references (test/docrefs.py).
#
# Environment: FERRY_TESTS=PATTERN runs only pytest tests matching it (-k);
# FERRY_BIN overrides the binary the integration tests start; SKIP_VM=1
# leaves out the tests that boot a qemu guest (test_vm.py,
# test_vhost_user.py, test_migrate.py), the guest build they need
# (test/guest/build.sh: the only step that downloads a kernel package)
# and qemu 10.0's (test/qemu10.sh, for test_migrate.py).
#
# FERRY_VALGRIND=1 (make valgrind): the unit tests built without
# sanitizers (build/unit-plain) under valgrind memcheck, then the
# integration test files in FERRY_VG_FILES (default: the VM-mode ones,
# a few minutes; valgrind cannot run namespace mode, see conftest.py)
# with every ferry under memcheck (build/ferry-plain); no rootless tests.
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
unit=(./build/unit); unit_what="ASan, UBSan"
files=(test/integration --ignore=test/integration/test_rootless.py)
if [ "${FERRY_VALGRIND:-}" = 1 ]; then
	unit=(valgrind -q --error-exitcode=99 --leak-check=no --track-fds=no
	      --suppressions=test/valgrind.supp ./build/unit-plain)
	unit_what="valgrind memcheck"
	export FERRY_BIN=${FERRY_BIN:-$PWD/build/ferry-plain}
	vm_files="test/integration/test_vm.py test/integration/test_vhost_user.py"
	read -ra files <<< "${FERRY_VG_FILES:-$vm_files}"
fi

count() {	# count LOG: add "N passed"/"N failed"/"N error" from a log
	local p f e
	p=$(grep -Eo '[0-9]+ passed' "$1" | tail -1 | grep -Eo '[0-9]+')
	f=$(grep -Eo '[0-9]+ failed' "$1" | tail -1 | grep -Eo '[0-9]+')
	e=$(grep -Eo '[0-9]+ errors?' "$1" | tail -1 | grep -Eo '[0-9]+')
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${e:-0}))
}

if ! bash test/deps.sh; then
	echo "0 passed, 1 failed"
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# No protocol file indexes a header with a number (test/wire_offsets.py:
# the fields are named in wire.h); counts as one test.
echo "== header offsets (test/wire_offsets.py)"
if python3 test/wire_offsets.py; then pass=$((pass + 1)); else fail=$((fail + 1)); fi

# The code's floors (test/layers.py): the largest file call circle and
# the include arrows running up, each under its bound.
echo "== layering (test/layers.py)"
if python3 test/layers.py; then pass=$((pass + 1)); else fail=$((fail + 1)); fi

# Every file and function doc/*.md names still exists (test/docrefs.py).
echo "== documentation references (test/docrefs.py)"
if python3 test/docrefs.py; then pass=$((pass + 1)); else fail=$((fail + 1)); fi

# As root, the unit tests run in a private network namespace with only
# loopback up: nothing they make ferry send can leave the machine, and
# the guest ports some tests expect ferry to keep on the host (40000-41200)
# cannot collide with sockets of other processes (a make check in another
# tree, running at the same time, once did: udp_link_down_drains).
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
	unit=(unshare -n sh -c 'ip link set lo up && exec "$@"' unit "${unit[@]}")
	unit_what="$unit_what, private network namespace"
fi
echo "== unit tests ($unit_what)"
"${unit[@]}" | tee "$log"
rc=${PIPESTATUS[0]}
count "$log"
if [ "$rc" = 99 ] && [ "${FERRY_VALGRIND:-}" = 1 ]; then
	echo "valgrind reported errors in the unit tests"; fail=$((fail + 1))
elif [ "$rc" != 0 ] && ! grep -q "unit: .* failed" "$log"; then
	echo "unit test binary crashed (exit $rc)"; fail=$((fail + 1))
fi

# Every system call the code can make is on a seccomp list or marked
# start-up only (seccomp.c): checked against the release objects.
if [ "${FERRY_VALGRIND:-}" != 1 ]; then
	echo "== seccomp allow-list check (test/seccomp_check.sh)"
	if bash test/seccomp_check.sh; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
fi

# The VM tests boot a guest built from Debian packages (test/guest): build
# it here, outside the sandbox, where apt-get can install what is missing;
# inside, the session fixture finds it up to date (cached between runs).
if [ "${SKIP_VM:-}" = 1 ]; then
	echo "== VM tests skipped (SKIP_VM=1): no guest build, no qemu"
	files+=(--ignore=test/integration/test_vm.py
		--ignore=test/integration/test_vhost_user.py
		--ignore=test/integration/test_migrate.py)
else
	echo "== guest image for the VM tests (test/guest/build.sh)"
	bash test/guest/build.sh >/dev/null ||
		echo "guest build failed: the VM tests will fail saying why"
	# test_migrate.py: qemu 10.0 unpacked beside the system's qemu
	echo "== qemu 10.0 for the migration tests (test/qemu10.sh)"
	bash test/qemu10.sh >/dev/null ||
		echo "no qemu 10.0: the migration tests will fail saying why"
fi

echo "== integration tests (sandbox)"
export FERRY_BIN=${FERRY_BIN:-$PWD/build/ferry-test}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
args=(-q -p no:cacheprovider -o console_output_style=classic)
[ -n "${FERRY_TESTS:-}" ] && args+=(-k "$FERRY_TESTS")
pytest_in_sandbox() {	# pytest_in_sandbox WHAT ARGS...: run, count, check
	local what=$1; shift
	bash test/sandbox.sh /usr/bin/python3 -m pytest "${args[@]}" "$@" \
		2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	count "$log"
	# pytest: 0 ok, 1 some failed, 5 none collected; anything else broke.
	if [ "$rc" != 0 ] && [ "$rc" != 1 ] && [ "$rc" != 5 ]; then
		echo "$what run broke (pytest exit $rc)"; fail=$((fail + 1))
	fi
}
pytest_in_sandbox integration "${files[@]}"

# ferry as a real unprivileged user: the test switches uid, so it runs in
# a sandbox without a user namespace, which only the real root can make.
echo "== rootless tests (a real unprivileged uid)"
if [ "${FERRY_VALGRIND:-}" = 1 ]; then
	echo "not run under valgrind (they copy the ferry binary)"
elif [ "$(id -u)" = 0 ] && [ "$(awk '{print $3}' /proc/self/uid_map)" = 4294967295 ]; then
	FERRY_SANDBOX_ROOT=1 pytest_in_sandbox rootless \
		test/integration/test_rootless.py
else
	echo "not run: they need the real root (run make check as root)"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
