#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest:
# unit tests, fuzz-corpus replays, and integration tests against the real
# daemon and kernel (tests that need root or a missing kernel feature skip
# with the reason). Extra arguments go to ctest (e.g. -R unit).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
cd "${SYSOBS_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 1800 "$@"
