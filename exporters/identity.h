/* SPDX-License-Identifier: MIT */
/* The host's identity on exported rows (exporters/identity.c). */
#ifndef SYSOBS_EXPORT_IDENTITY_H
#define SYSOBS_EXPORT_IDENTITY_H

#include "agent/config.h"
#include "exporters/export_row.h"

struct export_identity_buf {
	struct export_identity id; /* strings in ext_text, host or cfg */
	char ext_text[1024];
	char host[256];
};

/* 0, or -EINVAL when [remote_write]'s identity keys do not parse (which
 * remote_write_check() reports). The strings live in out and cfg. */
int export_identity_resolve(struct config *cfg, struct export_identity_buf *out);

#endif
