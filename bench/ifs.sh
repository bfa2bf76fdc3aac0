#!/usr/bin/env bash
# bench/ifs.sh: figures of the ifs collector against the FUSE fake driver.
#  - gap between two back-to-back runs (result handling + history row +
#    metrics + dispatch + the worker's run_test write), from the fake's own
#    run log, for 32 requested cores with 50 ms runs;
#  - POST-to-row latency of one requested scan;
#  - sysobsd CPU time while idle in passive mode (poll = 1s).
# Prints figures, asserts nothing. Needs root and /dev/fuse.
set -uo pipefail
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 0; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 0; }
: "${SYSOBSD:?}" "${SYSOBS_BUILD:?}"
FAKE="$SYSOBS_BUILD/tests/fakes/ifs_fake"
[ -x "$FAKE" ] || { echo "SKIP: ifs_fake not built"; exit 0; }
command -v jq >/dev/null || { echo "SKIP: needs jq"; exit 0; }

T=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-bench-ifs.XXXXXX")
AGENT=
cleanup() {
	[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT"
	fusermount3 -u "$T/mnt" 2>/dev/null
	wait
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/mnt"
cat >"$T/fake.ini" <<'INI'
[fake]
cpus = 64
threads_per_core = 2
packages = 2
scan_ms = 50
devices = 0
INI
"$FAKE" -f "$T/fake.ini" "$T/mnt" 2>/dev/null &
for _ in $(seq 50); do [ -e "$T/mnt/devices/virtual/misc/intel_ifs_0/status" ] && break; sleep 0.1; done
cat >"$T/a.ini" <<INI
[agent]
user = root
sysfs_root = $T/mnt
[http]
listen = 127.0.0.1:0
admin = true
[storage]
path = $T/db.sqlite
[collector.ifs]
schedule = false
max_scan_seconds_per_hour = 0
[collector.drops]
enabled = false
[collector.cachefiles]
enabled = false
[collector.mptcp]
enabled = false
INI
"$SYSOBSD" --config "$T/a.ini" --port-file "$T/port" >"$T/agent.log" 2>&1 &
AGENT=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
URL=http://127.0.0.1:$PORT

# Back-to-back runs of 32 cores.
cores=$(seq 0 31 | paste -sd, -)
curl -s -X POST "$URL/api/v1/ifs/scans" -H 'Content-Type: application/json' \
	-d "{\"cpus\":[$cores]}" >/dev/null
for _ in $(seq 200); do
	[ "$(wc -l <"$T/mnt/fake_runs")" -ge 32 ] && break
	sleep 0.05
done
sort -n "$T/mnt/fake_runs" | awk '
	NR > 1 { g = $1 - prev_end; sum += g; if (g > max) max = g; n++ }
	{ prev_end = $2 }
	END { if (n) printf "ifs: %d back-to-back 50 ms runs: gap between runs mean %.1f ms, max %d ms (fake clock, ms resolution)\n", n + 1, sum / n, max }'

# POST-to-row latency of one scan.
t0=$(date +%s%N)
sid=$(curl -s -X POST "$URL/api/v1/ifs/scans" -H 'Content-Type: application/json' \
	-d '{"cpus":[40]}' | jq -r '.scans[0].scan_id')
for _ in $(seq 400); do
	[ "$(curl -s "$URL/api/v1/ifs/scans?scan_id=$sid" | jq '.data | length')" = 1 ] && break
	sleep 0.005
done
t1=$(date +%s%N)
echo "ifs: POST to history row of one 50 ms scan: $(((t1 - t0) / 1000000)) ms (includes the storage batch interval)"

# Idle CPU in passive mode.
ticks() { awk '{ print $14 + $15 }' "/proc/$AGENT/stat"; }
c0=$(ticks)
sleep 10
c1=$(ticks)
hz=$(getconf CLK_TCK)
echo "ifs: sysobsd idle in passive mode (64 CPUs, poll 1s): $(((c1 - c0) * 1000 / hz)) ms CPU in 10 s"
