#!/usr/bin/env bash
# integration.prometheus: Debian's real Prometheus scrapes the agent the way
# it wants to:
#   - with --enable-feature=native-histograms it negotiates delimited
#     protobuf (the agent counts it in sysobs_scrapes_total{format}) and
#     gets native histograms: histogram_count() answers, which it only does
#     for native ones;
#   - without the flag it negotiates OpenMetrics 1.0.0 and gets the classic
#     buckets; histogram_count() has nothing to work on;
#   - histogram_quantile(0.99, rate(...[1m])) over the native buckets of
#     the IFS scan duration answers inside the native bucket (schema 3) of
#     the 300 ms every run_test write of the IFS fake takes;
#   - with --enable-feature=exemplar-storage, the drop counter's exemplar
#     (sample_id) names a sample stored in the agent's history whose
#     destination port is the test's (UDP to a closed port in a netns the
#     test creates);
#   - a scrape job with params collect[]: [self] gets the self collector's
#     families and the agent's own (process_*), nothing of another collector;
#   - the text format passes promtool check metrics, the OpenMetrics text
#     passes the prometheus_client OpenMetrics parser (strict: # EOF,
#     _created, exemplars, units), and their samples agree.
source "$(dirname "$0")/lib.sh"

need_cmd prometheus
need_cmd promtool
need_cmd jq
PY=/usr/bin/python3
$PY -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip "needs python3-prometheus-client (scripts/deps.sh installs it)"

# The IFS fake: every array BIST run blocks its run_test write for 300 ms.
HAVE_IFS=
if ifs_fake_usable; then
	ifs_fake_start scan_ms=300 devices=1 device.1.default=pass
	HAVE_IFS=1
fi
# Drops in a namespace of our own: UDP to a closed port.
NS=
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && netns_new "sysobs-prom-$$" 2>/dev/null; then
	NS=sysobs-prom-$$
fi
ifs_keys=()
[ -z "$HAVE_IFS" ] || ifs_keys=("agent.sysfs_root=$T/mnt" collector.ifs.schedule=true
	collector.ifs.interval=1s collector.ifs.poll=100ms collector.ifs.max_scan_seconds_per_hour=3600)
write_base_config collector.self.interval=1s collector.drops.interval=200ms \
	collector.drops.netns_label=true "${ifs_keys[@]}"
start_agent

cat >"$T/native.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: sysobs
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
cat >"$T/classic.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: sysobs
    static_configs:
      - targets: ['127.0.0.1:$PORT']
  - job_name: only_self
    params:
      'collect[]': [self]
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus native "$T/native.yml" --enable-feature=native-histograms,exemplar-storage
NATIVE=$PROM_PORT
start_prometheus classic "$T/classic.yml"
CLASSIC=$PROM_PORT

# A few scrapes of each.
scraped() {
	[ "$(metric 'sysobs_scrapes_total{format="protobuf"}')" -ge 4 ] 2>/dev/null &&
		[ "$(metric 'sysobs_scrapes_total{format="openmetrics"}')" -ge 8 ] 2>/dev/null
}
wait_for 60 scraped || fail "prometheus did not scrape protobuf and OpenMetrics: " \
	"$(curl -sS "http://127.0.0.1:$PORT/metrics" | grep sysobs_scrapes_total)"
up() { [ "$(promq "$1" "up{job=\"$2\"}" | jq -r '.[0].value[1]')" = 1 ]; }
wait_for 20 up "$NATIVE" sysobs || fail "native prometheus: target not up"
wait_for 20 up "$CLASSIC" sysobs || fail "classic prometheus: target not up"
wait_for 20 up "$CLASSIC" only_self || fail "classic prometheus: collect[] target not up"

# Native histograms in the protobuf-scraping Prometheus only.
HQ='histogram_count(sysobs_http_request_duration_seconds{route="/metrics"})'
native_count() { [ "$(promq "$NATIVE" "$HQ" | jq 'length')" -ge 1 ]; }
wait_for 20 native_count || fail "no native histogram in the native-histograms Prometheus: $(promq "$NATIVE" "$HQ")"
n=$(promq "$NATIVE" "$HQ" | jq -r '.[0].value[1]')
[ "${n%.*}" -ge 1 ] || fail "native histogram count $n"
assert_eq "classic Prometheus has no native histogram" 0 "$(promq "$CLASSIC" "$HQ" | jq 'length')"
[ "$(promq "$CLASSIC" 'sysobs_http_request_duration_seconds_bucket{route="/metrics",le="+Inf"}' | jq 'length')" -ge 1 ] ||
	fail "classic Prometheus lacks the classic buckets"
# Quantiles from native buckets land in the native bucket of the latency
# the runs had: schema 3 bucket -13 is (2^(-14/8), 2^(-13/8)] =
# (0.2973, 0.3242] s for the median of 300 ms runs; the p99 is in or below
# the bucket of the slowest run the agent stored (a loaded machine adds a
# few ms to a FUSE write now and then).
if [ -n "$HAVE_IFS" ]; then
	QQ='histogram_quantile(0.99, rate(sysobs_ifs_scan_duration_seconds{test="array"}[1m]))'
	QM='histogram_quantile(0.5, rate(sysobs_ifs_scan_duration_seconds{test="array"}[1m]))'
	quantile() { [ "$(promq "$NATIVE" "$QQ" | jq 'length')" -ge 1 ] &&
		[ "$(promq "$NATIVE" "$QQ" | jq -r '.[0].value[1]')" != NaN ]; }
	wait_for 40 quantile || fail "no native IFS scan duration quantile: $(promq "$NATIVE" "$QQ")"
	q=$(promq "$NATIVE" "$QQ" | jq -r '.[0].value[1]')
	m=$(promq "$NATIVE" "$QM" | jq -r '.[0].value[1]')
	slowest=$(api GET '/api/v1/ifs/scans?test=array&limit=1000' |
		jq '[.data[].duration_ns | tonumber] | max / 1e9')
	awk -v m="$m" 'BEGIN { exit !(m > 2^(-14/8) && m <= 2^(-13/8)) }' ||
		fail "median of 300 ms runs from native buckets is $m, outside (0.2973, 0.3242]"
	awk -v q="$q" -v s="$slowest" 'BEGIN { up = 2^(int(8 * log(s) / log(2) + 1) / 8);
		exit !(q > 2^(-14/8) && q <= up) }' ||
		fail "p99 from native buckets is $q: not in (0.2973, bucket of the slowest run $slowest]"
	echo "IFS scan from native buckets: p50 $m s, p99 $q s (runs of 300 ms, slowest $slowest s)"
	# Classic buckets only say (0.25, 0.5].
	cq=$(promq "$CLASSIC" 'histogram_quantile(0.5, rate(sysobs_ifs_scan_duration_seconds_bucket{test="array"}[1m]))' | jq -r '.[0].value[1]')
	echo "IFS scan p50 from classic buckets: $cq s"
else
	echo "note: IFS quantile not checked (needs root, /dev/fuse, fusermount3 and ifs_fake)"
fi
# Exemplars into history: the drop counter's exemplar is a stored sample.
if [ -n "$NS" ]; then
	ip netns exec "$NS" bash -c 'for i in $(seq 1 30); do echo x >/dev/udp/127.0.0.1/4242; sleep 0.05; done'
	EQ="sysobs_packet_drops_total{reason=\"NO_SOCKET\",protocol=\"udp\",netns=\"$NSINUM\"}"
	exemplar_ids() {
		curl -sS -g --max-time 5 "http://127.0.0.1:$NATIVE/api/v1/query_exemplars" \
			--data-urlencode "query=$EQ" --data-urlencode "start=$(($(date +%s) - 300))" \
			--data-urlencode "end=$(($(date +%s) + 60))" |
			jq -r '[.data[].exemplars[].labels.sample_id] | unique | .[]'
	}
	have_exemplar() { [ -n "$(exemplar_ids)" ]; }
	wait_for 30 have_exemplar || fail "no exemplar for $EQ in Prometheus"
	api GET "/api/v1/drops/samples?netns=$NSINUM&limit=1000" >"$T/samples.json"
	n=0
	for id in $(exemplar_ids); do
		dport=$(jq -r --arg id "$id" '.data[] | select(.id == $id) | .dport' "$T/samples.json")
		assert_eq "exemplar sample_id=$id: stored sample's destination port" 4242 "$dport"
		n=$((n + 1))
	done
	echo "exemplars: $n sample_id(s) from Prometheus resolve to stored samples with dport 4242"
else
	echo "note: exemplars not checked (needs root, BTF and a network namespace)"
fi
# The native scrape still carries process_* and build info.
[ "$(promq "$NATIVE" 'process_resident_memory_bytes > 0' | jq 'length')" = 1 ] ||
	fail "no process_resident_memory_bytes via protobuf"
[ "$(promq "$NATIVE" 'sysobs_build_info{revision!=""}' | jq 'length')" = 1 ] ||
	fail "no sysobs_build_info with a revision via protobuf"

# collect[]=self: the self collector and the agent's own families only.
[ "$(promq "$CLASSIC" 'sysobs_threads{job="only_self"}' | jq 'length')" = 1 ] ||
	fail "collect[]=self lacks sysobs_threads"
[ "$(promq "$CLASSIC" 'process_open_fds{job="only_self"}' | jq 'length')" = 1 ] ||
	fail "collect[]=self lacks the agent's own process_open_fds"
others=$(promq "$CLASSIC" 'count({job="only_self",__name__=~"sysobs_(packet_drops|drop_samples|mptcp|ifs|cachefiles)_.*"})' | jq 'length')
assert_eq "collect[]=self: no family of another collector" 0 "$others"
req GET '/metrics?collect[]=nosuch'
assert_eq "collect[] with an unknown collector" 400 "$HTTP_CODE"
grep -q 'nosuch' <<<"$BODY" || fail "400 does not name the collector: $BODY"
req GET '/metrics?foo=bar&collect[]=self'
assert_eq "another parameter is refused (issue 30: ?collect=x served everything)" 400 "$HTTP_CODE"
grep -q 'collect\[\]' <<<"$BODY" || fail "the 400 does not name collect[]: $BODY"

# Text: promtool; OpenMetrics: the reference parser; same samples.
curl -sS "http://127.0.0.1:$PORT/metrics" >"$T/text.txt"
promtool check metrics <"$T/text.txt" >"$T/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(cat "$T/promtool.out")"
curl -sS -D "$T/om.hdr" -H 'Accept: application/openmetrics-text;version=1.0.0' \
	"http://127.0.0.1:$PORT/metrics" >"$T/om.txt"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0; charset=utf-8' "$T/om.hdr" ||
	fail "OpenMetrics content type: $(grep -i content-type "$T/om.hdr")"
$PY - "$T/om.txt" <<'PY' || fail "OpenMetrics parser refused the exposition"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
fams = list(text_string_to_metric_families(text))
names = {f.name for f in fams}
for want in ("process_cpu_seconds", "sysobs_http_request_duration_seconds", "sysobs_build_info"):
    assert want in names, f"{want} missing from {sorted(names)[:10]}..."
cpu = next(f for f in fams if f.name == "process_cpu_seconds")
assert cpu.type == "counter" and cpu.unit == "seconds", (cpu.type, cpu.unit)
hist = next(f for f in fams if f.name == "sysobs_http_request_duration_seconds")
assert hist.type == "histogram" and hist.unit == "seconds"
assert any(s.name.endswith("_created") for s in hist.samples), "histogram without _created"
print(f"openmetrics: {len(fams)} families, {sum(len(f.samples) for f in fams)} samples")
PY
curl -sS -H 'Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited' \
	-o "$T/pb.bin" -w '%{content_type}' "http://127.0.0.1:$PORT/metrics" >"$T/pb.ct"
assert_eq "protobuf content type" \
	'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited' \
	"$(cat "$T/pb.ct")"
# An Accept that allows none of the three still gets text (a scrape must not fail).
ct=$(curl -sS -o /dev/null -w '%{content_type}' -H 'Accept: image/png' "http://127.0.0.1:$PORT/metrics")
assert_eq "fallback content type" 'text/plain; version=0.0.4; charset=utf-8' "$ct"

stop_agent
pass "Prometheus negotiates protobuf (native histograms) or OpenMetrics; collect[] filters; text, OpenMetrics and protobuf are valid"
