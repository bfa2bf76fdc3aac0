/* SPDX-License-Identifier: MIT */
/*
 * The Alertmanager push's insides, shared by its files: alertmanager.c (the
 * config, fire and resolve, the thread), alertmanager_turn.c (its
 * operations on the exporters' turn loop) and alertmanager_state.c (the
 * alerts kept durable beside the push's cursor). The alert table lives
 * under the sender's lock (s.mu), which also wakes the thread (s.cv).
 */
#ifndef SYSOBS_ALERTMANAGER_INTERNAL_H
#define SYSOBS_ALERTMANAGER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"
#include "exporters/alertmanager.h"
#include "exporters/sender.h"
#include "exporters/turn.h"

#define AM_MS_NS       1000000LL
#define AM_DESTINATION "alertmanager"

struct store;
struct store_cursor;

struct alert {
	char key[64];
	json_t *labels, *annotations;
	int64_t starts_ns, ends_ns; /* wall clock; ends_ns 0 = firing */
	int64_t due;		    /* next send, on the turn's clock */
	int64_t pending_ns;	    /* wall clock since a state is undelivered; 0: none */
	uint64_t version;	    /* bumped by fire/resolve */
	uint64_t sent_version;	    /* version in the POST in flight */
	bool in_flight;
	bool changed; /* a new state, not a resend: its delivery is stored too */
	bool dirty;   /* its durable copy is behind (alertmanager_state.c) */
	bool gone;    /* its resolve is delivered: forgotten once the copy is */
};

/* [alertmanager]: the sender's keys (TLS, auth, time limit, backoff). */
struct am_config {
	struct sender_config http;
};

struct am_export {
	struct sender s;
	struct am_config c;
	char *post_url;
	json_t *extra;
	int64_t resend_ns;
	bool kick; /* under s.mu: an alert changed, the thread turns now */
	struct alert *alerts;
	size_t n;
	struct am_stats stats;
	struct metric_series *posts[2], *firing; /* ok, failed */
	struct metric_series *pending, *lag;	 /* am_status_backlog() sets them */
	struct log_ratelimit rl, rl_store;

	/* The turn (alertmanager_turn.c), on the push's thread only. */
	struct turn turn;
	int64_t now;	  /* the turn's clock */
	int64_t retry_at; /* the backoff: nothing is sent before it */
	bool retrying;	  /* the last batch is to be sent again */
	char *body;	  /* the batch's JSON array, NULL: could not encode */
	size_t n_batch;	  /* alerts in it */

	struct store_cursor *cur; /* NULL: the alerts are kept in memory only */
};

/* The operations of the push on turn_run() (alertmanager_turn.c). */
extern const struct turn_ops am_turn_ops;
/* The earliest send due, the backoff counted (s.mu held); INT64_MAX: none. */
int64_t am_next_due(const struct am_export *am);
/* The alerts whose state Alertmanager has not taken, and how long the
 * oldest has waited, into the status (what /readyz calls stuck) and the
 * push's gauges. */
void am_status_backlog(struct am_export *am);
/* Drops alert i from the table (s.mu held). */
void am_alert_drop(struct am_export *am, size_t i);

/* The changed alerts written to the store, the delivered resolves deleted
 * from it and forgotten (alertmanager_state.c; the push's thread). */
void am_state_save(struct am_export *am);

#endif
