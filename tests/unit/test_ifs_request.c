// SPDX-License-Identifier: MIT
/* Unit tests of the POST /api/v1/ifs/scans body parser: the bodies it takes
 * and every way it refuses one, each with a message naming the problem. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/ifs/ifs_request.h"

static struct ifs_scan_request rq; /* 8 KiB: not on the test's stack */
static char err[256];

static int parse(const char *body)
{
	return ifs_scan_request_parse(body, body ? strlen(body) : 0, &rq, err, sizeof(err));
}

/* body is refused and the message contains want. */
static void assert_refused(const char *body, const char *want)
{
	if (parse(body) != -EINVAL)
		fail_msg("accepted: %s", body);
	if (!strstr(err, want))
		fail_msg("%s: message \"%s\" lacks \"%s\"", body, err, want);
}

static void test_cpus(void **state)
{
	assert_int_equal(parse("{\"cpus\": [3, 17, 0]}"), 0);
	assert_true(rq.by_cpu);
	assert_int_equal(rq.tests, 0); /* not given: the route picks every runnable test */
	assert_int_equal(rq.n, 3);
	assert_int_equal(rq.targets[0].id, 3);
	assert_int_equal(rq.targets[1].id, 17);
	assert_int_equal(rq.targets[2].id, 0);
	assert_int_equal(rq.targets[0].package, -1);
	assert_string_equal(err, "");
}

static void test_cores_and_tests(void **state)
{
	assert_int_equal(parse("{\"cores\": [{\"package\": 1, \"core\": 5}, 7],"
			       " \"tests\": [\"sbaf\", \"scan\"]}"),
			 0);
	assert_false(rq.by_cpu);
	assert_int_equal(rq.n, 2);
	assert_int_equal(rq.targets[0].package, 1);
	assert_int_equal(rq.targets[0].id, 5);
	assert_int_equal(rq.targets[1].package, -1); /* bare id: every package */
	assert_int_equal(rq.targets[1].id, 7);
	assert_int_equal(rq.tests, 1u << IFS_TEST_SCAN | 1u << IFS_TEST_SBAF);

	/* An empty tests list is the same as none; the body need not end in NUL. */
	assert_int_equal(
	    ifs_scan_request_parse("{\"cpus\":[1],\"tests\":[]}xyz", 23, &rq, err, sizeof(err)), 0);
	assert_int_equal(rq.tests, 0);
	assert_int_equal(rq.n, 1);

	/* The same core by id and by (package, core) is for the route to merge. */
	assert_int_equal(parse("{\"cores\": [2, {\"package\": 0, \"core\": 2}]}"), 0);
	assert_int_equal(rq.n, 2);
}

static void test_not_an_object(void **state)
{
	assert_refused(NULL, "expected a JSON object");
	assert_refused("", "expected a JSON object");
	assert_refused("[1, 2]", "expected a JSON object");
	assert_refused("\"cpus\"", "expected a JSON object");
	assert_refused("{\"cpus\": [1]", "expected a JSON object");
	assert_refused("{\"cpus\": [1]} {}", "expected a JSON object");
}

static void test_shape(void **state)
{
	assert_refused("{\"cpu\": [1]}", "unknown field \"cpu\"");
	assert_refused("{\"cpus\": [1], \"priority\": 1}", "unknown field \"priority\"");
	assert_refused("{}", "exactly one non-empty array");
	assert_refused("{\"tests\": [\"scan\"]}", "exactly one non-empty array");
	assert_refused("{\"cpus\": [1], \"cores\": [1]}", "exactly one non-empty array");
	assert_refused("{\"cpus\": []}", "exactly one non-empty array");
	assert_refused("{\"cores\": []}", "exactly one non-empty array");
	assert_refused("{\"cpus\": 1}", "exactly one non-empty array");
	assert_refused("{\"cores\": {\"package\": 0, \"core\": 1}}", "exactly one non-empty array");
	assert_refused("{\"cpus\": null}", "exactly one non-empty array");
	assert_refused("{\"cpus\": [1], \"tests\": \"scan\"}", "exactly one non-empty array");
}

static void test_wrong_types(void **state)
{
	assert_refused("{\"cpus\": [\"1\"]}", "cpus[0]: expected a CPU number");
	assert_refused("{\"cpus\": [1, 2.5]}", "cpus[1]: expected a CPU number");
	assert_refused("{\"cpus\": [null]}", "cpus[0]: expected a CPU number");
	assert_refused("{\"cpus\": [{\"package\": 0, \"core\": 1}]}",
		       "cpus[0]: expected a CPU number");
	assert_refused("{\"cores\": [true]}", "cores[0]: expected a core id");
	assert_refused("{\"cores\": [[0, 1]]}", "cores[0]: expected a core id");
	assert_refused("{\"cores\": [{\"core\": 1}]}", "cores[0]: expected {\"package\"");
	assert_refused("{\"cores\": [{\"package\": 0}]}", "cores[0]: expected {\"package\"");
	assert_refused("{\"cores\": [{\"package\": \"0\", \"core\": 1}]}",
		       "cores[0]: expected {\"package\"");
}

static void test_unknown_test(void **state)
{
	assert_refused("{\"cpus\": [1], \"tests\": [\"scan\", \"memtest\"]}",
		       "tests[1]: one of scan, array, sbaf");
	assert_refused("{\"cpus\": [1], \"tests\": [\"SCAN\"]}", "tests[0]: one of");
	assert_refused("{\"cpus\": [1], \"tests\": [0]}", "tests[0]: one of");
	assert_refused("{\"cpus\": [1], \"tests\": [\"\"]}", "tests[0]: one of");
}

static void test_duplicates(void **state)
{
	assert_refused("{\"cpus\": [4, 1, 4]}", "cpus[2]: listed twice (as [0])");
	assert_refused("{\"cores\": [3, 3]}", "cores[1]: listed twice");
	assert_refused(
	    "{\"cores\": [{\"package\": 1, \"core\": 3}, {\"core\": 3, \"package\": 1}]}",
	    "cores[1]: listed twice");
	assert_refused("{\"cpus\": [1], \"tests\": [\"array\", \"array\"]}",
		       "tests[1]: \"array\" listed twice");
	assert_refused("{\"cpus\": [1], \"cpus\": [2]}", "given twice");
	assert_refused("{\"cores\": [{\"package\": 0, \"package\": 1, \"core\": 2}]}",
		       "given twice");
}

static void test_too_many(void **state)
{
	char *body = malloc(16 + (IFS_REQUEST_MAX + 1) * 8);
	size_t off;

	assert_non_null(body);
	off = (size_t)sprintf(body, "{\"cpus\":[");
	for (int i = 0; i < IFS_REQUEST_MAX; i++)
		off += (size_t)sprintf(body + off, "%s%d", i ? "," : "", i);
	sprintf(body + off, "]}");
	assert_int_equal(parse(body), 0);
	assert_int_equal(rq.n, IFS_REQUEST_MAX);
	assert_int_equal(rq.targets[IFS_REQUEST_MAX - 1].id, IFS_REQUEST_MAX - 1);

	sprintf(body + off, ",%d]}", IFS_REQUEST_MAX);
	assert_refused(body, "at most 1024 entries in \"cpus\"");
	free(body);
}

static void test_negative_and_range(void **state)
{
	assert_refused("{\"cpus\": [-1]}", "cpus[0]: must be 0..");
	assert_refused("{\"cpus\": [0, 4294967296]}", "cpus[1]: must be 0..");
	assert_refused("{\"cores\": [-3]}", "cores[0]: must be 0..");
	assert_refused("{\"cores\": [{\"package\": -1, \"core\": 2}]}",
		       "cores[0]: package and core must be 0..");
	assert_refused("{\"cores\": [{\"package\": 0, \"core\": -2}]}",
		       "cores[0]: package and core must be 0..");
}

static void test_tiny_error_buffer(void **state)
{
	char small[8];

	assert_int_equal(ifs_scan_request_parse("[]", 2, &rq, small, sizeof(small)), -EINVAL);
	assert_string_equal(small, "expecte");
	assert_int_equal(ifs_scan_request_parse("[]", 2, &rq, NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpus),
	    cmocka_unit_test(test_cores_and_tests),
	    cmocka_unit_test(test_not_an_object),
	    cmocka_unit_test(test_shape),
	    cmocka_unit_test(test_wrong_types),
	    cmocka_unit_test(test_unknown_test),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_negative_and_range),
	    cmocka_unit_test(test_tiny_error_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
