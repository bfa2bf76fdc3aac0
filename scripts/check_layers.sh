#!/usr/bin/env bash
# The include rules the layered build cannot refuse on its own (the CMake
# views of sysobs_layer() decide what each library may include by path,
# but a file-relative include or a header beside an allowed one slips
# through):
#   1. no relative include ("../storage/store.h" builds from anywhere);
#   2. a module's private headers (*_internal.h, *_priv.h) are included only
#      from its own folder (tests/ and bench/ may reach internals on purpose);
#   3. no <sqlite3.h> in api/, base/, collectors/ or exporters/: they read the
#      store through its API (the agent, at the top, may name the library's
#      version); no <microhttpd.h> or <curl/curl.h> in collectors/: a
#      collector's only way out is its sink (no HTTP server, no HTTP client);
#      no include through the build's layer views ("layer/storage/..."), which
#      would reach another module's folder past the view a library is given;
#   4. collectors/ see of storage/ only the table descriptors (storage/table.h);
#   5. the metrics registry (metrics/) sees of api/ only the generated
#      protobuf code: no HTTP, no history, no JSON; exporters/ include nothing
#      of api/ (the registry they read is metrics/, beside storage/);
#   6. no SQL in collectors/: a string literal with an SQL keyword (SELECT,
#      INSERT, UPDATE, DELETE, CREATE, WHERE as a word in capitals, a bare
#      condition such as "core IS NOT NULL", "status IN (", "AND x =", or a
#      statement's shape in any case: "select ... from", "insert into",
#      "delete from", "create table|index", "update X set", "where X =")
#      is refused; a collector states what it reads as typed filters and
#      indexes (storage/table.h) and the store writes the SQL.
# Usage: check_layers.sh [ROOT] (default: the repository). Exit 1 with one
# line per violation. Every build runs it (the target sysobs_layer_check,
# which each library of the project waits for), so a violation fails
# `cmake --build`; lint.layers and lint.layers_in_build test it.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
dirs=()
for d in agent api base collectors exporters metrics storage bpf; do [ -d "$d" ] && dirs+=("$d"); done
fail=0
# 6: SQL in the collectors' string literals (one literal at a time, so a
# keyword in a comment or an identifier does not count).
kw='(^|[^A-Za-z0-9_])(SELECT|INSERT|UPDATE|DELETE|CREATE|WHERE)([^A-Za-z0-9_]|$)'
# a condition without its WHERE: "core IS NOT NULL", "status IN (", "AND x ="
kw+='|[a-z_]+ IS (NOT )?NULL|[a-z_]+ IN \(| AND [a-z_]+ (=|<|>|IN|IS)'
shape='select[[:space:]].*[[:space:]]from[[:space:]]|insert[[:space:]]+into|delete[[:space:]]+from'
shape+='|create[[:space:]]+(unique[[:space:]]+)?(table|index|view|trigger)'
shape+='|update[[:space:]]+[a-z_]+[[:space:]]+set[[:space:]]'
shape+='|where[[:space:]]+[a-z_]+[[:space:]]*(=|<|>|in[[:space:]]*[(]|is[[:space:]]+(not[[:space:]]+)?null)'
literals() {
	[ -d collectors ] || return 0
	grep -rnoE --include='*.c' --include='*.h' '"([^"\\]|\\.)*"' collectors || true
}
while IFS= read -r hit; do
	[ -n "$hit" ] || continue
	echo "check_layers: ${hit%%:*}: SQL in a collector (${hit#*:*:}): typed filters and indexes (storage/table.h) instead"
	fail=1
done < <({
	literals | grep -E -e "$kw" || true
	literals | grep -iE -e "$shape" || true
} | sort -u)
grep -rnE '^[[:space:]]*#[[:space:]]*include' --include='*.c' --include='*.h' "${dirs[@]}" |
	awk -F: '
	function dir(p) { sub(/\/[^\/]*$/, "", p); return p }
	function bad(f, why) { print "check_layers: " f ": " why; n++ }
	{
		file = $1
		line = $0
		sub(/^[^:]*:[^:]*:/, "", line)
		if (!match(line, /["<][^">]*[">]/))
			next
		inc = substr(line, RSTART + 1, RLENGTH - 2)
		if (inc ~ /^\.\.?\//)
			bad(file, "relative include \"" inc "\"")
		if (inc ~ /_(internal|priv)\.h$/ && inc ~ /\// && dir(inc) != dir(file))
			bad(file, "private header " inc " of another module")
		if (inc == "sqlite3.h" && file ~ /^(api|base|collectors|exporters)\//)
			bad(file, "<sqlite3.h> outside storage/ and agent/")
		if ((inc == "microhttpd.h" || inc == "curl/curl.h") && file ~ /^collectors\//)
			bad(file, "<" inc "> in a collector: its only way out is its sink")
		if (inc ~ /^layer\//)
			bad(file, "include through the build\x27s layer views (" inc ")")
		if (file ~ /^collectors\// && inc ~ /^storage\// && inc != "storage/table.h")
			bad(file, "collectors may include storage/table.h only, not " inc)
		if (file ~ /^exporters\// && inc ~ /^api\//)
			bad(file, "exporters may not include the HTTP API (" inc "); the registry is metrics/")
		if (file ~ /^metrics\// && inc ~ /^(api|agent|storage|collectors|exporters)\// &&
		    inc !~ /^api\/proto\//)
			bad(file, "the metrics registry may not include " inc)
	}
	END {
		if (n) exit 1
		print "check_layers: " NR " includes, no violation"
	}' || fail=1
exit $fail
