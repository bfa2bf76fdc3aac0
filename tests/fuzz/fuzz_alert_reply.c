// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the IFS alert push's reply handling (am_reply,
 * exporters/alertmanager.c): the input is "STATUS\nBODY", the body as the
 * push keeps it (its first AM_REPLY_MAX bytes, not NUL-terminated).
 * A 2xx succeeds with no message, anything else fails with a non-empty
 * printable one within the buffer, at any buffer size. The seeds are real
 * Alertmanager 0.25 answers (prometheus-alertmanager: an alert accepted, a
 * bad label name, endsAt before startsAt, no labels, a bad time, malformed
 * JSON, an unknown path, the v1 API) with their status, and nginx's 502 page.
 */
#include <errno.h>

#include "exporters/alertmanager.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = {160, 8, 1};
	const uint8_t *body;
	char msg[160];
	long status;
	size_t len;

	fuzz_status_body(data, size, &status, &body, &len);
	if (len > AM_REPLY_MAX)
		len = AM_REPLY_MAX;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int rc = am_reply(status, (const char *)body, len, msg, sizes[i]);

		FUZZ_CHECK(rc == ((status >= 200 && status <= 299) ? 0 : -EIO), "status %ld: %d",
			   status, rc);
		FUZZ_CHECK(fuzz_printable(msg, sizes[i]), "message not printable within %zu",
			   sizes[i]);
		FUZZ_CHECK(rc ? msg[0] || sizes[i] == 1 : !msg[0], "status %ld: message \"%s\"",
			   status, msg);
	}
	return 0;
}
