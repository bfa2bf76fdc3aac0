// SPDX-License-Identifier: MIT
/*
 * The exporters' turn loop (exporters/turn.h): read, encode, send, verdict,
 * count, then retry the batch or advance past it.
 */
#include <inttypes.h>
#include <string.h>

#include "base/log.h"
#include "exporters/turn.h"
#include "metrics/metrics.h"

/* What the requests of one batch came to. */
struct turn_tally {
	enum sender_verdict v; /* the last verdict */
	uint64_t sent;	       /* accepted, less what the receiver rejected */
	bool accepted;	       /* at least one request was */
	bool gave_up;	       /* encode() gave the turn up */
};

/* Sends one encoded part: the verdict on its answer. */
static enum sender_verdict turn_send(struct turn *t, const struct turn_part *p)
{
	int64_t t0 = clock_mono_ns();
	enum sender_verdict v = sender_post(t->snd, p->body, p->len, t->gzip);

	if (v == SENDER_STOPPED)
		return v;
	if (t->m.duration)
		series_observe(t->m.duration, (double)(clock_mono_ns() - t0) / 1e9);
	return t->ops->verdict ? t->ops->verdict(t->ctx, v) : v;
}

/* A part the receiver (or the encoder) refused: counted lost, passed by. */
static void turn_refused(struct turn *t, uint64_t n)
{
	struct sender *s = t->snd;

	sender_lost(s, t->m.refused, n);
	sender_status_failed(s, n);
	log_ratelimited(t->rl_fail, 10000, LOG_LVL_WARN, t->section,
			"%s refused %" PRIu64 " %s with %ld (%.200s%s); dropped, not retried",
			s->url_public, n, t->unit, s->status, s->resp, s->status ? "" : s->errbuf);
	sender_status_error(s, "refused with %ld: %.200s", s->status,
			    s->status ? s->resp : s->errbuf);
}

/* An accepted part: its bytes, and what the receiver rejected of it. */
static void turn_accepted(struct turn *t, const struct turn_part *p, struct turn_tally *y)
{
	uint64_t rej = t->ops->rejected ? t->ops->rejected(t->ctx, p->n) : 0;

	sender_count(t->m.bytes, t->gzip ? t->snd->gz.len : p->len);
	sender_lost(t->snd, t->m.rejected, rej);
	y->sent += p->n - rej;
	y->accepted = true;
}

/* The batch's requests in order, until one is to be retried or the stop. */
static void turn_parts(struct turn *t, size_t units, uint64_t *count, struct turn_tally *y)
{
	size_t from = 0;

	y->v = SENDER_SENT;
	while (from < units) {
		struct turn_part p = {0};
		enum turn_step step = t->ops->encode(t->ctx, from, &p, count);

		if (step == TURN_GIVE_UP) {
			y->gave_up = true;
			return;
		}
		if (step == TURN_SEND)
			y->v = turn_send(t, &p);
		else
			y->v = step == TURN_REFUSE ? SENDER_REFUSED : SENDER_RETRY;
		if (y->v == SENDER_STOPPED || y->v == SENDER_RETRY)
			return;
		if (y->v == SENDER_REFUSED)
			turn_refused(t, p.n);
		else
			turn_accepted(t, &p, y);
		from += p.used ? p.used : units;
	}
}

/* The batch goes again after the backoff or the receiver's Retry-After. */
static uint64_t turn_retry(struct turn *t, uint64_t count)
{
	struct sender *s = t->snd;
	uint64_t wait = sender_retry_wait(s);

	sender_count(t->m.retried, count);
	sender_status_retried(s, count);
	if (s->status)
		sender_status_error(s, "answered %ld: %.200s", s->status, s->resp);
	else
		sender_status_error(s, "%s", s->errbuf);
	if (s->status)
		log_ratelimited(t->rl_fail, 10000, LOG_LVL_WARN, t->section,
				"%s answered %ld (%.200s); retrying %" PRIu64 " %s in %" PRIu64
				" ms",
				s->url_public, s->status, s->resp, count, t->unit, wait);
	else
		log_ratelimited(t->rl_fail, 10000, LOG_LVL_WARN, t->section,
				"%s: %s; retrying %" PRIu64 " %s in %" PRIu64 " ms", s->url_public,
				s->errbuf, count, t->unit, wait);
	return wait;
}

uint64_t turn_run(struct turn *t)
{
	struct turn_tally y = {0};
	uint64_t wait = 0, count = 0;
	size_t units = 0;

	if (!t->ops->read(t->ctx, &units, &count, &wait))
		return wait;
	turn_parts(t, units, &count, &y);
	if (y.gave_up)
		return t->snd->cfg->max_backoff;
	if (y.v == SENDER_STOPPED) {
		if (t->ops->stopped)
			t->ops->stopped(t->ctx);
		return 0;
	}
	if (t->ops->finish)
		t->ops->finish(t->ctx, y.v);
	if (y.v == SENDER_RETRY)
		return turn_retry(t, count);
	sender_count(t->m.sent, y.sent);
	if (y.accepted && t->m.last_success)
		series_set(t->m.last_success, (double)clock_wall_ns() / 1e9);
	sender_recovered(t->snd);
	if (y.accepted)
		sender_status_sent(t->snd, y.sent, y.v == SENDER_SENT);
	else if (y.v == SENDER_SENT)
		sender_status_error(t->snd, "%s", "");
	return t->ops->advance(t->ctx, y.accepted);
}
