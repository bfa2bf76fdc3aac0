#!/usr/bin/env bash
# Configures and builds sysobs into ./build (or $SYSOBS_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SYSOBS_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSYSOBS_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
