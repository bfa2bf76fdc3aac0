# shellcheck shell=bash
# golden.self: the self collector on a fixed /proc directory
# (tests/data/golden/self/proc: stat of a process named "sysobsd (golden)"
# with 350+150 ticks of CPU, 7 threads, 2048 RSS pages; five fds), its
# BPF run statistics off, one poll (at start: interval 1h). Sourced by tests/golden/run.sh.
golden_config self collector.self.interval=1h \
	collector.self.bpf_stats=false "collector.self.proc=$INPUT/proc"
ROUTES=("/api/v1/self/samples?limit=1")

# Ready when the row is readable and the agent's counters have it (the
# writer's statistics reach /metrics a moment after the commit).
golden_ready() {
	wait_for 20 sh -c "curl -sf 'http://127.0.0.1:$PORT/api/v1/self/samples?limit=1' |
		jq -e '.data | length > 0' >/dev/null" &&
		wait_for 20 sh -c "curl -sf http://127.0.0.1:$PORT/metrics |
			grep -qx 'sysobs_events_written_total 1'"
}
