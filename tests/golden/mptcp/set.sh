# shellcheck shell=bash
# golden.mptcp: the mptcp collector replaying tests/data/golden/mptcp/events.rec
# ([collector.mptcp] replay = FILE: docs/mptcp.md), real mptcp_pm genetlink
# datagrams recorded on Linux 6.18 by record.sh beside it, in two namespaces
# (client and server ends): a listener created and closed, a connection with
# a joined subflow, an address announced and removed (its subflow closed)
# and a close; a second connection aborted with MP_FASTCLOSE (no event on
# the server side: it stays live there). Sourced by tests/golden/run.sh.
#
# Covered: the datagrams through the collector's real reader path
# (mptcp_buffer_handle: decode, live state, sink rows and series), storage,
# /metrics and the routes below. Not covered (live-only, off in a replay):
# the socket-dump resync and reconciliation, the MPTcpExt MIB series, subflow
# TCP_INFO sampling (/api/v1/mptcp/subflows stays empty), netns following,
# pod and netns names.
golden_config mptcp "collector.mptcp.replay=$INPUT/events.rec"
ROUTES=(/api/v1/mptcp/connections "/api/v1/mptcp/events?limit=100" /api/v1/mptcp/subflows)

# The events iproute2 printed when they were recorded: every one a row.
GOLDEN_MPTCP_EVENTS=$(cat "$INPUT"/monitor-*.txt | grep -c '^\[')

# The independent reference: each connection's rows (oldest first) say what
# `ip mptcp monitor` printed of its events when they were recorded (the
# listener events are UNKNOWN to this iproute2, and carry no token; it prints
# backup as 0/1).
source "$SYSOBS_SRC/tests/integration/mptcp_topo.sh"
golden_mptcp_vs_monitor() {
	local f tok
	for f in "$INPUT"/monitor-*.txt; do
		for tok in $(sed -n 's/.* token=\([0-9a-f]*\).*/\1/p' "$f" | sort -u); do
			diff -u <(mptcp_norm_monitor "$f" "$tok") \
				<(curl -sf "http://127.0.0.1:$PORT/api/v1/mptcp/events?token=$tok&limit=100" |
					jq '.data | reverse | map(if has("backup") then
						.backup |= (if . then 1 else 0 end) else . end)' |
					mptcp_norm_rows) >&2 ||
				fail "token $tok: the replayed rows are not what ip mptcp monitor printed ($f)"
		done
	done
}

# Ready when every recorded event is a stored row and the agent's counters
# have them (the writer's statistics reach /metrics a moment after the
# commit); then the rows against the reference.
golden_ready() {
	wait_collector mptcp || return 1
	wait_for 20 sh -c "curl -sf http://127.0.0.1:$PORT/metrics |
		grep -qx 'sysobs_events_written_total $GOLDEN_MPTCP_EVENTS'" || return 1
	golden_mptcp_vs_monitor
}
# A live connection's and subflow's times are the replay's (its start plus
# the recorded spacing).
GOLDEN_JSON_VARY=(created established_at since)
