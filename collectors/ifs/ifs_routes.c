// SPDX-License-Identifier: MIT
/*
 * The ifs collector's own routes, on HTTP threads: the cores' live state
 * (GET /api/v1/ifs/cores) and scans asked for by an operator (POST
 * /api/v1/ifs/scans, admin only). Both read or queue under p->lock and wake
 * the main loop through its eventfd; nothing here touches sysfs.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/log.h"
#include "api/proto/pbmsg.h"
#include "api/proto/sysobs.pb-c.h"
#include "collectors/ifs/ifs_priv.h"
#include "collectors/ifs/ifs_request.h"

/* The collector state with p->lock held, or NULL after an error reply. The
 * agent only calls a route of a running collector; start() may not have
 * finished yet. */
static struct ifs_priv *route_lock(struct collector *c, struct route_reply *rep)
{
	struct ifs_priv *p = c->priv;

	if (!p) {
		route_error(rep, 503, "unavailable", "the ifs collector is not started");
		return NULL;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->started) {
		pthread_mutex_unlock(&p->lock);
		route_error(rep, 503, "unavailable", "the ifs collector is starting");
		return NULL;
	}
	return p;
}

/* The last result of test t on a core; only the test when it never ran. */
static Sysobs__V1__IfsTestResult *test_result_msg(struct arena *ar, enum ifs_test t,
						  const struct ifs_last *l)
{
	Sysobs__V1__IfsTestResult *m =
	    PBMSG_NEW(ar, Sysobs__V1__IfsTestResult, sysobs__v1__ifs_test_result__descriptor);

	if (!m)
		return NULL;
	m->test = arena_strdup(ar, ifs_test_name(t));
	if (l->tested_ns)
		m->last_tested = pbmsg_time(ar, l->tested_ns);
	if (!l->has)
		return m;
	m->status = arena_strdup(ar, ifs_result_name(l->result));
	m->_status_case = SYSOBS__V1__IFS_TEST_RESULT___STATUS_STATUS;
	m->time = pbmsg_time(ar, l->ts_ns);
	if (l->cpu >= 0) {
		m->cpu = (uint32_t)l->cpu;
		m->_cpu_case = SYSOBS__V1__IFS_TEST_RESULT___CPU_CPU;
	}
	m->details = arena_printf(ar, "%#" PRIx64, l->details);
	m->_details_case = SYSOBS__V1__IFS_TEST_RESULT___DETAILS_DETAILS;
	if (l->error_name[0]) {
		m->error_name = arena_strdup(ar, l->error_name);
		m->_error_name_case = SYSOBS__V1__IFS_TEST_RESULT___ERROR_NAME_ERROR_NAME;
	}
	if (l->scan_id) {
		m->scan_id = (int64_t)l->scan_id;
		m->_scan_id_case = SYSOBS__V1__IFS_TEST_RESULT___SCAN_ID_SCAN_ID;
	}
	return m;
}

/* Core i of the topology with the last result of every present test.
 * p->lock held. */
static Sysobs__V1__IfsCore *core_msg(struct arena *ar, struct ifs_priv *p, size_t i)
{
	const struct ifs_core_info *ci = &p->topo.cores[i];
	Sysobs__V1__IfsCore *m =
	    PBMSG_NEW(ar, Sysobs__V1__IfsCore, sysobs__v1__ifs_core__descriptor);

	if (!m)
		return NULL;
	m->package = (uint32_t)ci->package;
	m->core = (uint32_t)ci->core_id;
	m->allowed = ifs_sched_core_allowed(&p->sched, i);
	if (ifs_skip_name(ifs_sched_core_skip(&p->sched, i))) {
		m->skip_reason = (char *)ifs_skip_name(ifs_sched_core_skip(&p->sched, i));
		m->_skip_reason_case = SYSOBS__V1__IFS_CORE___SKIP_REASON_SKIP_REASON;
	}
	m->cpus = arena_alloc(ar, (ci->n_cpus ? ci->n_cpus : 1) * sizeof(*m->cpus));
	m->last = arena_alloc(ar, IFS_TEST_MAX * sizeof(*m->last));
	if (!m->cpus || !m->last)
		return NULL;
	for (unsigned k = 0; k < ci->n_cpus; k++) {
		m->cpus[m->n_cpus++] = (uint32_t)ci->cpus[k];
		m->online |= ci->online[k];
	}
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		if (!p->dev[t].present)
			continue;
		if (!(m->last[m->n_last++] = test_result_msg(ar, t, &p->last[i][t])))
			return NULL;
	}
	return m;
}

static Sysobs__V1__IfsDevice *device_msg(struct arena *ar, enum ifs_test t, const struct ifs_dev *d)
{
	Sysobs__V1__IfsDevice *m =
	    PBMSG_NEW(ar, Sysobs__V1__IfsDevice, sysobs__v1__ifs_device__descriptor);

	if (!m)
		return NULL;
	m->device = arena_printf(ar, "intel_ifs_%d", t);
	m->test = arena_strdup(ar, ifs_test_name(t));
	m->image_loaded = d->image_loaded;
	if (t == IFS_TEST_ARRAY) /* runs without an image */
		return m;
	if (d->image_text[0]) {
		m->image_version = arena_strdup(ar, d->image_text);
		m->_image_version_case = SYSOBS__V1__IFS_DEVICE___IMAGE_VERSION_IMAGE_VERSION;
	}
	if (d->batch_loaded) {
		m->batch = d->batch;
		m->_batch_case = SYSOBS__V1__IFS_DEVICE___BATCH_BATCH;
	}
	return m;
}

/* GET /api/v1/ifs/cores -> IfsCoreList: every core with its CPUs, flags and
 * last results, the devices, the scheduler. */
static void route_cores(struct collector *c, const struct route_request *req,
			struct route_reply *rep)
{
	struct arena *ar = req->arena;
	Sysobs__V1__IfsCoreList *m;
	struct ifs_priv *p;

	if (!(p = route_lock(c, rep)))
		return;
	m = PBMSG_NEW(ar, Sysobs__V1__IfsCoreList, sysobs__v1__ifs_core_list__descriptor);
	if (!m)
		goto out_nomem;
	m->data = arena_alloc(ar, (p->topo.n_cores ? p->topo.n_cores : 1) * sizeof(*m->data));
	m->devices = arena_alloc(ar, IFS_TEST_MAX * sizeof(*m->devices));
	m->scheduler =
	    PBMSG_NEW(ar, Sysobs__V1__IfsScheduler, sysobs__v1__ifs_scheduler__descriptor);
	if (!m->data || !m->devices || !m->scheduler)
		goto out_nomem;
	for (size_t i = 0; i < p->topo.n_cores; i++)
		if (!(m->data[m->n_data++] = core_msg(ar, p, i)))
			goto out_nomem;
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		if (!p->dev[t].present)
			continue;
		if (!(m->devices[m->n_devices++] = device_msg(ar, t, &p->dev[t])))
			goto out_nomem;
	}
	m->scheduler->enabled = p->schedule;
	m->scheduler->running = p->running;
	m->scheduler->pending = (uint32_t)(ifs_sched_pending(&p->sched) + p->n_reqs);
	m->scheduler->hour_used_ms =
	    (uint32_t)(ifs_sched_hour_used(&p->sched, clock_mono_ns()) / MS_NS);
	pthread_mutex_unlock(&p->lock);
	rep->msg = &m->base;
	return;

out_nomem:
	pthread_mutex_unlock(&p->lock);
	route_error(rep, 500, "internal", "out of memory");
}

/* Finds the core of a cpu or (package, core) in the topology; -1 if none. */
static int core_of_cpu(const struct ifs_priv *p, long long cpu)
{
	if (cpu < 0 || cpu >= IFS_MAX_CPUS)
		return -1;
	return p->topo.cpu_core[cpu];
}

/*
 * POST /api/v1/ifs/scans (admin), body IfsScanRequest -> 202 IfsScanReply:
 * one scan per selected core and test, queued all or nothing (400 for a
 * CPU or core that does not exist, 409 for one that cannot be scanned or a
 * test that cannot run here, 503 when too many are pending). The results
 * come in GET /api/v1/ifs/scans?scan_id=N, the history route of ifs_scans.
 */
/* The cores a scan request names, as indexes into p->topo.cores (sel) with
 * the CPU asked for or -1 (sel_cpu); 0, or -1 with the answer in rep. */
struct scan_selection {
	size_t n;
	int core[IFS_MAX_CPUS];
	int cpu[IFS_MAX_CPUS];
};

static void scan_select_add(struct scan_selection *s, int core, int cpu)
{
	if (s->n < IFS_MAX_CPUS) {
		s->cpu[s->n] = cpu;
		s->core[s->n++] = core;
	}
}

static int scan_target_core(const struct ifs_priv *p, const struct ifs_scan_request *rq,
			    const struct ifs_scan_target *tg, struct scan_selection *s)
{
	int found = -1;

	if (rq->by_cpu)
		return core_of_cpu(p, tg->id);
	for (size_t k = 0; k < p->topo.n_cores; k++) {
		if (p->topo.cores[k].core_id != tg->id)
			continue;
		if (tg->package >= 0) {
			if (p->topo.cores[k].package == tg->package)
				found = (int)k;
			continue;
		}
		/* A core id alone: every package's core of that id. */
		if (found >= 0)
			scan_select_add(s, found, -1);
		found = (int)k;
	}
	return found;
}

static int scan_select(const struct ifs_priv *p, const struct ifs_scan_request *rq,
		       struct scan_selection *s, struct route_reply *rep)
{
	for (size_t i = 0; i < rq->n; i++) {
		const struct ifs_scan_target *tg = &rq->targets[i];
		int found = scan_target_core(p, rq, tg, s);

		if (found < 0 && rq->by_cpu && tg->id < IFS_MAX_CPUS &&
		    ifs_cpu_isset(p->topo.offline, (unsigned)tg->id)) {
			/* What sysfs says of an offline CPU sysobs never saw
			 * online: it exists, its core is unknown. */
			route_error(rep, 409, "conflict",
				    "cpus[%zu]: CPU %d is offline and its core unknown (the kernel "
				    "removes the topology of an offline CPU)",
				    i, tg->id);
			return -1;
		}
		if (found < 0) {
			route_error(rep, 400, "bad_request", "%s[%zu]: no such %s%s",
				    rq->by_cpu ? "cpus" : "cores", i, rq->by_cpu ? "CPU" : "core",
				    rq->by_cpu ? ""
					       : " (a core whose CPUs are all offline is unknown "
						 "until one is back online)");
			return -1;
		}
		scan_select_add(s, found, rq->by_cpu ? tg->id : -1);
	}
	return 0;
}

/* Every core scannable, or -1 with the answer: all or nothing. */
static int scan_check_cores(struct ifs_priv *p, const struct scan_selection *s,
			    struct route_reply *rep)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct ifs_core_info *ci = &p->topo.cores[s->core[i]];
		enum ifs_skip why = ifs_sched_core_skip(&p->sched, s->core[i]);

		if (why == IFS_SKIP_NONE)
			continue;
		route_error(rep, 409, "conflict", "package %d core %d cannot be scanned: %s",
			    ci->package, ci->core_id,
			    why == IFS_SKIP_DENIED ? "excluded by allow_cpus/deny_cpus"
			    : why == IFS_SKIP_OFFLINE
				? "all of its CPUs are offline"
				: "one of its CPUs is offline (the driver "
				  "tests a core with all of its siblings online)");
		return -1;
	}
	/* Requests wait for one core at a time: bound the backlog. */
	if (p->n_reqs + ifs_sched_pending(&p->sched) + s->n * IFS_TEST_MAX > IFS_MAX_PENDING) {
		route_error(rep, 503, "busy",
			    "more than %d scans already pending; retry when they ran",
			    IFS_MAX_PENDING);
		return -1;
	}
	return 0;
}

/* Queue one core's requests (every test of test_mask) and describe them in
 * out; nothing here may fail: the memory was taken before. */
static void scan_queue_core(struct ifs_priv *p, const struct scan_selection *s, size_t i,
			    unsigned test_mask, Sysobs__V1__IfsScanReply *out,
			    Sysobs__V1__IfsQueuedScan *qs)
{
	const struct ifs_core_info *ci = &p->topo.cores[s->core[i]];
	int cpu = ifs_sched_core_cpu(&p->sched, s->core[i]);

	/* The thread asked for runs the test if it is online. */
	for (unsigned k = 0; k < ci->n_cpus; k++)
		if (ci->cpus[k] == s->cpu[i] && ci->online[k])
			cpu = s->cpu[i];
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		Sysobs__V1__IfsQueuedScan *q = &qs[out->n_scans];
		struct ifs_api_req *r;

		if (!(test_mask & (1u << t)))
			continue;
		r = &p->reqs[p->n_reqs++];
		r->package = ci->package;
		r->core_id = ci->core_id;
		r->test = t;
		r->scan_id = ++p->next_scan_id;
		r->cpu = s->cpu[i];
		sysobs__v1__ifs_queued_scan__init(q);
		q->scan_id = (int64_t)r->scan_id;
		/* Static: nothing may fail once requests are queued. */
		q->test = (char *)ifs_test_name(t);
		q->package = (uint32_t)ci->package;
		q->core = (uint32_t)ci->core_id;
		q->cpu = cpu;
		out->scans[out->n_scans++] = q;
	}
}

/* The whole answer and the request slots before the first request is
 * queued, then every selected core once; NULL with the answer on failure. */
static Sysobs__V1__IfsScanReply *scan_queue(struct ifs_priv *p, struct arena *ar,
					    const struct scan_selection *s, unsigned test_mask,
					    struct route_reply *rep)
{
	size_t most = s->n * IFS_TEST_MAX;
	Sysobs__V1__IfsScanReply *out;
	Sysobs__V1__IfsQueuedScan *qs;
	struct ifs_api_req *nr;

	out = PBMSG_NEW(ar, Sysobs__V1__IfsScanReply, sysobs__v1__ifs_scan_reply__descriptor);
	qs = arena_alloc(ar, most * sizeof(*qs));
	if (out) {
		out->scans = arena_alloc(ar, most * sizeof(*out->scans));
		out->poll = arena_strdup(ar, "/api/v1/ifs/scans?scan_id=<scan_id>");
	}
	nr = realloc(p->reqs, (p->n_reqs + most) * sizeof(*nr));
	if (nr)
		p->reqs = nr;
	if (!out || !qs || !out->scans || !out->poll || !nr) {
		route_error(rep, 503, "busy", "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < s->n; i++) {
		bool dup = false;

		for (size_t k = 0; k < i; k++)
			dup |= s->core[k] == s->core[i];
		if (!dup)
			scan_queue_core(p, s, i, test_mask, out, qs);
	}
	return out;
}

static void route_scans_post(struct collector *c, const struct route_request *req,
			     struct route_reply *rep)
{
	const Sysobs__V1__IfsScanRequest *body = (const Sysobs__V1__IfsScanRequest *)req->body;
	struct scan_selection sel = {0};
	struct ifs_scan_request rq;
	Sysobs__V1__IfsScanReply *out;
	struct ifs_priv *p;
	char why[256];
	unsigned test_mask;
	uint64_t one = 1;

	if (ifs_scan_request_parse(body, &rq, why, sizeof(why))) {
		route_error(rep, 400, "bad_request", "%s", why);
		return;
	}
	p = route_lock(c, rep);
	if (!p)
		return;
	test_mask = rq.tests ? rq.tests : p->tests;
	if ((test_mask & p->tests) != test_mask) {
		route_error(rep, 409, "conflict",
			    "a requested test has no device or no image loaded here");
		pthread_mutex_unlock(&p->lock);
		return;
	}
	out = NULL;
	if (!scan_select(p, &rq, &sel, rep) && !scan_check_cores(p, &sel, rep))
		out = scan_queue(p, req->arena, &sel, test_mask, rep);
	pthread_mutex_unlock(&p->lock);
	if (!out)
		return;
	if (write(p->efd, &one, sizeof(one)) < 0) {
		/* the next poll tick picks the requests up anyway */
	}
	rep->status = 202;
	rep->msg = &out->base;
}

static const char *const ifs_core_show[] = {
    "package", "core", "cpus", "online", "allowed", "last", "skip_reason", NULL,
};

const struct collector_route ifs_routes[] = {
    {
	.path = "/api/v1/ifs/cores",
	.help = "every core with its CPUs and last results, the devices, the scheduler",
	.fn = route_cores,
	.list = &sysobs__v1__ifs_core_list__descriptor,
	.show = ifs_core_show,
    },
    {
	.method = "POST",
	.path = "/api/v1/ifs/scans",
	.body = &sysobs__v1__ifs_scan_request__descriptor,
	.admin = true,
	.help = "queue scans of CPUs or cores; results in GET /api/v1/ifs/scans?scan_id=",
	.fn = route_scans_post,
    },
    {0},
};
