#!/usr/bin/env bash
# integration.alert_identity: one failed core is one alert in Alertmanager,
# though two sources report it. The agent pushes SysobsIFSCoreFailed
# itself ([collector.ifs] alertmanager_url) and a real Prometheus 2.42,
# scraping the agent with the scrape config of docs/ifs.md (job sysobs,
# instance relabelled to the host name, external_labels equal to the
# agent's alert_labels), evaluates the shipped rule
# (deploy/prometheus/sysobs-alerts.yml) and sends its alert to the same
# real prometheus-alertmanager. Both re-send every second; Alertmanager
# must show exactly one alert for the core at every look while it is seen
# updated by each source in turn (Prometheus's has its generatorURL, the
# agent's none), with one label set: the rule's alert labels plus the
# external labels. Then a passing scan of the core resolves it there, and
# it stays resolved once Prometheus has sent its resolution too. The core
# is scripted in tests/fakes/ifs_fake (fail, then pass); the test asks for
# each scan through POST /api/v1/ifs/scans.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-ifs-it" # a FUSE mount inside $T (see ifs.sh)
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_root
[ -c /dev/fuse ] || skip "no /dev/fuse (FUSE needed for the IFS fake)"
need_cmd fusermount3
need_cmd jq
need_cmd prometheus
need_cmd prometheus-alertmanager
ifs_fake_usable || skip "ifs_fake not built (libfuse3-dev missing at build time)"

# The host name the agent uses by default (gethostname) if it resolves to
# loopback, so Prometheus can scrape it by that name; else "localhost" set
# as [agent] hostname.
HOST=$(hostname)
case $(getent ahostsv4 "$HOST" | awk 'NR == 1 { print $1 }') in
127.*) host_cfg=() ;;
*) HOST=localhost host_cfg=(agent.hostname=localhost) ;;
esac

# ---- Alertmanager ----
alertmanager_start "group_by=[alertname, instance]" group_wait=1s

# ---- the fake: package 0 core 1 fails its first scan, then passes ----
ifs_fake_start device.0.core.1=fail,pass

# No scheduler: the test asks for each scan (POST /api/v1/ifs/scans).
write_base_config "${host_cfg[@]}" agent.sysfs_root="$T/mnt" http.admin=true \
	collector.ifs.poll=100ms \
	collector.ifs.alertmanager_url="http://127.0.0.1:$AM_PORT" \
	collector.ifs.alert_labels=team=hw collector.ifs.alert_resend=1s \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent

# ---- Prometheus: docs/ifs.md's scrape config, the shipped rules ----
cat >"$T/prom.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
  external_labels:
    team: hw
rule_files: [$SYSOBS_SRC/deploy/prometheus/sysobs-alerts.yml]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$AM_PORT']
scrape_configs:
  - job_name: sysobs
    static_configs:
      - targets: ['$HOST:$PORT']
    relabel_configs:
      - source_labels: [__address__]
        regex: '([^:]+):\d+'
        target_label: instance
YML
start_prometheus alerts "$T/prom.yml" --rules.alert.resend-delay=1s

# scan_core1: one scan of package 0 core 1, by the API.
scan_core1() {
	api POST /api/v1/ifs/scans -H 'Content-Type: application/json' \
		-d '{"cores":[{"package":0,"core":1}],"tests":["scan"]}' >"$T/post.json"
	[ "${HTTP_CODE:0:1}" = 2 ] || fail "POST /api/v1/ifs/scans: $HTTP_CODE $(cat "$T/post.json")"
}
scan_core1
prom_alert() {
	curl -sS --max-time 5 "http://127.0.0.1:$PROM_PORT/api/v1/alerts" |
		jq -c '[.data.alerts[] | select(.labels.alertname == "SysobsIFSCoreFailed" and .state == "firing")]'
}
prom_firing() { [ "$(prom_alert | jq length)" = 1 ]; }
wait_for 30 prom_firing || fail "Prometheus: SysobsIFSCoreFailed not firing: $(prom_alert)"
rule_labels=$(prom_alert | jq -cS '.[0].labels + {team: "hw"}')
assert_eq "the rule's alert: job, instance, package, core" "[\"sysobs\",\"$HOST\",\"0\",\"1\"]" \
	"$(jq -c '[.job, .instance, .package, .core]' <<<"$rule_labels")"

# ---- Alertmanager: one alert, updated by both ----
seen_prom=0 seen_agent=0 looks=0
both_seen() {
	local a n
	a=$(am_alerts SysobsIFSCoreFailed) || return 1
	n=$(jq length <<<"$a")
	looks=$((looks + 1))
	[ "$n" = 0 ] && return 1 # not there yet
	[ "$n" = 1 ] || fail "Alertmanager shows $n SysobsIFSCoreFailed alerts for one failed core: $a"
	assert_eq "labels of the alert in Alertmanager" "$rule_labels" "$(jq -cS '.[0].labels' <<<"$a")"
	case $(jq -r '.[0].generatorURL // ""' <<<"$a") in
	*/graph\?*) seen_prom=1 ;;
	"") seen_agent=1 ;;
	*) fail "alert from an unknown source: $a" ;;
	esac
	[ "$seen_prom$seen_agent" = 11 ]
}
wait_for 30 both_seen || fail "Alertmanager did not get the alert from both sources (Prometheus: $seen_prom, agent: $seen_agent): $(am_alerts SysobsIFSCoreFailed)"
# And a few more seconds of both sources re-sending.
end=$((SECONDS + 4))
while [ $SECONDS -lt $end ]; do both_seen; sleep 0.2; done
sent=$(curl -sS "http://127.0.0.1:$PROM_PORT/metrics" |
	awk '/^prometheus_notifications_sent_total/ { s += $2 } END { print s + 0 }')
assert_ge "alerts Prometheus sent" 2 "$sent"
agent_al=$(am_alerts SysobsIFSCoreFailed | jq -c '.[0]')
groups=$(curl -sS "http://127.0.0.1:$AM_PORT/api/v2/alerts/groups" |
	jq '[.[] | select(.labels.alertname == "SysobsIFSCoreFailed") | .alerts | length]')
assert_eq "Alertmanager groups of SysobsIFSCoreFailed and their alerts" "[1]" "$(jq -c . <<<"$groups")"
pass "one failed core is one alert in Alertmanager ($looks looks, $sent notifications from Prometheus, agent pushes every 1 s): labels $rule_labels"

# The agent's annotations: the rule's summary and runbook_url, its own details.
from_agent() {
	agent_al=$(am_alerts SysobsIFSCoreFailed | jq -c '.[0]')
	[ "$(jq -r '.generatorURL // ""' <<<"$agent_al")" = "" ]
}
wait_for 10 from_agent || fail "no update from the agent"
assert_eq "pushed summary = the rule's" "In-Field Scan scan failed on $HOST package 0 core 1" \
	"$(jq -r .annotations.summary <<<"$agent_al")"
rule_runbook=$(prom_alert | jq -r '.[0].annotations.runbook_url')
assert_eq "pushed runbook_url = the rule's" "$rule_runbook" "$(jq -r .annotations.runbook_url <<<"$agent_al")"
assert_eq "pushed cpu annotation" 1 "$(jq -r .annotations.cpu <<<"$agent_al")"
pass "the pushed alert carries the rule's summary and runbook_url ($rule_runbook), plus the CPU and the decoded details"

# ---- the core passes: both sources resolve the one alert ----
scan_core1
am_active() { am_alerts SysobsIFSCoreFailed | jq '[.[] | select(.status.state == "active")] | length'; }
am_quiet() { [ "$(am_active)" = 0 ]; }
wait_for 20 am_quiet || fail "alert still active after the core passed: $(am_alerts SysobsIFSCoreFailed)"
prom_quiet() { [ "$(prom_alert | jq length)" = 0 ]; }
wait_for 10 prom_quiet || fail "Prometheus still fires after the core passed: $(prom_alert)"
sleep 3 # Prometheus's resolved notifications are in: nothing fires again
assert_eq "active SysobsIFSCoreFailed in Alertmanager after the pass" 0 "$(am_active)"
stop_agent
pass "a passing scan resolves it in Alertmanager, from both sources"
