// SPDX-License-Identifier: MIT
/*
 * drops_replay: [collector.drops] replay = FILE. The collector runs on a
 * recording (drops_recfile.h) instead of the kernel: no BTF, BPF, /proc/kallsyms,
 * cgroups, namespace walk, TCP counters or uevents. The reason names are
 * the recorded ones, and so are the kernel symbols that name the samples'
 * locations and stacks (only those: the recorder writes each once); nothing is judged gone (no
 * namespace list), and container and pod labels cannot be asked for (drops_check_config). The first
 * collect replays the file: per COLLECT record, the samples received before
 * it go through drops_on_sample() as the ring buffer's would, then the
 * counters recorded with it go through drops_collect_once() via
 * drops_source_replay, as the live maps' would. Then the file is freed: the
 * collects after it find nothing new.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/log.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/drops/drops_recfile.h"

struct drops_replay {
	struct drops_rec rec;
	bool *taken;   /* per item: a counts key taken out (retired) */
	size_t pos;    /* the next item to replay */
	size_t next;   /* replay_next_key(): the item after the last key given */
	size_t lo, hi; /* the snapshot being read: items [lo, hi) */
};

void drops_replay_free(struct drops_replay *rp)
{
	if (!rp)
		return;
	drops_rec_free(&rp->rec);
	free(rp->taken);
	free(rp);
}

/* The MAP item of this snapshot with that key, or -1. */
static ssize_t find(const struct drops_replay *rp, uint32_t map, const void *key)
{
	size_t klen = drops_map_key_size(map);

	for (size_t i = rp->lo; i < rp->hi; i++) {
		const struct drops_rec_item *it = &rp->rec.it[i];

		if (it->type == DROPS_REC_MAP && it->map == map && !rp->taken[i] &&
		    !memcmp(it->key, key, klen))
			return (ssize_t)i;
	}
	return -1;
}

/* The keys in the order recorded: read_hash() asks for each one's
 * successor in turn, so the one after the last given (the snapshot holds
 * each key once: the reader checked). */
static int replay_next_key(struct drops_state *st, const struct drops_key *prev,
			   struct drops_key *key)
{
	struct drops_replay *rp = st->replay;

	for (size_t i = prev ? rp->next : rp->lo; i < rp->hi; i++) {
		const struct drops_rec_item *it = &rp->rec.it[i];

		if (it->type == DROPS_REC_MAP && it->map == DROPS_MAP_COUNTS && !rp->taken[i]) {
			memcpy(key, it->key, sizeof(*key));
			rp->next = i + 1;
			return 0;
		}
	}
	rp->next = rp->hi;
	return -ENOENT;
}

static int replay_lookup(struct drops_state *st, uint32_t map, const void *key, void *vals)
{
	ssize_t i = find(st->replay, map, key);

	if (i < 0)
		return -ENOENT;
	memcpy(vals, st->replay->rec.it[i].data, st->replay->rec.it[i].len);
	return 0;
}

static int replay_take(struct drops_state *st, const struct drops_key *key, uint64_t *vals)
{
	ssize_t i = find(st->replay, DROPS_MAP_COUNTS, key);

	if (i < 0)
		return -ENOENT;
	memcpy(vals, st->replay->rec.it[i].data, st->replay->rec.it[i].len);
	st->replay->taken[i] = true;
	return 0;
}

/* The whole table: the slots not recorded were free (count 0). */
static int replay_slots(struct drops_state *st, __u32 *keys, struct drops_slot *vals, __u32 *count)
{
	const struct drops_replay *rp = st->replay;

	memset(vals, 0, sizeof(*vals) * DROPS_SLOTS * st->ncpus);
	for (__u32 i = 0; i < DROPS_SLOTS; i++)
		keys[i] = i;
	for (size_t i = rp->lo; i < rp->hi; i++) {
		const struct drops_rec_item *it = &rp->rec.it[i];
		uint32_t slot;

		if (it->type != DROPS_REC_MAP || it->map != DROPS_MAP_SLOTS)
			continue;
		memcpy(&slot, it->key, sizeof(slot)); /* < DROPS_SLOTS: the reader checked */
		memcpy(vals + (size_t)slot * st->ncpus, it->data, it->len);
	}
	*count = DROPS_SLOTS;
	return 0;
}

const struct drops_source drops_source_replay = {
    .next_key = replay_next_key,
    .lookup = replay_lookup,
    .take = replay_take,
    .slots = replay_slots,
};

/* The recorded names, as the BTF gave them. */
static int replay_reasons(struct drops_state *st)
{
	const struct drops_rec *r = &st->replay->rec;
	char name[DROPS_REASON_NAME_MAX];

	st->reasons = drops_reasons_new_named();
	if (!st->reasons)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		const struct drops_rec_item *it = &r->it[i];

		if (it->type != DROPS_REC_REASON)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)it->len, (const char *)it->data);
		if (drops_reasons_add_name(st->reasons, it->value, name) < 0)
			return -ENOMEM;
	}
	drops_names_publish(st->reasons);
	return 0;
}

/* The recorded symbols as one kallsyms text (NULL table: none recorded,
 * locations hex). */
static int replay_ksyms(struct drops_state *st)
{
	const struct drops_rec *r = &st->replay->rec;
	struct buf text = {0};
	int err = 0;

	for (size_t i = 0; i < r->n; i++) {
		if (r->it[i].type == DROPS_REC_KSYM) {
			buf_append(&text, r->it[i].data, r->it[i].len);
			buf_putc(&text, '\n');
		}
	}
	if (text.oom)
		err = -ENOMEM;
	else if (text.len && !(st->ksyms = drops_ksyms_parse(text.p, text.len)))
		err = -ENOMEM;
	buf_free(&text);
	return err;
}

int drops_replay_init(struct collector *c, struct drops_state *st)
{
	const char *path = st->cfg->replay;
	struct drops_replay *rp = calloc(1, sizeof(*rp));
	char err[256];
	int ret;

	if (!rp)
		return -ENOMEM;
	st->replay = rp;
	st->src = &drops_source_replay;
	ret = drops_rec_load(&rp->rec, path, err, sizeof(err));
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return collector_config_error(c, "replay", "%s", err);
	st->ncpus = (int)rp->rec.ncpus;
	rp->taken = calloc(rp->rec.n ? rp->rec.n : 1, sizeof(*rp->taken));
	st->percpu = calloc(st->ncpus, sizeof(*st->percpu));
	st->counts = drops_counts_new(st->ncpus);
	if (!rp->taken || !st->percpu || !st->counts || replay_reasons(st) || replay_ksyms(st))
		return -ENOMEM;
	clog_info(c,
		  "replaying %s: %zu samples, %zu collects, %zu reason names, %zu kernel symbols, "
		  "%u CPUs (no BPF, cgroups, namespace list or uevents)",
		  path, rp->rec.nsamples, rp->rec.ncollects, drops_reasons_count(st->reasons),
		  drops_ksyms_count(st->ksyms), rp->rec.ncpus);
	return 0;
}

int drops_replay_collect(struct collector *c, struct drops_state *st)
{
	struct drops_replay *rp = st->replay;
	int err = 0;

	while (!err && rp->pos < rp->rec.n) {
		const struct drops_rec_item *it = &rp->rec.it[rp->pos++];

		if (it->type == DROPS_REC_SAMPLE) {
			st->mono_to_wall_ns = it->a;
			st->consumed = 0; /* no ring-buffer budget here */
			drops_on_sample(c, (void *)it->data, it->len);
		} else if (it->type == DROPS_REC_COLLECT) {
			rp->hi = rp->pos - 1;
			err = drops_collect_once(c, st);
			rp->lo = rp->pos;
		}
	}
	if (!err && rp->rec.n) {
		/* all replayed: the names and symbols were copied at init, so the
		 * file (up to the reader's cap) need not stay for the agent's life */
		clog_info(c, "replayed %s: %zu samples, %zu collects", st->cfg->replay,
			  rp->rec.nsamples, rp->rec.ncollects);
		drops_rec_free(&rp->rec);
		free(rp->taken);
		rp->taken = NULL;
		rp->pos = rp->lo = rp->hi = rp->next = 0;
	}
	return err;
}
