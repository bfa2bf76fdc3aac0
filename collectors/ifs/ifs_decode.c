// SPDX-License-Identifier: MIT
/*
 * Pure decoders for In-Field Scan sysfs text and status words (see
 * ifs_decode.h for the layouts and where they come from).
 *
 * Parsed by hand: the inputs are a handful of fixed kernel printf formats
 * ("%#llx", "0x%02x", "none", cpulist "%*pbl") and bit fields of a u64,
 * which no library covers better than a few lines of strtoull.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/ifs/ifs_decode.h"

#define BIT64(n)	  (1ULL << (n))
#define FIELD(v, lo, len) ((unsigned)(((v) >> (lo)) & ((1ULL << (len)) - 1)))

static const char *const test_names[IFS_TEST_MAX] = {
    [IFS_TEST_SCAN] = "scan",
    [IFS_TEST_ARRAY] = "array",
    [IFS_TEST_SBAF] = "sbaf",
};

static const char *const result_names[IFS_RESULT_MAX] = {
    [IFS_RESULT_PASS] = "pass",
    [IFS_RESULT_FAIL] = "fail",
    [IFS_RESULT_UNTESTED] = "untested",
};

struct ifs_code {
	const char *name;
	const char *reason;
	bool retryable;
};

/* Scan error codes, runtest.c enum ifs_status_err_code and can_restart(),
 * plus 6 (see below). */
static const struct ifs_code scan_codes[] = {
    [0x0] = {"no_error", "no error", true},
    [0x1] = {"other_thread_could_not_join", "other thread could not join", true},
    [0x2] = {"interrupted_before_rendezvous", "interrupt occurred prior to scan coordination",
	     true},
    [0x3] = {"power_mgmt_inadequate", "core abort due to a power management condition", true},
    [0x4] = {"invalid_chunk_range", "non-valid chunks in the range", false},
    [0x5] = {"mismatch_arguments_between_threads", "mismatch in arguments between threads", false},
    /* The driver does not retry 6 itself (can_restart), but it is a state
     * of the moment, not of the core: OpenDCDiag retries it. */
    [0x6] = {"core_not_capable_currently", "core not capable of performing scan currently", true},
    [0x7] = {"unassigned_0x7", "unassigned error code 0x7", false},
    [0x8] = {"exceed_threads_concurrent",
	     "exceeded the number of logical processors allowed to scan concurrently", true},
    [0x9] = {"interrupted_during_execution", "interrupt occurred prior to scan start", true},
    [0xA] = {"unassigned_0xa", "unassigned error code 0xA", false},
    [0xB] = {"corrupted_chunk", "scan aborted due to a corrupted image; reload it", false},
};

/* SBAF error codes, runtest.c enum sbaf_status_err_code and sbaf_can_restart(). */
static const struct ifs_code sbaf_codes[] = {
    [0x0] = {"no_error", "no error", true},
    [0x1] = {"other_thread_could_not_join", "other thread could not join", true},
    [0x2] = {"interrupted_before_rendezvous", "interrupt occurred prior to SBAF coordination",
	     true},
    [0x3] = {"unassigned_0x3", "unassigned error code 0x3", false},
    [0x4] = {"invalid_bundle_index", "non-valid SBAF bundles; reload the test image", false},
    [0x5] = {"mismatch_arguments_between_threads", "mismatch in arguments between threads", false},
    [0x6] = {"core_not_capable_currently", "core not capable of performing SBAF currently", true},
    [0x7] = {"unassigned_0x7", "unassigned error code 0x7", false},
    [0x8] = {"exceed_threads_concurrent",
	     "exceeded the number of logical processors allowed to scan concurrently", true},
    [0x9] = {"interrupted_during_execution", "interrupt occurred prior to SBAF start", true},
    [0xA] = {"invalid_program_index", "SBAF program index not valid", false},
    [0xB] = {"corrupted_chunk", "SBAF aborted due to a corrupted chunk", false},
    [0xC] = {"did_not_start", "SBAF operation did not start", false},
};

/*
 * The driver's own codes. It sets them after its internal retries ran out, so
 * the core was busy (interrupts, timeouts), not proven faulty: a later attempt
 * may complete, hence retryable for the scheduler.
 */
static const struct ifs_code sw_timeout = {"sw_timeout", "software timeout during the test", true};
static const struct ifs_code sw_partial = {
    "sw_partial_completion",
    "not all chunks were executed: maximum forward progress retries exceeded", true};
static const struct ifs_code unknown_code = {"unknown", "unknown error code", false};

static const struct ifs_code *code_lookup(enum ifs_test t, unsigned code)
{
	if (code == IFS_ERR_SW_TIMEOUT)
		return &sw_timeout;
	if (code == IFS_ERR_SW_PARTIAL_COMPLETE)
		return &sw_partial;
	if (t == IFS_TEST_SCAN && code < sizeof(scan_codes) / sizeof(scan_codes[0]))
		return &scan_codes[code];
	if (t == IFS_TEST_SBAF && code < sizeof(sbaf_codes) / sizeof(sbaf_codes[0]))
		return &sbaf_codes[code];
	if (t == IFS_TEST_ARRAY && code == 0)
		return &scan_codes[0];
	return &unknown_code;
}

const char *ifs_test_name(enum ifs_test t)
{
	return (unsigned)t < IFS_TEST_MAX ? test_names[t] : "unknown";
}

const char *ifs_result_name(enum ifs_result r)
{
	return (unsigned)r < IFS_RESULT_MAX ? result_names[r] : "unknown";
}

/* Copies s without surrounding white space into buf; -EINVAL if it does not fit. */
static int trim_copy(const char *s, char *buf, size_t len)
{
	size_t n;

	if (!s)
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= len)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

int ifs_device_parse_name(const char *name, int *n)
{
	static const char prefix[] = "intel_ifs_";
	char *end;
	long v;

	if (strncmp(name, prefix, sizeof(prefix) - 1))
		return -EINVAL;
	name += sizeof(prefix) - 1;
	if (!isdigit((unsigned char)*name))
		return -EINVAL;
	errno = 0;
	v = strtol(name, &end, 10);
	if (errno || *end || v < 0 || v > 255)
		return -EINVAL;
	*n = (int)v;
	return 0;
}

int ifs_status_parse(const char *s, enum ifs_result *out)
{
	char buf[16];

	if (trim_copy(s, buf, sizeof(buf)))
		return -EINVAL;
	for (int r = 0; r < IFS_RESULT_MAX; r++) {
		if (!strcmp(buf, result_names[r])) {
			*out = r;
			return 0;
		}
	}
	return -EINVAL;
}

/* Strict unsigned hex or decimal as the kernel prints it; 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *out, bool want_hex)
{
	char buf[32], *end;
	unsigned long long v;

	if (trim_copy(s, buf, sizeof(buf)) || !buf[0] || buf[0] == '-' || buf[0] == '+')
		return -EINVAL;
	/* The kernel's %#llx puts 0x on every number, zero included. */
	if (want_hex && strncasecmp(buf, "0x", 2))
		return -EINVAL;
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int ifs_details_parse(const char *s, uint64_t *out)
{
	return parse_u64(s, out, true);
}

int ifs_min_scan_gap_parse(const char *modalias, unsigned *family, unsigned *model, int64_t *gap_ns)
{
	const char *x = strstr(modalias, "type:x86,ven");

	/* arch_print_cpu_modalias: "x86,ven%04Xfam%04Xmod%04X:feature:" */
	if (!x || sscanf(x, "type:x86,ven%*4xfam%4xmod%4x", family, model) != 2)
		return -EINVAL;
	if (*family == 6 && *model == 0x8f) /* Sapphire Rapids X */
		*gap_ns = 180LL * 1000000000LL;
	else if (*family == 6 && *model == 0xcf) /* Emerald Rapids X */
		*gap_ns = 30LL * 1000000000LL;
	else
		*gap_ns = 1000000000LL;
	return 0;
}

int ifs_image_version_parse(const char *s, bool *loaded, uint32_t *version)
{
	char buf[32];
	uint64_t v;

	if (trim_copy(s, buf, sizeof(buf)))
		return -EINVAL;
	if (!strcmp(buf, "none")) {
		*loaded = false;
		*version = 0;
		return 0;
	}
	if (parse_u64(buf, &v, true) || v > UINT32_MAX)
		return -EINVAL;
	*loaded = true;
	*version = (uint32_t)v;
	return 0;
}

int ifs_batch_parse(const char *s, bool *loaded, unsigned *batch)
{
	char buf[32];
	uint64_t v;

	if (trim_copy(s, buf, sizeof(buf)))
		return -EINVAL;
	if (!strcmp(buf, "none")) {
		*loaded = false;
		*batch = 0;
		return 0;
	}
	if (parse_u64(buf, &v, true) || v > 0xff)
		return -EINVAL;
	*loaded = true;
	*batch = (unsigned)v;
	return 0;
}

static void set_code(struct ifs_details *d, const struct ifs_code *c)
{
	d->error_name = c->name;
	d->reason = c->reason;
	d->retryable = c->retryable;
}

/*
 * Scan: the chunk fields are 8 bits wide on generation 0 and 16 bits on
 * generation 2+; sysfs does not say which generation the CPU is, so a word
 * with anything in bits 16-31 (reserved on gen0) is read as gen2+.
 */
static void decode_scan(uint64_t raw, struct ifs_details *d)
{
	d->wide_chunks = FIELD(raw, 16, 16) != 0;
	if (d->wide_chunks) {
		d->chunk_num = FIELD(raw, 0, 16);
		d->chunk_stop_index = FIELD(raw, 16, 16);
	} else {
		d->chunk_num = FIELD(raw, 0, 8);
		d->chunk_stop_index = FIELD(raw, 8, 8);
	}
	d->error_code = FIELD(raw, 32, 8);
	d->control_error = raw & BIT64(62);
	d->signature_error = raw & BIT64(63);
	set_code(d, code_lookup(IFS_TEST_SCAN, d->error_code));

	/* runtest.c ifs_test_core(): the order of these tests is the driver's. */
	if (d->signature_error) {
		d->result = IFS_RESULT_FAIL;
		d->error_name = "signature_error";
		d->reason = "scan signature mismatch: the core produced a wrong result";
		d->retryable = false;
	} else if (d->control_error) {
		d->result = IFS_RESULT_UNTESTED;
		d->error_name = "control_error";
		d->reason = "scan controller error loading the image; reloading it may help";
		d->retryable = false;
		d->reload = true; /* message_not_tested(): "Reloading the image may fix" */
	} else if (d->error_code) {
		d->result = IFS_RESULT_UNTESTED;
		d->reload = d->error_code == 0xB; /* IFS_CORRUPTED_CHUNK: "Try reloading" */
	} else {
		d->result = IFS_RESULT_PASS;
	}
}

static void decode_array(uint64_t raw, struct ifs_details *d)
{
	d->array_bitmask = (uint32_t)FIELD(raw, 0, 32);
	d->array_bank = FIELD(raw, 32, 16);
	d->ctrl_result = raw & BIT64(63);
	set_code(d, code_lookup(IFS_TEST_ARRAY, 0));
	if (d->ctrl_result) {
		d->result = IFS_RESULT_FAIL;
		d->error_name = "ctrl_result";
		d->reason = "array BIST failed";
		d->retryable = false;
	} else if (d->array_bitmask) {
		/* The driver stops at its 0.5 s timeout with arrays left. */
		d->result = IFS_RESULT_UNTESTED;
		d->error_name = "arrays_remaining";
		d->reason = "array BIST timed out with arrays left to test";
		d->retryable = true;
	} else {
		d->result = IFS_RESULT_PASS;
	}
}

static void decode_sbaf(uint64_t raw, struct ifs_details *d)
{
	d->bundle_idx = FIELD(raw, 0, 9);
	d->pgm_idx = FIELD(raw, 14, 2);
	d->error_code = FIELD(raw, 32, 8);
	d->test_fail = raw & BIT64(61);
	d->sbaf_status = FIELD(raw, 62, 2);
	set_code(d, code_lookup(IFS_TEST_SBAF, d->error_code));

	/* runtest.c ifs_sbaf_test_core(). */
	if (d->sbaf_status == 1 || d->sbaf_status == 3) {
		d->result = IFS_RESULT_FAIL;
		d->error_name = d->sbaf_status == 1 ? "signature_error" : "test_fail";
		d->reason = d->sbaf_status == 1 ? "SBAF signature check failed"
						: "SBAF failed to complete the test";
		d->retryable = false;
	} else if (d->error_code) {
		d->result = IFS_RESULT_UNTESTED;
		/* IFS_SBAF_INVALID_BUNDLE_INDEX ("Reload test image") and
		 * IFS_SBAF_CORRUPTED_CHUNK. */
		d->reload = d->error_code == 0x4 || d->error_code == 0xB;
	} else if (d->sbaf_status == 2) {
		d->result = IFS_RESULT_UNTESTED;
		d->error_name = "interrupted";
		d->reason = "SBAF interrupted";
		d->retryable = true;
	} else {
		/* The driver also says untested when bundles were left, which the
		 * word cannot show; the status file is authoritative. */
		d->result = IFS_RESULT_PASS;
	}
}

void ifs_details_reconcile(struct ifs_details *d, enum ifs_result status)
{
	if (d->test != IFS_TEST_ARRAY || status == d->result)
		return;
	if (status == IFS_RESULT_FAIL && !d->ctrl_result && (d->raw & 1)) {
		d->array_bitmask = 0;
		d->array_bank = 0;
		d->error_name = "array_fail";
		d->reason = "array BIST failed (gen1 status bit 0)";
		d->retryable = false;
	} else if (status == IFS_RESULT_PASS) {
		set_code(d, code_lookup(IFS_TEST_ARRAY, 0));
		d->retryable = false;
	}
	d->result = status;
}

void ifs_details_decode(enum ifs_test t, uint64_t raw, struct ifs_details *out)
{
	memset(out, 0, sizeof(*out));
	out->test = t;
	out->raw = raw;
	switch (t) {
	case IFS_TEST_SCAN:
		decode_scan(raw, out);
		break;
	case IFS_TEST_ARRAY:
		decode_array(raw, out);
		break;
	case IFS_TEST_SBAF:
		decode_sbaf(raw, out);
		break;
	default:
		out->result = IFS_RESULT_UNTESTED;
		set_code(out, &unknown_code);
		out->reason = "unknown test type";
		break;
	}
}

void ifs_write_error_describe(enum ifs_file f, bool at_open, int err, struct ifs_write_error *out)
{
	bool batch = f == IFS_FILE_CURRENT_BATCH;

	memset(out, 0, sizeof(*out));
	out->file = batch ? "current_batch" : "run_test";
	out->name = batch ? "load_error" : "write_error";
	out->reason = batch ? "the image did not load" : "the test did not start";
	if (at_open) {
		if (err == -ENOENT) {
			out->name = batch ? "no_current_batch" : "device_missing";
			out->reason =
			    batch ? "no such file (kernel before 6.2, or the device went away)"
				  : "no such file (the intel_ifs device went away)";
		}
		return;
	}
	switch (err) {
	case -EINTR: /* down_interruptible(&ifs_sem), both files */
		out->name = "interrupted";
		out->reason = "interrupted while waiting for the driver's lock";
		out->retryable = true;
		break;
	case -EINVAL:
		/* run_test: CPU out of range or offline (do_core_test);
		 * current_batch: batch above 0xff or the image refused by
		 * image_sanity_check/validate_ifs_metadata (header version,
		 * size, checksum, CPU signature, batch in the metadata). */
		out->name = batch ? "image_invalid" : "cpu_invalid_or_offline";
		out->reason = batch ? "the image was refused (header, size, checksum, CPU "
				      "signature or metadata)"
				    : "the CPU was refused (offline or out of range)";
		out->batch_bad = batch;
		break;
	case -EIO:
		/* load.c scan_chunks_sanity_check: the CPU refused the scan
		 * hash copy (some causes transient: a copy, reload or test in
		 * progress), the stride invalidation, or a chunk's
		 * authentication (interrupted, or a hash mismatch), or
		 * authenticated only part of the chunks. Only the kernel log
		 * says which; the rotation skips the batch for this lap. */
		if (batch) {
			out->name = "image_load_failed";
			out->reason = "the CPU did not accept the image (scan hash copy, stride "
				      "invalidation or chunk authentication failed; the kernel log "
				      "names the cause, some are transient)";
			out->batch_bad = true;
		}
		break;
	case -ENOENT:
		if (batch) { /* request_firmware_direct */
			out->name = "batch_missing";
			out->reason = "the image file of the batch is missing from "
				      "/lib/firmware/intel/ifs_<N>/";
			out->batch_bad = true;
		}
		break;
	case -EPERM:
		if (!batch) { /* do_core_test: !ifsd->loaded */
			out->name = "no_image";
			out->reason = "no test image loaded on the device";
		}
		break;
	default:
		break;
	}
}

uint64_t ifs_scan_word(unsigned chunk, unsigned stop, unsigned err, bool ctrl, bool sig)
{
	uint64_t w;

	if (chunk > 0xff || stop > 0xff)
		w = (uint64_t)(chunk & 0xffff) | (uint64_t)(stop & 0xffff) << 16;
	else
		w = (uint64_t)chunk | (uint64_t)stop << 8;
	return w | (uint64_t)(err & 0xff) << 32 | (ctrl ? BIT64(62) : 0) | (sig ? BIT64(63) : 0);
}

uint64_t ifs_array_word(uint32_t bitmask, unsigned bank, bool ctrl_result)
{
	return (uint64_t)bitmask | (uint64_t)(bank & 0xffff) << 32 | (ctrl_result ? BIT64(63) : 0);
}

uint64_t ifs_sbaf_word(unsigned bundle, unsigned pgm, unsigned err, bool test_fail,
		       unsigned sbaf_status)
{
	return (uint64_t)(bundle & 0x1ff) | (uint64_t)(pgm & 3) << 14 |
	       (uint64_t)(err & 0xff) << 32 | (test_fail ? BIT64(61) : 0) |
	       (uint64_t)(sbaf_status & 3) << 62;
}

int ifs_cpulist_parse(const char *s, uint64_t *bits, unsigned nbits)
{
	const char *p = s;

	memset(bits, 0, (nbits + 63) / 64 * sizeof(uint64_t));
	while (*p && isspace((unsigned char)*p))
		p++;
	while (*p && !isspace((unsigned char)*p)) {
		unsigned long a, b;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			b = strtoul(p, &end, 10);
		}
		if (b < a)
			return -EINVAL;
		if (b >= nbits)
			return -ERANGE;
		for (unsigned long i = a; i <= b; i++)
			bits[i / 64] |= 1ULL << (i % 64);
		p = end;
		if (*p == ',')
			p++;
		else if (*p && !isspace((unsigned char)*p))
			return -EINVAL;
	}
	while (*p && isspace((unsigned char)*p))
		p++;
	return *p ? -EINVAL : 0;
}
