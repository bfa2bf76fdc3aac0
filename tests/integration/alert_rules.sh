#!/usr/bin/env bash
# integration.alert_rules: the shipped Prometheus rules load and pass their
# own promtool unit tests (deploy/prometheus/sysobs-alerts.test.yml: every
# alert fires in a test, and data loss, storage, drop spikes, MPTCP resets,
# cachefiles stalls each have a case that must not fire), every alert has a
# runbook_url to a section of docs/runbooks.md and no inline runbook, and the
# agent exports the collector state set the SysobsCollectorFailed rule reads,
# one state at 1 per collector.
source "$(dirname "$0")/lib.sh"
need_cmd promtool

R=$SYSOBS_SRC/deploy/prometheus
promtool check rules "$R/sysobs-alerts.yml" >"$T/check.out" 2>&1 ||
	fail "promtool check rules: $(cat "$T/check.out")"
(cd "$R" && promtool test rules sysobs-alerts.test.yml) >"$T/test.out" 2>&1 ||
	fail "promtool test rules: $(cat "$T/test.out")"

# Every alert: tested in the .test.yml, a runbook_url to an existing
# section of docs/runbooks.md (GitHub-style anchor: the heading in lower
# case), no long runbook annotation.
alerts=$(sed -n 's/^ *- alert: *//p' "$R/sysobs-alerts.yml")
[ -n "$alerts" ] || fail "no alert in the rules"
grep -q '^ *runbook:' "$R/sysobs-alerts.yml" && fail "an inline runbook annotation is left"
n_alerts=0
for a in $alerts; do
	n_alerts=$((n_alerts + 1))
	lc=$(tr '[:upper:]' '[:lower:]' <<<"$a")
	awk -v a="$a" -v u="/runbooks#$lc'" '$0 ~ "- alert: " a "$" { on = 1; next }
		on && /- alert: / { exit }
		on && index($0, "runbook_url:") && index($0, u) { found = 1; exit }
		END { exit !found }' "$R/sysobs-alerts.yml" || fail "$a: no runbook_url to /runbooks#$lc"
	grep -q "^### $a\$" "$SYSOBS_SRC/docs/runbooks.md" || fail "$a: no section in docs/runbooks.md"
	grep -q "alertname: $a\$" "$R/sysobs-alerts.test.yml" || fail "$a: not in sysobs-alerts.test.yml"
done
echo "$n_alerts alerts, each with a runbook section and a promtool test"

write_base_config
cat >>"$T/sysobsd.ini" <<INI
[collector.ifs]
enabled = false
INI
start_agent
req GET /metrics
m=$BODY
state_of() {
	awk -v c="collector=\"$1\"" '/^sysobs_collector_state\{/ && index($0, c) && $NF == 1 {
		match($0, /state="[a-z]*"/); print substr($0, RSTART + 7, RLENGTH - 8) }' <<<"$m"
}
assert_eq "self" running "$(state_of self)"
assert_eq "ifs (enabled = false)" disabled "$(state_of ifs)"
for c in self cachefiles drops mptcp ifs; do
	assert_eq "state series of $c" 4 "$(grep -c "^sysobs_collector_state{.*collector=\"$c\"" <<<"$m")"
	assert_eq "states at 1 for $c" 1 "$(grep "^sysobs_collector_state{.*collector=\"$c\"" <<<"$m" | awk '$NF == 1' | wc -l)"
	# The API names the CollectorState enum value (RUNNING), the metric the state label (running).
	api_state=$(api GET /api/v1/collectors | jq -r --arg c "$c" '.data[] | select(.name == $c) | .state | ascii_downcase')
	assert_eq "metric state of $c = API state" "$api_state" "$(state_of "$c")"
done
stop_agent
# every metric a rule reads is one the code exports
for name in $(grep -o 'sysobs_[a-z_]*' "$R/sysobs-alerts.yml" | sort -u); do
	grep -rqs "\"$name\"" "$SYSOBS_SRC/agent" "$SYSOBS_SRC/collectors" "$SYSOBS_SRC/api" "$SYSOBS_SRC/metrics" "$SYSOBS_SRC/exporters" \
		"$SYSOBS_SRC/storage" || fail "rule reads $name, which no code exports"
done
pass "rules load, their promtool tests pass, the state set matches the API"
