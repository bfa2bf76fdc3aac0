/* SPDX-License-Identifier: MIT */
/*
 * The host's identity on everything that leaves it (exporters/identity.c),
 * resolved once by the agent and handed to remote_write and the event
 * exporters, each taking its view.
 */
#ifndef SYSOBS_EXPORT_IDENTITY_H
#define SYSOBS_EXPORT_IDENTITY_H

#include "base/config.h"
#include "exporters/export_row.h"
#include "exporters/remote_write.h"

struct export_identity_buf {
	/* The event rows' view: job, instance, the other labels sorted. */
	struct export_identity id;
	/* remote_write's: external labels, then job (if any) and instance,
	 * added to every series; at most RW_MAX_LABELS - 1 (__name__). */
	struct rw_label labels[RW_MAX_LABELS];
	size_t n_labels;
	/* Of a failed resolution, for remote_write_check() to report: the
	 * [remote_write] key and why (NULL: a key's type error, which the
	 * section's parse reported). */
	const char *key, *why;
	/* The strings point here or into the config. */
	char ext_text[1024];
	char host[256];
};

/* host: the agent's name of the host, the default instance ("": this calls
 * gethostname()). 0, or -EINVAL when [remote_write]'s identity keys do not
 * parse (out->key and out->why say which and why; job and instance are
 * then ""). */
int export_identity_resolve(struct config *cfg, const char *host, struct export_identity_buf *out);
/* The same from the keys of section: [remote_write] or a
 * [remote_write.NAME], each destination's own identity. */
int export_identity_resolve_section(struct config *cfg, const char *section, const char *host,
				    struct export_identity_buf *out);

#endif
