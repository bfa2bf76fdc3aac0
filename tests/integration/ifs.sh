#!/usr/bin/env bash
# End-to-end test of the ifs collector through the FUSE fake of the Intel
# In-Field Scan driver (tests/fakes/ifs_fake.c):
#  - the scheduler scans every allowed core, one run at a time, never a core
#    with a denied CPU, retries a retryable "untested" and records each run;
#  - a scripted failing core gives the history rows, the metrics, the
#    Prometheus rule firing in `promtool test rules` on the series sysobsd
#    actually exported, and an alert in a real Alertmanager on loopback, which
#    is resolved once a later scan of the core passes;
#  - POST /api/v1/ifs/scans answers scan ids that GET /api/v1/ifs/scans (the
#    generic history route of ifs_scans) finds;
#  - with admin off and the scheduler off (passive mode) a POST is refused
#    with 403, a scan triggered by someone else is recorded unattributed, and
#    an offline core cannot be requested.
# Own temp namespace: the test mounts a FUSE filesystem inside $T, which a
# blanket cleanup of ${TMPDIR:-/tmp}/sysobs-it.* elsewhere must not walk into.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-ifs-it"
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_root
[ -c /dev/fuse ] || skip "no /dev/fuse (FUSE needed for the IFS fake)"
need_cmd fusermount3
need_cmd jq
need_cmd promtool
need_cmd prometheus-alertmanager
need_cmd prometheus
FAKE="$SYSOBS_BUILD/tests/fakes/ifs_fake"
[ -x "$FAKE" ] || skip "ifs_fake not built (libfuse3-dev missing at build time)"

# ---- Alertmanager on a free loopback port ----
alertmanager_start group_wait=1s

# ---- the fake driver: 4 cores (2 packages x 2 cores x 2 threads) ----
# core index = CPU of its first thread: core 0 = cpus 0,4 (package 0 core 0),
# 1 = 1,5 (0/1), 2 = 2,6 (package 1 core 0), 3 = 3,7 (1/1).
ifs_fake_start cpus=8 threads_per_core=2 packages=2 scan_ms=200 devices=0,1,2 \
	device.0.batches=1,2 device.0.core.1=untested:6 device.0.core.2=fail,fail,pass,fail \
	device.0.core.3=untested:1,pass device.1.default=pass \
	device.2.image_version=none device.2.batches=1,2
# -f: the fake stays in the foreground, so $! is the fake itself (issue 12).
assert_eq "\$! of ifs_fake -f" ifs_fake "$(cat "/proc/$FAKE_PID/comm" 2>/dev/null)"

# The fake behaves like the driver: two writers on two devices are
# serialised (the second blocks, it is not refused), an offline or unknown
# CPU is EINVAL, a device without image is EPERM.
M=$T/mnt/devices/virtual/misc
t0=$(date +%s%N)
(echo 0 >"$M/intel_ifs_0/run_test" & echo 4 >"$M/intel_ifs_1/run_test" & wait) ||
	fail "concurrent run_test writes failed"
ms=$((($(date +%s%N) - t0) / 1000000))
assert_ge "two 200 ms runs under one lock take (ms)" 395 "$ms"
assert_eq "status after a run" pass "$(cat "$M/intel_ifs_1/status")"
err=$( (echo 99 >"$M/intel_ifs_0/run_test") 2>&1)
[[ $err == *"Invalid argument"* ]] || fail "cpu 99 not EINVAL: $err"
err=$( (echo 1 >"$M/intel_ifs_2/run_test") 2>&1)
[[ $err == *"not permitted"* ]] || fail "no image not EPERM: $err"
assert_eq "image_version without image" none "$(cat "$M/intel_ifs_2/image_version")"
pass "the fake serialises writers across devices (${ms} ms for two runs), EINVAL, EPERM"
# The kernel removes an offline CPU's topology directory and drops it from
# its siblings' lists (topology_remove_dev, remove_siblinginfo).
C=$T/mnt/devices/system/cpu
echo 0 >"$C/cpu7/online"
[ -e "$C/cpu7/topology" ] && fail "cpu7/topology still there while cpu7 is offline"
assert_eq "siblings of cpu3 with cpu7 offline" 3 "$(cat "$C/cpu3/topology/thread_siblings_list")"
echo 1 >"$C/cpu7/online"
assert_eq "cpu7 back: core_id" 1 "$(cat "$C/cpu7/topology/core_id")"
assert_eq "siblings of cpu3 with cpu7 online" 3,7 "$(cat "$C/cpu3/topology/thread_siblings_list")"
pass "an offline CPU has no topology directory, as in the kernel"

# ---- phase 1: scheduler on, admin on ----
# 4 cores x 2 tests over 8 s: one run a second. cpu 5 is denied, so package
# 0 core 1 is never scanned.
write_base_config "agent.sysfs_root=$T/mnt" agent.hostname=it-host agent.log_level=debug \
	http.admin=true collector.ifs.schedule=true collector.ifs.interval=8s collector.ifs.deny_cpus=5 \
	collector.ifs.retry_backoff=300ms collector.ifs.poll=200ms \
	"collector.ifs.alertmanager_url=http://127.0.0.1:$AM_PORT" collector.ifs.alert_labels=team=hw \
	collector.ifs.alert_resend=2s collector.drops.enabled=false collector.cachefiles.enabled=false \
	collector.mptcp.enabled=false
start_agent

# ---- a real Prometheus scrapes the agent and evaluates deploy/'s rules ----
# (no alerting section: the agent's own push is what Alertmanager sees here)
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [$SYSOBS_SRC/deploy/prometheus/sysobs-alerts.yml]
scrape_configs:
  - job_name: sysobs
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus ifs "$T/prometheus.yml"
prom() { curl -sS -g --max-time 5 "http://127.0.0.1:$PROM_PORT$1"; }
# prom_alert: the firing SysobsIFSCoreFailed alerts for package 1 core 0
prom_alert() {
	prom /api/v1/alerts | jq -c '[.data.alerts[] | select(.labels.alertname == "SysobsIFSCoreFailed"
		and .labels.package == "1" and .labels.core == "0" and .state == "firing")]'
}

# History rows (IfsScanList: rows in .data, newest first).
rows() { api GET "/api/v1/ifs/scans?limit=1000$1"; }
# post BODY: POST /api/v1/ifs/scans as JSON, body on stdout, status in HTTP_CODE.
post() { api POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d "$1"; }
fail_row() { [ "$(rows '&package=1&core=0&result=fail' | jq '.data | length')" -ge 1 ]; }
wait_for 20 fail_row || fail "no failed scan row for package 1 core 0"

row=$(rows '&package=1&core=0&result=fail' | jq -c '.data[-1]')
assert_eq "failed row test" scan "$(jq -r .test <<<"$row")"
assert_eq "failed row cpu" 2 "$(jq -r .cpu <<<"$row")"
assert_eq "failed row details" 0x8000000000000f05 "$(jq -r .details <<<"$row")"
assert_eq "failed row error_name" signature_error "$(jq -r .error_name <<<"$row")"
assert_eq "failed row requested_by" scheduler "$(jq -r .requested_by <<<"$row")"
assert_eq "failed row image_version" 0x8001 "$(jq -r .image_version <<<"$row")"
assert_eq "failed row batch" 1 "$(jq -r .batch <<<"$row")"
assert_eq "failed row chunk" 5 "$(jq -r .chunk_num <<<"$row")"
assert_ge "failed row duration_ns" 190000000 "$(jq -r .duration_ns <<<"$row")"
# 0x8000000000000f05: chunk 5, stop index 15, signature error (bit 63).
assert_eq "failed row decoded scan fields" '[15,false,true]' \
	"$(jq -c '[.chunk_stop_index, .control_error, .signature_error]' <<<"$row")"
assert_eq "failed row: no other test's fields" '[]' \
	"$(jq -c '[keys[] | select(IN("array_bitmask","array_bank","ctrl_result","bundle_idx","pgm_idx","sbaf_status","test_fail","decoded","ts"))]' <<<"$row")"
[[ $(jq -r .id <<<"$row") =~ ^[0-9]+$ ]] && [ "$(jq -r '.id | type' <<<"$row")" = string ] ||
	fail "row id is not an int64 string: $row"
[[ $(jq -r .time <<<"$row") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z$ ]] ||
	fail "row time is not RFC 3339 with 9 fractional digits: $row"
arr=$(rows '&test=array&result=pass' | jq -c '.data[0] | [.array_bitmask, .array_bank, .ctrl_result, .chunk_num]')
assert_eq "array row decoded fields" '[0,0,false,null]' "$arr"
pass "a scripted failing core gives a decoded history row"

assert_eq "core_status" 1 "$(metric 'sysobs_ifs_core_status{test="scan",package="1",core="0"}')"
assert_eq "failing_cores" 1 "$(metric 'sysobs_ifs_failing_cores{test="scan"}')"
assert_ge "scans_total fail" 1 "$(metric 'sysobs_ifs_scans_total{test="scan",result="fail"}')"
assert_eq "image_loaded" 1 "$(metric 'sysobs_ifs_image_loaded{test="scan"}')"
assert_eq "image_loaded sbaf" 0 "$(metric 'sysobs_ifs_image_loaded{test="sbaf"}')"
ts=$(metric 'sysobs_ifs_core_last_scan_timestamp_seconds{test="scan",package="1",core="0"}')
[ -n "$ts" ] && [ "${ts%%.*}" -ge $(($(date +%s) - 60)) ] || fail "last scan timestamp '$ts'"
pass "metrics name the failing core"

# ---- promtool on the series sysobsd exported ----
curl -sS "http://127.0.0.1:$PORT/metrics" | grep '^sysobs_ifs_core_status{' >"$T/status.prom"
{
	echo "rule_files: [$SYSOBS_SRC/deploy/prometheus/sysobs-alerts.yml]"
	echo "evaluation_interval: 1m"
	echo "tests:"
	echo "  - interval: 1m"
	echo "    input_series:"
	while read -r series value; do
		labels=${series#*\{}
		echo "      - series: 'sysobs_ifs_core_status{instance=\"it-host:9464\",job=\"sysobs\",${labels}'"
		echo "        values: '${value}x5'"
	done <"$T/status.prom"
	echo "    alert_rule_test:"
	echo "      - eval_time: 2m"
	echo "        alertname: SysobsIFSCoreFailed"
	echo "        exp_alerts:"
	while read -r series value; do
		[ "$value" = 1 ] || continue
		t=$(sed -E 's/.*test="([^"]*)".*/\1/' <<<"$series")
		p=$(sed -E 's/.*package="([^"]*)".*/\1/' <<<"$series")
		c=$(sed -E 's/.*core="([^"]*)".*/\1/' <<<"$series")
		cat <<YML
          - exp_labels: {severity: critical, instance: "it-host:9464", job: sysobs, test: "$t", package: "$p", core: "$c"}
            exp_annotations:
              summary: "In-Field Scan $t failed on it-host:9464 package $p core $c"
              description: "The last $t test of package $p core $c on it-host:9464 reported fail. The decoded details are in GET /api/v1/ifs/scans?core=$c&package=$p&result=fail."
              runbook_url: "http://it-host:9559/runbooks#sysobsifscorefailed"
YML
	done <"$T/status.prom"
} >"$T/rules.test.yml"
grep -q 'package: "1", core: "0"' "$T/rules.test.yml" || fail "generated rule test lacks the failing core"
promtool test rules "$T/rules.test.yml" >"$T/promtool.out" 2>&1 ||
	fail "promtool test rules on exported series: $(cat "$T/promtool.out")"
pass "SysobsIFSCoreFailed fires on exactly the failing series sysobsd exported ($(wc -l <"$T/status.prom") series)"

# ---- Alertmanager got the alert with the right labels ----
am_alert() { am_alerts SysobsIFSCoreFailed; }
am_firing() { [ "$(am_alert | jq '[.[] | select(.labels.core == "0" and .labels.package == "1")] | length')" = 1 ]; }
wait_for 15 am_firing || fail "alert not in Alertmanager: $(am_alert)"
al=$(am_alert | jq -c '.[] | select(.labels.core == "0" and .labels.package == "1")')
# The rule's alert labels (integration.alert_identity: one alert for both).
assert_eq "alert labels" '["alertname","core","instance","job","package","severity","team","test"]' \
	"$(jq -c '.labels | keys' <<<"$al")"
assert_eq "alert job, instance" '["sysobs","it-host"]' "$(jq -c '.labels | [.job, .instance]' <<<"$al")"
assert_eq "alert test" scan "$(jq -r .labels.test <<<"$al")"
assert_eq "alert cpu" 2 "$(jq -r .annotations.cpu <<<"$al")"
assert_eq "alert extra label" hw "$(jq -r .labels.team <<<"$al")"
assert_eq "alert state" active "$(jq -r .status.state <<<"$al")"
assert_eq "alert details" 0x8000000000000f05 "$(jq -r .annotations.details <<<"$al")"
assert_eq "alert error_name" signature_error "$(jq -r .annotations.error_name <<<"$al")"
assert_eq "alert decoded" "chunk_num=5 chunk_stop_index=15 control_error=0 signature_error=1" \
	"$(jq -r .annotations.decoded <<<"$al")"
pass "Alertmanager shows the failed core with job, instance, test, package, core labels and its cpu"
upd=$(jq -r .updatedAt <<<"$al")
resent() { [ "$(am_alert | jq -r '.[] | select(.labels.core == "0" and .labels.package == "1") | .updatedAt')" != "$upd" ]; }
wait_for 6 resent || fail "alert not re-sent while firing"
pass "the firing alert is re-sent"
# The agent's own account of its pushes: at least the first send and the
# resend, none failed, one alert firing (the collector publishes every poll).
posts_seen() { [ "$(metric 'sysobs_ifs_alert_posts_total{destination="alertmanager",result="ok"}')" -ge 2 ] 2>/dev/null; }
wait_for 5 posts_seen || fail "alert posts: $(metric 'sysobs_ifs_alert_posts_total{destination="alertmanager",result="ok"}')"
assert_eq "alert posts failed" 0 "$(metric 'sysobs_ifs_alert_posts_total{destination="alertmanager",result="failed"}')"
assert_eq "alerts firing" 1 "$(metric 'sysobs_ifs_alerts_firing{destination="alertmanager"}')"
pass "sysobs_ifs_alert_posts_total and sysobs_ifs_alerts_firing count the pushes"

prom_firing() { [ "$(prom_alert | jq length)" = 1 ]; }
wait_for 15 prom_firing || fail "Prometheus: no firing SysobsIFSCoreFailed: $(prom /api/v1/alerts; tail -5 "$T/prometheus-ifs.log")"
target=$(prom /api/v1/targets | jq -c '.data.activeTargets[] | select(.labels.job == "sysobs") | [.health, .lastError]')
assert_eq "Prometheus scrape of sysobsd" '["up",""]' "$target"
pa=$(prom_alert | jq -c '.[0].labels | [.test, .severity, .instance]')
assert_eq "Prometheus alert labels" "[\"scan\",\"critical\",\"127.0.0.1:$PORT\"]" "$pa"
v=$(prom '/api/v1/query?query=sysobs_ifs_core_status{test="scan",package="1",core="0"}' |
	jq -r '.data.result[0].value[1]')
assert_eq "core_status of the failed core as Prometheus stored it" 1 "$v"
pass "a real Prometheus scrapes sysobsd (up, no error) and fires SysobsIFSCoreFailed on the failed core"

# The script makes the third scan of core 2 pass: the alert resolves.
pass_row() { [ "$(rows '&package=1&core=0&test=scan&result=pass' | jq '.data | length')" -ge 1 ]; }
wait_for 30 pass_row || fail "core 2 never passed"
am_resolved() { ! am_firing; }
wait_for 15 am_resolved || fail "alert still firing after a pass: $(am_alert)"
assert_eq "core_status after pass" 0 "$(metric 'sysobs_ifs_core_status{test="scan",package="1",core="0"}')"
assert_eq "failing_cores after pass" 0 "$(metric 'sysobs_ifs_failing_cores{test="scan"}')"
pass "a later passing scan resolves the alert in Alertmanager"
prom_quiet() { [ "$(prom_alert | jq length)" = 0 ]; }
wait_for 15 prom_quiet || fail "Prometheus alert still firing after a pass: $(prom_alert)"
pass "and in Prometheus, from the next scrape"

# ---- scheduler rules, from the history and the fake's own run log ----
n_denied=$(rows '&package=0&core=1' | jq '.data | length')
assert_eq "rows of the denied core" 0 "$n_denied"
grep -Eq ' intel_ifs_[01] (1|5) ' "$T/mnt/fake_runs" && fail "the fake ran a denied core"
api GET /api/v1/ifs/cores >"$T/cores.json"
assert_eq "cores status" 200 "$HTTP_CODE"
allowed=$(jq -c '[.data[] | select(.package == 0 and .core == 1) | .allowed]' "$T/cores.json")
assert_eq "cores allowed flag" '[false]' "$allowed"
# Issue 33 item 9: the denied core is told apart in the metrics too.
assert_eq "sysobs_ifs_core_allowed of the denied core" 0 \
	"$(metric 'sysobs_ifs_core_allowed{package="0",core="1"}')"
assert_eq "sysobs_ifs_core_allowed of an allowed core" 1 \
	"$(metric 'sysobs_ifs_core_allowed{package="1",core="0"}')"
assert_eq "cores of package 1 core 0" '{"cpus":[2,6],"online":true,"tests":["scan","array","sbaf"]}' \
	"$(jq -c '.data[] | select(.package == 1 and .core == 0) | {cpus, online, tests: [.last[].test]}' "$T/cores.json")"
# The array test has no image: no image_version, no batch.
assert_eq "devices" '[["intel_ifs_0","scan",true,true,1],["intel_ifs_1","array",true,false,null],["intel_ifs_2","sbaf",false,true,null]]' \
	"$(jq -c '[.devices[] | [.device, .test, .image_loaded, has("image_version"), .batch]]' "$T/cores.json")"
assert_eq "scheduler enabled" true "$(jq -r .scheduler.enabled "$T/cores.json")"
last=$(jq -c '.data[] | select(.package == 1 and .core == 1) | .last[] | select(.test == "scan")' "$T/cores.json")
assert_eq "last scan result of package 1 core 1" '["pass",true]' \
	"$(jq -c '[.status, (.cpu | IN(3, 7))]' <<<"$last")"
[[ $(jq -r .time <<<"$last") == *Z ]] || fail "last result without a time: $last"
pass "deny_cpus keeps a core with a denied thread out"

# Retry: core 3 is scripted untested (code 1, retryable), then pass.
r3=$(rows '&package=1&core=1&test=scan' | jq -c '[.data | reverse | .[] | .status] | .[0:2]')
assert_eq "core 3 untested then pass" '["untested","pass"]' "$r3"
u=$(rows '&package=1&core=1&test=scan&result=untested' | jq -c '.data[0] | [.error_name, .retryable]')
assert_eq "untested decoded" '["other_thread_could_not_join",true]' "$u"
pass "a retryable untested result is retried and passes"

# One run at a time across devices: no two runs in the fake overlap.
sort -n "$T/mnt/fake_runs" | awk 'NR > 1 && $1 < prev_end { bad = 1 } { prev_end = $2 } END { exit bad }' ||
	fail "overlapping runs: $(cat "$T/mnt/fake_runs")"
runs=$(wc -l <"$T/mnt/fake_runs")
assert_ge "runs" 6 "$runs"
pass "$runs runs in the fake, never two at once"

# ---- API: request a scan, poll its id ----
post '{"cpus":[7],"tests":["scan"]}' >"$T/post.json"
assert_eq "POST status" 202 "$HTTP_CODE"
out=$(cat "$T/post.json")
sid=$(jq -r '.scans[0].scan_id' <<<"$out")
assert_eq "POST runs on the CPU asked for" 7 "$(jq -r '.scans[0].cpu' <<<"$out")"
assert_eq "POST reply" '["scan",1,1,"/api/v1/ifs/scans?scan_id=<scan_id>"]' \
	"$(jq -c '[.scans[0].test, .scans[0].package, .scans[0].core, .poll]' <<<"$out")"
[ "$(jq -r '.scans[0].scan_id | type' <<<"$out")" = string ] || fail "scan_id is not an int64 string: $out"
api_row() { [ "$(rows "&scan_id=$sid" | jq '.data | length')" = 1 ]; }
wait_for 15 api_row || fail "scan $sid never recorded"
assert_eq "api row requester" api "$(rows "&scan_id=$sid" | jq -r '.data[0].requested_by')"
post '{"cpus":[5]}' >/dev/null
assert_eq "POST on a denied core" 409 "$HTTP_CODE"
post '{"cpus":[0],"tests":["sbaf"]}' >/dev/null
assert_eq "POST of a test without image" 409 "$HTTP_CODE"
post '{"cpus":[99]}' >/dev/null
assert_eq "POST on an unknown cpu" 400 "$HTTP_CODE"
post '{"cpu":[1]}' >"$T/err.json"
assert_eq "POST with an unknown field" 400 "$HTTP_CODE"
assert_eq "error code" bad_request "$(jq -r .error.code "$T/err.json")"
post '{"cpus":[1],"tests":["memtest"]}' >"$T/err.json"
assert_eq "POST with an unknown test" 400 "$HTTP_CODE"
grep -q 'tests\[0\]: one of scan, array, sbaf' "$T/err.json" || fail "unknown test message: $(cat "$T/err.json")"
post '{"cpus":[1],"cores":[{"core":1}]}' >/dev/null
assert_eq "POST with cpus and cores" 400 "$HTTP_CODE"
api GET '/api/v1/ifs/scans?bogus=1' >/dev/null
assert_eq "GET with an unknown parameter" 400 "$HTTP_CODE"
api GET '/api/v1/ifs/scans?result=maybe' >/dev/null
assert_eq "GET with a bad result" 400 "$HTTP_CODE"
pass "POST /api/v1/ifs/scans answers scan ids found by GET /api/v1/ifs/scans; bad input is 4xx"

# Core 2 fails again from its 4th run on; request one through its sibling.
post '{"cpus":[6],"tests":["scan"]}' >"$T/post.json"
sid=$(jq -r '.scans[0].scan_id' "$T/post.json")
wait_for 15 api_row || fail "scan $sid never recorded"
assert_eq "refail" '[6,"fail"]' "$(rows "&scan_id=$sid" | jq -c '.data[0] | [.cpu, .status]')"
wait_for 15 am_firing || fail "alert not firing again"
stop_agent
upd=$(am_alert | jq -r '.[] | select(.labels.core == "0" and .labels.package == "1") | .updatedAt')

# ---- phase 2: passive (scheduler off), admin off ----
sed -i -e 's/^admin = true/admin = false/' -e 's/^schedule = true/schedule = false/' "$T/sysobsd.ini"
before=$(wc -l <"$T/mnt/fake_runs")
start_agent
# The last results come back from the history: the failed core is still
# failed after the restart, and its alert is pushed again.
assert_eq "core_status after restart" 1 "$(metric 'sysobs_ifs_core_status{test="scan",package="1",core="0"}')"
assert_eq "failing_cores after restart" 1 "$(metric 'sysobs_ifs_failing_cores{test="scan"}')"
assert_eq "cores after restart" '"fail"' \
	"$(api GET /api/v1/ifs/cores | jq -c '.data[] | select(.package == 1 and .core == 0) | .last[] | select(.test == "scan") | .status')"
wait_for 10 resent || fail "alert not pushed again after the restart"
pass "a restart keeps the failed core failed (metrics, API, alert)"
post '{"cpus":[0]}' >/dev/null
assert_eq "POST without admin" 403 "$HTTP_CODE"
sleep 1.5
assert_eq "no scans with the scheduler off" "$before" "$(wc -l <"$T/mnt/fake_runs")"

# Someone else runs a test: recorded without a CPU (status is per device).
# Core 1 was denied in phase 1, so its scripted "untested 6" differs from the
# device's last result (two equal results in a row cannot be told apart).
echo 1 >"$T/mnt/devices/virtual/misc/intel_ifs_0/run_test"
ext_row() { [ "$(rows '&requested_by=external' | jq '.data | length')" -ge 1 ]; }
wait_for 10 ext_row || fail "external run not recorded"
ext=$(rows '&requested_by=external' | jq -c '.data[0] | [.test, .cpu, .core, .status, .error_name]')
assert_eq "external row" '["scan",null,null,"untested","core_not_capable_currently"]' "$ext"
pass "passive mode records a scan triggered elsewhere, unattributed"

# Offline CPUs: core 2 (cpus 2 and 6) fully offline.
echo 0 >"$T/mnt/devices/system/cpu/cpu2/online"
echo 0 >"$T/mnt/devices/system/cpu/cpu6/online"
offline_seen() { [ "$(api GET /api/v1/ifs/cores | jq '[.data[] | select(.package == 1 and .core == 0) | .online][0]')" = false ]; }
wait_for 10 offline_seen || fail "offline core not seen: $(api GET /api/v1/ifs/cores)"
# The collector saw core 2 online: it remembers its threads, offline.
assert_eq "remembered offline core" '{"cpus":[2,6],"online":false}' \
	"$(api GET /api/v1/ifs/cores | jq -c '.data[] | select(.package == 1 and .core == 0) | {cpus, online}')"
stop_agent
sed -i 's/^admin = false/admin = true/' "$T/sysobsd.ini"
start_agent
# After a restart, sysfs alone says cpu 2 is offline and nothing of its
# core (its topology is gone; the fake has no debugfs here): the core is
# placed from the CPUs of its last results in the history (issue 33 item
# 8: it failed, and stays failed), offline; the CPU is refused.
post '{"cpus":[2]}' >"$T/err.json"
assert_eq "POST on an offline CPU" 409 "$HTTP_CODE"
grep -q 'package 1 core 0 cannot be scanned: all of its CPUs are offline' "$T/err.json" ||
	fail "offline CPU message: $(cat "$T/err.json")"
assert_eq "core 2 after restart with its threads offline" '[{"online":false,"in":true,"status":"fail"}]' \
	"$(api GET /api/v1/ifs/cores | jq -c '[.data[] | select(.package == 1 and .core == 0) |
		{online, in: (.cpus - [2, 6] == [] and (.cpus | length) >= 1),
		 status: (.last[] | select(.test == "scan") | .status)}]')"
post '{"cores":[{"package":1,"core":0}]}' >/dev/null
assert_eq "POST on a core with every thread offline" 409 "$HTTP_CODE"
pass "an offline CPU is reported and cannot be requested; its core is known from the history after a restart"
post '{"cores":[{"package":1,"core":1}],"tests":["array"]}' >"$T/post.json"
assert_eq "POST with the scheduler off" 202 "$HTTP_CODE"
sid=$(jq -r '.scans[0].scan_id' "$T/post.json")
wait_for 15 api_row || fail "scan $sid never recorded with the scheduler off"
assert_eq "requested core" '["array",3,1,"pass"]' \
	"$(rows "&scan_id=$sid" | jq -c '.data[0] | [.test, .cpu, .core, .status]')"
stop_agent
pass "with the scheduler off, a requested scan still runs"

# ---- phase 3: allow list and batch rotation ----
# Only core 0 (cpus 0 and 4) is allowed; batches 1 to 3 rotate, but the fake
# has no batch 3: its current_batch write fails (ENOENT), which is recorded
# as an error and retried, then the rotation moves on. SBAF has no image at
# start: the worker loads one of its own batches (rotate_batches_sbaf, its
# ff-mm-ss-NN.sbft files) through current_batch before running.
sed -i -e 's/^schedule = false/schedule = true/' -e 's/^interval = 8s/interval = 2s/' \
	-e 's/^deny_cpus = 5/allow_cpus = 0,4\nrotate_batches = 1-3\nrotate_batches_sbaf = 1-2/' "$T/sysobsd.ini"
since=$(date +%s.%N)
start_agent
rot() {
	[ "$(rows "&start=$since&test=scan" | jq -c '[.data[] | select(.status == "pass") | .batch] | unique')" = '[1,2]' ] &&
		[ "$(rows "&start=$since&test=scan&result=error" | jq '.data | length')" -ge 1 ] &&
		[ "$(rows "&start=$since&test=sbaf&result=pass" | jq '.data | length')" -ge 1 ]
}
wait_for 40 rot || fail "rotation: $(rows "&start=$since" | jq -c '[.data[] | [.test,.cpu,.status,.batch,.error_name]]')"
assert_eq "only core 0 scanned" '[0]' "$(rows "&start=$since" | jq -c '[.data[].cpu] | unique')"
assert_eq "missing batch recorded" '["batch_missing"]' \
	"$(rows "&start=$since&result=error" | jq -c '[.data[].error_name] | unique')"
# After the failed load of batch 3, batch 1 comes round again.
again() { rows "&start=$since&test=scan" | jq -e '[.data | reverse | .[] | select(.status != "error") | .batch] | index([2, 1]) != null' >/dev/null; }
wait_for 30 again || fail "rotation stuck after a missing batch: $(rows "&start=$since&test=scan" | jq -c '[.data[] | [.status,.batch,.error_name]]')"
stop_agent
pass "allow_cpus limits the scheduler to core 0; batches rotate, a missing batch is an error and skipped"

# ---- phase 4: the CPU goes offline between topology read and run_test ----
# With a 1 h poll the collector still believes cpus 3 and 7 online: the
# driver's EINVAL is recorded as a clear outcome, not a test result.
sed -i -e 's/^poll = 200ms/poll = 1h/' -e 's/^schedule = true/schedule = false/' \
	-e 's/^allow_cpus = 0,4/allow_cpus = 0-7/' "$T/sysobsd.ini"
start_agent
echo 0 >"$T/mnt/devices/system/cpu/cpu3/online"
echo 0 >"$T/mnt/devices/system/cpu/cpu7/online"
post '{"cpus":[3],"tests":["scan"]}' >"$T/post.json"
assert_eq "POST before the collector sees the CPU offline" 202 "$HTTP_CODE"
sid=$(jq -r '.scans[0].scan_id' "$T/post.json")
wait_for 15 api_row || fail "scan $sid never recorded"
assert_eq "offline at write time" '["error","cpu_invalid_or_offline",3]' \
	"$(rows "&scan_id=$sid" | jq -c '.data[0] | [.status, .error_name, .cpu]')"
assert_ge "scans_total error" 1 "$(metric 'sysobs_ifs_scans_total{test="scan",result="error"}')"
stop_agent
echo 1 >"$T/mnt/devices/system/cpu/cpu3/online"
echo 1 >"$T/mnt/devices/system/cpu/cpu7/online"
pass "EINVAL from run_test (CPU offline) is recorded as an error outcome"

# ---- a bad CPU list is a config error naming the key ----
sed -i 's/^allow_cpus = 0-7/allow_cpus = 0-x/' "$T/sysobsd.ini"
refused "a bad CPU list" allow_cpus --config "$T/sysobsd.ini"
pass "a bad allow_cpus is refused at start with the key named"

# ---- phase 5: the driver paths a faithful fake now has ----
# One more fake: 16-bit chunk fields (scan gen2, 1000 chunks), array BIST
# gen1 (pass/fail in bit 0), SBAF runs of 1.5 s (longer than the ~1 s sysobs
# once assumed) ending interrupted the only way the driver reports it (status
# 2 with 0xFE), a corrupted scan image (error 0xB until reloaded), an EINTR,
# error code 6, 300 ms image loads failing with EIO then EINVAL.
ifs_fake_start --mnt "$T/mnt2" cpus=4 load_ms=300 devices=0,1,2 \
	device.0.image_version=0x9000 device.0.batches=1,2,3 device.0.load=ok,eio,einval,ok \
	device.0.scan_gen=2 device.0.chunks=1000 device.0.core.0=corrupt,pass \
	device.0.core.1=eintr,pass device.0.core.2=fail device.0.core.3=untested:6,pass \
	device.1.array_gen=1 device.1.core.1=fail \
	device.2.image_version=0x100 device.2.batch=1 device.2.batches=1 device.2.scan_ms=1500 device.2.default=intr
# A script step the driver cannot produce is refused: SBAF has no control_error.
printf '[fake]\ndevices = 2\n[device.2]\ndefault = control\n' >"$T/bad-fake.ini"
"$FAKE" -f "$T/bad-fake.ini" "$T/mnt-bad" >"$T/bad-fake.log" 2>&1 && fail "fake accepted an SBAF control error"
grep -q 'no word the driver makes' "$T/bad-fake.log" || fail "bad fake config: $(cat "$T/bad-fake.log")"

write_base_config "agent.sysfs_root=$T/mnt2" agent.log_level=debug http.admin=true \
	"storage.path=$T/sysobs5.db" collector.ifs.schedule=false collector.ifs.poll=200ms \
	collector.ifs.retry_backoff=100ms collector.drops.enabled=false \
	collector.cachefiles.enabled=false collector.mptcp.enabled=false
start_agent
# scan_one CPU TEST: POSTs one scan, waits for its final row, leaves its rows
# oldest first in $T/rows.json and its id in $sid.
scan_one() {
	post "{\"cpus\":[$1],\"tests\":[\"$2\"]}" >"$T/post.json"
	[ "$HTTP_CODE" = 202 ] || fail "POST cpu $1 $2: $HTTP_CODE $(cat "$T/post.json")"
	sid=$(jq -r '.scans[0].scan_id' "$T/post.json")
	wait_for 15 api_row_final || fail "scan $sid ($2 on cpu $1) never recorded"
	rows "&scan_id=$sid" | jq -c '.data | reverse' >"$T/rows.json"
}
# The final row of scan $sid is there (a reload retry makes a second one).
api_row_final() {
	local r
	r=$(rows "&scan_id=$sid" | jq -c '.data')
	[ "$(jq length <<<"$r")" -ge 1 ] && { [ "$(jq -r '.[0].error_name' <<<"$r")" != corrupted_chunk ] ||
		[ "$(jq -r '.[0].reloaded' <<<"$r")" = true ]; }
}

# Corrupted image: reloaded once (current_batch written with the same batch),
# then the retry passes.
scan_one 0 scan
r=$(jq -c '[.[] | [.status, .error_name, .reloaded]]' "$T/rows.json")
assert_eq "corrupted image: reload, retry" '[["untested","corrupted_chunk",false],["pass","none",true]]' "$r"
assert_eq "reloads of batch 1" 1 "$(awk '$3 == "intel_ifs_0" && $4 == 1 && $5 == 0' "$T/mnt2/fake_loads" | wc -l)"
ld=$(awk '$3 == "intel_ifs_0" { print $2 - $1; exit }' "$T/mnt2/fake_loads")
assert_ge "load latency (ms)" 290 "$ld"
assert_eq "reloads metric" 1 "$(metric 'sysobs_ifs_image_reloads_total{test="scan",result="ok"}')"
pass "a corrupted scan image (error 0xB) is reloaded once (${ld} ms) and the retry passes"

# EINTR from run_test: an error from run_test, not a test result.
scan_one 1 scan
r=$(jq -c '.[0] | [.status, .error_name, .error_file, .write_errno]' "$T/rows.json")
assert_eq "EINTR row" '["error","interrupted","run_test",4]' "$r"
# Gen2 scan word: chunk fields 16 bits wide (chunk 312 of 1000).
scan_one 2 scan
r=$(jq -c '.[0] | [.status, .details, .chunk_num, .chunk_stop_index, .signature_error]' "$T/rows.json")
assert_eq "gen2 fail row" '["fail","0x8000000003e70138",312,999,true]' "$r"
# Error code 6: retryable.
scan_one 3 scan
r=$(jq -c '.[0] | [.status, .error_name, .retryable]' "$T/rows.json")
assert_eq "code 6 row" '["untested","core_not_capable_currently",true]' "$r"
# Array BIST gen1: fail in bit 0.
scan_one 1 array
r=$(jq -c '.[0] | [.status, .details, .error_name, .ctrl_result]' "$T/rows.json")
assert_eq "array gen1 fail row" '["fail","0x1","array_fail",false]' "$r"
pass "EINTR, 16-bit chunk fields, code 6 retryable, array gen1 fail: each recorded as the driver reports it"

# A 1.5 s SBAF run: the API stays responsive while it runs, and its word is
# one the driver makes (interrupted: status 2 with 0xFE, never with 0).
post '{"cpus":[0],"tests":["sbaf"]}' >"$T/post.json"
sid=$(jq -r '.scans[0].scan_id' "$T/post.json")
sleep 0.5
t0=$(date +%s%N)
api GET /api/v1/ifs/cores >/dev/null
cores_ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "GET during a long run" 200 "$HTTP_CODE"
[ "$cores_ms" -lt 500 ] || fail "GET /api/v1/ifs/cores took $cores_ms ms during a run"
wait_for 10 api_row_final || fail "SBAF scan $sid never recorded"
r=$(rows "&scan_id=$sid" | jq -c '.data[0] | [.status, .details, .error_name, .sbaf_status, .retryable]')
assert_eq "SBAF interrupted row" '["untested","0x800000fe00004002","sw_partial_completion",2,true]' "$r"
d=$(rows "&scan_id=$sid" | jq -r '.data[0].duration_ns')
assert_ge "SBAF run duration_ns" 1500000000 "$d"
stop_agent
pass "a 1.5 s SBAF run is recorded ($((d / 1000000)) ms); GET answered in ${cores_ms} ms meanwhile"

# Batch rotation on the scheduler: batch 2's load fails authentication
# (EIO), batch 3's image is refused (EINVAL); both are named from
# current_batch and skipped, and batch 1 loads again.
sed -i -e 's/^schedule = false/schedule = true\ninterval = 1s\nallow_cpus = 0\nrotate_batches = 1-3/' \
	"$T/sysobsd.ini"
since=$(date +%s.%N)
start_agent
loads() {
	rows "&start=$since&test=scan&result=error" |
		jq -c '[.data | reverse | .[] | [.error_name, .error_file, .write_errno, .batch]] | unique'
}
rot5() { [ "$(loads)" = '[["image_invalid","current_batch",22,null],["image_load_failed","current_batch",5,null]]' ] &&
	rows "&start=$since&test=scan&result=pass" | jq -e '[.data[].batch] | index(1)' >/dev/null; }
wait_for 40 rot5 || fail "load errors: $(loads) rows: $(rows "&start=$since&test=scan" | jq -c '[.data[] | [.status, .batch, .error_name]]')"
reason=$(rows "&start=$since&test=scan&result=error" | jq -r '[.data[] | select(.error_name == "image_load_failed")][0].reason')
[[ $reason == current_batch:* ]] || fail "reason does not name the file: $reason"
stop_agent
pass "image loads failing with EIO and EINVAL are named from current_batch and their batches skipped"
