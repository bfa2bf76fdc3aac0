#!/usr/bin/env bash
# integration.remote_write_native_check: native histograms only where the
# receiver keeps them (issue 32 item 6). Two agents push with
# native_histograms = true and native_histograms_check = 3s:
#  - into the real VictoriaMetrics 1.79, which answers 204 to native
#    histograms and stores nothing of them: the agent finds the histogram
#    absent through VM's query API (and the sysobs_build_info sent with it
#    there), logs an error naming it, counts it
#    (sysobs_remote_write_native_histograms_unstored_total 1), sends classic
#    buckets from then on (sysobs_remote_write_native_histograms 0), and
#    H_bucket series arrive in VictoriaMetrics;
#  - into the real Prometheus 2.42 with --enable-feature=native-histograms:
#    the agent finds it stored and keeps sending it native (no H_bucket
#    series in Prometheus, the counter 0, the gauge 1).
source "$(dirname "$0")/lib.sh"
need_root
need_cmd prometheus
need_cmd victoria-metrics
need_cmd jq

H=sysobs_remote_write_batch_duration_seconds
VM=$(free_port) || fail "no free port for VictoriaMetrics"
# -search.latencyOffset: VM shows samples 2 s after they arrive, not 30 s
# (its default; the agent's check waits for them either way, the test
# would take a minute more)
victoria-metrics -httpListenAddr "127.0.0.1:$VM" -storageDataPath "$T/vm" \
	-search.latencyOffset=2s >"$T/vm.log" 2>&1 &
VM_PID=$!
on_exit "kill $VM_PID; wait $VM_PID 2>/dev/null"
echo "global: {}" >"$T/rx.yml"
start_prometheus rx "$T/rx.yml" --enable-feature=native-histograms --web.enable-remote-write-receiver
RX=$PROM_PORT
vm_up() { curl -sf --max-time 2 "http://127.0.0.1:$VM/health" -o /dev/null; }
wait_for 30 vm_up || fail "VictoriaMetrics not up: $(tail -5 "$T/vm.log")"

agent() { # NAME URL: an agent pushing natively to URL, its port in NAME_PORT
	write_base_config storage.snapshot_interval=1s "storage.path=$T/$1.db" \
		collector.drops.enabled=false collector.cachefiles.enabled=false \
		collector.mptcp.enabled=false collector.ifs.enabled=false \
		"remote_write.url=$2" remote_write.send_interval=200ms remote_write.batch_samples=200 \
		remote_write.metadata_interval=0 remote_write.native_histograms=true \
		remote_write.native_histograms_check=3s "remote_write.instance=$1"
	start_agent
	mv "$T/agent.log" "$T/$1.log"
	ln -s "$T/$1.log" "$T/agent.log"
	on_exit "kill $AGENT_PID 2>/dev/null"
	printf -v "${1}_PORT" '%s' "$PORT"
}
agent vm "http://127.0.0.1:$VM/api/v1/write"
rm "$T/agent.log"
agent prom "http://127.0.0.1:$RX/api/v1/write"
m() { # PORT METRIC
	curl -sS "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}
checked() { grep -q "stores the native histograms\|stored none\|cannot check" "$T/$1.log"; }
wait_for 40 checked vm || fail "vm agent: no check within 40 s: $(tail -5 "$T/vm.log")"
wait_for 20 checked prom || fail "prometheus agent: no check within 20 s"

# VictoriaMetrics: detected, counted, classic buckets from then on.
grep -q "error remote_write: the receiver accepted native histograms and stored none ($H{job=\"sysobs\",instance=\"vm\"} absent" \
	"$T/vm.log" || fail "vm agent: no error naming the histogram: $(grep remote_write "$T/vm.log" | tail -3)"
assert_eq "vm: unstored checks counted" 1 "$(m "$vm_PORT" 'sysobs_remote_write_native_histograms_unstored_total{destination="remote_write"}')"
assert_eq "vm: histograms now sent as" 0 "$(m "$vm_PORT" 'sysobs_remote_write_native_histograms{destination="remote_write"}')"
vmq() { curl -sS "http://127.0.0.1:$VM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // 0'; }
buckets() { [ "$(vmq "count(${H}_bucket{instance=\"vm\"})")" -ge 2 ]; }
wait_for 30 buckets || fail "no ${H}_bucket series in VictoriaMetrics: $(vmq "count({instance=\"vm\"})") series of vm"
n_vm=$(vmq "count(${H}_bucket{instance=\"vm\"})")

# Prometheus with native histograms on: verified, kept native.
grep -q "stores the native histograms it accepts ($H{job=\"sysobs\",instance=\"prom\"} found)" "$T/prom.log" ||
	fail "prometheus agent: $(grep remote_write "$T/prom.log" | tail -3)"
assert_eq "prom: unstored checks counted" 0 "$(m "$prom_PORT" 'sysobs_remote_write_native_histograms_unstored_total{destination="remote_write"}')"
assert_eq "prom: histograms sent as" 1 "$(m "$prom_PORT" 'sysobs_remote_write_native_histograms{destination="remote_write"}')"
assert_eq "prom: native $H series" 1 "$(promq "$RX" "count($H{instance=\"prom\"})" | jq -r '.[0].value[1] // 0')"
assert_eq "prom: ${H}_bucket series" 0 "$(promq "$RX" "count(${H}_bucket{instance=\"prom\"})" | jq -r '.[0].value[1] // 0')"
pass "VictoriaMetrics 1.79: native histograms found unstored, counted, $n_vm ${H}_bucket series arrived instead; Prometheus 2.42: found stored, kept native"
