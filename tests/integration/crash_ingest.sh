#!/usr/bin/env bash
# integration.crash_ingest: 20 x kill -9 during heavy ingest. Packet drops
# flood a network namespace of our own (drops_gen, UDP to a closed port)
# while the drops collector samples them at 20000/s and the self collector
# writes every 20 ms. Before each kill the test reads the newest 1000 rows
# through the API (only committed rows are visible there); after it, every
# one of them must be in the database, PRAGMA quick_check must say ok (read
# only, the WAL left as the crash left it), and the agent must start again
# on that database. At the end: the restart time at the final size, then a
# clean stop and a full integrity_check.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd ip
need_cmd jq
need_cmd sqlite3
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
KILLS=${CRASH_KILLS:-20}

NS=sysobs-crash-$$
netns_new "$NS" || skip "cannot create a network namespace"

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.self]
interval = 20ms
[collector.drops]
sample_rate = 20000
sample_burst = 2000
ring_bytes = 1M
[collector.mptcp]
enabled = false
INI
db="$T/sysobs.db"
tables="self_samples drop_samples"

# UDP to a port nobody listens on, paced, for longer than the test runs.
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -n 1000000000 -r 40000 -t 600 >"$T/gen.log" 2>&1 &
gen=$!
on_exit "kill $gen 2>/dev/null; wait $gen 2>/dev/null"

seen_ids() { api GET '/api/v1/events?limit=1000' | jq -r '.data[].id'; }
drop_rows() { api GET '/api/v1/events?collector=drops&limit=1' | jq '.data | length'; }
union=$(for t in $tables; do printf 'SELECT id FROM %s UNION ALL ' "$t"; done)
union=${union% UNION ALL }

lost_total=0 checked=0
for i in $(seq 1 "$KILLS"); do
	start_agent
	if [ "$i" = 1 ]; then
		drops_seen() { [ "$(drop_rows)" -ge 1 ]; }
		wait_for 30 drops_seen || fail "no drop samples written (generator: $(kill -0 $gen 2>/dev/null && echo running || echo exited) $(cat "$T/gen.log"); drops metrics: $(api GET /metrics | grep -E '^sysobs_(packet_drops|drop_samples|events)' | head -5))"
	fi
	sleep "0.$((RANDOM % 8 + 2))"
	seen_ids >"$T/seen" || fail "events not served before kill $i"
	[ -s "$T/seen" ] || fail "no rows seen before kill $i"
	kill -9 "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
	[ -e "$db-wal" ] || fail "kill $i: no WAL left behind (was the stop clean?)"
	qc=$(sqlite3 "file:$db?mode=ro" 'PRAGMA quick_check') || fail "kill $i: cannot read the database"
	assert_eq "quick_check after kill $i" ok "$qc"
	ids=$(paste -sd, "$T/seen")
	lost=$(sqlite3 "file:$db?mode=ro" \
		"SELECT count(*) FROM (SELECT value AS id FROM json_each('[$ids]')) WHERE id NOT IN ($union)")
	[ "$lost" = 0 ] || fail "kill $i: $lost of $(wc -l <"$T/seen") rows the API had shown are gone"
	checked=$((checked + $(wc -l <"$T/seen")))
done
kill "$gen" 2>/dev/null
wait "$gen" 2>/dev/null

# Restart at the final size, after the last unclean stop.
size=$(($(stat -c %s "$db") + $(stat -c %s "$db-wal" 2>/dev/null || echo 0)))
rows=0
for t in $tables; do rows=$((rows + $(sqlite3 "file:$db?mode=ro" "SELECT count(*) FROM $t"))); done
t0=$(date +%s%N)
start_agent
restart_ms=$((($(date +%s%N) - t0) / 1000000))
req GET '/api/v1/events?limit=1'
assert_eq "events after the last restart" 200 "$HTTP_CODE"
stop_agent
[ ! -e "$db-wal" ] || fail "WAL left after a clean stop"
assert_eq "integrity_check after $KILLS kills" ok "$(sqlite3 "$db" 'PRAGMA integrity_check')"
pass "$KILLS x kill -9 under ingest: quick_check ok each time, $checked ids seen through the API all kept; restart at $((size / 1024)) KiB ($rows rows): $restart_ms ms to listening"
