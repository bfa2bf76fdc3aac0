#!/usr/bin/env bash
# Builds and runs every benchmark in bench/, printing their figures. Some
# need root (BPF, netns); they say so and are skipped otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
build=${SYSOBS_BUILD_DIR:-build}
export SYSOBSD=$build/sysobsd SYSOBS_BUILD=$build SYSOBS_SRC=$PWD
for b in "$build"/bench/bench_*; do
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	"$b" || echo "(exit $?)"
done
for s in bench/*.sh; do
	echo "== $(basename "$s")"
	bash "$s" || echo "(exit $?)"
done
