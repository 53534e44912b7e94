#!/bin/bash
# seccomp_check.sh - is every system call ferry can make on the seccomp
# allow-list, or documented as made only during start-up? (make check;
# see seccomp.c "The list".)
#
# For each source X.c, from its release object build/sc-obj/X.o: every
# libc function it imports (nm --undefined-only, less ferry's own
# symbols) must be in test/seccomp_libc.txt, and each system call listed
# there for it must be annotated in X.c (a "seccomp(MODES): CALL" line,
# any mode or setup); so must each syscall(SYS_x) / __NR_x the source
# names. Every annotated name must be a system call of this machine.
# Prints one line per problem naming the file, the function, the call
# and what to add where; exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."
map=test/seccomp_libc.txt
bad=0

problem() {
	echo "seccomp check: $*"
	bad=1
}

srcs=$(ls *.c)
for s in $srcs; do
	[ -f "build/sc-obj/${s%.c}.o" ] || { problem "build/sc-obj/${s%.c}.o missing (make check builds it)"; exit 1; }
done

own=$(nm --defined-only build/sc-obj/*.o | awk 'NF == 3 { print $3 }' | sort -u)

for s in $srcs; do
	o=build/sc-obj/${s%.c}.o
	names=$(bash test/seccomp_gen.sh names "$s" | awk '{ print $2 }' | sort -u)
	imports=$(nm --undefined-only "$o" | awk '{ print $2 }' | sed 's/@.*//' |
		  sort -u | comm -23 - <(echo "$own"))
	for f in $imports; do
		line=$(awk -v f="$f" '$1 == f { print; exit }' "$map")
		if [ -z "$line" ]; then
			problem "$s calls $f(), which $map does not list: add a line '$f CALL...' (or '$f -') with the system calls it makes"
			continue
		fi
		for call in ${line#* }; do
			[ "$call" = - ] && continue
			grep -qx "$call" <<< "$names" ||
				problem "$s calls $f(), which makes $call: annotate $s with /* seccomp(MODES): $call */ next to the call, MODES the modes whose running code makes it (ns vm vu, all), or setup if only start-up (before seccomp_install()) does"
		done
	done
	# Raw calls: syscall(SYS_x, ...) and __NR_x outside comments.
	for call in $(sed -e 's://.*::' "$s" | awk '
		/\/\*/ { c = 1 } !c { print } /\*\// { c = 0 }' |
		grep -oE '\b(SYS|__NR)_[a-z0-9_]+' | sed -E 's/^(SYS|__NR)_//' | sort -u); do
		grep -qx "$call" <<< "$names" ||
			problem "$s makes the system call $call (syscall(SYS_$call)): annotate $s with /* seccomp(MODES): $call */ (ns vm vu, all, or setup)"
	done
done

# Every name must exist: the generated table skips a name this machine's
# headers do not define (another architecture's), so a misspelt one
# would otherwise vanish from the list without a word.
if [ "$(uname -m)" = x86_64 ]; then
	all=$(bash test/seccomp_gen.sh names $srcs | awk '{ print $2 }' | sort -u)
	for call in $all; do
		printf '#include <sys/syscall.h>\n#ifndef __NR_%s\n#error\n#endif\n' "$call" |
			${CC:-cc} -E -x c - >/dev/null 2>&1 ||
			problem "'$call' is annotated but is not a system call (no __NR_$call): fix the name where it is annotated ($(grep -l "seccomp(.*$call" $srcs | tr '\n' ' '))"
	done
fi

[ $bad = 0 ] && echo "seccomp check: every call annotated ($(echo $srcs | wc -w) files)"
exit $bad
