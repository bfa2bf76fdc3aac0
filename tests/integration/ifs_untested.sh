#!/usr/bin/env bash
# integration.ifs_untested: an untested core never looks healthy (issue 21).
# Through the IFS fake, with the scheduler on and batch rotation 1-2:
#  - core 0 passes once, then every run ends untested (code 6); core 1 is
#    untested from the start;
#  - sysobs_ifs_core_last_tested_timestamp_seconds of core 0 stays at the
#    start of its pass while sysobs_ifs_core_last_scan_timestamp_seconds
#    moves on; core 1 has no last-tested series at all; GET
#    /api/v1/ifs/cores says the same (last_tested);
#  - the stuck core does not hold the batch rotation: batch 2 gets loaded;
#  - sysobs_ifs_image_reloads_total{result="error"} exists at 0 from the
#    start, so increase() sees the first failed reload;
#  - after a restart the last-tested time comes back from the history;
#  - SysobsIFSCoreNotTested, fed the series exactly as exported (plus the
#    scrape's job/instance), fires for core 1 only.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-ifs-it"
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq
need_cmd promtool

ifs_fake_start scan_ms=100 device.0.batches=1,2 device.0.core.0=pass,untested:6 \
	device.0.core.1=untested:6

write_base_config "agent.sysfs_root=$T/mnt" \
	collector.ifs.schedule=true collector.ifs.interval=1500ms collector.ifs.retry_max=0 \
	collector.ifs.rotate_batches=1-2 collector.ifs.poll=100ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent

S='test="scan",package="0"'
assert_eq "reloads{error} from the start" 0 \
	"$(metric "sysobs_ifs_image_reloads_total{test=\"scan\",result=\"error\"}")"
assert_eq "reloads{ok} from the start" 0 \
	"$(metric "sysobs_ifs_image_reloads_total{test=\"scan\",result=\"ok\"}")"
assert_eq "schedule interval exported" 1.5 "$(metric sysobs_ifs_schedule_interval_seconds)"

enough() { [ "$(ifs_fake_runs 0 0)" -ge 3 ] && [ "$(ifs_fake_runs 1 0)" -ge 3 ]; }
wait_for 30 enough || fail "the scheduler did not run each core 3 times: $(cat "$T/mnt/fake_runs")"

# The history's own times: core 0's pass, and its newest run.
rows() { api GET "/api/v1/ifs/scans?package=0&core=$1&test=scan&limit=100"; }
pass_ts=$(rows 0 | jq -r '[.data[] | select(.status == "pass")] | .[0].time')
newest=$(rows 0 | jq -r '.data[0] | [.status, .time] | @tsv')
assert_eq "core 0's newest run" untested "$(cut -f1 <<<"$newest")"
[ "$pass_ts" != null ] || fail "no pass row for core 0: $(rows 0)"
epoch() { date -d "$1" +%s.%N; }
tested=$(metric "sysobs_ifs_core_last_tested_timestamp_seconds{$S,core=\"0\"}")
scanned=$(metric "sysobs_ifs_core_last_scan_timestamp_seconds{$S,core=\"0\"}")
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 0.01 && d > -0.01) }'; }
close "$tested" "$(epoch "$pass_ts")" ||
	fail "last tested $tested is not the pass at $pass_ts ($(epoch "$pass_ts"))"
awk -v t="$tested" -v s="$scanned" 'BEGIN { exit !(s > t + 1) }' ||
	fail "last scan $scanned did not move past last tested $tested"
assert_eq "core 0 status" 2 "$(metric "sysobs_ifs_core_status{$S,core=\"0\"}")"
assert_eq "core 1 status" 2 "$(metric "sysobs_ifs_core_status{$S,core=\"1\"}")"
assert_eq "core 1 has no last-tested series" "" \
	"$(metric "sysobs_ifs_core_last_tested_timestamp_seconds{$S,core=\"1\"}")"
cores=$(api GET /api/v1/ifs/cores)
last_of() { jq -r --arg c "$1" '.data[] | select(.core == ($c | tonumber)) | .last[] |
	select(.test == "scan") | .last_tested // "none"' <<<"$cores"; }
assert_eq "API: core 0 last_tested" "$pass_ts" "$(last_of 0)"
assert_eq "API: core 1 last_tested" none "$(last_of 1)"
pass "untested runs move last_scan ($scanned), not last_tested ($tested = the pass at $pass_ts)"

# Core 1 never tests batch 1: after two such runs it stops holding the
# rotation, and the agent loads batch 2.
loaded2() { grep -q "intel_ifs_0 2 0$" "$T/mnt/fake_loads" 2>/dev/null; }
wait_for 20 loaded2 || fail "rotation stuck on batch 1: loads $(cat "$T/mnt/fake_loads" 2>/dev/null)"
pass "a core stuck at untested does not hold the batch rotation (batch 2 loaded)"

# The series as exported, for the rule test below.
exported=$(in_api_netns curl -sS "http://127.0.0.1:$PORT/metrics" |
	grep -E '^sysobs_ifs_(core_status|core_last_tested_timestamp_seconds|schedule_interval_seconds)[{ ]')

# Restart: the last-tested time comes back from the history.
stop_agent
start_agent
restored() { [ -n "$(metric "sysobs_ifs_core_last_tested_timestamp_seconds{$S,core=\"0\"}")" ]; }
wait_for 10 restored || fail "last tested not restored after a restart"
close "$(metric "sysobs_ifs_core_last_tested_timestamp_seconds{$S,core=\"0\"}")" "$tested" ||
	fail "restored last tested differs from $tested"
assert_eq "core 1 still has no last-tested series" "" \
	"$(metric "sysobs_ifs_core_last_tested_timestamp_seconds{$S,core=\"1\"}")"
pass "last tested restored from history after a restart"
stop_agent

# The rule on the exported series: each becomes an input series with the
# scrape's identity labels and its exported value held for 2 h.
{
	cat <<'YML'
rule_files:
  - RULES
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
YML
	while read -r name value; do
		labels=${name#*\{}
		[ "$labels" != "$name" ] && labels=",${labels%\}}" || labels=
		printf "      - series: '%s{instance=\"it-host\",job=\"sysobs\"%s}'\n" "${name%%\{*}" "$labels"
		printf "        values: '%sx120'\n" "$value"
	done <<<"$exported"
	cat <<'YML'
    alert_rule_test:
      - eval_time: 50m
        alertname: SysobsIFSCoreNotTested
        exp_alerts: []
      - eval_time: 70m
        alertname: SysobsIFSCoreNotTested
        exp_alerts:
          - exp_labels:
              severity: warning
              instance: it-host
              job: sysobs
              test: scan
              package: "0"
              core: "1"
            exp_annotations:
              summary: "In-Field Scan scan has not tested it-host package 0 core 1 within its schedule"
              description: "No scan run has tested package 0 core 1 on it-host (pass or fail) for more than twice the scan interval, or none ever did and its last run ended untested. The reason is in GET /api/v1/ifs/scans?core=1&package=0."
              runbook_url: "http://it-host:9559/runbooks#sysobsifscorenottested"
YML
} | sed -e "s|RULES|$SYSOBS_SRC/deploy/prometheus/sysobs-alerts.yml|" \
	>"$T/rule-test.yml"
promtool test rules "$T/rule-test.yml" >"$T/promtool.log" 2>&1 ||
	fail "SysobsIFSCoreNotTested on the exported series: $(cat "$T/promtool.log") $(cat "$T/rule-test.yml")"
pass "SysobsIFSCoreNotTested fires for the never-tested core only, on the series as exported"
