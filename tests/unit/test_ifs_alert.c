// SPDX-License-Identifier: MIT
/*
 * Unit tests of the Alertmanager push against a small libmicrohttpd server on
 * loopback that plays Alertmanager: it refuses the first POSTs (the alerter
 * must retry with backoff), then accepts; the alert is re-sent while firing,
 * and sent once with endsAt when resolved. fire() must not wait for the
 * network even while the server stalls.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "collectors/ifs/ifs_alert.h"

struct post {
	int64_t at_ms;
	json_t *body;
	unsigned status;
};

static struct {
	pthread_mutex_t lock;
	unsigned refuse_first; /* answer 503 to this many POSTs */
	unsigned stall_ms;     /* delay of every answer */
	struct post posts[64];
	unsigned n;
} srv = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct upload {
	char buf[8192];
	size_t len;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct upload *u = *con_cls;
	struct MHD_Response *r;
	unsigned status = 200;
	enum MHD_Result ret;

	if (!u) {
		u = calloc(1, sizeof(*u));
		*con_cls = u;
		return u ? MHD_YES : MHD_NO;
	}
	if (*data_size) {
		size_t n = *data_size;

		if (u->len + n < sizeof(u->buf)) {
			memcpy(u->buf + u->len, data, n);
			u->len += n;
		}
		*data_size = 0;
		return MHD_YES;
	}
	if (srv.stall_ms)
		usleep(srv.stall_ms * 1000);
	pthread_mutex_lock(&srv.lock);
	if (!strcmp(method, "POST") && !strcmp(url, "/api/v2/alerts") && srv.n < 64) {
		struct post *p = &srv.posts[srv.n];

		status = srv.n < srv.refuse_first ? 503 : 200;
		p->at_ms = now_ms();
		p->body = json_loadb(u->buf, u->len, 0, NULL);
		p->status = status;
		srv.n++;
	} else {
		status = 404;
	}
	pthread_mutex_unlock(&srv.lock);
	r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
}

static struct MHD_Daemon *start_server(unsigned *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;

	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
			     NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sa,
			     MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	assert_non_null(d);
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	*port = info->port;
	return d;
}

static unsigned posts(void)
{
	unsigned n;

	pthread_mutex_lock(&srv.lock);
	n = srv.n;
	pthread_mutex_unlock(&srv.lock);
	return n;
}

static bool wait_posts(unsigned n, unsigned timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	while (posts() < n) {
		if (now_ms() > end)
			return false;
		usleep(10000);
	}
	return true;
}

static void test_pure_helpers(void **state)
{
	char buf[40];
	json_t *l;

	ifs_alert_format_time(1764669600123456789LL, buf, sizeof(buf));
	assert_string_equal(buf, "2025-12-02T10:00:00.123Z");
	l = ifs_alert_parse_labels(" team = hw , dc=par1");
	assert_non_null(l);
	assert_string_equal(json_string_value(json_object_get(l, "team")), "hw");
	assert_string_equal(json_string_value(json_object_get(l, "dc")), "par1");
	json_decref(l);
	l = ifs_alert_parse_labels("");
	assert_int_equal(json_object_size(l), 0);
	json_decref(l);
	assert_null(ifs_alert_parse_labels("noequals"));
	assert_null(ifs_alert_parse_labels("1x=y"));
	assert_null(ifs_alert_parse_labels("a-b=c"));
}

/* Alertmanager 0.25's answers (recorded, tests/fuzz/corpus/alert_reply/)
 * give the log their reason; a proxy's page its first line. */
static void test_reply(void **state)
{
	static const char bad_label[] = "\"invalid label set: invalid name \\\"0bad\\\"\"\n";
	static const char bad_json[] = "{\"code\":400,\"message\":\"parsing alerts body from "
				       "\\\"\\\" failed, because unexpected EOF\"}";
	static const char html[] = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n";
	char msg[64], tiny[8];

	(void)state;
	assert_int_equal(ifs_alert_reply(200, "", 0, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(ifs_alert_reply(400, bad_label, strlen(bad_label), msg, sizeof(msg)),
			 -EIO);
	assert_string_equal(msg, "invalid label set: invalid name \"0bad\"");
	assert_int_equal(ifs_alert_reply(400, bad_json, strlen(bad_json), msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "parsing alerts body from \"\" failed, because unexpected EOF");
	assert_int_equal(ifs_alert_reply(502, html, strlen(html), msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "<html>");
	assert_int_equal(ifs_alert_reply(503, NULL, 0, msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "HTTP 503");
	/* control bytes and a small buffer */
	assert_int_equal(ifs_alert_reply(500, "\"a\\u001b[31mb\"", 14, tiny, sizeof(tiny)), -EIO);
	assert_string_equal(tiny, "a?[31mb");
}

static void test_fire_retry_resend_resolve(void **state)
{
	struct ifs_alert_stats st;
	struct ifs_alerter *a;
	struct MHD_Daemon *d;
	unsigned port;
	char url[64];
	int64_t t0;
	json_t *al;

	srv.refuse_first = 2;
	srv.stall_ms = 0;
	d = start_server(&port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	a = ifs_alert_new(url, "team=hw", 1500);
	assert_non_null(a);

	t0 = now_ms();
	ifs_alert_fire(a, "scan/0/3",
		       json_pack("{s:s, s:s, s:s}", "alertname", "SysobsIFSCoreFailed", "core", "3",
				 "team", "overridden?"),
		       json_pack("{s:s}", "details", "0x8000000000000f05"), 1764669600000000000LL);
	/* Refused twice: retried after 1 s, then 2 s more. */
	assert_true(wait_posts(3, 6000));
	assert_int_equal(srv.posts[0].status, 503);
	assert_int_equal(srv.posts[1].status, 503);
	assert_int_equal(srv.posts[2].status, 200);
	assert_true(srv.posts[1].at_ms - srv.posts[0].at_ms >= 900);
	assert_true(srv.posts[2].at_ms - srv.posts[1].at_ms >= 1900);
	assert_true(srv.posts[0].at_ms - t0 < 1000);

	al = json_array_get(srv.posts[2].body, 0);
	assert_non_null(al);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(al, "labels"), "alertname")),
	    "SysobsIFSCoreFailed");
	/* The alert's own label wins over the configured extra label. */
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(al, "labels"), "team")),
	    "overridden?");
	assert_string_equal(json_string_value(json_object_get(al, "startsAt")),
			    "2025-12-02T10:00:00.000Z");
	assert_null(json_object_get(al, "endsAt"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(al, "annotations"), "details")),
	    "0x8000000000000f05");

	/* Re-sent while firing. */
	assert_true(wait_posts(4, 3000));
	assert_true(srv.posts[3].at_ms - srv.posts[2].at_ms >= 1400);
	assert_null(json_object_get(json_array_get(srv.posts[3].body, 0), "endsAt"));

	/* Resolved: one POST with endsAt, then nothing more. */
	ifs_alert_resolve(a, "scan/0/3", 1764669660000000000LL);
	assert_true(wait_posts(5, 2000));
	al = json_array_get(srv.posts[4].body, 0);
	assert_string_equal(json_string_value(json_object_get(al, "endsAt")),
			    "2025-12-02T10:01:00.000Z");
	usleep(2000 * 1000);
	assert_int_equal(posts(), 5);
	ifs_alert_get_stats(a, &st);
	assert_int_equal(st.posts_failed, 2);
	assert_int_equal(st.posts_ok, 3);
	assert_int_equal(st.firing, 0);

	ifs_alert_free(a);
	MHD_stop_daemon(d);
	for (unsigned i = 0; i < srv.n; i++)
		json_decref(srv.posts[i].body);
	srv.n = 0;
}

static void test_fire_never_blocks(void **state)
{
	struct ifs_alerter *a;
	struct MHD_Daemon *d;
	unsigned port;
	char url[64];
	int64_t t0, worst = 0;

	srv.refuse_first = 0;
	srv.stall_ms = 1500; /* a slow Alertmanager */
	d = start_server(&port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	a = ifs_alert_new(url, NULL, 60000);
	assert_non_null(a);
	for (int i = 0; i < 20; i++) {
		char key[16];

		snprintf(key, sizeof(key), "scan/0/%d", i);
		t0 = now_ms();
		ifs_alert_fire(a, key, json_pack("{s:s}", "alertname", "x"), json_object(),
			       1764669600000000000LL);
		if (now_ms() - t0 > worst)
			worst = now_ms() - t0;
		usleep(20000);
	}
	/* 20 fires while POSTs take 1.5 s each: none waited for the network
	 * (the bound is loose: it only has to be far below 1.5 s). */
	assert_true(worst < 500);
	ifs_alert_free(a);
	MHD_stop_daemon(d);
	for (unsigned i = 0; i < srv.n; i++)
		json_decref(srv.posts[i].body);
	srv.n = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pure_helpers),
	    cmocka_unit_test(test_reply),
	    cmocka_unit_test(test_fire_retry_resend_resolve),
	    cmocka_unit_test(test_fire_never_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
