/* SPDX-License-Identifier: MIT */
/*
 * The series table of a family: a doubly-linked list (cheap removal) and a
 * hash table keyed by the label values (base/hash.h: cheap lookup with
 * 10,000+ series, grown as the family grows). A series renders its label set once,
 * when it is created, so a scrape only copies bytes and formats numbers.
 * Lookup or creation, removal, and the series whose object is gone
 * (kept until metrics_expire() removes them after the grace period).
 *
 * Calls metrics_format.c (escaping); called by metrics.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "base/utf8.h"
#include "base/log.h"

static void series_free(struct metric_series *s)
{
	nhist_free(&s->nh);
	free(s->ex);
	free(s);
}

void family_clear_locked(struct metric *f)
{
	struct metric_series *s = f->head, *next;

	for (; s; s = next) {
		next = s->next;
		series_free(s);
	}
	f->m->n_series -= f->n_series;
	f->head = f->tail = NULL;
	f->n_series = 0;
	hash_reset(&f->by_values);
	f->order_dirty = true;
}

/* FNV-1a over the values, each with its NUL (never inside a value). */
static uint64_t values_hash(const char *const *values, size_t n)
{
	uint64_t h = HASH_FNV1A_INIT;

	for (size_t i = 0; i < n; i++)
		h = hash_fnv1a_str(h, values[i]);
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
	struct metric_series *s = NULL;
	struct hash_node *n;
	uint64_t h;

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
	for (n = hash_chain(&f->by_values, h); n; n = n->next) {
		s = hash_entry(n, struct metric_series, hnode);
		if (n->hash == h && values_equal(s, values, f->n_labels)) {
			s->gone_ns = 0; /* its object is back */
			goto out_unlock;
		}
	}
	s = NULL;
	if (f->n_series >= METRIC_MAX_SERIES) {
		errno = ENOSPC;
		goto out_unlock;
	}
	s = series_alloc(f, values);
	if (!s) {
		errno = ENOMEM;
		goto out_unlock;
	}
	s->created_ms = clock_wall_ns() / 1000000;
	s->nh.schema = (int8_t)f->m->native.schema;
	hash_add(&f->by_values, &s->hnode, h);
	s->prev = f->tail;
	if (f->tail)
		f->tail->next = s;
	else
		f->head = s;
	f->tail = s;
	f->n_series++;
	f->m->n_series++;
	f->order_dirty = true;
out_unlock:
	pthread_mutex_unlock(&f->m->lock);
	return s;
}

/* Unlinks s from f (hash chain and list); the caller frees it. */
static void series_unlink_locked(struct metric *f, struct metric_series *s)
{
	hash_del(&f->by_values, &s->hnode);
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
