#!/usr/bin/env bash
# bench_netns_walk with N extra network namespaces of our own (default 1000),
# each held by a bind mount in /run/netns like `ip netns add` makes them.
# Usage: bench/netns_walk.sh [N] [ROUNDS]   (root; build/ built)
set -euo pipefail
N=${1:-1000}
ROUNDS=${2:-200}
BUILD=${SYSOBS_BUILD:-build}
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
P=sysobs-bnw-$$
cleanup() { for i in $(seq 1 "$N"); do ip netns del "$P-$i" 2>/dev/null || true; done; }
trap cleanup EXIT
for i in $(seq 1 "$N"); do ip netns add "$P-$i"; done
"$BUILD/bench/bench_netns_walk" "$ROUNDS"
