/* SPDX-License-Identifier: MIT */
/*
 * Remote-write metadata: type, help and unit of every metric family in a
 * WriteRequest's metadata field (MetricMetadata of remote write 1.0), sent
 * in a request of its own, as Prometheus does: at start, whenever the
 * families change (one registered, a help text changed), and every
 * [remote_write] metadata_interval. Not durable: a failed request is simply
 * made again later.
 */
#ifndef SYSOBS_REMOTE_WRITE_META_H
#define SYSOBS_REMOTE_WRITE_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics;
struct Prometheus__MetricMetadata;

struct rw_meta {
	struct Prometheus__MetricMetadata *md; /* the families of the last walk */
	size_t cap;
	bool oom;
	uint64_t sent_hash; /* of the families last accepted; 0: none yet */
	int64_t next_ns;    /* CLOCK_MONOTONIC of the next periodic send */
	uint64_t hash;	    /* of the families in body */
	size_t n;	    /* families in body */
	uint8_t *pb, *body; /* protobuf, then snappy of it; reused */
	size_t pb_cap, body_cap, body_len;
};

/*
 * Walks the families of m; when a send is due (never sent, families changed
 * since the last accepted send, or now_ns past mm->next_ns) encodes them
 * into mm->body (snappy of a WriteRequest with metadata only, mm->n
 * families) and returns true. false when nothing is due or out of memory.
 */
bool rw_meta_due(struct rw_meta *mm, struct metrics *m, int64_t now_ns);
/* The receiver accepted the body: next periodic send interval_ns from now. */
void rw_meta_sent(struct rw_meta *mm, int64_t now_ns, int64_t interval_ns);
/* It did not: try again retry_ns from now (unless the families change). */
void rw_meta_failed(struct rw_meta *mm, int64_t now_ns, int64_t retry_ns);
void rw_meta_free(struct rw_meta *mm);

#endif
