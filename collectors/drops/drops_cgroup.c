// SPDX-License-Identifier: MIT
/* cgroup id -> path -> container id (see drops_cgroup.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "collectors/drops/drops_cgroup.h"

#define CG_CACHE     256 /* paths kept, direct-mapped by id */
#define CG_PATH_MAX  256 /* longer paths are not cached (looked up again) */
#define CG_DEPTH_MAX 32	 /* directory levels walked */
#define CG_MISS	     64	 /* ids not found, not looked for again for a second */
#define CG_WALKS     8	 /* walks a second, at most */
#define CG_SECOND_NS 1000000000LL

struct cg_entry {
	uint64_t id; /* 0 = empty */
	char path[CG_PATH_MAX];
};

struct cg_miss {
	uint64_t id;
	int64_t at_ns;
};

struct drops_cgroups {
	char root[PATH_MAX];
	int64_t window_ns; /* start of the second the walks are counted in */
	unsigned walks;
	struct cg_entry cache[CG_CACHE];
	struct cg_miss miss[CG_MISS];
};

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool drops_container_id(const char *path, char *out, size_t len)
{
	size_t n = path ? strlen(path) : 0, run = 0;

	if (len <= DROPS_CONTAINER_ID_LEN)
		return false;
	/* From the end: the first run of exactly 64 hex digits. */
	for (size_t i = n; i-- > 0;) {
		if (is_hex(path[i])) {
			run++;
			continue;
		}
		if (run == DROPS_CONTAINER_ID_LEN) {
			memcpy(out, path + i + 1, DROPS_CONTAINER_ID_LEN);
			out[DROPS_CONTAINER_ID_LEN] = '\0';
			return true;
		}
		run = 0;
	}
	if (run == DROPS_CONTAINER_ID_LEN) {
		memcpy(out, path, DROPS_CONTAINER_ID_LEN);
		out[DROPS_CONTAINER_ID_LEN] = '\0';
		return true;
	}
	return false;
}

/* Mount points in mountinfo escape blanks, tabs, newlines and backslashes
 * as \ooo. */
static void mountinfo_unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* The first cgroup2 mount point of /proc/self/mountinfo. */
static int cgroup2_mount(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* id parent maj:min root mountpoint options [optional...] - type ... */
		char *sep = strstr(line, " - "), *save = NULL, *tok;
		char *mnt = NULL;
		int field = 0;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		*sep = '\0';
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (++field == 5) {
				mnt = tok;
				break;
			}
		if (!mnt)
			continue;
		mountinfo_unescape(mnt);
		if (strlen(mnt) >= len)
			continue;
		snprintf(out, len, "%s", mnt);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

struct drops_cgroups *drops_cgroups_new(const char *root)
{
	struct drops_cgroups *g = calloc(1, sizeof(*g));
	struct stat st;
	int err;

	if (!g)
		return NULL;
	if (root && *root) {
		if (strlen(root) >= sizeof(g->root)) {
			err = -ENAMETOOLONG;
			goto err_free;
		}
		snprintf(g->root, sizeof(g->root), "%s", root);
	} else if ((err = cgroup2_mount(g->root, sizeof(g->root)))) {
		goto err_free;
	}
	if (stat(g->root, &st) || !S_ISDIR(st.st_mode)) {
		err = -ENOENT;
		goto err_free;
	}
	return g;

err_free:
	free(g);
	errno = -err;
	return NULL;
}

void drops_cgroups_free(struct drops_cgroups *g)
{
	free(g);
}

/* Depth-first search of dir (fd, path rel) for the directory whose inode
 * is id; its relative path into found. */
static bool cg_walk(int dfd, char *rel, size_t rel_len, uint64_t id, int depth)
{
	DIR *d;
	struct dirent *e;
	bool hit = false;

	if (depth > CG_DEPTH_MAX || !(d = fdopendir(dfd))) {
		close(dfd);
		return false;
	}
	while (!hit && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;
		int sub;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (rel_len + 1 + n >= PATH_MAX)
			continue;
		rel[rel_len] = '/';
		memcpy(rel + rel_len + 1, e->d_name, n + 1);
		if (e->d_ino == id) {
			/* d_ino is the inode; confirm on the directory itself */
			if (!fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			    st.st_ino == id) {
				hit = true;
				break;
			}
		}
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub >= 0 && cg_walk(sub, rel, rel_len + 1 + n, id, depth + 1))
			hit = true;
	}
	if (!hit)
		rel[rel_len] = '\0';
	closedir(d);
	return hit;
}

static void cg_out(const char *path, char *out, size_t len)
{
	size_t n = strlen(path);

	if (!len)
		return;
	if (n < len || len < 4)
		snprintf(out, len, "%s", path);
	else /* keep the end, which names the leaf */
		snprintf(out, len, "...%s", path + n - (len - 4));
}

/* The path of id into rel (PATH_MAX): 0, -ENOENT (a walk did not find
 * it), -EAGAIN (not looked for: missed less than a second ago, or the
 * walks of this second spent). */
static int cg_lookup(struct drops_cgroups *g, uint64_t id, char *rel)
{
	struct cg_entry *e = &g->cache[(id * 0x9E3779B97F4A7C15ull) >> 56 & (CG_CACHE - 1)];
	struct cg_miss *m;
	struct stat st;
	int64_t now;
	int dfd;

	if (e->id == id) {
		snprintf(rel, PATH_MAX, "%s", e->path);
		return 0;
	}
	if (!stat(g->root, &st) && st.st_ino == id) {
		snprintf(rel, PATH_MAX, "/");
		return 0;
	}
	/* A walk costs a stat per cgroup: an id not found is not looked for
	 * again for a second, and there are at most CG_WALKS walks a second. */
	now = clock_mono_ns();
	m = &g->miss[id % CG_MISS];
	if (m->id == id && now - m->at_ns < CG_SECOND_NS)
		return -EAGAIN;
	if (now - g->window_ns >= CG_SECOND_NS) {
		g->window_ns = now;
		g->walks = 0;
	}
	if (g->walks >= CG_WALKS)
		return -EAGAIN;
	g->walks++;
	dfd = open(g->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	rel[0] = '\0';
	if (!cg_walk(dfd, rel, 0, id, 0)) {
		m->id = id;
		m->at_ns = now;
		return -ENOENT;
	}
	if (strlen(rel) < sizeof(e->path)) {
		e->id = id;
		snprintf(e->path, sizeof(e->path), "%s", rel);
	}
	return 0;
}

int drops_cgroups_path(struct drops_cgroups *g, uint64_t id, char *out, size_t len)
{
	char rel[PATH_MAX];
	int err;

	if (!g || !id)
		return -EINVAL;
	err = cg_lookup(g, id, rel);
	if (err)
		return err == -EAGAIN ? -ENOENT : err;
	cg_out(rel, out, len);
	return 0;
}

int drops_cgroups_alive(struct drops_cgroups *g, uint64_t id)
{
	struct cg_entry *e;
	char rel[PATH_MAX], full[PATH_MAX + sizeof(g->root)];
	struct stat st;
	int err;

	if (!g || !id)
		return -EINVAL;
	err = cg_lookup(g, id, rel);
	if (err)
		return err == -ENOENT ? 0 : err;
	/* a cached path: is the directory there still the same cgroup? */
	snprintf(full, sizeof(full), "%s%s", g->root, rel);
	if (!stat(full, &st) && st.st_ino == id)
		return 1;
	e = &g->cache[(id * 0x9E3779B97F4A7C15ull) >> 56 & (CG_CACHE - 1)];
	if (e->id == id)
		e->id = 0;
	return 0;
}
