// SPDX-License-Identifier: MIT
/*
 * Event exporters (exporters/events.h): one thread per [export.NAME], the
 * history after a durable cursor, a batch at a time, to ClickHouse or an
 * OTLP/HTTP logs receiver.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "exporters/clickhouse.h"
#include "exporters/events.h"
#include "exporters/events_follow.h"
#include "exporters/otlp_logs.h"
#include "exporters/sender.h"
#include "exporters/turn.h"
#include "storage/store.h"
#include "storage/store_export.h"
#include "storage/store_samples.h"

#define EXP_MAX_TABLES 16
#define EXP_MAX_DEST   8

enum exp_format { EXP_CLICKHOUSE, EXP_OTLP };
static const char *const exp_formats[] = {"clickhouse", "otlp", NULL};

static const char *const exp_starts[] = {"oldest", "now", "keep", NULL}; /* exp_start_from */

struct export_config {
	struct sender_config http;
	unsigned format; /* enum exp_format */
	const char *tables;
	uint64_t batch_rows;
	uint64_t send_interval; /* ms */
	uint64_t max_age;	/* ms; 0: none */
	bool gzip;
	bool capture; /* EXPORT_F_BLOBS */
	const char *cursor;
	const char *database; /* clickhouse */
	unsigned start_from;  /* enum exp_start_from */
};

#define EXK(f, t, d, lo, hi, h) CFG_KEY(struct export_config, f, t, d, lo, hi, h)

static const struct cfg_key export_keys[] = {
    CFG_KEY_CHOICE(struct export_config, format, "clickhouse", exp_formats,
		   "clickhouse (JSONEachRow over ClickHouse's HTTP interface, DDL in "
		   "deploy/clickhouse/) or otlp (OTLP/HTTP logs, protobuf)"),
    SENDER_KEYS(
	struct export_config, http,
	"receiver: http(s)://HOST:8123/ for clickhouse, http(s)://HOST:4318/v1/logs for otlp"),
    EXK(tables, CFG_STRING, "", 0, 0,
	"event tables to send, comma-separated (empty = every event table but self_samples)"),
    EXK(batch_rows, CFG_U64, "5000", 1, 100000, "rows per batch (one request per table in it)"),
    EXK(send_interval, CFG_DURATION, "10s", 100, 60000,
	"how often to look for new rows once everything was sent (10 s: a quarter of "
	"ClickHouse's CPU per row at 1 s, docs/fleet.md)"),
    EXK(max_age, CFG_DURATION, "0", 0, 366ull * 86400000,
	"rows older than this when their turn comes are dropped and counted (0 = none: "
	"retention bounds the backlog)"),
    EXK(gzip, CFG_BOOL, "true", 0, 0, "gzip request bodies (Content-Encoding: gzip)"),
    EXK(capture, CFG_BOOL, "false", 0, 0,
	"send the packet captures of drop_samples (their capture column: packet headers, "
	"payload too with [collector.drops] capture_payload) to this destination; off, they "
	"stay on the host (docs/fleet.md)"),
    EXK(cursor, CFG_STRING, "", 0, 0,
	"name of the durable cursor (store_meta cursor.NAME; empty = export.<section name>)"),
    EXK(database, CFG_STRING, "sysobs", 0, 0,
	"clickhouse: the database holding the tables of deploy/clickhouse/"),
    CFG_KEY_CHOICE(struct export_config, start_from, "oldest", exp_starts,
		   "after a change of url or database: oldest (every retained row again; the "
		   "receiver deduplicates by key), now (the rows since the last send are "
		   "skipped and counted) or keep (the cursor stays)"),
    {0},
};

/* The counters of the turn loop's (sent, retried, refused, rejected,
 * bytes, last success) are in exp_dest.turn.m. */
struct exp_metrics {
	struct metric_series *drop_old, *drop_deleted, *skipped, *pending, *lag, *cpu;
};

struct exp_dest;

/* What one format does its own way; the rest is the turn loop's. */
struct exp_format_ops {
	const char *const *headers;
	bool per_table; /* one request per table: the batch sorted table by table */
	bool database;	/* the database key applies (and names the destination) */
	/* The URL of a request of table t's rows (NULL: the url key's). */
	char *(*url)(const char *base, const char *database, const struct event_table *t);
	int (*encode)(const struct export_row *rows, size_t n, const struct export_identity *id,
		      unsigned flags, struct buf *out);
	/* The verdict on the answer's body (NULL: the sender's on its status). */
	enum sender_verdict (*verdict)(long status, const char *resp);
	/* Rows of an accepted request the receiver rejected (NULL: none). */
	uint64_t (*rejected)(struct exp_dest *d, uint64_t n);
};

struct exp_dest {
	struct events_export *owner;
	char name[40], section[48], cursor_name[64];
	struct export_config cfg;
	enum exp_format format;
	const struct exp_format_ops *fmt;
	const struct event_table *tables[EXP_MAX_TABLES];
	size_t n_tables;
	struct sender snd;
	struct store_cursor *cursor;
	struct store_watch *watch;
	int64_t pos;
	int64_t last;  /* the highest id of the batch in flight */
	size_t n_read; /* its rows as read (before the too old were dropped) */
	struct turn turn;
	uint64_t skipped;	/* rows passed by at a change of destination (start_from = now) */
	struct exp_backfill bf; /* a table exported again (events_follow.h) */
	struct exp_metrics m;
	struct log_ratelimit rl_fail, rl_store;
	int64_t pending_at_ns;	/* clock_mono_ns() of the last pending count */
	int64_t blobs_check_ns; /* the next look for the capture columns; -1: done */
	bool full;		/* the last batch was full: a backlog */

	/* The batch: rows in id order, their structs in arena. */
	struct arena arena;
	struct export_row *rows;
	size_t n_rows, cap;
	struct buf body;
	char *url_buf;
	/* The status the HTTP threads read is the sender's (snd.st,
	 * sender_status_get()), from before the thread starts. */
};

struct events_export {
	struct exp_dest *dest[EXP_MAX_DEST];
	size_t n;
	struct export_identity id;
	char *id_strings; /* the identity's strings, one block */
	struct store *store;
	char db_id[24];
};

/* OTLP's partial success: the records an accepted request still lost. */
static uint64_t exp_otlp_rejected(struct exp_dest *d, uint64_t n)
{
	int64_t rej = 0;
	char msg[160];

	if (otlp_logs_response(d->snd.resp, d->snd.resp_len, n, &rej, msg, sizeof(msg)) || rej <= 0)
		return 0;
	log_ratelimited(&d->rl_fail, 10000, LOG_LVL_WARN, d->section,
			"%s rejected %" PRId64 " of %" PRIu64 " records: %s", d->snd.url_public,
			rej, n, msg);
	return (uint64_t)rej;
}

static const char *const exp_ch_headers[] = {"Content-Type: application/x-ndjson", NULL};
static const char *const exp_otlp_headers[] = {"Content-Type: application/x-protobuf", NULL};

static const struct turn_ops exp_turn_ops;

static const struct exp_format_ops exp_format_ops[] = {
    [EXP_CLICKHOUSE] = {.headers = exp_ch_headers,
			.per_table = true,
			.database = true,
			.url = clickhouse_insert_url,
			.encode = clickhouse_rows,
			.verdict = clickhouse_verdict},
    [EXP_OTLP] = {.headers = exp_otlp_headers,
		  .encode = otlp_logs_encode,
		  .rejected = exp_otlp_rejected},
};

int events_export_declare(struct config *cfg)
{
	return cfg_declare_family(cfg, "export", export_keys,
				  "an event exporter (ClickHouse or OTLP logs): docs/fleet.md");
}

/* ---- configuration ---- */

static int exp_tables_parse(struct config *cfg, struct exp_dest *d,
			    const struct event_table *const *all)
{
	char *text, *save = NULL;
	int bad = 0;

	if (!*d->cfg.tables) {
		for (size_t i = 0; all[i] && d->n_tables < EXP_MAX_TABLES; i++)
			if (strcmp(all[i]->name, "self_samples"))
				d->tables[d->n_tables++] = all[i];
		return 0;
	}
	text = strdup(d->cfg.tables);
	if (!text)
		return -ENOMEM;
	for (char *tok = strtok_r(text, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		size_t i = 0;

		while (all[i] && strcmp(all[i]->name, tok))
			i++;
		if (!all[i]) {
			char list[512];
			size_t off = 0;

			list[0] = '\0';
			for (size_t k = 0; all[k] && off < sizeof(list); k++)
				off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
							k ? ", " : "", all[k]->name);
			bad |= cfg_error(cfg, d->section, "tables",
					 "no event table '%s' (known: %s)", tok, list);
			continue;
		}
		for (size_t k = 0; k < d->n_tables; k++)
			if (d->tables[k] == all[i])
				goto next;
		if (d->n_tables < EXP_MAX_TABLES)
			d->tables[d->n_tables++] = all[i];
	next:;
	}
	free(text);
	if (!bad && !d->n_tables)
		bad |= cfg_error(cfg, d->section, "tables", "names no table");
	return bad ? -EINVAL : 0;
}

static void exp_dest_free(struct exp_dest *d)
{
	if (!d)
		return;
	sender_free(&d->snd);
	store_cursor_close(d->cursor);
	store_watch_remove(d->watch);
	arena_free(&d->arena);
	free(d->rows);
	buf_free(&d->body);
	free(d->url_buf);
	free(d);
}

static int exp_dest_new(struct config *cfg, struct cfg_section *sec, const char *name,
			const struct event_table *const *all, bool read_files,
			struct exp_dest **out)
{
	struct exp_dest *d = calloc(1, sizeof(*d));
	int bad = 0, err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->bf.table = -1;
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->section, sizeof(d->section), "%s", sec->name);
	bad |= cfg_section_parse(cfg, sec->name, &d->cfg) ? 1 : 0;
	d->format = d->cfg.format == EXP_OTLP ? EXP_OTLP : EXP_CLICKHOUSE;
	d->fmt = &exp_format_ops[d->format];
	/* only ClickHouse can lack a column: OTLP has attributes */
	d->blobs_check_ns = d->format == EXP_CLICKHOUSE && d->cfg.capture ? 0 : -1;
	snprintf(d->cursor_name, sizeof(d->cursor_name), "%s%s",
		 d->cfg.cursor && *d->cfg.cursor ? "" : "export.",
		 d->cfg.cursor && *d->cfg.cursor ? d->cfg.cursor : name);
	if (d->fmt->database && d->cfg.database && !clickhouse_ident_ok(d->cfg.database))
		bad |= cfg_error(cfg, d->section, "database", "'%s': [A-Za-z_][A-Za-z0-9_]*",
				 d->cfg.database);
	err = exp_tables_parse(cfg, d, all);
	if (err == -ENOMEM)
		goto oom;
	bad |= err ? 1 : 0;
	err = sender_check(&d->snd, cfg, d->section, &d->cfg.http, read_files);
	if (err == -ENOMEM)
		goto oom;
	bad |= err ? 1 : 0;
	/* sender_check() keeps a pointer to the section name: d's own copy. */
	d->snd.section = d->section;
	d->turn = (struct turn){.ops = &exp_turn_ops,
				.ctx = d,
				.snd = &d->snd,
				.section = d->section,
				.unit = "rows",
				.gzip = d->cfg.gzip,
				.rl_fail = &d->rl_fail};
	if (bad) {
		exp_dest_free(d);
		return -EINVAL;
	}
	*out = d;
	return 0;
oom:
	exp_dest_free(d);
	return -ENOMEM;
}

static int exp_identity_copy(struct events_export *e, const struct export_identity *id)
{
	size_t need = strlen(id->job) + strlen(id->instance) + strlen(id->version) + 3;
	char *p;

	for (size_t i = 0; i < id->n_labels; i++)
		need += strlen(id->labels[i].name) + strlen(id->labels[i].value) + 2;
	p = e->id_strings = malloc(need);
	if (!p)
		return -ENOMEM;
#define EXP_COPY(dst, src)                                                                         \
	do {                                                                                       \
		size_t n_ = strlen(src) + 1;                                                       \
		memcpy(p, (src), n_);                                                              \
		(dst) = p;                                                                         \
		p += n_;                                                                           \
	} while (0)
	EXP_COPY(e->id.job, id->job);
	EXP_COPY(e->id.instance, id->instance);
	EXP_COPY(e->id.version, id->version);
	for (size_t i = 0; i < id->n_labels && i < EXPORT_MAX_LABELS; i++) {
		EXP_COPY(e->id.labels[i].name, id->labels[i].name);
		EXP_COPY(e->id.labels[i].value, id->labels[i].value);
	}
#undef EXP_COPY
	e->id.n_labels = id->n_labels < EXPORT_MAX_LABELS ? id->n_labels : EXPORT_MAX_LABELS;
	e->id.db_id = e->db_id;
	return 0;
}

void events_export_free(struct events_export *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		exp_dest_free(e->dest[i]);
	free(e->id_strings);
	free(e);
}

int events_export_new(struct config *cfg, const struct event_table *const *tables,
		      const struct export_identity *identity, bool read_files,
		      struct events_export **out)
{
	struct events_export *e;
	int bad = 0;

	*out = NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_sections; i++) {
		struct cfg_section *sec = &cfg->sections[i];
		const char *name = cfg_family_name(sec, "export");
		struct exp_dest *d;
		int err;

		if (!name)
			continue;
		if (e->n == EXP_MAX_DEST) {
			bad |= cfg_error(cfg, sec->name, "format",
					 "at most %d [export.NAME] sections", EXP_MAX_DEST);
			continue;
		}
		err = exp_dest_new(cfg, sec, name, tables, read_files, &d);
		if (err == -ENOMEM) {
			events_export_free(e);
			return err;
		}
		if (err) {
			bad = 1;
			continue;
		}
		for (size_t k = 0; k < e->n; k++)
			if (!strcmp(e->dest[k]->cursor_name, d->cursor_name))
				bad |= cfg_error(cfg, d->section, "cursor",
						 "'%s' is [%s]'s cursor too: each destination "
						 "needs its own",
						 d->cursor_name, e->dest[k]->section);
		d->owner = e;
		e->dest[e->n++] = d;
	}
	if (bad || !e->n) {
		events_export_free(e);
		return bad ? -EINVAL : 0;
	}
	if (exp_identity_copy(e, identity)) {
		events_export_free(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

/* ---- a turn ---- */

/* Reading: rows of every table after pos, cut at the first id a full page
 * may hide rows below in another table. */
struct exp_read {
	struct exp_dest *d;
	const struct event_table *const *tables; /* d->tables, or the backfill's one */
	int64_t upto;				 /* rows past it stop the read */
	size_t per_table[EXP_MAX_TABLES];
	int64_t last_id[EXP_MAX_TABLES];
	unsigned limit;
	bool oom;
};

static int exp_read_row(size_t table, int64_t id, int64_t ts_ns, const void *row, void *arg)
{
	struct exp_read *x = arg;
	struct exp_dest *d = x->d;
	const struct event_table *t = x->tables[table];
	struct export_row *r;
	void *copy;

	if (id > x->upto)
		return 1;
	if (d->n_rows == d->cap) {
		r = array_grow(d->rows, &d->cap, d->n_rows, sizeof(*d->rows), 256);
		if (!r) {
			x->oom = true;
			return -ENOMEM;
		}
		d->rows = r;
	}
	copy = arena_alloc(&d->arena, t->row_size);
	if (!copy) {
		x->oom = true;
		return -ENOMEM;
	}
	memcpy(copy, row, t->row_size);
	d->rows[d->n_rows++] =
	    (struct export_row){.table = t, .id = id, .ts_ns = ts_ns, .row = copy};
	x->per_table[table]++;
	x->last_id[table] = id;
	return 0;
}

static int exp_row_cmp(const void *a, const void *b)
{
	const struct export_row *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int exp_row_table_cmp(const void *a, const void *b)
{
	const struct export_row *x = a, *y = b;
	int c = strcmp(x->table->name, y->table->name);

	return c ? c : exp_row_cmp(a, b);
}

/* The batch after d->pos into d->rows (id order). 0, or -errno. */
static int exp_read_batch(struct exp_dest *d, struct store *s)
{
	struct exp_read x = {
	    .d = d, .tables = d->tables, .upto = INT64_MAX, .limit = (unsigned)d->cfg.batch_rows};
	int64_t cut = INT64_MAX;
	size_t n = 0;
	int err;

	arena_free(&d->arena);
	d->n_rows = 0;
	if (d->bf.table >= 0) {
		x.tables = &d->tables[d->bf.table];
		x.upto = d->bf.to;
		err = store_export_read(s, x.tables, 1, d->bf.from, x.limit, exp_read_row, &x);
		return x.oom ? -ENOMEM : err < 0 ? err : 0;
	}
	err = store_export_read(s, d->tables, d->n_tables, d->pos, x.limit, exp_read_row, &x);
	if (err)
		return x.oom ? -ENOMEM : err;
	/* A table whose page was full may have rows past its last one that
	 * are below another table's: the batch ends at the lowest such id. */
	for (size_t i = 0; i < d->n_tables; i++)
		if (x.per_table[i] == x.limit && x.last_id[i] < cut)
			cut = x.last_id[i];
	qsort(d->rows, d->n_rows, sizeof(*d->rows), exp_row_cmp);
	while (n < d->n_rows && n < d->cfg.batch_rows && d->rows[n].id <= cut)
		n++;
	d->n_rows = n;
	/* ClickHouse takes one INSERT per table: the batch table by table
	 * (each in id order), not one small INSERT per run of a table. */
	if (d->fmt->per_table)
		qsort(d->rows, d->n_rows, sizeof(*d->rows), exp_row_table_cmp);
	return 0;
}

/* Rows of the batch too old to send: they are dropped and counted; the
 * rest move to the front. */
static void exp_drop_old(struct exp_dest *d)
{
	int64_t cutoff;
	size_t k = 0;

	if (!d->cfg.max_age)
		return;
	cutoff = clock_wall_ns() - (int64_t)d->cfg.max_age * 1000000;
	for (size_t i = 0; i < d->n_rows; i++)
		if (d->rows[i].ts_ns >= cutoff)
			d->rows[k++] = d->rows[i];
	sender_lost(&d->snd, d->m.drop_old, d->n_rows - k);
	d->n_rows = k;
}

/* Nothing left of the backfill to read: what it expected and did not find
 * retention deleted meanwhile. */
static void exp_backfill_done(struct exp_dest *d)
{
	sender_count(d->m.drop_deleted, d->bf.left);
	log_info(d->section,
		 "table %s: its rows written while it was not exported are sent (%" PRIu64
		 " deleted by retention before their turn)",
		 d->tables[d->bf.table]->name, d->bf.left);
	exp_backfill_end(d->cursor, d->tables, &d->bf);
	exp_backfill_next(d->cursor, d->tables, d->n_tables, &d->bf);
}

static void exp_cursor_save(struct exp_dest *d, int64_t pos)
{
	d->pos = pos;
	store_watch_set(d->watch, d->pos, d->pos);
	sender_cursor_save(&d->snd, d->cursor, d->pos, &d->rl_store);
}

/* The backlog's gauges: false when there is none. Counting a backlog reads
 * it: while batches come full (a backlog), once a second is enough for the
 * gauges; near the head, every turn, so they say 0 when everything was
 * sent. */
static bool exp_backlog(struct exp_dest *d, struct store *s)
{
	uint64_t pending;
	int64_t oldest;
	double lag;

	/* a backfill reads behind the cursor: the backlog is the cursor's */
	if (d->bf.table >= 0 || (d->full && clock_mono_ns() - d->pending_at_ns < 1000000000ll))
		return true;
	d->pending_at_ns = clock_mono_ns();
	if (store_export_pending(s, d->tables, d->n_tables, d->pos, &pending, &oldest))
		return true;
	lag = oldest ? (double)(clock_wall_ns() - oldest) / 1e9 : 0;
	if (d->m.pending)
		series_set(d->m.pending, (double)pending);
	if (d->m.lag)
		series_set(d->m.lag, lag > 0 ? lag : 0);
	sender_status_backlog(&d->snd, pending, lag);
	return pending != 0;
}

/* turn_ops.read: the batch after the cursor, less what is too old. */
static bool exp_turn_read(void *ctx, size_t *units, uint64_t *count, uint64_t *wait)
{
	struct exp_dest *d = ctx;
	struct store *s = d->owner->store;
	uint64_t deleted, inflight;
	int err;

	*wait = d->cfg.send_interval;
	/* Deleted while nothing was in flight: never read, lost. */
	store_watch_take(d->watch, &deleted, &inflight);
	sender_lost(&d->snd, d->m.drop_deleted, deleted + inflight);
	if (!exp_backlog(d, s))
		return false;
	err = exp_read_batch(d, s);
	if (err) {
		log_ratelimited(&d->rl_store, 60000, LOG_LVL_WARN, d->section,
				"cannot read the history: %s", strerror(-err));
		sender_status_error(&d->snd, "cannot read the history: %s", strerror(-err));
		return false;
	}
	d->full = d->n_rows >= d->cfg.batch_rows;
	if (!d->n_rows && d->bf.table >= 0) {
		exp_backfill_done(d);
		*wait = 0;
		return false;
	}
	if (!d->n_rows)
		return false;
	d->last = 0;
	for (size_t k = 0; k < d->n_rows; k++)
		d->last = d->rows[k].id > d->last ? d->rows[k].id : d->last;
	if (d->bf.table < 0)
		store_watch_set(d->watch, d->pos, d->last);
	d->n_read = d->n_rows;
	exp_drop_old(d);
	*units = d->n_rows;
	*count = d->n_rows;
	return true;
}

/* turn_ops.encode: the rows from `from` on, one request (ClickHouse: the
 * rows of one table, an INSERT). */
static enum turn_step exp_turn_encode(void *ctx, size_t from, struct turn_part *p, uint64_t *count)
{
	struct exp_dest *d = ctx;
	const struct export_row *rows = d->rows + from;
	size_t n = d->n_rows - from;
	int err;

	(void)count;
	if (d->fmt->per_table)
		for (n = 1; from + n < d->n_rows && rows[n].table == rows[0].table;)
			n++;
	*p = (struct turn_part){.used = n, .n = n};
	d->body.len = 0;
	if (d->fmt->url) {
		free(d->url_buf);
		d->url_buf = d->fmt->url(d->cfg.http.url, d->cfg.database, rows[0].table);
		if (!d->url_buf)
			return TURN_RETRY;
		sender_set_url(&d->snd, d->url_buf);
	}
	err = d->fmt->encode(rows, n, &d->owner->id, d->cfg.capture ? EXPORT_F_BLOBS : 0, &d->body);
	if (err || d->body.oom) {
		snprintf(d->snd.errbuf, sizeof(d->snd.errbuf), "cannot encode %zu rows: %s", n,
			 strerror(err ? -err : ENOMEM));
		return err == -EINVAL ? TURN_REFUSE : TURN_RETRY;
	}
	p->body = d->body.p;
	p->len = d->body.len;
	return TURN_SEND;
}

static enum sender_verdict exp_turn_verdict(void *ctx, enum sender_verdict v)
{
	struct exp_dest *d = ctx;

	return d->fmt->verdict ? d->fmt->verdict(d->snd.status, d->snd.resp) : v;
}

static uint64_t exp_turn_rejected(void *ctx, uint64_t n)
{
	struct exp_dest *d = ctx;

	return d->fmt->rejected ? d->fmt->rejected(d, n) : 0;
}

/* Deleted during the send: past the batch, lost; in it, lost only if the
 * batch must be read again. Rows sent before a failure go again with the
 * rest: the receiver deduplicates them by key. */
static void exp_turn_finish(void *ctx, enum sender_verdict last)
{
	struct exp_dest *d = ctx;
	uint64_t deleted, inflight;

	store_watch_take(d->watch, &deleted, &inflight);
	sender_lost(&d->snd, d->m.drop_deleted, deleted + (last == SENDER_RETRY ? inflight : 0));
	if (last == SENDER_RETRY)
		store_watch_set(d->watch, d->pos, d->pos);
}

static uint64_t exp_turn_advance(void *ctx, bool accepted)
{
	struct exp_dest *d = ctx;

	(void)accepted;
	if (d->bf.table >= 0)
		exp_backfill_save(d->cursor, d->tables, &d->bf, d->last, d->n_read);
	else
		exp_cursor_save(d, d->last);
	return 0;
}

static void exp_turn_stopped(void *ctx)
{
	struct exp_dest *d = ctx;

	store_watch_set(d->watch, d->pos, d->pos);
}

static const struct turn_ops exp_turn_ops = {
    .read = exp_turn_read,
    .encode = exp_turn_encode,
    .verdict = exp_turn_verdict,
    .rejected = exp_turn_rejected,
    .finish = exp_turn_finish,
    .advance = exp_turn_advance,
    .stopped = exp_turn_stopped,
};

/* Whether line is one of the lines of text. */
static bool exp_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

/* capture = true into ClickHouse: are the tables' capture columns there?
 * An INSERT skips a column its table lacks, so a table made by an older
 * DDL would take the rows without their captures: the log says so, with
 * the ALTER TABLE that adds them, once the receiver has answered (asked
 * again every minute until then). */
static void exp_blobs_check(struct exp_dest *d)
{
	char *url, want[160];
	int64_t now = clock_mono_ns();

	if (d->blobs_check_ns < 0 || now < d->blobs_check_ns)
		return;
	d->blobs_check_ns = now + 60 * 1000000000LL;
	url = clickhouse_blob_columns_url(d->cfg.http.url, d->cfg.database, d->tables, d->n_tables);
	if (!url)
		return;
	if (sender_get(&d->snd, url) == SENDER_SENT && d->snd.status == 200) {
		d->blobs_check_ns = -1;
		for (size_t i = 0; i < d->n_tables; i++)
			for (const struct event_column *c = d->tables[i]->cols; c->name; c++) {
				if (c->type != COL_BLOB)
					continue;
				snprintf(want, sizeof(want), "%s.%s", d->tables[i]->name, c->name);
				if (exp_has_line(d->snd.resp, want))
					continue;
				log_err(d->section,
					"capture = true, but %s.%s has no column %s (made by an "
					"older DDL): its rows arrive without their captures until "
					"ALTER TABLE %s.%s ADD COLUMN %s Nullable(String)",
					d->cfg.database, d->tables[i]->name, c->name,
					d->cfg.database, d->tables[i]->name, c->name);
			}
	}
	free(url);
}

static void *exp_main(void *arg)
{
	struct exp_dest *d = arg;
	uint64_t wait;

	do {
		exp_blobs_check(d);
		wait = turn_run(&d->turn);
		sender_publish_cpu(d->m.cpu);
	} while (!sender_stopping(&d->snd) && (!wait || sender_sleep(&d->snd, wait)));
	return NULL;
}

/* ---- start ---- */

static struct metric_series *exp_series(struct metric *f, const char *dest, const char *reason)
{
	return f ? metric_series(f, reason ? (const char *const[]){dest, reason}
					   : (const char *const[]){dest})
		 : NULL;
}

static void exp_metrics_register(struct exp_dest *d, struct metrics *m)
{
	static const char *const dest[] = {"destination", NULL};
	static const char *const dest_reason[] = {"destination", "reason", NULL};
	struct metric *f;

	f = metrics_counter(m, "sysobs_export_rows_sent_total",
			    "Event rows the destination accepted.", dest);
	d->turn.m.sent = exp_series(f, d->name, NULL);
	f = metrics_counter(
	    m, "sysobs_export_rows_retried_total",
	    "Event rows in batches sent again: the receiver's state (401, 403, 404, "
	    "407, 408, 429, 5xx, any answer not about the data) or a transport "
	    "error.",
	    dest);
	d->turn.m.retried = exp_series(f, d->name, NULL);
	f = metrics_counter(m, "sysobs_export_rows_dropped_total",
			    "Event rows never delivered: refused (400 or 422, or ClickHouse's code "
			    "for data it cannot take: not retried), rejected (OTLP partial "
			    "success), too_old (past max_age), "
			    "deleted (by retention before they were sent), skipped (passed by when "
			    "the url or database changed with start_from = now).",
			    dest_reason);
	d->turn.m.refused = exp_series(f, d->name, "refused");
	d->turn.m.rejected = exp_series(f, d->name, "rejected");
	d->m.drop_old = exp_series(f, d->name, "too_old");
	d->m.drop_deleted = exp_series(f, d->name, "deleted");
	d->m.skipped = exp_series(f, d->name, "skipped");
	sender_count(d->m.skipped, d->skipped);
	f = metrics_gauge(m, "sysobs_export_pending_rows",
			  "Event rows after the destination's cursor (committed, not yet sent).",
			  dest);
	d->m.pending = exp_series(f, d->name, NULL);
	f = metrics_gauge(m, "sysobs_export_lag_seconds",
			  "Age of the oldest event row not yet sent (0 when caught up).", dest);
	d->m.lag = exp_series(f, d->name, NULL);
	f = metrics_gauge(m, "sysobs_export_last_success_timestamp_seconds",
			  "Unix time of the last batch the destination accepted.", dest);
	d->turn.m.last_success = exp_series(f, d->name, NULL);
	f = metrics_counter(m, "sysobs_export_bytes_sent_total",
			    "Request bytes (after gzip) the destination accepted.", dest);
	d->turn.m.bytes = exp_series(f, d->name, NULL);
	f = metrics_counter(m, "sysobs_export_cpu_seconds_total",
			    "CPU time (user + system) of the destination's thread.", dest);
	d->m.cpu = exp_series(f, d->name, NULL);
}

/* The cursor as the config says (events_follow.c). */
static void exp_follow(struct exp_dest *d, struct store *s)
{
	char dest[600];
	struct exp_follow f = {.cursor = d->cursor,
			       .tables = d->tables,
			       .n_tables = d->n_tables,
			       .section = d->section,
			       .start_from = d->cfg.start_from,
			       .pos = d->pos};

	snprintf(dest, sizeof(dest), "%s %s%s%s", exp_formats[d->format], d->snd.url_public,
		 d->fmt->database ? " database " : "", d->fmt->database ? d->cfg.database : "");
	exp_follow_config(&f, s, dest);
	d->pos = f.pos;
	d->skipped += f.skipped;
	exp_backfill_next(d->cursor, d->tables, d->n_tables, &d->bf);
}

int events_export_attach(struct events_export *e, struct store *s)
{
	uint64_t dbid;
	char err[256];

	if (!e)
		return 0;
	e->store = s;
	if (store_db_id(s, &dbid)) {
		log_err("export", "cannot read the database's id");
		return -EIO;
	}
	snprintf(e->db_id, sizeof(e->db_id), "%016" PRIx64, dbid);
	for (size_t i = 0; i < e->n; i++) {
		struct exp_dest *d = e->dest[i];
		int64_t pos;

		d->cursor = store_cursor_open(s, d->cursor_name, err, sizeof(err));
		if (!d->cursor || store_cursor_get(d->cursor, &pos)) {
			log_err(d->section, "cannot open its cursor: %s", d->cursor ? "read" : err);
			return -EIO;
		}
		d->pos = pos;
		exp_follow(d, s);
		sender_status_cursor(&d->snd, d->pos);
		d->watch = store_watch_add(s, d->tables, d->n_tables);
		if (!d->watch) {
			log_err(d->section, "too many exporters, or a table unknown to the store");
			return -ENOSPC;
		}
		store_watch_set(d->watch, d->pos, d->pos);
	}
	return 0;
}

int events_export_start(struct events_export *e, struct metrics *m)
{
	if (!e)
		return 0;
	for (size_t i = 0; i < e->n; i++) {
		struct exp_dest *d = e->dest[i];
		char thread[16];
		int rc;

		if (sender_setup(&d->snd, d->fmt->headers)) {
			log_err(d->section, "out of memory (or libcurl failed to start)");
			return -ENOMEM;
		}
		exp_metrics_register(d, m);
		snprintf(thread, sizeof(thread), "sysobs-x-%.6s", d->name);
		rc = sender_start(&d->snd, exp_main, d, thread);
		if (rc) {
			log_err(d->section, "cannot start its thread: %s", strerror(-rc));
			return rc;
		}
		log_info(d->section, "sending %zu event tables as %s to %s from row %" PRId64,
			 d->n_tables, exp_formats[d->format], d->snd.url_public, d->pos);
	}
	return 0;
}

/* ---- status ---- */

size_t events_export_count(const struct events_export *e)
{
	return e ? e->n : 0;
}

void events_export_status(struct events_export *e, size_t i, struct export_status *st)
{
	struct exp_dest *d = e->dest[i];

	sender_status_get(&d->snd, st);
	st->name = d->name;
	st->format = exp_formats[d->format];
	st->url = d->snd.url_public;
}
