#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A remote-write receiver that answers a scripted sequence of statuses, for
tests/integration/remote_write.sh. Loopback only.

  rw_fake_receiver.py [--tls CERT KEY [--client-ca CA]] [--save DIR] [--port N] PORTFILE LOGFILE STATUS...

STATUS is a code (200, 400, 503, ...) or CODE:RETRY_AFTER (429:2), or
CODE/SECONDS (401/5: every request answered 401 for 5 s from the first
one it answered, then the next step), or 200+partial: an OTLP ExportLogsServiceResponse whose partial_success rejects
3 records ("scripted rejection"); requests after the list get 204. Also an
OTLP/HTTP logs receiver for tests/integration/export_otlp.sh. Writes the port it listens on to PORTFILE, and one
JSON line per request to LOGFILE: arrival time, status answered, the body's
sha256 and length, and the request headers the spec names. With --save, each
body is kept as DIR/<n>.bin (n from 1) for tests/tools/rw_decode.py."""
import hashlib
import http.server
import json
import os
import ssl
import sys
import time

args = sys.argv[1:]
tls = client_ca = None
if args and args[0] == "--tls":
    tls, args = (args[1], args[2]), args[3:]
    if args and args[0] == "--client-ca":
        client_ca, args = args[1], args[2:]
save = None
if args and args[0] == "--save":
    save, args = args[1], args[2:]
port = 0
if args and args[0] == "--port":
    port, args = int(args[1]), args[2:]
portfile, logfile, script = args[0], args[1], args[2:]
count = 0
step_at, step_since = 0, None  # the step answering, since when (timed steps)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global count, step_at, step_since
        t = time.time()
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        count += 1
        while True:
            step = script[step_at] if step_at < len(script) else "204"
            if "/" not in step:
                step_at += 1
                break
            step, _, secs = step.partition("/")  # CODE/SECONDS: that long
            if step_since is None:
                step_since = t
            if t - step_since < float(secs):
                break
            step_at, step_since = step_at + 1, None
        step, partial = step.split("+")[0], "+partial" in step
        code, _, retry_after = step.partition(":")
        entry = {
            "t": t,
            "status": int(code),
            "sha": hashlib.sha256(body).hexdigest(),
            "len": len(body),
            "path": self.path,
        }
        entry["n"] = count
        for h in ("Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version",
                  "User-Agent", "Authorization"):
            entry[h] = self.headers.get(h)
        if save:
            with open(os.path.join(save, "%d.bin" % count), "wb") as f:
                f.write(body)
        with open(logfile, "a") as f:
            f.write(json.dumps(entry) + "\n")
        msg = b"" if code == "204" else b"scripted answer\n"  # 204 has no body
        if partial:  # {partial_success {rejected_log_records: 3, error_message}}
            text = b"scripted rejection"
            inner = b"\x08\x03\x12" + bytes([len(text)]) + text
            msg = b"\x0a" + bytes([len(inner)]) + inner
        self.send_response(int(code))
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*tls)
    if client_ca:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(client_ca)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
