// SPDX-License-Identifier: MIT
/* /proc reads (see procfs.h). */
#include <dirent.h>
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "base/procfs.h"

int64_t procfs_open_fds(const char *proc)
{
	char path[256];
	struct dirent *e;
	struct statfs sfs;
	struct stat st;
	int64_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/fd", proc);
	/* Linux 6.2 and later: the directory's size is the count (the
	 * bitmap's weight), at once; a scrape beside thousands of open
	 * sockets walked them all (issue 30's idle connections: half the
	 * throughput of /metrics). Not for another tree mounted there (a
	 * test's fixed /proc), nor an older kernel's 0. */
	if (!statfs(path, &sfs) && sfs.f_type == PROC_SUPER_MAGIC && !stat(path, &st) &&
	    st.st_size > 0)
		return st.st_size;
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	/* Reading /proc/self/fd holds one fd of its own. */
	return strcmp(proc, "/proc/self") ? n : n - 1;
}

int procfs_status_field(const char *key, int base, uint64_t *out)
{
	size_t klen = strlen(key);
	char line[256], *end;
	int rc = -ENOENT;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -errno;
	while (rc == -ENOENT && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		errno = 0;
		*out = strtoull(line + klen + 1, &end, base);
		rc = errno || end == line + klen + 1 || (*end && *end != '\n' && *end != ' ')
			 ? -EINVAL
			 : 0;
	}
	fclose(f);
	return rc;
}
