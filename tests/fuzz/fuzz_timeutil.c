/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the time and duration grammar (base/timeutil.c), which
 * every ?start=, ?end=, ?step= and config duration goes through. Any string
 * parses or is refused; what parses formats, and the formatted text parses
 * back to the same value (the API prints what it reads).
 */
#include <errno.h>

#include "base/timeutil.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int64_t now = 1796205600LL * NSEC_PER_SEC + 123456789;
	char buf[TIME_RFC3339_SIZE], dbuf[DURATION_FMT_SIZE];
	int64_t t, t2, d, d2;
	char *s;
	int n;

	if (size > 4096)
		return 0;
	s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	if (time_parse(s, now, &t) == 0) {
		n = time_format_rfc3339(t, buf, sizeof(buf));
		FUZZ_CHECK(n > 0 || n == -ERANGE, "time_format_rfc3339(%lld) = %d", (long long)t,
			   n);
		if (n > 0) {
			FUZZ_CHECK(time_parse(buf, now, &t2) == 0 && t2 == t,
				   "\"%s\" -> %lld -> \"%s\" does not read back", s, (long long)t,
				   buf);
		}
	}
	if (duration_parse_ns(s, &d) == 0) {
		FUZZ_CHECK(d >= 0, "\"%s\": negative duration %lld", s, (long long)d);
		n = duration_format(d, dbuf, sizeof(dbuf));
		FUZZ_CHECK(n > 0, "duration_format(%lld) = %d", (long long)d, n);
		FUZZ_CHECK(duration_parse_ns(dbuf, &d2) == 0 && d2 == d,
			   "\"%s\" -> %lld -> \"%s\" does not read back", s, (long long)d, dbuf);
	}
	free(s);
	return 0;
}
