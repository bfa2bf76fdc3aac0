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
"$SYSOBSD" --bogus >/dev/null 2>&1
assert_eq "exit status for an unknown flag" 2 $?

# --- config errors: file:line and exit 2 --------------------------------------
printf '[http]\nlisten = 127.0.0.1:0\nthreds = 2\n' >"$T/bad.ini"
out=$("$SYSOBSD" --config "$T/bad.ini" 2>&1)
assert_eq "exit status for an unknown key" 2 $?
grep -q "$T/bad.ini:3: unknown key 'threds' in \[http\]" <<<"$out" || fail "unknown key message: $out"

printf '[storage]\npath = %s/x.db\nbatch_rows = lots\n' "$T" >"$T/bad2.ini"
out=$("$SYSOBSD" --config "$T/bad2.ini" --listen 127.0.0.1:0 2>&1)
assert_eq "exit status for a bad value" 2 $?
grep -q "$T/bad2.ini:3: \[storage\] batch_rows = 'lots'" <<<"$out" || fail "bad value message: $out"

out=$("$SYSOBSD" --config "$T/missing.ini" 2>&1)
assert_eq "exit status for a missing config" 2 $?
grep -q "missing.ini: cannot read config" <<<"$out" || fail "missing file message: $out"

# --- database errors: exit 2, file untouched -----------------------------------
out=$("$SYSOBSD" --listen 127.0.0.1:0 --db "$T/no/such/dir/x.db" 2>&1)
assert_eq "exit status for an unwritable database path" 2 $?
head -c 65536 /dev/urandom >"$T/corrupt.db"
sum_before=$(sha256sum <"$T/corrupt.db")
out=$("$SYSOBSD" --listen 127.0.0.1:0 --db "$T/corrupt.db" 2>&1)
assert_eq "exit status for a corrupt database" 2 $?
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

req GET /metrics
body=$BODY
assert_eq "GET /metrics status" 200 "$HTTP_CODE"
grep -q '^sysobs_build_info{version="[0-9.]*"} 1$' <<<"$body" || fail "no sysobs_build_info"
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
assert_eq "self state" running "$(jq -r '.data[] | select(.name=="self") | .state' <<<"$body")"
# Every collector that is not running says why.
n_silent=$(jq '[.data[] | select(.state != "running" and ((.reason // "") == ""))] | length' <<<"$body")
assert_eq "collectors not running without a reason" 0 "$n_silent"

# Rows from the self collector reach SQLite and come back over REST.
have_rows() { [ "$(api GET '/api/v1/events?collector=self&limit=3' | jq '.data | length')" = 3 ]; }
wait_for 10 have_rows || fail "fewer than 3 self rows after 10 s"
req GET '/api/v1/events?collector=self&limit=2'
page1=$BODY
assert_eq "events status" 200 "$HTTP_CODE"
assert_eq "page size" 2 "$(jq '.data | length' <<<"$page1")"
cursor=$(jq -r '.next_cursor' <<<"$page1")
[ "$cursor" != null ] || fail "no next_cursor on a full page"
id_last=$(jq '.data[1].id' <<<"$page1")
[ "$(jq '.data[0].id > .data[1].id' <<<"$page1")" = true ] || fail "events not newest first"
page2=$(api GET "/api/v1/events?collector=self&limit=2&cursor=$cursor")
[ "$(jq --argjson l "$id_last" '.data[0].id < $l' <<<"$page2")" = true ] || fail "cursor did not page"
jq -e '.data[0] | has("rss_bytes") and has("time") and .collector == "self"' <<<"$page1" >/dev/null ||
	fail "event row lacks its columns: $page1"
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

# Metric history through /api/v1/series.
have_series() {
	api GET '/api/v1/series?metric=sysobs_collector_up&match[]=collector="self"' >"$T/series.json"
	[ "$(jq '.data[0].values | length' "$T/series.json")" -ge 1 ] 2>/dev/null
}
wait_for 10 have_series || fail "no history for sysobs_collector_up: $(cat "$T/series.json")"
assert_eq "series matched" 1 "$(jq '.data | length' "$T/series.json")"
assert_eq "series label" self "$(jq -r '.data[0].metric.collector' "$T/series.json")"
assert_eq "series value" 1 "$(jq -r '.data[0].values[-1][1] | tonumber' "$T/series.json")"

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
rc=0
"$SYSOBSD" --config "$T/sysobsd.ini" --port-file "$T/port2" >"$T/gz.err" 2>&1 || rc=$?
assert_eq "exit status for gzip = sometimes" 2 "$rc"
grep -q 'gzip' "$T/gz.err" || fail "bad gzip value not named: $(cat "$T/gz.err")"
pass "core HTTP API, config and database errors, gzip"
