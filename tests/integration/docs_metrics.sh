#!/usr/bin/env bash
# integration.docs_metrics: every sysobs_* name the docs give (docs/, the
# man pages, README.md, deploy/*/README.md) is one the agent exports. Known
# names: the families of a running agent's /metrics (default collectors,
# root) and, for collectors this host lacks (IFS hardware, cachefiles
# on-demand), the family names spelled as string literals in the code. A
# doc name is known as it is, as a histogram's _bucket/_sum/_count, as the
# OpenMetrics family of a _total counter (the name without _total), or as a
# prefix ending in "_" of a known family; the build's own library names
# and targets (add_library, add_custom_target, add_executable) are not
# metrics and pass. docs/fleet.md named
# sysobs_drops_total for sysobs_packet_drops_total (issue 32).
source "$(dirname "$0")/lib.sh"
need_root

write_base_config
start_agent
req GET /metrics
stop_agent
{
	sed -n 's/^# TYPE \(sysobs_[a-z0-9_]*\) .*/\1/p' <<<"$BODY"
	grep -rshoE '"sysobs_[a-z0-9_]+"' "$SYSOBS_SRC"/{agent,api,base,collectors,exporters,metrics,storage} |
		tr -d '"'
} | sort -u >"$T/known"
assert_ge "families in /metrics" 20 "$(grep -c '^# TYPE sysobs_' <<<"$BODY")"
grep -rhoE 'add_(library|custom_target|executable)\(sysobs_[a-z0-9_]+' "$SYSOBS_SRC" --include=CMakeLists.txt |
	sed 's/^add_[a-z_]*(//' | sort -u >"$T/libs"
grep -rhoE 'sysobs_layer\(sysobs_[a-z0-9_]+|function\(sysobs_[a-z0-9_]+' "$SYSOBS_SRC" \
	--include=CMakeLists.txt --include='*.cmake' | sed 's/.*(//' >>"$T/libs"

docs=("$SYSOBS_SRC"/docs/*.md "$SYSOBS_SRC"/docs/man/* "$SYSOBS_SRC"/README.md "$SYSOBS_SRC"/deploy/*/README.md)
known() {
	local n=$1
	grep -qx "$n" "$T/known" "$T/libs" && return 0
	case $n in
	*_) grep -q "^$n" "$T/known" && return 0 ;;
	*_bucket | *_sum | *_count) grep -qx "${n%_*}" "$T/known" && return 0 ;;
	esac
	grep -qx "${n}_total" "$T/known"
}
bad=() checked=0
for n in $(grep -hoE '\bsysobs_[a-z0-9_]+' "${docs[@]}" | sort -u); do
	checked=$((checked + 1))
	known "$n" || bad+=("$n ($(grep -lw "$n" "${docs[@]}" | sed "s|$SYSOBS_SRC/||" | tr '\n' ' '))")
done
[ ${#bad[@]} = 0 ] || fail "names in the docs that the agent does not export: ${bad[*]}"
assert_ge "names checked" 50 "$checked"
pass "$checked sysobs_* names in ${#docs[@]} docs, each a family of /metrics or of the code ($(wc -l <"$T/known") known)"
