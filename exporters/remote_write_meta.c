// SPDX-License-Identifier: MIT
/*
 * Remote-write metadata requests (see remote_write_meta.h): the registry's
 * families as MetricMetadata, protobuf-c, snappy block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "exporters/remote_write_meta.h"
#include "base/hash.h"
#include "base/lazylib.h"
#include "metrics/metrics.h"
#include "exporters/proto/prometheus/remote.pb-c.h"

#define RW_META_MAX 4096 /* families in one request */

struct rw_meta_walk {
	struct rw_meta *mm;
	uint64_t hash;
};

static void rw_meta_visit(const char *name, enum metric_type type, const char *help,
			  const char *unit, void *arg)
{
	struct rw_meta_walk *w = arg;
	struct rw_meta *mm = w->mm;
	Prometheus__MetricMetadata *md;

	if (mm->n >= mm->cap) {
		size_t cap = mm->cap ? 2 * mm->cap : 128;

		md = cap <= RW_META_MAX ? realloc(mm->md, cap * sizeof(*md)) : NULL;
		if (!md) {
			mm->oom = true;
			return;
		}
		mm->md = md;
		mm->cap = cap;
	}
	md = &mm->md[mm->n++];
	prometheus__metric_metadata__init(md);
	md->type = type == METRIC_COUNTER ? PROMETHEUS__METRIC_METADATA__METRIC_TYPE__COUNTER
		   : type == METRIC_GAUGE ? PROMETHEUS__METRIC_METADATA__METRIC_TYPE__GAUGE
					  : PROMETHEUS__METRIC_METADATA__METRIC_TYPE__HISTOGRAM;
	/* Registry strings live as long as their family, and families are
	 * never removed: safe to point at after the lock is released. */
	md->metric_family_name = (char *)name;
	md->help = (char *)(help ? help : "");
	md->unit = (char *)(unit ? unit : "");
	w->hash = hash_fnv1a_str(w->hash, name);
	w->hash = hash_fnv1a_str(w->hash, md->help);
	w->hash = hash_fnv1a_str(w->hash, md->unit);
	w->hash = hash_fnv1a(w->hash, &(uint8_t){(uint8_t)md->type}, 1);
}

static int rw_meta_encode(struct rw_meta *mm)
{
	Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
	/* Loaded by remote_write's config check (base/lazylib.h). */
	const struct lazylib_snappy *sn = lazylib_snappy(NULL);
	Prometheus__MetricMetadata **mdp;
	size_t packed, zlen;
	int err = -ENOMEM;

	if (!sn)
		return -ENOENT;
	mdp = calloc(mm->n ? mm->n : 1, sizeof(*mdp));

	if (!mdp)
		return err;
	for (size_t i = 0; i < mm->n; i++)
		mdp[i] = &mm->md[i];
	wr.metadata = mdp;
	wr.n_metadata = mm->n;
	packed = prometheus__write_request__get_packed_size(&wr);
	zlen = sn->max_compressed_length(packed);
	if (bytes_reserve(&mm->pb, &mm->pb_cap, packed ? packed : 1) ||
	    bytes_reserve(&mm->body, &mm->body_cap, zlen))
		goto out;
	prometheus__write_request__pack(&wr, mm->pb);
	if (sn->compress((const char *)mm->pb, packed, (char *)mm->body, &zlen) != SNAPPY_OK)
		goto out;
	mm->body_len = zlen;
	err = 0;
out:
	free(mdp);
	return err;
}

bool rw_meta_due(struct rw_meta *mm, struct metrics *m, int64_t now_ns)
{
	struct rw_meta_walk w = {.mm = mm, .hash = HASH_FNV1A_INIT};

	/* The walk is cheap (a hash of every family's strings); the encoding
	 * is done only when a send is due. */
	mm->n = 0;
	mm->oom = false;
	metrics_visit_families(m, rw_meta_visit, &w);
	mm->hash = w.hash ? w.hash : 1;
	if (mm->oom)
		return false;
	if (mm->sent_hash && mm->hash == mm->sent_hash && now_ns < mm->next_ns)
		return false;
	return !rw_meta_encode(mm);
}

void rw_meta_sent(struct rw_meta *mm, int64_t now_ns, int64_t interval_ns)
{
	mm->sent_hash = mm->hash;
	mm->next_ns = now_ns + interval_ns;
}

void rw_meta_failed(struct rw_meta *mm, int64_t now_ns, int64_t retry_ns)
{
	/* Keep sent_hash: a change still sends at once; else wait. */
	if (!mm->sent_hash)
		mm->sent_hash = mm->hash;
	mm->next_ns = now_ns + retry_ns;
}

void rw_meta_free(struct rw_meta *mm)
{
	free(mm->md);
	free(mm->pb);
	free(mm->body);
	memset(mm, 0, sizeof(*mm));
}
