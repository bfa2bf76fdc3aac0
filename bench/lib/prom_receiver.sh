# shellcheck shell=bash
# Sourced by the remote_write benches: a scratch directory $t, removed at
# exit with the agent ($pid) and the receiver ($prom_pid) they started, and
# Debian's Prometheus as the remote-write receiver on a free loopback port
# ($pport), ready when prom_receiver_start returns.
#   prom_receiver_start [extra prometheus flags...]
command -v prometheus >/dev/null || { echo "SKIP: needs prometheus"; exit 0; }
t=$(mktemp -d)
pid=
prom_pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	[ -z "$prom_pid" ] || { kill "$prom_pid" 2>/dev/null; wait "$prom_pid" 2>/dev/null; }
	rm -rf "$t"
}
trap cleanup EXIT

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

prom_receiver_start() {
	for _ in $(seq 1 50); do
		pport=$((10000 + RANDOM % 22000)) # below the ephemeral range (32768-)
		port_free "$pport" && break
	done
	echo "global: {}" >"$t/prom.yml"
	prometheus --config.file="$t/prom.yml" --storage.tsdb.path="$t/prom" \
		--web.listen-address="127.0.0.1:$pport" --web.enable-remote-write-receiver \
		"$@" >"$t/prom.log" 2>&1 &
	prom_pid=$!
	for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$pport/-/ready" && break; sleep 0.2; done
}
