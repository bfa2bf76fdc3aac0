/* SPDX-License-Identifier: MIT */
/*
 * A client of the node's CRI runtime (containerd, CRI-O) for the agent's
 * name service (agent/names.h): unary calls of runtime.v1.RuntimeService
 * over the runtime's unix socket.
 *
 * gRPC over HTTP/2 cleartext with prior knowledge, framed by nghttp2: a
 * POST to /runtime.v1.RuntimeService/<Method> with content-type
 * application/grpc and te: trailers, the body one length-prefixed message
 * (1 byte compressed flag, 4 bytes big-endian length), the answer one such
 * message and a grpc-status trailer (0 = OK). No gRPC library: Debian's
 * (grpc++) is C++ with a tree of its own, for unary calls that nghttp2 and
 * protobuf-c make.
 *
 * Why nghttp2 and not libcurl (which the exporters use, and which frames
 * HTTP/2 with nghttp2 itself): the connection must be a descriptor handed
 * over by the privileged helper, and libcurl 7.88 (Debian 12) calls
 * connect() again on a socket its CURLOPT_SOCKOPTFUNCTION reported
 * CURL_SOCKOPT_ALREADY_CONNECTED, which fails with EISCONN (curl issue
 * #10626, fixed in 8.0).
 *
 * The socket is not opened by path here: every new connection comes from
 * a connect function the agent gives (the privileged helper's descriptor
 * after the privilege drop, agent/privsep.c), so a runtime that restarts is
 * reached again on the next call. One connection is kept between calls.
 */
#ifndef SYSOBS_NAMES_CRI_H
#define SYSOBS_NAMES_CRI_H

#include <stddef.h>
#include <stdint.h>

#include "agent/cri/runtime_v1.pb-c.h"

/* Returns a connected stream socket to the runtime, or -errno. */
typedef int (*names_cri_connect_fn)(void *arg);

struct names_cri;

/* NULL + errno (ENOMEM). */
struct names_cri *names_cri_new(names_cri_connect_fn fn, void *arg, uint64_t timeout_ms);
void names_cri_free(struct names_cri *c); /* accepts NULL */

/*
 * One unary call: method as "ListPodSandbox", req packed, the response
 * unpacked with desc into *out (free with protobuf_c_message_free_unpacked).
 * 0, or -errno with a message in err: -ECONNREFUSED/-ENOENT (no runtime),
 * -EPROTO (a gRPC status other than OK, or a malformed answer), -ETIMEDOUT.
 */
int names_cri_call(struct names_cri *c, const char *method, const ProtobufCMessage *req,
		   const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out, char *err,
		   size_t errlen);

/* The gRPC length-prefixed message in buf[0..len): *msg, *msglen. 0, or
 * -EPROTO (short, compressed, or a length past the buffer). Pure. */
int names_grpc_frame_decode(const uint8_t *buf, size_t len, const uint8_t **msg, size_t *msglen);

#endif
