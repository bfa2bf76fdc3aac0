/* SPDX-License-Identifier: MIT */
/*
 * api/pbjson: every message of api/proto/sysobs.proto, filled by reflection,
 * survives protobuf pack/unpack and JSON encode/decode unchanged; then the
 * proto3 JSON rules one by one on hand-built messages (64-bit integers as
 * strings, Timestamps, enums, presence, doubles, string escaping), and the
 * decoder's answers to good and bad request bodies.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/pbjson.h"
#include "api/proto/messages.h"
#include "api/proto/pbmsg.h"
#include "api/proto/sysobs.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"

/* Every message of sysobs.proto is in sysobs_messages[], generated at build
 * time (api/proto/messages.h); test_every_message_is_listed checks the
 * generator against the .proto. */
static size_t n_messages(void)
{
	size_t n = 0;

	while (sysobs_messages[n])
		n++;
	return n;
}

#define N_MESSAGES n_messages()

/* ---- helpers ---- */

/* JSON of m; fails the test if it cannot be encoded or is not valid JSON. */
static char *to_json(const ProtobufCMessage *m)
{
	json_error_t jerr;
	char *out = NULL;
	size_t len = 0;
	json_t *back;

	assert_int_equal(pbjson_encode(m, &out, &len), 0);
	assert_non_null(out);
	assert_int_equal(strlen(out), len);
	back = json_loadb(out, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!back)
		fail_msg("not valid JSON (%s): %s", jerr.text, out);
	json_decref(back);
	return out;
}

static void assert_json(const ProtobufCMessage *m, const char *want)
{
	char *got = to_json(m);

	assert_string_equal(got, want);
	free(got);
}

static void assert_json_contains(const ProtobufCMessage *m, const char *part)
{
	char *got = to_json(m);

	if (!strstr(got, part))
		fail_msg("%s\n  does not contain %s", got, part);
	free(got);
}

static void assert_json_lacks(const ProtobufCMessage *m, const char *part)
{
	char *got = to_json(m);

	if (strstr(got, part))
		fail_msg("%s\n  contains %s", got, part);
	free(got);
}

static Google__Protobuf__Timestamp *ts_new(int64_t seconds, int32_t nanos)
{
	Google__Protobuf__Timestamp *ts = malloc(sizeof(*ts));

	assert_non_null(ts);
	google__protobuf__timestamp__init(ts);
	ts->seconds = seconds;
	ts->nanos = nanos;
	return ts;
}

static ProtobufCMessage *message_new(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	assert_non_null(m);
	d->message_init(m);
	return m;
}

/* Decodes json as d, expecting success. */
static ProtobufCMessage *decode_ok(const ProtobufCMessageDescriptor *d, const char *json)
{
	ProtobufCMessage *m = NULL;
	char err[512];
	int rc = pbjson_decode(d, json, strlen(json), &m, err, sizeof(err));

	if (rc)
		fail_msg("decoding %s as %s: %d %s", json, d->name, rc, err);
	assert_non_null(m);
	return m;
}

/* Decodes json as d, expecting -EINVAL with an error containing want. */
static void decode_fails(const ProtobufCMessageDescriptor *d, const char *json, const char *want)
{
	ProtobufCMessage *m = (ProtobufCMessage *)1;
	char err[512];
	int rc = pbjson_decode(d, json, strlen(json), &m, err, sizeof(err));

	assert_int_equal(rc, -EINVAL);
	assert_null(m);
	if (!strstr(err, want))
		fail_msg("decoding %s: error \"%s\" does not say \"%s\"", json, err, want);
}

/* ---- every message, filled by reflection ---- */

static void fill_message(ProtobufCMessage *m, int seed, int depth);

/* A nonzero value for one field of type f->type, derived from seed, at p. */
static void fill_value(const ProtobufCFieldDescriptor *f, void *p, int seed, int depth)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		*(int32_t *)p = -1000 * (seed + 1) - (int32_t)f->id;
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*(uint32_t *)p = 4000000000u + (uint32_t)(seed * 100) + f->id;
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		*(int64_t *)p = -(9007199254740993LL + seed * 100 + f->id);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*(uint64_t *)p = UINT64_MAX - (uint64_t)(seed * 100) - f->id;
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		*(float *)p = 0.5f + (float)seed;
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		*(double *)p = 0.1 * (seed + 1) + f->id;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = 1;
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *ed = f->descriptor;

		*(int *)p = ed->values[ed->n_values - 1].value;
		break;
	}
	case PROTOBUF_C_TYPE_STRING: {
		char buf[96];

		snprintf(buf, sizeof(buf), "%s %d \"q\" \\ \n\x01 \xc3\xa9", f->name, seed);
		*(char **)p = strdup(buf);
		assert_non_null(*(char **)p);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = p;

		b->len = 5;
		b->data = malloc(5);
		assert_non_null(b->data);
		memcpy(b->data, "\x00\xff\x10pq", 5);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessageDescriptor *md = f->descriptor;
		ProtobufCMessage *sub;

		if (md == &google__protobuf__timestamp__descriptor) {
			*(void **)p = ts_new(1796292000 + seed, 1 + seed);
			break;
		}
		if (depth >= 3)
			break;
		sub = message_new(md);
		fill_message(sub, seed, depth + 1);
		*(ProtobufCMessage **)p = sub;
		break;
	}
	}
}

/* Every field of m set (one member per oneof), repeated fields with 2 items. */
static void fill_message(ProtobufCMessage *m, int seed, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	unsigned oneofs_set[64];
	size_t n_oneofs = 0;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *base = (char *)m;
		bool taken = false;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			for (size_t k = 0; k < n_oneofs; k++)
				taken |= oneofs_set[k] == f->quantifier_offset;
			if (taken)
				continue;
			assert_true(n_oneofs < 64);
			oneofs_set[n_oneofs++] = f->quantifier_offset;
		}
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t size = pbmsg_elem_size(f->type);
			char *arr;

			if (depth >= 3 && f->type == PROTOBUF_C_TYPE_MESSAGE)
				continue;
			arr = calloc(2, size);
			assert_non_null(arr);
			for (int k = 0; k < 2; k++)
				fill_value(f, arr + k * size, seed * 10 + k, depth);
			*(char **)(base + f->offset) = arr;
			*(size_t *)(base + f->quantifier_offset) = 2;
			continue;
		}
		fill_value(f, base + f->offset, seed, depth);
		if (f->type == PROTOBUF_C_TYPE_MESSAGE && !*(void **)(base + f->offset))
			continue; /* too deep: left out */
		pbjson_field_set_present(m, f);
	}
}

static void test_every_message_is_listed(void **state)
{
	const char *data = getenv("SYSOBS_TEST_DATA");
	char path[1024], line[512], name[128];
	size_t found = 0;
	FILE *fp;

	if (!data)
		skip();
	snprintf(path, sizeof(path), "%s/../../api/proto/sysobs.proto", data);
	fp = fopen(path, "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		char full[160];
		bool listed = false;

		if (sscanf(line, "message %127[A-Za-z0-9_] {", name) != 1)
			continue;
		snprintf(full, sizeof(full), "sysobs.v1.%s", name);
		for (size_t i = 0; i < N_MESSAGES; i++)
			listed |= !strcmp(sysobs_messages[i]->name, full);
		if (!listed)
			fail_msg("message %s of sysobs.proto is not in sysobs_messages[]", name);
		found++;
	}
	fclose(fp);
	assert_int_equal(found, N_MESSAGES);
}

static void test_every_message_round_trips(void **state)
{
	for (size_t i = 0; i < N_MESSAGES; i++) {
		const ProtobufCMessageDescriptor *d = sysobs_messages[i];
		ProtobufCMessage *m = message_new(d), *back, *from_json;
		size_t len, len2, len3;
		uint8_t *wire, *wire2, *wire3;
		char *json, *json2;

		fill_message(m, (int)i, 0);

		/* protobuf: pack, unpack, pack again gives the same bytes */
		len = protobuf_c_message_get_packed_size(m);
		assert_true(len > 0);
		wire = malloc(len);
		assert_int_equal(protobuf_c_message_pack(m, wire), len);
		back = protobuf_c_message_unpack(d, NULL, len, wire);
		assert_non_null(back);
		len2 = protobuf_c_message_get_packed_size(back);
		wire2 = malloc(len2);
		assert_int_equal(protobuf_c_message_pack(back, wire2), len2);
		assert_int_equal(len2, len);
		assert_memory_equal(wire2, wire, len);

		/* JSON of the original and of the unpacked copy are the same */
		json = to_json(m);
		json2 = to_json(back);
		assert_string_equal(json2, json);

		/* and the JSON decodes to a message that packs to the same bytes */
		from_json = decode_ok(d, json);
		len3 = protobuf_c_message_get_packed_size(from_json);
		wire3 = malloc(len3);
		assert_int_equal(protobuf_c_message_pack(from_json, wire3), len3);
		if (len3 != len || memcmp(wire3, wire, len))
			fail_msg("%s: JSON round trip changed the message: %s", d->name, json);

		free(wire);
		free(wire2);
		free(wire3);
		free(json);
		free(json2);
		protobuf_c_message_free_unpacked(m, NULL);
		protobuf_c_message_free_unpacked(back, NULL);
		protobuf_c_message_free_unpacked(from_json, NULL);
	}
}

/* ---- JSON rules ---- */

static void test_64_bit_integers_are_strings(void **state)
{
	Sysobs__V1__SelfSample s = SYSOBS__V1__SELF_SAMPLE__INIT;
	Sysobs__V1__Collector c = SYSOBS__V1__COLLECTOR__INIT;

	s.id = 7;
	s.rss_bytes = 9007199254740993LL; /* 2^53 + 1: a double would say ...992 */
	s.open_fds = -5;
	s.threads = INT64_MIN;
	s.queue_depth = INT64_MAX;
	assert_json(&s.base, "{\"id\":\"7\",\"cpu_seconds\":0,\"rss_bytes\":\"9007199254740993\","
			     "\"open_fds\":\"-5\",\"threads\":\"-9223372036854775808\","
			     "\"queue_depth\":\"9223372036854775807\"}");

	c.errors = UINT64_MAX;
	assert_json_contains(&c.base, "\"errors\":\"18446744073709551615\"");
}

static void test_32_bit_integers_are_numbers(void **state)
{
	Sysobs__V1__IfsQueuedScan q = SYSOBS__V1__IFS_QUEUED_SCAN__INIT;
	Sysobs__V1__MptcpConnection c = SYSOBS__V1__MPTCP_CONNECTION__INIT;

	q.cpu = -1;
	q.core = 4294967295u;
	assert_json_contains(&q.base, "\"core\":4294967295,\"cpu\":-1}");
	c.token = 0xdeadbeef;
	assert_json_contains(&c.base, "\"token\":3735928559,");
}

static void test_timestamps_are_rfc3339_utc_with_nanoseconds(void **state)
{
	Sysobs__V1__Point p = SYSOBS__V1__POINT__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	char *out = (char *)1;
	size_t len;

	p.time = &ts;
	ts.seconds = 1796292000; /* 2026-12-03T10:00:00Z */
	ts.nanos = 1;
	assert_json(&p.base, "{\"time\":\"2026-12-03T10:00:00.000000001Z\",\"value\":0}");
	ts.seconds = 0;
	ts.nanos = 0;
	assert_json(&p.base, "{\"time\":\"1970-01-01T00:00:00.000000000Z\",\"value\":0}");
	ts.seconds = 253402300799; /* the last second RFC 3339 can write */
	ts.nanos = 999999999;
	assert_json(&p.base, "{\"time\":\"9999-12-31T23:59:59.999999999Z\",\"value\":0}");
	ts.seconds = -62135596800; /* the first */
	ts.nanos = 0;
	assert_json(&p.base, "{\"time\":\"0001-01-01T00:00:00.000000000Z\",\"value\":0}");
	ts.seconds = 951782400; /* a leap day */
	assert_json_contains(&p.base, "\"2000-02-29T00:00:00.000000000Z\"");
	ts.seconds = -1;
	ts.nanos = 500000000;
	assert_json_contains(&p.base, "\"1969-12-31T23:59:59.500000000Z\"");

	/* outside years 0001..9999, or nanos outside 0..999999999: an error */
	ts.seconds = 253402300800;
	ts.nanos = 0;
	assert_int_equal(pbjson_encode(&p.base, &out, &len), -EINVAL);
	assert_null(out);
	ts.seconds = -62135596801;
	assert_int_equal(pbjson_encode(&p.base, &out, &len), -EINVAL);
	ts.seconds = 0;
	ts.nanos = -1;
	assert_int_equal(pbjson_encode(&p.base, &out, &len), -EINVAL);
	ts.nanos = 1000000000;
	assert_int_equal(pbjson_encode(&p.base, &out, &len), -EINVAL);

	/* every day of 400 years comes out as the C library says */
	for (int64_t s = -62135596800LL + 86399; s < 253402300799LL; s += 86400LL * 97 + 3607) {
		time_t t = (time_t)s;
		struct tm tm;
		char want[48], *got;

		gmtime_r(&t, &tm);
		ts.seconds = s;
		ts.nanos = 123456789;
		snprintf(
		    want, sizeof(want), "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.123456789Z\"",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		got = to_json(&p.base);
		if (strncmp(got, want, strlen(want)))
			fail_msg("%lld: got %s want %s", (long long)s, got, want);
		free(got);
	}
}

static void test_enums_are_names_and_unknown_values_numbers(void **state)
{
	Sysobs__V1__Collector c = SYSOBS__V1__COLLECTOR__INIT;

	c.name = "ifs";
	c.state = SYSOBS__V1__COLLECTOR_STATE__RUNNING;
	assert_json_contains(&c.base, "\"state\":\"RUNNING\"");
	c.state = SYSOBS__V1__COLLECTOR_STATE__COLLECTOR_STATE_UNSPECIFIED;
	assert_json_contains(&c.base, "\"state\":\"COLLECTOR_STATE_UNSPECIFIED\"");
	c.state = (Sysobs__V1__CollectorState)42;
	assert_json_contains(&c.base, "\"state\":42,");
}

static void test_repeated_fields_are_arrays_even_empty(void **state)
{
	Sysobs__V1__Collector c = SYSOBS__V1__COLLECTOR__INIT;
	Sysobs__V1__IfsCore core = SYSOBS__V1__IFS_CORE__INIT;
	char *routes[] = {"/api/v1/ifs/cores", "/api/v1/ifs/scans"};
	uint32_t cpus[] = {3, 67};

	assert_json(&c.base,
		    "{\"name\":\"\",\"help\":\"\",\"state\":\"COLLECTOR_STATE_UNSPECIFIED\","
		    "\"reason\":\"\",\"errors\":\"0\",\"routes\":[]}");
	c.routes = routes;
	c.n_routes = 2;
	assert_json_contains(&c.base, "\"routes\":[\"/api/v1/ifs/cores\",\"/api/v1/ifs/scans\"]");
	core.cpus = cpus;
	core.n_cpus = 2;
	assert_json_contains(&core.base, "\"cpus\":[3,67],");
	assert_json_contains(&core.base, "\"last\":[]}");
}

static void test_nested_messages_are_objects_and_null_ones_omitted(void **state)
{
	Sysobs__V1__ErrorResponse r = SYSOBS__V1__ERROR_RESPONSE__INIT;
	Sysobs__V1__Error e = SYSOBS__V1__ERROR__INIT;

	assert_json(&r.base, "{}");
	e.code = "not_found";
	e.message = "no such route";
	r.error = &e;
	assert_json(&r.base, "{\"error\":{\"code\":\"not_found\",\"message\":\"no such route\"}}");
}

static void test_maps_are_objects(void **state)
{
	Sysobs__V1__Series s = SYSOBS__V1__SERIES__INIT;
	Sysobs__V1__Series__LabelsEntry l1 = SYSOBS__V1__SERIES__LABELS_ENTRY__INIT,
					l2 = SYSOBS__V1__SERIES__LABELS_ENTRY__INIT;
	Sysobs__V1__Series__LabelsEntry *labels[] = {&l1, &l2};
	Sysobs__V1__Point p = SYSOBS__V1__POINT__INIT, *points[] = {&p};
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;

	assert_json(&s.base, "{\"labels\":{},\"points\":[]}");
	l1.key = "__name__";
	l1.value = "sysobs_events_written_total";
	l2.key = "collector";
	l2.value = "ifs";
	s.labels = labels;
	s.n_labels = 2;
	ts.seconds = 1796292000;
	p.time = &ts;
	p.value = 42;
	s.points = points;
	s.n_points = 1;
	assert_json(&s.base, "{\"labels\":{\"__name__\":\"sysobs_events_written_total\","
			     "\"collector\":\"ifs\"},\"points\":[{\"time\":"
			     "\"2026-12-03T10:00:00.000000000Z\",\"value\":42}]}");
}

static void test_oneof_shows_only_the_member_set(void **state)
{
	Sysobs__V1__Event ev = SYSOBS__V1__EVENT__INIT;
	Sysobs__V1__DropSample d = SYSOBS__V1__DROP_SAMPLE__INIT;

	ev.id = 12;
	ev.collector = "drops";
	ev.table = "drop_samples";
	assert_json(&ev.base, "{\"id\":\"12\",\"collector\":\"drops\",\"table\":\"drop_samples\"}");
	d.id = 12;
	d.len = 1500;
	ev.row_case = SYSOBS__V1__EVENT__ROW_DROP_SAMPLE;
	ev.drop_sample = &d;
	assert_json(&ev.base, "{\"id\":\"12\",\"collector\":\"drops\",\"table\":\"drop_samples\","
			      "\"drop_sample\":{\"id\":\"12\",\"reason_code\":0,\"netns\":0,"
			      "\"len\":1500,\"cpu\":0,\"capture\":\"\"}}");
	assert_json_lacks(&ev.base, "self_sample");
}

static void test_optional_fields_appear_only_when_set_zero_included(void **state)
{
	Sysobs__V1__DropSample d = SYSOBS__V1__DROP_SAMPLE__INIT;
	const ProtobufCFieldDescriptor *sport =
	    protobuf_c_message_descriptor_get_field_by_name(d.base.descriptor, "sport");

	/* non-optional zero fields are always there; optional unset ones not */
	assert_json(
	    &d.base,
	    "{\"id\":\"0\",\"reason_code\":0,\"netns\":0,\"len\":0,\"cpu\":0,\"capture\":\"\"}");
	assert_false(pbjson_field_present(&d.base, sport));

	/* an optional set to zero is there, as zero */
	pbjson_field_set_present(&d.base, sport);
	assert_true(pbjson_field_present(&d.base, sport));
	assert_int_equal(d.sport, 0);
	assert_json_contains(&d.base, "\"sport\":0");
	d._reason_case = SYSOBS__V1__DROP_SAMPLE___REASON_REASON;
	d.reason = "";
	assert_json_contains(&d.base, "\"reason\":\"\",\"reason_code\":0");
	assert_json_lacks(&d.base, "dport");
}

static void test_doubles_are_shortest_and_non_finite_are_strings(void **state)
{
	static const struct {
		double v;
		const char *json;
	} cases[] = {
	    {0.1, "0.1"},
	    {1e300, "1e+300"},
	    {3.0, "3"},
	    {-2.5, "-2.5"},
	    {0, "0"},
	    {1.0 / 3, "0.3333333333333333"},
	    {123456789012.0, "123456789012"},
	    {9007199254740991.0, "9007199254740991"},
	    {1e17, "1e+17"},
	    {5e-324, "4.94065645841247e-324"}, /* 15 digits at least: not "5e-324" */
	    {NAN, "\"NaN\""},
	    {INFINITY, "\"Infinity\""},
	    {-INFINITY, "\"-Infinity\""},
	};
	Sysobs__V1__Point p = SYSOBS__V1__POINT__INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[64];

		p.value = cases[i].v;
		snprintf(want, sizeof(want), "{\"value\":%s}", cases[i].json);
		assert_json(&p.base, want);
	}
	/* every finite one reads back as the same double */
	for (double a = 1e-310; a < 1e307; a *= 7.3) {
		for (int sign = -1; sign <= 1; sign += 2) {
			char *json;
			json_t *j;

			p.value = sign * a;
			json = to_json(&p.base);
			j = json_loads(json, 0, NULL);
			assert_true(json_number_value(json_object_get(j, "value")) == p.value);
			json_decref(j);
			free(json);
		}
	}
}

static void test_strings_stay_valid_json(void **state)
{
	Sysobs__V1__Error e = SYSOBS__V1__ERROR__INIT;

	e.code = "q\"b\\n\nt\tc\x01\x1f del\x7f";
	e.message = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
	assert_json(&e.base, "{\"code\":\"q\\\"b\\\\n\\nt\\tc\\u0001\\u001f del\x7f\","
			     "\"message\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}");

	/* each byte that is not UTF-8 becomes U+FFFD */
	e.code = "a\xff"
		 "b";
	e.message = "\xe2\x82"		/* truncated */
		    "|\xc0\xaf"		/* overlong '/' */
		    "|\xed\xa0\x80"	/* a UTF-16 surrogate */
		    "|\xf4\x90\x80\x80" /* past U+10FFFF */
		    "|\xc3";		/* cut at the end */
	assert_json(&e.base, "{\"code\":\"a\xef\xbf\xbd"
			     "b\",\"message\":\"\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
			     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf"
			     "\xbd\xef\xbf\xbd|\xef\xbf\xbd\"}");

	/* a NULL string is the empty string */
	e.code = NULL;
	assert_json_contains(&e.base, "{\"code\":\"\",");
}

static void test_defaults_give_one_stable_shape(void **state)
{
	Sysobs__V1__MptcpNamespace ns = SYSOBS__V1__MPTCP_NAMESPACE__INIT;
	Sysobs__V1__Health h = SYSOBS__V1__HEALTH__INIT;
	Sysobs__V1__MptcpEventList l = SYSOBS__V1__MPTCP_EVENT_LIST__INIT;

	assert_json(&ns.base, "{\"path\":\"\",\"netns\":0,\"overruns\":\"0\"}");
	h.status = "ok";
	assert_json(&h.base, "{\"status\":\"ok\"}");
	assert_json(&l.base, "{\"data\":[],\"next_cursor\":\"\"}");
}

/* ---- decoder ---- */

static void test_decode_a_scan_request(void **state)
{
	Sysobs__V1__IfsScanRequest *r;

	r = (Sysobs__V1__IfsScanRequest *)decode_ok(&sysobs__v1__ifs_scan_request__descriptor,
						    "{\"cpus\":[0,2,\"5\"],\"tests\":[\"scan\","
						    "\"array\"]}");
	assert_int_equal(r->n_cpus, 3);
	assert_int_equal(r->cpus[0], 0);
	assert_int_equal(r->cpus[1], 2);
	assert_int_equal(r->cpus[2], 5);
	assert_int_equal(r->n_cores, 0);
	assert_int_equal(r->n_tests, 2);
	assert_string_equal(r->tests[0], "scan");
	assert_string_equal(r->tests[1], "array");
	protobuf_c_message_free_unpacked(&r->base, NULL);

	r = (Sysobs__V1__IfsScanRequest *)decode_ok(
	    &sysobs__v1__ifs_scan_request__descriptor,
	    "{\"cores\":[{\"package\":1,\"core\":5},{\"core\":3}],\"tests\":null}");
	assert_int_equal(r->n_cores, 2);
	assert_int_equal(r->cores[0]->_package_case, SYSOBS__V1__IFS_CORE_REF___PACKAGE_PACKAGE);
	assert_int_equal(r->cores[0]->package, 1);
	assert_int_equal(r->cores[0]->core, 5);
	assert_int_equal(r->cores[1]->_package_case, SYSOBS__V1__IFS_CORE_REF___PACKAGE__NOT_SET);
	assert_int_equal(r->cores[1]->core, 3);
	assert_int_equal(r->n_tests, 0);
	protobuf_c_message_free_unpacked(&r->base, NULL);
}

static void test_decode_names_unknown_fields(void **state)
{
	decode_fails(&sysobs__v1__ifs_scan_request__descriptor, "{\"cpu\":[1]}",
		     "unknown field \"cpu\" (sysobs.v1.IfsScanRequest has: cpus, cores, tests)");
	decode_fails(&sysobs__v1__ifs_scan_request__descriptor,
		     "{\"cores\":[{\"core\":1},{\"pkg\":0}]}", "cores[1]: unknown field \"pkg\"");
}

static void test_decode_names_the_field_and_the_type_it_wanted(void **state)
{
	const ProtobufCMessageDescriptor *d = &sysobs__v1__ifs_scan_request__descriptor;

	decode_fails(d, "{\"cpus\":3}", "cpus: expected an array (repeated int32), got a number");
	decode_fails(d, "{\"cpus\":[1,\"x\"]}", "cpus[1]: expected an integer (int32), got \"x\"");
	decode_fails(d, "{\"cpus\":[1.5]}", "cpus[0]: expected an integer (int32), got 1.5");
	decode_fails(d, "{\"cpus\":[2147483648]}", "cpus[0]: 2147483648 out of range for int32");
	decode_fails(d, "{\"cpus\":[true]}", "cpus[0]: expected an integer (int32), got a boolean");
	decode_fails(d, "{\"tests\":[\"scan\",3]}", "tests[1]: expected a string, got a number");
	decode_fails(d, "{\"cores\":[{\"core\":-1}]}", "cores[0].core: -1 out of range for uint32");
	decode_fails(d, "{\"cores\":[7]}",
		     "cores[0]: expected an object (sysobs.v1.IfsCoreRef), got a number");
	decode_fails(&sysobs__v1__health__descriptor, "{\"status\":{}}",
		     "status: expected a string, got an object");
	decode_fails(&sysobs__v1__ifs_scheduler__descriptor, "{\"enabled\":1}",
		     "enabled: expected true or false (bool), got a number");
	decode_fails(&sysobs__v1__point__descriptor, "{\"time\":\"yesterday\"}",
		     "time: expected an RFC 3339 time (0001..9999), got \"yesterday\"");
	decode_fails(&sysobs__v1__point__descriptor, "{\"time\":\"2026-02-29T00:00:00Z\"}",
		     "time: expected an RFC 3339 time");
	decode_fails(&sysobs__v1__point__descriptor, "{\"value\":\"fast\"}",
		     "value: expected a number (double), got \"fast\"");
	decode_fails(&sysobs__v1__collector__descriptor, "{\"state\":\"BORED\"}",
		     "state: \"BORED\" is not a value of sysobs.v1.CollectorState");
	decode_fails(&sysobs__v1__event__descriptor, "{\"self_sample\":{},\"drop_sample\":{}}",
		     "drop_sample: another member of its oneof is already set");
	/* a oneof member that fails half-way is freed (run under ASan to see) */
	decode_fails(&sysobs__v1__event__descriptor, "{\"drop_sample\":{\"len\":\"x\"}}",
		     "drop_sample.len: expected an integer (uint32), got \"x\"");
	decode_fails(&sysobs__v1__series__descriptor, "{\"labels\":[\"a\"]}",
		     "labels: expected an object (map)");
}

static void test_decode_64_bit_integers_from_strings_or_numbers(void **state)
{
	Sysobs__V1__IfsQueuedScan *q;
	Sysobs__V1__MptcpNamespace *ns;

	q = (Sysobs__V1__IfsQueuedScan *)decode_ok(&sysobs__v1__ifs_queued_scan__descriptor,
						   "{\"scan_id\":\"9007199254740993\"}");
	assert_true(q->scan_id == 9007199254740993LL);
	protobuf_c_message_free_unpacked(&q->base, NULL);
	q = (Sysobs__V1__IfsQueuedScan *)decode_ok(&sysobs__v1__ifs_queued_scan__descriptor,
						   "{\"scan_id\":9007199254740993}");
	assert_true(q->scan_id == 9007199254740993LL);
	protobuf_c_message_free_unpacked(&q->base, NULL);
	q = (Sysobs__V1__IfsQueuedScan *)decode_ok(&sysobs__v1__ifs_queued_scan__descriptor,
						   "{\"scan_id\":\"-9223372036854775808\"}");
	assert_true(q->scan_id == INT64_MIN);
	protobuf_c_message_free_unpacked(&q->base, NULL);

	ns = (Sysobs__V1__MptcpNamespace *)decode_ok(&sysobs__v1__mptcp_namespace__descriptor,
						     "{\"overruns\":\"18446744073709551615\"}");
	assert_true(ns->overruns == UINT64_MAX);
	protobuf_c_message_free_unpacked(&ns->base, NULL);

	decode_fails(&sysobs__v1__mptcp_namespace__descriptor,
		     "{\"overruns\":\"18446744073709551616\"}",
		     "overruns: expected an integer (uint64)");
	decode_fails(&sysobs__v1__ifs_queued_scan__descriptor,
		     "{\"scan_id\":\"9223372036854775808\"}",
		     "scan_id: \"9223372036854775808\" out of range for int64");
	decode_fails(&sysobs__v1__ifs_queued_scan__descriptor, "{\"scan_id\":\"12 \"}",
		     "scan_id: expected an integer (int64)");
}

static void test_decode_enums_times_and_nulls(void **state)
{
	Sysobs__V1__Collector *c;
	Sysobs__V1__Point *p;

	c = (Sysobs__V1__Collector *)decode_ok(&sysobs__v1__collector__descriptor,
					       "{\"state\":\"FAILED\",\"reason\":null}");
	assert_int_equal(c->state, SYSOBS__V1__COLLECTOR_STATE__FAILED);
	assert_string_equal(c->reason, "");
	protobuf_c_message_free_unpacked(&c->base, NULL);
	c = (Sysobs__V1__Collector *)decode_ok(&sysobs__v1__collector__descriptor, "{\"state\":3}");
	assert_int_equal(c->state, SYSOBS__V1__COLLECTOR_STATE__RUNNING);
	protobuf_c_message_free_unpacked(&c->base, NULL);

	p = (Sysobs__V1__Point *)decode_ok(&sysobs__v1__point__descriptor,
					   "{\"time\":\"2026-12-03T11:00:00.000000001+01:00\","
					   "\"value\":\"-Infinity\"}");
	assert_non_null(p->time);
	assert_int_equal(p->time->seconds, 1796292000);
	assert_int_equal(p->time->nanos, 1);
	assert_true(isinf(p->value) && p->value < 0);
	protobuf_c_message_free_unpacked(&p->base, NULL);
	p = (Sysobs__V1__Point *)decode_ok(
	    &sysobs__v1__point__descriptor,
	    "{\"time\":\"2026-12-03T10:00:00.5Z\",\"value\":\"NaN\"}");
	assert_int_equal(p->time->nanos, 500000000);
	assert_true(isnan(p->value));
	protobuf_c_message_free_unpacked(&p->base, NULL);
}

static void test_decode_wants_one_json_object(void **state)
{
	const ProtobufCMessageDescriptor *d = &sysobs__v1__ifs_scan_request__descriptor;
	ProtobufCMessage *m = NULL;
	char err[8];

	decode_fails(d, "[1]", "expected a JSON object (sysobs.v1.IfsScanRequest), got an array");
	decode_fails(d, "\"cpus\"", "expected a JSON object");
	decode_fails(d, "", "not JSON");
	decode_fails(d, "{\"cpus\":[1]", "not JSON");
	decode_fails(d, "{\"cpus\":[1]} x", "not JSON");
	decode_fails(d, "{\"cpus\":[1],\"cpus\":[2]}", "not JSON: duplicate object key");
	/* a short error buffer is cut, still a string */
	assert_int_equal(pbjson_decode(d, "[]", 2, &m, err, sizeof(err)), -EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_int_equal(pbjson_decode(d, "[]", 2, &m, NULL, 0), -EINVAL);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_message_is_listed),
	    cmocka_unit_test(test_every_message_round_trips),
	    cmocka_unit_test(test_64_bit_integers_are_strings),
	    cmocka_unit_test(test_32_bit_integers_are_numbers),
	    cmocka_unit_test(test_timestamps_are_rfc3339_utc_with_nanoseconds),
	    cmocka_unit_test(test_enums_are_names_and_unknown_values_numbers),
	    cmocka_unit_test(test_repeated_fields_are_arrays_even_empty),
	    cmocka_unit_test(test_nested_messages_are_objects_and_null_ones_omitted),
	    cmocka_unit_test(test_maps_are_objects),
	    cmocka_unit_test(test_oneof_shows_only_the_member_set),
	    cmocka_unit_test(test_optional_fields_appear_only_when_set_zero_included),
	    cmocka_unit_test(test_doubles_are_shortest_and_non_finite_are_strings),
	    cmocka_unit_test(test_strings_stay_valid_json),
	    cmocka_unit_test(test_defaults_give_one_stable_shape),
	    cmocka_unit_test(test_decode_a_scan_request),
	    cmocka_unit_test(test_decode_names_unknown_fields),
	    cmocka_unit_test(test_decode_names_the_field_and_the_type_it_wanted),
	    cmocka_unit_test(test_decode_64_bit_integers_from_strings_or_numbers),
	    cmocka_unit_test(test_decode_enums_times_and_nulls),
	    cmocka_unit_test(test_decode_wants_one_json_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
