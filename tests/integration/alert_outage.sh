#!/usr/bin/env bash
# integration.alert_outage: the IFS alert push (exporters/alertmanager.c, on
# the shared sender) while the real prometheus-alertmanager is down. A core
# fails its scan; the agent's POSTs fail (no connection) and are retried
# after the sender's backoff (1 s, doubling: a handful in the outage, not
# one per poll), counted in sysobs_ifs_alert_posts_total{result="failed"};
# once Alertmanager starts on that port the
# alert arrives with the host's identity (job, instance) and the count of
# successful POSTs grows. The URL is given as [alertmanager] url (the
# section of the push's sender keys); integration.ifs and
# integration.alert_identity give it as [collector.ifs] alertmanager_url,
# the older spelling.
export TMPDIR="${TMPDIR:-/tmp}/sysobs-ifs-it" # a FUSE mount inside $T (see ifs.sh)
mkdir -p "$TMPDIR"
source "$(dirname "$0")/lib.sh"

need_root
[ -c /dev/fuse ] || skip "no /dev/fuse (FUSE needed for the IFS fake)"
need_cmd fusermount3
need_cmd jq
need_cmd prometheus-alertmanager
ifs_fake_usable || skip "ifs_fake not built (libfuse3-dev missing at build time)"

AM_PORT=$(free_port) || fail "no free loopback port for alertmanager"
ifs_fake_start device.0.core.1=fail
write_base_config agent.sysfs_root="$T/mnt" http.admin=true agent.hostname=outage-host \
	collector.ifs.poll=100ms \
	alertmanager.url="http://127.0.0.1:$AM_PORT" \
	collector.ifs.alert_resend=1s \
	collector.drops.enabled=false collector.mptcp.enabled=false \
	collector.cachefiles.enabled=false
start_agent

api POST /api/v1/ifs/scans -H 'Content-Type: application/json' \
	-d '{"cores":[{"package":0,"core":1}],"tests":["scan"]}' >"$T/post.json"
[ "${HTTP_CODE:0:1}" = 2 ] || fail "POST /api/v1/ifs/scans: $HTTP_CODE $(cat "$T/post.json")"

# ---- Alertmanager down: failed POSTs, retried with backoff ----
failed() { metric 'sysobs_ifs_alert_posts_total{destination="alertmanager",result="failed"}'; }
two_failed() { [ "$(failed)" -ge 2 ] 2>/dev/null; }
wait_for 20 two_failed || fail "no retried alert push while Alertmanager is down: $(failed)"
t_outage=$(date +%s)
sleep 4
n_failed=$(failed)
# With a fixed 1 s resend (no backoff) or a retry per 100 ms poll there
# would be 6 or 40 more; with 1, 2, 4, 8 s waits at most 3 more.
assert_ge "failed POSTs in the outage" 2 "$n_failed"
[ "$n_failed" -le 6 ] || fail "$n_failed failed POSTs in ~$(($(date +%s) - t_outage + 2)) s: no backoff"
assert_eq "successful POSTs in the outage" 0 \
	"$(metric 'sysobs_ifs_alert_posts_total{destination="alertmanager",result="ok"}')"
assert_eq "alerts firing" 1 "$(metric 'sysobs_ifs_alerts_firing{destination="alertmanager"}')"
pass "while Alertmanager is down the push retries with backoff ($n_failed failed POSTs)"

# ---- Alertmanager up on the same port: the alert arrives ----
alertmanager_start
am_alert() { am_alerts SysobsIFSCoreFailed; }
am_firing() { [ "$(am_alert | jq '[.[] | select(.labels.core == "1")] | length')" = 1 ] 2>/dev/null; }
# The backoff at most 60 s, usually 8-16 s here; 45 s on a loaded host.
wait_for 45 am_firing || fail "alert not in Alertmanager after the outage: $(am_alert)"
al=$(am_alert | jq -c '.[] | select(.labels.core == "1")')
assert_eq "alert job, instance, package, core" '["sysobs","outage-host","0","1"]' \
	"$(jq -c '.labels | [.job, .instance, .package, .core]' <<<"$al")"
assert_eq "alert runbook_url" "http://outage-host:9559/runbooks#sysobsifscorefailed" \
	"$(jq -r .annotations.runbook_url <<<"$al")"
ok_posts() { [ "$(metric 'sysobs_ifs_alert_posts_total{destination="alertmanager",result="ok"}')" -ge 1 ] 2>/dev/null; }
wait_for 10 ok_posts || fail "no successful POST counted"
pass "after the outage the alert reaches Alertmanager with the host's identity"
