#!/usr/bin/env bash
# A full disk at run time: commits fail and are counted, /metrics and the API
# keep answering, nothing already committed is lost, the database stays
# intact, and writing resumes by itself once space returns. An event export
# whose receiver was down has a backlog when the disk fills; the receiver
# comes back while the disk is still full: the backlog drains all the same
# (reads need no room), and the cursor is stored once there is room again.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd sqlite3
need_cmd jq

mkdir -p "$T/small"
mount -t tmpfs -o size=4m tmpfs "$T/small" || skip "cannot mount a tmpfs"
on_exit 'umount -l "$T/small"'
db="$T/small/sysobs.db"

RX_PORT=$(free_port) || fail "no free port"
write_base_config
sed -i "s|^path = .*|path = $db|" "$T/sysobsd.ini"
cat >>"$T/sysobsd.ini" <<INI
snapshot_interval = 1s
[collector.self]
interval = 20ms
[export.rx]
format = otlp
url = http://127.0.0.1:$RX_PORT/v1/logs
tables = self_samples
send_interval = 1s
min_backoff = 50ms
max_backoff = 200ms
INI
start_agent

count_api() { api GET '/api/v1/events?collector=self&limit=1000' | jq '.data | length'; }
enough() { [ "$(count_api)" -ge 20 ]; }
wait_for 15 enough || fail "no rows before the disk filled"

# Fill the file system to the last block; the first 256 KiB of it in a file
# of its own, freed alone later: room for one batch (the queue holds about
# 1000 rows of self samples; a batch of them with its index is < 100 KiB in
# the WAL and as much again in the database at checkpoint).
dd if=/dev/zero of="$T/small/one_batch" bs=64k count=4 2>/dev/null
dd if=/dev/zero of="$T/small/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$T/small/fill2" bs=512 2>/dev/null
errors() { metric 'sysobs_storage_errors_total{op="commit"}'; }
failing() { awk -v e="$(errors)" 'BEGIN { exit !(e + 0 > 0) }'; }
wait_for 20 failing || fail "no commit errors counted on a full disk: $(api GET /metrics | grep storage_errors)"
errs_seen=$(errors)
committed_before=$(sqlite3 "file:$db?mode=ro" 'SELECT count(*) FROM self_samples' 2>/dev/null || echo 0)

# Still serving while the disk is full, for as long as it is.
for _ in 1 2 3; do
	req GET /metrics
	assert_eq "metrics while the disk is full" 200 "$HTTP_CODE"
	req GET '/api/v1/events?collector=self&limit=5'
	assert_eq "events while the disk is full" 200 "$HTTP_CODE"
	sleep 1
done
logged() { grep -q 'store: commit of .* failed: database or disk is full' "$T/agent.log"; }
wait_for 5 logged || fail "disk-full not logged"
full_errs=$(errors)

# The export's receiver comes back while the disk is full: the committed
# backlog is sent all the same.
xm() { metric "sysobs_export_$1{destination=\"rx\"}"; }
[ "$(xm rows_sent_total)" = 0 ] || fail "rows sent before the receiver was up"
backlog=$(xm pending_rows)
assert_ge "export backlog when the disk filled" 20 "$backlog"
receiver_start rx --port "$RX_PORT"
drained() { [ "$(xm pending_rows)" = 0 ]; }
wait_for 20 drained || fail "export backlog not sent while the disk is full: pending $(xm pending_rows)"
sent_full=$(xm rows_sent_total)
assert_ge "rows sent while the disk is full" "$backlog" "${sent_full%.*}"

# Room for one batch returns: the writer catches up by itself, promptly.
rows_now() { sqlite3 "file:$db?mode=ro" 'SELECT count(*) FROM self_samples'; }
t0=$(date +%s%N)
rm -f "$T/small/one_batch"
resumed() { [ "$(rows_now)" -gt "$committed_before" ]; }
wait_for 30 resumed || fail "writing did not resume after 256 KiB were freed"
resume_ms=$((($(date +%s%N) - t0) / 1000000))
# and goes on (20 ms samples: about 50 rows a second)
resumed_at=$(rows_now)
sleep 3
going=$(rows_now)
[ "$going" -gt "$((resumed_at + 50))" ] ||
	fail "writing stopped again after resuming ($resumed_at -> $going rows in 3 s): $(ls -l "$T/small")"
dropped=$(metric_sum sysobs_events_dropped_total 'reason="queue_full"')
caught_up() { [ "$(xm pending_rows)" = 0 ]; }
wait_for 20 caught_up || fail "export did not catch up after the disk had room: pending $(xm pending_rows)"
stop_agent
cursor=$(sqlite3 "$db" "SELECT value FROM store_meta WHERE key = 'cursor.export.rx'")
assert_ge "export cursor stored once there was room" "$(sqlite3 "$db" "SELECT max(id) FROM self_samples WHERE id <= $cursor")" "${cursor:-0}"
assert_ge "export cursor past the backlog of the full disk" "$committed_before" \
	"$(sqlite3 "$db" "SELECT count(*) FROM self_samples WHERE id <= ${cursor:-0}")"
assert_eq "integrity after a full disk" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
final=$(sqlite3 "$db" 'SELECT count(*) FROM self_samples')
assert_ge "rows kept" "$committed_before" "$final"
assert_eq "rows dropped from the queue meanwhile" 0 "$dropped"
# Nothing acknowledged was lost: every 20 ms sample of the run is there.
gap_ms=$(sqlite3 "$db" 'SELECT max(ts - prev) / 1000000 FROM
	(SELECT ts, lag(ts) OVER (ORDER BY id) AS prev FROM self_samples)')
[ "$gap_ms" -lt 1000 ] || fail "history has a hole of $gap_ms ms around the full disk"
pass "full disk: export backlog of $backlog rows sent while full ($sent_full); $full_errs commit errors counted, served throughout; 256 KiB freed: writing resumed in $resume_ms ms and went on ($committed_before -> $final rows, largest gap $gap_ms ms, 0 dropped)"
