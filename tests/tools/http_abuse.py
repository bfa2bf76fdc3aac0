#!/usr/bin/env python3
"""Bad HTTP requests against sysobsd, in a loop, for a duration.

The corpus is every case of integration.http_hardening's parsing checks and
of issue #24 item 6: each sent as a connection's first request (screened by
the accepting thread) and as the second request of a kept-alive connection
(parsed by libmicrohttpd), plus slow and half-sent headers. Fast cases run
on --workers threads, round robin; --slow threads each alternate a
slowloris connection (a byte every 0.25 s until the server closes it) and a
held case (bytes without an end of line on a kept-alive connection, which
libmicrohttpd keeps until header_timeout).

Every --every seconds (and at the end) a JSON line goes to stdout:
{"elapsed": s, "sent": n, "errors": n, "by_case": {...}} - errors are
cases whose answer was not what the case expects (a connection refused or
reset before any answer counts too). With --check each fast case runs once
first and the expected answer is asserted (exit 1 on a mismatch).

  http_abuse.py --port 9559 --duration 600 --workers 6 --slow 2
  http_abuse.py --port 9559 --auth prometheus:wrong   # + failed logins
"""
import argparse
import base64
import json
import socket
import sys
import threading
import time

CL_2_64_PLUS_1 = "18446744073709551617"


def corpus(port, auth):
    """(name, first request or None, payload, expectation) of the fast cases.

    expectation: "json:STATUS" (one JSON ErrorResponse, one header block),
    "status:STATUS" (libmicrohttpd's own answer, then a close), or "close"
    (closed, with or without an answer)."""
    host = f"Host: 127.0.0.1:{port}\r\n"
    good = f"GET /healthz HTTP/1.1\r\n{host}\r\n".encode()
    post = f"POST /api/v1/ifs/scans HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
    big = "a" * 40000
    many = "".join(f"X-{i}: y\r\n" for i in range(150))
    bad = {
        "nul_in_target": ("GET /api/v1/drops/samples?limit=5%00 HTTP/1.1\r\n" + host + "\r\n", 400),
        "empty_args_600": ("GET /api/v1/collectors?" + "&" * 600 + " HTTP/1.1\r\n" + host + "\r\n", 400),
        "target_5k": ("GET /api/v1/collectors?x=" + "a" * 5000 + " HTTP/1.1\r\n" + host + "\r\n", 414),
        "cl_1tb": ("GET /healthz HTTP/1.1\r\n" + host + "Content-Length: 1000000000000\r\n\r\n", 413),
        "cl_2_64": (post + "Content-Length: " + CL_2_64_PLUS_1 + "\r\n\r\n", 413),
        "header_40k": ("GET /metrics HTTP/1.1\r\n" + host + "X-Big: " + big + "\r\n\r\n", 431),
        "fields_150": ("GET /metrics HTTP/1.1\r\n" + host + many + "\r\n", 431),
        "nul_in_name": ("GET /healthz HTTP/1.1\r\n" + host + "X-A\x00b: 1\r\n\r\n", 400),
        "no_colon": ("GET /healthz HTTP/1.1\r\n" + host + "NoColonHere\r\n\r\n", 400),
        "space_before_colon": ("GET /healthz HTTP/1.1\r\n" + host + "X-A : 1\r\n\r\n", 400),
        "obs_fold": ("GET /healthz HTTP/1.1\r\n" + host + "X-A: 1\r\n  2\r\n\r\n", 400),
        "chunked_bad_size": (post + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 411),
        "te_and_cl": (post + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}", 400),
        "header_100k": ("GET /healthz HTTP/1.1\r\n" + host + "X-Big: " + "a" * 100000 + "\r\n\r\n", 431),
        "http09": ("GET /\r\n\r\n", 400),
        "http2_preface": ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        "binary": (bytes(range(256)).decode("latin-1") * 4, 400),
        "tls_client_hello": (bytes.fromhex("16030100a5010000a10303").decode("latin-1") + "\x00" * 150, 400),
        "cookies_3000": ("GET /healthz HTTP/1.1\r\n" + host + "Cookie: " + "a;" * 3000 + "\r\n\r\n", 431),
    }
    # On a kept-alive connection libmicrohttpd parses the request itself:
    # the agent checks the fields it hands over (JSON), the rest it answers
    # in its own words (docs/security.md), then closes.
    second = {
        "nul_in_target": "json:400", "empty_args_600": "json:400", "target_5k": "json:414",
        "cl_1tb": "json:413", "fields_150": "json:431", "chunked_bad_size": "json:411",
        "te_and_cl": "json:400", "space_before_colon": "json:400",
        "nul_in_name": "status:400", "no_colon": "status:400", "obs_fold": "any",
        "cl_2_64": "status:413", "header_40k": "status:431", "header_100k": "status:431",
        "http09": "status:400", "http2_preface": "status:505", "binary": "status:400",
        "tls_client_hello": "held", "cookies_3000": "status:431",
    }
    cases = []
    for name, (payload, status) in bad.items():
        data = payload.encode("latin-1")
        cases.append((name, None, data, f"json:{status}"))
        cases.append((name + "/keepalive", good, data, second[name]))
    if auth:
        tok = base64.b64encode(auth.encode()).decode()
        req = f"GET /metrics HTTP/1.1\r\n{host}Authorization: Basic {tok}\r\n\r\n".encode()
        cases.append(("auth_wrong", None, req, "json:401"))
        cases.append(("auth_missing", None, good, "json:401"))
    return cases


def read_response(s, deadline):
    """Reads one response (header block + Content-Length body); b"" on EOF."""
    d = b""
    while b"\r\n\r\n" not in d:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        b = s.recv(65536)
        if not b:
            return d
        d += b
    head, _, body = d.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":", 1)[1])
    while len(body) < n:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        b = s.recv(65536)
        if not b:
            break
        body += b
    return head + b"\r\n\r\n" + body


def read_all(s, deadline):
    d = b""
    while True:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            return d, True
        if not b:
            return d, True
        d += b


def run_case(port, case, timeout):
    """One case; returns (ok, what happened). json: one answer in one header
    block, the JSON ErrorResponse, then the close; status: libmicrohttpd's
    answer (its header block may repeat), then the close; any: an answer or
    the close."""
    name, first, payload, expect = case
    deadline = time.monotonic() + timeout
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        if first:
            s.sendall(first)
            r = read_response(s, deadline)
            if not r.startswith(b"HTTP/1.1 200"):
                return False, "first request: " + r[:40].decode(errors="replace")
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before all of it was sent: the answer may be there
        try:
            if expect == "any":  # one answer, or the close
                return True, read_response(s, deadline)[9:12].decode(errors="replace") or "closed"
            d, closed = read_all(s, deadline)
        except socket.timeout:
            return False, "not closed within %.1f s" % timeout
        except ConnectionResetError:
            return False, "reset before an answer"
    finally:
        s.close()
    kind, _, status = expect.partition(":")
    if kind in ("close", "any", "held"):
        return True, (d[9:12].decode(errors="replace") + " ") * bool(d) + "closed"
    if not d.startswith(f"HTTP/1.1 {status} ".encode()):
        return False, "answer " + (d[:40].decode(errors="replace") or "(none)")
    if kind == "json" and d.count(b"HTTP/1.1 ") != 1:
        return False, "header block repeated"
    if kind == "json" and b'{"error":{"code":' not in d:
        return False, "not the JSON ErrorResponse"
    return True, status


def slowloris(port, stop, stats, lock, held, timeout):
    """Alternates a slowloris header (a byte every 0.25 s until the server
    closes) with the held cases (bytes that never end a line, on a
    kept-alive connection: libmicrohttpd waits for header_timeout)."""
    hdr = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100000
    n = 0
    while not stop.is_set():
        n += 1
        if held and n % 2 == 0:
            c = held[(n // 2) % len(held)]
            try:
                run_case(port, c, timeout)
            except OSError:
                pass
            with lock:
                stats[c[0]] = stats.get(c[0], 0) + 1
                stats["_sent"] += 1
            continue
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            for i in range(len(hdr)):
                if stop.is_set():
                    break
                s.send(hdr[i:i + 1])
                s.settimeout(0.25)
                try:
                    if s.recv(1) == b"":
                        break
                except socket.timeout:
                    pass
            s.close()
            with lock:
                stats["slowloris"] = stats.get("slowloris", 0) + 1
                stats["_sent"] += 1
        except OSError:
            with lock:
                stats["slowloris"] = stats.get("slowloris", 0) + 1
                stats["_sent"] += 1
            time.sleep(0.1)


def half_sent(port):
    """Half a header, then the close."""
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Half: ")
    s.close()
    return True, "closed"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--slow", type=int, default=2)
    ap.add_argument("--every", type=float, default=0, help="progress line every N s (0: none)")
    ap.add_argument("--auth", help="user:password to send (a wrong one: 401 expected)")
    ap.add_argument("--timeout", type=float, default=5, help="per-case bound (s)")
    ap.add_argument("--hold", type=float, default=15,
                    help="bound of the held cases (s): above the server's header_timeout")
    ap.add_argument("--check", action="store_true", help="run each case once first, assert")
    ap.add_argument("--count-file", help="write the number sent here every second")
    a = ap.parse_args()

    cases = corpus(a.port, a.auth)
    cases.append(("half_sent", None, None, "close"))
    held = [c for c in cases if c[3] == "held"]
    cases = [c for c in cases if c[3] != "held"]
    if a.check:
        bad = []
        for c in cases:
            t0 = time.monotonic()
            ok, what = half_sent(a.port) if c[0] == "half_sent" else run_case(a.port, c, a.timeout)
            took = time.monotonic() - t0
            print(f"{c[0]:32s} {c[3]:12s} {what:28s} {took:.3f}s", file=sys.stderr)
            if not ok:
                bad.append(f"{c[0]}: {what}")
        if bad:
            print("FAIL: " + "; ".join(bad), file=sys.stderr)
            sys.exit(1)

    stop = threading.Event()
    lock = threading.Lock()
    stats = {"_sent": 0, "_errors": 0}
    errors = {}
    nxt = [0]

    def worker():
        while not stop.is_set():
            with lock:
                c = cases[nxt[0] % len(cases)]
                nxt[0] += 1
            try:
                if c[0] == "half_sent":
                    ok, what = half_sent(a.port)
                else:
                    ok, what = run_case(a.port, c, a.timeout)
            except OSError as e:
                ok, what = False, type(e).__name__
            with lock:
                stats["_sent"] += 1
                stats[c[0]] = stats.get(c[0], 0) + 1
                if not ok:
                    stats["_errors"] += 1
                    errors[f"{c[0]}: {what}"] = errors.get(f"{c[0]}: {what}", 0) + 1

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(a.workers)]
    threads += [threading.Thread(target=slowloris, args=(a.port, stop, stats, lock, held, a.hold),
                                daemon=True)
                for _ in range(a.slow)]
    t0 = time.monotonic()
    for t in threads:
        t.start()

    def report():
        with lock:
            out = {"elapsed": round(time.monotonic() - t0, 1), "sent": stats["_sent"],
                   "errors": stats["_errors"], "error_kinds": dict(errors)}
        print(json.dumps(out), flush=True)

    last = t0
    while time.monotonic() - t0 < a.duration:
        time.sleep(min(1, max(0.05, a.duration - (time.monotonic() - t0))))
        if a.count_file:
            with open(a.count_file + ".tmp", "w") as f:
                f.write(str(stats["_sent"]))
            import os
            os.replace(a.count_file + ".tmp", a.count_file)
        if a.every and time.monotonic() - last >= a.every:
            last = time.monotonic()
            report()
    stop.set()
    for t in threads:
        t.join(timeout=a.timeout + 3)
    with lock:
        out = {"elapsed": round(time.monotonic() - t0, 1), "sent": stats["_sent"],
               "errors": stats["_errors"], "error_kinds": dict(errors),
               "by_case": {k: v for k, v in stats.items() if not k.startswith("_")}}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
