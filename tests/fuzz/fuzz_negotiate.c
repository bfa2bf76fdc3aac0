// SPDX-License-Identifier: MIT
/*
 * Fuzz target of content negotiation (api/negotiate.c, http_negotiate) and
 * of the Accept-Encoding check (api/http_gzip.c, http_accepts_gzip): the
 * input's first line is an Accept header value, the rest an Accept-Encoding
 * value. The choice is an offer's index or -1 (406), a blank header picks
 * the first offer, and adding a low-weight "*" range to an acceptable
 * header never makes it unacceptable; gzip is never chosen by a header that
 * names neither gzip nor "*". The seeds are the headers Prometheus 2.42
 * scrapes with (recorded, native histograms off and on), curl's, a
 * browser's, and edge cases of weights and quoting.
 */
#include <ctype.h>
#include <strings.h>

#include "api/http_internal.h"
#include "api/negotiate.h"
#include "api/reply.h"
#include "tests/fuzz/fuzz_common.h"

static const char *const metrics_offers[] = {
    "text/plain;version=0.0.4",
    "application/openmetrics-text;version=1.0.0",
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
};
static const char *const api_offers[] = {API_CT_JSON, API_CT_PROTOBUF, "application/x-pcapng"};

static void check_accept(const char *accept, char *wild)
{
	const char *const *sets[] = {metrics_offers, api_offers};

	for (size_t s = 0; s < 2; s++) {
		for (size_t n = 1; n <= 3; n++) {
			int r = http_negotiate(accept, sets[s], n);

			FUZZ_CHECK(r >= -1 && r < (int)n, "offer %d of %zu", r, n);
			FUZZ_CHECK(accept[strspn(accept, " \t")] || r == 0, "blank header: %d", r);
			if (r >= 0 && wild)
				FUZZ_CHECK(http_negotiate(wild, sets[s], n) >= 0,
					   "acceptable until \", */*;q=0.001\" was added");
		}
	}
	FUZZ_CHECK(http_negotiate(accept, api_offers, 0) == -1, "an offer out of none");
}

static void check_encoding(const char *ae)
{
	bool gz = http_accepts_gzip(ae);
	char *low = strdup(ae);

	if (!low)
		return;
	for (char *p = low; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	FUZZ_CHECK(!gz || strstr(low, "gzip") || strchr(low, '*'), "gzip chosen by \"%s\"", ae);
	free(low);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *nl, *wild;
	size_t alen;

	if (size > 8192)
		return 0;
	s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	alen = strlen(s);
	wild = malloc(alen + 32);
	if (wild)
		snprintf(wild, alen + 32, "%s, */*;q=0.001", s);
	check_accept(s, wild);
	check_encoding(nl ? nl + 1 : "");
	free(wild);
	free(s);
	return 0;
}
