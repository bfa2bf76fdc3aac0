#!/usr/bin/env bash
# compare_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [RUNS]: the store's ingest
# rate (bench_ingest drain, 1,000,000 rows) and the /metrics render time
# (bench_metrics, 10,000 series, CPU p50 of 500 renders per format) of two
# builds, run alternately (old, new, old, new, ...) in one run so both see
# the same machine; RUNS rounds (default 3). Prints each run's figures and
# the median and range of each side. Figures only, no assertions.
#   git worktree add /tmp/old <rev> && (cd /tmp/old && ./scripts/build.sh)
#   bench/compare_builds.sh /tmp/old/build build
set -euo pipefail
old=${1:?usage: compare_builds.sh OLD_BUILD NEW_BUILD [RUNS]}
new=${2:?usage: compare_builds.sh OLD_BUILD NEW_BUILD [RUNS]}
runs=${3:-3}
for b in "$old" "$new"; do
	for t in bench_ingest bench_metrics; do
		[ -x "$b/bench/$t" ] || { echo "compare_builds: no $b/bench/$t (build it first)" >&2; exit 2; }
	done
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# one_run BUILD: "ingest1000 ingest10000 text om pb" on one line
one_run() {
	local b=$1 ing met
	ing=$("$b/bench/bench_ingest" 1000000 drain 2>/dev/null)
	met=$("$b/bench/bench_metrics" 500 2>/dev/null)
	printf '%s %s %s %s %s\n' \
		"$(awk '/^drain +batch_rows=1000 /{print $6}' <<<"$ing")" \
		"$(awk '/^drain +batch_rows=10000 /{print $6}' <<<"$ing")" \
		"$(awk '/^metrics_render text/{f=1} f && /cpu +p50/{print $3; exit}' <<<"$met")" \
		"$(awk '/^metrics_render OpenMetrics/{f=1} f && /cpu +p50/{print $3; exit}' <<<"$met")" \
		"$(awk '/^metrics_render protobuf/{f=1} f && /cpu +p50/{print $3; exit}' <<<"$met")"
}

printf '%-4s %-3s %16s %16s %10s %10s %10s\n' side run "ingest b=1000/s" "ingest b=10000/s" \
	"text ms" "OM ms" "pb ms"
for i in $(seq "$runs"); do
	for side in old new; do
		b=$old
		[ "$side" = new ] && b=$new
		r=$(one_run "$b")
		echo "$r" >>"$out/$side"
		# shellcheck disable=SC2086
		printf '%-4s %-3s %16s %16s %10s %10s %10s\n' "$side" "$i" $r
	done
done
echo "median (min..max) of $runs runs:"
for side in old new; do
	printf '%-4s' "$side"
	for col in 1 2 3 4 5; do
		cut -d' ' -f"$col" "$out/$side" | sort -g |
			awk '{v[NR]=$1} END {printf " %s (%s..%s)", v[int((NR+1)/2)], v[1], v[NR]}'
	done
	echo
done
echo "columns: ingest events/s at batch_rows 1000, 10000; render CPU p50 ms: text, OpenMetrics, protobuf"
