/* SPDX-License-Identifier: MIT */
/*
 * The IFS worker thread. Writing run_test blocks for the whole test, for no
 * bounded time: scan and array BIST stop at 0.5 s plus the last pass, SBAF
 * at 2 s plus the last bundle, and a writer first waits on the driver's
 * ifs_sem for as long as another test (ours or anyone's) holds it; a
 * current_batch write authenticates the image on every package. So it never
 * runs on the event loop, and nothing here times it out. One job at a time: the main thread
 * submits, the worker runs it and signals an eventfd, the main thread takes the result.
 *
 * ifs_run_test() is the only function in sysobs that writes to the IFS
 * driver's run_test, kept narrow so privilege separation can own it later.
 */
#ifndef SYSOBS_IFS_WORKER_H
#define SYSOBS_IFS_WORKER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "collectors/ifs/ifs_sched.h"

/* Writes cpu to <dev_dir>/run_test. 0 or -errno (-EINVAL bad/offline CPU,
 * -EPERM no image, -EINTR interrupted while waiting for the driver);
 * *at_open: the error came from opening the file. */
int ifs_run_test(const char *dev_dir, int cpu, bool *at_open);
/* Writes batch to <dev_dir>/current_batch (loads that image, even the one
 * already loaded). 0 or -errno (-ENOENT no such batch file, -EINVAL image
 * refused, -EIO authentication failed, -EINTR); *at_open as above. */
int ifs_load_batch(const char *dev_dir, unsigned batch, bool *at_open);

struct ifs_work {
	struct ifs_job job;
	char dev_dir[PATH_MAX];
};

struct ifs_work_result {
	struct ifs_job job;
	int batch_rc;		      /* current_batch write, 0 if none */
	int rc;			      /* the failed write's -errno, else 0 */
	enum ifs_file err_file;	      /* which file rc came from */
	bool err_at_open;	      /* rc came from open(), not write() */
	bool reloaded;		      /* job.reload: current_batch was written (batch_rc) */
	int loaded_batch;	      /* the batch written to current_batch; -1 none */
	int64_t start_mono, end_mono; /* ns */
	int64_t start_wall;	      /* ns */
	/* Read right after the write. The driver's lock is released by then,
	 * so another writer could in theory slip in between; sysobs is the
	 * only scheduler on a host by design. */
	char status[16], details[32], image_version[32], batch[16];
};

/* What a run left in <dev_dir>: status, details, image_version and
 * current_batch into r (a file that cannot be read as ""). */
void ifs_result_read(const char *dev_dir, struct ifs_work_result *r);

struct ifs_worker;

/* Starts the thread; it writes 1 to efd when a result is ready. */
struct ifs_worker *ifs_worker_start(int efd);
/* Hands over a job. -EBUSY if one is running or its result is not taken. */
int ifs_worker_submit(struct ifs_worker *w, const struct ifs_work *work);
/* Takes the finished result: 0, or -EAGAIN if none. */
int ifs_worker_take(struct ifs_worker *w, struct ifs_work_result *out);
/* True from submit until the result is taken. */
bool ifs_worker_busy(struct ifs_worker *w);
/* Stops and joins (waits for a running write to return). Accepts NULL. */
void ifs_worker_stop(struct ifs_worker *w);

#endif
