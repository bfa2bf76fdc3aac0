/* SPDX-License-Identifier: MIT */
/*
 * The exporters' turn loop: read the batch after the cursor, encode it in
 * one or more requests, send each, the verdict on each answer (the
 * sender's, refined by the format: ClickHouse's error code, OTLP's partial
 * success), count, then back off and send the whole batch again (a retry)
 * or advance the cursor past it (sent or refused). remote_write, the
 * event exporters (ClickHouse, OTLP logs) and the Alertmanager push (its
 * batch the alerts due) run one turn per wake-up through turn_run(), each
 * with a small table of operations on its own batch and cursor; the
 * counters and the status (/readyz, GET /api/v1/export) are kept here, the
 * same way for every format (docs/remote_write.md has the verdict matrix).
 */
#ifndef SYSOBS_TURN_H
#define SYSOBS_TURN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporters/sender.h"

struct log_ratelimit;
struct metric_series;

/* What encode() made of the next part of the batch. */
enum turn_step {
	TURN_SEND,    /* a request to send */
	TURN_REFUSE,  /* rows that cannot be encoded: refused, counted, passed by */
	TURN_RETRY,   /* cannot encode now (out of memory): the batch again later */
	TURN_GIVE_UP, /* nothing counted (encode logged why): max_backoff, then read again */
};

/* One request of the batch. */
struct turn_part {
	size_t used;	  /* units of the batch it covers (the next part starts after) */
	uint64_t n;	  /* what the counters count of it (rows, samples) */
	const void *body; /* the request body */
	size_t len;
};

struct turn_ops {
	/* Counts what the cursor passes by (deleted, too old) and reads the
	 * batch after it: its size in units into *units (0 for nothing to
	 * send) and what a retry counts of it into *count (encode() may set
	 * it again). false: nothing to send this turn, *wait (ms) set. */
	bool (*read)(void *ctx, size_t *units, uint64_t *count, uint64_t *wait);
	/* The request for the batch's units from `from` on into *p. */
	enum turn_step (*encode)(void *ctx, size_t from, struct turn_part *p, uint64_t *count);
	/* The format's verdict on the answer (NULL: the sender's). */
	enum sender_verdict (*verdict)(void *ctx, enum sender_verdict v);
	/* Of an accepted request of n, the rows the receiver still rejected
	 * (OTLP partial success; NULL: none). */
	uint64_t (*rejected)(void *ctx, uint64_t n);
	/* After the requests (not after a stop): last is the last verdict. */
	void (*finish)(void *ctx, enum sender_verdict last);
	/* The batch is done with (accepted: a request was): moves the cursor
	 * past it; the wait before the next turn (ms). */
	uint64_t (*advance)(void *ctx, bool accepted);
	/* Aborted by the stop (NULL: nothing to undo). */
	void (*stopped)(void *ctx);
};

/* The counters every format keeps (NULL: not kept). */
struct turn_metrics {
	struct metric_series *sent, *retried, *refused, *rejected, *bytes, *last_success, *duration;
};

struct turn {
	const struct turn_ops *ops;
	void *ctx;
	struct sender *snd;
	const char *section, *unit; /* "samples", "rows": the logs */
	bool gzip;
	struct turn_metrics m;
	struct log_ratelimit *rl_fail;
};

/* One turn: the wait before the next (ms; 0 = at once). */
uint64_t turn_run(struct turn *t);

#endif
