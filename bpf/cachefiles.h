/* SPDX-License-Identifier: MIT */
/*
 * Types shared by bpf/cachefiles.bpf.c and the cachefiles collector.
 *
 * Latency histogram: log-linear over nanoseconds. Bucket 0 holds everything
 * below 2^CF_HIST_MIN_SHIFT ns (8.2 us); then each power of two from
 * 2^13 ns up to 2^34 ns (17.2 s) is split into CF_HIST_SUB linear
 * sub-buckets (12.5 % wide); the last bucket is the overflow (+Inf).
 */
#ifndef SYSOBS_BPF_CACHEFILES_H
#define SYSOBS_BPF_CACHEFILES_H

#define CF_HIST_MIN_SHIFT 13 /* 8192 ns */
#define CF_HIST_MAX_SHIFT 34 /* 2^34 ns = 17.18 s: first value that overflows */
#define CF_HIST_SUB_SHIFT 3
#define CF_HIST_SUB	  (1 << CF_HIST_SUB_SHIFT)
/* finite bounds: [0, 2^13) plus SUB per power of two */
#define CF_HIST_FINITE	(1 + (CF_HIST_MAX_SHIFT - CF_HIST_MIN_SHIFT) * CF_HIST_SUB)
#define CF_HIST_BUCKETS (CF_HIST_FINITE + 1) /* + overflow */

#define CF_VOLUME_NAME_LEN 64
#define CF_COMM_LEN	   16

enum cf_op {
	CF_OP_OPEN = 0,
	CF_OP_READ = 1,
	CF_OP_CLOSE = 2, /* cachefiles_ondemand_clean_object: waits for the daemon
			  * to read the CLOSE (an unmount waits on it) */
	CF_OP_MAX,
};

/* Daemon-side counters from the cachefiles_ondemand_* tracepoints. */
enum cf_stat {
	CF_STAT_READ_ENQUEUED,	/* tp cachefiles_ondemand_read */
	CF_STAT_CREAD,		/* tp cachefiles_ondemand_cread: READ_COMPLETE ioctl */
	CF_STAT_OPEN_PICKED,	/* tp cachefiles_ondemand_open: daemon read an OPEN */
	CF_STAT_COPEN,		/* tp cachefiles_ondemand_copen */
	CF_STAT_CLOSE,		/* tp cachefiles_ondemand_close */
	CF_STAT_FD_WRITE,	/* tp cachefiles_ondemand_fd_write: calls */
	CF_STAT_FD_WRITE_BYTES, /* ... and bytes */
	CF_STAT_FD_RELEASE,	/* tp cachefiles_ondemand_fd_release */
	CF_STAT_NULL_OBJECT,	/* events seen with a NULL object */
	CF_STAT_RINGBUF_FULL,	/* slow records lost: ring buffer full */
	CF_STAT_START_LOST,	/* fexit without a matching fentry (map full) */
	CF_STAT_HIST_FULL,	/* requests in no histogram: hists map full */
	CF_STAT_PENDING_FULL,	/* requests whose pick-up is not timed: map full */
	CF_STAT_START_FULL,	/* requests not timed: starts map full at entry */
	CF_STAT_READ_PICKED,	/* daemon read a READ (first time) */
	CF_STAT_REPICKED,	/* daemon read a request again (after a restore) */
	CF_STAT_PICK_UNMATCHED, /* daemon read a READ no waiter is known for */
	CF_STAT_DAEMON_DEATH,	/* a daemon exited holding anonymous fds */
	CF_STAT_DEATH_FDS,	/* anonymous fds closed by a dying daemon */
	CF_STAT_RESTORE,	/* "restore" written to /dev/cachefiles */
	CF_STAT_FLUSH,		/* cache withdrawn: requests in flight failed */
	CF_STAT_DAEMON_LOST,	/* daemon records lost: ring buffer full */
	CF_STAT_INFLIGHT_NOW,	/* gauge: requests timed and waiting now */
	CF_STAT_READ_NO_DATA,	/* READs completed without the data: -EIO */
	CF_STAT_VOLUME_RELEASE, /* cachefiles volumes freed or withdrawn */
	CF_STAT_RELEASE_LOST,	/* ... not marked for the agent: map full */
	CF_STAT_COPEN_ERROR,	/* copen replies with an error (negative size):
				 * the OPEN fails with it; no tracepoint fires */
	CF_STAT_COPEN_INVALID,	/* copen replies the kernel refused (unknown id,
				 * bad format): the write returned an error */
	CF_STAT_COPEN_CLOSED,	/* copen of an OPEN whose anonymous fd the daemon
				 * had closed first: the OPEN fails with -EBADFD,
				 * the write returns 0, no tracepoint fires */
	CF_STAT_MAX,
};

/*
 * What an fexit of cachefiles_ondemand_copen() counts for a reply, as a
 * CF_STAT_* index, or -1 when the tracepoint counted it (CF_STAT_COPEN).
 * ret: copen's return; size_negative: the reply's size is "-..." (the
 * daemon's error); traced: cachefiles_ondemand_copen fired on this thread
 * during the call; tp_loaded: that tracepoint is attached at all. From
 * fs/cachefiles/ondemand.c: an unknown id or a bad number returns < 0; a
 * negative errno size fails the OPEN and returns 0 without the tracepoint;
 * a size >= 0 whose anonymous fd was closed before the copen (ondemand_id
 * CACHEFILES_ONDEMAND_ID_CLOSED, 6.10 and the stable backports) sets
 * req->error = -EBADFD and returns 0 without the tracepoint either.
 * Shared by the BPF program and its unit test.
 */
static inline int cf_copen_class(int ret, int size_negative, int traced, int tp_loaded)
{
	if (ret < 0)
		return CF_STAT_COPEN_INVALID;
	if (size_negative)
		return CF_STAT_COPEN_ERROR;
	if (tp_loaded && !traced)
		return CF_STAT_COPEN_CLOSED;
	return -1;
}

/* Daemon lifecycle records (ring buffer daemon_events). */
enum cf_daemon_event {
	CF_DAEMON_DEATH = 0,   /* exited holding anonymous fds (crash, kill) */
	CF_DAEMON_RESTORE = 1, /* a daemon wrote "restore": requests re-queued */
	CF_DAEMON_FLUSH = 2,   /* /dev/cachefiles closed or cache I/O error */
	CF_DAEMON_MAX,
};

struct cf_daemon_record {
	__u64 ts_ns;	/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u32 event;	/* enum cf_daemon_event */
	__u32 pid;	/* tgid of the task that did it */
	__s64 inflight; /* requests timed and waiting for a daemon then */
	char comm[CF_COMM_LEN];
};

/* A request in flight, by the thread waiting for it (map starts; the agent
 * reads it for the age of the oldest request). */
struct cf_start {
	__u64 ts;
	__u64 offset;
	__u64 len;
	__u64 obj;	 /* struct cachefiles_object * */
	__u64 picked_ns; /* the daemon first read it; 0: not yet */
	__u64 msg;	 /* READ: its struct cachefiles_msg (in the kernel's
			  * request), whose msg_id the daemon's read sets */
	__u32 picks;	 /* times the daemon read it (> 1: re-queued by restore) */
	__u32 op;
	__u32 volume_id;
	__u32 object_debug_id;
	__s32 object_id;
	__u32 flags;   /* CF_SLOW_* */
	__s32 ret;     /* CLOSE: what cachefiles_ondemand_send_req returned */
	__u32 has_ret; /* ... if seen */
	__u32 slot;    /* READ: its slot in pending_read (CF_PENDING_SLOTS: none) */
	__u32 pad;
};

/* READs of one (object, offset) that can wait at once, each timed apart */
#define CF_PENDING_SLOTS 4

/* cf_start.flags, cf_slow_record.flags */
#define CF_SLOW_KWORKER 0x1 /* the waiting thread is a workqueue worker (kworker) */

/* Key of the per-(volume, op) histogram map. */
struct cf_hist_key {
	__u32 volume_id; /* fscache_volume debug_id; 0 = unknown */
	__u32 op;	 /* enum cf_op */
};

struct cf_hist {
	__u64 buckets[CF_HIST_BUCKETS];
	__u64 sum_ns;
	__u64 ok;	/* requests that returned 0 */
	__u64 errors;	/* requests that returned <0 */
	__u64 bytes;	/* READ: bytes requested */
	__s64 inflight; /* entered minus returned */
};

/* Volume names: fscache volume key ("erofs,<fsid>"), by debug_id. */
struct cf_volume {
	char name[CF_VOLUME_NAME_LEN];
};

/* Daemon pick-up histogram per op: request issued -> daemon read it. */
struct cf_pickup {
	__u64 buckets[CF_HIST_BUCKETS];
	__u64 sum_ns;
	__u64 count;
};

/* One slow request (latency >= slow_ns), sent through the ring buffer. */
struct cf_slow_record {
	__u64 end_ns; /* bpf_ktime_get_ns() at return (CLOCK_MONOTONIC) */
	__u64 latency_ns;
	__u64 offset; /* READ: file offset; OPEN: 0 */
	__u64 len;    /* READ: length; OPEN: 0 */
	__s32 ret;    /* what the reader got: the kernel function's return
		       * value, or -EIO for a READ completed without data */
	__u32 op;     /* enum cf_op */
	__u32 volume_id;
	__u32 object_debug_id; /* cachefiles_object.debug_id */
	__s32 object_id;       /* on-demand object id the daemon sees (READ) */
	__u32 pid;	       /* thread id */
	__u32 flags;	       /* CF_SLOW_* */
	__u32 pad;
	char comm[CF_COMM_LEN];
	char volume[CF_VOLUME_NAME_LEN];
};

/*
 * Bucket of a latency in ns; pure, shared by BPF and user space (unit-tested
 * there). Power-of-two exponent found by binary search (no loops for the
 * verifier, no __builtin_clzll in older BPF backends).
 */
static inline __u32 cf_hist_bucket(__u64 ns)
{
	__u32 e = 0;
	__u64 v = ns;

	if (ns < (1ULL << CF_HIST_MIN_SHIFT))
		return 0;
	if (ns >= (1ULL << CF_HIST_MAX_SHIFT))
		return CF_HIST_BUCKETS - 1;
	if (v >> 32) {
		v >>= 32;
		e += 32;
	}
	if (v >> 16) {
		v >>= 16;
		e += 16;
	}
	if (v >> 8) {
		v >>= 8;
		e += 8;
	}
	if (v >> 4) {
		v >>= 4;
		e += 4;
	}
	if (v >> 2) {
		v >>= 2;
		e += 2;
	}
	if (v >> 1)
		e += 1;
	/* e in [13, 33]: sub-bucket from the CF_HIST_SUB_SHIFT bits below the top */
	return 1 + (e - CF_HIST_MIN_SHIFT) * CF_HIST_SUB +
	       (__u32)((ns >> (e - CF_HIST_SUB_SHIFT)) & (CF_HIST_SUB - 1));
}

/* Upper bound in ns of finite bucket i (i < CF_HIST_FINITE). */
static inline __u64 cf_hist_upper_ns(__u32 i)
{
	__u32 e, sub;

	if (i == 0)
		return 1ULL << CF_HIST_MIN_SHIFT;
	e = CF_HIST_MIN_SHIFT + (i - 1) / CF_HIST_SUB;
	sub = (i - 1) % CF_HIST_SUB;
	return (__u64)(CF_HIST_SUB + sub + 1) << (e - CF_HIST_SUB_SHIFT);
}

#endif
