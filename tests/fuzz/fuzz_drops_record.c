// SPDX-License-Identifier: MIT
/* Fuzz target: ring-buffer records of the drops collector. Any bytes must
 * decode or be refused, a decoded sample must hold terminated strings, and
 * its capture and stack must turn into a cooked frame and a folded line
 * within their buffers. */
#include <linux/types.h>
#include <stdint.h>
#include <string.h>

#include "collectors/drops/drops_capture.h"
#include "collectors/drops/drops_decode.h"
#include "collectors/drops/drops_stack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drop_sample s;

	if (drops_record_decode(data, size, &s) == 0) {
		if (strnlen(s.saddr, sizeof(s.saddr)) == sizeof(s.saddr) ||
		    strnlen(s.daddr, sizeof(s.daddr)) == sizeof(s.daddr) ||
		    strnlen(s.ifname, sizeof(s.ifname)) == sizeof(s.ifname))
			__builtin_trap();
		uint8_t frame[DROPS_SLL2_HDR_LEN + 256];
		char folded[512];
		uint32_t orig;
		size_t n;

		(void)drops_protocol_name(s.l3_proto, s.l4_proto);
		n = drops_capture_sll2(&s, frame, sizeof(frame), &orig);
		if (n > sizeof(frame) || (n && orig < n))
			__builtin_trap();
		drops_stack_fold(NULL, s.stack, s.stack_n, folded, sizeof(folded));
		if (strnlen(folded, sizeof(folded)) == sizeof(folded))
			__builtin_trap();
	}
	return 0;
}
