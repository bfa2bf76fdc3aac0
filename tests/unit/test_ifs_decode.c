// SPDX-License-Identifier: MIT
/* Unit tests of the IFS decoders: sysfs text formats, every status-word
 * layout (scan gen0/gen2, array BIST gen0, SBAF) and every error code. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/ifs/ifs_decode.h"

static void test_sysfs_text(void **state)
{
	enum ifs_result r;
	uint64_t v;
	bool loaded;
	uint32_t ver;
	unsigned batch;
	int n;

	assert_int_equal(ifs_status_parse("pass\n", &r), 0);
	assert_int_equal(r, IFS_RESULT_PASS);
	assert_int_equal(ifs_status_parse("fail\n", &r), 0);
	assert_int_equal(r, IFS_RESULT_FAIL);
	assert_int_equal(ifs_status_parse("untested\n", &r), 0);
	assert_int_equal(r, IFS_RESULT_UNTESTED);
	assert_int_equal(ifs_status_parse("passed\n", &r), -EINVAL);
	assert_int_equal(ifs_status_parse("", &r), -EINVAL);

	/* The kernel's %#llx prints zero as "0x0" (glibc's as "0"). */
	v = 1;
	assert_int_equal(ifs_details_parse("0x0\n", &v), 0);
	assert_true(v == 0);
	assert_int_equal(ifs_details_parse("0x8000000000000f05\n", &v), 0);
	assert_true(v == 0x8000000000000f05ULL);
	assert_int_equal(ifs_details_parse("1234\n", &v), -EINVAL);

	/* The microcode's interval between two scans of a core, by model
	 * (test_ifs.sh), from devices/system/cpu/modalias. */
	{
		unsigned fam, model;
		int64_t gap;

		assert_int_equal(ifs_min_scan_gap_parse("cpu:type:x86,ven0000fam0006mod008F:"
							"feature:,0000,0001\n",
							&fam, &model, &gap),
				 0);
		assert_int_equal(fam, 6);
		assert_int_equal(model, 0x8f);
		assert_true(gap == 180000000000LL);
		assert_int_equal(ifs_min_scan_gap_parse("cpu:type:x86,ven0000fam0006mod00CF:"
							"feature:\n",
							&fam, &model, &gap),
				 0);
		assert_true(gap == 30000000000LL);
		assert_int_equal(ifs_min_scan_gap_parse("cpu:type:x86,ven0000fam0006mod00AD:"
							"feature:\n",
							&fam, &model, &gap),
				 0);
		assert_true(gap == 1000000000LL);
		assert_int_equal(
		    ifs_min_scan_gap_parse("cpu:type:aarch64:feature:,0000\n", &fam, &model, &gap),
		    -EINVAL);
	}
	assert_int_equal(ifs_details_parse("0xzz\n", &v), -EINVAL);
	assert_int_equal(ifs_details_parse("-0x1\n", &v), -EINVAL);

	assert_int_equal(ifs_image_version_parse("none\n", &loaded, &ver), 0);
	assert_false(loaded);
	assert_int_equal(ifs_image_version_parse("0x8001\n", &loaded, &ver), 0);
	assert_true(loaded);
	assert_int_equal(ver, 0x8001);
	assert_int_equal(ifs_image_version_parse("nope\n", &loaded, &ver), -EINVAL);

	assert_int_equal(ifs_batch_parse("none\n", &loaded, &batch), 0);
	assert_false(loaded);
	assert_int_equal(ifs_batch_parse("0x02\n", &loaded, &batch), 0);
	assert_true(loaded);
	assert_int_equal(batch, 2);
	assert_int_equal(ifs_batch_parse("0x100\n", &loaded, &batch), -EINVAL);

	assert_int_equal(ifs_device_parse_name("intel_ifs_0", &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(ifs_device_parse_name("intel_ifs_2", &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ifs_device_parse_name("intel_ifs_", &n), -EINVAL);
	assert_int_equal(ifs_device_parse_name("intel_ifs_1x", &n), -EINVAL);
	assert_int_equal(ifs_device_parse_name("intel_pmt", &n), -EINVAL);
}

static void test_scan_layout(void **state)
{
	struct ifs_details d;

	/* gen0: chunk fields are bytes 0 and 1. */
	ifs_details_decode(IFS_TEST_SCAN, 0xf10, &d);
	assert_int_equal(d.result, IFS_RESULT_PASS);
	assert_int_equal(d.chunk_num, 0x10);
	assert_int_equal(d.chunk_stop_index, 0x0f);
	assert_false(d.wide_chunks);
	assert_string_equal(d.error_name, "no_error");

	/* bit 63: signature error -> fail, not retryable. */
	ifs_details_decode(IFS_TEST_SCAN, 0x8000000000000f05ULL, &d);
	assert_int_equal(d.result, IFS_RESULT_FAIL);
	assert_true(d.signature_error);
	assert_false(d.control_error);
	assert_int_equal(d.chunk_num, 5);
	assert_false(d.retryable);
	assert_string_equal(d.error_name, "signature_error");

	/* bit 62: control error -> untested, not retryable. */
	ifs_details_decode(IFS_TEST_SCAN, 1ULL << 62, &d);
	assert_int_equal(d.result, IFS_RESULT_UNTESTED);
	assert_true(d.control_error);
	assert_string_equal(d.error_name, "control_error");

	/* signature error wins over control error, as in the driver. */
	ifs_details_decode(IFS_TEST_SCAN, 3ULL << 62, &d);
	assert_int_equal(d.result, IFS_RESULT_FAIL);

	/* gen2: 16-bit chunk fields. */
	ifs_details_decode(IFS_TEST_SCAN, 0x01230456ULL, &d);
	assert_true(d.wide_chunks);
	assert_int_equal(d.chunk_num, 0x0456);
	assert_int_equal(d.chunk_stop_index, 0x0123);
	assert_true(ifs_scan_word(0x456, 0x123, 0, false, false) == 0x01230456ULL);

	/* error code in bits 32-39. */
	ifs_details_decode(IFS_TEST_SCAN, 0x100000f03ULL, &d);
	assert_int_equal(d.result, IFS_RESULT_UNTESTED);
	assert_int_equal(d.error_code, 1);
	assert_string_equal(d.error_name, "other_thread_could_not_join");
	assert_true(d.retryable);
}

static void test_scan_codes(void **state)
{
	static const struct {
		unsigned code;
		const char *name;
		bool retryable;
	} want[] = {
	    {0x1, "other_thread_could_not_join", true},
	    {0x2, "interrupted_before_rendezvous", true},
	    {0x3, "power_mgmt_inadequate", true},
	    {0x4, "invalid_chunk_range", false},
	    {0x5, "mismatch_arguments_between_threads", false},
	    {0x6, "core_not_capable_currently", true}, /* issue 13: OpenDCDiag retries it */
	    {0x7, "unassigned_0x7", false},
	    {0x8, "exceed_threads_concurrent", true},
	    {0x9, "interrupted_during_execution", true},
	    {0xA, "unassigned_0xa", false},
	    {0xB, "corrupted_chunk", false},
	    {0xC, "unknown", false},
	    {0xFD, "sw_timeout", true},
	    {0xFE, "sw_partial_completion", true},
	    {0xFF, "unknown", false},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct ifs_details d;

		ifs_details_decode(IFS_TEST_SCAN, ifs_scan_word(3, 15, want[i].code, false, false),
				   &d);
		assert_int_equal(d.result, IFS_RESULT_UNTESTED);
		assert_int_equal(d.error_code, want[i].code);
		assert_string_equal(d.error_name, want[i].name);
		assert_int_equal(d.retryable, want[i].retryable);
		assert_non_null(d.reason);
	}
}

static void test_array_layout(void **state)
{
	struct ifs_details d;

	ifs_details_decode(IFS_TEST_ARRAY, 0, &d);
	assert_int_equal(d.result, IFS_RESULT_PASS);

	ifs_details_decode(IFS_TEST_ARRAY, 0x80000002000000f0ULL, &d);
	assert_int_equal(d.result, IFS_RESULT_FAIL);
	assert_true(d.ctrl_result);
	assert_int_equal(d.array_bank, 2);
	assert_int_equal(d.array_bitmask, 0xf0);
	assert_string_equal(d.error_name, "ctrl_result");
	assert_true(ifs_array_word(0xf0, 2, true) == 0x80000002000000f0ULL);

	/* arrays left, no ctrl_result: the driver timed out -> untested. */
	ifs_details_decode(IFS_TEST_ARRAY, ifs_array_word(0x300, 1, false), &d);
	assert_int_equal(d.result, IFS_RESULT_UNTESTED);
	assert_int_equal(d.array_bitmask, 0x300);
	assert_int_equal(d.array_bank, 1);
	assert_true(d.retryable);
	assert_string_equal(d.error_name, "arrays_remaining");

	/* The status file decides. gen1 (Crestmont-X): bit 0 of the word is
	 * the fail bit, which gen0 would read as array 0 left. */
	ifs_details_decode(IFS_TEST_ARRAY, 0x1, &d);
	ifs_details_reconcile(&d, IFS_RESULT_FAIL);
	assert_int_equal(d.result, IFS_RESULT_FAIL);
	assert_string_equal(d.error_name, "array_fail");
	assert_false(d.retryable);
	assert_int_equal(d.array_bitmask, 0);
	/* gen0 fail: already a fail, unchanged */
	ifs_details_decode(IFS_TEST_ARRAY, 0x80000002000000f0ULL, &d);
	ifs_details_reconcile(&d, IFS_RESULT_FAIL);
	assert_string_equal(d.error_name, "ctrl_result");
	assert_int_equal(d.array_bitmask, 0xf0);
	/* gen1 pass (word 0), and a bitmask the status says passed */
	ifs_details_decode(IFS_TEST_ARRAY, 0x300, &d);
	ifs_details_reconcile(&d, IFS_RESULT_PASS);
	assert_int_equal(d.result, IFS_RESULT_PASS);
	assert_string_equal(d.error_name, "no_error");
	assert_false(d.retryable);
	/* agreeing results and other tests are left alone */
	ifs_details_decode(IFS_TEST_ARRAY, ifs_array_word(0x300, 1, false), &d);
	ifs_details_reconcile(&d, IFS_RESULT_UNTESTED);
	assert_string_equal(d.error_name, "arrays_remaining");
	ifs_details_decode(IFS_TEST_SCAN, ifs_scan_word(5, 5, 0, false, true), &d);
	ifs_details_reconcile(&d, IFS_RESULT_FAIL);
	assert_string_equal(d.error_name, "signature_error");
}

static void test_sbaf_layout(void **state)
{
	struct ifs_details d;
	uint64_t w = ifs_sbaf_word(0x1ff, 3, 0xC, true, 3);

	assert_true(w == (0x1ffULL | 3ULL << 14 | 0xCULL << 32 | 1ULL << 61 | 3ULL << 62));
	ifs_details_decode(IFS_TEST_SBAF, w, &d);
	assert_int_equal(d.bundle_idx, 0x1ff);
	assert_int_equal(d.pgm_idx, 3);
	assert_int_equal(d.error_code, 0xC);
	assert_true(d.test_fail);
	assert_int_equal(d.sbaf_status, 3);
	assert_int_equal(d.result, IFS_RESULT_FAIL);
	assert_string_equal(d.error_name, "test_fail");

	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(7, 0, 0, false, 0), &d);
	assert_int_equal(d.result, IFS_RESULT_PASS);
	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(3, 1, 0, false, 1), &d);
	assert_int_equal(d.result, IFS_RESULT_FAIL);
	assert_string_equal(d.error_name, "signature_error");
	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(2, 0, 0, false, 2), &d);
	assert_int_equal(d.result, IFS_RESULT_UNTESTED);
	assert_true(d.retryable);

	static const struct {
		unsigned code;
		const char *name;
		bool retryable;
	} want[] = {
	    {0x1, "other_thread_could_not_join", true},
	    {0x2, "interrupted_before_rendezvous", true},
	    {0x3, "unassigned_0x3", false},
	    {0x4, "invalid_bundle_index", false},
	    {0x5, "mismatch_arguments_between_threads", false},
	    {0x6, "core_not_capable_currently", true},
	    {0x7, "unassigned_0x7", false},
	    {0x8, "exceed_threads_concurrent", true},
	    {0x9, "interrupted_during_execution", true},
	    {0xA, "invalid_program_index", false},
	    {0xB, "corrupted_chunk", false},
	    {0xC, "did_not_start", false},
	    {0xFD, "sw_timeout", true},
	    {0xFE, "sw_partial_completion", true},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(2, 0, want[i].code, false, 0), &d);
		assert_int_equal(d.result, IFS_RESULT_UNTESTED);
		assert_string_equal(d.error_name, want[i].name);
		assert_int_equal(d.retryable, want[i].retryable);
	}
}

/* Issue 13: a failed write is named from the file and the errno it came
 * from (sysfs.c, load.c, runtest.c), and says which file. */
static void test_write_errors(void **state)
{
	static const struct {
		enum ifs_file f;
		bool at_open;
		int err;
		const char *name;
		bool retryable, batch_bad;
	} cases[] = {
	    /* run_test_store: kstrtouint / cpu >= nr_cpu_ids, do_core_test: offline */
	    {IFS_FILE_RUN_TEST, false, -EINVAL, "cpu_invalid_or_offline", false, false},
	    /* do_core_test: !ifsd->loaded */
	    {IFS_FILE_RUN_TEST, false, -EPERM, "no_image", false, false},
	    /* down_interruptible(&ifs_sem) */
	    {IFS_FILE_RUN_TEST, false, -EINTR, "interrupted", true, false},
	    /* no run_test at all: the device went away */
	    {IFS_FILE_RUN_TEST, true, -ENOENT, "device_missing", false, false},
	    {IFS_FILE_RUN_TEST, false, -EIO, "write_error", false, false},
	    /* ifs_load_firmware: request_firmware_direct */
	    {IFS_FILE_CURRENT_BATCH, false, -ENOENT, "batch_missing", false, true},
	    /* batch > 0xff, image_sanity_check, validate_ifs_metadata */
	    {IFS_FILE_CURRENT_BATCH, false, -EINVAL, "image_invalid", false, true},
	    /* hash copy or chunk authentication */
	    {IFS_FILE_CURRENT_BATCH, false, -EIO, "image_load_failed", false, true},
	    {IFS_FILE_CURRENT_BATCH, false, -EINTR, "interrupted", true, false},
	    /* 5.19 has `reload`, not current_batch */
	    {IFS_FILE_CURRENT_BATCH, true, -ENOENT, "no_current_batch", false, false},
	};
	unsigned wrong = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ifs_write_error e;
		const char *file = cases[i].f == IFS_FILE_RUN_TEST ? "run_test" : "current_batch";

		ifs_write_error_describe(cases[i].f, cases[i].at_open, cases[i].err, &e);
		if (strcmp(e.name, cases[i].name) || strcmp(e.file, file) ||
		    e.retryable != cases[i].retryable || e.batch_bad != cases[i].batch_bad) {
			print_message("%s %s %d: %s (retryable %d, batch_bad %d), want %s\n", file,
				      cases[i].at_open ? "open" : "write", cases[i].err, e.name,
				      e.retryable, e.batch_bad, cases[i].name);
			wrong++;
		}
		assert_non_null(e.reason);
	}
	print_message("%u of %zu write errors mislabelled\n", wrong,
		      sizeof(cases) / sizeof(cases[0]));
	assert_int_equal(wrong, 0);
}

/* Issue 13: which words ask for an image reload (runtest.c: scan
 * message_not_tested "Reloading the image may fix this issue" for
 * control_error, IFS_CORRUPTED_CHUNK "Try reloading"; SBAF
 * IFS_SBAF_INVALID_BUNDLE_INDEX "Reload test image", IFS_SBAF_CORRUPTED_CHUNK). */
static void test_reload_words(void **state)
{
	struct ifs_details d;

	ifs_details_decode(IFS_TEST_SCAN, ifs_scan_word(0, 15, 0, true, false), &d);
	assert_true(d.reload);
	ifs_details_decode(IFS_TEST_SCAN, ifs_scan_word(3, 15, 0xB, false, false), &d);
	assert_true(d.reload);
	assert_string_equal(d.error_name, "corrupted_chunk");
	/* A signature error is a failed core, not an image problem. */
	ifs_details_decode(IFS_TEST_SCAN, ifs_scan_word(3, 15, 0, true, true), &d);
	assert_false(d.reload);
	ifs_details_decode(IFS_TEST_SCAN, ifs_scan_word(3, 15, 0x4, false, false), &d);
	assert_false(d.reload);
	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(2, 0, 0x4, false, 0), &d);
	assert_true(d.reload);
	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(2, 0, 0xB, false, 0), &d);
	assert_true(d.reload);
	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(2, 0, 0xA, false, 0), &d);
	assert_false(d.reload);
	ifs_details_decode(IFS_TEST_SBAF, ifs_sbaf_word(2, 0, 0xB, false, 1), &d);
	assert_false(d.reload); /* signature fail wins, as in the driver */
	ifs_details_decode(IFS_TEST_ARRAY, 0x8000000000000000ULL, &d);
	assert_false(d.reload);
}

static void test_cpulist(void **state)
{
	uint64_t b[2];

	assert_int_equal(ifs_cpulist_parse("0-3,8,10-11\n", b, 128), 0);
	assert_true(b[0] == 0xd0f);
	assert_int_equal(ifs_cpulist_parse("", b, 128), 0);
	assert_true(b[0] == 0 && b[1] == 0);
	assert_int_equal(ifs_cpulist_parse("64,127", b, 128), 0);
	assert_true(b[1] == (1ULL | 1ULL << 63));
	assert_int_equal(ifs_cpulist_parse("128", b, 128), -ERANGE);
	assert_int_equal(ifs_cpulist_parse("3-1", b, 128), -EINVAL);
	assert_int_equal(ifs_cpulist_parse("1,,2", b, 128), -EINVAL);
	assert_int_equal(ifs_cpulist_parse("a", b, 128), -EINVAL);
	assert_int_equal(ifs_cpulist_parse("1-", b, 128), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sysfs_text),	 cmocka_unit_test(test_scan_layout),
	    cmocka_unit_test(test_scan_codes),	 cmocka_unit_test(test_array_layout),
	    cmocka_unit_test(test_sbaf_layout),	 cmocka_unit_test(test_cpulist),
	    cmocka_unit_test(test_write_errors), cmocka_unit_test(test_reload_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
