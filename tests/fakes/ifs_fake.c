// SPDX-License-Identifier: MIT
/*
 * ifs_fake: a FUSE filesystem that behaves like the Intel In-Field Scan driver
 * and the CPU topology in sysfs, for hosts without IFS hardware (all of them,
 * here). Mount it and point sysobsd --sysfs-root at the mount point.
 *
 *   ifs_fake CONFIG.ini MOUNTPOINT [-f] [fuse options]
 *
 * It presents, the way drivers/platform/x86/intel/ifs/sysfs.c does:
 *   devices/virtual/misc/intel_ifs_<N>/{run_test,status,details}
 *	+ {image_version,current_batch} for scan (0) and SBAF (2)
 *   devices/system/cpu/{online,possible,present}
 *   devices/system/cpu/cpu<N>/{online,topology/{physical_package_id,core_id,
 *	thread_siblings_list,core_cpus_list}} (cpu0 has no `online`, as on x86)
 * and, outside the sysfs tree, fake_runs: one line per finished run
 * "<start_ms> <end_ms> intel_ifs_<N> <cpu> <status> <details>" so tests can
 * check the order and that runs never overlapped.
 *
 * Driver behaviour reproduced: writing a CPU number to run_test blocks inside
 * write() for the scan time, under ONE lock shared by all devices (a second
 * writer waits, as on ifs_sem); a bad or offline CPU gives EINVAL; no image
 * loaded gives EPERM; status/details then describe that LAST run of the
 * device (not of a core). Writing current_batch loads the batch if it is
 * listed as available, else ENOENT and no image. Writing 0/1 to cpuN/online
 * takes a CPU offline or back.
 *
 * Config (INI):
 *   [fake]
 *   cpus = 8                ; logical CPUs
 *   threads_per_core = 2    ; SMT; cpu c is thread c / cores of core c % cores
 *   packages = 1
 *   offline = 5             ; CPU list
 *   scan_ms = 200           ; time one run_test write blocks
 *   devices = 0,1           ; which intel_ifs_<N> exist
 *   [device.0]
 *   image_version = 0x8000  ; or none (image_version of batch b = this + b)
 *   batch = 1
 *   batches = 1,2,3         ; batch files "present" for current_batch writes
 *   default = pass          ; script of every core without its own line
 *   core.2 = fail           ; core = the CPU number of its first thread
 *   core.3 = untested:1,pass   ; a sequence, one per run; the last repeats
 * Results: pass, fail, untested:<code>, partial (0xFE), timeout (0xFD),
 * control (scan control_error), testfail and intr (SBAF status 3 and 2).
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fuse.h>
#include <ini.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collectors/ifs/ifs_decode.h"

#define MAX_CPUS    256
#define MAX_DEVS    3
#define MAX_SCRIPT  16
#define MAX_BATCHES 16

enum res_kind { R_PASS, R_FAIL, R_UNTESTED, R_PARTIAL, R_TIMEOUT, R_CONTROL, R_TESTFAIL, R_INTR };

struct step {
	enum res_kind kind;
	unsigned code;
};

struct script {
	struct step steps[MAX_SCRIPT];
	unsigned n, next;
};

struct fdev {
	bool present;
	bool loaded;
	uint32_t version_base;
	unsigned batch;
	unsigned batches[MAX_BATCHES];
	unsigned n_batches;
	struct script def;
	struct script core[MAX_CPUS];
	enum ifs_result status;
	uint64_t details;
};

static struct {
	unsigned cpus, tpc, packages, cores, scan_ms;
	bool online[MAX_CPUS];
	struct fdev dev[MAX_DEVS];
	pthread_mutex_t ifs_sem; /* the driver's semaphore: held across a run */
	pthread_mutex_t state;	 /* protects the fields above */
	char *runs;		 /* fake_runs contents */
	size_t runs_len;
} F = {
    .cpus = 4,
    .tpc = 1,
    .packages = 1,
    .scan_ms = 200,
    .ifs_sem = PTHREAD_MUTEX_INITIALIZER,
    .state = PTHREAD_MUTEX_INITIALIZER,
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int parse_step(const char *s, struct step *st)
{
	static const struct {
		const char *name;
		enum res_kind kind;
	} names[] = {
	    {"pass", R_PASS},	    {"fail", R_FAIL},	    {"partial", R_PARTIAL},
	    {"timeout", R_TIMEOUT}, {"control", R_CONTROL}, {"testfail", R_TESTFAIL},
	    {"intr", R_INTR},
	};

	while (*s == ' ' || *s == '\t')
		s++;
	st->code = 0;
	if (!strncmp(s, "untested", 8)) {
		st->kind = R_UNTESTED;
		st->code = 1;
		if (s[8] == ':')
			st->code = strtoul(s + 9, NULL, 0);
		return 0;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i].name);

		if (!strncmp(s, names[i].name, n) && (!s[n] || s[n] == ' ' || s[n] == '\t')) {
			st->kind = names[i].kind;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_script(const char *v, struct script *sc)
{
	char buf[512], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", v);
	sc->n = sc->next = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (sc->n == MAX_SCRIPT || parse_step(tok, &sc->steps[sc->n]))
			return -EINVAL;
		sc->n++;
	}
	return sc->n ? 0 : -EINVAL;
}

static int parse_list(const char *v, unsigned *out, unsigned max, unsigned *n)
{
	uint64_t bits[4];

	if (ifs_cpulist_parse(v, bits, 256))
		return -EINVAL;
	*n = 0;
	for (unsigned i = 0; i < 256; i++) {
		if (ifs_cpu_isset(bits, i)) {
			if (*n == max)
				return -ERANGE;
			out[(*n)++] = i;
		}
	}
	return 0;
}

static int fake_ini_line(void *user, const char *section, const char *name, const char *value)
{
	unsigned list[MAX_CPUS], n;
	int d;

	if (!strcmp(section, "fake")) {
		if (!strcmp(name, "cpus"))
			F.cpus = strtoul(value, NULL, 0);
		else if (!strcmp(name, "threads_per_core"))
			F.tpc = strtoul(value, NULL, 0);
		else if (!strcmp(name, "packages"))
			F.packages = strtoul(value, NULL, 0);
		else if (!strcmp(name, "scan_ms"))
			F.scan_ms = strtoul(value, NULL, 0);
		else if (!strcmp(name, "offline")) {
			if (parse_list(value, list, MAX_CPUS, &n))
				return 0;
			for (unsigned i = 0; i < n; i++)
				if (list[i] < MAX_CPUS)
					F.online[list[i]] = false;
		} else if (!strcmp(name, "devices")) {
			if (parse_list(value, list, MAX_CPUS, &n))
				return 0;
			for (d = 0; d < MAX_DEVS; d++)
				F.dev[d].present = false;
			for (unsigned i = 0; i < n; i++) {
				if (list[i] >= MAX_DEVS)
					return 0;
				F.dev[list[i]].present = true;
			}
		} else {
			return 0;
		}
		return 1;
	}
	if (sscanf(section, "device.%d", &d) != 1 || d < 0 || d >= MAX_DEVS)
		return 0;
	if (!strcmp(name, "image_version")) {
		F.dev[d].loaded = strcmp(value, "none") != 0;
		F.dev[d].version_base = F.dev[d].loaded ? strtoul(value, NULL, 0) : 0x100;
	} else if (!strcmp(name, "batch")) {
		F.dev[d].batch = strtoul(value, NULL, 0);
	} else if (!strcmp(name, "batches")) {
		if (parse_list(value, F.dev[d].batches, MAX_BATCHES, &F.dev[d].n_batches))
			return 0;
	} else if (!strcmp(name, "default")) {
		return parse_script(value, &F.dev[d].def) == 0;
	} else if (!strncmp(name, "core.", 5)) {
		unsigned core = strtoul(name + 5, NULL, 10);

		if (core >= MAX_CPUS)
			return 0;
		return parse_script(value, &F.dev[d].core[core]) == 0;
	} else {
		return 0;
	}
	return 1;
}

static unsigned cpu_core(unsigned cpu)
{
	return cpu % F.cores;
}

/* The status word the hardware would leave for this outcome. */
static void step_result(int dev, const struct step *st, enum ifs_result *res, uint64_t *word)
{
	unsigned err = st->code;

	switch (st->kind) {
	case R_PASS:
		*res = IFS_RESULT_PASS;
		*word = dev == 0   ? ifs_scan_word(16, 15, 0, false, false)
			: dev == 1 ? ifs_array_word(0, 0, false)
				   : ifs_sbaf_word(7, 0, 0, false, 0);
		return;
	case R_FAIL:
		*res = IFS_RESULT_FAIL;
		*word = dev == 0   ? ifs_scan_word(5, 15, 0, false, true)
			: dev == 1 ? ifs_array_word(0x00f0, 2, true)
				   : ifs_sbaf_word(3, 1, 0, false, 1);
		return;
	case R_TESTFAIL:
		*res = IFS_RESULT_FAIL;
		*word = ifs_sbaf_word(3, 1, 0, true, 3);
		return;
	case R_INTR:
		*res = IFS_RESULT_UNTESTED;
		*word = ifs_sbaf_word(2, 0, 0, false, 2);
		return;
	case R_CONTROL:
		*res = IFS_RESULT_UNTESTED;
		*word = ifs_scan_word(0, 15, 0, true, false);
		return;
	case R_PARTIAL:
		err = IFS_ERR_SW_PARTIAL_COMPLETE;
		break;
	case R_TIMEOUT:
		err = IFS_ERR_SW_TIMEOUT;
		break;
	case R_UNTESTED:
		break;
	}
	*res = IFS_RESULT_UNTESTED;
	*word = dev == 0   ? ifs_scan_word(3, 15, err, false, false)
		: dev == 1 ? ifs_array_word(0x0300, 1, false)
			   : ifs_sbaf_word(2, 0, err, false, 0);
}

static const struct step *script_next(struct script *sc)
{
	const struct step *st = &sc->steps[sc->next];

	if (sc->next + 1 < sc->n)
		sc->next++;
	return st;
}

/* ---- the node table ---- */

enum node_kind {
	N_DIR,
	N_RUN_TEST,
	N_STATUS,
	N_DETAILS,
	N_IMAGE_VERSION,
	N_CURRENT_BATCH,
	N_CPU_ONLINE_ALL,
	N_CPU_RANGE, /* possible, present */
	N_CPU_ONLINE,
	N_PKG,
	N_CORE_ID,
	N_SIBLINGS,
	N_RUNS,
};

struct node {
	char path[96];
	enum node_kind kind;
	int idx; /* device or cpu */
	mode_t mode;
};

static struct node *nodes;
static size_t n_nodes;

static void add_node(enum node_kind kind, int idx, mode_t mode, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_node(enum node_kind kind, int idx, mode_t mode, const char *fmt, ...)
{
	va_list ap;
	struct node *n;

	nodes = realloc(nodes, (n_nodes + 1) * sizeof(*nodes));
	if (!nodes)
		abort();
	n = &nodes[n_nodes++];
	va_start(ap, fmt);
	vsnprintf(n->path, sizeof(n->path), fmt, ap);
	va_end(ap);
	n->kind = kind;
	n->idx = idx;
	n->mode = mode;
}

static void build_tree(void)
{
	add_node(N_DIR, 0, 0755, "/");
	add_node(N_RUNS, 0, 0444, "/fake_runs");
	add_node(N_DIR, 0, 0755, "/devices");
	add_node(N_DIR, 0, 0755, "/devices/virtual");
	add_node(N_DIR, 0, 0755, "/devices/virtual/misc");
	for (int d = 0; d < MAX_DEVS; d++) {
		const char *b = "/devices/virtual/misc/intel_ifs_";

		if (!F.dev[d].present)
			continue;
		add_node(N_DIR, d, 0755, "%s%d", b, d);
		add_node(N_RUN_TEST, d, 0200, "%s%d/run_test", b, d);
		add_node(N_STATUS, d, 0444, "%s%d/status", b, d);
		add_node(N_DETAILS, d, 0444, "%s%d/details", b, d);
		/* Array BIST loads no image: plat_ifs_array_attrs has neither. */
		if (d != IFS_TEST_ARRAY) {
			add_node(N_IMAGE_VERSION, d, 0444, "%s%d/image_version", b, d);
			add_node(N_CURRENT_BATCH, d, 0644, "%s%d/current_batch", b, d);
		}
	}
	add_node(N_DIR, 0, 0755, "/devices/system");
	add_node(N_DIR, 0, 0755, "/devices/system/cpu");
	add_node(N_CPU_ONLINE_ALL, 0, 0444, "/devices/system/cpu/online");
	add_node(N_CPU_RANGE, 0, 0444, "/devices/system/cpu/possible");
	add_node(N_CPU_RANGE, 0, 0444, "/devices/system/cpu/present");
	for (unsigned c = 0; c < F.cpus; c++) {
		const char *b = "/devices/system/cpu/cpu";

		add_node(N_DIR, c, 0755, "%s%u", b, c);
		if (c)
			add_node(N_CPU_ONLINE, c, 0644, "%s%u/online", b, c);
		add_node(N_DIR, c, 0755, "%s%u/topology", b, c);
		add_node(N_PKG, c, 0444, "%s%u/topology/physical_package_id", b, c);
		add_node(N_CORE_ID, c, 0444, "%s%u/topology/core_id", b, c);
		add_node(N_SIBLINGS, c, 0444, "%s%u/topology/thread_siblings_list", b, c);
		add_node(N_SIBLINGS, c, 0444, "%s%u/topology/core_cpus_list", b, c);
	}
}

static struct node *node_find(const char *path)
{
	for (size_t i = 0; i < n_nodes; i++)
		if (!strcmp(nodes[i].path, path))
			return &nodes[i];
	return NULL;
}

/* Renders a CPU list like the kernel's %*pbl. */
static int cpulist_print(char *buf, size_t len, const bool *set, unsigned n)
{
	int off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;

		if (!set[i])
			continue;
		while (j + 1 < n && set[j + 1])
			j++;
		if (j == i)
			off += snprintf(buf + off, len - off, "%s%u", off ? "," : "", i);
		else
			off += snprintf(buf + off, len - off, "%s%u-%u", off ? "," : "", i, j);
		i = j;
	}
	return snprintf(buf + off, len - off, "\n") + off;
}

/* Renders the content of a readable file into buf (malloc'ed). */
static char *node_render(const struct node *n)
{
	char *buf = malloc(4096);
	bool set[MAX_CPUS] = {0};
	const struct fdev *d = &F.dev[n->idx];
	unsigned c = n->idx, cores_per_pkg = F.cores / F.packages;

	if (!buf)
		return NULL;
	pthread_mutex_lock(&F.state);
	switch (n->kind) {
	case N_STATUS:
		snprintf(buf, 4096, "%s\n", ifs_result_name(d->status));
		break;
	case N_DETAILS:
		snprintf(buf, 4096, "%#llx\n", (unsigned long long)d->details);
		break;
	case N_IMAGE_VERSION:
		if (d->loaded)
			snprintf(buf, 4096, "%#x\n", d->version_base + d->batch);
		else
			snprintf(buf, 4096, "none\n");
		break;
	case N_CURRENT_BATCH:
		if (d->loaded)
			snprintf(buf, 4096, "0x%02x\n", d->batch);
		else
			snprintf(buf, 4096, "none\n");
		break;
	case N_CPU_ONLINE_ALL:
		cpulist_print(buf, 4096, F.online, F.cpus);
		break;
	case N_CPU_RANGE:
		for (unsigned i = 0; i < F.cpus; i++)
			set[i] = true;
		cpulist_print(buf, 4096, set, F.cpus);
		break;
	case N_CPU_ONLINE:
		snprintf(buf, 4096, "%d\n", F.online[c]);
		break;
	case N_PKG:
		snprintf(buf, 4096, "%u\n", cpu_core(c) / cores_per_pkg);
		break;
	case N_CORE_ID:
		/* Core ids restart in each package, as on real machines. */
		snprintf(buf, 4096, "%u\n", cpu_core(c) % cores_per_pkg);
		break;
	case N_SIBLINGS:
		for (unsigned t = 0; t < F.tpc; t++)
			set[cpu_core(c) + t * F.cores] = true;
		cpulist_print(buf, 4096, set, F.cpus);
		break;
	case N_RUNS:
		free(buf);
		buf = strndup(F.runs ? F.runs : "", F.runs_len);
		break;
	default:
		buf[0] = '\0';
		break;
	}
	pthread_mutex_unlock(&F.state);
	return buf;
}

/* ---- FUSE operations ---- */

static void *fake_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->direct_io = 1; /* every read sees the current value, as sysfs */
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	return NULL;
}

static int fake_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct node *n = node_find(path);

	if (!n)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	if (n->kind == N_DIR) {
		st->st_mode = S_IFDIR | n->mode;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | n->mode;
		st->st_nlink = 1;
		st->st_size = 4096; /* sysfs reports a page */
	}
	return 0;
}

static int fake_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	size_t plen = strlen(path);

	if (!node_find(path))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (size_t i = 0; i < n_nodes; i++) {
		const char *p = nodes[i].path, *rest;

		if (!strcmp(p, "/"))
			continue;
		if (plen == 1) {
			rest = p + 1;
		} else {
			if (strncmp(p, path, plen) || p[plen] != '/')
				continue;
			rest = p + plen + 1;
		}
		if (*rest && !strchr(rest, '/'))
			fill(buf, rest, NULL, 0, 0);
	}
	return 0;
}

static int fake_open(const char *path, struct fuse_file_info *fi)
{
	struct node *n = node_find(path);

	if (!n)
		return -ENOENT;
	if (n->kind == N_DIR)
		return -EISDIR;
	if ((fi->flags & O_ACCMODE) != O_RDONLY && !(n->mode & 0200))
		return -EACCES;
	if ((fi->flags & O_ACCMODE) != O_WRONLY && !(n->mode & 0400))
		return -EACCES;
	fi->direct_io = 1;
	return 0;
}

static int fake_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct node *n = node_find(path);
	char *text;
	size_t len;

	if (!n)
		return -ENOENT;
	text = node_render(n);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if ((size_t)off >= len) {
		free(text);
		return 0;
	}
	if (size > len - off)
		size = len - off;
	memcpy(buf, text + off, size);
	free(text);
	return size;
}

/* kstrtouint(buf, 0, ...): base auto-detected, one trailing newline allowed. */
static int parse_uint(const char *buf, size_t size, unsigned *out)
{
	char tmp[32], *end;
	unsigned long v;

	if (!size || size >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, buf, size);
	tmp[size] = '\0';
	if (tmp[size - 1] == '\n')
		tmp[size - 1] = '\0';
	if (!tmp[0] || tmp[0] == '-' || tmp[0] == '+' || tmp[0] == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoul(tmp, &end, 0);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static void runs_append(int64_t t0, int64_t t1, int dev, unsigned cpu, enum ifs_result r,
			uint64_t details)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%lld %lld intel_ifs_%d %u %s %#llx\n", (long long)t0,
			 (long long)t1, dev, cpu, ifs_result_name(r), (unsigned long long)details);
	char *p = realloc(F.runs, F.runs_len + n + 1);

	if (!p)
		return;
	memcpy(p + F.runs_len, line, n + 1);
	F.runs = p;
	F.runs_len += n;
}

static int run_test(int dev, unsigned cpu)
{
	struct fdev *d = &F.dev[dev];
	const struct step *st;
	enum ifs_result res;
	uint64_t word;
	int64_t t0, t1;
	int rc = 0;

	if (cpu >= F.cpus)
		return -EINVAL;
	/* A second writer, on any device, waits here (ifs_sem). */
	pthread_mutex_lock(&F.ifs_sem);
	pthread_mutex_lock(&F.state);
	if (!F.online[cpu])
		rc = -EINVAL;
	else if (dev != IFS_TEST_ARRAY && !d->loaded)
		rc = -EPERM;
	else {
		struct script *sc = &d->core[cpu_core(cpu)];

		st = script_next(sc->n ? sc : &d->def);
	}
	pthread_mutex_unlock(&F.state);
	if (rc) {
		pthread_mutex_unlock(&F.ifs_sem);
		return rc;
	}
	t0 = now_ms();
	usleep(F.scan_ms * 1000);
	t1 = now_ms();
	step_result(dev, st, &res, &word);
	pthread_mutex_lock(&F.state);
	d->status = res;
	d->details = word;
	runs_append(t0, t1, dev, cpu, res, word);
	pthread_mutex_unlock(&F.state);
	pthread_mutex_unlock(&F.ifs_sem);
	return 0;
}

static int load_batch(int dev, unsigned batch)
{
	struct fdev *d = &F.dev[dev];
	int rc = -ENOENT;

	if (batch > 0xff)
		return -EINVAL;
	pthread_mutex_lock(&F.ifs_sem);
	pthread_mutex_lock(&F.state);
	d->batch = batch;
	d->loaded = false;
	for (unsigned i = 0; i < d->n_batches; i++) {
		if (d->batches[i] == batch) {
			d->loaded = true;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&F.state);
	pthread_mutex_unlock(&F.ifs_sem);
	return rc;
}

static int fake_write(const char *path, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct node *n = node_find(path);
	unsigned v;
	int rc;

	if (!n)
		return -ENOENT;
	if (parse_uint(buf, size, &v))
		return -EINVAL;
	switch (n->kind) {
	case N_RUN_TEST:
		rc = run_test(n->idx, v);
		break;
	case N_CURRENT_BATCH:
		rc = load_batch(n->idx, v);
		break;
	case N_CPU_ONLINE:
		if (v > 1)
			return -EINVAL;
		pthread_mutex_lock(&F.state);
		F.online[n->idx] = v;
		pthread_mutex_unlock(&F.state);
		rc = 0;
		break;
	default:
		return -EACCES;
	}
	return rc ? rc : (int)size;
}

/* `echo 3 > run_test` opens with O_TRUNC; sysfs ignores it, and so do we. */
static int fake_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	return node_find(path) ? 0 : -ENOENT;
}

static const struct fuse_operations fake_ops = {
    .init = fake_init,
    .getattr = fake_getattr,
    .readdir = fake_readdir,
    .open = fake_open,
    .read = fake_read,
    .write = fake_write,
    .truncate = fake_truncate,
};

int main(int argc, char **argv)
{
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: %s CONFIG.ini MOUNTPOINT [-f] [fuse options]\n", argv[0]);
		return 2;
	}
	for (unsigned i = 0; i < MAX_CPUS; i++)
		F.online[i] = true;
	F.dev[0].present = true;
	F.dev[0].loaded = true;
	F.dev[0].version_base = 0x8000;
	F.dev[0].batch = 1;
	for (int d = 0; d < MAX_DEVS; d++) {
		parse_script("pass", &F.dev[d].def);
		F.dev[d].status = IFS_RESULT_UNTESTED; /* SCAN_NOT_TESTED until a run */
	}
	rc = ini_parse(argv[1], fake_ini_line, NULL);
	if (rc) {
		fprintf(stderr, "%s: %s line %d: bad or unknown setting\n", argv[0], argv[1], rc);
		return 2;
	}
	if (!F.cpus || F.cpus > MAX_CPUS || !F.tpc || F.cpus % F.tpc || !F.packages ||
	    (F.cpus / F.tpc) % F.packages) {
		fprintf(stderr, "%s: cpus must be a multiple of threads_per_core * packages\n",
			argv[0]);
		return 2;
	}
	F.cores = F.cpus / F.tpc;
	F.online[0] = true; /* cpu0 cannot go offline here */
	build_tree();
	/* fuse_main gets argv without the config file. */
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &fake_ops, NULL);
}
