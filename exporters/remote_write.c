// SPDX-License-Identifier: MIT
/*
 * Prometheus remote-write 1.0 sender: metric history (SQLite) -> WriteRequest
 * (protobuf-c) -> snappy block -> libcurl POST, on a thread of its own. See
 * remote_write.h for the design and docs/remote_write.md for the user's view.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/hist_blob.h"
#include "base/lazylib.h"
#include "base/log.h"
#include "exporters/identity.h"
#include "exporters/remote_write.h"
#include "exporters/remote_write_meta.h"
#include "exporters/remote_write_probe.h"
#include "exporters/turn.h"
#include "metrics/metrics.h"
#include "exporters/proto/prometheus/remote.pb-c.h"
#include "storage/store.h"
#include "storage/store_samples.h"

#define RWK(f, t, d, lo, hi, h) CFG_KEY(struct remote_write_config, f, t, d, lo, hi, h)

const struct cfg_key remote_write_keys[] = {
    SENDER_KEYS(struct remote_write_config, http,
		"receiver endpoint, http:// or https://, e.g. http://127.0.0.1:9090/api/v1/write "
		"(empty = remote_write off)"),
    RWK(max_age, CFG_DURATION, "1h", 1000, 31ull * 86400000,
	"history older than this when its turn comes is dropped and counted (receivers "
	"such as Prometheus refuse samples much older than their newest)"),
    RWK(batch_samples, CFG_U64, "2000", 1, 100000,
	"samples per request; one batch is held in memory at a time"),
    RWK(send_interval, CFG_DURATION, "1s", 100, 60000,
	"how often to look for new history once everything was sent"),
    RWK(external_labels, CFG_STRING, "", 0, 0,
	"labels added to every series unless it has them, e.g. cluster=eu1, replica=a; "
	"[remote_write]'s also on every exported event row ([export.NAME])"),
    RWK(cursor, CFG_STRING, "", 0, 0,
	"name of the durable cursor in the database (store_meta cursor.NAME; empty = the "
	"section's name: remote_write, remote_write.NAME); each destination has its own"),
    RWK(metadata_interval, CFG_DURATION, "1h", 0, 86400000,
	"how often to send every family's type, help and unit (also at start and when they "
	"change; 0 = never); Prometheus and VictoriaMetrics keep none of it, Mimir-like "
	"receivers that do may want 1m"),
    RWK(job, CFG_STRING, "sysobs", 0, 0,
	"job label of every series unless it has one (empty = none); the same as the "
	"documented scrape job's name; [remote_write]'s also on every exported event row"),
    RWK(instance, CFG_STRING, "", 0, 0,
	"instance label of every series unless it has one (empty = [agent] hostname, else the "
	"host name, as the documented scrape config relabels it); [remote_write]'s also the "
	"host of every exported event row"),
    RWK(native_histograms, CFG_BOOL, "false", 0, 0,
	"send histograms as native histograms (the receiver must keep them, e.g. Prometheus "
	"with --enable-feature=native-histograms; not VictoriaMetrics 1.79) instead of "
	"NAME_bucket, _count and _sum"),
    RWK(native_histograms_check, CFG_DURATION, "15s", 0, 3600000,
	"with native_histograms: this long after the first one accepted, ask the receiver's "
	"query API whether it stored it; if not, log an error and send classic buckets from "
	"then on (0 = trust the receiver)"),
    RWK(query_url, CFG_STRING, "", 0, 0,
	"the receiver's Prometheus query API for native_histograms_check, e.g. "
	"http://vmselect:8481/select/0/prometheus (empty = url without /api/v1/write)"),
    {0},
};

/* ---- the sender ---- */

#define RW_MAX_DEST 8 /* [remote_write] and the [remote_write.NAME] sections */

struct rw_metrics {
	struct metric_series *sent, *failed, *retried, *pending, *last_send, *highest, *duration,
	    *bytes, *cpu, *meta_sent;
	struct metric_series *drop_old, *drop_deleted, *drop_invalid;
	struct metric_series *native_form, *unstored;
};

struct rw_dest;

/* One batch read from the history. */
struct rw_read {
	struct rw_dest *rw;
	int64_t cutoff_ns;
	int64_t first, last; /* rowids read */
	int64_t newest_ms;   /* newest timestamp in the batch */
	int64_t oldest_ns;   /* timestamp of its first row: the oldest pending */
	uint64_t too_old;
	int err;
};

/* One destination: [remote_write] or a [remote_write.NAME]. */
struct rw_dest {
	struct remote_write_config cfg; /* strings point into the agent's config */
	/* NAME ("remote_write" for the plain section): the destination label
	 * of its metrics; its section, for logs, errors and the status API;
	 * its cursor. */
	char name[40], section[48], cursor_name[64];
	/* Its identity (job, instance, external labels of its own section),
	 * added to every series (exporters/identity.h). */
	struct export_identity_buf id;

	struct store *store;
	struct store_cursor *cursor;
	int64_t pos; /* rowid of the last sample accepted or given up */
	struct sender snd;
	struct rw_batch batch;
	struct rw_metrics m;
	struct metrics *metrics;
	struct rw_meta meta;
	struct log_ratelimit rl_fail, rl_store;
	bool native;	       /* histograms go native: the config, until the check says no */
	struct rw_probe probe; /* native_histograms_check */
	struct turn turn;      /* its turn loop (exporters/turn.h) */
	struct rw_read rd;     /* the batch in flight */
	int64_t last;	       /* the newest rowid of the history at its read */
};

/* Every destination configured, [remote_write] first when it is. */
struct remote_write {
	struct rw_dest *dest[RW_MAX_DEST];
	size_t n;
};

static int rw_cursor_name_check(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 40)
		return -EINVAL;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return -EINVAL;
	return 0;
}

/* Fields of a destination that never started are zero: each free accepts
 * that. */
static void rw_dest_free(struct rw_dest *rw)
{
	if (!rw)
		return;
	sender_free(&rw->snd); /* the thread first: it uses the rest */
	store_cursor_close(rw->cursor);
	rw_batch_free(&rw->batch);
	rw_meta_free(&rw->meta);
	rw_probe_free(&rw->probe);
	free(rw);
}

/* The cursor's name: the key's, else the section's own default. */
static int rw_cursor_settings(struct config *cfg, struct rw_dest *rw)
{
	if (!*rw->cfg.cursor) {
		snprintf(rw->cursor_name, sizeof(rw->cursor_name), "%s", rw->section);
		return 0;
	}
	snprintf(rw->cursor_name, sizeof(rw->cursor_name), "%s", rw->cfg.cursor);
	if (rw_cursor_name_check(rw->cfg.cursor))
		return cfg_error(cfg, rw->section, "cursor",
				 "1 to 40 of [a-zA-Z0-9_.-], e.g. remote_write or vm");
	return 0;
}

/* Every check of a destination past a failed one: each error is recorded
 * (cfg_fail()); the secret files are read only with read_files. */
static int rw_settings(struct config *cfg, const char *host, struct rw_dest *rw, bool read_files)
{
	const char *why = NULL;
	int bad = 0, err;

	bad |= rw_cursor_settings(cfg, rw);
	/* The section's own job, instance and external labels; a key's type
	 * error (no key named) was reported by the section's parse. */
	if (export_identity_resolve_section(cfg, rw->section, host, &rw->id) && rw->id.key)
		bad |= cfg_error(cfg, rw->section, rw->id.key, "%s", rw->id.why);
	/* snappy is loaded here, as libcurl by sender_check(): only for a
	 * configured remote_write (base/lazylib.h). */
	if (!lazylib_snappy(&why))
		bad |= cfg_error(cfg, rw->section, "url", "remote_write needs snappy: %s", why);
	err = sender_check(&rw->snd, cfg, rw->section, &rw->cfg.http, read_files);
	if (err == -ENOMEM)
		return err;
	return bad || err ? -EINVAL : 0;
}

/* One destination of section (name: its destination label). *out NULL
 * when its url is empty (off). 0, -EINVAL (recorded) or -ENOMEM. */
static int rw_dest_new(struct config *cfg, const char *section, const char *name, const char *host,
		       bool read_files, struct rw_dest **out)
{
	struct rw_dest *rw = calloc(1, sizeof(*rw));
	int err, bad;

	*out = NULL;
	if (!rw)
		return -ENOMEM;
	snprintf(rw->section, sizeof(rw->section), "%s", section);
	snprintf(rw->name, sizeof(rw->name), "%s", name);
	bad = cfg_section_parse(cfg, section, &rw->cfg) ? 1 : 0;
	if (!*rw->cfg.http.url) { /* off: nothing more to check */
		rw_dest_free(rw);
		return bad ? -EINVAL : 0;
	}
	err = rw_settings(cfg, host, rw, read_files);
	if (err || bad) {
		rw_dest_free(rw);
		return err == -ENOMEM ? err : -EINVAL;
	}
	*out = rw;
	return 0;
}

/* d against the destinations before it: a cursor or a name of its own. */
static int rw_dest_unique(struct config *cfg, const struct remote_write *set,
			  const struct rw_dest *d)
{
	int bad = 0;

	for (size_t k = 0; k < set->n; k++) {
		const struct rw_dest *o = set->dest[k];

		if (!strcmp(o->cursor_name, d->cursor_name))
			bad |=
			    cfg_error(cfg, d->section, "cursor",
				      "'%s' is [%s]'s cursor too: each destination needs its own",
				      d->cursor_name, o->section);
		if (!strcmp(o->name, d->name))
			bad |= cfg_error(cfg, d->section, "url",
					 "'%s' names [%s]'s metrics (destination=\"%s\"): choose "
					 "another section name",
					 d->name, o->section, o->name);
	}
	return bad;
}

/* Adds the destination of section (off: nothing) to set. */
static int rw_set_add(struct config *cfg, struct remote_write *set, const char *section,
		      const char *name, const char *host, bool read_files)
{
	struct rw_dest *d;
	int err;

	err = rw_dest_new(cfg, section, name, host, read_files, &d);
	if (err || !d)
		return err;
	if (set->n == RW_MAX_DEST) {
		rw_dest_free(d);
		return cfg_error(cfg, section, "url", "at most %d remote_write destinations",
				 RW_MAX_DEST);
	}
	err = rw_dest_unique(cfg, set, d) ? -EINVAL : 0;
	set->dest[set->n++] = d;
	return err;
}

int remote_write_declare(struct config *cfg)
{
	int err = cfg_declare(cfg, "remote_write", remote_write_keys);

	return err ? err
		   : cfg_declare_family(cfg, "remote_write", remote_write_keys,
					"one more remote_write destination, with a cursor of "
					"its own: docs/remote_write.md");
}

int remote_write_check(struct config *cfg, const char *host, bool read_files,
		       struct remote_write **out)
{
	struct remote_write *set = calloc(1, sizeof(*set));
	int bad = 0, err;

	*out = NULL;
	if (!set)
		return -ENOMEM;
	/* The plain [remote_write] first, under the names it always had. */
	err = rw_set_add(cfg, set, "remote_write", "remote_write", host, read_files);
	bad = err ? 1 : 0;
	for (size_t i = 0; err != -ENOMEM && i < cfg->n_sections; i++) {
		const char *name = cfg_family_name(&cfg->sections[i], "remote_write");

		if (!name)
			continue;
		err = rw_set_add(cfg, set, cfg->sections[i].name, name, host, read_files);
		bad |= err ? 1 : 0;
	}
	if (err == -ENOMEM || bad || !set->n) {
		remote_write_free(set);
		return err == -ENOMEM ? err : bad ? -EINVAL : 0;
	}
	*out = set;
	return 0;
}

int remote_write_new(struct config *cfg, const char *host, struct remote_write **out)
{
	return remote_write_check(cfg, host, true, out);
}

/* rw_read_row's "the batch is full": the walk stops before this row. */
#define RW_READ_FULL 1

static int rw_read_row(const struct store_sample *smp, void *arg)
{
	struct rw_read *x = arg;
	int64_t ms = smp->ts_ns / 1000000;
	int err;

	/* A row with buckets adds up to HIST_BLOB_MAX_BUCKETS samples more:
	 * the batch has that much room past batch_samples. */
	if (x->rw->batch.n_rows >= x->rw->cfg.batch_samples)
		return RW_READ_FULL;
	if (!x->first) {
		x->first = smp->rowid;
		x->oldest_ns = smp->ts_ns;
	}
	x->last = smp->rowid;
	if (smp->ts_ns < x->cutoff_ns) {
		x->too_old++;
		return 0;
	}
	err = rw_batch_add_history(&x->rw->batch, x->rw->native, smp, ms);
	if (err == -ENOMEM || err == -ENOSPC)
		return -ENOMEM;
	if (!err && ms > x->newest_ms)
		x->newest_ms = ms;
	return 0;
}

/* The cursor moves past the batch: count what it leaves unsent (rows
 * retention deleted since this turn's rw_count_deleted() included). */
static void rw_advance(struct rw_dest *rw, const struct rw_read *x)
{
	if (x->first > rw->pos + 1)
		sender_lost(&rw->snd, rw->m.drop_deleted, (uint64_t)(x->first - rw->pos - 1));
	sender_lost(&rw->snd, rw->m.drop_old, x->too_old);
	sender_lost(&rw->snd, rw->m.drop_invalid, rw->batch.invalid);
	rw->pos = x->last;
	sender_cursor_save(&rw->snd, rw->cursor, rw->pos, &rw->rl_store);
}

/* Every turn, whatever the receiver's state: samples retention deleted
 * after the cursor (the rowids between it and the oldest left) are counted
 * at once, and the cursor moves past them, so an outage that outlasts the
 * retention shows in sysobs_remote_write_samples_dropped_total{reason=
 * "deleted"} while it lasts, not once the receiver is back. */
static void rw_count_deleted(struct rw_dest *rw)
{
	int64_t first;

	if (store_samples_first(rw->store, &first) || first <= rw->pos + 1)
		return;
	sender_lost(&rw->snd, rw->m.drop_deleted, (uint64_t)(first - rw->pos - 1));
	rw->pos = first - 1;
	sender_cursor_save(&rw->snd, rw->cursor, rw->pos, &rw->rl_store);
}

/* An accepted request carried the first native histograms: the check of
 * native_histograms_check is armed for one of them. */
static void rw_probe_after_send(struct rw_dest *rw)
{
	char name[sizeof(rw->batch.native_sum_name)];
	size_t n = strlen(rw->batch.native_sum_name);

	if (!rw->batch.n_native || rw->probe.done || rw->probe.due_ns || n < 5)
		return;
	snprintf(name, sizeof(name), "%.*s", (int)(n - 4), rw->batch.native_sum_name);
	if (rw_probe_arm(&rw->probe, name, rw->id.labels, rw->id.n_labels,
			 clock_mono_ns() + (int64_t)rw->cfg.native_histograms_check * 1000000)) {
		log_warn(rw->section, "cannot check that the receiver stores native histograms "
				      "(out of memory, or labels too long)");
		rw->probe.done = true;
	}
}

/* When the check is due: the receiver either has the histogram (native it
 * stays) or not (an error, counted, and classic buckets from now on). */
static void rw_probe_turn(struct rw_dest *rw)
{
	int rc;

	if (rw->probe.done || !rw->probe.due_ns || clock_mono_ns() < rw->probe.due_ns)
		return;
	rc = rw_probe_run(&rw->probe, &rw->snd);
	if (rc == -EAGAIN && rw->probe.tries < RW_PROBE_TRIES) {
		/* the receiver shows nothing of the batch yet: later */
		rw->probe.due_ns =
		    clock_mono_ns() + (int64_t)rw->cfg.native_histograms_check * 1000000;
		return;
	}
	rw->probe.done = true;
	if (rc == -EAGAIN) {
		log_warn(rw->section,
			 "cannot check whether %s stores native histograms: its query API showed "
			 "no %s of this agent in %u tries",
			 rw->probe.base_public, RW_PROBE_CONTROL, rw->probe.tries);
		return;
	}
	if (rc == 1) {
		log_info(rw->section, "%s stores the native histograms it accepts (%s found)",
			 rw->probe.base_public, rw->probe.selector);
		return;
	}
	if (rc < 0) {
		log_warn(rw->section,
			 "cannot check whether %s stores native histograms: %s%.*s (set "
			 "query_url, or native_histograms_check = 0)",
			 rw->probe.base_public, rw->snd.status ? "its query API answered " : "",
			 rw->snd.status ? 160 : (int)sizeof(rw->snd.errbuf),
			 rw->snd.status ? rw->snd.resp : rw->snd.errbuf);
		return;
	}
	log_err(rw->section,
		"the receiver accepted native histograms and stored none (%s absent from %s, "
		"which shows the %s sent with it): sending classic _bucket series from now on; "
		"set native_histograms = false for it (docs/remote_write.md)",
		rw->probe.selector, rw->probe.base_public, RW_PROBE_CONTROL);
	rw->native = false;
	sender_count(rw->m.unstored, 1);
	if (rw->m.native_form)
		series_set(rw->m.native_form, 0);
}

/* How many samples the history holds after the cursor, into the gauge; a
 * history renumbered (emptied, a new database) is sent from its start.
 * false: it cannot be read. */
static bool rw_backlog(struct rw_dest *rw, int64_t *last)
{
	int64_t first;
	int err = store_samples_last(rw->store, last);

	if (err) {
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, rw->section,
				"cannot read the metric history: %s", strerror(-err));
		return false;
	}
	if (*last < rw->pos) {
		log_warn(rw->section,
			 "the metric history was renumbered (emptied or a new database): "
			 "sending it from its start");
		/* from its oldest sample: nothing of it was deleted unsent */
		if (store_samples_first(rw->store, &first))
			first = 0;
		rw->pos = first > 0 ? first - 1 : 0;
		sender_cursor_save(&rw->snd, rw->cursor, rw->pos, &rw->rl_store);
	}
	rw_count_deleted(rw);
	if (rw->m.pending)
		series_set(rw->m.pending, (double)(*last > rw->pos ? *last - rw->pos : 0));
	return true;
}

/* turn_ops.read: the batch after the cursor (one request). */
static bool rw_turn_read(void *ctx, size_t *units, uint64_t *count, uint64_t *wait)
{
	struct rw_dest *rw = ctx;
	const struct remote_write_config *c = &rw->cfg;
	int err;

	*wait = c->send_interval;
	if (!rw_backlog(rw, &rw->last))
		return false;
	if (rw->last <= rw->pos) {
		sender_status_backlog(&rw->snd, 0, 0);
		return false;
	}
	rw_batch_reset(&rw->batch);
	rw->rd = (struct rw_read){.rw = rw};
	rw->rd.cutoff_ns = clock_wall_ns() - (int64_t)c->max_age * 1000000;
	err = store_samples_after(rw->store, rw->pos, c->batch_samples, rw_read_row, &rw->rd);
	if (err == RW_READ_FULL)
		err = 0;
	if (err || rw->batch.arena.oom) {
		log_ratelimited(&rw->rl_store, 60000, LOG_LVL_WARN, rw->section,
				"cannot read the metric history: %s",
				strerror(err ? -err : ENOMEM));
		return false;
	}
	if (!rw->rd.last)
		return false;
	sender_status_backlog(&rw->snd, (uint64_t)(rw->last - rw->pos),
			      (double)(clock_wall_ns() - rw->rd.oldest_ns) / 1e9);
	if (!rw->batch.n_rows) { /* all too old or invalid: nothing to send */
		rw_advance(rw, &rw->rd);
		*wait = 0;
		return false;
	}
	*units = 1;
	*count = rw->batch.n_rows;
	return true;
}

/* turn_ops.encode: the batch as one WriteRequest. */
static enum turn_step rw_turn_encode(void *ctx, size_t from, struct turn_part *p, uint64_t *count)
{
	struct rw_dest *rw = ctx;
	size_t n;

	(void)from;
	if (rw_batch_encode(&rw->batch, rw->id.labels, rw->id.n_labels, &n)) {
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, rw->section,
				"out of memory encoding %zu samples", rw->batch.n_rows);
		return TURN_GIVE_UP;
	}
	*p = (struct turn_part){
	    .used = 1, .n = n, .body = rw->batch.body, .len = rw->batch.body_len};
	*count = n;
	return TURN_SEND;
}

/* turn_ops.advance: past the batch, sent or refused. */
static uint64_t rw_turn_advance(void *ctx, bool accepted)
{
	struct rw_dest *rw = ctx;

	if (!accepted) { /* 400, 422: a verdict on the data, it would refuse it again */
		rw_advance(rw, &rw->rd);
		return 0;
	}
	if (rw->m.highest)
		series_set(rw->m.highest, (double)rw->rd.newest_ms / 1e3);
	rw_probe_after_send(rw);
	rw_advance(rw, &rw->rd);
	if (rw->rd.last >= rw->last)
		sender_status_backlog(&rw->snd, 0, 0);
	return rw->rd.last < rw->last ? 0 : rw->cfg.send_interval;
}

static const struct turn_ops rw_turn_ops = {
    .read = rw_turn_read,
    .encode = rw_turn_encode,
    .advance = rw_turn_advance,
};

/* Metadata, in a request of its own when due (remote_write_meta.h). A
 * receiver that refuses it (any 4xx: many receivers take no metadata) gets
 * it again after metadata_interval, a failing one after max_backoff;
 * samples never wait for it. */
static void rw_meta_turn(struct rw_dest *rw)
{
	const struct remote_write_config *c = &rw->cfg;
	int64_t now = clock_mono_ns();
	enum sender_verdict verdict;
	long status;

	if (!c->metadata_interval || !rw_meta_due(&rw->meta, rw->metrics, now))
		return;
	verdict = sender_post(&rw->snd, rw->meta.body, rw->meta.body_len, false);
	status = rw->snd.status;
	if (verdict == SENDER_SENT) {
		sender_count(rw->m.meta_sent, rw->meta.n);
		rw_meta_sent(&rw->meta, now, (int64_t)c->metadata_interval * 1000000);
		return;
	}
	if (status)
		log_ratelimited(&rw->rl_fail, 10000, LOG_LVL_WARN, rw->section,
				"%s answered %ld (%.120s) to the metadata of %zu families",
				rw->snd.url_public, status, rw->snd.resp, rw->meta.n);
	rw_meta_failed(&rw->meta, now,
		       (int64_t)(status >= 400 && status < 500 && status != 429
				     ? c->metadata_interval
				     : c->http.max_backoff) *
			   1000000);
}

static void *rw_main(void *arg)
{
	struct rw_dest *rw = arg;
	uint64_t wait;

	do {
		rw_meta_turn(rw);
		rw_probe_turn(rw);
		wait = turn_run(&rw->turn);
		sender_publish_cpu(rw->m.cpu);
	} while (!sender_stopping(&rw->snd) && (!wait || sender_sleep(&rw->snd, wait)));
	return NULL;
}

/* The sender's families, each series labelled with the destination. */
static void rw_metrics_register(struct rw_dest *rw, struct metrics *m)
{
	static const char *const dest[] = {"destination", NULL};
	static const char *const dest_reason[] = {"destination", "reason", NULL};
	static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
					0.25,  0.5,    1,     2.5,  5,	   10,	 30};
	const char *const d[] = {rw->name, NULL};
	struct metric *f;

#define RW_SERIES(fam) ((f = (fam)) ? metric_series(f, d) : NULL)
	rw->m.sent =
	    RW_SERIES(metrics_counter(m, "sysobs_remote_write_samples_sent_total",
				      "Samples the remote-write receiver accepted (2xx).", dest));
	rw->m.failed = RW_SERIES(metrics_counter(
	    m, "sysobs_remote_write_samples_failed_total",
	    "Samples in requests the receiver refused as data (400, 422; not retried).", dest));
	rw->m.retried = RW_SERIES(
	    metrics_counter(m, "sysobs_remote_write_samples_retried_total",
			    "Samples in requests sent again: the receiver's state (401, 403, "
			    "404, 408, 429, 5xx, any answer not about the data) or a transport "
			    "error.",
			    dest));
	f = metrics_counter(m, "sysobs_remote_write_samples_dropped_total",
			    "Metric history samples never sent: too_old (older than max_age), "
			    "deleted (by retention before their turn), invalid (label set).",
			    dest_reason);
	if (f) {
		rw->m.drop_old = metric_series(f, (const char *const[]){rw->name, "too_old"});
		rw->m.drop_deleted = metric_series(f, (const char *const[]){rw->name, "deleted"});
		rw->m.drop_invalid = metric_series(f, (const char *const[]){rw->name, "invalid"});
	}
	rw->m.pending = RW_SERIES(metrics_gauge(
	    m, "sysobs_remote_write_pending_samples",
	    "Metric history samples after the sender's cursor (committed, not yet sent).", dest));
	rw->m.last_send =
	    RW_SERIES(metrics_gauge(m, "sysobs_remote_write_last_send_timestamp_seconds",
				    "Unix time of the last request the receiver accepted.", dest));
	rw->m.highest =
	    RW_SERIES(metrics_gauge(m, "sysobs_remote_write_highest_sent_timestamp_seconds",
				    "Timestamp of the newest sample the receiver accepted.", dest));
	rw->m.bytes = RW_SERIES(
	    metrics_counter(m, "sysobs_remote_write_bytes_sent_total",
			    "Request bytes (snappy-compressed) the receiver accepted.", dest));
	rw->m.meta_sent = RW_SERIES(metrics_counter(
	    m, "sysobs_remote_write_metadata_sent_total",
	    "Metric family metadata (type, help, unit) the receiver accepted.", dest));
	rw->m.native_form = RW_SERIES(metrics_gauge(
	    m, "sysobs_remote_write_native_histograms",
	    "1 while histograms are sent as native histograms, 0 as classic _bucket series "
	    "(native_histograms off, or the receiver found not to store them).",
	    dest));
	rw->m.unstored = RW_SERIES(metrics_counter(
	    m, "sysobs_remote_write_native_histograms_unstored_total",
	    "Checks that found the receiver had not stored a native histogram it accepted "
	    "(the sender then sends classic buckets).",
	    dest));
	if (rw->m.native_form)
		series_set(rw->m.native_form, rw->native);
	rw->m.cpu =
	    RW_SERIES(metrics_counter(m, "sysobs_remote_write_cpu_seconds_total",
				      "CPU time (user + system) of the sender thread.", dest));
	rw->m.duration =
	    RW_SERIES(metrics_histogram(m, "sysobs_remote_write_batch_duration_seconds",
					"Duration of each request of a batch, retries included.",
					dest, bounds, sizeof(bounds) / sizeof(bounds[0])));
#undef RW_SERIES
}

/* Opens the cursor; a cursor never stored starts at the oldest sample. */
static int rw_cursor_start(struct rw_dest *rw, struct store *s)
{
	char err[256];
	int64_t first = 0;
	bool found;

	rw->cursor = store_cursor_open(s, rw->cursor_name, err, sizeof(err));
	if (!rw->cursor) {
		log_err(rw->section, "cannot open its cursor: %s", err);
		return -EIO;
	}
	if (store_cursor_find(rw->cursor, &rw->pos, &found) ||
	    (!found && store_samples_first(s, &first))) {
		log_err(rw->section, "cannot read its cursor");
		return -EIO;
	}
	if (!found) {
		/* The cursor exists from the first start: what retention deletes
		 * from now on is counted even if nothing was ever sent. History
		 * deleted before this destination was configured is not its loss. */
		rw->pos = first ? first - 1 : 0;
		if (store_cursor_set(rw->cursor, rw->pos))
			log_warn(rw->section,
				 "cannot store its first cursor yet (%" PRId64
				 "); kept in memory, stored with the first batch",
				 rw->pos);
	}
	return 0;
}

/* native_histograms and its check (remote_write_probe.h). 0 or -ENOMEM. */
static int rw_native_start(struct rw_dest *rw)
{
	int rc;

	rw->native = rw->cfg.native_histograms;
	rw->probe.done = true;
	if (!rw->native || !rw->cfg.native_histograms_check)
		return 0;
	rc = rw_probe_init(&rw->probe, rw->cfg.http.url, rw->cfg.query_url);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		log_warn(rw->section,
			 "native_histograms: %s is no .../api/v1/write URL, so whether it "
			 "stores them cannot be checked; set query_url",
			 rw->snd.url_public);
		rw->probe.done = true;
	}
	return 0;
}

static int rw_dest_start(struct rw_dest *rw, struct store *s, struct metrics *m)
{
	static const char *const headers[] = {"Content-Encoding: snappy",
					      "Content-Type: application/x-protobuf",
					      "X-Prometheus-Remote-Write-Version: 0.1.0", NULL};
	char thread[16];
	int rc;

	rw->store = s;
	rw->metrics = m;
	rc = rw_cursor_start(rw, s);
	if (rc)
		return rc;
	if (rw_batch_init(&rw->batch, rw->cfg.batch_samples + HIST_BLOB_MAX_BUCKETS) ||
	    sender_setup(&rw->snd, headers)) {
		log_err(rw->section, "out of memory (or libcurl failed to start)");
		return -ENOMEM;
	}
	rc = rw_native_start(rw);
	if (rc)
		return rc;
	rw_metrics_register(rw, m);
	rw->turn = (struct turn){.ops = &rw_turn_ops,
				 .ctx = rw,
				 .snd = &rw->snd,
				 .section = rw->section,
				 .unit = "samples",
				 .m = {.sent = rw->m.sent,
				       .retried = rw->m.retried,
				       .refused = rw->m.failed,
				       .bytes = rw->m.bytes,
				       .last_success = rw->m.last_send,
				       .duration = rw->m.duration},
				 .rl_fail = &rw->rl_fail};
	/* "sysobs-rw" for [remote_write], as always; "rw-NAME" for the others */
	snprintf(thread, sizeof(thread), "%s%s", strcmp(rw->name, "remote_write") ? "rw-" : "",
		 strcmp(rw->name, "remote_write") ? rw->name : "sysobs-rw");
	rc = sender_start(&rw->snd, rw_main, rw, thread);
	if (rc) {
		log_err(rw->section, "cannot start its thread: %s", strerror(-rc));
		return rc;
	}
	/* the cursor named when it is not the section's own */
	log_info(rw->section, "sending metric history to %s from sample %" PRId64 "%s%s",
		 rw->snd.url_public, rw->pos,
		 strcmp(rw->cursor_name, rw->section) ? " of cursor " : "",
		 strcmp(rw->cursor_name, rw->section) ? rw->cursor_name : "");
	return 0;
}

int remote_write_start(struct remote_write *set, struct store *s, struct metrics *m)
{
	int rc = 0;

	for (size_t i = 0; set && i < set->n && !rc; i++)
		rc = rw_dest_start(set->dest[i], s, m);
	return rc;
}

size_t remote_write_count(const struct remote_write *set)
{
	return set ? set->n : 0;
}

void remote_write_status(struct remote_write *set, size_t i, struct export_status *st)
{
	const struct rw_dest *rw = set->dest[i];

	sender_status_get(&set->dest[i]->snd, st);
	st->name = rw->section; /* "remote_write", "remote_write.NAME" */
	st->format = "remote_write";
	st->url = rw->snd.url_public;
}

void remote_write_free(struct remote_write *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		rw_dest_free(set->dest[i]);
	free(set);
}
