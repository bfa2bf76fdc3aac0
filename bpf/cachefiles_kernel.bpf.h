/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cachefiles types cachefiles.bpf.c reads, declared locally with
 * preserve_access_index (the build host's vmlinux.h may have none of
 * them; CO-RE matches them by name against the running kernel's BTF), and
 * the reads of an object's on-demand state in both layouts (5.19-6.7 and
 * 6.8+, see cachefiles.bpf.c). Included by cachefiles.bpf.c alone.
 */
#ifndef SYSOBS_CACHEFILES_KERNEL_BPF_H
#define SYSOBS_CACHEFILES_KERNEL_BPF_H

struct fscache_volume___sysobs {
	unsigned int debug_id;
	__u8 *key; /* key[0] = strlen, then the string */
} __attribute__((preserve_access_index));

struct cachefiles_cache___sysobs {
	unsigned long flags;
} __attribute__((preserve_access_index));

/* fs/cachefiles/internal.h, unchanged since 5.19: "T if cache dead", "T if in
 * on-demand read mode" */
#define CF_CACHEFILES_DEAD	    1
#define CF_CACHEFILES_ONDEMAND_MODE 4

struct cachefiles_volume___sysobs {
	struct cachefiles_cache___sysobs *cache;
	struct fscache_volume___sysobs *vcookie;
} __attribute__((preserve_access_index));

/* CO-RE matches an enum field only against a local enum of the same name. */
enum cachefiles_object_state___sysobs {
	CF_OBJSTATE_CLOSE___sysobs = 0,
	CF_OBJSTATE_OPEN___sysobs = 1,
};

struct cachefiles_ondemand_info___sysobs {
	int ondemand_id;
	enum cachefiles_object_state___sysobs state;
} __attribute__((preserve_access_index));

/* 6.8+ (and the 6.1.y/6.6.y backports): on-demand state behind a pointer */
struct cachefiles_object___sysobs {
	struct cachefiles_volume___sysobs *volume;
	int debug_id;
	struct cachefiles_ondemand_info___sysobs *ondemand;
} __attribute__((preserve_access_index));

/* 5.19-6.7 (on-demand mode as first merged): the object id in the object
 * itself, no state. */
struct cachefiles_object___pre68 {
	int ondemand_id;
} __attribute__((preserve_access_index));

struct cachefiles_msg___sysobs {
	__u32 msg_id;
	__u32 opcode;
	__u32 len;
	__u32 object_id;
};

#define CF_UAPI_OP_OPEN	 0 /* CACHEFILES_OP_OPEN */
#define CF_UAPI_OP_CLOSE 1 /* CACHEFILES_OP_CLOSE */
#define CF_UAPI_OP_READ	 2 /* CACHEFILES_OP_READ */

/* include/linux/sched.h */
#define CF_PF_EXITING	0x00000004
#define CF_PF_WQ_WORKER 0x00000020

/* enum netfs_io_source (include/linux/netfs.h); the value is relocated */
enum netfs_io_source___sysobs {
	NETFS_READ_FROM_CACHE___sysobs = 3,
};

/*
 * The on-demand object id the daemon sees in its messages, from whichever
 * layout the running kernel has; 0 when it has neither (or the object is not
 * on-demand).
 */
static __always_inline int object_ondemand_id(struct cachefiles_object___sysobs *obj)
{
	struct cachefiles_object___pre68 *old = (void *)obj;
	struct cachefiles_ondemand_info___sysobs *info;

	if (bpf_core_field_exists(obj->ondemand)) {
		info = BPF_CORE_READ(obj, ondemand);
		if (!info || !bpf_core_field_exists(info->ondemand_id))
			return 0;
		return BPF_CORE_READ(info, ondemand_id);
	}
	if (bpf_core_field_exists(old->ondemand_id))
		return BPF_CORE_READ(old, ondemand_id);
	return 0;
}

/*
 * Will cachefiles_ondemand_init_object(obj) send an OPEN? Mirrors its early
 * returns: 6.8+ returns when obj->ondemand is NULL (not on-demand) or the
 * state is OPEN; 5.19-6.7 return when ondemand_id > 0 (object id reused), and
 * send_req returns 0 at once when the cache is not in on-demand mode.
 */
static __always_inline bool open_will_send(struct cachefiles_object___sysobs *obj)
{
	struct cachefiles_object___pre68 *old = (void *)obj;
	struct cachefiles_ondemand_info___sysobs *info;
	unsigned long flags;

	if (bpf_core_field_exists(obj->ondemand)) {
		info = BPF_CORE_READ(obj, ondemand);
		if (!info)
			return false;
		if (bpf_core_field_exists(info->state))
			return BPF_CORE_READ(info, state) != CF_OBJSTATE_OPEN___sysobs;
		if (bpf_core_field_exists(info->ondemand_id))
			return BPF_CORE_READ(info, ondemand_id) <= 0;
		return true;
	}
	if (bpf_core_field_exists(old->ondemand_id)) {
		if (BPF_CORE_READ(old, ondemand_id) > 0)
			return false;
		flags = BPF_CORE_READ(obj, volume, cache, flags);
		return flags & (1UL << CF_CACHEFILES_ONDEMAND_MODE);
	}
	return true;
}

/*
 * Will cachefiles_ondemand_clean_object(obj) send a CLOSE? Its
 * init_close_req refuses an object that is not open: 6.8+ state OPEN,
 * 5.19-6.7 an object id > 0 (and on-demand mode at all).
 */
static __always_inline bool close_will_send(struct cachefiles_object___sysobs *obj)
{
	struct cachefiles_object___pre68 *old = (void *)obj;
	struct cachefiles_ondemand_info___sysobs *info;
	unsigned long flags;

	if (bpf_core_field_exists(obj->ondemand)) {
		info = BPF_CORE_READ(obj, ondemand);
		if (!info)
			return false;
		if (bpf_core_field_exists(info->state))
			return BPF_CORE_READ(info, state) == CF_OBJSTATE_OPEN___sysobs;
		if (bpf_core_field_exists(info->ondemand_id))
			return BPF_CORE_READ(info, ondemand_id) > 0;
		return false;
	}
	if (bpf_core_field_exists(old->ondemand_id)) {
		if (BPF_CORE_READ(old, ondemand_id) <= 0)
			return false;
		flags = BPF_CORE_READ(obj, volume, cache, flags);
		return flags & (1UL << CF_CACHEFILES_ONDEMAND_MODE);
	}
	return false;
}

#endif /* SYSOBS_CACHEFILES_KERNEL_BPF_H */
