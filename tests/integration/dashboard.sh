#!/usr/bin/env bash
# integration.dashboard: every PromQL expression of the Grafana dashboard
# (deploy/grafana/sysobs.json) runs in Debian's real Prometheus 2.42, three
# times: in a Prometheus that stores classic histograms (_bucket series), in
# one with --enable-feature=native-histograms (protobuf scrape, native
# histograms only), both scraping the agent on loopback every second, and in
# one that scrapes nothing and receives the agent's remote_write (pushed
# series: job/instance from the agent, classic buckets from its history).
# The test makes data: drops (UDP to a closed port in a namespace it
# creates), an MPTCP connection with two subflows
# (tests/integration/mptcp_topo.sh), IFS scans on tests/fakes/ifs_fake -f.
# In each, every expression and variable
# query (variables substituted: $job, $instance -> .+, $__rate_interval ->
# 30s) must parse and return data, and every quantile panel must be the
# two-form "_bucket or native" expression, each form serving its own mode
# alone. The only exception is the cachefiles row while the cachefiles
# collector is not running on this host, whose expressions must still
# parse, and are listed as empty with the collector's reason. Also checked:
# the dashboard's shape (current schema, ${datasource} variable on every
# panel and target, a row per collector and one for agent health) and that
# every metric it reads is one the code exports.
# shellcheck disable=SC2154 # PROM_PORT_classic/_native/_push: start_prometheus sets them (printf -v)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
need_root
need_cmd prometheus
need_cmd jq
need_cmd python3
need_cmd fusermount3
mptcp_need
D=$SYSOBS_SRC/deploy/grafana/sysobs.json
GEN=$SYSOBS_BUILD/tests/drops_gen
PEER=$SYSOBS_BUILD/tests/mptcp_peer
FAKE=$SYSOBS_BUILD/tests/fakes/ifs_fake
for x in "$GEN" "$PEER" "$FAKE"; do [ -x "$x" ] || fail "$x not built"; done

# ---- the dashboard's shape ----
jq -e . "$D" >/dev/null || fail "$D is not JSON"
assert_ge "schemaVersion" 39 "$(jq .schemaVersion "$D")"
assert_eq "datasource variable" datasource/prometheus \
	"$(jq -r '.templating.list[] | select(.name == "datasource") | .type + "/" + .query' "$D")"
assert_eq "panels or targets not on \${datasource}" 0 \
	"$(jq '[.panels[] | select(.type != "row") | (., .targets[]) | select(.datasource.uid != "${datasource}")] | length' "$D")"
# The variables read job and instance, which scraped and remote-written
# series both carry (nothing only a scrape attaches, like __address__).
assert_eq "query variables and the label each lists" "job:job instance:instance" \
	"$(jq -r '[.templating.list[] | select(.type == "query") |
		.name + ":" + (.query.query | capture(", *(?<l>\\w+)\\)$").l)] | join(" ")' "$D")"
rows=$(jq -r '[.panels[] | select(.type == "row") | .title] | join("|")' "$D")
for r in "Agent health" "Packet drops" "MPTCP" "In-Field Scan" "cachefiles"; do
	[[ "|$rows|" == *"|$r"* ]] || fail "no row for $r (rows: $rows)"
done
for name in $(jq -r '.panels[].targets[]?.expr' "$D" | grep -o '\b\(sysobs\|process\)_[a-z_]*' |
	sed -E 's/_(bucket|count|sum)$//' | sort -u); do
	grep -rqs "\"$name\"" "$SYSOBS_SRC/agent" "$SYSOBS_SRC/collectors" "$SYSOBS_SRC/api" "$SYSOBS_SRC/metrics" "$SYSOBS_SRC/exporters" ||
		fail "dashboard reads $name, which no code exports"
done
pass "dashboard shape: schema $(jq .schemaVersion "$D"), \${datasource} everywhere, rows: $rows; every metric exported"

# ---- data: drops namespace, MPTCP, IFS fake, remote_write receiver ----
NS=sysobs-db-$$
netns_new "$NS" || fail "cannot create a network namespace"
mptcp_topo_up || fail "MPTCP topology setup failed"
ifs_fake_start devices=0,1 device.0.core.1=fail device.1.default=pass
# The third Prometheus, first: the agent pushes to it from the start.
printf 'global:\n  scrape_interval: 1s\n' >"$T/prom-push.yml"
start_prometheus push "$T/prom-push.yml" --web.enable-remote-write-receiver

write_base_config "agent.sysfs_root=$T/mnt" storage.snapshot_interval=1s \
	collector.ifs.schedule=true collector.ifs.interval=1s collector.ifs.poll=100ms \
	collector.ifs.max_scan_seconds_per_hour=3600 "collector.mptcp.netns=/run/netns/$NS_A" \
	collector.drops.netns_label=true "remote_write.url=http://127.0.0.1:$PROM_PORT_push/api/v1/write"
start_agent

# Two Prometheus servers scrape the agent at once, one per storage mode of
# histograms: "classic" (text/OpenMetrics scrape: _bucket, _count, _sum
# series) and "native" (--enable-feature=native-histograms: a protobuf
# scrape, after which Prometheus 2.42 stores the native histogram alone and
# no _bucket series). Both see the same traffic in the same window.
cat >"$T/prom.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: sysobs
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus classic "$T/prom.yml"
start_prometheus native "$T/prom.yml" --enable-feature=native-histograms

mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2
grep -q 'subflows=2' "$T/client.txt" || fail "second subflow not established: $(cat "$T/client.txt")"

# Drops through the whole scrape window: 200 datagrams every 0.5 s, 25 s.
(for _ in $(seq 1 50); do
	ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -n 200 -s 40001 >/dev/null
	sleep 0.5
done) &
GEN_PID=$!
on_exit "kill $GEN_PID 2>/dev/null"
# 20 s of 1 s scrapes: every rate over 30 s has its points.
scrapes() { [ "$(promq "$1" 'count_over_time(up{job="sysobs"}[1m])' | jq -r '.[0].value[1] // 0')" -ge 20 ]; }
for m in classic native; do
	p=PROM_PORT_$m
	wait_for 60 scrapes "${!p}" || fail "prometheus $m scraped too little: $(promq "${!p}" 'up')"
done
# and 20 s of 1 s snapshots pushed (no `up` there: no scrape)
pushed() { [ "$(promq "$PROM_PORT_push" 'count_over_time(sysobs_build_info{job="sysobs"}[1m])' |
	jq -r '.[0].value[1] // 0')" -ge 20 ]; }
wait_for 60 pushed || fail "prometheus push received too little: $(promq "$PROM_PORT_push" 'count({job="sysobs"})')"

# The modes are what they claim: classic stores _bucket series and no
# native histogram, native the histogram itself and no _bucket series.
H=sysobs_ifs_scan_duration_seconds
assert_ge "classic: ${H}_bucket series" 1 \
	"$(promq "$PROM_PORT_classic" "count(${H}_bucket)" | jq -r '.[0].value[1] // 0')"
assert_eq "classic: native $H" 0 "$(promq "$PROM_PORT_classic" "$H" | jq length)"
assert_eq "native: _bucket series" 0 \
	"$(promq "$PROM_PORT_native" 'count({__name__=~"sysobs_.*_bucket"})' | jq length)"
assert_ge "native: native $H" 1 \
	"$(promq "$PROM_PORT_native" "$H" | jq '[.[] | select(.histogram)] | length')"
assert_ge "push: ${H}_bucket series" 1 \
	"$(promq "$PROM_PORT_push" "count(${H}_bucket)" | jq -r '.[0].value[1] // 0')"
assert_ge "push: series with the agent's instance" 1 \
	"$(promq "$PROM_PORT_push" "count(sysobs_build_info{instance=\"$(hostname)\"})" | jq -r '.[0].value[1] // 0')"
pass "classic Prometheus stores _bucket series; native Prometheus native histograms and no _bucket; pushed series have buckets and the host's identity"

# ---- every expression ----
api GET /api/v1/collectors >"$T/collectors.json"
cf_state=$(jq -r '.data[] | select(.name == "cachefiles") | .state' "$T/collectors.json")
cf_reason=$(jq -r '.data[] | select(.name == "cachefiles") | .reason' "$T/collectors.json")
# check_mode MODE PORT: every expression of the dashboard and its variables
# against the Prometheus on PORT (tests/tools/dashboard_queries.py). A
# quantile panel is "A or B", A over _bucket series (classic), B over native
# histograms: the whole must return data in every mode, and each half alone
# must serve its own mode and only it; pushed series (classic buckets) must
# return data through the whole expression. With "no-quantiles" as
# QUANTILES the quantile panels must parse but may be empty.
check_mode() {
	local mode=$1 port=$2 quantiles=${3:-} tsv=$T/panels-$1.tsv bad n_all n_data n_q n_opt
	python3 "$SYSOBS_SRC/tests/tools/dashboard_queries.py" "$D" "$port" "$cf_state" \
		>"$tsv" 2>"$T/panels.err" || fail "query runner ($mode): $(cat "$T/panels.err")"
	if [ "$quantiles" = no-quantiles ]; then
		awk -F'\t' -v OFS='\t' '$7 == "quantile" { $6 = "optional" } 1' "$tsv" >"$tsv.q"
		mv "$tsv.q" "$tsv"
	fi
	n_all=$(wc -l <"$tsv")
	bad=$(awk -F'\t' '$4 != "success"' "$tsv")
	[ -z "$bad" ] || fail "$mode: expressions Prometheus refused:"$'\n'"$bad"
	bad=$(awk -F'\t' '$5 == 0 && $6 == "required"' "$tsv")
	[ -z "$bad" ] || fail "$mode: panels or variables without data:"$'\n'"$bad"
	bad=$(awk -F'\t' -v m="$mode" '$7 == "quantile" && $5 > 0 && (m == "classic" || m == "native") {
		split($8, h, /[=,]/); own = m == "classic" ? h[2] : h[4]; other = m == "classic" ? h[4] : h[2]
		if (own == 0 || other != 0) print }' "$tsv")
	[ -z "$bad" ] || fail "$mode: quantile panels not served by their $mode half alone:"$'\n'"$bad"
	n_data=$(awk -F'\t' '$5 > 0' "$tsv" | wc -l)
	n_q=$(awk -F'\t' '$7 == "quantile" && $5 > 0' "$tsv" | wc -l)
	n_opt=$(awk -F'\t' '$5 == 0 && $6 == "optional"' "$tsv" | wc -l)
	if [ "$n_opt" -gt 0 ]; then
		echo "$mode: EMPTY, ACCEPTED: $n_opt expressions (they parse; cachefiles is $cf_state here: $cf_reason${quantiles:+; $quantiles}):"
		awk -F'\t' '$5 == 0 && $6 == "optional" { print "  " $2 " [" $3 "]: " $9 }' "$tsv"
	fi
	pass "$mode: $n_all expressions (panels and variables) parse; $n_data return data, $n_q of them quantiles; $n_opt accepted empty"
}
check_mode classic "$PROM_PORT_classic"
check_mode native "$PROM_PORT_native"
check_mode push "$PROM_PORT_push"
# Every quantile panel has both forms, also those whose data this host
# cannot make (cachefiles without the collector), which the checks above
# accept empty.
bad=$(awk -F'\t' '$7 == "quantile?"' "$T/panels-classic.tsv")
[ -z "$bad" ] || fail "quantile panels without both forms (_bucket or native):"$'\n'"$bad"
stop_agent
pass "every panel and variable returns data with and without native histograms, scraped or pushed"
