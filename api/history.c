// SPDX-License-Identifier: MIT
/*
 * The one history handler: every event table's GET route, and the merged
 * /api/v1/events, generated from the tables' descriptors (storage/table.h).
 *
 * Per table, at start: each column is bound to the field of the same name in
 * the table's row message (a column without a field of a compatible type is
 * an error, so the .proto and the descriptor cannot drift), and the query
 * parameters are the paging window plus one per filter (columns sharing a
 * parameter are OR'ed). Per request: parameters are validated against their
 * column's domain (a bad value is a 400 naming what is allowed:
 * api/history_filter.c), the store returns rows as row structs
 * (store_history_page), and each becomes a message in a request arena,
 * encoded once as JSON or protobuf.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/netns_name.h"
#include "api/history.h"
#include "api/history_filter.h"
#include "api/history_pcapng.h"
#include "api/http.h"
#include "api/negotiate.h"
#include "api/pbjson.h"
#include "api/proto/pbmsg.h"
#include "api/proto/sysobs.pb-c.h"
#include "api/query.h"
#include "api/reply.h"
#include "api/schema.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "storage/store.h"
#include "storage/store_history.h"
#include "storage/store_schema.h"
#include "storage/table_value.h"

#define HISTORY_PARAMS_MAX (STORE_FILTERS_MAX + 5)

struct history_table {
	const struct event_table *t;
	struct store *store;
	const ProtobufCFieldDescriptor *f_id, *f_time;
	/* netns_name, served beside an integer column netns (not stored) */
	const ProtobufCFieldDescriptor *f_netns_name;
	const struct event_column *c_netns;
	const ProtobufCFieldDescriptor *fields[64];	   /* per column */
	const ProtobufCFieldDescriptor *f_data, *f_cursor; /* of the list */
	const ProtobufCFieldDescriptor *f_event;	   /* oneof member of Event */
	struct history_params params;
	const char *allowed[HISTORY_PARAMS_MAX + 1];
	const struct event_column *c_stack; /* stacks_route: the "stack" text column */
	const char *stacks_allowed[HISTORY_PARAMS_MAX + 1];
};

struct history {
	struct history_table *tables;
	size_t n_tables;
	struct store *store;
};

static struct history history;

/* ---- columns and fields ---- */

static bool field_fits(const struct event_column *c, const ProtobufCFieldDescriptor *f)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return false;
	switch (c->type) {
	case COL_TEXT:
		return f->type == PROTOBUF_C_TYPE_STRING;
	case COL_BLOB:
		return f->type == PROTOBUF_C_TYPE_BYTES;
	case COL_REAL:
		return f->type == PROTOBUF_C_TYPE_DOUBLE || f->type == PROTOBUF_C_TYPE_FLOAT;
	default:
		return f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES &&
		       f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_DOUBLE &&
		       f->type != PROTOBUF_C_TYPE_FLOAT;
	}
}

/* A field that can be absent: a proto3 optional (a oneof for protoc-c 1.4,
 * a has_ flag later). */
static bool field_optional(const ProtobufCFieldDescriptor *f)
{
	return f->quantifier_offset != 0;
}

int history_check_table(const struct event_table *t, char *err, size_t errlen)
{
	const ProtobufCMessageDescriptor *d = t->message;
	const ProtobufCFieldDescriptor *f;

	if (!d || !t->list_message || !t->route) {
		snprintf(err, errlen, "table %s: no message, list message or route", t->name);
		return -EINVAL;
	}
	f = protobuf_c_message_descriptor_get_field_by_name(d, "id");
	if (!f || f->type != PROTOBUF_C_TYPE_INT64) {
		snprintf(err, errlen, "%s: no int64 field id", d->name);
		return -EINVAL;
	}
	f = protobuf_c_message_descriptor_get_field_by_name(d, "time");
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE ||
	    f->descriptor != &google__protobuf__timestamp__descriptor) {
		snprintf(err, errlen, "%s: no google.protobuf.Timestamp field time", d->name);
		return -EINVAL;
	}
	for (const struct event_column *c = t->cols; c->name; c++) {
		f = protobuf_c_message_descriptor_get_field_by_name(d, c->name);
		if (!f || !field_fits(c, f)) {
			snprintf(err, errlen, "table %s column %s: %s has no %s field of that name",
				 t->name, c->name, d->name, f ? "compatible" : "");
			return -EINVAL;
		}
		/* proto3 bytes are absent when empty: a BLOB's NULL needs no more
		 * (and protoc-c's initializer of an optional bytes does not compile) */
		if (c->null != COL_NOT_NULL && !field_optional(f) && c->type != COL_BLOB) {
			snprintf(err, errlen,
				 "table %s column %s can be NULL: %s.%s must be optional", t->name,
				 c->name, d->name, c->name);
			return -EINVAL;
		}
	}
	f = protobuf_c_message_descriptor_get_field_by_name(t->list_message, "data");
	if (!f || f->label != PROTOBUF_C_LABEL_REPEATED || f->descriptor != d ||
	    !protobuf_c_message_descriptor_get_field_by_name(t->list_message, "next_cursor")) {
		snprintf(err, errlen, "%s: must be {repeated %s data; string next_cursor}",
			 t->list_message->name, d->name);
		return -EINVAL;
	}
	return 0;
}

/* Writes v into a scalar field of m (by the field's own width). */
static void field_set_int(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int64_t v)
{
	void *p = (char *)m + f->offset;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*(int64_t *)p = v;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = v != 0;
		break;
	default: /* 32-bit integers and enums */
		*(int32_t *)p = (int32_t)v;
		break;
	}
}

/* One row struct as its message, in the arena. */
/* The host's name of the row's namespace, read now (names change; the
 * row keeps the inode). */
static void row_netns_name(const struct history_table *ht, struct arena *ar, ProtobufCMessage *m,
			   const void *row)
{
	char name[64];

	if (netns_name_lookup((uint32_t)col_int(ht->c_netns, row), name, sizeof(name)))
		return;
	*(char **)((char *)m + ht->f_netns_name->offset) = arena_strdup(ar, name);
	pbjson_field_set_present(m, ht->f_netns_name);
}

static ProtobufCMessage *row_message(const struct history_table *ht, struct arena *ar, int64_t id,
				     int64_t ts_ns, const void *row)
{
	const ProtobufCMessageDescriptor *d = ht->t->message;
	ProtobufCMessage *m = arena_alloc(ar, d->sizeof_message);
	size_t i = 0;

	if (!m)
		return NULL;
	d->message_init(m);
	field_set_int(m, ht->f_id, id);
	*(Google__Protobuf__Timestamp **)((char *)m + ht->f_time->offset) = pbmsg_time(ar, ts_ns);
	for (const struct event_column *c = ht->t->cols; c->name; c++, i++) {
		const ProtobufCFieldDescriptor *f = ht->fields[i];
		struct col_value v;

		col_value(c, row, &v);
		switch (v.kind) {
		case COLV_NULL:
			continue;
		case COLV_TEXT:
			*(char **)((char *)m + f->offset) = arena_strndup(ar, v.s, v.len);
			break;
		case COLV_BLOB: {
			ProtobufCBinaryData *b = (ProtobufCBinaryData *)((char *)m + f->offset);

			b->data = arena_alloc(ar, v.len ? v.len : 1);
			if (b->data)
				memcpy(b->data, v.s, v.len);
			b->len = v.len;
			break;
		}
		case COLV_REAL:
			if (f->type == PROTOBUF_C_TYPE_FLOAT)
				*(float *)((char *)m + f->offset) = (float)v.d;
			else
				*(double *)((char *)m + f->offset) = v.d;
			break;
		default:
			field_set_int(m, f, v.i);
			break;
		}
		if (field_optional(f))
			pbjson_field_set_present(m, f);
	}
	if (ht->f_netns_name)
		row_netns_name(ht, ar, m, row);
	return ar->oom ? NULL : m;
}

/* ---- one table's route ---- */

struct page_ctx {
	const struct history_table *ht;
	struct arena *ar;
	ProtobufCMessage **rows;
	int64_t *ids;
	size_t n, cap;
	/* pcapng: the row structs and times themselves, not messages */
	bool raw;
	void **raw_rows;
	int64_t *ts;
};

static int page_row(int64_t id, int64_t ts_ns, const void *row, void *arg)
{
	struct page_ctx *x = arg;
	ProtobufCMessage *m;

	if (x->n == x->cap)
		return 0; /* the one extra row only says a next page exists */
	if (x->raw) {
		void *copy = arena_alloc(x->ar, x->ht->t->row_size);

		if (!copy)
			return -ENOMEM;
		memcpy(copy, row, x->ht->t->row_size);
		x->raw_rows[x->n] = copy;
		x->ts[x->n] = ts_ns;
		x->ids[x->n++] = id;
		return 0;
	}
	m = row_message(x->ht, x->ar, id, ts_ns, row);
	if (!m)
		return -ENOMEM;
	x->rows[x->n] = m;
	x->ids[x->n++] = id;
	return 0;
}

/* Runs the page query of ht: rows into x, more = a row follows. */
static int history_query(const struct history_table *ht, const struct query_window *w,
			 const struct store_filter *filters, size_t n_filters, struct page_ctx *x,
			 bool *more)
{
	struct store_page_query q = {
	    .cursor = w->cursor,
	    .start_ns = w->start_ns,
	    .end_ns = w->end_ns,
	    .limit = w->limit + 1,
	    .filters = filters,
	    .n_filters = n_filters,
	};
	int n;

	x->ht = ht;
	x->n = 0;
	x->cap = w->limit;
	x->rows = arena_alloc(x->ar, (w->limit + 1) * sizeof(*x->rows));
	x->ids = arena_alloc(x->ar, (w->limit + 1) * sizeof(*x->ids));
	if (!x->rows || !x->ids)
		return -ENOMEM;
	if (x->raw) {
		x->raw_rows = arena_alloc(x->ar, (w->limit + 1) * sizeof(*x->raw_rows));
		x->ts = arena_alloc(x->ar, (w->limit + 1) * sizeof(*x->ts));
		if (!x->raw_rows || !x->ts)
			return -ENOMEM;
	}
	n = store_history_page(ht->store, ht->t, &q, page_row, x);
	if (n < 0)
		return n;
	*more = (size_t)n > w->limit;
	return 0;
}

static void reply_query_error(struct http_response *res, int enc, int err)
{
	if (err == -EBUSY)
		api_error(res, enc, 503, "unavailable", "no database reader free, retry");
	else if (err == -ETIMEDOUT)
		api_error(res, enc, 503, "query_timeout",
			  "the query ran past [storage] query_timeout: narrow the time window or "
			  "add filters");
	else if (err == -ENOMEM)
		api_error(res, enc, 500, "internal", "out of memory");
	else
		api_error(res, enc, 500, "internal", "reading the database failed");
}

/* Sets list.data and list.next_cursor. */
static void list_fill(ProtobufCMessage *list, const ProtobufCFieldDescriptor *f_data,
		      const ProtobufCFieldDescriptor *f_cursor, ProtobufCMessage **rows, size_t n,
		      int64_t next, struct arena *ar)
{
	*(size_t *)((char *)list + f_data->quantifier_offset) = n;
	*(ProtobufCMessage ***)((char *)list + f_data->offset) = rows;
	if (next > 0)
		*(char **)((char *)list + f_cursor->offset) = arena_printf(ar, "%" PRId64, next);
}

static void history_serve(const struct http_request *req, struct http_response *res, void *arg)
{
	const struct history_table *ht = arg;
	struct store_filter filters[STORE_FILTERS_MAX];
	struct arena ar = {0};
	struct page_ctx x = {.ar = &ar};
	struct query_window w;
	size_t nf = 0;
	bool more = false;
	int enc, err;

	/* A table with a packet capture also answers as pcapng, when asked by
	 * name (JSON stays the default); its errors are JSON. */
	if (history_pcapng_able(ht->t)) {
		static const char *const offers[] = {API_CT_JSON, API_CT_PROTOBUF, API_CT_PCAPNG};

		x.raw = http_negotiate(req->accept, offers, 3) == 2;
	}
	enc = x.raw ? API_JSON : api_encoding(req, res);
	if (enc < 0 || query_params_check(req, ht->allowed, res) ||
	    query_window_parse(req, &w, res))
		return;
	if (history_filters_parse(&ht->params, req, &ar, filters, &nf, res, enc))
		goto out;
	err = history_query(ht, &w, filters, nf, &x, &more);
	if (err) {
		reply_query_error(res, enc, err);
		goto out;
	}
	if (x.raw) {
		struct buf b = {0};
		size_t len;
		char *body;

		err = history_pcapng_page(ht->t, x.raw_rows, x.ids, x.ts, x.n,
					  more && x.n ? x.ids[x.n - 1] : 0, &b);
		body = err ? NULL : buf_steal(&b, &len);
		if (body)
			http_reply_text(res, 200, API_CT_PCAPNG, body, len);
		else
			reply_query_error(res, enc, -ENOMEM);
		buf_free(&b);
		goto out;
	}
	{
		const ProtobufCMessageDescriptor *ld = ht->t->list_message;
		ProtobufCMessage *list = arena_alloc(&ar, ld->sizeof_message);

		if (!list) {
			reply_query_error(res, enc, -ENOMEM);
			goto out;
		}
		ld->message_init(list);
		list_fill(list, ht->f_data, ht->f_cursor, x.rows, x.n,
			  more && x.n ? x.ids[x.n - 1] : 0, &ar);
		if (ar.oom)
			reply_query_error(res, enc, -ENOMEM);
		else
			api_reply(res, 200, enc, list);
	}
out:
	arena_free(&ar);
}

/* ---- <stacks_route>: folded stacks with counts ---- */

#define HISTORY_STACKS_PAGE 1000
#define HISTORY_STACKS_ROWS 100000 /* rows read at most, newest first */

struct stack_count {
	struct hash_node node;
	uint64_t count;
	size_t len;
	char s[];
};

struct stacks_ctx {
	const struct event_column *c;
	struct hash_table h;
	uint64_t rows;
	int64_t last_id;
};

static int stacks_row(int64_t id, int64_t ts_ns, const void *row, void *arg)
{
	struct stacks_ctx *x = arg;
	struct stack_count *e;
	struct col_value v;
	uint64_t h;

	(void)ts_ns;
	x->rows++;
	x->last_id = id;
	col_value(x->c, row, &v);
	if (v.kind != COLV_TEXT)
		return 0;
	h = hash_fnv1a(HASH_FNV1A_INIT, v.s, v.len);
	for (struct hash_node *n = hash_chain(&x->h, h); n; n = n->next) {
		e = hash_entry(n, struct stack_count, node);
		if (n->hash == h && e->len == v.len && !memcmp(e->s, v.s, v.len)) {
			e->count++;
			return 0;
		}
	}
	e = malloc(sizeof(*e) + v.len + 1);
	if (!e)
		return -ENOMEM;
	e->count = 1;
	e->len = v.len;
	memcpy(e->s, v.s, v.len);
	e->s[v.len] = '\0';
	hash_add(&x->h, &e->node, h);
	return 0;
}

static int stack_count_cmp(const void *a, const void *b)
{
	const struct stack_count *x = *(struct stack_count *const *)a;
	const struct stack_count *y = *(struct stack_count *const *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->s, y->s);
}

/* The stacks of every matching row, page after page, until the rows run
 * out or HISTORY_STACKS_ROWS were read (*truncated). */
static int stacks_count(const struct history_table *ht, const struct query_window *w,
			struct store_filter *filters, size_t nf, struct stacks_ctx *x,
			protobuf_c_boolean *truncated)
{
	struct store_page_query q = {.cursor = INT64_MAX,
				     .start_ns = w->start_ns,
				     .end_ns = w->end_ns,
				     .limit = HISTORY_STACKS_PAGE,
				     .filters = filters,
				     .n_filters = nf};

	for (;;) {
		int got = store_history_page(ht->store, ht->t, &q, stacks_row, x);

		if (got < 0)
			return got;
		if ((unsigned)got < HISTORY_STACKS_PAGE)
			return 0;
		if (x->rows >= HISTORY_STACKS_ROWS) {
			*truncated = true;
			return 0;
		}
		q.cursor = x->last_id;
	}
}

/* Folded stacks, one "stack count" line each: flamegraph.pl's input. */
static void stacks_reply_text(struct http_response *res, struct stack_count **all, size_t n)
{
	struct buf b = {0};
	char *body;
	size_t len;

	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s %" PRIu64 "\n", all[i]->s, all[i]->count);
	body = buf_steal(&b, &len);
	if (!body && b.oom)
		reply_query_error(res, API_JSON, -ENOMEM);
	else
		http_reply_text(res, 200, "text/plain; charset=utf-8", body ? body : strdup(""),
				len);
}

static void stacks_reply_list(struct http_response *res, int enc, struct arena *ar,
			      Sysobs__V1__DropStackList *list, struct stack_count **all, size_t n,
			      uint64_t rows)
{
	list->samples = rows;
	list->data = arena_alloc(ar, (n ? n : 1) * sizeof(*list->data));
	for (size_t i = 0; list->data && i < n; i++) {
		Sysobs__V1__DropStack *d = arena_alloc(ar, sizeof(*d));

		if (!d)
			break;
		sysobs__v1__drop_stack__init(d);
		d->stack = all[i]->s;
		d->count = all[i]->count;
		list->data[i] = d;
	}
	list->n_data = n;
	if (ar->oom)
		reply_query_error(res, enc, -ENOMEM);
	else
		api_reply(res, 200, enc, &list->base);
}

/*
 * The stacks of the rows a filter selects in a window, folded, with the
 * number of rows that had each, most first, the first `limit`: a
 * DropStackList, or with Accept: text/plain "stack count" lines (what
 * flamegraph.pl and speedscope read). Reads the newest HISTORY_STACKS_ROWS
 * rows of the window at most (truncated says so).
 */
static void stacks_serve(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const offers[] = {API_CT_JSON, API_CT_PROTOBUF, "text/plain"};
	const struct history_table *ht = arg;
	struct store_filter filters[STORE_FILTERS_MAX];
	struct stacks_ctx x = {.c = ht->c_stack};
	Sysobs__V1__DropStackList list = SYSOBS__V1__DROP_STACK_LIST__INIT;
	struct stack_count **all = NULL;
	struct arena ar = {0};
	struct query_window w;
	size_t nf = 0, n = 0, i;
	struct hash_node *node, *tmp;
	int pick = http_negotiate(req->accept, offers, 3), enc, err = 0;
	bool text = pick == 2;

	enc = text ? API_JSON : api_encoding(req, res);
	if (enc < 0 || query_params_check(req, ht->stacks_allowed, res) ||
	    query_window_parse(req, &w, res))
		return;
	if (history_filters_parse(&ht->params, req, &ar, filters, &nf, res, enc))
		goto out;
	if (hash_init(&x.h, 64)) {
		reply_query_error(res, enc, -ENOMEM);
		goto out;
	}
	err = stacks_count(ht, &w, filters, nf, &x, &list.truncated);
	if (err) {
		reply_query_error(res, enc, err);
		goto out_hash;
	}
	all = malloc((x.h.n ? x.h.n : 1) * sizeof(*all));
	if (!all) {
		reply_query_error(res, enc, -ENOMEM);
		goto out_hash;
	}
	hash_for_each_safe(&x.h, i, node, tmp)
		all[n++] = hash_entry(node, struct stack_count, node);
	qsort(all, n, sizeof(*all), stack_count_cmp);
	if (n > w.limit)
		n = w.limit;
	if (text)
		stacks_reply_text(res, all, n);
	else
		stacks_reply_list(res, enc, &ar, &list, all, n, x.rows);
out_hash:
	free(all);
	hash_for_each_safe(&x.h, i, node, tmp)
		free(hash_entry(node, struct stack_count, node));
	hash_fini(&x.h);
out:
	arena_free(&ar);
}

/* ---- /api/v1/events: every table, merged by id ---- */

/* Each table of collector (every table when NULL) read for its newest
 * w->limit + 1 rows into x[i]: the merge needs no more. The number of
 * tables read, or a negative errno. */
static int events_query(const struct history *h, const struct query_window *w,
			const char *collector, struct page_ctx *x)
{
	struct query_window tw = *w;
	int n = 0;

	tw.limit++;
	for (size_t i = 0; i < h->n_tables; i++) {
		bool more;
		int err;

		if (collector && strcmp(collector, h->tables[i].t->collector))
			continue;
		n++;
		err = history_query(&h->tables[i], &tw, NULL, 0, &x[i], &more);
		if (err)
			return err;
	}
	return n;
}

/* The 400 for a collector with no event table, naming those with one. */
static void events_reply_unknown(const struct history *h, struct http_response *res, int enc,
				 const char *collector)
{
	char known[512] = "";
	size_t off = 0;

	for (size_t i = 0; i < h->n_tables && off < sizeof(known); i++)
		off += (size_t)snprintf(known + off, sizeof(known) - off, "%s%s", i ? ", " : "",
					h->tables[i].t->collector);
	api_error(res, enc, 400, "bad_request",
		  "collector: \"%.64s\" keeps no event history (collectors with events: %s)",
		  collector, known);
}

/* Row message m of table ht as an Event (the oneof member set), in ar. */
static Sysobs__V1__Event *event_wrap(const struct history_table *ht, ProtobufCMessage *row,
				     struct arena *ar)
{
	Sysobs__V1__Event *ev = arena_alloc(ar, sizeof(*ev));

	if (!ev)
		return NULL;
	sysobs__v1__event__init(ev);
	ev->id = *(int64_t *)((char *)row + ht->f_id->offset);
	ev->time = *(Google__Protobuf__Timestamp **)((char *)row + ht->f_time->offset);
	ev->collector = (char *)ht->t->collector;
	ev->table = (char *)ht->t->name;
	*(ProtobufCMessage **)((char *)ev + ht->f_event->offset) = row;
	*(uint32_t *)((char *)ev + ht->f_event->quantifier_offset) = ht->f_event->id;
	return ev;
}

/* The tables' pages x merged by id, newest first, into data: at most want
 * events; how many. pos[] holds each page's next row. */
static size_t events_merge(const struct history *h, const struct page_ctx *x, size_t *pos,
			   struct arena *ar, Sysobs__V1__Event **data, size_t want)
{
	size_t total = 0;

	while (total < want) {
		size_t best = h->n_tables;

		for (size_t i = 0; i < h->n_tables; i++)
			if (pos[i] < x[i].n &&
			    (best == h->n_tables || x[i].ids[pos[i]] > x[best].ids[pos[best]]))
				best = i;
		if (best == h->n_tables)
			break;
		data[total] = event_wrap(&h->tables[best], x[best].rows[pos[best]++], ar);
		if (!data[total])
			break;
		total++;
	}
	return total;
}

static void events_serve(const struct http_request *req, struct http_response *res, void *arg)
{
	static const char *const allowed[] = {"collector", QUERY_WINDOW_PARAMS, NULL};
	const struct history *h = arg;
	Sysobs__V1__EventList list = SYSOBS__V1__EVENT_LIST__INIT;
	struct arena ar = {0};
	struct page_ctx *x;
	struct query_window w;
	const char *collector;
	size_t *pos, total;
	int enc, n;

	enc = api_encoding(req, res);
	if (enc < 0 || query_params_check(req, allowed, res) || query_window_parse(req, &w, res))
		return;
	collector = http_query(req, "collector");
	if (collector && !*collector)
		collector = NULL;
	x = arena_alloc(&ar, h->n_tables * sizeof(*x));
	pos = arena_alloc(&ar, h->n_tables * sizeof(*pos));
	list.data = arena_alloc(&ar, (w.limit + 1) * sizeof(*list.data));
	if (!x || !pos || !list.data) {
		reply_query_error(res, enc, -ENOMEM);
		goto out;
	}
	for (size_t i = 0; i < h->n_tables; i++)
		x[i].ar = &ar;
	n = events_query(h, &w, collector, x);
	if (n < 0) {
		reply_query_error(res, enc, n);
		goto out;
	}
	if (!n) {
		events_reply_unknown(h, res, enc, collector);
		goto out;
	}
	total = events_merge(h, x, pos, &ar, list.data, w.limit + 1);
	if (ar.oom) {
		reply_query_error(res, enc, -ENOMEM);
		goto out;
	}
	list.n_data = total > w.limit ? w.limit : total;
	if (total > w.limit)
		list.next_cursor = arena_printf(&ar, "%" PRId64, list.data[w.limit - 1]->id);
	api_reply(res, 200, enc, &list.base);
out:
	arena_free(&ar);
}

/* ---- registration ---- */

/* The fields of t's messages the handlers fill: id, time, the list's
 * data and next_cursor, the Event member of t's type, and netns_name when
 * t has an integer column netns and the field is an optional string. */
static int history_table_fields(struct history_table *ht, const struct event_table *t, char *err,
				size_t errlen)
{
	const ProtobufCMessageDescriptor *ed = &sysobs__v1__event__descriptor;

	ht->f_id = protobuf_c_message_descriptor_get_field_by_name(t->message, "id");
	ht->f_time = protobuf_c_message_descriptor_get_field_by_name(t->message, "time");
	ht->f_netns_name =
	    protobuf_c_message_descriptor_get_field_by_name(t->message, "netns_name");
	for (const struct event_column *c = t->cols; c->name; c++)
		if (!strcmp(c->name, "netns") && c->type != COL_TEXT && c->type != COL_REAL)
			ht->c_netns = c;
	if (ht->f_netns_name && (!ht->c_netns || ht->f_netns_name->type != PROTOBUF_C_TYPE_STRING ||
				 !field_optional(ht->f_netns_name)))
		ht->f_netns_name = NULL;
	ht->f_data = protobuf_c_message_descriptor_get_field_by_name(t->list_message, "data");
	ht->f_cursor =
	    protobuf_c_message_descriptor_get_field_by_name(t->list_message, "next_cursor");
	for (unsigned k = 0; k < ed->n_fields; k++)
		if (ed->fields[k].type == PROTOBUF_C_TYPE_MESSAGE &&
		    ed->fields[k].descriptor == t->message)
			ht->f_event = &ed->fields[k];
	if (!ht->f_event) {
		snprintf(err, errlen, "table %s: Event has no row field of type %s", t->name,
			 t->message->name);
		return -EINVAL;
	}
	return 0;
}

/* The query parameters each route takes: the filters and the window; the
 * stacks route no cursor (an aggregate). */
static void history_table_allowed(struct history_table *ht)
{
	size_t na = 0;

	for (size_t k = 0; k < ht->params.n; k++)
		ht->allowed[na++] = ht->params.p[k].name;
	ht->allowed[na++] = "start";
	ht->allowed[na++] = "end";
	ht->allowed[na++] = "limit";
	memcpy(ht->stacks_allowed, ht->allowed, na * sizeof(*ht->allowed));
	ht->stacks_allowed[na] = NULL;
	ht->allowed[na++] = "cursor";
	ht->allowed[na] = NULL;
}

static int history_table_init(struct history_table *ht, const struct event_table *t,
			      struct store *s, char *err, size_t errlen)
{
	size_t i = 0;

	if (history_check_table(t, err, errlen))
		return -EINVAL;
	ht->t = t;
	ht->store = s;
	if (history_table_fields(ht, t, err, errlen))
		return -EINVAL;
	for (const struct event_column *c = t->cols; c->name; c++, i++) {
		if (i >= sizeof(ht->fields) / sizeof(ht->fields[0])) {
			snprintf(err, errlen, "table %s: too many columns", t->name);
			return -EINVAL;
		}
		ht->fields[i] =
		    protobuf_c_message_descriptor_get_field_by_name(t->message, c->name);
		if (c->filter != COL_FILTER_NONE &&
		    history_params_add(&ht->params, c, t->name, err, errlen))
			return -EINVAL;
	}
	history_table_allowed(ht);
	if (t->stacks_route) {
		for (const struct event_column *c = t->cols; c->name; c++)
			if (!strcmp(c->name, "stack") && c->type == COL_TEXT)
				ht->c_stack = c;
		if (!ht->c_stack) {
			snprintf(err, errlen, "table %s: a stacks route needs a text column stack",
				 t->name);
			return -EINVAL;
		}
	}
	return 0;
}

int history_routes_register(struct http_server *http, struct store *s,
			    const struct event_table *const *tables)
{
	static const char *const event_columns[] = {"time", "collector", "table", NULL};
	static const struct schema_route events = {
	    .path = "/api/v1/events",
	    .list = &sysobs__v1__event_list__descriptor,
	    .columns = event_columns,
	};
	char err[256];
	size_t n = 0;
	int rc;

	while (tables && tables[n])
		n++;
	history.tables = calloc(n ? n : 1, sizeof(*history.tables));
	if (!history.tables)
		return -ENOMEM;
	history.n_tables = n;
	history.store = s;
	for (size_t i = 0; i < n; i++) {
		struct history_table *ht = &history.tables[i];

		if (history_table_init(ht, tables[i], s, err, sizeof(err))) {
			log_err("http", "history route: %s", err);
			return -EINVAL;
		}
		const struct schema_route sr = {
		    .path = ht->t->route,
		    .collector = ht->t->collector,
		    .list = ht->t->list_message,
		    .columns = ht->t->show,
		    .table = ht->t,
		};

		rc = schema_add(&sr);
		if (!rc)
			rc = http_route(http, "GET", ht->t->route, false, history_serve, ht);
		if (!rc && ht->c_stack)
			rc = http_route(http, "GET", ht->t->stacks_route, false, stacks_serve, ht);
		if (rc) {
			log_err("http", "cannot register GET %s: %s", ht->t->route, strerror(-rc));
			return rc;
		}
	}
	rc = schema_add(&events);
	if (!rc)
		rc = http_route(http, "GET", events.path, false, events_serve, &history);
	if (rc)
		log_err("http", "cannot register GET /api/v1/events: %s", strerror(-rc));
	return rc;
}

void history_routes_free(void)
{
	free(history.tables);
	history.tables = NULL;
	history.n_tables = 0;
}
