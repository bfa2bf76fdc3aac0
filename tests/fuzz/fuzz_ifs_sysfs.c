// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the IFS sysfs text parsers and status-word decoders: the
 * first byte picks the test type, the rest is what a sysfs read returned.
 * Every parser must reject or accept without reading out of bounds, and a
 * decoded word must always name its error and reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/ifs/ifs_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ifs_details d;
	enum ifs_result r;
	uint64_t raw = 0, bits[4];
	uint32_t ver;
	unsigned batch;
	bool loaded;
	char *s;
	int n;

	if (!size)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';

	ifs_status_parse(s, &r);
	ifs_image_version_parse(s, &loaded, &ver);
	ifs_batch_parse(s, &loaded, &batch);
	ifs_cpulist_parse(s, bits, 256);
	ifs_device_parse_name(s, &n);
	if (ifs_details_parse(s, &raw))
		memcpy(&raw, data, size < sizeof(raw) ? size : sizeof(raw));
	ifs_details_decode((enum ifs_test)(data[0] % (IFS_TEST_MAX + 1)), raw, &d);
	if (!d.error_name || !d.reason || (unsigned)d.result >= IFS_RESULT_MAX)
		abort();
	/* Any errno from either file, at open or at write, is named. */
	{
		struct ifs_write_error we;

		ifs_write_error_describe((enum ifs_file)(data[0] & 1), data[0] & 2,
					 -(int)(raw % 200), &we);
		if (!we.file || !we.name || !we.reason)
			abort();
	}
	free(s);
	return 0;
}
