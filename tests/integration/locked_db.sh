#!/usr/bin/env bash
# integration.locked_db: another process holds the database's write lock for
# a few seconds while the agent runs. The agent keeps serving (metrics, REST
# history through its read-only connections), counts the failed commits,
# keeps the rows queued, and writes every one of them once the lock is gone:
# no hole in the history, integrity intact.
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3
need_cmd jq

write_base_config
cat >>"$T/sysobsd.ini" <<INI
busy_timeout = 200ms
[collector.self]
interval = 100ms
INI
db="$T/sysobs.db"
start_agent
some() { [ "$(db_count self_samples)" -ge 5 ]; }
wait_for 15 some || fail "self rows did not start"

errs() { metric 'sysobs_storage_errors_total{op="commit"}'; }
e0=$(errs)
# BEGIN IMMEDIATE takes the WAL write lock; it is held until COMMIT.
{ echo 'BEGIN IMMEDIATE;'; echo 'CREATE TABLE IF NOT EXISTS lock_holder(x);'; sleep 4; echo 'COMMIT;'; } |
	sqlite3 "$db" &
holder=$!
on_exit "kill $holder 2>/dev/null"
sleep 0.5
locked_at=$(db_count self_samples)

# while locked: served, counted, nothing written
failing() { [ "$(errs)" -gt "${e0:-0}" ]; }
wait_for 3 failing || fail "no failed commit counted while the database was locked"
req GET /metrics
assert_eq "/metrics while locked" 200 "$HTTP_CODE"
req GET '/api/v1/events?collector=self&limit=5'
assert_eq "history while locked" 200 "$HTTP_CODE"
assert_eq "rows served while locked" 5 "$(jq '.data | length' <<<"$BODY")"
req GET '/api/v1/self/samples?limit=5'
assert_eq "self/samples while locked" 200 "$HTTP_CODE"
assert_eq "self/samples rows served while locked" 5 "$(jq '.data | length' <<<"$BODY")"
req GET /healthz
assert_eq "/healthz while locked" 200 "$HTTP_CODE"
assert_eq "rows written while locked" "$locked_at" "$(db_count self_samples)"
grep -q "rows kept in the queue" "$T/agent.log" || fail "no log line about the locked database"

wait "$holder" || fail "the lock holder failed"
resumed() { [ "$(db_count self_samples)" -gt $((locked_at + 30)) ]; }
wait_for 15 resumed || fail "writing did not resume after the lock was released"
assert_eq "rows dropped (insert errors)" 0 "$(metric_sum sysobs_events_dropped_total 'reason="insert_error"')"
assert_eq "rows dropped (queue full)" 0 "$(metric_sum sysobs_events_dropped_total 'reason="queue_full"')"
assert_ge "sysobs_events_dropped_total series" 2 \
	"$(api GET /metrics | grep -c '^sysobs_events_dropped_total{.*reason="\(insert_error\|queue_full\)"')"
stop_agent

# every 100 ms sample is there: no gap much above the interval
gap_ms=$(sqlite3 "$db" 'SELECT max(ts - prev) / 1000000 FROM
	(SELECT ts, lag(ts) OVER (ORDER BY id) AS prev FROM self_samples)')
[ "$gap_ms" -lt 1000 ] || fail "history has a hole of $gap_ms ms around the lock"
assert_eq "integrity after the lock" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
pass "a 4 s write lock: served throughout, $(( $(db_count self_samples) - locked_at )) rows after it, largest gap $gap_ms ms"
