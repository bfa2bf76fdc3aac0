#!/usr/bin/env bash
# Installs the Node.js packages of the test tools, exactly as their
# package-lock.json pins them (npm ci, install scripts off), when a tool's
# node_modules is missing or older than its lock (a stamp of the lock's and
# package.json's checksum in node_modules). Today: tests/tools/otlp (the
# official OpenTelemetry JavaScript decoder, integration.otlp_decode).
# Without node or npm it says so and succeeds: the tests that need them skip.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=(tests/tools/otlp)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "deps_node: node or npm missing: tests that need them skip" >&2
	exit 0
fi
for d in "${TOOLS[@]}"; do
	stamp="$d/node_modules/.sysobs-lock.sha256"
	want=$(cat "$d/package.json" "$d/package-lock.json" | sha256sum | cut -d' ' -f1)
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		continue
	fi
	echo "deps_node: npm ci in $d" >&2
	(cd "$d" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	echo "$want" >"$stamp"
done
