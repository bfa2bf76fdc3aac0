// SPDX-License-Identifier: MIT
/* /proc reads (see procfs.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "base/procfs.h"

int64_t procfs_open_fds(const char *proc)
{
	char path[256];
	struct dirent *e;
	int64_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/fd", proc);
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
