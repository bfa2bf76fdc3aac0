#!/usr/bin/env bash
# integration.check_config_start: sysobsd --check-config and a real start
# give one verdict (issue 30 item 4, issue 32 item 2). Each config below is
# refused both ways, exit 2 within 5 s, with the same errors at the same
# file:line (the start before it serves or loads anything):
#  - a basic_auth_users hash of bcrypt cost 31 (it hung both, deaf to
#    SIGTERM) and of cost 3;
#  - a TLS key that does not match its certificate (the start exited 1);
#  - [remote_write] tls_ca_file = /etc/hostname (not PEM);
#  - a secret file that does not exist;
#  - [http] listen on an address this host does not have (192.0.2.1);
#  - a port below net.ipv4.ip_unprivileged_port_start (the unit grants no
#    CAP_NET_BIND_SERVICE, root outside it would have bound it);
#  - a database directory the user the agent becomes cannot reach;
#  - a database directory outside SYSOBS_WRITABLE_PATHS (the unit's
#    sandbox: StateDirectory= and ReadWritePaths=);
#  - a [storage] path whose directory is missing, with --db over it.
# And a good config passes both ways, its summary naming its drop-ins.
source "$(dirname "$0")/lib.sh"
need_root
need_cmd openssl

C=$T/c
mkdir -p "$C" "$T/var" "$T/private" "$T/state"
chmod 755 "$T" "$T/var"
chmod 700 "$T/private"
n=0

# same NAME [FLAGS...]: $C/NAME.ini is refused by --check-config and by a
# start, both exit 2 in under 5 s, with the same "file:line: message" lines
same() {
	local name=$1 rc t0 ms
	shift
	t0=$(date +%s%N)
	timeout -k 2 20 "$SYSOBSD" --check-config --config "$C/$name.ini" "$@" >"$T/check.out" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	assert_eq "$name: --check-config exit ($(cat "$T/check.out"))" 2 "$rc"
	[ "$ms" -lt 5000 ] || fail "$name: --check-config took $ms ms"
	t0=$(date +%s%N)
	timeout -k 2 20 "$SYSOBSD" --config "$C/$name.ini" "$@" >"$T/start.out" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	assert_eq "$name: start exit ($(cat "$T/start.out"))" 2 "$rc"
	[ "$ms" -lt 5000 ] || fail "$name: the start took $ms ms to refuse"
	! grep -q 'listening on' "$T/start.out" || fail "$name: the start served"
	# the errors: from the config's path on, each line
	grep -oE "$C/[^ ]*:[0-9]+: .*" "$T/check.out" | sort -u >"$T/check.err"
	grep -oE "$C/[^ ]*:[0-9]+: .*" "$T/start.out" | sort -u >"$T/start.err"
	[ -s "$T/check.err" ] || fail "$name: no error at a file:line: $(cat "$T/check.out")"
	diff "$T/check.err" "$T/start.err" >/dev/null || fail "$name: other verdicts:
--check-config:
$(cat "$T/check.out")
start:
$(cat "$T/start.out")"
	n=$((n + 1))
}

# cfg NAME [AGENT_USER]: $C/NAME.ini from stdin after [agent] and [storage]
# lines that pass (lines 1-4; the user root unless given)
cfg() {
	{ printf '[agent]\nuser = %s\n[storage]\npath = %s/var/x.db\n' "${2:-root}" "$T" && cat; } \
		>"$C/$1.ini"
}

# bcrypt costs outside 4-14
# bcrypt of "pw" at cost 4 (libxcrypt's crypt_gensalt_rn)
hash='$2b$04$kl7qppnGIH1DHcy3/IfVcuYwJh03lgIMTnIAFSCLDVqZg6q6NthOq'
for cost in 31 03; do
	printf 'basic_auth_users:\n  alice: %s\n  bob: $2b$%s$%s\n' "$hash" "$cost" "${hash:7}" \
		>"$C/web$cost.yml"
	cfg bcrypt$cost <<EOF
[http]
listen = 127.0.0.1:0
web_config_file = $C/web$cost.yml
EOF
	same bcrypt$cost
	grep -qF "web$cost.yml:3: basic_auth_users: bob: bcrypt cost $((10#$cost)) outside 4-14" \
		"$T/check.out" || fail "bcrypt cost $cost: $(cat "$T/check.out")"
done

# a key that is not the certificate's
for k in a b; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj /CN=localhost -keyout "$T/$k.key" -out "$T/$k.crt" 2>/dev/null ||
		fail "openssl cannot make a certificate"
done
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$T/a.crt" "$T/b.key" >"$C/tls.yml"
cfg tls_mismatch <<EOF
[http]
listen = 127.0.0.1:0
web_config_file = $C/tls.yml
EOF
same tls_mismatch
grep -qF "tls.yml:3: key_file and cert_file: " "$T/check.out" || fail "mismatch: $(cat "$T/check.out")"

cfg ca_not_pem <<'EOF'
[remote_write]
url = https://127.0.0.1:9/api/v1/write
tls_ca_file = /etc/hostname
EOF
same ca_not_pem
grep -qF "ca_not_pem.ini:7: [remote_write] tls_ca_file = '/etc/hostname': /etc/hostname: not PEM" \
	"$T/check.out" || fail "CA: $(cat "$T/check.out")"

cfg secret <<EOF
[remote_write]
url = http://127.0.0.1:9/api/v1/write
bearer_token_file = $T/no-such-token
EOF
same secret

cfg not_here <<'EOF'
[http]
listen = 192.0.2.1:9559
EOF
same not_here
grep -qF "not_here.ini:6: [http] listen = '192.0.2.1:9559': cannot bind: Cannot assign requested address" \
	"$T/check.out" || fail "listen: $(cat "$T/check.out")"

low=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
if [ "$low" -gt 80 ]; then
	cfg low_port <<'EOF'
[http]
listen = 127.0.0.1:80
EOF
	same low_port
	grep -qF "port 80 is below net.ipv4.ip_unprivileged_port_start ($low)" "$T/check.out" ||
		fail "low port: $(cat "$T/check.out")"
fi

if id nobody >/dev/null 2>&1; then
	{ printf '[agent]\nuser = nobody\n[storage]\npath = %s/private/x.db\n' "$T" &&
		printf '[http]\nlisten = 127.0.0.1:0\n'; } >"$C/db_user.ini"
	same db_user
	grep -qF "db_user.ini:4: [storage] path = '$T/private/x.db': the database directory $T/private is not reachable by nobody" \
		"$T/check.out" || fail "db user: $(cat "$T/check.out")"
fi

cfg sandbox <<'EOF'
[http]
listen = 127.0.0.1:0
EOF
SYSOBS_WRITABLE_PATHS=$T/state:/run/sysobs same sandbox
grep -qF "sandbox.ini:4: [storage] path = '$T/var/x.db': directory $T/var is outside what the service may write" \
	"$T/check.out" || fail "sandbox: $(cat "$T/check.out")"

{ printf '[agent]\nuser = root\n[storage]\npath = %s/no-such-dir/x.db\n' "$T" &&
	printf '[http]\nlisten = 127.0.0.1:0\n'; } >"$C/db_flag.ini"
same db_flag --db "$T/var/x.db"
grep -qF "db_flag.ini:4: [storage] path = '$T/no-such-dir/x.db': directory $T/no-such-dir: No such file or directory" \
	"$T/check.out" || fail "--db: $(cat "$T/check.out")"

# a good config, in the sandbox, with a drop-in: passes both ways
cfg good <<'EOF'
[http]
listen = 127.0.0.1:0
EOF
sed -i "s|^path = .*|path = $T/state/x.db|" "$C/good.ini"
mkdir -p "$C/good.d"
printf '[http]\nthreads = 3\n' >"$C/good.d/10-a.ini"
SYSOBS_WRITABLE_PATHS=$T/state "$SYSOBSD" --check-config --config "$C/good.ini" 2>"$T/err" ||
	fail "good: $(cat "$T/err")"
grep -qxF "sysobsd: $C/good.ini: config valid with 1 drop-in: $C/good.d/10-a.ini" "$T/err" ||
	fail "the summary does not name the drop-in: $(cat "$T/err")"
cp "$C/good.ini" "$T/sysobsd.ini"
cp -r "$C/good.d" "$T/sysobsd.d"
SYSOBS_WRITABLE_PATHS=$T/state start_agent
stop_agent

pass "$n refused configs (bcrypt cost 31 and 3, key/certificate mismatch, CA not PEM, missing secret, address not here, port below $low, database directory unreachable by the drop user, outside the sandbox, missing under --db): --check-config and the start both exit 2 in under 5 s with the same file:line errors; a good one passes both"
