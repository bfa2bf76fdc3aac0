// SPDX-License-Identifier: MIT
/* gRPC unary calls to the CRI runtime over HTTP/2 (see names_cri.h). */
#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/names_cri.h"

#define GRPC_PREFIX    5
#define CRI_ANSWER_MAX (16u << 20) /* a ListContainers of ~50,000 containers */

struct names_cri {
	names_cri_connect_fn connect;
	void *arg;
	uint64_t timeout_ms;
	int fd; /* -1: no connection */
	nghttp2_session *h2;
	/* the call in flight */
	int32_t stream;
	const uint8_t *req;
	size_t req_len, req_off;
	uint8_t *body;
	size_t len, cap;
	bool too_big, closed;
	uint32_t reset;	 /* the stream's error code */
	int status;	 /* HTTP :status */
	int grpc_status; /* -1: no grpc-status seen */
	char grpc_message[160];
};

int names_grpc_frame_decode(const uint8_t *buf, size_t len, const uint8_t **msg, size_t *msglen)
{
	uint32_t n;

	if (len < GRPC_PREFIX || buf[0] != 0) /* compressed: never asked for */
		return -EPROTO;
	n = (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
	if (n > len - GRPC_PREFIX)
		return -EPROTO;
	*msg = buf + GRPC_PREFIX;
	*msglen = n;
	return 0;
}

/* --- nghttp2's callbacks ----------------------------------------------------- */

static ssize_t h2_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
	struct names_cri *c = arg;
	ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)s;
	(void)flags;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? NGHTTP2_ERR_WOULDBLOCK
							 : NGHTTP2_ERR_CALLBACK_FAILURE;
	return n;
}

static int h2_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
		     void *arg)
{
	struct names_cri *c = arg;

	(void)s;
	(void)flags;
	if (f->hd.stream_id != c->stream)
		return 0;
	if (namelen == 7 && !memcmp(name, ":status", 7))
		c->status = atoi((const char *)value);
	else if (namelen == 11 && !memcmp(name, "grpc-status", 11))
		c->grpc_status = atoi((const char *)value);
	else if (namelen == 12 && !memcmp(name, "grpc-message", 12))
		snprintf(c->grpc_message, sizeof(c->grpc_message), "%.*s", (int)valuelen, value);
	return 0;
}

static int h2_data(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data,
		   size_t len, void *arg)
{
	struct names_cri *c = arg;

	(void)s;
	(void)flags;
	if (stream != c->stream)
		return 0;
	if (c->len + len > CRI_ANSWER_MAX) {
		c->too_big = true;
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	if (c->len + len > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		uint8_t *b;

		while (cap < c->len + len)
			cap *= 2;
		b = realloc(c->body, cap);
		if (!b)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		c->body = b;
		c->cap = cap;
	}
	memcpy(c->body + c->len, data, len);
	c->len += len;
	return 0;
}

static int h2_close(nghttp2_session *s, int32_t stream, uint32_t error, void *arg)
{
	struct names_cri *c = arg;

	(void)s;
	if (stream == c->stream) {
		c->closed = true;
		c->reset = error;
	}
	return 0;
}

static ssize_t h2_body(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
		       uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct names_cri *c = arg;
	size_t n = c->req_len - c->req_off;

	(void)s;
	(void)stream;
	(void)src;
	if (n > len)
		n = len;
	memcpy(buf, c->req + c->req_off, n);
	c->req_off += n;
	if (c->req_off == c->req_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* --- the connection ---------------------------------------------------------- */

static void conn_close(struct names_cri *c)
{
	if (c->h2)
		nghttp2_session_del(c->h2);
	c->h2 = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int conn_open(struct names_cri *c)
{
	nghttp2_session_callbacks *cb;
	int fd, rc;

	fd = c->connect(c->arg);
	if (fd < 0)
		return fd;
	if (nghttp2_session_callbacks_new(&cb)) {
		close(fd);
		return -ENOMEM;
	}
	nghttp2_session_callbacks_set_send_callback(cb, h2_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2_close);
	rc = nghttp2_session_client_new(&c->h2, cb, c);
	nghttp2_session_callbacks_del(cb);
	if (rc) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	/* the client preface goes with this first SETTINGS frame */
	if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, NULL, 0)) {
		conn_close(c);
		return -ENOMEM;
	}
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends and receives until the call's stream closes or the deadline. */
static int conn_run(struct names_cri *c, int64_t deadline, char *err, size_t errlen)
{
	uint8_t buf[16384];

	while (!c->closed) {
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		int64_t left = deadline - mono_ms();
		ssize_t n;

		if (nghttp2_session_send(c->h2)) {
			snprintf(err, errlen, "HTTP/2 send failed: %s", strerror(errno));
			return -EIO;
		}
		if (nghttp2_session_want_write(c->h2))
			p.events |= POLLOUT;
		if (left <= 0) {
			snprintf(err, errlen, "no answer within %llu ms",
				 (unsigned long long)c->timeout_ms);
			return -ETIMEDOUT;
		}
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -EIO;
		}
		if (n <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "the runtime closed the connection");
			return -ECONNRESET;
		}
		if (nghttp2_session_mem_recv(c->h2, buf, (size_t)n) < 0) {
			snprintf(err, errlen, "%s",
				 c->too_big ? "answer too large"
					    : "malformed HTTP/2 from the runtime");
			return -EPROTO;
		}
	}
	return 0;
}

struct names_cri *names_cri_new(names_cri_connect_fn fn, void *arg, uint64_t timeout_ms)
{
	struct names_cri *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->connect = fn;
	c->arg = arg;
	c->timeout_ms = timeout_ms;
	c->fd = -1;
	return c;
}

void names_cri_free(struct names_cri *c)
{
	if (!c)
		return;
	conn_close(c);
	free(c->body);
	free(c);
}

#define HDR(n, v)                                                                                  \
	{                                                                                          \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE     \
	}

/* One request on the connection (opened if needed): 0 when its stream
 * closed; the answer in c. */
static int call_once(struct names_cri *c, const char *path, char *err, size_t errlen)
{
	nghttp2_nv hdrs[] = {
	    HDR(":method", "POST"),
	    HDR(":scheme", "http"),
	    HDR(":path", path),
	    HDR(":authority", "localhost"),
	    HDR("content-type", "application/grpc"),
	    HDR("te", "trailers"),
	};
	nghttp2_data_provider body = {.read_callback = h2_body};
	int rc;

	if (c->fd < 0 && (rc = conn_open(c))) {
		snprintf(err, errlen, "cannot connect to the runtime: %s", strerror(-rc));
		return rc;
	}
	c->len = 0;
	c->req_off = 0;
	c->too_big = c->closed = false;
	c->reset = 0;
	c->status = 0;
	c->grpc_status = -1;
	c->grpc_message[0] = '\0';
	c->stream =
	    nghttp2_submit_request(c->h2, NULL, hdrs, sizeof(hdrs) / sizeof(hdrs[0]), &body, NULL);
	if (c->stream < 0) {
		snprintf(err, errlen, "HTTP/2: %s", nghttp2_strerror(c->stream));
		return -EIO;
	}
	return conn_run(c, mono_ms() + (int64_t)c->timeout_ms, err, errlen);
}

int names_cri_call(struct names_cri *c, const char *method, const ProtobufCMessage *req,
		   const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out, char *err,
		   size_t errlen)
{
	size_t n = protobuf_c_message_get_packed_size(req), msglen;
	uint8_t *frame = malloc(GRPC_PREFIX + n);
	const uint8_t *msg;
	char path[128];
	int rc;

	*out = NULL;
	if (!frame)
		return -ENOMEM;
	frame[0] = 0;
	frame[1] = (uint8_t)(n >> 24);
	frame[2] = (uint8_t)(n >> 16);
	frame[3] = (uint8_t)(n >> 8);
	frame[4] = (uint8_t)n;
	protobuf_c_message_pack(req, frame + GRPC_PREFIX);
	c->req = frame;
	c->req_len = GRPC_PREFIX + n;
	snprintf(path, sizeof(path), "/runtime.v1.RuntimeService/%s", method);
	rc = call_once(c, path, err, errlen);
	/* A kept connection the runtime closed meanwhile (it restarted): once
	 * more on a new one. */
	if (rc == -ECONNRESET || rc == -EIO) {
		conn_close(c);
		rc = call_once(c, path, err, errlen);
	}
	free(frame);
	c->req = NULL;
	if (rc) {
		conn_close(c);
		return rc;
	}
	rc = -EPROTO;
	if (c->status != 200) {
		snprintf(err, errlen, "%s: HTTP status %d (not a gRPC server?)", method, c->status);
		return rc;
	}
	if (c->grpc_status != 0) {
		snprintf(err, errlen, "%s: gRPC status %d%s%s", method, c->grpc_status,
			 c->grpc_message[0] ? ": "
			 : c->reset	    ? " (stream reset)"
					    : "",
			 c->grpc_message);
		return rc;
	}
	if (names_grpc_frame_decode(c->body, c->len, &msg, &msglen)) {
		snprintf(err, errlen, "%s: malformed gRPC message (%zu bytes)", method, c->len);
		return rc;
	}
	*out = protobuf_c_message_unpack(desc, NULL, msglen, msg);
	if (!*out) {
		snprintf(err, errlen, "%s: the answer is not a %s", method, desc->name);
		return rc;
	}
	return 0;
}
