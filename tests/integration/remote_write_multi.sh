#!/usr/bin/env bash
# integration.remote_write_multi: one agent, two remote_write destinations
# (issue 32 item 4), against the real receivers on loopback:
#  1. --check-config checks each [remote_write.NAME] on its own: a bad url
#     and a cursor another destination has are named with their section,
#     exit 2.
#  2. [remote_write] into Prometheus (--web.enable-remote-write-receiver)
#     and [remote_write.vm] into VictoriaMetrics, with an identity of its
#     own (external label via=vm): each gets the agent's history, its
#     metrics labelled destination="remote_write" / "vm", each with its own
#     cursor in the database (cursor.remote_write, cursor.remote_write.vm).
#  3. VictoriaMetrics down for RW_MULTI_OUTAGE_S (12) seconds: Prometheus is
#     not held back (its sender stays caught up, its cursor moves), the vm
#     cursor stands still and its sender retries, /readyz names
#     remote_write.vm stuck and only it; back up, vm catches up.
#  4. over a closed window spanning the outage, every series has as many raw
#     samples in VictoriaMetrics as in Prometheus (no gap), the same series
#     in both but for the via label, which only VictoriaMetrics has.
#  5. drop-ins and SIGHUP, as for [export.NAME]: a bad [remote_write.NAME]
#     in a drop-in is logged with its file:line and changes nothing; a good
#     one is named as added, needing a restart.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd prometheus
need_cmd victoria-metrics
need_cmd jq
need_cmd sqlite3
OUTAGE_S=${RW_MULTI_OUTAGE_S:-12}
DB=$T/sysobs.db

# ---- 1. each destination checked on its own ----
write_base_config storage.snapshot_interval=1s collector.drops.enabled=false \
	collector.cachefiles.enabled=false
cp "$T/sysobsd.ini" "$T/base.ini"
cat >>"$T/sysobsd.ini" <<INI
[remote_write.a]
url = http://127.0.0.1:9/api/v1/write
[remote_write.b]
url = http://127.0.0.1:9/api/v1/write
cursor = remote_write.a
[remote_write.c]
url = ftp://127.0.0.1/x
INI
refused "a bad [remote_write.c]" "[remote_write.c] url" --check-config --config "$T/sysobsd.ini"
grep -qF "[remote_write.b] cursor" "$T/refused.out" ||
	fail "the shared cursor not named: $(cat "$T/refused.out")"
! grep -qE ': \[remote_write\.a\] [a-z_]+ ' "$T/refused.out" ||
	fail "[remote_write.a] is fine but named: $(cat "$T/refused.out")"
pass "check-config: [remote_write.c]'s ftp url and [remote_write.b]'s cursor (remote_write.a's too) refused with their section, exit 2"

# ---- 2. two destinations ----
echo "global: {}" >"$T/rx.yml"
start_prometheus rx "$T/rx.yml" --web.enable-remote-write-receiver
RX=$PROM_PORT
start_victoria
cp "$T/base.ini" "$T/sysobsd.ini"
cat >>"$T/sysobsd.ini" <<INI
[remote_write]
url = http://127.0.0.1:$RX/api/v1/write
send_interval = 200ms
metadata_interval = 0
[remote_write.vm]
url = http://127.0.0.1:$VM_PORT/api/v1/write
send_interval = 200ms
min_backoff = 100ms
max_backoff = 1s
metadata_interval = 0
external_labels = via=vm
INI
start_agent
rw() { metric "sysobs_remote_write_$1{destination=\"$2\"}"; }
cursor() { sqlite3 "file:$DB?mode=ro" "SELECT value FROM store_meta WHERE key = 'cursor.$1'"; }
highest() { rw highest_sent_timestamp_seconds "$1"; }
# caught_up DEST: its newest accepted sample at most 5 s behind now
caught_up() { awk -v h="$(highest "$1")" -v now="$(date +%s)" 'BEGIN { exit !(h > now - 5) }'; }
both_up() { caught_up remote_write && caught_up vm; }
wait_for 30 both_up || fail "not both sending: prometheus $(highest remote_write), vm $(highest vm): $(tail -5 "$T/agent.log")"
for d in remote_write vm; do
	s=$(rw samples_sent_total "$d")
	[ "${s%.*}" -gt 0 ] || fail "sysobs_remote_write_samples_sent_total{destination=$d}: '$s'"
done
grep -q "remote_write.vm.*sending metric history to http://127.0.0.1:$VM_PORT/" "$T/agent.log" ||
	fail "no start line of [remote_write.vm]: $(grep remote_write "$T/agent.log")"
[ -n "$(cursor remote_write)" ] && [ -n "$(cursor remote_write.vm)" ] ||
	fail "cursors: remote_write '$(cursor remote_write)', remote_write.vm '$(cursor remote_write.vm)'"
pass "two destinations: Prometheus and VictoriaMetrics both fed, metrics by destination, cursors cursor.remote_write $(cursor remote_write) and cursor.remote_write.vm $(cursor remote_write.vm)"

# ---- 3. VictoriaMetrics down: Prometheus not held back ----
last_ts() { promq "$RX" 'timestamp(sysobs_build_info)' | jq -r '.[0].value[1] | tonumber * 1000 | floor'; }
has_ts() { [ -n "$(last_ts 2>/dev/null)" ]; }
wait_for 10 has_ts || fail "Prometheus has no sysobs_build_info"
t0=$(($(last_ts) + 500)) # half-way between snapshots (1 s apart)
sleep 2
stop_victoria
retried0=$(rw samples_retried_total vm)
vm_cursor0=$(cursor remote_write.vm)
prom_cursor0=$(cursor remote_write)
sleep "$OUTAGE_S"
caught_up remote_write || fail "Prometheus held back by the vm outage: its newest sample $(highest remote_write), now $(date +%s)"
prom_cursor1=$(cursor remote_write)
vm_cursor1=$(cursor remote_write.vm)
[ "$prom_cursor1" -gt "$prom_cursor0" ] || fail "cursor.remote_write did not move: $prom_cursor0 -> $prom_cursor1"
assert_eq "cursor.remote_write.vm during the outage" "$vm_cursor0" "$vm_cursor1"
retried1=$(rw samples_retried_total vm)
[ "${retried1%.*}" -gt "${retried0%.*}" ] || fail "vm sender did not retry: $retried0 -> $retried1"
pending=$(rw pending_samples vm)
[ "${pending%.*}" -gt 0 ] || fail "no vm samples pending during the outage: '$pending'"
# the status API and /readyz: the vm destination stuck, Prometheus not
req GET '/readyz?stuck_after=8s'
assert_eq "/readyz during the vm outage" 503 "$HTTP_CODE"
jq -e '(.reasons | length == 1 and (.[0] | startswith("remote_write.vm: stuck: ")))
	and (.exports | map(.name) | sort == ["remote_write", "remote_write.vm"])' <<<"$BODY" >/dev/null ||
	fail "/readyz: $BODY"
pass "vm down ${OUTAGE_S} s: Prometheus caught up (cursor $prom_cursor0 -> $prom_cursor1), vm cursor still at $vm_cursor0, $pending samples pending, retried $retried0 -> $retried1"
start_victoria
t_back=$(date +%s)
wait_for 30 caught_up vm || fail "vm did not catch up: pending $(rw pending_samples vm), newest $(highest vm)"
wait_for 5 caught_up remote_write || fail "Prometheus behind: $(highest remote_write)"
pass "vm back: caught up (cursor $(cursor remote_write.vm), pending $(rw pending_samples vm))"

# ---- 4. the same samples in both over a window spanning the outage ----
# The window ends 2.5 s before Prometheus's newest sample, past vm's return:
# waited for (a fixed 3 s ended the window 57 ms before it on a busy run).
window_past_back() {
	t1=$(($(last_ts) - 2500))
	[ "$t1" -gt $((t_back * 1000)) ]
}
wait_for 20 window_past_back || fail "the window [$t0, $t1] ends before vm came back ($t_back)"
past_t1() {
	for d in remote_write vm; do
		awk -v h="$(highest "$d")" -v t="$t1" 'BEGIN { exit !(h * 1000 > t + 1000) }' || return 1
	done
}
wait_for 20 past_t1 || fail "senders not past the window"
curl -sf "http://127.0.0.1:$VM_PORT/internal/force_flush" >/dev/null || fail "VictoriaMetrics force_flush"
rw_counts_vm "$VM_PORT" '{job="sysobs"}' "$t0" "$t1" via >"$T/vm.counts"
rw_counts_prom "$RX" '{job="sysobs"}' "$t0" "$t1" >"$T/prom.counts"
n_prom=$(jq 'length' "$T/prom.counts")
s_prom=$(jq '[.[]] | add' "$T/prom.counts")
s_vm=$(jq '[.[]] | add' "$T/vm.counts")
diffs=$(rw_counts_diff "$T/prom.counts" "$T/vm.counts")
[ "$diffs" = "[]" ] || fail "sample counts per series differ (of $n_prom series; a: Prometheus, b: VictoriaMetrics): $diffs"
assert_ge "series in the window" 100 "$n_prom"
secs=$(((t1 - t0) / 1000))
assert_ge "samples of sysobs_build_info over ${secs} s in VictoriaMetrics (no gap)" "$secs" \
	"$(jq '[to_entries[] | select(.key | test("sysobs_build_info")) | .value] | add' "$T/vm.counts")"
assert_eq "series with via in Prometheus" "[]" "$(promq "$RX" 'count({via!=""})')"
pass "window of ${secs} s over the outage: $n_prom series, $s_prom samples in Prometheus, $s_vm in VictoriaMetrics, equal per series; via=vm only on vm's"

# ---- 5. drop-ins and SIGHUP ----
mkdir -p "$T/sysobsd.d"
printf '[remote_write.bad]\nurl = ftp://127.0.0.1/x\n' >"$T/sysobsd.d/10-rw.ini"
lines=$(wc -l <"$T/agent.log")
kill -HUP "$AGENT_PID"
after() { tail -n +"$((lines + 1))" "$T/agent.log"; }
wait_for 5 eval "after | grep -q 'SIGHUP: config not valid; nothing changed'" ||
	fail "bad drop-in: no 'nothing changed': $(after)"
after | grep -qF "SIGHUP: $T/sysobsd.d/10-rw.ini:2: [remote_write.bad] url" ||
	fail "bad drop-in not named: $(after)"
printf '[remote_write.new]\nurl = http://127.0.0.1:%s/api/v1/write\n' "$VM_PORT" >"$T/sysobsd.d/10-rw.ini"
lines=$(wc -l <"$T/agent.log")
kill -HUP "$AGENT_PID"
wait_for 5 eval "after | grep -q 'SIGHUP: reloaded'" || fail "good drop-in: no reload: $(after)"
after | grep -qF 'SIGHUP: [remote_write.new] added: needs a restart' ||
	fail "the new destination not named: $(after)"
after | grep -q 'SIGHUP: reloaded .*; 1 change needs a restart' || fail "restart count: $(after)"
req GET /healthz
assert_eq "healthz after the reloads" 200 "$HTTP_CODE"
stop_agent
pass "SIGHUP: a bad [remote_write.bad] drop-in named at its file:line, nothing changed; [remote_write.new] named as added, needing a restart"
