// SPDX-License-Identifier: MIT
/*
 * The ifs_scans history table (ifs_table.h): columns, indexes, and a scan
 * result decoded into a row.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/proto/sysobs.pb-c.h"
#include "collectors/ifs/ifs_table.h"

static const char *const ifs_tests[] = {"scan", "array", "sbaf", NULL};
static const struct col_domain ifs_test_domain = {.values = ifs_tests};
static const char *const ifs_statuses[] = {"pass", "fail", "untested", "error", NULL};
static const struct col_domain ifs_status_domain = {.values = ifs_statuses};
static const char *const ifs_requesters[] = {"scheduler", "api", "external", NULL};
static const struct col_domain ifs_requester_domain = {.values = ifs_requesters};

#define IFS_COL(f, t, n, ...) COL(struct ifs_row, f, t, n, __VA_ARGS__)
static const struct event_column ifs_cols[] = {
    IFS_COL(duration_ns, COL_INT, COL_NULL_NEG),
    IFS_COL(device, COL_TEXT, COL_NULL_EMPTY),
    IFS_COL(test, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ENUM, .domain = &ifs_test_domain),
    IFS_COL(cpu, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ),
    IFS_COL(core, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ),
    IFS_COL(package, COL_INT, COL_NULL_NEG, .filter = COL_FILTER_EQ),
    IFS_COL(status, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ENUM,
	    .domain = &ifs_status_domain, .param = "result"),
    IFS_COL(details, COL_TEXT, COL_NULL_EMPTY),
    IFS_COL(error_code, COL_INT, COL_NULL_NEG),
    IFS_COL(error_name, COL_TEXT, COL_NULL_EMPTY),
    IFS_COL(retryable, COL_INT, COL_NULL_NEG),
    IFS_COL(chunk_num, COL_INT, COL_NULL_NEG),
    IFS_COL(chunk_stop_index, COL_INT, COL_NULL_NEG),
    IFS_COL(image_version, COL_TEXT, COL_NULL_EMPTY),
    IFS_COL(batch, COL_INT, COL_NULL_NEG),
    IFS_COL(requested_by, COL_TEXT, COL_NULL_EMPTY, .filter = COL_FILTER_ENUM,
	    .domain = &ifs_requester_domain),
    IFS_COL(scan_id, COL_INT, COL_NULL_ZERO, .filter = COL_FILTER_EQ, .fmin = 1),
    IFS_COL(reason, COL_TEXT, COL_NULL_EMPTY),
    /* Once one JSON text column "decoded", which older databases keep. */
    IFS_COL(control_error, COL_INT, COL_NULL_NEG),
    IFS_COL(signature_error, COL_INT, COL_NULL_NEG),
    IFS_COL(array_bitmask, COL_INT, COL_NULL_NEG),
    IFS_COL(array_bank, COL_INT, COL_NULL_NEG),
    IFS_COL(ctrl_result, COL_INT, COL_NULL_NEG),
    IFS_COL(bundle_idx, COL_INT, COL_NULL_NEG),
    IFS_COL(pgm_idx, COL_INT, COL_NULL_NEG),
    IFS_COL(sbaf_status, COL_INT, COL_NULL_NEG),
    IFS_COL(test_fail, COL_INT, COL_NULL_NEG),
    IFS_COL(error_file, COL_TEXT, COL_NULL_EMPTY),
    IFS_COL(write_errno, COL_INT, COL_NULL_NEG),
    IFS_COL(reloaded, COL_INT, COL_NULL_NEG),
    {0},
};

static const char *const ifs_core_cols[] = {"core", "id", NULL};
static const char *const ifs_scan_id_cols[] = {"scan_id", NULL};
static const struct table_index ifs_indexes[] = {
    {.name = "core", .columns = ifs_core_cols},
    {.name = "scan_id", .columns = ifs_scan_id_cols},
    {0},
};

/*
 * How grave a scan result is for the event exporters: a core that failed
 * its test is the hardware fault IFS exists to find (ERROR); untested (the
 * core was not tested, e.g. interrupted or out of its batch) and error (no
 * test ran: the write or the status read failed) say nothing of the core
 * and need a look (WARN); pass is INFO.
 */
static int ifs_scans_severity(const void *row)
{
	const struct ifs_row *r = row;

	if (!strcmp(r->status, "fail"))
		return EVENT_SEVERITY_ERROR;
	if (!strcmp(r->status, "untested") || !strcmp(r->status, "error"))
		return EVENT_SEVERITY_WARN;
	return EVENT_SEVERITY_INFO;
}

static const char *const ifs_scan_show[] = {
    "time",   "scan_id", "test",	 "package",    "core", "cpu",
    "status", "details", "requested_by", "error_name", NULL,
};

const struct event_table ifs_scans_table = {
    .name = "ifs_scans",
    .collector = "ifs",
    .route = "/api/v1/ifs/scans",
    .help = "every scan result with its decoded status",
    .cols = ifs_cols,
    .row_size = sizeof(struct ifs_row),
    .indexes = ifs_indexes,
    .message = &sysobs__v1__ifs_scan__descriptor,
    .list_message = &sysobs__v1__ifs_scan_list__descriptor,
    .show = ifs_scan_show,
    .severity = ifs_scans_severity,
};

_Static_assert(sizeof(struct ifs_row) <= EVENT_ROW_MAX, "ifs_row too large for the store queue");

/* A row with every nullable number NULL (-1); scan_id 0 is NULL too. */
void ifs_row_init(struct ifs_row *row)
{
	memset(row, 0, sizeof(*row));
	row->duration_ns = -1;
	row->cpu = row->core = row->package = -1;
	row->error_code = row->retryable = -1;
	row->write_errno = -1;
	row->reloaded = -1;
	row->chunk_num = row->chunk_stop_index = row->batch = -1;
	row->array_bitmask = -1;
	row->control_error = row->signature_error = -1;
	row->array_bank = row->ctrl_result = -1;
	row->bundle_idx = row->pgm_idx = row->sbaf_status = row->test_fail = -1;
}

/* The decoded status word into the row: the fields of its test. */
void ifs_row_fill_decoded(struct ifs_row *row, const struct ifs_details *d)
{
	row->error_code = (int32_t)d->error_code;
	snprintf(row->error_name, sizeof(row->error_name), "%s", d->error_name);
	snprintf(row->reason, sizeof(row->reason), "%s", d->reason);
	row->retryable = d->retryable;
	switch (d->test) {
	case IFS_TEST_SCAN:
		row->chunk_num = (int32_t)d->chunk_num;
		row->chunk_stop_index = (int32_t)d->chunk_stop_index;
		row->control_error = d->control_error;
		row->signature_error = d->signature_error;
		break;
	case IFS_TEST_ARRAY:
		row->array_bitmask = d->array_bitmask;
		row->array_bank = (int32_t)d->array_bank;
		row->ctrl_result = d->ctrl_result;
		break;
	case IFS_TEST_SBAF:
		row->bundle_idx = (int32_t)d->bundle_idx;
		row->pgm_idx = (int32_t)d->pgm_idx;
		row->sbaf_status = (int32_t)d->sbaf_status;
		row->test_fail = d->test_fail;
		break;
	default:
		break;
	}
}

/* The decoded fields of a row as text for an alert annotation
 * ("chunk_num=5 chunk_stop_index=5 control_error=0 signature_error=1"). */
void ifs_row_decoded_text(const struct ifs_row *row, char *buf, size_t len)
{
	const struct {
		const char *name;
		int64_t v;
		bool hex;
	} f[] = {
	    {"chunk_num", row->chunk_num},
	    {"chunk_stop_index", row->chunk_stop_index},
	    {"control_error", row->control_error},
	    {"signature_error", row->signature_error},
	    {"array_bitmask", row->array_bitmask, true},
	    {"array_bank", row->array_bank},
	    {"ctrl_result", row->ctrl_result},
	    {"bundle_idx", row->bundle_idx},
	    {"pgm_idx", row->pgm_idx},
	    {"sbaf_status", row->sbaf_status},
	    {"test_fail", row->test_fail},
	};
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]) && off < len; i++) {
		int n;

		if (f[i].v < 0)
			continue;
		n = snprintf(buf + off, len - off, f[i].hex ? "%s%s=%#" PRIx64 : "%s%s=%" PRId64,
			     off ? " " : "", f[i].name, f[i].v);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}
