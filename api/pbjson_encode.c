/* SPDX-License-Identifier: MIT */
/*
 * The proto3 JSON encoder (pbjson_encode; the mapping is in pbjson.h): a
 * streaming writer that walks the message descriptor and appends to one
 * growable buffer, numbers and escapes written straight into it. Calls
 * pbjson.c (reflection, calendar) and utf8.c.
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

#include "base/buf.h"
#include "api/pbjson.h"
#include "api/pbjson_internal.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "google/protobuf/timestamp.pb-c.h"

/* ---- output buffer -------------------------------------------------------- */

/*
 * The output is the one growable buffer (base/buf.h). Its room check is
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
	int month, day;
	unsigned sod;
	char *o;

	if (secs < PBJ_TS_MIN || secs > PBJ_TS_MAX || ts->nanos < 0 || ts->nanos > PBJ_NS_MAX)
		return -EINVAL;
	days = (secs >= 0 ? secs : secs - 86399) / 86400;
	sod = (unsigned)(secs - days * 86400);
	time_civil_from_days(days, &year, &month, &day);
	if (!pbj_buf_room(b, 32))
		return 0;
	o = b->p + b->len;
	memcpy(o, "\"0000-00-00T00:00:00.000000000Z\"", 32);
	pbj_digits(o + 5, (unsigned)year, 4);
	pbj_digits(o + 8, (unsigned)month, 2);
	pbj_digits(o + 11, (unsigned)day, 2);
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
			: !memcmp(k, o, pbmsg_elem_size(kf->type)))
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
	size_t size = pbmsg_elem_size(f->type);
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
