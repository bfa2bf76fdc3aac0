// SPDX-License-Identifier: MIT
/*
 * The host's identity for what leaves it: one resolution of [remote_write]
 * job, instance and external_labels (with [agent] hostname and the host name
 * as the instance's defaults), the same labels remote_write puts on every
 * pushed series, so event rows join metric series on (job, instance).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporters/identity.h"
#include "exporters/remote_write.h"

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct export_label *)a)->name,
		      ((const struct export_label *)b)->name);
}

int export_identity_resolve(struct config *cfg, struct export_identity_buf *out)
{
	struct remote_write_config c = {0};
	struct rw_label ext[RW_MAX_LABELS];
	const char *why = NULL, *key = NULL, *agent_host;
	size_t n = 0, k = 0;

	memset(out, 0, sizeof(*out));
	/* Errors in these keys are remote_write_check()'s to report. */
	if (cfg_section_parse(cfg, "remote_write", &c))
		return -EINVAL;
	snprintf(out->ext_text, sizeof(out->ext_text), "%s", c.external_labels);
	agent_host = cfg_get(cfg_section(cfg, "agent"), "hostname");
	if (rw_external_labels_parse(out->ext_text, ext, RW_MAX_LABELS - 1, &n, &why) ||
	    rw_identity_add(c.job,
			    *c.instance	 ? c.instance
			    : agent_host ? agent_host
					 : "",
			    out->host, sizeof(out->host), ext, RW_MAX_LABELS - 1, &n, &key, &why))
		return -EINVAL;
	out->id.job = "";
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(ext[i].name, "job"))
			out->id.job = ext[i].value;
		else if (!strcmp(ext[i].name, "instance"))
			out->id.instance = ext[i].value;
		else if (k < EXPORT_MAX_LABELS)
			out->id.labels[k++] = (struct export_label){ext[i].name, ext[i].value};
	}
	qsort(out->id.labels, k, sizeof(out->id.labels[0]), label_cmp);
	out->id.n_labels = k;
	out->id.version = SYSOBS_VERSION;
	return out->id.instance ? 0 : -EINVAL;
}
