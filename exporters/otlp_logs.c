// SPDX-License-Identifier: MIT
/*
 * OTLP/HTTP logs encoding (otlp_logs.h): event rows as one
 * ExportLogsServiceRequest, built in an arena per call and packed by
 * protobuf-c; the receiver's ExportLogsServiceResponse read back.
 *
 * Resource attributes: the identity that a scrape and remote_write attach
 * (job, instance, external labels), spelled as OpenTelemetry's "Prometheus
 * and OpenMetrics Compatibility" spec maps it, because that mapping is what
 * OTLP receivers apply (Loki's and Mimir's OTLP ingestion, the Collector's
 * Prometheus exporters): job = "<service.namespace>/<service.name>" (or
 * service.name alone), instance = service.instance.id. So:
 *   service.name        = the job (after its first '/' if it has one; the
 *                         part before is service.namespace, as the
 *                         Collector's Prometheus receiver splits a job);
 *                         "sysobsd" when there is no job;
 *   service.instance.id = the instance (the host name by default);
 * and a log stream derived from these carries job="sysobs",
 * instance="<host>", the labels of the host's series: a join on
 * (job, instance) in Grafana or PromQL works. The other attributes:
 *   host.name = the instance; service.version = sysobsd's version;
 *   sysobs.db_id = the database's id (it changes when the history starts
 *   over, so (host, table, id) keys stay unique); each external label under
 *   its own name (label names have no '.', so none collides);
 *   k8s.node.name = $NODE_NAME when set (the DaemonSet sets it).
 * A column with a semantic-convention name (event_column.otel: k8s.pod.name,
 * k8s.namespace.name, k8s.pod.uid, k8s.container.name, container.id) is the
 * record's attribute under that name.
 * The program's name is the scope's: "sysobsd" and its version.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/log.h"
#include "exporters/otlp_logs.h"
#include "exporters/proto/opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "storage/table_value.h"

/* The generated names are long; these are the same types. */
typedef Opentelemetry__Proto__Common__V1__AnyValue otlp_any;
typedef Opentelemetry__Proto__Common__V1__KeyValue otlp_kv;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope otlp_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource otlp_resource;
typedef Opentelemetry__Proto__Logs__V1__LogRecord otlp_record;
typedef Opentelemetry__Proto__Logs__V1__ScopeLogs otlp_scope_logs;
typedef Opentelemetry__Proto__Logs__V1__ResourceLogs otlp_resource_logs;
typedef Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest otlp_request;
typedef Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse otlp_response;

const char *otlp_severity_text(int severity)
{
	static const char *const text[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};

	if (severity < 1 || severity > 24)
		return NULL;
	return text[(severity - 1) / 4];
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 if invalid (RFC 3629:
 * no overlong forms, no surrogates, nothing past U+10FFFF). */
static size_t otlp_utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * A copy of s[0..n) that is valid UTF-8: each invalid byte becomes U+FFFD.
 * Protobuf strings must be UTF-8 and receivers built on Go's protobuf
 * refuse the whole request otherwise; a task's comm, a cgroup path or a
 * text column cut at its size may not be.
 */
static char *otlp_utf8_dup(struct arena *a, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t bad = 0, k;
	char *d, *p;

	for (size_t i = 0; i < n; i += k ? k : 1)
		if (!(k = otlp_utf8_seq(u + i, n - i)))
			bad++;
	if (!bad)
		return arena_strndup(a, s, n);
	d = p = arena_alloc(a, n + 2 * bad + 1);
	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i += k ? k : 1) {
		k = otlp_utf8_seq(u + i, n - i);
		if (k) {
			memcpy(p, s + i, k);
			p += k;
		} else {
			memcpy(p, "\xef\xbf\xbd", 3);
			p += 3;
		}
	}
	*p = '\0';
	return d;
}

static otlp_any *otlp_any_string(struct arena *a, const char *s, size_t n)
{
	otlp_any *v = arena_alloc(a, sizeof(*v));

	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	v->string_value = otlp_utf8_dup(a, s, n);
	return v->string_value ? v : NULL;
}

static otlp_any *otlp_any_int(struct arena *a, int64_t i)
{
	otlp_any *v = arena_alloc(a, sizeof(*v));

	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	v->int_value = i;
	return v;
}

/* The attribute value of a non-NULL column. */
static otlp_any *otlp_any_column(struct arena *a, const struct col_value *cv)
{
	otlp_any *v;

	switch (cv->kind) {
	case COLV_INT:
		return otlp_any_int(a, cv->i);
	case COLV_UINT: {
		/* Past INT64_MAX: no OTLP integer holds it; its digits do. */
		char digits[24];

		snprintf(digits, sizeof(digits), "%" PRIu64, cv->u);
		return otlp_any_string(a, digits, strlen(digits));
	}
	case COLV_TEXT:
		return otlp_any_string(a, cv->s, cv->len);
	default:
		break;
	}
	v = arena_alloc(a, sizeof(*v));
	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	if (cv->kind == COLV_BLOB) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE;
		v->bytes_value.data = (uint8_t *)cv->s; /* packed only: never written through */
		v->bytes_value.len = cv->len;
	} else if (cv->kind == COLV_BOOL) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
		v->bool_value = cv->i != 0;
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
		v->double_value = cv->d;
	}
	return v;
}

static otlp_kv *otlp_kv_new(struct arena *a, const char *key, otlp_any *value)
{
	otlp_kv *kv;

	if (!value)
		return NULL;
	kv = arena_alloc(a, sizeof(*kv));
	if (!kv)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(kv);
	kv->key = (char *)key; /* packed only: never written through */
	kv->value = value;
	return kv;
}

/* The shortest %g spelling of d that reads back as d. */
static void otlp_double_text(double d, char *out, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, len, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

/* A logfmt value: bare, or quoted with \" \\ \n \r \t and \u00XX escapes
 * when it is empty or has a space, '=', a quote, a backslash or a control
 * character. */
static void otlp_logfmt_text(struct buf *b, const char *s, size_t n)
{
	bool quote = !n;

	for (size_t i = 0; i < n && !quote; i++)
		quote = (unsigned char)s[i] <= ' ' || s[i] == '=' || s[i] == '"' || s[i] == '\\' ||
			s[i] == 0x7f;
	if (!quote) {
		buf_append(b, s, n);
		return;
	}
	buf_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			buf_putc(b, '\\');
			buf_putc(b, (char)c);
		} else if (c == '\n') {
			buf_puts(b, "\\n");
		} else if (c == '\r') {
			buf_puts(b, "\\r");
		} else if (c == '\t') {
			buf_puts(b, "\\t");
		} else if (c < ' ' || c == 0x7f) {
			buf_printf(b, "\\u%04x", c);
		} else {
			buf_putc(b, (char)c);
		}
	}
	buf_putc(b, '"');
}

/* One row's record: body, attributes, times, severity, event name. */
/* One column in the record's logfmt body: name=value, space-separated. */
static void otlp_body_column(struct buf *body, const char *name, const struct col_value *cv)
{
	char num[32];

	if (body->len)
		buf_putc(body, ' ');
	buf_puts(body, name);
	buf_putc(body, '=');
	switch (cv->kind) {
	case COLV_INT:
		buf_printf(body, "%" PRId64, cv->i);
		break;
	case COLV_UINT:
		buf_printf(body, "%" PRIu64, cv->u);
		break;
	case COLV_BOOL:
		buf_puts(body, cv->i ? "true" : "false");
		break;
	case COLV_REAL:
		otlp_double_text(cv->d, num, sizeof(num));
		buf_puts(body, num);
		break;
	default:
		otlp_logfmt_text(body, cv->s, cv->len);
		break;
	}
}

/* One column's attributes, appended at rec->attributes[*k]: the value under
 * its semantic-convention name if it has one (k8s.pod.name, container.id,
 * ...; the body keeps ours), then a network namespace's name. */
static int otlp_column_attrs(struct arena *a, const struct event_column *c,
			     const struct col_value *cv, otlp_record *rec, size_t *k)
{
	char name[256];

	rec->attributes[*k] = otlp_kv_new(a, c->otel ? c->otel : c->name, otlp_any_column(a, cv));
	if (!rec->attributes[(*k)++])
		return -ENOMEM;
	if (export_netns_name(c, cv, name, sizeof(name))) {
		rec->attributes[*k] =
		    otlp_kv_new(a, EXPORT_NETNS_NAME, otlp_any_string(a, name, strlen(name)));
		if (!rec->attributes[(*k)++])
			return -ENOMEM;
	}
	return 0;
}

static int otlp_record_fill(struct arena *a, const struct export_row *r, unsigned flags,
			    struct buf *body, otlp_record *rec)
{
	const struct event_table *t = r->table;
	size_t ncols = 0, k = 0;
	int sev;

	if (!t || !t->name || !t->cols || !r->row || r->ts_ns < 0)
		return -EINVAL;
	sev = t->severity ? t->severity(r->row) : EVENT_SEVERITY_INFO;
	if (!otlp_severity_text(sev))
		return -EINVAL;
	while (t->cols[ncols].name)
		ncols++;
	opentelemetry__proto__logs__v1__log_record__init(rec);
	rec->time_unix_nano = (uint64_t)r->ts_ns;
	rec->observed_time_unix_nano = (uint64_t)r->ts_ns;
	rec->severity_number = (Opentelemetry__Proto__Logs__V1__SeverityNumber)sev;
	rec->severity_text = (char *)otlp_severity_text(sev);
	rec->event_name = arena_printf(a, "sysobs.%s", t->name);
	rec->attributes = arena_alloc(a, (ncols + 3) * sizeof(*rec->attributes));
	if (!rec->event_name || !rec->attributes)
		return -ENOMEM;
	rec->attributes[k++] =
	    otlp_kv_new(a, "sysobs.table", otlp_any_string(a, t->name, strlen(t->name)));
	rec->attributes[k++] = otlp_kv_new(a, "sysobs.id", otlp_any_int(a, r->id));
	if (!rec->attributes[0] || !rec->attributes[1])
		return -ENOMEM;
	body->len = 0;
	for (size_t i = 0; i < ncols; i++) {
		struct col_value cv;

		col_value(&t->cols[i], r->row, &cv);
		/* packet bytes stay home unless the destination asks */
		if (cv.kind == COLV_NULL || (cv.kind == COLV_BLOB && !(flags & EXPORT_F_BLOBS)))
			continue;
		if (otlp_column_attrs(a, &t->cols[i], &cv, rec, &k))
			return -ENOMEM;
		if (cv.kind != COLV_BLOB) /* the body is text */
			otlp_body_column(body, t->cols[i].name, &cv);
	}
	rec->n_attributes = k;
	if (body->oom)
		return -ENOMEM;
	rec->body = otlp_any_string(a, body->p ? body->p : "", body->len);
	return rec->body ? 0 : -ENOMEM;
}

/* The resource: the host's identity (see the head of this file). */
static int otlp_resource_fill(struct arena *a, const struct export_identity *id, otlp_resource *res)
{
	const char *job = id->job ? id->job : "";
	const char *slash = strchr(job, '/');
	size_t max = 8 + id->n_labels, k = 0;
	/* The Kubernetes node, as the DaemonSet passes it from the downward
	 * API (deploy/kubernetes/daemonset.yaml: NODE_NAME = spec.nodeName). */
	const char *node = getenv("NODE_NAME");
	otlp_kv **kv;

	if (id->n_labels > EXPORT_MAX_LABELS || !id->instance || !*id->instance)
		return -EINVAL;
	for (size_t i = 0; i < id->n_labels; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(id->labels[i].name, id->labels[j].name))
				return -EINVAL;
	opentelemetry__proto__resource__v1__resource__init(res);
	kv = arena_alloc(a, max * sizeof(*kv));
	if (!kv)
		return -ENOMEM;
#define OTLP_STR(key, s, n)                                                                        \
	do {                                                                                       \
		kv[k] = otlp_kv_new(a, key, otlp_any_string(a, s, n));                             \
		if (!kv[k++])                                                                      \
			return -ENOMEM;                                                            \
	} while (0)
	if (slash && slash != job && slash[1]) {
		OTLP_STR("service.namespace", job, (size_t)(slash - job));
		OTLP_STR("service.name", slash + 1, strlen(slash + 1));
	} else if (*job) {
		OTLP_STR("service.name", job, strlen(job));
	} else {
		OTLP_STR("service.name", OTLP_SCOPE_NAME, strlen(OTLP_SCOPE_NAME));
	}
	OTLP_STR("service.instance.id", id->instance, strlen(id->instance));
	OTLP_STR("host.name", id->instance, strlen(id->instance));
	if (id->version && *id->version)
		OTLP_STR("service.version", id->version, strlen(id->version));
	if (id->db_id && *id->db_id)
		OTLP_STR("sysobs.db_id", id->db_id, strlen(id->db_id));
	if (node && *node)
		OTLP_STR("k8s.node.name", node, strlen(node));
	for (size_t i = 0; i < id->n_labels; i++)
		OTLP_STR(id->labels[i].name, id->labels[i].value, strlen(id->labels[i].value));
#undef OTLP_STR
	res->attributes = kv;
	res->n_attributes = k;
	return 0;
}

int otlp_logs_encode(const struct export_row *rows, size_t n, const struct export_identity *id,
		     unsigned flags, struct buf *out)
{
	otlp_request req =
	    OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_REQUEST__INIT;
	otlp_resource_logs rl = OPENTELEMETRY__PROTO__LOGS__V1__RESOURCE_LOGS__INIT, *rlp = &rl;
	otlp_scope_logs sl = OPENTELEMETRY__PROTO__LOGS__V1__SCOPE_LOGS__INIT, *slp = &sl;
	otlp_scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	otlp_resource res;
	struct arena a = {0};
	struct buf body = {0};
	otlp_record *recs;
	size_t size;
	int err;

	if (out->oom)
		return -ENOMEM;
	err = otlp_resource_fill(&a, id, &res);
	if (err)
		goto out;
	err = -ENOMEM;
	recs = arena_alloc(&a, (n ? n : 1) * sizeof(*recs));
	sl.log_records = arena_alloc(&a, (n ? n : 1) * sizeof(*sl.log_records));
	if (!recs || !sl.log_records)
		goto out;
	for (size_t i = 0; i < n; i++) {
		err = otlp_record_fill(&a, &rows[i], flags, &body, &recs[i]);
		if (err)
			goto out;
		sl.log_records[i] = &recs[i];
	}
	sl.n_log_records = n;
	scope.name = (char *)OTLP_SCOPE_NAME;
	scope.version = (char *)(id->version ? id->version : "");
	sl.scope = &scope;
	rl.resource = &res;
	rl.scope_logs = &slp;
	rl.n_scope_logs = 1;
	req.resource_logs = &rlp;
	req.n_resource_logs = 1;
	size = protobuf_c_message_get_packed_size(&req.base);
	err = buf_reserve(out, size);
	if (err)
		goto out;
	protobuf_c_message_pack(&req.base, (uint8_t *)out->p + out->len);
	out->len += size;
	out->p[out->len] = '\0';
out:
	buf_free(&body);
	arena_free(&a);
	return err;
}

int otlp_logs_response(const void *body, size_t len, size_t sent, int64_t *rejected, char *msg,
		       size_t msglen)
{
	otlp_response *r;

	*rejected = 0;
	if (msg && msglen)
		msg[0] = '\0';
	if (!len)
		return 0;
	r = opentelemetry__proto__collector__logs__v1__export_logs_service_response__unpack(
	    NULL, len, body);
	if (!r)
		return -EINVAL;
	if (r->partial_success) {
		int64_t rej = r->partial_success->rejected_log_records;
		const char *m = r->partial_success->error_message;

		*rejected = rej < 0 ? 0 : (uint64_t)rej > sent ? (int64_t)sent : rej;
		if (msg && msglen && m)
			log_printable(msg, msglen, m, strlen(m), false);
	}
	opentelemetry__proto__collector__logs__v1__export_logs_service_response__free_unpacked(
	    r, NULL);
	return 0;
}
