// SPDX-License-Identifier: MIT
/*
 * Walks of the registry for the metric history (agent/snapshot.c): every
 * series' value, and a histogram's classic (and native, when the registry
 * keeps them) buckets beside its _count. In a
 * file of its own so that metrics.c (the registry proper) does not grow.
 */
#include <pthread.h>

#include "metrics/metrics.h"
#include "metrics/metrics_internal.h"

void metrics_visit_buckets(struct metrics *m, metrics_visit_buckets_fn fn, void *arg)
{
	if (!m || !fn)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_fams; i++) {
		struct metric *f = m->fams[i];

		if (family_order_locked(f))
			continue;
		for (size_t j = 0; j < f->n_series; j++) {
			const struct metric_series *s = f->order[j];
			struct metric_buckets b;
			struct nhist tmp;

			if (f->type != METRIC_HISTOGRAM) {
				fn(f->name, s->labels, s->value, NULL, arg);
				continue;
			}
			b.le = (const char *const *)f->le;
			b.n = f->n_bounds + 1;
			b.counts = s->counts;
			b.native = series_native_locked(s, &tmp);
			b.zero_threshold = m->native.zero_threshold;
			b.sum = s->sum;
			fn(f->name_count, s->labels, (double)series_count_locked(s), &b, arg);
			if (b.native == &tmp)
				nhist_free(&tmp);
			fn(f->name_sum, s->labels, s->sum, NULL, arg);
		}
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_visit_families(struct metrics *m, metrics_family_fn fn, void *arg)
{
	if (!m || !fn)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_fams; i++) {
		const struct metric *f = m->fams[i];

		fn(f->name, f->type, f->help, f->unit, arg);
	}
	pthread_mutex_unlock(&m->lock);
}
