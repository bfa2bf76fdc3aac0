#!/usr/bin/env bash
# integration.ifs_sibling (issue 21, item 2): a core with an offline SMT
# sibling is not tested. ifs.h: "All siblings must be online to run a core
# test"; runtest.c checks only the CPU written (do_core_test: cpu_online),
# and the scan's WRMSR rendezvous then fails: untested, error 1 "other
# thread could not join" (the fake does the same). Through the fake (2
# cores x 2 threads, scan), scheduler every 1 s:
#  - cpu 3 goes offline: core 1 (cpus 1, 3) is no longer run (the fake's
#    run log has no run of cpu 1 from then on), each due run is counted in
#    sysobs_ifs_skipped_runs_total{test="scan",reason="sibling_offline"}
#    (from 0 at start), GET /api/v1/ifs/cores says skip_reason
#    "sibling_offline" for core 1 only, a POST naming cpu 1 is a 409;
#  - core 0 keeps being tested; cpu 3 back online: core 1 runs again.
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq

ifs_fake_start cpus=4 threads_per_core=2
write_base_config "agent.sysfs_root=$T/mnt" http.admin=true \
	collector.ifs.schedule=true collector.ifs.interval=1s collector.ifs.retry_max=0 \
	collector.ifs.poll=100ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent
wait_collector ifs
SK='sysobs_ifs_skipped_runs_total{test="scan",reason="sibling_offline"}'
assert_eq "skipped runs from 0 at start" 0 "$(metric "$SK")"
assert_eq "skipped runs (offline) from 0 at start" 0 \
	"$(metric 'sysobs_ifs_skipped_runs_total{test="scan",reason="offline"}')"

# runs CPU: runs of that CPU in the fake's log from line $L on.
L=1
both() { [ "$(ifs_fake_runs 0 - "$L")" -ge 1 ] && [ "$(ifs_fake_runs 1 - "$L")" -ge 1 ]; }
wait_for 10 both || fail "both cores not run: $(cat "$T/mnt/fake_runs")"

echo 0 >"$T/mnt/devices/system/cpu/cpu3/online"
skip_seen() { [ "$(api GET /api/v1/ifs/cores | jq -r '.data[] | select(.core == 1) | .skip_reason')" = sibling_offline ]; }
wait_for 5 skip_seen || fail "core 1 not shown skipped: $(api GET /api/v1/ifs/cores | jq -c '.data')"
sleep 0.5 # a run of core 1 under way when cpu 3 went offline ends
L=$(($(wc -l <"$T/mnt/fake_runs") + 1))
sleep 4
r0=$(ifs_fake_runs 0 - "$L") r1=$(ifs_fake_runs 1 - "$L") sk=$(metric "$SK")
untested=$(tail -n +"$L" "$T/mnt/fake_runs" | awk '$4 == 1 && $5 == "untested"' | wc -l)
echo "4 s with cpu 3 offline: fake runs of core 0: $r0, of core 1: $r1 ($untested untested);" \
	"skipped (sibling_offline): $sk"
assert_eq "runs of core 1 with its sibling offline (fake's log)" 0 "$r1"
assert_ge "runs of core 0 meanwhile" 2 "$r0"
assert_ge "skipped runs counted, one per interval" 3 "$sk"
[ "${sk%.*}" -le 5 ] || fail "skips counted more than once per interval: $sk in 4 s"
assert_eq "skip_reason of core 0" null \
	"$(api GET /api/v1/ifs/cores | jq -r '.data[] | select(.core == 0) | .skip_reason')"
req POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d '{"cpus":[1]}'
assert_eq "POST for a core with an offline sibling" 409 "$HTTP_CODE"
grep -q "offline" <<<"$BODY" || fail "409 does not say why: $BODY"

echo 1 >"$T/mnt/devices/system/cpu/cpu3/online"
L=$(($(wc -l <"$T/mnt/fake_runs") + 1))
back() { [ "$(ifs_fake_runs 1 - "$L")" -ge 1 ]; }
wait_for 5 back || fail "core 1 not run again after cpu 3 came back"
assert_eq "skip_reason after the sibling is back" null \
	"$(api GET /api/v1/ifs/cores | jq -r '.data[] | select(.core == 1) | .skip_reason')"
assert_eq "core 1's result after" '"pass"' \
	"$(api GET /api/v1/ifs/cores | jq '.data[] | select(.core == 1) | .last[0].status')"
stop_agent
pass "a core with an offline sibling is skipped ($sk skips in 4 s, 0 runs), counted and shown; it runs again once the sibling is back"
