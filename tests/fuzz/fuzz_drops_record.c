// SPDX-License-Identifier: MIT
/* Fuzz target: ring-buffer records of the drops collector. Any bytes must
 * decode or be refused, and a decoded sample must hold terminated strings. */
#include <linux/types.h>
#include <stdint.h>
#include <string.h>

#include "collectors/drops/drops_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drop_sample s;

	if (drops_record_decode(data, size, &s) == 0) {
		if (strnlen(s.saddr, sizeof(s.saddr)) == sizeof(s.saddr) ||
		    strnlen(s.daddr, sizeof(s.daddr)) == sizeof(s.daddr) ||
		    strnlen(s.ifname, sizeof(s.ifname)) == sizeof(s.ifname))
			__builtin_trap();
		(void)drops_protocol_name(s.l3_proto, s.l4_proto);
	}
	return 0;
}
