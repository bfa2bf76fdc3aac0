#!/usr/bin/env bash
# integration.export_refusals: answers about the receiver, not the data, never
# move a cursor. Two scripted receivers on loopback (remote_write, and an
# event export in the ClickHouse format) answer 401, then 403, then 404,
# each for EXPORT_REFUSALS_PHASE_S seconds (default 5), then 204: the agent
# keeps each batch (the first request and the first one accepted carry the
# same bytes), counts the attempts as retried, refuses nothing, and once
# the receiver takes data every row up to the cursor has arrived.
source "$(dirname "$0")/lib.sh"
need_cmd sqlite3
need_cmd jq
need_cmd python3

PHASE=${EXPORT_REFUSALS_PHASE_S:-5}
for r in rw ch; do
	mkdir -p "$T/$r.bodies"
	receiver_start "$r" --save "$T/$r.bodies" -- "401/$PHASE" "403/$PHASE" "404/$PHASE"
done

write_base_config storage.snapshot_interval=1s collector.self.interval=200ms \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false collector.ifs.enabled=false \
	"remote_write.url=http://127.0.0.1:$(cat "$T/rw.port")/api/v1/write" \
	remote_write.batch_samples=40 remote_write.metadata_interval=0 \
	remote_write.min_backoff=100ms remote_write.max_backoff=500ms \
	export.ch.format=clickhouse "export.ch.url=http://127.0.0.1:$(cat "$T/ch.port")/" \
	export.ch.tables=self_samples export.ch.batch_rows=5 export.ch.send_interval=1s export.ch.gzip=false \
	export.ch.min_backoff=100ms export.ch.max_backoff=500ms
start_agent

accepted() { jq -e 'select(.status == 204)' "$T/$1.log" >/dev/null 2>&1; }
wait_for $((3 * PHASE + 15)) accepted rw || fail "remote_write: nothing accepted after the refusals"
wait_for 15 accepted ch || fail "export: nothing accepted after the refusals"
# rw_m NAME [LABELS]: remote_write's series NAME{destination="remote_write"[,LABELS]}
rw_m() { metric "sysobs_remote_write_$1{destination=\"remote_write\"${2:+,$2}}"; }
ch_m() { metric "sysobs_export_$1{destination=\"ch\"${2:-}}"; }
# caught up: no backlog left (a snapshot, ~100 samples, or a few self rows
# may always be waiting for the next turn)
caught_up() { [ "$(rw_m pending_samples)" -lt 200 ] && [ "$(ch_m pending_rows)" -lt 10 ]; }
wait_for 20 caught_up || fail "not caught up: rw $(rw_m pending_samples), ch $(ch_m pending_rows)"

for r in rw ch; do
	# every refusal was answered in turn, and retried
	assert_eq "$r: answers seen" "401 403 404 204" \
		"$(jq -r .status "$T/$r.log" | uniq | head -4 | paste -sd' ')"
	first=$(jq -r 'select(.n == 1) | .sha' "$T/$r.log")
	ok=$(jq -r 'select(.status == 204) | .sha' "$T/$r.log" | head -1)
	assert_eq "$r: the first batch is the first one accepted (the cursor did not move)" "$first" "$ok"
done
refusals=$(jq -s 'map(select(.status != 204)) | length' "$T/rw.log")
assert_eq "remote_write samples refused" 0 "$(rw_m samples_failed_total)"
for why in too_old deleted invalid; do
	assert_eq "remote_write samples dropped ($why)" 0 "$(rw_m samples_dropped_total "reason=\"$why\"")"
done
r=$(rw_m samples_retried_total)
assert_ge "remote_write samples retried" 40 "${r%.*}"
for why in refused rejected too_old deleted; do
	assert_eq "export rows dropped ($why)" 0 "$(ch_m rows_dropped_total ",reason=\"$why\"")"
done
r=$(ch_m rows_retried_total)
assert_ge "export rows retried" 5 "${r%.*}"
stop_agent

# Every self row up to the export's cursor arrived in an accepted body.
cursor=$(sqlite3 "$T/sysobs.db" "SELECT value FROM store_meta WHERE key = 'cursor.export.ch'")
assert_ge "export cursor" 1 "${cursor:-0}"
jq -r 'select(.status == 204) | .n' "$T/ch.log" | while read -r n; do
	cat "$T/ch.bodies/$n.bin"
done | jq -r .id | sort -un >"$T/arrived"
sqlite3 "$T/sysobs.db" "SELECT id FROM self_samples WHERE id <= $cursor ORDER BY id" >"$T/expected"
expected=$(wc -l <"$T/expected")
assert_ge "self rows up to the cursor" 10 "$expected"
missing=$(comm -23 "$T/expected" "$T/arrived" | wc -l)
assert_eq "self rows up to the cursor missing at the receiver" 0 "$missing"
pass "401, 403, 404 for ${PHASE} s each ($refusals remote_write requests refused): batches kept, none refused; $expected export rows all arrived"
