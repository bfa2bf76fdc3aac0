// SPDX-License-Identifier: MIT
/*
 * POST /api/v1/ifs/scans body parsing (see ifs_request.h). jansson reads the
 * JSON; this file only checks its shape.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "collectors/ifs/ifs_decode.h"
#include "collectors/ifs/ifs_request.h"

static int reject(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int reject(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A non-negative int from v: 0, -EINVAL (not an integer), -ERANGE. */
static int entry_int(const json_t *v, int *out)
{
	json_int_t i;

	if (!json_is_integer(v))
		return -EINVAL;
	i = json_integer_value(v);
	if (i < 0 || i > INT_MAX)
		return -ERANGE;
	*out = (int)i;
	return 0;
}

/* One entry of "cpus" or "cores" into t. */
static int target_parse(const json_t *v, bool by_cpu, size_t i, struct ifs_scan_target *t,
			char *err, size_t errlen)
{
	const char *list = by_cpu ? "cpus" : "cores";
	int rc;

	t->package = -1;
	if (json_is_object(v) && !by_cpu) {
		const json_t *pk = json_object_get(v, "package"), *co = json_object_get(v, "core");

		if (!json_is_integer(pk) || !json_is_integer(co))
			return reject(
			    err, errlen,
			    "cores[%zu]: expected {\"package\":P,\"core\":C} with integers", i);
		if (entry_int(pk, &t->package) || entry_int(co, &t->id))
			return reject(err, errlen, "cores[%zu]: package and core must be 0..%d", i,
				      INT_MAX);
		return 0;
	}
	rc = entry_int(v, &t->id);
	if (rc == -EINVAL)
		return reject(err, errlen, "%s[%zu]: expected %s", list, i,
			      by_cpu ? "a CPU number" : "a core id or {\"package\":P,\"core\":C}");
	if (rc)
		return reject(err, errlen, "%s[%zu]: must be 0..%d", list, i, INT_MAX);
	return 0;
}

static int tests_parse(const json_t *tests, unsigned *mask, char *err, size_t errlen)
{
	const json_t *v;
	size_t i;

	json_array_foreach(tests, i, v)
	{
		int t;

		for (t = 0; t < IFS_TEST_MAX; t++)
			if (json_is_string(v) && !strcmp(json_string_value(v), ifs_test_name(t)))
				break;
		if (t == IFS_TEST_MAX)
			return reject(err, errlen, "tests[%zu]: one of scan, array, sbaf", i);
		if (*mask & (1u << t))
			return reject(err, errlen, "tests[%zu]: \"%s\" listed twice", i,
				      ifs_test_name(t));
		*mask |= 1u << t;
	}
	return 0;
}

static int request_parse(const json_t *body, struct ifs_scan_request *out, char *err, size_t errlen)
{
	const json_t *cpus, *cores, *tests, *list, *v;
	const char *key;
	size_t i;
	int rc;

	json_object_foreach((json_t *)body, key, v)
	{
		if (strcmp(key, "cpus") && strcmp(key, "cores") && strcmp(key, "tests"))
			return reject(err, errlen,
				      "unknown field \"%s\" (known: cpus, cores, tests)", key);
	}
	cpus = json_object_get(body, "cpus");
	cores = json_object_get(body, "cores");
	tests = json_object_get(body, "tests");
	list = cpus ? cpus : cores;
	if (!!cpus == !!cores || !json_is_array(list) || json_array_size(list) == 0 ||
	    (tests && !json_is_array(tests)))
		return reject(err, errlen,
			      "give exactly one non-empty array: \"cpus\" (CPU numbers) or "
			      "\"cores\" ({\"package\":P,\"core\":C} or core ids); optional "
			      "\"tests\": [\"scan\",\"array\",\"sbaf\"]");
	if ((rc = tests_parse(tests, &out->tests, err, errlen)))
		return rc;
	out->by_cpu = cpus != NULL;
	if (json_array_size(list) > IFS_REQUEST_MAX)
		return reject(err, errlen, "at most %d entries in \"%s\"", IFS_REQUEST_MAX,
			      out->by_cpu ? "cpus" : "cores");
	json_array_foreach(list, i, v)
	{
		struct ifs_scan_target *t = &out->targets[i];

		if ((rc = target_parse(v, out->by_cpu, i, t, err, errlen)))
			return rc;
		for (size_t k = 0; k < i; k++)
			if (out->targets[k].package == t->package && out->targets[k].id == t->id)
				return reject(err, errlen, "%s[%zu]: listed twice (as [%zu])",
					      out->by_cpu ? "cpus" : "cores", i, k);
		out->n = i + 1;
	}
	return 0;
}

int ifs_scan_request_parse(const char *body, size_t len, struct ifs_scan_request *out, char *err,
			   size_t errlen)
{
	json_error_t jerr;
	json_t *j;
	int rc;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = '\0';
	j = body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!j && body && json_error_code(&jerr) == json_error_duplicate_key)
		return reject(err, errlen, "a field is given twice: %s", jerr.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return reject(err, errlen,
			      "expected a JSON object {\"cpus\":[...]} or {\"cores\":[...]}");
	}
	rc = request_parse(j, out, err, errlen);
	json_decref(j);
	return rc;
}
