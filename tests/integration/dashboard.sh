#!/usr/bin/env bash
# integration.dashboard: every PromQL expression of the Grafana dashboard
# (deploy/grafana/sysobs.json) runs in Debian's real Prometheus, which
# scrapes the agent on loopback every second after the test made data:
# drops (UDP to a closed port in a namespace it creates), an MPTCP
# connection with two subflows (tests/integration/mptcp_topo.sh), IFS scans
# on tests/fakes/ifs_fake -f, remote_write to tests/tools/rw_fake_receiver.py.
# Each expression (dashboard variables substituted: $job, $instance -> .+,
# $__rate_interval -> 30s) must parse and return data; the only exception
# is the cachefiles row while the cachefiles collector is not running on
# this host, whose expressions must still parse, and are listed as empty
# with the collector's reason. Also checked: the dashboard's shape (current
# schema, ${datasource} variable on every panel and target, a row per
# collector and one for agent health) and that every metric it reads is one
# the code exports.
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
rows=$(jq -r '[.panels[] | select(.type == "row") | .title] | join("|")' "$D")
for r in "Agent health" "Packet drops" "MPTCP" "In-Field Scan" "cachefiles"; do
	[[ "|$rows|" == *"|$r"* ]] || fail "no row for $r (rows: $rows)"
done
for name in $(jq -r '.panels[].targets[]?.expr' "$D" | grep -o '\b\(sysobs\|process\)_[a-z_]*' |
	sed -E 's/_(bucket|count|sum)$//' | sort -u); do
	grep -rqs "\"$name\"" "$SYSOBS_SRC/agent" "$SYSOBS_SRC/collectors" "$SYSOBS_SRC/api" ||
		fail "dashboard reads $name, which no code exports"
done
pass "dashboard shape: schema $(jq .schemaVersion "$D"), \${datasource} everywhere, rows: $rows; every metric exported"

# ---- data: drops namespace, MPTCP, IFS fake, remote_write receiver ----
NS=sysobs-db-$$
netns_new "$NS" || fail "cannot create a network namespace"
mptcp_topo_up || fail "MPTCP topology setup failed"
mkdir -p "$T/mnt"
cat >"$T/fake.ini" <<'INI'
[fake]
cpus = 2
threads_per_core = 1
packages = 1
scan_ms = 50
devices = 0,1
[device.0]
image_version = 0x8000
batch = 1
core.1 = fail
[device.1]
default = pass
INI
start_ifs_fake "$T/fake.ini"
python3 "$SYSOBS_SRC/tests/tools/rw_fake_receiver.py" "$T/rw.port" "$T/rw.log" >"$T/rw.out" 2>&1 &
on_exit "kill $!"
wait_for 10 test -s "$T/rw.port" || fail "remote_write receiver did not start"

write_base_config
sed -i "/^\[agent\]$/a sysfs_root = $T/mnt" "$T/sysobsd.ini" # one [agent] section
cat >>"$T/sysobsd.ini" <<INI
snapshot_interval = 1s
[collector.ifs]
schedule = true
interval = 1s
poll = 100ms
max_scan_seconds_per_hour = 3600
[collector.mptcp]
netns = /run/netns/$NS_A
[collector.drops]
netns_label = true
[remote_write]
url = http://127.0.0.1:$(cat "$T/rw.port")/api/v1/write
INI
start_agent

cat >"$T/prom.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: sysobs
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YML
start_prometheus main "$T/prom.yml"

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
scrapes() { [ "$(promq "$PROM_PORT" 'count_over_time(up{job="sysobs"}[1m])' | jq -r '.[0].value[1] // 0')" -ge 20 ]; }
wait_for 60 scrapes || fail "prometheus scraped too little: $(promq "$PROM_PORT" 'up')"

# ---- every expression ----
api GET /api/v1/collectors >"$T/collectors.json"
cf_state=$(jq -r '.data[] | select(.name == "cachefiles") | .state' "$T/collectors.json")
cf_reason=$(jq -r '.data[] | select(.name == "cachefiles") | .reason' "$T/collectors.json")
python3 - "$D" "$PROM_PORT" "$cf_state" >"$T/panels.tsv" 2>"$T/panels.err" <<'PY' || fail "query runner: $(cat "$T/panels.err")"
import json, sys, urllib.parse, urllib.request
dash, port, cf_state = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
subst = {"$__rate_interval": "30s", "${job}": ".+", "$job": ".+", "${instance}": ".+", "$instance": ".+"}
row = ""
for p in dash["panels"]:
	if p["type"] == "row":
		row = p["title"]
		continue
	for t in p.get("targets", []):
		expr = t["expr"]
		for k, v in subst.items():
			expr = expr.replace(k, v)
		q = urllib.parse.urlencode({"query": expr})
		try:
			with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{q}", timeout=10) as r:
				res = json.load(r)
			status, n = res["status"], len(res["data"]["result"])
		except urllib.error.HTTPError as e:
			status, n = "error: " + json.load(e).get("error", str(e)), 0
		optional = row.startswith("cachefiles") and cf_state != "RUNNING"
		print("\t".join([row, p["title"], t["refId"], status, str(n), "optional" if optional else "required",
				 " ".join(expr.split())]))
PY
n_all=$(wc -l <"$T/panels.tsv")
bad=$(awk -F'\t' '$4 != "success"' "$T/panels.tsv")
[ -z "$bad" ] || fail "expressions Prometheus refused:"$'\n'"$bad"
empty=$(awk -F'\t' '$5 == 0 && $6 == "required"' "$T/panels.tsv")
[ -z "$empty" ] || fail "panels without data:"$'\n'"$empty"
n_data=$(awk -F'\t' '$5 > 0' "$T/panels.tsv" | wc -l)
n_opt=$(awk -F'\t' '$5 == 0 && $6 == "optional"' "$T/panels.tsv" | wc -l)
if [ "$n_opt" -gt 0 ]; then
	echo "EMPTY, ACCEPTED: $n_opt cachefiles expressions (they parse; the cachefiles collector is $cf_state here: $cf_reason):"
	awk -F'\t' '$5 == 0 && $6 == "optional" { print "  " $2 " [" $3 "]: " $7 }' "$T/panels.tsv"
fi
stop_agent
pass "$n_all dashboard expressions parse in Prometheus; $n_data return data, $n_opt empty because cachefiles is $cf_state"
