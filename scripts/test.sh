#!/usr/bin/env bash
# Installs what is missing, builds, and runs the test suite in three stages:
#   suite  the whole suite with ctest (build/): unit tests, fuzz-corpus
#          replays, integration tests against the real daemon and kernel,
#          and golden end-to-end tests (tests/golden/); tests that need
#          root or a missing kernel feature skip with the reason
#   asan   an ASan+UBSan build (build-asan/, -fno-sanitize-recover=all,
#          halt_on_error=1): every unit test and corpus replay, and the
#          integration tests that drive the agent's fault paths
#   fuzz   with clang: every libFuzzer target for 10 s (scripts/fuzz.sh; SYSOBS_FUZZ_SECONDS)
# Extra arguments go to the suite's ctest (e.g. -R unit) and then only that
# stage runs; SYSOBS_TEST_STAGES="suite asan fuzz" picks stages explicitly.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
stages=${SYSOBS_TEST_STAGES:-suite asan fuzz}
[ $# -eq 0 ] || stages=${SYSOBS_TEST_STAGES:-suite}
stage() { [[ " $stages " == *" $1 "* ]]; }
took() { echo "test.sh: stage $1: $(($(date +%s) - $2)) s"; }

if stage suite; then
	t0=$(date +%s)
	# The VM tests' kernel (tests/vm/build-kernel.sh, ~10 min on 2 cores when
	# not cached) is built from the start, at nice 19, on the CPU the build and
	# the tests leave idle; the VM tests wait for it on its lock. Only for the
	# whole suite (a -R run may not need it).
	kpid=
	if [ $# -eq 0 ]; then
		mkdir -p "${SYSOBS_BUILD_DIR:-build}"
		setsid nice -n 19 tests/vm/build-kernel.sh >"${SYSOBS_BUILD_DIR:-build}/vm-kernel.log" 2>&1 &
		kpid=$!
		trap '[ -z "$kpid" ] || kill -- -"$kpid" 2>/dev/null || true' EXIT
	fi
	./scripts/build.sh
	(cd "${SYSOBS_BUILD_DIR:-build}" && ctest --output-on-failure --timeout 1800 "$@")
	# A test skipped for a missing package is a failure of scripts/deps.sh:
	# on CI every test must run (a missing kernel feature stays a skip).
	log="${SYSOBS_BUILD_DIR:-build}/Testing/Temporary/LastTest.log"
	missing=$(grep -E '^SKIP: (needs [^r]|needs r[^o]|.*not installed|.*not built)' "$log" 2>/dev/null | sort -u || true)
	if [ -n "$missing" ]; then
		echo "test.sh: tests skipped for a missing package (scripts/deps.sh must install it):"
		echo "$missing"
		[ "${CI:-}" != true ] || exit 1
	fi
	[ -z "$kpid" ] || wait "$kpid" || true
	kpid=
	took suite "$t0"
fi

if stage asan; then
	t0=$(date +%s)
	SYSOBS_BUILD_DIR=build-asan ./scripts/build.sh -DSYSOBS_SANITIZE=address,undefined
	export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	# The integration tests of the fault paths: start/stop, kill -9, a
	# locked and a full database, retention, config and HTTP errors, and
	# the drops and mptcp collectors' decoders on real kernel data.
	(cd build-asan &&
		ctest --output-on-failure --timeout 600 -j2 -R '^(unit|fuzz)\.' &&
		ctest --output-on-failure --timeout 600 -R \
			'^integration\.(http_api|http_abuse|restart|config_example|locked_db|disk_full|crash_ingest|retention|drops|mptcp|export_otlp|export_clickhouse)$')
	took asan "$t0"
fi

if stage fuzz; then
	t0=$(date +%s)
	if command -v clang >/dev/null; then
		./scripts/fuzz.sh "${SYSOBS_FUZZ_SECONDS:-10}"
	else
		echo "test.sh: SKIP fuzz: clang not installed"
	fi
	took fuzz "$t0"
fi
