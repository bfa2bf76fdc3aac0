#!/usr/bin/env bash
# lint.layers_in_build: the layer rules run in the build. A copy of the
# source tree is configured (no tests, no BPF: the rules do not depend on
# them); its sysobs_layer_check target passes, then refuses each hole
# planted in the copy, one at a time: SQL in a collector, <microhttpd.h> and
# <curl/curl.h> in a collector, <sqlite3.h> in base/, an include through the
# build's layer views, exporters including the HTTP API, the registry
# including it. Last, a plain `cmake --build` of the copy with a hole fails
# before compiling anything of base/.
set -euo pipefail
src=${SYSOBS_SRC:?}
bin=${SYSOBS_BIN:-}
t=$(mktemp -d /tmp/sysobs-lint-build.XXXXXX)
trap 'rm -rf "$t"' EXIT
excl=(--exclude=./.git --exclude=./build)
case "$bin" in "$src"/*) excl+=("--exclude=./${bin#"$src"/}") ;; esac
mkdir "$t/src"
tar -C "$src" "${excl[@]}" -cf - . | tar -C "$t/src" -xf -
cmake -S "$t/src" -B "$t/b" -DSYSOBS_TESTS=OFF -DSYSOBS_BPF=OFF >"$t/configure.log" 2>&1 || {
	cat "$t/configure.log"
	echo "FAIL: the copy does not configure"
	exit 1
}
cmake --build "$t/b" --target sysobs_layer_check >"$t/out" 2>&1 || {
	cat "$t/out"
	echo "FAIL: the layer check refuses the tree as it is"
	exit 1
}

# plant FILE LINE EXPECT: the check refuses FILE (holding LINE) saying EXPECT.
plant() {
	mkdir -p "$(dirname "$t/src/$1")"
	printf '%s\n' "$2" >"$t/src/$1"
	if cmake --build "$t/b" --target sysobs_layer_check >"$t/out" 2>&1; then
		echo "FAIL: the build accepted $1: $2"
		exit 1
	fi
	grep -F "check_layers: $1: $3" "$t/out" || {
		cat "$t/out"
		echo "FAIL: no \"$3\" for $1"
		exit 1
	}
	rm -f "$t/src/$1"
}
plant collectors/ifs/planted.c 'static const char *q = "SELECT id FROM ifs_scans";' 'SQL in a collector'
plant collectors/mptcp/planted.c 'static const char *q = "update mptcp_events set x = 1";' \
	'SQL in a collector'
plant collectors/planted_http.c '#include <microhttpd.h>' '<microhttpd.h> in a collector'
plant collectors/planted_curl.c '#include <curl/curl.h>' '<curl/curl.h> in a collector'
plant base/planted.c '#include <sqlite3.h>' '<sqlite3.h> outside storage/'
plant collectors/planted_view.c '#include "layer/storage/storage/store.h"' \
	"include through the build's layer views"
plant exporters/planted.c '#include "api/http.h"' 'exporters may not include the HTTP API'
plant metrics/planted.c '#include "api/reply.h"' 'the metrics registry may not include'

# The whole build, with a hole: fails at the check, base/ never compiled.
printf '%s\n' '#include <sqlite3.h>' >"$t/src/base/planted.c"
if cmake --build "$t/b" >"$t/out" 2>&1; then
	echo "FAIL: cmake --build succeeded with a layer violation"
	exit 1
fi
grep -F "check_layers: base/planted.c" "$t/out"
if find "$t/b/base" -name '*.o' | grep -q .; then
	echo "FAIL: base/ compiled before the layer check refused the tree"
	exit 1
fi

# The collectors' include path (the real build's compile command of a
# collector file): no way to another library's view through the build
# directory ("layer/storage/storage/store.h" was reachable while the whole
# binary dir was on it), while the generated skeletons still are.
if [ -n "$bin" ] && [ -f "$bin/compile_commands.json" ]; then
	flags=$(python3 - "$bin/compile_commands.json" "$src/collectors/registry.c" <<'PY'
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    if e["file"] == sys.argv[2]:
        args = shlex.split(e["command"])[1:]
        out, skip = [], False
        for a in args:
            if skip:
                skip = False
            elif a in ("-o", "-c"):
                skip = True
            elif a.startswith(("-I", "-D", "-isystem", "-std")) or a == "-isystem":
                out.append(a)
        print(" ".join(shlex.quote(a) for a in out))
PY
	)
	[ -n "$flags" ] || { echo "FAIL: no compile command for collectors/registry.c"; exit 1; }
	probe() { printf '#include "%s"\n' "$@" | eval "cc $flags -E -o /dev/null -x c -" 2>&1; }
	if probe layer/storage/storage/store.h >"$t/out"; then
		echo "FAIL: a collector can include layer/storage/storage/store.h"
		exit 1
	fi
	grep -q 'layer/storage/storage/store.h: No such file' "$t/out" || { cat "$t/out"; exit 1; }
	echo "collectors: layer/storage/storage/store.h not on the include path"
	if [ -f "$bin/bpf/drops.skel.h" ]; then
		probe bpf/drops.skel.h >"$t/out" || { cat "$t/out"; echo "FAIL: no skeleton"; exit 1; }
		echo "collectors: bpf/drops.skel.h on the include path"
	fi
fi
echo "OK: the build runs the layer check and fails on each hole"
