// SPDX-License-Identifier: MIT
/*
 * The generic history route binds every column of every real table to the
 * field of the same name in its protobuf message: a column the .proto lacks,
 * a type that does not fit, or a nullable column whose field cannot be
 * absent would fail the agent at start; here it fails the build's tests.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/history.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/collector.h"

static void every_registered_table_matches_its_message(void **state)
{
	size_t n = 0;
	char err[256];

	for (size_t i = 0; collector_registry[i]; i++) {
		for (const struct event_table *const *t = collector_registry[i]->tables; t && *t;
		     t++, n++) {
			int rc = history_check_table(*t, err, sizeof(err));

			if (rc)
				fail_msg("%s: %s", (*t)->name, err);
			assert_non_null((*t)->route);
			assert_int_equal(strncmp((*t)->route, "/api/v1/", 8), 0);
		}
	}
	assert_true(n >= 4); /* self, mptcp, ifs, cachefiles (+ drops with BPF) */
}

struct two {
	int64_t a;
	char b[8];
};

static const struct event_column cols_ok[] = {
    {.name = "threads", .type = COL_INT, .offset = 0, .size = 8},
    {0},
};

/* history_check_table() of a SelfSample table with cols and list: its
 * return value, its message in err. */
static int check(const struct event_column *cols, const ProtobufCMessageDescriptor *list, char *err,
		 size_t len)
{
	const struct event_table t = {
	    .name = "t",
	    .collector = "x",
	    .route = "/api/v1/x",
	    .cols = cols,
	    .row_size = sizeof(struct two),
	    .message = &sysobs__v1__self_sample__descriptor,
	    .list_message = list,
	};

	return history_check_table(&t, err, len);
}

static void a_column_without_a_field_is_refused(void **state)
{
	static const struct event_column cols[] = {
	    {.name = "threads", .type = COL_INT, .offset = 0, .size = 8},
	    {.name = "no_such_field", .type = COL_INT, .offset = 0, .size = 8},
	    {0},
	};
	char err[256];

	assert_int_equal(check(cols, &sysobs__v1__self_sample_list__descriptor, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "no_such_field"));
}

static void a_text_column_on_a_number_field_is_refused(void **state)
{
	/* SelfSample.rss_bytes is int64: a TEXT column named so must not bind. */
	static const struct event_column cols[] = {
	    {.name = "rss_bytes", .type = COL_TEXT, .offset = 8, .size = 8},
	    {0},
	};
	char err[256];

	assert_int_equal(check(cols, &sysobs__v1__self_sample_list__descriptor, err, sizeof(err)),
			 -EINVAL);
}

static void a_nullable_column_needs_an_optional_field(void **state)
{
	/* SelfSample.threads is a plain int64: it cannot say "absent". */
	static const struct event_column cols[] = {
	    {.name = "threads", .type = COL_INT, .offset = 0, .size = 8, .null = COL_NULL_NEG},
	    {0},
	};
	char err[256];

	assert_int_equal(check(cols, &sysobs__v1__self_sample_list__descriptor, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "optional"));
}

static void a_wrong_list_envelope_is_refused(void **state)
{
	char err[256];

	/* the right envelope passes: the refusal below is the envelope's */
	assert_int_equal(
	    check(cols_ok, &sysobs__v1__self_sample_list__descriptor, err, sizeof(err)), 0);
	assert_int_equal(
	    check(cols_ok, &sysobs__v1__drop_sample_list__descriptor, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_registered_table_matches_its_message),
	    cmocka_unit_test(a_column_without_a_field_is_refused),
	    cmocka_unit_test(a_text_column_on_a_number_field_is_refused),
	    cmocka_unit_test(a_nullable_column_needs_an_optional_field),
	    cmocka_unit_test(a_wrong_list_envelope_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
