// SPDX-License-Identifier: MIT
/*
 * Fuzz target of the OTLP/HTTP reply to a log export (otlp_logs_response,
 * exporters/otlp_logs.c): the input is the reply body, an
 * ExportLogsServiceResponse in protobuf. It decodes or is refused; the
 * records counted rejected stay within [0, records sent] and the error
 * message is printable within its buffer. The seeds are encoded with
 * `protoc --encode` from the real proto (exporters/proto/opentelemetry):
 * full success (empty and an empty partial_success), partial successes as
 * the collector's exporterhelper writes them, a count past the request and
 * a negative one, a message with a line break.
 */
#include <errno.h>

#include "exporters/otlp_logs.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sent[] = {0, 1, 500};
	char msg[160];
	int64_t rej;

	for (size_t i = 0; i < sizeof(sent) / sizeof(sent[0]); i++) {
		int rc = otlp_logs_response(data, size, sent[i], &rej, msg, sizeof(msg));

		FUZZ_CHECK(rc == 0 || rc == -EINVAL, "%d", rc);
		FUZZ_CHECK(rej >= 0 && (uint64_t)rej <= sent[i], "%lld rejected of %zu sent",
			   (long long)rej, sent[i]);
		FUZZ_CHECK(fuzz_printable(msg, sizeof(msg)), "message not printable");
		FUZZ_CHECK(!rc || (!rej && !msg[0]), "refused body with a count or message");
		FUZZ_CHECK(size || (!rc && !rej), "empty body not a full success");
	}
	return 0;
}
