/* SPDX-License-Identifier: MIT */
/*
 * Event table descriptors: the one place a collector spells its columns.
 *
 * A collector declares each history table as a struct event_table: the table
 * name, the C row struct it submits, and one struct event_column per column
 * (name, type, offset and size in the row, how NULL is encoded, and how the
 * API may filter on it). From this:
 *   - the store generates CREATE TABLE / ALTER TABLE ADD COLUMN, the INSERT
 *     statement and the binds (storage/store_schema.c);
 *   - the API generates the history route: its query, its filters with their
 *     domains, and the row message in JSON and protobuf (api/history.c); a
 *     column's name is also the name of its field in the table's protobuf
 *     message (api/proto/sysobs.proto), which a unit test checks.
 *
 * Every table also has "id INTEGER PRIMARY KEY" (one agent-wide sequence, so
 * /api/v1/events can merge tables by id) and "ts INTEGER NOT NULL" (unix ns),
 * filled by the store; they are not listed in cols.
 *
 * Types only: no function here, so collectors can declare tables without
 * linking the store.
 */
#ifndef SYSOBS_TABLE_H
#define SYSOBS_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct ProtobufCMessageDescriptor;

enum col_type {
	COL_INT,  /* signed integer, size 1, 2, 4 or 8 */
	COL_UINT, /* unsigned integer, size 1, 2, 4 or 8 */
	COL_BOOL, /* bool */
	COL_REAL, /* double */
	COL_TEXT, /* char[size], NUL-terminated (or filling size) */
	COL_BLOB, /* struct col_blob: a byte count, then the bytes (size = 2 + capacity);
		   * a BLOB in SQLite, bytes in protobuf, base64 in JSON; left out by
		   * the exporters. No filter. */
};

/* The row field of a COL_BLOB column of capacity n: len bytes of data. */
#define COL_BLOB_FIELD(n)                                                                          \
	struct {                                                                                   \
		uint16_t len;                                                                      \
		uint8_t data[n];                                                                   \
	}

/* How a missing value is written in the row struct. */
enum col_null {
	COL_NOT_NULL,	/* always a value */
	COL_NULL_NEG,	/* COL_INT: a negative value is NULL */
	COL_NULL_ZERO,	/* numbers: 0 is NULL */
	COL_NULL_EMPTY, /* COL_TEXT: "" is NULL; COL_BLOB: no bytes is NULL */
};

enum col_filter {
	COL_FILTER_NONE,
	COL_FILTER_EQ,	   /* ?param=N (numbers, within [fmin, fmax]) or exact text */
	COL_FILTER_ENUM,   /* ?param=NAME from domain, case-insensitive */
	COL_FILTER_ADDR,   /* ?param=IPv4 or IPv6 address, normalised as inet_ntop prints */
	COL_FILTER_PREFIX, /* ?param=TEXT: text columns that start with it */
	COL_FILTER_TOKEN,  /* ?param=a 32-bit id as printed in hex (8 digits, or 0x...)
			    * or in decimal (query_parse_token) */
};

/* The values a COL_FILTER_ENUM column can hold. */
struct col_domain {
	const char *const *values; /* static set, NULL-terminated; or NULL */
	/* Dynamic set (e.g. drop reasons from the running kernel's BTF): writes
	 * the canonical spelling of s into out and returns 0, or -ENOENT. */
	int (*lookup)(const char *s, char *out, size_t len);
	/* Dynamic set: the allowed values, comma-separated, for an error. */
	void (*list)(char *buf, size_t len);
};

struct event_column {
	const char *name; /* SQL column and protobuf field */
	enum col_type type;
	uint16_t offset, size; /* in the row struct */
	enum col_null null;
	enum col_filter filter;
	const char *param;		 /* query parameter; NULL = name. Columns sharing a
					  * parameter are OR'ed (addr = saddr or daddr). */
	const struct col_domain *domain; /* COL_FILTER_ENUM */
	int64_t fmin, fmax;		 /* COL_FILTER_EQ on numbers; both 0 = type range */
	const char *otel; /* its attribute under OpenTelemetry's semantic conventions in
			   * OTLP exports (k8s.pod.name, ...); NULL = sysobs's name */
};

/* Column initialisers: COL(struct row, field, type, null[, .filter = ...]). */
#define COL(row, field, t, n, ...)                                                                 \
	{                                                                                          \
		.name = #field, .type = (t), .offset = offsetof(row, field),                       \
		.size = sizeof(((row *)0)->field), .null = (n), __VA_ARGS__                        \
	}

/*
 * The Kubernetes columns of a row whose struct has char pod[], pod_namespace[]
 * and pod_uid[] (the sizes of struct sink_pod's): the names the agent's name
 * service gave the row's pod when it was recorded, filtered by ?pod=,
 * ?pod_namespace=, ?pod_uid=, exported under OpenTelemetry's names.
 */
#define COL_POD(row)                                                                               \
	COL(row, pod, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_EQ, .otel = "k8s.pod.name"),  \
	    COL(row, pod_namespace, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_EQ,             \
		.otel = "k8s.namespace.name"),                                                     \
	    COL(row, pod_uid, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_EQ,                   \
		.otel = "k8s.pod.uid")

#define EVENT_ROW_MAX 1792 /* largest row struct a table may declare */

/*
 * Typed conditions on a table's columns, the only query language a collector
 * speaks (sink_latest(), partial indexes): the store compiles them to SQL
 * (bound parameters; literals in an index's own predicate), the recording
 * sink of the unit tests evaluates them in memory (table_filter_match() in
 * storage/table_value.h). A condition array is {0}-terminated (column NULL)
 * and all its conditions must hold.
 */
enum row_op {
	ROW_EQ,	      /* the column equals values[0] */
	ROW_IN,	      /* the column equals one of values[0, n_values) */
	ROW_NOT_NULL, /* the column has a value (not its NULL sentinel); no values */
};

/* A value compared with a column: text for COL_TEXT columns, num otherwise
 * (COL_UINT past INT64_MAX as the store keeps it, wrapped). */
struct row_value {
	int64_t num;
	const char *text;
};
#define ROW_NUM(v)                                                                                 \
	{                                                                                          \
		.num = (v)                                                                         \
	}
#define ROW_TEXT(v)                                                                                \
	{                                                                                          \
		.text = (v)                                                                        \
	}

struct row_cond {
	const char *column; /* one of the table's cols */
	enum row_op op;
	const struct row_value *values;
	size_t n_values;
};

/* Condition initialisers: ROW_COND_IN("status", array of struct row_value). */
#define ROW_COND_EQ(col, v)                                                                        \
	{                                                                                          \
		.column = (col), .op = ROW_EQ, .values = (v), .n_values = 1                        \
	}
#define ROW_COND_IN(col, v)                                                                        \
	{                                                                                          \
		.column = (col), .op = ROW_IN, .values = (v),                                      \
		.n_values = sizeof(v) / sizeof((v)[0])                                             \
	}
#define ROW_COND_NOT_NULL(col)                                                                     \
	{                                                                                          \
		.column = (col), .op = ROW_NOT_NULL                                                \
	}

/*
 * An index beside the one on ts: <table>_<name> on columns (NULL-terminated
 * names of cols, or "id"/"ts"). With where, a partial index of the rows
 * matching it: the store adds that predicate to every query whose filter
 * implies it, so SQLite may use the index (a query's own conditions are
 * bound parameters, which SQLite cannot match against an index's).
 */
struct table_index {
	const char *name;
	const char *const *columns;
	const struct row_cond *where;
};

/*
 * One data migration: column takes names[v] where the integer column from
 * holds v (0 <= v < n_names, names[v] not NULL); other rows keep theirs.
 * (The one kind the tables have needed: a name column added beside a code.)
 */
struct table_migration {
	const char *column; /* COL_TEXT */
	const char *from;   /* COL_INT or COL_UINT */
	const char *const *names;
	size_t n_names;
};

struct event_table {
	const char *name;		 /* SQL table; also the migrations component */
	const char *collector;		 /* owner */
	const char *route;		 /* GET path of its history, e.g. "/api/v1/drops/samples" */
	const char *help;		 /* one line for the route list */
	const struct event_column *cols; /* {0}-terminated */
	size_t row_size;		 /* <= EVENT_ROW_MAX */
	/* Extra indexes, {0}-terminated or NULL. An index on ts is always made. */
	const struct table_index *indexes;
	/* Data migrations of an existing table (columns are added from cols by
	 * themselves), {0}-terminated, append only: each one is a version. */
	const struct table_migration *migrations;
	/* The protobuf message of one row (api/proto/sysobs.proto), and the
	 * list envelope {repeated row data = 1; string next_cursor = 2}. */
	const struct ProtobufCMessageDescriptor *message;
	const struct ProtobufCMessageDescriptor *list_message;
	/* GET route of the folded-stack aggregate of the text column "stack"
	 * (api/history.c), with the table's filters; NULL: none. */
	const char *stacks_route;
	/* The fields of message readers show by default (GET /api/v1/schema:
	 * the CLI's and the status page's columns), in order, NULL-terminated;
	 * NULL: every scalar field. */
	const char *const *show;
	/* Retention overriding [storage] retention; 0 = that one. */
	uint64_t retention_ms;
	/* How grave one row is for the event exporters, as an OpenTelemetry
	 * SeverityNumber (EVENT_SEVERITY_*); NULL: every row is INFO. */
	int (*severity)(const void *row);
};

/* OpenTelemetry SeverityNumber values the tables use. */
enum event_severity {
	EVENT_SEVERITY_DEBUG = 5,
	EVENT_SEVERITY_INFO = 9,
	EVENT_SEVERITY_WARN = 13,
	EVENT_SEVERITY_ERROR = 17,
};

#endif
