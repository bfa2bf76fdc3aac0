#!/usr/bin/env bash
# Resident memory of the idle agent (every collector this host supports,
# embedded defaults, temporary database), read after it settles.
# Usage: bench/idle_rss.sh [path/to/sysobsd]
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
t=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$t"' EXIT
"$bin" --listen 127.0.0.1:0 --db "$t/sysobs.db" --port-file "$t/port" --log-level warn \
	2>"$t/log" &
pid=$!
for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
[ -s "$t/port" ] || { echo "sysobsd did not start"; cat "$t/log"; exit 1; }
sleep 5
for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$(cat "$t/port")/metrics"; done
sleep 1
rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
hwm_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
running=$(curl -s "http://127.0.0.1:$(cat "$t/port")/api/v1/collectors" |
	jq -r '[.data[] | select(.state=="running") | .name] | join(",")')
printf 'idle sysobsd: VmRSS %.1f MiB, VmHWM %.1f MiB (collectors running: %s)\n' \
	"$(echo "$rss_kb/1024" | bc -l)" "$(echo "$hwm_kb/1024" | bc -l)" "$running"
