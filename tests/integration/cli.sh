#!/usr/bin/env bash
# integration.cli: the sysobs command-line client against the real agent.
#  - usage errors exit 2 with one line on stderr; an unreachable agent or an
#    error answer exits 1 with one line naming it;
#  - status lists every collector with the state /api/v1/collectors gives,
#    then the [export.x] destination (an OTLP receiver that is not there:
#    /api/v1/export shows its URL without the password, pending rows and
#    the last error; the protobuf form decodes);
#  - drops: UDP datagrams to a closed loopback port (the kernel drops each as
#    NO_SOCKET) appear once each, filtered by port=; -o json is the agent's
#    JSON, -o protobuf decodes (protoc) to the same rows;
#  - --follow prints rows that arrive after it started, and only those;
#  - TLS + basic auth: through a local HTTPS proxy that needs a client
#    certificate and a password, the client with --ca-file, --cert-file,
#    --key-file, --basic-auth-user and --basic-auth-password-file gets the
#    status; a wrong password gives "HTTP 401" and exit 1, no CA exit 1.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd jq
need_cmd protoc
need_cmd openssl
need_cmd python3
CLI=${SYSOBS_CLI:-$SYSOBS_BUILD/api/cli/sysobs}
[ -x "$CLI" ] || fail "$CLI not built"

# usage errors: exit 2, one line
for args in "" "frobnicate" "-o xml status" "drops notakeyvalue" "-o json drops --follow" \
	"--limit 0 drops" "list" "--server ftp://x status" "--cert-file a status" "status extra"; do
	# shellcheck disable=SC2086
	REFUSED_BIN=$CLI refused "sysobs $args" "sysobs: " $args
	assert_eq "output lines of 'sysobs $args'" 1 "$(wc -l <"$T/refused.out")"
done
"$CLI" --server http://127.0.0.1:1 status >/dev/null 2>"$T/err"
assert_eq "exit status, agent unreachable" 1 "$?"
grep -q "127.0.0.1:1.*connect" "$T/err" || fail "unreachable: $(cat "$T/err")"

# Other tests on this host may drop packets by the thousand: a sampling
# budget high enough that ours are all kept.
write_base_config
printf '[collector.drops]\nsample_rate = 100000\nsample_burst = 10000\n' >>"$T/sysobsd.ini"
XPORT=$(free_port) || fail "no free loopback port"
printf '[export.x]\nformat = otlp\nsend_interval = 1s\nurl = http://user:secret@127.0.0.1:%s/v1/logs\n' "$XPORT" \
	>>"$T/sysobsd.ini"
start_agent
export SYSOBS_URL=http://127.0.0.1:$PORT

# export: the destination, retrying, its URL without the password
failing() { [ -n "$(api GET /api/v1/export | jq -r '.data[0].last_error // empty')" ]; }
wait_for 10 failing || fail "no last_error for [export.x]: $(api GET /api/v1/export)"
req GET /api/v1/export
assert_eq "GET /api/v1/export status" 200 "$HTTP_CODE"
jq -e --arg url "http://127.0.0.1:$XPORT/v1/logs" '.data | length == 1 and (.[0] |
	.name == "x" and .format == "otlp" and .url == $url and
	(.pending_rows | test("^[0-9]+$")) and (.rows_retried | test("^[0-9]+$")) and
	(.cursor | test("^[0-9]+$")) and (.lag_seconds | type == "number") and
	.last_success == null and .last_error != "")' <<<"$BODY" >/dev/null ||
	fail "/api/v1/export: $BODY"
grep -q secret <<<"$BODY" && fail "/api/v1/export shows the password: $BODY"
curl -sf -H 'Accept: application/x-protobuf' "$SYSOBS_URL/api/v1/export" >"$T/export.pb" ||
	fail "GET /api/v1/export in protobuf"
protoc --decode=sysobs.v1.ExportList -I"$SYSOBS_SRC/api/proto" -I/usr/include \
	"$SYSOBS_SRC/api/proto/sysobs.proto" <"$T/export.pb" >"$T/export.txt" ||
	fail "protoc cannot decode /api/v1/export"
grep -q '^  name: "x"$' "$T/export.txt" || fail "ExportList: $(cat "$T/export.txt")"
grep -q '^  format: "otlp"$' "$T/export.txt" || fail "ExportList: $(cat "$T/export.txt")"
grep -q secret "$T/export.txt" && fail "ExportList shows the password: $(cat "$T/export.txt")"

# status: the same collectors and states as the API
"$CLI" status >"$T/status" || fail "sysobs status failed"
req GET /api/v1/collectors
while read -r name state; do
	state=$(tr 'A-Z' 'a-z' <<<"$state")
	grep -Eq "^$name +$state " "$T/status" || fail "status lacks '$name $state': $(cat "$T/status")"
done < <(jq -r '.data[] | "\(.name) \(.state)"' <<<"$BODY")
grep -Eq "^x +otlp +[0-9]+ .* http://127\.0\.0\.1:$XPORT/v1/logs +[^ ]" "$T/status" ||
	fail "status lacks the export destination x: $(cat "$T/status")"
grep -q secret "$T/status" && fail "status shows the password: $(cat "$T/status")"
"$CLI" export >"$T/export" || fail "sysobs export failed"
grep -Eq "^x +otlp " "$T/export" || fail "sysobs export: $(cat "$T/export")"

# drops: N datagrams to a closed port, each dropped as NO_SOCKET
[ "$(jq -r '.data[] | select(.name == "drops") | .state' <<<"$BODY")" = RUNNING ] ||
	fail "drops collector not running"
P=$((10000 + RANDOM % 20000)) # not probed: a TCP probe would be a drop of its own
N=5
for _ in $(seq $N); do echo x >/dev/udp/127.0.0.1/$P; done
sleep 1.5
"$CLI" drops --since -1m "port=$P" >"$T/drops" || fail "sysobs drops failed"
rows=$(grep -c " NO_SOCKET .* udp .*127.0.0.1:$P " "$T/drops")
assert_eq "NO_SOCKET rows for port $P (table)" $N "$rows"
# the table is the route's entry in GET /api/v1/schema: its header is the
# columns the schema names, in order, and every list route is there
schema=$(api GET /api/v1/schema)
want=$(jq -r '.data[] | select(.path == "/api/v1/drops/samples") |
	[.columns[].field | ascii_upcase] | join(" ")' <<<"$schema")
[[ $want == "TIME REASON PROTOCOL SADDR "* ]] || fail "schema of drops: $want"
assert_eq "sysobs drops header, from the schema" "$want" "$(head -1 "$T/drops" | tr -s ' ')"
"$CLI" schema >"$T/schema" || fail "sysobs schema failed"
assert_eq "routes of 'sysobs schema'" "$(jq -r '.data[].path' <<<"$schema" | sort | tr '\n' ' ')" \
	"$(tail -n +2 "$T/schema" | awk '{print $1}' | sort | tr '\n' ' ')"
for r in /api/v1/collectors /api/v1/export /api/v1/events /api/v1/drops/samples \
	/api/v1/mptcp/events /api/v1/mptcp/connections /api/v1/schema; do
	grep -q "^$r " "$T/schema" || fail "'sysobs schema' lacks $r: $(cat "$T/schema")"
done
# list PATH: any route of the schema, the same table as its command
"$CLI" list /api/v1/drops/samples --since -1m "port=$P" >"$T/list" || fail "sysobs list failed"
assert_eq "sysobs list /api/v1/drops/samples, as sysobs drops" "$(cat "$T/drops")" "$(cat "$T/list")"
"$CLI" list /api/v1/nope >/dev/null 2>"$T/err"
assert_eq "exit status, list of a route the schema lacks" 1 "$?"
grep -q "schema has no /api/v1/nope" "$T/err" || fail "list /api/v1/nope: $(cat "$T/err")"
"$CLI" -o json drops --since -1m "port=$P" >"$T/drops.json" || fail "-o json failed"
assert_eq "rows in -o json" $N "$(jq '.data | length' "$T/drops.json")"
curl -s "http://127.0.0.1:$PORT/api/v1/drops/samples?start=-1m&port=$P" >"$T/curl.json"
[ "$(jq -S .data "$T/curl.json")" = "$(jq -S .data "$T/drops.json")" ] ||
	fail "-o json differs from the API's JSON"
"$CLI" -o protobuf drops --since -1m "port=$P" >"$T/drops.pb" || fail "-o protobuf failed"
protoc --decode=sysobs.v1.DropSampleList -I"$SYSOBS_SRC/api/proto" -I/usr/include \
	"$SYSOBS_SRC/api/proto/sysobs.proto" <"$T/drops.pb" >"$T/drops.txt" ||
	fail "protoc cannot decode -o protobuf"
assert_eq "rows in -o protobuf" $N "$(grep -c "dport: $P" "$T/drops.txt")"

# --follow: only rows after it started
P2=$((P + 1))
echo x >/dev/udp/127.0.0.1/$P2 # before: must not be printed
sleep 1
"$CLI" drops --follow "port=$P2" >"$T/follow" 2>&1 &
FPID=$!
on_exit "kill $FPID 2>/dev/null"
sleep 1.5
for _ in 1 2 3; do echo y >/dev/udp/127.0.0.1/$P2; done
wait_for 8 bash -c "[ \$(grep -c ':$P2 ' '$T/follow') -ge 4 ]" || true
kill -INT $FPID
wait $FPID
rows=$(grep -c "127.0.0.1:$P2 " "$T/follow")
assert_eq "rows --follow printed (1 before it started + 3 after)" 4 "$rows"
sleep 0.2
"$CLI" drops --since -1m "port=$P2" >"$T/after"
assert_eq "the API holds the same 4" 4 "$(grep -c "127.0.0.1:$P2 " "$T/after")"

# TLS with a client certificate and basic auth, through a local proxy
cd "$T" || fail "cd"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=sysobs-test-ca -keyout ca.key \
	-out ca.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout srv.key -out srv.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext \
	-out srv.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout cli.key -out cli.csr 2>/dev/null
openssl x509 -req -in cli.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out cli.crt \
	2>/dev/null
printf 's3cret\n' >pw
printf 'wrong\n' >badpw
cat >proxy.py <<'PY'
import base64, http.server, ssl, sys, urllib.request
up, port_file = sys.argv[1], sys.argv[2]
want = "Basic " + base64.b64encode(b"ops:s3cret").decode()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("Authorization") != want:
            self.send_response(401); self.send_header("WWW-Authenticate", "Basic")
            self.end_headers(); return
        r = urllib.request.urlopen(urllib.request.Request(up + self.path,
                headers={"Accept": self.headers.get("Accept", "*/*")}))
        body = r.read()
        self.send_response(r.status)
        self.send_header("Content-Type", r.headers["Content-Type"])
        self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("srv.crt", "srv.key")
ctx.load_verify_locations("ca.crt"); ctx.verify_mode = ssl.CERT_REQUIRED
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
python3 proxy.py "http://127.0.0.1:$PORT" "$T/tlsport" 2>"$T/proxy.log" &
PPID_=$!
on_exit "kill $PPID_ 2>/dev/null"
wait_for 10 test -s "$T/tlsport" || fail "TLS proxy did not start"
U=https://127.0.0.1:$(cat "$T/tlsport")
"$CLI" -s "$U" --ca-file ca.crt --cert-file cli.crt --key-file cli.key --basic-auth-user ops \
	--basic-auth-password-file pw status >"$T/tls.status" 2>"$T/err" ||
	fail "status over TLS + basic auth failed: $(cat "$T/err")"
grep -Eq '^drops +running ' "$T/tls.status" || fail "TLS status: $(cat "$T/tls.status")"
"$CLI" -s "$U" --ca-file ca.crt --cert-file cli.crt --key-file cli.key --basic-auth-user ops \
	--basic-auth-password-file badpw status >/dev/null 2>"$T/err"
assert_eq "exit status, wrong password" 1 "$?"
grep -q "HTTP 401" "$T/err" || fail "wrong password: $(cat "$T/err")"
"$CLI" -s "$U" --cert-file cli.crt --key-file cli.key --basic-auth-user ops \
	--basic-auth-password-file pw status >/dev/null 2>"$T/err"
assert_eq "exit status, unknown CA" 1 "$?"
"$CLI" -s "$U" --ca-file ca.crt --basic-auth-user ops --basic-auth-password-file pw status \
	>/dev/null 2>"$T/err"
assert_eq "exit status, no client certificate" 1 "$?"
cd - >/dev/null || true
stop_agent

# scan (admin) and ifs through the IFS fake: the queued scan's id, then its
# result in `ifs scans` and in the core grid of `ifs`
FAKE="$SYSOBS_BUILD/tests/fakes/ifs_fake"
if [ -x "$FAKE" ] && [ -c /dev/fuse ]; then
	ifs_fake_start device.0.default=pass
	write_base_config
	sed -i 's/^listen = 127.0.0.1:0$/admin = true/' "$T/sysobsd.ini"
	start_agent --listen 127.0.0.1:0 --sysfs-root "$T/mnt"
	export SYSOBS_URL=http://127.0.0.1:$PORT
	"$CLI" scan 1 test=scan >"$T/scan" 2>"$T/err" || fail "sysobs scan: $(cat "$T/err")"
	id=$(awk 'NR == 2 {print $1}' "$T/scan")
	[[ "$id" =~ ^[0-9]+$ ]] || fail "no scan id: $(cat "$T/scan")"
	done_scan() { "$CLI" ifs scans "scan_id=$id" 2>/dev/null | grep -Eq "^[^ ]+ +$id +scan +0 +1 +1 +pass "; }
	wait_for 10 done_scan || fail "scan $id not pass in 'ifs scans': $("$CLI" ifs scans 2>&1)"
	"$CLI" ifs >"$T/ifs" || fail "sysobs ifs failed"
	grep -Eq '^0 +1 +1 +yes +scan +pass ' "$T/ifs" || fail "core 1 not pass in 'ifs': $(cat "$T/ifs")"
	"$CLI" scan 0:9 >/dev/null 2>"$T/err"
	assert_eq "exit status, scan of a core that does not exist" 1 "$?"
	stop_agent
	ifs="scan + ifs through the IFS fake"
else
	ifs="(no IFS fake: scan untested)"
fi
pass "usage exit 2, status = API (collectors, export destination), $N drops by port (table/json/protobuf), --follow prints only new rows, TLS client cert + basic auth, $ifs"
