#!/usr/bin/env python3
"""Pressure an HTTP server the cheap ways an attacker would, and time what a
well-behaved client gets meanwhile (issue 30).

All at once, for --duration seconds after --warmup:
  --slow-body N     N connections each sending a complete request header that
                    declares a body (--slow-body-request: "get" is GET /healthz
                    with Content-Length: 65536, "post" a POST of 1000 bytes to
                    /api/v1/ifs/scans), then one body byte every --trickle s.
                    A connection answered is counted by status and opened
                    again.
  --idle N          N connections that send nothing (--idle-reopen: opened
                    again when the server closes one).
  --guess N         N threads, each a loop of new connections asking /metrics
                    with a random user name and password (--guess-from ADDR:
                    the source address, e.g. 127.0.0.9).
  --probe PATH      (repeatable) a fresh connection asking PATH every
                    --probe-interval s, with --auth USER:PASS if given; its
                    latency and status are recorded.
Prints one JSON object: per probe path n, statuses, p50/p95/max ms; the slow
and idle connections' ends by status ("closed": shut by the server without an
answer) and how many were still open at the stop (slow_body_open_at_stop,
idle_open_at_stop); connections that could not be opened (idle_connect); the
guesses' answers by status.

  http_pressure.py --port 9559 --slow-body 64 --probe /healthz --probe /metrics
  http_pressure.py --port 9559 --guess 64 --guess-from 127.0.0.9 \\
      --probe /metrics --auth prometheus:s3cret
"""
import argparse
import base64
import json
import os
import selectors
import socket
import threading
import time


def read_status(sock, timeout):
    """The status code of the first answer on sock, 0 when none came."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data and len(data) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    parts = data.split(b" ", 2)
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
        return int(parts[1])
    return 0


def request(host, port, path, auth=None, source=None, timeout=15.0):
    """One request on a fresh connection: (status, ms); status 0: no answer."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection((host, port), timeout=timeout,
                                     source_address=(source, 0) if source else None)
    except OSError:
        return 0, (time.monotonic() - t0) * 1000
    hdr = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
    if auth:
        hdr += "Authorization: Basic " + base64.b64encode(auth.encode()).decode() + "\r\n"
    try:
        s.sendall((hdr + "\r\n").encode())
        st = read_status(s, timeout)
        # the whole answer, so that the time is the client's
        s.settimeout(timeout)
        while s.recv(65536):
            pass
    except OSError:
        st = st if "st" in locals() else 0
    finally:
        s.close()
    return st, (time.monotonic() - t0) * 1000


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.by = {}

    def add(self, key, status, ms=None):
        with self.lock:
            d = self.by.setdefault(key, {"statuses": {}, "ms": []})
            d["statuses"][str(status)] = d["statuses"].get(str(status), 0) + 1
            if ms is not None:
                d["ms"].append(ms)

    def summary(self):
        out = {}
        with self.lock:
            for k, d in self.by.items():
                ms = sorted(d["ms"])
                e = {"n": sum(d["statuses"].values()), "statuses": d["statuses"]}
                if ms:
                    e["p50_ms"] = round(ms[len(ms) // 2], 1)
                    e["p95_ms"] = round(ms[min(len(ms) - 1, int(len(ms) * 0.95))], 1)
                    e["max_ms"] = round(ms[-1], 1)
                out[k] = e
        return out


def slow_and_idle(a, stop, stats):
    """The slow-body and idle connections, in one thread with a selector."""
    sel = selectors.DefaultSelector()
    if a.slow_body_request == "get":
        head = (f"GET /healthz HTTP/1.1\r\nHost: {a.host}:{a.port}\r\n"
                "Content-Length: 65536\r\n\r\n").encode()
    else:
        head = (f"POST /api/v1/ifs/scans HTTP/1.1\r\nHost: {a.host}:{a.port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n").encode()
    conns = {}  # sock -> kind

    def open_one(kind):
        try:
            s = socket.create_connection((a.host, a.port), timeout=5)
        except OSError:
            stats.add(kind + "_connect", "refused")
            return
        s.setblocking(False)
        if kind == "slow_body":
            try:
                s.send(head)
            except OSError:
                s.close()
                return
        conns[s] = kind
        sel.register(s, selectors.EVENT_READ)

    for _ in range(a.slow_body):
        open_one("slow_body")
    for _ in range(a.idle):
        open_one("idle")
    next_byte = time.monotonic() + a.trickle
    while not stop.is_set():
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            kind = conns.pop(s)
            sel.unregister(s)
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            parts = data.split(b" ", 2)
            st = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else "closed"
            stats.add(kind, st)
            s.close()
            # a slow sender comes back; an idle one closed is gone
            if not stop.is_set() and (kind == "slow_body" or a.idle_reopen):
                open_one(kind)
        if time.monotonic() >= next_byte:
            next_byte += a.trickle
            for s, kind in list(conns.items()):
                if kind == "slow_body":
                    try:
                        s.send(b"{" if a.slow_body_request == "post" else b"x")
                    except OSError:
                        pass
    # the connections still open at the stop (the server may have closed
    # some of them in the last moment, unseen here)
    for s, kind in conns.items():
        stats.add(kind + "_open_at_stop", "open")
        s.close()


def guesser(a, stop, stats):
    while not stop.is_set():
        auth = "u%s:%s" % (os.urandom(3).hex(), os.urandom(6).hex())
        st, _ = request(a.host, a.port, "/metrics", auth=auth, source=a.guess_from)
        stats.add("guess", st)


def prober(a, path, stop, stats, t_start):
    while not stop.is_set():
        st, ms = request(a.host, a.port, path, auth=a.auth)
        if time.monotonic() >= t_start:
            stats.add(path, st, ms)
        stop.wait(a.probe_interval)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--duration", type=float, default=10)
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument("--slow-body", type=int, default=0)
    p.add_argument("--slow-body-request", choices=["get", "post"], default="get")
    p.add_argument("--trickle", type=float, default=2.0)
    p.add_argument("--idle", type=int, default=0)
    p.add_argument("--idle-reopen", action="store_true",
                   help="open an idle connection again when the server closes it")
    p.add_argument("--guess", type=int, default=0)
    p.add_argument("--guess-from", default=None)
    p.add_argument("--probe", action="append", default=[])
    p.add_argument("--probe-interval", type=float, default=0.2)
    p.add_argument("--auth", default=None)
    a = p.parse_args()

    stats = Stats()
    stop = threading.Event()
    threads = []
    if a.slow_body or a.idle:
        threads.append(threading.Thread(target=slow_and_idle, args=(a, stop, stats)))
    for _ in range(a.guess):
        threads.append(threading.Thread(target=guesser, args=(a, stop, stats)))
    t_start = time.monotonic() + a.warmup
    for path in a.probe:
        threads.append(threading.Thread(target=prober, args=(a, path, stop, stats, t_start)))
    for t in threads:
        t.daemon = True
        t.start()
    time.sleep(a.warmup + a.duration)
    stop.set()
    for t in threads:
        t.join(timeout=20)
    print(json.dumps(stats.summary(), sort_keys=True))


if __name__ == "__main__":
    main()
