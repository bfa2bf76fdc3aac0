/* SPDX-License-Identifier: MIT */
/*
 * Prometheus remote-write 1.0 sender ([remote_write], off unless url is set).
 *
 * The metric history in SQLite is the write-ahead log: every snapshot the
 * agent takes is committed there first, and the sender, on a thread of its
 * own, reads it in commit order after a cursor kept durably in the same
 * database (storage/store_samples.h). A batch (up to batch_samples rows)
 * becomes one WriteRequest (labels sorted, __name__ included, external
 * labels added, samples in timestamp order per series), protobuf-encoded,
 * snappy block-compressed and POSTed with libcurl. The cursor moves past the
 * batch only once the receiver answered 2xx (sent) or 400/422 (dropped: a
 * verdict on the data, it would refuse it again). Every other answer (401,
 * 403, 404, 429, 5xx, ...) and transport errors are retried after an exponential backoff or the
 * receiver's Retry-After, from the database again, so an outage or an agent restart loses nothing.
 * Samples older than max_age when their turn comes are dropped and counted.
 * One batch is in memory at a time.
 */
#ifndef SYSOBS_REMOTE_WRITE_H
#define SYSOBS_REMOTE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/arena.h"
#include "base/config.h"
#include "base/hash.h"
#include "exporters/sender.h"

struct store;
struct metrics;

/* [remote_write]: field names are the key names (CFG_KEY). */
struct remote_write_config {
	struct sender_config http; /* url, timeout, backoff, auth, TLS */
	uint64_t max_age;	   /* ms */
	uint64_t batch_samples;	   /* samples per request */
	uint64_t send_interval;	   /* ms between looks at the history when caught up */
	const char *external_labels;
	const char *job, *instance;	  /* identity: see rw_identity_add() */
	uint64_t metadata_interval;	  /* ms; 0: no metadata */
	const char *cursor;		  /* store_meta cursor.<this> */
	bool native_histograms;		  /* histograms as native ones (remote_write_hist.c) */
	uint64_t native_histograms_check; /* ms after the first one accepted; 0: none */
	const char *query_url;		  /* the receiver's query API (remote_write_probe.h) */
};

extern const struct cfg_key remote_write_keys[];

/*
 * The senders: [remote_write] and every [remote_write.NAME] (the same keys)
 * whose url is set, each a destination with a thread, a cursor (default:
 * the section's name, so [remote_write]'s stays "remote_write"), an
 * identity (its own job, instance, external_labels), batch, metadata,
 * histogram form, auth and TLS of its own; its metrics are labelled
 * destination="NAME" ("remote_write" for the plain section). One receiver
 * down holds back no other.
 */
struct remote_write;

/* Declares [remote_write] and the [remote_write.NAME] family (before
 * cfg_load). */
int remote_write_declare(struct config *cfg);

/*
 * Parses and checks each destination (URL scheme http or https, backoff
 * range, auth and TLS file combinations, cursors and names unique across
 * destinations, the identity keys; reads the password and token files)
 * with host, the agent's name of the host (the default instance; "":
 * gethostname()). 0 with *out NULL when no url is set (off); 0 with *out
 * set; -EINVAL with every error recorded (cfg->errors: "file:line:
 * [remote_write.NAME] key: reason").
 */
int remote_write_new(struct config *cfg, const char *host, struct remote_write **out);
/* remote_write_new() that reads no file without read_files (a reload's
 * check, after privileges were dropped). */
int remote_write_check(struct config *cfg, const char *host, bool read_files,
		       struct remote_write **out);
/* Registers each destination's metrics and starts its thread; 0 when rw
 * is NULL. -errno with a message logged. */
int remote_write_start(struct remote_write *rw, struct store *s, struct metrics *m);
/* How many destinations (0 for NULL), and destination i's status for the
 * API (GET /api/v1/export, /readyz), as an event export destination's:
 * name its section ("remote_write", "remote_write.NAME"), format
 * "remote_write"; safe on any thread between remote_write_start() and
 * remote_write_free(). */
size_t remote_write_count(const struct remote_write *rw);
void remote_write_status(struct remote_write *rw, size_t i, struct export_status *st);
/* Stops the threads (a request in flight gets 2 s to finish, then is aborted
 * within about a second more) and frees.
 * Accepts NULL. Call before the store and the registry go. */
void remote_write_free(struct remote_write *rw);

/* ---- pure parts (unit-tested) ---- */

#define RW_MAX_LABELS 16 /* per series, __name__ and external labels included */

struct rw_label {
	const char *name, *value;
};

/*
 * A rendered label set as the registry writes it (`{a="b",c="d\"e"}`, ""
 * for none; escapes \\, \" and \n) into out[max] with strings in arena.
 * Labels with an empty value are left out (the same as absent for
 * Prometheus). 0, or -EINVAL (malformed, bad or duplicate name, too many).
 */
int rw_labels_parse(const char *rendered, struct arena *a, struct rw_label *out, size_t max,
		    size_t *n);

/* [remote_write] external_labels, "k=v, k2=v2", parsed in place in text.
 * -EINVAL with a reason in *why. */
int rw_external_labels_parse(char *text, struct rw_label *out, size_t max, size_t *n,
			     const char **why);

/*
 * The host's identity on every pushed series, the labels a scrape by the
 * documented job would attach: job (empty: none) and instance (empty: the
 * host name, gethostname()), appended to ext[*n] (the external labels,
 * which must not name either: they have keys of their own). host[hostlen]
 * holds the host name when it is used. -EINVAL with *why and *key (the
 * config key at fault).
 */
int rw_identity_add(const char *job, const char *instance, char *host, size_t hostlen,
		    struct rw_label *ext, size_t max, size_t *n, const char **key,
		    const char **why);

/* Sorts labels by name, bytewise (the order the spec requires). */
void rw_labels_sort(struct rw_label *l, size_t n);

/*
 * One batch: rows added in commit order, grouped by series at encode time.
 * All memory of a batch is in its arena, and the encode buffers are reused:
 * one batch is what the sender holds.
 */
struct rw_series;
struct rw_row;

struct rw_batch {
	struct arena arena;
	struct rw_row *rows;
	size_t n_rows, cap;
	struct rw_series *series;
	size_t n_series;
	struct hash_table by_id; /* of series, by series_id */
	uint64_t invalid;	 /* rows left out: label set that does not parse */
	size_t n_native;	 /* native histograms in the batch */
	/* Encoded body (snappy of the protobuf), reused across batches. */
	uint8_t *pb, *body;
	size_t pb_cap, body_cap, body_len;
	/* The _sum sample that follows the last native histogram added: it is
	 * in the histogram already. Kept across batches (a batch may end
	 * between the two). */
	int64_t native_sum_ts;
	char native_sum_name[256], native_sum_labels[1024];
};

int rw_batch_init(struct rw_batch *b, size_t cap);
void rw_batch_reset(struct rw_batch *b);
void rw_batch_free(struct rw_batch *b);
/* Adds one sample (ts in ms). -ENOSPC when full, -EINVAL for a label set
 * that does not parse (counted in b->invalid), -ENOMEM. */
int rw_batch_add(struct rw_batch *b, int64_t series_id, const char *name, const char *labels,
		 int64_t ts_ms, double value);
/*
 * Adds the classic buckets of one histogram sample: blob is the history's
 * bucket blob (metrics/hist_blob.h) on the sample of count_name (NAME_count),
 * each bucket a sample of NAME_bucket with labels plus le. Adds up to
 * HIST_BLOB_MAX_BUCKETS rows. -EINVAL for a blob or name that does not
 * decode (counted in b->invalid), else as rw_batch_add.
 * exporters/remote_write_hist.c.
 */
int rw_batch_add_buckets(struct rw_batch *b, int64_t series_id, const char *count_name,
			 const char *labels, int64_t ts_ms, const void *blob, size_t len);
/*
 * Adds one native histogram sample (h and its counts in b->arena) to the
 * series of name and labels, as rw_batch_add. remote_write.c.
 */
struct hist_blob_native;
int rw_batch_add_hist(struct rw_batch *b, int64_t series_id, const char *name, const char *labels,
		      int64_t ts_ms, const struct hist_blob_native *h);
/*
 * Adds one histogram sample as a native histogram: blob is the history's
 * bucket blob on the sample of count_name (NAME_count); the histogram goes
 * to the series NAME with labels. -ENOENT for a blob without native buckets
 * (nothing added: send its classic buckets instead), -EINVAL for a blob or
 * name that does not decode (counted in b->invalid), else as rw_batch_add.
 * exporters/remote_write_hist.c.
 */
int rw_batch_add_native(struct rw_batch *b, int64_t series_id, const char *count_name,
			const char *labels, int64_t ts_ms, const void *blob, size_t len);
/*
 * One row of the metric history into the batch: a histogram's _count with
 * its blob as a native histogram when native is set and the blob has native
 * buckets (the _sum row after it then left out: 0, nothing added), else the
 * sample with its classic buckets, if any. As rw_batch_add.
 * exporters/remote_write_hist.c.
 */
struct store_sample;
int rw_batch_add_history(struct rw_batch *b, bool native, const struct store_sample *smp,
			 int64_t ts_ms);
/* The native histogram h at ts_ms as the wire message, in arena. NULL
 * when out of memory. */
struct Prometheus__Histogram;
struct Prometheus__Histogram *rw_hist_pb(struct arena *a, const struct hist_blob_native *h,
					 int64_t ts_ms);
/*
 * Builds the WriteRequest (each series' labels plus the external ones it
 * does not have, sorted; samples by timestamp, the last of equal timestamps
 * kept) into b->body/b->body_len, snappy-compressed. *n_samples: samples in
 * the request. 0 or -ENOMEM.
 */
int rw_batch_encode(struct rw_batch *b, const struct rw_label *ext, size_t n_ext,
		    size_t *n_samples);

#endif
