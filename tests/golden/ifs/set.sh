# shellcheck shell=bash
# golden.ifs: the ifs collector on the IFS fake (tests/fakes/ifs_fake.c)
# with the fixed driver tests/data/golden/ifs/fake.ini: one package of 4
# cores, In-Field Scan only; core 0 and 3 pass, core 1 fails, core 2 ends
# untested (error 6). No schedule, no retries: one API request scans every
# core once. Sourced by tests/golden/run.sh.
need_ifs_fake
start_ifs_fake "$INPUT/fake.ini"
golden_config ifs "agent.sysfs_root=$T/mnt" http.admin=true collector.ifs.poll=100ms \
	collector.ifs.retry_max=0
ROUTES=(/api/v1/ifs/cores /api/v1/ifs/scans)
# scan_id is made of the request's time; last_tested a time; duration_ns
# and the scheduler's hour_used_ms how long the fake took.
GOLDEN_JSON_VARY=(scan_id last_tested duration_ns hour_used_ms)

# Ready when the request was taken and every core has a stored last result
# with nothing pending.
# The counters are published at the collector's next poll after the
# results are stored, and the writer counts the 4 scan rows when it commits
# them: wait for both too (the written count was 0 or 4 by the race).
golden_scans_done() {
	api GET /api/v1/ifs/cores | jq -e '.scheduler.pending == 0 and
		([.data[] | select(.last // [] | length > 0)] | length == 4)' >/dev/null &&
		[ "$(metric_sum sysobs_ifs_scans_total 'test="scan"')" = 4 ] &&
		[ "$(metric sysobs_events_written_total)" = 4 ]
}
golden_ready() {
	wait_collector ifs || return 1
	req POST /api/v1/ifs/scans -H 'Content-Type: application/json' -d '{"cpus":[0,1,2,3]}'
	[ "$HTTP_CODE" = 202 ] || return 1
	wait_for 20 golden_scans_done
}
