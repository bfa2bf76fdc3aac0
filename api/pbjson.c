/* SPDX-License-Identifier: MIT */
/*
 * proto3 JSON for protobuf-c messages (the mapping is described in
 * pbjson.h): a streaming encoder that walks the message descriptor and
 * appends to one growable buffer, and a decoder that maps a jansson tree
 * onto a message by the same reflection.
 *
 * No library fits: protobuf-c has no JSON support, and building a jansson
 * tree per row only to serialise it costs 15 to 20 times more on the hot path
 * (a history page is 1000 rows; bench/bench_pbjson.c).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "agent/buf.h"
#include "api/pbjson.h"
#include "api/utf8.h"
#include "google/protobuf/timestamp.pb-c.h"

#define PBJ_TS_MIN  (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define PBJ_TS_MAX  253402300799LL   /* 9999-12-31T23:59:59Z */
#define PBJ_NS_MAX  999999999
#define PBJ_DEPTH   64		       /* nesting bound, encoder and decoder */
#define PBJ_EXACT53 9007199254740992.0 /* 2^53: doubles below are exact integers */

/* ---- output buffer -------------------------------------------------------- */

/*
 * The output is the one growable buffer (agent/buf.h). Its room check is
 * inlined here because the encoder writes numbers and escapes straight into
 * b->p: the NUL that struct buf keeps after len is written once, at the end
 * (pbj_buf_take), not after every byte.
 */
#define pbj_buf buf

/* Room for n more bytes at b->p + b->len. */
static inline bool pbj_buf_room(struct pbj_buf *b, size_t n)
{
	return (b->cap > b->len && b->cap - b->len > n) || buf_reserve(b, n) == 0;
}

static inline void pbj_buf_put(struct pbj_buf *b, const void *s, size_t n)
{
	if (!pbj_buf_room(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void pbj_buf_putc(struct pbj_buf *b, char c)
{
	if (!pbj_buf_room(b, 1))
		return;
	b->p[b->len++] = c;
}

static inline void pbj_buf_puts(struct pbj_buf *b, const char *s)
{
	pbj_buf_put(b, s, strlen(s));
}

/* Hands the NUL-terminated text to the caller; the buffer is empty after. */
static int pbj_buf_take(struct pbj_buf *b, char **out, size_t *len)
{
	if (!pbj_buf_room(b, 0)) {
		buf_free(b);
		return -ENOMEM;
	}
	b->p[b->len] = '\0';
	*out = buf_steal(b, len);
	return *out ? 0 : -ENOMEM;
}

/* ---- reflection helpers ------------------------------------------------- */

static inline const void *pbj_member(const ProtobufCMessage *m, size_t offset)
{
	return (const char *)m + offset;
}

/* Bytes one element of a repeated field of type t takes in its array. */
static size_t pbj_elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	}
	return 0;
}

/* Whether the presence of f lives in a has_ flag (proto2/1.5 optional scalar). */
static inline bool pbj_has_flag(const ProtobufCFieldDescriptor *f)
{
	return f->label == PROTOBUF_C_LABEL_OPTIONAL && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
	       f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE;
}

bool pbjson_field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const void *ptr;

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)pbj_member(m, f->quantifier_offset) == f->id;
	if (pbj_has_flag(f))
		return *(const protobuf_c_boolean *)pbj_member(m, f->quantifier_offset);
	if (f->label == PROTOBUF_C_LABEL_REPEATED || f->label == PROTOBUF_C_LABEL_REQUIRED)
		return true;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(const void *const *)pbj_member(m, f->offset) != NULL;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type == PROTOBUF_C_TYPE_STRING) {
		/* proto2 optional string: protobuf-c packs it unless NULL or the default */
		ptr = *(const void *const *)pbj_member(m, f->offset);
		return ptr && ptr != f->default_value;
	}
	return true;
}

void pbjson_field_set_present(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
	else if (pbj_has_flag(f))
		*(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
}

static bool pbj_is_timestamp(const ProtobufCMessageDescriptor *d)
{
	return d == &google__protobuf__timestamp__descriptor ||
	       !strcmp(d->name, "google.protobuf.Timestamp");
}

/*
 * Whether repeated field f of parent is a map: protoc compiles map<K, V> x
 * into `repeated XEntry x` where XEntry is nested in parent and has exactly
 * key = 1 and value = 2 (protobuf-c keeps no map_entry option to look at).
 */
static bool pbj_is_map(const ProtobufCMessageDescriptor *parent, const ProtobufCFieldDescriptor *f)
{
	const ProtobufCMessageDescriptor *d = f->descriptor;
	size_t pn, n;

	if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE ||
	    d->n_fields != 2 || d->fields[0].id != 1 || d->fields[1].id != 2 ||
	    strcmp(d->fields[0].name, "key") || strcmp(d->fields[1].name, "value"))
		return false;
	pn = strlen(parent->name);
	n = strlen(d->name);
	return n > pn + 6 && !strncmp(d->name, parent->name, pn) && d->name[pn] == '.' &&
	       !strcmp(d->name + n - 5, "Entry");
}

/* ---- encoder: numbers, strings, bytes, times ------------------------------- */

/* Writes v in decimal ending at end; returns where the digits start. */
static char *pbj_u64_dec(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/* An integer: "-" if neg, then the magnitude u; in quotes if quoted. */
static void pbj_put_int(struct pbj_buf *b, bool neg, uint64_t u, bool quoted)
{
	char tmp[24], *end = tmp + sizeof(tmp), *s;
	char *o;

	if (quoted)
		*--end = '"';
	s = pbj_u64_dec(end, u);
	if (neg)
		*--s = '-';
	if (quoted)
		*--s = '"';
	if (!pbj_buf_room(b, sizeof(tmp)))
		return;
	/* at most 23 bytes: a loop beats a call to memcpy */
	for (o = b->p + b->len; s < tmp + sizeof(tmp);)
		*o++ = *s++;
	b->len = o - b->p;
}

static inline void pbj_put_u64(struct pbj_buf *b, uint64_t v)
{
	pbj_put_int(b, false, v, false);
}

static inline void pbj_put_i64(struct pbj_buf *b, int64_t v)
{
	/* negated as unsigned: INT64_MIN has no signed opposite */
	pbj_put_int(b, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, false);
}

/*
 * The key of a member, `"name":`, after a comma unless first. Field names
 * are short: they are copied byte by byte after one room check, a longer
 * one takes the slow path.
 */
#define PBJ_KEY_FAST 48
static void pbj_put_key(struct pbj_buf *b, const char *name, bool first)
{
	char *o;
	size_t i;

	if (!pbj_buf_room(b, PBJ_KEY_FAST + 4))
		return;
	o = b->p + b->len;
	if (!first)
		*o++ = ',';
	*o++ = '"';
	for (i = 0; name[i] && i < PBJ_KEY_FAST; i++)
		*o++ = name[i];
	b->len = o - b->p;
	if (name[i])
		pbj_buf_puts(b, name + i);
	pbj_buf_put(b, "\":", 2);
}

/*
 * A finite double or float: integral values below 2^53 as integers, others
 * with the fewest significant digits, from 15 to 17 (floats: 6 to 9), that
 * read back as the same value: exactly the shortest text unless that is
 * shorter than 15 digits and the value cannot be written with 15 (only
 * subnormals). NaN and infinities as the strings proto3 JSON names them.
 */
static void pbj_put_double(struct pbj_buf *b, double v, bool is_float)
{
	int prec = is_float ? FLT_DIG : DBL_DIG, last = is_float ? 9 : 17, n = 0;
	char tmp[40];

	if (isnan(v)) {
		pbj_buf_puts(b, "\"NaN\"");
		return;
	}
	if (isinf(v)) {
		pbj_buf_puts(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		return;
	}
	if (v == 0 && signbit(v)) {
		pbj_buf_puts(b, "-0");
		return;
	}
	if (fabs(v) < PBJ_EXACT53 && v == trunc(v)) {
		pbj_put_i64(b, (int64_t)v);
		return;
	}
	for (; prec <= last; prec++) {
		n = snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (is_float ? (float)strtod(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
			break;
	}
	pbj_buf_put(b, tmp, n);
}

/* Bytes a JSON string takes as they are: printable ASCII but '"' and '\\'. */
static const bool pbj_plain[256] = {
    [0x20 ... 0x21] = true, /* 0x22 is '"' */
    [0x23 ... 0x5b] = true, /* 0x5c is '\\' */
    [0x5d ... 0x7f] = true,
};

/*
 * A JSON string: '"' and '\\' escaped, control characters as \n, \t, ... or
 * \u00XX, each byte that is not part of valid UTF-8 replaced by U+FFFD.
 * Runs of plain bytes and valid UTF-8 are copied in one go.
 */
static void pbj_put_string(struct pbj_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *run = p;
	char esc[6] = {'\\', 'u', '0', '0'};
	unsigned c;
	int n;

	pbj_buf_putc(b, '"');
	for (;;) {
		while (pbj_plain[*p])
			p++;
		c = *p;
		if (c >= 0x80 && (n = utf8_seq_len(p))) {
			p += n;
			continue;
		}
		if (!c) { /* the last run and the closing quote */
			if (!pbj_buf_room(b, (size_t)(p - run) + 1))
				return;
			memcpy(b->p + b->len, run, p - run);
			b->len += p - run;
			b->p[b->len++] = '"';
			return;
		}
		pbj_buf_put(b, run, p - run);
		if (c >= 0x80) {
			pbj_buf_put(b, "\xef\xbf\xbd", 3);
		} else if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			pbj_buf_put(b, esc, 2);
		} else if (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') {
			esc[1] = c == '\n'   ? 'n'
				 : c == '\t' ? 't'
				 : c == '\r' ? 'r'
				 : c == '\b' ? 'b'
					     : 'f';
			pbj_buf_put(b, esc, 2);
		} else {
			esc[1] = 'u';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			pbj_buf_put(b, esc, 6);
		}
		run = ++p;
	}
}

/* bytes as standard base64 with padding, in quotes. */
static void pbj_put_bytes(struct pbj_buf *b, const ProtobufCBinaryData *v)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *d = v->data;
	size_t i, n = v->len;
	char *o;

	if (n > (SIZE_MAX - 2) / 4 * 3 || !pbj_buf_room(b, (n + 2) / 3 * 4 + 2))
		return;
	o = b->p + b->len;
	*o++ = '"';
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t w = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];

		*o++ = b64[w >> 18];
		*o++ = b64[(w >> 12) & 63];
		*o++ = b64[(w >> 6) & 63];
		*o++ = b64[w & 63];
	}
	if (i < n) {
		uint32_t w = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0);

		*o++ = b64[w >> 18];
		*o++ = b64[(w >> 12) & 63];
		*o++ = i + 1 < n ? b64[(w >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o++ = '"';
	b->len = o - b->p;
}

/* Proleptic Gregorian date of day z since 1970-01-01 (H. Hinnant's
 * civil_from_days). */
static void pbj_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* Day number since 1970-01-01 of a proleptic Gregorian date. */
static int64_t pbj_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* Writes v (0 <= v < 10^width) as width digits ending at end. */
static void pbj_digits(char *end, unsigned v, int width)
{
	while (width--) {
		*--end = (char)('0' + v % 10);
		v /= 10;
	}
}

/* A Timestamp as "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"; -EINVAL out of range. */
static int pbj_put_timestamp(struct pbj_buf *b, const Google__Protobuf__Timestamp *ts)
{
	int64_t days, secs = ts->seconds, year;
	unsigned month, day, sod;
	char *o;

	if (secs < PBJ_TS_MIN || secs > PBJ_TS_MAX || ts->nanos < 0 || ts->nanos > PBJ_NS_MAX)
		return -EINVAL;
	days = (secs >= 0 ? secs : secs - 86399) / 86400;
	sod = (unsigned)(secs - days * 86400);
	pbj_civil_from_days(days, &year, &month, &day);
	if (!pbj_buf_room(b, 32))
		return 0;
	o = b->p + b->len;
	memcpy(o, "\"0000-00-00T00:00:00.000000000Z\"", 32);
	pbj_digits(o + 5, (unsigned)year, 4);
	pbj_digits(o + 8, month, 2);
	pbj_digits(o + 11, day, 2);
	pbj_digits(o + 14, sod / 3600, 2);
	pbj_digits(o + 17, sod / 60 % 60, 2);
	pbj_digits(o + 20, sod % 60, 2);
	pbj_digits(o + 30, (unsigned)ts->nanos, 9);
	b->len += 32;
	return 0;
}

/* ---- encoder: messages ------------------------------------------------------- */

static int pbj_enc_message(struct pbj_buf *b, const ProtobufCMessage *m, int depth);

/* One value (not a repeated field) of field f stored at p. */
static int pbj_enc_value(struct pbj_buf *b, const ProtobufCFieldDescriptor *f, const void *p,
			 int depth)
{
	const ProtobufCEnumValue *ev;
	const ProtobufCMessage *sub;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		pbj_put_i64(b, *(const int32_t *)p);
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		pbj_put_u64(b, *(const uint32_t *)p);
		return 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64: {
		int64_t v = *(const int64_t *)p;

		pbj_put_int(b, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, true);
		return 0;
	}
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		pbj_put_int(b, false, *(const uint64_t *)p, true);
		return 0;
	case PROTOBUF_C_TYPE_FLOAT:
		pbj_put_double(b, *(const float *)p, true);
		return 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		pbj_put_double(b, *(const double *)p, false);
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		pbj_buf_puts(b, *(const protobuf_c_boolean *)p ? "true" : "false");
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
		if (ev)
			pbj_put_string(b, ev->name);
		else
			pbj_put_i64(b, *(const int *)p);
		return 0;
	case PROTOBUF_C_TYPE_STRING:
		pbj_put_string(b, *(char *const *)p ? *(char *const *)p : "");
		return 0;
	case PROTOBUF_C_TYPE_BYTES:
		pbj_put_bytes(b, p);
		return 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		sub = *(const ProtobufCMessage *const *)p;
		if (!sub) { /* a NULL element of a repeated field or map value */
			pbj_buf_puts(b, "{}");
			return 0;
		}
		return pbj_enc_message(b, sub, depth + 1);
	}
	return -EINVAL;
}

/*
 * A map key: always a JSON string, whatever the key type. A string key that
 * is not valid UTF-8 is refused (-EINVAL): a value gets U+FFFD for a bad
 * byte, but two keys that differ only in bad bytes would then be one JSON
 * key twice (our own keys are label names, never such bytes).
 */
static int pbj_enc_map_key(struct pbj_buf *b, const ProtobufCFieldDescriptor *kf, const void *p)
{
	if (kf->type == PROTOBUF_C_TYPE_STRING) {
		const char *k = *(const char *const *)p;

		return k && !utf8_valid(k) ? -EINVAL : pbj_enc_value(b, kf, p, 0);
	}
	if (kf->type == PROTOBUF_C_TYPE_BOOL) {
		pbj_buf_puts(b, *(const protobuf_c_boolean *)p ? "\"true\"" : "\"false\"");
		return 0;
	}
	if (kf->type == PROTOBUF_C_TYPE_INT64 || kf->type == PROTOBUF_C_TYPE_SINT64 ||
	    kf->type == PROTOBUF_C_TYPE_SFIXED64 || kf->type == PROTOBUF_C_TYPE_UINT64 ||
	    kf->type == PROTOBUF_C_TYPE_FIXED64)
		return pbj_enc_value(b, kf, p, 0); /* already quoted */
	pbj_buf_putc(b, '"');
	if (pbj_enc_value(b, kf, p, 0))
		return -EINVAL;
	pbj_buf_putc(b, '"');
	return 0;
}

/* Binary protobuf may repeat a map key (the last entry wins); JSON object
 * keys must be unique, so only the last entry of each key is written. */
static bool pbj_map_key_repeated_later(const ProtobufCMessage *const *es, size_t i, size_t n,
				       const ProtobufCFieldDescriptor *kf)
{
	const void *k = pbj_member(es[i], kf->offset);

	for (size_t j = i + 1; j < n; j++) {
		const void *o = es[j] ? pbj_member(es[j], kf->offset) : NULL;

		if (!o)
			continue;
		if (kf->type == PROTOBUF_C_TYPE_STRING
			? !strcmp(*(const char *const *)k ? *(const char *const *)k : "",
				  *(const char *const *)o ? *(const char *const *)o : "")
			: !memcmp(k, o, pbj_elem_size(kf->type)))
			return true;
	}
	return false;
}

/* A repeated field as an array, or a map field as an object. */
static int pbj_enc_repeated(struct pbj_buf *b, const ProtobufCMessage *m,
			    const ProtobufCFieldDescriptor *f, int depth)
{
	size_t n = *(const size_t *)pbj_member(m, f->quantifier_offset);
	const char *arr = *(const char *const *)pbj_member(m, f->offset);
	size_t size = pbj_elem_size(f->type);
	bool map = pbj_is_map(m->descriptor, f);
	int err;

	pbj_buf_putc(b, map ? '{' : '[');
	for (size_t i = 0, out = 0; i < n; i++) {
		if (map) {
			const ProtobufCMessage *const *es = (const ProtobufCMessage *const *)arr;
			const ProtobufCMessage *e = es[i];
			const ProtobufCMessageDescriptor *ed = f->descriptor;

			if (!e)
				return -EINVAL;
			if (pbj_map_key_repeated_later(es, i, n, &ed->fields[0]))
				continue;
			if (out++)
				pbj_buf_putc(b, ',');
			err =
			    pbj_enc_map_key(b, &ed->fields[0], pbj_member(e, ed->fields[0].offset));
			pbj_buf_putc(b, ':');
			if (!err)
				err = pbj_enc_value(b, &ed->fields[1],
						    pbj_member(e, ed->fields[1].offset), depth + 1);
		} else {
			if (out++)
				pbj_buf_putc(b, ',');
			err = pbj_enc_value(b, f, arr + i * size, depth);
		}
		if (err)
			return err;
	}
	pbj_buf_putc(b, map ? '}' : ']');
	return 0;
}

/* A message as an object of its present fields, in field number order. */
static int pbj_enc_message(struct pbj_buf *b, const ProtobufCMessage *m, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	bool first = true;
	int err;

	if (!d || d->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC || depth > PBJ_DEPTH)
		return -EINVAL;
	if (pbj_is_timestamp(d))
		return pbj_put_timestamp(b, (const Google__Protobuf__Timestamp *)m);
	pbj_buf_putc(b, '{');
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (!pbjson_field_present(m, f))
			continue;
		pbj_put_key(b, f->name, first);
		first = false;
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			err = pbj_enc_repeated(b, m, f, depth);
		else
			err = pbj_enc_value(b, f, pbj_member(m, f->offset), depth);
		if (err)
			return err;
	}
	pbj_buf_putc(b, '}');
	return 0;
}

int pbjson_encode(const ProtobufCMessage *m, char **out, size_t *len)
{
	struct pbj_buf b = {0};
	int err;

	*out = NULL;
	if (len)
		*len = 0;
	if (!m)
		return -EINVAL;
	err = pbj_enc_message(&b, m, 0);
	if (!err && b.oom)
		err = -ENOMEM;
	if (err) {
		buf_free(&b);
		return err;
	}
	return pbj_buf_take(&b, out, len);
}

/* ---- decoder ------------------------------------------------------------------- */

/* Decoder state: where errors go, and the path of the value being decoded
 * ("cores[2].package") so they can name it. */
struct pbj_dec {
	char *err;
	size_t errlen;
	char path[256];
	size_t plen;
};

/* Formats "path: message" into the error buffer; returns -EINVAL. */
static int pbj_fail(struct pbj_dec *dc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pbj_fail(struct pbj_dec *dc, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (!dc->errlen)
		return -EINVAL;
	if (dc->plen)
		n = snprintf(dc->err, dc->errlen, "%s: ", dc->path);
	if (n < 0 || (size_t)n >= dc->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(dc->err + n, dc->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Appends ".name" or "[i]" to the path; returns the length to restore. */
static size_t pbj_path_push(struct pbj_dec *dc, const char *name, long idx)
{
	size_t old = dc->plen;
	int n;

	if (name)
		n = snprintf(dc->path + old, sizeof(dc->path) - old, "%s%s", old ? "." : "", name);
	else
		n = snprintf(dc->path + old, sizeof(dc->path) - old, "[%ld]", idx);
	if (n > 0)
		dc->plen =
		    old + (size_t)n < sizeof(dc->path) ? old + (size_t)n : sizeof(dc->path) - 1;
	return old;
}

static void pbj_path_pop(struct pbj_dec *dc, size_t old)
{
	dc->plen = old;
	dc->path[old] = '\0';
}

static const char *pbj_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

static const char *pbj_type_name(ProtobufCType t)
{
	static const char *const names[] = {
	    [PROTOBUF_C_TYPE_INT32] = "int32",	     [PROTOBUF_C_TYPE_SINT32] = "sint32",
	    [PROTOBUF_C_TYPE_SFIXED32] = "sfixed32", [PROTOBUF_C_TYPE_INT64] = "int64",
	    [PROTOBUF_C_TYPE_SINT64] = "sint64",     [PROTOBUF_C_TYPE_SFIXED64] = "sfixed64",
	    [PROTOBUF_C_TYPE_UINT32] = "uint32",     [PROTOBUF_C_TYPE_FIXED32] = "fixed32",
	    [PROTOBUF_C_TYPE_UINT64] = "uint64",     [PROTOBUF_C_TYPE_FIXED64] = "fixed64",
	    [PROTOBUF_C_TYPE_FLOAT] = "float",	     [PROTOBUF_C_TYPE_DOUBLE] = "double",
	    [PROTOBUF_C_TYPE_BOOL] = "bool",	     [PROTOBUF_C_TYPE_ENUM] = "enum",
	    [PROTOBUF_C_TYPE_STRING] = "string",     [PROTOBUF_C_TYPE_BYTES] = "bytes",
	    [PROTOBUF_C_TYPE_MESSAGE] = "message",
	};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "?";
}

/*
 * An integer from a JSON number (integral reals included) or a decimal
 * string, within [min, max] for signed types or [0, umax] for unsigned.
 */
static int pbj_dec_int(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
		       bool is_signed, int64_t min, int64_t max, uint64_t umax, uint64_t *out)
{
	const char *what = pbj_type_name(f->type);
	bool neg = false;
	uint64_t u;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		neg = i < 0;
		u = neg ? 0 - (uint64_t)i : (uint64_t)i;
	} else if (json_is_real(v)) {
		double d = json_real_value(v);

		if (d != trunc(d) || fabs(d) >= 18446744073709551616.0)
			return pbj_fail(dc, "expected an integer (%s), got %g", what, d);
		neg = d < 0;
		u = (uint64_t)fabs(d);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;

		neg = *s == '-';
		if (neg)
			s++;
		if (*s < '0' || *s > '9')
			return pbj_fail(dc, "expected an integer (%s), got \"%s\"", what,
					json_string_value(v));
		errno = 0;
		u = strtoull(s, &end, 10);
		if (errno || *end)
			return pbj_fail(dc, "expected an integer (%s), got \"%s\"", what,
					json_string_value(v));
	} else {
		return pbj_fail(dc, "expected an integer (%s), got %s", what, pbj_json_kind(v));
	}
	if (neg && u == 0)
		neg = false;
	if (is_signed) {
		if (neg ? u > 0 - (uint64_t)min : u > (uint64_t)max)
			goto out_range;
		*out = neg ? 0 - u : u; /* two's complement: the caller casts */
	} else {
		if (neg || u > umax)
			goto out_range;
		*out = u;
	}
	return 0;

out_range:
	if (json_is_string(v))
		return pbj_fail(dc, "\"%s\" out of range for %s", json_string_value(v), what);
	return pbj_fail(dc, "%s%llu out of range for %s", neg ? "-" : "", (unsigned long long)u,
			what);
}

/* A double or float: a number, a numeric string, or "NaN", "Infinity", "-Infinity". */
static int pbj_dec_double(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			  double *out)
{
	const char *what = pbj_type_name(f->type);

	if (json_is_number(v)) {
		*out = json_number_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;

		if (!strcmp(s, "NaN")) {
			*out = NAN;
		} else if (!strcmp(s, "Infinity")) {
			*out = INFINITY;
		} else if (!strcmp(s, "-Infinity")) {
			*out = -INFINITY;
		} else {
			errno = 0;
			*out = strtod(s, &end);
			if (!*s || *end || errno || !isfinite(*out) || s[0] == ' ')
				return pbj_fail(dc, "expected a number (%s), got \"%s\"", what, s);
		}
	} else {
		return pbj_fail(dc, "expected a number (%s), got %s", what, pbj_json_kind(v));
	}
	if (f->type == PROTOBUF_C_TYPE_FLOAT && isfinite(*out) && fabs(*out) > FLT_MAX)
		return pbj_fail(dc, "%g out of range for float", *out);
	return 0;
}

/* Base64, standard or URL-safe alphabet, padding optional. -1 on a bad string. */
static ssize_t pbj_base64_decode(const char *s, uint8_t *out)
{
	uint32_t acc = 0;
	size_t n = 0, len = strlen(s);
	int bits = 0;

	while (len && s[len - 1] == '=')
		len--;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i], v;

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+' || c == '-')
			v = 62;
		else if (c == '/' || c == '_')
			v = 63;
		else
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits >= 6) /* one lone character holds no whole byte */
		return -1;
	return (ssize_t)n;
}

/* Reads exactly n digits at *p into *out, advancing *p. */
static bool pbj_read_digits(const char **p, int n, unsigned *out)
{
	*out = 0;
	while (n--) {
		if (**p < '0' || **p > '9')
			return false;
		*out = *out * 10 + (unsigned)(*(*p)++ - '0');
	}
	return true;
}

/* RFC 3339 "YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)" into ts. */
static int pbj_parse_timestamp(const char *s, Google__Protobuf__Timestamp *ts)
{
	static const unsigned char mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	unsigned y, mo, d, h, mi, sec, oh = 0, om = 0, frac = 0;
	int64_t secs;
	int digits = 0, sign = 0;
	bool leap;

	if (!pbj_read_digits(&s, 4, &y) || *s++ != '-' || !pbj_read_digits(&s, 2, &mo) ||
	    *s++ != '-' || !pbj_read_digits(&s, 2, &d) || (*s != 'T' && *s != 't'))
		return -EINVAL;
	s++;
	if (!pbj_read_digits(&s, 2, &h) || *s++ != ':' || !pbj_read_digits(&s, 2, &mi) ||
	    *s++ != ':' || !pbj_read_digits(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 9)
				frac = frac * 10 + (unsigned)(*s - '0');
		if (!digits || digits > 9)
			return -EINVAL;
		for (int i = digits; i < 9; i++)
			frac *= 10;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (!pbj_read_digits(&s, 2, &oh) || *s++ != ':' || !pbj_read_digits(&s, 2, &om) ||
		    oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (*s || y < 1 || mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (unsigned)(mo == 2 && leap) || h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	secs = pbj_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	secs -= sign * (int64_t)(oh * 3600 + om * 60);
	if (secs < PBJ_TS_MIN || secs > PBJ_TS_MAX)
		return -EINVAL;
	ts->seconds = secs;
	ts->nanos = (int32_t)frac;
	return 0;
}

static ProtobufCMessage *pbj_message_new(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	if (m)
		d->message_init(m);
	return m;
}

static int pbj_dec_message(struct pbj_dec *dc, const ProtobufCMessageDescriptor *d,
			   const json_t *obj, ProtobufCMessage *m, int depth);

/*
 * Decodes JSON value v as one value of field f into p (an element of a
 * repeated field or a singular field). A string or message already at p is
 * replaced (the caller only decodes into defaults).
 */
static int pbj_dec_value(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			 void *p, int depth)
{
	const ProtobufCEnumValue *ev;
	ProtobufCMessage *sub;
	uint64_t u;
	double dv = 0;
	int err;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		err = pbj_dec_int(dc, f, v, true, INT32_MIN, INT32_MAX, 0, &u);
		if (!err)
			*(int32_t *)p = (int32_t)(int64_t)u;
		return err;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		err = pbj_dec_int(dc, f, v, false, 0, 0, UINT32_MAX, &u);
		if (!err)
			*(uint32_t *)p = (uint32_t)u;
		return err;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		err = pbj_dec_int(dc, f, v, true, INT64_MIN, INT64_MAX, 0, &u);
		if (!err)
			*(int64_t *)p = (int64_t)u;
		return err;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		err = pbj_dec_int(dc, f, v, false, 0, 0, UINT64_MAX, &u);
		if (!err)
			*(uint64_t *)p = u;
		return err;
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		err = pbj_dec_double(dc, f, v, &dv);
		if (err)
			return err;
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)p = (float)dv;
		else
			*(double *)p = dv;
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return pbj_fail(dc, "expected true or false (bool), got %s",
					pbj_json_kind(v));
		*(protobuf_c_boolean *)p = json_is_true(v);
		return 0;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *ed = f->descriptor;

		if (json_is_string(v)) {
			ev = protobuf_c_enum_descriptor_get_value_by_name(ed, json_string_value(v));
			if (!ev)
				return pbj_fail(dc, "\"%s\" is not a value of %s",
						json_string_value(v), ed->name);
			*(int *)p = ev->value;
			return 0;
		}
		if (json_is_integer(v)) {
			err = pbj_dec_int(dc, f, v, true, INT32_MIN, INT32_MAX, 0, &u);
			if (!err)
				*(int *)p = (int)(int64_t)u;
			return err;
		}
		return pbj_fail(dc, "expected a value name or number of %s, got %s", ed->name,
				pbj_json_kind(v));
	}
	case PROTOBUF_C_TYPE_STRING: {
		char *s, **dst = p;

		if (!json_is_string(v))
			return pbj_fail(dc, "expected a string, got %s", pbj_json_kind(v));
		s = strdup(json_string_value(v));
		if (!s)
			return -ENOMEM;
		if (*dst && *dst != f->default_value)
			free(*dst);
		*dst = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *bd = p;
		const char *s;
		uint8_t *data;
		ssize_t n;

		if (!json_is_string(v))
			return pbj_fail(dc, "expected a base64 string (bytes), got %s",
					pbj_json_kind(v));
		s = json_string_value(v);
		data = malloc(strlen(s) / 4 * 3 + 3);
		if (!data)
			return -ENOMEM;
		n = pbj_base64_decode(s, data);
		if (n < 0) {
			free(data);
			return pbj_fail(dc, "expected a base64 string (bytes)");
		}
		if (bd->data && (!f->default_value ||
				 bd->data != ((const ProtobufCBinaryData *)f->default_value)->data))
			free(bd->data);
		bd->data = data;
		bd->len = (size_t)n;
		return 0;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessageDescriptor *md = f->descriptor;
		ProtobufCMessage **dst = p;

		if (depth >= PBJ_DEPTH)
			return pbj_fail(dc, "nested too deep");
		if (pbj_is_timestamp(md) && !json_is_string(v))
			return pbj_fail(dc, "expected an RFC 3339 time string, got %s",
					pbj_json_kind(v));
		if (!pbj_is_timestamp(md) && !json_is_object(v))
			return pbj_fail(dc, "expected an object (%s), got %s", md->name,
					pbj_json_kind(v));
		sub = pbj_message_new(md);
		if (!sub)
			return -ENOMEM;
		protobuf_c_message_free_unpacked(*dst, NULL);
		*dst = sub; /* owned by the parent from here, even on error */
		if (pbj_is_timestamp(md)) {
			if (pbj_parse_timestamp(json_string_value(v),
						(Google__Protobuf__Timestamp *)sub))
				return pbj_fail(
				    dc, "expected an RFC 3339 time (0001..9999), got \"%s\"",
				    json_string_value(v));
			return 0;
		}
		return pbj_dec_message(dc, md, v, sub, depth + 1);
	}
	}
	return pbj_fail(dc, "field type %d not supported", (int)f->type);
}

/* A map key, always a JSON object key (a string), as key field kf into p. */
static int pbj_dec_map_key(struct pbj_dec *dc, const ProtobufCFieldDescriptor *kf, const char *key,
			   void *p)
{
	json_t *k;
	int err;

	if (kf->type == PROTOBUF_C_TYPE_BOOL) {
		if (strcmp(key, "true") && strcmp(key, "false"))
			return pbj_fail(dc, "map key \"%s\": expected true or false", key);
		*(protobuf_c_boolean *)p = !strcmp(key, "true");
		return 0;
	}
	k = json_string(key);
	if (!k)
		return -ENOMEM;
	err = pbj_dec_value(dc, kf, k, p, 0);
	json_decref(k);
	return err;
}

/* A repeated field from a JSON array, or a map field from an object. */
static int pbj_dec_repeated(struct pbj_dec *dc, ProtobufCMessage *m,
			    const ProtobufCFieldDescriptor *f, const json_t *v, int depth)
{
	size_t *count = (size_t *)((char *)m + f->quantifier_offset);
	char **arr = (char **)((char *)m + f->offset);
	size_t size = pbj_elem_size(f->type), n, i;
	bool map = pbj_is_map(m->descriptor, f);
	int err = 0;

	if (map ? !json_is_object(v) : !json_is_array(v))
		return pbj_fail(dc, "expected %s (repeated %s), got %s",
				map ? "an object (map)" : "an array", pbj_type_name(f->type),
				pbj_json_kind(v));
	n = map ? json_object_size(v) : json_array_size(v);
	if (!n)
		return 0;
	*arr = calloc(n, size);
	if (!*arr)
		return -ENOMEM;
	if (map) {
		const ProtobufCMessageDescriptor *ed = f->descriptor;
		const char *key;
		json_t *val;

		json_object_foreach((json_t *)v, key, val)
		{
			ProtobufCMessage *e = pbj_message_new(ed);
			size_t old;

			if (!e)
				return -ENOMEM;
			((ProtobufCMessage **)*arr)[(*count)++] = e;
			old = pbj_path_push(dc, key, 0);
			err = pbj_dec_map_key(dc, &ed->fields[0], key,
					      (char *)e + ed->fields[0].offset);
			if (!err && !json_is_null(val))
				err = pbj_dec_value(dc, &ed->fields[1], val,
						    (char *)e + ed->fields[1].offset, depth + 1);
			pbj_path_pop(dc, old);
			if (err)
				return err;
		}
		return 0;
	}
	for (i = 0; i < n; i++) {
		size_t old = pbj_path_push(dc, NULL, (long)i);
		void *slot = *arr + i * size;

		if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_STRING) {
			/* slot starts NULL: count it now so an error frees what it got */
			(*count)++;
			err = pbj_dec_value(dc, f, json_array_get(v, i), slot, depth);
		} else {
			err = pbj_dec_value(dc, f, json_array_get(v, i), slot, depth);
			if (!err)
				(*count)++;
		}
		pbj_path_pop(dc, old);
		if (err)
			return err;
	}
	return 0;
}

/* The field names of d, ", "-separated, for "unknown field" errors. */
static void pbj_field_names(const ProtobufCMessageDescriptor *d, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < d->n_fields && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", d->fields[i].name);

		if (n < 0)
			break;
		off += (size_t)n;
	}
}

/* Fills m (of type d, initialised) from the JSON object obj. */
static int pbj_dec_message(struct pbj_dec *dc, const ProtobufCMessageDescriptor *d,
			   const json_t *obj, ProtobufCMessage *m, int depth)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		const ProtobufCFieldDescriptor *f =
		    protobuf_c_message_descriptor_get_field_by_name(d, key);
		size_t old;
		int err;

		if (!f) {
			char names[256];

			pbj_field_names(d, names, sizeof(names));
			return pbj_fail(dc, "unknown field \"%s\" (%s has: %s)", key, d->name,
					names);
		}
		if (json_is_null(v)) /* proto3 JSON: null is the default */
			continue;
		old = pbj_path_push(dc, f->name, 0);
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			err = pbj_dec_repeated(dc, m, f, v, depth);
		} else if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
			   *(uint32_t *)((char *)m + f->quantifier_offset) != 0) {
			err = pbj_fail(dc, "another member of its oneof is already set");
		} else {
			/* present first: a oneof member is freed on error only if set */
			pbjson_field_set_present(m, f);
			err = pbj_dec_value(dc, f, v, (char *)m + f->offset, depth);
		}
		pbj_path_pop(dc, old);
		if (err)
			return err;
	}
	return 0;
}

int pbjson_decode(const ProtobufCMessageDescriptor *d, const char *json, size_t len,
		  ProtobufCMessage **out, char *err, size_t errlen)
{
	struct pbj_dec dc = {.err = err, .errlen = errlen};
	ProtobufCMessage *m;
	json_error_t jerr;
	json_t *root;
	int rc;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!d || d->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC)
		return -EINVAL;
	root = json_loadb(json ? json : "", json ? len : 0,
			  JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root)
		return pbj_fail(&dc, "not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
				jerr.column);
	if (!json_is_object(root)) {
		rc = pbj_fail(&dc, "expected a JSON object (%s), got %s", d->name,
			      pbj_json_kind(root));
		json_decref(root);
		return rc;
	}
	m = pbj_message_new(d);
	if (!m) {
		json_decref(root);
		return -ENOMEM;
	}
	rc = pbj_dec_message(&dc, d, root, m, 0);
	json_decref(root);
	if (rc) {
		if (rc == -ENOMEM)
			pbj_fail(&dc, "out of memory");
		protobuf_c_message_free_unpacked(m, NULL);
		return rc;
	}
	*out = m;
	return 0;
}
