#!/usr/bin/env bash
# lint.layers: scripts/check_layers.sh refuses each kind of violation (a
# tree made here with one of each), and the repository has none.
set -euo pipefail
src=${SYSOBS_SRC:?}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/collectors/x" "$t/api" "$t/storage"
echo '#include "../storage/store.h"' >"$t/collectors/x/relative.c"
echo '#include "storage/store_internal.h"' >"$t/api/private.c"
echo '#include <sqlite3.h>' >"$t/api/sqlite.c"
echo '#include "storage/store.h"' >"$t/collectors/x/store.c"
echo '#include "storage/store_internal.h"' >"$t/storage/own_private.c" # allowed
out=$(bash "$src/scripts/check_layers.sh" "$t") && {
	echo "FAIL: check_layers.sh accepted a tree with violations"
	exit 1
}
echo "$out"
n=$(grep -c '^check_layers: ' <<<"$out")
[ "$n" = 4 ] || {
	echo "FAIL: $n violations reported, 4 made"
	exit 1
}
bash "$src/scripts/check_layers.sh" "$src"
