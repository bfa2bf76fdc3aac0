// SPDX-License-Identifier: MIT
/* A message of sysobs.proto by its full name (api/proto/messages.h). */
#include <string.h>

#include "api/proto/messages.h"

const ProtobufCMessageDescriptor *sysobs_message_find(const char *full_name)
{
	for (const ProtobufCMessageDescriptor *const *d = sysobs_messages; *d; d++)
		if (!strcmp((*d)->name, full_name))
			return *d;
	return NULL;
}
