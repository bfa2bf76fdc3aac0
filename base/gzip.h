/* SPDX-License-Identifier: MIT */
/*
 * gzip of a whole body in one call (zlib's deflate with the gzip wrapper,
 * RFC 1952), for Content-Encoding: gzip both ways out of the agent: the
 * HTTP server's answers (api/http_gzip.c, level 1) and the exporters'
 * request bodies (exporters/sender.c, level 6).
 */
#ifndef SYSOBS_BASE_GZIP_H
#define SYSOBS_BASE_GZIP_H

#include <stddef.h>

#include "base/buf.h"

/* Replaces out's contents with the gzip of in[0..len) at zlib level
 * (1 fastest .. 9 smallest). 0, or -ENOMEM (out's length is then 0). */
int gzip_compress(const void *in, size_t len, int level, struct buf *out);

#endif
