// SPDX-License-Identifier: MIT
/*
 * A minimal cachefiles on-demand user daemon for the VM tests, written from
 * the protocol in <linux/cachefiles.h> and
 * Documentation/filesystems/caching/cachefiles.rst ("On-demand Read"):
 *
 *   open /dev/cachefiles; write "dir <path>", "tag <tag>", "bind ondemand";
 *   poll; every read() returns one struct cachefiles_msg:
 *     OPEN  -> keep the anon fd of the payload, reply "copen <msg_id>,<size>"
 *     READ  -> write the range into the anon fd at off, then
 *              ioctl(anon_fd, CACHEFILES_IOC_READ_COMPLETE, msg_id)
 *     CLOSE -> close the anon fd (no reply)
 *
 * Every cookie (blob) is served from the one --image file. A delay can be
 * injected before answering each READ (and OPEN), per volume key, so the test
 * knows what latency the agent must measure:
 *
 *   ondemand_daemon --image fs.img --dir /var/cache/fscache \
 *       --delay erofs,fsa=20 --delay erofs,fsb=150 --stats /run/od.stats
 *
 * SIGTERM/SIGINT: write the per-volume request counts to --stats (or stdout)
 * and exit. SIGUSR1: write the counts and go on. A request is counted when it
 * is answered (copen sent, READ_COMPLETE done), so that a request re-read
 * after a failover counts once.
 *
 * Failover (--failover, kernel 6.8+): a supervisor process opens
 * /dev/cachefiles, binds, and runs the daemon proper in a child that inherits
 * the fd. When the child dies of a signal the supervisor starts another,
 * which writes "restore" first: the kernel re-queues the requests the dead
 * one had read but not answered, and reopens the objects whose anonymous
 * fds died with it (new OPENs, new object ids). --crash VOLUME_KEY=OP:N
 * (OP open or read; repeatable, one per child in order) makes that child
 * SIGKILL itself on reading its Nth request of OP for the volume, with the
 * READs it holds unanswered; the stats then say how many requests the dead
 * children abandoned, and the pids of the dead and restoring children.
 *
 * A hung daemon (--control DIR): while DIR/pause exists the daemon reads no
 * request and answers no READ; when DIR/hold exists, the next READ read
 * removes it and creates DIR/pause, so that request is "read, not answered".
 * When DIR/closedev exists the daemon closes /dev/cachefiles and creates
 * DIR/closed, keeping its anonymous fds (without --failover only: the
 * supervisor's copy would keep the device open): the kernel marks the cache
 * dead (CACHEFILES_DEAD) while its objects stay open.
 *
 * --image-for VOLUME_KEY=FILE serves that volume's cookies from FILE.
 * --copen-error VOLUME_KEY=N answers the volume's Nth OPEN "copen <id>,-5"
 * (an error reply). --late-write VOLUME_KEY writes a READ's data after its
 * hold, not before: a reader of the same range meanwhile finds no data and
 * sends a READ of its own. --child-pid N (with --failover) starts every child as
 * pid N (clone3 set_tid), so that the dead daemons share one pid. The stats
 * count, per volume, error replies (copen_error) and READs read while another
 * READ of the same (object, offset) was read and unanswered (dup_reads).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/cachefiles.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OD_MAX_OBJECTS 256
#define OD_MAX_VOLUMES 16
#define OD_VOLUME_LEN  128

struct od_volume {
	char key[OD_VOLUME_LEN];
	unsigned read_delay_ms;
	unsigned open_delay_ms;
	unsigned long opens, reads, closes;
	unsigned long long read_bytes;
	unsigned nodata_at;    /* --nodata: this READ (1-based) gets no data */
	unsigned long nodata;  /* READs completed without writing the data */
	unsigned long n_reads; /* READs read (for nodata_at) */
	int image_fd;	       /* --image-for: this volume's image; -1: --image */
	off_t image_size;
	unsigned copen_error_at;    /* --copen-error: this OPEN (1-based) gets an error */
	unsigned long n_opens;	    /* OPENs read (for copen_error_at) */
	unsigned long copen_errors; /* OPENs answered with an error */
	unsigned long dup_reads;    /* READs read while one of the same range was held */
	int late_write;		    /* --late-write: the data is written after the hold */
};

struct od_object {
	uint32_t object_id;
	int fd; /* anon fd; -1 when free */
	struct od_volume *vol;
};

#define OD_MAX_CRASHES 4

struct od_crash {
	char key[OD_VOLUME_LEN];
	unsigned op; /* CACHEFILES_OP_OPEN or _READ */
	unsigned n;
};

/* What outlives a daemon child: shared with the supervisor (MAP_SHARED). */
struct od_shared {
	struct od_volume volumes[OD_MAX_VOLUMES];
	unsigned n_volumes;
	unsigned long errors;
	unsigned long abandoned; /* requests read by a dead child, unanswered */
	unsigned long restores;
	int dead_pids[OD_MAX_CRASHES], restore_pids[OD_MAX_CRASHES];
	unsigned n_dead;
};

static struct od_shared *od_sh;
#define od_volumes   (od_sh->volumes)
#define od_n_volumes (od_sh->n_volumes)
#define od_errors    (od_sh->errors)

static struct od_object od_objects[OD_MAX_OBJECTS];
static int od_image_fd = -1;
static off_t od_image_size;
static const char *od_stats_path;
static volatile sig_atomic_t od_stop, od_dump;
static unsigned long od_busy; /* READs read and not answered yet */
static struct od_crash od_crashes[OD_MAX_CRASHES];
static unsigned od_n_crashes;
static const struct od_crash *od_crash_now; /* this child's, or NULL */
static unsigned od_crash_seen;
/* Held while answering a READ, and by a child about to crash: a READ is
 * either answered and counted, or abandoned and counted as such. */
static pthread_mutex_t od_answer_lock = PTHREAD_MUTEX_INITIALIZER;
static int od_crashing;
static const char *od_control; /* --control DIR */
static int od_devfd = -1;
static pid_t od_child_pid; /* --child-pid */

/* READs read and not answered, by (object id, offset): duplicates counted */
#define OD_MAX_HELD 256
static struct {
	uint32_t object_id;
	uint64_t off;
	int used;
} od_held[OD_MAX_HELD];
static pthread_mutex_t od_held_lock = PTHREAD_MUTEX_INITIALIZER;

/* Does DIR/name exist? */
static int od_control_has(const char *name)
{
	char path[512];

	if (!od_control)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", od_control, name);
	return access(path, F_OK) == 0;
}

/* DIR/hold -> DIR/pause: the READ just read is held. */
static void od_control_hold(void)
{
	char hold[512], pause[512];
	int fd;

	if (!od_control_has("hold"))
		return;
	snprintf(hold, sizeof(hold), "%s/hold", od_control);
	snprintf(pause, sizeof(pause), "%s/pause", od_control);
	fd = open(pause, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	unlink(hold);
}

static void od_on_signal(int sig)
{
	if (sig == SIGUSR1)
		od_dump = 1;
	else
		od_stop = 1;
}

/*
 * The injected delay is the time the daemon holds a request: from the read()
 * that returned it to the reply. Work done meanwhile (pread/pwrite of the
 * data) counts against it, so the requester waits delay + kernel overhead,
 * not delay + daemon I/O + kernel overhead.
 */
static struct timespec od_req_start;

static void od_sleep_until(const struct timespec *start, unsigned ms)
{
	struct timespec until = *start;

	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

static struct od_volume *od_volume_get(const char *key)
{
	struct od_volume *v;
	unsigned i;

	for (i = 0; i < od_n_volumes; i++)
		if (!strcmp(od_volumes[i].key, key))
			return &od_volumes[i];
	if (od_n_volumes == OD_MAX_VOLUMES)
		return NULL;
	v = &od_volumes[od_n_volumes++];
	snprintf(v->key, sizeof(v->key), "%s", key);
	v->image_fd = -1;
	return v;
}

/* "--crash KEY=open:N" or "--crash KEY=read:N" */
static int od_crash_parse(const char *arg)
{
	const char *eq = strrchr(arg, '=');
	struct od_crash *c;
	char op[8];

	if (!eq || od_n_crashes == OD_MAX_CRASHES || (size_t)(eq - arg) >= sizeof(c->key))
		return -EINVAL;
	c = &od_crashes[od_n_crashes];
	memcpy(c->key, arg, eq - arg);
	c->key[eq - arg] = 0;
	if (sscanf(eq + 1, "%7[a-z]:%u", op, &c->n) != 2 || !c->n)
		return -EINVAL;
	if (!strcmp(op, "open"))
		c->op = CACHEFILES_OP_OPEN;
	else if (!strcmp(op, "read"))
		c->op = CACHEFILES_OP_READ;
	else
		return -EINVAL;
	od_n_crashes++;
	return 0;
}

/*
 * The child's crash point: its Nth request of op on the volume. Dies by
 * SIGKILL with every READ it read and has not answered abandoned (and this
 * request), as a daemon crash leaves them.
 */
static void od_crash_check(const char *key, unsigned op)
{
	if (!od_crash_now || od_crash_now->op != op || strcmp(od_crash_now->key, key))
		return;
	if (++od_crash_seen < od_crash_now->n)
		return;
	pthread_mutex_lock(&od_answer_lock);
	od_crashing = 1;
	__atomic_add_fetch(&od_sh->abandoned, od_busy + 1, __ATOMIC_SEQ_CST);
	if (od_sh->n_dead < OD_MAX_CRASHES)
		od_sh->dead_pids[od_sh->n_dead++] = getpid();
	fprintf(stderr, "ondemand: pid %d crashing on %s request %u of %s (%lu READs held)\n",
		getpid(), op == CACHEFILES_OP_OPEN ? "OPEN" : "READ", od_crash_seen, key, od_busy);
	kill(getpid(), SIGKILL);
	pause();
}

/* "KEY=N" (N >= 1): the volume of KEY into *v, N into *n */
static int od_volume_count_arg(const char *arg, struct od_volume **v, unsigned *n)
{
	char key[OD_VOLUME_LEN];
	const char *eq = strrchr(arg, '=');

	if (!eq || (size_t)(eq - arg) >= sizeof(key) || sscanf(eq + 1, "%u", n) != 1 || !*n)
		return -EINVAL;
	memcpy(key, arg, eq - arg);
	key[eq - arg] = 0;
	*v = od_volume_get(key);
	return *v ? 0 : -ENOSPC;
}

/* "--nodata KEY=N": the Nth READ of the volume is completed without data */
static int od_nodata_parse(const char *arg)
{
	struct od_volume *v;
	unsigned n;
	int err = od_volume_count_arg(arg, &v, &n);

	if (!err)
		v->nodata_at = n;
	return err;
}

/* "--image-for KEY=FILE" */
static int od_image_for_parse(const char *arg)
{
	char key[OD_VOLUME_LEN];
	const char *eq = strchr(arg, '=');
	struct od_volume *v;
	struct stat st;

	if (!eq || (size_t)(eq - arg) >= sizeof(key))
		return -EINVAL;
	memcpy(key, arg, eq - arg);
	key[eq - arg] = 0;
	v = od_volume_get(key);
	if (!v)
		return -ENOSPC;
	v->image_fd = open(eq + 1, O_RDONLY | O_CLOEXEC);
	if (v->image_fd < 0 || fstat(v->image_fd, &st))
		return -errno;
	v->image_size = st.st_size;
	return 0;
}

/* "--copen-error KEY=N" */
static int od_copen_error_parse(const char *arg)
{
	struct od_volume *v;
	unsigned n;
	int err = od_volume_count_arg(arg, &v, &n);

	if (!err)
		v->copen_error_at = n;
	return err;
}

/* "--delay KEY=READ_MS[/OPEN_MS]" */
static int od_delay_parse(const char *arg)
{
	char key[OD_VOLUME_LEN];
	const char *eq = strrchr(arg, '=');
	struct od_volume *v;
	unsigned r = 0, o = 0;

	if (!eq || (size_t)(eq - arg) >= sizeof(key))
		return -EINVAL;
	memcpy(key, arg, eq - arg);
	key[eq - arg] = 0;
	if (sscanf(eq + 1, "%u/%u", &r, &o) < 1)
		return -EINVAL;
	v = od_volume_get(key);
	if (!v)
		return -ENOSPC;
	v->read_delay_ms = r;
	v->open_delay_ms = o;
	return 0;
}

static void od_stats_write(void)
{
	FILE *f = od_stats_path ? fopen(od_stats_path, "w") : stdout;
	unsigned i;

	if (!f)
		return;
	for (i = 0; i < od_n_volumes; i++) {
		struct od_volume *v = &od_volumes[i];

		fprintf(f,
			"volume=%s open=%lu read=%lu close=%lu read_bytes=%llu delay_ms=%u "
			"nodata=%lu copen_error=%lu dup_reads=%lu\n",
			v->key, v->opens, v->reads, v->closes, v->read_bytes, v->read_delay_ms,
			v->nodata, v->copen_errors, v->dup_reads);
	}
	fprintf(f, "errors=%lu\n", od_errors);
	fprintf(f, "abandoned=%lu\n", od_sh->abandoned);
	fprintf(f, "restores=%lu\n", od_sh->restores);
	fprintf(f, "dead_pids=");
	for (i = 0; i < od_sh->n_dead; i++)
		fprintf(f, "%s%d", i ? "," : "", od_sh->dead_pids[i]);
	fprintf(f, "\nrestore_pids=");
	for (i = 0; i < od_sh->restores && i < OD_MAX_CRASHES; i++)
		fprintf(f, "%s%d", i ? "," : "", od_sh->restore_pids[i]);
	fprintf(f, "\n");
	if (f != stdout)
		fclose(f);
	else
		fflush(f);
}

static struct od_object *od_object_find(uint32_t id)
{
	unsigned i;

	for (i = 0; i < OD_MAX_OBJECTS; i++)
		if (od_objects[i].fd >= 0 && od_objects[i].object_id == id)
			return &od_objects[i];
	return NULL;
}

static int od_cmd(int devfd, const char *cmd)
{
	if (write(devfd, cmd, strlen(cmd)) < 0) {
		fprintf(stderr, "ondemand: '%s': %s\n", cmd, strerror(errno));
		return -errno;
	}
	return 0;
}

static int od_handle_open(int devfd, const struct cachefiles_msg *msg)
{
	const struct cachefiles_open *load = (const void *)msg->data;
	char vkey[OD_VOLUME_LEN] = "";
	struct od_volume *v;
	struct od_object *o = NULL;
	char reply[64];
	unsigned i;
	size_t n;

	n = load->volume_key_size < sizeof(vkey) ? load->volume_key_size : sizeof(vkey) - 1;
	memcpy(vkey, load->data, n);
	vkey[n] = 0;
	v = od_volume_get(vkey);
	od_crash_check(vkey, CACHEFILES_OP_OPEN);
	if (v && v->copen_error_at && ++v->n_opens == v->copen_error_at) {
		/* an error reply: the kernel fails the OPEN with it (copen <id>,<-errno>) */
		close(load->fd);
		snprintf(reply, sizeof(reply), "copen %u,%d", msg->msg_id, -EIO);
		if (od_cmd(devfd, reply))
			return -1;
		__atomic_add_fetch(&v->copen_errors, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "ondemand: OPEN %u of %s answered with error %d\n", msg->msg_id,
			vkey, -EIO);
		return 0;
	}
	for (i = 0; i < OD_MAX_OBJECTS; i++) {
		if (od_objects[i].fd < 0) {
			o = &od_objects[i];
			break;
		}
	}
	if (!o) {
		close(load->fd);
		snprintf(reply, sizeof(reply), "copen %u,%d", msg->msg_id, -ENFILE);
		return od_cmd(devfd, reply);
	}
	o->fd = load->fd;
	o->object_id = msg->object_id;
	o->vol = v;
	if (v && v->open_delay_ms)
		od_sleep_until(&od_req_start, v->open_delay_ms);
	snprintf(reply, sizeof(reply), "copen %u,%lld", msg->msg_id,
		 (long long)(v && v->image_fd >= 0 ? v->image_size : od_image_size));
	if (od_cmd(devfd, reply))
		return -1;
	if (v)
		__atomic_add_fetch(&v->opens, 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * READs are served each on a thread of its own, so that parallel readers see
 * their requests held for the injected time in parallel (one daemon thread
 * would queue them: the 10th request would wait 10 delays).
 *
 * The anon fd writes through to the backing file, which cachefiles opens with
 * O_DIRECT: buffer, offset and length must be block aligned, or pwrite()
 * fails with EINVAL. The last block past the image end is zero-filled.
 */
#define OD_BLOCK 4096
#define OD_CHUNK (1 << 16)

struct od_read_job {
	struct timespec start; /* when read() returned the request */
	uint32_t msg_id, object_id;
	uint64_t off, len;
	int fd;
	unsigned delay_ms;
	int nodata; /* complete without writing: the reader gets -EIO */
	struct od_volume *vol;
	int image_fd;
	off_t image_size;
	int held; /* slot in od_held, or -1 */
	int late; /* write after the hold */
};

/* Notes a READ read; counts it when one of the same range is held. */
static int od_held_add(struct od_volume *v, uint32_t object_id, uint64_t off)
{
	int slot = -1;

	pthread_mutex_lock(&od_held_lock);
	for (int i = 0; i < OD_MAX_HELD; i++) {
		if (!od_held[i].used) {
			if (slot < 0)
				slot = i;
		} else if (od_held[i].object_id == object_id && od_held[i].off == off && v) {
			v->dup_reads++;
			fprintf(stderr, "ondemand: READ of object %u at %llu while one is held\n",
				object_id, (unsigned long long)off);
		}
	}
	if (slot >= 0) {
		od_held[slot].object_id = object_id;
		od_held[slot].off = off;
		od_held[slot].used = 1;
	}
	pthread_mutex_unlock(&od_held_lock);
	return slot;
}

static void od_held_del(int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&od_held_lock);
	od_held[slot].used = 0;
	pthread_mutex_unlock(&od_held_lock);
}

static void *od_read_worker(void *arg)
{
	struct od_read_job *j = arg;
	uint64_t off = j->off & ~(uint64_t)(OD_BLOCK - 1), end = j->off + j->len;
	char *buf = NULL;
	ssize_t n;

	if (posix_memalign((void **)&buf, OD_BLOCK, OD_CHUNK)) {
		__atomic_add_fetch(&od_errors, 1, __ATOMIC_RELAXED);
		goto out_complete;
	}
	if (end > (uint64_t)j->image_size)
		end = j->image_size;
	if (j->late && j->delay_ms)
		od_sleep_until(&j->start, j->delay_ms);
	while (off < end && !j->nodata) {
		size_t chunk = end - off < OD_CHUNK ? end - off : OD_CHUNK;
		size_t padded = (chunk + OD_BLOCK - 1) & ~(size_t)(OD_BLOCK - 1);

		n = pread(j->image_fd, buf, chunk, off);
		if (n <= 0)
			break;
		memset(buf + n, 0, padded - n);
		if (pwrite(j->fd, buf, padded, off) != (ssize_t)padded) {
			fprintf(stderr, "ondemand: pwrite object %u at %llu: %s\n", j->object_id,
				(unsigned long long)off, strerror(errno));
			__atomic_add_fetch(&od_errors, 1, __ATOMIC_RELAXED);
			break;
		}
		off += n;
		if ((size_t)n < chunk)
			break;
	}
out_complete:
	free(buf);
	if (!j->late && j->delay_ms)
		od_sleep_until(&j->start, j->delay_ms);
	while (od_control_has("pause") && !od_stop)
		usleep(10000);
	pthread_mutex_lock(&od_answer_lock);
	if (od_crashing) {
		/* abandoned: the process is being killed */
		pthread_mutex_unlock(&od_answer_lock);
		pause();
	}
	if (ioctl(j->fd, CACHEFILES_IOC_READ_COMPLETE, j->msg_id) < 0) {
		fprintf(stderr, "ondemand: READ_COMPLETE %u: %s\n", j->msg_id, strerror(errno));
		__atomic_add_fetch(&od_errors, 1, __ATOMIC_RELAXED);
	} else if (j->vol) {
		if (j->nodata)
			__atomic_add_fetch(&j->vol->nodata, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&j->vol->reads, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&j->vol->read_bytes, j->len, __ATOMIC_RELAXED);
	}
	od_held_del(j->held);
	__atomic_sub_fetch(&od_busy, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&od_answer_lock);
	free(j);
	return NULL;
}

static int od_handle_read(const struct cachefiles_msg *msg)
{
	const struct cachefiles_read *load = (const void *)msg->data;
	struct od_object *o = od_object_find(msg->object_id);
	struct od_read_job *j;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (!o) {
		fprintf(stderr, "ondemand: READ for unknown object %u\n", msg->object_id);
		od_errors++;
		return -ENOENT;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->start = od_req_start;
	j->msg_id = msg->msg_id;
	j->object_id = msg->object_id;
	j->off = load->off;
	j->len = load->len;
	j->fd = o->fd;
	j->vol = o->vol;
	j->image_fd = o->vol && o->vol->image_fd >= 0 ? o->vol->image_fd : od_image_fd;
	j->image_size = o->vol && o->vol->image_fd >= 0 ? o->vol->image_size : od_image_size;
	j->held = od_held_add(o->vol, msg->object_id, load->off);
	j->late = o->vol && o->vol->late_write;
	if (o->vol) {
		j->delay_ms = o->vol->read_delay_ms;
		j->nodata = ++o->vol->n_reads == o->vol->nodata_at;
		od_crash_check(o->vol->key, CACHEFILES_OP_READ);
	}
	od_control_hold();
	__atomic_add_fetch(&od_busy, 1, __ATOMIC_ACQUIRE);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, od_read_worker, j);
	pthread_attr_destroy(&attr);
	if (err) {
		/* no thread: serve it here */
		od_read_worker(j);
	}
	return 0;
}

static void od_handle_close(const struct cachefiles_msg *msg)
{
	struct od_object *o = od_object_find(msg->object_id);

	if (!o)
		return;
	if (o->vol)
		__atomic_add_fetch(&o->vol->closes, 1, __ATOMIC_RELAXED);
	/* the kernel sends CLOSE after the object's READs completed, but a
	 * worker may still be returning: let them finish before closing */
	while (__atomic_load_n(&od_busy, __ATOMIC_ACQUIRE))
		usleep(1000);
	close(o->fd);
	o->fd = -1;
}

static void od_usage(FILE *f)
{
	fprintf(f,
		"usage: ondemand_daemon --image FILE [--dir DIR] [--tag TAG]\n"
		"       [--delay VOLUME_KEY=READ_MS[/OPEN_MS]]... [--stats FILE]\n"
		"       [--ready FILE] [--failover [--crash VOLUME_KEY=open|read:N]...]\n"
		"       [--control DIR] [--nodata VOLUME_KEY=N] [--image-for VOLUME_KEY=FILE]\n"
		"       [--copen-error VOLUME_KEY=N] [--child-pid N] [--late-write VOLUME_KEY]\n");
}

/* DIR/closedev: the daemon closes /dev/cachefiles (its only reference when
 * not supervised) and keeps its anonymous fds; DIR/closed says it is done. */
static void od_close_dev(int *devfd)
{
	char path[512];
	int fd;

	close(*devfd);
	*devfd = -1;
	od_devfd = -1;
	fprintf(stderr, "ondemand: closed /dev/cachefiles, anonymous fds kept\n");
	snprintf(path, sizeof(path), "%s/closed", od_control);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
}

/* An orderly exit closes the anonymous fds itself: a daemon that exits
 * holding them is what the agent reports as a death. */
static void od_objects_close(void)
{
	for (unsigned i = 0; i < OD_MAX_OBJECTS; i++) {
		if (od_objects[i].fd >= 0) {
			close(od_objects[i].fd);
			od_objects[i].fd = -1;
		}
	}
}

/* The daemon proper: poll, read one request, answer it, until SIGTERM. */
static void od_serve(int devfd)
{
	char msgbuf[CACHEFILES_MSG_MAX_SIZE];
	int c;

	while (!od_stop) {
		struct pollfd pfd = {.fd = devfd, .events = POLLIN};
		struct cachefiles_msg *msg = (void *)msgbuf;
		ssize_t n;

		if (od_dump) {
			od_dump = 0;
			od_stats_write();
		}
		if (od_control_has("pause") || devfd < 0) {
			usleep(20000);
			continue;
		}
		if (od_control_has("closedev")) {
			od_close_dev(&devfd);
			continue;
		}
		c = poll(&pfd, 1, 200);
		if (c < 0 && errno != EINTR) {
			perror("ondemand: poll");
			break;
		}
		if (c <= 0 || od_control_has("pause"))
			continue; /* paused while in poll(): read nothing */
		n = read(devfd, msgbuf, sizeof(msgbuf));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			perror("ondemand: read");
			od_errors++;
			continue;
		}
		if (n == 0 || (size_t)n < sizeof(*msg))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &od_req_start);
		switch (msg->opcode) {
		case CACHEFILES_OP_OPEN:
			od_handle_open(devfd, msg);
			break;
		case CACHEFILES_OP_READ:
			od_handle_read(msg);
			break;
		case CACHEFILES_OP_CLOSE:
			od_handle_close(msg);
			break;
		default:
			fprintf(stderr, "ondemand: unknown opcode %u\n", msg->opcode);
			od_errors++;
		}
	}
	while (__atomic_load_n(&od_busy, __ATOMIC_ACQUIRE))
		usleep(1000);
}

/*
 * Supervisor: children serve devfd in turn. A child killed by a signal is
 * replaced by one that writes "restore" first; SIGTERM is passed on to the
 * child, and ends the supervisor when the child has exited.
 */
/* clone_args up to set_tid (CLONE_ARGS_SIZE_VER1, Linux 5.5) */
struct od_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size;
};

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/* fork(), as pid od_child_pid when one is asked for (clone3 with set_tid:
 * root may choose a free pid), so that successive children share it. */
static pid_t od_fork(void)
{
	struct od_clone_args a = {.exit_signal = SIGCHLD};
	pid_t want = od_child_pid;
	long pid;

	if (!od_child_pid)
		return fork();
	a.set_tid = (uint64_t)(uintptr_t)&want;
	a.set_tid_size = 1;
	pid = syscall(SYS_clone3, &a, sizeof(a));
	if (pid < 0) {
		/* the pid taken, or no clone3: serve anyway; the stats show the pids */
		fprintf(stderr, "ondemand: clone3 as pid %d: %s: fork()\n", want, strerror(errno));
		return fork();
	}
	return (pid_t)pid;
}

static int od_supervise(int devfd)
{
	for (unsigned gen = 0;; gen++) {
		pid_t pid = od_fork();
		int status;

		if (pid < 0) {
			perror("ondemand: fork");
			return 1;
		}
		if (pid == 0) {
			od_crash_now = gen < od_n_crashes ? &od_crashes[gen] : NULL;
			if (gen) {
				if (od_cmd(devfd, "restore"))
					_exit(1);
				if (od_sh->restores < OD_MAX_CRASHES)
					od_sh->restore_pids[od_sh->restores] = getpid();
				od_sh->restores++;
				fprintf(stderr, "ondemand: pid %d restored\n", getpid());
			}
			od_serve(devfd);
			od_objects_close();
			_exit(0);
		}
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR)
				return 1;
			if (od_stop)
				kill(pid, SIGTERM);
		}
		if (WIFSIGNALED(status) && !od_stop) {
			fprintf(stderr, "ondemand: child %d died of signal %d: failover\n", pid,
				WTERMSIG(status));
			continue;
		}
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"image", required_argument, NULL, 'i'},
	    {"dir", required_argument, NULL, 'd'},
	    {"tag", required_argument, NULL, 't'},
	    {"delay", required_argument, NULL, 'D'},
	    {"stats", required_argument, NULL, 's'},
	    {"ready", required_argument, NULL, 'r'},
	    {"failover", no_argument, NULL, 'F'},
	    {"crash", required_argument, NULL, 'C'},
	    {"control", required_argument, NULL, 'c'},
	    {"nodata", required_argument, NULL, 'N'},
	    {"image-for", required_argument, NULL, 'I'},
	    {"copen-error", required_argument, NULL, 'E'},
	    {"child-pid", required_argument, NULL, 'P'},
	    {"late-write", required_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *image = NULL, *dir = "/var/cache/fscache", *tag = "sysobs", *ready = NULL;
	char cmd[512];
	struct sigaction sa = {.sa_handler = od_on_signal};
	struct stat st;
	int devfd, c, i, failover = 0, rc = 0;

	od_sh =
	    mmap(NULL, sizeof(*od_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (od_sh == MAP_FAILED) {
		perror("ondemand: mmap");
		return 1;
	}

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			image = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 't':
			tag = optarg;
			break;
		case 's':
			od_stats_path = optarg;
			break;
		case 'r':
			ready = optarg;
			break;
		case 'D':
			if (od_delay_parse(optarg)) {
				fprintf(stderr, "ondemand: bad --delay '%s'\n", optarg);
				return 2;
			}
			break;
		case 'F':
			failover = 1;
			break;
		case 'c':
			od_control = optarg;
			break;
		case 'N':
			if (od_nodata_parse(optarg)) {
				fprintf(stderr, "ondemand: bad --nodata '%s'\n", optarg);
				return 2;
			}
			break;
		case 'C':
			if (od_crash_parse(optarg)) {
				fprintf(stderr, "ondemand: bad --crash '%s'\n", optarg);
				return 2;
			}
			break;
		case 'I':
			if (od_image_for_parse(optarg)) {
				fprintf(stderr, "ondemand: bad --image-for '%s'\n", optarg);
				return 2;
			}
			break;
		case 'E':
			if (od_copen_error_parse(optarg)) {
				fprintf(stderr, "ondemand: bad --copen-error '%s'\n", optarg);
				return 2;
			}
			break;
		case 'P':
			od_child_pid = atoi(optarg);
			break;
		case 'L': {
			struct od_volume *v = od_volume_get(optarg);

			if (!v)
				return 2;
			v->late_write = 1;
			break;
		}
		case 'h':
			od_usage(stdout);
			return 0;
		default:
			od_usage(stderr);
			return 2;
		}
	}
	if (!image) {
		od_usage(stderr);
		return 2;
	}
	for (i = 0; i < OD_MAX_OBJECTS; i++)
		od_objects[i].fd = -1;
	od_image_fd = open(image, O_RDONLY | O_CLOEXEC);
	if (od_image_fd < 0 || fstat(od_image_fd, &st)) {
		fprintf(stderr, "ondemand: %s: %s\n", image, strerror(errno));
		return 1;
	}
	od_image_size = st.st_size;
	mkdir(dir, 0700);

	devfd = open("/dev/cachefiles", O_RDWR | O_CLOEXEC);
	if (devfd < 0) {
		fprintf(stderr, "ondemand: /dev/cachefiles: %s\n", strerror(errno));
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "dir %s", dir);
	if (od_cmd(devfd, cmd))
		return 1;
	snprintf(cmd, sizeof(cmd), "tag %s", tag);
	if (od_cmd(devfd, cmd) || od_cmd(devfd, "bind ondemand"))
		return 1;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (ready) {
		int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0)
			close(fd);
	}

	od_devfd = devfd;
	if (failover) {
		rc = od_supervise(devfd);
	} else {
		od_serve(devfd);
		od_objects_close();
	}
	od_stats_write();
	/* Keep devfd open until here: closing it unbinds the cache. */
	if (od_devfd >= 0)
		close(od_devfd);
	return rc;
}
