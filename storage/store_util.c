// SPDX-License-Identifier: MIT
/*
 * What every file of the store uses: the clocks, the logger (the agent's,
 * through store_config.log), the relaxed atomic statistics, and one-shot
 * SQL statements. Calls no other file of the store.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "storage/store.h"
#include "storage/store_internal.h"

int64_t store_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Messages go to the agent's logger (store_config.log), never to stderr
 * directly: the store has no logger of its own. rl may be NULL. */
void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
	       enum store_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void store_log(const struct store *s, struct store_ratelimit *rl, unsigned interval_ms,
	       enum store_log_level lvl, const char *fmt, ...)
{
	char msg[512];
	size_t n = 0;
	va_list ap;

	if (!s->cfg.log)
		return;
	if (rl) {
		int64_t now = store_mono_ns();

		if (now < __atomic_load_n(&rl->next_ns, __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&rl->suppressed, 1, __ATOMIC_RELAXED);
			return;
		}
		__atomic_store_n(&rl->next_ns, now + (int64_t)interval_ms * 1000000,
				 __ATOMIC_RELAXED);
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rl && rl->suppressed) {
		n = strlen(msg);
		snprintf(msg + n, sizeof(msg) - n, " (%" PRIu64 " similar suppressed)",
			 __atomic_exchange_n(&rl->suppressed, 0, __ATOMIC_RELAXED));
	}
	s->cfg.log(lvl, msg, s->cfg.log_arg);
}

static int64_t store_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void store_abs_mono(int64_t ns, struct timespec *out)
{
	out->tv_sec = ns / 1000000000;
	out->tv_nsec = ns % 1000000000;
}

int64_t store_now(const struct store *s)
{
	const struct store_clock *c = s->cfg.clock;

	return c && c->mono_ns ? c->mono_ns(c->arg) : store_mono_ns();
}

int64_t store_now_wall(const struct store *s)
{
	const struct store_clock *c = s->cfg.clock;

	return c && c->wall_ns ? c->wall_ns(c->arg) : store_wall_ns();
}

/* The deadline is on the store's clock, the condition variable waits on the
 * real monotonic one: wait for the distance between them. With an injected
 * clock that distance is real time too, until store_clock_moved() wakes the
 * writer early. */
void store_wait_until(const struct store *s, pthread_cond_t *cv, pthread_mutex_t *mu,
		      int64_t deadline)
{
	int64_t left = deadline - store_now(s);
	struct timespec ts;

	store_abs_mono(store_mono_ns() + (left > 0 ? left : 0), &ts);
	pthread_cond_timedwait(cv, mu, &ts);
}

void store_stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

uint64_t store_stat_get(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void store_samples_lost(struct store *s, enum store_drop_reason reason, uint64_t n)
{
	store_stat_add(&s->samples_dropped, n);
	store_stat_add(&s->samples_dropped_by[reason], n);
}

void store_count_error(struct store *s, enum store_err_op op)
{
	store_stat_add(&s->errors_op[op], 1);
}

/* Runs one SQL statement returning a single integer (PRAGMA, SELECT). */
int store_query_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		*out = 0;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Runs a PRAGMA or statement to completion, ignoring result rows. */
int store_exec_rows(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}
