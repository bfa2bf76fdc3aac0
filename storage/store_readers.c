// SPDX-License-Identifier: MIT
/*
 * The pool of read-only connections the read API (store_query.c,
 * store_history.c, store_samples.c, store_export.c) borrows, each with a
 * query deadline enforced by a progress handler. Calls store_util.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "storage/store.h"
#include "storage/store_internal.h"

/* Progress handler of a pooled reader: non-zero ends the statement. */
static int store_reader_over(void *arg)
{
	int64_t deadline = __atomic_load_n((int64_t *)arg, __ATOMIC_RELAXED);

	return deadline && store_mono_ns() > deadline;
}

int store_open_readers(struct store *s, char *err, size_t errlen)
{
	s->readers = calloc(s->cfg.readers, sizeof(*s->readers));
	s->rd_free = calloc(s->cfg.readers, sizeof(*s->rd_free));
	s->rd_deadline = calloc(s->cfg.readers, sizeof(*s->rd_deadline));
	if (!s->readers || !s->rd_free || !s->rd_deadline) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->cfg.readers; i++) {
		sqlite3 *db = NULL;
		int rc;

		rc =
		    sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
		if (rc != SQLITE_OK) {
			snprintf(err, errlen, "%s: read-only connection: %s", s->path,
				 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
			sqlite3_close(db);
			return -EIO;
		}
		sqlite3_busy_timeout(db, (int)s->cfg.busy_timeout_ms);
		/* Checked every 1000 VM steps (~10 us): past the deadline the
		 * statement ends with SQLITE_INTERRUPT. */
		sqlite3_progress_handler(db, 1000, store_reader_over,
					 &s->rd_deadline[s->n_readers]);
		s->readers[s->n_readers++] = db;
		s->rd_free[s->n_free++] = db;
	}
	return 0;
}

sqlite3 *store_reader_get(struct store *s)
{
	unsigned wait_ms = s->cfg.reader_wait_ms ? s->cfg.reader_wait_ms : STORE_READER_WAIT_MS;
	struct timespec ts;
	sqlite3 *db = NULL;

	store_abs_mono(store_mono_ns() + (int64_t)wait_ms * 1000000, &ts);
	pthread_mutex_lock(&s->rd_mu);
	while (!s->n_free) {
		if (pthread_cond_timedwait(&s->rd_cv, &s->rd_mu, &ts) == ETIMEDOUT)
			break;
	}
	if (s->n_free)
		db = s->rd_free[--s->n_free];
	for (size_t i = 0; db && i < s->n_readers; i++)
		if (s->readers[i] == db)
			__atomic_store_n(&s->rd_deadline[i],
					 store_mono_ns() +
					     (int64_t)s->cfg.query_timeout_ms * 1000000,
					 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->rd_mu);
	if (!db)
		errno = EBUSY;
	return db;
}

void store_reader_put(struct store *s, sqlite3 *db)
{
	if (!db)
		return;
	pthread_mutex_lock(&s->rd_mu);
	s->rd_free[s->n_free++] = db;
	pthread_cond_signal(&s->rd_cv);
	pthread_mutex_unlock(&s->rd_mu);
}
