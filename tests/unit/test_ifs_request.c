// SPDX-License-Identifier: MIT
/* Unit tests of the POST /api/v1/ifs/scans body check: the bodies it takes
 * and every way it refuses one, each with a message naming the problem.
 * Bodies are written as the JSON a client sends and decoded by the agent's
 * decoder (pbjson) into the IfsScanRequest the route gets, so the tests also
 * pin what the decoder refuses before the check runs; a few messages are
 * built by hand, as a protobuf body would arrive. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/pbjson.h"
#include "collectors/ifs/ifs_request.h"

static struct ifs_scan_request rq; /* 8 KiB: not on the test's stack */
static char err[256];

/* The body decoded as the agent does; NULL if the decoder refuses it (its
 * message in err). */
static Sysobs__V1__IfsScanRequest *decode(const char *body)
{
	ProtobufCMessage *m = NULL;

	if (pbjson_decode(&sysobs__v1__ifs_scan_request__descriptor, body, strlen(body), &m, err,
			  sizeof(err)))
		return NULL;
	return (Sysobs__V1__IfsScanRequest *)m;
}

/* Decodes and checks body: 0, -EINVAL from the check, or -EPROTO when the
 * decoder already refused it. */
static int parse(const char *body)
{
	Sysobs__V1__IfsScanRequest *m = decode(body);
	int rc;

	if (!m)
		return -EPROTO;
	rc = ifs_scan_request_parse(m, &rq, err, sizeof(err));
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return rc;
}

/* body passes the decoder, is refused by the check, and the message
 * contains want. */
static void assert_refused(const char *body, const char *want)
{
	int rc = parse(body);

	if (rc == -EPROTO)
		fail_msg("%s: the decoder refused it first: %s", body, err);
	if (rc != -EINVAL)
		fail_msg("accepted: %s", body);
	if (!strstr(err, want))
		fail_msg("%s: message \"%s\" lacks \"%s\"", body, err, want);
}

/* body is refused by the decoder with a message containing want. */
static void assert_not_decoded(const char *body, const char *want)
{
	if (parse(body) != -EPROTO)
		fail_msg("decoded: %s", body);
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
	assert_int_equal(parse("{\"cores\": [{\"package\": 1, \"core\": 5}, {\"core\": 7}],"
			       " \"tests\": [\"sbaf\", \"scan\"]}"),
			 0);
	assert_false(rq.by_cpu);
	assert_int_equal(rq.n, 2);
	assert_int_equal(rq.targets[0].package, 1);
	assert_int_equal(rq.targets[0].id, 5);
	assert_int_equal(rq.targets[1].package, -1); /* no package: every package */
	assert_int_equal(rq.targets[1].id, 7);
	assert_int_equal(rq.tests, 1u << IFS_TEST_SCAN | 1u << IFS_TEST_SBAF);

	/* An empty or null tests list is the same as none. */
	assert_int_equal(parse("{\"cpus\":[1],\"tests\":[]}"), 0);
	assert_int_equal(rq.tests, 0);
	assert_int_equal(rq.n, 1);
	assert_int_equal(parse("{\"cpus\":[1],\"tests\":null}"), 0);
	assert_int_equal(rq.tests, 0);

	/* Package 0 is a package, not "every package". */
	assert_int_equal(parse("{\"cores\": [{\"package\": 0, \"core\": 2}]}"), 0);
	assert_int_equal(rq.targets[0].package, 0);

	/* The same core by id and by (package, core) is for the route to merge. */
	assert_int_equal(parse("{\"cores\": [{\"core\": 2}, {\"package\": 0, \"core\": 2}]}"), 0);
	assert_int_equal(rq.n, 2);
}

static void test_no_body(void **state)
{
	assert_int_equal(ifs_scan_request_parse(NULL, &rq, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "exactly one non-empty array"));
}

static void test_shape(void **state)
{
	assert_refused("{}", "exactly one non-empty array");
	assert_refused("{\"tests\": [\"scan\"]}", "exactly one non-empty array");
	assert_refused("{\"cpus\": [1], \"cores\": [{\"core\": 1}]}",
		       "exactly one non-empty array");
	assert_refused("{\"cpus\": []}", "exactly one non-empty array");
	assert_refused("{\"cores\": []}", "exactly one non-empty array");
	assert_refused("{\"cpus\": null}", "exactly one non-empty array");
	/* Both given, one empty: the other is the list. */
	assert_int_equal(parse("{\"cpus\": [4], \"cores\": []}"), 0);
	assert_true(rq.by_cpu);
}

/* What the decoder refuses before the check sees it: the route answers 400
 * with the decoder's message. */
static void test_refused_by_the_decoder(void **state)
{
	assert_not_decoded("[1, 2]", "object");
	assert_not_decoded("{\"cpus\": [1]", "");
	assert_not_decoded("{\"cpu\": [1]}", "unknown field \"cpu\"");
	assert_not_decoded("{\"cpus\": [1], \"priority\": 1}", "unknown field \"priority\"");
	assert_not_decoded("{\"cpus\": 1}", "cpus: expected an array");
	assert_not_decoded("{\"cpus\": [\"x\"]}", "cpus[0]: expected an integer");
	assert_not_decoded("{\"cpus\": [2.5]}", "cpus[0]: expected an integer");
	assert_not_decoded("{\"cpus\": [4294967296]}", "cpus[0]: 4294967296 out of range");
	assert_not_decoded("{\"cores\": [7]}", "cores[0]: expected an object");
	assert_not_decoded("{\"cores\": [{\"pkg\": 0, \"core\": 1}]}", "unknown field \"pkg\"");
	assert_not_decoded("{\"cores\": [{\"core\": -2}]}", "cores[0].core: -2 out of range");
	assert_not_decoded("{\"cpus\": [1], \"tests\": \"scan\"}", "tests: expected an array");
	assert_not_decoded("{\"cpus\": [1], \"cpus\": [2]}", "");
}

static void test_unknown_test(void **state)
{
	assert_refused("{\"cpus\": [1], \"tests\": [\"scan\", \"memtest\"]}",
		       "tests[1]: one of scan, array, sbaf");
	assert_refused("{\"cpus\": [1], \"tests\": [\"SCAN\"]}", "tests[0]: one of");
	assert_refused("{\"cpus\": [1], \"tests\": [\"\"]}", "tests[0]: one of");
}

static void test_duplicates(void **state)
{
	assert_refused("{\"cpus\": [4, 1, 4]}", "cpus[2]: listed twice (as [0])");
	assert_refused("{\"cores\": [{\"core\": 3}, {\"core\": 3}]}", "cores[1]: listed twice");
	assert_refused(
	    "{\"cores\": [{\"package\": 1, \"core\": 3}, {\"core\": 3, \"package\": 1}]}",
	    "cores[1]: listed twice");
	assert_refused("{\"cpus\": [1], \"tests\": [\"array\", \"array\"]}",
		       "tests[1]: \"array\" listed twice");
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
	Sysobs__V1__IfsScanRequest m = SYSOBS__V1__IFS_SCAN_REQUEST__INIT;
	Sysobs__V1__IfsCoreRef ref = SYSOBS__V1__IFS_CORE_REF__INIT;
	Sysobs__V1__IfsCoreRef *refs[] = {&ref};

	assert_refused("{\"cpus\": [-1]}", "cpus[0]: must be 0..");
	assert_refused("{\"cpus\": [0, -2147483648]}", "cpus[1]: must be 0..");
	/* uint32 in the message, int in the collector's topology. */
	assert_refused("{\"cores\": [{\"core\": 2147483648}]}",
		       "cores[0]: package and core must be 0..");
	assert_refused("{\"cores\": [{\"package\": 4294967295, \"core\": 2}]}",
		       "cores[0]: package and core must be 0..");
	assert_int_equal(parse("{\"cores\": [{\"package\": 2147483647, \"core\": 2147483647}]}"),
			 0);
	assert_int_equal(rq.targets[0].package, INT_MAX);

	/* A protobuf body: the same checks on a message built by hand. */
	ref.core = 9;
	m.n_cores = 1;
	m.cores = refs;
	assert_int_equal(ifs_scan_request_parse(&m, &rq, err, sizeof(err)), 0);
	assert_int_equal(rq.targets[0].package, -1);
	assert_int_equal(rq.targets[0].id, 9);
	ref._package_case = SYSOBS__V1__IFS_CORE_REF___PACKAGE_PACKAGE;
	ref.package = 3u << 30;
	assert_int_equal(ifs_scan_request_parse(&m, &rq, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cores[0]: package and core must be 0.."));
	refs[0] = NULL;
	assert_int_equal(ifs_scan_request_parse(&m, &rq, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cores[0]: expected"));
}

static void test_tiny_error_buffer(void **state)
{
	Sysobs__V1__IfsScanRequest m = SYSOBS__V1__IFS_SCAN_REQUEST__INIT;
	char small[8];

	assert_int_equal(ifs_scan_request_parse(&m, &rq, small, sizeof(small)), -EINVAL);
	assert_string_equal(small, "give ex");
	assert_int_equal(ifs_scan_request_parse(&m, &rq, NULL, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpus),
	    cmocka_unit_test(test_cores_and_tests),
	    cmocka_unit_test(test_no_body),
	    cmocka_unit_test(test_shape),
	    cmocka_unit_test(test_refused_by_the_decoder),
	    cmocka_unit_test(test_unknown_test),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_negative_and_range),
	    cmocka_unit_test(test_tiny_error_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
