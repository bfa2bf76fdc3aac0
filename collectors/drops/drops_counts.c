// SPDX-License-Identifier: MIT
/*
 * drops_counts: the kernel's per-key drop counters (bpf/drops.bpf.c: the
 * per-CPU fast slots, then the counts hash) -> sysobs_packet_drops_total,
 * one series per (reason, protocol[, netns][, container]).
 *
 * A kernel key is (reason, L3, L4, netns, cgroup); cgroup is 0 unless
 * container_label asks for it. The object behind a key may go away: a
 * network namespace deleted (the kernel's list, collectors/netns_live.c;
 * by cookie: a key's namespace is its cookie, see struct drops_key),
 * a cgroup removed (its directory gone; cgroup ids are never reused). Such
 * a key is retired at the collect that finds it dead:
 *  - a hash entry is taken out with lookup-and-delete (its final count,
 *    atomically; the map does not fill with churning namespaces/containers);
 *  - a fast slot is never freed (the program owns it, per CPU), so the
 *    count retired there is remembered (slot_off): a namespace that gets a
 *    reused inode number counts from 0;
 *  - when the series it counts in is gone too (its namespace, or every
 *    cgroup of its container), the series gets the final value and is
 *    declared gone (it leaves /metrics after [metrics] stale_series_grace);
 *    otherwise the count is carried in the series, whose total never goes
 *    back (the series without a netns label; the host's series, without a
 *    container).
 * A drop in a gone series' object after that (a namespace's teardown frees
 * its queued packets) is added to the gone series.
 *
 * A namespace label (the inode number) can name two namespaces in turn: the
 * kernel gives a deleted namespace's inode number to the next one made. The
 * series belongs to one of them, its owner: the namespace of that inode
 * number in the kernel's list, else the last owner seen (cookies are not
 * ordered: the kernel hands them out in per-CPU batches). The other
 * namespace's keys are retired and left out at once, whether or not its
 * death was seen before, so the series restarts from the new namespace's
 * count (a counter reset to Prometheus) instead of adding one namespace's
 * drops to the other's. A series of the older namespace that the new one
 * has not counted in (yet) is removed at once, without the grace, at the
 * collect whose walk finds the inode number live under another cookie: it
 * would show the dead namespace's drops under the live one's label (the
 * `graced` list remembers the series of dead namespaces still in their
 * grace, with the cookie they counted).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/buf.h"
#include "base/hash.h"
#include "base/log.h"
#include "bpf/drops.h" /* before its skeleton */
#include "collectors/collector.h"
#include "collectors/drops/drops.h"
#include "collectors/drops/drops_btf.h"
#include "collectors/drops/drops_cgroup.h"
#include "collectors/drops/drops_decode.h"
#include "collectors/drops/drops_priv.h"
#include "collectors/drops/drops_recfile.h"
#include "collectors/netns_live.h"
#include "collectors/sink.h"

#define DROPS_GONE_MAX	4096 /* gone series and namespaces remembered */
#define DROPS_CTR_LEN	12   /* the container label: the short id, as docker ps shows it */
#define DROPS_CTR_TRIES 5    /* collects a cgroup may stay unfound before it is no container */
#define DROPS_CTRS_MAX	16384

#define FROM_HASH  (-1) /* drops_agg.slot */
#define FROM_CARRY (-2)

struct drops_agg {
	uint32_t reason;
	const char *proto; /* static string from drops_protocol_name() */
	uint32_t netns;	   /* the key's */
	uint64_t cookie;   /* the key's netns_cookie */
	uint64_t cgroup;   /* the key's */
	uint64_t count;
	int32_t slot; /* slot_vals index, FROM_HASH or FROM_CARRY */
	int32_t hkey; /* hkeys index, -1 */
	bool dead;    /* its namespace or cgroup is gone */
	/* the series: netns and container label values (0, "": none) */
	uint32_t lnetns;
	char ctr[DROPS_CTR_LEN + 1];
	int32_t pod; /* pod_label: its k->pods index, -1 none */
};

/* pod_label: a network namespace (by cookie, never reused) -> the pod whose
 * sandbox it is, asked of the agent's name service (sink_pod()) at every
 * collect until it answers or DROPS_POD_WAIT_NS passed since the namespace
 * first counted (then no pod: a namespace of no pod; the agent's own is
 * known at once). Its counts wait meanwhile, as those of an unknown
 * container do: a pod's namespace exists, and drops, before the runtime
 * lists its sandbox (CNI setup), and a label decided too early would stay.
 * Entries stay where they are (aggregates hold their index); a full table
 * reuses those of dead namespaces. */
#define DROPS_POD_WAIT_NS (5ll * 1000000000)
struct drops_podns {
	uint64_t cookie;
	int64_t first_ns; /* CLOCK_MONOTONIC */
	bool resolved;
	char pod[254];
	char ns[64];
};
#define DROPS_PODS_MAX 4096

/* cgroup id -> container label, decided once (ids are never reused). */
struct drops_ctr {
	uint64_t id;
	char ctr[DROPS_CTR_LEN + 1];
	uint8_t tries;
	bool resolved, dead;
	uint32_t gen; /* the collect that last checked dead */
};

struct drops_counts {
	int ncpus;
	struct drops_agg *agg;
	size_t agg_cap;
	struct drops_key *hkeys; /* this collect's hash keys */
	size_t hkeys_cap;
	__u32 *slot_keys;	      /* DROPS_SLOTS */
	struct drops_slot *slot_vals; /* DROPS_SLOTS * ncpus */
	uint64_t *slot_off;	      /* per slot and CPU: count retired there */
	struct drops_agg *carry;      /* retired counts of live series */
	size_t ncarry, carry_cap;
	uint64_t *gone; /* hashes of the series declared gone, sorted */
	size_t ngone;
	uint64_t *dead_ns; /* cookies of the namespaces retired, sorted */
	struct drops_owner {
		uint32_t inum;
		uint64_t cookie;
	} * owners; /* the namespace each netns label was last seen naming, by inum */
	size_t nowners, owners_cap;
	struct drops_agg *graced; /* series of dead namespaces, in their grace */
	size_t ngraced, graced_cap;
	size_t ndead_ns;
	struct drops_ctr *ctrs; /* sorted by id */
	size_t nctrs, ctrs_cap;
	struct drops_podns *pods; /* pod_label */
	size_t npods, pods_cap;
	uint64_t netns_gone; /* sysobs_drops_netns_gone_total */
	uint64_t retired;    /* counts of gone series, out of every map */
	uint64_t pending;    /* counts not published yet (container unknown) */
	uint32_t gen;	     /* collects */
	bool walk_ok, walk_warned;
};

struct drops_counts *drops_counts_new(int ncpus)
{
	struct drops_counts *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->ncpus = ncpus;
	k->slot_keys = calloc(DROPS_SLOTS, sizeof(*k->slot_keys));
	k->slot_vals = calloc((size_t)DROPS_SLOTS * ncpus, sizeof(*k->slot_vals));
	k->slot_off = calloc((size_t)DROPS_SLOTS * ncpus, sizeof(*k->slot_off));
	k->gone = calloc(DROPS_GONE_MAX, sizeof(*k->gone));
	k->dead_ns = calloc(DROPS_GONE_MAX, sizeof(*k->dead_ns));
	if (!k->slot_keys || !k->slot_vals || !k->slot_off || !k->gone || !k->dead_ns) {
		drops_counts_free(k);
		return NULL;
	}
	return k;
}

void drops_counts_free(struct drops_counts *k)
{
	if (!k)
		return;
	free(k->agg);
	free(k->hkeys);
	free(k->slot_keys);
	free(k->slot_vals);
	free(k->slot_off);
	free(k->carry);
	free(k->gone);
	free(k->dead_ns);
	free(k->owners);
	free(k->graced);
	free(k->ctrs);
	free(k->pods);
	free(k);
}

/* --- small sets ------------------------------------------------------------ */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted insert into a set of at most DROPS_GONE_MAX; a full set starts
 * over (what it forgets: a later teardown drop counts as a first). true:
 * newly added. */
static bool set_add(void *set, size_t *n, size_t size, const void *v,
		    int (*cmp)(const void *, const void *))
{
	char *s = set;
	size_t i = 0;

	if (bsearch(v, set, *n, size, cmp))
		return false;
	if (*n == DROPS_GONE_MAX)
		*n = 0;
	while (i < *n && cmp(s + i * size, v) < 0)
		i++;
	memmove(s + (i + 1) * size, s + i * size, (*n - i) * size);
	memcpy(s + i * size, v, size);
	(*n)++;
	return true;
}

/* The series' labels, hashed (FNV-1a): what the gone set remembers. */
static uint64_t series_hash(const struct drops_agg *a)
{
	uint32_t nums[2] = {a->reason, a->lnetns};
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, nums, sizeof(nums));

	h = hash_fnv1a_str(h, a->proto);
	return hash_fnv1a_str(h, a->ctr);
}

/* --- container labels ------------------------------------------------------ */

static struct drops_ctr *ctr_find(struct drops_counts *k, uint64_t id)
{
	size_t lo = 0, hi = k->nctrs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (k->ctrs[mid].id == id)
			return &k->ctrs[mid];
		if (k->ctrs[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static struct drops_ctr *ctr_get(struct drops_counts *k, uint64_t id)
{
	struct drops_ctr *c = ctr_find(k, id), *p;
	size_t i = 0;

	if (c)
		return c;
	if (k->nctrs >= DROPS_CTRS_MAX) { /* forget the dead ones */
		size_t j = 0;

		for (i = 0; i < k->nctrs; i++)
			if (!k->ctrs[i].dead)
				k->ctrs[j++] = k->ctrs[i];
		k->nctrs = j;
		if (j >= DROPS_CTRS_MAX)
			return NULL;
	}
	p = array_grow(k->ctrs, &k->ctrs_cap, k->nctrs, sizeof(*k->ctrs), 64);
	if (!p)
		return NULL;
	k->ctrs = p;
	for (i = 0; i < k->nctrs && k->ctrs[i].id < id; i++)
		;
	memmove(k->ctrs + i + 1, k->ctrs + i, (k->nctrs - i) * sizeof(*k->ctrs));
	k->nctrs++;
	c = &k->ctrs[i];
	memset(c, 0, sizeof(*c));
	c->id = id;
	return c;
}

/* Labels a (its ctr) from its cgroup, and tells whether the cgroup is
 * gone. false: not known yet (leave a out of this collect). */
static bool ctr_label(struct drops_state *st, struct drops_agg *a)
{
	struct drops_counts *k = st->counts;
	char path[256], id[65];
	struct drops_ctr *c;
	int err;

	a->ctr[0] = '\0';
	if (!a->cgroup)
		return true;
	c = ctr_get(k, a->cgroup);
	if (!c)
		return true; /* no memory: the host's series */
	if (!c->resolved) {
		err = drops_cgroups_path(st->cgroups, a->cgroup, path, sizeof(path));
		if (!err) {
			if (drops_container_id(path, id, sizeof(id)))
				snprintf(c->ctr, sizeof(c->ctr), "%.*s", DROPS_CTR_LEN, id);
			c->resolved = true;
		} else if (!st->cgroups || ++c->tries >= DROPS_CTR_TRIES) {
			c->resolved = true; /* never found: no container */
		} else {
			return false;
		}
	}
	if (!c->dead && c->gen != k->gen) {
		c->gen = k->gen; /* one check a collect, however many keys */
		c->dead = drops_cgroups_alive(st->cgroups, a->cgroup) == 0;
	}
	a->dead = a->dead || c->dead;
	memcpy(a->ctr, c->ctr, sizeof(a->ctr));
	return true;
}

/* --- pod labels --------------------------------------------------------------- */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool netns_dead(const struct drops_state *st, uint64_t cookie);

static struct drops_podns *podns_get(struct drops_state *st, uint64_t cookie)
{
	struct drops_counts *k = st->counts;
	struct drops_podns *p;

	for (size_t i = 0; i < k->npods; i++)
		if (k->pods[i].cookie == cookie)
			return &k->pods[i];
	if (k->npods >= DROPS_PODS_MAX) {
		for (size_t i = 0; i < k->npods; i++)
			if (netns_dead(st, k->pods[i].cookie)) {
				p = &k->pods[i];
				goto out_reuse;
			}
		return NULL;
	}
	p = array_grow(k->pods, &k->pods_cap, k->npods, sizeof(*k->pods), 16);
	if (!p)
		return NULL;
	k->pods = p;
	p = &k->pods[k->npods++];
out_reuse:
	memset(p, 0, sizeof(*p));
	p->cookie = cookie;
	p->first_ns = mono_ns();
	return p;
}

/* The inode of the agent's own network namespace (the host's, run as a
 * DaemonSet with hostNetwork): never a pod's. 0 unknown. */
static uint32_t self_netns(void)
{
	static uint32_t ino;
	struct stat st;

	if (!ino && !stat("/proc/self/ns/net", &st))
		ino = (uint32_t)st.st_ino;
	return ino;
}

/* Sets a->pod from its namespace. false: not known yet (leave a out of
 * this collect, as an unknown container is). */
static bool pod_label(struct drops_state *st, struct drops_agg *a)
{
	struct drops_podns *p;
	struct sink_pod sp;

	a->pod = -1;
	if (!a->netns || !a->cookie)
		return true;
	p = podns_get(st, a->cookie);
	if (!p)
		return true; /* no room: no pod label */
	if (!p->resolved) {
		if (!sink_pod(st->c->sink, "", "", a->netns, &sp) && sp.pod[0]) {
			snprintf(p->pod, sizeof(p->pod), "%s", sp.pod);
			snprintf(p->ns, sizeof(p->ns), "%s", sp.pod_namespace);
			p->resolved = true;
		} else if (a->netns == self_netns() ||
			   mono_ns() - p->first_ns >= DROPS_POD_WAIT_NS) {
			p->resolved = true; /* no pod's */
		} else {
			return false;
		}
	}
	a->pod = (int32_t)(p - st->counts->pods);
	return true;
}

/* --- reading the kernel's counters ----------------------------------------- */

static struct drops_agg *agg_next(struct drops_counts *k, size_t *n)
{
	struct drops_agg *p = array_grow(k->agg, &k->agg_cap, *n, sizeof(*k->agg), 64);

	if (!p)
		return NULL;
	k->agg = p;
	return &k->agg[(*n)++];
}

static int agg_add(struct drops_counts *k, size_t *n, const struct drops_key *key, uint64_t count,
		   int32_t slot, int32_t hkey)
{
	struct drops_agg *a = agg_next(k, n);

	if (!a)
		return -ENOMEM;
	memset(a, 0, sizeof(*a));
	a->reason = key->reason;
	a->proto = drops_protocol_name(key->l3_proto, key->l4_proto);
	a->netns = key->netns;
	a->cookie = key->netns_cookie;
	a->cgroup = key->cgroup;
	a->count = count;
	a->slot = slot;
	a->hkey = hkey;
	return 0;
}

static int hkey_push(struct drops_counts *k, size_t i, const struct drops_key *key)
{
	struct drops_key *p = array_grow(k->hkeys, &k->hkeys_cap, i, sizeof(*k->hkeys), 64);

	if (!p)
		return -ENOMEM;
	k->hkeys = p;
	k->hkeys[i] = *key;
	return 0;
}

/* The counts hash: every key with its sum over the CPUs. */
static int read_hash(struct drops_state *st, size_t *n, size_t *n_hash)
{
	struct drops_counts *k = st->counts;
	struct drops_key key, *prev = NULL;
	int err;

	*n_hash = 0;
	while (st->src->next_key(st, prev, &key) == 0) {
		uint64_t sum = 0;

		if ((err = hkey_push(k, *n_hash, &key)))
			return err;
		prev = &k->hkeys[*n_hash];
		if (drops_sum_percpu(st, DROPS_MAP_COUNTS, &key, &sum))
			continue; /* deleted since: cannot happen, the agent is the only reader */
		if ((err = agg_add(k, n, &key, sum, FROM_HASH, (int32_t)*n_hash)))
			return err;
		(*n_hash)++;
	}
	return 0;
}

/* The fast slot table, every slot of every CPU (drops_source.c). A slot's
 * count goes on from what a retired key left in it (slot_off). */
static int read_slots(struct drops_state *st, size_t *n)
{
	struct drops_counts *k = st->counts;
	__u32 count = 0;
	int err;

	if ((err = st->src->slots(st, k->slot_keys, k->slot_vals, &count)))
		return err;
	for (__u32 i = 0; i < count; i++) {
		for (int cpu = 0; cpu < k->ncpus; cpu++) {
			int32_t pos = (int32_t)(i * k->ncpus + cpu);
			const struct drops_slot *sl = &k->slot_vals[pos];

			if (sl->count > k->slot_off[pos] &&
			    (err = agg_add(k, n, &sl->key, sl->count - k->slot_off[pos], pos, -1)))
				return err;
		}
	}
	return 0;
}

/* The kernel's list of namespaces, read after the keys (a namespace made
 * in between is not among them). */
static void read_netns(struct collector *c, struct drops_state *st)
{
	struct drops_counts *k = st->counts;
	int err;

	k->walk_ok = false;
	if (!st->live)
		return;
	err = netns_live_snapshot(st->live);
	if (err) {
		/* nothing is judged gone this time */
		if (!k->walk_warned)
			clog_warn(c,
				  "network namespace list: %s; counters of deleted namespaces stay "
				  "until it reads again",
				  strerror(-err));
		k->walk_warned = true;
		return;
	}
	k->walk_ok = true;
	k->walk_warned = false;
}

/* The namespace of that cookie is gone (0: no namespace, never dead). */
static bool netns_dead(const struct drops_state *st, uint64_t cookie)
{
	return cookie && st->counts->walk_ok && !netns_live_has_cookie(st->live, cookie);
}

/* Labels every entry and marks the dead ones; drops those whose container
 * is not known yet (counted in k->pending, published once it is). */
static size_t label_entries(struct drops_state *st, size_t n)
{
	struct drops_counts *k = st->counts;
	const struct drops_cfg *cfg = st->cfg;
	size_t j = 0;

	k->pending = 0;
	for (size_t i = 0; i < n; i++) {
		struct drops_agg *a = &k->agg[i];

		a->lnetns = cfg->netns_label ? a->netns : 0;
		a->pod = -1;
		a->dead = netns_dead(st, a->cookie);
		if (a->dead &&
		    set_add(k->dead_ns, &k->ndead_ns, sizeof(uint64_t), &a->cookie, u64_cmp))
			k->netns_gone++;
		if (cfg->container_label && !ctr_label(st, a)) {
			k->pending += a->count;
			continue;
		}
		if (!cfg->container_label)
			a->ctr[0] = '\0';
		if (cfg->pod_label) {
			if (!pod_label(st, a)) {
				k->pending += a->count;
				continue;
			}
			/* one series per pod: its namespace splits them even
			 * without the netns label */
			if (a->pod >= 0 && k->pods[a->pod].pod[0])
				a->lnetns = a->netns;
		}
		k->agg[j++] = *a;
	}
	return j;
}

/* --- retiring and publishing ------------------------------------------------ */

static bool same_series(const struct drops_agg *x, const struct drops_agg *y)
{
	return x->reason == y->reason && !strcmp(x->proto, y->proto) && x->lnetns == y->lnetns &&
	       !strcmp(x->ctr, y->ctr);
}

static int agg_cmp(const void *a, const void *b)
{
	const struct drops_agg *x = a, *y = b;
	int r;

	if (x->reason != y->reason)
		return x->reason < y->reason ? -1 : 1;
	if ((r = strcmp(x->proto, y->proto)))
		return r;
	if (x->lnetns != y->lnetns)
		return x->lnetns < y->lnetns ? -1 : 1;
	return strcmp(x->ctr, y->ctr);
}

static int carry_add(struct drops_counts *k, const struct drops_agg *a)
{
	struct drops_agg *p;

	for (size_t i = 0; i < k->ncarry; i++) {
		if (same_series(&k->carry[i], a) && k->carry[i].cookie == a->cookie) {
			k->carry[i].count += a->count;
			return 0;
		}
	}
	p = array_grow(k->carry, &k->carry_cap, k->ncarry, sizeof(*k->carry), 64);
	if (!p)
		return -ENOMEM;
	k->carry = p;
	p = &k->carry[k->ncarry++];
	*p = *a;
	p->slot = FROM_CARRY;
	p->hkey = -1;
	p->dead = false;
	return 0;
}

/* Forgets what the series of a carries, but what its namespace of cookie
 * keep (UINT64_MAX: none) carries. */
static void carry_drop(struct drops_counts *k, const struct drops_agg *a, uint64_t keep)
{
	size_t j = 0;

	for (size_t i = 0; i < k->ncarry; i++)
		if (!same_series(&k->carry[i], a) || k->carry[i].cookie == keep)
			k->carry[j++] = k->carry[i];
	k->ncarry = j;
}

/* Takes a dead entry out of the kernel's counting: its final count.
 * *deleted: hash entries freed. */
static void retire(struct drops_state *st, struct drops_agg *a, size_t *deleted)
{
	struct drops_counts *k = st->counts;

	if (a->slot >= 0) {
		k->slot_off[a->slot] = k->slot_vals[a->slot].count;
	} else if (a->hkey >= 0 && !st->src->take(st, &k->hkeys[a->hkey], st->percpu)) {
		uint64_t sum = 0;

		for (int cpu = 0; cpu < k->ncpus; cpu++)
			sum += st->percpu[cpu];
		a->count = sum;
		(*deleted)++;
	}
}

static struct drops_owner *owner_find(struct drops_counts *k, uint32_t inum, size_t *at)
{
	size_t lo = 0, hi = k->nowners;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (k->owners[mid].inum == inum)
			return &k->owners[mid];
		if (k->owners[mid].inum < inum)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return NULL;
}

/* Remembers that the label inum names the namespace of cookie. A full
 * table forgets the labels of namespaces not in the kernel's list. */
static void owner_set(struct drops_state *st, uint32_t inum, uint64_t cookie)
{
	struct drops_counts *k = st->counts;
	struct drops_owner *o, *p;
	size_t at = 0, j = 0;

	if ((o = owner_find(k, inum, &at))) {
		o->cookie = cookie;
		return;
	}
	if (k->nowners >= DROPS_GONE_MAX) {
		for (size_t i = 0; i < k->nowners; i++)
			if (k->walk_ok && netns_live_has(st->live, k->owners[i].inum))
				k->owners[j++] = k->owners[i];
		k->nowners = j;
		if (j >= DROPS_GONE_MAX || owner_find(k, inum, &at))
			return;
	}
	p = array_grow(k->owners, &k->owners_cap, k->nowners, sizeof(*k->owners), 64);
	if (!p)
		return; /* no memory: the last owner is not remembered */
	k->owners = p;
	memmove(p + at + 1, p + at, (k->nowners - at) * sizeof(*p));
	p[at] = (struct drops_owner){inum, cookie};
	k->nowners++;
}

/*
 * The namespace a netns-labelled series [a, b) belongs to (its cookie): the
 * one of that inode number in the kernel's list; else the last one seen
 * there, if it counted here; else the one that counted most. 0 without a
 * netns label, or for netns 0 (unknown).
 */
static uint64_t series_owner(struct drops_state *st, const struct drops_agg *a,
			     const struct drops_agg *b)
{
	struct drops_counts *k = st->counts;
	uint64_t live, best = 0, best_count = 0;
	const struct drops_owner *o;
	size_t at;

	if ((!st->cfg->netns_label && !st->cfg->pod_label) || !a->lnetns)
		return 0;
	live = k->walk_ok ? netns_live_cookie(st->live, a->lnetns) : 0;
	if (live) {
		owner_set(st, a->lnetns, live);
		return live;
	}
	o = owner_find(k, a->lnetns, &at);
	for (const struct drops_agg *x = a; x < b; x++) {
		if (o && x->cookie == o->cookie)
			return o->cookie;
		if (!best || x->count > best_count)
			best = x->cookie, best_count = x->count;
	}
	owner_set(st, a->lnetns, best);
	return best;
}

/* Is the object of the series [a, b) gone: its namespace (owner), or (with
 * a container) every cgroup of it that counted here? */
static bool series_dead(const struct drops_state *st, const struct drops_agg *a,
			const struct drops_agg *b, uint64_t owner)
{
	if (owner && netns_dead(st, owner))
		return true;
	if (!a->ctr[0])
		return false;
	for (const struct drops_agg *x = a; x < b; x++)
		if (x->slot != FROM_CARRY && !x->dead)
			return false;
	return true;
}

/* The label values of the series of a, as the family of the config has
 * them (pod and pod_namespace only with_pod); reason and netns are its
 * buffers. */
static void series_values(const struct drops_state *st, const struct drops_agg *a, bool with_pod,
			  char reason[DROPS_REASON_NAME_MAX], char netns[16], const char *values[7])
{
	const struct drops_cfg *cfg = st->cfg;
	int v = 2;

	drops_reason_format(st->reasons, a->reason, reason, DROPS_REASON_NAME_MAX);
	snprintf(netns, 16, "%" PRIu32, a->lnetns);
	values[0] = reason;
	values[1] = a->proto;
	for (int i = 2; i < 7; i++)
		values[i] = NULL;
	if (cfg->netns_label)
		values[v++] = netns;
	if (cfg->container_label)
		values[v++] = a->ctr;
	if (with_pod && cfg->pod_label) {
		const struct drops_podns *p = a->pod >= 0 ? &st->counts->pods[a->pod] : NULL;

		values[v++] = p ? p->pod : "";
		values[v++] = p ? p->ns : "";
	}
}

/* The series of a (its labels) out of /metrics at once, if it is there. */
static void series_remove(struct collector *c, struct drops_state *st, const struct drops_agg *a)
{
	char reason[DROPS_REASON_NAME_MAX], netns[16];
	const char *values[7];

	series_values(st, a, false, reason, netns, values);
	sink_series_remove(c->sink, st->drops, sink_series(c->sink, st->drops, values));
}

/* Remembers the series of a, declared gone, as counting the namespace of
 * cookie. A full list starts over (what it forgets: a reuse of one of those
 * inode numbers within the grace shows the old value until the grace ends). */
static void graced_add(struct drops_counts *k, const struct drops_agg *a, uint64_t cookie)
{
	struct drops_agg *p;

	if (k->ngraced >= DROPS_GONE_MAX)
		k->ngraced = 0;
	p = array_grow(k->graced, &k->graced_cap, k->ngraced, sizeof(*k->graced), 64);
	if (!p)
		return;
	k->graced = p;
	p = &k->graced[k->ngraced++];
	*p = *a;
	p->cookie = cookie;
}

/* Removes the series of dead namespaces whose inode number the walk finds
 * live under another cookie (a new namespace got it); before the keys are
 * published, so that the new namespace's own drops, if any, show again in
 * this collect. */
static void graced_reused(struct collector *c, struct drops_state *st)
{
	struct drops_counts *k = st->counts;
	size_t j = 0;

	if (!k->walk_ok)
		return;
	for (size_t i = 0; i < k->ngraced; i++) {
		struct drops_agg *g = &k->graced[i];
		uint64_t live = netns_live_cookie(st->live, g->lnetns);

		if (live && live != g->cookie)
			series_remove(c, st, g);
		else
			k->graced[j++] = *g;
	}
	k->ngraced = j;
}

/* Sums the keys [a, b) of one series into *total: those of another
 * namespace than its owner (an older one with this inode number: dead, its
 * series taken over) out of the maps and the series, dead ones retired.
 * false: no key of the owner (only keys of the label's earlier namespaces). */
static bool series_tally(struct drops_state *st, struct drops_agg *a, struct drops_agg *b,
			 uint64_t owner, size_t *deleted, uint64_t *total)
{
	struct drops_counts *k = st->counts;
	bool owned = !owner;

	*total = 0;
	for (struct drops_agg *x = a; x < b; x++) {
		if (owner && x->cookie != owner) {
			if (x->slot != FROM_CARRY)
				retire(st, x, deleted);
			k->retired += x->count;
			x->count = 0;
			continue;
		}
		owned = true;
		if (x->dead && x->slot != FROM_CARRY)
			retire(st, x, deleted);
		*total += x->count;
	}
	if (owner)
		carry_drop(k, a, owner);
	return owned;
}

/* A dead series, published with its final value: gone (it leaves /metrics
 * after the grace), remembered as such, its carried counts forgotten. */
static void series_gone(struct collector *c, struct drops_state *st, const struct drops_agg *a,
			struct sink_series *s, uint64_t owner, uint64_t hash)
{
	struct drops_counts *k = st->counts;

	sink_series_gone(c->sink, st->drops, s);
	if (owner)
		graced_add(k, a, owner);
	carry_drop(k, a, UINT64_MAX);
	set_add(k->gone, &k->ngone, sizeof(uint64_t), &hash, u64_cmp);
}

/* A live series (again: a reused inode number): a later death is a first
 * one, and it keeps what its dead keys counted. */
static int series_live(struct drops_state *st, struct drops_agg *a, struct drops_agg *b)
{
	struct drops_counts *k = st->counts;
	int err;

	if (k->ngone) {
		uint64_t hash = series_hash(a), *g;

		g = bsearch(&hash, k->gone, k->ngone, sizeof(*k->gone), u64_cmp);
		if (g) {
			memmove(g, g + 1, (size_t)(k->gone + k->ngone - g - 1) * sizeof(*g));
			k->ngone--;
		}
	}
	for (struct drops_agg *x = a; x < b; x++)
		if (x->dead && x->count && x->slot != FROM_CARRY && (err = carry_add(k, x)))
			return err;
	return 0;
}

static int publish_series(struct collector *c, struct drops_state *st, struct drops_agg *a,
			  struct drops_agg *b, size_t *deleted)
{
	struct drops_counts *k = st->counts;
	char reason[DROPS_REASON_NAME_MAX], netns[16];
	const char *values[7];
	uint64_t owner = series_owner(st, a, b), total, hash = 0;
	bool dead = series_dead(st, a, b, owner), again = false;
	struct sink_series *s;
	int err;

	/* only keys of the label's earlier namespace(s): nothing to show yet,
	 * and what the series showed was theirs */
	if (!series_tally(st, a, b, owner, deleted, &total)) {
		series_remove(c, st, a);
		return 0;
	}
	if (dead) {
		hash = series_hash(a);
		again = bsearch(&hash, k->gone, k->ngone, sizeof(*k->gone), u64_cmp) != NULL;
		k->retired += total; /* out of every map from now on */
		if (again && !total)
			return 0;
	}
	drops_maybe_rescan(st, a->reason);
	series_values(st, a, true, reason, netns, values);
	s = sink_series(c->sink, st->drops, values);
	if (!s) {
		err = -errno;
		return err ? err : -ENOMEM;
	}
	if (again)
		sink_add(c->sink, s, (double)total);
	else
		sink_set(c->sink, s, (double)total);
	if (dead) {
		series_gone(c, st, a, s, owner, hash);
		return 0;
	}
	return series_live(st, a, b);
}

bool drops_counts_netns_gone(const struct drops_counts *k, uint64_t cookie)
{
	return k && cookie &&
	       bsearch(&cookie, k->dead_ns, k->ndead_ns, sizeof(*k->dead_ns), u64_cmp);
}

int drops_publish_counts(struct collector *c, struct drops_state *st)
{
	struct drops_counts *k = st->counts;
	size_t n = 0, n_hash = 0, deleted = 0, i, j;
	uint64_t retired_before = k->retired;
	int err;

	if ((err = read_hash(st, &n, &n_hash)) || (err = read_slots(st, &n)))
		return err;
	read_netns(c, st);
	k->gen++;
	n = label_entries(st, n);
	for (i = 0; i < k->ncarry; i++) {
		struct drops_agg *a = agg_next(k, &n);

		if (!a)
			return -ENOMEM;
		*a = k->carry[i];
	}
	/* every drop so far: what is in the maps, carried, pending, retired */
	st->events = k->pending + retired_before;
	for (i = 0; i < n; i++)
		st->events += k->agg[i].count;
	graced_reused(c, st);
	if (n)
		qsort(k->agg, n, sizeof(*k->agg), agg_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && same_series(&k->agg[i], &k->agg[j]); j++)
			;
		if ((err = publish_series(c, st, &k->agg[i], &k->agg[j], &deleted)))
			return err;
	}
	sink_set(c->sink, st->keys, (double)(n_hash - deleted));
	sink_set(c->sink, st->netns_live_s, (double)netns_live_count(st->live));
	sink_set(c->sink, st->netns_gone_s, (double)k->netns_gone);
	return 0;
}
