#!/usr/bin/env bash
# integration.status_page: the status page at / in a real browser (Debian's
# headless Chromium driven over WebDriver by chromedriver, from a few lines
# of python with the standard library only) after the test made
#   - drops: 10,000 UDP datagrams to a closed port in a namespace it creates,
#     all sampled, so the database holds >= 10,000 drop samples;
#   - MPTCP traffic: one connection with two subflows between two namespaces
#     (tests/integration/mptcp_topo.sh, tests/tools/mptcp_peer);
#   - IFS results: the scheduler scanning the 4 cores of tests/fakes/ifs_fake
#     (-f), core 2 scripted to fail the scan test.
# The DOM must show each against its reference: the drop total between
# /metrics before and after the render; the connection with the client's
# token and its 2 subflows; every core's status per test as the fake's
# script says; each collector's state as /api/v1/collectors says; the links
# to /metrics and the API; the cachefiles section's bucket arithmetic (no
# cachefiles here) against histogram_quantile's. Saves status.png in the test's directory
# (KEEP_TMP=1 keeps it) and prints the page's render time with >= 10k drop
# samples (median of 5 loads): the time from the page's first fetch to the
# last section drawn, and from navigation start.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/mptcp_topo.sh"
need_root
need_cmd jq
need_cmd curl
need_cmd python3
need_cmd chromium     # scripts/deps.sh installs chromium and chromium-driver
need_cmd chromedriver
need_cmd fusermount3
mptcp_need
GEN=$SYSOBS_BUILD/tests/drops_gen
PEER=$SYSOBS_BUILD/tests/mptcp_peer
FAKE=$SYSOBS_BUILD/tests/fakes/ifs_fake
for x in "$GEN" "$PEER" "$FAKE"; do [ -x "$x" ] || fail "$x not built"; done

# ---- drops namespace ----
NS=sysobs-sp-$$
netns_new "$NS" || fail "cannot create a network namespace"

# ---- MPTCP topology ----
mptcp_topo_up || fail "MPTCP topology setup failed"

# ---- IFS fake: 4 cores, scan (device 0) fails on core 2, array passes ----
ifs_fake_start cpus=4 scan_ms=20 devices=0,1 device.0.core.2=fail device.1.default=pass

XPORT=$(free_port) || fail "no free loopback port"
write_base_config "agent.sysfs_root=$T/mnt" storage.snapshot_interval=1s \
	export.x.format=otlp export.x.send_interval=1s \
	"export.x.url=http://user:secret@127.0.0.1:$XPORT/v1/logs" \
	collector.ifs.schedule=true collector.ifs.interval=2s collector.ifs.poll=100ms \
	collector.ifs.max_scan_seconds_per_hour=3600 \
	"collector.mptcp.netns=/run/netns/$NS_A" collector.mptcp.reconcile=1s \
	collector.drops.netns_label=true collector.drops.sample_rate=1000000 \
	collector.drops.sample_burst=1000000 collector.drops.ring_bytes=16M
start_agent

# ---- MPTCP: one connection, two subflows, held open ----
mptcp_server 0.0.0.0
mptcp_client "$MP_B1" 2
grep -q 'subflows=2' "$T/client.txt" || fail "second subflow not established: $(cat "$T/client.txt")"
live() { [ "$(api GET /api/v1/mptcp/connections | jq '[.data[] | select(.token_hex == "'"$TOKEN_HEX"'")] | length')" = 1 ]; }
wait_for 10 live || fail "agent does not list connection $TOKEN_HEX"
# Both subflows' TCP state sampled (the reconciliation's dump, every 1 s).
sampled() { [ "$(api GET /api/v1/mptcp/connections | jq '[.data[].subflows[] | select(.tcp.rtt_us > 0)] | length')" = 2 ]; }
wait_for 5 sampled || fail "subflows without TCP state: $(api GET /api/v1/mptcp/connections)"

# ---- drops: >= 10,000 samples in the database ----
samples() { db_count drop_samples "netns = $NSINUM"; }
enough() { [ "$(samples)" -ge 10000 ]; }
for _ in 1 2 3; do
	out=$(ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p 9 -n 10000 -s 40001) || fail "udp sender: $out"
	wait_for 10 enough && break
done
n_samples=$(db_count drop_samples)
assert_ge "drop samples in the database" 10000 "$n_samples"
pass "$n_samples drop samples stored ($(samples) from $NS)"

# ---- IFS: every core has a result for both tests ----
ifs_done() {
	api GET /api/v1/ifs/cores >"$T/cores.json"
	[ "$(jq '[.data[].last[] | select(.status != null)] | length' "$T/cores.json")" -ge 8 ]
}
wait_for 30 ifs_done || fail "IFS scheduler did not test every core: $(cat "$T/cores.json")"
# History for the drop sparklines: 4 points of NO_SOCKET on the 5 s grid
# the page uses for a young agent (3 rates).
grid_points() {
	api GET '/api/v1/series?metric=sysobs_packet_drops_total&match[]={reason="NO_SOCKET"}&start=-300s&step=5s' |
		jq '[.data[].points[].time] | unique | length'
}
history_ready() { [ "$(grid_points)" -ge 4 ]; }
wait_for 40 history_ready || fail "no NO_SOCKET history: $(grid_points) grid points"

# ---- the browser ----
CD_PORT=$(free_port) || fail "no free loopback port for chromedriver"
chromedriver --port="$CD_PORT" >"$T/chromedriver.log" 2>&1 &
CD_PID=$!
on_exit "kill $CD_PID; wait $CD_PID 2>/dev/null"
wait_for 10 curl -sf "http://127.0.0.1:$CD_PORT/status" -o /dev/null || fail "chromedriver did not start"

drops_before=$(metric_sum sysobs_packet_drops_total 'reason="NO_SOCKET"')
python3 - "$CD_PORT" "http://127.0.0.1:$PORT/" "$T" >"$T/facts.json" 2>"$T/driver.err" <<'PY' ||
import base64, json, statistics, sys, time, urllib.request

cd, url, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
def call(method, path, body=None):
	req = urllib.request.Request(f"http://127.0.0.1:{cd}{path}", method=method,
		data=None if body is None else json.dumps(body).encode(),
		headers={"Content-Type": "application/json"})
	with urllib.request.urlopen(req, timeout=60) as r:
		return json.load(r)["value"]
caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
	"binary": "/usr/bin/chromium",
	"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		 "--window-size=1400,2200", "--hide-scrollbars"]}}}}
sid = call("POST", "/session", caps)["sessionId"]
js = lambda script: call("POST", f"/session/{sid}/execute/sync", {"script": script, "args": []})
def load():
	call("POST", f"/session/{sid}/url", {"url": url})
	end = time.time() + 20
	while js("return document.body.dataset.ready || ''") != "1":
		if time.time() > end:
			raise SystemExit("page not ready within 20 s")
		time.sleep(0.05)
	return float(js("return document.body.dataset.renderMs")), float(js("return document.body.dataset.loadMs"))
try:
	first = load()
	facts = js(r"""
	const q = (s, e) => [...(e || document).querySelectorAll(s)];
	const txt = e => e ? e.textContent.trim() : null;
	return {
	  drops: Object.fromEntries(q("#drops tr[data-reason]").map(r => [r.dataset.reason, {
	    total: Number(r.querySelector("td.total").dataset.value),
	    lines: q("polyline", r).length}])),
	  samples: q("#drops tr.sample").length,
	  stacks_of: txt(document.getElementById("drops-stacks")),
	  bpf: Object.fromEntries(q("#loss tr[data-program]").map(r => [r.dataset.program, txt(r.cells[1])])),
	  stacks: q("#drops tr.stack").map(r => r.cells[1].title),
	  mptcp_summary: txt(document.getElementById("mptcp-n")),
	  conns: q("#mptcp tr.conn").map(r => ({token: r.dataset.token, subflows: Number(txt(r.querySelector("td.subflows"))),
	    netns: txt(r.querySelector("td.netns"))})),
	  subflow_rows: q("#mptcp tr.sub").length,
	  subflow_health: q("#mptcp tr.sub td.health").map(c => ({rtt_us: Number(c.dataset.rttUs),
	    cwnd: Number(c.dataset.cwnd), text: txt(c)})),
	  cores: q("#ifs .core").map(c => ({core: c.dataset.core,
	    tests: Object.fromEntries(q(".badge", c).map(b => [b.dataset.test, b.dataset.status]))})),
	  collectors: Object.fromEntries(q("#collectors tr").slice(1).map(r => [txt(r.cells[0]), txt(r.cells[1])])),
	  loss: q("#loss tr[data-metric]").map(r => r.dataset.metric),
	  top: q("main > section").slice(0, 2).map(e => e.id),
	  ready_state: txt(document.getElementById("ready-state")),
	  // a list table's cells by the field its header names (data-field)
	  exports: q("#export tr[data-key]").map(r => Object.fromEntries(q("td", r).map((c, i) =>
	    [r.closest("table").rows[0].cells[i].dataset.field, txt(c)]))),
	  sample_fields: q("#drops table.schema th").map(h => h.dataset.field),
	  sample_head: q("#drops table.schema th").map(txt),
	  links: q("a").map(a => a.getAttribute("href")),
	  errors: q(".err").map(txt),
	};""")
	# No cachefiles here: its section's arithmetic runs on buckets a test
	# gives it, checked against what Prometheus' histogram_quantile answers
	# for them (linear inside the bucket): p50 0.001, p99 0.091.
	facts["cf_math"] = js(r"""
	  const m = parseMetrics('d_bucket{op="read",volume="erofs,\\"v1\\"",le="0.001"} 50\n' +
	    'd_bucket{op="read",volume="erofs,\\"v1\\"",le="0.01"} 90\n' +
	    'd_bucket{op="read",volume="erofs,\\"v1\\"",le="0.1"} 100\n' +
	    'd_bucket{op="read",volume="erofs,\\"v1\\"",le="+Inf"} 100\n');
	  const b = m.get("d_bucket").map(x => [x.labels.le === "+Inf" ? Infinity : parseFloat(x.labels.le), x.value]);
	  return {volume: m.get("d_bucket")[0].labels.volume, p50: quantile(0.5, b), p99: quantile(0.99, b)};""")
	png = call("GET", f"/session/{sid}/screenshot")
	open(f"{tmp}/status.png", "wb").write(base64.b64decode(png))
	open(f"{tmp}/dom.html", "w").write(js("return document.documentElement.outerHTML"))
	runs = [first] + [load() for _ in range(4)]
	facts["render_ms"] = statistics.median(r[0] for r in runs)
	facts["load_ms"] = statistics.median(r[1] for r in runs)
	facts["render_runs"] = [r[0] for r in runs]
	print(json.dumps(facts))
finally:
	call("DELETE", f"/session/{sid}")
PY
	fail "WebDriver session failed: $(tail -5 "$T/driver.err")"
drops_after=$(metric_sum sysobs_packet_drops_total 'reason="NO_SOCKET"')
F=$(cat "$T/facts.json")

assert_eq "sections reporting an error" "[]" "$(jq -c .errors <<<"$F")"
# Drops: the page's NO_SOCKET total is /metrics' sum at some moment between
# the two scrapes around it (the counter only grows), with a history line.
dom_drops=$(jq '.drops.NO_SOCKET.total' <<<"$F")
awk -v a="$drops_before" -v d="$dom_drops" -v b="$drops_after" 'BEGIN { exit !(d >= a && d <= b) }' ||
	fail "page NO_SOCKET total $dom_drops outside [$drops_before, $drops_after] of /metrics"
assert_ge "page NO_SOCKET total" 10000 "${dom_drops%.*}"
assert_ge "NO_SOCKET history lines" 1 "$(jq '.drops.NO_SOCKET.lines' <<<"$F")"
assert_eq "latest drop samples shown" 10 "$(jq .samples <<<"$F")"
[[ "$(jq -r '.bpf.drops_tp_btf // .bpf.drops_raw_tp // ""' <<<"$F")" =~ ^[0-9.]+[kMG]?\ ns/run$ ]] ||
	fail "agent section: no ns/run of the drops program: $(jq -c .bpf <<<"$F")"
# the stacks of the reason with the most drops on the page (host-wide: the
# test's NO_SOCKET flood, unless other drops on the host outnumber it)
top=$(jq -r '.drops | to_entries | max_by(.value.total) | .key' <<<"$F")
assert_eq "stacks section" "Top kernel stacks of $top (samples of the last hour)" \
	"$(jq -r .stacks_of <<<"$F")"
assert_ge "top stacks shown" 1 "$(jq '.stacks | length' <<<"$F")"
[ "$top" != NO_SOCKET ] || assert_ge "top stacks naming __udp4_lib_rcv" 1 \
	"$(jq '[.stacks[] | select(test("__udp4_lib_rcv"))] | length' <<<"$F")"
pass "drops: NO_SOCKET $dom_drops on the page, /metrics $drops_before..$drops_after; history drawn; 10 latest samples"

# MPTCP: the client's connection with its 2 subflows, and nothing else.
# its netns by the name the host gives it (ip netns add $NS_A), not its inode
assert_eq "connections on the page" "[{\"netns\":\"$NS_A\",\"subflows\":2,\"token\":\"$TOKEN_HEX\"}]" \
	"$(jq -cS .conns <<<"$F")"
assert_eq "subflow rows" 2 "$(jq .subflow_rows <<<"$F")"
assert_eq "MPTCP summary" "1 connections, 2 subflows" "$(jq -r .mptcp_summary <<<"$F")"
# Each subflow's RTT and cwnd as the API has them (tcp_info of the dump).
api GET /api/v1/mptcp/connections >"$T/mc"
assert_eq "subflow health on the page" \
	"$(jq -cS '[.data[].subflows[] | {rtt_us: .tcp.rtt_us, cwnd: .tcp.snd_cwnd}] | sort' "$T/mc")" \
	"$(jq -cS '[.subflow_health[] | {rtt_us, cwnd}] | sort' <<<"$F")"
jq -e '.subflow_health | all(.text | test("^rtt [0-9.]+ .s · cwnd [0-9]+"))' <<<"$F" >/dev/null ||
	fail "subflow health text: $(jq -c .subflow_health <<<"$F")"
pass "mptcp: connection $TOKEN_HEX with 2 subflows (the client's token) in netns $NS_A (by name)"

# IFS: the fake's script: scan fails on core 2 only, array passes everywhere.
want='[{"core":"0/0","tests":{"array":"pass","scan":"pass"}},{"core":"0/1","tests":{"array":"pass","scan":"pass"}},{"core":"0/2","tests":{"array":"pass","scan":"fail"}},{"core":"0/3","tests":{"array":"pass","scan":"pass"}}]'
assert_eq "IFS core grid" "$want" "$(jq -c '.cores | sort_by(.core) | map(.tests |= (to_entries | sort_by(.key) | from_entries))' -S <<<"$F")"
pass "ifs: 4 cores x 2 tests as scripted (scan fails on core 2)"

# cachefiles section arithmetic (no cachefiles on this host).
assert_eq "label unescaping" 'erofs,"v1"' "$(jq -r .cf_math.volume <<<"$F")"
awk -v a="$(jq .cf_math.p50 <<<"$F")" -v b="$(jq .cf_math.p99 <<<"$F")" \
	'BEGIN { exit !(a == 0.001 && b > 0.0909999 && b < 0.0910001) }' ||
	fail "cachefiles quantiles: $(jq -c .cf_math <<<"$F"), want p50 0.001, p99 0.091"
pass "cachefiles section: label unescaping and p50/p99 as histogram_quantile computes them"

# Collectors and agent health as the API says.
api GET /api/v1/collectors >"$T/collectors.json"
assert_eq "collector states" "$(jq -cS '[.data[] | {(.name): .state}] | add' "$T/collectors.json")" \
	"$(jq -cS '.collectors' <<<"$F")"
for m in sysobs_events_dropped_total sysobs_storage_errors_total sysobs_drop_samples_lost_total \
	sysobs_drops_map_overflow_total sysobs_mptcp_overruns_total sysobs_history_samples_dropped_total; do
	jq -e --arg m "$m" '.loss | index($m)' <<<"$F" >/dev/null || fail "data-loss counter $m not on the page"
done
for l in /metrics /healthz /api/v1/collectors /api/v1/export /api/v1/drops/samples /api/v1/mptcp/connections /api/v1/ifs/cores; do
	jq -e --arg l "$l" '.links | index($l)' <<<"$F" >/dev/null || fail "no link to $l"
done
# Event export: the destination configured, retrying (nothing listens), its
# URL without the password.
jq -e --arg url "http://127.0.0.1:$XPORT/v1/logs" '.exports | length == 1 and (.[0] |
	.name == "x" and .format == "otlp" and .url == $url and (.pending_rows | test("^[0-9]+$")) and
	.last_success == "-" and .last_error != "-" and .last_error != "" and
	.lag_seconds != null and .rows_lost == "0")' <<<"$F" >/dev/null ||
	fail "event export section: $(jq -c .exports <<<"$F")"
# The top box: the exports' readiness (GET /readyz; retrying for less than
# its 5 min: ready) and their lag, then data loss.
assert_eq "the first two sections" '["export","loss"]' "$(jq -c .top <<<"$F")"
assert_eq "readiness in the top box" "— ready" "$(jq -r .ready_state <<<"$F")"
# The plain tables are drawn from GET /api/v1/schema: the drop samples'
# columns are the ones it names for their route, in order.
api GET /api/v1/schema >"$T/schema.json"
assert_eq "drop sample columns, from the schema" \
	"$(jq -c '[.data[] | select(.path == "/api/v1/drops/samples") | .columns[].field]' "$T/schema.json")" \
	"$(jq -c .sample_fields <<<"$F")"
assert_eq "drop sample headers" \
	"$(jq -c '[.data[] | select(.path == "/api/v1/drops/samples") | .columns[].field | gsub("_"; " ")]' "$T/schema.json")" \
	"$(jq -c .sample_head <<<"$F")"
png_bytes=$(stat -c %s "$T/status.png")
assert_ge "screenshot bytes" 10000 "$png_bytes"
pass "collectors, event export, data-loss counters and links; screenshot $T/status.png ($png_bytes bytes)"

# Render time with >= 10k drop samples: the page's own measure (from its
# first fetch to the last section drawn), and the server's share.
render=$(jq .render_ms <<<"$F")
load=$(jq .load_ms <<<"$F")
awk -v r="$render" 'BEGIN { exit !(r < 2000) }' || fail "render took $render ms (runs $(jq -c .render_runs <<<"$F"))"
t_page=$(curl -sS -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/")
t_samples=$(curl -sS -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/api/v1/drops/samples?limit=10")
t_series=$(curl -sS -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/api/v1/series?metric=sysobs_packet_drops_total&start=-3600s&step=30s")
echo "MEASURE: status page with $n_samples drop samples: render ${render} ms (median of 5; runs $(jq -c .render_runs <<<"$F")), ${load} ms from navigation; GET / ${t_page} s, drops/samples?limit=10 ${t_samples} s, series 1h/30s ${t_series} s"
stop_agent
pass "status page shows drops, MPTCP and IFS; render ${render} ms with $n_samples drop samples"
