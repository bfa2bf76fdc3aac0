// SPDX-License-Identifier: MIT
/* cgroup id -> path -> container id of the drops collector. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collectors/drops/drops_cgroup.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_container_id(void **state)
{
	char id[65];

	/* systemd driver: docker, containerd (CRI), cri-o, podman */
	assert_true(drops_container_id("/system.slice/docker-" ID64 ".scope", id, sizeof(id)));
	assert_string_equal(id, ID64);
	assert_true(
	    drops_container_id("/kubepods.slice/kubepods-burstable.slice/"
			       "kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
			       "cri-containerd-" ID64 ".scope",
			       id, sizeof(id)));
	assert_string_equal(id, ID64);
	assert_true(
	    drops_container_id("/machine.slice/libpod-" ID64 ".scope/container", id, sizeof(id)));
	assert_true(drops_container_id("/kubepods.slice/crio-" ID64 ".scope", id, sizeof(id)));
	/* cgroupfs driver: the id is a whole segment, also at the start */
	assert_true(drops_container_id("/docker/" ID64, id, sizeof(id)));
	assert_string_equal(id, ID64);
	assert_true(drops_container_id(ID64, id, sizeof(id)));
	/* nearest the end wins */
	assert_true(
	    drops_container_id("/docker/" ID64 "/nested/"
			       "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
			       id, sizeof(id)));
	assert_string_equal(id, "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
	/* not a container: a plain service, a pod UID, 63 or 65 hex digits */
	assert_false(drops_container_id("/system.slice/sshd.service", id, sizeof(id)));
	assert_false(drops_container_id(
	    "/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901", id, sizeof(id)));
	assert_false(drops_container_id("/docker/" ID64 "0", id, sizeof(id)));
	assert_false(drops_container_id(
	    "/docker/123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", id,
	    sizeof(id)));
	assert_false(drops_container_id("/", id, sizeof(id)));
	assert_false(drops_container_id(NULL, id, sizeof(id)));
	/* no room for the id */
	assert_false(drops_container_id("/docker/" ID64, id, 64));
}

/* A directory tree stands in for cgroupfs: ids are inode numbers there too. */
static void test_paths(void **state)
{
	char root[] = "/tmp/test_drops_cgroup.XXXXXX", p[512], out[128];
	struct drops_cgroups *g;
	struct stat st;

	assert_non_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/system.slice", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/system.slice/docker-%s.scope", root, ID64);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(stat(p, &st), 0);

	g = drops_cgroups_new(root);
	assert_non_null(g);
	assert_int_equal(drops_cgroups_path(g, st.st_ino, out, sizeof(out)), 0);
	assert_string_equal(out, "/system.slice/docker-" ID64 ".scope");
	/* cached: found again without a walk */
	assert_int_equal(drops_cgroups_path(g, st.st_ino, out, sizeof(out)), 0);
	/* cut from the left, the end kept */
	assert_int_equal(drops_cgroups_path(g, st.st_ino, out, 24), 0);
	assert_string_equal(out, "...23456789abcdef.scope"); /* "..." and the last 20 */
	/* the root itself */
	assert_int_equal(stat(root, &st), 0);
	assert_int_equal(drops_cgroups_path(g, st.st_ino, out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	/* unknown id: not found, and not looked for again within a second;
	 * a new directory is found at once */
	assert_int_equal(drops_cgroups_path(g, 1, out, sizeof(out)), -ENOENT);
	assert_int_equal(drops_cgroups_path(g, 1, out, sizeof(out)), -ENOENT);
	snprintf(p, sizeof(p), "%s/system.slice/new.service", root);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(drops_cgroups_path(g, st.st_ino, out, sizeof(out)), 0);
	assert_string_equal(out, "/system.slice/new.service");
	/* bad arguments */
	assert_int_equal(drops_cgroups_path(g, 0, out, sizeof(out)), -EINVAL);
	assert_int_equal(drops_cgroups_path(NULL, 5, out, sizeof(out)), -EINVAL);
	drops_cgroups_free(g);
	drops_cgroups_free(NULL);

	assert_null(drops_cgroups_new("/nonexistent/cgroup"));
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_container_id),
	    cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
