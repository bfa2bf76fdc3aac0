// SPDX-License-Identifier: MIT
/*
 * The collectors' state as the API shows it (GET /api/v1/collectors, the
 * landing page). Runs on HTTP threads while the main thread may change a
 * collector's state: fields are copied with relaxed atomic loads, so an
 * answer may mix an old and a new value but never reads a torn integer, and
 * a reason is always NUL-terminated. The event exporters' destinations,
 * remote_write and the Alertmanager push (GET /api/v1/export, /readyz) are
 * copied under each sender's lock (sender_status_get()).
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "base/arena.h"
#include "agent/status.h"
#include "collectors/collector.h"
#include "api/proto/pbmsg.h"
#include "exporters/alertmanager.h"
#include "exporters/events.h"
#include "exporters/remote_write.h"

static Sysobs__V1__CollectorState state_enum(enum collector_state s)
{
	switch (s) {
	case COLLECTOR_DISABLED:
		return SYSOBS__V1__COLLECTOR_STATE__DISABLED;
	case COLLECTOR_UNAVAILABLE:
		return SYSOBS__V1__COLLECTOR_STATE__UNAVAILABLE;
	case COLLECTOR_RUNNING:
		return SYSOBS__V1__COLLECTOR_STATE__RUNNING;
	case COLLECTOR_FAILED:
		return SYSOBS__V1__COLLECTOR_STATE__FAILED;
	}
	return SYSOBS__V1__COLLECTOR_STATE__COLLECTOR_STATE_UNSPECIFIED;
}

static Sysobs__V1__Collector *collector_status(const struct collector *c, struct arena *ar)
{
	Sysobs__V1__Collector *m = arena_alloc(ar, sizeof(*m));
	enum collector_state st;
	char why[sizeof(c->why)];
	int64_t last;
	size_t i, n = 0;

	if (!m)
		return NULL;
	sysobs__v1__collector__init(m);
	st = (enum collector_state)__atomic_load_n((const int *)&c->state, __ATOMIC_RELAXED);
	for (i = 0; i < sizeof(why) - 1; i++) {
		why[i] = __atomic_load_n(&c->why[i], __ATOMIC_RELAXED);
		if (!why[i])
			break;
	}
	why[i] = '\0';
	last = __atomic_load_n(&c->last_activity_ns, __ATOMIC_RELAXED);
	m->name = (char *)c->ops->name;
	m->help = (char *)(c->ops->help ? c->ops->help : "");
	m->state = state_enum(st);
	m->reason = arena_strdup(ar, why);
	m->errors = __atomic_load_n(&c->errors, __ATOMIC_RELAXED);
	if (last > 0)
		m->last_activity = pbmsg_time(ar, last);
	for (const struct event_table *const *t = c->ops->tables; t && *t; t++)
		n++;
	for (const struct collector_route *r = c->ops->routes; r && r->path; r++)
		n++;
	m->routes = arena_alloc(ar, (n ? n : 1) * sizeof(*m->routes));
	if (!m->routes)
		return NULL;
	for (const struct event_table *const *t = c->ops->tables; t && *t; t++)
		if ((*t)->route)
			m->routes[m->n_routes++] = arena_printf(ar, "GET %s", (*t)->route);
	for (const struct collector_route *r = c->ops->routes; r && r->path; r++)
		m->routes[m->n_routes++] =
		    arena_printf(ar, "%s %s", r->method ? r->method : "GET", r->path);
	return m;
}

Sysobs__V1__CollectorList *agent_collectors_status(void *arg, struct arena *ar)
{
	const struct agent *a = arg;
	Sysobs__V1__CollectorList *l = arena_alloc(ar, sizeof(*l));

	if (!l)
		return NULL;
	sysobs__v1__collector_list__init(l);
	l->data = arena_alloc(ar, (a->n_collectors ? a->n_collectors : 1) * sizeof(*l->data));
	if (!l->data)
		return NULL;
	for (size_t i = 0; i < a->n_collectors; i++) {
		l->data[i] = collector_status(&a->collectors[i], ar);
		if (!l->data[i])
			return NULL;
		l->n_data++;
	}
	return ar->oom ? NULL : l;
}

/* One destination's status (an [export.NAME] or remote_write) as the API
 * shows it, in ar. */
static Sysobs__V1__ExportDestination *export_status(const struct export_status *st,
						    struct arena *ar)
{
	Sysobs__V1__ExportDestination *m = arena_alloc(ar, sizeof(*m));

	if (!m)
		return NULL;
	sysobs__v1__export_destination__init(m);
	m->name = arena_strdup(ar, st->name);
	m->format = arena_strdup(ar, st->format);
	m->url = arena_strdup(ar, st->url);
	m->cursor = st->cursor;
	m->pending_rows = st->pending;
	m->lag_seconds = st->lag_seconds;
	if (st->last_success > 0)
		m->last_success = pbmsg_time(ar, (int64_t)(st->last_success * 1e9));
	m->rows_sent = st->sent;
	m->rows_refused = st->failed;
	m->rows_retried = st->retried;
	m->rows_lost = st->lost;
	if (st->last_loss > 0)
		m->last_loss = pbmsg_time(ar, (int64_t)(st->last_loss * 1e9));
	m->last_error = arena_strdup(ar, st->last_error);
	m->problem = "";
	return m;
}

Sysobs__V1__ExportList *agent_exports_status(void *arg, struct arena *ar)
{
	const struct agent *a = arg;
	Sysobs__V1__ExportList *l = arena_alloc(ar, sizeof(*l));
	size_t n = events_export_count(a->exp), n_rw = remote_write_count(a->rw);
	size_t n_am = a->am ? 1 : 0;
	struct export_status st;

	if (!l)
		return NULL;
	sysobs__v1__export_list__init(l);
	l->data = arena_alloc(ar, (n + n_rw + n_am + 1) * sizeof(*l->data));
	if (!l->data)
		return NULL;
	for (size_t i = 0; i < n + n_rw + n_am; i++) {
		if (i < n)
			events_export_status(a->exp, i, &st);
		else if (i < n + n_rw)
			remote_write_status(a->rw, i - n, &st);
		else
			am_export_status(a->am, &st);
		l->data[i] = export_status(&st, ar);
		if (!l->data[i])
			return NULL;
		l->n_data++;
	}
	return ar->oom ? NULL : l;
}
