// SPDX-License-Identifier: MIT
/*
 * [collector.ifs] beyond its key types: the CPU lists, the batch rotation,
 * the pushed alerts' job and instance, read into the collector's state by init
 * and checked alone (no device, no sysfs) by check_config.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/collector.h"
#include "collectors/ifs/ifs_decode.h"
#include "collectors/ifs/ifs_priv.h"

static int parse_cpulist_key(struct collector *c, const char *key, const char *v, uint64_t *bits,
			     bool *set)
{
	*set = v[0];
	if (*set && ifs_cpulist_parse(v, bits, IFS_MAX_CPUS))
		return collector_config_error(c, key, "not a CPU list below %d (like 0-3,8,10-11)",
					      IFS_MAX_CPUS);
	return 0;
}

/*
 * One test's rotation list. Scan images (ifs_0/ff-mm-ss-NN.scan) and SBAF
 * images (ifs_2/ff-mm-ss-NN.sbft) are separate files with their own
 * numbering: one list for both made SBAF fail batch_missing on every
 * batch only scan has, each lap.
 */
static int parse_batches_key(struct collector *c, const char *key, const char *v,
			     struct ifs_sched_config *s, enum ifs_test t)
{
	uint64_t bits[IFS_CPU_WORDS];

	if (!v[0])
		return 0;
	if (ifs_cpulist_parse(v, bits, 256))
		return collector_config_error(c, key,
					      "not a list of batch numbers 0-255 (like 1-3,5)");
	for (unsigned b = 0; b < 256; b++) {
		if (!ifs_cpu_isset(bits, b))
			continue;
		if (s->n_batches[t] == IFS_MAX_BATCHES)
			return collector_config_error(c, key, "more than %d batches",
						      IFS_MAX_BATCHES);
		s->batches[t][s->n_batches[t]++] = b;
	}
	return 0;
}

/*
 * job and instance of a pushed alert: those of the SysobsIFSCoreFailed alert
 * Prometheus derives from the scraped series (job "sysobs", instance the
 * host name with the scrape config of docs/ifs.md), so that Alertmanager
 * takes the two for one alert. alert_labels may name others; the instance
 * default is filled in by ifs_init() once the host name is known.
 */
static void alert_identity_config(struct ifs_priv *p)
{
	char copy[sizeof(p->alert_labels)], *save, *tok;

	/* The syntax is the exporter's to check (exporters/alertmanager.c,
	 * am_labels_parse()): a pair that is not k=v names neither. */
	snprintf(p->alert_job, sizeof(p->alert_job), "sysobs");
	p->alert_instance[0] = '\0';
	snprintf(copy, sizeof(copy), "%s", p->alert_labels);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *k, *v;

		if (cfg_kv_split(tok, &k, &v))
			continue;
		if (!strcmp(k, "job"))
			snprintf(p->alert_job, sizeof(p->alert_job), "%s", v);
		else if (!strcmp(k, "instance"))
			snprintf(p->alert_instance, sizeof(p->alert_instance), "%s", v);
	}
}

/* (ifs_priv.h) The link the shipped rules give (deploy/prometheus:
 * http://{{ reReplaceAll ":[0-9]+$" "" $labels.instance }}:9559/runbooks#...):
 * the instance without a trailing :port, the agent's default port. */
void ifs_runbook_url_default(struct ifs_priv *p)
{
	const char *inst = p->alert_instance, *colon = strrchr(inst, ':');
	size_t n = strlen(inst);

	if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1))
		n = (size_t)(colon - inst);
	snprintf(p->runbook_url, sizeof(p->runbook_url),
		 "http://%.*s:9559/runbooks#sysobsifscorefailed", (int)n, inst);
}

/* (ifs_priv.h) Each bad value reported, the others still read. */
int ifs_read_config(struct collector *c, struct ifs_priv *p)
{
	const struct ifs_cfg *cfg = c->cfg;
	bool set;
	int bad = 0;

	p->schedule = cfg->schedule;
	p->scfg.periodic = p->schedule;
	p->scfg.interval_ns = (int64_t)cfg->interval * MS_NS;
	/* Any cap admits progress, even one below a single run (ifs_sched.c). */
	p->scfg.max_scan_ns_per_hour = (int64_t)cfg->max_scan_seconds_per_hour * 1000 * MS_NS;
	p->scfg.retry_max = (unsigned)cfg->retry_max;
	p->scfg.retry_backoff_ns = (int64_t)cfg->retry_backoff * MS_NS;
	bad |=
	    parse_cpulist_key(c, "allow_cpus", cfg->allow_cpus, p->scfg.allow, &p->scfg.have_allow);
	bad |= parse_cpulist_key(c, "deny_cpus", cfg->deny_cpus, p->scfg.deny, &set);
	bad |= parse_batches_key(c, "rotate_batches", cfg->rotate_batches, &p->scfg, IFS_TEST_SCAN);
	bad |= parse_batches_key(c, "rotate_batches_sbaf", cfg->rotate_batches_sbaf, &p->scfg,
				 IFS_TEST_SBAF);
	p->poll_ms = cfg->poll;
	/* The push itself, its URL and labels checked, is the agent's
	 * exporter (exporters/alertmanager.c), which reads the same keys;
	 * the collector publishes every alert (sink_alert()), configured or not. */
	snprintf(p->alert_labels, sizeof(p->alert_labels), "%s", cfg->alert_labels);
	if (cfg->runbook_base && cfg->runbook_base[0])
		snprintf(p->runbook_url, sizeof(p->runbook_url), "%s#sysobsifscorefailed",
			 cfg->runbook_base);
	alert_identity_config(p);
	return bad ? -EINVAL : 0;
}

/* A scratch ifs_priv, never started: the host is not looked at. */
int ifs_check_config(struct collector *c)
{
	struct ifs_priv *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	err = ifs_read_config(c, p);
	free(p);
	return err;
}
