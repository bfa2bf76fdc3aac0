#!/usr/bin/env bash
# integration.runbooks: every alert's runbook_url opens its runbook.
#  - Every rule of deploy/prometheus/sysobs-alerts.yml has a runbook_url on
#    the agent's own page, http://{{ reReplaceAll ":[0-9]+$" "" $labels.instance }}:9559/runbooks,
#    whose anchor is a heading of docs/runbooks.md (GitHub's anchors,
#    computed from every heading) and an id of the HTML a running agent
#    serves at GET /runbooks; the agent's own push ([collector.ifs]
#    runbook_base) defaults to that page ("").
#  - The package still installs docs/runbooks.md uncompressed: the tree is
#    installed as the package build does (cmake --install with prefix /usr
#    into debian/sysobs, then deploy/debian/rules' own dh_compress step),
#    without building a .deb.
#  - The documented rewrite for a fleet (the sed line of docs/runbooks.md,
#    run on the installed rules) gives rules that promtool loads, with every
#    runbook_url on the new base and the same anchors.
source "$(dirname "$0")/lib.sh"
need_cmd python3
need_cmd promtool
need_cmd dh_compress

R=$SYSOBS_SRC/deploy/prometheus/sysobs-alerts.yml
RB=$SYSOBS_SRC/docs/runbooks.md
BASE='http://{{ reReplaceAll ":[0-9]+$" "" $labels.instance }}:9559/runbooks'

# rule_links RULES: "alert<TAB>runbook_url" per alerting rule.
rule_links() {
	python3 - "$1" <<'PY'
import sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
	for r in g["rules"]:
		if "alert" in r:
			print(r["alert"] + "\t" + r.get("annotations", {}).get("runbook_url", ""))
PY
}

# GitHub's heading anchors: lower case, punctuation other than - and _
# removed, spaces to -, a repeated anchor suffixed -1, -2...
python3 - "$RB" >"$T/anchors" <<'PY'
import re, sys
seen = {}
fence = False
for line in open(sys.argv[1]):
	if line.startswith("```"):
		fence = not fence
	m = None if fence else re.match(r"#{1,6} +(.*?) *#* *$", line)
	if not m:
		continue
	a = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
	n = seen.get(a, 0)
	seen[a] = n + 1
	print(a if n == 0 else f"{a}-{n}")
PY
assert_ge "headings of docs/runbooks.md" 20 "$(wc -l <"$T/anchors")"

# The page the agent serves: its element ids.
write_base_config collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent
req GET /runbooks
assert_eq "GET /runbooks" 200 "$HTTP_CODE"
assert_eq "Content-Type of /runbooks" "text/html; charset=utf-8" \
	"$(curl -sS -o /dev/null -w '%{content_type}' "http://127.0.0.1:$PORT/runbooks")"
printf '%s' "$BODY" >"$T/runbooks.html"
grep -q '<h3 id="sysobsifscorefailed">SysobsIFSCoreFailed</h3>' "$T/runbooks.html" ||
	fail "/runbooks has no SysobsIFSCoreFailed heading: $(head -c 300 "$T/runbooks.html")"
grep -o ' id="[^"]*"' "$T/runbooks.html" | sed 's/ id="//; s/"$//' >"$T/served"
assert_eq "anchors served = GitHub anchors of docs/runbooks.md" "$(sort "$T/anchors" | tr '\n' ' ')" \
	"$(sort "$T/served" | tr '\n' ' ')"
api GET '/runbooks?x=1' >/dev/null
assert_eq "GET /runbooks with an unknown parameter" 400 "$HTTP_CODE"
stop_agent

rule_links "$R" >"$T/links"
n=$(wc -l <"$T/links")
assert_ge "alerting rules" 20 "$n"
while IFS=$'\t' read -r alert url; do
	[ -n "$url" ] || fail "$alert: no runbook_url"
	[ "${url%%#*}" = "$BASE" ] || fail "$alert: runbook_url $url not on $BASE"
	grep -qx "${url#*#}" "$T/anchors" || fail "$alert: #${url#*#} is no heading of docs/runbooks.md"
	grep -qx "${url#*#}" "$T/served" || fail "$alert: #${url#*#} is no id of the agent's /runbooks"
done <"$T/links"
agent_base=$("$SYSOBSD" --print-config | awk -F' = ' '/^\[/ { s = $0 } s == "[collector.ifs]" && $1 == "runbook_base" { print $2 }')
assert_eq "[collector.ifs] runbook_base default (the agent's own page)" "" "${agent_base% }"
grep -qx sysobsifscorefailed "$T/served" || fail "the agent's #sysobsifscorefailed is no id of /runbooks"
pass "$n rules: runbook_url on $BASE, anchor an id of the agent's GET /runbooks ($(wc -c <"$T/runbooks.html") bytes, $(wc -l <"$T/served") ids) and a heading of docs/runbooks.md"

# ---- the package's layout: install, then debian/rules' dh_compress ----
P=$T/pkg
mkdir -p "$P"
cp -a "$SYSOBS_SRC/deploy/debian" "$P/debian"
DESTDIR=$P/debian/sysobs cmake --install "$SYSOBS_BUILD" --prefix /usr >"$T/install.log" 2>&1 ||
	fail "cmake --install: $(tail -5 "$T/install.log")"
(cd "$P" && debian/rules override_dh_compress) >"$T/compress.log" 2>&1 ||
	fail "dh_compress of debian/rules: $(cat "$T/compress.log")"
ROOT=$P/debian/sysobs
DOC=/usr/share/doc/sysobs/runbooks.md
installed=$ROOT$DOC
[ -f "$installed" ] ||
	fail "$DOC: not in the package (runbooks: $(cd "$ROOT" && find . -name 'runbooks*' | tr '\n' ' '))"
cmp -s "$installed" "$RB" || fail "$installed differs from docs/runbooks.md"
# and the compression step did run: a big doc next to it is compressed
[ -n "$(find "$ROOT/usr/share/doc/sysobs" -name '*.md.gz' | head -1)" ] ||
	fail "dh_compress compressed no doc: the check above proves nothing"
pass "the package installs $DOC uncompressed ($(wc -c <"$installed") bytes; other docs .md.gz)"

# ---- the documented rewrite of the base ----
# The sed command of docs/runbooks.md's sh block, on the installed rules.
cmd=$(awk '/^```sh$/ { on = 1; next } on && /^```/ { exit } on' "$RB" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
[[ $cmd == sed* ]] || fail "no sed line in docs/runbooks.md: $cmd"
new_base=$(grep -oE '"https?://[^#"]*#' <<<"$cmd" | tr -d '"#')
[ -n "$new_base" ] || fail "no new base in the documented sed line: $cmd"
cmd=${cmd//\/usr\/share\/sysobs\//$ROOT/usr/share/sysobs/}
cmd=${cmd//\/etc\/prometheus\//$T/}
eval "$cmd" || fail "the documented sed line failed: $cmd"
out=$T/sysobs-alerts.yml
promtool check rules "$out" >"$T/check.out" 2>&1 || fail "rewritten rules: $(cat "$T/check.out")"
rule_links "$out" >"$T/links.new"
assert_eq "rules after the rewrite" "$n" "$(wc -l <"$T/links.new")"
assert_eq "links left on $BASE" 0 "$(grep -cF "$BASE" "$T/links.new")"
paste "$T/links" "$T/links.new" | while IFS=$'\t' read -r a1 u1 a2 u2; do
	[ "$a1" = "$a2" ] && [ "$u2" = "$new_base#${u1#*#}" ] || fail "$a1: $u1 became $u2"
done || exit 1
pass "the documented sed line moves all $n links to $new_base, anchors kept, and promtool loads the result"
