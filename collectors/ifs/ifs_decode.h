/* SPDX-License-Identifier: MIT */
/*
 * Pure decoders for Intel In-Field Scan sysfs text and status words. No I/O:
 * everything here is unit-tested from strings and integers.
 *
 * The bit layouts are those of the kernel driver
 * (drivers/platform/x86/intel/ifs/ifs.h, runtest.c):
 *
 *   scan (intel_ifs_0), MSR_SCAN_STATUS:
 *	gen0: 0-7 chunk_num, 8-15 chunk_stop_index; gen2+: 0-15, 16-31
 *	32-39 error_code, 62 control_error, 63 signature_error
 *	signature_error -> fail; control_error or error_code -> untested
 *   array BIST gen0 (intel_ifs_1), MSR_ARRAY_BIST:
 *	0-31 arrays still to run, 32-47 bank, 63 ctrl_result
 *	ctrl_result -> fail; arrays left -> untested
 *   SBAF (intel_ifs_2), MSR_SBAF_STATUS:
 *	0-8 bundle_idx, 14-15 pgm_idx, 32-39 error_code, 61 test_fail,
 *	62-63 sbaf_status (0 pass, 1 signature fail, 2 interrupted, 3 test fail)
 *	sbaf_status 1/3 -> fail; error_code or sbaf_status 2 -> untested
 *
 * Driver-made error codes (both scan and SBAF): 0xFD software timeout,
 * 0xFE partial completion (forward-progress retries exhausted).
 */
#ifndef SYSOBS_IFS_DECODE_H
#define SYSOBS_IFS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ifs_test {
	IFS_TEST_SCAN = 0,
	IFS_TEST_ARRAY = 1,
	IFS_TEST_SBAF = 2,
	IFS_TEST_MAX,
};

enum ifs_result {
	IFS_RESULT_PASS = 0,
	IFS_RESULT_FAIL = 1,
	IFS_RESULT_UNTESTED = 2,
	IFS_RESULT_MAX,
};

#define IFS_ERR_SW_TIMEOUT	    0xFD
#define IFS_ERR_SW_PARTIAL_COMPLETE 0xFE

/* Everything one status word says, per test type. Unused fields are 0. */
struct ifs_details {
	enum ifs_test test;
	uint64_t raw;
	enum ifs_result result; /* what the word implies */
	unsigned error_code;
	const char *error_name; /* short snake_case name, never NULL */
	const char *reason;	/* one human sentence, never NULL */
	bool retryable;		/* a later attempt may complete the test */
	bool reload;		/* the driver says: reload the image, then retry */
	/* scan */
	unsigned chunk_num, chunk_stop_index;
	bool wide_chunks; /* gen2+ 16-bit chunk fields detected */
	bool control_error, signature_error;
	/* array BIST gen0 */
	uint32_t array_bitmask;
	unsigned array_bank;
	bool ctrl_result;
	/* SBAF */
	unsigned bundle_idx, pgm_idx, sbaf_status;
	bool test_fail;
};

/* "scan", "array", "sbaf"; "unknown" out of range. */
const char *ifs_test_name(enum ifs_test t);
/* "pass", "fail", "untested" (the kernel's spelling). */
const char *ifs_result_name(enum ifs_result r);
/* Test type from a device directory name "intel_ifs_<N>"; -EINVAL if not one. */
int ifs_device_parse_name(const char *name, int *n);

/* The `status` file: "pass\n" / "fail\n" / "untested\n". 0 or -EINVAL. */
int ifs_status_parse(const char *s, enum ifs_result *out);
/* The `details` file, "%#llx\n" (so 0 reads "0"). 0 or -EINVAL. */
int ifs_details_parse(const char *s, uint64_t *out);

/*
 * The shortest time between two scans of one core the CPU's microcode
 * accepts: a scan inside it ends untested with error 6 ("core not capable
 * currently"). The kernel's IFS selftest (test_ifs.sh,
 * check_cpu_ifs_support_interval_time) documents 180 s on Sapphire Rapids
 * (family 6 model 0x8f), 30 s on Emerald Rapids (0xcf) and 1 s on other
 * models. From devices/system/cpu/modalias ("cpu:type:x86,ven0000fam0006
 * mod008F:feature:..."): the gap in ns, family and model in *family and
 * *model; -EINVAL if the text names no x86 family and model.
 */
int ifs_min_scan_gap_parse(const char *modalias, unsigned *family, unsigned *model,
			   int64_t *gap_ns);
/* `image_version`: "none" -> *loaded = false; "%#x" -> version. 0 or -EINVAL. */
int ifs_image_version_parse(const char *s, bool *loaded, uint32_t *version);
/* `current_batch`: "none" -> *loaded = false; "0x%02x" -> batch. 0 or -EINVAL. */
int ifs_batch_parse(const char *s, bool *loaded, unsigned *batch);

/* Decodes a status word of test type t; always fills out. */
void ifs_details_decode(enum ifs_test t, uint64_t raw, struct ifs_details *out);
/*
 * Squares a decode with the `status` file, which is authoritative. Array
 * BIST has two word layouts the files do not tell apart: gen0 (Sapphire,
 * Emerald, Granite Rapids) fails through ctrl_result (bit 63), gen1
 * (Crestmont-X) through bit 0 of MSR_ARRAY_TEST_STATUS, which gen0 reads as
 * "array 0 left to test". A fail without ctrl_result is therefore gen1's,
 * and a pass is a pass whatever the bitmask says.
 */
void ifs_details_reconcile(struct ifs_details *d, enum ifs_result status);

/* The two files sysobs writes. */
enum ifs_file {
	IFS_FILE_RUN_TEST,
	IFS_FILE_CURRENT_BATCH,
};

/* What a failed write of run_test or current_batch means. */
struct ifs_write_error {
	const char *file;   /* "run_test" or "current_batch" */
	const char *name;   /* snake_case, the row's error_name */
	const char *reason; /* one sentence, without the file */
	bool retryable;	    /* a later attempt may succeed as is (-EINTR) */
	bool batch_bad;	    /* the batch itself cannot load on this host */
};

/*
 * Names the error err (-errno) of opening (at_open) or writing file f, from
 * the driver's code paths: sysfs.c run_test_store/current_batch_store,
 * runtest.c do_core_test, load.c ifs_load_firmware.
 */
void ifs_write_error_describe(enum ifs_file f, bool at_open, int err, struct ifs_write_error *out);

/* Builders used by the fake driver and the tests: the words the hardware
 * would report for a result. */
uint64_t ifs_scan_word(unsigned chunk, unsigned stop, unsigned err, bool ctrl, bool sig);
uint64_t ifs_array_word(uint32_t bitmask, unsigned bank, bool ctrl_result);
uint64_t ifs_sbaf_word(unsigned bundle, unsigned pgm, unsigned err, bool test_fail,
		       unsigned sbaf_status);

/*
 * Linux CPU list ("0-3,8,10-11\n", "" = empty) into a bitmap of nbits bits
 * (bits past nbits are an error). 0, -EINVAL (syntax) or -ERANGE.
 */
int ifs_cpulist_parse(const char *s, uint64_t *bits, unsigned nbits);
static inline bool ifs_cpu_isset(const uint64_t *bits, unsigned cpu)
{
	return bits[cpu / 64] >> (cpu % 64) & 1;
}

#endif
