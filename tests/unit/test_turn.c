// SPDX-License-Identifier: MIT
/*
 * Unit tests of the exporters' turn loop (exporters/turn.c) with a real
 * sender against a small libmicrohttpd receiver on loopback that answers a
 * scripted status per request: a batch of 5 units in requests of 2 (as
 * ClickHouse sends one INSERT per table), each outcome of the verdict
 * matrix (sent, refused as data, retried with the receiver's Retry-After,
 * OTLP-like partial success, a part the encoder refuses, an encoder that
 * gives the turn up, the format's own verdict on the body), checked through
 * what the status API shows (sender_status_get) and what the loop asked of
 * the format's operations (advance, finish).
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/config.h"
#include "base/log.h"
#include "exporters/turn.h"

#define UNITS 5
#define PART  2

/* ---- the receiver ---- */

static struct {
	pthread_mutex_t lock;
	unsigned status[8]; /* the answer to the i-th POST (0: 200) */
	const char *retry_after;
	const char *body; /* every answer's body */
	char got[8][32];  /* the bodies received */
	unsigned n;
} srv = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct upload {
	char buf[64];
	size_t len;
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct upload *u = *con_cls;
	struct MHD_Response *r;
	unsigned status = 404;
	enum MHD_Result ret;

	(void)cls, (void)url, (void)version;
	if (!u) {
		u = calloc(1, sizeof(*u));
		*con_cls = u;
		return u ? MHD_YES : MHD_NO;
	}
	if (*data_size) {
		if (u->len + *data_size < sizeof(u->buf)) {
			memcpy(u->buf + u->len, data, *data_size);
			u->len += *data_size;
		}
		*data_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&srv.lock);
	if (!strcmp(method, "POST") && srv.n < 8) {
		status = srv.status[srv.n] ? srv.status[srv.n] : 200;
		snprintf(srv.got[srv.n++], sizeof(srv.got[0]), "%.*s", (int)u->len, u->buf);
	}
	pthread_mutex_unlock(&srv.lock);
	r = MHD_create_response_from_buffer(strlen(srv.body), (void *)srv.body,
					    MHD_RESPMEM_PERSISTENT);
	if (srv.retry_after)
		MHD_add_response_header(r, "Retry-After", srv.retry_after);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)conn, (void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

/* ---- a format: UNITS units in parts of PART, each body "part FROM" ---- */

struct fake {
	char body[32];
	enum turn_step step[8]; /* encode()'s answer per part (0: TURN_SEND) */
	uint64_t reject;	/* rows of each accepted part the receiver rejected */
	bool body_verdict;	/* refuse on a body saying "bad" */
	unsigned advanced, finished;
	bool accepted;
	enum sender_verdict last;
};

static bool fake_read(void *ctx, size_t *units, uint64_t *count, uint64_t *wait)
{
	(void)ctx, (void)wait;
	*units = UNITS;
	*count = UNITS;
	return true;
}

static enum turn_step fake_encode(void *ctx, size_t from, struct turn_part *p, uint64_t *count)
{
	struct fake *f = ctx;
	size_t n = UNITS - from < PART ? UNITS - from : PART;

	(void)count;
	snprintf(f->body, sizeof(f->body), "part %zu", from);
	*p = (struct turn_part){.used = n, .n = n, .body = f->body, .len = strlen(f->body)};
	return f->step[from / PART];
}

static enum sender_verdict fake_verdict(void *ctx, enum sender_verdict v)
{
	struct fake *f = ctx;

	return f->body_verdict && !strcmp(srv.body, "bad") ? SENDER_REFUSED : v;
}

static uint64_t fake_rejected(void *ctx, uint64_t n)
{
	struct fake *f = ctx;

	return f->reject < n ? f->reject : n;
}

static void fake_finish(void *ctx, enum sender_verdict last)
{
	struct fake *f = ctx;

	f->finished++;
	f->last = last;
}

static uint64_t fake_advance(void *ctx, bool accepted)
{
	struct fake *f = ctx;

	f->advanced++;
	f->accepted = accepted;
	return 77;
}

static const struct turn_ops fake_ops = {
    .read = fake_read,
    .encode = fake_encode,
    .verdict = fake_verdict,
    .rejected = fake_rejected,
    .finish = fake_finish,
    .advance = fake_advance,
};

/* ---- the fixture: a receiver, a sender, a turn ---- */

struct fix {
	struct MHD_Daemon *d;
	struct sender_config c;
	char url[64];
	struct sender snd;
	struct log_ratelimit rl;
	struct fake f;
	struct turn t;
	struct export_status st;
};

static int setup(void **state)
{
	static const char *const headers[] = {"Content-Type: text/plain", NULL};
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct fix *x = calloc(1, sizeof(*x));
	struct config cfg = {0};
	const union MHD_DaemonInfo *info;

	assert_non_null(x);
	pthread_mutex_lock(&srv.lock);
	memset(srv.status, 0, sizeof(srv.status));
	srv.n = 0;
	srv.retry_after = NULL;
	srv.body = "";
	pthread_mutex_unlock(&srv.lock);
	x->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
				NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	assert_non_null(x->d);
	info = MHD_get_daemon_info(x->d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(x->url, sizeof(x->url), "http://127.0.0.1:%u/in", info->port);
	x->c = (struct sender_config){.url = x->url,
				      .timeout = 10000,
				      .min_backoff = 30,
				      .max_backoff = 5000,
				      .basic_auth_user = "",
				      .basic_auth_password_file = "",
				      .bearer_token = "",
				      .bearer_token_file = "",
				      .tls_ca_file = "",
				      .tls_cert_file = "",
				      .tls_key_file = ""};
	assert_int_equal(sender_check(&x->snd, &cfg, "export.test", &x->c, false), 0);
	assert_int_equal(sender_setup(&x->snd, headers), 0);
	x->t = (struct turn){.ops = &fake_ops,
			     .ctx = &x->f,
			     .snd = &x->snd,
			     .section = "export.test",
			     .unit = "rows",
			     .rl_fail = &x->rl};
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fix *x = *state;

	sender_free(&x->snd);
	MHD_stop_daemon(x->d);
	free(x);
	return 0;
}

static uint64_t run(struct fix *x)
{
	uint64_t wait = turn_run(&x->t);

	sender_status_get(&x->snd, &x->st);
	return wait;
}

/* Every part accepted: each sent once, in order; the cursor advances. */
static void test_all_sent(void **state)
{
	struct fix *x = *state;

	assert_int_equal(run(x), 77);
	assert_int_equal(srv.n, 3);
	assert_string_equal(srv.got[0], "part 0");
	assert_string_equal(srv.got[2], "part 4");
	assert_int_equal(x->st.sent, UNITS);
	assert_int_equal(x->st.failed + x->st.retried + x->st.lost, 0);
	assert_int_equal(x->f.advanced, 1);
	assert_true(x->f.accepted);
	assert_int_equal(x->f.last, SENDER_SENT);
	assert_string_equal(x->st.last_error, "");
}

/* 400 on the middle part: its rows lost, not retried; the others sent. */
static void test_refused_part(void **state)
{
	struct fix *x = *state;

	srv.status[1] = 400;
	assert_int_equal(run(x), 77);
	assert_int_equal(srv.n, 3);
	assert_int_equal(x->st.sent, 3);
	assert_int_equal(x->st.failed, 2);
	assert_int_equal(x->st.lost, 2);
	assert_int_equal(x->st.retried, 0);
	assert_int_equal(x->f.advanced, 1);
	assert_true(x->f.accepted);
}

/* Every part refused: the cursor still passes the batch, nothing accepted. */
static void test_all_refused(void **state)
{
	struct fix *x = *state;

	for (int i = 0; i < 3; i++)
		srv.status[i] = 422;
	assert_int_equal(run(x), 77);
	assert_int_equal(x->st.sent, 0);
	assert_int_equal(x->st.failed, UNITS);
	assert_int_equal(x->f.advanced, 1);
	assert_false(x->f.accepted);
	assert_non_null(strstr(x->st.last_error, "refused with 422"));
}

/* 503 with Retry-After on the second part: no third request, the whole
 * batch counted retried, the cursor stays, the wait is the receiver's. */
static void test_retry_after(void **state)
{
	struct fix *x = *state;

	srv.status[1] = 503;
	srv.retry_after = "3";
	assert_int_equal(run(x), 3000);
	assert_int_equal(srv.n, 2);
	assert_int_equal(x->st.retried, UNITS);
	assert_int_equal(x->st.sent, 0);
	assert_int_equal(x->f.advanced, 0);
	assert_int_equal(x->f.finished, 1);
	assert_int_equal(x->f.last, SENDER_RETRY);
	assert_non_null(strstr(x->st.last_error, "answered 503"));
	/* the backoff starts over once the batch goes through */
	srv.status[1] = 0;
	srv.retry_after = NULL;
	assert_int_equal(run(x), 77);
	assert_int_equal(x->st.sent, UNITS);
	assert_string_equal(x->st.last_error, "");
}

/* 404 is the receiver's state: retried after the backoff (min_backoff). */
static void test_retry_backoff(void **state)
{
	struct fix *x = *state;

	srv.status[0] = 404;
	assert_int_equal(run(x), 30);
	assert_int_equal(srv.n, 1);
	assert_int_equal(x->st.retried, UNITS);
	srv.status[1] = 404;
	assert_int_equal(run(x), 60); /* doubled */
}

/* Partial success: the rows the receiver rejected of accepted requests
 * are lost, the rest sent. */
static void test_rejected(void **state)
{
	struct fix *x = *state;

	x->f.reject = 1;
	assert_int_equal(run(x), 77);
	assert_int_equal(x->st.sent, 2);
	assert_int_equal(x->st.lost, 3);
	assert_int_equal(x->st.failed, 0);
}

/* The format's verdict on the body overrides a 200 (ClickHouse). */
static void test_body_verdict(void **state)
{
	struct fix *x = *state;

	x->f.body_verdict = true;
	srv.body = "bad";
	assert_int_equal(run(x), 77);
	assert_int_equal(x->st.failed, UNITS);
	assert_false(x->f.accepted);
}

/* A part the encoder refuses is never sent; one it cannot encode now
 * retries the batch; an encoder that gives up waits max_backoff. */
static void test_encode_outcomes(void **state)
{
	struct fix *x = *state;

	x->f.step[1] = TURN_REFUSE;
	assert_int_equal(run(x), 77);
	assert_int_equal(srv.n, 2);
	assert_int_equal(x->st.failed, 2);
	assert_int_equal(x->st.sent, 3);

	x->f.step[1] = TURN_RETRY;
	assert_int_equal(run(x), 30);
	assert_int_equal(x->st.retried, UNITS);
	assert_int_equal(x->f.advanced, 1);

	x->f.step[0] = TURN_GIVE_UP;
	srv.n = 0;
	assert_int_equal(run(x), 5000);
	assert_int_equal(srv.n, 0);
	assert_int_equal(x->f.advanced, 1);
	assert_int_equal(x->st.retried, UNITS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_all_sent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_part, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_all_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retry_after, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retry_backoff, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_body_verdict, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_encode_outcomes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
