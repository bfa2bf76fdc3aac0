// SPDX-License-Identifier: MIT
/*
 * mptcp_pod: the Kubernetes pod of a watched network namespace (the pod
 * whose sandbox it is), from the agent's name service through the sink
 * (sink_pod(): a lookup in the agent's cache, never a call to the
 * runtime), for the history rows (mptcp_events, mptcp_subflow_samples) and
 * the live route's connections and namespaces.
 */
#include <stdio.h>
#include <string.h>

#include "api/proto/sysobs.pb-c.h"
#include "base/arena.h"
#include "collectors/mptcp/mptcp_pod.h"

#define MPTCP_POD_RETRY_NS   100000000ll /* a namespace of no pod (yet): asked again after 0.1 s */
#define MPTCP_POD_GIVE_UP_NS 60000000000ll /* ... for 60 s after the first miss */

/* sysobs_mptcp_netns_pod_info{netns, pod, pod_namespace, pod_uid} 1: the
 * pod of the netns label the per-namespace series (MIB, subflows) carry,
 * for a PromQL join, instead of two more labels on each of them. */
static void mptcp_pod_info_set(struct collector *c, struct mptcp_watch *w)
{
	struct mptcp_pod_cache *pc = &w->pod;
	char ino[24];
	const char *lv[4] = {ino, pc->names.pod, pc->names.pod_namespace, pc->names.pod_uid};

	snprintf(ino, sizeof(ino), "%llu", (unsigned long long)pc->ino);
	pc->info = collector_series(c, MPTCP_M_NETNS_POD, lv);
	sink_set(c->sink, pc->info, 1);
}

/*
 * A namespace's pod cannot change while the watch holds it open (its inode
 * is not given to another namespace before it is freed), so a pod once
 * found is kept until the watch enters another namespace. While none is
 * found (a sandbox the runtime has not listed yet, or a namespace of no pod:
 * the host's, a /run/netns one) the service is asked again at most every
 * 0.1 s (a lookup in its cache), for a minute after the first miss: a miss
 * makes it refresh from the runtime (once a second at most), which must not
 * go on for ever for the host's namespace. The collector asks at every
 * collect too, so a pod's namespace is named before its first event.
 */
const struct sink_pod *mptcp_watch_pod(struct collector *c, struct mptcp_watch *w, int64_t now_ns)
{
	struct mptcp_pod_cache *pc = &w->pod;

	if (pc->ino != w->ino) {
		mptcp_pod_forget(c, w);
		pc->ino = w->ino;
	}
	if (pc->found)
		return &pc->names;
	if (pc->first_miss_ns &&
	    (now_ns < pc->next_ns || now_ns - pc->first_miss_ns > MPTCP_POD_GIVE_UP_NS))
		return NULL;
	pc->next_ns = now_ns + MPTCP_POD_RETRY_NS;
	if (sink_pod(c->sink, "", "", (uint32_t)w->ino, &pc->names) || !pc->names.pod[0]) {
		if (!pc->first_miss_ns)
			pc->first_miss_ns = now_ns;
		return NULL;
	}
	__atomic_store_n(&pc->found, true, __ATOMIC_RELEASE);
	mptcp_pod_info_set(c, w);
	return &pc->names;
}

void mptcp_pod_forget(struct collector *c, struct mptcp_watch *w)
{
	struct mptcp_pod_cache *pc = &w->pod;

	__atomic_store_n(&pc->found, false, __ATOMIC_RELEASE);
	if (pc->info)
		sink_series_gone(c->sink, collector_family(c, MPTCP_M_NETNS_POD), pc->info);
	*pc = (struct mptcp_pod_cache){0};
}

/* ---- the live route (an HTTP thread: the service, not the watch's cache) -- */

/* Whether the watch of netns has found its pod (the main thread's flag):
 * the service is asked only then, since a miss would make it refresh from
 * the runtime at every query of the host's namespace. */
static bool mptcp_pod_known(const struct mptcp_priv *p, uint32_t netns)
{
	for (size_t i = 0; i < p->n_w; i++)
		if ((uint32_t)__atomic_load_n(&p->w[i].ino, __ATOMIC_RELAXED) == netns)
			return __atomic_load_n(&p->w[i].pod.found, __ATOMIC_ACQUIRE);
	return false;
}

struct mptcp_pod_strs {
	char *pod, *pod_namespace, *pod_uid;
};

/* The pod of netns as arena strings; false for a namespace of no pod. */
static bool mptcp_pod_strs(struct collector *c, uint32_t netns, struct arena *ar,
			   struct mptcp_pod_strs *out)
{
	struct sink_pod sp;

	if (sink_pod(c->sink, "", "", netns, &sp) || !sp.pod[0])
		return false;
	out->pod = arena_strdup(ar, sp.pod);
	out->pod_namespace = arena_strdup(ar, sp.pod_namespace);
	out->pod_uid = arena_strdup(ar, sp.pod_uid);
	return out->pod && out->pod_namespace && out->pod_uid;
}

/* The pod fields of message m of type MSG (proto3 optionals, which
 * protoc-c makes oneofs of one: present when the case is set). */
#define MPTCP_POD_SET(m, s, MSG)                                                                   \
	do {                                                                                       \
		(m)->pod = (s)->pod;                                                               \
		(m)->_pod_case = SYSOBS__V1__##MSG##___POD_POD;                                    \
		(m)->pod_namespace = (s)->pod_namespace;                                           \
		(m)->_pod_namespace_case = SYSOBS__V1__##MSG##___POD_NAMESPACE_POD_NAMESPACE;      \
		(m)->pod_uid = (s)->pod_uid;                                                       \
		(m)->_pod_uid_case = SYSOBS__V1__##MSG##___POD_UID_POD_UID;                        \
	} while (0)

void mptcp_pod_list(const struct mptcp_priv *p, Sysobs__V1__MptcpConnectionList *list,
		    struct arena *ar)
{
	for (size_t i = 0; i < list->n_namespaces; i++) {
		Sysobs__V1__MptcpNamespace *ns = list->namespaces[i];
		struct mptcp_pod_strs s;

		if (!mptcp_pod_known(p, ns->netns) || !mptcp_pod_strs(p->c, ns->netns, ar, &s))
			continue;
		MPTCP_POD_SET(ns, &s, MPTCP_NAMESPACE);
		for (size_t j = 0; j < list->n_data; j++)
			if (list->data[j]->netns == ns->netns)
				MPTCP_POD_SET(list->data[j], &s, MPTCP_CONNECTION);
	}
}
