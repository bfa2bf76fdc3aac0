// SPDX-License-Identifier: MIT
/*
 * POST /api/v1/ifs/scans body checks (see ifs_request.h). The agent's
 * decoder has already read the JSON or protobuf into the message; this file
 * checks what the types cannot say.
 */
#include <errno.h>
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

static int tests_parse(const Sysobs__V1__IfsScanRequest *m, unsigned *mask, char *err,
		       size_t errlen)
{
	for (size_t i = 0; i < m->n_tests; i++) {
		const char *v = m->tests[i] ? m->tests[i] : "";
		int t;

		for (t = 0; t < IFS_TEST_MAX; t++)
			if (!strcmp(v, ifs_test_name(t)))
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

/* Entry i of "cpus" or "cores" into t. */
static int target_parse(const Sysobs__V1__IfsScanRequest *m, bool by_cpu, size_t i,
			struct ifs_scan_target *t, char *err, size_t errlen)
{
	const Sysobs__V1__IfsCoreRef *ref;

	t->package = -1;
	if (by_cpu) {
		if (m->cpus[i] < 0)
			return reject(err, errlen, "cpus[%zu]: must be 0..%d", i, INT_MAX);
		t->id = m->cpus[i];
		return 0;
	}
	ref = m->cores[i];
	if (!ref)
		return reject(err, errlen, "cores[%zu]: expected {\"package\":P,\"core\":C}", i);
	if (ref->core > INT_MAX ||
	    (ref->_package_case == SYSOBS__V1__IFS_CORE_REF___PACKAGE_PACKAGE &&
	     ref->package > INT_MAX))
		return reject(err, errlen, "cores[%zu]: package and core must be 0..%d", i,
			      INT_MAX);
	t->id = (int)ref->core;
	if (ref->_package_case == SYSOBS__V1__IFS_CORE_REF___PACKAGE_PACKAGE)
		t->package = (int)ref->package;
	return 0;
}

int ifs_scan_request_parse(const Sysobs__V1__IfsScanRequest *m, struct ifs_scan_request *out,
			   char *err, size_t errlen)
{
	const char *list;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	if (errlen)
		err[0] = '\0';
	if (!m || !m->n_cpus == !m->n_cores)
		return reject(err, errlen,
			      "give exactly one non-empty array: \"cpus\" (CPU numbers) or "
			      "\"cores\" ({\"package\":P,\"core\":C} or {\"core\":C}); optional "
			      "\"tests\": [\"scan\",\"array\",\"sbaf\"]");
	if ((rc = tests_parse(m, &out->tests, err, errlen)))
		return rc;
	out->by_cpu = m->n_cpus != 0;
	list = out->by_cpu ? "cpus" : "cores";
	n = out->by_cpu ? m->n_cpus : m->n_cores;
	if (n > IFS_REQUEST_MAX)
		return reject(err, errlen, "at most %d entries in \"%s\"", IFS_REQUEST_MAX, list);
	for (size_t i = 0; i < n; i++) {
		struct ifs_scan_target *t = &out->targets[i];

		if ((rc = target_parse(m, out->by_cpu, i, t, err, errlen)))
			return rc;
		for (size_t k = 0; k < i; k++)
			if (out->targets[k].package == t->package && out->targets[k].id == t->id)
				return reject(err, errlen, "%s[%zu]: listed twice (as [%zu])", list,
					      i, k);
		out->n = i + 1;
	}
	return 0;
}
