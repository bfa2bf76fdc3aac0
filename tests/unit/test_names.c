/* SPDX-License-Identifier: MIT */
/*
 * The name service's pure parts (agent/names.h, agent/names_cri.h): the pod
 * UID and QoS class of a cgroup path in both kubelet layouts (cgroupfs and
 * systemd drivers), paths of no pod, the network namespace path in
 * containerd's verbose sandbox info, and gRPC's length-prefixed message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/names.h"
#include "agent/names_cri.h"

#define UID  "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
#define UIDU "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"
#define CID  "d21a21475ff295d3f8fcc2b5956cdbaf79d66eb37f6e335a3247bb7aa6c7f0e7"

static void expect_pod(const char *path, const char *qos)
{
	char uid[40];
	const char *q = NULL;

	assert_int_equal(names_cgroup_parse(path, uid, sizeof(uid), &q), 0);
	assert_string_equal(uid, UID);
	assert_string_equal(q, qos);
}

static void test_cgroup_layouts(void **state)
{
	(void)state;
	/* cgroupfs driver (kubelet --cgroup-driver=cgroupfs) */
	expect_pod("/kubepods/besteffort/pod" UID "/" CID, "besteffort");
	expect_pod("/kubepods/burstable/pod" UID "/" CID, "burstable");
	expect_pod("/kubepods/pod" UID "/" CID, "guaranteed");
	expect_pod("/kubepods/besteffort/pod" UID, "besteffort");
	/* systemd driver: '-' in the UID escaped as '_' */
	expect_pod("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
		   ".slice/cri-containerd-" CID ".scope",
		   "besteffort");
	expect_pod("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
		   ".slice/crio-" CID ".scope",
		   "burstable");
	expect_pod("/kubepods.slice/kubepods-pod" UIDU ".slice/cri-containerd-" CID ".scope",
		   "guaranteed");
	/* under a kind/kubeadm node's own cgroup */
	expect_pod("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
		   "kubelet-kubepods-besteffort-pod" UIDU ".slice/cri-containerd-" CID ".scope",
		   "besteffort");
}

static void test_cgroup_not_pods(void **state)
{
	static const char *const paths[] = {
	    "",
	    "/",
	    "/system.slice/docker-" CID ".scope",
	    "/docker/" CID,
	    "/kubepods",
	    "/kubepods/besteffort",
	    "/kubepods/besteffort/podnot-a-uid/" CID,
	    "/kubepods/besteffort/pod" UID "x/" CID,
	    "/kubepods.slice/kubepods-besteffort.slice",
	    "/user.slice/kubepods-like.slice",
	};
	char uid[40];
	const char *q;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		assert_int_equal(names_cgroup_parse(paths[i], uid, sizeof(uid), &q), -ENOENT);
	assert_int_equal(names_cgroup_parse(NULL, uid, sizeof(uid), &q), -ENOENT);
	/* no room for a UID */
	assert_int_equal(names_cgroup_parse("/kubepods/pod" UID "/" CID, uid, 20, &q), -ENOENT);
}

static void test_info_netns(void **state)
{
	char p[128];

	(void)state;
	/* containerd 1.6's verbose PodSandboxStatus info, cut down */
	assert_int_equal(
	    names_info_netns_path(
		"{\"pid\":6759,\"runtimeSpec\":{\"linux\":{\"namespaces\":[{\"type\":\"pid\"},"
		"{\"type\":\"ipc\"},{\"type\":\"network\",\"path\":"
		"\"/var/run/netns/cni-92d316b8-b1ce-d67b-c940-08408a5b62dc\"}]}}}",
		p, sizeof(p)),
	    0);
	assert_string_equal(p, "/var/run/netns/cni-92d316b8-b1ce-d67b-c940-08408a5b62dc");
	/* host network: a network namespace without a path */
	assert_int_equal(names_info_netns_path("{\"runtimeSpec\":{\"linux\":{\"namespaces\":"
					       "[{\"type\":\"network\"}]}}}",
					       p, sizeof(p)),
			 -ENOENT);
	assert_int_equal(names_info_netns_path("{}", p, sizeof(p)), -ENOENT);
	assert_int_equal(names_info_netns_path("not json", p, sizeof(p)), -ENOENT);
	assert_int_equal(names_info_netns_path("{\"runtimeSpec\":{\"linux\":{\"namespaces\":"
					       "[{\"type\":\"network\",\"path\":\"/x\"}]}}}",
					       p, 2),
			 -ENOENT);
	/* the first network entry too long for the buffer: not the next one's
	 * path (fuzz.cgroup_names) */
	assert_int_equal(names_info_netns_path("{\"runtimeSpec\":{\"linux\":{\"namespaces\":"
					       "[{\"type\":\"network\",\"path\":\"/var/run/x\"},"
					       "{\"type\":\"network\",\"path\":\"/y\"}]}}}",
					       p, 8),
			 -ENOENT);
}

static void test_grpc_frame(void **state)
{
	static const uint8_t ok[] = {0, 0, 0, 0, 3, 0x0a, 0x01, 0x41, 0xff};
	static const uint8_t empty[] = {0, 0, 0, 0, 0};
	static const uint8_t compressed[] = {1, 0, 0, 0, 1, 0};
	static const uint8_t past[] = {0, 0, 0, 0, 9, 1, 2};
	const uint8_t *m;
	size_t n;

	(void)state;
	assert_int_equal(names_grpc_frame_decode(ok, sizeof(ok), &m, &n), 0);
	assert_ptr_equal(m, ok + 5);
	assert_int_equal(n, 3);
	assert_int_equal(names_grpc_frame_decode(empty, sizeof(empty), &m, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(names_grpc_frame_decode(empty, 4, &m, &n), -EPROTO);
	assert_int_equal(names_grpc_frame_decode(compressed, sizeof(compressed), &m, &n), -EPROTO);
	assert_int_equal(names_grpc_frame_decode(past, sizeof(past), &m, &n), -EPROTO);
}

/* Without a runtime: the cgroup path's pod UID, no names. */
static void test_lookup_without_runtime(void **state)
{
	struct names_config cfg = {.cri_socket = "", .refresh_ms = 1000, .timeout_ms = 100};
	struct names *n = names_start(&cfg, NULL);
	struct sink_pod p;

	(void)state;
	assert_non_null(n);
	assert_int_equal(names_lookup(n, CID, "/kubepods/burstable/pod" UID "/" CID, 0, &p), 0);
	assert_string_equal(p.pod_uid, UID);
	assert_string_equal(p.qos, "burstable");
	assert_string_equal(p.pod, "");
	assert_int_equal(names_lookup(n, "", "/system.slice/ssh.service", 4026531840u, &p),
			 -ENOENT);
	assert_int_equal(names_pods(n), 0);
	names_stop(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cgroup_layouts),
	    cmocka_unit_test(test_cgroup_not_pods),
	    cmocka_unit_test(test_info_netns),
	    cmocka_unit_test(test_grpc_frame),
	    cmocka_unit_test(test_lookup_without_runtime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
