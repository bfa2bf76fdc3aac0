// SPDX-License-Identifier: MIT
/* Messages in an arena (see pbmsg.h). */
#include "base/arena.h"
#include "api/proto/pbmsg.h"

void *pbmsg_new(struct arena *ar, const ProtobufCMessageDescriptor *d)
{
	void *m = arena_alloc(ar, d->sizeof_message);

	if (m)
		protobuf_c_message_init(d, m);
	return m;
}

Google__Protobuf__Timestamp *pbmsg_time(struct arena *ar, int64_t ns)
{
	Google__Protobuf__Timestamp *t;

	if (!ns)
		return NULL;
	t = PBMSG_NEW(ar, Google__Protobuf__Timestamp, google__protobuf__timestamp__descriptor);
	if (t) {
		/* Floor division: nanos is always 0..999999999. */
		t->seconds = ns / 1000000000 - (ns % 1000000000 < 0);
		t->nanos = (int32_t)(ns - t->seconds * 1000000000);
	}
	return t;
}
