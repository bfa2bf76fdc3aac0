#!/usr/bin/env bash
# integration.ifs_reload: a failed image reload is retried (issue 21).
# Through the IFS fake, scheduler on, no batch rotation: core 0's image is
# corrupted (error 0xB until reloaded), so the agent reloads batch 1; the
# driver's load fails with EIO twice, then succeeds (load.c can fail
# transiently). Before, the device stayed without an image for good. Now:
#  - the load is retried with a doubling wait (retry_backoff 300 ms, then
#    600 ms), each attempt counted in sysobs_ifs_image_reloads_total;
#  - the failures are named image_load_failed from current_batch;
#  - the image is back and cores pass again.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-ifs-it"
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq

ifs_fake_start device.0.batches=1 device.0.load=eio,eio,ok device.0.core.0=corrupt,pass \
	device.0.core.1=pass

write_base_config "agent.sysfs_root=$T/mnt" \
	collector.ifs.schedule=true collector.ifs.interval=1s collector.ifs.retry_backoff=300ms \
	collector.ifs.poll=50ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent

loads() { awk '$3 == "intel_ifs_0"' "$T/mnt/fake_loads" 2>/dev/null; }
three() { [ "$(loads | wc -l)" -ge 3 ]; }
wait_for 20 three || fail "the failed load was not retried: loads $(loads) $(tail -5 "$T/agent.log")"
assert_eq "load outcomes (errno)" "5 5 0" "$(loads | head -3 | awk '{ print $5 }' | xargs)"
assert_eq "batches loaded" "1 1 1" "$(loads | head -3 | awk '{ print $4 }' | xargs)"
# The waits between the end of one attempt and the start of the next.
gaps=$(loads | head -3 | awk 'NR > 1 { print $1 - end } { end = $2 }' | xargs)
read -r g1 g2 <<<"$gaps"
assert_ge "first wait (ms)" 290 "$g1"
assert_ge "second wait (ms)" 590 "$g2"
[ "$g2" -lt 5000 ] || fail "second wait $g2 ms: not the doubling from 300 ms"

back() { [ "$(metric 'sysobs_ifs_image_loaded{test="scan"}')" = 1 ]; }
wait_for 10 back || fail "image not loaded again"
assert_eq "failed reloads counted" 2 "$(metric 'sysobs_ifs_image_reloads_total{test="scan",result="error"}')"
assert_eq "reloads that loaded" 1 "$(metric 'sysobs_ifs_image_reloads_total{test="scan",result="ok"}')"
rows() { api GET "/api/v1/ifs/scans?test=scan&limit=100$1"; }
errs=$(rows '&result=error' | jq -c '[.data[] | [.error_name, .error_file, .write_errno]] | unique')
assert_eq "failed loads named" '[["image_load_failed","current_batch",5]]' "$errs"
passed() { [ "$(rows '&result=pass&core=0' | jq '.data | length')" -ge 1 ]; }
wait_for 10 passed || fail "core 0 never passed after the reload: $(rows '' | jq -c '[.data[] | [.core, .status, .error_name]]')"
grep -q 'ifs: scan: loading batch 1 failed (Input/output error); the device has no image: retrying in 300 ms' \
	"$T/agent.log" || fail "the retry was not logged"
grep -q 'ifs: scan: an image is loaded again' "$T/agent.log" || fail "the recovery was not logged"
pass "a failed reload (EIO x2) is retried after $g1 and $g2 ms, counted (2 error, 1 ok), and core 0 passes again"
