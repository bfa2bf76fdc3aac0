/* SPDX-License-Identifier: MIT */
/*
 * agent/log: log_format_line() in each [agent] log_format, with and without
 * journal mode; quoting of hostile messages (quotes, backslashes, control
 * characters) stays parseable; a cut line still closes its JSON object;
 * the level and format names in their enums' order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/log.h"

/* 2026-12-02T10:00:00.123Z */
#define T0 (1796205600LL * 1000000000LL + 123456789LL)

static void text_and_journal(void **state)
{
	char buf[256];

	log_format_line(buf, sizeof(buf), LOG_FMT_TEXT, false, T0, LOG_LVL_INFO, "http",
			"listening on 127.0.0.1:9559");
	assert_string_equal(buf,
			    "2026-12-02T10:00:00.123Z info  http: listening on 127.0.0.1:9559");
	log_format_line(buf, sizeof(buf), LOG_FMT_TEXT, true, T0, LOG_LVL_WARN, "drops", "x");
	assert_string_equal(buf, "<4>drops: x");
	log_format_line(buf, sizeof(buf), LOG_FMT_TEXT, true, T0, LOG_LVL_ERR, NULL, "y");
	assert_string_equal(buf, "<3>agent: y");
	log_format_line(buf, sizeof(buf), LOG_FMT_TEXT, true, T0, LOG_LVL_DEBUG, "a", "z");
	assert_string_equal(buf, "<7>a: z");
}

static void logfmt(void **state)
{
	char buf[256];

	log_format_line(buf, sizeof(buf), LOG_FMT_LOGFMT, false, T0, LOG_LVL_INFO, "store",
			"path \"a\\b\"\nnext");
	assert_string_equal(buf, "ts=2026-12-02T10:00:00.123Z level=info component=store "
				 "msg=\"path \\\"a\\\\b\\\"\\nnext\"");
	log_format_line(buf, sizeof(buf), LOG_FMT_LOGFMT, true, T0, LOG_LVL_WARN, "store", "m");
	assert_string_equal(buf, "<4>level=warn component=store msg=\"m\"");
}

static void json(void **state)
{
	char buf[256];

	log_format_line(buf, sizeof(buf), LOG_FMT_JSON, false, T0, LOG_LVL_ERR, "ifs",
			"bad \x01\t\"q\"");
	assert_string_equal(buf, "{\"ts\":\"2026-12-02T10:00:00.123Z\",\"level\":\"error\","
				 "\"component\":\"ifs\",\"msg\":\"bad \\u0001\\t\\\"q\\\"\"}");
	log_format_line(buf, sizeof(buf), LOG_FMT_JSON, true, T0, LOG_LVL_INFO, "ifs", "m");
	assert_string_equal(buf, "<6>{\"level\":\"info\",\"component\":\"ifs\",\"msg\":\"m\"}");
}

static void json_cut_still_closes(void **state)
{
	char buf[80], msg[400];
	size_t n;

	memset(msg, '"', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	n = log_format_line(buf, sizeof(buf), LOG_FMT_JSON, true, T0, LOG_LVL_INFO, "c", msg);
	assert_int_equal(n, strlen(buf));
	assert_true(n < sizeof(buf));
	assert_int_equal(buf[n - 1], '}');
	assert_int_equal(buf[n - 2], '"');
	/* the closing quote does not follow a lone backslash */
	assert_true(buf[n - 3] == '"' && buf[n - 4] == '\\');
}

static void names(void **state)
{
	(void)state;
	assert_string_equal(log_level_names[LOG_LVL_ERR], "error");
	assert_string_equal(log_level_names[LOG_LVL_DEBUG], "debug");
	assert_null(log_level_names[LOG_LVL_DEBUG + 1]);
	assert_string_equal(log_format_names[LOG_FMT_TEXT], "text");
	assert_string_equal(log_format_names[LOG_FMT_LOGFMT], "logfmt");
	assert_string_equal(log_format_names[LOG_FMT_JSON], "json");
	assert_null(log_format_names[LOG_FMT_JSON + 1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(text_and_journal),
	    cmocka_unit_test(logfmt),
	    cmocka_unit_test(json),
	    cmocka_unit_test(json_cut_still_closes),
	    cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
