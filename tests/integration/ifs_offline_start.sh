#!/usr/bin/env bash
# integration.ifs_offline_start (issue 33 items 7, 8): threads offline since
# before sysobsd started. The kernel removes an offline CPU's topology/ and
# drops it from its siblings' thread_siblings_list (remove_siblinginfo), so
# sysfs alone makes a core with an offline thread look single-threaded and
# forgets a core with every thread offline. Through the fake (3 cores x 2
# threads: core k is cpus k and k+3), scheduler every 1 s:
#  A. cpu 4 offline from the start (as nosmt or isolation leave it), the x86
#     topology debugfs present: core 1 (cpus 1, 4) is skipped as
#     sibling_offline and counted, never run (before: run every interval
#     and retried, untested error 1 each time, 0 skips counted);
#  B. core 2 fails, then both its threads go offline and sysobsd restarts:
#     it stays failed (sysobs_ifs_core_status 1, sysobs_ifs_failing_cores 1;
#     before: the series vanished and failing_cores went 1 -> 0), from the
#     debugfs topology;
#  C. the same restart on a host without debugfs: core 2 is placed from its
#     last result's CPU in the history, and stays failed.
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq

fake_start() { # DEBUGFS OFFLINE
	ifs_fake_start cpus=6 threads_per_core=2 scan_ms=20 "debugfs=$1" "offline=$2" device.0.core.2=fail
}
fake_start 1 4
write_base_config "agent.sysfs_root=$T/mnt" http.admin=true \
	collector.ifs.schedule=true collector.ifs.interval=1s collector.ifs.retry_max=2 \
	collector.ifs.retry_backoff=200ms collector.ifs.poll=100ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent
wait_collector ifs

# ---- A: a sibling offline since before the start ----
core() { api GET /api/v1/ifs/cores | jq -c ".data[] | select(.core == $1) | $2"; }
ran() { [ "$(ifs_fake_runs 0)" -ge 3 ] && [ "$(ifs_fake_runs 2)" -ge 1 ]; }
wait_for 10 ran || fail "cores 0 and 2 not run: $(cat "$T/mnt/fake_runs")"
sleep 3
SK='sysobs_ifs_skipped_runs_total{test="scan",reason="sibling_offline"}'
r1=$(ifs_fake_runs 1) sk=$(metric "$SK")
echo "A: runs of core 1 (cpu 4 offline since the start): $r1; skipped (sibling_offline): $sk;" \
	"runs of core 0: $(ifs_fake_runs 0)"
assert_eq "runs of core 1 with cpu 4 offline since the start (fake's log)" 0 "$r1"
assert_ge "skipped runs of core 1 counted" 3 "$sk"
assert_eq "core 1 as the API shows it" '{"cpus":[1,4],"skip_reason":"sibling_offline"}' \
	"$(core 1 '{cpus, skip_reason}')"
req POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d '{"cpus":[1]}'
assert_eq "POST for core 1" 409 "$HTTP_CODE"
pass "a thread offline since the start: its core is skipped and counted ($sk skips), not run"

# ---- B: a failed core taken offline, sysobsd restarted (debugfs) ----
FS='sysobs_ifs_core_status{test="scan",package="0",core="2"}'
FC='sysobs_ifs_failing_cores{test="scan"}'
assert_eq "core 2 failed" 1 "$(metric "$FS")"
assert_eq "failing cores before" 1 "$(metric "$FC")"
stop_agent
echo 0 >"$T/mnt/devices/system/cpu/cpu2/online"
echo 0 >"$T/mnt/devices/system/cpu/cpu5/online"
start_agent
wait_collector ifs
echo "B: after the restart with cpus 2 and 5 offline: core_status '$(metric "$FS")'," \
	"failing_cores '$(metric "$FC")'"
assert_eq "core 2 status after the restart (debugfs)" 1 "$(metric "$FS")"
assert_eq "failing cores after the restart (debugfs)" 1 "$(metric "$FC")"
assert_eq "core 2 as the API shows it" '{"cpus":[2,5],"skip_reason":"offline","status":"fail"}' \
	"$(core 2 '{cpus, skip_reason, status: .last[0].status}')"
stop_agent
pass "a failed core with every thread offline stays failed over a restart (debugfs)"

# ---- C: the same without debugfs: from the history ----
fusermount3 -u "$T/mnt"
wait "$FAKE_PID" 2>/dev/null
fake_start 0 2,4,5
sed -i 's/^schedule = true/schedule = false/' "$T/sysobsd.ini"
start_agent
wait_collector ifs
echo "C: no debugfs, cpus 2, 4 and 5 offline: core_status '$(metric "$FS")'," \
	"failing_cores '$(metric "$FC")'"
assert_eq "core 2 status after the restart (history)" 1 "$(metric "$FS")"
assert_eq "failing cores after the restart (history)" 1 "$(metric "$FC")"
assert_eq "core 2 as the API shows it (history)" '{"cpus":[2],"online":false,"status":"fail"}' \
	"$(core 2 '{cpus, online, status: .last[0].status}')"
grep -q 'package 0 core 2: offline since before the start, known from its last result on cpu 2' \
	"$T/agent.log" || fail "the placement from the history was not logged"
stop_agent
pass "without debugfs, a failed offline core is placed from its last result and stays failed"
