#!/bin/bash
# build.sh - build the minimal Linux guest used by ferry's VM-mode tests
#
# Theory of operation
# -------------------
# The guest is a Debian distribution kernel plus a tiny initramfs, nothing
# else: no disk image, no root filesystem.  Everything comes from Debian
# packages, so the build needs no network access beyond the package mirror
# and produces the same guest on every machine of the same release.  The
# tools it runs (busybox, iperf3, qemu, cpio, compressors, depmod) are
# installed with apt-get when missing; the kernel is NOT installed: its
# package is fetched with "apt-get download" and unpacked with "dpkg -x"
# into the cache (fetch_kernel below), so /boot, /lib/modules and the
# host's initramfs are never touched.
#
#   kernel     linux-image-amd64 -> linux-image-KVER's vmlinuz-KVER (a
#              bzImage), unpacked into CACHE/kernel.  We also
#              extract the uncompressed ELF vmlinux from it (extract_vmlinux
#              below, our own implementation: the bzImage header says where
#              the compressed payload is) so qemu can boot it directly through
#              its PVH entry point, which skips the real-mode setup code and
#              the in-guest decompression (seconds under TCG).
#   initramfs  newc cpio, gzip-compressed, padded to a multiple of 4 bytes so
#              run.sh can append a second, uncompressed cpio carrying the test
#              script (the kernel unpacks concatenated archives in order and
#              requires an uncompressed archive to start 4-byte aligned).
#              Contents: busybox (+ applet links; the static or the dynamic
#              flavour, whichever is installed, else the dynamic one: the
#              two Debian packages conflict and CI installs `busybox`,
#              which a busybox-static install would remove), the virtio_net and
#              virtio_pci modules and their dependencies in load order
#              (decompressed when the kernel ships .ko.xz/.ko.zst/.ko.gz since
#              busybox insmod loads raw ELF only), the test tools listed in
#              TOOLS with their shared libraries (found with ldd), /init and
#              the udhcpc script.
#
# Output, in the cache directory (argument 1, else $FERRY_GUEST_CACHE, else
# /var/tmp/ferry-guest):
#   vmlinux          uncompressed kernel (PVH boot, what run.sh uses)
#   bzImage          the packaged kernel (fallback: FERRY_GUEST_KERNEL=bzImage)
#   initramfs.cpio.gz
#   stamp            inputs the build was made from; when it matches the
#                    current inputs (package versions, this script's and the
#                    guest files' hashes) nothing is rebuilt
#   kver             kernel release string
#   kernel/          vmlinuz, modules.dep and the guest's modules of the
#                    unpacked kernel package (the rest is deleted)
# The last line printed on stdout is the cache directory.
#
# Concurrent callers serialise on CACHE/.lock; outputs are replaced
# atomically (rename), so a guest booting from the cache never sees a
# half-written file.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${1:-${FERRY_GUEST_CACHE:-/var/tmp/ferry-guest}}
# Test tools copied into the guest with their shared libraries.
TOOLS="iperf3"
PKGS="qemu-system-x86 cpio iperf3 xz-utils zstd gzip kmod"
# Modules the guest loads (dependencies are added from modules.dep).
MODULES="virtio_pci virtio_net"

log() { echo "build.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# pkg_installed() - true if Debian package $1 is installed
pkg_installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = \
	  "install ok installed" ]
}

# ensure_packages() - apt-get install whatever of PKGS is missing
ensure_packages() {
	local missing="" p
	for p in $PKGS; do
		pkg_installed "$p" || missing="$missing $p"
	done
	pkg_installed busybox-static || pkg_installed busybox ||
		missing="$missing busybox"
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages:$missing (need root)"
	log "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if ! apt-get install -y --no-install-recommends $missing >&2; then
		apt-get update >&2
		# shellcheck disable=SC2086
		apt-get install -y --no-install-recommends $missing >&2 ||
			die "apt-get install$missing failed"
	fi
}

# kernel_release() - release string (KVER) of the kernel linux-image-amd64
# points at in the package lists, e.g. 6.1.0-57-amd64 (lists refreshed
# once with apt-get update if they do not know the package yet)
kernel_release() {
	local dep
	dep=$(apt-cache depends linux-image-amd64 2>/dev/null |
	      grep -o 'linux-image-[0-9][^ ,|]*' | head -n1)
	if [ -z "$dep" ] && [ "$(id -u)" = 0 ]; then
		apt-get update -qq >&2 || true
		dep=$(apt-cache depends linux-image-amd64 2>/dev/null |
		      grep -o 'linux-image-[0-9][^ ,|]*' | head -n1)
	fi
	[ -n "$dep" ] || die "cannot resolve linux-image-amd64 in the package lists"
	echo "${dep#linux-image-}"
}

# kernel_version() - the package version apt would download for KVER $1
kernel_version() {
	apt-cache policy "linux-image-$1" 2>/dev/null |
		awk '/Candidate:/ { print $2; exit }'
}

# fetch_kernel() - unpack linux-image-$1 (version $2) into directory $3:
# vmlinuz, modules.dep (made by depmod on the unpacked tree) and the MODULES
# with their dependencies; nothing is installed, the package's other 400 MB
# are deleted again. Skipped when $3 already holds that version.
fetch_kernel() {
	local kver=$1 ver=$2 dir=$3 t m
	if [ -f "$dir/version" ] && [ "$(cat "$dir/version")" = "$ver" ] &&
	   [ -f "$dir/vmlinuz" ] && [ -f "$dir/modules.dep" ]; then
		return 0
	fi
	log "fetching linux-image-$kver $ver (apt-get download, dpkg -x)"
	t=$(mktemp -d "$CACHE/.kernel.XXXXXX")
	(cd "$t" && apt-get download -q -o APT::Sandbox::User=root \
		"linux-image-$kver=$ver" >&2) ||
		{ rm -rf "$t"; die "apt-get download linux-image-$kver failed"; }
	dpkg -x "$t"/linux-image-*.deb "$t/root" ||
		{ rm -rf "$t"; die "dpkg -x of linux-image-$kver failed"; }
	depmod -b "$t/root" "$kver" ||
		{ rm -rf "$t"; die "depmod on the unpacked kernel failed"; }
	rm -rf "$dir"
	mkdir -p "$dir/lib"
	cp "$t/root/boot/vmlinuz-$kver" "$dir/vmlinuz"
	cp "$t/root/lib/modules/$kver/modules.dep" "$dir/modules.dep"
	for m in $(module_order "$dir/modules.dep" $MODULES); do
		mkdir -p "$dir/lib/$(dirname "$m")"
		cp "$t/root/lib/modules/$kver/$m" "$dir/lib/$m"
	done
	rm -rf "$t"
	echo "$ver" > "$dir/version"
}

# le_u32() - print the little-endian 32-bit value at byte offset $2 of $1
le_u32() {
	od -An -tu4 -j "$2" -N4 --endian=little "$1" | tr -d ' '
}

# extract_vmlinux() - write the ELF kernel inside bzImage $1 to $2
#
# Boot protocol >= 2.08 stores the payload location in the setup header:
# setup_sects (u8 at 0x1f1, 0 means 4), payload_offset (u32 at 0x248) and
# payload_length (u32 at 0x24c); the offset is relative to the protected-mode
# code, which starts after (setup_sects + 1) 512-byte sectors.  The payload's
# magic bytes tell the compressor.
extract_vmlinux() {
	local img=$1 out=$2 sects off len magic dec
	[ "$(od -An -c -j $((0x202)) -N4 "$img" | tr -d ' ')" = "HdrS" ] ||
		die "$img: no bzImage setup header"
	sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$img" | tr -d ' ')
	[ "$sects" = 0 ] && sects=4
	off=$(( (sects + 1) * 512 + $(le_u32 "$img" $((0x248))) ))
	len=$(le_u32 "$img" $((0x24c)))
	magic=$(od -An -tx1 -j "$off" -N6 "$img" | tr -d ' ')
	case "$magic" in
	fd377a585a00*)	dec="xz -dc" ;;
	1f8b*)		dec="gzip -dc" ;;
	28b52ffd*)	dec="zstd -dcq" ;;
	425a68*)	dec="bzip2 -dc" ;;
	5d0000*)	dec="xz -dc --format=lzma" ;;
	02214c18*)	dec="lz4 -dc" ;;
	*)		die "$img: unknown payload compression ($magic)" ;;
	esac
	# Some decompressors complain about the trailing size word; the ELF
	# check below is what decides success.
	tail -c +$((off + 1)) "$img" | head -c "$len" | $dec > "$out" 2>/dev/null ||
		true
	[ "$(od -An -c -N4 "$out" | tr -d ' ')" = "177ELF" ] ||
		die "$img: payload did not decompress to an ELF image"
}

# module_order() - print module paths (relative to /lib/modules/KVER) for
# the modules named in $2..., dependencies first, each once
module_order() {
	local dep=$1; shift
	awk -v want="$*" '
	function base(p) { sub(/.*\//, "", p); sub(/\.ko.*/, "", p);
			   gsub(/-/, "_", p); return p }
	function visit(m,   n, i, d) {
		if (m in done) return
		done[m] = 1
		if (!(m in path)) { print "missing module " m > "/dev/stderr";
				    exit 1 }
		n = split(deps[m], d, " ")
		# modules.dep lists the deepest dependency last
		for (i = n; i >= 1; i--) visit(base(d[i]))
		print path[m]
	}
	{ f = $1; sub(/:$/, "", f); m = base(f); path[m] = f
	  $1 = ""; deps[m] = $0 }
	END { n = split(want, w, " "); for (i = 1; i <= n; i++) visit(w[i]) }
	' "$dep"
}

# copy_module() - copy module $1 to $2 as a raw .ko, decompressing
copy_module() {
	case "$1" in
	*.ko)		cp "$1" "$2" ;;
	*.ko.xz)	xz -dc "$1" > "$2" ;;
	*.ko.zst)	zstd -dcq "$1" > "$2" ;;
	*.ko.gz)	gzip -dc "$1" > "$2" ;;
	*)		die "unknown module format: $1" ;;
	esac
}

# tool_libs() - print the shared libraries (and loader) of executable $1;
# nothing for a static one
tool_libs() {
	{ ldd "$1" 2>/dev/null || true; } |
		awk '/=> \//{print $3} /^\t\//{print $1}'
}

# copy_tool() - copy executable $1 into directory $3 of root $2, and its
# shared libraries to the same paths as on the host
copy_tool() {
	local bin=$1 root=$2 dir=$3 lib
	install -D -m 755 "$bin" "$root$dir/$(basename "$bin")"
	for lib in $(tool_libs "$bin"); do
		[ -e "$root$lib" ] && continue
		install -D -m 755 "$(readlink -f "$lib")" "$root$lib"
	done
}

# inputs() - print everything the build depends on, one item a line
inputs() {
	local kver=$1 files="" t pkgs	# $2: the kernel package's version
	for t in /bin/busybox $TOOLS; do
		t=$(command -v "$t") || die "tool $t not found"
		t="$t $(tool_libs "$t")"
		# usrmerge: dpkg knows some by the resolved path, some not
		# shellcheck disable=SC2086
		files="$files $t $(readlink -f $t)"
	done
	# shellcheck disable=SC2086
	pkgs=$(dpkg-query -S $files 2>/dev/null | cut -d: -f1 | tr ', ' '\n\n')
	# shellcheck disable=SC2086
	{ echo "linux-image-$kver $2"
	  dpkg-query -W -f='${Package} ${Version}\n' $pkgs; } | sort -u
	sha256sum "$HERE/build.sh" "$HERE/init" "$HERE/udhcpc.script" |
		awk '{print $1}'
}

# build_initramfs() - populate a root in $2 for the kernel unpacked in $1,
# pack it to $3
build_initramfs() {
	local kdir=$1 root=$2 out=$3 m a
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,etc}
	mkdir -p "$root"/lib/modules "$root"/root
	copy_tool /bin/busybox "$root" /bin
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
	done
	for m in $(module_order "$kdir/modules.dep" $MODULES); do
		a=$(basename "$m"); a=${a%%.ko*}.ko
		copy_module "$kdir/lib/$m" "$root/lib/modules/$a"
		echo "$a" >> "$root/lib/modules/load-order"
	done
	for a in $TOOLS; do
		copy_tool "$(command -v "$a")" "$root" /usr/bin
	done
	install -m 755 "$HERE/init" "$root/init"
	install -D -m 755 "$HERE/udhcpc.script" "$root/etc/udhcpc/default.script"
	echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
	echo "root:x:0:" > "$root/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n' > "$root/etc/hosts"
	# /init reopens its stdio on the devtmpfs console, but the kernel opens
	# /dev/console before that: give it the node when we can make one.
	mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
	 cpio --quiet -o -H newc -R 0:0) | gzip -9n > "$out"
	# pad to 4 bytes so an appended uncompressed cpio starts aligned
	a=$(( (4 - $(stat -c %s "$out") % 4) % 4 ))
	head -c "$a" /dev/zero >> "$out"
}

main() {
	local kver kpkg want
	ensure_packages
	kver=$(kernel_release)
	kpkg=$(kernel_version "$kver")
	[ -n "$kpkg" ] || die "linux-image-$kver has no candidate version"
	mkdir -p "$CACHE"
	exec 9> "$CACHE/.lock"
	flock 9
	fetch_kernel "$kver" "$kpkg" "$CACHE/kernel"
	want=$(inputs "$kver" "$kpkg")
	if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$want" ] &&
	   [ -f "$CACHE/vmlinux" ] && [ -f "$CACHE/initramfs.cpio.gz" ]; then
		log "up to date ($kver)"
		echo "$CACHE"
		return 0
	fi
	log "building guest for kernel $kver in $CACHE"
	tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT	# global: the trap runs after main returns
	extract_vmlinux "$CACHE/kernel/vmlinuz" "$tmp/vmlinux"
	cp "$CACHE/kernel/vmlinuz" "$tmp/bzImage"
	build_initramfs "$CACHE/kernel" "$tmp/root" "$tmp/initramfs.cpio.gz"
	echo "$kver" > "$tmp/kver"
	rm -f "$CACHE/stamp"
	for f in vmlinux bzImage initramfs.cpio.gz kver; do
		mv -f "$tmp/$f" "$CACHE/$f"
	done
	echo "$want" > "$CACHE/stamp.new" && mv -f "$CACHE/stamp.new" "$CACHE/stamp"
	log "vmlinux $(stat -c %s "$CACHE/vmlinux") bytes," \
	    "initramfs $(stat -c %s "$CACHE/initramfs.cpio.gz") bytes"
	echo "$CACHE"
}

main "$@"
