/* SPDX-License-Identifier: MIT */
/*
 * In-memory metrics registry (the encoders are metrics_text.c and
 * metrics_pb.c).
 *
 * Families live in an array sorted by name (registration is rare, rendering
 * walks them in order). Each family keeps its series in a doubly-linked list
 * (cheap removal) and a chained hash table keyed by the label values (cheap
 * lookup with 10,000+ series). A series renders its label set once, when it is
 * created, so a scrape only copies bytes and formats numbers. The render order
 * of series is by label values; the sorted view is rebuilt only after the
 * set of series changed.
 *
 * One mutex protects everything: updates from the main thread are a few
 * instructions under it, and a scrape holds it for the time of one render.
 *
 * Native histogram buckets (nhist.c) are kept beside the classic ones for
 * histograms fed by series_observe(); a histogram set whole from a kernel
 * (series_histogram_set) gets its native buckets re-binned from the classic
 * counts at render time. A series whose object is gone stays until
 * metrics_expire() removes it after the grace period.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/metrics_internal.h"
#include "api/utf8.h"
#include "agent/log.h"

#define HASH_MIN_BUCKETS 16

static void series_unlink_locked(struct metric *f, struct metric_series *s);

/* ---- names, values, escaping ---- */

static bool name_valid(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (p != s && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

bool metrics_name_valid(const char *name)
{
	return name_valid(name, true);
}

bool metrics_label_name_valid(const char *name)
{
	/* Names starting with "__" are reserved for Prometheus itself. */
	return name_valid(name, false) && strncmp(name, "__", 2) != 0;
}

/* Exposition escaping: backslash and line feed, and the double quote when
 * `quote` (label values always; HELP text in OpenMetrics only). */
void metrics_buf_escaped(struct buf *b, const char *s, bool quote)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = NULL;

		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '\n')
			esc = "\\n";
		else if (quote && *s == '"')
			esc = "\\\"";
		if (!esc)
			continue;
		buf_append(b, run, (size_t)(s - run));
		buf_append(b, esc, 2);
		run = s + 1;
	}
	buf_append(b, run, (size_t)(s - run));
}

size_t metrics_fmt_u64(uint64_t v, char *out)
{
	char tmp[24];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}

/*
 * Formats a sample value the way Prometheus parses it: "+Inf", "-Inf", "NaN",
 * integers (exactly representable, |v| <= 2^53) as plain digits without an
 * exponent, anything else with the fewest significant digits that read back
 * to the same double. buf holds at least METRICS_VALUE_MAX bytes.
 */
size_t metrics_format_value(double v, char *buf)
{
	if (isnan(v))
		return (size_t)stpcpy(buf, "NaN") - (size_t)buf;
	if (isinf(v))
		return (size_t)stpcpy(buf, v > 0 ? "+Inf" : "-Inf") - (size_t)buf;
	if (fabs(v) <= 9007199254740992.0 && v == trunc(v)) {
		if (v < 0) {
			buf[0] = '-';
			return 1 + metrics_fmt_u64((uint64_t)-v, buf + 1);
		}
		return metrics_fmt_u64((uint64_t)v, buf);
	}
	for (int prec = 15; prec <= 17; prec++) {
		int n = snprintf(buf, METRICS_VALUE_MAX, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			return (size_t)n;
	}
	return 0; /* not reached */
}

/* ---- registry ---- */

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->native = (struct metrics_native){
	    .enabled = true,
	    .schema = 3,
	    .zero_threshold = NHIST_ZERO_THRESHOLD_DEFAULT,
	    .max_buckets = NHIST_MAX_BUCKETS_DEFAULT,
	};
	return m;
}

int metrics_set_native(struct metrics *m, const struct metrics_native *n)
{
	if (!m || !n || n->schema < NHIST_SCHEMA_MIN || n->schema > NHIST_SCHEMA_MAX ||
	    !(n->zero_threshold >= 0) || !isfinite(n->zero_threshold) ||
	    (n->max_buckets && n->max_buckets < 2))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	m->native = *n;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int metrics_add_hook(struct metrics *m, metrics_hook_fn fn, void *arg)
{
	int err = 0;

	pthread_mutex_lock(&m->lock);
	if (m->n_hooks == METRICS_HOOKS_MAX) {
		err = -ENOSPC;
	} else {
		m->hooks[m->n_hooks].fn = fn;
		m->hooks[m->n_hooks].arg = arg;
		m->n_hooks++;
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

static void series_free(struct metric_series *s)
{
	nhist_free(&s->nh);
	free(s->ex);
	free(s);
}

static void family_clear_locked(struct metric *f)
{
	struct metric_series *s = f->head, *next;

	for (; s; s = next) {
		next = s->next;
		series_free(s);
	}
	f->m->n_series -= f->n_series;
	f->head = f->tail = NULL;
	f->n_series = 0;
	if (f->table)
		memset(f->table, 0, f->n_buckets * sizeof(*f->table));
	f->order_dirty = true;
}

static void family_free(struct metric *f)
{
	if (!f)
		return;
	if (f->m)
		family_clear_locked(f);
	for (size_t i = 0; i < f->n_labels; i++)
		free(f->labels[i]);
	if (f->le) {
		for (size_t i = 0; i <= f->n_bounds; i++)
			free(f->le[i]);
	}
	free(f->le);
	free(f->bounds);
	free(f->table);
	free(f->order);
	free(f->name);
	free(f->help);
	free(f->owner);
	free(f->name_bucket);
	free(f->name_sum);
	free(f->name_count);
	free(f);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_fams; i++)
		family_free(m->fams[i]);
	free(m->fams);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* Binary search: index of name, or of where it would be inserted. */
static size_t family_find(const struct metrics *m, const char *name, bool *found)
{
	size_t lo = 0, hi = m->n_fams;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->fams[mid]->name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool family_same(const struct metric *f, enum metric_type type, const char *const *labels,
			size_t n_labels, const double *bounds, size_t n_bounds)
{
	if (f->type != type || f->n_labels != n_labels)
		return false;
	for (size_t i = 0; i < n_labels; i++) {
		if (strcmp(f->labels[i], labels[i]))
			return false;
	}
	if (type == METRIC_HISTOGRAM) {
		if (f->n_bounds != n_bounds)
			return false;
		for (size_t i = 0; i < n_bounds; i++) {
			if (f->bounds[i] != bounds[i])
				return false;
		}
	}
	return true;
}

static char *str_concat(const char *a, const char *b)
{
	char *s = malloc(strlen(a) + strlen(b) + 1);

	if (s)
		strcpy(stpcpy(s, a), b);
	return s;
}

static int family_init(struct metric *f, enum metric_type type, const char *name, const char *help,
		       const char *const *labels, size_t n_labels, const double *bounds,
		       size_t n_bounds)
{
	f->type = type;
	f->unit = metrics_name_unit(name, type == METRIC_COUNTER);
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (!f->name || !f->help)
		return -ENOMEM;
	for (size_t i = 0; i < n_labels; i++) {
		f->labels[i] = strdup(labels[i]);
		if (!f->labels[i])
			return -ENOMEM;
		f->n_labels++;
	}
	if (type == METRIC_HISTOGRAM) {
		f->name_bucket = str_concat(name, "_bucket");
		f->name_sum = str_concat(name, "_sum");
		f->name_count = str_concat(name, "_count");
		f->bounds = calloc(n_bounds ? n_bounds : 1, sizeof(*f->bounds));
		f->le = calloc(n_bounds + 1, sizeof(*f->le));
		if (!f->name_bucket || !f->name_sum || !f->name_count || !f->bounds || !f->le)
			return -ENOMEM;
		f->n_bounds = n_bounds;
		for (size_t i = 0; i <= n_bounds; i++) {
			char tmp[METRICS_VALUE_MAX];

			if (i < n_bounds) {
				f->bounds[i] = bounds[i];
				metrics_format_value(bounds[i], tmp);
			} else {
				strcpy(tmp, "+Inf");
			}
			f->le[i] = strdup(tmp);
			if (!f->le[i])
				return -ENOMEM;
		}
	}
	f->n_buckets = HASH_MIN_BUCKETS;
	f->table = calloc(f->n_buckets, sizeof(*f->table));
	if (!f->table)
		return -ENOMEM;
	f->order_dirty = true;
	return 0;
}

/*
 * OpenMetrics names a counter family without its _total: a counter X_total
 * and a family X would be two families of one name there (a scrape fails).
 * Refused at registration, whichever comes second.
 */
static bool om_name_clash(const struct metrics *m, enum metric_type type, const char *name)
{
	size_t n = strlen(name), i;
	bool counter_total = type == METRIC_COUNTER && n > 6 && !strcmp(name + n - 6, "_total");
	char other[256];
	bool found;

	if (n + 7 > sizeof(other))
		return false;
	memcpy(other, name, n);
	if (counter_total)
		other[n - 6] = '\0'; /* X_total: is there an X? */
	else
		strcpy(other + n, "_total"); /* X: is there a counter X_total? */
	i = family_find(m, other, &found);
	return found && (counter_total || m->fams[i]->type == METRIC_COUNTER);
}

static struct metric *metrics_register(struct metrics *m, enum metric_type type, const char *name,
				       const char *help, const char *const *labels,
				       const double *bounds, size_t n_bounds)
{
	size_t n_labels = 0, pos;
	struct metric *f = NULL;
	bool found;
	int err;

	if (!m || !metrics_name_valid(name) || (help && !utf8_valid(help))) {
		errno = EINVAL;
		return NULL;
	}
	for (; labels && labels[n_labels]; n_labels++) {
		if (n_labels >= METRIC_MAX_LABELS || !metrics_label_name_valid(labels[n_labels]) ||
		    (type == METRIC_HISTOGRAM && !strcmp(labels[n_labels], "le"))) {
			errno = EINVAL;
			return NULL;
		}
		for (size_t j = 0; j < n_labels; j++) {
			if (!strcmp(labels[j], labels[n_labels])) {
				errno = EINVAL;
				return NULL;
			}
		}
	}
	if (type == METRIC_HISTOGRAM) {
		/* A trailing +Inf is implied; drop it if the caller gave it. */
		if (n_bounds && isinf(bounds[n_bounds - 1]) && bounds[n_bounds - 1] > 0)
			n_bounds--;
		for (size_t i = 0; i < n_bounds; i++) {
			if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1])) {
				errno = EINVAL;
				return NULL;
			}
		}
	}

	pthread_mutex_lock(&m->lock);
	if (om_name_clash(m, type, name)) {
		err = -EEXIST;
		goto out_unlock;
	}
	pos = family_find(m, name, &found);
	if (found) {
		f = m->fams[pos];
		if (!family_same(f, type, labels, n_labels, bounds, n_bounds)) {
			f = NULL;
			err = -EEXIST;
		}
		goto out_unlock;
	}
	if (m->n_fams == m->cap_fams) {
		size_t cap = m->cap_fams ? m->cap_fams * 2 : 32;
		struct metric **fams = realloc(m->fams, cap * sizeof(*fams));

		if (!fams) {
			err = -ENOMEM;
			goto out_unlock;
		}
		m->fams = fams;
		m->cap_fams = cap;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		err = -ENOMEM;
		goto out_unlock;
	}
	err = family_init(f, type, name, help, labels, n_labels, bounds, n_bounds);
	if (err) {
		family_free(f);
		f = NULL;
		goto out_unlock;
	}
	f->m = m;
	memmove(&m->fams[pos + 1], &m->fams[pos], (m->n_fams - pos) * sizeof(*m->fams));
	m->fams[pos] = f;
	m->n_fams++;
out_unlock:
	pthread_mutex_unlock(&m->lock);
	if (!f)
		errno = -err;
	return f;
}

struct metric *metrics_counter(struct metrics *m, const char *name, const char *help,
			       const char *const *labels)
{
	return metrics_register(m, METRIC_COUNTER, name, help, labels, NULL, 0);
}

struct metric *metrics_gauge(struct metrics *m, const char *name, const char *help,
			     const char *const *labels)
{
	return metrics_register(m, METRIC_GAUGE, name, help, labels, NULL, 0);
}

struct metric *metrics_histogram(struct metrics *m, const char *name, const char *help,
				 const char *const *labels, const double *bounds, size_t n_bounds)
{
	if (n_bounds && !bounds) {
		errno = EINVAL;
		return NULL;
	}
	return metrics_register(m, METRIC_HISTOGRAM, name, help, labels, bounds, n_bounds);
}

struct metric_series *metrics_counter1(struct metrics *m, const char *name, const char *help)
{
	struct metric *f = metrics_counter(m, name, help, NULL);

	return f ? metric_series(f, NULL) : NULL;
}

struct metric_series *metrics_gauge1(struct metrics *m, const char *name, const char *help)
{
	struct metric *f = metrics_gauge(m, name, help, NULL);

	return f ? metric_series(f, NULL) : NULL;
}

/* ---- series ---- */

/* FNV-1a over the values, each followed by a 0xff byte (never in UTF-8). */
static uint64_t values_hash(const char *const *values, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		for (const unsigned char *p = (const unsigned char *)values[i]; *p; p++) {
			h ^= *p;
			h *= 0x100000001b3ULL;
		}
		h ^= 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static bool values_equal(const struct metric_series *s, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s->values[i], values[i]))
			return false;
	}
	return true;
}

static void table_grow_locked(struct metric *f)
{
	size_t n = f->n_buckets * 2;
	struct metric_series **t = calloc(n, sizeof(*t));

	if (!t)
		return; /* longer chains, still correct */
	for (struct metric_series *s = f->head; s; s = s->next) {
		size_t b = s->hash & (n - 1);

		s->hnext = t[b];
		t[b] = s;
	}
	free(f->table);
	f->table = t;
	f->n_buckets = n;
}

/* One allocation: the struct, value pointers, bucket counts, the rendered
 * label set and the value strings. */
static struct metric_series *series_alloc(struct metric *f, const char *const *values)
{
	size_t n = f->n_labels, size, labels_len = 0, values_len = 0;
	struct metric_series *s;
	struct buf lb = {0};
	char *p;

	if (n) {
		buf_putc(&lb, '{');
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_putc(&lb, ',');
			buf_puts(&lb, f->labels[i]);
			buf_append(&lb, "=\"", 2);
			metrics_buf_escaped(&lb, values[i], true);
			buf_putc(&lb, '"');
			values_len += strlen(values[i]) + 1;
		}
		buf_putc(&lb, '}');
		if (lb.oom) {
			free(lb.p);
			return NULL;
		}
		labels_len = lb.len;
	}
	size = sizeof(*s) + n * sizeof(char *);
	if (f->type == METRIC_HISTOGRAM)
		size += (f->n_bounds + 1) * sizeof(uint64_t);
	size += labels_len + 1 + values_len;
	s = calloc(1, size);
	if (!s) {
		free(lb.p);
		return NULL;
	}
	p = (char *)(s + 1);
	s->values = (const char **)p;
	p += n * sizeof(char *);
	if (f->type == METRIC_HISTOGRAM) {
		s->counts = (uint64_t *)p;
		p += (f->n_bounds + 1) * sizeof(uint64_t);
	}
	s->labels = p;
	if (labels_len)
		memcpy(p, lb.p, labels_len);
	p[labels_len] = '\0';
	s->labels_len = labels_len;
	p += labels_len + 1;
	for (size_t i = 0; i < n; i++) {
		s->values[i] = p;
		p = stpcpy(p, values[i]) + 1;
	}
	free(lb.p);
	s->f = f;
	return s;
}

struct metric_series *metric_series(struct metric *f, const char *const *values)
{
	struct metric_series *s;
	uint64_t h;
	size_t b;

	if (!f || (f->n_labels && !values)) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < f->n_labels; i++) {
		if (!values[i] || !utf8_valid(values[i])) {
			errno = EINVAL;
			return NULL;
		}
	}
	h = values_hash(values, f->n_labels);

	pthread_mutex_lock(&f->m->lock);
	b = h & (f->n_buckets - 1);
	for (s = f->table[b]; s; s = s->hnext) {
		if (s->hash == h && values_equal(s, values, f->n_labels)) {
			s->gone_ns = 0; /* its object is back */
			goto out_unlock;
		}
	}
	if (f->n_series >= METRIC_MAX_SERIES) {
		errno = ENOSPC;
		goto out_unlock;
	}
	s = series_alloc(f, values);
	if (!s) {
		errno = ENOMEM;
		goto out_unlock;
	}
	s->hash = h;
	s->created_ms = clock_wall_ns() / 1000000;
	s->nh.schema = (int8_t)f->m->native.schema;
	s->hnext = f->table[b];
	f->table[b] = s;
	s->prev = f->tail;
	if (f->tail)
		f->tail->next = s;
	else
		f->head = s;
	f->tail = s;
	f->n_series++;
	f->m->n_series++;
	f->order_dirty = true;
	if (f->n_series > f->n_buckets)
		table_grow_locked(f);
out_unlock:
	pthread_mutex_unlock(&f->m->lock);
	return s;
}

void metric_series_remove(struct metric *f, struct metric_series *s)
{
	if (!f || !s || s->f != f)
		return;
	pthread_mutex_lock(&f->m->lock);
	series_unlink_locked(f, s);
	pthread_mutex_unlock(&f->m->lock);
	series_free(s);
}

void metric_clear(struct metric *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->m->lock);
	family_clear_locked(f);
	pthread_mutex_unlock(&f->m->lock);
}

void series_add(struct metric_series *s, double v)
{
	if (!s || s->f->type == METRIC_HISTOGRAM)
		return;
	/* A counter only goes up; a negative increment is a caller bug. */
	if (s->f->type == METRIC_COUNTER && !(v >= 0))
		return;
	pthread_mutex_lock(&s->f->m->lock);
	s->value += v;
	pthread_mutex_unlock(&s->f->m->lock);
}

void series_set(struct metric_series *s, double v)
{
	if (!s || s->f->type == METRIC_HISTOGRAM)
		return;
	pthread_mutex_lock(&s->f->m->lock);
	s->value = v;
	/* A counter set from a total kept elsewhere (a kernel map, a MIB):
	 * when it started counting is not known here. */
	s->created_unknown = true;
	pthread_mutex_unlock(&s->f->m->lock);
}

/* First classic bucket whose upper bound is >= v (le is inclusive); NaN
 * lands in +Inf, like in the Go client. */
static size_t bucket_of(const struct metric *f, double v)
{
	size_t lo = 0, hi = f->n_bounds;

	if (isnan(v))
		return hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->bounds[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi;
}

void series_observe(struct metric_series *s, double v)
{
	const struct metric *f;
	size_t hi;

	if (!s || s->f->type != METRIC_HISTOGRAM)
		return;
	f = s->f;
	hi = bucket_of(f, v);
	pthread_mutex_lock(&f->m->lock);
	s->counts[hi]++;
	s->sum += v;
	if (f->m->native.enabled)
		nhist_add(&s->nh, v, 1, f->m->native.zero_threshold, f->m->native.max_buckets);
	pthread_mutex_unlock(&f->m->lock);
}

void series_histogram_set(struct metric_series *s, const uint64_t *counts, double sum)
{
	if (!s || !counts || s->f->type != METRIC_HISTOGRAM)
		return;
	pthread_mutex_lock(&s->f->m->lock);
	memcpy(s->counts, counts, (s->f->n_bounds + 1) * sizeof(*counts));
	s->sum = sum;
	s->created_unknown = true;
	pthread_mutex_unlock(&s->f->m->lock);
}

double series_value(const struct metric_series *s)
{
	double v;

	if (!s)
		return NAN;
	pthread_mutex_lock(&s->f->m->lock);
	v = s->f->type == METRIC_HISTOGRAM ? (double)series_count_locked(s) : s->value;
	pthread_mutex_unlock(&s->f->m->lock);
	return v;
}

size_t metrics_series_count(struct metrics *m)
{
	size_t n;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	n = m->n_series;
	pthread_mutex_unlock(&m->lock);
	return n;
}

int metric_set_owner(struct metric *f, const char *owner)
{
	char *o = owner ? strdup(owner) : NULL;

	if (!f || (owner && !o))
		return -ENOMEM;
	pthread_mutex_lock(&f->m->lock);
	free(f->owner);
	f->owner = o;
	pthread_mutex_unlock(&f->m->lock);
	return 0;
}

/* ---- series whose object is gone ---- */

void metric_series_gone(struct metric *f, struct metric_series *s, int64_t now_ns)
{
	if (!f || !s || s->f != f)
		return;
	pthread_mutex_lock(&f->m->lock);
	if (!s->gone_ns)
		s->gone_ns = now_ns > 0 ? now_ns : 1;
	pthread_mutex_unlock(&f->m->lock);
}

void metrics_owner_gone(struct metrics *m, const char *owner, int64_t now_ns)
{
	if (!m || !owner)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_fams; i++) {
		struct metric *f = m->fams[i];

		if (!f->owner || strcmp(f->owner, owner))
			continue;
		for (struct metric_series *s = f->head; s; s = s->next)
			if (!s->gone_ns)
				s->gone_ns = now_ns > 0 ? now_ns : 1;
	}
	pthread_mutex_unlock(&m->lock);
}

/* Unlinks s from f (hash chain and list); the caller frees it. */
static void series_unlink_locked(struct metric *f, struct metric_series *s)
{
	struct metric_series **pp;

	for (pp = &f->table[s->hash & (f->n_buckets - 1)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	}
	if (s->prev)
		s->prev->next = s->next;
	else
		f->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		f->tail = s->prev;
	f->n_series--;
	f->m->n_series--;
	f->order_dirty = true;
}

#define EXPIRE_OWNERS_MAX 32

size_t metrics_expire(struct metrics *m, int64_t now_ns, int64_t grace_ns, metrics_removed_fn fn,
		      void *arg)
{
	struct {
		const char *owner; /* families (and owners) live as long as m */
		size_t n;
	} by[EXPIRE_OWNERS_MAX];
	size_t n_by = 0, total = 0;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_fams; i++) {
		struct metric *f = m->fams[i];
		size_t n = 0;

		for (struct metric_series *s = f->head, *next; s; s = next) {
			next = s->next;
			if (!s->gone_ns || now_ns - s->gone_ns < grace_ns)
				continue;
			series_unlink_locked(f, s);
			series_free(s);
			n++;
		}
		if (!n)
			continue;
		total += n;
		size_t j = 0;
		while (j < n_by && !(by[j].owner == f->owner ||
				     (by[j].owner && f->owner && !strcmp(by[j].owner, f->owner))))
			j++;
		if (j == n_by && n_by < EXPIRE_OWNERS_MAX)
			by[n_by++] = (typeof(by[0])){f->owner, 0};
		if (j < n_by)
			by[j].n += n;
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t j = 0; fn && j < n_by; j++)
		fn(by[j].owner, by[j].n, arg);
	return total;
}

/* ---- exemplars ---- */

int series_exemplar(struct metric_series *s, const char *name, const char *value, double v,
		    double ts)
{
	struct metric_exemplar *e;
	size_t nl, vl, slot = 0;

	if (!s || !metrics_label_name_valid(name) || !value || !utf8_valid(value))
		return -EINVAL;
	nl = strlen(name);
	vl = strlen(value);
	if (nl + vl > METRIC_EXEMPLAR_MAX)
		return -EINVAL;
	if (s->f->type == METRIC_GAUGE)
		return -EINVAL;
	if (s->f->type == METRIC_HISTOGRAM)
		slot = bucket_of(s->f, v);
	pthread_mutex_lock(&s->f->m->lock);
	if (!s->ex) {
		size_t n = s->f->type == METRIC_HISTOGRAM ? s->f->n_bounds + 1 : 1;

		s->ex = calloc(n, sizeof(*s->ex));
		if (!s->ex) {
			pthread_mutex_unlock(&s->f->m->lock);
			return -ENOMEM;
		}
	}
	e = &s->ex[slot];
	e->value = v;
	e->ts_ms = (int64_t)llround(ts * 1000);
	e->name_len = (uint8_t)nl;
	memcpy(e->text, name, nl + 1);
	memcpy(e->text + nl + 1, value, vl + 1);
	pthread_mutex_unlock(&s->f->m->lock);
	return 0;
}

/* ---- what encoders share ---- */

const char *metrics_name_unit(const char *name, bool counter)
{
	static const char *const units[] = {"seconds", "bytes", "ratio", "celsius", NULL};
	size_t n = strlen(name);

	if (counter && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	for (size_t i = 0; units[i]; i++) {
		size_t u = strlen(units[i]);

		if (n > u + 1 && name[n - u - 1] == '_' && !strncmp(name + n - u, units[i], u))
			return units[i];
	}
	return NULL;
}

bool family_selected(const struct metric *f, const char *const *owners)
{
	if (!owners || !f->owner)
		return true;
	for (; *owners; owners++)
		if (!strcmp(*owners, f->owner))
			return true;
	return false;
}

uint64_t series_count_locked(const struct metric_series *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i <= s->f->n_bounds; i++)
		n += s->counts[i];
	return n;
}

/*
 * A histogram set whole from kernel buckets has no exact native form: each
 * classic bucket (lo, hi] lands in the native bucket holding its geometric
 * middle (the first one, (0, b0], at b0; +Inf above twice the last bound),
 * so a quantile read from it is off by at most one classic bucket. Observed
 * histograms have exact native buckets.
 */
const struct nhist *series_native_locked(const struct metric_series *s, struct nhist *tmp)
{
	const struct metric *f = s->f;
	const struct metrics_native *cfg = &f->m->native;

	if (!cfg->enabled || f->type != METRIC_HISTOGRAM)
		return NULL;
	if (!s->created_unknown)
		return &s->nh;
	memset(tmp, 0, sizeof(*tmp));
	tmp->schema = (int8_t)cfg->schema;
	for (size_t i = 0; i <= f->n_bounds; i++) {
		double at;

		if (!s->counts[i])
			continue;
		if (i == f->n_bounds)
			at = f->n_bounds ? 2 * f->bounds[f->n_bounds - 1] : 1;
		else if (i == 0 || f->bounds[i - 1] <= 0)
			at = f->bounds[i];
		else
			at = sqrt(f->bounds[i - 1] * f->bounds[i]);
		if (nhist_add(tmp, at, s->counts[i], cfg->zero_threshold, cfg->max_buckets)) {
			nhist_free(tmp);
			return NULL;
		}
	}
	return tmp;
}

static int series_cmp(const void *a, const void *b)
{
	const struct metric_series *x = *(struct metric_series *const *)a;
	const struct metric_series *y = *(struct metric_series *const *)b;

	for (size_t i = 0; i < x->f->n_labels; i++) {
		int c = strcmp(x->values[i], y->values[i]);

		if (c)
			return c;
	}
	return 0;
}

int family_order_locked(struct metric *f)
{
	size_t i = 0;

	if (!f->order_dirty)
		return 0;
	if (f->order_cap < f->n_series) {
		size_t cap = f->n_series + f->n_series / 4 + 8;
		struct metric_series **o = realloc(f->order, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		f->order = o;
		f->order_cap = cap;
	}
	for (struct metric_series *s = f->head; s; s = s->next)
		f->order[i++] = s;
	if (f->n_labels && f->n_series > 1)
		qsort(f->order, f->n_series, sizeof(*f->order), series_cmp);
	f->order_dirty = false;
	return 0;
}

int metrics_render(struct metrics *m, enum metrics_format fmt, const char *const *owners,
		   char **out, size_t *len)
{
	struct buf b = {0};
	size_t hint;
	int err;

	if (!m || !out || !len || (unsigned)fmt > METRICS_FMT_PROTOBUF)
		return -EINVAL;
	/* Hooks update series, which takes the lock: run them before. */
	pthread_mutex_lock(&m->lock);
	size_t n_hooks = m->n_hooks;
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < n_hooks; i++)
		m->hooks[i].fn(m, m->hooks[i].arg);

	pthread_mutex_lock(&m->lock);
	/* Start at the last size plus some slack: one allocation per scrape. */
	hint = m->last_render_len[fmt];
	buf_reserve(&b, hint + hint / 8 + 1024);
	if (fmt == METRICS_FMT_PROTOBUF)
		err = metrics_render_pb_locked(m, owners, &b);
	else
		err = metrics_render_text_locked(m, fmt == METRICS_FMT_OPENMETRICS, owners, &b);
	if (!err && b.oom)
		err = -ENOMEM;
	if (!err)
		m->last_render_len[fmt] = b.len;
	pthread_mutex_unlock(&m->lock);
	if (err) {
		buf_free(&b);
		return err;
	}
	*out = buf_steal(&b, len);
	return *out ? 0 : -ENOMEM;
}

int metrics_render_text(struct metrics *m, char **out, size_t *len)
{
	return metrics_render(m, METRICS_FMT_TEXT, NULL, out, len);
}
