#!/usr/bin/env bash
# remote_write with [remote_write] native_histograms = true, into the real
# Prometheus 2.42 (--enable-feature=native-histograms
# --web.enable-remote-write-receiver), on loopback. The agent pushes through
# a proxy that holds each request for 2, 8, 30, 80, 200 ms in turn
# (tests/tools/rw_delay_proxy.py), so its own
# sysobs_remote_write_batch_duration_seconds spreads over known buckets.
#  - what arrives: H as one native histogram series, no H_bucket, H_count or
#    H_sum series (as Prometheus's own sender sends a native histogram);
#    nothing dropped by the sender or refused by Prometheus;
#  - histogram_count(H) and histogram_sum(H) at a pushed sample's time equal
#    the agent's history (its _count and _sum rows of that snapshot);
#  - histogram_quantile(q, rate(H[1m])) for p50 and p90 is within one bucket
#    of the agent's own quantile, computed from its classic buckets on
#    /metrics the way Prometheus computes one from _bucket series.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd prometheus
need_cmd jq
need_cmd sqlite3

H=sysobs_remote_write_batch_duration_seconds
INST=native-test

echo "global: {}" >"$T/rx.yml"
start_prometheus rx "$T/rx.yml" --enable-feature=native-histograms \
	--web.enable-remote-write-receiver
RX=$PROM_PORT

python3 "$SYSOBS_SRC/tests/tools/rw_delay_proxy.py" "$T/proxy.port" \
	"http://127.0.0.1:$RX/api/v1/write" 0.002 0.008 0.03 0.08 0.2 >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
on_exit "kill $PROXY_PID"
wait_for 10 test -s "$T/proxy.port" || fail "delay proxy did not start: $(cat "$T/proxy.log")"

write_base_config storage.snapshot_interval=1s collector.drops.enabled=false \
	collector.cachefiles.enabled=false \
	remote_write.url="http://127.0.0.1:$(cat "$T/proxy.port")/api/v1/write" \
	remote_write.send_interval=200ms remote_write.batch_samples=50 \
	remote_write.native_histograms=true remote_write.instance=$INST
start_agent
on_exit "kill $AGENT_PID 2>/dev/null; wait $AGENT_PID 2>/dev/null"

enough_obs() { [ "$(metric "${H}_count{destination=\"remote_write\"}")" -ge 100 ] 2>/dev/null; }
wait_for 40 enough_obs || fail "the agent made $(metric "${H}_count{destination=\"remote_write\"}") requests, want 100"

# ---- what arrives ----
sel="{instance=\"$INST\",job=\"sysobs\"}"
pushed() { promq "$RX" "count(${H}$sel)" | jq -r '.[0].value[1] // 0'; }
wait_for 10 test "$(pushed)" = 1 || fail "Prometheus has no native $H: $(promq "$RX" "${H}$sel")"
for suffix in _bucket _count _sum; do
	assert_eq "${H}$suffix series in Prometheus" 0 \
		"$(promq "$RX" "count(${H}$suffix$sel)" | jq -r '.[0].value[1] // 0')"
done
# A float series still goes as samples.
assert_eq "sysobs_build_info in Prometheus" 1 \
	"$(promq "$RX" "count(sysobs_build_info$sel)" | jq -r '.[0].value[1] // 0')"
assert_eq "samples the sender dropped or failed" 0 \
	"$(curl -sS "http://127.0.0.1:$PORT/metrics" |
		awk '/^sysobs_remote_write_samples_(dropped|failed)_total/ { s += $NF } END { print s + 0 }')"

# ---- count and sum equal the agent's history ----
# The newest pushed histogram (raw samples of the last 2 minutes).
last=$(curl -sS -g --max-time 5 "http://127.0.0.1:$RX/api/v1/query" \
	--data-urlencode "query=${H}${sel}[2m]" | jq -c '.data.result[0].histograms[-1]')
[ -n "$last" ] && [ "$last" != null ] || fail "no raw histogram samples of $H in Prometheus"
ts=$(jq -r '.[0]' <<<"$last")
ms=$(awk -v t="$ts" 'BEGIN { printf "%.0f", t * 1000 }')
at() { # PromQL at the pushed sample's time: its value
	curl -sS -g --max-time 5 "http://127.0.0.1:$RX/api/v1/query" --data-urlencode "query=$1" \
		--data-urlencode "time=$ts" | jq -r '.data.result[0].value[1] // empty'
}
db_at() { # NAME: the agent's history value of NAME at that snapshot
	sqlite3 "file:$T/sysobs.db?mode=ro" "SELECT s.value FROM metric_samples s
		JOIN metric_series r ON r.id = s.series_id
		WHERE r.name = '$1' AND s.ts / 1000000 = $ms"
}
cnt=$(at "histogram_count(${H}$sel)")
want=$(db_at "${H}_count")
[ -n "$want" ] || fail "no ${H}_count row at $ms ms in the agent's history"
assert_eq "histogram_count at $ts vs the history's _count" "$(printf '%.0f' "$want")" "$cnt"
assert_eq "count in the raw sample" "$cnt" "$(jq -r '.[1].count' <<<"$last")"
sum=$(at "histogram_sum(${H}$sel)")
awk -v a="$sum" -v b="$(db_at "${H}_sum")" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }' ||
	fail "histogram_sum at $ts: $sum, the history's _sum $(db_at "${H}_sum")"
n_buckets=$(jq -r '.[1].buckets | length' <<<"$last")
assert_ge "native buckets of the pushed histogram" 5 "$n_buckets"

# ---- quantiles: within one classic bucket of the agent's own ----
# quantile Q: histogram_quantile's arithmetic on "le count" lines (cumulative,
# ascending, +Inf last).
quantile() {
	awk -v q="$1" '{ le[NR] = $1; c[NR] = $2 } END {
		rank = q * c[NR]; b = 1
		while (c[b] < rank) b++
		if (le[b] == "+Inf") { v = le[NR - 1] }
		else {
			lo = b > 1 ? le[b - 1] : 0; below = b > 1 ? c[b - 1] : 0
			v = lo + (le[b] - lo) * (rank - below) / (c[b] - below)
		}
		print v
	}'
}
agent_buckets() {
	curl -sS "http://127.0.0.1:$PORT/metrics" | awk -v n="${H}_bucket" 'index($0, n "{") == 1 {
		split($0, a, "le=\""); split(a[2], b, "\""); print b[1], $NF }'
}
bucket_of() { # VALUE: index of the agent's first classic bound >= VALUE
	agent_buckets | awk -v v="$1" '{ i++; if ($1 == "+Inf" || $1 + 0 >= v + 0) { print i; exit } }'
}
declare -A qs=()
for q in 0.5 0.9; do
	qa=$(agent_buckets | quantile "$q")
	qp=$(at "histogram_quantile($q, rate(${H}${sel}[1m]))")
	[ -n "$qp" ] || fail "p$q: no histogram_quantile from Prometheus"
	ba=$(bucket_of "$qa") bp=$(bucket_of "$qp")
	[ "$ba" -ge 1 ] && [ "$bp" -ge 1 ] && [ $((ba > bp ? ba - bp : bp - ba)) -le 1 ] ||
		fail "p$q: Prometheus $qp (bucket $bp), agent $qa (bucket $ba)"
	echo "p$q of $H: Prometheus (native) $qp s (bucket $bp), agent /metrics $qa s (bucket $ba)"
	qs[$q]=$qp
done
awk -v a="${qs[0.5]}" -v b="${qs[0.9]}" 'BEGIN { exit !(a > 0.005 && b > 0.05) }' ||
	fail "quantiles ${qs[0.5]}, ${qs[0.9]} do not show the proxy's delays"
pass "native histograms: $H pushed as one native series ($n_buckets buckets, no _bucket/_count/_sum), histogram_count $cnt and histogram_sum equal to the agent's history at $ts; histogram_quantile(rate[1m]) p50 ${qs[0.5]} s, p90 ${qs[0.9]} s, each within one bucket of the agent's own"
