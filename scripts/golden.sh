#!/usr/bin/env bash
# Runs every golden end-to-end set (tests/golden/<set>/) against the built
# sysobsd; with --update, rewrites their golden files from what the agent
# answers now (review the diff before committing it).
#   scripts/golden.sh [--update] [SET...]
# The build tree is ./build, or $SYSOBS_BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${SYSOBS_BUILD_DIR:-build}" && pwd)
update=
if [ "${1:-}" = --update ]; then
	update=--update
	shift
fi
sets=("$@")
if [ ${#sets[@]} -eq 0 ]; then
	for d in tests/golden/*/set.sh; do
		sets+=("$(basename "$(dirname "$d")")")
	done
fi
export SYSOBSD=$build/sysobsd SYSOBS_SRC=$src SYSOBS_BUILD=$build SYSOBS_TEST_DATA=$src/tests/data
for s in "${sets[@]}"; do
	bash tests/golden/run.sh "$s" $update
done
