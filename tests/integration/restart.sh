#!/usr/bin/env bash
# History survives SIGTERM (flushed) and kill -9 (every committed batch is
# there, the database passes integrity_check).
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3
need_cmd jq

# Bad start-up input fails fast with exit 2, before any collector loads or
# attaches anything: an endless config (/dev/zero), a FIFO nobody writes,
# a malformed or unbindable --listen.
refused_fast() { # WHAT MAX_MS ARGS...: lib.sh's refused, within MAX_MS, no collector loaded
	refused "$1" "" --db "$T/refused.db" "${@:3}"
	[ "$REFUSED_MS" -lt "$2" ] || fail "$1: exit took $REFUSED_MS ms (limit $2)"
	! grep -Eq '(drops|mptcp|self|ifs|cachefiles): ' "$T/refused.out" ||
		fail "$1: a collector started before the refusal: $(cat "$T/refused.out")"
	REFUSED_ALL="$REFUSED_ALL $1=${REFUSED_MS}ms"
}
REFUSED_ALL=
refused_fast "--config /dev/zero" 1500 --config /dev/zero
grep -q 'larger than 1048576 bytes' "$T/refused.out" || fail "/dev/zero: $(cat "$T/refused.out")"
mkfifo "$T/fifo"
refused_fast "--config FIFO without writer" 2000 --config "$T/fifo"
refused_fast "--listen 1.2.3:99" 2000 --listen 1.2.3:99
refused_fast "--listen 127.0.0.1:99999" 2000 --listen 127.0.0.1:99999
refused_fast "--listen 192.0.2.1:9559 (not local)" 2000 --listen 192.0.2.1:9559
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"$T/busy_port" &
busy=$!
on_exit "kill $busy 2>/dev/null"
wait_for 5 test -s "$T/busy_port" || fail "no busy port"
refused_fast "--listen on a port in use" 2000 --listen "127.0.0.1:$(cat "$T/busy_port")"
kill "$busy"

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
pass "history survives SIGTERM and kill -9 ($after_term, then $after_kill rows); refused with exit 2:$REFUSED_ALL"
