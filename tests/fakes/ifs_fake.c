// SPDX-License-Identifier: MIT
/*
 * ifs_fake: a FUSE filesystem that behaves like the Intel In-Field Scan driver
 * and the CPU topology in sysfs, for hosts without IFS hardware (all of them,
 * here). Mount it and point sysobsd --sysfs-root at the mount point.
 *
 *   ifs_fake [-f] CONFIG.ini MOUNTPOINT [fuse options]
 *
 *   -f  stay in the foreground (no daemonizing), so that `ifs_fake -f ... &`
 *       leaves $! pointing at the fake itself; without -f it daemonizes.
 *   Run as root, it adds -o allow_other,default_permissions: every user
 *   reads it and the kernel checks the modes, as sysfs (an agent that
 *   dropped root reads it, only root writes run_test and current_batch).
 *
 * Faithful to drivers/platform/x86/intel/ifs/ (sysfs.c, runtest.c, load.c,
 * ifs.h) of the kernel named in docs/ifs.md. It presents, as sysfs.c does:
 *   devices/virtual/misc/intel_ifs_<N>/{run_test,status,details}
 *	+ {image_version,current_batch} for scan (0) and SBAF (2)
 *   devices/system/cpu/{online,possible,present}
 *   devices/system/cpu/cpu<N>/online (not cpu0, as on x86) and, while the
 *	CPU is online only, cpu<N>/topology/{physical_package_id,core_id,
 *	thread_siblings_list,core_cpus_list}: the kernel removes the topology
 *	directory of an offline CPU and drops it from its siblings' lists;
 * and, outside the sysfs tree:
 *   kernel/debug/x86/topo/cpus/<N> with `debugfs = 1` (the x86 topology
 *	debugfs, Linux 6.9+): pkg_id and core_id of every CPU, offline ones
 *	included (cpu_data() outlives the offlining);
 *   fake_runs: one line per finished run "<start_ms> <end_ms> intel_ifs_<N>
 *	<cpu> <status> <details>", so tests can check order and overlap;
 *   fake_loads: one line per current_batch write that took the lock,
 *	"<start_ms> <end_ms> intel_ifs_<N> <batch> <errno>" (0 = loaded);
 *   fake_module: 1 while the intel_ifs module is loaded; write 0 to unload it
 *	(every intel_ifs_<N> directory goes away, as misc_deregister() does)
 *	and 1 to load it again (the devices come back without an image, as
 *	ifs_init() leaves them until current_batch is written, and with status
 *	untested, details 0x0: core.c's static devices, fresh with the module).
 *
 * Driver behaviour reproduced: writing a CPU number to run_test blocks inside
 * write() for the test time, under ONE lock shared by all devices and by
 * current_batch writes (ifs_sem: a second writer waits); a bad or offline CPU
 * gives EINVAL, no image loaded EPERM, a core with an offline sibling (scan,
 * SBAF) ends untested with error 1 "other thread could not join" in a few
 * ms, as runtest.c leaves it (ifs.h: all siblings must be online; the
 * driver does not check, the WRMSR rendezvous fails), an interrupted wait EINTR (scripted:
 * `eintr`); status/details then describe that LAST run of the device, not of
 * a core. Writing current_batch loads the batch (taking load_ms), even the
 * batch already loaded: ENOENT if its file is not listed in `batches`, else
 * the `load` script's outcome (EINVAL: image refused, EIO: authentication
 * failed, EINTR); a failed load leaves no image (`none`). Writing 0/1 to
 * cpuN/online takes a CPU offline or back.
 *
 * Config (INI):
 *   [fake]
 *   cpus = 8                ; logical CPUs
 *   threads_per_core = 2    ; SMT; cpu c is thread c / cores of core c % cores
 *   packages = 1
 *   offline = 5             ; CPU list (offline from the start, as nosmt)
 *   debugfs = 0             ; 1: kernel/debug/x86/topo/cpus/<N> present
 *   model = 0xcf            ; family 6 model in devices/system/cpu/modalias;
 *                           ; a scan of a core within 180 s (0x8f), 30 s (0xcf)
 *                           ; or 1 s (other) of its last one: untested, error 6
 *   scan_ms = 200           ; time one run_test write blocks
 *   load_ms = 0             ; time one current_batch write blocks
 *   devices = 0,1           ; which intel_ifs_<N> exist
 *   [device.0]
 *   image_version = 0x8000  ; or none (image_version of batch b = this + b)
 *   batch = 1
 *   batches = 1,2,3         ; batch files "present" for current_batch writes
 *   load = ok,eio           ; outcome of each current_batch write: ok, eio,
 *                           ; einval, eintr (one per write, the last repeats)
 *   scan_ms = 2100          ; this device's run time (default: [fake]'s)
 *   scan_gen = 2            ; scan: 0 (8-bit chunk fields) or 2 (16-bit)
 *   chunks = 16             ; scan: valid chunks of the image
 *   array_gen = 1           ; array BIST: 0 (MSR_ARRAY_BIST) or 1 (pass/fail bit 0)
 *   max_bundle = 7          ; SBAF: last bundle
 *   default = pass          ; script of every core without its own line
 *   core.2 = fail           ; core = the CPU number of its first thread
 *   core.3 = untested:1,pass   ; a sequence, one per run; the last repeats
 * Results, each only for the tests whose driver code can produce its word
 * (checked at start): pass, fail (all); untested:<code> (scan, SBAF: code
 * 1-255 in bits 32-39, the last pass's word; array gen0: arrays left at the
 * 0.5 s timeout); partial (0xFE: no forward progress after 5 tries; on SBAF
 * with sbaf_status 2, the only way the driver makes it) and intr (SBAF, the
 * same word); timeout (0xFD; scan, SBAF); control (scan control_error);
 * corrupt (scan error 0xB, SBAF 0x4 "invalid bundle": every run fails so
 * until the image is reloaded); testfail (SBAF status 3); eintr (run_test
 * refused with EINTR, no test). Array gen1 only passes or fails.
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

enum res_kind {
	R_PASS,
	R_FAIL,
	R_UNTESTED,
	R_PARTIAL,
	R_TIMEOUT,
	R_CONTROL,
	R_TESTFAIL,
	R_INTR,
	R_CORRUPT,
	R_EINTR,
};

enum load_kind { L_OK, L_EIO, L_EINVAL, L_EINTR };

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
	bool corrupt; /* until the next successful load */
	uint32_t version_base;
	unsigned batch;
	unsigned batches[MAX_BATCHES];
	unsigned n_batches;
	unsigned run_ms; /* 0: [fake] scan_ms */
	unsigned scan_gen, chunks, array_gen, max_bundle;
	enum load_kind load[MAX_SCRIPT];
	unsigned n_load, next_load;
	struct script def;
	struct script core[MAX_CPUS];
	enum ifs_result status;
	uint64_t details;
};

static struct {
	unsigned cpus, tpc, packages, cores, scan_ms, load_ms;
	bool debugfs;		      /* kernel/debug/x86/topo/cpus/<N> */
	unsigned model;		      /* family 6 model: devices/system/cpu/modalias; 0 = none */
	int64_t scanned_ms[MAX_CPUS]; /* per core: start of its last scan, 0 none */
	bool online[MAX_CPUS];
	struct fdev dev[MAX_DEVS];
	pthread_mutex_t ifs_sem; /* the driver's semaphore: held across a run */
	pthread_mutex_t state;	 /* protects the fields above */
	char *runs, *loads;	 /* fake_runs, fake_loads contents */
	bool unloaded;		 /* fake_module: the module was removed */
	size_t runs_len, loads_len;
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
	    {"intr", R_INTR},	    {"corrupt", R_CORRUPT}, {"eintr", R_EINTR},
	};

	while (*s == ' ' || *s == '\t')
		s++;
	st->code = 0;
	if (!strncmp(s, "untested", 8)) {
		st->kind = R_UNTESTED;
		st->code = 1;
		if (s[8] == ':')
			st->code = strtoul(s + 9, NULL, 0);
		/* Error code 0 is a pass (scan) or a completed bundle (SBAF). */
		return st->code >= 1 && st->code <= 0xff ? 0 : -EINVAL;
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

static int parse_load(const char *v, struct fdev *d)
{
	static const char *const names[] = {
	    [L_OK] = "ok", [L_EIO] = "eio", [L_EINVAL] = "einval", [L_EINTR] = "eintr"};
	char buf[512], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", v);
	d->n_load = d->next_load = 0;
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		unsigned k;

		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (!strcmp(tok, names[k]))
				break;
		if (k == sizeof(names) / sizeof(names[0]) || d->n_load == MAX_SCRIPT)
			return -EINVAL;
		d->load[d->n_load++] = k;
	}
	return d->n_load ? 0 : -EINVAL;
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
		else if (!strcmp(name, "load_ms"))
			F.load_ms = strtoul(value, NULL, 0);
		else if (!strcmp(name, "debugfs"))
			F.debugfs = strtoul(value, NULL, 0) != 0;
		else if (!strcmp(name, "model"))
			F.model = strtoul(value, NULL, 0);
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
	} else if (!strcmp(name, "load")) {
		return parse_load(value, &F.dev[d]) == 0;
	} else if (!strcmp(name, "scan_ms")) {
		F.dev[d].run_ms = strtoul(value, NULL, 0);
	} else if (!strcmp(name, "scan_gen")) {
		F.dev[d].scan_gen = strtoul(value, NULL, 0);
		return d == IFS_TEST_SCAN && (F.dev[d].scan_gen == 0 || F.dev[d].scan_gen == 2);
	} else if (!strcmp(name, "chunks")) {
		F.dev[d].chunks = strtoul(value, NULL, 0);
		return d == IFS_TEST_SCAN && F.dev[d].chunks >= 1 && F.dev[d].chunks <= 0xffff;
	} else if (!strcmp(name, "array_gen")) {
		F.dev[d].array_gen = strtoul(value, NULL, 0);
		return d == IFS_TEST_ARRAY && F.dev[d].array_gen <= 1;
	} else if (!strcmp(name, "max_bundle")) {
		F.dev[d].max_bundle = strtoul(value, NULL, 0);
		return d == IFS_TEST_SBAF && F.dev[d].max_bundle <= 0x1ff;
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

/* MSR_SCAN_STATUS: gen0 chunk fields are 8 bits (0-7, 8-15), gen2+ 16 bits
 * (0-15, 16-31); error_code 32-39, control_error 62, signature_error 63. */
static uint64_t scan_word(const struct fdev *d, unsigned chunk, unsigned err, bool ctrl, bool sig)
{
	unsigned stop = d->chunks - 1;
	uint64_t w = d->scan_gen ? (uint64_t)(chunk & 0xffff) | (uint64_t)(stop & 0xffff) << 16
				 : (uint64_t)(chunk & 0xff) | (uint64_t)(stop & 0xff) << 8;

	return w | (uint64_t)(err & 0xff) << 32 | (uint64_t)ctrl << 62 | (uint64_t)sig << 63;
}

/* Whether the driver can leave a word for this step on device dev (the
 * config is refused otherwise): runtest.c ifs_test_core, ifs_array_test_core,
 * ifs_array_test_gen1, ifs_sbaf_test_core. */
static bool step_possible(int dev, const struct fdev *d, enum res_kind k)
{
	if (k == R_PASS || k == R_FAIL || k == R_EINTR)
		return true;
	switch (dev) {
	case IFS_TEST_SCAN:
		return k == R_UNTESTED || k == R_PARTIAL || k == R_TIMEOUT || k == R_CONTROL ||
		       k == R_CORRUPT;
	case IFS_TEST_ARRAY:
		/* gen0: arrays left at the timeout; gen1 only passes or fails */
		return k == R_UNTESTED && d->array_gen == 0;
	case IFS_TEST_SBAF:
		return k == R_UNTESTED || k == R_PARTIAL || k == R_TIMEOUT || k == R_TESTFAIL ||
		       k == R_INTR || k == R_CORRUPT;
	}
	return false;
}

/* The status word the driver would leave for this outcome, and its status. */
static void step_result(int dev, const struct fdev *d, const struct step *st, enum ifs_result *res,
			uint64_t *word)
{
	unsigned fail_chunk = d->chunks * 5 / 16;

	*res = IFS_RESULT_UNTESTED;
	switch (dev) {
	case IFS_TEST_SCAN:
		switch (st->kind) {
		case R_PASS: /* every chunk ran: chunk_num is one past the last */
			*res = IFS_RESULT_PASS;
			*word = scan_word(d, d->chunks, 0, false, false);
			return;
		case R_FAIL:
			*res = IFS_RESULT_FAIL;
			*word = scan_word(d, fail_chunk, 0, false, true);
			return;
		case R_CONTROL: /* untested since 6.x: "Scan controller error" */
			*word = scan_word(d, 0, 0, true, false);
			return;
		case R_CORRUPT: /* IFS_CORRUPTED_CHUNK: "Try reloading" */
			*word = scan_word(d, 0, 0xB, false, false);
			return;
		case R_PARTIAL: /* error 0 without progress, 5 times */
			*word = scan_word(d, 3, IFS_ERR_SW_PARTIAL_COMPLETE, false, false);
			return;
		case R_TIMEOUT: /* the last pass's word, error overwritten */
			*word = scan_word(d, 3, IFS_ERR_SW_TIMEOUT, false, false);
			return;
		default: /* R_UNTESTED */
			*word = scan_word(d, 3, st->code, false, false);
			return;
		}
	case IFS_TEST_ARRAY:
		if (d->array_gen) { /* MSR_ARRAY_STATUS, bit 0 = fail */
			*res = st->kind == R_PASS ? IFS_RESULT_PASS : IFS_RESULT_FAIL;
			*word = st->kind == R_PASS ? 0 : 1;
			return;
		}
		switch (st->kind) {
		case R_PASS:
			*res = IFS_RESULT_PASS;
			*word = ifs_array_word(0, 0, false);
			return;
		case R_FAIL:
			*res = IFS_RESULT_FAIL;
			*word = ifs_array_word(0x00f0, 2, true);
			return;
		default: /* timed out with arrays left */
			*word = ifs_array_word(0x0300, 1, false);
			return;
		}
	default: /* SBAF */
		switch (st->kind) {
		case R_PASS: /* the last bundle completed */
			*res = IFS_RESULT_PASS;
			*word = ifs_sbaf_word(d->max_bundle, 0, 0, false, 0);
			return;
		case R_FAIL:
			*res = IFS_RESULT_FAIL;
			*word = ifs_sbaf_word(3, 1, 0, false, 1);
			return;
		case R_TESTFAIL:
			*res = IFS_RESULT_FAIL;
			*word = ifs_sbaf_word(3, 1, 0, true, 3);
			return;
		case R_INTR:
		case R_PARTIAL:
			/* Interrupted (status 2) with error 0 is restartable: the
			 * driver retries and, without progress, sets 0xFE. A word
			 * with status 2 and error 0 never reaches sysfs. */
			*word = ifs_sbaf_word(2, 1, IFS_ERR_SW_PARTIAL_COMPLETE, false, 2);
			return;
		case R_TIMEOUT: /* 2 s passed after a completed bundle */
			*word = ifs_sbaf_word(2, 0, IFS_ERR_SW_TIMEOUT, false, 0);
			return;
		case R_CORRUPT: /* IFS_SBAF_INVALID_BUNDLE_INDEX: "Reload test image" */
			*word = ifs_sbaf_word(0, 0, 0x4, false, 0);
			return;
		default:
			*word = ifs_sbaf_word(2, 0, st->code, false, 0);
			return;
		}
	}
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
	N_TOPO_DIR,
	N_DEV_DIR, /* intel_ifs_<N>: exists while the module is loaded */
	N_MODULE,
	N_DEBUG_TOPO, /* kernel/debug/x86/topo/cpus/<N> */
	N_MODALIAS,
	N_RUNS,
	N_LOADS,
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
	add_node(N_LOADS, 0, 0444, "/fake_loads");
	add_node(N_MODULE, 0, 0644, "/fake_module");
	add_node(N_DIR, 0, 0755, "/devices");
	add_node(N_DIR, 0, 0755, "/devices/virtual");
	add_node(N_DIR, 0, 0755, "/devices/virtual/misc");
	for (int d = 0; d < MAX_DEVS; d++) {
		const char *b = "/devices/virtual/misc/intel_ifs_";

		if (!F.dev[d].present)
			continue;
		add_node(N_DEV_DIR, d, 0755, "%s%d", b, d);
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
	if (F.model)
		add_node(N_MODALIAS, 0, 0444, "/devices/system/cpu/modalias");
	for (unsigned c = 0; c < F.cpus; c++) {
		const char *b = "/devices/system/cpu/cpu";

		add_node(N_DIR, c, 0755, "%s%u", b, c);
		if (c)
			add_node(N_CPU_ONLINE, c, 0644, "%s%u/online", b, c);
		add_node(N_TOPO_DIR, c, 0755, "%s%u/topology", b, c);
		add_node(N_PKG, c, 0444, "%s%u/topology/physical_package_id", b, c);
		add_node(N_CORE_ID, c, 0444, "%s%u/topology/core_id", b, c);
		add_node(N_SIBLINGS, c, 0444, "%s%u/topology/thread_siblings_list", b, c);
		add_node(N_SIBLINGS, c, 0444, "%s%u/topology/core_cpus_list", b, c);
	}
	if (!F.debugfs)
		return;
	add_node(N_DIR, 0, 0755, "/kernel");
	add_node(N_DIR, 0, 0700, "/kernel/debug");
	add_node(N_DIR, 0, 0755, "/kernel/debug/x86");
	add_node(N_DIR, 0, 0755, "/kernel/debug/x86/topo");
	add_node(N_DIR, 0, 0755, "/kernel/debug/x86/topo/cpus");
	for (unsigned c = 0; c < F.cpus; c++)
		add_node(N_DEBUG_TOPO, c, 0444, "/kernel/debug/x86/topo/cpus/%u", c);
}

/* cpuN/topology and what is in it exist only while cpu N is online: the
 * kernel removes the directory at hot-unplug (topology_remove_dev). */
static bool node_visible(const struct node *n)
{
	bool v = true;

	switch (n->kind) {
	case N_TOPO_DIR:
	case N_PKG:
	case N_CORE_ID:
	case N_SIBLINGS:
		pthread_mutex_lock(&F.state);
		v = F.online[n->idx];
		pthread_mutex_unlock(&F.state);
		break;
	case N_DEV_DIR:
	case N_RUN_TEST:
	case N_STATUS:
	case N_DETAILS:
	case N_IMAGE_VERSION:
	case N_CURRENT_BATCH:
		pthread_mutex_lock(&F.state);
		v = !F.unloaded;
		pthread_mutex_unlock(&F.state);
		break;
	default:
		break;
	}
	return v;
}

static struct node *node_find(const char *path)
{
	for (size_t i = 0; i < n_nodes; i++)
		if (!strcmp(nodes[i].path, path))
			return node_visible(&nodes[i]) ? &nodes[i] : NULL;
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
		/* The kernel's %#llx prints zero as 0x0 (lib/vsprintf.c puts the
		 * prefix on any hex number); glibc's as "0". */
		snprintf(buf, 4096, "0x%llx\n", (unsigned long long)d->details);
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
		/* An offline thread leaves its siblings' masks too
		 * (remove_siblinginfo). */
		for (unsigned t = 0; t < F.tpc; t++)
			set[cpu_core(c) + t * F.cores] = F.online[cpu_core(c) + t * F.cores];
		cpulist_print(buf, 4096, set, F.cpus);
		break;
	case N_MODALIAS:
		/* arch_print_cpu_modalias(), a few feature words after it */
		snprintf(buf, 4096, "cpu:type:x86,ven0000fam0006mod%04X:feature:,0000,0001,0002\n",
			 F.model);
		break;
	case N_DEBUG_TOPO: {
		/* arch/x86/kernel/cpu/debugfs.c cpu_debug_show(): cpu_data(N)
		 * stays after the CPU goes offline; every CPU here was brought up
		 * once (x86 boots every thread, nosmt included). */
		unsigned pkg = cpu_core(c) / cores_per_pkg, core = cpu_core(c) % cores_per_pkg;
		unsigned apicid = pkg << 8 | core << 1 | c / F.cores;

		snprintf(buf, 4096,
			 "online:              %d\n"
			 "initial_apicid:      %x\n"
			 "apicid:              %x\n"
			 "pkg_id:              %u\n"
			 "die_id:              0\n"
			 "cu_id:               255\n"
			 "core_id:             %u\n"
			 "logical_pkg_id:      %u\n"
			 "logical_die_id:      %u\n"
			 "llc_id:              %u\n"
			 "l2c_id:              %u\n"
			 "max_cores:           %u\n"
			 "max_die_per_pkg:     1\n"
			 "smp_num_siblings:    %u\n",
			 F.online[c], apicid, apicid, pkg, core, pkg, pkg, pkg << 8, apicid & ~1u,
			 cores_per_pkg, F.tpc);
		break;
	}
	case N_RUNS:
		free(buf);
		buf = strndup(F.runs ? F.runs : "", F.runs_len);
		break;
	case N_LOADS:
		free(buf);
		buf = strndup(F.loads ? F.loads : "", F.loads_len);
		break;
	case N_MODULE:
		snprintf(buf, 4096, "%d\n", !F.unloaded);
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
	if (n->kind == N_DIR || n->kind == N_TOPO_DIR || n->kind == N_DEV_DIR) {
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
		if (*rest && !strchr(rest, '/') && node_visible(&nodes[i]))
			fill(buf, rest, NULL, 0, 0);
	}
	return 0;
}

static int fake_open(const char *path, struct fuse_file_info *fi)
{
	struct node *n = node_find(path);

	if (!n)
		return -ENOENT;
	if (n->kind == N_DIR || n->kind == N_TOPO_DIR || n->kind == N_DEV_DIR)
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

static void log_append(char **log, size_t *len, const char *line, int n)
{
	char *p = realloc(*log, *len + n + 1);

	if (!p)
		return;
	memcpy(p + *len, line, n + 1);
	*log = p;
	*len += n;
}

static void runs_append(int64_t t0, int64_t t1, int dev, unsigned cpu, enum ifs_result r,
			uint64_t details)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%lld %lld intel_ifs_%d %u %s 0x%llx\n", (long long)t0,
			 (long long)t1, dev, cpu, ifs_result_name(r), (unsigned long long)details);

	log_append(&F.runs, &F.runs_len, line, n);
}

/* Whether every thread of cpu's core is online. */
static bool siblings_online(unsigned cpu)
{
	for (unsigned c = 0; c < F.cpus; c++)
		if (cpu_core(c) == cpu_core(cpu) && !F.online[c])
			return false;
	return true;
}

/* Whether the core of cpu was scanned less than its model's interval ago
 * (F.state held). */
static bool scan_too_soon(unsigned cpu)
{
	int64_t gap = F.model == 0x8f ? 180000 : F.model == 0xcf ? 30000 : F.model ? 1000 : 0;
	int64_t last = F.scanned_ms[cpu_core(cpu)];

	return gap && last && now_ms() - last < gap;
}

static int run_test(int dev, unsigned cpu)
{
	struct fdev *d = &F.dev[dev];
	const struct step *st = NULL;
	struct step corrupt = {.kind = R_CORRUPT};
	enum ifs_result res;
	uint64_t word;
	int64_t t0, t1;
	unsigned ms;
	bool alone = false, too_soon = false;
	int rc = 0;

	/* run_test_store: kstrtouint, cpu >= nr_cpu_ids */
	if (cpu >= F.cpus)
		return -EINVAL;
	/* A second writer, on any device, waits here (ifs_sem). */
	pthread_mutex_lock(&F.ifs_sem);
	pthread_mutex_lock(&F.state);
	if (!F.online[cpu]) {
		rc = -EINVAL; /* do_core_test: !cpu_online(cpu) */
	} else if (dev != IFS_TEST_ARRAY && !d->loaded) {
		rc = -EPERM;
	} else if (dev != IFS_TEST_ARRAY && !siblings_online(cpu)) {
		/* A sibling is offline: do_core_test checks only the CPU
		 * written; stop_core_cpuslocked runs on the online threads, and
		 * the WRMSR waits for the missing one in vain: error 1 "other
		 * thread could not join", restartable, no progress after 5
		 * tries: untested with chunk/bundle 0, in a few ms. The core's
		 * script is not consumed: its test never started. */
		alone = true;
	} else if (dev == IFS_TEST_SCAN && scan_too_soon(cpu)) {
		/* The microcode refuses a scan of the core inside its interval
		 * (test_ifs.sh: 180 s on Sapphire Rapids, 30 s on Emerald
		 * Rapids, 1 s elsewhere): untested, error 6. */
		too_soon = true;
	} else {
		struct script *sc = &d->core[cpu_core(cpu)];

		st = script_next(sc->n ? sc : &d->def);
		if (dev == IFS_TEST_SCAN)
			F.scanned_ms[cpu_core(cpu)] = now_ms();
		if (st->kind == R_EINTR)
			rc = -EINTR; /* down_interruptible: a signal while waiting */
		else if (d->corrupt)
			st = &corrupt; /* the image stays bad until reloaded */
		else if (st->kind == R_CORRUPT)
			d->corrupt = true;
	}
	ms = alone || too_soon ? 5 : d->run_ms ? d->run_ms : F.scan_ms;
	pthread_mutex_unlock(&F.state);
	if (rc) {
		pthread_mutex_unlock(&F.ifs_sem);
		return rc;
	}
	t0 = now_ms();
	usleep(ms * 1000);
	t1 = now_ms();
	if (alone) {
		res = IFS_RESULT_UNTESTED;
		word = dev == IFS_TEST_SCAN ? scan_word(d, 0, 1, false, false)
					    : ifs_sbaf_word(0, 0, 1, false, 0);
	} else if (too_soon) {
		res = IFS_RESULT_UNTESTED;
		word = scan_word(d, 0, 6, false, false);
	} else {
		step_result(dev, d, st, &res, &word);
	}
	pthread_mutex_lock(&F.state);
	d->status = res;
	d->details = word;
	runs_append(t0, t1, dev, cpu, res, word);
	pthread_mutex_unlock(&F.state);
	pthread_mutex_unlock(&F.ifs_sem);
	return 0;
}

/* current_batch_store -> ifs_load_firmware: loads the batch even if it is
 * the one loaded; a failure leaves no image (ifsd->loaded = ret == 0). */
static int load_batch(int dev, unsigned batch)
{
	struct fdev *d = &F.dev[dev];
	enum load_kind k = L_OK;
	bool present = false;
	int64_t t0, t1;
	char line[96];
	int rc, n;

	if (batch > 0xff)
		return -EINVAL;
	pthread_mutex_lock(&F.ifs_sem);
	pthread_mutex_lock(&F.state);
	if (d->n_load) {
		k = d->load[d->next_load];
		if (d->next_load + 1 < d->n_load)
			d->next_load++;
	}
	pthread_mutex_unlock(&F.state);
	if (k == L_EINTR) { /* down_interruptible: nothing changed */
		pthread_mutex_unlock(&F.ifs_sem);
		return -EINTR;
	}
	for (unsigned i = 0; i < d->n_batches; i++)
		present |= d->batches[i] == batch;
	t0 = now_ms();
	/* request_firmware_direct fails fast; authenticating a present image
	 * (hash copy, every chunk, every package) takes load_ms. */
	if (present)
		usleep(F.load_ms * 1000);
	t1 = now_ms();
	rc = !present ? -ENOENT : k == L_EIO ? -EIO : k == L_EINVAL ? -EINVAL : 0;
	pthread_mutex_lock(&F.state);
	d->batch = batch;
	d->loaded = rc == 0;
	if (!rc)
		d->corrupt = false;
	n = snprintf(line, sizeof(line), "%lld %lld intel_ifs_%d %u %d\n", (long long)t0,
		     (long long)t1, dev, batch, -rc);
	log_append(&F.loads, &F.loads_len, line, n);
	pthread_mutex_unlock(&F.state);
	pthread_mutex_unlock(&F.ifs_sem);
	return rc;
}

/* rmmod intel_ifs (0) or modprobe (1). rmmod waits for a run in progress
 * (the device's file is held open), as we do by taking ifs_sem. A loaded
 * module starts with no image on any device, and its devices (core.c's
 * static ifs_devices[], fresh with the module's data) with status
 * untested (SCAN_NOT_TESTED, 0) and details 0x0. */
static void module_set(unsigned loaded)
{
	pthread_mutex_lock(&F.ifs_sem);
	pthread_mutex_lock(&F.state);
	if (loaded && F.unloaded) {
		for (int d = 0; d < MAX_DEVS; d++) {
			F.dev[d].loaded = false;
			F.dev[d].status = IFS_RESULT_UNTESTED;
			F.dev[d].details = 0;
		}
	}
	F.unloaded = !loaded;
	pthread_mutex_unlock(&F.state);
	pthread_mutex_unlock(&F.ifs_sem);
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
	case N_MODULE:
		if (v > 1)
			return -EINVAL;
		module_set(v);
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

/* Refuses a script step the device's driver code cannot produce. */
static int scripts_check(const char *prog)
{
	for (int dev = 0; dev < MAX_DEVS; dev++) {
		const struct fdev *d = &F.dev[dev];

		for (int c = -1; c < MAX_CPUS; c++) {
			const struct script *sc = c < 0 ? &d->def : &d->core[c];

			for (unsigned i = 0; i < sc->n; i++) {
				if (step_possible(dev, d, sc->steps[i].kind))
					continue;
				fprintf(stderr,
					"%s: device.%d %s: step %u is no word the driver makes for "
					"this test\n",
					prog, dev, c < 0 ? "default" : "core.N", i + 1);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static void usage(const char *prog)
{
	fprintf(
	    stderr,
	    "usage: %s [-f] CONFIG.ini MOUNTPOINT [fuse options]\n"
	    "  -f  stay in the foreground (no daemonizing): `%s -f ... &` leaves $! = its pid\n",
	    prog, prog);
}

int main(int argc, char **argv)
{
	char **fargv = calloc(argc + 3, sizeof(*fargv));
	const char *config = NULL;
	int rc, fargc = 0;

	if (!fargv)
		return 1;
	/* The first argument that is no option is the config; everything else,
	 * -f included, goes to fuse_main in its order. */
	fargv[fargc++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (!config && argv[i][0] != '-')
			config = argv[i];
		else
			fargv[fargc++] = argv[i];
	}
	if (!config || fargc < 2) {
		usage(argv[0]);
		return 2;
	}
	/* As sysfs: every user may read, the kernel checks the modes (run_test
	 * and current_batch 0200 root). Without allow_other only the mounting
	 * user may enter the mount, and an agent that drops root (the default
	 * [agent] user) sees no device at all: it found them as root, then
	 * reported every intel_ifs_<N> gone after the drop. */
	if (geteuid() == 0) {
		fargv[fargc++] = "-o";
		fargv[fargc++] = "allow_other,default_permissions";
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
		F.dev[d].chunks = 16;
		F.dev[d].max_bundle = 7;
	}
	rc = ini_parse(config, fake_ini_line, NULL);
	if (rc) {
		fprintf(stderr, "%s: %s line %d: bad or unknown setting\n", argv[0], config, rc);
		return 2;
	}
	if (!F.cpus || F.cpus > MAX_CPUS || !F.tpc || F.cpus % F.tpc || !F.packages ||
	    (F.cpus / F.tpc) % F.packages) {
		fprintf(stderr, "%s: cpus must be a multiple of threads_per_core * packages\n",
			argv[0]);
		return 2;
	}
	if (F.dev[IFS_TEST_SCAN].scan_gen == 0 && F.dev[IFS_TEST_SCAN].chunks > 0xff) {
		fprintf(stderr, "%s: scan_gen 0 has 8-bit chunk fields: chunks <= 255\n", argv[0]);
		return 2;
	}
	if (scripts_check(argv[0]))
		return 2;
	F.cores = F.cpus / F.tpc;
	F.online[0] = true; /* cpu0 cannot go offline here */
	build_tree();
	return fuse_main(fargc, fargv, &fake_ops, NULL);
}
