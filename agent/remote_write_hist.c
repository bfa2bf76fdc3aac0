// SPDX-License-Identifier: MIT
/*
 * A histogram's classic buckets from the metric history on the wire: the
 * blob on its _count sample (agent/hist_blob.h) becomes one sample of
 * NAME_bucket{...,le="<bound>"} per bucket, cumulative as in an exposition,
 * so histogram_quantile() works on any receiver.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/hist_blob.h"
#include "agent/remote_write.h"

/* A bucket series' id in a batch: apart from every history series id
 * (positive, from SQLite) and from the other buckets of its histogram. */
static int64_t rw_bucket_id(int64_t series_id, size_t i)
{
	return -(series_id * HIST_BLOB_MAX_BUCKETS + (int64_t)i) - 1;
}

int rw_batch_add_buckets(struct rw_batch *b, int64_t series_id, const char *count_name,
			 const char *labels, int64_t ts_ms, const void *blob, size_t len)
{
	struct hist_blob_bucket bk[HIST_BLOB_MAX_BUCKETS];
	size_t n, nlen = strlen(count_name), llen = strlen(labels);
	char name[256], lbl[1024];
	int err;

	if (nlen < 6 || strcmp(count_name + nlen - 6, "_count") || nlen - 6 + 8 > sizeof(name) ||
	    hist_blob_decode(blob, len, bk, HIST_BLOB_MAX_BUCKETS, &n)) {
		b->invalid++;
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s_bucket", (int)(nlen - 6), count_name);
	/* `{a="b"}` -> `{a="b",le="x"}`; "" -> `{le="x"}`. */
	if (llen && (llen < 2 || labels[llen - 1] != '}')) {
		b->invalid++;
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		int w = llen > 2 ? snprintf(lbl, sizeof(lbl), "%.*s,le=\"%s\"}", (int)(llen - 1),
					    labels, bk[i].le)
				 : snprintf(lbl, sizeof(lbl), "{le=\"%s\"}", bk[i].le);

		if (w < 0 || (size_t)w >= sizeof(lbl)) {
			b->invalid++;
			return -EINVAL;
		}
		err = rw_batch_add(b, rw_bucket_id(series_id, i), name, lbl, ts_ms,
				   (double)bk[i].cumulative);
		if (err)
			return err;
	}
	return 0;
}
