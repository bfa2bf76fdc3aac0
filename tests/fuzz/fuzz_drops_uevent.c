// SPDX-License-Identifier: MIT
/* Fuzz target: kernel uevent datagrams of the drops collector's module
 * watch. Any bytes parse or are refused; a module event names a module of
 * [A-Za-z0-9_-], terminated within the buffer. */
#include <stdint.h>
#include <string.h>

#include "collectors/drops/drops_uevent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[DROPS_UEVENT_NAME_MAX];
	int kind = drops_uevent_parse(data, size, name);
	size_t n = strnlen(name, sizeof(name));

	if (n == sizeof(name))
		__builtin_trap();
	if (kind == DROPS_UEVENT_MODULE_ADD || kind == DROPS_UEVENT_MODULE_REMOVE) {
		if (!n ||
		    strspn(name,
			   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n)
			__builtin_trap();
	} else if (n) {
		__builtin_trap();
	}
	return 0;
}
