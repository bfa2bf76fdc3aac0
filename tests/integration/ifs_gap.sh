#!/usr/bin/env bash
# integration.ifs_gap (issue 33 item 11): the microcode's shortest time
# between two scans of one core. The kernel's IFS selftest (test_ifs.sh)
# documents 180 s on Sapphire Rapids, 30 s on Emerald Rapids, 1 s on other
# models; a scan inside it ends untested, error 6. Through the fake as an
# Emerald Rapids (model 0xcf in devices/system/cpu/modalias; it refuses a
# scan within 30 s of the core's last), 2 cores, scheduler every 1 s:
#  - each core is scanned once; the next runs, due every second, wait: no
#    run ends untested with error 6 (before: every due run and its retries
#    did);
#  - an API request for a core scanned just now waits too (stays pending);
#  - sysobsd restarted: the last start comes back from the history, and no
#    core is scanned again at once (before: core 0 at once, untested).
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq

ifs_fake_start scan_ms=20 model=0xcf
write_base_config "agent.sysfs_root=$T/mnt" http.admin=true \
	collector.ifs.schedule=true collector.ifs.interval=1s collector.ifs.retry_max=2 \
	collector.ifs.retry_backoff=200ms collector.ifs.poll=100ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent
wait_collector ifs
grep -q 'ifs: CPU family 6 model 0xcf: scans of one core at least 30 s apart' "$T/agent.log" ||
	fail "the gap was not logged: $(grep 'ifs:' "$T/agent.log")"
grep -q "ifs: interval 1 s is shorter than this CPU's minimum time between two scans of a core (30 s)" \
	"$T/agent.log" || fail "the short interval was not logged"

untested() { awk '$5 == "untested" { n++ } END { print n + 0 }' "$T/mnt/fake_runs"; }
both() { [ "$(ifs_fake_runs 0)" -ge 1 ] && [ "$(ifs_fake_runs 1)" -ge 1 ]; }
wait_for 10 both || fail "cores not run: $(cat "$T/mnt/fake_runs")"
sleep 4
echo "4 s after the first scans, interval 1 s: runs of core 0: $(ifs_fake_runs 0), core 1: $(ifs_fake_runs 1);" \
	"untested (error 6): $(untested)"
assert_eq "runs of core 0 inside its 30 s" 1 "$(ifs_fake_runs 0)"
assert_eq "runs of core 1 inside its 30 s" 1 "$(ifs_fake_runs 1)"
assert_eq "runs refused by the microcode (untested, error 6)" 0 "$(untested)"

req POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d '{"cpus":[0]}'
assert_eq "POST for core 0" 202 "$HTTP_CODE"
sleep 1.5
assert_eq "runs of core 0 after the POST" 1 "$(ifs_fake_runs 0)"
assert_eq "the request waits" 1 "$(api GET /api/v1/ifs/cores | jq .scheduler.pending)"
pass "two scans of one core at least 30 s apart: due runs and a request wait, nothing refused"

stop_agent
start_agent
wait_collector ifs
sleep 3
echo "3 s after a restart: runs of core 0: $(ifs_fake_runs 0), core 1: $(ifs_fake_runs 1); untested: $(untested)"
assert_eq "runs of core 0 after the restart" 1 "$(ifs_fake_runs 0)"
assert_eq "runs of core 1 after the restart" 1 "$(ifs_fake_runs 1)"
assert_eq "runs refused after the restart" 0 "$(untested)"
stop_agent
pass "the last start comes back from the history: a restart rescans no core inside its window"
