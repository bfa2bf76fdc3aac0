// SPDX-License-Identifier: MIT
/*
 * The pure parts of export health (issue 32): GET /readyz's verdict on one
 * destination (export_problem(), api/routes.c) and the native histogram
 * read-back check's URL, selector and answer (exporters/remote_write_probe.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/routes.h"
#include "exporters/remote_write.h"
#include "exporters/remote_write_probe.h"

static Google__Protobuf__Timestamp ts_ok = GOOGLE__PROTOBUF__TIMESTAMP__INIT,
				   ts_loss = GOOGLE__PROTOBUF__TIMESTAMP__INIT;

static Sysobs__V1__ExportDestination dest(uint64_t pending, double lag)
{
	Sysobs__V1__ExportDestination d = SYSOBS__V1__EXPORT_DESTINATION__INIT;

	d.name = "x";
	d.pending_rows = pending;
	d.lag_seconds = lag;
	d.last_error = "";
	return d;
}

static void test_stuck_only_with_rows_pending_past_the_threshold(void **state)
{
	Sysobs__V1__ExportDestination d = dest(0, 0);
	char why[256];

	(void)state;
	assert_false(export_problem(&d, 1000, 300, why, sizeof(why)));
	d = dest(10, 299); /* a backlog younger than the threshold: fine */
	assert_false(export_problem(&d, 1000, 300, why, sizeof(why)));
	d = dest(0, 900); /* no rows pending: nothing is stuck */
	assert_false(export_problem(&d, 1000, 300, why, sizeof(why)));
	d = dest(1912, 312);
	d.last_error = "answered 503: down";
	ts_ok.seconds = 685;
	d.last_success = &ts_ok;
	assert_true(export_problem(&d, 1000, 300, why, sizeof(why)));
	assert_string_equal(why, "stuck: 1912 rows pending, the oldest 312 s old; last success "
				 "315 s ago; answered 503: down");
	d.last_success = NULL;
	d.last_error = "";
	assert_true(export_problem(&d, 1000, 300, why, sizeof(why)));
	assert_string_equal(why, "stuck: 1912 rows pending, the oldest 312 s old; last success "
				 "none since the start");
	d = dest(2, 400); /* the Alertmanager push holds alerts */
	d.format = "alertmanager";
	assert_true(export_problem(&d, 1000, 300, why, sizeof(why)));
	assert_string_equal(why, "stuck: 2 alerts pending, the oldest 400 s old; last success "
				 "none since the start");
}

static void test_losing_rows_for_the_threshold_after_a_loss(void **state)
{
	Sysobs__V1__ExportDestination d = dest(0, 0);
	char why[256];

	(void)state;
	d.rows_lost = 40;
	d.last_error = "refused with 400: bad";
	ts_loss.seconds = 988;
	d.last_loss = &ts_loss;
	assert_true(export_problem(&d, 1000, 300, why, sizeof(why)));
	assert_string_equal(why, "losing rows: 40 lost since the start, the last 12 s ago; "
				 "refused with 400: bad");
	/* the loss older than the threshold: ready again */
	assert_false(export_problem(&d, 1300, 300, why, sizeof(why)));
}

static void test_probe_base_from_the_write_url(void **state)
{
	char *b;

	(void)state;
	b = rw_probe_base("http://vm:8428/api/v1/write", "");
	assert_string_equal(b, "http://vm:8428");
	free(b);
	b = rw_probe_base("https://u:p@prom/x/api/v1/write", NULL);
	assert_string_equal(b, "https://u:p@prom/x");
	free(b);
	b = rw_probe_base("http://mimir/api/v1/push", "http://q:8481/select/0/prometheus/");
	assert_string_equal(b, "http://q:8481/select/0/prometheus");
	free(b);
	errno = 0;
	assert_null(rw_probe_base("http://mimir/api/v1/push", ""));
	assert_int_equal(errno, ENOENT);
	assert_null(rw_probe_base("/api/v1/write", ""));
}

static void test_probe_selector_escapes_values(void **state)
{
	const struct rw_label l[] = {{"job", "sysobs"}, {"instance", "a\"b\\c\nd"}};
	char out[128], small[16];

	(void)state;
	assert_int_equal(rw_probe_selector(out, sizeof(out), "h", l, 2), 0);
	assert_string_equal(out, "h{job=\"sysobs\",instance=\"a\\\"b\\\\c\\nd\"}");
	assert_int_equal(rw_probe_selector(out, sizeof(out), "h", l, 0), 0);
	assert_string_equal(out, "h{}");
	assert_int_equal(rw_probe_selector(small, sizeof(small), "h", l, 2), -ENOSPC);
}

static void test_probe_answer_needs_the_control_series(void **state)
{
	static const char both[] =
	    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
	    "{\"metric\":{\"__name__\":\"sysobs_build_info\"},\"value\":[1,\"1\"]},"
	    "{\"metric\":{\"__name__\":\"h\"},\"value\":[1,\"1\"]}]}}";
	static const char control[] =
	    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
	    "{\"metric\":{\"__name__\":\"sysobs_build_info\"},\"value\":[1,\"1\"]}]}}";
	static const char none[] =
	    "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
	static const char err[] = "{\"status\":\"error\",\"error\":\"bad query\"}";

	(void)state;
	assert_int_equal(rw_probe_answer(both, strlen(both), "h"), 1);
	assert_int_equal(rw_probe_answer(control, strlen(control), "h"), 0);
	assert_int_equal(rw_probe_answer(none, strlen(none), "h"), -EAGAIN);
	assert_int_equal(rw_probe_answer(err, strlen(err), "h"), -EINVAL);
	assert_int_equal(rw_probe_answer(both, 40, "h"), -EINVAL); /* cut short */
	assert_int_equal(rw_probe_answer("", 0, "h"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stuck_only_with_rows_pending_past_the_threshold),
	    cmocka_unit_test(test_losing_rows_for_the_threshold_after_a_loss),
	    cmocka_unit_test(test_probe_base_from_the_write_url),
	    cmocka_unit_test(test_probe_selector_escapes_values),
	    cmocka_unit_test(test_probe_answer_needs_the_control_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
