// SPDX-License-Identifier: MIT
/* Kubernetes names from the CRI runtime, cached (see names.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/names.h"
#include "agent/names_cri.h"
#include "metrics/metrics.h"
#include "base/hash.h"
#include "base/log.h"

#define NAMES_GONE_KEEP_NS (600ll * 1000000000) /* a gone container keeps its names */
#define NAMES_POKE_MIN_NS  1000000000ll		/* one refresh a second at most */
#define CTR_ID_LEN	   64

struct pod_entry {
	struct hash_node node;	 /* pods, by sandbox id */
	struct hash_node nsnode; /* by_netns, by inode, when netns != 0 */
	char id[CTR_ID_LEN + 1];
	uint32_t netns;
	bool seen;
	bool status_done; /* its netns was asked for */
	struct sink_pod p;
};

struct ctr_entry {
	struct hash_node node; /* ctrs, by container id */
	char id[CTR_ID_LEN + 1];
	int64_t seen_ns;
	struct sink_pod p;
};

struct names {
	pthread_mutex_t lock; /* the tables and the counts below */
	pthread_cond_t wake;
	struct hash_table pods, ctrs, by_netns;
	bool stop, poked, cri_ok;
	int64_t last_poke_ns;
	pthread_t thread;
	bool thread_started;
	struct names_config cfg;
	char runtime[96]; /* "containerd 1.6.20", "" before the first answer */
	struct names_cri *cri;
	struct metrics *m;
	struct metric *calls, *info;
	struct metric_series *info_cur, *pods_g, *ctrs_g;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t str_hash(const char *s)
{
	return hash_fnv1a(HASH_FNV1A_INIT, s, strlen(s));
}

static uint64_t ino_hash(uint32_t ino)
{
	return hash_fnv1a(HASH_FNV1A_INIT, &ino, sizeof(ino));
}

static struct pod_entry *pod_find(struct names *n, const char *id)
{
	uint64_t h = str_hash(id);

	for (struct hash_node *x = hash_chain(&n->pods, h); x; x = x->next) {
		struct pod_entry *e = hash_entry(x, struct pod_entry, node);

		if (x->hash == h && !strcmp(e->id, id))
			return e;
	}
	return NULL;
}

static struct ctr_entry *ctr_find(struct names *n, const char *id)
{
	uint64_t h = str_hash(id);

	for (struct hash_node *x = hash_chain(&n->ctrs, h); x; x = x->next) {
		struct ctr_entry *e = hash_entry(x, struct ctr_entry, node);

		if (x->hash == h && !strcmp(e->id, id))
			return e;
	}
	return NULL;
}

static struct pod_entry *netns_find(struct names *n, uint32_t ino)
{
	uint64_t h = ino_hash(ino);

	for (struct hash_node *x = hash_chain(&n->by_netns, h); x; x = x->next) {
		struct pod_entry *e = hash_entry(x, struct pod_entry, nsnode);

		if (x->hash == h && e->netns == ino)
			return e;
	}
	return NULL;
}

/* --- pure parsers ---------------------------------------------------------- */

static bool uid_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
	       c == '-' || c == '_';
}

int names_cgroup_parse(const char *path, char *uid, size_t uidlen, const char **qos)
{
	const char *k = path ? strstr(path, "kubepods") : NULL;

	if (!k || uidlen < 37)
		return -ENOENT;
	/* The pod's component: "pod<UID>" after '/' or '-', ended by '/', '.'
	 * (".slice") or the end; the first such after "kubepods". */
	for (const char *p = strstr(k, "pod"); p; p = strstr(p + 1, "pod")) {
		const char *u = p + 3;
		size_t len = 0;

		if (p[-1] != '/' && p[-1] != '-')
			continue;
		while (uid_char(u[len]))
			len++;
		/* a UID is 36 characters (32 hex digits, 4 dashes); a static
		 * pod's is the 32 hex digits of its config hash */
		if ((len != 36 && len != 32) || (u[len] != '/' && u[len] != '.' && u[len] != '\0'))
			continue;
		for (size_t i = 0; i < len; i++)
			uid[i] = u[i] == '_' ? '-' : u[i]; /* systemd escapes '-' as '_' */
		uid[len] = '\0';
		/* the QoS class between kubepods and the pod; none: guaranteed */
		*qos = "guaranteed";
		for (const char *q = k; q < p; q++)
			if (!strncmp(q, "besteffort", 10)) {
				*qos = "besteffort";
				break;
			} else if (!strncmp(q, "burstable", 9)) {
				*qos = "burstable";
				break;
			}
		return 0;
	}
	return -ENOENT;
}

int names_info_netns_path(const char *js, char *out, size_t len)
{
	json_t *root = json_loads(js, 0, NULL), *ns, *e;
	size_t i;
	int rc = -ENOENT;

	if (!root)
		return -ENOENT;
	ns = json_object_get(json_object_get(json_object_get(root, "runtimeSpec"), "linux"),
			     "namespaces");
	json_array_foreach(ns, i, e)
	{
		const char *type = json_string_value(json_object_get(e, "type"));
		const char *path = json_string_value(json_object_get(e, "path"));

		/* The first network namespace with a path is the pod's: one too
		 * long for out is -ENOENT, not the next entry's. */
		if (type && path && !strcmp(type, "network") && *path) {
			if (strlen(path) < len) {
				snprintf(out, len, "%s", path);
				rc = 0;
			}
			break;
		}
	}
	json_decref(root);
	return rc;
}

static void names_poke(struct names *n);

/* --- lookups (any thread) ---------------------------------------------------- */

int names_lookup(struct names *n, const char *container_id, const char *cgroup_path, uint32_t netns,
		 struct sink_pod *out)
{
	const char *qos = NULL;
	char uid[40];
	bool k8s_cgroup = !names_cgroup_parse(cgroup_path, uid, sizeof(uid), &qos);
	bool found_ctr = false;
	int rc = -ENOENT;

	*out = (struct sink_pod){0};
	if (!n)
		return -ENOENT;
	pthread_mutex_lock(&n->lock);
	if (container_id && *container_id) {
		struct ctr_entry *c = ctr_find(n, container_id);

		if (c) {
			*out = c->p;
			rc = 0;
			found_ctr = true;
		}
	}
	if (rc && netns) {
		struct pod_entry *p = netns_find(n, netns);

		if (p) {
			*out = p->p;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&n->lock);
	/* a container or namespace the runtime did not list yet: one being
	 * made, or started since the last refresh */
	if (!found_ctr && ((container_id && *container_id && k8s_cgroup) || (rc && netns)))
		names_poke(n);
	if (k8s_cgroup) {
		snprintf(out->qos, sizeof(out->qos), "%s", qos);
		if (rc) {
			snprintf(out->pod_uid, sizeof(out->pod_uid), "%s", uid);
			rc = 0;
		}
	}
	return rc;
}

size_t names_pods(struct names *n)
{
	size_t v;

	pthread_mutex_lock(&n->lock);
	v = n->pods.n;
	pthread_mutex_unlock(&n->lock);
	return v;
}

static void names_poke(struct names *n)
{
	int64_t now = mono_ns();

	if (!n || !n->cfg.cri_socket || !*n->cfg.cri_socket)
		return;
	pthread_mutex_lock(&n->lock);
	if (now - n->last_poke_ns >= NAMES_POKE_MIN_NS) {
		n->last_poke_ns = now;
		n->poked = true;
		pthread_cond_signal(&n->wake);
	}
	pthread_mutex_unlock(&n->lock);
}

/* --- the refresh (the names thread) ------------------------------------------ */

static void call_count(struct names *n, const char *method, bool ok)
{
	const char *v[] = {method, ok ? "ok" : "error", NULL};

	if (n->calls)
		series_add(metric_series(n->calls, v), 1);
}

static void info_set(struct names *n, const char *source)
{
	const char *v[] = {source, n->runtime, NULL};
	struct metric_series *s;

	if (!n->info)
		return;
	s = metric_series(n->info, v);
	if (s == n->info_cur)
		return;
	if (n->info_cur)
		metric_series_remove(n->info, n->info_cur);
	series_set(s, 1);
	n->info_cur = s;
}

static int cri_call(struct names *n, const char *method, const ProtobufCMessage *req,
		    const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out)
{
	char err[256];
	int rc = names_cri_call(n->cri, method, req, desc, out, err, sizeof(err));

	call_count(n, method, !rc);
	if (rc && n->cri_ok)
		log_warn("names",
			 "CRI runtime at %s: %s; pods are named from cgroup paths "
			 "(pod UIDs) until it answers",
			 n->cfg.cri_socket, err);
	else if (rc)
		log_debug("names", "CRI runtime at %s: %s", n->cfg.cri_socket, err);
	return rc;
}

static void runtime_version(struct names *n)
{
	Runtime__V1__VersionRequest rq = RUNTIME__V1__VERSION_REQUEST__INIT;
	ProtobufCMessage *out;

	rq.version = "v1";
	if (cri_call(n, "Version", &rq.base, &runtime__v1__version_response__descriptor, &out))
		return;
	Runtime__V1__VersionResponse *v = (Runtime__V1__VersionResponse *)out;

	snprintf(n->runtime, sizeof(n->runtime), "%s %s", v->runtime_name ? v->runtime_name : "",
		 v->runtime_version ? v->runtime_version : "");
	protobuf_c_message_free_unpacked(out, NULL);
}

/* The inode of the sandbox's network namespace (0: none, or not found):
 * PodSandboxStatus with verbose info, whose OCI spec names the netns path
 * (/var/run/netns/cni-..., a bind mount anyone may stat). */
static uint32_t sandbox_netns(struct names *n, const char *id)
{
	Runtime__V1__PodSandboxStatusRequest rq = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
	Runtime__V1__PodSandboxStatusResponse *r;
	ProtobufCMessage *out;
	uint32_t ino = 0;
	char path[256];
	struct stat st;

	rq.pod_sandbox_id = (char *)id;
	rq.verbose = true;
	if (cri_call(n, "PodSandboxStatus", &rq.base,
		     &runtime__v1__pod_sandbox_status_response__descriptor, &out))
		return 0;
	r = (Runtime__V1__PodSandboxStatusResponse *)out;
	for (size_t i = 0; i < r->n_info && !ino; i++)
		if (r->info[i]->value &&
		    !names_info_netns_path(r->info[i]->value, path, sizeof(path)) &&
		    !stat(path, &st))
			ino = (uint32_t)st.st_ino;
	protobuf_c_message_free_unpacked(out, NULL);
	return ino;
}

/* A label of kubelet's, else the metadata's value. */
static const char *label_or(Runtime__V1__PodSandbox__LabelsEntry **l, size_t nl, const char *key,
			    const char *meta)
{
	if (meta && *meta)
		return meta;
	for (size_t i = 0; i < nl; i++)
		if (l[i]->key && !strcmp(l[i]->key, key))
			return l[i]->value ? l[i]->value : "";
	return "";
}

static void pod_unlink(struct names *n, struct pod_entry *e)
{
	if (e->netns)
		hash_del(&n->by_netns, &e->nsnode);
	hash_del(&n->pods, &e->node);
	free(e);
}

/* Sandboxes as listed: new ones get their netns asked for (outside the
 * lock), gone ones leave. */
/* The entry of sandbox s, made if new, marked seen, with the pod's name,
 * namespace and uid (its labels, else its metadata); a stopped sandbox's
 * netns is closed and its inode free, so it is forgotten. Under n->lock;
 * -ENOMEM. */
static int pod_update(struct names *n, Runtime__V1__PodSandbox *s)
{
	Runtime__V1__PodSandboxMetadata *md = s->metadata;
	struct pod_entry *e = pod_find(n, s->id);

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		snprintf(e->id, sizeof(e->id), "%s", s->id);
		hash_add(&n->pods, &e->node, str_hash(e->id));
	}
	e->seen = true;
	snprintf(e->p.pod, sizeof(e->p.pod), "%s",
		 label_or(s->labels, s->n_labels, "io.kubernetes.pod.name", md ? md->name : NULL));
	snprintf(e->p.pod_namespace, sizeof(e->p.pod_namespace), "%s",
		 label_or(s->labels, s->n_labels, "io.kubernetes.pod.namespace",
			  md ? md->namespace_ : NULL));
	snprintf(e->p.pod_uid, sizeof(e->p.pod_uid), "%s",
		 label_or(s->labels, s->n_labels, "io.kubernetes.pod.uid", md ? md->uid : NULL));
	if (s->state != RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY && e->netns) {
		hash_del(&n->by_netns, &e->nsnode);
		e->netns = 0;
	}
	return 0;
}

/* The network namespace of ready sandbox id, asked of the runtime once,
 * without the lock held while it answers. */
static void pod_netns_ask(struct names *n, const char *id)
{
	struct pod_entry *e;
	bool ask;
	uint32_t ino;

	pthread_mutex_lock(&n->lock);
	e = pod_find(n, id);
	ask = e && !e->status_done;
	pthread_mutex_unlock(&n->lock);
	if (!ask)
		return;
	ino = sandbox_netns(n, id);
	pthread_mutex_lock(&n->lock);
	e = pod_find(n, id);
	if (e && !e->status_done) {
		e->status_done = true;
		if (ino && !netns_find(n, ino)) {
			e->netns = ino;
			hash_add(&n->by_netns, &e->nsnode, ino_hash(ino));
		}
	}
	pthread_mutex_unlock(&n->lock);
}

static void pods_apply(struct names *n, Runtime__V1__ListPodSandboxResponse *r)
{
	struct hash_node *x, *tmp;
	size_t i;

	pthread_mutex_lock(&n->lock);
	hash_for_each_safe(&n->pods, i, x, tmp)
		hash_entry(x, struct pod_entry, node)->seen = false;
	for (size_t k = 0; k < r->n_items; k++) {
		Runtime__V1__PodSandbox *s = r->items[k];

		if (!s->id || strlen(s->id) > CTR_ID_LEN)
			continue;
		if (pod_update(n, s))
			break;
	}
	hash_for_each_safe(&n->pods, i, x, tmp) {
		struct pod_entry *e = hash_entry(x, struct pod_entry, node);

		if (!e->seen)
			pod_unlink(n, e);
	}
	pthread_mutex_unlock(&n->lock);

	/* the network namespaces of ready sandboxes not asked for yet */
	for (size_t k = 0; k < r->n_items; k++) {
		Runtime__V1__PodSandbox *s = r->items[k];

		if (s->id && s->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY)
			pod_netns_ask(n, s->id);
	}
}

static void ctrs_apply(struct names *n, Runtime__V1__ListContainersResponse *r)
{
	int64_t now = mono_ns();
	struct hash_node *x, *tmp;
	size_t i;

	pthread_mutex_lock(&n->lock);
	for (size_t k = 0; k < r->n_containers; k++) {
		Runtime__V1__Container *c = r->containers[k];
		struct pod_entry *p;
		struct ctr_entry *e;

		if (!c->id || strlen(c->id) != CTR_ID_LEN)
			continue;
		e = ctr_find(n, c->id);
		if (!e) {
			e = calloc(1, sizeof(*e));
			if (!e)
				break;
			snprintf(e->id, sizeof(e->id), "%s", c->id);
			hash_add(&n->ctrs, &e->node, str_hash(e->id));
		}
		e->seen_ns = now;
		p = c->pod_sandbox_id ? pod_find(n, c->pod_sandbox_id) : NULL;
		if (p)
			e->p = p->p;
		snprintf(e->p.container, sizeof(e->p.container), "%s",
			 c->metadata && c->metadata->name ? c->metadata->name : "");
	}
	/* A sandbox is a container too (its pause process): named as its pod,
	 * container "" (what kubelet's metrics call container="POD"). */
	hash_for_each_safe(&n->pods, i, x, tmp) {
		struct pod_entry *p = hash_entry(x, struct pod_entry, node);
		struct ctr_entry *e = ctr_find(n, p->id);

		if (strlen(p->id) != CTR_ID_LEN)
			continue;
		if (!e) {
			e = calloc(1, sizeof(*e));
			if (!e)
				break;
			snprintf(e->id, sizeof(e->id), "%s", p->id);
			hash_add(&n->ctrs, &e->node, str_hash(e->id));
		}
		e->seen_ns = now;
		e->p = p->p;
	}
	hash_for_each_safe(&n->ctrs, i, x, tmp) {
		struct ctr_entry *e = hash_entry(x, struct ctr_entry, node);

		if (now - e->seen_ns > NAMES_GONE_KEEP_NS) {
			hash_del(&n->ctrs, &e->node);
			free(e);
		}
	}
	if (n->pods_g)
		series_set(n->pods_g, (double)n->pods.n);
	if (n->ctrs_g)
		series_set(n->ctrs_g, (double)n->ctrs.n);
	pthread_mutex_unlock(&n->lock);
}

/* One refresh: 0 when the runtime answered both lists. */
static int names_refresh(struct names *n)
{
	Runtime__V1__ListPodSandboxRequest prq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
	Runtime__V1__ListContainersRequest crq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
	ProtobufCMessage *pods, *ctrs;

	if (!n->runtime[0])
		runtime_version(n);
	if (cri_call(n, "ListPodSandbox", &prq.base,
		     &runtime__v1__list_pod_sandbox_response__descriptor, &pods))
		return -1;
	if (cri_call(n, "ListContainers", &crq.base,
		     &runtime__v1__list_containers_response__descriptor, &ctrs)) {
		protobuf_c_message_free_unpacked(pods, NULL);
		return -1;
	}
	pods_apply(n, (Runtime__V1__ListPodSandboxResponse *)pods);
	ctrs_apply(n, (Runtime__V1__ListContainersResponse *)ctrs);
	protobuf_c_message_free_unpacked(pods, NULL);
	protobuf_c_message_free_unpacked(ctrs, NULL);
	return 0;
}

static void *names_thread(void *arg)
{
	struct names *n = arg;

	pthread_mutex_lock(&n->lock);
	while (!n->stop) {
		struct timespec until;
		bool ok;

		n->poked = false;
		pthread_mutex_unlock(&n->lock);
		ok = !names_refresh(n);
		if (ok != n->cri_ok) {
			if (ok)
				log_info("names", "CRI runtime %s at %s: pods named by the runtime",
					 n->runtime[0] ? n->runtime : "(no version)",
					 n->cfg.cri_socket);
			n->cri_ok = ok;
		}
		info_set(n, ok ? "cri" : "cgroup");
		pthread_mutex_lock(&n->lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(n->cfg.refresh_ms / 1000);
		until.tv_nsec += (long)(n->cfg.refresh_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!n->stop && !n->poked &&
		       pthread_cond_timedwait(&n->wake, &n->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

/* Without the helper: the socket by path (an agent that kept root, tests). */
static int connect_direct(void *arg)
{
	const char *path = arg;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static void names_metrics(struct names *n, struct metrics *m)
{
	static const char *const call_labels[] = {"method", "result", NULL};
	static const char *const info_labels[] = {"source", "runtime", NULL};

	if (!m)
		return;
	n->calls = metrics_counter(m, "sysobs_k8s_cri_calls_total",
				   "Calls of the CRI runtime's RuntimeService by the name service, "
				   "by method and result",
				   call_labels);
	n->info = metrics_gauge(m, "sysobs_k8s_names_info",
				"Where Kubernetes names come from: source cri (the runtime "
				"answers) or cgroup (pod UIDs from cgroup paths only)",
				info_labels);
	n->pods_g = metrics_gauge1(m, "sysobs_k8s_pods", "Pod sandboxes the name service knows");
	n->ctrs_g = metrics_gauge1(m, "sysobs_k8s_containers",
				   "Containers the name service keeps names of (gone ones for "
				   "10 minutes)");
}

void names_declare(struct metrics *m)
{
	struct names none = {0};

	names_metrics(&none, m);
}

struct names *names_start(const struct names_config *cfg, struct metrics *m)
{
	struct names *n = calloc(1, sizeof(*n));
	pthread_condattr_t ca;

	if (!n)
		return NULL;
	n->cfg = *cfg;
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (hash_init(&n->pods, 64) || hash_init(&n->ctrs, 256) || hash_init(&n->by_netns, 64)) {
		names_stop(n);
		errno = ENOMEM;
		return NULL;
	}
	n->m = m;
	names_metrics(n, m);
	if (!cfg->cri_socket || !*cfg->cri_socket) {
		info_set(n, "cgroup");
		log_info("names", "no CRI runtime socket: pods are named from cgroup paths (pod "
				  "UIDs) only");
		return n;
	}
	if (!n->cfg.connect) {
		n->cfg.connect = connect_direct;
		n->cfg.connect_arg = (void *)cfg->cri_socket;
	}
	n->cri = names_cri_new(n->cfg.connect, n->cfg.connect_arg, cfg->timeout_ms);
	if (!n->cri) {
		names_stop(n);
		return NULL;
	}
	info_set(n, "cgroup"); /* until the runtime answers */
	if (pthread_create(&n->thread, NULL, names_thread, n)) {
		log_warn("names", "cannot start the name service's thread");
		return n;
	}
	pthread_setname_np(n->thread, "sysobs-names");
	n->thread_started = true;
	return n;
}

void names_stop(struct names *n)
{
	struct hash_node *x, *tmp;
	size_t i;

	if (!n)
		return;
	if (n->thread_started) {
		pthread_mutex_lock(&n->lock);
		n->stop = true;
		pthread_cond_broadcast(&n->wake);
		pthread_mutex_unlock(&n->lock);
		pthread_join(n->thread, NULL);
	}
	names_cri_free(n->cri);
	if (n->pods.buckets)
		hash_for_each_safe(&n->pods, i, x, tmp)
			free(hash_entry(x, struct pod_entry, node));
	if (n->ctrs.buckets)
		hash_for_each_safe(&n->ctrs, i, x, tmp)
			free(hash_entry(x, struct ctr_entry, node));
	hash_fini(&n->pods);
	hash_fini(&n->ctrs);
	hash_fini(&n->by_netns);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n);
}
