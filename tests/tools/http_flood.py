#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds idle and slow-sending connections to an HTTP server and measures
how long a fresh client waits for a page meanwhile.

  http_flood.py --port P [--idle 1000] [--slow 64] [--duration 10]
                [--idle-from 127.0.0.2] [--idle-addrs 16]
                [--slow-from 127.0.1.1] [--slow-addrs 8]
                [--probe-from 127.0.0.1] [--path /metrics]

Idle connections send nothing; slow ones send a request header one byte
per second and never finish it. Both are re-opened when the server closes
them (a determined client), spread over --*-addrs source addresses of
127.0.0.0/8 (all local on Linux, no set-up needed). Traffic goes to
127.0.0.1 only and stops after --duration seconds.

Every 0.5 s a fresh client (own connection, from --probe-from) fetches
--path; prints one JSON line: probe latencies (max, median, count, failures)
and how many connections the attackers held at the end.
"""
import argparse
import errno
import ipaddress
import json
import selectors
import socket
import statistics
import threading
import time


def addr_list(first, n):
    a = ipaddress.ip_address(first)
    return [str(a + i) for i in range(n)]


class Flood:
    def __init__(self, port, idle, slow, idle_addrs, slow_addrs):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.want = [("idle", idle_addrs, idle), ("slow", slow_addrs, slow)]
        self.socks = {}  # sock -> [kind, src, bytes sent, connected]
        self.reconnects = 0
        self.stop = False

    def open_one(self, kind, src):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((src, 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return False
        self.socks[s] = [kind, src, 0, False]
        self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        return True

    def fill(self):
        for kind, addrs, n in self.want:
            have = sum(1 for v in self.socks.values() if v[0] == kind)
            i = have
            while have < n:
                if not self.open_one(kind, addrs[i % len(addrs)]):
                    break
                have += 1
                i += 1

    def drop(self, s):
        self.sel.unregister(s)
        s.close()
        del self.socks[s]
        self.reconnects += 1

    def run(self, duration):
        header = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
        end = time.monotonic() + duration
        next_byte = time.monotonic()
        self.fill()
        while time.monotonic() < end and not self.stop:
            for key, ev in self.sel.select(timeout=0.05):
                s = key.fileobj
                st = self.socks.get(s)
                if st is None:
                    continue
                if ev & selectors.EVENT_WRITE and not st[3]:
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err and err != errno.EINPROGRESS:
                        self.drop(s)
                        continue
                    st[3] = True
                    self.sel.modify(s, selectors.EVENT_READ)
                if ev & selectors.EVENT_READ:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:
                        self.drop(s)
            now = time.monotonic()
            if now >= next_byte:  # one byte a second on each slow connection
                next_byte = now + 1.0
                for s, st in list(self.socks.items()):
                    if st[0] == "slow" and st[3] and st[2] < len(header):
                        try:
                            s.send(header[st[2]:st[2] + 1])
                            st[2] += 1
                        except OSError:
                            self.drop(s)
            self.fill()
        held = sum(1 for v in self.socks.values() if v[3])
        for s in list(self.socks):
            s.close()
        return held


def probe(port, src, path, timeout):
    t0 = time.monotonic()
    t_conn = None
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        t_conn = time.monotonic() - t0
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  "Connection: close\r\n\r\n".encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return time.monotonic() - t0, ok, t_conn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=64)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--idle-from", default="127.0.0.2")
    ap.add_argument("--idle-addrs", type=int, default=16)
    ap.add_argument("--slow-from", default="127.0.1.1")
    ap.add_argument("--slow-addrs", type=int, default=8)
    ap.add_argument("--probe-from", default="127.0.0.1")
    ap.add_argument("--path", default="/metrics")
    ap.add_argument("--probe-timeout", type=float, default=30)
    a = ap.parse_args()

    f = Flood(a.port, a.idle, a.slow, addr_list(a.idle_from, a.idle_addrs),
              addr_list(a.slow_from, a.slow_addrs))
    res = {}
    t = threading.Thread(target=lambda: res.update(held=f.run(a.duration)))
    t.start()
    time.sleep(min(2.0, a.duration / 4))  # let the attack build up
    lat, conn, fails = [], [], 0
    end = time.monotonic() + a.duration - min(2.0, a.duration / 4) - 0.5
    while time.monotonic() < end:
        d, ok, c = probe(a.port, a.probe_from, a.path, a.probe_timeout)
        lat.append(d)
        if c is not None:
            conn.append(c)
        fails += not ok
        time.sleep(0.5)
    f.stop = True
    t.join()
    print(json.dumps({
        "probes": len(lat), "failures": fails,
        "max_s": round(max(lat), 4) if lat else None,
        "median_s": round(statistics.median(lat), 4) if lat else None,
        "max_connect_s": round(max(conn), 4) if conn else None,
        "attacker_reconnects": f.reconnects, "attacker_held_at_end": res.get("held"),
    }))


if __name__ == "__main__":
    main()
