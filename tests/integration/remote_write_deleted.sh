#!/usr/bin/env bash
# integration.remote_write_deleted: remote_write's receiver is unreachable
# from the agent's first start, so nothing was ever sent. The cursor exists
# all the same (stored at the first start), and what retention deletes
# meanwhile is counted at once, while the receiver is still down:
# sysobs_remote_write_samples_dropped_total{reason="deleted"} equals the
# samples the store deleted. Once a receiver answers, it gets the rest and
# nothing is counted twice.
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3
need_cmd python3

DEAD=$(free_port) || fail "no free port"
write_base_config storage.snapshot_interval=1s collector.self.enabled=false \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false collector.ifs.enabled=false \
	"remote_write.url=http://127.0.0.1:$DEAD/api/v1/write" remote_write.metadata_interval=0 \
	remote_write.min_backoff=100ms remote_write.max_backoff=300ms
db="$T/sysobs.db"
start_agent
samples() { db_count metric_samples; }
five() { [ "$(db_count metric_samples)" -ge 500 ] && [ "$(sqlite3 "file:$db?mode=ro" 'SELECT count(DISTINCT ts) FROM metric_samples')" -ge 5 ]; }
wait_for 20 five || fail "no history before the restart"
assert_eq "samples sent (the receiver was never there)" 0 "$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}')"
stop_agent
cursor=$(sqlite3 "$db" "SELECT value FROM store_meta WHERE key = 'cursor.remote_write'")
assert_eq "the cursor stored at the first start, though nothing was sent" 0 "${cursor:-none}"
n1=$(samples)

# Restart with a retention of 2 s (applied at start): the first run's
# samples are deleted unsent, the receiver still down.
sleep 2
sed -i 's/^\[storage\]$/[storage]\nretention = 2s/' "$T/sysobsd.ini"
start_agent
deleted() { metric 'sysobs_storage_rows_deleted_total{reason="age"}'; }
rw_deleted() { metric 'sysobs_remote_write_samples_dropped_total{destination="remote_write",reason="deleted"}'; }
# all of the first run's samples but its newest (kept, so that rowids never
# restart: storage/store_retention.c)
counted() { d=$(deleted); [ "${d%.*}" -ge $((n1 - 1)) ] && [ "$(rw_deleted)" = "$(deleted)" ]; }
wait_for 10 counted || fail "deletions not counted while the receiver is down: remote_write $(rw_deleted), the store $(deleted) (first run: $n1 samples)"
assert_eq "samples sent meanwhile" 0 "$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}')"
down_count=$(rw_deleted)

# A receiver on that port: the rest is sent, the deleted ones are not
# counted again.
receiver_start rx --port "$DEAD"
sent() { s=$(metric 'sysobs_remote_write_samples_sent_total{destination="remote_write"}'); [ "${s%.*}" -gt 0 ]; }
wait_for 20 sent || fail "nothing sent once the receiver was there"
assert_eq "deleted, counted once" "$(deleted)" "$(rw_deleted)"
stop_agent
pass "receiver down from the first start: cursor stored at 0; retention deleted $down_count samples, counted at once while down; sent after, none counted twice"
