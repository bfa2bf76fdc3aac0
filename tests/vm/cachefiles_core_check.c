// SPDX-License-Identifier: MIT
/*
 * cachefiles_core_check: does the cachefiles BPF object load on kernels whose
 * BTF differs from this one's? Runs in the VM (a kernel with cachefiles
 * on-demand). For each variant it writes a copy of the running kernel's BTF
 * (/sys/kernel/btf/vmlinux: cachefiles built in) edited with libbpf's btf API the way an older or
 * newer kernel differs, then opens, loads and attaches the collector's BPF backend with that copy
 * as btf_custom_path, which CO-RE relocates against (the fentry targets stay the running kernel's).
 * Prints one line per variant:
 *
 *   core variant=<name> load=ok|failed [why=<backend's reason>]
 *
 * Variants:
 *   current      the running kernel's BTF, unedited
 *   pre68        5.19-6.7: struct cachefiles_object has `int ondemand_id`
 *                where 6.8 has `struct cachefiles_ondemand_info *ondemand`;
 *                cachefiles_ondemand_info and cachefiles_object_state absent
 *   nostate      cachefiles_ondemand_info without `state`
 *   readiter     cachefiles_ondemand_daemon_read(cache, struct iov_iter *):
 *                the fexit hook must be left out, the rest must load
 *
 *   cachefiles_core_check [--dir DIR] [VARIANT...]
 * Exit 0 when every variant asked for loaded, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "collectors/cachefiles/backend.h"

#define VMLINUX "/sys/kernel/btf/vmlinux"

/* Renames type (name, kind) to new_name; 0 or -errno. */
static int btf_rename_type(struct btf *btf, const char *name, int kind, const char *new_name)
{
	int id = btf__find_by_name_kind(btf, name, kind), off;
	struct btf_type *t;

	if (id < 0)
		return id;
	off = btf__add_str(btf, new_name);
	if (off < 0)
		return off;
	t = (struct btf_type *)btf__type_by_id(btf, id);
	t->name_off = off;
	return 0;
}

/* Renames member of struct sname (and retypes it when type_id > 0). */
static int btf_edit_member(struct btf *btf, const char *sname, const char *member,
			   const char *new_name, int type_id)
{
	int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT), off;
	struct btf_member *m;
	struct btf_type *t;

	if (id < 0)
		return id;
	off = btf__add_str(btf, new_name);
	if (off < 0)
		return off;
	t = (struct btf_type *)btf__type_by_id(btf, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		if (strcmp(btf__name_by_offset(btf, m->name_off), member))
			continue;
		m->name_off = off;
		if (type_id > 0)
			m->type = type_id;
		return 0;
	}
	return -ENOENT;
}

/* The 5.19-6.7 layout: `int ondemand_id` in the object, no info, no state. */
static int edit_pre68(struct btf *btf)
{
	int int_id = btf__find_by_name_kind(btf, "int", BTF_KIND_INT), err;

	if (int_id < 0)
		return int_id;
	err = btf_edit_member(btf, "cachefiles_object", "ondemand", "ondemand_id", int_id);
	if (!err)
		err = btf_rename_type(btf, "cachefiles_ondemand_info", BTF_KIND_STRUCT,
				      "sysobs_test_gone_info");
	if (!err)
		err = btf_rename_type(btf, "cachefiles_object_state", BTF_KIND_ENUM,
				      "sysobs_test_gone_state");
	return err;
}

static int edit_nostate(struct btf *btf)
{
	return btf_edit_member(btf, "cachefiles_ondemand_info", "state", "sysobs_test_gone", 0);
}

/* daemon_read(struct cachefiles_cache *cache, struct iov_iter *iter) */
static int edit_readiter(struct btf *btf)
{
	int fn = btf__find_by_name_kind(btf, "cachefiles_ondemand_daemon_read", BTF_KIND_FUNC);
	int iter = btf__find_by_name_kind(btf, "iov_iter", BTF_KIND_STRUCT);
	const struct btf_type *old;
	int proto, ret_type, p0, iter_ptr;
	struct btf_type *t;

	if (fn < 0 || iter < 0)
		return -ENOENT;
	old = btf__type_by_id(btf, btf__type_by_id(btf, fn)->type);
	ret_type = old->type;
	p0 = btf_params(old)[0].type;
	iter_ptr = btf__add_ptr(btf, iter);
	if (iter_ptr < 0)
		return iter_ptr;
	proto = btf__add_func_proto(btf, ret_type);
	if (proto < 0)
		return proto;
	if (btf__add_func_param(btf, "cache", p0) || btf__add_func_param(btf, "iter", iter_ptr))
		return -ENOMEM;
	t = (struct btf_type *)btf__type_by_id(btf, fn);
	t->type = proto;
	return 0;
}

static const struct variant {
	const char *name;
	int (*edit)(struct btf *btf);
} variants[] = {
    {"current", NULL},
    {"pre68", edit_pre68},
    {"nostate", edit_nostate},
    {"readiter", edit_readiter},
};

/* Writes the running kernel's vmlinux BTF, edited, to path. cachefiles as a
 * module (split BTF) is not handled: the VM kernel has it built in. */
static int btf_write_variant(const struct variant *v, const char *path)
{
	struct btf *btf;
	const void *raw;
	__u32 size;
	FILE *f;
	int err = 0;

	btf = btf__parse(VMLINUX, NULL);
	if (!btf)
		return -errno;
	if (btf__find_by_name_kind(btf, "cachefiles_object", BTF_KIND_STRUCT) < 0) {
		err = -ENOENT; /* a module, or no cachefiles */
		goto out;
	}
	if (v->edit)
		err = v->edit(btf);
	if (err)
		goto out;
	raw = btf__raw_data(btf, &size);
	f = raw ? fopen(path, "w") : NULL;
	if (!f || fwrite(raw, 1, size, f) != size)
		err = -EIO;
	if (f && fclose(f))
		err = -EIO;
out:
	btf__free(btf);
	return err;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp";
	int first = 1, failed = 0;

	if (argc > 2 && !strcmp(argv[1], "--dir")) {
		dir = argv[2];
		first = 3;
	}
	libbpf_set_print(libbpf_quiet);
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		const struct variant *v = &variants[i];
		struct cachefiles_backend_cfg cfg = {.slow_ns = 100000000};
		struct cachefiles_backend *b = NULL;
		char path[256], why[512] = "";
		int err, asked = argc <= first;

		for (int a = first; a < argc; a++)
			asked |= !strcmp(argv[a], v->name);
		if (!asked)
			continue;
		snprintf(path, sizeof(path), "%s/btf-%s", dir, v->name);
		err = btf_write_variant(v, path);
		if (err) {
			printf("core variant=%s load=failed why=editing BTF: %s\n", v->name,
			       strerror(-err));
			failed++;
			continue;
		}
		cfg.btf_path = path;
		err = cachefiles_backend_bpf.open(&cfg, &b, why, sizeof(why));
		if (err) {
			printf("core variant=%s load=failed why=%s\n", v->name, why);
			failed++;
		} else {
			printf("core variant=%s load=ok\n", v->name);
		}
		cachefiles_backend_bpf.close(b);
		fflush(stdout);
	}
	return failed ? 1 : 0;
}
