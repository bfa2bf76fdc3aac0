#!/usr/bin/env bash
# History survives SIGTERM (flushed) and kill -9 (every committed batch is
# there, the database passes integrity_check).
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3
need_cmd jq

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.self]
interval = 100ms
INI
db="$T/sysobs.db"

start_agent
rows_api() { api GET '/api/v1/events?collector=self&limit=1000' | jq '.data | length'; }
enough() { [ "$(rows_api)" -ge 10 ]; }
wait_for 15 enough || fail "self rows did not reach 10"
stop_agent
after_term=$(sqlite3 "$db" 'SELECT count(*) FROM self_samples')
assert_ge "rows after SIGTERM" 10 "$after_term"
assert_eq "integrity after SIGTERM" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
max_id=$(sqlite3 "$db" 'SELECT max(id) FROM self_samples')

start_agent
more() { [ "$(rows_api)" -ge $((after_term + 10)) ]; }
wait_for 15 more || fail "rows did not grow after restart"
# New ids continue the sequence; nothing written before the restart is gone.
min_new=$(api GET '/api/v1/events?collector=self&limit=1' | jq '.data[0].id | tonumber')
[ "$min_new" -gt "$max_id" ] || fail "ids restarted: $min_new <= $max_id"
assert_eq "old rows kept" "$after_term" "$(sqlite3 "$db" "SELECT count(*) FROM self_samples WHERE id <= $max_id")"

# Everything the API has shown was committed; after kill -9 it must be there.
seen=$(rows_api)
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
AGENT_PID=
assert_eq "integrity after kill -9" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
after_kill=$(sqlite3 "$db" 'SELECT count(*) FROM self_samples')
assert_ge "rows after kill -9 (API had shown $seen)" "$seen" "$after_kill"

# And the agent opens that database again.
start_agent
stop_agent
pass "history survives SIGTERM and kill -9 ($after_term, then $after_kill rows)"
