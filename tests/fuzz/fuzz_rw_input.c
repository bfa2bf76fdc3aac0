// SPDX-License-Identifier: MIT
/*
 * Fuzz target of what the remote-write sender parses: the first byte picks
 * the parser, the rest is its input. 0: a Retry-After header value (from the
 * network); 1: a rendered label set read back from the database; 2: the
 * external_labels config value; 3: a label set through a whole batch and its
 * encoding; 4: a histogram bucket blob from the database (metrics/hist_blob.h),
 * decoded and through a batch; 5: the same blob with native buckets, decoded
 * and through a batch as a native histogram. Each must accept or reject without reading out of
 * bounds, and what it accepts must be well-formed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "metrics/hist_blob.h"
#include "exporters/remote_write.h"

/* Not assert(): the replay test is built with NDEBUG. */
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			abort();                                                                   \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rw_label l[RW_MAX_LABELS];
	struct arena a = {0};
	struct rw_batch b;
	const char *why;
	uint64_t ms;
	size_t n;
	char *s;

	if (!size)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 6) {
	case 0:
		sender_retry_after_parse(s, 1445412480, &ms);
		break;
	case 1:
		if (!rw_labels_parse(s, &a, l, RW_MAX_LABELS, &n)) {
			CHECK(n <= RW_MAX_LABELS);
			for (size_t i = 0; i < n; i++)
				CHECK(*l[i].name && *l[i].value);
		}
		break;
	case 2:
		if (!rw_external_labels_parse(s, l, RW_MAX_LABELS, &n, &why))
			for (size_t i = 0; i < n; i++)
				CHECK(*l[i].name && *l[i].value && strncmp(l[i].name, "__", 2));
		break;
	case 3:
		if (!rw_batch_init(&b, 4)) {
			rw_batch_add(&b, 1, "m", s, 1000, 1);
			rw_batch_add(&b, 1, "m", s, 999, 2);
			if (!rw_batch_encode(&b, NULL, 0, &n))
				CHECK(n == b.n_rows && (!n || b.body_len));
			rw_batch_free(&b);
		}
		break;
	case 4: {
		struct hist_blob_bucket bk[HIST_BLOB_MAX_BUCKETS];

		if (!hist_blob_decode(data + 1, size - 1, bk, HIST_BLOB_MAX_BUCKETS, &n)) {
			CHECK(n >= 1 && n <= HIST_BLOB_MAX_BUCKETS &&
			      !strcmp(bk[n - 1].le, "+Inf"));
			for (size_t i = 1; i < n; i++)
				CHECK(bk[i].cumulative >= bk[i - 1].cumulative);
		}
		if (!rw_batch_init(&b, 4 + HIST_BLOB_MAX_BUCKETS)) {
			rw_batch_add_buckets(&b, 1, "m_count", "{a=\"b\"}", 1000, data + 1,
					     size - 1);
			if (!rw_batch_encode(&b, NULL, 0, &n))
				CHECK(n == b.n_rows);
			rw_batch_free(&b);
		}
		break;
	}
	case 5: {
		static uint64_t counts[2 * HIST_BLOB_NATIVE_MAX];
		struct hist_blob_native h;

		if (!hist_blob_decode_native(data + 1, size - 1, &h, counts,
					     2 * HIST_BLOB_NATIVE_MAX))
			CHECK(h.schema >= NHIST_SCHEMA_MIN && h.schema <= NHIST_SCHEMA_MAX &&
			      h.pos.len + h.neg.len <= 2 * HIST_BLOB_NATIVE_MAX);
		if (!rw_batch_init(&b, 4)) {
			rw_batch_add_native(&b, 1, "m_count", "{a=\"b\"}", 1000, data + 1,
					    size - 1);
			if (!rw_batch_encode(&b, NULL, 0, &n))
				CHECK(n == b.n_rows);
			rw_batch_free(&b);
		}
		break;
	}
	}
	arena_free(&a);
	free(s);
	return 0;
}
