/* SPDX-License-Identifier: MIT */
/*
 * OTLP/HTTP logs: event rows as an ExportLogsServiceRequest (the protobuf
 * body of a POST to <endpoint>/v1/logs, Content-Type
 * application/x-protobuf), and the receiver's ExportLogsServiceResponse.
 * Pure functions without I/O (the sender calls them); the .protos are
 * exporters/proto/opentelemetry/, written from the published spec.
 *
 * One request = one ResourceLogs (the host's identity) with one ScopeLogs
 * (scope "sysobsd", its version) and one LogRecord per row:
 *   time_unix_nano = observed_time_unix_nano = the row's ts (the time the
 *       collector saw the event; the same bytes on every resend);
 *   severity_number/_text = table->severity(row), INFO without one;
 *   event_name = "sysobs.<table>";
 *   body = the non-NULL columns as logfmt ("saddr=10.0.0.1 dport=443"), for
 *       log UIs that show the body only;
 *   attributes = sysobs.table (string), sysobs.id (int), then one per
 *       non-NULL column under the column's name, typed: int_value, bool_value,
 *       double_value, string_value; a COL_UINT past INT64_MAX (no OTLP type
 *       holds it) is a string_value of its decimal digits. (host, table, id)
 *       with the resource's sysobs.db_id is the row's key for deduplication.
 * Resource attributes, so that a Prometheus-side join works (docs/fleet.md,
 * "OTLP logs"): see otlp_logs.c.
 */
#ifndef SYSOBS_OTLP_LOGS_H
#define SYSOBS_OTLP_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "exporters/export_row.h"

/* The scope name of every record, and service.name when there is no job. */
#define OTLP_SCOPE_NAME "sysobsd"

/*
 * Appends the ExportLogsServiceRequest of rows[0..n) to out; a COL_BLOB
 * column (a packet capture) is a bytes attribute only with EXPORT_F_BLOBS
 * in flags, and never in the body. 0; -ENOMEM;
 * -EINVAL for a row that cannot be encoded (no table or row, a negative
 * ts, a severity outside 1..24) or duplicate external label names; out is
 * left as it was on error.
 */
int otlp_logs_encode(const struct export_row *rows, size_t n, const struct export_identity *id,
		     unsigned flags, struct buf *out);

/*
 * Reads an ExportLogsServiceResponse body (empty: full success) to a
 * request of sent records: the records the receiver rejected into
 * *rejected, within [0, sent] (a negative count or one past the request is
 * the receiver's error: never more counted lost than were sent), and its
 * error_message into msg (printable ASCII, truncated to msglen,
 * NUL-terminated; msg may be NULL), both 0/"" without partial_success. 0,
 * or -EINVAL for a body that does not decode.
 */
int otlp_logs_response(const void *body, size_t len, size_t sent, int64_t *rejected, char *msg,
		       size_t msglen);

/* "DEBUG", "INFO", "WARN", ... for a SeverityNumber 1..24; NULL outside. */
const char *otlp_severity_text(int severity);

#endif
