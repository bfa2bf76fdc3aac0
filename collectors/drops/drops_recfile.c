// SPDX-License-Identifier: MIT
/*
 * drops_recfile: the drops recording's reader and writer (drops_recfile.h
 * has the format). The reader checks the whole file before it hands out
 * anything: a truncated or absurd record is an error naming its offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/file.h"
#include <linux/types.h>

#include "bpf/drops.h"
#include "collectors/drops/drops_recfile.h"

size_t drops_map_key_size(uint32_t map)
{
	switch (map) {
	case DROPS_MAP_COUNTS:
		return sizeof(struct drops_key);
	case DROPS_MAP_SLOTS:
	case DROPS_MAP_STATS:
		return sizeof(uint32_t);
	}
	return 0;
}

size_t drops_map_value_size(uint32_t map)
{
	switch (map) {
	case DROPS_MAP_COUNTS:
	case DROPS_MAP_STATS:
		return sizeof(uint64_t);
	case DROPS_MAP_SLOTS:
		return sizeof(struct drops_slot);
	}
	return 0;
}

/* --- reading ---------------------------------------------------------------- */

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int64_t get_i64(const uint8_t *p)
{
	int64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int bad(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_reason(struct drops_rec_item *it, const uint8_t *p, uint32_t len, char *why,
			size_t wlen)
{
	if (len < 5 || len > 4 + 63)
		return bad(why, wlen, "a reason name of %u bytes (1 to 63)", len < 4 ? 0 : len - 4);
	it->value = get_u32(p);
	it->data = p + 4;
	it->len = len - 4;
	for (uint32_t i = 0; i < it->len; i++)
		if (it->data[i] < 0x21 || it->data[i] > 0x7e)
			return bad(why, wlen, "reason %u: a name byte 0x%02x is not printable",
				   it->value, it->data[i]);
	return 0;
}

static int parse_ksym(struct drops_rec_item *it, const uint8_t *p, uint32_t len, char *why,
		      size_t wlen)
{
	if (len < 1 || len > 255)
		return bad(why, wlen, "a kallsyms line of %u bytes (1 to 255)", len);
	for (uint32_t i = 0; i < len; i++)
		if ((p[i] < 0x20 && p[i] != '\t') || p[i] > 0x7e)
			return bad(why, wlen, "a kallsyms line byte 0x%02x", p[i]);
	it->data = p;
	it->len = len;
	return 0;
}

static int parse_sample(struct drops_rec_item *it, const uint8_t *p, uint32_t len, char *why,
			size_t wlen)
{
	if (len < 17 || len - 16 > DROPS_REC_SAMPLE_MAX)
		return bad(why, wlen, "a sample of %u bytes (17 to %u)", len,
			   16 + DROPS_REC_SAMPLE_MAX);
	it->a = get_i64(p);
	it->b = get_i64(p + 8);
	it->data = p + 16;
	it->len = len - 16;
	return 0;
}

static int parse_map(struct drops_rec_item *it, const uint8_t *p, uint32_t len, uint32_t ncpus,
		     char *why, size_t wlen)
{
	size_t ks, vs;
	uint32_t k;

	if (len < 8)
		return bad(why, wlen, "a map record of %u bytes (at least 8)", len);
	it->map = get_u32(p);
	it->klen = get_u32(p + 4);
	ks = drops_map_key_size(it->map);
	vs = drops_map_value_size(it->map) * ncpus;
	if (!ks)
		return bad(why, wlen, "unknown map %u (1 counts, 2 slots, 3 stats)", it->map);
	if (it->klen != ks || (size_t)len - 8 - ks != vs || len < 8 + ks)
		return bad(why, wlen, "map %u: key of %u bytes and value of %zu (want %zu and %zu)",
			   it->map, it->klen, len < 8 + ks ? 0 : (size_t)len - 8 - ks, ks, vs);
	it->key = p + 8;
	it->data = p + 8 + ks;
	it->len = (uint32_t)vs;
	k = get_u32(it->key);
	if ((it->map == DROPS_MAP_SLOTS && k >= DROPS_SLOTS) ||
	    (it->map == DROPS_MAP_STATS && k >= DROPS_STAT_MAX))
		return bad(why, wlen, "map %u: key %u out of range", it->map, k);
	return 0;
}

static int parse_item(struct drops_rec *r, struct drops_rec_item *it, const uint8_t *p,
		      uint32_t len, char *why, size_t wlen)
{
	switch (it->type) {
	case DROPS_REC_REASON:
		r->nreasons++;
		return parse_reason(it, p, len, why, wlen);
	case DROPS_REC_SAMPLE:
		r->nsamples++;
		return parse_sample(it, p, len, why, wlen);
	case DROPS_REC_MAP:
		return parse_map(it, p, len, r->ncpus, why, wlen);
	case DROPS_REC_KSYM:
		r->nksyms++;
		return parse_ksym(it, p, len, why, wlen);
	case DROPS_REC_COLLECT:
		r->ncollects++;
		if (len != 8)
			return bad(why, wlen, "a collect record of %u bytes (8)", len);
		it->a = get_i64(p);
		return 0;
	}
	return bad(why, wlen, "unknown record type %u", it->type);
}

static int map_item_cmp(const void *a, const void *b)
{
	const struct drops_rec_item *x = *(const struct drops_rec_item *const *)a;
	const struct drops_rec_item *y = *(const struct drops_rec_item *const *)b;

	if (x->map != y->map)
		return x->map < y->map ? -1 : 1;
	return memcmp(x->key, y->key, x->klen); /* one map, one key size */
}

/* A collect's snapshot (the MAP items [lo, hi)) holds each key of a map
 * once, as the kernel's map did. */
static int check_snapshot(const struct drops_rec *r, size_t lo, size_t hi, char *why, size_t wlen)
{
	const struct drops_rec_item **v = malloc((hi - lo + 1) * sizeof(*v));
	size_t n = 0;
	int ret = 0;

	if (!v)
		return bad(why, wlen, "out of memory");
	for (size_t i = lo; i < hi; i++)
		if (r->it[i].type == DROPS_REC_MAP)
			v[n++] = &r->it[i];
	if (n > 1)
		qsort(v, n, sizeof(*v), map_item_cmp);
	for (size_t i = 1; i < n && !ret; i++)
		if (!map_item_cmp(&v[i - 1], &v[i]))
			ret = bad(why, wlen, "this collect has a key of map %u twice", v[i]->map);
	free(v);
	return ret;
}

static int parse_header(struct drops_rec *r, const uint8_t *buf, size_t len, char *err,
			size_t errlen)
{
	if (len < DROPS_REC_HDR || memcmp(buf, DROPS_REC_MAGIC, 8))
		return bad(err, errlen, "not a drops recording (no \"%s\" header)",
			   DROPS_REC_MAGIC);
	if (len > DROPS_REC_FILE_MAX)
		return bad(err, errlen, "%zu bytes: more than a recording may hold (%u)", len,
			   DROPS_REC_FILE_MAX);
	r->version = get_u32(buf + 8);
	r->ncpus = get_u32(buf + 12);
	if (r->version != DROPS_REC_VERSION)
		return bad(err, errlen, "recording version %u (this sysobsd reads %u)", r->version,
			   DROPS_REC_VERSION);
	if (!r->ncpus || r->ncpus > DROPS_REC_CPUS_MAX)
		return bad(err, errlen, "%u CPUs in the header (1 to %u)", r->ncpus,
			   DROPS_REC_CPUS_MAX);
	return 0;
}

int drops_rec_parse(struct drops_rec *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	size_t off = DROPS_REC_HDR, cap = 0, frame = 0;
	char why[160];
	int ret;

	memset(r, 0, sizeof(*r));
	if ((ret = parse_header(r, buf, len, err, errlen)))
		return ret;
	while (off < len) {
		struct drops_rec_item *it;
		uint32_t rlen = 0;

		if (len - off < 8)
			ret = bad(err, errlen, "truncated record header at offset %zu", off);
		else if ((rlen = get_u32(buf + off + 4)) > DROPS_REC_LEN_MAX)
			ret = bad(err, errlen, "record at offset %zu: %u bytes (at most %u)", off,
				  rlen, DROPS_REC_LEN_MAX);
		else if (rlen > len - off - 8)
			ret = bad(err, errlen,
				  "truncated record at offset %zu: %u bytes declared, %zu left",
				  off, rlen, len - off - 8);
		if (ret)
			goto fail;
		it = array_grow(r->it, &cap, r->n, sizeof(*r->it), 256);
		if (!it) {
			ret = bad(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto fail;
		}
		r->it = it;
		it = memset(&r->it[r->n++], 0, sizeof(*it));
		it->type = get_u32(buf + off);
		if ((ret = parse_item(r, it, buf + off + 8, rlen, why, sizeof(why))) ||
		    (it->type == DROPS_REC_COLLECT &&
		     (ret = check_snapshot(r, frame, r->n - 1, why, sizeof(why))))) {
			bad(err, errlen, "record at offset %zu: %s", off, why);
			goto fail;
		}
		if (it->type == DROPS_REC_COLLECT)
			frame = r->n;
		off += 8 + (size_t)rlen;
	}
	return 0;
fail:
	drops_rec_free(r);
	return ret;
}

int drops_rec_load(struct drops_rec *r, const char *path, char *err, size_t errlen)
{
	char *buf, why[64];
	size_t len;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = file_read(path, DROPS_REC_FILE_MAX, &buf, &len);
	if (ret == -EFBIG)
		return bad(err, errlen, "more than a recording may hold (%u bytes)",
			   DROPS_REC_FILE_MAX);
	if (ret) {
		bad(err, errlen, "cannot read: %s",
		    file_read_strerror(ret, DROPS_REC_FILE_MAX, why, sizeof(why)));
		return ret;
	}
	ret = drops_rec_parse(r, (const uint8_t *)buf, len, err, errlen);
	if (ret)
		free(buf);
	else
		r->buf = (uint8_t *)buf;
	return ret;
}

void drops_rec_free(struct drops_rec *r)
{
	free(r->it);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* --- writing ---------------------------------------------------------------- */

struct drops_rec_writer {
	FILE *f;
	int err;	    /* first error, -errno; -EFBIG: full */
	uint64_t size, max; /* bytes in the file; max_size (0: none) */
	struct buf frame;   /* the collect's records so far */
};

struct drops_rec_writer *drops_rec_create(const char *path, uint32_t ncpus, uint64_t max_size)
{
	struct drops_rec_writer *w = calloc(1, sizeof(*w));
	uint32_t hdr[2] = {DROPS_REC_VERSION, ncpus};
	int fd = -1, e;
	struct stat sb;

	if (!w)
		return NULL;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && !fstat(fd, &sb) && sb.st_size > 0) {
		errno = EEXIST; /* never over what is there */
		goto fail;
	}
	w->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!w->f || fwrite(DROPS_REC_MAGIC, 8, 1, w->f) != 1 ||
	    fwrite(hdr, sizeof(hdr), 1, w->f) != 1 || fflush(w->f))
		goto fail;
	w->size = 8 + sizeof(hdr);
	w->max = max_size;
	return w;
fail:
	e = errno;
	if (!w->f && fd >= 0)
		close(fd);
	drops_rec_close(w);
	errno = e;
	return NULL;
}

/* One record of up to three parts, into the collect's frame. */
static int put(struct drops_rec_writer *w, uint32_t type, const void *a, size_t alen, const void *b,
	       size_t blen, const void *c, size_t clen)
{
	uint32_t hdr[2] = {type, (uint32_t)(alen + blen + clen)};

	if (w->err)
		return w->err;
	buf_append(&w->frame, hdr, sizeof(hdr));
	buf_append(&w->frame, a, alen);
	buf_append(&w->frame, b, blen);
	buf_append(&w->frame, c, clen);
	if (w->frame.oom)
		w->err = -ENOMEM;
	else if (w->max && w->size + w->frame.len > w->max)
		w->err = -EFBIG; /* a long collect: memory stays within max_size too */
	if (w->err)
		buf_free(&w->frame);
	return w->err;
}

int drops_rec_reason(struct drops_rec_writer *w, uint32_t value, const char *name)
{
	return put(w, DROPS_REC_REASON, &value, sizeof(value), name, strnlen(name, 63), NULL, 0);
}

int drops_rec_ksym(struct drops_rec_writer *w, const char *line)
{
	return put(w, DROPS_REC_KSYM, line, strnlen(line, 255), NULL, 0, NULL, 0);
}

int drops_rec_sample(struct drops_rec_writer *w, int64_t mono_to_wall_ns, int64_t received,
		     const void *data, size_t len)
{
	int64_t t[2] = {mono_to_wall_ns, received};

	if (len > DROPS_REC_SAMPLE_MAX)
		return 0; /* the reader would refuse it: the decoder does anyway */
	return put(w, DROPS_REC_SAMPLE, t, sizeof(t), data, len, NULL, 0);
}

int drops_rec_map(struct drops_rec_writer *w, uint32_t map, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	uint32_t h[2] = {map, (uint32_t)klen};

	return put(w, DROPS_REC_MAP, h, sizeof(h), key, klen, val, vlen);
}

int drops_rec_collect(struct drops_rec_writer *w, int64_t wall_ns)
{
	if (put(w, DROPS_REC_COLLECT, &wall_ns, sizeof(wall_ns), NULL, 0, NULL, 0))
		return w->err; /* -EFBIG: past max_size with it, nothing of it written */
	if (fwrite(w->frame.p, w->frame.len, 1, w->f) != 1 || fflush(w->f))
		w->err = errno ? -errno : -EIO;
	else
		w->size += w->frame.len;
	w->frame.len = 0;
	return w->err;
}

uint64_t drops_rec_size(const struct drops_rec_writer *w)
{
	return w->size;
}

void drops_rec_close(struct drops_rec_writer *w)
{
	if (!w)
		return;
	if (w->f)
		fclose(w->f);
	buf_free(&w->frame);
	free(w);
}
