/* SPDX-License-Identifier: MIT */
/*
 * The proto3 JSON decoder (pbjson_decode; the mapping is in pbjson.h):
 * request bodies parsed by jansson, the tree mapped onto a message by
 * reflection on its descriptor, every error naming the path of the value.
 * Calls pbjson.c (reflection, calendar) and utf8.c.
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

#include "api/pbjson.h"
#include "api/pbjson_internal.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "google/protobuf/timestamp.pb-c.h"

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
	secs = time_days_from_civil(y, (int)mo, (int)d) * 86400 + h * 3600 + mi * 60 + sec;
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
/* The integer and floating-point types, range-checked into *p; 1 when f is
 * of none of them. */
static int pbj_dec_number(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			  void *p)
{
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
	default:
		return 1;
	}
}

/* An enum by value name or number. */
static int pbj_dec_enum(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			int *p)
{
	const ProtobufCEnumDescriptor *ed = f->descriptor;
	const ProtobufCEnumValue *ev;
	uint64_t u;
	int err;

	if (json_is_string(v)) {
		ev = protobuf_c_enum_descriptor_get_value_by_name(ed, json_string_value(v));
		if (!ev)
			return pbj_fail(dc, "\"%s\" is not a value of %s", json_string_value(v),
					ed->name);
		*p = ev->value;
		return 0;
	}
	if (json_is_integer(v)) {
		err = pbj_dec_int(dc, f, v, true, INT32_MIN, INT32_MAX, 0, &u);
		if (!err)
			*p = (int)(int64_t)u;
		return err;
	}
	return pbj_fail(dc, "expected a value name or number of %s, got %s", ed->name,
			pbj_json_kind(v));
}

static int pbj_dec_string(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			  char **dst)
{
	char *s;

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

static int pbj_dec_bytes(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			 ProtobufCBinaryData *bd)
{
	const char *s;
	uint8_t *data;
	ssize_t n;

	if (!json_is_string(v))
		return pbj_fail(dc, "expected a base64 string (bytes), got %s", pbj_json_kind(v));
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

/* A nested message, or a Timestamp from its RFC 3339 string. */
static int pbj_dec_submessage(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f,
			      const json_t *v, ProtobufCMessage **dst, int depth)
{
	const ProtobufCMessageDescriptor *md = f->descriptor;
	bool ts = pbj_is_timestamp(md);
	ProtobufCMessage *sub;

	if (depth >= PBJ_DEPTH)
		return pbj_fail(dc, "nested too deep");
	if (ts && !json_is_string(v))
		return pbj_fail(dc, "expected an RFC 3339 time string, got %s", pbj_json_kind(v));
	if (!ts && !json_is_object(v))
		return pbj_fail(dc, "expected an object (%s), got %s", md->name, pbj_json_kind(v));
	sub = pbj_message_new(md);
	if (!sub)
		return -ENOMEM;
	protobuf_c_message_free_unpacked(*dst, NULL);
	*dst = sub; /* owned by the parent from here, even on error */
	if (!ts)
		return pbj_dec_message(dc, md, v, sub, depth + 1);
	if (pbj_parse_timestamp(json_string_value(v), (Google__Protobuf__Timestamp *)sub))
		return pbj_fail(dc, "expected an RFC 3339 time (0001..9999), got \"%s\"",
				json_string_value(v));
	return 0;
}

static int pbj_dec_value(struct pbj_dec *dc, const ProtobufCFieldDescriptor *f, const json_t *v,
			 void *p, int depth)
{
	int err;

	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return pbj_fail(dc, "expected true or false (bool), got %s",
					pbj_json_kind(v));
		*(protobuf_c_boolean *)p = json_is_true(v);
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		return pbj_dec_enum(dc, f, v, p);
	case PROTOBUF_C_TYPE_STRING:
		return pbj_dec_string(dc, f, v, p);
	case PROTOBUF_C_TYPE_BYTES:
		return pbj_dec_bytes(dc, f, v, p);
	case PROTOBUF_C_TYPE_MESSAGE:
		return pbj_dec_submessage(dc, f, v, p, depth);
	default:
		err = pbj_dec_number(dc, f, v, p);
		if (err <= 0)
			return err;
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
	size_t size = pbmsg_elem_size(f->type), n, i;
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
