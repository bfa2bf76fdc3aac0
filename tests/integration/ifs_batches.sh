#!/usr/bin/env bash
# integration.ifs_batches (issue 21, item 4): scan and SBAF rotate through
# image batches of their own. Their images are separate files with their
# own numbering (/lib/firmware/intel/ifs_0/ff-mm-ss-NN.scan and
# ifs_2/ff-mm-ss-NN.sbft): one rotate_batches list for both had SBAF load
# scan's batches, and fail batch_missing on each it lacks, every lap.
# Through the IFS fake (scan batches 1-3, SBAF batches 1-2), one core:
#  - rotate_batches = 1-3 alone: scan loads 1, 2, 3 in turn; SBAF keeps its
#    image (no current_batch write of intel_ifs_2 in the fake's load log, no
#    batch_missing row);
#  - with rotate_batches_sbaf = 1-2 as well: SBAF loads 1 and 2 in turn and
#    every load of either device succeeds (the fake's log: errno 0 only).
source "$(dirname "$0")/lib.sh"

need_ifs_fake
need_cmd jq

ifs_fake_start devices=0,2 device.0.batches=1,2,3 device.2.image_version=0x100 \
	device.2.batch=1 device.2.batches=1,2 device.2.scan_ms=50

cfg() {
	write_base_config "agent.sysfs_root=$T/mnt" \
		collector.ifs.schedule=true collector.ifs.interval=1s collector.ifs.allow_cpus=0 \
		collector.ifs.retry_max=0 collector.ifs.poll=100ms "$@" \
		collector.drops.enabled=false collector.mptcp.enabled=false \
		collector.cachefiles.enabled=false
}
# loads DEV ERRNO: current_batch writes of intel_ifs_DEV in the fake's log
# with that errno (any: -), from line $L on.
loads() {
	tail -n +"$L" "$T/mnt/fake_loads" | awk -v d="intel_ifs_$1" -v e="$2" \
		'$3 == d && (e == "-" || $5 == e) { n++ } END { print n + 0 }'
}
batches() {
	tail -n +"$L" "$T/mnt/fake_loads" | awk -v d="intel_ifs_$1" '$3 == d && $5 == 0 { print $4 }' |
		sort -un | paste -sd,
}
missing() { db_count ifs_scans "test = '$1' AND error_name = 'batch_missing'"; }

# ---- rotate_batches alone: scan only ----
cfg collector.ifs.rotate_batches=1-3
L=$(($(wc -l <"$T/mnt/fake_loads") + 1))
start_agent
wait_collector ifs
laps() { [ "$(loads 0 0)" -ge 4 ]; } # 1, 2, 3 and 1 again
wait_for 30 laps || fail "scan did not rotate: $(tail -n +"$L" "$T/mnt/fake_loads")"
sleep 1
echo "rotate_batches=1-3: scan loads $(loads 0 -) (batches $(batches 0)), SBAF loads $(loads 2 -)" \
	"(ENOENT $(loads 2 2)), batch_missing rows: scan $(missing scan), sbaf $(missing sbaf)"
assert_eq "scan batches loaded" "1,2,3" "$(batches 0)"
assert_eq "SBAF current_batch writes with scan's list" 0 "$(loads 2 -)"
assert_eq "SBAF batch_missing rows" 0 "$(missing sbaf)"
assert_ge "SBAF runs meanwhile" 2 "$(grep -c intel_ifs_2 "$T/mnt/fake_runs")"
stop_agent
pass "rotate_batches rotates scan only; SBAF keeps its image, no batch_missing"

# ---- both lists ----
cfg collector.ifs.rotate_batches=1-3 collector.ifs.rotate_batches_sbaf=1-2
L=$(($(wc -l <"$T/mnt/fake_loads") + 1))
start_agent
wait_collector ifs
laps2() { [ "$(loads 0 0)" -ge 4 ] && [ "$(loads 2 0)" -ge 3 ]; }
wait_for 30 laps2 || fail "no rotation of both: $(tail -n +"$L" "$T/mnt/fake_loads")"
# Stopped before counting: a load between two counts would read as a failure.
stop_agent
echo "both lists: scan loads $(loads 0 -) (batches $(batches 0)), SBAF loads $(loads 2 -)" \
	"(batches $(batches 2)), failed loads $(($(loads 0 -) - $(loads 0 0) + $(loads 2 -) - $(loads 2 0)))"
assert_eq "scan batches" "1,2,3" "$(batches 0)"
assert_eq "SBAF batches" "1,2" "$(batches 2)"
assert_eq "failed loads, scan" "$(loads 0 0)" "$(loads 0 -)"
assert_eq "failed loads, SBAF" "$(loads 2 0)" "$(loads 2 -)"
assert_eq "batch_missing rows" 0 "$(db_count ifs_scans "error_name = 'batch_missing'")"
pass "rotate_batches_sbaf rotates SBAF through its own batches, no load fails"
