/* SPDX-License-Identifier: MIT */
/*
 * Content negotiation on the Accept header (RFC 9110 section 12.5.1), for
 * /metrics (text, OpenMetrics, protobuf) and every /api/v1 route (JSON,
 * protobuf). Pure: no allocation, no state, any input.
 */
#ifndef SYSOBS_NEGOTIATE_H
#define SYSOBS_NEGOTIATE_H

#include <stddef.h>

/*
 * Picks the offer the client prefers. offers are media types the server can
 * produce, best first, each possibly with parameters
 * ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;
 * encoding=delimited"). accept is the header value, or NULL.
 *
 * Each offer takes the weight (q) of the most specific media range matching
 * it: a full type/subtype with more parameters beats one with fewer, which
 * beats a subtype wildcard ("text/" then '*'), which beats the full wildcard;
 * among equally specific ranges the highest q counts. A range matches an
 * offer when type and subtype are equal (case-insensitive) or '*', and every
 * parameter of the range is among the offer's: names case-insensitive, values
 * case-sensitive except charset's; quoted values are unquoted first. A
 * parameter named q is the weight wherever it stands; q=0 excludes, a q past
 * 1 counts as 1. Malformed ranges (no subtype, bad characters, unterminated
 * quote, bad q, a '*' type with a real subtype) are skipped; empty elements,
 * empty parameters and blanks are tolerated.
 *
 * Returns the index of the offer with the highest q > 0, the first one on a
 * tie (the server's preference); 0 for a NULL, empty or blank header (if
 * there is an offer); -1 when nothing is acceptable (answer 406).
 */
int http_negotiate(const char *accept, const char *const *offers, size_t n_offers);

#endif
