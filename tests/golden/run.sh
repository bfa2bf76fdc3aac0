#!/usr/bin/env bash
# golden.<set>: the real sysobsd on a fixed input set, its WHOLE /metrics text
# and its /api/v1 JSON answers compared with the checked-in golden files
# tests/golden/<set>/metrics.txt and tests/golden/<set>/<route>.json.
#
#   bash tests/golden/run.sh SET            # compare; a difference fails
#   bash tests/golden/run.sh SET --update   # rewrite the golden files
#   (scripts/golden.sh [--update] runs every set from a build tree)
#
# A set is tests/golden/<set>/set.sh, sourced here: it writes the agent's
# config (golden_config COLLECTOR KEY=VALUE...), names its routes in ROUTES and waits
# in golden_ready until its input has gone through. Its inputs are fixed
# files under tests/data/golden/<set>/.
#
# Normalised, and nothing else (golden_normalise):
#   - the value of every process_* series (the agent's own CPU, memory, fds,
#     start time: read live from the kernel at every scrape);
#   - the values of sysobs_build_info's version, revision, libbpf and kernel
#     labels and of every sysobs_host_info label (machine, boot, database);
#   - times and durations: the value of every series whose name ends in
#     _timestamp, _timestamp_seconds, duration_seconds or _seconds_total (CPU
#     time), and of a *_seconds histogram's _sum and finite buckets (its
#     _count and le="+Inf" bucket are compared);
#   - the value of the series whose figure depends on how often the test
#     polled and when the writer committed (GOLDEN_VARY below): the storage
#     file's size, batches and queue depth, HTTP connections, requests and
#     their durations, scrapes;
#   - in JSON: the values of "ts", "ts_ns", "time", "id", "next_cursor" and
#     "queue_depth" (the storage queue when the self collector polled), and
#     the fields a set lists in GOLDEN_JSON_VARY (its set.sh says why);
#     the fields a set lists in GOLDEN_JSON_DROP are left out wherever they
#     are (present or not depending on the host: its set.sh says why).
# Every other byte is compared: family names, HELP and TYPE lines, label
# sets, values, series order, JSON fields.
source "$(dirname "$0")/../integration/lib.sh"

SET=${1:?usage: run.sh SET [--update]}
UPDATE=${2:-}
GOLDEN=$SYSOBS_SRC/tests/golden/$SET
INPUT=$SYSOBS_SRC/tests/data/golden/$SET
[ -f "$GOLDEN/set.sh" ] || fail "no golden set $SET ($GOLDEN/set.sh)"

# golden_config COLLECTOR KEY=VALUE...: the base config with every collector
# off but COLLECTOR, and the set's keys.
golden_config() {
	local on=$1 c off=()
	shift
	for c in self drops mptcp ifs cachefiles; do
		[ "$c" = "$on" ] || off+=("collector.$c.enabled=false")
	done
	write_base_config "${off[@]}" storage.snapshot_interval=0 \
		kubernetes.cri_socket=off "$@"
}

GOLDEN_VARY='^(sysobs_storage_(db_bytes|batches_total|queue_depth)|sysobs_http_(connections|requests_total|request_duration_seconds_(bucket|sum|count))|sysobs_scrapes_total)([{ ]|$)'

golden_normalise_metrics() {
	awk -v vary="$GOLDEN_VARY" '
		/^#/ { print; next }
		{
			name = $1; sub(/\{.*/, "", name)
			if (name ~ /^process_/ || name ~ /_timestamp(_seconds)?$/ ||
			    name ~ /(duration_seconds|_seconds_total|_seconds_sum)$/ ||
			    (name ~ /_seconds_bucket$/ && $0 !~ /le="\+Inf"/) || $0 ~ vary)
				$NF = "<v>"
			if (name == "sysobs_build_info") {
				for (i = split("version revision libbpf kernel", l, " "); i > 0; i--)
					gsub(l[i] "=\"[^\"]*\"", l[i] "=\"<r>\"")
			}
			if (name == "sysobs_host_info")
				gsub(/="[^"]*"/, "=\"<r>\"")
			print
		}'
}

# The JSON fields masked in every set, and a set's own (GOLDEN_JSON_VARY).
GOLDEN_JSON_KEYS=(ts ts_ns time id next_cursor queue_depth)
GOLDEN_JSON_VARY=()
GOLDEN_JSON_DROP=()

golden_normalise_json() {
	jq -S --args '. as $doc | reduce $ARGS.positional[] as $k ($doc;
		(.. | objects | select(has($k)) | .[$k]) |= "<v>")' \
		"${GOLDEN_JSON_KEYS[@]}" "${GOLDEN_JSON_VARY[@]}" |
		jq -S --args 'reduce $ARGS.positional[] as $k (.; del(.. | objects | .[$k]?))' \
			"${GOLDEN_JSON_DROP[@]}"
}

# golden_check NAME FILE: FILE (normalised output) against $GOLDEN/NAME.
golden_check() {
	if [ "$UPDATE" = --update ]; then
		cp "$2" "$GOLDEN/$1"
		echo "updated tests/golden/$SET/$1"
	elif ! diff -u "$GOLDEN/$1" "$2" >&2; then
		fail "$SET: $1 differs from tests/golden/$SET/$1 (scripts/golden.sh --update regenerates it, if the change is meant)"
	fi
}

need_cmd jq
ROUTES=()
# shellcheck source=/dev/null
source "$GOLDEN/set.sh"
start_agent
golden_ready || fail "$SET: the input did not go through within the set's deadline"
in_api_netns curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" |
	golden_normalise_metrics >"$T/metrics.txt" || fail "GET /metrics failed"
golden_check metrics.txt "$T/metrics.txt"
for r in "${ROUTES[@]}"; do
	req GET "$r"
	assert_eq "GET $r" 200 "$HTTP_CODE"
	f=$(printf '%s' "${r#/api/v1/}" | tr '/?&=' '____').json
	printf '%s' "$BODY" | golden_normalise_json >"$T/$f" || fail "GET $r: not JSON"
	golden_check "$f" "$T/$f"
done
stop_agent
pass "$SET: /metrics and ${#ROUTES[@]} /api/v1 answers match tests/golden/$SET"
