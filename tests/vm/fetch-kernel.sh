#!/usr/bin/env bash
# Fetches one of Debian's prebuilt cloud kernels for the VM kernel matrix and
# unpacks it (apt-get download + dpkg -x, no installation) into the cache.
#
#   tests/vm/fetch-kernel.sh 6.1     # newest linux-image-6.1.0-*-cloud-amd64-unsigned
#   tests/vm/fetch-kernel.sh 6.12    # newest linux-image-6.12.*-cloud-amd64-unsigned
#
# Prints "<vmlinuz> <modules dir> <release>" (modules dir: lib/modules/<release>
# of the unpacked tree). Cache: ${SYSOBS_CACHE:-/var/cache/sysobs}/vm/debian/.
# These kernels carry BTF (/sys/kernel/btf/vmlinux) but not
# CONFIG_CACHEFILES_ONDEMAND.
set -euo pipefail

series=${1:?usage: fetch-kernel.sh 6.1|6.12}
CACHE=${SYSOBS_CACHE:-/var/cache/sysobs}/vm/debian
msg() { echo "vm-fetch: $*" >&2; }
die() {
	msg "error: $*"
	exit 1
}

case $series in
6.1) pattern='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
6.12) pattern='^linux-image-6\.12\.[0-9]+\+deb[0-9]+-cloud-amd64-unsigned$' ;;
*) die "unknown series '$series' (6.1 or 6.12)" ;;
esac

# Newest package of the series in the configured apt sources.
pkg=$(apt-cache search --names-only 'linux-image-.*cloud-amd64-unsigned' | awk '{print $1}' |
	grep -E "$pattern" | sort -V | tail -n1 || true)
if [ -z "$pkg" ]; then
	# The cache may hold one from an earlier run even when apt lists are gone.
	dir=$(ls -d "$CACHE"/linux-image-*"$series"*/ 2>/dev/null | sort -V | tail -n1 || true)
	[ -n "$dir" ] || die "no Debian package matches $pattern (apt-get update?)"
	pkg=$(basename "$dir")
fi
dir=$CACHE/$pkg
if [ ! -f "$dir/.done" ]; then
	msg "downloading $pkg into $dir"
	rm -rf "$dir"
	mkdir -p "$dir/deb" "$dir/root"
	(cd "$dir/deb" && apt-get -o APT::Sandbox::User=root download -q "$pkg" >/dev/null) || die "apt-get download $pkg failed"
	dpkg -x "$dir"/deb/*.deb "$dir/root"
	rm -rf "$dir/deb"
	# modules.dep is made by depmod at install time, not shipped
	rel=$(basename "$(ls -d "$dir"/root/lib/modules/*/ | head -n1)")
	depmod -b "$dir/root" "$rel" || die "depmod for $rel failed"
	touch "$dir/.done"
fi
vmlinuz=$(ls "$dir"/root/boot/vmlinuz-* | head -n1)
release=${vmlinuz##*/vmlinuz-}
mods=$dir/root/lib/modules/$release
[ -d "$mods" ] || mods=$dir/root/usr/lib/modules/$release
echo "$vmlinuz $mods $release"
