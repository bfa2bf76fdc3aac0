// SPDX-License-Identifier: MIT
/*
 * The mptcp collector's recorder and replay ([collector.mptcp] record = FILE,
 * replay = FILE; the format is mptcp_rec.h, docs/mptcp.md says how to use
 * them).
 *
 * record: every datagram the event sockets receive is appended as it is read
 * (one write(2) per record, no buffering: the file is whole at any moment)
 * to a new file, or to the recording already there (a file that is not a
 * whole recording is refused at init, untouched),
 * each watched namespace announced by a WATCH record when its watch starts,
 * each overrun by an OVERRUN record. A write that fails stops the recording
 * (logged) and nothing else.
 *
 * replay: the whole file is read and checked at init (a bad file is a config
 * error naming the offset, and nothing of it is applied); its namespaces
 * become the watches, with their recorded paths and inodes. At start every
 * datagram goes through mptcp_buffer_handle(), the live reader's path, at its
 * recorded time shifted so the first record is at the replay's start (the
 * spacing kept: lifetimes as recorded, the rows inside the default windows).
 * Nothing live runs then: no event socket, socket dump, MIB read, pod lookup
 * or subflow sampling (mptcp.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/file.h"
#include "base/log.h"
#include "collectors/collector.h"
#include "collectors/mptcp/mptcp_priv.h"
#include "collectors/mptcp/mptcp_rec.h"

#define MPTCP_REPLAY_MAX_BYTES (256u << 20)

/* The whole of the open file fd (path, for key's errors) into *out: a
 * regular file of at most MPTCP_REPLAY_MAX_BYTES. 0, or a config error. */
static int mptcp_rec_slurp(struct mptcp_priv *p, const char *key, int fd, const char *path,
			   char **out, size_t *len)
{
	char why[64];
	int err = file_read_fd(fd, MPTCP_REPLAY_MAX_BYTES, out, len);

	if (err == -ENOMEM)
		return err;
	if (err)
		return collector_config_error(
		    p->c, key, "%s: %s", path,
		    file_read_strerror(err, MPTCP_REPLAY_MAX_BYTES, why, sizeof(why)));
	return 0;
}

/* What fd (path, opened for appending) holds: empty, it gets the file
 * header; a whole recording is appended to (an agent restarted keeps
 * recording); anything else is refused, untouched. */
static int mptcp_record_prepare(struct mptcp_priv *p, int fd, const char *path, size_t *had)
{
	uint8_t hdr[MPTCP_REC_FILE_HDR];
	char *buf = NULL, err[256];
	int ret = mptcp_rec_slurp(p, "record", fd, path, &buf, had);

	if (!ret && *had && mptcp_rec_check(buf, *had, MPTCP_MAX_NETNS, err, sizeof(err)) < 0)
		ret = collector_config_error(p->c, "record",
					     "%s exists and is not a whole recording (%s): not "
					     "appended to, nothing overwritten; move it away",
					     path, err);
	free(buf);
	if (ret || *had)
		return ret;
	mptcp_rec_file_header(hdr);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		return collector_config_error(p->c, "record", "cannot write %s: %s", path,
					      strerror(errno));
	return 0;
}

/* The recording ends here: full (what it holds stays a whole recording), or
 * a write failed (why). The collector goes on. */
static void mptcp_record_stop(struct mptcp_priv *p, const char *why)
{
	if (why)
		clog_warn(p->c, "record: write failed (%s): recording stopped", why);
	else
		clog_warn(p->c,
			  "record: %s reached record_max_size (%" PRIu64 " bytes): recording "
			  "stopped, the file a whole recording of %" PRIu64 " bytes",
			  p->rec_path, p->rec_max, p->rec_size);
	close(p->rec_fd);
	p->rec_fd = -1;
}

int mptcp_record_open(struct mptcp_priv *p, const char *path, uint64_t max_size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	size_t had = 0;
	int ret;

	if (fd < 0)
		return collector_config_error(p->c, "record", "cannot open %s: %s", path,
					      strerror(errno));
	ret = mptcp_record_prepare(p, fd, path, &had);
	if (ret) {
		close(fd);
		return ret;
	}
	p->rec_fd = fd;
	p->rec_path = path;
	p->rec_size = had ? had : MPTCP_REC_FILE_HDR;
	p->rec_max = max_size;
	clog_info(p->c, "recording the event sockets' datagrams into %s (%s)", path,
		  had ? "appended to the recording there" : "a new recording");
	if (p->rec_size >= max_size)
		mptcp_record_stop(p, NULL);
	return 0;
}

void mptcp_record(struct mptcp_priv *p, const struct mptcp_watch *w, unsigned kind, const void *buf,
		  size_t len, int64_t now_ns)
{
	struct mptcp_rec r = {.kind = kind, .time_ns = now_ns, .netns = w->ino, .len = len};
	uint8_t hdr[MPTCP_REC_HDR];
	struct iovec iov[2];
	ssize_t n;

	if (p->rec_fd < 0)
		return;
	if (kind == MPTCP_REC_WATCH) {
		buf = w->path;
		r.len = len = strlen(w->path);
		r.family = w->family;
		r.flags = p->absent_side_is_client ? MPTCP_REC_F_SIDE : 0;
	}
	if (p->rec_size + sizeof(hdr) + len > p->rec_max) {
		mptcp_record_stop(p, NULL);
		return;
	}
	mptcp_rec_header(hdr, &r);
	iov[0] = (struct iovec){hdr, sizeof(hdr)};
	iov[1] = (struct iovec){(void *)buf, len};
	n = writev(p->rec_fd, iov, len ? 2 : 1);
	if (n == (ssize_t)(sizeof(hdr) + len)) {
		p->rec_size += (uint64_t)n;
		return;
	}
	mptcp_record_stop(p, n < 0 ? strerror(errno) : "short write");
}

/* The whole of path into p->replay. */
static int mptcp_replay_read(struct mptcp_priv *p, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return collector_config_error(p->c, "replay", "%s: %s", path, strerror(errno));
	ret = mptcp_rec_slurp(p, "replay", fd, path, &p->replay, &p->replay_len);
	close(fd);
	return ret;
}

static struct mptcp_watch *mptcp_replay_watch(struct mptcp_priv *p, uint64_t ino)
{
	for (size_t i = 0; i < p->n_w; i++)
		if (p->w[i].ino == ino)
			return &p->w[i];
	return NULL;
}

int mptcp_replay_load(struct mptcp_priv *p, const char *path)
{
	char err[256];
	struct mptcp_rec r;
	size_t off = 0;
	long n;
	int ret = mptcp_replay_read(p, path);

	if (ret)
		return ret;
	n = mptcp_rec_check(p->replay, p->replay_len, MPTCP_MAX_NETNS, err, sizeof(err));
	if (n < 0)
		return collector_config_error(p->c, "replay", "%s: %s", path, err);
	/* Checked: every record reads, at most MPTCP_MAX_NETNS namespaces. */
	while (mptcp_rec_next(p->replay, p->replay_len, &off, &r, err, sizeof(err)) == 1) {
		struct mptcp_watch *w;

		if (r.kind != MPTCP_REC_WATCH)
			continue;
		/* One kernel recorded them all: any WATCH says. */
		p->absent_side_is_client = !!(r.flags & MPTCP_REC_F_SIDE);
		if (mptcp_replay_watch(p, r.netns))
			continue;
		w = &p->w[p->n_w++];
		memcpy(w->path, r.data, r.len);
		w->path[r.len] = '\0';
		w->ino = r.netns;
		w->family = r.family;
		w->diag_fd = w->pm_type_fd = w->netstat_fd = -1; /* nothing live */
		snprintf(w->ino_s, sizeof(w->ino_s), "%llu", (unsigned long long)w->ino);
	}
	p->replaying = true;
	clog_info(p->c, "replaying %ld records of %zu namespaces from %s", n, p->n_w, path);
	return 0;
}

void mptcp_replay_run(struct mptcp_priv *p, int64_t start_ns)
{
	static char buf[MPTCP_REC_MAX_PAYLOAD] __attribute__((aligned(8)));
	char err[256];
	struct mptcp_rec r;
	size_t off = 0;
	int64_t t0 = 0;
	int first = 1;

	while (mptcp_rec_next(p->replay, p->replay_len, &off, &r, err, sizeof(err)) == 1) {
		struct mptcp_watch *w = mptcp_replay_watch(p, r.netns);

		if (first)
			t0 = r.time_ns;
		first = 0;
		if (r.kind == MPTCP_REC_DGRAM) {
			/* An aligned copy, as a recv() buffer would be. */
			memcpy(buf, r.data, r.len);
			/* Wrapping, not overflowing, on an absurd time. */
			mptcp_buffer_handle(
			    p, w, buf, r.len,
			    (int64_t)((uint64_t)start_ns + (uint64_t)r.time_ns - (uint64_t)t0));
		} else if (r.kind == MPTCP_REC_OVERRUN) {
			__atomic_add_fetch(&w->overruns, 1, __ATOMIC_RELAXED);
			sink_add(p->c->sink, p->overruns_c, 1);
		}
	}
	free(p->replay); /* replayed: only the flag stays */
	p->replay = NULL;
	p->replay_len = 0;
}

void mptcp_replay_free(struct mptcp_priv *p)
{
	if (p->rec_fd >= 0)
		close(p->rec_fd);
	p->rec_fd = -1;
	free(p->replay);
	p->replay = NULL;
}
