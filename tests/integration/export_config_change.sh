#!/usr/bin/env bash
# integration.export_config_change: an event export's cursor follows its
# config, checked against what the OTLP receiver got (every body decoded by
# the OpenTelemetry implementation, tests/tools/otlp/decode.mjs):
#  1. tables = self_samples, drop_samples: both sent;
#  2. tables = drop_samples: the cursor moves with the drop rows past the
#     self rows written meanwhile (said in the log);
#  3. tables = both again: those self rows are SENT (a backfill from where
#     the table was taken out, before the rows after the cursor), none
#     counted skipped (before: counted skipped, never sent);
#  4. another url, start_from at its default (oldest): the receiver gets
#     every retained row again (before: the cursor stayed);
#  5. another url with start_from = keep (a receiver answering 503): the
#     cursor stays, said in the log;
#  6. back, start_from = now: the rows after the cursor are passed by and
#     counted skipped, exactly, and the receiver gets none of them.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd sqlite3
need_cmd node
need_cmd jq
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
DPORT=$((40000 + RANDOM % 9000))
"$SYSOBS_SRC/scripts/deps_node.sh" >"$T/deps.log" 2>&1 ||
	fail "scripts/deps_node.sh failed: $(tail -n 20 "$T/deps.log")"

mkdir -p "$T/bodies" "$T/b2"
receiver_start rx --save "$T/bodies"
receiver_start rx2 --save "$T/b2" -- 503/600
RP=$(cat "$T/rx.port") RP2=$(cat "$T/rx2.port")
db="$T/sysobs.db"
config() { # TABLES [URL [KEY=VALUE...]]
	local tables=$1 url=${2:-http://127.0.0.1:$RP/v1/logs}
	shift 2 || shift
	write_base_config collector.self.interval=100ms collector.mptcp.enabled=false \
		collector.cachefiles.enabled=false collector.ifs.enabled=false \
		collector.drops.sample_rate=20000 collector.drops.sample_burst=20000 \
		export.x.format=otlp "export.x.url=$url" "export.x.tables=$tables" \
		export.x.send_interval=1s export.x.min_backoff=100ms export.x.max_backoff=300ms "$@"
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
	wait_for 30 _past "$1" || fail "export did not reach row $1: $(api GET /api/v1/export)"
}
skipped() { metric 'sysobs_export_rows_dropped_total{destination="x",reason="skipped"}'; }
# requests the receiver answered so far
served() { wc -l <"$T/rx.log"; }
# received FROM: "table id" of every record in the bodies after request FROM
received() {
	local n
	for ((n = $1 + 1; n <= $(served); n++)); do
		[ -f "$T/bodies/$n.ids" ] ||
			{ gzip -dc "$T/bodies/$n.bin" | node "$SYSOBS_SRC/tests/tools/otlp/decode.mjs" |
				jq -r '.[] | "\(.attributes["sysobs.table"].stringValue) \(.attributes["sysobs.id"].intValue)"' \
					>"$T/bodies/$n.tmp" && mv "$T/bodies/$n.tmp" "$T/bodies/$n.ids"; } ||
			echo "decode.mjs refused body $n" >&2
		cat "$T/bodies/$n.ids" 2>/dev/null
	done | sort -u
}
# rows SQL [TABLE...]: "table id" of the database's rows WHERE SQL (both tables)
rows() {
	local sql=$1 t
	shift
	for t in "${@:-self_samples drop_samples}"; do
		for t in $t; do
			sqlite3 "file:$db?mode=ro" "SELECT '$t ' || id FROM $t WHERE $sql"
		done
	done | sort -u
}
# got FROM SQL [TABLE]: the receiver has, after request FROM, every row WHERE SQL
got() { [ -z "$(comm -23 <(rows "$2" ${3:-}) <(received "$1"))" ]; }

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
grep -q "table self_samples is no longer exported: its rows after row $c1 are passed by" \
	"$T/agent.log" || fail "the narrowing is not logged"
sleep 2
drops 20
sent_past "$(maxid drop_samples)"
stop_agent
c2=$(cursor)
want=$(sqlite3 "$db" "SELECT count(*) FROM self_samples WHERE id > $c1 AND id <= $c2")
assert_ge "self rows passed by while not exported" 5 "$want"

# 3. both again: what was passed by is sent, none skipped
r3=$(served)
config self_samples,drop_samples
start_agent
grep -q "table self_samples is exported again: $want of its rows written while it was not (rows $c1 to $c2) are sent first" \
	"$T/agent.log" || fail "the widening is not logged: $(grep export.x "$T/agent.log" | tail -3)"
wait_for 30 got "$r3" "id > $c1 AND id <= $c2" self_samples ||
	fail "the self rows written while the table was out did not arrive: $(comm -23 <(rows "id > $c1 AND id <= $c2" self_samples) <(received "$r3") | head -3)"
wait_for 20 grep -q "table self_samples: its rows written while it was not exported are sent (0 deleted" \
	"$T/agent.log" || fail "the backfill's end is not logged"
sent_past "$(maxid self_samples)"
assert_eq "rows counted skipped" 0 "$(skipped)"
stop_agent
c3=$(cursor)

# 4. another url (localhost), start_from at its default: every retained row again
r4=$(served)
config self_samples,drop_samples "http://localhost:$RP/v1/logs"
start_agent
grep -q "the destination changed (was: otlp http://127.0.0.1:$RP/v1/logs): the cursor moves from row $c3 to the oldest retained row (start_from = oldest)" \
	"$T/agent.log" || fail "the destination change is not logged: $(grep export.x "$T/agent.log" | tail -3)"
wait_for 30 got "$r4" "id <= $c3" ||
	fail "the retained rows did not all arrive again: $(comm -23 <(rows "id <= $c3") <(received "$r4") | wc -l) missing"
assert_eq "skipped after a url change (oldest)" 0 "$(skipped)"
stop_agent
c4=$(cursor)

# 5. another url, start_from = keep, a receiver answering 503: the cursor stays
config self_samples,drop_samples "http://127.0.0.1:$RP2/v1/logs" export.x.start_from=keep
start_agent
grep -q "the destination changed (was: otlp http://localhost:$RP/v1/logs): the cursor stays at row $c4 (start_from = keep)" \
	"$T/agent.log" || fail "start_from = keep is not logged: $(grep export.x "$T/agent.log" | tail -3)"
wait_for 20 test -s "$T/rx2.log" || fail "the second receiver got nothing"
sleep 1
stop_agent
assert_eq "cursor after a keep to a receiver answering 503" "$c4" "$(cursor)"

# 6. back, start_from = now: the rows after the cursor are passed by, counted
r6=$(served)
config self_samples,drop_samples "http://localhost:$RP/v1/logs" export.x.start_from=now
start_agent
line=$(grep -o "the cursor moves from row $c4 to row [0-9]* (start_from = now); [0-9]* rows are skipped" "$T/agent.log") ||
	fail "start_from = now is not logged: $(grep export.x "$T/agent.log" | tail -3)"
to=$(awk '{ print $9 }' <<<"$line")
n6=$(awk '{ print $13 }' <<<"$line")
assert_eq "rows skipped (the log)" "$(rows "id > $c4 AND id <= $to" | wc -l)" "$n6"
assert_ge "rows skipped" 1 "$n6"
assert_eq "rows skipped (the counter)" "$n6" "$(skipped)"
sent_past "$((to + 1))"
assert_eq "skipped rows the receiver got" "" \
	"$(comm -12 <(rows "id > $c4 AND id <= $to") <(received "$r6") | head -3)"
stop_agent
pass "narrowed then widened: $want self rows sent afterwards, 0 skipped; url changed: every row up to $c3 sent again (oldest), cursor kept at $c4 (keep), $n6 rows skipped and counted, none received (now)"
