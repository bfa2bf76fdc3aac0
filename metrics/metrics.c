/* SPDX-License-Identifier: MIT */
/*
 * In-memory metrics registry: families, hooks, owners, series values and
 * exemplars. The series table of a family is metrics_series.c, names and
 * number formats metrics_format.c, a render metrics_render.c with the
 * encoders metrics_text.c and metrics_pb.c and what they share
 * metrics_order.c. This file calls metrics_series.c, metrics_format.c and
 * metrics_order.c, none of which calls back.
 *
 * Families live in an array sorted by name (registration is rare, rendering
 * walks them in order).
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
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "base/utf8.h"

#define HASH_MIN_BUCKETS 16

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
	hash_fini(&f->by_values);
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
	if (hash_init(&f->by_values, HASH_MIN_BUCKETS))
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

/* The label names of a new family: valid, distinct, at most
 * METRIC_MAX_LABELS, no "le" on a histogram. How many, or -1. */
static int labels_check(enum metric_type type, const char *const *labels)
{
	size_t n = 0;

	for (; labels && labels[n]; n++) {
		if (n >= METRIC_MAX_LABELS || !metrics_label_name_valid(labels[n]) ||
		    (type == METRIC_HISTOGRAM && !strcmp(labels[n], "le")))
			return -1;
		for (size_t j = 0; j < n; j++)
			if (!strcmp(labels[j], labels[n]))
				return -1;
	}
	return (int)n;
}

/* A histogram's bucket bounds: finite and increasing. A trailing +Inf is
 * implied, so dropped from *n when the caller gave it. */
static bool bounds_check(const double *bounds, size_t *n)
{
	if (*n && isinf(bounds[*n - 1]) && bounds[*n - 1] > 0)
		(*n)--;
	for (size_t i = 0; i < *n; i++)
		if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
			return false;
	return true;
}

/* Room in m's family array for one more (lock held). */
static int fams_reserve(struct metrics *m)
{
	size_t cap = m->cap_fams ? m->cap_fams * 2 : 32;
	struct metric **fams;

	if (m->n_fams < m->cap_fams)
		return 0;
	fams = realloc(m->fams, cap * sizeof(*fams));
	if (!fams)
		return -ENOMEM;
	m->fams = fams;
	m->cap_fams = cap;
	return 0;
}

/* f into m's families at pos, which keeps them sorted (lock held, room
 * made). */
static void family_insert(struct metrics *m, size_t pos, struct metric *f)
{
	f->m = m;
	memmove(&m->fams[pos + 1], &m->fams[pos], (m->n_fams - pos) * sizeof(*m->fams));
	m->fams[pos] = f;
	m->n_fams++;
}

static struct metric *metrics_register(struct metrics *m, enum metric_type type, const char *name,
				       const char *help, const char *const *labels,
				       const double *bounds, size_t n_bounds)
{
	int n_labels = labels_check(type, labels), err;
	struct metric *f = NULL;
	size_t pos;
	bool found;

	if (!m || !metrics_name_valid(name) || (help && !utf8_valid(help)) || n_labels < 0 ||
	    (type == METRIC_HISTOGRAM && !bounds_check(bounds, &n_bounds))) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&m->lock);
	if (om_name_clash(m, type, name)) {
		err = -EEXIST;
		goto out_unlock;
	}
	pos = family_find(m, name, &found);
	if (found) {
		f = m->fams[pos];
		if (!family_same(f, type, labels, (size_t)n_labels, bounds, n_bounds)) {
			f = NULL;
			err = -EEXIST;
		}
		goto out_unlock;
	}
	err = fams_reserve(m);
	if (err)
		goto out_unlock;
	f = calloc(1, sizeof(*f));
	if (!f) {
		err = -ENOMEM;
		goto out_unlock;
	}
	err = family_init(f, type, name, help, labels, (size_t)n_labels, bounds, n_bounds);
	if (err) {
		family_free(f);
		f = NULL;
		goto out_unlock;
	}
	family_insert(m, pos, f);
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

/* ---- series values ---- */

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
