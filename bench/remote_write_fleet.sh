#!/usr/bin/env bash
# What one agent at the default config pushes, and what a fleet of them
# sends into one receiver (docs/fleet.md). An agent with the default config
# (collectors at their defaults, identity job/instance, histograms with
# their buckets, metadata) pushes into a local Prometheus
# (--web.enable-remote-write-receiver) with snapshots every SNAP (1s, to
# gather samples fast: a snapshot is the same set of series whatever the
# interval, and each request carries one snapshot either way) for RUN_S
# seconds. Prints: series per host (samples per snapshot, buckets
# included), bytes on the wire per sample and per snapshot, the sender
# thread's CPU and the whole agent's CPU per 100k samples, database growth
# per snapshot, then the arithmetic for HOSTS hosts at INTERVAL_S (15, the
# default snapshot_interval).
# NATIVE=1: histograms as native histograms ([remote_write]
# native_histograms = true; Prometheus with --enable-feature=native-histograms).
# KEEP_NATIVE=false: [metrics] native_histograms = false, so the history keeps
# classic buckets only (the database growth without native state).
# Usage: bench/remote_write_fleet.sh [path/to/sysobsd]
#   (RUN_S, SNAP, HOSTS, INTERVAL_S, NATIVE, KEEP_NATIVE env)
set -euo pipefail
bin=${1:-${SYSOBSD:-build/sysobsd}}
RUN_S=${RUN_S:-60}
SNAP=${SNAP:-1s}
HOSTS=${HOSTS:-10000}
INTERVAL_S=${INTERVAL_S:-15}
NATIVE=${NATIVE:-0}
KEEP_NATIVE=${KEEP_NATIVE:-true}
prom_flags=()
[ "$NATIVE" = 1 ] && prom_flags=(--enable-feature=native-histograms)
source "$(dirname "$0")/lib/prom_receiver.sh"
prom_receiver_start "${prom_flags[@]}"

cat >"$t/a.ini" <<INI
[agent]
user = root
[http]
listen = 127.0.0.1:0
[storage]
path = $t/sysobs.db
snapshot_interval = $SNAP
[metrics]
native_histograms = $KEEP_NATIVE
[remote_write]
url = http://127.0.0.1:$pport/api/v1/write
native_histograms = $([ "$NATIVE" = 1 ] && echo true || echo false)
INI
"$bin" --config "$t/a.ini" --port-file "$t/port" --log-level warn 2>>"$t/agent.log" &
pid=$!
for _ in $(seq 100); do [ -s "$t/port" ] && break; sleep 0.1; done
metric() {
	curl -s "http://127.0.0.1:$(cat "$t/port")/metrics" | awk -v s="$1" '$1 == s { print $2 }'
}
# Start counting after the first snapshots (start-up, first metadata).
sleep 5
read -r s0 b0 c0 p0 d0 w0 <<<"$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}') \
$(metric 'sysobs_remote_write_bytes_sent_total{destination="remote_write"}') $(metric 'sysobs_remote_write_cpu_seconds_total{destination="remote_write"}') \
$(metric process_cpu_seconds_total) $(metric sysobs_storage_db_bytes) \
$(metric sysobs_history_samples_written_total)"
sleep "$RUN_S"
read -r s1 b1 c1 p1 d1 w1 <<<"$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}') \
$(metric 'sysobs_remote_write_bytes_sent_total{destination="remote_write"}') $(metric 'sysobs_remote_write_cpu_seconds_total{destination="remote_write"}') \
$(metric process_cpu_seconds_total) $(metric sysobs_storage_db_bytes) \
$(metric sysobs_history_samples_written_total)"
host=$(hostname)
series=$(curl -s -g "http://127.0.0.1:$pport/api/v1/query" \
	--data-urlencode "query=count({instance=\"$host\",job=\"sysobs\"})" | jq -r '.data.result[0].value[1]')
buckets=$(curl -s -g "http://127.0.0.1:$pport/api/v1/query" \
	--data-urlencode "query=count({instance=\"$host\",__name__=~\".+_bucket\"})" | jq -r '.data.result[0].value[1] // 0')
# Native histograms: the series whose instant value is a "histogram".
natives=$(curl -s -g "http://127.0.0.1:$pport/api/v1/query" \
	--data-urlencode "query={instance=\"$host\",job=\"sysobs\"}" | jq '[.data.result[] | select(.histogram)] | length')
snap_rows=$(sqlite3 "file:$t/sysobs.db?mode=ro" \
	"SELECT count(*) FROM metric_samples WHERE ts = (SELECT max(ts) FROM metric_samples)")
# The bucket blobs of the last snapshot: their bytes, and how many carry
# native buckets (metrics/hist_blob.h: first byte 0xff).
read -r blob_bytes blob_native <<<"$(sqlite3 -separator ' ' "file:$t/sysobs.db?mode=ro" \
	"SELECT coalesce(sum(length(buckets)), 0), coalesce(sum(hex(substr(buckets, 1, 1)) = 'FF'), 0)
	 FROM metric_samples WHERE ts = (SELECT max(ts) FROM metric_samples)")"
awk -v s="$((s1 - s0))" -v b="$((b1 - b0))" -v c="$(echo "$c1 - $c0" | bc -l)" \
	-v p="$(echo "$p1 - $p0" | bc -l)" -v d="$((d1 - d0))" -v w="$((w1 - w0))" \
	-v series="$series" -v buckets="$buckets" -v rows="$snap_rows" -v hosts="$HOSTS" \
	-v natives="$natives" -v blob="$blob_bytes" -v blob_native="$blob_native" \
	-v iv="$INTERVAL_S" -v run="$RUN_S" 'BEGIN {
	snaps = w / rows
	printf "one agent, default config, %d s at a snapshot every %s:\n", run, ENVIRON["SNAP"] ? ENVIRON["SNAP"] : "1s"
	printf "  series pushed per host        %d (of them %d _bucket series, %d native histograms), %d history rows per snapshot\n", series, buckets, natives, rows
	printf "  bucket blobs per snapshot     %d bytes (%d of them with native buckets)\n", blob, blob_native
	printf "  samples sent                  %d (%.0f snapshots)\n", s, snaps
	printf "  bytes on the wire             %.2f per sample, %.0f per snapshot, %.2f MB per 100k samples (snappy, protobuf; a native histogram is one sample)\n", b / s, b / snaps, b / s * 1e5 / 1e6
	printf "  sender thread CPU             %.1f ms per 100k samples\n", c * 1e3 * 1e5 / s
	printf "  whole agent CPU               %.1f ms per 100k samples (snapshots, collectors, HTTP included)\n", p * 1e3 * 1e5 / s
	printf "  database growth               %.1f KB per snapshot (before retention)\n", d / snaps / 1000
	sps = hosts * series / iv
	printf "%d hosts, a snapshot every %d s:\n", hosts, iv
	printf "  samples/s into the receiver   %.0f  (%d x %d / %d)\n", sps, hosts, series, iv
	printf "  bytes/s into the receiver     %.2f MB/s (%.1f Mbit/s), %.1f GB/day\n", sps * b / s / 1e6, sps * b / s * 8 / 1e6, sps * b / s * 86400 / 1e9
	printf "  requests/s                    %.0f (one per host per snapshot at the default batch_samples)\n", hosts / iv
	printf "  sender CPU across the fleet   %.2f cores (%.1f ms per host per hour)\n", sps * c / s, 3600 / iv * series * c / s * 1e3
}'
