#!/usr/bin/env bash
# Every core endpoint of the real daemon, including malformed input, and the
# exit status / message for bad configs and databases.
source "$(dirname "$0")/lib.sh"
need_cmd curl
need_cmd jq

# --- command line -----------------------------------------------------------
"$SYSOBSD" --help | grep -q -- '--config' || fail "--help does not list --config"
"$SYSOBSD" --version | grep -Eq '^sysobsd [0-9]+\.[0-9]+' || fail "--version"
"$SYSOBSD" --print-config | grep -q '^\[collector.self\]' || fail "--print-config lacks [collector.self]"
refused "an unknown flag" "" --bogus

# --- config errors: file:line and exit 2 --------------------------------------
printf '[http]\nlisten = 127.0.0.1:0\nthreds = 2\n' >"$T/bad.ini"
refused "an unknown key" "$T/bad.ini:3: unknown key 'threds' in [http]" --config "$T/bad.ini"

printf '[storage]\npath = %s/x.db\nbatch_rows = lots\n' "$T" >"$T/bad2.ini"
refused "a bad value" "$T/bad2.ini:3: [storage] batch_rows = 'lots'" --config "$T/bad2.ini" \
	--listen 127.0.0.1:0

refused "a missing config" "missing.ini: cannot read config" --config "$T/missing.ini"

# --- database errors: exit 2, file untouched -----------------------------------
refused "an unwritable database path" "" --listen 127.0.0.1:0 --db "$T/no/such/dir/x.db"
head -c 65536 /dev/urandom >"$T/corrupt.db"
sum_before=$(sha256sum <"$T/corrupt.db")
refused "a corrupt database" "" --listen 127.0.0.1:0 --db "$T/corrupt.db"
assert_eq "corrupt database left as it was" "$sum_before" "$(sha256sum <"$T/corrupt.db")"

# --- a running agent -----------------------------------------------------------
write_base_config
cat >>"$T/sysobsd.ini" <<INI
snapshot_interval = 1s
[collector.self]
interval = 200ms
INI
start_agent

req GET /
body=$BODY
assert_eq "GET / status" 200 "$HTTP_CODE"
grep -q 'href="/metrics"' <<<"$body" || fail "landing page lacks a link to /metrics"

req GET /healthz
body=$BODY
assert_eq "GET /healthz status" 200 "$HTTP_CODE"
assert_eq "GET /healthz body (Health, no reason when healthy)" '{"status":"ok"}' "$(jq -c . <<<"$body")"

req GET /metrics
body=$BODY
assert_eq "GET /metrics status" 200 "$HTTP_CODE"
grep -Eq '^sysobs_build_info\{version="[0-9.]+",revision="([0-9a-f]{12}(-dirty)?|unknown)",libbpf="([0-9.]+|none)",kernel="'"$(uname -r)"'"\} 1$' <<<"$body" ||
	fail "sysobs_build_info lacks version, revision, libbpf or kernel: $(grep build_info <<<"$body")"
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
	process_open_fds process_max_fds process_start_time_seconds; do
	grep -q "^$m [0-9]" <<<"$body" || fail "no standard $m"
done
grep -q '^sysobs_collector_up{collector="self"} 1$' <<<"$body" || fail "self collector not up"
ctype=$(curl -sS -o /dev/null -w '%{content_type}' "http://127.0.0.1:$PORT/metrics")
grep -q '^text/plain; version=0.0.4' <<<"$ctype" || fail "metrics content type: $ctype"
if command -v promtool >/dev/null; then
	printf '%s\n' "$body" | promtool check metrics >"$T/promtool.out" 2>&1 ||
		fail "promtool check metrics: $(cat "$T/promtool.out")"
fi

# gzip = auto (default): a loopback client is sent identity even when it
# asks: compressing would cost CPU and save nothing
hdr() { curl -sS -D - -o "$T/gz.body" "${@:2}" "http://127.0.0.1:$PORT$1" | tr -d '\r'; }
grep -qi '^content-encoding' <<<"$(hdr /metrics -H 'Accept-Encoding: gzip')" &&
	fail "gzip = auto compressed for a loopback client"

req GET /api/v1/collectors
body=$BODY
assert_eq "GET /api/v1/collectors status" 200 "$HTTP_CODE"
assert_eq "self state" RUNNING "$(jq -r '.data[] | select(.name=="self") | .state' <<<"$body")"
# Every collector that is not running says why.
n_silent=$(jq '[.data[] | select(.state != "RUNNING" and ((.reason // "") == ""))] | length' <<<"$body")
assert_eq "collectors not running without a reason" 0 "$n_silent"
# States by enum name, error counts as strings (uint64), routes as "METHOD /path".
jq -e '.next_cursor == "" and (.data | all(
	(.state | IN("DISABLED", "UNAVAILABLE", "RUNNING", "FAILED")) and
	(.errors | type == "string" and test("^[0-9]+$")) and
	(.routes | all(test("^(GET|POST) /api/v1/")))))' <<<"$body" >/dev/null ||
	fail "collectors not in the Collector shape: $body"
assert_eq "self routes" '["GET /api/v1/self/samples"]' \
	"$(jq -c '.data[] | select(.name=="self") | .routes' <<<"$body")"
req GET /api/v1/collectors -H 'Accept: text/html'
assert_eq "/api/v1/collectors for Accept: text/html" 406 "$HTTP_CODE"
jq -e '.error.code and .error.message' <<<"$BODY" >/dev/null || fail "406 without a JSON error: $BODY"
ctype=$(in_api_netns curl -sS -o /dev/null -w '%{content_type}' -H 'Accept: application/x-protobuf' \
	"http://127.0.0.1:$PORT/api/v1/collectors")
assert_eq "/api/v1/collectors for Accept: application/x-protobuf" application/x-protobuf "$ctype"
# No [export.NAME]: an empty list, not an error.
req GET /api/v1/export
assert_eq "GET /api/v1/export status" 200 "$HTTP_CODE"
assert_eq "/api/v1/export without exporters" '{"data":[],"next_cursor":""}' "$(jq -cS . <<<"$BODY")"
req GET /api/v1/export -H 'Accept: text/html'
assert_eq "/api/v1/export for Accept: text/html" 406 "$HTTP_CODE"
req GET '/api/v1/export?limit=1'
assert_eq "/api/v1/export with a parameter it does not take" 400 "$HTTP_CODE"

# Rows from the self collector reach SQLite and come back over REST.
have_rows() { [ "$(api GET '/api/v1/events?collector=self&limit=3' | jq '.data | length')" = 3 ]; }
wait_for 10 have_rows || fail "fewer than 3 self rows after 10 s"
req GET '/api/v1/events?collector=self&limit=2'
page1=$BODY
assert_eq "events status" 200 "$HTTP_CODE"
assert_eq "page size" 2 "$(jq '.data | length' <<<"$page1")"
cursor=$(jq -r '.next_cursor' <<<"$page1")
[[ $cursor =~ ^[0-9]+$ ]] || fail "no next_cursor on a full page: $page1"
# ids are int64: JSON strings
id_last=$(jq '.data[1].id | tonumber' <<<"$page1")
[ "$(jq '(.data[0].id | tonumber) > (.data[1].id | tonumber)' <<<"$page1")" = true ] ||
	fail "events not newest first"
page2=$(api GET "/api/v1/events?collector=self&limit=2&cursor=$cursor")
[ "$(jq --argjson l "$id_last" '(.data[0].id | tonumber) < $l' <<<"$page2")" = true ] ||
	fail "cursor did not page"
# an Event: id, time, collector, table and the row under its table's field
jq -e '.data[0] | (.id | type == "string") and .collector == "self" and .table == "self_samples"
	and (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{9}Z$")) and (has("ts") | not)
	and (.self_sample | has("cpu_seconds") and (.rss_bytes | type == "string")
		and .id == $e.id and .time == $e.time)' --argjson e "$(jq '.data[0]' <<<"$page1")" \
	<<<"$page1" >/dev/null || fail "event lacks its row: $page1"
# the table's own route has the same row
req GET "/api/v1/self/samples?limit=1&cursor=$(($(jq -r '.data[0].id' <<<"$page1") + 1))"
assert_eq "self/samples status" 200 "$HTTP_CODE"
assert_eq "self/samples row = the event's row" "$(jq -c '.data[0].self_sample' <<<"$page1")" \
	"$(jq -c '.data[0]' <<<"$BODY")"
body=$(api GET "/api/v1/self/samples?limit=1000&start=-1h")
assert_eq "next_cursor of the last page" '""' "$(jq -c .next_cursor <<<"$body")"
now=$(date +%s)
body=$(api GET "/api/v1/events?collector=self&start=$((now + 3600))")
assert_eq "events in the future" 0 "$(jq '.data | length' <<<"$body")"
req GET "/api/v1/events?start=2020-01-01T00:00:00Z&limit=1"
body=$BODY
assert_eq "events of all collectors, RFC 3339 start" 200 "$HTTP_CODE"
assert_eq "one row" 1 "$(jq '.data | length' <<<"$body")"
req GET "/api/v1/events?start=-1h&end=now&limit=1"
assert_eq "relative start and end" 200 "$HTTP_CODE"
assert_eq "a row within the last hour" 1 "$(jq '.data | length' <<<"$BODY")"
body=$(api GET "/api/v1/events?collector=self&end=-1h")
assert_eq "nothing older than an hour" 0 "$(jq '.data | length' <<<"$body")"

# Metric history through /api/v1/series: a SeriesList, labels as a map,
# points with RFC 3339 times.
have_series() {
	api GET '/api/v1/series?metric=sysobs_collector_up&match[]=collector="self"' >"$T/series.json"
	[ "$(jq '.data[0].points | length' "$T/series.json")" -ge 1 ] 2>/dev/null
}
wait_for 10 have_series || fail "no history for sysobs_collector_up: $(cat "$T/series.json")"
assert_eq "series matched" 1 "$(jq '.data | length' "$T/series.json")"
assert_eq "series name" sysobs_collector_up "$(jq -r '.data[0].labels.__name__' "$T/series.json")"
assert_eq "series label" self "$(jq -r '.data[0].labels.collector' "$T/series.json")"
assert_eq "series value" 1 "$(jq -r '.data[0].points[-1].value' "$T/series.json")"
assert_eq "series next_cursor" '""' "$(jq -c '.next_cursor' "$T/series.json")"
rfc3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$'
jq -e --arg re "$rfc3339" '.data[0].points | all(.time | type == "string" and test($re))' \
	"$T/series.json" >/dev/null || fail "series times are not RFC 3339: $(cat "$T/series.json")"
# With step, every point is on the grid start + k*step (start in unix
# seconds, so every time is a whole second).
start=$(($(date +%s) - 30))
have_grid() {
	req GET "/api/v1/series?metric=sysobs_collector_up&match[]=collector=%22self%22&start=$start&step=5s"
	[ "$HTTP_CODE" = 200 ] && printf '%s' "$BODY" >"$T/grid.json" &&
		[ "$(jq '.data[0].points | length' "$T/grid.json")" -ge 2 ] 2>/dev/null
}
wait_for 15 have_grid || fail "fewer than 2 points on the 5s grid ($HTTP_CODE): $BODY"
off_grid=$(jq -c --argjson s "$start" '[.data[0].points[].time
	| select((test("\\.000000000Z$") | not) or
		 (((sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) - $s) % 5 != 0))]' "$T/grid.json")
assert_eq "points off the start + k*5s grid" '[]' "$off_grid"

# --- malformed requests: 4xx with a JSON error, the agent serves on ---------------
check_error() { # STATUS PATH [METHOD]
	local body
	req "${3:-GET}" "$2"
	body=$BODY
	assert_eq "status of ${3:-GET} $2" "$1" "$HTTP_CODE"
	jq -e '.error.code and .error.message' <<<"$body" >/dev/null || fail "no JSON error for $2: $body"
}
check_error 400 '/api/v1/events?start=yesterday'
check_error 400 '/api/v1/events?since=-1h'
check_error 400 '/api/v1/self/samples?until=now'
check_error 400 '/api/v1/self/samples?limit=0'
check_error 400 '/api/v1/self/samples?rss_bytes=1'
check_error 400 '/api/v1/events?limit=0'
check_error 400 '/api/v1/events?limit=100000'
check_error 400 '/api/v1/events?limit=12abc'
check_error 400 '/api/v1/events?collector=nosuch'
check_error 400 '/api/v1/events?cursor=-5'
check_error 400 '/api/v1/events?start=2026-12-02T10:00:00Z&end=2026-12-01T10:00:00Z'
check_error 400 '/api/v1/series?metric=sysobs_collector_up&step=1h1h'
check_error 400 '/api/v1/events?colector=self'
check_error 400 '/api/v1/series'
check_error 400 '/api/v1/series?metric=x&match[]=collector=%22unterminated'
check_error 400 '/api/v1/series?metric=x&step=-1'
check_error 404 '/nope'
check_error 404 '/api/v1/nope'
check_error 405 '/metrics' POST
check_error 405 '/api/v1/events' DELETE
req GET /healthz
body=$BODY
assert_eq "healthy after bad requests" 200 "$HTTP_CODE"
grep -q '^sysobs_http_requests_total{.*code="400".*} [1-9]' <<<"$(api GET /metrics)" ||
	fail "400s not counted in sysobs_http_requests_total"

stop_agent

sed -i '/^\[http\]/a gzip = always' "$T/sysobsd.ini"
start_agent
# gzip = always: when asked (Prometheus always asks), for bodies worth it,
# never for q=0
h=$(hdr /metrics -H 'Accept-Encoding: gzip')
grep -qi '^content-encoding: gzip$' <<<"$h" || fail "/metrics not gzipped when asked: $h"
grep -qi '^vary: accept-encoding$' <<<"$h" || fail "no Vary: Accept-Encoding: $h"
gunzip -c "$T/gz.body" >"$T/gz.txt" || fail "gzipped /metrics does not decompress"
grep -q '^sysobs_build_info{' "$T/gz.txt" || fail "decompressed /metrics lacks sysobs_build_info"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/gz.txt" >"$T/promtool.out" 2>&1 ||
		fail "promtool check metrics (gzip): $(cat "$T/promtool.out")"
fi
# the landing page, but for its "last activity" times
no_ts() { sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TIME/g'; }
hdr / -H 'Accept-Encoding: gzip' >/dev/null
plain=$(curl -sS "http://127.0.0.1:$PORT/" | no_ts)
assert_eq "landing page, gzip vs plain" "$plain" "$(gunzip -c "$T/gz.body" | no_ts)"
grep -qi '^content-encoding' <<<"$(hdr /metrics -H 'Accept-Encoding: gzip;q=0, deflate')" &&
	fail "gzipped although q=0"
grep -qi '^content-encoding' <<<"$(hdr /metrics)" && fail "gzipped without Accept-Encoding"
grep -qi '^content-encoding' <<<"$(hdr /healthz -H 'Accept-Encoding: gzip')" &&
	fail "a tiny body was gzipped"

stop_agent
sed -i 's/^gzip = always$/gzip = sometimes/' "$T/sysobsd.ini"
refused "gzip = sometimes" gzip --config "$T/sysobsd.ini" --port-file "$T/port2"
pass "core HTTP API, config and database errors, gzip"
