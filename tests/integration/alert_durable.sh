#!/usr/bin/env bash
# integration.alert_durable: the IFS alert push (exporters/alertmanager*.c,
# on the exporters' turn loop) keeps what it has not delivered across a
# kill -9, and says so where hosts are checked. Against the real
# prometheus-alertmanager:
#  1. Alertmanager down (nothing on its port), a core fails its scan: the
#     push's destination "alertmanager" in GET /api/v1/export holds 1
#     pending alert with the connection error, /readyz (?stuck_after=1s)
#     and `sysobs status` name it stuck. kill -9 the agent, start it again
#     (still pending), start Alertmanager: the alert arrives once, with the
#     startsAt of the failed scan; the destination is ready again.
#  2. Alertmanager cut off (an nftables table of the test's own resets
#     every TCP segment to its port: it keeps the alert, the push fails),
#     the core passes: the resolve is pending; kill -9 the agent, start it
#     again, delete the table: the alert is resolved there within seconds
#     (before, the resolve died with the agent and Alertmanager kept the
#     alert active until its resolve_timeout, 5 min). Neither SIGSTOP nor a
#     drop rule: the kernel queues requests for a stopped process, and keeps
#     retransmitting what a killed agent wrote on its kept-alive
#     connection, both delivered once the way is open again.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-ifs-it" # a FUSE mount inside $T (see ifs.sh)
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq
need_cmd prometheus-alertmanager
need_cmd nft
CLI=${SYSOBS_CLI:-$SYSOBS_BUILD/api/cli/sysobs}

AM_PORT=$(free_port) || fail "no free loopback port for alertmanager"
ifs_fake_start device.0.core.1=fail,pass
write_base_config agent.sysfs_root="$T/mnt" http.admin=true agent.hostname=durable-host \
	collector.ifs.poll=100ms collector.ifs.alert_resend=2s \
	alertmanager.url="http://127.0.0.1:$AM_PORT" alertmanager.timeout=1s \
	alertmanager.min_backoff=200ms alertmanager.max_backoff=1s \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent

scan_core1() {
	api POST /api/v1/ifs/scans -H 'Content-Type: application/json' \
		-d '{"cores":[{"package":0,"core":1}],"tests":["scan"]}' >"$T/post.json"
	[ "${HTTP_CODE:0:1}" = 2 ] || fail "POST /api/v1/ifs/scans: $HTTP_CODE $(cat "$T/post.json")"
}
am_dest() { api GET /api/v1/export | jq -c '.data[] | select(.name == "alertmanager")'; }
pending() { [ "$(am_dest | jq -r '.pending_rows | tonumber')" = "$1" ] 2>/dev/null; }
kill9_restart() {
	kill -9 "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
	start_agent
}

# ---- 1. a failed core while Alertmanager is down ----
scan_core1
one_pending() { pending 1 && [ -n "$(am_dest | jq -r '.last_error')" ]; }
wait_for 20 one_pending || fail "GET /api/v1/export: no pending alert: $(api GET /api/v1/export)"
failed_time() { api GET "/api/v1/ifs/scans?limit=10&package=0&core=1&result=fail" | jq -r '.data[0].time // empty'; }
has_failed_row() { [ -n "$(failed_time)" ]; }
wait_for 10 has_failed_row || fail "no failed scan row: $(api GET /api/v1/ifs/scans)"
starts_ms=$(date -d "$(failed_time)" +%s%3N)
stuck() {
	req GET "/readyz?stuck_after=1s"
	[ "$HTTP_CODE" = 503 ] && jq -e '.reasons | any(startswith("alertmanager: stuck: 1 alerts pending"))' \
		<<<"$BODY" >/dev/null
}
wait_for 15 stuck || fail "/readyz does not say the alert push is stuck: $HTTP_CODE $BODY"
jq -e '.exports[] | select(.name == "alertmanager") | .format == "alertmanager" and
	(.url | startswith("http://127.0.0.1:'"$AM_PORT"'")) and (.last_error | test("onnect|refused"))' \
	<<<"$BODY" >/dev/null || fail "/readyz: the alert push's status: $BODY"
"$CLI" -s "http://127.0.0.1:$PORT" status --stuck-after=1s >"$T/status.out" 2>&1
rc=$?
assert_eq "sysobs status exit while the push is stuck" 3 "$rc"
grep -q '^not ready: alertmanager: stuck: ' "$T/status.out" || fail "sysobs status: $(cat "$T/status.out")"
# the same in the push's series
am_m() { metric "sysobs_ifs_$1{destination=\"alertmanager\"${2:-}}"; }
assert_eq "sysobs_ifs_alerts_pending while down" 1 "$(am_m alerts_pending)"
assert_eq "sysobs_ifs_alerts_sent_total while down" 0 "$(am_m alerts_sent_total)"
[ "$(am_m alerts_retried_total)" -ge 1 ] 2>/dev/null ||
	fail "sysobs_ifs_alerts_retried_total while down: '$(am_m alerts_retried_total)'"
awk -v v="$(am_m alert_lag_seconds)" 'BEGIN { exit !(v > 0) }' ||
	fail "sysobs_ifs_alert_lag_seconds while down: '$(am_m alert_lag_seconds)'"
pass "Alertmanager down: 1 alert pending in /api/v1/export and sysobs_ifs_alerts_pending, retried $(am_m alerts_retried_total), lag $(am_m alert_lag_seconds) s; /readyz 503 and sysobs status name it stuck"

kill9_restart
wait_for 10 one_pending || fail "after kill -9: the alert is not pending any more: $(am_dest)"
grep -q "1 alert(s) held before the restart" "$T/agent.log" || fail "restart: no alert restored"

alertmanager_start
am_core1() { am_alerts SysobsIFSCoreFailed | jq -c '[.[] | select(.labels.core == "1")]'; }
am_active() { [ "$(am_core1 | jq '[.[] | select(.status.state == "active")] | length')" = "$1" ] 2>/dev/null; }
wait_for 30 am_active 1 || fail "alert not in Alertmanager after the restart: $(am_core1)"
wait_for 10 pending 0 || fail "still pending once delivered: $(am_dest)"
for _ in 1 2 3; do # the push's resends and the collector's restored firing: still one
	al=$(am_core1)
	assert_eq "alerts for core 1 in Alertmanager ($al)" 1 "$(jq length <<<"$al")"
	assert_eq "startsAt (ms) = the failed scan's time ($al)" "$starts_ms" \
		"$(date -d "$(jq -r '.[0].startsAt' <<<"$al")" +%s%3N)"
	sleep 1
done
req GET "/readyz?stuck_after=1s"
assert_eq "/readyz once delivered" 200 "$HTTP_CODE"
jq -e '.exports[] | select(.name == "alertmanager") | .last_success and
	(.rows_sent | tonumber) >= 1 and .last_error == ""' <<<"$BODY" >/dev/null ||
	fail "/readyz: the push's status once delivered: $BODY"
assert_eq "sysobs_ifs_alerts_pending once delivered" 0 "$(am_m alerts_pending)"
assert_eq "sysobs_ifs_alert_lag_seconds once delivered" 0 "$(am_m alert_lag_seconds)"
[ "$(am_m alerts_sent_total)" -ge 1 ] 2>/dev/null ||
	fail "sysobs_ifs_alerts_sent_total once delivered: '$(am_m alerts_sent_total)'"
assert_eq "sysobs_ifs_alerts_dropped_total{reason=refused}" 0 "$(am_m alerts_dropped_total ',reason="refused"')"
awk -v v="$(am_m alert_last_success_timestamp_seconds)" -v now="$(date +%s)" \
	'BEGIN { exit !(v > now - 60 && v <= now + 1) }' ||
	fail "sysobs_ifs_alert_last_success_timestamp_seconds: '$(am_m alert_last_success_timestamp_seconds)'"
pass "kill -9 during the outage: the alert arrives once, startsAt $(jq -r '.[0].startsAt' <<<"$al") as the failed scan's"

# ---- 2. the core passes while Alertmanager is cut off ----
NFT_TABLE=sysobs_alert_durable_$$
cat >"$T/cut.nft" <<NFT
table ip $NFT_TABLE {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr 127.0.0.1 tcp dport $AM_PORT reject with tcp reset
	}
}
NFT
nft -f "$T/cut.nft" || fail "nft -f failed"
on_exit "nft delete table ip $NFT_TABLE 2>/dev/null"
scan_core1
wait_for 20 one_pending || fail "no pending resolve: $(am_dest)"
kill9_restart
wait_for 10 one_pending || fail "after kill -9: the resolve is not pending any more: $(am_dest)"
nft delete table ip "$NFT_TABLE"
wait_for 20 am_active 0 || fail "the alert is still active in Alertmanager: $(am_core1)"
wait_for 10 pending 0 || fail "the resolve is still pending once delivered: $(am_dest)"
stop_agent
pass "kill -9 with a resolve pending: Alertmanager resolves the alert once the agent is back"
