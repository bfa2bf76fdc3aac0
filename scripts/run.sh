#!/usr/bin/env bash
# Installs what is missing, builds, and runs sysobsd in the foreground with its
# embedded defaults: database ./var/sysobs.db, HTTP on http://127.0.0.1:9559/.
# Extra arguments go to sysobsd (e.g. --config deploy/sysobsd.example.ini).
# BPF and netlink collectors need root; without it they show as unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
mkdir -p var
exec "${SYSOBS_BUILD_DIR:-build}/sysobsd" "$@"
