// SPDX-License-Identifier: MIT
/*
 * Fuzz target of what names a drop's pod and container from its cgroup
 * path and the runtime's sandbox info: names_cgroup_parse and
 * names_info_netns_path (agent/names.c), drops_container_id
 * (collectors/drops/drops_cgroup.c). The input goes to all three. A pod UID
 * is 32 or 36 characters of hex digits and dashes, its QoS class one of
 * kubelet's three; a container id is 64 hex digits; a netns path is
 * non-empty and fits its buffer, and a buffer too small is -ENOENT, never a
 * cut path. The seeds are kubelet's cgroup layouts (cgroupfs and systemd
 * drivers, containerd and CRI-O scopes, a static pod), a Docker scope, this
 * host's own cgroups, and containerd's verbose sandbox info.
 */
#include <errno.h>

#include "agent/names.h"
#include "collectors/drops/drops_cgroup.h"
#include "tests/fuzz/fuzz_common.h"

static void check_pod(const char *s)
{
	const char *qos = NULL;
	char uid[40];
	size_t n;

	if (names_cgroup_parse(s, uid, sizeof(uid), &qos))
		return;
	n = strnlen(uid, sizeof(uid));
	FUZZ_CHECK((n == 36 || n == 32) && strspn(uid, "0123456789abcdefABCDEF-") == n,
		   "pod uid \"%.40s\"", uid);
	FUZZ_CHECK(qos && (!strcmp(qos, "guaranteed") || !strcmp(qos, "burstable") ||
			   !strcmp(qos, "besteffort")),
		   "qos %s", qos ? qos : "NULL");
	FUZZ_CHECK(names_cgroup_parse(s, uid, 36, &qos) == -ENOENT, "uid into 36 bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[DROPS_CONTAINER_ID_LEN + 1], path[64], tiny[8];
	char *s;

	if (size > 1 << 16)
		return 0;
	s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	check_pod(s);
	if (drops_container_id(s, id, sizeof(id)))
		FUZZ_CHECK(strlen(id) == DROPS_CONTAINER_ID_LEN &&
			       strspn(id, "0123456789abcdefABCDEF") == DROPS_CONTAINER_ID_LEN,
			   "container id \"%s\"", id);
	FUZZ_CHECK(!drops_container_id(s, tiny, sizeof(tiny)), "container id into 8 bytes");
	if (!names_info_netns_path(s, path, sizeof(path))) {
		size_t n = strnlen(path, sizeof(path));

		FUZZ_CHECK(n && n < sizeof(path), "netns path of %zu bytes", n);
		if (n >= sizeof(tiny))
			FUZZ_CHECK(names_info_netns_path(s, tiny, sizeof(tiny)) == -ENOENT,
				   "a cut netns path");
	}
	free(s);
	return 0;
}
