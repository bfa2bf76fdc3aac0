/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of ?cursor= and ?limit= (api/query.c): any string is a valid
 * cursor or refused; a cursor read is a row id >= 1 and its next_cursor text
 * ("%" PRId64, api/history.c) reads back to the same id; a limit is in
 * [1, max].
 */
#include <inttypes.h>

#include "api/query.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[32];
	int64_t id, id2;
	unsigned limit;
	char *s;

	if (size > 4096)
		return 0;
	s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	if (query_parse_cursor(s, &id) == 0) {
		FUZZ_CHECK(id >= 1, "cursor \"%s\" -> %" PRId64, s, id);
		snprintf(buf, sizeof(buf), "%" PRId64, id);
		FUZZ_CHECK(query_parse_cursor(buf, &id2) == 0 && id2 == id,
			   "cursor %" PRId64 " does not read back", id);
	}
	if (query_parse_limit(s, QUERY_LIMIT_MAX, &limit) == 0)
		FUZZ_CHECK(limit >= 1 && limit <= QUERY_LIMIT_MAX, "limit \"%s\" -> %u", s, limit);
	free(s);
	return 0;
}
