/* SPDX-License-Identifier: MIT */
/*
 * What the encoders (metrics_text.c, metrics_pb.c, metrics_visit.c) share:
 * the render order of a family's series (by label values; the sorted view
 * is rebuilt only after the set of series changed), which families a
 * filter selects, a histogram's count and native buckets, the unit a name
 * ends with. Calls nhist.c only; never the encoders.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"

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
