/* SPDX-License-Identifier: MIT */
/*
 * agent/host_id: a machine-id file's text is usable only as 32 hexadecimal
 * digits that are not all zeros; an empty file, systemd's "uninitialized"
 * placeholder, all zeros and other text are named as unusable, and the
 * label keeps what was read (trimmed, printable, bounded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/host_id.h"

static const char *parse(const char *text, char *out)
{
	return host_id_machine_id_parse(text, strlen(text), out, HOST_ID_LEN + 1);
}

static void a_real_machine_id_is_usable_and_kept_whole(void **state)
{
	char out[HOST_ID_LEN + 1];

	(void)state;
	assert_null(parse("4b1c1f8a0c2d4e5f9a8b7c6d5e4f3a2b\n", out));
	assert_string_equal(out, "4b1c1f8a0c2d4e5f9a8b7c6d5e4f3a2b");
	assert_null(parse("  4B1C1F8A0C2D4E5F9A8B7C6D5E4F3A2B  \n\n", out));
	assert_string_equal(out, "4B1C1F8A0C2D4E5F9A8B7C6D5E4F3A2B");
}

static void cloned_and_placeholder_ids_are_named(void **state)
{
	char out[HOST_ID_LEN + 1];

	(void)state;
	assert_string_equal(parse("", out), "empty");
	assert_string_equal(out, "");
	assert_string_equal(parse(" \n", out), "empty");
	assert_string_equal(parse("uninitialized\n", out), "uninitialized");
	assert_string_equal(out, "uninitialized");
	assert_string_equal(parse("00000000000000000000000000000000\n", out), "all zeros");
	assert_string_equal(parse("4b1c1f8a0c2d4e5f\n", out), "not 32 hexadecimal digits");
	assert_string_equal(parse("4b1c1f8a-0c2d-4e5f-9a8b-7c6d5e4f3a2b\n", out),
			    "not 32 hexadecimal digits");
}

static void only_the_first_printable_line_is_kept_within_bounds(void **state)
{
	char out[HOST_ID_LEN + 1], small[8];
	char text[200];

	(void)state;
	assert_null(parse("4b1c1f8a0c2d4e5f9a8b7c6d5e4f3a2b\nsecond line\n", out));
	assert_string_equal(out, "4b1c1f8a0c2d4e5f9a8b7c6d5e4f3a2b");
	assert_string_equal(parse("ab\x01\x7f\xff"
				  "cd\n",
				  out),
			    "not 32 hexadecimal digits");
	assert_string_equal(out, "abcd");
	memset(text, 'a', sizeof(text));
	assert_string_equal(host_id_machine_id_parse(text, sizeof(text), out, sizeof(out)),
			    "not 32 hexadecimal digits");
	assert_int_equal(strlen(out), HOST_ID_LEN);
	assert_non_null(host_id_machine_id_parse(text, sizeof(text), small, sizeof(small)));
	assert_int_equal(strlen(small), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_real_machine_id_is_usable_and_kept_whole),
	    cmocka_unit_test(cloned_and_placeholder_ids_are_named),
	    cmocka_unit_test(only_the_first_printable_line_is_kept_within_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
