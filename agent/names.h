/* SPDX-License-Identifier: MIT */
/*
 * The agent's attribution service for Kubernetes names: container id ->
 * pod name, pod namespace, pod UID and container name, and a pod
 * sandbox's network namespace -> its pod, from the node's CRI runtime
 * (agent/names_cri.h), refreshed off the hot path. Collectors see it only
 * through their sink (sink_pod(), collectors/sink.h); none talks to a
 * runtime or resolves a name per event itself.
 *
 * A thread of its own refreshes the cache every [kubernetes] refresh and
 * at once when a lookup meets a Kubernetes container it does not know (a
 * container started since), at most once a second: two list calls
 * (ListPodSandbox, ListContainers) per refresh, and one PodSandboxStatus
 * per new sandbox (its network namespace). A lookup only takes a mutex
 * and reads two hash tables; it never waits on the runtime.
 *
 * What is gone from the runtime: a container keeps its names for
 * NAMES_GONE_KEEP after it is last listed (a late drop of a deleted pod is
 * still named; its rows keep the names for good); a sandbox's network
 * namespace leaves at once, since the kernel gives its inode number to the
 * next namespace.
 *
 * Without a runtime (none configured, found or reachable), the cgroup path
 * alone still tells the pod UID and QoS class (names_cgroup_parse()); the
 * source in effect is in sysobs_k8s_names_info and in the log.
 */
#ifndef SYSOBS_NAMES_H
#define SYSOBS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectors/sink.h"

struct metrics;

struct names_config {
	const char *cri_socket; /* "" = none */
	uint64_t refresh_ms;
	uint64_t timeout_ms;
	/* A connected socket to cri_socket: the privileged helper's after the
	 * drop; NULL connects directly. */
	int (*connect)(void *arg);
	void *connect_arg;
};

struct names;

/* Starts the service (its thread when a socket is configured). NULL +
 * errno. metrics may be NULL (tests). */
struct names *names_start(const struct names_config *cfg, struct metrics *m);
/* The name service's metric families, registered before it starts (after
 * the privilege drop): remote_write's first metadata, sent at its start,
 * then names them too. */
void names_declare(struct metrics *m);
void names_stop(struct names *n); /* accepts NULL */

/*
 * The names of a drop's container or network namespace: by container id
 * (64 hex digits, "" none) first, else by the inode of the netns, else the
 * pod UID and QoS class the cgroup path tells. 0 with out filled (empty
 * strings for what is unknown), -ENOENT when nothing is known.
 */
int names_lookup(struct names *n, const char *container_id, const char *cgroup_path, uint32_t netns,
		 struct sink_pod *out);

/* Pods and containers in the cache (a 100-pod node: docs/kubernetes.md). */
size_t names_pods(struct names *n);

/*
 * The pod UID and QoS class a cgroup path carries, in either layout:
 * cgroupfs  /kubepods[/besteffort|/burstable]/pod<UID>/<id>
 * systemd   .../kubepods[-besteffort|-burstable]-pod<UID_with_underscores>.slice/
 *           cri-containerd-<id>.scope (or crio-<id>.scope)
 * Guaranteed pods sit directly under kubepods. uid gets the UID with dashes
 * (37 bytes at least), qos "guaranteed", "burstable" or "besteffort". 0, or
 * -ENOENT when the path is no pod's. Pure.
 */
int names_cgroup_parse(const char *path, char *uid, size_t uidlen, const char **qos);

/* The network namespace path in containerd's / CRI-O's verbose sandbox
 * info (JSON: runtimeSpec.linux.namespaces[type=network].path). 0, or
 * -ENOENT. Pure. */
int names_info_netns_path(const char *json, char *out, size_t len);

#endif
