#!/usr/bin/env bash
# integration.history_dropped: metric history snapshots lost to a full queue
# are counted exactly, by why the queue was full. A small queue (256 rows;
# a snapshot here is about 100 samples, one a second) fills while another
# process holds the database's write lock (reason locked), then while the
# database's tmpfs is full (reason disk_full). Each snapshot carries the
# counters as they were with itself counted, so the history alone says how
# many snapshots there were up to its newest one: the timestamps present
# plus sysobs_history_snapshots_dropped_total must be exactly that many.
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3

HOLD_S=${HISTORY_DROPPED_HOLD_S:-6}

# counted_exactly DB REASON: the newest snapshot in DB says how many were
# taken (S) and dropped (D, every reason); the timestamps present (P) up to
# it must be S - D, with at least one dropped for REASON.
counted_exactly() {
	local db=$1 reason=$2 last s d dr p
	q() { sqlite3 "file:$db?mode=ro" "$1"; }
	val() { # NAME LABELS: its value at the newest snapshot
		q "SELECT CAST(value AS INTEGER) FROM metric_samples WHERE ts = $last AND series_id =
			(SELECT id FROM metric_series WHERE name = '$1' AND labels = '$2')"
	}
	last=$(q 'SELECT max(ts) FROM metric_samples')
	s=$(val sysobs_history_snapshots_total '')
	d=$(q "SELECT CAST(sum(value) AS INTEGER) FROM metric_samples WHERE ts = $last AND series_id IN
		(SELECT id FROM metric_series WHERE name = 'sysobs_history_snapshots_dropped_total')")
	dr=$(val sysobs_history_snapshots_dropped_total "{reason=\"$reason\"}")
	p=$(q "SELECT count(DISTINCT ts) FROM metric_samples WHERE ts <= $last")
	[ -n "$s" ] || fail "$reason: no sysobs_history_snapshots_total in the history"
	assert_ge "$reason: snapshots dropped for $reason" 1 "${dr:-0}"
	assert_eq "$reason: snapshots present ($p) + dropped ($d) = taken" "$s" "$((p + d))"
	# and the samples: every snapshot is about 100 samples, whole or none
	local sd per
	sd=$(val sysobs_history_samples_dropped_total "{reason=\"$reason\"}")
	per=$(q "SELECT min(c) FROM (SELECT count(*) AS c FROM metric_samples GROUP BY ts)")
	assert_ge "$reason: samples dropped ($sd) >= snapshots dropped x $per" "$((dr * per))" "${sd:-0}"
	# no partial snapshot: every timestamp has all its samples (the series
	# set only grows at start-up here)
	local partial
	partial=$(q "SELECT count(*) FROM (SELECT ts, count(*) AS c FROM metric_samples GROUP BY ts)
		WHERE ts > (SELECT min(ts) FROM metric_samples) + 3000000000 AND c < $per")
	assert_eq "$reason: partial snapshots" 0 "$partial"
	COUNTED="$p present + $d dropped ($dr $reason, $sd samples) = $s taken"
}

config() { # DB_PATH
	write_base_config "storage.path=$1" storage.queue_rows=256 storage.snapshot_interval=1s \
		storage.busy_timeout=200ms collector.drops.enabled=false \
		collector.mptcp.enabled=false collector.cachefiles.enabled=false \
		collector.ifs.enabled=false
}
snapshots() { sqlite3 "file:$1?mode=ro" 'SELECT count(DISTINCT ts) FROM metric_samples' 2>/dev/null || echo 0; }

# ---- A: the database locked by another process ----
db="$T/sysobs.db"
config "$db"
start_agent
three() { [ "$(snapshots "$db")" -ge 3 ]; }
wait_for 15 three || fail "no snapshots before the lock"
{ echo '.timeout 2000'; echo 'BEGIN IMMEDIATE;'; echo 'CREATE TABLE IF NOT EXISTS lock_holder(x);'
	sleep "$HOLD_S"; echo 'COMMIT;'; } | sqlite3 "$db" &
holder=$!
on_exit "kill $holder 2>/dev/null"
dropped_locked() { [ "$(metric 'sysobs_history_snapshots_dropped_total{reason="locked"}')" != 0 ]; }
wait_for $((HOLD_S + 5)) dropped_locked || fail "no snapshot counted dropped while locked: $(api GET /metrics | grep snapshots)"
wait "$holder" || fail "the lock holder failed"
before=$(snapshots "$db")
resumed() { [ "$(snapshots "$db")" -ge $((before + 3)) ]; }
wait_for 15 resumed || fail "snapshots did not resume after the lock"
stop_agent
counted_exactly "$db" locked
locked_note=$COUNTED

# ---- B: the database's disk full ----
mkdir -p "$T/small"
mount -t tmpfs -o size=4m tmpfs "$T/small" 2>/dev/null || skip "cannot mount a tmpfs (needs root)"
on_exit 'umount -l "$T/small"'
db="$T/small/sysobs.db"
config "$db"
start_agent
wait_for 15 three || fail "no snapshots before the disk filled"
dd if=/dev/zero of="$T/small/fill" bs=64k 2>/dev/null
dd if=/dev/zero of="$T/small/fill2" bs=512 2>/dev/null
dropped_full() { [ "$(metric 'sysobs_history_snapshots_dropped_total{reason="disk_full"}')" -ge 2 ]; }
wait_for 20 dropped_full || fail "no snapshot counted dropped on a full disk: $(api GET /metrics | grep snapshots)"
rm -f "$T/small/fill" "$T/small/fill2"
before=$(snapshots "$db")
wait_for 20 resumed || fail "snapshots did not resume after space returned"
stop_agent
counted_exactly "$db" disk_full
pass "locked: $locked_note; disk full: $COUNTED"
