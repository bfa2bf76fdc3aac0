// SPDX-License-Identifier: MIT
/* Fuzz target: drops recordings ([collector.drops] replay = FILE, untrusted
 * input). Any bytes must parse or be refused with a message; a parsed one
 * must hold only items inside the buffer, of the sizes their type says. */
#include <stdint.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/drops.h"
#include "collectors/drops/drops_recfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const uint8_t *buf, size_t size, const uint8_t *p, size_t len)
{
	return p >= buf && p <= buf + size && len <= (size_t)(buf + size - p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drops_rec r;
	char err[256];

	err[0] = '\0';
	if (drops_rec_parse(&r, data, size, err, sizeof(err))) {
		if (!err[0] || strnlen(err, sizeof(err)) == sizeof(err))
			__builtin_trap(); /* a refusal says why */
		return 0;
	}
	for (size_t i = 0; i < r.n; i++) {
		const struct drops_rec_item *it = &r.it[i];

		if (it->data && !inside(data, size, it->data, it->len))
			__builtin_trap();
		if (it->type == DROPS_REC_MAP &&
		    (!inside(data, size, it->key, it->klen) ||
		     it->klen != drops_map_key_size(it->map) ||
		     it->len != drops_map_value_size(it->map) * r.ncpus))
			__builtin_trap();
		if (it->type == DROPS_REC_REASON && (it->len < 1 || it->len > 63))
			__builtin_trap();
	}
	drops_rec_free(&r);
	return 0;
}
