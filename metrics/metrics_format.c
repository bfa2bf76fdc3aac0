/* SPDX-License-Identifier: MIT */
/*
 * Names and values as the exposition formats spell them: metric and label
 * name validity, escaping, and integers and floats formatted without
 * printf. Used by the registry, the series table and the text encoder;
 * calls no other file of the registry.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"

static bool name_valid(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (p != s && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

bool metrics_name_valid(const char *name)
{
	return name_valid(name, true);
}

bool metrics_label_name_valid(const char *name)
{
	/* Names starting with "__" are reserved for Prometheus itself. */
	return name_valid(name, false) && strncmp(name, "__", 2) != 0;
}

/* Exposition escaping: backslash and line feed, and the double quote when
 * `quote` (label values always; HELP text in OpenMetrics only). */
void metrics_buf_escaped(struct buf *b, const char *s, bool quote)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = NULL;

		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '\n')
			esc = "\\n";
		else if (quote && *s == '"')
			esc = "\\\"";
		if (!esc)
			continue;
		buf_append(b, run, (size_t)(s - run));
		buf_append(b, esc, 2);
		run = s + 1;
	}
	buf_append(b, run, (size_t)(s - run));
}

size_t metrics_fmt_u64(uint64_t v, char *out)
{
	char tmp[24];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}

/*
 * Formats a sample value the way Prometheus parses it: "+Inf", "-Inf", "NaN",
 * integers (exactly representable, |v| <= 2^53) as plain digits without an
 * exponent, anything else with the fewest significant digits that read back
 * to the same double. buf holds at least METRICS_VALUE_MAX bytes.
 */
size_t metrics_format_value(double v, char *buf)
{
	if (isnan(v))
		return (size_t)stpcpy(buf, "NaN") - (size_t)buf;
	if (isinf(v))
		return (size_t)stpcpy(buf, v > 0 ? "+Inf" : "-Inf") - (size_t)buf;
	if (fabs(v) <= 9007199254740992.0 && v == trunc(v)) {
		if (v < 0) {
			buf[0] = '-';
			return 1 + metrics_fmt_u64((uint64_t)-v, buf + 1);
		}
		return metrics_fmt_u64((uint64_t)v, buf);
	}
	for (int prec = 15; prec <= 17; prec++) {
		int n = snprintf(buf, METRICS_VALUE_MAX, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			return (size_t)n;
	}
	return 0; /* not reached */
}
