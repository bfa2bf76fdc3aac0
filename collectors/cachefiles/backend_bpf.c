// SPDX-License-Identifier: MIT
/*
 * BPF backend of the cachefiles collector: loads bpf/cachefiles.bpf.c
 * (fentry/fexit on the on-demand request functions, tp_btf on the
 * cachefiles_ondemand_* tracepoints) and reads its maps.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/log.h"
#include "bpf/cachefiles.skel.h"
#include "collectors/bpf_util.h"
#include "collectors/cachefiles/backend.h"
#include "collectors/cachefiles/backend_bpf.h"
#include "collectors/cachefiles/cachefiles_decode.h"

#define CF_LOG "cachefiles"

struct cachefiles_backend {
	struct cachefiles_bpf *skel;
	struct ring_buffer *rb; /* slow_events and daemon_events */
	const struct cachefiles_drain *drain;
	int delivered;
};

static bool cf_module_available(void)
{
	struct utsname u;
	char pat[512];
	glob_t g;
	bool found;

	if (uname(&u))
		return false;
	snprintf(pat, sizeof(pat), "/lib/modules/%s/kernel/fs/cachefiles/cachefiles.ko*",
		 u.release);
	if (glob(pat, 0, NULL, &g))
		return false;
	found = g.gl_pathc > 0;
	globfree(&g);
	return found;
}

static int bpf_probe(char *why, size_t why_len)
{
	struct cachefiles_kernel k = {0};
	struct bpf_util_btf b;
	int err;

	k.has_btf = bpf_util_btf_load(&b, NULL, "cachefiles") == 0;
	k.has_cachefiles = bpf_util_btf_has(&b, "cachefiles_object", BTF_KIND_STRUCT);
	k.module_available = !k.has_cachefiles && cf_module_available();
	k.has_read_fn = bpf_util_btf_has(&b, "cachefiles_ondemand_read", BTF_KIND_FUNC);
	k.has_init_fn = bpf_util_btf_has(&b, "cachefiles_ondemand_init_object", BTF_KIND_FUNC);
	k.traceable = k.has_read_fn ? bpf_util_ftrace_has("cachefiles_ondemand_read") : true;
	bpf_util_btf_free(&b);
	err = cachefiles_probe_verdict(&k, why, why_len);
	if (!err && !bpf_util_have_caps()) {
		snprintf(why, why_len,
			 "no permission to load BPF (needs CAP_BPF and CAP_PERFMON, or "
			 "CAP_SYS_ADMIN)");
		err = -EPERM;
	}
	return err;
}

/* Resolves typedefs, modifiers and type tags (char __user *). */
static const struct btf_type *cf_btf_resolved(const struct btf *btf, __u32 id)
{
	int r = btf__resolve_type(btf, id);

	return r < 0 ? NULL : btf__type_by_id(btf, r);
}

static bool cf_btf_is_int(const struct btf *btf, __u32 id, __u32 size)
{
	const struct btf_type *t = cf_btf_resolved(btf, id);

	return t && btf_is_int(t) && t->size == size;
}

static bool cf_btf_is_ptr_to(const struct btf *btf, __u32 id, __u16 kind, const char *name,
			     __u32 int_size)
{
	const struct btf_type *t = cf_btf_resolved(btf, id);

	if (!t || !btf_is_ptr(t))
		return false;
	if (kind == BTF_KIND_INT)
		return cf_btf_is_int(btf, t->type, int_size);
	t = cf_btf_resolved(btf, t->type);
	return t && btf_kind(t) == kind && !strcmp(btf__name_by_offset(btf, t->name_off), name);
}

/* The prototype of function name in btf: 0 and *proto; -ENOENT (not in
 * BTF) or -EINVAL (no prototype) with why. */
static int cf_func_proto(const struct btf *btf, const char *name, const struct btf_type **proto,
			 char *why, size_t why_len)
{
	const struct btf_type *fn;
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);

	if (id < 0) {
		snprintf(why, why_len, "not in BTF");
		return -ENOENT;
	}
	fn = btf__type_by_id(btf, id);
	*proto = fn ? btf__type_by_id(btf, fn->type) : NULL;
	if (!*proto || !btf_is_func_proto(*proto)) {
		snprintf(why, why_len, "no prototype in BTF");
		return -EINVAL;
	}
	return 0;
}

int cachefiles_daemon_read_proto_check(const struct btf *btf, char *why, size_t why_len)
{
	const struct btf_type *proto;
	const struct btf_param *p;
	int err = cf_func_proto(btf, "cachefiles_ondemand_daemon_read", &proto, why, why_len);

	if (err)
		return err;
	p = btf_params(proto);
	if (btf_vlen(proto) != 3 ||
	    !cf_btf_is_ptr_to(btf, p[0].type, BTF_KIND_STRUCT, "cachefiles_cache", 0) ||
	    !cf_btf_is_ptr_to(btf, p[1].type, BTF_KIND_INT, NULL, 1) ||
	    !cf_btf_is_int(btf, p[2].type, 8) || !cf_btf_is_int(btf, proto->type, 8)) {
		snprintf(why, why_len,
			 "prototype is not ssize_t (struct cachefiles_cache *, char __user *, "
			 "size_t) (%u parameters)",
			 btf_vlen(proto));
		return -EINVAL;
	}
	return 0;
}

/*
 * cachefiles_prepare_ondemand_read (6.1+): the fexit reads the return value
 * after six arguments. 0; -ENOENT when absent; -EINVAL, why, otherwise.
 */
int cachefiles_prepare_read_proto_check(const struct btf *btf, char *why, size_t why_len)
{
	const struct btf_type *proto, *ret;
	int err = cf_func_proto(btf, "cachefiles_prepare_ondemand_read", &proto, why, why_len);

	if (err)
		return err;
	/* the enum is __mode(byte) in 6.x: 1 byte; the program masks by size */
	ret = cf_btf_resolved(btf, proto->type);
	if (btf_vlen(proto) != 6 || !ret || !(btf_is_enum(ret) || btf_is_int(ret)) ||
	    ret->size > 4) {
		snprintf(why, why_len,
			 "prototype is not enum netfs_io_source (6 arguments) (%u parameters, "
			 "return of %u bytes)",
			 btf_vlen(proto), ret ? ret->size : 0);
		return -EINVAL;
	}
	return 0;
}

/* An optional hook: a tracepoint for tp_btf, a function for fentry/fexit,
 * or a function whose prototype the program relies on. */
enum cf_hook_kind { CF_HOOK_TP, CF_HOOK_FN, CF_HOOK_FN_DAEMON_READ, CF_HOOK_FN_PREPARE_READ };

struct cf_hook {
	const char *name;
	enum cf_hook_kind kind;
};

/* In the order of the programs in cf_optional_programs(). */
static const struct cf_hook cf_optional_hooks[] = {
    {"cachefiles_ondemand_open"},
    {"cachefiles_ondemand_read"},
    {"cachefiles_ondemand_cread"},
    {"cachefiles_ondemand_copen"},
    {"cachefiles_ondemand_close"},
    {"cachefiles_ondemand_fd_write"},
    {"cachefiles_ondemand_fd_release"},
    {"cachefiles_ondemand_daemon_read", CF_HOOK_FN_DAEMON_READ},
    {"cachefiles_ondemand_restore", CF_HOOK_FN}, /* 6.8+ */
    {"cachefiles_flush_reqs", CF_HOOK_FN},
    {"cachefiles_ondemand_clean_object", CF_HOOK_FN},
    {"cachefiles_ondemand_clean_object", CF_HOOK_FN},
    {"cachefiles_prepare_ondemand_read", CF_HOOK_FN_PREPARE_READ}, /* 6.1+ */
    {"cachefiles_free_volume", CF_HOOK_FN},
    {"cachefiles_withdraw_volume", CF_HOOK_FN},
    {"cachefiles_ondemand_send_req", CF_HOOK_FN}, /* static: absent where inlined */
    {"cachefiles_ondemand_copen", CF_HOOK_FN},
};

/* Whether the kernel has hook h, as the program needs it: present, and for
 * the hooks that read arguments by position, with the prototype they were
 * written for (checked in the module's BTF, else vmlinux's). Says in the
 * log what is not measured without it. */
static bool cf_hook_available(const struct bpf_util_btf *b, const struct cf_hook *h,
			      struct cachefiles_bpf *skel)
{
	int (*check)(const struct btf *, char *, size_t);
	char why[160];
	int err;

	if (h->kind == CF_HOOK_TP ? !bpf_util_has_tp_btf(b, h->name)
				  : !bpf_util_has_fentry(b, h->name)) {
		log_info(CF_LOG, "kernel lacks %s%s: that part is not measured",
			 h->kind == CF_HOOK_TP ? "btf_trace_" : "", h->name);
		return false;
	}
	if (h->kind == CF_HOOK_TP || h->kind == CF_HOOK_FN)
		return true;
	check = h->kind == CF_HOOK_FN_DAEMON_READ ? cachefiles_daemon_read_proto_check
						  : cachefiles_prepare_read_proto_check;
	err = b->module ? check(b->module, why, sizeof(why)) : -ENOENT;
	if (err == -ENOENT)
		err = check(b->vmlinux, why, sizeof(why));
	if (!err) {
		if (h->kind == CF_HOOK_FN_PREPARE_READ)
			skel->rodata->read_verdict_deferred = true;
		return true;
	}
	log_info(CF_LOG, "kernel's %s: %s: %s", h->name, why,
		 h->kind == CF_HOOK_FN_DAEMON_READ ? "the daemon pick-up of READs is not measured"
						   : "a READ completed without data counts as ok");
	return false;
}

/* Tracepoints and the daemon-read hook are optional: kernels that lack them
 * still get latency histograms from the two required functions. The hook
 * reads its arguments by position (the user buffer, the return value), so it
 * is enabled only for the prototype it was written for: a kernel that
 * changes it (the read_iter series proposed for cachefiles) would otherwise
 * fail the whole object at load. */
static void cf_optional_programs(struct cachefiles_bpf *skel, const char *btf_path)
{
	struct bpf_program *progs[] = {
	    skel->progs.cf_tp_open,
	    skel->progs.cf_tp_read,
	    skel->progs.cf_tp_cread,
	    skel->progs.cf_tp_copen,
	    skel->progs.cf_tp_close,
	    skel->progs.cf_tp_fd_write,
	    skel->progs.cf_tp_fd_release,
	    skel->progs.cf_daemon_read_exit,
	    skel->progs.cf_restore,
	    skel->progs.cf_flush,
	    skel->progs.cf_close_enter,
	    skel->progs.cf_close_exit,
	    skel->progs.cf_prepare_ondemand_read_exit,
	    skel->progs.cf_free_volume,
	    skel->progs.cf_withdraw_volume,
	    skel->progs.cf_send_req_exit,
	    skel->progs.cf_copen_exit,
	};
	struct bpf_util_btf b;

	_Static_assert(sizeof(cf_optional_hooks) / sizeof(cf_optional_hooks[0]) ==
			   sizeof(progs) / sizeof(progs[0]),
		       "one program per optional hook");
	bpf_util_btf_load(&b, btf_path, "cachefiles");
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (!cf_hook_available(&b, &cf_optional_hooks[i], skel))
			bpf_program__set_autoload(progs[i], false);
	bpf_util_btf_free(&b);
	/* A copen that returns 0 for a size >= 0 without the tracepoint is
	 * one whose anonymous fd was closed first: only with the tracepoint. */
	skel->rodata->copen_tp_loaded = bpf_program__autoload(skel->progs.cf_tp_copen);
}

static int bpf_open(const struct cachefiles_backend_cfg *cfg, struct cachefiles_backend **out,
		    char *why, size_t why_len)
{
	struct cachefiles_backend *b;
	int err;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	bpf_util_load_begin(CF_LOG);
	{
		LIBBPF_OPTS(bpf_object_open_opts, opts,
			    .btf_custom_path = bpf_util_btf_custom_path(cfg->btf_path));

		b->skel = cachefiles_bpf__open_opts(&opts);
	}
	if (!b->skel) {
		err = -errno;
		snprintf(why, why_len, "open BPF object: %s", strerror(-err));
		goto out_free;
	}
	b->skel->rodata->slow_ns = cfg->slow_ns;
	cf_optional_programs(b->skel, cfg->btf_path);
	err = cachefiles_bpf__load(b->skel);
	if (err) {
		snprintf(why, why_len, "load BPF programs: %s; libbpf: %s", strerror(-err),
			 bpf_util_load_cause(err));
		goto out_destroy;
	}
	err = cachefiles_bpf__attach(b->skel);
	if (err) {
		snprintf(why, why_len, "attach fentry/fexit/tp_btf: %s; libbpf: %s", strerror(-err),
			 bpf_util_load_cause(err));
		goto out_destroy;
	}
	bpf_util_load_end();
	*out = b;
	return 0;

out_destroy:
	cachefiles_bpf__destroy(b->skel);
out_free:
	bpf_util_load_end();
	free(b);
	return err;
}

static int cf_ringbuf_sample(void *ctx, void *data, size_t size)
{
	struct cachefiles_backend *b = ctx;
	struct cachefiles_slow s;

	if (cachefiles_slow_decode(data, size, clock_mono_ns(), clock_wall_ns(), &s)) {
		log_warn(CF_LOG, "bad slow-request record of %zu bytes", size);
		return 0;
	}
	if (b->drain && b->drain->slow)
		b->drain->slow(&s, b->drain->arg);
	b->delivered++;
	return 0;
}

static int cf_daemon_sample(void *ctx, void *data, size_t size)
{
	struct cachefiles_backend *b = ctx;
	struct cachefiles_daemon_event e;

	if (cachefiles_daemon_decode(data, size, clock_mono_ns(), clock_wall_ns(), &e)) {
		log_warn(CF_LOG, "bad daemon record of %zu bytes", size);
		return 0;
	}
	if (b->drain && b->drain->daemon)
		b->drain->daemon(&e, b->drain->arg);
	b->delivered++;
	return 0;
}

static int bpf_fd(struct cachefiles_backend *b)
{
	if (!b->rb) {
		b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.slow_events), cf_ringbuf_sample,
					 b, NULL);
		if (!b->rb)
			return -1;
		if (ring_buffer__add(b->rb, bpf_map__fd(b->skel->maps.daemon_events),
				     cf_daemon_sample, b)) {
			ring_buffer__free(b->rb);
			b->rb = NULL;
			return -1;
		}
	}
	return ring_buffer__epoll_fd(b->rb);
}

static int bpf_drain(struct cachefiles_backend *b, const struct cachefiles_drain *d)
{
	int err;

	if (!b->rb && bpf_fd(b) < 0)
		return -errno;
	b->drain = d;
	b->delivered = 0;
	err = ring_buffer__consume(b->rb);
	b->drain = NULL;
	if (err < 0)
		return err;
	return b->delivered;
}

/* Name of a volume id from the volumes map: "erofs,<fsid>", volume-<id>. */
static void cf_volume_lookup(int vfd, __u32 id, char *name, size_t len)
{
	struct cf_volume vol = {0};

	if (id && bpf_map_lookup_elem(vfd, &id, &vol) == 0)
		vol.name[CF_VOLUME_NAME_LEN - 1] = '\0';
	else
		vol.name[0] = '\0';
	cachefiles_volume_name(id, vol.name, name, len);
}

static int bpf_read_hists(struct cachefiles_backend *b, cachefiles_hist_fn fn, void *arg)
{
	int hfd = bpf_map__fd(b->skel->maps.hists);
	int vfd = bpf_map__fd(b->skel->maps.volumes);
	struct cf_hist_key key, next, *prev = NULL;
	struct cf_hist *h;
	int err = 0;

	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	while (bpf_map_get_next_key(hfd, prev, &next) == 0) {
		struct cachefiles_hist_snapshot s = {0};
		char name[CF_VOLUME_NAME_LEN + 1];

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(hfd, &key, h))
			continue; /* deleted meanwhile */
		cf_volume_lookup(vfd, key.volume_id, name, sizeof(name));
		s.volume = name;
		s.op = key.op;
		s.buckets = h->buckets;
		s.sum_ns = h->sum_ns;
		s.ok = h->ok;
		s.errors = h->errors;
		s.bytes = h->bytes;
		s.inflight = h->inflight;
		fn(&s, arg);
	}
	free(h);
	return err;
}

static int bpf_retire_volumes(struct cachefiles_backend *b, cachefiles_hist_fn fn, void *arg)
{
	int rfd = bpf_map__fd(b->skel->maps.released);
	int hfd = bpf_map__fd(b->skel->maps.hists);
	int vfd = bpf_map__fd(b->skel->maps.volumes);
	__u32 ids[256], key, *prev = NULL;
	int n = 0, err = 0;
	struct cf_hist *h;

	/* the ids first: deleting while walking would restart the walk */
	while (n < (int)(sizeof(ids) / sizeof(ids[0])) &&
	       bpf_map_get_next_key(rfd, prev, &ids[n]) == 0) {
		key = ids[n++];
		prev = &key;
	}
	if (!n)
		return 0;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		char name[CF_VOLUME_NAME_LEN + 1];

		cf_volume_lookup(vfd, ids[i], name, sizeof(name));
		for (__u32 op = 0; op < CF_OP_MAX; op++) {
			struct cf_hist_key k = {.volume_id = ids[i], .op = op};
			struct cachefiles_hist_snapshot s = {0};

			/* atomic: a late request makes a new entry, read live */
			if (bpf_map_lookup_and_delete_elem(hfd, &k, h))
				continue;
			s.volume = name;
			s.op = op;
			s.buckets = h->buckets;
			s.sum_ns = h->sum_ns;
			s.ok = h->ok;
			s.errors = h->errors;
			s.bytes = h->bytes;
			fn(&s, arg);
		}
		bpf_map_delete_elem(vfd, &ids[i]);
		if (bpf_map_delete_elem(rfd, &ids[i]) && errno != ENOENT)
			err = -errno;
	}
	free(h);
	return err ? err : n;
}

static int bpf_read_inflight(struct cachefiles_backend *b, cachefiles_inflight_fn fn, void *arg)
{
	int sfd = bpf_map__fd(b->skel->maps.starts);
	int vfd = bpf_map__fd(b->skel->maps.volumes);
	__u32 key, next, *prev = NULL;
	uint64_t now = (uint64_t)clock_mono_ns();

	while (bpf_map_get_next_key(sfd, prev, &next) == 0) {
		struct cachefiles_inflight r = {0};
		char name[CF_VOLUME_NAME_LEN + 1];
		struct cf_start s;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(sfd, &key, &s) || s.op >= CF_OP_MAX)
			continue; /* returned meanwhile */
		cf_volume_lookup(vfd, s.volume_id, name, sizeof(name));
		r.volume = name;
		r.op = s.op;
		r.age_ns = now > s.ts ? now - s.ts : 0;
		r.picked = s.picks > 0;
		fn(&r, arg);
	}
	return 0;
}

static int bpf_read_stats(struct cachefiles_backend *b, uint64_t stats[CF_STAT_MAX])
{
	int fd = bpf_map__fd(b->skel->maps.stats);

	for (__u32 i = 0; i < CF_STAT_MAX; i++) {
		stats[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, &stats[i]))
			return -errno;
	}
	return 0;
}

static int bpf_read_pickup(struct cachefiles_backend *b, enum cf_op op, struct cf_pickup *out)
{
	__u32 k = op;

	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.pickups), &k, out))
		return -errno;
	return 0;
}

static void bpf_close(struct cachefiles_backend *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	cachefiles_bpf__destroy(b->skel);
	free(b);
}

const struct cachefiles_backend_ops cachefiles_backend_bpf = {
    .name = "bpf",
    .probe = bpf_probe,
    .open = bpf_open,
    .fd = bpf_fd,
    .drain = bpf_drain,
    .read_hists = bpf_read_hists,
    .retire_volumes = bpf_retire_volumes,
    .read_inflight = bpf_read_inflight,
    .read_stats = bpf_read_stats,
    .read_pickup = bpf_read_pickup,
    .close = bpf_close,
};
