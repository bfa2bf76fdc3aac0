/* SPDX-License-Identifier: MIT */
/*
 * Shared by the files of the sysobs CLI, nothing else: cli.c (options, the
 * command table, fetching a route with --follow), cli_table.c (any list,
 * as GET /api/v1/schema describes it), cli_print.c (the printers of the
 * routes that are no flat table, and the one-line errors) and cli_http.c (one
 * request to the agent with libcurl). Calls go cli.c -> cli_http.c ->
 * cli_print.c, and cli.c -> cli_print.c.
 */
#ifndef SYSOBS_CLI_INTERNAL_H
#define SYSOBS_CLI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api/proto/sysobs.pb-c.h"

#define MAX_PARAMS  32
#define MAX_BODY    (64u << 20) /* an answer larger than this is refused */
#define FOLLOW_POLL 1		/* seconds between --follow polls */

enum output { OUT_TABLE, OUT_JSON, OUT_PROTOBUF };

struct opts {
	const char *server;
	enum output output;
	const char *since, *until, *limit, *step;
	bool follow;
	const char *ca_file, *cert_file, *key_file, *user, *password_file;
	bool insecure;
	unsigned timeout_s;
	const char *stuck_after;	/* status: /readyz?stuck_after=, or NULL */
	const char *accept;		/* an Accept header of its own (drops pcap), or NULL */
	const char *params[MAX_PARAMS]; /* "key=value", URL-escaped when sent */
	size_t n_params;
};

struct body {
	char *data;
	size_t len;
};

/* The printers of the routes that are no flat table (nested rows, a
 * summary above them; every other list is printed by cli_table.c from GET
 * /api/v1/schema): each returns the rows printed (-1 when
 * the answer does not decode) and, for history lists, the newest id seen
 * (for --follow). Rows come newest first; printing oldest first reads like
 * a log and lets --follow append. Only rows with id > after_id are printed. */
typedef size_t (*print_fn)(const struct body *b, bool header, int64_t after_id, int64_t *max_id);

/* cli_print.c */
void err_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A non-2xx answer: the agent's ErrorResponse in one line. */
void report_error(long code, const struct body *b, bool json);
const char *str(const char *s); /* s, or "-" when NULL or empty */
size_t print_mptcp_connections(const struct body *b, bool header, int64_t after_id,
			       int64_t *max_id);
size_t print_ifs_cores(const struct body *b, bool header, int64_t after_id, int64_t *max_id);
size_t print_series(const struct body *b, bool header, int64_t after_id, int64_t *max_id);

/* cli_pcap.c: --follow of drops pcap, successive pcapng pages merged into
 * one stream (the first section header, each interface once, each packet
 * once by the id in its comment). */
#define PCAP_FOLLOW_IFS 256
struct pcap_follow {
	bool started;
	int64_t max_id;
	size_t n_ifs;
	void *ifs[PCAP_FOLLOW_IFS]; /* interface blocks written, as written */
	uint32_t if_len[PCAP_FOLLOW_IFS];
};
/* Writes what is new in one page to out: packets written, -1 when the page
 * does not parse as the agent's pcapng. */
long pcap_follow_merge(struct pcap_follow *f, const uint8_t *in, size_t len, FILE *out);
void pcap_follow_free(struct pcap_follow *f);

/* cli_http.c: one request (GET, or POST of a protobuf body) of server+path
 * with the query parameters; the body lands in *out. The HTTP status, or
 * -1 after a one-line transport error. */
long http_call(const struct opts *o, const char *path, const char *const *query, size_t n_query,
	       bool json, const void *post, size_t post_len, struct body *out);

#endif
