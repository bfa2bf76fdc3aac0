#!/usr/bin/env bash
# integration.export_health: an export nobody sees failing is seen where
# hosts are checked (issue 32 item 3). Three scripted receivers on loopback:
# remote_write and an OTLP event export both answer 503 for OUTAGE_S
# seconds (a receiver outage), a second OTLP export refuses every batch
# with 400 as long (rows lost for good). With a small threshold (--stuck-after,
# ?stuck_after=): `sysobs status` exits 3 naming remote_write stuck, the
# OTLP export stuck and the refusing one (400 for as long) losing rows, GET /readyz answers
# 503 with the same reasons, /healthz stays 200 (liveness); once the
# receivers take data again, status exits 0 and /readyz answers 200. A bad
# threshold is a clear usage error, not "ready".
source "$(dirname "$0")/lib.sh"
need_cmd jq
need_cmd python3

CLI=${SYSOBS_CLI:-$SYSOBS_BUILD/api/cli/sysobs}
OUTAGE_S=${EXPORT_HEALTH_OUTAGE_S:-20}
STUCK=4s
receiver_start rw -- "503/$OUTAGE_S"
receiver_start otlp -- "503/$OUTAGE_S"
receiver_start lossy -- "400/$OUTAGE_S"

write_base_config storage.snapshot_interval=1s collector.self.interval=200ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false collector.ifs.enabled=false \
	"remote_write.url=http://127.0.0.1:$(cat "$T/rw.port")/api/v1/write" \
	remote_write.metadata_interval=0 remote_write.min_backoff=100ms remote_write.max_backoff=500ms \
	export.otlp.format=otlp "export.otlp.url=http://127.0.0.1:$(cat "$T/otlp.port")/v1/logs" \
	export.otlp.tables=self_samples export.otlp.send_interval=200ms \
	export.otlp.min_backoff=100ms export.otlp.max_backoff=500ms \
	export.lossy.format=otlp "export.lossy.url=http://127.0.0.1:$(cat "$T/lossy.port")/v1/logs" \
	export.lossy.tables=self_samples export.lossy.send_interval=200ms
start_agent
status() { "$CLI" -s "http://127.0.0.1:$PORT" "$@" status >"$T/status.out" 2>"$T/status.err"; }

# A bad threshold: a usage error with the reason, exit 1 (not 0, not 3).
status --stuck-after=soon
assert_eq "status --stuck-after=soon: exit" 1 "$?"
grep -q "stuck_after: 'soon' is not a positive duration" "$T/status.err" ||
	fail "status --stuck-after=soon: $(cat "$T/status.err")"

# The outage: not ready within the threshold (and a few turns), each
# destination named with why.
t0=$(date +%s)
not_ready() {
	status --stuck-after=$STUCK
	[ $? = 3 ] && grep -q '^not ready: remote_write: stuck: ' "$T/status.out" &&
		grep -q '^not ready: otlp: stuck: ' "$T/status.out" &&
		grep -q '^not ready: lossy: losing rows: [1-9]' "$T/status.out"
}
wait_for $((OUTAGE_S - 2)) not_ready ||
	fail "status during the outage: $(cat "$T/status.out" "$T/status.err")"
t_seen=$(($(date +%s) - t0))
jq -e 'select(.status == 400)' "$T/lossy.log" >/dev/null || fail "the lossy receiver refused nothing"
grep -q "answered 503" "$T/status.out" || fail "status names no last error: $(cat "$T/status.out")"
req GET "/readyz?stuck_after=$STUCK"
assert_eq "/readyz during the outage" 503 "$HTTP_CODE"
jq -e '.status == "not ready" and
	(.reasons | any(startswith("remote_write: stuck: ")) and any(startswith("otlp: stuck: "))) and
	(.exports | map(.name) | sort == ["lossy", "otlp", "remote_write"]) and
	(.exports[] | select(.name == "remote_write") | (.pending_rows | tonumber) > 0 and .lag_seconds > 4)' \
	<<<"$BODY" >/dev/null || fail "/readyz during the outage: $BODY"
jq -e '.exports[] | select(.name == "lossy") | (.rows_lost | tonumber) > 0 and .last_loss' \
	<<<"$BODY" >/dev/null || fail "/readyz: lossy destination counts no loss: $BODY"
req GET /healthz
assert_eq "/healthz (liveness) during the outage" 200 "$HTTP_CODE"
# the agent's default threshold (5 min): not stuck yet, but losing rows
req GET /readyz
assert_eq "/readyz with the default threshold: reasons" '["lossy"] 300' \
	"$(jq -c '[.reasons[] | split(":")[0]]' <<<"$BODY") $(jq .stuck_after_seconds <<<"$BODY")"
echo "MEASURE: not ready seen ${t_seen} s after the start (outage ${OUTAGE_S} s, stuck_after $STUCK)"

# Recovery: everything delivered again -> exit 0 and 200.
ready() { status --stuck-after=$STUCK && ! grep -q 'not ready' "$T/status.out"; }
wait_for $((OUTAGE_S + 30)) ready || fail "status after the outage: $(cat "$T/status.out" "$T/status.err")"
req GET "/readyz?stuck_after=$STUCK"
assert_eq "/readyz after the outage" 200 "$HTTP_CODE"
jq -e '.status == "ready" and (.reasons // [] | length == 0) and
	(.exports[] | select(.name == "remote_write") | .last_success and (.rows_sent | tonumber) > 0)' \
	<<<"$BODY" >/dev/null || fail "/readyz after the outage: $BODY"
stop_agent
pass "outage of ${OUTAGE_S} s: status exit 3 naming remote_write, otlp (stuck) and lossy (losing rows) after ${t_seen} s, /readyz 503, /healthz 200; then exit 0 and 200"
