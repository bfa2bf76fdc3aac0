#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz/fuzz_*.c) for a given time each:
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default 60 s, every target
# Builds them first into build-fuzz (clang, -DSYSOBS_FUZZ=ON: libFuzzer +
# ASan + UBSan, every report fatal). Each target starts from its seed corpus
# (tests/fuzz/corpus/<t>/ and tests/data/<t>/); what it finds new is kept in
# build-fuzz/corpus/<t>/ for the next run, a crash in build-fuzz/artifacts/.
# Exit 1 when a target crashed: fix the bug, then add the reproducer to
# tests/fuzz/corpus/<t>/ so the ordinary build replays it (fuzz.<t> tests).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
build=${SYSOBS_FUZZ_BUILD_DIR:-build-fuzz}
command -v clang >/dev/null || { echo "fuzz: clang not installed" >&2; exit 77; }

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSYSOBS_FUZZ=ON \
	-DSYSOBS_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_targets >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do
		t=${f#tests/fuzz/fuzz_}
		targets+=("${t%.c}")
	done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz_$t
	[ -x "$bin" ] || { echo "fuzz: no target $t ($bin)" >&2; exit 2; }
	seeds=()
	for d in tests/fuzz/corpus/$t tests/data/$t; do
		[ -d "$d" ] && seeds+=("$d")
	done
	mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
	log=$build/artifacts/$t.log
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
		"$build/corpus/$t" "${seeds[@]}" >"$log" 2>&1; then
		runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo ?)
		cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
		echo "fuzz: $t ok: $runs runs in $secs s, ${cov:-cov: ?}, corpus $(ls "$build/corpus/$t" | wc -l) new"
	else
		echo "fuzz: $t FAILED; log $log; reproducer:" "$build"/artifacts/"$t"/* >&2
		grep -E -m 5 'ERROR|runtime error|fuzz check failed|SUMMARY' "$log" >&2 || true
		failed+=("$t")
	fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: crashed: ${failed[*]}" >&2; exit 1; }
