#!/usr/bin/env bash
# A full disk at run time: commits fail and are counted, /metrics and the API
# keep answering, nothing already committed is lost, the database stays
# intact, and writing resumes by itself once space returns.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd sqlite3
need_cmd jq

mkdir -p "$T/small"
mount -t tmpfs -o size=4m tmpfs "$T/small" || skip "cannot mount a tmpfs"
on_exit 'umount -l "$T/small"'
db="$T/small/sysobs.db"

write_base_config
sed -i "s|^path = .*|path = $db|" "$T/sysobsd.ini"
cat >>"$T/sysobsd.ini" <<INI
snapshot_interval = 1s
[collector.self]
interval = 20ms
INI
start_agent

count_api() { api GET '/api/v1/events?collector=self&limit=1000' | jq '.data | length'; }
enough() { [ "$(count_api)" -ge 20 ]; }
wait_for 15 enough || fail "no rows before the disk filled"

# Fill the file system to the last block.
dd if=/dev/zero of="$T/small/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$T/small/fill2" bs=512 2>/dev/null
errors() { metric 'sysobs_storage_errors_total{op="commit"}'; }
failing() { awk -v e="$(errors)" 'BEGIN { exit !(e + 0 > 0) }'; }
wait_for 20 failing || fail "no commit errors counted on a full disk: $(api GET /metrics | grep storage_errors)"
errs_seen=$(errors)
committed_before=$(sqlite3 "file:$db?mode=ro" 'SELECT count(*) FROM self_samples' 2>/dev/null || echo 0)

# Still serving while the disk is full.
req GET /metrics
assert_eq "metrics while the disk is full" 200 "$HTTP_CODE"
req GET '/api/v1/events?collector=self&limit=5'
assert_eq "events while the disk is full" 200 "$HTTP_CODE"
logged() { grep -q 'store: commit of .* failed: database or disk is full' "$T/agent.log"; }
wait_for 5 logged || fail "disk-full not logged"

# Space returns: the writer catches up by itself.
rm -f "$T/small/fill" "$T/small/fill2"
resumed() { [ "$(sqlite3 "file:$db?mode=ro" 'SELECT count(*) FROM self_samples')" -gt "$((committed_before + 20))" ]; }
wait_for 30 resumed || fail "writing did not resume after space returned"
stop_agent
assert_eq "integrity after a full disk" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
final=$(sqlite3 "$db" 'SELECT count(*) FROM self_samples')
assert_ge "rows kept" "$committed_before" "$final"
pass "full disk: commit errors counted ($errs_seen), serving went on, writing resumed ($committed_before -> $final rows)"
