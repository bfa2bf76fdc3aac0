#!/usr/bin/env bash
# The event exporter as OTLP/HTTP logs, end to end: the agent posts drop
# samples to a scripted receiver on loopback (503, then 400, then a 200 with
# a partial success, then 204s), and every body the receiver accepted is
# decoded by the official OpenTelemetry JavaScript implementation
# (tests/tools/otlp/decode.mjs) and compared with the SQLite rows, record by
# record and field by field: time, severity, event name, the identity in
# the resource, one typed attribute per non-NULL column, and netns_name
# (the drops happen in a namespace the test names with ip netns).
#  - 503: the same rows are sent again (retried counted);
#  - 400: those rows are refused, counted, and the next batch goes on;
#  - partial success: the 3 records the receiver rejected are counted;
#  - every row up to the cursor was delivered, except the refused batch;
#  - packet captures stay home, but for a second destination with
#    capture = true, where each is a bytes attribute equal to SQLite's.
source "$(dirname "$0")/lib.sh"

need_root
need_cmd node
need_cmd npm
need_cmd jq
need_cmd python3
[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
GEN=${SYSOBS_BUILD:?}/tests/drops_gen
[ -x "$GEN" ] || fail "traffic generator $GEN not built"
"$SYSOBS_SRC/scripts/deps_node.sh" >"$T/deps.log" 2>&1 ||
	fail "scripts/deps_node.sh failed: $(tail -n 20 "$T/deps.log")"
BATCH=100
# a port of its own: drops to it are this test's, whatever else runs
DPORT=$((40000 + RANDOM % 9000))

mkdir -p "$T/bodies" "$T/cap-bodies"
receiver_start recv --save "$T/bodies" -- 503 400 200+partial
receiver_start cap --save "$T/cap-bodies"

write_base_config collector.drops.sample_rate=20000 collector.drops.sample_burst=20000 \
	remote_write.instance=hostA remote_write.external_labels="cluster=test"
cat >>"$T/sysobsd.ini" <<INI
[export.otel]
format = otlp
url = http://127.0.0.1:$(cat "$T/recv.port")/v1/logs
tables = drop_samples
batch_rows = $BATCH
send_interval = 1s
min_backoff = 50ms
max_backoff = 200ms
[export.cap]
format = otlp
url = http://127.0.0.1:$RX_PORT_cap/v1/logs
tables = drop_samples
send_interval = 1s
capture = true
INI
start_agent
# in a namespace the host names (ip netns): records carry netns_name
NS=sysobs-otlp-$$
netns_new "$NS" || fail "cannot create a network namespace"
ip netns exec "$NS" "$GEN" udp -d 127.0.0.1 -p "$DPORT" -n 450 >/dev/null
cursor() { sqlite3 "$T/sysobs.db" "SELECT value FROM store_meta WHERE key = 'cursor.export.otel'"; }
# Every one of the 450 drops is a row, or a record the BPF ring buffer had
# no room for (counted: a slow, sanitizer-built reader loses a few).
stored() { sqlite3 "$T/sysobs.db" "SELECT count(*) FROM drop_samples WHERE dport = $DPORT"; }
lost() { metric sysobs_drop_samples_lost_total; }
drained() {
	[ "$(metric 'sysobs_export_pending_rows{destination="otel"}')" = 0 ] && [ -n "$(cursor)" ] &&
		[ $(($(stored) + $(lost))) -ge 450 ]
}
wait_for 30 drained || fail "export did not drain: pending $(metric 'sysobs_export_pending_rows{destination="otel"}'), cursor $(cursor), rows to :$DPORT $(stored), ring-buffer losses $(lost)"
echo "FIGURE: $(stored) of 450 drops stored, $(lost) ring-buffer records lost (counted)"
CUR=$(cursor)

# the receiver's log: request n, its status; the bodies as sent (gzip)
jq -r '"\(.n) \(.status) \(."Content-Encoding") \(."Content-Type") \(.path)"' "$T/recv.log" >"$T/requests"
head -3 "$T/requests" | awk '{ print $2 }' | paste -sd' ' >"$T/statuses"
assert_eq "the receiver's first three answers" "503 400 200" "$(cat "$T/statuses")"
read -r _ _ enc ctype path < <(head -1 "$T/requests")
assert_eq "Content-Encoding" gzip "$enc"
assert_eq "Content-Type" application/x-protobuf "$ctype"
assert_eq "path" /v1/logs "$path"
decode() { gzip -dc "$T/bodies/$1.bin" | node "$SYSOBS_SRC/tests/tools/otlp/decode.mjs"; }
ids() { decode "$1" | jq -c '[.[].attributes["sysobs.id"].intValue | tonumber]'; }
assert_eq "request 2 (after the 503) = request 1" "$(ids 1)" "$(ids 2)"
refused_ids=$(ids 2)
assert_eq "rows refused (the 400)" "$(jq length <<<"$refused_ids")" \
	"$(metric 'sysobs_export_rows_dropped_total{destination="otel",reason="refused"}')"
assert_eq "records rejected (partial success)" 3 \
	"$(metric 'sysobs_export_rows_dropped_total{destination="otel",reason="rejected"}')"
retried=$(metric 'sysobs_export_rows_retried_total{destination="otel"}')
assert_eq "rows retried (the 503)" "$(jq length <<<"$refused_ids")" "$retried"

# every accepted body, decoded by the official implementation
: >"$T/records.json"
while read -r n status _; do
	[ "$status" -ge 200 ] && [ "$status" -lt 300 ] || continue
	decode "$n" >>"$T/records.json" || fail "decode.mjs refused body $n"
done <"$T/requests"
python3 - "$T/records.json" "$T/sysobs.db" "$CUR" "$refused_ids" "$NSINUM" "$NS" >"$T/check.out" 2>&1 <<'PY' ||
import json, sqlite3, sys

recs_file, db, cur, refused = sys.argv[1], sys.argv[2], int(sys.argv[3]), set(json.loads(sys.argv[4]))
ns_inum, ns_name = int(sys.argv[5]), sys.argv[6]
named = 0
recs = []
with open(recs_file) as f:
    text = f.read()
dec = json.JSONDecoder()
i = 0
while i < len(text):  # several JSON arrays, one per body
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    arr, i = dec.raw_decode(text, i)
    recs += arr
con = sqlite3.connect(db)
con.row_factory = sqlite3.Row
# BLOB columns (the packet capture) stay home: never in a record
cols = [r[1] for r in con.execute("PRAGMA table_info(drop_samples)")
        if r[1] not in ("id", "ts") and r[2] != "BLOB"]
blobs = [r[1] for r in con.execute("PRAGMA table_info(drop_samples)") if r[2] == "BLOB"]
rows = {r["id"]: r for r in con.execute("SELECT * FROM drop_samples WHERE id <= ?", (cur,))}
# columns named by OpenTelemetry's semantic conventions (event_column.otel)
otel = {"container": "container.id", "pod": "k8s.pod.name", "pod_namespace": "k8s.namespace.name",
        "pod_uid": "k8s.pod.uid", "container_name": "k8s.container.name"}
errors = []
seen = set()
want_res = {"host.name": {"stringValue": "hostA"}, "service.instance.id": {"stringValue": "hostA"},
            "service.name": {"stringValue": "sysobs"}, "cluster": {"stringValue": "test"}}
for rec in recs:
    a = rec["attributes"]
    rid = int(a["sysobs.id"]["intValue"])
    seen.add(rid)
    row = rows.get(rid)
    if row is None:
        errors.append("record %d: no such row up to the cursor" % rid)
        continue
    for k, v in want_res.items():
        if rec["resource"].get(k) != v:
            errors.append("record %d: resource %s = %r, want %r" % (rid, k, rec["resource"].get(k), v))
    if int(rec["time_unix_nano"]) != row["ts"]:
        errors.append("record %d: time %s != ts %d" % (rid, rec["time_unix_nano"], row["ts"]))
    if rec["event_name"] != "sysobs.drop_samples" or a.get("sysobs.table") != {"stringValue": "drop_samples"}:
        errors.append("record %d: event %r table %r" % (rid, rec["event_name"], a.get("sysobs.table")))
    if rec["severity_number"] != 9 or rec["severity_text"] != "INFO":
        errors.append("record %d: severity %r %r" % (rid, rec["severity_number"], rec["severity_text"]))
    # netns_name: the host's name of the row's namespace (the test's)
    if row["netns"] == ns_inum:
        named += 1
        if a.get("netns_name") != {"stringValue": ns_name}:
            errors.append("record %d: netns_name %r, want %r" % (rid, a.get("netns_name"), ns_name))
    for c in blobs:
        if c in a:
            errors.append("record %d: BLOB column %s exported" % (rid, c))
    for c in cols:
        v = row[c]
        got = a.get(otel.get(c, c))
        if v is None:
            if got is not None:
                errors.append("record %d: %s is NULL in SQLite, %r in OTLP" % (rid, c, got))
            continue
        if isinstance(v, str):
            want = {"stringValue": v}
        elif isinstance(v, float):
            want = {"doubleValue": v}
        elif got is not None and "boolValue" in got:
            want = {"boolValue": bool(v)}
        else:
            want = {"intValue": str(v)}
        if got != want:
            errors.append("record %d: %s = %r, SQLite %r" % (rid, c, got, v))
if not named:
    errors.append("no record of the test's namespace %s (%d)" % (ns_name, ns_inum))
missing = sorted(set(rows) - seen - refused)
if missing:
    errors.append("%d rows up to the cursor never delivered, e.g. %s" % (len(missing), missing[:5]))
for e in errors[:20]:
    print(e)
print("FIGURE: %d records decoded, %d rows up to id %d, %d refused, %d columns each checked, %d with netns_name %s"
      % (len(recs), len(rows), cur, len(refused), len(cols), named, ns_name))
sys.exit(1 if errors else 0)
PY
	fail "OTLP records differ from SQLite: $(cat "$T/check.out")"
cat "$T/check.out"

# [export.cap] (capture = true): the same rows, each with its packet capture
# as a bytes attribute equal to SQLite's blob; a row without one, none
cap_drained() { [ "$(metric 'sysobs_export_pending_rows{destination="cap"}')" = 0 ]; }
wait_for 30 cap_drained || fail "[export.cap] did not drain: $(tail -5 "$T/agent.log")"
: >"$T/cap.json"
for f in "$T"/cap-bodies/*.bin; do
	gzip -dc "$f" | node "$SYSOBS_SRC/tests/tools/otlp/decode.mjs" >>"$T/cap.json" ||
		fail "decode.mjs refused $f"
done
python3 - "$T/cap.json" "$T/sysobs.db" "$DPORT" >"$T/cap.out" 2>&1 <<'PY' ||
import base64, json, sqlite3, sys

text, db, dport = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
dec, i, recs = json.JSONDecoder(), 0, []
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i < len(text):
        arr, i = dec.raw_decode(text, i)
        recs += arr
con = sqlite3.connect(db)
caps = {r[0]: r[1] for r in con.execute("SELECT id, capture FROM drop_samples")}
ours = {r[0] for r in con.execute("SELECT id FROM drop_samples WHERE dport = ?", (dport,))}
errors, with_cap, seen = [], 0, set()
for rec in recs:
    rid = int(rec["attributes"]["sysobs.id"]["intValue"])
    seen.add(rid)
    got, want = rec["attributes"].get("capture"), caps.get(rid)
    if want is None:
        if got is not None:
            errors.append("record %d: a capture where SQLite has none" % rid)
    elif got != {"bytesValue": base64.b64encode(want).decode()}:
        errors.append("record %d: capture %r, SQLite %d bytes" % (rid, got, len(want)))
    else:
        with_cap += 1
    if "capture" in rec["body"].get("stringValue", ""):
        errors.append("record %d: the capture in the body" % rid)
if ours - seen:
    errors.append("%d of the test's rows not delivered" % len(ours - seen))
if with_cap < 400:
    errors.append("only %d records with a capture" % with_cap)
for e in errors[:10]:
    print(e)
print("FIGURE: [export.cap] %d records, %d with their capture equal to SQLite's" % (len(recs), with_cap))
sys.exit(1 if errors else 0)
PY
	fail "[export.cap]: $(cat "$T/cap.out")"
cat "$T/cap.out"
stop_agent
pass "OTLP logs: every record decoded by @opentelemetry/otlp-transformer equals its SQLite row; 503 retried, 400 refused and counted without blocking, partial success counted; packet captures only to the destination with capture = true, byte for byte"
