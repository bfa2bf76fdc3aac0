#!/usr/bin/env bash
# Builds sysobs (daemon, tests, benchmarks) the ways a distribution would, with
# warnings as errors, and checks the hardening of the resulting sysobsd:
#   release-gcc, release-clang   cmake -DCMAKE_BUILD_TYPE=Release
#   debian-gcc, debian-clang     Debian's hardened flags (dpkg-buildflags with
#                                hardening=+all: -O2 -fstack-protector-strong
#                                -fstack-clash-protection -fcf-protection,
#                                -D_FORTIFY_SOURCE, -Wl,-z,relro -Wl,-z,now,
#                                PIE), with _FORTIFY_SOURCE raised to 3
# The hardened binaries must be PIE with full RELRO (BIND_NOW), call the
# stack protector and the fortified (*_chk) libc functions.
# Usage: scripts/build-check.sh [NAME...]   (default: all four; builds go to
# build-check/NAME). Takes a few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
jobs=${JOBS:-$(nproc)}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(release-gcc release-clang debian-gcc debian-clang)
mkdir -p build-check

fail() { echo "build-check: FAIL: $*" >&2; exit 1; }

# dpkg-buildflags FLAG with every hardening feature on.
deb_flag() { DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"; }

check_hardening() {
	local bin=$1 hdr ph dyn syms
	# captured first: grep -q on a pipe would SIGPIPE the writer (pipefail)
	hdr=$(readelf -h "$bin") ph=$(readelf -lW "$bin") dyn=$(readelf -dW "$bin")
	syms=$(nm -D "$bin")
	grep -q 'Type:.*DYN' <<<"$hdr" || fail "$bin is not PIE"
	grep -q GNU_RELRO <<<"$ph" || fail "$bin has no RELRO segment"
	grep -Eq 'BIND_NOW|FLAGS.*NOW' <<<"$dyn" || fail "$bin is not linked -z now"
	grep -q __stack_chk_fail <<<"$syms" || fail "$bin does not use the stack protector"
	grep -Eq ' U __[a-z_]+_chk(@|$)' <<<"$syms" || fail "$bin uses no fortified function"
	echo "build-check: $bin: PIE, RELRO, BIND_NOW, stack protector," \
		"$(grep -Ec ' U __[a-z_]+_chk(@|$)' <<<"$syms") fortified functions"
}

for name in "${names[@]}"; do
	dir=build-check/$name
	cc=${name##*-}
	cflags= ldflags= type=Release exeflags=()
	case $name in
	release-gcc | release-clang) ;;
	debian-gcc | debian-clang)
		type=None # the flags say everything, as in a Debian package build
		cflags="$(deb_flag CFLAGS) $(deb_flag CPPFLAGS)"
		cflags="${cflags//-D_FORTIFY_SOURCE=2/-D_FORTIFY_SOURCE=3} -fPIE"
		ldflags="$(deb_flag LDFLAGS)"
		# Debian's gcc and clang default to PIE; say so anyway, for the
		# executables only (clang warns that -pie is unused on the
		# LD_PRELOAD modules the tests build).
		exeflags=(-DCMAKE_EXE_LINKER_FLAGS="$ldflags -pie")
		;;
	*) fail "unknown build $name" ;;
	esac
	command -v "$cc" >/dev/null || fail "$cc not installed"
	start=$SECONDS
	rm -rf "$dir"
	CC=$cc CFLAGS="$cflags" LDFLAGS="$ldflags" cmake -S "$src" -B "$dir" \
		-DCMAKE_BUILD_TYPE="$type" -DSYSOBS_WERROR=ON "${exeflags[@]}" >"$dir.log" 2>&1 ||
		{ tail -20 "$dir.log"; fail "$name: configure"; }
	cmake --build "$dir" -j"$jobs" >>"$dir.log" 2>&1 ||
		{ grep -E -m 20 'error|warning' "$dir.log"; fail "$name: build (log: $dir.log)"; }
	if grep -E -q 'warning:' "$dir.log"; then
		grep -E -m 20 'warning:' "$dir.log"
		fail "$name: warnings"
	fi
	if [[ $name == debian-* ]]; then check_hardening "$dir/sysobsd"; fi
	echo "build-check: $name ok ($((SECONDS - start)) s)"
done
