/* SPDX-License-Identifier: MIT */
/*
 * The ifs_scans history table: one row per scan result, its columns for the
 * store, and the decoding of a result into a row (ifs_table.c). The row is
 * what the API's generic history route serves and what alerts quote.
 */
#ifndef SYSOBS_IFS_TABLE_H
#define SYSOBS_IFS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "collectors/ifs/ifs_decode.h"
#include "storage/table.h"

struct ifs_row {
	int64_t duration_ns;	    /* -1: unknown (unattributed) */
	int64_t scan_id;	    /* 0: none */
	int32_t cpu, core, package; /* -1: unknown */
	int32_t error_code;	    /* -1: none (write failed) */
	int32_t retryable;
	int32_t chunk_num, chunk_stop_index; /* -1: not a scan */
	int32_t batch;			     /* -1: none */
	char device[16];
	char test[8];
	char status[12]; /* pass, fail, untested, error */
	char details[24];
	char error_name[40];
	char image_version[16];
	char requested_by[12]; /* scheduler, api, external */
	char reason[160];
	char error_file[16]; /* the file whose write failed: run_test, current_batch */
	int32_t write_errno; /* its errno; -1: none */
	int32_t reloaded;    /* 0/1: the image was reloaded right before; -1 unknown */
	/* The status word decoded, per test (-1: another test's, or no word). */
	int64_t array_bitmask;				     /* array: arrays still to test */
	int32_t control_error, signature_error;		     /* scan: 0/1 */
	int32_t array_bank, ctrl_result;		     /* array */
	int32_t bundle_idx, pgm_idx, sbaf_status, test_fail; /* sbaf */
};

extern const struct event_table ifs_scans_table;

/* A row with every nullable number NULL (-1); scan_id 0 is NULL too. */
void ifs_row_init(struct ifs_row *row);
/* The decoded status word into the row: the fields of its test. */
void ifs_row_fill_decoded(struct ifs_row *row, const struct ifs_details *d);
/* The decoded fields of a row as text for an alert annotation
 * ("chunk_num=5 chunk_stop_index=5 control_error=0 signature_error=1"). */
void ifs_row_decoded_text(const struct ifs_row *row, char *buf, size_t len);

#endif
