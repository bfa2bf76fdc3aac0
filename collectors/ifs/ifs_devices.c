// SPDX-License-Identifier: MIT
/*
 * The ifs collector's view of the devices and the CPU topology (main
 * thread, p->lock held): which intel_ifs_<N> exist and have an image, the
 * module going away and coming back, a failed load of ours retried, and the
 * topology re-read when the online CPUs change. See ifs_priv.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "collectors/collector.h"
#include "collectors/ifs/ifs_priv.h"
#include "collectors/ifs/ifs_sched.h"
#include "collectors/ifs/ifs_sysfs.h"
#include "collectors/ifs/ifs_worker.h"

/*
 * intel_ifs_<t> appeared or went away (the module unloaded or loaded again:
 * misc_deregister() removes every device). A device that went away has no
 * image: nothing can be tested on it. Called with p->lock held.
 */
static void presence_note(struct ifs_priv *p, enum ifs_test t, bool present)
{
	struct ifs_dev *d = &p->dev[t];

	if (present == d->present)
		return;
	d->present = present;
	if (present) {
		if (d->gone) {
			clog_info(p->c, "intel_ifs_%d is back", t);
			/* A module load starts the device afresh (core.c's static
			 * ifs_devices[]: status untested, details 0x0): that is
			 * the baseline of the passive check, not the last result
			 * before the unload, which no run replaced. */
			snprintf(d->seen_status, sizeof(d->seen_status), "untested");
			snprintf(d->seen_details, sizeof(d->seen_details), "0x0");
			d->seen_valid = true;
		}
		d->gone = false;
		return;
	}
	d->gone = true;
	clog_warn(p->c, "intel_ifs_%d went away (intel_ifs module unloaded?)", t);
	d->image_loaded = false;
	sink_set(p->c->sink, d->image_s, 0);
}

/* Test t's device has an image again: a pending load retry is over. */
static void reload_done(struct ifs_priv *p, enum ifs_test t)
{
	struct ifs_dev *d = &p->dev[t];

	if (d->reload_pending)
		clog_info(p->c, "%s: an image is loaded again", ifs_test_name(t));
	d->reload_pending = false;
	d->reload_wait = 0;
}

/* Reads image_version/current_batch of every device; updates p->tests.
 * Called with p->lock held. */
void ifs_refresh_devices(struct ifs_priv *p)
{
	unsigned present = 0, tests = 0;
	int64_t now = clock_mono_ns();

	ifs_devices_discover(p->root, &present);
	for (int t = 0; t < IFS_TEST_MAX; t++) {
		struct ifs_dev *d = &p->dev[t];
		char buf[PATH_MAX + 32];

		presence_note(p, t, present & (1u << t));
		if (!d->present)
			continue;
		ifs_device_dir(p->root, t, d->dir, sizeof(d->dir));
		if (t == IFS_TEST_ARRAY) {
			/* Array BIST runs without an image. */
			d->image_loaded = true;
			tests |= 1u << t;
			continue;
		}
		snprintf(buf, sizeof(buf), "%s/image_version", d->dir);
		if (ifs_read_text(buf, d->image_text, sizeof(d->image_text)) < 0 ||
		    ifs_image_version_parse(d->image_text, &d->image_loaded, &d->image_version))
			d->image_loaded = false;
		ifs_trim_nl(d->image_text);
		snprintf(buf, sizeof(buf), "%s/current_batch", d->dir);
		{
			char b[16];

			if (ifs_read_text(buf, b, sizeof(b)) < 0 ||
			    ifs_batch_parse(b, &d->batch_loaded, &d->batch))
				d->batch_loaded = false;
		}
		if (d->image_loaded)
			reload_done(p, t); /* by our job, or by someone else */
		/* With rotation the worker loads a batch before running; so
		 * does it for a retried load of ours once its wait is over. */
		if (d->image_loaded || p->scfg.n_batches[t] ||
		    (d->reload_pending && now >= d->reload_at))
			tests |= 1u << t;
		sink_set(p->c->sink, d->image_s, d->image_loaded);
	}
	p->tests = tests;
}

/* sysobs_ifs_core_allowed of every known core: a core denied on purpose
 * is told apart from one that should be tested (SysobsIFSCoreNotTested
 * leaves it out). A remembered core keeps its series. */
static void allowed_export(struct ifs_priv *p)
{
	for (size_t i = 0; i < p->sched.n_cores; i++) {
		const struct ifs_core_info *c = &p->sched.cores[i];
		char pkg[16], cid[16];
		const char *v[] = {pkg, cid};

		snprintf(pkg, sizeof(pkg), "%d", c->package);
		snprintf(cid, sizeof(cid), "%d", c->core_id);
		sink_set(p->c->sink, collector_series(p->c, IFS_M_CORE_ALLOWED, v),
			 ifs_sched_core_allowed(&p->sched, i));
	}
}

/* Makes nt the topology (taken over): per-core results kept by (package,
 * core_id), the scheduler told. On -ENOMEM nt is freed, p unchanged. */
static int topology_install(struct ifs_priv *p, struct ifs_topology *nt)
{
	struct ifs_last(*nl)[IFS_TEST_MAX];
	int err;

	nl = calloc(nt->n_cores ? nt->n_cores : 1, sizeof(*nl));
	if (!nl) {
		ifs_topology_free(nt);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nt->n_cores; i++)
		for (size_t j = 0; p->last && j < p->topo.n_cores; j++)
			if (p->topo.cores[j].package == nt->cores[i].package &&
			    p->topo.cores[j].core_id == nt->cores[i].core_id)
				memcpy(nl[i], p->last[j], sizeof(nl[i]));
	/* A core whose threads went offline is remembered (its topology is
	 * gone from sysfs); one that was never seen online since the start is
	 * known from the debugfs hints or its last result (ifs_topology_adopt),
	 * and keeps its series: its last result stays meaningful. */
	free(p->last);
	p->last = nl;
	ifs_topology_free(&p->topo);
	p->topo = *nt;
	err = ifs_sched_set_topology(&p->sched, nt->cores, nt->n_cores, clock_mono_ns());
	if (!err)
		allowed_export(p);
	return err;
}

/* Re-reads the topology if the online CPU list changed; keeps per-core
 * results by (package, core_id). Called with p->lock held. */
int ifs_refresh_topology(struct ifs_priv *p, bool force)
{
	char path[PATH_MAX], online[sizeof(p->online_text)];
	struct ifs_topology nt;
	int err;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", p->root);
	if (ifs_read_text(path, online, sizeof(online)) < 0)
		online[0] = '\0';
	if (!force && !strcmp(online, p->online_text))
		return 0;
	err = ifs_topology_read(p->root, p->hints, &nt);
	if (!err)
		err = ifs_topology_remember(&nt, &p->topo);
	if (err) {
		ifs_topology_free(&nt);
		return err;
	}
	snprintf(p->online_text, sizeof(p->online_text), "%s", online);
	return topology_install(p, &nt);
}

int ifs_topology_adopt(struct ifs_priv *p, const int *cpu, const int *package, const int *core_id,
		       size_t n)
{
	struct ifs_topology nt = p->topo;

	if (!n)
		return 0;
	nt.cores = malloc((p->topo.n_cores + n) * sizeof(*nt.cores));
	if (!nt.cores)
		return -ENOMEM;
	if (p->topo.n_cores)
		memcpy(nt.cores, p->topo.cores, p->topo.n_cores * sizeof(*nt.cores));
	for (size_t i = 0; i < n; i++) {
		/* Only a CPU sysfs knows offline and places in no core. */
		if (cpu[i] < 0 || cpu[i] >= IFS_MAX_CPUS ||
		    !ifs_cpu_isset(nt.offline, (unsigned)cpu[i]))
			continue;
		if (ifs_topology_add_offline(&nt, cpu[i], package[i], core_id[i]))
			break;
		clog_info(p->c,
			  "package %d core %d: offline since before the start, known from its "
			  "last result on cpu %d",
			  package[i], core_id[i], cpu[i]);
	}
	return topology_install(p, &nt);
}

/*
 * Rotation off, a current_batch write of ours (an image reload the driver
 * asked for) failed: the device is left without an image, and no later job
 * would load one, so nothing would ever be tested again until someone
 * writes current_batch. The load is retried with the next job due after a
 * wait doubling from retry_backoff up to an hour (an EIO from load.c can be
 * transient: a test or another load in progress, an interrupted
 * authentication). p->lock held.
 */
void ifs_reload_track(struct ifs_priv *p, const struct ifs_work_result *r)
{
	struct ifs_dev *d;

	if (r->loaded_batch < 0 || (unsigned)r->job.test >= IFS_TEST_MAX ||
	    p->scfg.n_batches[r->job.test])
		return;
	d = &p->dev[r->job.test];
	if (!r->batch_rc) {
		reload_done(p, r->job.test);
		return;
	}
	d->reload_wait = d->reload_wait ? 2 * d->reload_wait : p->scfg.retry_backoff_ns;
	if (d->reload_wait < MS_NS)
		d->reload_wait = MS_NS;
	if (d->reload_wait > 3600 * 1000 * MS_NS)
		d->reload_wait = 3600 * 1000 * MS_NS;
	d->reload_pending = true;
	d->reload_batch = (unsigned)r->loaded_batch;
	d->reload_at = clock_mono_ns() + d->reload_wait;
	/* No job of this test until then (refresh_devices() lets it in). */
	p->tests &= ~(1u << r->job.test);
	ifs_sched_set_tests(&p->sched, p->tests, clock_mono_ns());
	clog_warn(p->c,
		  "%s: loading batch %d failed (%s); the device has no image: retrying in %lld ms",
		  ifs_test_name(r->job.test), r->loaded_batch, strerror(-r->batch_rc),
		  (long long)(d->reload_wait / MS_NS));
}
