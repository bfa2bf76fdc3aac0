// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the verdict on ClickHouse's answer to an INSERT
 * (clickhouse_verdict, exporters/clickhouse.c): the input is "STATUS\nBODY",
 * the body kept as the sender keeps it (its first SENDER_RESP_MAX - 1 bytes,
 * NUL-terminated). A 2xx is sent, anything else never; an answer whose body
 * does not start with ClickHouse's "Code: N" (a proxy's, whatever it says
 * further on) goes by its status alone, as sender_verdict_of() says. The
 * seeds are real ClickHouse 18.16 answers (clickhouse-server, HTTP
 * interface, JSONEachRow inserts a missing database or table, bad values,
 * a wrong password, a syntax error) with the status each came with.
 */
#include <ctype.h>

#include "exporters/clickhouse.h"
#include "exporters/sender.h"
#include "tests/fuzz/fuzz_common.h"

static int starts_with_code(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return !strncmp(s, "Code: ", 6) && isdigit((unsigned char)s[6]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char resp[SENDER_RESP_MAX];
	const uint8_t *body;
	enum sender_verdict v;
	long status;
	size_t len;

	fuzz_status_body(data, size, &status, &body, &len);
	if (len > sizeof(resp) - 1)
		len = sizeof(resp) - 1;
	memcpy(resp, body, len);
	resp[len] = '\0';
	v = clickhouse_verdict(status, resp);
	FUZZ_CHECK(v == SENDER_SENT || v == SENDER_RETRY || v == SENDER_REFUSED, "verdict %d", v);
	FUZZ_CHECK((v == SENDER_SENT) == (status >= 200 && status < 300), "status %ld: verdict %d",
		   status, v);
	FUZZ_CHECK(!status ? v == SENDER_RETRY : 1, "no answer: verdict %d", v);
	if (!starts_with_code(resp))
		FUZZ_CHECK(v == sender_verdict_of(status),
			   "status %ld, a body without ClickHouse's code: verdict %d, not %d",
			   status, v, sender_verdict_of(status));
	FUZZ_CHECK(clickhouse_verdict(status, NULL) == sender_verdict_of(status),
		   "status %ld without a body", status);
	return 0;
}
