// SPDX-License-Identifier: MIT
/*
 * The host's identity for what leaves it: one resolution of [remote_write]
 * job, instance and external_labels (the agent's host name, [agent]
 * hostname or gethostname(), as the instance's default), by the agent, into
 * the labels remote_write puts on every pushed series and the identity of
 * event rows, so that event rows join metric series on (job, instance).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/netns_name.h"
#include "exporters/export_row.h"
#include "exporters/identity.h"
#include "exporters/remote_write.h"

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct export_label *)a)->name,
		      ((const struct export_label *)b)->name);
}

static int identity_fail(struct export_identity_buf *out, const char *key, const char *why)
{
	out->key = key;
	out->why = why;
	out->n_labels = 0;
	out->id.job = out->id.instance = "";
	return -EINVAL;
}

int export_identity_resolve(struct config *cfg, const char *host, struct export_identity_buf *out)
{
	return export_identity_resolve_section(cfg, "remote_write", host, out);
}

int export_identity_resolve_section(struct config *cfg, const char *section, const char *host,
				    struct export_identity_buf *out)
{
	struct remote_write_config c = {0};
	const char *why = NULL, *key = NULL;
	size_t n = 0, k = 0;

	memset(out, 0, sizeof(*out));
	/* The keys' own type errors are the section's to report (its
	 * cfg_section_parse()); remote_write_check() reports key and why. */
	if (cfg_section_parse(cfg, section, &c))
		return identity_fail(out, NULL, NULL); /* reported by the parse */
	if (strlen(c.external_labels) >= sizeof(out->ext_text))
		return identity_fail(out, "external_labels", "longer than 1023 bytes");
	snprintf(out->ext_text, sizeof(out->ext_text), "%s", c.external_labels);
	/* __name__ takes one of a series' RW_MAX_LABELS. */
	if (rw_external_labels_parse(out->ext_text, out->labels, RW_MAX_LABELS - 1, &n, &why))
		return identity_fail(out, "external_labels", why);
	if (rw_identity_add(c.job,
			    *c.instance ? c.instance
			    : host	? host
					: "",
			    out->host, sizeof(out->host), out->labels, RW_MAX_LABELS - 1, &n, &key,
			    &why))
		return identity_fail(out, key, why);
	out->n_labels = n;
	out->id.job = "";
	for (size_t i = 0; i < n; i++) {
		const struct rw_label *l = &out->labels[i];

		if (!strcmp(l->name, "job"))
			out->id.job = l->value;
		else if (!strcmp(l->name, "instance"))
			out->id.instance = l->value;
		else if (k < EXPORT_MAX_LABELS)
			out->id.labels[k++] = (struct export_label){l->name, l->value};
	}
	qsort(out->id.labels, k, sizeof(out->id.labels[0]), label_cmp);
	out->id.n_labels = k;
	out->id.version = SYSOBS_VERSION;
	return 0;
}

/* (export_row.h) The host's names of its namespaces go with the rows as
 * its own name does: looked up when the row is sent. */
bool export_netns_name(const struct event_column *c, const struct col_value *v, char *buf,
		       size_t len)
{
	if (!export_is_netns(c) || v->kind == COLV_NULL)
		return false;
	return !netns_name_lookup((uint32_t)(v->kind == COLV_UINT ? v->u : (uint64_t)v->i), buf,
				  len);
}
