#!/usr/bin/env bash
# integration.retention: [storage] table_retention overrides the global
# retention for the tables it names and for those only (the store applies
# retention at start and every minute); a bad entry is file:line + exit 2.
# An event export destination that could send nothing (its receiver
# refuses connections) counts every row retention deleted before it was
# sent: sysobs_export_rows_dropped_total{reason="deleted"} equals the
# store's own count of deleted rows.
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3

write_base_config
cat >>"$T/sysobsd.ini" <<INI
retention = 7d
[collector.self]
interval = 100ms
[export.dead]
format = otlp
url = http://127.0.0.1:9/v1/logs
tables = self_samples, mptcp_events
send_interval = 1s
min_backoff = 100ms
max_backoff = 200ms
INI
db="$T/sysobs.db"
start_agent
some() { [ "$(db_count self_samples)" -ge 10 ]; }
wait_for 15 some || fail "self rows did not reach 10"
stop_agent
first=$(db_count self_samples)
# a row of another table, as old as the self rows: the global 7d keeps it
now_ns=$(date +%s%N)
sqlite3 "$db" "INSERT INTO mptcp_events(id, ts, netns, type) VALUES (999999999, $((now_ns - 5000000000)), 1, 'CREATED')"
sleep 2

sed -i 's/^retention = 7d$/retention = 7d\ntable_retention = self_samples = 1s , mptcp_events=30d/' "$T/sysobsd.ini"
start_agent
gone() { [ "$(db_count self_samples "ts < $now_ns")" = 0 ]; }
wait_for 10 gone || fail "self rows older than 1 s not deleted: $(db_count self_samples "ts < $now_ns") of $first left"
assert_eq "mptcp row under the global 7d" 1 "$(db_count mptcp_events 'id = 999999999')"
deleted=$(metric 'sysobs_storage_rows_deleted_total{reason="age"}')
assert_ge "rows_deleted_total{reason=age}" "$first" "${deleted%.*}"
exp_deleted() { metric 'sysobs_export_rows_dropped_total{destination="dead",reason="deleted"}'; }
same() { [ "$(exp_deleted)" = "$(metric 'sysobs_storage_rows_deleted_total{reason="age"}')" ]; }
wait_for 10 same || fail "rows deleted unsent: export says $(exp_deleted), the store $(metric 'sysobs_storage_rows_deleted_total{reason="age"}')"
assert_eq "rows the export sent" 0 "$(metric 'sysobs_export_rows_sent_total{destination="dead"}')"
echo "FIGURE: retention deleted $(metric 'sysobs_storage_rows_deleted_total{reason="age"}') rows; the export, which had sent none, counted $(exp_deleted) deleted unsent"
stop_agent

# a table the database does not have, or a bad duration: file:line, exit 2
for bad in 'self_sample=1d' 'self_samples=soon' 'self_samples'; do
	sed -i "s/^table_retention = .*/table_retention = $bad/" "$T/sysobsd.ini"
	line=$(grep -n '^table_retention' "$T/sysobsd.ini" | cut -d: -f1)
	refused "table_retention = $bad" "sysobsd.ini:$line" --config "$T/sysobsd.ini" \
		--port-file "$T/port2"
done
assert_eq "rows of the other table after the refused starts" 1 "$(db_count mptcp_events 'id = 999999999')"
pass "table_retention deleted $first self rows, kept the other table's row, refuses bad entries"
