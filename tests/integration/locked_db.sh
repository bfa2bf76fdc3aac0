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
{ echo '.timeout 2000'; echo 'BEGIN IMMEDIATE;'; echo 'CREATE TABLE IF NOT EXISTS lock_holder(x);'; sleep 4; echo 'COMMIT;'; } |
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
rows_lock=$(db_count self_samples)

# SIGTERM while another process holds the lock (for longer than the busy
# timeout times the retries): the agent exits 0 within 2 s, and says how
# many queued rows it could not write. The default busy timeout (5 s) this
# time: 3 attempts of 5 s each took 15.7 s before the stop had a deadline.
sed -i '/^busy_timeout/d' "$T/sysobsd.ini"
start_agent
wait_for 15 some || fail "self rows did not start after the restart"
{ echo '.timeout 2000'; echo 'BEGIN IMMEDIATE;'; echo 'CREATE TABLE IF NOT EXISTS lock_holder(x);'; sleep 10; echo 'COMMIT;'; } |
	sqlite3 "$db" &
holder2=$!
on_exit "kill $holder2 2>/dev/null"
e1=$(errs)
failing2() { [ "$(errs)" -gt "${e1:-0}" ]; }
wait_for 8 failing2 || fail "no failed commit counted under the second lock"
t0=$(date +%s%N)
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
rc=$?
term_ms=$((($(date +%s%N) - t0) / 1000000))
AGENT_PID=
assert_eq "exit status after SIGTERM with the database locked" 0 "$rc"
[ "$term_ms" -lt 2000 ] || fail "SIGTERM with the database locked took $term_ms ms (limit 2000)"
grep -q 'rows not written (database is locked' "$T/agent.log" ||
	fail "the rows left unwritten at SIGTERM were not logged"
lost=$(grep -o 'closing with [0-9]* rows not written' "$T/agent.log" | tail -1 | grep -o '[0-9]*')
kill "$holder2" 2>/dev/null
wait "$holder2" 2>/dev/null
assert_eq "integrity after SIGTERM under a lock" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"

pass "a 4 s write lock: served throughout, $((rows_lock - locked_at)) rows after it, largest gap $gap_ms ms; SIGTERM under a 10 s lock: exit 0 in $term_ms ms, $lost queued rows logged as not written"
