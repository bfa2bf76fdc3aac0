// SPDX-License-Identifier: MIT
/*
 * bench_pbjson: cost of rendering one history page (1000 DropSample rows)
 * as JSON with api/pbjson and as protobuf with protobuf-c
 * (get_packed_size + pack), and, for comparison, as JSON through a jansson
 * tree (json_object per row + json_dumps), the way routes did it before.
 * Prints ns per row; asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/pbjson.h"
#include "api/proto/sysobs.pb-c.h"

#define ROWS 1000
#define ITER 200

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One page of realistic rows: every optional column set, as a TCP drop has. */
static void page_fill(Sysobs__V1__DropSampleList *l, Sysobs__V1__DropSample *rows,
		      Sysobs__V1__DropSample **ptrs, Google__Protobuf__Timestamp *ts)
{
	for (int i = 0; i < ROWS; i++) {
		Sysobs__V1__DropSample *r = &rows[i];

		sysobs__v1__drop_sample__init(r);
		google__protobuf__timestamp__init(&ts[i]);
		ts[i].seconds = 1796292000 + i;
		ts[i].nanos = 123456789;
		r->id = 1000000 + i;
		r->time = &ts[i];
		r->_reason_case = SYSOBS__V1__DROP_SAMPLE___REASON_REASON;
		r->reason = "TCP_INVALID_SEQUENCE";
		r->reason_code = 77;
		r->_location_case = SYSOBS__V1__DROP_SAMPLE___LOCATION_LOCATION;
		r->location = "tcp_validate_incoming+0x1a2";
		r->_ifindex_case = SYSOBS__V1__DROP_SAMPLE___IFINDEX_IFINDEX;
		r->ifindex = 2;
		r->_ifname_case = SYSOBS__V1__DROP_SAMPLE___IFNAME_IFNAME;
		r->ifname = "eth0";
		r->netns = 4026531840u;
		r->_l3_case = SYSOBS__V1__DROP_SAMPLE___L3_L3;
		r->l3 = "ipv4";
		r->_protocol_case = SYSOBS__V1__DROP_SAMPLE___PROTOCOL_PROTOCOL;
		r->protocol = "tcp";
		r->_saddr_case = SYSOBS__V1__DROP_SAMPLE___SADDR_SADDR;
		r->saddr = "192.168.100.23";
		r->_daddr_case = SYSOBS__V1__DROP_SAMPLE___DADDR_DADDR;
		r->daddr = "10.0.0.1";
		r->_sport_case = SYSOBS__V1__DROP_SAMPLE___SPORT_SPORT;
		r->sport = 40000 + i % 20000;
		r->_dport_case = SYSOBS__V1__DROP_SAMPLE___DPORT_DPORT;
		r->dport = 443;
		r->_tcp_flags_case = SYSOBS__V1__DROP_SAMPLE___TCP_FLAGS_TCP_FLAGS;
		r->tcp_flags = 0x10;
		r->len = 1500;
		r->cpu = i % 64;
		ptrs[i] = r;
	}
	sysobs__v1__drop_sample_list__init(l);
	l->data = ptrs;
	l->n_data = ROWS;
	l->next_cursor = "999000";
}

/* The same page as a jansson tree, serialised compact. */
static char *page_jansson(const Sysobs__V1__DropSampleList *l)
{
	json_t *arr = json_array(), *o;
	char *s;

	for (size_t i = 0; i < l->n_data; i++) {
		const Sysobs__V1__DropSample *r = l->data[i];
		char id[24];

		snprintf(id, sizeof(id), "%lld", (long long)r->id);
		o = json_pack(
		    "{s:s,s:s,s:s,s:i,s:s,s:i,s:s,s:I,s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i}", "id",
		    id, "time", "2026-12-03T10:00:00.123456789Z", "reason", r->reason,
		    "reason_code", (int)r->reason_code, "location", r->location, "ifindex",
		    r->ifindex, "ifname", r->ifname, "netns", (json_int_t)r->netns, "l3", r->l3,
		    "protocol", r->protocol, "saddr", r->saddr, "daddr", r->daddr, "sport",
		    (int)r->sport, "dport", (int)r->dport, "tcp_flags", (int)r->tcp_flags, "len",
		    (int)r->len, "cpu", (int)r->cpu);
		json_array_append_new(arr, o);
	}
	o = json_pack("{s:o,s:s}", "data", arr, "next_cursor", l->next_cursor);
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

int main(void)
{
	static Sysobs__V1__DropSample rows[ROWS], *ptrs[ROWS];
	static Google__Protobuf__Timestamp ts[ROWS];
	Sysobs__V1__DropSampleList l;
	size_t json_len = 0, pb_len = 0, jansson_len = 0;
	double t0, t_json, t_pb, t_jansson;
	char *out;

	page_fill(&l, rows, ptrs, ts);

	t0 = now_s();
	for (int k = 0; k < ITER; k++) {
		if (pbjson_encode(&l.base, &out, &json_len)) {
			fprintf(stderr, "pbjson_encode failed\n");
			return 1;
		}
		free(out);
	}
	t_json = now_s() - t0;

	t0 = now_s();
	for (int k = 0; k < ITER; k++) {
		uint8_t *buf;

		pb_len = protobuf_c_message_get_packed_size(&l.base);
		buf = malloc(pb_len);
		if (!buf || protobuf_c_message_pack(&l.base, buf) != pb_len) {
			fprintf(stderr, "pack failed\n");
			return 1;
		}
		free(buf);
	}
	t_pb = now_s() - t0;

	t0 = now_s();
	for (int k = 0; k < ITER / 4; k++) {
		out = page_jansson(&l);
		jansson_len = out ? strlen(out) : 0;
		free(out);
	}
	t_jansson = (now_s() - t0) * 4;

	printf("DropSample page of %d rows (%d pages each):\n", ROWS, ITER);
	printf("  JSON (pbjson_encode):            %6.0f ns/row, %zu bytes/page\n",
	       t_json * 1e9 / ITER / ROWS, json_len);
	printf("  protobuf (packed_size + pack):   %6.0f ns/row, %zu bytes/page\n",
	       t_pb * 1e9 / ITER / ROWS, pb_len);
	printf("  JSON via jansson tree + dumps:   %6.0f ns/row, %zu bytes/page\n",
	       t_jansson * 1e9 / ITER / ROWS, jansson_len);
	return 0;
}
