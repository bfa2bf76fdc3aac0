// SPDX-License-Identifier: MIT
/*
 * sysobs_host_info: the machine behind the agent (see host_id.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/host_id.h"
#include "base/log.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

const char *host_id_machine_id_parse(const char *text, size_t len, char *out, size_t out_size)
{
	size_t n = 0, i = 0, hex = 0, zeros = 0;

	while (i < len && isspace((unsigned char)text[i]))
		i++;
	for (; i < len && text[i] != '\n' && n + 1 < out_size; i++) {
		unsigned char c = (unsigned char)text[i];

		if (c < 0x20 || c > 0x7e)
			continue;
		out[n++] = (char)c;
	}
	while (n && isspace((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
	for (i = 0; i < n; i++) {
		hex += isxdigit((unsigned char)out[i]) != 0;
		zeros += out[i] == '0';
	}
	if (!n)
		return "empty";
	if (!strcmp(out, "uninitialized"))
		return "uninitialized";
	if (n != 32 || hex != 32)
		return "not 32 hexadecimal digits";
	if (zeros == 32)
		return "all zeros";
	return NULL;
}

/* Up to size - 1 bytes of path into buf. The count read, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;
	int err;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	err = ferror(f) ? -EIO : 0;
	fclose(f);
	buf[n] = '\0';
	return err ? err : (ssize_t)n;
}

void host_id_read(struct host_id *id, const char *machine_id_file)
{
	char buf[256];
	const char *why;
	ssize_t n;

	memset(id, 0, sizeof(*id));
	n = read_small(machine_id_file, buf, sizeof(buf));
	if (n < 0) {
		log_warn("agent",
			 "machine id: cannot read %s: %s; sysobs_host_info has machine_id=\"\", so "
			 "two machines behind one host name are told apart by boot_id only "
			 "(give each host its id: systemd-machine-id-setup)",
			 machine_id_file, strerror((int)-n));
	} else if ((why = host_id_machine_id_parse(buf, (size_t)n, id->machine_id,
						   sizeof(id->machine_id)))) {
		log_warn(
		    "agent",
		    "machine id in %s is %s (\"%s\"): clones of one image share such an id, so "
		    "sysobs_host_info cannot tell them apart by it (give each host its own: "
		    "rm %s && systemd-machine-id-setup)",
		    machine_id_file, why, id->machine_id, machine_id_file);
	}
	n = read_small(BOOT_ID_PATH, buf, sizeof(buf));
	if (n < 0)
		log_warn("agent", "boot id: cannot read %s: %s", BOOT_ID_PATH, strerror((int)-n));
	else
		host_id_machine_id_parse(buf, (size_t)n, id->boot_id, sizeof(id->boot_id));
}

int host_id_publish(struct metrics *m, const struct host_id *id)
{
	static const char *const labels[] = {"machine_id", "boot_id", "db_id", NULL};
	const char *values[] = {id->machine_id, id->boot_id, id->db_id};
	struct metric *f;

	f = metrics_gauge(
	    m, "sysobs_host_info",
	    "Always 1; the labels say which machine the agent runs on: its machine "
	    "id (/etc/machine-id), boot id and database id. One instance with two "
	    "machine or boot ids is two hosts sharing a name (SysobsHostIdentityClash).",
	    labels);
	if (!f)
		return -ENOMEM;
	series_set(metric_series(f, values), 1);
	return 0;
}
