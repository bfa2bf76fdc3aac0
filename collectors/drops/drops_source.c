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
#include <string.h>

#include <bpf/bpf.h>

#include "base/log.h"
#include "bpf/drops.h" /* before its skeleton */
#include "bpf/drops.skel.h"
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/drops/drops_recfile.h"

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
		drops_rec_map(st->rec, map, key, drops_map_key_size(map), vals,
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
			drops_rec_map(st->rec, DROPS_MAP_SLOTS, &keys[i], sizeof(keys[i]), v,
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
	st->rec = drops_rec_create(path, (uint32_t)st->ncpus);
	if (!st->rec)
		return -errno;
	drops_record_reasons(st);
	return 0;
}

/* Every name known now (after a module rescan: again, with the new ones;
 * the reader keeps the first name of a value). */
void drops_record_reasons(struct drops_state *st)
{
	for (size_t i = 0; st->rec && i < drops_reasons_count(st->reasons); i++) {
		const char *name = drops_reason_at(st->reasons, i);
		uint32_t v;

		if (!drops_reason_value(st->reasons, name, &v))
			drops_rec_reason(st->rec, v, name);
	}
}

void drops_record_sample(struct drops_state *st, const void *data, size_t len)
{
	drops_rec_sample(st->rec, st->mono_to_wall_ns, clock_wall_ns(), data, len);
}

void drops_record_collect(struct collector *c, struct drops_state *st)
{
	int err = drops_rec_collect(st->rec, clock_wall_ns());

	if (!err)
		return;
	clog_warn(c, "recording to %s stopped: %s (what was written up to the last collect stays)",
		  st->cfg->record, strerror(-err));
	drops_rec_close(st->rec);
	st->rec = NULL;
}
