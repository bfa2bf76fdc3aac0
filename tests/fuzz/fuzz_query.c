/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of the REST query-parameter vocabulary (api/query.c) as a
 * history route uses it: the input is a request's decoded arguments, one
 * per line as key=value (a line without '=' is "?key"), at most 64. The
 * route checks them against its allowed list, then parses the window and the
 * step; each step answers 400 with a JSON body or accepts, and an accepted
 * window is ordered and bounded.
 */
#include "api/http.h"
#include "api/query.h"
#include "tests/fuzz/fuzz_common.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const allowed[] = {"collector", QUERY_WINDOW_PARAMS, "step", "name[]",
					      NULL};
	const int64_t now = 1796205600LL * NSEC_PER_SEC;
	const char *args[2 * MAX_ARGS];
	struct http_request req = {.method = "GET", .path = "/api/v1/events", .args = args};
	struct http_response res = {0};
	struct query_window w;
	int64_t step = 0;
	char *s, *line, *next;

	if (size > 8192)
		return 0;
	s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	for (line = s; line && req.n_args < MAX_ARGS; line = next) {
		char *eq;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		eq = strchr(line, '=');
		if (eq)
			*eq++ = '\0';
		args[2 * req.n_args] = line;
		args[2 * req.n_args + 1] = eq ? eq : "";
		req.n_args++;
	}
	if (query_params_check(&req, allowed, &res) == 0) {
		if (query_window_parse_at(&req, now, &w, &res) == 0) {
			FUZZ_CHECK(w.start_ns <= w.end_ns, "start %lld after end %lld",
				   (long long)w.start_ns, (long long)w.end_ns);
			FUZZ_CHECK(w.limit >= 1 && w.limit <= QUERY_LIMIT_MAX, "limit %u", w.limit);
			FUZZ_CHECK(w.cursor >= 1, "cursor %lld", (long long)w.cursor);
			if (query_step_parse(&req, &step, &res) == 0)
				FUZZ_CHECK(step >= 0, "step %lld", (long long)step);
		}
	}
	if (res.status) {
		FUZZ_CHECK(res.status == 400, "status %d", res.status);
		FUZZ_CHECK(res.body && res.len && res.body[0] == '{', "400 without a JSON body");
	}
	free(res.body);
	free(s);
	return 0;
}
