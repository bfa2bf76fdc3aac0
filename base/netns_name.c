/* SPDX-License-Identifier: MIT */
/*
 * netns_name (netns_name.h): a cached listing of /run/netns, one (inode,
 * name) pair per entry whose file is a namespace on nsfs (the device of
 * /proc/self/ns/net; a plain file left behind by a failed `ip netns add`
 * is on tmpfs and is skipped). Reread when older than NETNS_NAME_TTL_MS.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/netns_name.h"

#define NAMES_MAX    1024 /* entries kept; more namespaces than this go unnamed */
#define NAME_MAX_LEN 64

struct netns_entry {
	uint32_t inum;
	char name[NAME_MAX_LEN];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct netns_entry *entries;
static size_t n_entries;
static int64_t read_at_ms = -1;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Rereads the directory into entries (under lock). Errors leave it empty. */
static void names_reread(void)
{
	struct stat self, st;
	struct dirent *de;
	DIR *d;

	n_entries = 0;
	if (!entries && !(entries = calloc(NAMES_MAX, sizeof(*entries))))
		return;
	/* nsfs's device: a bind mount of a namespace file stats as it */
	if (stat("/proc/self/ns/net", &self))
		return;
	d = opendir(NETNS_NAME_DIR);
	if (!d)
		return;
	while ((de = readdir(d)) && n_entries < NAMES_MAX) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= NAME_MAX_LEN)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) || st.st_dev != self.st_dev)
			continue;
		entries[n_entries].inum = (uint32_t)st.st_ino;
		strcpy(entries[n_entries].name, de->d_name);
		n_entries++;
	}
	closedir(d);
}

int netns_name_lookup(uint32_t inum, char *buf, size_t len)
{
	const char *best = NULL;
	int64_t now = now_ms();
	int err = -ENOENT;

	pthread_mutex_lock(&lock);
	if (read_at_ms < 0 || now - read_at_ms >= NETNS_NAME_TTL_MS) {
		names_reread();
		read_at_ms = now;
	}
	for (size_t i = 0; i < n_entries; i++)
		if (entries[i].inum == inum && (!best || strcmp(entries[i].name, best) < 0))
			best = entries[i].name;
	if (best && len) {
		snprintf(buf, len, "%s", best);
		err = 0;
	}
	pthread_mutex_unlock(&lock);
	return err;
}
