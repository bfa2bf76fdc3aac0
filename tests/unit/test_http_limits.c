/* SPDX-License-Identifier: MIT */
/*
 * http_acceptor_limits (api/http_accept.c): how many accepted connections
 * wait for a request thread and for their request headers, from the
 * request slots and the descriptors the process may open (sqlite, BPF and
 * the collectors keep 256 of them, the slots two each).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/http_internal.h"

static struct http_acceptor limits(unsigned max_conn, rlim_t nofile)
{
	struct http_acceptor ac;

	memset(&ac, 0, sizeof(ac));
	http_acceptor_limits(&ac, max_conn, nofile);
	return ac;
}

static void without_a_descriptor_limit_a_full_backlog_waits(void **state)
{
	struct http_acceptor ac = limits(64, RLIM_INFINITY);

	(void)state;
	assert_int_equal(ac.max_queued, 256);		/* never below 256 */
	assert_int_equal(ac.max_reading, HTTP_BACKLOG); /* 16 x 64 is less */
	ac = limits(1000, RLIM_INFINITY);
	assert_int_equal(ac.max_queued, 4000);	 /* 4 per slot */
	assert_int_equal(ac.max_reading, 16000); /* 16 per slot */
}

static void the_descriptors_left_bound_those_reading(void **state)
{
	/* 1024 - 256 kept - 256 queued - 2 x 64 slots = 384 */
	struct http_acceptor ac = limits(64, 1024);

	(void)state;
	assert_int_equal(ac.max_queued, 256);
	assert_int_equal(ac.max_reading, 384);
}

static void never_fewer_reading_than_slots(void **state)
{
	(void)state;
	assert_int_equal(limits(64, 500).max_reading, 64);
	assert_int_equal(limits(100, 100).max_reading, 100);
	assert_int_equal(limits(100, 0).max_reading, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(without_a_descriptor_limit_a_full_backlog_waits),
	    cmocka_unit_test(the_descriptors_left_bound_those_reading),
	    cmocka_unit_test(never_fewer_reading_than_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
