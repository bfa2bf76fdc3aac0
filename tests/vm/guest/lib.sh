#!/bin/sh
# Helpers of the guest scripts (busybox sh), packed as /tests/lib.sh.

say() { echo "VM: $*"; }

# section NAME FILE: FILE between markers the host cuts out with vm_section
section() {
	echo "VM-SECTION $1"
	# the file may lack a final newline (JSON bodies): add one, drop blank lines
	{ cat "$2" 2>/dev/null; echo; } | tr -d '\r' | sed '/^$/d'
	echo "VM-END $1"
}

# poll_ge WANT CMD...: runs CMD (which prints a number) every 200 ms until
# it prints at least WANT or 30 s pass; sets POLL_MS to the time it took.
# Counters reach /metrics at a collect that TCG on a busy host can delay by
# seconds: a fixed sleep before reading them lost once.
poll_ge() {
	_pg_want=$1
	shift
	_pg_i=0
	while [ $_pg_i -lt 150 ]; do
		_pg_n=$("$@")
		[ "${_pg_n:-0}" -lt "$_pg_want" ] || break
		sleep 0.2
		_pg_i=$((_pg_i + 1))
	done
	POLL_MS=$((_pg_i * 200))
}
