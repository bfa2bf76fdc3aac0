#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A remote-write proxy that holds every request for a delay taken in turn
from a list, then forwards it unchanged to a receiver and relays its answer:
the sender's sysobs_remote_write_batch_duration_seconds then spreads over
known buckets while everything still reaches the receiver. Loopback only.

  rw_delay_proxy.py PORTFILE TARGET_URL DELAY_S...

Writes the port it listens on to PORTFILE."""
import http.server
import itertools
import os
import sys
import time
import urllib.error
import urllib.request

portfile, target, delays = sys.argv[1], sys.argv[2], itertools.cycle(
    float(d) for d in sys.argv[3:])
FORWARD = ("Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version",
           "User-Agent")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(next(delays))
        req = urllib.request.Request(target, data=body, method="POST", headers={
            h: self.headers[h] for h in FORWARD if self.headers[h]})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, answer = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, answer = e.code, e.read()
        except OSError:
            status, answer = 502, b"receiver unreachable"
        self.send_response(status)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
