/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <zlib.h>

#include "base/gzip.h"

int gzip_compress(const void *in, size_t len, int level, struct buf *out)
{
	z_stream z = {0};
	size_t bound;
	int rc;

	out->len = 0;
	/* windowBits 15 + 16: the gzip wrapper, as Content-Encoding: gzip says. */
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&z, (uLong)len);
	if (buf_reserve(out, bound)) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out->p;
	z.avail_out = (uInt)bound;
	rc = deflate(&z, Z_FINISH);
	out->len = rc == Z_STREAM_END ? z.total_out : 0;
	out->p[out->len] = '\0';
	deflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -ENOMEM;
}
