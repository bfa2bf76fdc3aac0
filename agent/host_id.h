/* SPDX-License-Identifier: MIT */
/*
 * The machine behind the agent (issue 32): sysobs_host_info{machine_id,
 * boot_id, db_id} = 1, a series under the same job and instance as every
 * other, scraped or pushed, so that two machines behind one instance
 * (cloned host names) show as two label sets of it instead of one series
 * whose values alternate. machine_id is systemd's /etc/machine-id ([agent]
 * machine_id_file), boot_id the kernel's
 * /proc/sys/kernel/random/boot_id, db_id the database's store_meta id.
 * A machine id that is empty, missing, all zeros, "uninitialized" or not
 * 32 hexadecimal digits is logged as a warning at start: such ids are
 * shared by every clone of an image.
 */
#ifndef SYSOBS_HOST_ID_H
#define SYSOBS_HOST_ID_H

#include <stddef.h>
#include <stdint.h>

#include "metrics/metrics.h"

#define HOST_ID_LEN 64 /* the longest machine_id or boot_id label kept */

struct host_id {
	char machine_id[HOST_ID_LEN + 1]; /* as read, first line trimmed; "" if none */
	char boot_id[HOST_ID_LEN + 1];
	char db_id[17]; /* 16 hex digits, "" if the store gave none */
};

/*
 * Pure: the first line of a machine-id file's text (len bytes, not
 * NUL-terminated) into out (at most HOST_ID_LEN bytes kept, white space
 * trimmed, bytes outside printable ASCII dropped). Returns NULL for a
 * usable id (32 hexadecimal digits, not all zeros), else why it is not one:
 * "empty", "all zeros", "uninitialized" (systemd's placeholder of an image
 * not yet booted), "not 32 hexadecimal digits".
 */
const char *host_id_machine_id_parse(const char *text, size_t len, char *out, size_t out_size);

/*
 * Reads machine_id_file and the boot id into id, logging a warning when the
 * machine id is unusable (missing or unreadable counts as that, the
 * machine_id label is then ""). db_id is the caller's (store_db_id()).
 */
void host_id_read(struct host_id *id, const char *machine_id_file);

/* Registers sysobs_host_info and sets its one series to 1. 0 or -ENOMEM. */
int host_id_publish(struct metrics *m, const struct host_id *id);

#endif
