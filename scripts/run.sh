#!/usr/bin/env bash
# Installs what is missing, builds, and runs sysobsd in the foreground with its
# embedded defaults: database ./var/sysobs.db, HTTP on http://127.0.0.1:9559/.
# Extra arguments go to sysobsd (e.g. --config deploy/sysobsd.example.ini).
# BPF and netlink collectors need root; without it they show as unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
mkdir -p var
# As root the agent drops to an unprivileged user after start-up (sysobs,
# else nobody), who must reach ./var; a checkout under a private home
# cannot give that, so the try-out keeps root there (say so).
user=()
if [ "$(id -u)" = 0 ]; then
	u=$(getent passwd sysobs >/dev/null && echo sysobs || echo nobody)
	if runuser -u "$u" -- test -x "$PWD/var" 2>/dev/null; then
		chown "$u" var var/sysobs.db* 2>/dev/null || true
	else
		echo "run.sh: $u cannot reach $PWD/var: running with --user root" >&2
		user=(--user root)
	fi
fi
exec "${SYSOBS_BUILD_DIR:-build}/sysobsd" "${user[@]}" "$@"
