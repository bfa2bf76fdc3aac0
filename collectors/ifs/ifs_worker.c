// SPDX-License-Identifier: MIT
/*
 * The IFS worker thread and the one narrow run_test write (see ifs_worker.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "collectors/ifs/ifs_sysfs.h"
#include "collectors/ifs/ifs_worker.h"
#include "collectors/privwrite.h"

enum worker_state { W_IDLE, W_QUEUED, W_RUNNING, W_DONE };

struct ifs_worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum worker_state state;
	bool stop;
	int efd;
	struct ifs_work work;
	struct ifs_work_result res;
};

/* Writes v to <dev_dir>/<file>: through the agent's privileged helper once
 * it has dropped its privileges (collectors/privwrite.h). 0 or -errno;
 * *at_open says the open failed. */
static int write_number(const char *dev_dir, const char *file, unsigned v, bool *at_open)
{
	char path[PATH_MAX];

	*at_open = false;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dev_dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	/* The driver runs the whole test (or image load) inside this write(). */
	return priv_write_number(path, v, at_open);
}

int ifs_run_test(const char *dev_dir, int cpu, bool *at_open)
{
	*at_open = false;
	if (cpu < 0)
		return -EINVAL;
	return write_number(dev_dir, "run_test", (unsigned)cpu, at_open);
}

int ifs_load_batch(const char *dev_dir, unsigned batch, bool *at_open)
{
	return write_number(dev_dir, "current_batch", batch, at_open);
}

static void read_into(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (ifs_read_text(path, buf, len) < 0)
		buf[0] = '\0';
}

void ifs_result_read(const char *dev_dir, struct ifs_work_result *r)
{
	read_into(dev_dir, "status", r->status, sizeof(r->status));
	read_into(dev_dir, "details", r->details, sizeof(r->details));
	read_into(dev_dir, "image_version", r->image_version, sizeof(r->image_version));
	read_into(dev_dir, "current_batch", r->batch, sizeof(r->batch));
}

static void run_work(const struct ifs_work *w, struct ifs_work_result *r)
{
	char cur[16];
	bool at_open = false;

	memset(r, 0, sizeof(*r));
	r->job = w->job;
	r->loaded_batch = -1;
	if (w->job.batch >= 0 || w->job.reload) {
		bool loaded = false;
		unsigned b = 0;
		int want = w->job.batch;

		read_into(w->dev_dir, "current_batch", cur, sizeof(cur));
		if (ifs_batch_parse(cur, &loaded, &b))
			loaded = false;
		if (want < 0 && loaded)
			want = (int)b; /* a reload of the batch in place */
		/* Load the batch only if another one is in place (a load costs
		 * an image authentication per package), or to reload: writing
		 * current_batch reloads even the batch already loaded
		 * (current_batch_store -> ifs_load_firmware). */
		if (want >= 0 && (w->job.reload || !loaded || b != (unsigned)want)) {
			r->reloaded = w->job.reload;
			r->loaded_batch = want;
			r->batch_rc = ifs_load_batch(w->dev_dir, (unsigned)want, &at_open);
		}
	}
	r->start_wall = clock_wall_ns();
	r->start_mono = clock_mono_ns();
	if (r->batch_rc) {
		r->rc = r->batch_rc;
		r->err_file = IFS_FILE_CURRENT_BATCH;
	} else {
		r->rc = ifs_run_test(w->dev_dir, w->job.cpu, &at_open);
		r->err_file = IFS_FILE_RUN_TEST;
	}
	r->err_at_open = r->rc && at_open;
	r->end_mono = clock_mono_ns();
	ifs_result_read(w->dev_dir, r);
}

static void *worker_main(void *arg)
{
	struct ifs_worker *w = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->stop && w->state != W_QUEUED)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stop)
			break;
		w->state = W_RUNNING;
		pthread_mutex_unlock(&w->lock);

		struct ifs_work_result r;

		run_work(&w->work, &r);

		pthread_mutex_lock(&w->lock);
		w->res = r;
		w->state = W_DONE;
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* eventfd counter cannot overflow at one per scan */
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct ifs_worker *ifs_worker_start(int efd)
{
	struct ifs_worker *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->efd = efd;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	err = pthread_create(&w->thread, NULL, worker_main, w);
	if (err) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		errno = err;
		return NULL;
	}
	pthread_setname_np(w->thread, "sysobs-ifs");
	return w;
}

int ifs_worker_submit(struct ifs_worker *w, const struct ifs_work *work)
{
	int rc = 0;

	pthread_mutex_lock(&w->lock);
	if (w->state != W_IDLE) {
		rc = -EBUSY;
	} else {
		w->work = *work;
		w->state = W_QUEUED;
		pthread_cond_signal(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int ifs_worker_take(struct ifs_worker *w, struct ifs_work_result *out)
{
	int rc = -EAGAIN;

	pthread_mutex_lock(&w->lock);
	if (w->state == W_DONE) {
		*out = w->res;
		w->state = W_IDLE;
		rc = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

bool ifs_worker_busy(struct ifs_worker *w)
{
	bool busy;

	pthread_mutex_lock(&w->lock);
	busy = w->state != W_IDLE;
	pthread_mutex_unlock(&w->lock);
	return busy;
}

void ifs_worker_stop(struct ifs_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
