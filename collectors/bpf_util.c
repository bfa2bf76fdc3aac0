// SPDX-License-Identifier: MIT
/*
 * Shared BPF helpers of the collectors (see bpf_util.h): the one libbpf
 * print hook, BTF and ftrace probes, capabilities.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/log.h"
#include "base/procfs.h"
#include "collectors/bpf_util.h"

/* --- libbpf messages ------------------------------------------------------ */

/* Warnings of the current load attempt, oldest first; c->why is shorter
 * than a line anyway. */
#define BPF_UTIL_WARN_LINES 8
#define BPF_UTIL_WARN_LEN   200

static const char *bpf_util_component = "libbpf";
static char bpf_util_warn[BPF_UTIL_WARN_LINES][BPF_UTIL_WARN_LEN];
static unsigned bpf_util_nwarn;

/* Keeps one warning message (without "libbpf: " and trailing newlines). */
static void bpf_util_keep(const char *msg, size_t n)
{
	char *dst;

	if (bpf_util_nwarn >= BPF_UTIL_WARN_LINES)
		return;
	if (!strncmp(msg, "libbpf: ", 8)) {
		msg += 8;
		n -= 8;
	}
	if (n > BPF_UTIL_WARN_LEN - 1)
		n = BPF_UTIL_WARN_LEN - 1;
	dst = bpf_util_warn[bpf_util_nwarn++];
	memcpy(dst, msg, n);
	dst[n] = '\0';
}

static int bpf_util_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level lvl = level == LIBBPF_WARN   ? LOG_LVL_WARN
			     : level == LIBBPF_INFO ? LOG_LVL_INFO
						    : LOG_LVL_DEBUG;
	char stack[8192], *buf = stack, *line, *save = NULL;
	va_list aq;
	int n;

	if (level != LIBBPF_WARN && lvl > log_get_level())
		return 0; /* not formatted at all: the debug chatter is long */
	va_copy(aq, ap);
	n = vsnprintf(stack, sizeof(stack), fmt, ap);
	/* a verifier log can be longer than the stack buffer */
	if (n >= (int)sizeof(stack)) {
		char *big = malloc((size_t)n + 1);

		if (big) {
			vsnprintf(big, (size_t)n + 1, fmt, aq);
			buf = big;
		}
	}
	va_end(aq);
	if (n < 0)
		return 0;
	n = (int)strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (level == LIBBPF_WARN)
		bpf_util_keep(buf, (size_t)n);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_msg(lvl, bpf_util_component, "%s", line);
	if (buf != stack)
		free(buf);
	return 0;
}

void bpf_util_init(void)
{
	static bool installed;

	if (installed)
		return;
	libbpf_set_print(bpf_util_print);
	installed = true;
}

void bpf_util_load_begin(const char *collector)
{
	bpf_util_init();
	bpf_util_component = collector;
	bpf_util_nwarn = 0;
}

void bpf_util_load_end(void)
{
	bpf_util_component = "libbpf";
}

const char *bpf_util_load_cause(int err)
{
	const char *what = strerror(err < 0 ? -err : err);

	for (unsigned i = 0; i < bpf_util_nwarn; i++)
		if (strstr(bpf_util_warn[i], what))
			return bpf_util_warn[i];
	return bpf_util_nwarn ? bpf_util_warn[0] : "";
}

/* --- probes --------------------------------------------------------------- */

const char *bpf_util_btf_custom_path(const char *path)
{
	return path && strcmp(path, BPF_UTIL_VMLINUX_BTF) ? path : NULL;
}

int bpf_util_btf_load(struct bpf_util_btf *b, const char *path, const char *module)
{
	char mod_path[256];
	int err;

	memset(b, 0, sizeof(*b));
	if (!path)
		path = BPF_UTIL_VMLINUX_BTF;
	if (access(path, R_OK))
		return -ENOENT;
	b->vmlinux = btf__parse(path, NULL);
	if (!b->vmlinux) {
		err = -errno;
		return err ? err : -EINVAL;
	}
	if (!module)
		return 0;
	snprintf(mod_path, sizeof(mod_path), "/sys/kernel/btf/%s", module);
	if (access(mod_path, R_OK) == 0)
		b->module = btf__load_module_btf(module, b->vmlinux);
	return 0;
}

void bpf_util_btf_free(struct bpf_util_btf *b)
{
	btf__free(b->module);
	btf__free(b->vmlinux);
	b->module = NULL;
	b->vmlinux = NULL;
}

bool bpf_util_btf_has(const struct bpf_util_btf *b, const char *name, __u32 kind)
{
	if (b->vmlinux && btf__find_by_name_kind(b->vmlinux, name, kind) > 0)
		return true;
	return b->module && btf__find_by_name_kind(b->module, name, kind) > 0;
}

bool bpf_util_has_tp_btf(const struct bpf_util_btf *b, const char *tp)
{
	char name[256];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return bpf_util_btf_has(b, name, BTF_KIND_TYPEDEF);
}

bool bpf_util_ftrace_has(const char *fn)
{
	static const char *const paths[] = {
	    "/sys/kernel/tracing/available_filter_functions",
	    "/sys/kernel/debug/tracing/available_filter_functions",
	};
	size_t fnlen = strlen(fn);
	char line[256];
	bool found = false;
	FILE *f = NULL;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !f; i++)
		f = fopen(paths[i], "re");
	if (!f)
		return true;
	/* "name", or "name [module]" for a module's function */
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, fn, fnlen) &&
			(line[fnlen] == '\n' || line[fnlen] == ' ' || line[fnlen] == '\0');
	fclose(f);
	return found;
}

bool bpf_util_has_fentry(const struct bpf_util_btf *b, const char *fn)
{
	return bpf_util_btf_has(b, fn, BTF_KIND_FUNC) && bpf_util_ftrace_has(fn);
}

/* Loads a two-instruction (r0 = 0; exit) tracing program of attach type
 * at on vmlinux's type name of kind: its fd, or -errno (-ENOENT when vmlinux
 * has no such type). */
static int bpf_util_tracing_load(const struct bpf_util_btf *b, const char *name, __u32 kind,
				 enum bpf_attach_type at)
{
	static const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	int id = b->vmlinux ? btf__find_by_name_kind(b->vmlinux, name, kind) : -ENOENT;
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = at,
		    .attach_btf_id = id > 0 ? (__u32)id : 0);
	int fd;

	if (id <= 0)
		return -ENOENT;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "sysobs_probe", "GPL", ret0,
			   sizeof(ret0) / sizeof(ret0[0]), &opts);
	return fd < 0 ? -errno : fd;
}

int bpf_util_fentry_probe(const struct bpf_util_btf *b, const char *fn)
{
	int fd = bpf_util_tracing_load(b, fn, BTF_KIND_FUNC, BPF_TRACE_FENTRY);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int bpf_util_tp_btf_probe(const struct bpf_util_btf *b, const char *tp)
{
	char name[256];
	int fd, link;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	fd = bpf_util_tracing_load(b, name, BTF_KIND_TYPEDEF, BPF_TRACE_RAW_TP);
	if (fd < 0)
		return fd;
	/* a tracing program attaches by its attach_btf_id: no name */
	link = bpf_raw_tracepoint_open(NULL, fd);
	if (link < 0)
		link = -errno;
	else
		close(link);
	close(fd);
	return link < 0 ? link : 0;
}

bool bpf_util_has_helper(enum bpf_prog_type type, enum bpf_func_id helper)
{
	return libbpf_probe_bpf_helper(type, helper, NULL) > 0;
}

bool bpf_util_have_caps(void)
{
	enum { CAP_SYS_ADMIN_BIT = 21, CAP_PERFMON_BIT = 38, CAP_BPF_BIT = 39 };
	uint64_t eff = 0;
	int rc = procfs_status_field("CapEff", 16, &eff);

	if (rc == -ENOENT || rc == -EINVAL)
		eff = 0; /* no such line: no capabilities */
	else if (rc)
		return geteuid() == 0;
	return (eff >> CAP_SYS_ADMIN_BIT & 1) ||
	       ((eff >> CAP_BPF_BIT & 1) && (eff >> CAP_PERFMON_BIT & 1));
}
