#!/usr/bin/env bash
# lint.layers: scripts/check_layers.sh refuses each kind of violation (a
# tree made here with one of each), and the repository has none.
set -euo pipefail
src=${SYSOBS_SRC:?}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/collectors/x" "$t/api" "$t/storage" "$t/base" "$t/exporters" "$t/metrics"
echo '#include "../storage/store.h"' >"$t/collectors/x/relative.c"
echo '#include "storage/store_internal.h"' >"$t/api/private.c"
echo '#include <sqlite3.h>' >"$t/api/sqlite.c"
echo '#include "storage/store.h"' >"$t/collectors/x/store.c"
echo '#include "storage/store_internal.h"' >"$t/storage/own_private.c" # allowed
echo '#include <microhttpd.h>' >"$t/collectors/x/http_server.c"
echo '#include <curl/curl.h>' >"$t/collectors/x/http_client.c"
echo '#include <sqlite3.h>' >"$t/base/sqlite.c"
echo '#include "layer/storage/storage/store.h"' >"$t/collectors/x/view.c"
echo '#include "api/http.h"' >"$t/exporters/http.c"
echo '#include "api/reply.h"' >"$t/metrics/reply.c"
echo '#include "metrics/metrics.h"' >"$t/exporters/registry.c"               # allowed
echo '#include "api/proto/prometheus/metrics.pb-c.h"' >"$t/metrics/proto.c" # allowed
# SQL in a collector, in capitals and in lower case
echo 'static const char *q = "SELECT max(id) FROM x";' >"$t/collectors/x/sql.c"
printf '%s\n' 'static const char *w =' '  "core is not null and status in (1) " "where core is null";' \
	>"$t/collectors/x/sql_lower.c"
echo 'static const char *c = "core IS NOT NULL";' >"$t/collectors/x/sql_cond.c"
# allowed: English and identifiers that hold a keyword
printf '%s\n' '/* SELECT in a comment */' 'static const char *a = "CREATED";' \
	'static const char *b = "the drop where uevents are";' >"$t/collectors/x/english.c"
out=$(bash "$src/scripts/check_layers.sh" "$t") && {
	echo "FAIL: check_layers.sh accepted a tree with violations"
	exit 1
}
echo "$out"
n=$(grep -c '^check_layers: ' <<<"$out")
[ "$n" = 13 ] || {
	echo "FAIL: $n violations reported, 13 made"
	exit 1
}
bash "$src/scripts/check_layers.sh" "$src"
