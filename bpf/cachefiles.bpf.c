// SPDX-License-Identifier: GPL-2.0
/*
 * cachefiles on-demand request latency (fs/cachefiles/ondemand.c).
 *
 * The request path is synchronous: the reader sleeps in
 * cachefiles_ondemand_send_req() until the daemon answers (copen, or the
 * READ_COMPLETE ioctl). So fentry/fexit of cachefiles_ondemand_read() and
 * cachefiles_ondemand_init_object(), keyed by thread, give end-to-end latency.
 * The tracepoints cannot be used for that: msg_id is only written into the
 * message when the daemon reads the request, so cachefiles_ondemand_read (at
 * enqueue) carries msg_id 0 and cannot be paired with
 * cachefiles_ondemand_cread. It does carry the message's address, whose
 * msg_id the daemon's read fills in: that pairs a READ with its pick-up.
 *
 * The build host's vmlinux.h may lack every cachefiles type (its kernel may
 * not have cachefiles), so the few fields read here are declared locally with
 * preserve_access_index; CO-RE matches them by name against the running
 * kernel's BTF (the ___sysobs suffix is ignored when matching).
 *
 * One object for every on-demand kernel, 5.19 to current. The on-demand
 * fields moved: 5.19-6.7 keep `int ondemand_id` in struct cachefiles_object
 * itself; the failover series (6.8, backported to 6.1.y/6.6.y in mid-2024)
 * moved it into struct cachefiles_ondemand_info *ondemand, with a `state`.
 * A field the running kernel lacks makes libbpf poison the instruction that
 * reads it, and the verifier rejects a reachable poisoned instruction: every
 * read of a moved field sits behind bpf_core_field_exists(), which libbpf
 * resolves to a constant so that the other branch is dead code.
 *
 * A BPF object is one compilation unit (its programs share the maps and
 * helpers), loaded once for its one BTF parse: the shared types live in
 * cachefiles.h, the kernel's types and the reads of an object's on-demand
 * state in cachefiles_kernel.bpf.h, included below.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cachefiles.h"

char LICENSE[] SEC("license") = "GPL";

/* Set when cf_tp_copen is attached: a copen without it is told apart. */
const volatile bool copen_tp_loaded = false;

/* Requests at or above this latency go to the ring buffer. Set before load. */
const volatile __u64 slow_ns = 100000000ULL;
/* Set when cf_prepare_ondemand_read_exit is loaded: a READ answered 0 waits
 * there for what the reader really gets. */
const volatile bool read_verdict_deferred = false;

#include "cachefiles_kernel.bpf.h"

/* A READ that returned 0, waiting for the verdict of its caller. */
struct cf_verdict {
	struct cf_start s;
	__u64 lat;
	__u64 end;
};

/*
 * Pending READ -> the waiting thread. Keyed by the object, not by the
 * on-demand object id: a daemon that dies closes its anonymous fds, and the
 * object reopened for the next daemon gets a new id while its READs wait.
 * Several READs of one (object, offset) can wait at once (two page caches
 * over one blob: chunks shared by two files, two images of a domain): each
 * takes a slot of its own, and the daemon's read is matched to the one whose
 * message carries its msg_id (read_waiter()).
 */
struct cf_pending_key {
	__u64 obj;
	__u64 offset;
	__u32 slot; /* < CF_PENDING_SLOTS */
	__u32 pad;
};

/* A dying daemon, once: its tgid and its start time (a later process may get
 * the same pid; start_time tells them apart). */
struct cf_daemon_key {
	__u64 start_time;
	__u32 tgid;
	__u32 pad;
};

/* (cache, on-demand object id) -> object, to find a READ's object from the
 * message the daemon read. Ids are per cache (per daemon). */
struct cf_objid_key {
	__u64 cache;
	__s32 id;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct cf_start);
} starts SEC(".maps");

/* Threads inside cachefiles_ondemand_copen() whose tracepoint fired (set by
 * cf_tp_copen, taken by cf_copen_exit): a copen returning 0 for a size >= 0
 * without it is one whose anonymous fd was closed first. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64); /* pid_tgid */
	__type(value, __u8);
} copen_traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct cf_hist_key);
	__type(value, struct cf_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct cf_volume);
} volumes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CF_OP_MAX);
	__type(key, __u32);
	__type(value, struct cf_pickup);
} pickups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);   /* object pointer */
	__type(value, __u32); /* thread waiting for the OPEN */
} pending_open SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct cf_pending_key);
	__type(value, __u32); /* thread waiting for the READ */
} pending_read SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct cf_verdict);
} verdicts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cf_objid_key);
	__type(value, __u64); /* object pointer */
} objids SEC(".maps");

/* Volumes released (debug_id): the agent folds their histograms into its
 * totals and deletes their entries from hists and volumes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} released SEC(".maps");

/* Volumes counted released (debug_id, never reused): each volume once,
 * whichever of free and withdraw reaches it (and if both do). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} released_once SEC(".maps");

/* Daemons seen dying: one record per death, not one per fd. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, struct cf_daemon_key);
	__type(value, __u8);
} dead_daemons SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024);
} daemon_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CF_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} slow_events SEC(".maps");

/* Zero value used to create map entries (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cf_hist);
} zero_hist SEC(".maps");

static __always_inline void stat_add(__u32 idx, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(&stats, &idx);

	if (p)
		__sync_fetch_and_add(p, v);
}

/* Volume id of an object, remembering its name the first time it is seen. */
static __always_inline __u32 object_volume(struct cachefiles_object___sysobs *obj)
{
	struct fscache_volume___sysobs *v;
	struct cf_volume name = {};
	__u32 id;
	__u8 *key;

	v = BPF_CORE_READ(obj, volume, vcookie);
	if (!v)
		return 0;
	id = BPF_CORE_READ(v, debug_id);
	if (bpf_map_lookup_elem(&volumes, &id))
		return id;
	key = BPF_CORE_READ(v, key);
	if (key)
		bpf_probe_read_kernel_str(name.name, sizeof(name.name), key + 1);
	bpf_map_update_elem(&volumes, &id, &name, BPF_NOEXIST);
	return id;
}

static __always_inline struct cf_hist *hist_get(struct cf_hist_key *k)
{
	struct cf_hist *h;
	__u32 zero = 0;

	h = bpf_map_lookup_elem(&hists, k);
	if (h)
		return h;
	h = bpf_map_lookup_elem(&zero_hist, &zero);
	if (!h)
		return NULL;
	bpf_map_update_elem(&hists, k, h, BPF_NOEXIST);
	return bpf_map_lookup_elem(&hists, k);
}

/*
 * The outcome of a request: ok or error in its histogram entry, and the slow
 * record. ret is what the reader gets: the function's return value, or -EIO
 * for a READ the daemon completed without writing the data (see
 * cf_prepare_ondemand_read_exit).
 */
static __always_inline void request_result(const struct cf_start *s, __u32 op, __u64 lat, __u64 now,
					   long ret, __u32 tid)
{
	struct cf_hist_key k = {.volume_id = s->volume_id, .op = op};
	struct cf_slow_record *r;
	struct cf_volume *vn;
	struct cf_hist *h;

	h = hist_get(&k);
	if (h) {
		if (ret < 0)
			__sync_fetch_and_add(&h->errors, 1);
		else
			__sync_fetch_and_add(&h->ok, 1);
	}
	if (lat < slow_ns)
		return;
	r = bpf_ringbuf_reserve(&slow_events, sizeof(*r), 0);
	if (!r) {
		stat_add(CF_STAT_RINGBUF_FULL, 1);
		return;
	}
	r->end_ns = now;
	r->latency_ns = lat;
	r->offset = s->offset;
	r->len = s->len;
	r->ret = ret;
	r->op = op;
	r->volume_id = s->volume_id;
	r->object_debug_id = s->object_debug_id;
	r->object_id = s->object_id;
	r->pid = tid;
	r->flags = s->flags;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	vn = bpf_map_lookup_elem(&volumes, &k.volume_id);
	if (vn)
		__builtin_memcpy(r->volume, vn->name, sizeof(r->volume));
	else
		r->volume[0] = 0;
	bpf_ringbuf_submit(r, 0);
}

/* A READ waits: the first free slot of its (object, offset), noted in its
 * start so that its return frees that slot only. */
static __always_inline void pending_read_add(__u32 tid, __u64 obj, __u64 offset)
{
	struct cf_pending_key pk = {.obj = obj, .offset = offset};
	struct cf_start *s;

	for (__u32 i = 0; i < CF_PENDING_SLOTS; i++) {
		pk.slot = i;
		/* BPF_NOEXIST: two threads cannot take one slot */
		if (bpf_map_update_elem(&pending_read, &pk, &tid, BPF_NOEXIST))
			continue;
		s = bpf_map_lookup_elem(&starts, &tid);
		if (s)
			s->slot = i;
		return;
	}
	stat_add(CF_STAT_PENDING_FULL, 1);
}

static __always_inline void request_enter(struct cachefiles_object___sysobs *obj, __u32 op,
					  __u64 offset, __u64 len)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_start s = {};
	struct cf_hist_key k = {};
	struct cf_verdict *v;
	struct cf_hist *h;

	v = bpf_map_lookup_elem(&verdicts, &tid);
	if (v) {
		/* a READ of this thread whose caller never gave a verdict */
		request_result(&v->s, CF_OP_READ, v->lat, v->end, 0, tid);
		bpf_map_delete_elem(&verdicts, &tid);
	}
	s.ts = bpf_ktime_get_ns();
	if (bpf_get_current_task_btf()->flags & CF_PF_WQ_WORKER)
		s.flags |= CF_SLOW_KWORKER;
	s.op = op;
	s.offset = offset;
	s.len = len;
	if (obj) {
		s.volume_id = object_volume(obj);
		s.object_debug_id = BPF_CORE_READ(obj, debug_id);
		s.object_id = object_ondemand_id(obj);
	} else {
		stat_add(CF_STAT_NULL_OBJECT, 1);
	}
	s.obj = (__u64)obj;
	s.slot = CF_PENDING_SLOTS;
	if (bpf_map_update_elem(&starts, &tid, &s, BPF_ANY)) {
		stat_add(CF_STAT_START_FULL, 1);
		return;
	}
	stat_add(CF_STAT_INFLIGHT_NOW, 1);
	k.volume_id = s.volume_id;
	k.op = op;
	h = hist_get(&k);
	if (h)
		__sync_fetch_and_add(&h->inflight, 1);
	if (op == CF_OP_OPEN && obj) {
		if (bpf_map_update_elem(&pending_open, &s.obj, &tid, BPF_ANY))
			stat_add(CF_STAT_PENDING_FULL, 1);
	} else if (op == CF_OP_READ && obj) {
		pending_read_add(tid, s.obj, offset);
	}
}

static __always_inline void request_exit(__u32 op, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_hist_key k = {};
	struct cf_start *s;
	struct cf_hist *h;
	__u64 lat, now;
	__u32 b;

	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s || s->op != op) {
		stat_add(CF_STAT_START_LOST, 1);
		return;
	}
	now = bpf_ktime_get_ns();
	lat = now - s->ts;
	k.volume_id = s->volume_id;
	k.op = op;
	h = hist_get(&k);
	if (h) {
		b = cf_hist_bucket(lat);
		if (b < CF_HIST_BUCKETS)
			__sync_fetch_and_add(&h->buckets[b], 1);
		__sync_fetch_and_add(&h->sum_ns, lat);
		if (op == CF_OP_READ)
			__sync_fetch_and_add(&h->bytes, s->len);
		__sync_fetch_and_add(&h->inflight, -1);
	} else {
		stat_add(CF_STAT_HIST_FULL, 1);
	}
	stat_add(CF_STAT_INFLIGHT_NOW, -1);
	if (op == CF_OP_READ && s->slot < CF_PENDING_SLOTS) {
		struct cf_pending_key pk = {.obj = s->obj, .offset = s->offset, .slot = s->slot};

		bpf_map_delete_elem(&pending_read, &pk);
	} else if (op == CF_OP_OPEN) {
		bpf_map_delete_elem(&pending_open, &s->obj);
	}
	/* A READ answered 0 may still have brought no data: the caller knows */
	if (op == CF_OP_READ && ret == 0 && read_verdict_deferred) {
		struct cf_verdict v = {.s = *s, .lat = lat, .end = now};

		if (!bpf_map_update_elem(&verdicts, &tid, &v, BPF_ANY)) {
			bpf_map_delete_elem(&starts, &tid);
			return;
		}
	}
	request_result(s, op, lat, now, ret, tid);
	bpf_map_delete_elem(&starts, &tid);
}

static __always_inline void pickup_observe(__u32 op, __u64 d)
{
	struct cf_pickup *p;
	__u32 b;

	p = bpf_map_lookup_elem(&pickups, &op);
	if (!p)
		return;
	b = cf_hist_bucket(d);
	if (b < CF_HIST_BUCKETS)
		__sync_fetch_and_add(&p->buckets[b], 1);
	__sync_fetch_and_add(&p->sum_ns, d);
	__sync_fetch_and_add(&p->count, 1);
}

/*
 * The daemon read the request thread tid waits for. The first read is its
 * pick-up; a later one is the same request re-queued by "restore" after a
 * daemon died with it (counted apart, never a second pick-up).
 */
static __always_inline void request_picked(__u32 tid, __u32 op)
{
	struct cf_start *s = bpf_map_lookup_elem(&starts, &tid);
	__u64 now = bpf_ktime_get_ns();

	if (!s || s->op != op) {
		stat_add(op == CF_OP_OPEN ? CF_STAT_OPEN_PICKED : CF_STAT_PICK_UNMATCHED, 1);
		return;
	}
	/* one request is read by one daemon read() at a time: no race here */
	if (s->picks++) {
		stat_add(CF_STAT_REPICKED, 1);
		return;
	}
	s->picked_ns = now;
	pickup_observe(op, now - s->ts);
	stat_add(op == CF_OP_OPEN ? CF_STAT_OPEN_PICKED : CF_STAT_READ_PICKED, 1);
}

static __always_inline __u64 object_cache(struct cachefiles_object___sysobs *obj)
{
	return (__u64)BPF_CORE_READ(obj, volume, cache);
}

static __always_inline void daemon_record(__u32 event)
{
	struct cf_daemon_record *r;
	__u32 k = CF_STAT_INFLIGHT_NOW;
	__u64 *inflight;

	r = bpf_ringbuf_reserve(&daemon_events, sizeof(*r), 0);
	if (!r) {
		stat_add(CF_STAT_DAEMON_LOST, 1);
		return;
	}
	r->ts_ns = bpf_ktime_get_ns();
	r->event = event;
	r->pid = bpf_get_current_pid_tgid() >> 32;
	inflight = bpf_map_lookup_elem(&stats, &k);
	r->inflight = inflight ? (__s64)*inflight : 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, 0);
}

SEC("fentry/cachefiles_ondemand_read")
int BPF_PROG(cf_read_enter, struct cachefiles_object___sysobs *obj, loff_t pos, size_t len)
{
	request_enter(obj, CF_OP_READ, pos, len);
	return 0;
}

SEC("fexit/cachefiles_ondemand_read")
int BPF_PROG(cf_read_exit, struct cachefiles_object___sysobs *obj, loff_t pos, size_t len, int ret)
{
	request_exit(CF_OP_READ, ret);
	return 0;
}

/*
 * init_object returns 0 at once when the object is not on-demand or already
 * open (no request is sent); only a call that will send an OPEN is timed.
 */
SEC("fentry/cachefiles_ondemand_init_object")
int BPF_PROG(cf_open_enter, struct cachefiles_object___sysobs *obj)
{
	if (!obj) {
		stat_add(CF_STAT_NULL_OBJECT, 1);
		return 0;
	}
	if (!open_will_send(obj))
		return 0;
	request_enter(obj, CF_OP_OPEN, 0, 0);
	return 0;
}

SEC("fexit/cachefiles_ondemand_init_object")
int BPF_PROG(cf_open_exit, struct cachefiles_object___sysobs *obj, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_start *s = bpf_map_lookup_elem(&starts, &tid);

	/* not timed at entry (nothing sent): nothing to close */
	if (!s || s->op != CF_OP_OPEN)
		return 0;
	request_exit(CF_OP_OPEN, ret);
	return 0;
}

/*
 * cachefiles_ondemand_read() returned 0: the daemon answered READ_COMPLETE.
 * Whether it wrote the data the caller tells: cachefiles_do_prepare_read()
 * seeks for data again and returns NETFS_READ_FROM_CACHE only if it is
 * there; anything else makes EROFS fail the read with -EIO. So the READ's
 * result is decided here (6.1+, where EROFS reads through
 * prepare_ondemand_read; elsewhere the function's return value stands).
 */
SEC("fexit/cachefiles_prepare_ondemand_read")
int BPF_PROG(cf_prepare_ondemand_read_exit, void *cres, loff_t start, size_t *len, loff_t i_size,
	     unsigned long *flags, ino_t ino, int source)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_verdict *v = bpf_map_lookup_elem(&verdicts, &tid);
	long ret = 0;

	if (!v)
		return 0;
	/* enum netfs_io_source is __mode(byte) in 6.x: only its size is set */
	if (bpf_core_type_size(enum netfs_io_source___sysobs) == 1)
		source &= 0xff;
	else if (bpf_core_type_size(enum netfs_io_source___sysobs) == 2)
		source &= 0xffff;
	if (bpf_core_enum_value_exists(enum netfs_io_source___sysobs,
				       NETFS_READ_FROM_CACHE___sysobs) &&
	    source != bpf_core_enum_value(enum netfs_io_source___sysobs,
					  NETFS_READ_FROM_CACHE___sysobs)) {
		ret = -5; /* -EIO, what erofs_fscache_read_io_async returns */
		stat_add(CF_STAT_READ_NO_DATA, 1);
	}
	request_result(&v->s, CF_OP_READ, v->lat, v->end, ret, tid);
	bpf_map_delete_elem(&verdicts, &tid);
	return 0;
}

/* Object withdrawn (unmount, cookie relinquished): the CLOSE it sends waits
 * until the daemon reads it. Optional: timed where the function exists. */
SEC("fentry/cachefiles_ondemand_clean_object")
int BPF_PROG(cf_close_enter, struct cachefiles_object___sysobs *obj)
{
	if (!obj || !close_will_send(obj))
		return 0;
	request_enter(obj, CF_OP_CLOSE, 0, 0);
	return 0;
}

/*
 * clean_object returns nothing, but its CLOSE can fail: send_req returns
 * -EIO at once when the cache is dead (CACHEFILES_DEAD, set by
 * cachefiles_daemon_release when /dev/cachefiles is closed) or the object no
 * longer open, and cachefiles_flush_reqs fails a CLOSE in flight with -EIO.
 * The result is what cf_send_req_exit saw; where that hook is missing
 * (send_req inlined), a cache dead at return stands for -EIO.
 */
SEC("fexit/cachefiles_ondemand_clean_object")
int BPF_PROG(cf_close_exit, struct cachefiles_object___sysobs *obj)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_start *s = bpf_map_lookup_elem(&starts, &tid);
	long ret = 0;

	if (!s || s->op != CF_OP_CLOSE)
		return 0;
	if (s->has_ret)
		ret = s->ret;
	else if (obj && (BPF_CORE_READ(obj, volume, cache, flags) & (1UL << CF_CACHEFILES_DEAD)))
		ret = -5; /* -EIO */
	request_exit(CF_OP_CLOSE, ret);
	return 0;
}

/* What a CLOSE request came to (static in ondemand.c: optional). */
SEC("fexit/cachefiles_ondemand_send_req")
int BPF_PROG(cf_send_req_exit, void *obj, int opcode, size_t data_len, void *init_req,
	     void *private, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_start *s;

	if (opcode != CF_UAPI_OP_CLOSE)
		return 0;
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s || s->op != CF_OP_CLOSE)
		return 0;
	s->ret = ret;
	s->has_ret = 1;
	return 0;
}

/*
 * "copen <id>,<size>": the tracepoint fires only for a size >= 0. A negative
 * size is the daemon's error reply: copen returns 0 and fails the OPEN with
 * it; a reply the kernel refuses (unknown id, bad number) returns < 0.
 * copen cut args at the comma (*psize = 0), so the size follows the first
 * NUL; the buffer is freed only after the handler returns.
 */
SEC("fexit/cachefiles_ondemand_copen")
int BPF_PROG(cf_copen_exit, void *cache, char *args, int ret)
{
	__u64 tid = bpf_get_current_pid_tgid();
	int traced = bpf_map_delete_elem(&copen_traced, &tid) == 0;
	char buf[24];
	long n;
	int k;

	if (ret < 0) {
		stat_add(CF_STAT_COPEN_INVALID, 1);
		return 0;
	}
	n = bpf_probe_read_kernel_str(buf, sizeof(buf), args);
	if (n <= 0 || n >= (long)sizeof(buf))
		return 0;
	if (bpf_probe_read_kernel(buf, 1, args + n))
		return 0;
	k = cf_copen_class(ret, buf[0] == '-', traced, copen_tp_loaded);
	if (k >= 0)
		stat_add(k, 1);
	return 0;
}

/*
 * The thread waiting for the READ the daemon just read as msg_id, among the
 * READs waiting at (object, offset): the one whose message carries that
 * msg_id (cachefiles_ondemand_daemon_read writes it into the request's
 * message before copying it out). Without the message (no tracepoint), the
 * first not read yet. 0: none. A READ not read yet holds msg_id 0 (its
 * request is kzalloc'ed), so for the one msg_id 0 two READs of the range
 * may still be told apart wrongly.
 */
static __always_inline __u32 read_waiter(__u64 obj, __u64 offset, __u32 msg_id)
{
	struct cf_pending_key pk = {.obj = obj, .offset = offset};
	__u32 fallback = 0, id, t;

	for (__u32 i = 0; i < CF_PENDING_SLOTS; i++) {
		struct cf_start *s;
		__u32 *tid;

		pk.slot = i;
		tid = bpf_map_lookup_elem(&pending_read, &pk);
		if (!tid)
			continue;
		t = *tid;
		s = bpf_map_lookup_elem(&starts, &t);
		if (!s)
			continue;
		if (s->msg) {
			if (!bpf_probe_read_kernel(&id, sizeof(id), (void *)s->msg) && id == msg_id)
				return t;
		} else if (!fallback && !s->picks) {
			fallback = t;
		}
	}
	return fallback;
}

/* The daemon read() returned a READ message: the request is picked up. */
SEC("fexit/cachefiles_ondemand_daemon_read")
int BPF_PROG(cf_daemon_read_exit, void *cache, char *ubuf, size_t buflen, long ret)
{
	struct cachefiles_msg___sysobs m;
	struct cf_objid_key ok = {.cache = (__u64)cache};
	__u64 *obj, offset;
	__u32 tid;

	if (ret < (long)(sizeof(m) + 16) || !ubuf)
		return 0;
	if (bpf_probe_read_user(&m, sizeof(m), ubuf))
		return 0;
	if (m.opcode != CF_UAPI_OP_READ)
		return 0;
	if (bpf_probe_read_user(&offset, sizeof(offset), ubuf + sizeof(m)))
		return 0;
	ok.id = m.object_id;
	obj = bpf_map_lookup_elem(&objids, &ok);
	if (!obj) {
		stat_add(CF_STAT_PICK_UNMATCHED, 1);
		return 0;
	}
	tid = read_waiter(*obj, offset, m.msg_id);
	if (!tid) {
		stat_add(CF_STAT_PICK_UNMATCHED, 1);
		return 0;
	}
	request_picked(tid, CF_OP_READ);
	return 0;
}

/* The daemon read an OPEN: the object has its (new) on-demand id now. */
SEC("tp_btf/cachefiles_ondemand_open")
int BPF_PROG(cf_tp_open, struct cachefiles_object___sysobs *obj, void *msg, void *load)
{
	struct cf_objid_key ok = {};
	__u64 p = (__u64)obj;
	__u32 *tid;

	if (!obj) {
		stat_add(CF_STAT_OPEN_PICKED, 1);
		stat_add(CF_STAT_NULL_OBJECT, 1);
		return 0;
	}
	ok.cache = object_cache(obj);
	ok.id = object_ondemand_id(obj);
	bpf_map_update_elem(&objids, &ok, &p, BPF_ANY);
	tid = bpf_map_lookup_elem(&pending_open, &p);
	if (tid)
		request_picked(*tid, CF_OP_OPEN);
	else
		stat_add(CF_STAT_OPEN_PICKED, 1);
	return 0;
}

/* A READ is being enqueued, in the thread that will wait for it
 * (cachefiles_ondemand_init_read_req): keep its message's address. */
SEC("tp_btf/cachefiles_ondemand_read")
int BPF_PROG(cf_tp_read, struct cachefiles_object___sysobs *obj, void *msg, void *load)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cf_start *s = bpf_map_lookup_elem(&starts, &tid);

	stat_add(CF_STAT_READ_ENQUEUED, 1);
	if (!obj)
		stat_add(CF_STAT_NULL_OBJECT, 1);
	if (s && s->op == CF_OP_READ)
		s->msg = (__u64)msg;
	return 0;
}

SEC("tp_btf/cachefiles_ondemand_cread")
int BPF_PROG(cf_tp_cread, struct cachefiles_object___sysobs *obj, unsigned int msg_id)
{
	stat_add(CF_STAT_CREAD, 1);
	if (!obj)
		stat_add(CF_STAT_NULL_OBJECT, 1);
	return 0;
}

SEC("tp_btf/cachefiles_ondemand_copen")
int BPF_PROG(cf_tp_copen, struct cachefiles_object___sysobs *obj, unsigned int msg_id, long len)
{
	__u64 tid = bpf_get_current_pid_tgid();
	__u8 one = 1;

	stat_add(CF_STAT_COPEN, 1);
	bpf_map_update_elem(&copen_traced, &tid, &one, BPF_ANY);
	if (!obj)
		stat_add(CF_STAT_NULL_OBJECT, 1);
	return 0;
}

SEC("tp_btf/cachefiles_ondemand_close")
int BPF_PROG(cf_tp_close, struct cachefiles_object___sysobs *obj, void *msg)
{
	stat_add(CF_STAT_CLOSE, 1);
	if (!obj)
		stat_add(CF_STAT_NULL_OBJECT, 1);
	return 0;
}

SEC("tp_btf/cachefiles_ondemand_fd_write")
int BPF_PROG(cf_tp_fd_write, struct cachefiles_object___sysobs *obj, void *backer, loff_t start,
	     size_t len)
{
	stat_add(CF_STAT_FD_WRITE, 1);
	stat_add(CF_STAT_FD_WRITE_BYTES, len);
	if (!obj)
		stat_add(CF_STAT_NULL_OBJECT, 1);
	return 0;
}

/*
 * An anonymous fd released. By a task that is exiting, it is a daemon dying
 * with objects open (crash, kill): their READs wait for a daemon that writes
 * "restore" (6.8+), or fail when /dev/cachefiles closes. One record per
 * dying daemon.
 */
SEC("tp_btf/cachefiles_ondemand_fd_release")
int BPF_PROG(cf_tp_fd_release, struct cachefiles_object___sysobs *obj, int object_id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct cf_objid_key ok = {.id = object_id};
	struct cf_daemon_key dk = {};
	__u8 one = 1;

	stat_add(CF_STAT_FD_RELEASE, 1);
	if (obj) {
		ok.cache = object_cache(obj);
		bpf_map_delete_elem(&objids, &ok);
	}
	if (!(task->flags & CF_PF_EXITING))
		return 0;
	stat_add(CF_STAT_DEATH_FDS, 1);
	/* the tgid alone would hide the death of a later daemon given the same
	 * pid (pids are reused); the leader's start time is the process's own */
	dk.tgid = bpf_get_current_pid_tgid() >> 32;
	dk.start_time = BPF_CORE_READ(task, group_leader, start_time);
	if (bpf_map_update_elem(&dead_daemons, &dk, &one, BPF_NOEXIST))
		return 0;
	stat_add(CF_STAT_DAEMON_DEATH, 1);
	daemon_record(CF_DAEMON_DEATH);
	return 0;
}

static __always_inline void volume_released(__u32 id)
{
	__u8 one = 1;

	/* once per volume, even if both hooks reach it */
	if (id && bpf_map_update_elem(&released_once, &id, &one, BPF_NOEXIST))
		return;
	stat_add(CF_STAT_VOLUME_RELEASE, 1);
	if (id && bpf_map_update_elem(&released, &id, &one, BPF_ANY))
		stat_add(CF_STAT_RELEASE_LOST, 1);
}

/* The fscache volume is freed (its last user, e.g. the mount, is gone). */
SEC("fentry/cachefiles_free_volume")
int BPF_PROG(cf_free_volume, struct fscache_volume___sysobs *vcookie)
{
	if (vcookie)
		volume_released(BPF_CORE_READ(vcookie, debug_id));
	return 0;
}

/* The cache is withdrawn (unbind) with the volume still there. */
SEC("fentry/cachefiles_withdraw_volume")
int BPF_PROG(cf_withdraw_volume, struct cachefiles_volume___sysobs *volume)
{
	if (volume)
		volume_released(BPF_CORE_READ(volume, vcookie, debug_id));
	return 0;
}

/* "restore" (6.8+): a new daemon asks for every request in flight again. */
SEC("fentry/cachefiles_ondemand_restore")
int BPF_PROG(cf_restore, void *cache, char *args)
{
	stat_add(CF_STAT_RESTORE, 1);
	daemon_record(CF_DAEMON_RESTORE);
	return 0;
}

/* /dev/cachefiles released (the last daemon gone) or a cache I/O error:
 * every request in flight is failed with EIO. */
SEC("fentry/cachefiles_flush_reqs")
int BPF_PROG(cf_flush, void *cache)
{
	stat_add(CF_STAT_FLUSH, 1);
	daemon_record(CF_DAEMON_FLUSH);
	return 0;
}
