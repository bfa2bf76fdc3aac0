#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds hostile connections open against an HTTP server while probing how
long an honest client waits, and prints one JSON line of figures.

  http_edges.py --port P --mode slowbody|idle|none [--conns 64]
                [--method GET] [--path /healthz] [--length 65536] [--interval 2]
                [--duration 10] [--probe /healthz,/metrics] [--from 127.0.2.1]
                [--addrs 64] [--host 127.0.0.1]

slowbody: each connection sends a complete "METHOD PATH" header with
  "Content-Length: LENGTH", then one body byte every INTERVAL seconds (the
  attack of issue 30: a declared body trickled in);
idle:     each connection is opened and sends nothing (held until the end);
none:     no hostile connection (the baseline).

Meanwhile, from 127.0.0.1, every PROBE path is fetched in turn on a new
connection every 0.25 s (the honest client; a scraper opens one per
scrape), each with a 30 s limit. Hostile connections come from --addrs
source addresses from --from upwards (127.0.0.0/8 is local on Linux), so a
per-address limit does not hide the case. Traffic goes to --host only.

Output: {"mode", "conns", "held" (hostile connections still open at the
end, by the server's choice or not), "probes": {PATH: {"n", "ok",
"p50_ms", "max_ms", "statuses"}}}.
"""
import argparse
import ipaddress
import json
import socket
import threading
import time


def probe_once(host, port, path, limit):
    t0 = time.monotonic()
    status = "error"
    try:
        s = socket.create_connection((host, port), timeout=limit)
        s.settimeout(max(0.1, limit - (time.monotonic() - t0)))
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                   % (path, host)).encode())
        buf = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        s.close()
        if buf.startswith(b"HTTP/1."):
            status = buf.split(b" ", 2)[1].decode()
    except socket.timeout:
        status = "timeout"
    except OSError as e:
        status = "reset" if isinstance(e, ConnectionResetError) else "error"
    return status, (time.monotonic() - t0) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--mode", choices=["slowbody", "idle", "none"], required=True)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--method", default="GET")
    ap.add_argument("--length", type=int, default=65536)
    ap.add_argument("--interval", type=float, default=2)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--probe", default="/healthz,/metrics")
    ap.add_argument("--from", dest="src", default="127.0.2.1")
    ap.add_argument("--addrs", type=int, default=64)
    a = ap.parse_args()

    base = ipaddress.IPv4Address(a.src)
    hostile = []
    if a.mode != "none":
        head = ("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
                % (a.method, a.path, a.host, a.length)).encode()
        for i in range(a.conns):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((str(base + i % a.addrs), 0))
            s.settimeout(5)
            try:
                s.connect((a.host, a.port))
                if a.mode == "slowbody":
                    s.sendall(head)
                s.setblocking(False)
                hostile.append(s)
            except OSError:
                s.close()

    stop = threading.Event()

    def trickle():
        while not stop.wait(a.interval):
            for s in list(hostile):
                try:
                    s.send(b"x")
                except BlockingIOError:
                    pass
                except OSError:
                    hostile.remove(s)
                    s.close()

    t = None
    if a.mode == "slowbody":
        t = threading.Thread(target=trickle, daemon=True)
        t.start()
    time.sleep(0.5)  # the hostile connections reach the server first

    paths = a.probe.split(",")
    res = {p: {"n": 0, "ok": 0, "lat": [], "statuses": {}} for p in paths}
    end = time.monotonic() + a.duration
    i = 0
    while time.monotonic() < end:
        p = paths[i % len(paths)]
        i += 1
        st, ms = probe_once(a.host, a.port, p, 30)
        r = res[p]
        r["n"] += 1
        r["ok"] += st.startswith("2")
        r["lat"].append(ms)
        r["statuses"][st] = r["statuses"].get(st, 0) + 1
        time.sleep(0.25)
    stop.set()

    held = 0
    for s in hostile:
        try:
            d = s.recv(1, socket.MSG_PEEK)
            held += d != b""
        except BlockingIOError:
            held += 1
        except OSError:
            pass
        s.close()
    out = {"mode": a.mode, "conns": a.conns, "held": held, "probes": {}}
    for p, r in res.items():
        lat = sorted(r["lat"]) or [0]
        out["probes"][p] = {"n": r["n"], "ok": r["ok"],
                            "p50_ms": round(lat[len(lat) // 2], 1),
                            "max_ms": round(lat[-1], 1), "statuses": r["statuses"]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
