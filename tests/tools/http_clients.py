#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Many HTTP/1.1 clients at once, from many source addresses, each sending
requests as fast as they are answered; counts what a load tester counts.

  http_clients.py --port P [--clients 1000] [--addrs 100] [--duration 5]
                  [--path /healthz] [--from 127.0.1.1] [--timeout 10]

Each client keeps its connection alive and sends the next request when the
previous answer is complete; a server that answers with Connection: close
(or closes after a complete answer) costs a reconnect, not an error. Errors,
by kind: connect (refused or failed), reset (ECONNRESET/EPIPE), eof (closed
before the answer was complete), status (not 2xx), timeout (no byte for
--timeout seconds). Clients are spread over --addrs source addresses from
--from upwards in 127.0.0.0/8 (all local on Linux). Traffic goes to
127.0.0.1 only and stops after --duration seconds.

Prints one JSON line: ok, errors by kind, requests/s, the slowest answer.
"""
import argparse
import errno
import ipaddress
import json
import selectors
import socket
import time


class Client:
    def __init__(self, src):
        self.src = src
        self.sock = None
        self.buf = b""
        self.sent_at = 0.0
        self.last_io = 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--addrs", type=int, default=100)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--from", dest="src", default="127.0.1.1")
    ap.add_argument("--timeout", type=float, default=10)
    a = ap.parse_args()

    base = ipaddress.IPv4Address(a.src)
    req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % a.path).encode()
    sel = selectors.DefaultSelector()
    errors = {"connect": 0, "reset": 0, "eof": 0, "status": 0, "timeout": 0}
    ok = 0
    slowest = 0.0
    clients = [Client(str(base + i % a.addrs)) for i in range(a.clients)]

    def close(c):
        if c.sock:
            sel.unregister(c.sock)
            c.sock.close()
            c.sock = None

    def start(c, now):
        c.buf = b""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((c.src, 0))
        except OSError:
            s.close()
            errors["connect"] += 1
            return
        err = s.connect_ex(("127.0.0.1", a.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            errors["connect"] += 1
            return
        c.sock = s
        c.sent_at = 0.0
        c.last_io = now
        sel.register(s, selectors.EVENT_WRITE, c)

    def send(c, now):
        try:
            c.sock.send(req)
        except OSError as e:
            errors["reset" if c.sent_at else "connect"] += 1
            close(c)
            return
        c.sent_at = now
        c.last_io = now
        sel.modify(c.sock, selectors.EVENT_READ, c)

    # One complete answer at the head of c.buf: (status, keep_alive, length)
    def answer(buf):
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = buf[:end].decode("latin-1").split("\r\n")
        status = int(head[0].split(" ")[1])
        length, close_it = 0, False
        for h in head[1:]:
            k, _, v = h.partition(":")
            k, v = k.strip().lower(), v.strip().lower()
            if k == "content-length":
                length = int(v)
            elif k == "connection" and v == "close":
                close_it = True
        if len(buf) < end + 4 + length:
            return None
        return status, not close_it, end + 4 + length

    now = time.monotonic()
    stop = now + a.duration
    for c in clients:
        start(c, now)
    while True:
        now = time.monotonic()
        if now >= stop:
            break
        for key, ev in sel.select(timeout=0.2):
            c = key.data
            now = time.monotonic()
            if ev & selectors.EVENT_WRITE and not c.sent_at:
                err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    errors["connect"] += 1
                    close(c)
                    start(c, now)
                    continue
                send(c, now)
                continue
            try:
                data = c.sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                errors["reset"] += 1
                close(c)
                start(c, now)
                continue
            c.last_io = now
            if not data:
                errors["eof"] += 1
                close(c)
                start(c, now)
                continue
            c.buf += data
            got = answer(c.buf)
            if not got:
                continue
            status, keep, used = got
            slowest = max(slowest, now - c.sent_at)
            if 200 <= status < 300:
                ok += 1
            else:
                errors["status"] += 1
            c.buf = c.buf[used:]
            if keep:
                send(c, now)
            else:
                close(c)
                start(c, now)
        for c in clients:
            if c.sock is None:
                start(c, now)
            elif now - c.last_io > a.timeout:
                errors["timeout"] += 1
                close(c)
                start(c, now)
    for c in clients:
        close(c)
    print(json.dumps({"clients": a.clients, "addrs": a.addrs, "ok": ok,
                      "errors": errors, "rps": round(ok / a.duration),
                      "slowest_s": round(slowest, 3)}))


if __name__ == "__main__":
    main()
