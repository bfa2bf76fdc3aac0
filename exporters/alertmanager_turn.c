// SPDX-License-Identifier: MIT
/*
 * The Alertmanager push on the exporters' turn loop (exporters/turn.h):
 * its batch is every alert due (firing ones again each resend, a state
 * changed at once), encoded as one Alertmanager v2 JSON array; the verdict
 * is the sender's (2xx sent; 400 and 422, Alertmanager's verdict on the
 * alerts themselves, refused: counted lost, a resolved alert forgotten, a
 * firing one waits for its resend; every other answer and no answer: the
 * whole batch again after the sender's backoff or Retry-After, and nothing
 * is sent before that). The loop keeps the counters and the status
 * (GET /api/v1/export, /readyz); this file adds the backlog: the alerts
 * whose state Alertmanager has not taken yet.
 */
#include <stdlib.h>
#include <string.h>

#include "base/timeutil.h"
#include "exporters/alertmanager_internal.h"
#include "metrics/metrics.h"

static json_t *alert_json(const struct am_export *am, const struct alert *al)
{
	json_t *o = json_object(), *labels = json_deep_copy(al->labels);
	char t[40];

	json_object_update_missing(labels, am->extra);
	json_object_set_new(o, "labels", labels);
	json_object_set(o, "annotations", al->annotations);
	am_format_time(al->starts_ns, t, sizeof(t));
	json_object_set_new(o, "startsAt", json_string(t));
	if (al->ends_ns) {
		am_format_time(al->ends_ns, t, sizeof(t));
		json_object_set_new(o, "endsAt", json_string(t));
	}
	return o;
}

int64_t am_next_due(const struct am_export *am)
{
	int64_t next = INT64_MAX;

	for (size_t i = 0; i < am->n; i++)
		if (!am->alerts[i].gone && am->alerts[i].due < next)
			next = am->alerts[i].due;
	return next != INT64_MAX && next < am->retry_at ? am->retry_at : next;
}

/* The due alerts as one JSON array into am->body, marked in flight (s.mu
 * held): how many. A resend due makes the alert pending again. */
static size_t batch_take(struct am_export *am)
{
	json_t *batch = json_array();
	size_t n = 0;

	for (size_t i = 0; batch && i < am->n; i++) {
		struct alert *al = &am->alerts[i];

		if (al->gone || al->due > am->now)
			continue;
		json_array_append_new(batch, alert_json(am, al));
		al->in_flight = true;
		al->sent_version = al->version;
		if (!al->pending_ns)
			al->pending_ns = clock_wall_ns();
		n++;
	}
	am->body = n ? json_dumps(batch, JSON_COMPACT) : NULL;
	json_decref(batch);
	return n;
}

/* The ms from the turn's clock to the next send (UINT64_MAX: none). */
static uint64_t wait_ms(const struct am_export *am)
{
	int64_t next = am_next_due(am);

	if (next == INT64_MAX)
		return UINT64_MAX;
	return next <= am->now ? 0 : (uint64_t)((next - am->now + AM_MS_NS - 1) / AM_MS_NS);
}

static bool am_read(void *ctx, size_t *units, uint64_t *count, uint64_t *wait)
{
	struct am_export *am = ctx;

	pthread_mutex_lock(&am->s.mu);
	am->kick = false;
	am->n_batch = am->now < am->retry_at ? 0 : batch_take(am);
	if (!am->n_batch)
		*wait = wait_ms(am);
	pthread_mutex_unlock(&am->s.mu);
	*units = am->n_batch;
	*count = am->n_batch;
	return am->n_batch > 0;
}

static enum turn_step am_encode(void *ctx, size_t from, struct turn_part *p, uint64_t *count)
{
	struct am_export *am = ctx;

	(void)from;
	(void)count;
	if (!am->body)
		return TURN_RETRY; /* out of memory: the batch again later */
	p->used = am->n_batch;
	p->n = am->n_batch;
	p->body = am->body;
	p->len = strlen(am->body);
	return TURN_SEND;
}

/* The reason Alertmanager gave (its JSON string or message, not the whole
 * body) is what the loop logs and shows as the last error. */
static enum sender_verdict am_verdict(void *ctx, enum sender_verdict v)
{
	struct am_export *am = ctx;
	char why[160];

	if (v != SENDER_SENT && am->s.status) {
		am_reply(am->s.status, am->s.resp, am->s.resp_len, why, sizeof(why));
		am->s.resp_len = (size_t)snprintf(am->s.resp, sizeof(am->s.resp), "%s", why);
	}
	return v;
}

/* The verdict applied to the alerts the POST carried (s.mu held). */
static void batch_done(struct am_export *am, enum sender_verdict v)
{
	for (size_t i = 0; i < am->n; i++) {
		struct alert *al = &am->alerts[i];

		if (!al->in_flight)
			continue;
		al->in_flight = false;
		if (al->version != al->sent_version)
			continue; /* fired or resolved during the POST: its new state is due */
		if (v == SENDER_RETRY)
			continue; /* due again, after the backoff */
		al->pending_ns = 0;
		al->dirty |= al->changed; /* the stored copy: delivered since */
		al->changed = false;
		if (al->ends_ns) { /* resolution delivered (or refused) */
			al->gone = true;
			al->dirty = true;
		} else {
			al->due = am->now + am->resend_ns;
		}
	}
	am->stats.firing = 0;
	for (size_t i = 0; i < am->n; i++)
		am->stats.firing += !am->alerts[i].ends_ns && !am->alerts[i].gone;
}

static void am_finish(void *ctx, enum sender_verdict last)
{
	struct am_export *am = ctx;

	free(am->body);
	am->body = NULL;
	am->retrying = last == SENDER_RETRY;
	pthread_mutex_lock(&am->s.mu);
	if (last == SENDER_SENT)
		am->stats.posts_ok++;
	else
		am->stats.posts_failed++;
	batch_done(am, last);
	pthread_mutex_unlock(&am->s.mu);
}

static uint64_t am_advance(void *ctx, bool accepted)
{
	struct am_export *am = ctx;
	uint64_t wait;

	(void)accepted;
	pthread_mutex_lock(&am->s.mu);
	wait = wait_ms(am);
	pthread_mutex_unlock(&am->s.mu);
	return wait;
}

static void am_stopped(void *ctx)
{
	struct am_export *am = ctx;

	free(am->body);
	am->body = NULL;
	pthread_mutex_lock(&am->s.mu);
	for (size_t i = 0; i < am->n; i++)
		am->alerts[i].in_flight = false;
	pthread_mutex_unlock(&am->s.mu);
}

const struct turn_ops am_turn_ops = {
    .read = am_read,
    .encode = am_encode,
    .verdict = am_verdict,
    .finish = am_finish,
    .advance = am_advance,
    .stopped = am_stopped,
};

void am_status_backlog(struct am_export *am)
{
	int64_t now = clock_wall_ns(), oldest = now;
	uint64_t pending = 0;

	pthread_mutex_lock(&am->s.mu);
	for (size_t i = 0; i < am->n; i++) {
		const struct alert *al = &am->alerts[i];

		if (al->gone || !al->pending_ns)
			continue;
		pending++;
		if (al->pending_ns < oldest)
			oldest = al->pending_ns;
	}
	pthread_mutex_unlock(&am->s.mu);
	sender_status_backlog(&am->s, pending, (double)(now - oldest) / 1e9);
	if (am->pending)
		series_set(am->pending, (double)pending);
	if (am->lag)
		series_set(am->lag, (double)(now - oldest) / 1e9);
}

int64_t am_export_turn(struct am_export *am, int64_t now_ns)
{
	uint64_t wait;
	int64_t next;

	am->now = now_ns;
	am->retrying = false;
	am_state_save(am);
	wait = turn_run(&am->turn);
	if (am->retrying)
		am->retry_at = now_ns + (int64_t)wait * AM_MS_NS;
	am_state_save(am);
	am_status_backlog(am);
	pthread_mutex_lock(&am->s.mu);
	next = am_next_due(am);
	pthread_mutex_unlock(&am->s.mu);
	return next;
}
