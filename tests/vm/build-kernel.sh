#!/usr/bin/env bash
# Builds the small test kernel for the VM tests (cachefiles on-demand, EROFS,
# fscache, BTF, MPTCP, skb:kfree_skb) from Debian's linux-source-6.12 and
# caches the bzImage outside the repo.
#
#   tests/vm/build-kernel.sh            # prints the path of the bzImage
#
# Cache: ${SYSOBS_CACHE:-/var/cache/sysobs}/vm/bzImage-<key>, where <key>
# hashes the linux-source package version, the config fragment, this script
# and the compiler version; a cached image is reused as is. Building takes
# about 8 min on 2 cores (run under nice so other work keeps its CPU).
#
# Why Debian's source and not Debian's kernels: Debian disables
# CONFIG_CACHEFILES_ONDEMAND, which the cachefiles collector needs.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
FRAGMENT=$HERE/kernel-6.12.config-fragment
CACHE=${SYSOBS_CACHE:-/var/cache/sysobs}/vm
SRC_PKG=linux-source-6.12
JOBS=${SYSOBS_KERNEL_JOBS:-$(nproc)}

msg() { echo "vm-kernel: $*" >&2; }
die() {
	msg "error: $*"
	exit 1
}

pkg_version=$(dpkg-query -W -f='${Version}' "$SRC_PKG" 2>/dev/null) ||
	die "$SRC_PKG is not installed (apt-get install $SRC_PKG, or ./scripts/deps.sh)"
tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n1)
[ -n "$tarball" ] || die "no /usr/src/linux-source-6.12.tar.* (reinstall $SRC_PKG)"
cc_version=$(gcc -dumpfullversion 2>/dev/null || echo unknown)

key=$({
	echo "$pkg_version"
	echo "$cc_version"
	cat "$FRAGMENT" "$0"
} | sha256sum | cut -c1-16)
out=$CACHE/bzImage-$key

if [ -s "$out" ]; then
	msg "cached kernel $out"
	echo "$out"
	exit 0
fi

for t in make gcc flex bison bc pahole cpio; do
	command -v "$t" >/dev/null || die "$t not found (./scripts/deps.sh installs the kernel build tools)"
done

mkdir -p "$CACHE"
work=$CACHE/build-$key
# One builder at a time per key; a second caller waits for the first.
exec 9>"$CACHE/build-$key.lock"
flock 9
if [ -s "$out" ]; then
	echo "$out"
	exit 0
fi

start=$SECONDS
msg "building Linux $pkg_version test kernel (key $key) in $work"
msg "this takes ~8 min on 2 cores; the result is cached in $CACHE"
rm -rf "$work"
mkdir -p "$work"
tar -C "$work" -xf "$tarball"
tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)

opts=$(grep -v '^[[:space:]]*#' "$FRAGMENT" | tr -s ' \t' '\n\n' | sed '/^$/d')
(
	cd "$tree"
	make -s tinyconfig >/dev/null
	args=()
	for o in $opts; do args+=(-e "$o"); done
	./scripts/config "${args[@]}"
	make -s olddefconfig >/dev/null
	missing=
	for o in $opts; do
		grep -qx "CONFIG_$o=y" .config || missing="$missing $o"
	done
	[ -z "$missing" ] || die "options not =y after olddefconfig:$missing"
	msg "config ok ($(echo "$opts" | wc -l) options =y); compiling with -j$JOBS"
	nice -n 10 make -s -j"$JOBS" bzImage >"$work/build.log" 2>&1 ||
		{
			tail -n 40 "$work/build.log" >&2
			die "kernel build failed (log: $work/build.log)"
		}
	cp arch/x86/boot/bzImage "$out.tmp"
	cp .config "$CACHE/config-$key"
)
mv "$out.tmp" "$out"
rm -rf "$work"
msg "built $out in $((SECONDS - start)) s"
echo "$out"
