#!/usr/bin/env bash
# The agent's OTLP logs bytes read by an independent, official
# implementation: otlp_dump (tests/unit/otlp_dump.c) encodes a fixed set of
# event rows with exporters/otlp_logs.c and says what each record must
# hold; tests/tools/otlp/decode.mjs decodes the bytes with the protobufjs
# code that @opentelemetry/otlp-transformer generated from
# opentelemetry-proto; every record is compared field by field (resource,
# scope, times, severity, event name, body, typed attributes). The
# comparison itself is checked: a changed field is reported. Bytes that are
# not a request are refused by the decoder. Needs node and npm (the
# packages come from scripts/deps_node.sh); no root, no agent.
source "$(dirname "$0")/lib.sh"

need_cmd node
need_cmd npm
need_cmd jq
DUMP="$SYSOBS_BUILD/tests/otlp_dump"
[ -x "$DUMP" ] || fail "$DUMP not built"
TOOL="$SYSOBS_SRC/tests/tools/otlp"
"$SYSOBS_SRC/scripts/deps_node.sh" >"$T/deps.log" 2>&1 ||
	fail "scripts/deps_node.sh failed: $(tail -n 20 "$T/deps.log")"

"$DUMP" "$T/req.pb" "$T/expected.json" || fail "otlp_dump failed"
node "$TOOL/decode.mjs" <"$T/req.pb" >"$T/decoded.json" 2>"$T/decode.err" ||
	fail "decode.mjs refused the agent's bytes: $(cat "$T/decode.err")"

# compare EXPECTED ACTUAL: one line per difference (record, field path,
# both values); nothing when equal. Numbers compare as numbers (a double
# spelled by jansson and by JavaScript), everything else exactly.
compare() {
	jq -rn --slurpfile e "$1" --slurpfile a "$2" '
		$e[0] as $E | $a[0] as $A |
		if ($E | length) != ($A | length) then
			"record count: expected \($E | length), got \($A | length)"
		else
			range(0; $E | length) as $i |
			$E[$i] as $x | $A[$i] as $y |
			(([$x | paths(scalars)] + [$y | paths(scalars)]) | unique | .[]) as $p |
			($x | getpath($p)) as $u | ($y | getpath($p)) as $v |
			select($u != $v) |
			"record \($i) \($p | map(tostring) | join(".")): expected \($u | tojson), got \($v | tojson)"
		end'
}

n=$(jq length "$T/expected.json")
assert_ge "records otlp_dump encoded" 5 "$n"
diffs=$(compare "$T/expected.json" "$T/decoded.json")
[ -z "$diffs" ] || fail "the official decoder reads other records than were encoded:
$diffs"
pass "$n records decoded by @opentelemetry/otlp-transformer equal what was encoded, field by field"

# The comparison sees a difference in one field of one record.
jq '.[3].attributes.u.stringValue = "1"' "$T/expected.json" >"$T/tampered.json"
diffs=$(compare "$T/tampered.json" "$T/decoded.json")
assert_eq "differences found in a tampered expectation" \
	'record 3 attributes.u.stringValue: expected "1", got "18446744073709551615"' "$diffs"
pass "a changed field is reported"

printf 'not protobuf at all' >"$T/garbage.pb"
if node "$TOOL/decode.mjs" "$T/garbage.pb" >/dev/null 2>"$T/garbage.err"; then
	fail "decode.mjs accepted garbage"
fi
grep -q "not an ExportLogsServiceRequest" "$T/garbage.err" ||
	fail "decode.mjs said: $(cat "$T/garbage.err")"
pass "bytes that are not a request are refused"
