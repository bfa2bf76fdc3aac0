#!/usr/bin/env python3
"""Send raw HTTP requests and say what came back, one line per case: which
answers are the agent's (its JSON ErrorResponse) and which libmicrohttpd's
own (issue 30).

Reads cases from stdin, one per line: NAME, a tab, the request with Python
escapes (\\r\\n, \\x00). Each case gets a fresh connection; with --second
(the default) the case is the second request of a kept-alive connection,
after a valid GET /healthz has been answered on it; with --first it is the
connection's first request. --tls speaks TLS (no certificate check).

Prints per case: NAME STATUS KIND BLOCKS END, tab-separated:
  STATUS  the answer's status code, or "none"
  KIND    the JSON error code ("json:bad_request"), "json" for another JSON
          body, "html" (libmicrohttpd's own pages), "empty", "other"
  BLOCKS  how many header blocks came (libmicrohttpd sends some twice)
  END     "closed" when the server closed the connection within 1 s of its
          answer, "open" when it kept it (or sent nothing within 3 s)
"""
import argparse
import json
import socket
import ssl
import sys
import time

WAIT = 1.0


def connect(a):
    s = socket.create_connection((a.host, a.port), timeout=5)
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        s = ctx.wrap_socket(s)
    return s


def content_length(head):
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length" and v.strip().isdigit():
            return int(v.strip())
    return 0


def read_answer(s, first_wait, then=WAIT):
    """One answer's header block and body (by Content-Length); then what
    else comes within `then` s. (head, body, extra, closed)"""
    data, closed = b"", False
    s.settimeout(first_wait)
    try:
        while b"\r\n\r\n" not in data:
            b = s.recv(65536)
            if not b:
                return data, b"", b"", True
            data += b
    except (socket.timeout, ssl.SSLError, OSError):
        return data, b"", b"", False
    head, rest = data.split(b"\r\n\r\n", 1)
    length = content_length(head)
    s.settimeout(first_wait)
    try:
        while len(rest) < length:
            b = s.recv(65536)
            if not b:
                closed = True
                break
            rest += b
        if then:
            s.settimeout(then)
        while not closed and then:
            b = s.recv(65536)
            if not b:
                closed = True
            rest += b
    except socket.timeout:
        pass
    except (ssl.SSLError, OSError):
        closed = True
    return head, rest[:length], rest[length:], closed


def kind_of(head, body):
    ct = b""
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-type":
            ct = v.strip().lower()
    if not body:
        return "empty"
    if ct.startswith(b"application/json"):
        try:
            return "json:" + json.loads(body)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            return "json"
    if body.lstrip().lower().startswith(b"<html"):
        return "html"
    return "other"


def run(a, name, req):
    s = connect(a)
    if not a.first:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        read_answer(s, 5, 0)  # the answer to the first request (kept alive)
    try:
        s.sendall(req.encode().decode("unicode_escape").encode("latin-1"))
    except OSError:
        pass  # refused before all of it was sent
    head, body, extra, closed = read_answer(s, 3)
    s.close()
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        return f"{name}\tnone\t-\t0\t{'closed' if closed else 'open'}"
    # libmicrohttpd 0.9.75 sends some of its own errors' header block
    # again where the body should be: the body is the last block's
    blocks, rest = 1, body + extra
    while rest.startswith(b"HTTP/1.") and b"\r\n\r\n" in rest:
        blocks += 1
        head2, rest = rest.split(b"\r\n\r\n", 1)
        body = rest[:content_length(head2)]
    return "\t".join([name, parts[1].decode(), kind_of(head, body), str(blocks),
                      "closed" if closed else "open"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tls", action="store_true")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--first", action="store_true")
    g.add_argument("--second", action="store_true")
    a = p.parse_args()
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        name, req = line.split("\t", 1)
        print(run(a, name, req), flush=True)


if __name__ == "__main__":
    main()
