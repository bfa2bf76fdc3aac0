// SPDX-License-Identifier: MIT
/*
 * The filter parameters of a history route: see api/history_filter.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/arena.h"
#include "api/history_filter.h"
#include "api/http.h"
#include "api/query.h"
#include "api/reply.h"

static void domain_list(const struct col_domain *d, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (d->list) {
		d->list(buf, len);
		return;
	}
	for (size_t i = 0; d->values && d->values[i] && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", d->values[i]);

		if (n < 0 || (size_t)n >= len - off) {
			buf[off] = '\0'; /* never half a name */
			break;
		}
		off += (size_t)n;
	}
}

/* An enum filter: v among the domain's names (any case) or its lookup's
 * canonical form. */
static int filter_parse_enum(const struct history_param *hp, const char *v, struct arena *ar,
			     struct store_filter *f, struct http_response *res, int enc)
{
	const struct col_domain *d = hp->cols[0]->domain;
	char canon[128], allowed[16384];

	if (d->values) {
		for (size_t i = 0; d->values[i]; i++) {
			if (!strcasecmp(v, d->values[i])) {
				f->text = d->values[i];
				return 0;
			}
		}
	} else if (d->lookup && !d->lookup(v, canon, sizeof(canon))) {
		f->text = arena_strdup(ar, canon);
		return 0;
	}
	domain_list(d, allowed, sizeof(allowed));
	api_error(res, enc, 400, "bad_request", "%s: unknown value \"%.64s\"; allowed: %s",
		  hp->name, v, allowed);
	return -EINVAL;
}

/* An address filter: an IPv4 or IPv6 address, in its canonical text. */
static int filter_parse_addr(const struct history_param *hp, const char *v, struct arena *ar,
			     struct store_filter *f, struct http_response *res, int enc)
{
	unsigned char a[16];
	char canon[INET6_ADDRSTRLEN];

	if (inet_pton(AF_INET, v, a) == 1    ? !inet_ntop(AF_INET, a, canon, sizeof(canon))
	    : inet_pton(AF_INET6, v, a) == 1 ? !inet_ntop(AF_INET6, a, canon, sizeof(canon))
					     : true) {
		api_error(res, enc, 400, "bad_request",
			  "%s: not an IPv4 or IPv6 address: \"%.64s\"", hp->name, v);
		return -EINVAL;
	}
	f->text = arena_strdup(ar, canon);
	return 0;
}

/* A token filter: as query_parse_token() reads it. */
static int filter_parse_token(const struct history_param *hp, const char *v, struct store_filter *f,
			      struct http_response *res, int enc)
{
	uint32_t tok;

	if (query_parse_token(v, &tok)) {
		api_error(res, enc, 400, "bad_request",
			  "%s: expected a token as printed (8 hex digits, e.g. d114306a), "
			  "0x and 1 to 8 hex digits, or a decimal up to 4294967295; got "
			  "\"%.64s\"",
			  hp->name, v);
		return -EINVAL;
	}
	f->value = tok;
	return 0;
}

/* The largest value an integer filter on c takes: its fmax, else what its
 * type and width hold. */
static int64_t column_filter_max(const struct event_column *c)
{
	if (c->fmax)
		return c->fmax;
	return c->type == COL_BOOL   ? 1
	       : c->size >= 8	     ? INT64_MAX
	       : c->type == COL_UINT ? (int64_t)((1ULL << (8 * c->size)) - 1)
				     : (int64_t)((1ULL << (8 * c->size - 1)) - 1);
}

/* An integer filter: a plain decimal (no sign +, no blank) in the column's
 * range. */
static int filter_parse_int(const struct history_param *hp, const char *v, struct store_filter *f,
			    struct http_response *res, int enc)
{
	const struct event_column *c = hp->cols[0];
	int64_t lo = c->fmin, hi = column_filter_max(c);
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (!*v || *end || errno || v[0] == '+' || v[0] == ' ' || n < lo || n > hi) {
		api_error(res, enc, 400, "bad_request",
			  "%s: expected an integer from %" PRId64 " to %" PRId64 ", got \"%.64s\"",
			  hp->name, lo, hi, v);
		return -EINVAL;
	}
	f->value = n;
	return 0;
}

/* Validates and normalises one filter value for the columns of hp into f.
 * 0, or -EINVAL with a 400 in res. */
static int filter_parse(const struct history_param *hp, const char *v, struct arena *ar,
			struct store_filter *f, struct http_response *res, int enc)
{
	const struct event_column *c = hp->cols[0];

	memcpy(f->cols, hp->cols, sizeof(f->cols));
	f->n_cols = hp->n_cols;
	switch (c->filter) {
	case COL_FILTER_ENUM:
		return filter_parse_enum(hp, v, ar, f, res, enc);
	case COL_FILTER_ADDR:
		return filter_parse_addr(hp, v, ar, f, res, enc);
	case COL_FILTER_TOKEN:
		return filter_parse_token(hp, v, f, res, enc);
	default:
		break;
	}
	if (c->type != COL_TEXT)
		return filter_parse_int(hp, v, f, res, enc);
	if (!*v || strlen(v) >= c->size) {
		api_error(res, enc, 400, "bad_request", "%s: 1 to %u characters", hp->name,
			  (unsigned)c->size - 1);
		return -EINVAL;
	}
	f->text = v;
	return 0;
}

int history_params_add(struct history_params *ps, const struct event_column *c, const char *table,
		       char *err, size_t errlen)
{
	const char *pname = c->param ? c->param : c->name;
	struct history_param *hp = NULL;

	for (size_t k = 0; k < ps->n; k++)
		if (!strcmp(ps->p[k].name, pname))
			hp = &ps->p[k];
	if (!hp) {
		if (ps->n == STORE_FILTERS_MAX) {
			snprintf(err, errlen, "table %s: too many filters", table);
			return -EINVAL;
		}
		hp = &ps->p[ps->n++];
		hp->name = pname;
	}
	if (hp->n_cols == STORE_FILTER_COLS_MAX ||
	    (hp->n_cols && (hp->cols[0]->filter != c->filter || hp->cols[0]->type != c->type))) {
		snprintf(err, errlen, "table %s: parameter %s: columns of different kinds", table,
			 pname);
		return -EINVAL;
	}
	hp->cols[hp->n_cols++] = c;
	return 0;
}

int history_filters_parse(const struct history_params *ps, const struct http_request *req,
			  struct arena *ar, struct store_filter *filters, size_t *nf,
			  struct http_response *res, int enc)
{
	for (size_t i = 0; i < ps->n; i++) {
		const char *v = http_query(req, ps->p[i].name);

		if (!v)
			continue;
		memset(&filters[*nf], 0, sizeof(filters[*nf]));
		if (filter_parse(&ps->p[i], v, ar, &filters[*nf], res, enc))
			return -EINVAL;
		(*nf)++;
	}
	return 0;
}
