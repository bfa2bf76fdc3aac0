// SPDX-License-Identifier: MIT
/*
 * The bounded submit queue: rows copied into the ring's next slot without
 * waiting (store_submit*), its depth, and the wait for the writer to commit
 * what was queued (store_flush*). The ring itself is described in store.c.
 * Calls store_util.c; the writer (store_writer.c) drains it.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "storage/store.h"
#include "storage/store_internal.h"

static int store_table_index(const struct store *s, const struct event_table *t)
{
	for (size_t i = 0; i < s->n_tables; i++) {
		if (s->tables[i] == t)
			return (int)i;
	}
	return -1;
}

/* Copies a row (len bytes, then tail bytes of tail_len) into the next slot.
 * Never waits: -EAGAIN when the queue is full or closing. */
static int store_enqueue(struct store *s, uint32_t table, int64_t ts_ns, const void *row,
			 size_t len, const void *tail, size_t tail_len, int64_t *id)
{
	struct store_slot *slot;
	uint64_t depth;
	bool full;

	pthread_mutex_lock(&s->mu);
	depth = s->head - s->tail;
	/* A snapshot's reserved slots are for its samples alone. */
	if (table == STORE_TABLE_SAMPLE && s->reserved && !s->stop) {
		s->reserved--;
		full = false;
	} else {
		full = depth + s->reserved >= s->cap || s->stop;
	}
	if (full) {
		s->dropped_full++;
		pthread_mutex_unlock(&s->mu);
		if (table == STORE_TABLE_SAMPLE)
			store_samples_lost(s, store_full_reason(s), 1);
		return -EAGAIN;
	}
	slot = store_slot_at(s, s->head);
	slot->ts = ts_ns;
	slot->table = table;
	slot->id = 0;
	if (id) {
		slot->id = s->next_id;
		__atomic_store_n(&s->next_id, s->next_id + 1, __ATOMIC_RELAXED);
		*id = slot->id;
	}
	memcpy((unsigned char *)slot + STORE_SLOT_HDR, row, len);
	if (tail_len)
		memcpy((unsigned char *)slot + STORE_SLOT_HDR + len, tail, tail_len);
	__atomic_store_n(&s->head, s->head + 1, __ATOMIC_RELAXED);
	/* Wake the writer once when it sleeps on an empty queue, and when a
	 * full batch is ready; otherwise its batch_ms timer wakes it. */
	if (s->writer_idle || depth + 1 == s->cfg.batch_rows) {
		s->writer_idle = false;
		pthread_cond_signal(&s->cv_writer);
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int store_submit_id(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row,
		    int64_t *id)
{
	int idx = store_table_index(s, t);
	int64_t dummy;

	if (idx < 0)
		return -ENOENT;
	return store_enqueue(s, (uint32_t)idx, ts_ns, row, t->row_size, NULL, 0, id ? id : &dummy);
}

int store_submit(struct store *s, const struct event_table *t, int64_t ts_ns, const void *row)
{
	return store_submit_id(s, t, ts_ns, row, NULL);
}

int store_submit_sample_blob(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			     double value, const void *blob, size_t blob_len)
{
	size_t nlen = strlen(name), llen = strlen(labels);
	size_t head = offsetof(struct store_sample_row, key); /* the tail goes at key[] */
	struct store_sample_row row = {.value = value, .blob_len = (uint16_t)blob_len};
	/* A slot's payload is the largest event row or STORE_SAMPLE_MIN. */
	char tail[EVENT_ROW_MAX > STORE_SAMPLE_MIN ? EVENT_ROW_MAX : STORE_SAMPLE_MIN];

	if (head + nlen + llen + 2 + blob_len > s->slot_size - STORE_SLOT_HDR ||
	    nlen + llen + 2 + blob_len > sizeof(tail)) {
		if (!blob_len)
			store_samples_lost(s, STORE_DROP_TOO_LONG, 1);
		return -E2BIG;
	}
	memcpy(tail, name, nlen);
	tail[nlen] = '\x01';
	memcpy(tail + nlen + 1, labels, llen + 1);
	if (blob_len)
		memcpy(tail + nlen + llen + 2, blob, blob_len);
	return store_enqueue(s, STORE_TABLE_SAMPLE, ts_ns, &row, head, tail,
			     nlen + llen + 2 + blob_len, NULL);
}

int store_submit_sample(struct store *s, int64_t ts_ns, const char *name, const char *labels,
			double value)
{
	return store_submit_sample_blob(s, ts_ns, name, labels, value, NULL, 0);
}

static const char *const store_drop_names[STORE_DROP_REASONS] = {
    "queue_full", "disk_full", "locked", "too_long", "insert_error",
};

const char *store_drop_reason_name(int reason)
{
	return reason >= 0 && reason < STORE_DROP_REASONS ? store_drop_names[reason] : NULL;
}

enum store_drop_reason store_full_reason(struct store *s)
{
	switch (__atomic_load_n(&s->writer_rc, __ATOMIC_RELAXED) & 0xff) {
	case SQLITE_FULL:
		return STORE_DROP_DISK_FULL;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return STORE_DROP_LOCKED;
	default:
		return STORE_DROP_QUEUE_FULL;
	}
}

int store_snapshot_begin(struct store *s, size_t n, enum store_drop_reason *reason)
{
	bool room;

	pthread_mutex_lock(&s->mu);
	room = !s->stop && s->head - s->tail + s->reserved + n <= s->cap;
	if (room)
		s->reserved += n;
	pthread_mutex_unlock(&s->mu);
	store_stat_add(&s->snapshots, 1);
	if (room)
		return 0;
	/* More samples than the whole queue holds: never whole; queued as
	 * far as they fit, each one lost counted (store_enqueue). */
	if (n > s->cap && !s->stop)
		return 0;
	*reason = store_full_reason(s);
	store_stat_add(&s->snapshots_dropped_by[*reason], 1);
	store_samples_lost(s, *reason, n);
	return -EAGAIN;
}

void store_snapshot_end(struct store *s)
{
	pthread_mutex_lock(&s->mu);
	s->reserved = 0;
	pthread_mutex_unlock(&s->mu);
}

size_t store_queue_depth(const struct store *s)
{
	uint64_t head = __atomic_load_n(&s->head, __ATOMIC_RELAXED);
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_RELAXED);

	return head > tail ? (size_t)(head - tail) : 0;
}

int store_flush_timeout(struct store *s, unsigned timeout_ms)
{
	uint64_t target, errors;
	int64_t deadline = timeout_ms ? store_mono_ns() + (int64_t)timeout_ms * 1000000 : 0;
	int ret = 0;

	pthread_mutex_lock(&s->mu);
	target = s->head;
	if (!s->started || s->writer_done) {
		ret = s->tail >= target ? 0 : -ENOTCONN;
		goto out;
	}
	if (s->flush_target < target)
		s->flush_target = target;
	errors = store_stat_get(&s->write_errors);
	pthread_cond_signal(&s->cv_writer);
	while (s->tail < target) {
		if (store_stat_get(&s->write_errors) != errors) {
			ret = -EIO;
			break;
		}
		if (s->writer_done) {
			ret = -ENOTCONN;
			break;
		}
		if (deadline) {
			struct timespec ts;

			if (store_mono_ns() >= deadline) {
				ret = -ETIMEDOUT;
				break;
			}
			store_abs_mono(deadline, &ts);
			pthread_cond_timedwait(&s->cv_done, &s->mu, &ts);
		} else {
			pthread_cond_wait(&s->cv_done, &s->mu);
		}
	}
out:
	pthread_mutex_unlock(&s->mu);
	return ret;
}

int store_flush(struct store *s)
{
	return store_flush_timeout(s, 0);
}
