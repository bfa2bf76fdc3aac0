#!/usr/bin/env bash
# integration.export_config_change: an event export's cursor follows its
# config. One destination, one cursor over its tables:
#  1. tables = self_samples, drop_samples: both sent;
#  2. tables = drop_samples: the cursor moves with the drop rows past the
#     self rows written meanwhile (said in the log);
#  3. tables = both again: those self rows are counted, exactly, in
#     sysobs_export_rows_dropped_total{reason="skipped"} (said in the log);
#  4. a changed url: the cursor is kept, and the log says so and how to
#     start a new one from the oldest retained row.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd sqlite3
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
DPORT=$((40000 + RANDOM % 9000))

python3 "$SYSOBS_SRC/tests/tools/rw_fake_receiver.py" "$T/rx.port" "$T/rx.log" >"$T/rx.out" 2>&1 &
on_exit "kill $!"
wait_for 10 test -s "$T/rx.port" || fail "the receiver did not start"
RP=$(cat "$T/rx.port")
db="$T/sysobs.db"
config() { # TABLES [HOST]
	write_base_config collector.self.interval=100ms collector.mptcp.enabled=false \
		collector.cachefiles.enabled=false collector.ifs.enabled=false \
		collector.drops.sample_rate=20000 collector.drops.sample_burst=20000 \
		export.x.format=otlp "export.x.url=http://${2:-127.0.0.1}:$RP/v1/logs" \
		"export.x.tables=$1" export.x.send_interval=1s export.x.min_backoff=100ms export.x.max_backoff=300ms
}
cursor() { sqlite3 "$db" "SELECT value FROM store_meta WHERE key = 'cursor.export.x'"; }
maxid() { sqlite3 "file:$db?mode=ro" "SELECT coalesce(max(id), 0) FROM $1"; }
drops() { # N: that many drops, all recorded
	local n0
	n0=$(sqlite3 "file:$db?mode=ro" "SELECT count(*) FROM drop_samples WHERE dport = $DPORT")
	"$GEN" udp -d 127.0.0.1 -p "$DPORT" -n "$1" >/dev/null
	_have() { [ "$(sqlite3 "file:$db?mode=ro" "SELECT count(*) FROM drop_samples WHERE dport = $DPORT")" -ge $((n0 + $1)) ]; }
	wait_for 20 _have "$1" || fail "the drops were not recorded"
}
sent_past() { # ID: the export's cursor (in /api/v1/export) reached ID
	_past() { [ "$(api GET /api/v1/export | jq -r '.data[0].cursor | tonumber')" -ge "$1" ]; }
	wait_for 20 _past "$1" || fail "export did not reach row $1: $(api GET /api/v1/export)"
}
skipped() { metric 'sysobs_export_rows_dropped_total{destination="x",reason="skipped"}'; }

# 1. both tables
config self_samples,drop_samples
start_agent
drops 20
sent_past "$(maxid drop_samples)"
assert_eq "skipped at first" 0 "$(skipped)"
stop_agent
c1=$(cursor)

# 2. drop_samples only: self rows accrue, the drop rows move the cursor past them
config drop_samples
start_agent
grep -q 'table self_samples is no longer exported' "$T/agent.log" || fail "the narrowing is not logged"
sleep 2
drops 20
sent_past "$(maxid drop_samples)"
stop_agent
c2=$(cursor)
want=$(sqlite3 "$db" "SELECT count(*) FROM self_samples WHERE id > $c1 AND id <= $c2")
assert_ge "self rows passed by while not exported" 5 "$want"

# 3. both again: what was passed by is counted, exactly
config self_samples,drop_samples
start_agent
assert_eq "rows counted skipped" "$want" "$(skipped)"
grep -q "table self_samples is exported again: $want of its rows" "$T/agent.log" ||
	fail "the widening is not logged"
more=$(maxid self_samples)
sent_past "$more"
stop_agent
c3=$(cursor)

# 4. another url: the cursor is kept, and said
config self_samples,drop_samples localhost
start_agent
grep -q "the destination changed (was: otlp http://127.0.0.1:$RP/v1/logs): the cursor stays at row $c3" \
	"$T/agent.log" || fail "the destination change is not logged: $(grep export.x "$T/agent.log" | tail -3)"
assert_eq "skipped after a url change" 0 "$(skipped)"
stop_agent
pass "narrowed then widened: $want self rows passed by, counted skipped exactly; url changed: cursor kept at $c3, logged"
