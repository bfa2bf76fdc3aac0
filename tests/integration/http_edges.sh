#!/usr/bin/env bash
# integration.http_edges: the cheap attacks of issue 30, each against the
# agent's defaults (plus basic_auth_users where a case needs them), timed
# from a client that behaves:
#   A. 64 connections sending a GET header with Content-Length: 65536 and
#      then a byte every 2 s: each is answered 400 at once; a fresh /healthz
#      and /metrics stay under 1 s (before: 9-10 s each).
#   B. 300 connections trickling a POST body a byte every 2 s: the body
#      waits in the accepting thread, not in a slot; /healthz and /metrics
#      stay under 1 s, none of them 503 (before: 9.8 s, 503s).
#   C. a request whose lines end in a bare LF: a JSON 400 at once (before:
#      answered after the 10 s header deadline).
#   D. wrong passwords for an unknown user, a cost-5 and a cost-12 user:
#      the same time to the refusal, at least the 300 ms delay (before:
#      303 ms for cost 5, 406-604 unknown, 681-1148 cost 12).
#   E. 64 connections guessing passwords from 127.0.0.9: a cached,
#      authenticated /metrics from 127.0.0.1 stays under 100 ms (p95;
#      before: 2.7-10 s); the guessers get 429 once their address spent its
#      failures (sysobs_http_logins_total{result="limited"}).
#   F. SIGTERM with logins held: a clean exit within 2 s.
#   G. /metrics?collect=drops and unknown /metrics parameters: 400 naming
#      collect[] (before: everything served); /api/v1/drops%2Fsamples: 400
#      (before: routed); an admin POST with a second Origin: 403.
#   H. 28 requests (most malformed) as a kept-alive connection's second request,
#      which libmicrohttpd parses itself: the agent's JSON for what it can
#      see (no Host, two Hosts, a space before a colon, a control byte, 150
#      fields or cookies: before, answered 200), libmicrohttpd's own HTML
#      answers and its no-answer pinned one by one (docs/security.md).
#   I. the same over TLS, as first and as second requests (before: a
#      target refused in the URI callback got no answer over TLS).
source "$(dirname "$0")/lib.sh"
need_root
need_cmd python3
need_cmd jq
need_cmd openssl
TOOL="$SYSOBS_SRC/tests/tools/http_pressure.py"
write_base_config http.admin=true

# p95 NAME JSON PATH MAX_MS: the probe of PATH in JSON answered 200 only,
# its p95 under MAX_MS.
p95_under() {
	local what=$1 json=$2 path=$3 max=$4 p95 n ok
	p95=$(jq -r --arg p "$path" '.[$p].p95_ms // "none"' <<<"$json")
	n=$(jq -r --arg p "$path" '.[$p].n // 0' <<<"$json")
	ok=$(jq -r --arg p "$path" '.[$p].statuses["200"] // 0' <<<"$json")
	[ "$n" -ge 5 ] || fail "$what: $path probed $n times: $json"
	assert_eq "$what: $path all 200" "$n" "$ok"
	awk -v a="$p95" -v b="$max" 'BEGIN { exit !(a < b) }' ||
		fail "$what: $path p95 $p95 ms (bound $max ms): $json"
	echo "$what: $path p95 $p95 ms over $n probes"
}

start_agent
out=$(python3 "$TOOL" --port "$PORT" --slow-body 64 --slow-body-request get \
	--probe /healthz --probe /metrics --duration 6 --warmup 1)
p95_under "A: 64 slow GET bodies" "$out" /healthz 1000
p95_under "A: 64 slow GET bodies" "$out" /metrics 1000
bad=$(jq -r '.slow_body.statuses | to_entries | map(select(.key != "400")) | length' <<<"$out")
assert_eq "A: every slow GET body answered 400" 0 "$bad"
pass "A: 64 GET headers declaring a trickled body refused 400 at once; fresh /healthz and /metrics under 1 s"

out=$(python3 "$TOOL" --port "$PORT" --slow-body 300 --slow-body-request post \
	--probe /healthz --probe /metrics --duration 8 --warmup 1)
p95_under "B: 300 slow POST bodies" "$out" /healthz 1000
p95_under "B: 300 slow POST bodies" "$out" /metrics 1000
pass "B: 300 POST bodies a byte every 2 s: fresh /healthz and /metrics under 1 s, all 200"

t0=$(date +%s%N)
ans=$(python3 - "$PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /healthz HTTP/1.1\nHost: 127.0.0.1\n\n")
data = b""
try:
    while True:
        c = s.recv(4096)
        if not c:
            break
        data += c
except OSError:
    pass
print(data.decode(errors="replace"))
EOF
)
ms=$((($(date +%s%N) - t0) / 1000000))
head -1 <<<"$ans" | grep -q '^HTTP/1.1 400' || fail "C: bare LF: $ans"
grep -q '"code":"bad_request"' <<<"$ans" || grep -q '"code": *"bad_request"' <<<"$ans" ||
	fail "C: bare LF answer is not the JSON error: $ans"
[ "$ms" -lt 1000 ] || fail "C: bare LF answered after $ms ms"
pass "C: bare-LF request: JSON 400 in $ms ms"

# G: the smaller rows
req GET '/metrics?collect=drops'
assert_eq "G: /metrics?collect=drops (no brackets)" 400 "$HTTP_CODE"
grep -q 'collect\[\]' <<<"$BODY" || fail "G: the 400 does not name collect[]: $BODY"
req GET '/metrics?foo=1'
assert_eq "G: /metrics with an unknown parameter" 400 "$HTTP_CODE"
req GET '/metrics?collect[]=drops'
assert_eq "G: /metrics?collect[]=drops" 200 "$HTTP_CODE"
req GET '/api/v1/drops%2Fsamples'
assert_eq "G: %2F in the path" 400 "$HTTP_CODE"
assert_eq "G: %2F answer" bad_request "$(jq -r .error.code <<<"$BODY")"
code=$(curl -s -o "$T/origin.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	-H "Origin: http://127.0.0.1:$PORT" -H 'Origin: http://evil.example' -d '{"cpus":[0]}' \
	"http://127.0.0.1:$PORT/api/v1/ifs/scans")
assert_eq "G: admin POST with a second Origin" 403 "$code"
grep -q 'more than one Origin' "$T/origin.out" || fail "G: $(cat "$T/origin.out")"
pass "G: /metrics refuses unknown parameters (collect without [] too), %2F is no separator, a second Origin is refused"

# H: whose answer each request gets where libmicrohttpd parses it itself (a
# kept-alive connection's second request; every request over TLS): the
# cases of docs/security.md, "What libmicrohttpd still answers itself", each
# pinned to what it gets today (STATUS KIND BLOCKS END, as
# tests/tools/http_requests.py prints it), so that a change is noticed.
# "json:CODE" is the agent's ErrorResponse; "html" libmicrohttpd's own page.
G2="GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n"
P2="POST /api/v1/ifs/scans HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n"
repeat() { head -c "$2" /dev/zero | tr '\0' "$1"; }
{
	# the agent's answers (JSON)
	printf 'no_host\t400 json:bad_request 1 closed\tGET /healthz HTTP/1.1\\r\\n\\r\\n\n'
	printf 'two_hosts\t400 json:bad_request 1 closed\t%sHost: y\\r\\n\\r\\n\n' "$G2"
	printf 'space_before_colon\t400 json:bad_request 1 closed\t%sX-A : 1\\r\\n\\r\\n\n' "$G2"
	printf 'control_byte_in_value\t400 json:bad_request 1 closed\t%sX-A: 1\\x01\\r\\n\\r\\n\n' "$G2"
	printf 'fields_150\t431 json:header_too_large 1 closed\t%s%s\\r\\n\n' "$G2" \
		"$(for i in $(seq 150); do printf 'X-%d: y\\r\\n' "$i"; done)"
	printf 'cookies_150\t431 json:header_too_large 1 closed\t%sCookie: %s\\r\\n\\r\\n\n' "$G2" \
		"$(for i in $(seq 150); do printf 'c%d=1;' "$i"; done)"
	printf 'chunked\t411 json:length_required 1 closed\t%sTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n\n' "$P2"
	printf 'content_length_1tb\t413 json:payload_too_large 1 closed\t%sContent-Length: 1000000000000\\r\\n\\r\\n\n' "$P2"
	printf 'get_body_then_request\t400 json:bad_request 1 closed\t%sContent-Length: 36\\r\\n\\r\\n%s\\r\\n\n' "$G2" \
		"GET /nothere HTTP/1.1\\r\\nHost: x\\r\\n"
	printf 'target_5k\t414 json:uri_too_long 1 closed\tGET /healthz?x=%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\n' "$(repeat a 5000)"
	printf 'nul_in_target\t400 json:bad_request 1 closed\tGET /healthz?x=%%00 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\n'
	printf 'unknown_method\t405 json:method_not_allowed 1 open\tFOO /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\n'
	printf 'not_found\t404 json:not_found 1 open\tGET /nothere HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\n'
	# libmicrohttpd's own (HTML, some with the header block twice)
	printf 'content_length_2^64+1\t413 html 2 closed\t%sContent-Length: 18446744073709551617\\r\\n\\r\\n\n' "$P2"
	printf 'content_length_space\t400 html 2 closed\t%sContent-Length: 2 \\r\\n\\r\\n{}\n' "$P2"
	printf 'content_length_alpha\t400 html 2 closed\t%sContent-Length: abc\\r\\n\\r\\n\n' "$P2"
	printf 'header_100k\t431 html 1 closed\t%sX-Big: %s\\r\\n\\r\\n\n' "$G2" "$(repeat a 100000)"
	printf 'cookies_3000\t431 html 2 closed\t%sCookie: %s\\r\\n\\r\\n\n' "$G2" "$(repeat ';' 3000)"
	printf 'target_40k\t414 html 1 closed\tGET /healthz?x=%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\n' "$(repeat a 40000)"
	printf 'nul_in_name\t400 html 1 closed\t%sX-A\\x00b: 1\\r\\n\\r\\n\n' "$G2"
	printf 'no_colon\t400 html 1 closed\t%sNoColonHere\\r\\n\\r\\n\n' "$G2"
	printf 'http_0.9\t400 html 1 closed\tGET /\\r\\n\\r\\n\n'
	printf 'malformed_version\t400 html 1 closed\tGET /healthz HTTP/1.1x\\r\\nHost: x\\r\\n\\r\\n\n'
	printf 'http_2.0\t505 html 1 closed\tPRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n\n'
	printf 'http_3.0\t505 html 1 closed\tGET /healthz HTTP/3.0\\r\\nHost: x\\r\\n\\r\\n\n'
	printf 'binary\tnone - 0 open\t\\x00\\x01\\x02\\x03\\xff\\xfe\\r\\n\\r\\n\n'
	# accepted by libmicrohttpd, refused in a first request
	printf 'obs_fold\t200 json 1 open\t%sX-A: 1\\r\\n  2\\r\\n\\r\\n\n' "$G2"
	printf 'bare_lf\t200 json 1 open\tGET /healthz HTTP/1.1\\nHost: x\\n\\n\n'
} >"$T/cases"
# pinned WHAT CASES FLAGS...: every case of the file CASES answered as its
# line says
pinned() {
	local what=$1 cases=$2 bad
	shift 2
	cut -f1,3 "$cases" | python3 "$SYSOBS_SRC/tests/tools/http_requests.py" --port "$PORT" "$@" \
		>"$T/got" || fail "$what: http_requests.py failed"
	bad=$(awk -F'\t' 'NR == FNR { want[$1] = $2; next }
		{ got = $2 " " $3 " " $4 " " $5; seen[$1] = 1
		  if (got != want[$1]) print "  " $1 ": got \"" got "\", pinned \"" want[$1] "\"" }
		END { for (n in want) if (!(n in seen)) print "  " n ": no answer line" }' "$cases" "$T/got")
	[ -z "$bad" ] || fail "$what: answers changed:"$'\n'"$bad"
	echo "$what: $(wc -l <"$T/got") cases as pinned ($(grep -c json: "$T/got") the agent's JSON errors, $(grep -c html "$T/got") libmicrohttpd's HTML)"
}
pinned "H: kept-alive second requests" "$T/cases" --second
stop_agent
pass "H: kept-alive second requests: the agent's JSON where it sees the request, libmicrohttpd's own answers pinned"

# ---- D, E, F: basic auth ----
hash() { python3 -W ignore -c 'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2**int(sys.argv[2]))))' "$1" "$2"; }
cat >"$T/web.yml" <<EOF
basic_auth_users:
  alice: $(hash pw5 5)
  bob: $(hash pw12 12)
EOF
start_agent --web.config.file "$T/web.yml"
URL="http://127.0.0.1:$PORT/metrics"
# D: each kind from its own source address (the limit counts by address),
# interleaved so that the machine's load falls on all alike
for i in 1 2 3 4 5 6 7 8; do
	for who in nobody:1 alice:2 bob:3; do
		u=${who%:*}
		src=127.0.1.$((${who#*:} * 10 + i))
		printf '%s %s\n' "$u" "$(curl -s -o /dev/null --interface "$src" -u "$u:wrong$i$RANDOM" \
			-w '%{http_code} %{time_total}' "$URL")"
	done
done >"$T/timing"
awk '$2 != 401 { bad = 1 } END { exit bad }' "$T/timing" || fail "D: not all 401: $(cat "$T/timing")"
medians=$(awk '{ t[$1] = t[$1] " " int($3 * 1000) } END { for (u in t) print u, t[u] }' "$T/timing" |
	while read -r u rest; do
		printf '%s %s\n' "$u" "$(tr ' ' '\n' <<<"$rest" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
	done)
echo "D: median ms to a refusal: $(tr '\n' ' ' <<<"$medians")"
lo=$(awk '{ print $2 }' <<<"$medians" | sort -n | head -1)
hi=$(awk '{ print $2 }' <<<"$medians" | sort -n | tail -1)
[ "$lo" -ge 300 ] || fail "D: a refusal in $lo ms, under the 300 ms delay: $medians"
# the bound: 200 ms or a quarter of the fastest median on a loaded machine
# (before, cost 5 and cost 12 differed by 380 ms or more: 2x and more)
tol=$((lo / 4 > 200 ? lo / 4 : 200))
[ $((hi - lo)) -le "$tol" ] ||
	fail "D: refusal times differ by $((hi - lo)) ms between users (bound $tol): $medians"
pass "D: wrong passwords of an unknown, a cost-5 and a cost-12 user refused alike (medians $lo-$hi ms)"

curl -sf -o /dev/null -u bob:pw12 "$URL" || fail "E: bob cannot log in"
python3 "$TOOL" --port "$PORT" --guess 64 --guess-from 127.0.0.9 --duration 10 --warmup 0 \
	>"$T/guess.json" &
gpid=$!
sleep 3
out=$(python3 "$TOOL" --port "$PORT" --probe /metrics --auth bob:pw12 --duration 5 --warmup 0 \
	--probe-interval 0.1)
# while the guessers run; a token the address regained (one per 5 s) may
# fall to this request rather than to a guesser: a few tries
for _ in 1 2 3 4 5; do
	ans=$(curl -s --interface 127.0.0.9 -u eve:x "$URL")
	[ "$(jq -r .error.code <<<"$ans")" = too_many_requests ] && break
done
wait "$gpid"
p95_under "E: 64 guessing connections" "$out" /metrics 100
limited=$(jq -r '.guess.statuses["429"] // 0' "$T/guess.json")
[ "$limited" -gt 0 ] || fail "E: no guess was limited: $(cat "$T/guess.json")"
m=$(curl -s -u bob:pw12 "$URL" | awk '$1 == "sysobs_http_logins_total{result=\"limited\"}" { print $2 }')
[ "${m%.*}" -gt 0 ] || fail "E: sysobs_http_logins_total{result=\"limited\"} is '$m'"
assert_eq "E: a limited address gets the JSON 429" too_many_requests "$(jq -r .error.code <<<"$ans")"
pass "E: 64 guessing connections: authenticated /metrics under 100 ms, guesses limited ($limited x 429)"

# F: SIGTERM while logins are held (refusals waiting for their time)
for i in $(seq 8); do curl -s -o /dev/null --interface 127.0.2.$i -u "bob:no$i" "$URL" & done
sleep 0.15
t0=$(date +%s%N)
stop_agent
ms=$((($(date +%s%N) - t0) / 1000000))
wait
[ "$ms" -lt 2000 ] || fail "F: SIGTERM took $ms ms with held logins"
pass "F: SIGTERM with 8 logins held: clean exit in $ms ms"

# I: over TLS every request is libmicrohttpd's to parse, the first one too:
# the same answers as H, first and second requests; more arguments than
# its memory holds are only shut down (no way to answer inside TLS)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
	-keyout "$T/tls.key" -out "$T/tls.crt" 2>/dev/null || fail "I: openssl cannot make a certificate"
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$T/tls.crt" "$T/tls.key" >"$T/tls.yml"
cp "$T/cases" "$T/cases_tls"
printf 'args_600\tnone - 0 closed\tGET /healthz?%s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\n' \
	"$(repeat '&' 600)" >>"$T/cases_tls"
start_agent --web.config.file "$T/tls.yml"
pinned "I: TLS first requests" "$T/cases_tls" --tls --first
pinned "I: TLS second requests" "$T/cases_tls" --tls --second
stop_agent
pass "I: over TLS, first and second requests: the agent's JSON where it sees the request, libmicrohttpd's own answers pinned"
