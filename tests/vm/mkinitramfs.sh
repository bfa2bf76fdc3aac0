#!/usr/bin/env bash
# Builds a gzip'ed newc initramfs for the VM tests: busybox-static with all
# its applets, tests/vm/init as /init, and any programs (with the shared
# libraries ldd lists for them), files and kernel modules asked for.
#
#   mkinitramfs.sh OUT.cpio.gz [--bin PATH[=DEST]]... [--file SRC=DEST]...
#                  [--modules MODDIR MOD...]
#
# --bin     an executable; its libraries and the dynamic loader come along.
#           DEST defaults to /bin/<name>.
# --file    any file or directory, copied to DEST.
# --modules MODDIR is an unpacked lib/modules/<release>; each MOD (e.g. veth)
#           is copied with the modules it depends on (modules.dep) to
#           /lib/modules/<release>/, and /etc/modules-load lists them in load
#           order for /init to insmod (busybox insmod needs uncompressed .ko).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: mkinitramfs.sh OUT.cpio.gz [--bin P[=D]]... [--file S=D]... [--modules DIR MOD...]}
shift
BUSYBOX=${BUSYBOX:-/bin/busybox}
die() {
	echo "mkinitramfs: error: $*" >&2
	exit 1
}
[ -x "$BUSYBOX" ] && "$BUSYBOX" --list >/dev/null 2>&1 ||
	die "$BUSYBOX is not a static busybox (apt-get install busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 &&
	die "$BUSYBOX is dynamically linked (apt-get install busybox-static)"

root=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
# mktemp -d makes it 0700 and it becomes the guest's "/": unprivileged users
# in the guest (tests drop to uid 65534) must be able to traverse it.
chmod 0755 "$root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,run,mnt,var/cache,lib/modules}
cp "$BUSYBOX" "$root/bin/busybox"
for a in $("$BUSYBOX" --list); do
	[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
install -m 0755 "$HERE/init" "$root/init"

copy_libs() {
	local lib
	# ldd prints "name => /path (addr)" and "/lib64/ld-linux... (addr)"
	for lib in $(ldd "$1" 2>/dev/null | grep -oE '/[^ ]+' || true); do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

declare -A added_modules
add_module() {
	local moddir=$1 name=$2 rel line dep
	[ -z "${added_modules[$name]:-}" ] || return 0
	added_modules[$name]=1
	line=$(grep -E "(^|/)$name\.ko(\.[a-z]+)?:" "$moddir/modules.dep" | head -n1 || true)
	[ -n "$line" ] || {
		echo "mkinitramfs: module $name not in $moddir/modules.dep (built in?)" >&2
		return 0
	}
	# dependencies first
	for dep in ${line#*:}; do
		dep=${dep##*/}
		add_module "$moddir" "${dep%%.ko*}"
	done
	rel=${line%%:*}
	mkdir -p "$root/lib/modules/$(basename "$moddir")/$(dirname "$rel")"
	case $rel in
	*.ko.xz) xz -dc "$moddir/$rel" >"$root/lib/modules/$(basename "$moddir")/${rel%.xz}" ;;
	*.ko.zst) zstd -qdc "$moddir/$rel" >"$root/lib/modules/$(basename "$moddir")/${rel%.zst}" ;;
	*.ko.gz) gzip -dc "$moddir/$rel" >"$root/lib/modules/$(basename "$moddir")/${rel%.gz}" ;;
	*) cp "$moddir/$rel" "$root/lib/modules/$(basename "$moddir")/$rel" ;;
	esac
	rel=${rel%.xz}
	rel=${rel%.zst}
	rel=${rel%.gz}
	echo "/lib/modules/$(basename "$moddir")/$rel" >>"$root/etc/modules-load"
}

while [ $# -gt 0 ]; do
	case $1 in
	--bin)
		src=${2%%=*}
		dest=/bin/$(basename "$src")
		[ "$2" = "$src" ] || dest=${2#*=}
		[ -x "$src" ] || die "--bin $src: not executable"
		mkdir -p "$root$(dirname "$dest")"
		# dest may be a busybox applet link: replace the link, not busybox
		rm -f "$root$dest"
		cp -L "$src" "$root$dest"
		copy_libs "$src"
		shift 2
		;;
	--file)
		src=${2%%=*}
		dest=${2#*=}
		[ -e "$src" ] || die "--file $src: missing"
		mkdir -p "$root$(dirname "$dest")"
		[ -d "$root$dest" ] || rm -f "$root$dest"
		cp -rL "$src" "$root$dest"
		shift 2
		;;
	--modules)
		moddir=$2
		shift 2
		while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do
			add_module "$moddir" "$1"
			shift
		done
		;;
	*) die "unknown argument $1" ;;
	esac
done

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
