# shellcheck shell=bash
# Helpers for integration tests: start the real sysobsd on an ephemeral
# loopback port with a temporary database, talk to it with curl, clean up.
#
#   source "$(dirname "$0")/lib.sh"
#   need_root                       # or: need_cmd promtool
#   start_agent --config "$T/x.ini" # extra sysobsd flags; sets PORT, AGENT_PID
#   api GET /api/v1/collectors      # prints body, sets HTTP_CODE (not in $(...))
#   req GET /api/v1/collectors      # body in $BODY, sets HTTP_CODE
#   metric 'sysobs_up'              # value of one series from /metrics
#   metric_sum NAME 'reason="x"'    # sum of NAME's series with that label
#   stop_agent                      # SIGTERM, waits, asserts exit 0
#   pass "what was proven"
#
# API_NETNS=NAME (a namespace of `ip netns`) before start_agent runs the agent
# inside that network namespace (nsenter --net, same mounts), and api, req
# and metric talk to it there: a test's HTTP traffic stays in its namespace.
#
# /api/v1 answers are the proto3 JSON mapping of api/proto/sysobs.proto:
# 64-bit integers (id, scan_id, rss_bytes, ...) are JSON strings, so compare
# them with `tonumber` in jq; a NULL (optional) field is absent, not null;
# next_cursor is "" on the last page.
#
# Exit codes: 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE).
set -u
set -o pipefail

: "${SYSOBSD:?SYSOBSD must point at the sysobsd binary (ctest sets it)}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-it.XXXXXX")
AGENT_PID=
PORT=
HTTP_CODE=
API_NETNS=
_cleanup_fns=()

on_exit() { _cleanup_fns+=("$1"); }
_cleanup() {
	local f
	for ((i = ${#_cleanup_fns[@]} - 1; i >= 0; i--)); do
		f=${_cleanup_fns[i]}
		eval "$f" || true
	done
	if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then
		kill -9 "$AGENT_PID" 2>/dev/null
	fi
	if [ "${KEEP_TMP:-0}" != 1 ]; then rm -rf "$T"; fi
}
trap _cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*" >&2
	if [ -f "$T/agent.log" ]; then
		echo "--- agent log (last 40 lines) ---" >&2
		tail -n 40 "$T/agent.log" >&2
	fi
	exit 1
}
pass() { echo "PASS: $*"; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "needs $1"; }

# assert_eq WHAT EXPECTED ACTUAL
assert_eq() { [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"; }

# refused WHAT WANT ARGS...: `sysobsd ARGS` exits 2 within 10 s before it
# serves (no "listening on"), and its output has WANT (a fixed string; ""
# for none). The output is left in $T/refused.out, the time it took in
# REFUSED_MS. REFUSED_BIN=PROGRAM checks another program (the CLI).
refused() {
	local what=$1 want=$2 rc=0 t0
	shift 2
	t0=$(date +%s%N)
	timeout 10 "${REFUSED_BIN:-$SYSOBSD}" "$@" >"$T/refused.out" 2>&1 || rc=$?
	REFUSED_MS=$((($(date +%s%N) - t0) / 1000000))
	assert_eq "exit status, $what" 2 "$rc"
	[ -z "$want" ] || grep -qF -- "$want" "$T/refused.out" ||
		fail "$what: no '$want' in: $(cat "$T/refused.out")"
	! grep -q 'listening on' "$T/refused.out" ||
		fail "$what: the agent started: $(cat "$T/refused.out")"
}
# assert_ge WHAT MIN ACTUAL (integers)
assert_ge() { [ "$3" -ge "$2" ] 2>/dev/null || fail "$1: expected >= $2, got '$3'"; }

# Minimal config: temp database, every collector at its defaults.
# Tests keep root ([agent] user = root): each checks one thing, and
# integration.privsep checks the agent that drops its privileges.
# write_base_config [SECTION.KEY=VALUE...]: more keys, each under its
# section (a key and a section may each be given once in a config file):
#   write_base_config http.admin=true collector.drops.enabled=false
# A key given here replaces the base's (agent.user, http.listen,
# storage.path, storage.batch_ms); the value "-" leaves the key out, for
# the agent's own default (agent.user=-: the unprivileged user).
write_base_config() {
	local -A more=() given=()
	local order=() kv key sec
	for kv in "$@"; do
		key=${kv%%=*}
		sec=${key%.*}
		given[$key]=1
		[ -n "${more[$sec]+x}" ] || order+=("$sec")
		[ "${kv#*=}" = - ] || more[$sec]+="${key##*.}=${kv#*=}"$'\n'
	done
	for kv in storage.batch_ms=50 "storage.path=$T/sysobs.db" http.listen=127.0.0.1:0 agent.user=root; do
		key=${kv%%=*}
		sec=${key%.*}
		[ -n "${given[$key]+x}" ] || more[$sec]="${key##*.}=${kv#*=}"$'\n'"${more[$sec]:-}"
	done
	{
		for sec in agent http storage; do
			printf '[%s]\n%s' "$sec" "${more[$sec]:-}"
		done
		for sec in "${order[@]}"; do
			case $sec in agent | http | storage) ;; *) printf '[%s]\n%s' "$sec" "${more[$sec]}" ;; esac
		done
	} | sed 's/^\([^[][^=]*\)=/\1 = /' >"$T/sysobsd.ini"
}

# start_agent [flags...]: runs sysobsd in the background, waits for its port.
start_agent() {
	[ -f "$T/sysobsd.ini" ] || write_base_config
	rm -f "$T/port"
	# nsenter execs the agent: AGENT_PID is the agent's own pid either way
	local pre=()
	[ -z "$API_NETNS" ] || pre=(nsenter "--net=/run/netns/$API_NETNS")
	"${pre[@]}" "$SYSOBSD" --config "$T/sysobsd.ini" --port-file "$T/port" "$@" \
		>>"$T/agent.log" 2>&1 &
	AGENT_PID=$!
	for _ in $(seq 1 200); do
		if [ -s "$T/port" ]; then
			PORT=$(cat "$T/port")
			return 0
		fi
		kill -0 "$AGENT_PID" 2>/dev/null || fail "sysobsd exited during start"
		sleep 0.05
	done
	fail "sysobsd did not start listening within 10 s"
}

stop_agent() {
	local rc
	[ -n "$AGENT_PID" ] || return 0
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
	rc=$?
	AGENT_PID=
	[ "$rc" = 0 ] || fail "sysobsd exited with $rc after SIGTERM"
}

# start_uts_agent NAME HOSTNAME CONFIG: sysobsd with CONFIG in a UTS
# namespace of its own whose host name is HOSTNAME (what gethostname()
# gives it: the default instance), its log in $T/NAME.log; waits for its
# port, sets UTS_PORT (and UTS_PORT_<NAME>), stops it on exit.
start_uts_agent() {
	local name=$1 host=$2 cfg=$3 pid
	rm -f "$T/$name.port"
	unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$host" \
		"$SYSOBSD" --config "$cfg" --port-file "$T/$name.port" >>"$T/$name.log" 2>&1 &
	pid=$!
	on_exit "kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	wait_for 20 test -s "$T/$name.port" || fail "agent $name did not start: $(tail -5 "$T/$name.log")"
	UTS_PORT=$(cat "$T/$name.port")
	printf -v "UTS_PORT_$name" '%s' "$UTS_PORT"
}

# in_api_netns CMD...: runs CMD in $API_NETNS if set, else here.
in_api_netns() {
	if [ -n "$API_NETNS" ]; then
		nsenter "--net=/run/netns/$API_NETNS" "$@"
	else
		"$@"
	fi
}

# api METHOD PATH [curl args...]: body on stdout, status in HTTP_CODE.
api() {
	local method=$1 path=$2
	shift 2
	local out
	out=$(in_api_netns curl -sS -g -X "$method" -w '\n%{http_code}' --max-time 10 "$@" \
		"http://127.0.0.1:$PORT$path") || fail "curl $method $path failed"
	HTTP_CODE=${out##*$'\n'}
	printf '%s' "${out%$'\n'*}"
}

# req METHOD PATH [curl args...]: like api, but leaves the body in $BODY and
# runs in this shell, so HTTP_CODE stays set (body=$(api ...) would lose it).
BODY=
req() {
	api "$@" >"$T/.body"
	BODY=$(cat "$T/.body")
}

# db_count TABLE [WHERE]: rows of the test database ($T/sysobs.db), read-only
# (a reader, never a writer the agent would have to wait for).
db_count() {
	sqlite3 "file:$T/sysobs.db?mode=ro" "SELECT count(*) FROM $1${2:+ WHERE $2}"
}

# metric 'name{labels}' -> the value (empty if absent). Exact series match.
metric() {
	in_api_netns curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" |
		awk -v s="$1" '$1 == s { print $2; found = 1 } END { if (!found) print "" }'
}

# metric_sum NAME 'label="value"' -> the sum over every series of NAME whose
# labels include that pair (0 if none): for counters split by more labels
# than a test cares about.
metric_sum() {
	in_api_netns curl -sS --max-time 10 "http://127.0.0.1:$PORT/metrics" |
		awk -v n="$1" -v l="$2" 'index($0, n "{") == 1 && index($1, l) { s += $NF }
			END { print s + 0 }'
}

# wait_for TIMEOUT_S CMD...: retries CMD until it succeeds.
wait_for() {
	local t=$1
	shift
	local end=$((SECONDS + t))
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# netns_new NAME: a network namespace of the test's own, lo up, deleted at
# exit (quietly, if the test deleted it already); its inode in NSINUM.
# Non-zero when it cannot be created.
netns_new() {
	ip netns add "$1" || return 1
	on_exit "ip netns del $1 2>/dev/null"
	ip -n "$1" link set lo up
	NSINUM=$(stat -L -c %i "/run/netns/$1")
}

# collector_state NAME -> its state (RUNNING, FAILED, UNAVAILABLE, ...);
# collector_reason NAME -> why it is in that state;
# wait_collector NAME: until it is RUNNING (10 s), or fail with its reason.
collector_field() {
	api GET /api/v1/collectors | jq -r --arg n "$1" --arg f "$2" '.data[] | select(.name == $n) | .[$f]'
}
collector_state() { collector_field "$1" state; }
collector_reason() { collector_field "$1" reason; }
wait_collector() {
	_running() { [ "$(collector_state "$1")" = RUNNING ]; }
	wait_for 10 _running "$1" || fail "$1 collector not running: $(collector_reason "$1")"
}

# wrk_parse FILE: reads wrk's report into WRK_REQS (requests answered),
# WRK_NON2XX, WRK_ERRS (socket errors: connect + read + write + timeout),
# WRK_RPS (requests/s) and WRK_OK_RPS (2xx answers per second of the run);
# WRK_SUMMARY says them in one line. wrk prints no "Socket errors" or
# "Non-2xx" line when there were none.
wrk_parse() {
	local v
	v=$(awk '/requests in/ { n = $1; d = $4; sub(/s,?$/, "", d); if (d ~ /m$/) { sub(/m/, "", d); d *= 60 } }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		/Socket errors:/ { gsub(",", ""); err = $4 + $6 + $8 + $10 }
		/Requests\/sec/ { rps = $2 }
		END { d += 0; printf "%d %d %d %s %.0f", n, bad, err, rps + 0, (d > 0 ? (n - bad) / d : 0) }' "$1")
	read -r WRK_REQS WRK_NON2XX WRK_ERRS WRK_RPS WRK_OK_RPS <<<"$v"
	WRK_SUMMARY="$WRK_REQS requests, $WRK_OK_RPS ok req/s, $WRK_NON2XX non-2xx, $WRK_ERRS socket errors"
	[ -n "$WRK_REQS" ] || fail "wrk printed no report: $(cat "$1")"
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: prints a loopback TCP port nobody listens on, below the
# kernel's ephemeral range: a port inside it can be taken as the source port
# of any outgoing connection (the agent's, curl's, Prometheus's own) between
# this check and the listener's bind(), which then fails with EADDRINUSE.
free_port() {
	local low p
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	[ "$low" -gt 11024 ] || low=32768
	for _ in $(seq 1 100); do
		p=$((10000 + RANDOM % (low - 11000)))
		port_free "$p" && { echo "$p"; return 0; }
	done
	return 1
}

# start_prometheus NAME CONFIG [flags...]: runs Debian's prometheus on a free
# loopback port with its TSDB in $T/prom-NAME; sets PROM_PORT (and
# PROM_PORT_<NAME>), stops it on exit, waits until it is ready. A port some
# other program bound in the meantime is retried with another one.
start_prometheus() {
	local name=$1 cfg=$2 port pid
	shift 2
	for _ in 1 2 3; do
		port=$(free_port) || fail "no free loopback port for prometheus $name"
		prometheus --config.file="$cfg" --storage.tsdb.path="$T/prom-$name" \
			--web.listen-address="127.0.0.1:$port" "$@" >"$T/prometheus-$name.log" 2>&1 &
		pid=$!
		on_exit "kill $pid; wait $pid 2>/dev/null"
		# done waiting when it answers or when it exited
		_prom_settled() { curl -sf --max-time 2 "http://127.0.0.1:$port/-/ready" -o /dev/null ||
			! kill -0 "$pid" 2>/dev/null; }
		wait_for 30 _prom_settled
		kill -0 "$pid" 2>/dev/null && break
		grep -q "address already in use" "$T/prometheus-$name.log" ||
			fail "prometheus $name exited: $(tail -5 "$T/prometheus-$name.log")"
		echo "prometheus $name: port $port was taken meanwhile, trying another"
	done
	PROM_PORT=$port
	printf -v "PROM_PORT_$name" '%s' "$port"
	curl -sf --max-time 2 "http://127.0.0.1:$port/-/ready" -o /dev/null ||
		fail "prometheus $name not ready: $(tail -5 "$T/prometheus-$name.log")"
}

# start_victoria: Debian's VictoriaMetrics on a free loopback port with its
# data in $T/vm; sets VM_PORT and VM_PID, stops it on exit, waits until it
# answers. A second call after stop_victoria starts it again on the same
# port and data.
start_victoria() {
	command -v victoria-metrics >/dev/null ||
		fail "victoria-metrics not installed (./scripts/deps.sh installs it)"
	if [ -z "${VM_PORT:-}" ]; then
		VM_PORT=$(free_port) || fail "no free port for VictoriaMetrics"
	fi
	victoria-metrics -httpListenAddr "127.0.0.1:$VM_PORT" -storageDataPath "$T/vm" \
		>>"$T/vm.log" 2>&1 &
	VM_PID=$!
	on_exit "kill $VM_PID 2>/dev/null; wait $VM_PID 2>/dev/null"
	_vm_up() { curl -sf --max-time 2 "http://127.0.0.1:$VM_PORT/health" -o /dev/null; }
	wait_for 30 _vm_up || fail "VictoriaMetrics not up: $(tail -5 "$T/vm.log")"
}

stop_victoria() {
	kill "$VM_PID" 2>/dev/null
	wait "$VM_PID" 2>/dev/null
}

# ms_to_s MS: milliseconds as seconds with three decimals (12045 -> 12.045;
# "$((MS / 1000)).$((MS % 1000))" made that 12.45, moving a query window's
# bound by up to 0.9 s, and a receiver lost or gained a snapshot at its edge).
ms_to_s() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# rw_counts_vm PORT SELECTOR T0_MS T1_MS [LABEL]: raw samples per series in
# [T0, T1] in VictoriaMetrics, as one JSON object {"labels (sorted, as
# JSON)": count}; LABEL is left out of the keys (a destination's own).
rw_counts_vm() {
	curl -sS -g --max-time 30 "http://127.0.0.1:$1/api/v1/export" --data-urlencode "match[]=$2" \
		--data-urlencode "start=$(ms_to_s "$3")" \
		--data-urlencode "end=$(ms_to_s "$4")" |
		jq -c --arg drop "${5:-}" '{k: (.metric | del(.[$drop]) | to_entries | sort_by(.key) | from_entries | tostring),
			n: ([.timestamps[] | select(. >= '"$3"' and . <= '"$4"')] | length)} | select(.n > 0)' |
		jq -sc 'map({(.k): .n}) | add // {}'
}

# rw_counts_prom PORT SELECTOR T0_MS T1_MS: the same from Prometheus (a range
# vector at T1).
rw_counts_prom() {
	local span=$((($4 - $3) / 1000 + 1))
	curl -sS -g --max-time 30 "http://127.0.0.1:$1/api/v1/query" \
		--data-urlencode "query=$2[${span}s]" \
		--data-urlencode "time=$(ms_to_s "$4")" |
		jq -c '[.data.result[] | {k: (.metric | to_entries | sort_by(.key) | from_entries | tostring),
			n: ([.values[] | select(.[0] * 1000 >= '"$3"' and .[0] * 1000 <= '"$4"')] | length)} | select(.n > 0)]
			| map({(.k): .n}) | add // {}'
}

# rw_counts_diff A B: up to 5 series whose counts differ between two
# rw_counts_* files, as JSON ("[]" when they agree).
rw_counts_diff() {
	jq -nc --slurpfile p "$1" --slurpfile v "$2" \
		'[($p[0] + $v[0]) | keys[] | select($p[0][.] != $v[0][.]) | {k: ., a: $p[0][.], b: $v[0][.]}] | .[:5]'
}

# bt_interrupt PID: stops bpftrace with SIGINT, so that it prints its maps,
# and reaps it. bpftrace 0.17 now and then takes no notice of a SIGINT (a
# rehearsal saw it sit in epoll_wait for 8 minutes after one, until a
# second came): it gets another every 2 s, five in all; then it is killed
# and the test fails. On exit, a test kills its bpftrace instead (-KILL:
# nothing of its output is wanted then).
bt_alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
bt_interrupt() {
	local pid=$1 i j
	for i in 1 2 3 4 5; do
		kill -INT "$pid" 2>/dev/null || break
		for j in $(seq 20); do
			bt_alive "$pid" || break 2
			sleep 0.1
		done
		echo "note: bpftrace $pid still running 2 s after SIGINT $i" >&2
	done
	if bt_alive "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		fail "bpftrace ($pid) did not stop on SIGINT in 10 s"
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# frag_bt_start NETNS: bpftrace counting skb:kfree_skb events of reason
# FRAG_REASM_TIMEOUT, in the background until frag_bt_stop. It returns once
# the tracepoint is attached, known from a drop it saw: datagrams to a closed
# UDP port on NETNS's loopback are sent until bpftrace says so (a fixed
# sleep lost the first half of the events on a loaded run, where bpftrace
# took over 2.5 s to compile its program).
frag_bt_start() {
	local ns=$1
	bpftrace -e 'tracepoint:skb:kfree_skb {
		if (@seen == 0) { @seen = 1; printf("attached\n"); }
		if (args->reason == SKB_DROP_REASON_FRAG_REASM_TIMEOUT) { @n = count(); }
	} interval:s:120 { exit(); }' >"$T/bt.txt" 2>&1 &
	FRAG_BT=$!
	on_exit "kill -KILL $FRAG_BT 2>/dev/null"
	_frag_bt_attached() {
		grep -q '^attached' "$T/bt.txt" && return 0
		ip netns exec "$ns" bash -c 'echo x >/dev/udp/127.0.0.1/9' 2>/dev/null
		return 1
	}
	wait_for 30 _frag_bt_attached || fail "bpftrace did not attach: $(cat "$T/bt.txt")"
}

# frag_bt_stop: stops it; its count in FRAG_BT_N.
frag_bt_stop() {
	bt_interrupt "$FRAG_BT"
	FRAG_BT_N=$(awk '/^@n:/ { print $2 }' "$T/bt.txt")
	FRAG_BT_N=${FRAG_BT_N:-0}
}

# need_clickhouse: Debian's clickhouse-server and clickhouse-client, or skip.
need_clickhouse() {
	command -v clickhouse-server >/dev/null && command -v clickhouse-client >/dev/null ||
		skip "clickhouse-server not installed (./scripts/deps.sh installs it)"
}

# start_clickhouse: Debian's clickhouse-server (18.16) on free loopback
# ports with its data in $T/ch; sets CH_HTTP (http port) and CH_TCP. Its
# cluster two_shards has two shards on this server, the default databases
# shard1 and shard2 (a Distributed table with database '' reads both).
# A second call after stop_clickhouse starts it again on the same ports.
start_clickhouse() {
	if [ -z "${CH_HTTP:-}" ]; then
		CH_HTTP=$(free_port) || fail "no free port for clickhouse"
		CH_TCP=$(free_port) || fail "no free port for clickhouse"
		mkdir -p "$T/ch/data" "$T/ch/tmp"
		cat >"$T/ch/config.xml" <<-EOF
			<?xml version="1.0"?>
			<yandex>
			  <logger><level>warning</level><log>$T/ch/server.log</log><errorlog>$T/ch/err.log</errorlog><console>0</console></logger>
			  <http_port>$CH_HTTP</http_port><tcp_port>$CH_TCP</tcp_port>
			  <listen_host>127.0.0.1</listen_host>
			  <path>$T/ch/data/</path><tmp_path>$T/ch/tmp/</tmp_path>
			  <users_config>/etc/clickhouse-server/users.xml</users_config>
			  <default_profile>default</default_profile><default_database>default</default_database>
			  <mark_cache_size>5368709</mark_cache_size>
			  <remote_servers><two_shards>
			    <shard><replica><host>127.0.0.1</host><port>$CH_TCP</port><default_database>shard1</default_database></replica></shard>
			    <shard><replica><host>127.0.0.1</host><port>$CH_TCP</port><default_database>shard2</default_database></replica></shard>
			  </two_shards></remote_servers>
			</yandex>
		EOF
	fi
	(cd "$T/ch" && exec clickhouse-server --config-file="$T/ch/config.xml") >"$T/ch/stdout" 2>&1 &
	CH_PID=$!
	on_exit "kill -9 $CH_PID 2>/dev/null"
	_ch_up() { [ "$(curl -sf --max-time 2 "http://127.0.0.1:$CH_HTTP/ping")" = "Ok." ]; }
	wait_for 60 _ch_up || fail "clickhouse did not start: $(tail -5 "$T/ch/err.log" "$T/ch/stdout" 2>/dev/null)"
}

stop_clickhouse() {
	kill "$CH_PID" 2>/dev/null
	wait "$CH_PID" 2>/dev/null
	_ch_down() { ! curl -sf --max-time 1 "http://127.0.0.1:$CH_HTTP/ping" -o /dev/null; }
	wait_for 30 _ch_down || fail "clickhouse did not stop"
}

# chq 'SQL': one query's result (TabSeparated).
chq() { clickhouse-client --port "$CH_TCP" -q "$1"; }

# promq PORT 'PromQL': the instant query's result array (JSON).
promq() {
	curl -sS -g --max-time 5 "http://127.0.0.1:$1/api/v1/query" \
		--data-urlencode "query=$2" | jq -c '.data.result'
}

# ifs_fake_usable: what the IFS fake needs is here (root, /dev/fuse,
# fusermount3, the built tests/fakes/ifs_fake).
ifs_fake_usable() {
	[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null &&
		[ -x "$SYSOBS_BUILD/tests/fakes/ifs_fake" ]
}

# need_ifs_fake: root, FUSE and the built fake, or the test skips saying which.
need_ifs_fake() {
	need_root
	[ -c /dev/fuse ] || skip "no /dev/fuse (FUSE needed for the IFS fake)"
	need_cmd fusermount3
	[ -x "$SYSOBS_BUILD/tests/fakes/ifs_fake" ] ||
		skip "ifs_fake not built (libfuse3-dev missing at build time)"
}

# ifs_fake_config FILE [KEY=VALUE...]: writes the IFS fake's config (see
# the head of tests/fakes/ifs_fake.c) to FILE. A KEY is a [fake] key, or
# device.N.KEY for [device.N]; a [fake] key given replaces the default
# (cpus = 2, threads_per_core = 1, packages = 1, scan_ms = 50, devices = 0;
# the value "-" leaves it out, for the fake's own). The fake's own device 0
# already has image_version 0x8000, batch 1 loaded.
#   ifs_fake_config "$T/fake.ini" cpus=4 devices=0,1 device.0.core.2=fail device.1.default=pass
ifs_fake_config() {
	local file=$1 kv key sec
	shift
	local -A fake=([cpus]=2 [threads_per_core]=1 [packages]=1 [scan_ms]=50 [devices]=0) dev=()
	local order=(cpus threads_per_core packages scan_ms devices) devs=()
	for kv in "$@"; do
		key=${kv%%=*}
		if [[ $key =~ ^device\.([0-9]+)\.(.+)$ ]]; then
			sec=${BASH_REMATCH[1]}
			[ -n "${dev[$sec]+x}" ] || devs+=("$sec")
			dev[$sec]+="${BASH_REMATCH[2]} = ${kv#*=}"$'\n'
		else
			[ -n "${fake[$key]+x}" ] || order+=("$key")
			fake[$key]=${kv#*=}
		fi
	done
	{
		echo '[fake]'
		for key in "${order[@]}"; do
			[ "${fake[$key]}" = - ] || echo "$key = ${fake[$key]}"
		done
		for sec in "${devs[@]}"; do printf '[device.%s]\n%s' "$sec" "${dev[$sec]}"; done
	} >"$file"
}

# ifs_fake_start [--mnt DIR] [KEY=VALUE...] [-- FUSE options...]: writes
# $T/fake.ini (or DIR.ini with --mnt) with ifs_fake_config and mounts the
# IFS fake there (start_ifs_fake).
#   ifs_fake_start scan_ms=20 device.0.core.1=fail
ifs_fake_start() {
	local mnt=$T/mnt conf=$T/fake.ini cfg=()
	if [ "${1:-}" = --mnt ]; then
		mnt=$2 conf=$2.ini
		shift 2
	fi
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		cfg+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	ifs_fake_config "$conf" "${cfg[@]}"
	IFS_FAKE_MNT=$mnt start_ifs_fake "$conf" "$@"
}

# start_ifs_fake CONFIG [FUSE options...]: mounts the IFS fake (foreground
# mode, FAKE_PID) with that config at $T/mnt (or $IFS_FAKE_MNT) and waits
# for it (its log: the mount point's name + .log); at exit the agent is
# killed first (it may be inside a run_test write), then the fake
# unmounted. Run as root, the fake mounts with -o allow_other (an agent that
# drops root may enter the mount) and -o default_permissions (the kernel
# checks the files' modes as in sysfs: run_test 0200 root, only the helper
# writes) by itself.
start_ifs_fake() {
	local conf=$1 mnt=${IFS_FAKE_MNT:-$T/mnt} log
	shift
	log=$T/fake.log
	[ "$mnt" = "$T/mnt" ] || log=$mnt.log
	mkdir -p "$mnt"
	"$SYSOBS_BUILD/tests/fakes/ifs_fake" -f "$conf" "$mnt" "$@" >"$log" 2>&1 &
	FAKE_PID=$!
	on_exit "fusermount3 -u $mnt || fusermount3 -uz $mnt; wait $FAKE_PID 2>/dev/null"
	on_exit '[ -z "$AGENT_PID" ] || { kill -9 "$AGENT_PID"; wait "$AGENT_PID"; } 2>/dev/null'
	_fake_up() { compgen -G "$1/devices/virtual/misc/intel_ifs_*/status" >/dev/null; }
	wait_for 10 _fake_up "$mnt" || fail "ifs_fake did not mount at $mnt: $(cat "$log")"
}

# ifs_fake_runs CPU [DEVICE [FROM]]: how many runs the IFS fake at $T/mnt
# finished on CPU ("-": any) of intel_ifs_DEVICE ("-" or none: any), from
# line FROM (1) of its fake_runs log on.
ifs_fake_runs() {
	tail -n +"${3:-1}" "$T/mnt/fake_runs" 2>/dev/null | awk -v c="$1" -v d="${2:--}" \
		'(c == "-" || $4 == c) && (d == "-" || $3 == "intel_ifs_" d) { n++ } END { print n + 0 }'
}

# receiver_start NAME [OPTIONS...] [-- STATUS...]: the scripted HTTP
# receiver tests/tools/rw_fake_receiver.py (remote_write, OTLP, ClickHouse
# bodies; its head says the OPTIONS, --save DIR, --port N, --tls ..., and
# the STATUS script) with its port in $T/NAME.port, one line per request
# in $T/NAME.log, its output in $T/NAME.out; sets RX_PID and RX_PORT (and
# RX_PORT_<NAME>), stops it on exit, waits until it listens.
receiver_start() {
	local name=$1 opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	rm -f "$T/$name.port"
	python3 "$SYSOBS_SRC/tests/tools/rw_fake_receiver.py" "${opts[@]}" "$T/$name.port" \
		"$T/$name.log" "$@" >"$T/$name.out" 2>&1 &
	RX_PID=$!
	on_exit "kill $RX_PID 2>/dev/null"
	wait_for 10 test -s "$T/$name.port" || fail "receiver $name did not start: $(cat "$T/$name.out")"
	RX_PORT=$(cat "$T/$name.port")
	printf -v "RX_PORT_$name" '%s' "$RX_PORT"
}

# alertmanager_start [ROUTE_KEY=VALUE...]: Debian's prometheus-alertmanager
# on AM_PORT (a free loopback port unless set: a test may take the port
# first and start it later), its one receiver a blackhole, ROUTE_KEYs added
# to its route (group_wait=1s "group_by=[alertname, instance]"); sets
# AM_PID, stops it on exit, waits until it is ready.
alertmanager_start() {
	local kv
	if [ -z "${AM_PORT:-}" ]; then
		AM_PORT=$(free_port) || fail "no free loopback port for alertmanager"
	fi
	{
		printf 'route:\n  receiver: blackhole\n'
		for kv in "$@"; do printf '  %s: %s\n' "${kv%%=*}" "${kv#*=}"; done
		printf 'receivers:\n  - name: blackhole\n'
	} >"$T/am.yml"
	prometheus-alertmanager --config.file="$T/am.yml" --storage.path="$T/am" \
		--web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >>"$T/am.log" 2>&1 &
	AM_PID=$!
	on_exit "kill $AM_PID 2>/dev/null; wait $AM_PID 2>/dev/null"
	_am_ready() { curl -sf --max-time 2 "http://127.0.0.1:$AM_PORT/-/ready" -o /dev/null; }
	wait_for 20 _am_ready || fail "alertmanager did not start: $(tail -5 "$T/am.log")"
}

# am_alerts ALERTNAME: the alerts of that name Alertmanager holds (JSON).
am_alerts() {
	curl -sS -g --max-time 5 "http://127.0.0.1:$AM_PORT/api/v2/alerts?filter=alertname=\"$1\""
}
