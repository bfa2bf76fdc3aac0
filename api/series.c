// SPDX-License-Identifier: MIT
/*
 * GET /api/v1/series (see series.h): selectors, the label text of stored
 * series, the step grid, and the handler that reads the store's metric
 * history through its C read API and answers a SeriesList.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "api/http.h"
#include "metrics/metrics.h"
#include "api/proto/sysobs.pb-c.h"
#include "api/query.h"
#include "api/reply.h"
#include "api/series.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "storage/store_query.h"

/* ---- selectors ---- */

/* Hand-written: the selector grammar is a dozen lines and no Debian library
 * parses PromQL selectors in C. The label text of stored series is the same
 * grammar restricted to '=', so it shares the pieces. */
struct sel_parser {
	const char *p;
	char *err;
	size_t errlen;
};

static void sel_ws(struct sel_parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

static bool sel_ident_start(char c, bool metric)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
}

static int sel_ident(struct sel_parser *ps, char *out, size_t len, bool metric)
{
	size_t n = 0;

	if (!sel_ident_start(*ps->p, metric)) {
		snprintf(ps->err, ps->errlen, "expected a %s name at '%.20s'",
			 metric ? "metric" : "label", ps->p);
		return -EINVAL;
	}
	while (sel_ident_start(*ps->p, metric) || (*ps->p >= '0' && *ps->p <= '9')) {
		if (n + 1 >= len) {
			snprintf(ps->err, ps->errlen, "name too long");
			return -EINVAL;
		}
		out[n++] = *ps->p++;
	}
	out[n] = '\0';
	return 0;
}

/* A double-quoted string, unescaped into out (len bytes with the NUL);
 * *used (if not NULL) gets its length. */
static int sel_string(struct sel_parser *ps, char *out, size_t len, size_t *used)
{
	size_t n = 0;

	if (*ps->p != '"') {
		snprintf(ps->err, ps->errlen, "expected '\"' at '%.20s'", ps->p);
		return -EINVAL;
	}
	ps->p++;
	for (;;) {
		char c = *ps->p++;

		if (c == '\0') {
			snprintf(ps->err, ps->errlen, "unterminated string");
			return -EINVAL;
		}
		if (c == '"')
			break;
		if (c == '\\') {
			c = *ps->p++;
			if (c == 'n')
				c = '\n';
			else if (c != '\\' && c != '"') {
				snprintf(ps->err, ps->errlen, "bad escape '\\%c' in string",
					 c ? c : '0');
				return -EINVAL;
			}
		}
		if (n + 1 >= len) {
			snprintf(ps->err, ps->errlen, "label value too long");
			return -EINVAL;
		}
		out[n++] = c;
	}
	out[n] = '\0';
	if (used)
		*used = n;
	return 0;
}

static int sel_matcher(struct sel_parser *ps, struct series_matcher *m)
{
	int ret;

	ret = sel_ident(ps, m->label, sizeof(m->label), false);
	if (ret)
		return ret;
	sel_ws(ps);
	if (ps->p[0] == '=' && ps->p[1] == '~') {
		snprintf(ps->err, ps->errlen, "regex matcher '=~' is not supported");
		return -EINVAL;
	}
	if (ps->p[0] == '!' && ps->p[1] == '~') {
		snprintf(ps->err, ps->errlen, "regex matcher '!~' is not supported");
		return -EINVAL;
	}
	if (ps->p[0] == '=') {
		m->op = SERIES_MATCH_EQ;
		ps->p++;
	} else if (ps->p[0] == '!' && ps->p[1] == '=') {
		m->op = SERIES_MATCH_NE;
		ps->p += 2;
	} else {
		snprintf(ps->err, ps->errlen, "expected '=' or '!=' after label %s", m->label);
		return -EINVAL;
	}
	sel_ws(ps);
	return sel_string(ps, m->value, sizeof(m->value), NULL);
}

/* matcher (',' matcher)* up to `close` ('}' or '\0'); a trailing comma is
 * accepted inside braces, as Prometheus does. */
static int sel_list(struct sel_parser *ps, char close, struct series_matcher *out, size_t max,
		    size_t *n)
{
	int ret;

	sel_ws(ps);
	if (*ps->p == close && close == '}')
		return 0;
	for (;;) {
		struct series_matcher m;

		ret = sel_matcher(ps, &m);
		if (ret)
			return ret;
		if (*n >= max) {
			snprintf(ps->err, ps->errlen, "more than %zu label matchers", max);
			return -E2BIG;
		}
		out[(*n)++] = m;
		sel_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			sel_ws(ps);
			if (*ps->p == close && close == '}')
				return 0;
			continue;
		}
		if (*ps->p == close)
			return 0;
		snprintf(ps->err, ps->errlen, "expected ',' or '%s' at '%.20s'",
			 close ? "}" : "end", ps->p);
		return -EINVAL;
	}
}

int series_matcher_parse(const char *s, char *name, size_t name_len, struct series_matcher *out,
			 size_t max, size_t *n, char *err, size_t errlen)
{
	struct sel_parser ps = {.p = s, .err = err, .errlen = errlen};
	const char *ident_end;
	char ident[128];
	int ret;

	if (name_len)
		name[0] = '\0';
	if (!s) {
		snprintf(err, errlen, "empty selector");
		return -EINVAL;
	}
	sel_ws(&ps);
	if (*ps.p == '\0') {
		snprintf(err, errlen, "empty selector");
		return -EINVAL;
	}
	if (*ps.p != '{') {
		const char *start = ps.p;

		ret = sel_ident(&ps, ident, sizeof(ident), true);
		if (ret)
			return ret;
		ident_end = ps.p;
		sel_ws(&ps);
		if (*ps.p == '=' || *ps.p == '!') {
			/* Bare form: label="value"[, ...] */
			ps.p = start;
			return sel_list(&ps, '\0', out, max, n);
		}
		if ((size_t)(ident_end - start) >= name_len) {
			snprintf(err, errlen, "metric name too long");
			return -EINVAL;
		}
		memcpy(name, start, (size_t)(ident_end - start));
		name[ident_end - start] = '\0';
		if (*ps.p == '\0')
			return 0;
		if (*ps.p != '{') {
			snprintf(err, errlen, "expected '{' after metric name at '%.20s'", ps.p);
			return -EINVAL;
		}
	}
	ps.p++;
	ret = sel_list(&ps, '}', out, max, n);
	if (ret)
		return ret;
	ps.p++;
	sel_ws(&ps);
	if (*ps.p != '\0') {
		snprintf(err, errlen, "unexpected '%.20s' after '}'", ps.p);
		return -EINVAL;
	}
	return 0;
}

/* ---- label text ---- */

int series_labels_parse(const char *text, struct series_labels **out)
{
	size_t len = strlen(text), max = len / 4 + 1, used = 0; /* a label takes >= 4 bytes: a="" */
	struct series_labels *l;
	char err[80];
	struct sel_parser ps = {.p = text, .err = err, .errlen = sizeof(err)};
	char *buf;

	*out = NULL;
	l = malloc(sizeof(*l) + max * sizeof(*l->v) + len + 1);
	if (!l)
		return -ENOMEM;
	l->n = 0;
	l->v = (struct series_label *)(l + 1);
	buf = (char *)(l->v + max);
	if (*ps.p == '\0')
		goto out;
	if (*ps.p++ != '{')
		goto out_inval;
	while (*ps.p != '}') {
		struct series_label *lb = &l->v[l->n];
		size_t n;

		/* Decoded text is never longer than its source: buf holds it all. */
		if (l->n == max || sel_ident(&ps, buf + used, len + 1 - used, false))
			goto out_inval;
		lb->name = buf + used;
		used += strlen(lb->name) + 1;
		if (*ps.p++ != '=' || sel_string(&ps, buf + used, len + 1 - used, &n))
			goto out_inval;
		lb->value = buf + used;
		used += n + 1;
		l->n++;
		if (*ps.p == ',')
			ps.p++;
		else if (*ps.p != '}')
			goto out_inval;
	}
	if (ps.p[1] != '\0')
		goto out_inval;
out:
	*out = l;
	return 0;
out_inval:
	free(l);
	return -EINVAL;
}

/* ---- the step grid ---- */

static int points_add(struct series_points *pts, int64_t ts_ns, double value)
{
	struct series_point *v = array_grow(pts->v, &pts->cap, pts->n, sizeof(*v), 64);

	if (!v)
		return -ENOMEM;
	pts->v = v;
	pts->v[pts->n++] = (struct series_point){ts_ns, value};
	return 0;
}

uint64_t series_grid_count(int64_t start_ns, int64_t end_ns, int64_t step_ns)
{
	uint64_t span;

	if (start_ns > end_ns || step_ns <= 0)
		return 0;
	span = (uint64_t)end_ns - (uint64_t)start_ns; /* exact: end >= start */
	return span / (uint64_t)step_ns == UINT64_MAX ? UINT64_MAX : span / (uint64_t)step_ns + 1;
}

void series_grid_init(struct series_grid *g, int64_t start_ns, int64_t end_ns, int64_t step_ns)
{
	*g = (struct series_grid){
	    .next = start_ns,
	    .end = end_ns,
	    .step = step_ns,
	    .done = start_ns > end_ns || step_ns <= 0,
	};
}

/* Moves next k grid times on; done past end or past int64. */
static void grid_skip(struct series_grid *g, uint64_t k)
{
	uint64_t left = (uint64_t)g->end - (uint64_t)g->next; /* next <= end */

	if (k > left / (uint64_t)g->step) {
		g->done = true;
		return;
	}
	g->next = (int64_t)((uint64_t)g->next + k * (uint64_t)g->step);
}

/* Decides every grid time before ts from the sample held. */
static int grid_decide_before(struct series_grid *g, int64_t ts_ns, struct series_points *out)
{
	while (!g->done && g->next < ts_ns) {
		/* last.ts <= next: the age cannot overflow as unsigned. */
		if (g->have &&
		    (uint64_t)g->next - (uint64_t)g->last.ts_ns < (uint64_t)SERIES_LOOKBACK_NS) {
			if (points_add(out, g->next, g->last.value))
				return -ENOMEM;
			grid_skip(g, 1);
		} else {
			/* The sample held (if any) is out of reach of every
			 * later grid time too: jump to the first at or after ts. */
			uint64_t gap = (uint64_t)ts_ns - (uint64_t)g->next;
			uint64_t step = (uint64_t)g->step;

			grid_skip(g, gap / step + (gap % step != 0));
		}
	}
	return 0;
}

int series_grid_add(struct series_grid *g, int64_t ts_ns, double value, struct series_points *out)
{
	if (grid_decide_before(g, ts_ns, out))
		return -ENOMEM;
	g->have = true;
	g->last = (struct series_point){ts_ns, value};
	return 0;
}

int series_grid_finish(struct series_grid *g, struct series_points *out)
{
	int ret = grid_decide_before(g, INT64_MAX, out);

	/* INT64_MAX itself, if it is on the grid. */
	if (!ret && !g->done && g->have &&
	    (uint64_t)g->next - (uint64_t)g->last.ts_ns < (uint64_t)SERIES_LOOKBACK_NS)
		ret = points_add(out, g->next, g->last.value);
	g->done = true;
	return ret;
}

/* ---- the query ---- */

/* One selected series and, once read, its points. */
struct series_sel {
	int64_t id;
	struct series_labels *labels;
	struct series_points pts;
};

struct series_query {
	const char *name;
	struct series_matcher m[SERIES_MATCHERS_MAX];
	size_t n_m;
	int64_t start_ns, end_ns, step_ns;

	struct series_sel *sel;
	size_t n_sel, cap_sel;
	size_t n_points; /* in all series */

	/* while reading one series */
	struct series_sel *cur;
	struct series_grid grid;
};

static const char *labels_get(const struct series_labels *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->v[i].name, name) == 0)
			return l->v[i].value;
	}
	return ""; /* Prometheus: an absent label equals "" */
}

static bool series_matches(const struct series_query *q, const char *name,
			   const struct series_labels *l)
{
	for (size_t i = 0; i < q->n_m; i++) {
		const struct series_matcher *m = &q->m[i];
		const char *v = strcmp(m->label, "__name__") == 0 ? name : labels_get(l, m->label);

		if ((strcmp(v, m->value) == 0) != (m->op == SERIES_MATCH_EQ))
			return false;
	}
	return true;
}

/* store_series_each: keeps the series the matchers select. */
static int series_select(int64_t id, const char *name, const char *labels, void *arg)
{
	struct series_query *q = arg;
	struct series_labels *l;
	int ret;

	ret = series_labels_parse(labels, &l);
	if (ret == -EINVAL)
		return 0; /* not written by the agent: not a series we know */
	if (ret)
		return ret;
	if (!series_matches(q, name, l)) {
		free(l);
		return 0;
	}
	if (q->n_sel == SERIES_MAX) {
		free(l);
		return -E2BIG;
	}
	if (q->n_sel == q->cap_sel) {
		size_t cap = q->cap_sel ? q->cap_sel * 2 : 16;
		struct series_sel *v = realloc(q->sel, cap * sizeof(*v));

		if (!v) {
			free(l);
			return -ENOMEM;
		}
		q->sel = v;
		q->cap_sel = cap;
	}
	q->sel[q->n_sel++] = (struct series_sel){.id = id, .labels = l};
	return 0;
}

/* store_series_samples without step: every sample is a point. */
static int series_raw_sample(int64_t ts_ns, double value, void *arg)
{
	struct series_query *q = arg;

	if (q->cur->pts.n == SERIES_POINTS_MAX)
		return -E2BIG;
	return points_add(&q->cur->pts, ts_ns, value);
}

/* store_series_samples with step: samples feed the grid. */
static int series_grid_sample(int64_t ts_ns, double value, void *arg)
{
	struct series_query *q = arg;

	return series_grid_add(&q->grid, ts_ns, value, &q->cur->pts);
}

static void series_query_free(struct series_query *q)
{
	for (size_t i = 0; i < q->n_sel; i++) {
		free(q->sel[i].labels);
		free(q->sel[i].pts.v);
	}
	free(q->sel);
}

/* Reads the points of every selected series. 0 or a negative errno, with
 * -E2BIG's message in err. */
static int series_read(struct store *store, struct series_query *q, char *err, size_t errlen)
{
	int64_t from = q->start_ns;
	int ret;

	/* The grid's first point may take a sample up to the lookback older. */
	if (q->step_ns)
		from = q->start_ns > INT64_MIN + SERIES_LOOKBACK_NS
			   ? q->start_ns - SERIES_LOOKBACK_NS + 1
			   : INT64_MIN;
	for (size_t i = 0; i < q->n_sel; i++) {
		q->cur = &q->sel[i];
		if (q->step_ns) {
			series_grid_init(&q->grid, q->start_ns, q->end_ns, q->step_ns);
			ret = store_series_samples(store, q->cur->id, from, q->end_ns,
						   series_grid_sample, q);
			if (!ret)
				ret = series_grid_finish(&q->grid, &q->cur->pts);
		} else {
			ret = store_series_samples(store, q->cur->id, from, q->end_ns,
						   series_raw_sample, q);
			if (ret == -E2BIG)
				snprintf(err, errlen,
					 "more than %d points in one series: add a step or "
					 "shorten start/end",
					 SERIES_POINTS_MAX);
		}
		if (ret)
			return ret;
		q->n_points += q->cur->pts.n;
		if (q->n_points > SERIES_POINTS_TOTAL_MAX) {
			snprintf(err, errlen,
				 "more than %d points in one answer: narrow start/end, add "
				 "match[] selectors or raise step",
				 SERIES_POINTS_TOTAL_MAX);
			return -E2BIG;
		}
	}
	return 0;
}

static void timestamp_set(Google__Protobuf__Timestamp *t, int64_t ns)
{
	int64_t s = ns / 1000000000, frac = ns % 1000000000;

	if (frac < 0) { /* floor: nanos is always 0..999999999 */
		frac += 1000000000;
		s--;
	}
	google__protobuf__timestamp__init(t);
	t->seconds = s;
	t->nanos = (int32_t)frac;
}

/* The answer: every allocation of the message lives in one of these arrays. */
struct series_msg {
	Sysobs__V1__SeriesList list;
	Sysobs__V1__Series *series, **series_p;
	Sysobs__V1__Series__LabelsEntry *labels, **labels_p;
	Sysobs__V1__Point *points, **points_p;
	Google__Protobuf__Timestamp *times;
};

static void series_msg_free(struct series_msg *m)
{
	free(m->series);
	free(m->series_p);
	free(m->labels);
	free(m->labels_p);
	free(m->points);
	free(m->points_p);
	free(m->times);
}

/* Builds the SeriesList of the series that have points; the strings stay
 * q's. 0 or -ENOMEM. */
static int series_msg_build(struct series_msg *m, const struct series_query *q)
{
	size_t n_series = 0, n_labels = 0, il = 0, ip = 0;
	Sysobs__V1__SeriesList init = SYSOBS__V1__SERIES_LIST__INIT;

	*m = (struct series_msg){.list = init};
	for (size_t i = 0; i < q->n_sel; i++) {
		if (q->sel[i].pts.n) {
			n_series++;
			n_labels += q->sel[i].labels->n + 1; /* and __name__ */
		}
	}
	/* +1: calloc(0) may return NULL */
	m->series = calloc(n_series + 1, sizeof(*m->series));
	m->series_p = calloc(n_series + 1, sizeof(*m->series_p));
	m->labels = calloc(n_labels + 1, sizeof(*m->labels));
	m->labels_p = calloc(n_labels + 1, sizeof(*m->labels_p));
	m->points = calloc(q->n_points + 1, sizeof(*m->points));
	m->points_p = calloc(q->n_points + 1, sizeof(*m->points_p));
	m->times = calloc(q->n_points + 1, sizeof(*m->times));
	if (!m->series || !m->series_p || !m->labels || !m->labels_p || !m->points ||
	    !m->points_p || !m->times)
		return -ENOMEM;
	for (size_t i = 0; i < q->n_sel; i++) {
		const struct series_sel *sel = &q->sel[i];
		Sysobs__V1__Series *s = &m->series[m->list.n_data];

		if (!sel->pts.n)
			continue;
		sysobs__v1__series__init(s);
		s->labels = &m->labels_p[il];
		s->points = &m->points_p[ip];
		for (size_t k = 0; k <= sel->labels->n; k++) {
			Sysobs__V1__Series__LabelsEntry *e = &m->labels[il];

			sysobs__v1__series__labels_entry__init(e);
			e->key = k ? (char *)sel->labels->v[k - 1].name : "__name__";
			e->value = k ? (char *)sel->labels->v[k - 1].value : (char *)q->name;
			m->labels_p[il++] = e;
		}
		s->n_labels = sel->labels->n + 1;
		for (size_t k = 0; k < sel->pts.n; k++) {
			Sysobs__V1__Point *p = &m->points[ip];

			sysobs__v1__point__init(p);
			timestamp_set(&m->times[ip], sel->pts.v[k].ts_ns);
			p->time = &m->times[ip];
			p->value = sel->pts.v[k].value;
			m->points_p[ip++] = p;
		}
		s->n_points = sel->pts.n;
		m->series_p[m->list.n_data++] = s;
	}
	m->list.data = m->series_p;
	return 0;
}

/* The metric name and matchers of ?metric= and every ?match[]=; 0 or -1
 * after a 400. */
static int series_selection(const struct http_request *req, struct http_response *res, int enc,
			    struct series_query *q, char *name, size_t name_len)
{
	const char *sel[SERIES_MATCHERS_MAX + 1], *metric = http_query(req, "metric");
	char err[256], sel_name[128];
	size_t n;

	name[0] = '\0';
	if (metric && *metric) {
		if (!metrics_name_valid(metric) || strlen(metric) >= name_len) {
			api_error(res, enc, 400, "bad_request",
				  "metric: not a metric name: \"%.64s\"", metric);
			return -1;
		}
		snprintf(name, name_len, "%s", metric);
	}
	n = http_query_all(req, "match[]", sel, SERIES_MATCHERS_MAX + 1);
	if (n > SERIES_MATCHERS_MAX) {
		api_error(res, enc, 400, "bad_request", "match[]: at most %d selectors",
			  SERIES_MATCHERS_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (series_matcher_parse(sel[i], sel_name, sizeof(sel_name), q->m,
					 SERIES_MATCHERS_MAX, &q->n_m, err, sizeof(err))) {
			api_error(res, enc, 400, "bad_request", "match[]: %s", err);
			return -1;
		}
		if (!sel_name[0])
			continue;
		if (name[0] && strcmp(name, sel_name) != 0) {
			api_error(res, enc, 400, "bad_request",
				  "match[]: selector names metric %s, but the metric is %s",
				  sel_name, name);
			return -1;
		}
		snprintf(name, name_len, "%s", sel_name);
	}
	/* {__name__="x"} names the metric as well as x{} does. */
	for (size_t i = 0; i < q->n_m && !name[0]; i++) {
		if (q->m[i].op == SERIES_MATCH_EQ && !strcmp(q->m[i].label, "__name__") &&
		    metrics_name_valid(q->m[i].value))
			snprintf(name, name_len, "%s", q->m[i].value);
	}
	if (!name[0]) {
		api_error(res, enc, 400, "bad_request",
			  "a metric name is required: ?metric=sysobs_events_written_total, or a "
			  "match[] selector naming one");
		return -1;
	}
	q->name = name;
	return 0;
}

void api_series_at(const struct http_request *req, struct http_response *res, struct store *store,
		   int64_t now_ns)
{
	static const char *const allowed[] = {"metric", "match[]", "start", "end", "step", NULL};
	struct series_query q = {0};
	struct series_msg m = {0};
	struct query_window w;
	char name[128], err[256] = "", buf[DURATION_FMT_SIZE];
	int enc = api_encoding(req, res), ret;

	if (enc < 0 || query_params_check(req, allowed, res) ||
	    query_window_parse_at(req, now_ns, &w, res) || query_step_parse(req, &q.step_ns, res) ||
	    series_selection(req, res, enc, &q, name, sizeof(name)))
		return;
	if (!store) {
		api_error(res, enc, 503, "unavailable", "no storage: metric history is off");
		return;
	}
	/* History without a start would grow with uptime until it passes the
	 * caps: the default is the hour before end. */
	q.end_ns = w.end_set ? w.end_ns : now_ns;
	q.start_ns = w.start_set ? w.start_ns
		     : q.end_ns > INT64_MIN + SERIES_RANGE_DEFAULT_NS
			 ? q.end_ns - SERIES_RANGE_DEFAULT_NS
			 : INT64_MIN;
	if (q.start_ns > q.end_ns) {
		api_error(res, enc, 400, "bad_request", "start %s is after end (now)",
			  http_query(req, "start"));
		return;
	}
	if (q.step_ns && series_grid_count(q.start_ns, q.end_ns, q.step_ns) > SERIES_POINTS_MAX) {
		duration_format(q.step_ns, buf, sizeof(buf));
		api_error(res, enc, 400, "bad_request",
			  "step %s from start to end is more than %d points per series: raise "
			  "step or shorten start/end",
			  buf, SERIES_POINTS_MAX);
		return;
	}

	ret = store_series_each(store, q.name, series_select, &q);
	if (ret == -E2BIG)
		snprintf(err, sizeof(err), "more than %d series match: narrow the selectors",
			 SERIES_MAX);
	if (!ret)
		ret = series_read(store, &q, err, sizeof(err));
	if (!ret)
		ret = series_msg_build(&m, &q);
	if (ret == -E2BIG)
		api_error(res, enc, 400, "bad_request", "%s", err);
	else if (ret == -EBUSY)
		api_error(res, enc, 503, "unavailable", "all database readers are busy");
	else if (ret == -ETIMEDOUT)
		api_error(res, enc, 503, "query_timeout",
			  "the query ran past [storage] query_timeout: narrow the time window or "
			  "the match[] selectors");
	else if (ret == -ENOMEM)
		api_error(res, enc, 500, "internal", "out of memory");
	else if (ret)
		api_error(res, enc, 500, "internal", "reading metric history failed: %s",
			  strerror(-ret));
	else
		api_reply(res, 200, enc, &m.list.base);
	series_msg_free(&m);
	series_query_free(&q);
}

void api_series(const struct http_request *req, struct http_response *res, struct store *store)
{
	api_series_at(req, res, store, clock_wall_ns());
}
