/* SPDX-License-Identifier: MIT */
/*
 * What every BPF collector needs apart from its own program (compare
 * libbpf-tools' trace_helpers): one libbpf print hook, and probes of the
 * running kernel that decide whether a program can load and attach.
 *
 * libbpf messages. bpf_util_init() installs the hook once; from then on
 * every libbpf message goes through base/log.h, warnings at warn, the rest
 * at debug, one log line per message line (a verifier log is many). Between
 * bpf_util_load_begin(name) and bpf_util_load_end() the lines carry the
 * name of the collector loading, and libbpf's warnings are kept so that
 * bpf_util_load_cause() can quote the one that explains a failure in
 * c->why. Main thread only.
 */
#ifndef SYSOBS_BPF_UTIL_H
#define SYSOBS_BPF_UTIL_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <stdbool.h>

struct btf;

#define BPF_UTIL_VMLINUX_BTF "/sys/kernel/btf/vmlinux"

/* Installs the libbpf print hook; later calls do nothing. */
void bpf_util_init(void);

/* Lines libbpf prints from now on are collector's (a string that outlives
 * the load); its warnings are kept afresh. Calls bpf_util_init(). */
void bpf_util_load_begin(const char *collector);
/* Back to lines of component "libbpf"; the kept warnings stay readable. */
void bpf_util_load_end(void);
/* Of the warnings kept since the (re)try began: the one naming err's
 * strerror() text, else the oldest (a harmless RLIMIT_MEMLOCK note comes
 * first, the one naming the error later), else "". Without "libbpf: ". */
const char *bpf_util_load_cause(int err);

/*
 * What to give bpf_object_open_opts.btf_custom_path for a configured BTF
 * path: NULL for the running kernel's own (BPF_UTIL_VMLINUX_BTF), else path.
 * libbpf 1.1 parses a custom path for CO-RE in addition to the vmlinux BTF
 * it loads anyway for tp_btf/fentry attach targets: two ~6 MiB parses alive
 * at once (+11 MiB at start-up's peak), and no module BTF searched for CO-RE
 * candidates. The same file twice buys nothing.
 */
const char *bpf_util_btf_custom_path(const char *path);

/* The kernel's BTF: vmlinux and, optionally, one module's split BTF. */
struct bpf_util_btf {
	struct btf *vmlinux;
	struct btf *module; /* NULL: not asked for, or not loaded */
};

/*
 * Parses the vmlinux BTF at path (NULL: BPF_UTIL_VMLINUX_BTF) and, when
 * module is given and its BTF is present (/sys/kernel/btf/<module>: the
 * module is loaded), the module's split on it. 0; -ENOENT when path is not
 * readable (a kernel without CONFIG_DEBUG_INFO_BTF), errno kept; -errno when
 * it does not parse. A missing module is not an error.
 */
int bpf_util_btf_load(struct bpf_util_btf *b, const char *path, const char *module);
void bpf_util_btf_free(struct bpf_util_btf *b); /* accepts a zeroed one */

/* Is there a type of this kind and name in vmlinux or the module? A FUNC
 * is an fentry/fexit target or a kfunc. False for a NULL BTF. */
bool bpf_util_btf_has(const struct bpf_util_btf *b, const char *name, __u32 kind);

/* Can a tp_btf program attach to tracepoint tp ("kfree_skb")? The kernel
 * declares a btf_trace_<tp> typedef for each BTF-enabled tracepoint. */
bool bpf_util_has_tp_btf(const struct bpf_util_btf *b, const char *tp);

/* Does ftrace list fn in available_filter_functions (fentry/fexit need it:
 * an inlined or notrace function is in BTF but cannot be traced)? Unknown,
 * without tracefs, counts as yes: the attach will tell. */
bool bpf_util_ftrace_has(const char *fn);

/* Can fentry/fexit attach to fn: a FUNC in BTF that ftrace lists. */
bool bpf_util_has_fentry(const struct bpf_util_btf *b, const char *fn);

/* Does the kernel load an fentry program on vmlinux's fn? A two-instruction
 * one, so that a kernel or a policy that refuses tracing programs (EPERM
 * where ftrace is locked down) is known before a collector's object loads:
 * each load is a parse of the kernel's BTF (~11 MiB, ~0.15 s). 0; -ENOENT
 * when fn is no FUNC in vmlinux's BTF; else the load's -errno. */
int bpf_util_fentry_probe(const struct bpf_util_btf *b, const char *fn);

/* Does the kernel load a tp_btf program on tracepoint tp ("kfree_skb") and
 * attach it (bpf_raw_tracepoint_open(), detached at once)? A kernel may
 * declare the tracepoint in BTF and still refuse either. 0; -ENOENT when
 * vmlinux's BTF has no btf_trace_<tp>; else the load's or attach's -errno. */
int bpf_util_tp_btf_probe(const struct bpf_util_btf *b, const char *tp);

/* Does the verifier know helper in programs of type (libbpf's probe: a
 * tiny program that calls it)? False also when the probe cannot load. */
bool bpf_util_has_helper(enum bpf_prog_type type, enum bpf_func_id helper);

/* May this process load tracing BPF: CAP_SYS_ADMIN, or CAP_BPF with
 * CAP_PERFMON, in its effective set (not just "is root"). */
bool bpf_util_have_caps(void);

#endif
