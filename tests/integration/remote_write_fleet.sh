#!/usr/bin/env bash
# remote_write for a fleet, against the real receivers, all on loopback:
#  1. identity: two agents with the default config, each in a UTS namespace
#     of its own (host names hostA and hostB), push into one Prometheus
#     (--web.enable-remote-write-receiver): every family arrives twice, once
#     per instance, with job="sysobs" (nothing merged); a second Prometheus
#     scraping both with the shipped deploy/prometheus/scrape.yml (the host
#     names resolved through an /etc/hosts of its own mount namespace) sees
#     the same label sets as the pushed ones.
#  2. histograms: hostB pushes through a proxy that holds each request for
#     2, 8, 30, 80, 200 ms in turn (tests/tools/rw_delay_proxy.py), so its
#     sysobs_remote_write_batch_duration_seconds spreads over five buckets;
#     the pushed NAME_bucket{le} series give Prometheus' histogram_quantile
#     the agent's own quantiles (computed here from its /metrics buckets the
#     way Prometheus does) within one bucket, for p50 and p90.
#  3. metadata: Prometheus accepts the agents' metadata requests (its
#     receiver does not store them: /api/v1/metadata of 2.42 lists scraped
#     targets' metadata only), so a third agent (hostC) sends to a receiver
#     that keeps the bodies, decoded with the project's own .proto: the
#     first request is metadata, it names every family of hostC's /metrics
#     with its type and help, and it comes again every metadata_interval.
#  4. a second receiver: a second agent on hostA's database (its own cursor,
#     [remote_write] cursor = vm; no snapshots of its own) sends the same
#     history into VictoriaMetrics: over a closed window, every series of
#     hostA has as many raw samples in VictoriaMetrics as in Prometheus.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd prometheus
need_cmd unshare
need_cmd jq
unshare --uts true 2>/dev/null || skip "cannot create a UTS namespace"
unshare --mount true 2>/dev/null || skip "cannot create a mount namespace"

declare -A APID=() APORT=()

# start_host NAME [REMOTE_WRITE-LINES...]: an agent whose host name is
# NAME (own UTS namespace; HOST= to give another), its database and log in
# $T/NAME.* (DB= to use another's database), pushing to $RW_URL, a snapshot
# every SNAPSHOT (1s).
start_host() {
	local h=$1
	shift
	cat >"$T/$h.ini" <<INI
[agent]
user = root
[http]
listen = 127.0.0.1:0
[storage]
path = $T/${DB:-$h}.db
batch_ms = 50
snapshot_interval = ${SNAPSHOT:-1s}
[collector.drops]
enabled = false
[collector.cachefiles]
enabled = false
[remote_write]
url = $RW_URL
send_interval = 200ms
INI
	printf '%s\n' "$@" >>"$T/$h.ini"
	rm -f "$T/$h.port"
	unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "${HOST:-$h}" \
		"$SYSOBSD" --config "$T/$h.ini" --port-file "$T/$h.port" >>"$T/$h.log" 2>&1 &
	APID[$h]=$!
	on_exit "kill ${APID[$h]} 2>/dev/null; wait ${APID[$h]} 2>/dev/null"
	wait_for 10 test -s "$T/$h.port" || fail "agent $h did not start: $(tail -5 "$T/$h.log")"
	APORT[$h]=$(cat "$T/$h.port")
}
# hmetric HOST 'name{labels}': one series' value from that agent's /metrics.
hmetric() { PORT=${APORT[$1]} metric "$2"; }

RX_YML=$T/rx.yml
echo "global: {}" >"$RX_YML"
start_prometheus rx "$RX_YML" --web.enable-remote-write-receiver
RX=$PROM_PORT
RW_URL=http://127.0.0.1:$RX/api/v1/write

python3 "$SYSOBS_SRC/tests/tools/rw_delay_proxy.py" "$T/proxy.port" "$RW_URL" \
	0.002 0.008 0.03 0.08 0.2 >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
on_exit "kill $PROXY_PID"
wait_for 10 test -s "$T/proxy.port" || fail "delay proxy did not start: $(cat "$T/proxy.log")"

start_host hostA
RW_URL=http://127.0.0.1:$(cat "$T/proxy.port")/api/v1/write start_host hostB batch_samples=100

# ---- 1. identity ----
both() { [ "$(promq "$RX" 'count(sysobs_build_info{job="sysobs"})' | jq -r '.[0].value[1] // 0')" = 2 ]; }
wait_for 30 both || fail "Prometheus does not have build_info of both hosts: $(promq "$RX" sysobs_build_info)"
instances=$(promq "$RX" 'count by (instance) ({job="sysobs"})' | jq -r '[.[].metric.instance] | sort | join(",")')
assert_eq "instances in the receiver" "hostA,hostB" "$instances"
assert_eq "series without job or instance" 0 \
	"$(promq "$RX" 'count({__name__=~".+", job=""} or {__name__=~".+", instance=""})' | jq 'length')"
# Families with the same series on every agent: two of each in the
# receiver, one per host (merged, they would be one).
n_coll=$(curl -sS "http://127.0.0.1:${APORT[hostA]}/metrics" | grep -c '^sysobs_collector_up{')
for fam in sysobs_build_info process_start_time_seconds sysobs_history_samples_written_total \
	sysobs_remote_write_samples_sent_total sysobs_collector_up; do
	want=2
	[ "$fam" != sysobs_collector_up ] || want=$((2 * n_coll))
	got() { [ "$(promq "$RX" "count($fam)" | jq -r '.[0].value[1] // 0')" = "$want" ]; }
	wait_for 10 got || fail "$fam: $(promq "$RX" "count($fam)" | jq -r '.[0].value[1]') series in the receiver, want $want"
	for h in hostA hostB; do
		assert_eq "$fam series of $h" "$((want / 2))" \
			"$(promq "$RX" "count($fam{instance=\"$h\",job=\"sysobs\"})" | jq -r '.[0].value[1] // 0')"
	done
done
n_series=$(promq "$RX" 'count({job="sysobs"})' | jq -r '.[0].value[1]')

# The shipped scrape job gives scraped series the same labels: a second
# Prometheus scrapes hostA and hostB by name (its own /etc/hosts).
printf '127.0.0.1 localhost hostA hostB\n' >"$T/hosts"
mkdir -p "$T/bin"
cat >"$T/bin/prometheus" <<SH
#!/bin/sh
exec unshare --mount sh -c 'mount --bind "\$0" /etc/hosts && exec $(command -v prometheus) "\$@"' "$T/hosts" "\$@"
SH
chmod +x "$T/bin/prometheus"
sed -e "s/targets: .*/targets: [\"hostA:${APORT[hostA]}\", \"hostB:${APORT[hostB]}\"]/" \
	-e 's/^scrape_configs:/global: {scrape_interval: 1s}\nscrape_configs:/' \
	"$SYSOBS_SRC/deploy/prometheus/scrape.yml" >"$T/scrape.yml"
PATH=$T/bin:$PATH start_prometheus scrape "$T/scrape.yml"
SCRAPE=$PROM_PORT
scraped() { [ "$(promq "$SCRAPE" 'count(up == 1)' | jq -r '.[0].value[1] // 0')" = 2 ]; }
wait_for 30 scraped || fail "the scrape Prometheus has no 2 targets up: $(promq "$SCRAPE" up)"
labelsets() { promq "$1" "$2" | jq -c '[.[].metric] | sort_by(.instance)'; }
for q in sysobs_build_info 'sysobs_collector_up{collector="self"}'; do
	assert_eq "labels of $q scraped vs pushed" "$(labelsets "$SCRAPE" "$q")" "$(labelsets "$RX" "$q")"
done
pass "identity: two agents (hostA, hostB) with the default config into one Prometheus: $n_series series, every checked family twice (once per instance, job=sysobs), none merged; the shipped scrape job gives the same label sets"

# ---- 2. histograms: quantiles in the receiver equal the agent's ----
H=sysobs_remote_write_batch_duration_seconds
# quantile Q: histogram_quantile's arithmetic on "le count" lines (cumulative,
# ascending, +Inf last), then the index of the bucket the result is in.
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
bucket_of() { # VALUE: index of the first bound >= VALUE
	curl -sS "http://127.0.0.1:${APORT[hostB]}/metrics" |
		awk -v v="$1" -v n="${H}_bucket" 'index($0, n "{") == 1 {
			i++; split($0, a, "le=\""); split(a[2], b, "\""); le = b[1]
			if (le == "+Inf" || le + 0 >= v + 0) { print i; exit } }'
}
agent_buckets() {
	curl -sS "http://127.0.0.1:${APORT[hostB]}/metrics" |
		awk -v n="${H}_bucket" 'index($0, n "{") == 1 {
			split($0, a, "le=\""); split(a[2], b, "\""); print b[1], $NF }'
}
enough_obs() { [ "$(hmetric hostB "${H}_count{destination=\"remote_write\"}")" -ge 100 ] 2>/dev/null; }
wait_for 90 enough_obs || fail "hostB made $(hmetric hostB "${H}_count{destination=\"remote_write\"}") requests, want 100"
pushed_n() { promq "$RX" "${H}_count{instance=\"hostB\"}" | jq -r '.[0].value[1] // 0'; }
pushed_100() { [ "$(pushed_n)" -ge 100 ]; }
wait_for 20 pushed_100 || fail "Prometheus has ${H}_count $(pushed_n)"
n_le=$(promq "$RX" "count(${H}_bucket{instance=\"hostB\",job=\"sysobs\"})" | jq -r '.[0].value[1]')
n_le_agent=$(agent_buckets | wc -l)
assert_eq "bucket series of $H in Prometheus" "$n_le_agent" "$n_le"
# One query, one instant: +Inf and _count of the same pushed snapshot.
diff=$(promq "$RX" "${H}_count{instance=\"hostB\"} - ignoring(le) ${H}_bucket{instance=\"hostB\",le=\"+Inf\"}" | jq -r '.[0].value[1]')
assert_eq "_count minus the +Inf bucket in Prometheus" 0 "$diff"
cnt=$(pushed_n)
for q in 0.5 0.9; do
	qa=$(agent_buckets | quantile "$q")
	qp=$(promq "$RX" "histogram_quantile($q, ${H}_bucket{instance=\"hostB\"})" | jq -r '.[0].value[1]')
	ba=$(bucket_of "$qa") bp=$(bucket_of "$qp")
	[ "$ba" -ge 1 ] && [ "$bp" -ge 1 ] && [ $((ba > bp ? ba - bp : bp - ba)) -le 1 ] ||
		fail "p$q: Prometheus $qp (bucket $bp), agent $qa (bucket $ba)"
	echo "p$q of $H: Prometheus $qp s (bucket $bp), agent /metrics $qa s (bucket $ba)"
	eval "q_${q#0.}=\$qp"
done
awk -v a="$q_5" -v b="$q_9" 'BEGIN { exit !(a > 0.005 && b > 0.05) }' ||
	fail "quantiles $q_5, $q_9 do not show the proxy's delays"
pass "histograms: $n_le bucket series of $H pushed (+Inf = _count = $cnt); histogram_quantile in Prometheus p50 $q_5 s, p90 $q_9 s, each within one bucket of the agent's own"

# ---- 3. metadata ----
meta_sent() { [ "$(hmetric hostA 'sysobs_remote_write_metadata_sent_total{destination="remote_write"}')" -gt 0 ] 2>/dev/null; }
wait_for 10 meta_sent || fail "Prometheus did not accept hostA's metadata: $(grep metadata "$T/hostA.log")"
PY=/usr/bin/python3
if command -v protoc >/dev/null && $PY -c 'import google.protobuf' 2>/dev/null; then
	mkdir -p "$T/py" "$T/bodies"
	protoc --python_out="$T/py" -I"$SYSOBS_SRC" exporters/proto/prometheus/types.proto \
		exporters/proto/prometheus/remote.proto || fail "protoc could not compile remote.proto"
	python3 "$SYSOBS_SRC/tests/tools/rw_fake_receiver.py" --save "$T/bodies" "$T/fake.port" \
		"$T/fake.log" >"$T/fake.out" 2>&1 &
	FAKE_PID=$!
	on_exit "kill $FAKE_PID"
	wait_for 10 test -s "$T/fake.port" || fail "fake receiver did not start"
	RW_URL=http://127.0.0.1:$(cat "$T/fake.port")/api/v1/write start_host hostC \
		metadata_interval=2s
	t_start=$(date +%s.%N)
	meta_bodies() {
		for f in "$T"/bodies/*.bin; do
			[ -e "$f" ] && $PY "$SYSOBS_SRC/tests/tools/rw_decode.py" "$T/py" "$f"
		done | jq -c 'select(.metadata | length > 0)'
	}
	three() { [ "$(meta_bodies | wc -l)" -ge 3 ]; }
	wait_for 15 three || fail "$(meta_bodies | wc -l) metadata requests from hostC in 15 s"
	elapsed=$(echo "$(date +%s.%N) - $t_start" | bc -l)
	$PY "$SYSOBS_SRC/tests/tools/rw_decode.py" "$T/py" "$T/bodies/1.bin" >"$T/first.json"
	assert_eq "families in hostC's first request (metadata at start)" true \
		"$(jq '.metadata | length > 50' "$T/first.json")"
	# Every family of /metrics, with the same type and help.
	curl -sS "http://127.0.0.1:${APORT[hostC]}/metrics" >"$T/hostC.txt"
	$PY - "$T/hostC.txt" "$T/first.json" <<'PYEOF' || fail "metadata disagrees with /metrics"
import json, sys
help_, type_ = {}, {}
for line in open(sys.argv[1]):
    if line.startswith("# HELP "):
        name, _, text = line[7:].rstrip("\n").partition(" ")
        help_[name] = text.replace("\\n", "\n").replace("\\\\", "\\")
    elif line.startswith("# TYPE "):
        name, _, t = line[7:].split()[0], None, line.split()[3]
        type_[name] = t.upper()
meta = {m["name"]: m for m in json.load(open(sys.argv[2]))["metadata"]}
missing = sorted(set(type_) - set(meta))
assert not missing, f"families without metadata: {missing}"
for name, t in type_.items():
    assert meta[name]["type"] == t, f"{name}: type {meta[name]['type']}, /metrics says {t}"
    assert meta[name]["help"] == help_[name], f"{name}: help {meta[name]['help']!r}"
print(f"metadata: {len(type_)} families of /metrics, each with its type and help")
PYEOF
	n_meta=$(jq '.metadata | length' "$T/first.json")
	pass "metadata: Prometheus accepted hostA's ($(hmetric hostA 'sysobs_remote_write_metadata_sent_total{destination="remote_write"}') families); hostC sent $n_meta families first thing and $(meta_bodies | wc -l) metadata requests in ${elapsed%.*} s at metadata_interval=2s, every family of /metrics with its type and help"
else
	echo "note: metadata contents not checked (needs protoc and python3-protobuf)"
fi

# ---- 4. the same stream into VictoriaMetrics ----
if ! command -v victoria-metrics >/dev/null; then
	echo "note: VictoriaMetrics part not run (needs victoria-metrics, scripts/deps.sh installs it)"
	exit 0
fi
start_victoria
VM=$VM_PORT
RW_URL=http://127.0.0.1:$VM/api/v1/write HOST=hostA DB=hostA SNAPSHOT=0 start_host hostA-vm cursor=vm
# A closed window of hostA's history, its bounds half-way between snapshots
# (sample timestamps are snapshot times, 1 s apart): [t0, t1] in ms.
last_ts() { promq "$RX" 'timestamp(sysobs_build_info{instance="hostA"})' | jq -r '.[0].value[1] | tonumber * 1000 | floor'; }
t0=$(($(last_ts) + 500))
sleep "${RW_FLEET_WINDOW_S:-12}"
t1=$(($(last_ts) - 4500))
past_t1() {
	local h
	for h in hostA hostA-vm; do
		h=$(hmetric "$h" 'sysobs_remote_write_highest_sent_timestamp_seconds{destination="remote_write"}')
		awk -v h="$h" -v t="$t1" 'BEGIN { exit !(h * 1000 > t + 1000) }' || return 1
	done
}
wait_for 60 past_t1 || fail "senders not past the window: hostA $(hmetric hostA 'sysobs_remote_write_highest_sent_timestamp_seconds{destination="remote_write"}'), vm $(hmetric hostA-vm 'sysobs_remote_write_highest_sent_timestamp_seconds{destination="remote_write"}')"
curl -sf "http://127.0.0.1:$VM/internal/force_flush" >/dev/null || fail "VictoriaMetrics force_flush"
# Raw samples per series (labels sorted, as one key) in each receiver.
rw_counts_vm "$VM" '{instance="hostA"}' "$t0" "$t1" >"$T/vm.counts"
span=$(((t1 - t0) / 1000 + 1))
rw_counts_prom "$RX" '{instance="hostA",job="sysobs"}' "$t0" "$t1" >"$T/prom.counts"
n_prom=$(jq 'length' "$T/prom.counts")
n_vm=$(jq 'length' "$T/vm.counts")
s_prom=$(jq '[.[]] | add' "$T/prom.counts")
s_vm=$(jq '[.[]] | add' "$T/vm.counts")
diffs=$(rw_counts_diff "$T/prom.counts" "$T/vm.counts")
[ "$diffs" = "[]" ] || fail "sample counts per series differ (of $n_prom/$n_vm series; a: Prometheus, b: VictoriaMetrics): $diffs"
assert_ge "series of hostA in the window" 200 "$n_prom"
pass "second receiver: hostA's history into Prometheus and (another agent on its database, cursor vm) VictoriaMetrics: over $((span - 1)) s, $n_prom series with $s_prom samples in Prometheus, $n_vm with $s_vm in VictoriaMetrics, equal per series"
