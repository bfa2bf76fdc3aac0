/* SPDX-License-Identifier: MIT */
/*
 * A render of the registry: the hooks run, then one encoder (metrics_text.c
 * or metrics_pb.c) under the lock, into a buffer sized from the last
 * render. Calls the encoders, which call metrics_order.c, never this file.
 */
#include <errno.h>
#include <pthread.h>

#include "metrics/metrics_internal.h"

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
