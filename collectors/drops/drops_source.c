// SPDX-License-Identifier: MIT
/*
 * drops_source: the live source of the counting path (the BPF maps of
 * bpf/drops.bpf.c, struct drops_source in drops_priv.h), and the recording
 * of what it reads ([collector.drops] record = FILE, drops_recfile.h): each
 * value read is written as read, each collect ends its snapshot, each
 * ring-buffer record is written with its receive time. Without record the
 * only cost is a NULL test per read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base/buf.h"
#include "base/log.h"
#include "bpf/drops.h" /* before its skeleton */
#include "bpf/drops.skel.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_decode.h"
#include "collectors/drops/drops_ksym.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/drops/drops_recfile.h"

/* record = FILE: the writer, and the symbols written so far (sorted). */
struct drops_recorder {
	struct drops_rec_writer *w;
	uint64_t *syms;
	size_t nsyms, syms_cap;
};

static int map_fd(const struct drops_state *st, uint32_t map)
{
	switch (map) {
	case DROPS_MAP_COUNTS:
		return bpf_map__fd(st->skel->maps.counts);
	case DROPS_MAP_SLOTS:
		return bpf_map__fd(st->skel->maps.slots);
	case DROPS_MAP_STATS:
		return bpf_map__fd(st->skel->maps.stats);
	}
	return -1;
}

static int live_next_key(struct drops_state *st, const struct drops_key *prev,
			 struct drops_key *key)
{
	return bpf_map_get_next_key(map_fd(st, DROPS_MAP_COUNTS), prev, key) ? -errno : 0;
}

static int live_lookup(struct drops_state *st, uint32_t map, const void *key, void *vals)
{
	if (bpf_map_lookup_elem(map_fd(st, map), key, vals))
		return -errno;
	if (st->rec)
		drops_rec_map(st->rec->w, map, key, drops_map_key_size(map), vals,
			      drops_map_value_size(map) * st->ncpus);
	return 0;
}

static int live_take(struct drops_state *st, const struct drops_key *key, uint64_t *vals)
{
	return bpf_map_lookup_and_delete_elem(map_fd(st, DROPS_MAP_COUNTS), key, vals) ? -errno : 0;
}

/* Every slot of every CPU, in one batched read when the kernel supports it
 * (v5.6 for arrays), else slot by slot. */
static int live_slots(struct drops_state *st, __u32 *keys, struct drops_slot *vals, __u32 *count)
{
	int fd = map_fd(st, DROPS_MAP_SLOTS), err;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 out_batch = 0, n = DROPS_SLOTS;

	err = bpf_map_lookup_batch(fd, NULL, &out_batch, keys, vals, &n, &opts);
	if (err && errno != ENOENT) {
		for (n = 0; n < DROPS_SLOTS; n++) {
			keys[n] = n;
			if (bpf_map_lookup_elem(fd, &n, vals + (size_t)n * st->ncpus))
				return -errno;
		}
	}
	*count = n;
	for (__u32 i = 0; st->rec && i < n; i++) {
		const struct drops_slot *v = vals + (size_t)i * st->ncpus;
		int cpu = 0;

		while (cpu < st->ncpus && !v[cpu].count)
			cpu++;
		if (cpu < st->ncpus) /* a slot in use on some CPU */
			drops_rec_map(st->rec->w, DROPS_MAP_SLOTS, &keys[i], sizeof(keys[i]), v,
				      sizeof(*v) * st->ncpus);
	}
	return 0;
}

const struct drops_source drops_source_live = {
    .next_key = live_next_key,
    .lookup = live_lookup,
    .take = live_take,
    .slots = live_slots,
};

/* --- recording ------------------------------------------------------------- */

int drops_record_open(struct drops_state *st, const char *path)
{
	st->rec = calloc(1, sizeof(*st->rec));
	if (!st->rec)
		return -ENOMEM;
	st->rec->w = drops_rec_create(path, (uint32_t)st->ncpus, st->cfg->record_max_size);
	if (!st->rec->w) {
		int err = -errno;

		drops_record_close(st);
		return err;
	}
	drops_record_reasons(st);
	return 0;
}

void drops_record_close(struct drops_state *st)
{
	if (!st->rec)
		return;
	drops_rec_close(st->rec->w);
	free(st->rec->syms);
	free(st->rec);
	st->rec = NULL;
}

/* Every name known now (after a module rescan: again, with the new ones;
 * the reader keeps the first name of a value). */
void drops_record_reasons(struct drops_state *st)
{
	for (size_t i = 0; st->rec && i < drops_reasons_count(st->reasons); i++) {
		const char *name = drops_reason_at(st->reasons, i);
		uint32_t v;

		if (!drops_reason_value(st->reasons, name, &v))
			drops_rec_reason(st->rec->w, v, name);
	}
}

void drops_record_sample(struct drops_state *st, const void *data, size_t len)
{
	drops_rec_sample(st->rec->w, st->mono_to_wall_ns, clock_wall_ns(), data, len);
}

/* The symbol of addr, unless written already. */
static void record_sym(struct drops_recorder *r, const struct drops_ksyms *k, uint64_t addr)
{
	char line[256];
	uint64_t start, *p;
	size_t i = 0;

	if (!addr || drops_ksyms_line(k, addr, &start, line, sizeof(line)))
		return;
	while (i < r->nsyms && r->syms[i] < start)
		i++;
	if (i < r->nsyms && r->syms[i] == start)
		return;
	p = array_grow(r->syms, &r->syms_cap, r->nsyms, sizeof(*r->syms), 256);
	if (!p)
		return;
	r->syms = p;
	memmove(p + i + 1, p + i, (r->nsyms - i) * sizeof(*p));
	p[i] = start;
	r->nsyms++;
	drops_rec_ksym(r->w, line);
}

void drops_record_syms(struct drops_state *st, const struct drop_sample *s)
{
	record_sym(st->rec, st->ksyms, s->location);
	for (unsigned i = 0; i < s->stack_n; i++)
		record_sym(st->rec, st->ksyms, s->stack[i]);
}

/* The collect's end in the recording: written whole, or the recording
 * stops (full, or a write failed) with what it holds a whole recording. */
void drops_record_collect(struct collector *c, struct drops_state *st)
{
	int err = drops_rec_collect(st->rec->w, clock_wall_ns());

	if (!err)
		return;
	if (err == -EFBIG)
		clog_warn(c,
			  "recording to %s stopped at %" PRIu64 " bytes: the next collect would "
			  "take it past record_max_size (%" PRIu64
			  "); the file is a whole recording",
			  st->cfg->record, drops_rec_size(st->rec->w), st->cfg->record_max_size);
	else
		clog_warn(c,
			  "recording to %s stopped: %s (what was written up to the last collect "
			  "stays)",
			  st->cfg->record, strerror(-err));
	drops_record_close(st);
}
