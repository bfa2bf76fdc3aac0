/* SPDX-License-Identifier: MIT */
/*
 * The filter parameters of a history route (api/history.c): built at start
 * from the table's filterable columns (columns sharing a parameter are
 * OR'ed), and per request validated against their column's domain into
 * store filters (a bad value is a 400 naming what is allowed).
 */
#ifndef SYSOBS_API_HISTORY_FILTER_H
#define SYSOBS_API_HISTORY_FILTER_H

#include <stddef.h>

#include "storage/store_history.h"
#include "storage/table.h"

struct arena;
struct http_request;
struct http_response;

struct history_param {
	const char *name;
	const struct event_column *cols[STORE_FILTER_COLS_MAX];
	size_t n_cols;
};

struct history_params {
	struct history_param p[STORE_FILTERS_MAX];
	size_t n;
};

/* Column c (of table `table`, for errors) into the parameter it filters by
 * (c->param, else its name), made if new. 0, or -EINVAL with err set: too
 * many parameters, or columns of different kinds under one name. */
int history_params_add(struct history_params *ps, const struct event_column *c, const char *table,
		       char *err, size_t errlen);

/* Every parameter of ps the request names, parsed into filters[*nf] (text
 * in ar). 0, or -EINVAL with the 400 in res (encoded as enc). */
int history_filters_parse(const struct history_params *ps, const struct http_request *req,
			  struct arena *ar, struct store_filter *filters, size_t *nf,
			  struct http_response *res, int enc);

#endif
