// SPDX-License-Identifier: MIT
/*
 * Who sent a pushed series: job and instance, added like external labels.
 *
 * Why: two agents pushing into one receiver without them were one series
 * (the same name and labels), silently merged; and dashboards, rules and
 * alerts select and group by job and instance, which a scrape attaches and
 * a push did not. The defaults equal what the documented scrape job gives a
 * scraped series (job_name sysobs, instance relabelled to the host name:
 * docs/remote_write.md, deploy/prometheus/scrape.yml), so the same queries
 * work on either path.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "exporters/remote_write.h"

static int rw_identity_push(struct rw_label *ext, size_t max, size_t *n, const char *name,
			    const char *value)
{
	if (*n >= max)
		return -EINVAL;
	ext[*n].name = name;
	ext[(*n)++].value = value;
	return 0;
}

int rw_identity_add(const char *job, const char *instance, char *host, size_t hostlen,
		    struct rw_label *ext, size_t max, size_t *n, const char **key, const char **why)
{
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp(ext[i].name, "job") || !strcmp(ext[i].name, "instance")) {
			*key = "external_labels";
			*why = "job and instance have keys of their own (this section's job, "
			       "instance)";
			return -EINVAL;
		}
	}
	if (!*instance) {
		/* gethostname() may truncate without a NUL (POSIX): force one. */
		if (gethostname(host, hostlen - 1) || !*host) {
			*key = "instance";
			*why = "the host name is unknown (gethostname): set instance";
			return -EINVAL;
		}
		host[hostlen - 1] = '\0';
		instance = host;
	}
	*key = "external_labels";
	*why = "too many labels with job and instance";
	if (*job && rw_identity_push(ext, max, n, "job", job))
		return -EINVAL;
	return rw_identity_push(ext, max, n, "instance", instance);
}
