/* SPDX-License-Identifier: MIT */
/*
 * A drops recording ([collector.drops] record = FILE, replayed with
 * replay = FILE): what the collector read from the kernel, so that a
 * developer can run the same collect again without the kernel (a user's
 * report, the golden set tests/golden/drops). docs/drops.md, "Record and
 * replay", describes the format; in short, little-endian throughout:
 *
 *   header   "SYSOBSDR", u32 version (1), u32 ncpus (per-CPU values)
 *   record   u32 type, u32 len, len bytes:
 *     REASON   u32 value, the name (1..63 printable bytes): the reason
 *              names the kernel's BTF gave at start
 *     SAMPLE   i64 mono_to_wall_ns, i64 received (wall ns), the ring-buffer
 *              record as the BPF program wrote it
 *     MAP      u32 map (DROPS_MAP_*), u32 key length, key, value (ncpus
 *              per-CPU values of the map's value type)
 *     COLLECT  i64 wall ns: the MAP records since the last COLLECT are the
 *              counters this collect read
 *     KSYM     a /proc/kallsyms line ("<start> t name[\t[module]]", 1 to
 *              255 bytes): the symbol of a location or stack frame of the
 *              samples, once each
 *
 * The file is untrusted input: drops_rec_parse() checks every record
 * (types, lengths, key and value sizes, bounds) before anything is used,
 * and says where the first bad one is. Pure: no BPF, no collector, so the
 * fuzz target links it alone.
 */
#ifndef SYSOBS_DROPS_RECFILE_H
#define SYSOBS_DROPS_RECFILE_H

#include <stddef.h>
#include <stdint.h>

#define DROPS_REC_MAGIC	     "SYSOBSDR"
#define DROPS_REC_VERSION    1
#define DROPS_REC_HDR	     16
#define DROPS_REC_CPUS_MAX   1024
#define DROPS_REC_LEN_MAX    (1u << 20)	  /* one record */
#define DROPS_REC_FILE_MAX   (256u << 20) /* the whole file */
#define DROPS_REC_SAMPLE_MAX 65536	  /* one ring-buffer record */

enum drops_rec_type {
	DROPS_REC_REASON = 1,
	DROPS_REC_SAMPLE = 2,
	DROPS_REC_MAP = 3,
	DROPS_REC_COLLECT = 4,
	DROPS_REC_KSYM = 5,
};

/* The maps the counting path reads (bpf/drops.bpf.c). */
enum drops_map_id {
	DROPS_MAP_COUNTS = 1, /* struct drops_key -> per-CPU u64 */
	DROPS_MAP_SLOTS = 2,  /* u32 slot < DROPS_SLOTS -> per-CPU struct drops_slot */
	DROPS_MAP_STATS = 3,  /* u32 < DROPS_STAT_MAX -> per-CPU u64 */
};

/* The key and per-CPU value sizes of a map; 0 for an unknown map. */
size_t drops_map_key_size(uint32_t map);
size_t drops_map_value_size(uint32_t map);

struct drops_rec_item {
	uint32_t type;
	uint32_t map;	    /* MAP */
	uint32_t value;	    /* REASON */
	int64_t a, b;	    /* SAMPLE: mono_to_wall_ns, received; COLLECT: a = time */
	const uint8_t *key; /* MAP */
	uint32_t klen;
	const uint8_t *data; /* SAMPLE record, MAP value, REASON name, KSYM line */
	uint32_t len;
};

struct drops_rec {
	uint32_t version, ncpus;
	uint8_t *buf; /* drops_rec_load()'s copy of the file; items point in */
	struct drops_rec_item *it;
	size_t n;
	size_t nsamples, ncollects, nreasons, nksyms;
};

/* Parses buf (which must outlive r) into r. 0, or -EINVAL with err saying
 * which record is wrong and how (nothing in r then); -ENOMEM. */
int drops_rec_parse(struct drops_rec *r, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* Reads and parses a file; errors as drops_rec_parse, or -errno of the read
 * (err says which). */
int drops_rec_load(struct drops_rec *r, const char *path, char *err, size_t errlen);
void drops_rec_free(struct drops_rec *r); /* accepts a zeroed r */

/* --- writing -------------------------------------------------------------- */

struct drops_rec_writer;

/* Creates path (mode 0600: samples hold packet headers) and writes the
 * header; an existing empty file is taken, anything else is never written
 * over (EEXIST). max_size: the file never grows past it (0: no limit).
 * NULL with errno. */
struct drops_rec_writer *drops_rec_create(const char *path, uint32_t ncpus, uint64_t max_size);
/* The records of a collect are kept in memory until drops_rec_collect()
 * writes them to the file at once. 0, or the writer's first error. */
int drops_rec_reason(struct drops_rec_writer *w, uint32_t value, const char *name);
int drops_rec_ksym(struct drops_rec_writer *w, const char *line);
int drops_rec_sample(struct drops_rec_writer *w, int64_t mono_to_wall_ns, int64_t received,
		     const void *data, size_t len);
int drops_rec_map(struct drops_rec_writer *w, uint32_t map, const void *key, size_t klen,
		  const void *val, size_t vlen);
/* Ends a collect: its records and the COLLECT record are written and
 * flushed, so the file is a whole recording after each. 0, -EFBIG when
 * they would take the file past max_size (nothing of them written: the
 * writer is done), or the first write error since it was made (-errno). */
int drops_rec_collect(struct drops_rec_writer *w, int64_t wall_ns);
/* The bytes the file holds. */
uint64_t drops_rec_size(const struct drops_rec_writer *w);
void drops_rec_close(struct drops_rec_writer *w); /* accepts NULL */

#endif
