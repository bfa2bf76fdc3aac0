// SPDX-License-Identifier: MIT
/*
 * Unit tests of the IFS alert push (exporters/alertmanager.c, on the shared
 * sender) against a small libmicrohttpd server on loopback that plays
 * Alertmanager: it refuses the first POSTs (the push must retry with the
 * sender's backoff), then accepts; the alert is re-sent while firing, and
 * sent once with endsAt when resolved. The turns run on an injected clock
 * (am_export_turn()): no test waits for a backoff. fire() must not wait for
 * the network even while the server stalls.
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

#include "base/config.h"
#include "exporters/alertmanager.h"
#include "exporters/sender.h"
#include "storage/store.h"
#include "storage/store_samples.h"

struct post {
	int64_t at_ms;
	json_t *body;
	unsigned status;
	char auth[64]; /* its Authorization header */
};

static struct {
	pthread_mutex_t lock;
	unsigned refuse_first;	 /* answer refuse_status to this many POSTs */
	unsigned refuse_status;	 /* 503 unless set */
	unsigned stall_ms;	 /* delay of every answer */
	const char *retry_after; /* Retry-After of a refusal, NULL: none */
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

		status = srv.n < srv.refuse_first ? (srv.refuse_status ?: 503) : 200;
		p->at_ms = now_ms();
		p->body = json_loadb(u->buf, u->len, 0, NULL);
		p->status = status;
		snprintf(p->auth, sizeof(p->auth), "%s",
			 MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization") ?: "");
		srv.n++;
	} else {
		status = 404;
	}
	pthread_mutex_unlock(&srv.lock);
	r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (status != 200 && srv.retry_after)
		MHD_add_response_header(r, "Retry-After", srv.retry_after);
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

#define SEC_NS 1000000000LL
#define MS_NS  1000000LL

static void label_count(const char *k, const char *v, void *arg)
{
	(void)k;
	(void)v;
	(*(int *)arg)++;
}

static void test_pure_helpers(void **state)
{
	char buf[40];
	int n = 0;

	(void)state;
	am_format_time(1764669600123456789LL, buf, sizeof(buf));
	assert_string_equal(buf, "2025-12-02T10:00:00.123Z");
	assert_int_equal(am_labels_parse(" team = hw , dc=par1", label_count, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(am_labels_parse("", NULL, NULL), 0);
	assert_int_equal(am_labels_parse("noequals", NULL, NULL), -EINVAL);
	assert_int_equal(am_labels_parse("1x=y", NULL, NULL), -EINVAL);
	assert_int_equal(am_labels_parse("a-b=c", NULL, NULL), -EINVAL);
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
	assert_int_equal(am_reply(200, "", 0, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(am_reply(400, bad_label, strlen(bad_label), msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "invalid label set: invalid name \"0bad\"");
	assert_int_equal(am_reply(400, bad_json, strlen(bad_json), msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "parsing alerts body from \"\" failed, because unexpected EOF");
	assert_int_equal(am_reply(502, html, strlen(html), msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "<html>");
	assert_int_equal(am_reply(503, NULL, 0, msg, sizeof(msg)), -EIO);
	assert_string_equal(msg, "HTTP 503");
	/* control bytes and a small buffer */
	assert_int_equal(am_reply(500, "\"a\\u001b[31mb\"", 14, tiny, sizeof(tiny)), -EIO);
	assert_string_equal(tiny, "a?[31mb");
}

// clang-format off
static const struct cfg_key ifs_keys[] = {
	{"enabled", "true", "", CFG_BOOL, 0, 0, 0, NULL},
	{AM_KEY_URL, "", "", CFG_STRING, 0, 0, 0, NULL},
	{AM_KEY_LABELS, "", "", CFG_STRING, 0, 0, 0, NULL},
	{AM_KEY_RESEND, "1m", "", CFG_DURATION, 0, 0, 0, NULL},
	{0},
};
// clang-format on

/* [collector.ifs] of text, checked: am_export_new()'s return, *errors its
 * errors joined by '|'. */
static int am_config(const char *text, struct am_export **am, char *errors, size_t len)
{
	struct config cfg = {0};
	size_t off = 0;
	int rc;

	assert_int_equal(cfg_declare(&cfg, AM_SECTION, ifs_keys), 0);
	assert_int_equal(am_export_declare(&cfg), 0);
	assert_int_equal(cfg_load_buffer(&cfg, "t.ini", text, strlen(text)), 0);
	rc = am_export_new(&cfg, true, am);
	errors[0] = '\0';
	for (size_t i = 0; i < cfg.n_errors && off < len; i++)
		off += (size_t)snprintf(errors + off, len - off, "%s|", cfg.errors[i]);
	cfg_free(&cfg);
	return rc;
}

/* A push to the server at port: the URL in [collector.ifs] (the older
 * spelling), extra the rest of the file after it. */
static struct am_export *am_at(unsigned port, const char *extra)
{
	char text[512], err[512];
	struct am_export *am = NULL;

	snprintf(text, sizeof(text),
		 "[collector.ifs]\nalertmanager_url = http://127.0.0.1:%u/\n%s\n", port, extra);
	assert_int_equal(am_config(text, &am, err, sizeof(err)), 0);
	assert_non_null(am);
	return am;
}

static void posts_free(void)
{
	for (unsigned i = 0; i < srv.n; i++)
		json_decref(srv.posts[i].body);
	srv.n = 0;
	srv.refuse_first = 0;
	srv.refuse_status = 0;
	srv.stall_ms = 0;
	srv.retry_after = NULL;
}

static const char *label_of(json_t *al, const char *group, const char *name)
{
	return json_string_value(json_object_get(json_object_get(al, group), name));
}

static void fire_core3(struct am_export *am)
{
	const struct am_pair labels[] = {
	    {"alertname", "SysobsIFSCoreFailed"}, {"core", "3"}, {"team", "overridden?"}};
	const struct am_pair ann[] = {{"details", "0x8000000000000f05"}};

	assert_int_equal(am_export_fire(am, "scan/0/3", labels, 3, ann, 1, 1764669600000000000LL),
			 0);
}

static void test_config(void **state)
{
	struct am_export *am = NULL;
	char err[512];

	(void)state;
	assert_int_equal(am_config("[collector.ifs]\n", &am, err, sizeof(err)), 0);
	assert_null(am); /* off */
	assert_int_equal(am_config("[collector.ifs]\nenabled = false\nalertmanager_url = ftp://x\n",
				   &am, err, sizeof(err)),
			 0);
	assert_null(am); /* no collector, no push, nothing to check */
	assert_int_equal(
	    am_config("[collector.ifs]\nalertmanager_url = ftp://am:9093\nalert_labels = 1x=y\n",
		      &am, err, sizeof(err)),
	    -EINVAL);
	assert_null(am);
	assert_non_null(
	    strstr(err, "alertmanager_url = 'ftp://am:9093': must start with http(s)://"));
	assert_non_null(strstr(err, "alert_labels"));
}

/* Refused twice (503): retried after the sender's backoff, 1 s then 2 s,
 * on the injected clock; then re-sent every resend; resolved once. */
static void test_fire_retry_resend_resolve(void **state)
{
	const int64_t t0 = 1000 * SEC_NS;
	struct MHD_Daemon *d;
	struct am_stats st;
	struct am_export *am;
	unsigned port;
	json_t *al;

	(void)state;
	srv.refuse_first = 2;
	d = start_server(&port);
	am = am_at(port, "alert_labels = team=hw\nalert_resend = 1500ms");
	fire_core3(am);
	assert_int_equal(am_export_turn(am, t0), t0 + 1 * SEC_NS);
	assert_int_equal(posts(), 1);
	assert_int_equal(srv.posts[0].status, 503);
	/* Not before the backoff. */
	assert_int_equal(am_export_turn(am, t0 + 999 * MS_NS), t0 + 1 * SEC_NS);
	assert_int_equal(posts(), 1);
	assert_int_equal(am_export_turn(am, t0 + 1 * SEC_NS), t0 + 3 * SEC_NS);
	assert_int_equal(posts(), 2);
	assert_int_equal(am_export_turn(am, t0 + 2 * SEC_NS), t0 + 3 * SEC_NS);
	assert_int_equal(posts(), 2);
	/* Accepted: the next send is the resend. */
	assert_int_equal(am_export_turn(am, t0 + 3 * SEC_NS), t0 + 4500 * MS_NS);
	assert_int_equal(posts(), 3);
	assert_int_equal(srv.posts[2].status, 200);

	al = json_array_get(srv.posts[2].body, 0);
	assert_non_null(al);
	assert_string_equal(label_of(al, "labels", "alertname"), "SysobsIFSCoreFailed");
	/* The alert's own label wins over the configured extra label. */
	assert_string_equal(label_of(al, "labels", "team"), "overridden?");
	assert_string_equal(json_string_value(json_object_get(al, "startsAt")),
			    "2025-12-02T10:00:00.000Z");
	assert_null(json_object_get(al, "endsAt"));
	assert_string_equal(label_of(al, "annotations", "details"), "0x8000000000000f05");

	/* Re-sent while firing. */
	am_export_turn(am, t0 + 4500 * MS_NS);
	assert_int_equal(posts(), 4);
	assert_null(json_object_get(json_array_get(srv.posts[3].body, 0), "endsAt"));

	/* Resolved: one POST with endsAt at once, then nothing more. */
	am_export_resolve(am, "scan/0/3", 1764669660000000000LL);
	assert_int_equal(am_export_turn(am, t0 + 4600 * MS_NS), INT64_MAX);
	assert_int_equal(posts(), 5);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(srv.posts[4].body, 0), "endsAt")),
	    "2025-12-02T10:01:00.000Z");
	assert_int_equal(am_export_turn(am, t0 + 3600 * SEC_NS), INT64_MAX);
	assert_int_equal(posts(), 5);
	am_export_stats(am, &st);
	assert_int_equal(st.posts_failed, 2);
	assert_int_equal(st.posts_ok, 3);
	assert_int_equal(st.firing, 0);

	am_export_free(am);
	MHD_stop_daemon(d);
	posts_free();
}

/* 400 is Alertmanager's verdict on the alert itself: no retry at the
 * backoff; a firing alert waits for its resend, a resolved one is dropped. */
static void test_refused_not_retried(void **state)
{
	const int64_t t0 = 1000 * SEC_NS;
	struct export_status st;
	struct MHD_Daemon *d;
	struct am_export *am;
	unsigned port;

	(void)state;
	srv.refuse_first = 2;
	srv.refuse_status = 400;
	d = start_server(&port);
	am = am_at(port, "alert_resend = 1m");
	fire_core3(am);
	assert_int_equal(am_export_turn(am, t0), t0 + 60 * SEC_NS);
	assert_int_equal(posts(), 1);
	am_export_status(am, &st);
	assert_int_equal(st.lost, 1); /* counted: /readyz says "losing rows" */
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.pending, 0);
	assert_string_equal(st.last_error, "refused with 400: HTTP 400");
	am_export_resolve(am, "scan/0/3", 1764669660000000000LL);
	assert_int_equal(am_export_turn(am, t0 + 1 * SEC_NS), INT64_MAX);
	assert_int_equal(posts(), 2);
	assert_int_equal(srv.posts[1].status, 400);
	am_export_status(am, &st);
	assert_int_equal(st.lost, 2);
	am_export_free(am);
	MHD_stop_daemon(d);
	posts_free();
}

/* [alertmanager]: its url (no [collector.ifs] alertmanager_url needed), the
 * sender's auth and backoff keys; its URL checked under its own name. */
static void test_own_section(void **state)
{
	const int64_t t0 = 1000 * SEC_NS;
	struct am_export *am = NULL;
	struct MHD_Daemon *d;
	char text[512], err[512];
	unsigned port;

	(void)state;
	assert_int_equal(am_config("[alertmanager]\nurl = ftp://am:9093\n", &am, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(
	    strstr(err, "[alertmanager] url = 'ftp://am:9093': must start with http(s)://"));
	srv.refuse_first = 1;
	d = start_server(&port);
	snprintf(text, sizeof(text),
		 "[alertmanager]\nurl = http://127.0.0.1:%u\nbearer_token = s3cret\n"
		 "min_backoff = 200ms\n",
		 port);
	assert_int_equal(am_config(text, &am, err, sizeof(err)), 0);
	assert_non_null(am);
	fire_core3(am);
	/* 503: retried after [alertmanager] min_backoff, not the push's 1 s */
	assert_int_equal(am_export_turn(am, t0), t0 + 200 * MS_NS);
	assert_int_equal(am_export_turn(am, t0 + 200 * MS_NS), t0 + 60200 * MS_NS);
	assert_int_equal(posts(), 2);
	assert_int_equal(srv.posts[1].status, 200);
	assert_string_equal(srv.posts[1].auth, "Bearer s3cret");
	am_export_free(am);
	/* [alertmanager] url wins over the older spelling */
	snprintf(text, sizeof(text),
		 "[alertmanager]\nurl = http://127.0.0.1:%u\n[collector.ifs]\n"
		 "alertmanager_url = http://127.0.0.1:1\n",
		 port);
	assert_int_equal(am_config(text, &am, err, sizeof(err)), 0);
	fire_core3(am);
	am_export_turn(am, t0);
	assert_int_equal(posts(), 3);
	am_export_free(am);
	MHD_stop_daemon(d);
	posts_free();
}

/* Alertmanager's Retry-After (a 429 or 503 behind a proxy) is the shared
 * sender's: the next POST waits for it, not for the 1 s backoff, and a new
 * alert fired meanwhile waits too. */
static void test_retry_after(void **state)
{
	const int64_t t0 = 1000 * SEC_NS;
	const struct am_pair labels[] = {{"alertname", "x"}};
	struct MHD_Daemon *d;
	struct am_export *am;
	unsigned port;

	(void)state;
	srv.refuse_first = 1;
	srv.refuse_status = 429;
	srv.retry_after = "7";
	d = start_server(&port);
	am = am_at(port, "alert_resend = 1m");
	fire_core3(am);
	assert_int_equal(am_export_turn(am, t0), t0 + 7 * SEC_NS);
	assert_int_equal(am_export_fire(am, "scan/0/4", labels, 1, NULL, 0, 1764669600000000000LL),
			 0);
	assert_int_equal(am_export_turn(am, t0 + 6 * SEC_NS), t0 + 7 * SEC_NS);
	assert_int_equal(posts(), 1);
	assert_int_equal(am_export_turn(am, t0 + 7 * SEC_NS), t0 + 67 * SEC_NS);
	assert_int_equal(posts(), 2);
	assert_int_equal(json_array_size(srv.posts[1].body), 2);
	am_export_free(am);
	MHD_stop_daemon(d);
	posts_free();
}

/* A push on a store of its own (a restart is a new push on the same file). */
static struct am_export *am_stored(unsigned port, struct store *s)
{
	struct am_export *am = am_at(port, "alert_resend = 1m");

	assert_int_equal(am_export_attach(am, s), 0);
	return am;
}

static uint64_t am_pending(struct am_export *am, char *last_error, size_t len)
{
	struct export_status st;

	am_export_status(am, &st);
	if (last_error)
		snprintf(last_error, len, "%s", st.last_error);
	return st.pending;
}

/* What the push holds survives it (a kill -9 between two turns is the same
 * as a free here: each turn stores what changed before it sends): a
 * firing refused by an outage comes back with its startsAt and is sent at
 * once, in the status as pending until then; so does a resolve, whose note
 * goes once delivered. A note that does not parse is left, the others
 * load. */
static void test_durable_state(void **state)
{
	const int64_t t0 = 1000 * SEC_NS;
	char dir[] = "/tmp/test_ifs_alert.XXXXXX", path[128], err[256];
	struct store_config cfg = {.batch_ms = 10};
	struct store_cursor *c;
	struct MHD_Daemon *d;
	struct am_export *am;
	struct store *s;
	unsigned port;
	json_t *al;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sysobs.db", dir);
	cfg.path = path;
	s = store_open(&cfg, NULL, err, sizeof(err));
	assert_non_null(s);
	c = store_cursor_open(s, "alertmanager", err, sizeof(err));
	assert_int_equal(store_cursor_note_set(c, "alert/bad", "{\"labels\":"), 0);
	store_cursor_close(c);
	srv.refuse_first = 1;
	d = start_server(&port);

	am = am_stored(port, s);
	fire_core3(am);
	am_export_turn(am, t0); /* 503: the outage */
	assert_int_equal(am_pending(am, err, sizeof(err)), 1);
	assert_string_equal(err, "answered 503: HTTP 503");
	am_export_free(am);

	am = am_stored(port, s);
	assert_int_equal(am_pending(am, NULL, 0), 1); /* before any turn */
	assert_int_equal(am_export_turn(am, t0), t0 + 60 * SEC_NS);
	assert_int_equal(posts(), 2);
	assert_int_equal(srv.posts[1].status, 200);
	al = json_array_get(srv.posts[1].body, 0);
	assert_string_equal(json_string_value(json_object_get(al, "startsAt")),
			    "2025-12-02T10:00:00.000Z");
	assert_string_equal(label_of(al, "labels", "core"), "3");
	assert_string_equal(label_of(al, "annotations", "details"), "0x8000000000000f05");
	assert_int_equal(am_pending(am, NULL, 0), 0);
	srv.refuse_first = 3;
	am_export_resolve(am, "scan/0/3", 1764669660000000000LL);
	am_export_turn(am, t0 + 1 * SEC_NS); /* 503 */
	am_export_free(am);

	am = am_stored(port, s);
	assert_int_equal(am_pending(am, NULL, 0), 1);
	assert_int_equal(am_export_turn(am, t0), INT64_MAX);
	assert_int_equal(posts(), 4);
	al = json_array_get(srv.posts[3].body, 0);
	assert_string_equal(json_string_value(json_object_get(al, "endsAt")),
			    "2025-12-02T10:01:00.000Z");
	assert_string_equal(json_string_value(json_object_get(al, "startsAt")),
			    "2025-12-02T10:00:00.000Z");
	am_export_free(am);

	am = am_stored(port, s); /* the resolve delivered: nothing held */
	assert_int_equal(am_export_turn(am, t0), INT64_MAX);
	assert_int_equal(posts(), 4);
	am_export_free(am);
	store_close(s);
	MHD_stop_daemon(d);
	posts_free();
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static void test_fire_never_blocks(void **state)
{
	struct am_export *am;
	struct MHD_Daemon *d;
	unsigned port;
	int64_t t0, worst = 0;

	(void)state;
	srv.stall_ms = 1500; /* a slow Alertmanager */
	d = start_server(&port);
	am = am_at(port, "");
	assert_int_equal(am_export_start(am, NULL), 0);
	for (int i = 0; i < 20; i++) {
		const struct am_pair labels[] = {{"alertname", "x"}};
		char key[16];

		snprintf(key, sizeof(key), "scan/0/%d", i);
		t0 = now_ms();
		am_export_fire(am, key, labels, 1, NULL, 0, 1764669600000000000LL);
		if (now_ms() - t0 > worst)
			worst = now_ms() - t0;
		usleep(20000);
	}
	/* 20 fires while POSTs take 1.5 s each: none waited for the network
	 * (the bound is loose: it only has to be far below 1.5 s). */
	assert_true(worst < 500);
	am_export_free(am);
	MHD_stop_daemon(d);
	posts_free();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pure_helpers),
	    cmocka_unit_test(test_reply),
	    cmocka_unit_test(test_config),
	    cmocka_unit_test(test_fire_retry_resend_resolve),
	    cmocka_unit_test(test_refused_not_retried),
	    cmocka_unit_test(test_own_section),
	    cmocka_unit_test(test_retry_after),
	    cmocka_unit_test(test_durable_state),
	    cmocka_unit_test(test_fire_never_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
