# shellcheck shell=bash
# Two-path MPTCP topology for the mptcp collector's tests and benchmark.
# Sourced, not run. Only addresses inside the namespaces it creates are used.
#
#   NS_A (client)                         NS_B (server)
#   mpa1 10.231.1.1/24  <-- veth -->  mpb1 10.231.1.2/24   path 1 (initial subflow)
#   mpa2 10.231.2.1/24  <-- veth -->  mpb2 10.231.2.2/24   path 2 (endpoint id 2,
#                                                         "subflow" on the client)
#
#   mptcp_topo_up        creates it (NS_A, NS_B set from $$); registers cleanup
#                        with on_exit when lib.sh is loaded
#   mptcp_topo_down      deletes both namespaces (idempotent)
#   mptcp_need           SKIPs (exit 77) without root, ip, or kernel MPTCP
#   mptcp_server ADDR [flags]   tests/tools/mptcp_peer's server in NS_B on
#                        MP_PORT (pid in SRV), waits until it listens
#   mptcp_stop_server    stops it
#   mptcp_client ADDR SUBFLOWS [flags]   its client in NS_A, held open: its
#                        stdin is fd 4 (a fifo; closing fd 4 ends it); waits
#                        for the connection, sets CLI, TOKEN, TOKEN_HEX
#                        (the peer and the helpers need PEER, T, on_exit,
#                        wait_for and fail from lib.sh)
#   mptcp_norm_monitor FILE TOKEN_HEX   events of one token from `ip mptcp
#                        monitor` output, one normalized line each
#   mptcp_norm_rows      the same lines from a JSON array of history rows
#                        (oldest first) on stdin

MP_A1=10.231.1.1 MP_B1=10.231.1.2
MP_A2=10.231.2.1 MP_B2=10.231.2.2
MP_PORT=${MP_PORT:-10080}

mptcp_need() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
	command -v ip >/dev/null || { echo "SKIP: needs iproute2"; exit 77; }
	[ -r /proc/sys/net/mptcp/enabled ] || { echo "SKIP: kernel without MPTCP"; exit 77; }
}

mptcp_topo_down() {
	[ -n "${NS_A:-}" ] && ip netns del "$NS_A" 2>/dev/null
	[ -n "${NS_B:-}" ] && ip netns del "$NS_B" 2>/dev/null
	return 0
}

mptcp_topo_up() {
	NS_A=sysobs-mp-$$-a
	NS_B=sysobs-mp-$$-b
	if declare -F on_exit >/dev/null; then
		on_exit mptcp_topo_down
	fi
	ip netns add "$NS_A" || return 1
	ip netns add "$NS_B" || return 1
	ip -n "$NS_A" link set lo up
	ip -n "$NS_B" link set lo up
	ip -n "$NS_A" link add mpa1 type veth peer name mpb1 netns "$NS_B" || return 1
	ip -n "$NS_A" link add mpa2 type veth peer name mpb2 netns "$NS_B" || return 1
	ip -n "$NS_A" addr add $MP_A1/24 dev mpa1
	ip -n "$NS_A" addr add $MP_A2/24 dev mpa2
	ip -n "$NS_B" addr add $MP_B1/24 dev mpb1
	ip -n "$NS_B" addr add $MP_B2/24 dev mpb2
	for l in mpa1 mpa2; do ip -n "$NS_A" link set $l up; done
	for l in mpb1 mpb2; do ip -n "$NS_B" link set $l up; done
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" sysctl -qw net.mptcp.enabled=1
		ip -n "$ns" mptcp limits set subflow 2 add_addr_accepted 2
	done
	# The client opens a second subflow from its path-2 address.
	ip -n "$NS_A" mptcp endpoint add $MP_A2 dev mpa2 id 2 subflow || return 1
	# Wait for carrier on all four ends (IPv4 has no DAD to wait for).
	local i l
	for i in $(seq 1 50); do
		[ "$i" = 1 ] || sleep 0.1
		for l in mpa1 mpa2; do
			ip -n "$NS_A" link show $l | grep -q LOWER_UP || continue 2
		done
		for l in mpb1 mpb2; do
			ip -n "$NS_B" link show $l | grep -q LOWER_UP || continue 2
		done
		return 0
	done
	echo "mptcp_topo_up: paths did not come up" >&2
	return 1
}

mptcp_server() {
	local a=$1
	shift
	rm -f "$T/server.txt" # not the last server's "listening"
	ip netns exec "$NS_B" timeout "${MP_TIMEOUT:-120}" "$PEER" server "$a" "$MP_PORT" "$@" \
		>"$T/server.txt" 2>&1 &
	SRV=$!
	on_exit "kill $SRV 2>/dev/null"
	wait_for 5 grep -qs listening "$T/server.txt" ||
		fail "MPTCP server did not listen: $(cat "$T/server.txt")"
}

mptcp_stop_server() {
	kill "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=
}

mptcp_client() {
	local a=$1 n=$2
	shift 2
	rm -f "$T/ctl" "$T/client.txt" # not the last client's token
	mkfifo "$T/ctl"
	ip netns exec "$NS_A" timeout "${MP_TIMEOUT:-120}" "$PEER" client "$a" "$MP_PORT" -s "$n" "$@" \
		<"$T/ctl" >"$T/client.txt" 2>&1 &
	CLI=$!
	on_exit "kill $CLI 2>/dev/null"
	exec 4>"$T/ctl"
	wait_for 10 grep -qs '^token=' "$T/client.txt" ||
		fail "MPTCP client did not connect: $(cat "$T/client.txt")"
	TOKEN=$(sed -n 's/^token=\([0-9]*\).*/\1/p' "$T/client.txt")
	TOKEN_HEX=$(printf '%08x' "$TOKEN")
}

# `ip mptcp monitor` lines look like
#   [SF_ESTABLISHED] token=hex remid=0 locid=2 saddr4=.. daddr4=.. sport=.. dport=.. backup=0 ifindex=3
# Normalized: "SUB_ESTABLISHED remid=0 locid=2 saddr=.. daddr=.. sport=.. ..."
# (event names as sysobs stores them, no token, no address family suffix).
mptcp_norm_monitor() {
	grep "token=$2" "$1" | sed -E 's/^\[ *([A-Z_]+)\] /\1 /' |
		sed -E 's/^SF_PRIO /SUB_PRIORITY /; s/^SF_/SUB_/; s/saddr[46]=/saddr=/; s/daddr[46]=/daddr=/' |
		awk '{ out = $1; for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "token" && kv[1] != "flags") out = out " " $i }; print out }'
}

# iproute2 prints error= and ifindex= only when non-zero.
mptcp_norm_rows() {
	jq -r '.[] | [.type,
		(if .rem_id != null then "remid=\(.rem_id)" else empty end),
		(if .loc_id != null then "locid=\(.loc_id)" else empty end),
		(if .saddr != null then "saddr=\(.saddr)" else empty end),
		(if .daddr != null then "daddr=\(.daddr)" else empty end),
		(if .sport != null then "sport=\(.sport)" else empty end),
		(if .dport != null then "dport=\(.dport)" else empty end),
		(if .backup != null then "backup=\(.backup)" else empty end),
		(if .error != null and .error != 0 then "error=\(.error)" else empty end),
		(if .if_idx != null and .if_idx != 0 then "ifindex=\(.if_idx)" else empty end)
		] | join(" ")'
}
