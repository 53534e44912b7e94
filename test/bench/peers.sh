#!/bin/bash
# peers.sh - a current passt/pasta for the bench: Debian trixie's, unpacked
# beside the system, never installed.
#
# Theory of operation. Debian 12's passt (2023-03) has no vhost-user and an
# old pasta; trixie's (2025-05) has both. It needs trixie's libc, so both
# packages are fetched with `apt-get download` through a private apt
# configuration under build/peers/apt/: its own sources list (the
# machine's own Debian mirror from /etc/apt, suite trixie), its own package
# lists, cache and an empty status file. The system's apt sources, lists
# and dpkg database are never touched. The packages are unpacked with
# `dpkg -x` into build/peers/trixie/root/ and run through that libc's own
# dynamic loader (`ld.so --library-path LIBDIR --argv0 NAME BINARY`):
# --argv0 keeps "pasta" or "passt" in argv[0], which picks passt's mode.
#
# passt's AVX2 start-up re-executes /proc/self/exe with ".avx2" appended
# unless that path already ends in ".avx2"; run through the loader,
# /proc/self/exe is the loader. So the loader is copied to a name ending in
# ".avx2" and runs the .avx2 build directly (the build a Debian install
# picks on this CPU), or the plain build on a CPU without AVX2.
#
# Output: build/peers/trixie/bin/pasta and .../passt, two wrappers that
# exec the loader (the PID stays the translator's, for CPU and RSS), and
# build/peers/trixie/VERSION (the package version: passt's --version
# output is lost when stdout is not a terminal). Idempotent: a complete
# unpack is kept. Needs the network (run outside the sandbox) and
# apt-get; prints the reason and exits 1 when the peer cannot be had.
#
# Usage: test/bench/peers.sh [DIR]   (default build/peers)
set -eu
cd "$(dirname "$0")/../.."
top=$(realpath -m "${1:-build/peers}")
out=$top/trixie
[ -x "$out/bin/pasta" ] && [ -x "$out/bin/passt" ] && [ -s "$out/VERSION" ] && exit 0
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
	echo "peers: apt-get and dpkg-deb needed" >&2
	exit 1
fi

# The mirror the machine already uses for its Debian suites.
mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources \
	2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb  *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\/debian\)\/* .*/\2/p' \
	/etc/apt/sources.list 2>/dev/null | head -n 1)
[ -n "$mirror" ] || { echo "peers: no Debian mirror in /etc/apt" >&2; exit 1; }
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

apt=$top/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/deb"
echo "deb [signed-by=$keyring] $mirror trixie main" >"$apt/sources.list"
: >"$apt/status"
cat >"$apt/apt.conf" <<EOF
Dir::Etc::SourceList "$apt/sources.list";
Dir::Etc::SourceParts "$apt/none";
Dir::Etc::Preferences "$apt/none";
Dir::Etc::PreferencesParts "$apt/none";
Dir::State::Lists "$apt/lists";
Dir::State::status "$apt/status";
Dir::Cache "$apt/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
APT::Sandbox::User "root";
EOF
mkdir -p "$apt/none"
export APT_CONFIG=$apt/apt.conf
log=$apt/log
apt-get -q update >"$log" 2>&1 ||
	{ echo "peers: apt-get update (trixie) failed: $(tail -n 2 "$log" | tr '\n' ' ')" >&2; exit 1; }
(cd "$apt/deb" && rm -f ./*.deb && apt-get -q download passt libc6) >>"$log" 2>&1 ||
	{ echo "peers: apt-get download failed: $(tail -n 2 "$log" | tr '\n' ' ')" >&2; exit 1; }

rm -rf "$out.new"
mkdir -p "$out.new/bin"
for deb in "$apt"/deb/*.deb; do
	dpkg-deb -x "$deb" "$out.new/root"
done
lib=$out/root/usr/lib/x86_64-linux-gnu
[ -e "$out.new/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ] ||
	{ echo "peers: no loader in trixie's libc6" >&2; exit 1; }
suffix=""
grep -qw avx2 /proc/cpuinfo && suffix=.avx2
cp -L "$out.new/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$out.new/ld.so$suffix"
for name in pasta passt; do
	cat >"$out.new/bin/$name" <<EOF
#!/bin/sh
# trixie's $name through trixie's own loader (test/bench/peers.sh)
exec "$out/ld.so$suffix" --library-path "$lib" --argv0 $name "$out/root/usr/bin/$name$suffix" "\$@"
EOF
	chmod +x "$out.new/bin/$name"
done
dpkg-deb -f "$apt"/deb/passt_*.deb Version >"$out.new/VERSION"
rm -rf "$out"
mv "$out.new" "$out"
"$out/bin/passt" --help 2>&1 | grep -q -- --vhost-user ||
	{ echo "peers: trixie's passt does not run here" >&2; exit 1; }
echo "peers: trixie passt $(cat "$out/VERSION") in $out" >&2
