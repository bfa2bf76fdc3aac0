// SPDX-License-Identifier: MIT
/*
 * The filter parameters of a history route (api/history_filter.c), on
 * hand-built requests: each kind of column parses and normalises its value,
 * a bad value is a 400 that says what is allowed, and columns join one
 * parameter only when they are of one kind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/arena.h"
#include "api/history_filter.h"
#include "api/http.h"
#include "api/reply.h"

struct row {
	uint8_t small;
	int64_t big;
	bool flag;
	char name[8];
	char addr[40];
	uint32_t token;
	char state[16];
	char src[40], dst[40];
};

static const char *const states[] = {"ESTABLISHED", "CLOSED", NULL};
static const struct col_domain state_domain = {.values = states};

static const struct event_column cols[] = {
    COL(struct row, small, COL_UINT, COL_NOT_NULL, .filter = COL_FILTER_EQ),
    COL(struct row, big, COL_INT, COL_NOT_NULL, .filter = COL_FILTER_EQ, .fmin = -5, .fmax = 5),
    COL(struct row, flag, COL_BOOL, COL_NOT_NULL, .filter = COL_FILTER_EQ),
    COL(struct row, name, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_EQ),
    COL(struct row, addr, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ADDR),
    COL(struct row, token, COL_UINT, COL_NOT_NULL, .filter = COL_FILTER_TOKEN),
    COL(struct row, state, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ENUM,
	.domain = &state_domain),
    COL(struct row, src, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ADDR, .param = "ip"),
    COL(struct row, dst, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ADDR, .param = "ip"),
    {0},
};

static struct history_params params_of(const struct event_column *cs)
{
	struct history_params ps = {0};
	char err[128];

	for (const struct event_column *c = cs; c->name; c++)
		if (history_params_add(&ps, c, "t", err, sizeof(err)))
			fail_msg("%s: %s", c->name, err);
	return ps;
}

/* The one filter that ?name=value gives, which must parse. */
static struct store_filter parse_ok(struct arena *ar, const char *name, const char *value)
{
	struct history_params ps = params_of(cols);
	const char *args[] = {name, value};
	struct http_request req = {.method = "GET", .path = "/x", .args = args, .n_args = 1};
	struct http_response res = {0};
	struct store_filter f[STORE_FILTERS_MAX];
	size_t nf = 0;

	if (history_filters_parse(&ps, &req, ar, f, &nf, &res, API_JSON))
		fail_msg("%s=%s: %.*s", name, value, (int)res.len, res.body);
	assert_int_equal(nf, 1);
	assert_null(res.body);
	return f[0];
}

/* The message of the 400 that ?name=value gives. */
static void parse_refused(const char *name, const char *value, const char *message)
{
	struct history_params ps = params_of(cols);
	const char *args[] = {name, value};
	struct http_request req = {.method = "GET", .path = "/x", .args = args, .n_args = 1};
	struct http_response res = {0};
	struct store_filter f[STORE_FILTERS_MAX];
	struct arena ar = {0};
	const char *msg = NULL;
	size_t nf = 0;
	json_t *j;

	assert_int_equal(history_filters_parse(&ps, &req, &ar, f, &nf, &res, API_JSON), -EINVAL);
	assert_int_equal(nf, 0);
	assert_int_equal(res.status, 400);
	j = json_loadb(res.body, res.len, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_unpack(j, "{s:{s:s}}", "error", "message", &msg), 0);
	if (strcmp(msg, message))
		fail_msg("%s=%s: message \"%s\", want \"%s\"", name, value, msg, message);
	json_decref(j);
	free(res.body);
	arena_free(&ar);
}

static void integers_are_plain_decimals_in_the_columns_range(void **state)
{
	struct arena ar = {0};

	(void)state;
	assert_int_equal(parse_ok(&ar, "small", "255").value, 255);
	assert_int_equal(parse_ok(&ar, "big", "-5").value, -5);
	assert_int_equal(parse_ok(&ar, "flag", "1").value, 1);
	parse_refused("small", "256", "small: expected an integer from 0 to 255, got \"256\"");
	parse_refused("small", "+1", "small: expected an integer from 0 to 255, got \"+1\"");
	parse_refused("small", "", "small: expected an integer from 0 to 255, got \"\"");
	parse_refused("big", "6", "big: expected an integer from -5 to 5, got \"6\"");
	parse_refused("flag", "2", "flag: expected an integer from 0 to 1, got \"2\"");
	arena_free(&ar);
}

static void text_fits_the_column(void **state)
{
	struct arena ar = {0};

	(void)state;
	assert_string_equal(parse_ok(&ar, "name", "seven77").text, "seven77");
	parse_refused("name", "eight888", "name: 1 to 7 characters");
	parse_refused("name", "", "name: 1 to 7 characters");
	arena_free(&ar);
}

static void addresses_are_normalised_as_inet_ntop_prints_them(void **state)
{
	struct arena ar = {0};
	struct store_filter f;

	(void)state;
	assert_string_equal(parse_ok(&ar, "addr", "2001:DB8:0:0::1").text, "2001:db8::1");
	assert_string_equal(parse_ok(&ar, "addr", "10.0.0.1").text, "10.0.0.1");
	f = parse_ok(&ar, "ip", "::ffff:10.0.0.1");
	assert_string_equal(f.text, "::ffff:10.0.0.1");
	assert_int_equal(f.n_cols, 2); /* src or dst */
	assert_string_equal(f.cols[1]->name, "dst");
	parse_refused("addr", "10.0.0", "addr: not an IPv4 or IPv6 address: \"10.0.0\"");
	arena_free(&ar);
}

static void tokens_and_enums_take_their_printed_forms(void **state)
{
	struct arena ar = {0};

	(void)state;
	assert_int_equal(parse_ok(&ar, "token", "d114306a").value, 0xd114306a);
	assert_int_equal(parse_ok(&ar, "token", "0x1f").value, 0x1f);
	parse_refused("token", "xyz",
		      "token: expected a token as printed (8 hex digits, e.g. d114306a), 0x and 1 "
		      "to 8 hex digits, or a decimal up to 4294967295; got \"xyz\"");
	assert_string_equal(parse_ok(&ar, "state", "established").text, "ESTABLISHED");
	parse_refused("state", "OPEN",
		      "state: unknown value \"OPEN\"; allowed: ESTABLISHED, CLOSED");
	arena_free(&ar);
}

static void absent_parameters_give_no_filter(void **state)
{
	struct history_params ps = params_of(cols);
	const char *args[] = {"limit", "5"};
	struct http_request req = {.method = "GET", .path = "/x", .args = args, .n_args = 1};
	struct http_response res = {0};
	struct store_filter f[STORE_FILTERS_MAX];
	struct arena ar = {0};
	size_t nf = 0;

	(void)state;
	assert_int_equal(history_filters_parse(&ps, &req, &ar, f, &nf, &res, API_JSON), 0);
	assert_int_equal(nf, 0);
	assert_int_equal(ps.n, 8); /* src and dst share ip */
}

static void one_parameter_holds_columns_of_one_kind(void **state)
{
	static const struct event_column mixed[] = {
	    COL(struct row, src, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_ADDR, .param = "p"),
	    COL(struct row, name, COL_TEXT, COL_NOT_NULL, .filter = COL_FILTER_EQ, .param = "p"),
	    {0},
	};
	struct history_params ps = {0};
	char err[128];

	(void)state;
	assert_int_equal(history_params_add(&ps, &mixed[0], "t", err, sizeof(err)), 0);
	assert_int_equal(history_params_add(&ps, &mixed[1], "t", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "table t: parameter p: columns of different kinds");
}

static void a_table_has_at_most_STORE_FILTERS_MAX_parameters(void **state)
{
	struct history_params ps = {0};
	struct event_column c = cols[0];
	char names[STORE_FILTERS_MAX + 1][8], err[128];

	(void)state;
	for (int i = 0; i <= STORE_FILTERS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		c.param = names[i];
		assert_int_equal(history_params_add(&ps, &c, "t", err, sizeof(err)),
				 i < STORE_FILTERS_MAX ? 0 : -EINVAL);
	}
	assert_string_equal(err, "table t: too many filters");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(integers_are_plain_decimals_in_the_columns_range),
	    cmocka_unit_test(text_fits_the_column),
	    cmocka_unit_test(addresses_are_normalised_as_inet_ntop_prints_them),
	    cmocka_unit_test(tokens_and_enums_take_their_printed_forms),
	    cmocka_unit_test(absent_parameters_give_no_filter),
	    cmocka_unit_test(one_parameter_holds_columns_of_one_kind),
	    cmocka_unit_test(a_table_has_at_most_STORE_FILTERS_MAX_parameters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
