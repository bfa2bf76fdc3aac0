#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
The HTTP API contract of a running sysobsd (DESIGN.md, "The API contract"),
checked from outside with an independent decoder: Google's protobuf runtime
(Debian python3-protobuf) and the Python module protoc generates from
api/proto/sysobs.proto. Run by tests/integration/api_contract.sh:

  api_contract.py --url http://127.0.0.1:PORT --pb-dir DIR [options]

For every route /api/v1/collectors lists, plus /api/v1/events,
/api/v1/collectors, /api/v1/schema and /healthz:
  - the answer as JSON and as protobuf (Accept: application/x-protobuf) is the
    same message: the protobuf is parsed as the route's message (ROUTES
    below; ErrorResponse for a 4xx/5xx), turned into a dict with
    json_format.MessageToDict(preserving_proto_field_name=True,
    including_default_value_fields=True), and that dict must equal our JSON:
    the same keys (absent optional fields absent, every other field present),
    the same values and JSON types (64-bit integers as strings, enums by
    name), Timestamps the same instant and written as RFC 3339 UTC with 9
    fractional digits;
  - no JSON null and no number above 2^53 anywhere, no NaN token;
  - Accept: text/html is a 406 with a JSON error; q-values pick the encoding;
  - errors (limit=0, an unknown parameter, since=) decode as ErrorResponse
    in protobuf too;
  - every filter of every history route: a bad value is a 400 that lists the
    allowed values (enum filters, each of which is then accepted, in any
    case) or states the range (numbers, text length; both ends probed), or
    says what an address is; a value taken from a row finds that row;
  - paging: next_cursor is a decimal string with more rows, "" on the last page;
  - /api/v1/schema lists exactly the list routes the agent answers, and each
    column it names is a field of the route's row message of a fitting kind
    (api_schema_check.py).
Prints PASS/FAIL lines; exit 1 if anything failed.
"""
import argparse
import http.client
import json
import re
import sys
import time
import urllib.parse

import api_schema_check

PB = "application/x-protobuf"
JS = "application/json"
WINDOW = ("start", "end", "limit", "cursor")
STATES = {"DISABLED", "UNAVAILABLE", "RUNNING", "FAILED"}
RFC3339_NS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
DECIMAL = re.compile(r"^[1-9][0-9]*$")

# Route -> the message it answers (api/proto/sysobs.proto). A route that
# /api/v1/collectors lists and this table lacks is a failure: add it here.
ROUTES = {
    "GET /healthz": "Health",
    "GET /readyz": "Readiness",
    "GET /api/v1/collectors": "CollectorList",
    "GET /api/v1/export": "ExportList",
    "GET /api/v1/events": "EventList",
    "GET /api/v1/self/samples": "SelfSampleList",
    "GET /api/v1/drops/samples": "DropSampleList",
    "GET /api/v1/mptcp/events": "MptcpEventList",
    "GET /api/v1/mptcp/connections": "MptcpConnectionList",
    "GET /api/v1/mptcp/subflows": "MptcpSubflowSampleList",
    "GET /api/v1/ifs/scans": "IfsScanList",
    "GET /api/v1/ifs/cores": "IfsCoreList",
    "POST /api/v1/ifs/scans": "IfsScanReply",
    "GET /api/v1/cachefiles/slow": "CachefilesSlowRequestList",
    "GET /api/v1/cachefiles/daemon": "CachefilesDaemonEventList",
    "GET /api/v1/schema": "SchemaRouteList",
}

# The filters of each history route, as the contract names them.
FILTERS = {
    "/api/v1/self/samples": set(),
    "/api/v1/drops/samples": {"reason", "ifindex", "ifname", "netns", "protocol", "addr", "port",
                              "cgroup_id", "container", "netns_cookie", "pod", "pod_namespace",
                              "pod_uid"},
    "/api/v1/mptcp/events": {"netns", "type", "token", "addr", "port", "pod", "pod_namespace",
                             "pod_uid"},
    "/api/v1/mptcp/subflows": {"netns", "token", "loc_id", "addr", "port", "pod",
                               "pod_namespace", "pod_uid"},
    "/api/v1/ifs/scans": {"test", "cpu", "core", "package", "result", "requested_by", "scan_id"},
    "/api/v1/cachefiles/slow": {"op", "volume"},
    "/api/v1/cachefiles/daemon": {"event"},
}
# A parameter that filters on other fields than its own name.
PARAM_FIELDS = {"result": ("status",), "addr": ("saddr", "daddr"), "port": ("sport", "dport")}
# Text parameters that match a prefix of the field (the metric label's short id).
PREFIX_PARAMS = {"container"}

FAILS = []
N_CHECKED = {"pairs": 0, "requests": 0}


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg, flush=True)


def ok(msg):
    print("PASS: " + msg, flush=True)


class Resp:
    def __init__(self, status, ctype, body):
        self.status, self.ctype, self.body = status, ctype, body


class Client:
    """One keep-alive connection (a new one when the server closed it)."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.c = None

    def request(self, method, path, accept=JS, body=None, ctype=None):
        headers = {}
        if accept is not None:
            headers["Accept"] = accept
        if ctype:
            headers["Content-Type"] = ctype
        for attempt in range(3):
            if self.c is None:
                self.c = http.client.HTTPConnection(self.host, self.port, timeout=10)
            try:
                self.c.request(method, path, body=body, headers=headers)
                r = self.c.getresponse()
                data = r.read()
                N_CHECKED["requests"] += 1
                if r.getheader("Connection", "").lower() == "close":
                    self.c.close()
                    self.c = None
                return Resp(r.status, r.getheader("Content-Type") or "", data)
            except (ConnectionError, http.client.HTTPException) as e:
                self.c.close()
                self.c = None
                if attempt == 2:
                    raise RuntimeError(f"{method} {path}: {e}") from e
                time.sleep(0.1)


def strict_json(body, what):
    def no_constant(name):
        raise ValueError(f"non-JSON token {name}")

    try:
        return json.loads(body.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError) as e:
        fail(f"{what}: not JSON ({e}): {body[:200]!r}")
        return None


def walk_json(v, where, errs):
    """No null, no number a double cannot hold exactly (|n| > 2^53)."""
    if v is None:
        errs.append(f"{where}: null")
    elif isinstance(v, bool) or isinstance(v, str):
        pass
    elif isinstance(v, (int, float)):
        if abs(v) > 2**53:
            errs.append(f"{where}: number {v} above 2^53 (64-bit values must be strings)")
    elif isinstance(v, dict):
        for k, x in v.items():
            walk_json(x, f"{where}.{k}", errs)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk_json(x, f"{where}[{i}]", errs)


class Contract:
    def __init__(self, args, pb2, json_format, timestamp_cls):
        self.a = args
        self.pb2 = pb2
        self.jf = json_format
        self.Timestamp = timestamp_cls
        self.cl = Client(args.url)
        # The Event oneof: member name -> row message name.
        ev = pb2.Event.DESCRIPTOR
        self.event_members = {f.name: f.message_type.name for f in ev.oneofs_by_name["row"].fields}
        self.row_types = set(self.event_members.values())

    # ---- comparison of our JSON with the decoder's dict ----

    def instant(self, s):
        t = self.Timestamp()
        t.FromJsonString(s)
        return (t.seconds, t.nanos)

    def same_msg(self, desc, exp, got, where, errs):
        if desc.full_name == "google.protobuf.Timestamp":
            if not isinstance(got, str) or not RFC3339_NS.match(got):
                errs.append(f"{where}: {got!r} is not RFC 3339 UTC with 9 fractional digits")
            elif self.instant(exp) != self.instant(got):
                errs.append(f"{where}: {got} is not the instant {exp}")
            return
        if not isinstance(got, dict):
            errs.append(f"{where}: expected an object ({desc.name}), got {got!r}")
            return
        for k in sorted(exp.keys() - got.keys()):
            errs.append(f"{where}.{k}: missing (protobuf has {exp[k]!r})")
        for k in sorted(got.keys() - exp.keys()):
            errs.append(f"{where}.{k}: present in JSON ({got[k]!r}) but not set in protobuf")
        for k in sorted(exp.keys() & got.keys()):
            f = desc.fields_by_name.get(k)
            w = f"{where}.{k}"
            if f is None:
                errs.append(f"{w}: no such field in {desc.full_name}")
            elif f.message_type is not None and f.message_type.GetOptions().map_entry:
                vf = f.message_type.fields_by_name["value"]
                e, g = exp[k], got[k]
                if not isinstance(g, dict) or e.keys() != g.keys():
                    errs.append(f"{w}: map {g!r} != {e!r}")
                    continue
                for mk in e:
                    self.same_value(vf, e[mk], g[mk], f"{w}[{mk!r}]", errs)
            elif f.label == f.LABEL_REPEATED:
                e, g = exp[k], got[k]
                if not isinstance(g, list) or len(g) != len(e):
                    errs.append(f"{w}: {len(e)} items in protobuf, JSON has {g!r:.200}")
                    continue
                for i, (x, y) in enumerate(zip(e, g)):
                    self.same_value(f, x, y, f"{w}[{i}]", errs)
            else:
                self.same_value(f, exp[k], got[k], w, errs)

    def same_value(self, f, e, g, where, errs):
        if f.message_type is not None:
            self.same_msg(f.message_type, e, g, where, errs)
        elif isinstance(e, bool):
            if g is not e:
                errs.append(f"{where}: {g!r}, protobuf {e!r}")
        elif isinstance(e, str):
            # strings, bytes, enum names, 64-bit integers, NaN/Infinity
            if not isinstance(g, str) or g != e:
                errs.append(f"{where}: {g!r}, protobuf {e!r}"
                            + (" (64-bit integers are JSON strings)"
                               if f.cpp_type in (f.CPPTYPE_INT64, f.CPPTYPE_UINT64) else ""))
        elif isinstance(e, (int, float)):
            if isinstance(g, bool) or not isinstance(g, (int, float)) or g != e:
                errs.append(f"{where}: {g!r}, protobuf {e!r}")
        else:
            errs.append(f"{where}: unexpected decoded value {e!r}")

    def decode(self, name, body):
        m = getattr(self.pb2, name)()
        m.ParseFromString(body)
        return m, self.jf.MessageToDict(m, preserving_proto_field_name=True,
                                        including_default_value_fields=True)

    # ---- one request in both encodings ----

    def pair(self, method, path, msg, body=None, ctype=None, tries=20, quiet=False):
        """Fetches path as protobuf, JSON, protobuf, and compares the JSON
        with the protobuf answers: a live route (collectors, cores,
        connections) may change between two requests, so the JSON must equal
        one of the two around it, in one of up to `tries` rounds. History
        routes are asked with a fixed end: their answers do not move.
        Returns (status, our JSON, decoded protobuf message) or None."""
        last = []
        for _ in range(tries):
            p1 = self.cl.request(method, path, accept=PB, body=body, ctype=ctype)
            j = self.cl.request(method, path, accept=JS, body=body, ctype=ctype)
            p2 = self.cl.request(method, path, accept=PB, body=body, ctype=ctype)
            js = strict_json(j.body, f"{method} {path}")
            if js is None:
                return None
            name = msg if j.status < 400 else "ErrorResponse"
            base = []
            if not j.ctype.startswith(JS):
                base.append(f"JSON Content-Type {j.ctype!r}")
            walk_json(js, "$", base)
            if name == "ErrorResponse":
                e = js.get("error") if isinstance(js, dict) else None
                if not (isinstance(e, dict) and e.get("code") and e.get("message")):
                    base.append(f"error without code and message: {js}")
            for p in ([p1] if p1.body == p2.body else [p1, p2]):
                errs = list(base)
                if j.status != p.status:
                    errs.append(f"status {j.status} as JSON, {p.status} as protobuf")
                if p.ctype != PB:
                    errs.append(f"protobuf Content-Type {p.ctype!r} (body {p.body[:120]!r})")
                try:
                    m, d = self.decode(name, p.body)
                except Exception as e:  # DecodeError and friends
                    errs.append(f"protobuf body is not a {name}: {e}")
                    m = d = None
                if d is not None:
                    self.same_msg(m.DESCRIPTOR, d, js, "$", errs)
                if not errs:
                    N_CHECKED["pairs"] += 1
                    return j.status, js, m
                last = errs
            if base:
                break  # not a matter of timing
            time.sleep(0.05)
        if not quiet:
            fail(f"{method} {path}: JSON vs protobuf ({name}): " + "; ".join(last[:8])
                 + (f" (+{len(last) - 8} more)" if len(last) > 8 else ""))
        return None

    def get(self, path, msg, want=200):
        r = self.pair("GET", path, msg)
        if r is None:
            return None
        if want is not None and r[0] != want:
            fail(f"GET {path}: status {r[0]}, expected {want}: {json.dumps(r[1])[:300]}")
            return None
        return r[1]

    def error(self, path, want=400, method="GET", body=None, ctype=None):
        """A request that must fail with want: its JSON error message."""
        r = self.pair(method, path, "ErrorResponse", body=body, ctype=ctype)
        if r is None:
            return ""
        if r[0] != want:
            fail(f"{method} {path}: status {r[0]}, expected {want}")
            return ""
        if r[2].error.code != r[1]["error"]["code"]:
            fail(f"{method} {path}: protobuf error code {r[2].error.code!r}")
        return r[1]["error"]["message"]

    # ---- the checks ----

    def run(self):
        a = self.a
        self.end = a.end
        cols = self.get("/api/v1/collectors", "CollectorList")
        if not cols:
            fail("no /api/v1/collectors")
            return
        self.collectors = {c["name"]: c for c in cols["data"]}
        self.check_collectors(cols)
        routes = {"GET /healthz", "GET /readyz", "GET /api/v1/collectors", "GET /api/v1/export",
                  "GET /api/v1/events", "GET /api/v1/schema"}
        self.route_owner = {}
        for c in cols["data"]:
            for r in c["routes"]:
                routes.add(r)
                self.route_owner[r] = c["name"]
        for r in sorted(routes - ROUTES.keys()):
            fail(f"route {r} listed by /api/v1/collectors has no message in api_contract.py ROUTES")
        self.history = sorted(r.split(" ", 1)[1] for r in routes if r in ROUTES
                              and r.startswith("GET ") and self.is_history(ROUTES[r]))
        ok(f"{len(routes)} routes: " + ", ".join(sorted(routes)))

        health = self.get("/healthz", "Health")
        if health is not None and health != {"status": "ok"}:
            fail(f"/healthz: {health}, expected {{\"status\": \"ok\"}} (no reason when healthy)")

        for r in sorted(routes):
            method, path = r.split(" ", 1)
            st = self.collectors.get(self.route_owner.get(r, ""), {}).get("state", "RUNNING")
            if r not in ROUTES:
                continue
            if st == "DISABLED" and path not in self.history:
                print(f"note: {r} not checked: its collector is disabled")
                continue
            if method == "GET":
                self.check_negotiation(path)
            if path in self.history and method == "GET":
                self.check_history(path)
            elif method == "GET" and path != "/api/v1/events":
                self.get(path, ROUTES[r], want=200 if st == "RUNNING" else 503)
                if path not in ("/healthz", "/api/v1/collectors"):
                    self.check_custom_params(path)
            elif method == "POST":
                self.check_post(path, ROUTES[r])
        self.check_events()
        self.check_drops()
        self.check_schema(routes)
        # errors outside any route's handler, still in the negotiated encoding
        self.error("/api/v1/nope", want=404)
        self.error("/api/v1/events", want=405, method="DELETE")
        ok(f"every route's JSON equals its protobuf decoded by python-protobuf "
           f"({N_CHECKED['pairs']} JSON/protobuf pairs, {N_CHECKED['requests']} requests)")

    def check_custom_params(self, path):
        """A collector's own GET route: unknown parameters and bad values of
        its own are 400s in both encodings."""
        m = self.error(self.q(path, zz_bogus=1))
        allowed = re.search(r"\(allowed: ([^)]*)\)", m)
        if not allowed:
            fail(f"{path}?zz_bogus=1: message does not list the parameters: {m!r}")
            return
        params = [p.strip() for p in allowed.group(1).split(",") if p.strip() != "none"]
        for p in params:
            for v in ("zz-bogus", "", "0"):
                if v == "0" and p != "limit":
                    continue
                if p not in self.error(self.q(path, **{p: v})):
                    fail(f"{path}?{p}={v}: message does not name {p}")
        ok(f"{path}: unknown parameters and bad {', '.join(params) or '(no parameters)'} "
           "are 400s in both encodings")

    def is_history(self, msg):
        d = getattr(self.pb2, msg).DESCRIPTOR
        f = d.fields_by_name.get("data")
        return f is not None and f.message_type is not None and f.message_type.name in self.row_types

    def check_collectors(self, cols):
        errs = []
        for c in cols["data"]:
            n = c.get("name")
            if c.get("state") not in STATES:
                errs.append(f"{n}: state {c.get('state')!r} not one of {sorted(STATES)}")
            if c.get("state") != "RUNNING" and not c.get("reason"):
                errs.append(f"{n}: {c.get('state')} without a reason")
            if not isinstance(c.get("errors"), str) or not re.match(r"^\d+$", c["errors"]):
                errs.append(f"{n}: errors {c.get('errors')!r} is not a decimal string")
            for r in c.get("routes", []):
                if not re.match(r"^(GET|POST|PUT|DELETE) /api/v1/\S+$", r):
                    errs.append(f"{n}: route {r!r} is not 'METHOD /api/v1/...'")
        for want in self.a.running:
            st = next((c["state"] for c in cols["data"] if c["name"] == want), None)
            if st != "RUNNING":
                errs.append(f"{want}: state {st}, expected RUNNING")
        if cols.get("next_cursor") != "":
            errs.append(f"next_cursor {cols.get('next_cursor')!r}, expected \"\"")
        for e in errs:
            fail("/api/v1/collectors: " + e)
        if not errs:
            ok("/api/v1/collectors: " + ", ".join(f"{c['name']} {c['state']}" for c in cols["data"]))

    def check_negotiation(self, path):
        r = self.cl.request("GET", path, accept="text/html")
        js = strict_json(r.body, f"{path} with Accept: text/html")
        errs = []
        walk_json(js, "$", errs)
        if errs or r.status != 406 or not r.ctype.startswith(JS) or not isinstance(js, dict) or \
                not isinstance(js.get("error"), dict) or not js["error"].get("message"):
            fail(f"GET {path} with Accept: text/html: {r.status} {r.ctype} {r.body[:200]!r}, "
                 "expected 406 with a JSON error")
        for accept, want in (("application/json;q=0.1, application/x-protobuf", PB),
                             ("application/x-protobuf;q=0.5, application/json", JS),
                             ("*/*", JS), ("application/*", JS), (None, JS),
                             ("text/html, application/x-protobuf;q=0.2", PB)):
            r = self.cl.request("GET", path, accept=accept)
            if not r.ctype.startswith(want):
                fail(f"GET {path} with Accept: {accept}: Content-Type {r.ctype!r}, expected {want}")

    def q(self, path, **params):
        return path + "?" + urllib.parse.urlencode(params, safe=":,")

    def check_history(self, path):
        msg = ROUTES["GET " + path]
        row_desc = getattr(self.pb2, msg).DESCRIPTOR.fields_by_name["data"].message_type
        full = self.get(self.q(path, end=self.end, limit=1000), msg)
        if full is None:
            return
        rows = full["data"]
        if path in self.a.expect_rows and not rows:
            fail(f"{path}: no rows, the test made some")
        if len(rows) < 1000 and full["next_cursor"] != "":
            fail(f"{path}: next_cursor {full['next_cursor']!r} on the last page, expected \"\"")
        ids = [int(r["id"]) for r in rows]
        if ids != sorted(ids, reverse=True) or len(set(ids)) != len(ids):
            fail(f"{path}: ids not strictly newest first: {ids[:10]}")
        for r in rows:
            if not DECIMAL.match(r["id"]):
                fail(f"{path}: id {r['id']!r} not a decimal string")
                break
        # paging
        if len(rows) >= 3:
            p1 = self.get(self.q(path, end=self.end, limit=2), msg)
            if p1 is not None:
                cur = p1["next_cursor"]
                if not DECIMAL.match(cur):
                    fail(f"{path}?limit=2: next_cursor {cur!r}, expected the decimal id of the last row")
                else:
                    p2 = self.get(self.q(path, end=self.end, limit=2, cursor=cur), msg)
                    if p2 is not None and [r["id"] for r in p1["data"] + p2["data"]] != \
                            [r["id"] for r in rows[:4]]:
                        fail(f"{path}: pages of 2 are not the first rows of one page of 1000")
        # parameters: the window, the filters the contract names, nothing else
        m = self.error(self.q(path, zz_bogus=1))
        allowed = re.search(r"\(allowed: ([^)]*)\)", m)
        if not allowed or "zz_bogus" not in m:
            fail(f"{path}?zz_bogus=1: message does not name it and list the parameters: {m!r}")
            return
        params = [p.strip() for p in allowed.group(1).split(",")]
        want = FILTERS.get(path)
        if want is None:
            fail(f"{path}: api_contract.py FILTERS does not know this history route")
            want = set(params) - set(WINDOW)
        if set(params) != want | set(WINDOW):
            fail(f"{path}: parameters {sorted(params)}, the contract says "
                 f"{sorted(want | set(WINDOW))}")
        for bad, what in (("limit=0", "limit"), ("limit=1001", "limit"), ("cursor=abc", "cursor"),
                          ("start=yesterday", "start"), ("end=12x", "end"),
                          ("since=-1h", "since"), ("until=now", "until")):
            msg400 = self.error(f"{path}?{bad}")
            if what not in msg400:
                fail(f"{path}?{bad}: message does not name {what}: {msg400!r}")
            if what in ("since", "until") and "start" not in msg400:
                fail(f"{path}?{bad}: message does not point at start/end: {msg400!r}")
        for p in sorted(set(params) - set(WINDOW)):
            self.check_filter(path, msg, row_desc, p, rows)
        ok(f"{path}: {len(rows)} rows, both encodings, paging, filters "
           f"{', '.join(sorted(set(params) - set(WINDOW))) or '(none)'}")

    def rows_of(self, path, msg, **params):
        r = self.get(self.q(path, end=self.end, limit=1000, **params), msg)
        return None if r is None else r["data"]

    def check_filter(self, path, msg, row_desc, p, rows):
        fields = PARAM_FIELDS.get(p, (p,))
        st, js = self.json_get(self.q(path, **{p: "zz-bogus"}))
        if st == 400:
            m = js["error"]["message"]
            self.error(self.q(path, **{p: "zz-bogus"}))  # the same 400 in protobuf
            if "allowed:" in m:
                self.check_enum(path, msg, p, fields, m)
            elif re.search(r"from -?\d+ to -?\d+", m):
                self.check_range(path, msg, p, fields, m, rows)
            elif "IPv4 or IPv6" in m:
                self.check_addr(path, msg, p, fields, rows)
            elif "a token as printed" in m:
                self.check_token(path, msg, p, fields, m, rows)
            else:
                fail(f"{path}?{p}=zz-bogus: 400 neither lists allowed values nor a range: {m!r}")
        elif st == 200:
            self.check_text(path, msg, p, fields, rows)
        else:
            fail(f"{path}?{p}=zz-bogus: status {st}")

    def json_get(self, path):
        r = self.cl.request("GET", path, accept=JS)
        js = strict_json(r.body, path)
        errs = []
        walk_json(js, "$", errs)
        for e in errs[:3]:
            fail(f"GET {path}: {e}")
        return r.status, js

    def value_finds_row(self, path, msg, p, fields, value, rows_expected):
        got = self.rows_of(path, msg, **{p: value})
        if got is None:
            return
        if rows_expected and not got:
            fail(f"{path}?{p}={value}: no row, though a row has that value")
        bad = [r for r in got if not any(str(r.get(f)).lower() == str(value).lower() for f in fields)]
        if bad:
            fail(f"{path}?{p}={value}: {len(bad)} rows without {'/'.join(fields)} = {value}: "
                 f"{json.dumps(bad[0])[:200]}")

    def check_enum(self, path, msg, p, fields, m):
        listed = [v.strip() for v in m.split("allowed:", 1)[1].split(",")]
        listed = [v for v in listed if v]
        if not listed:
            fail(f"{path}?{p}: empty list of allowed values: {m!r}")
            return
        refused = []
        for v in listed:
            for spelling in (v, v.swapcase()):
                st, js = self.json_get(self.q(path, limit=1000, end=self.end, **{p: spelling}))
                if st != 200:
                    refused.append(spelling)
                    continue
                bad = [r for r in js["data"] if not any(r.get(f) == v for f in fields)]
                if bad:
                    fail(f"{path}?{p}={spelling}: row with {'/'.join(fields)} != {v}: "
                         f"{json.dumps(bad[0])[:200]}")
        if refused:
            fail(f"{path}?{p}: values the 400 lists as allowed are refused: {refused[:5]} "
                 f"(message {len(m)} bytes, ends {m[-60:]!r})")
        want = self.a.enum_values.get(f"{path}?{p}", [])
        missing = [v for v in want if v not in listed]
        if missing:
            fail(f"{path}?{p}: the 400 lists {len(listed)} values, not {len(missing)} of the "
                 f"kernel's ({', '.join(missing[:5])}, ...); message {len(m)} bytes, ends "
                 f"{m[-40:]!r}")
        ok(f"{path}?{p}: bad value -> 400 listing {len(listed)} values, each accepted in any case")

    def check_range(self, path, msg, p, fields, m, rows):
        lo, hi = (int(x) for x in re.search(r"from (-?\d+) to (-?\d+)", m).groups())
        for v in (lo, hi):
            st, _ = self.json_get(self.q(path, **{p: str(v)}))
            if st != 200:
                fail(f"{path}?{p}={v}: status {st}, but the range is {lo}..{hi}")
        for v in (str(lo - 1), str(hi + 1), "1.5", "12abc", "", "+1", " 1"):
            mm = self.error(self.q(path, **{p: v}))
            if f"from {lo} to {hi}" not in mm:
                fail(f"{path}?{p}={v!r}: 400 message does not state the range: {mm!r}")
        vals = [r[f] for r in rows for f in fields if f in r]
        if vals:
            self.value_finds_row(path, msg, p, fields, str(vals[0]), True)
        ok(f"{path}?{p}: range {lo}..{hi} stated and enforced at both ends")

    def check_token(self, path, msg, p, fields, m, rows):
        """A 32-bit token (MPTCP): each printed form finds the same rows, all
        with that token; the 400 names the forms (docs/mptcp.md, Tokens)."""
        for v in ("-1", "4294967296", "0x", "0x123456789", "12abc", "d11430", "", "+1", " 1"):
            mm = self.error(self.q(path, **{p: v}))
            if "a token as printed" not in mm:
                fail(f"{path}?{p}={v!r}: 400 message does not name the forms: {mm!r}")
        vals = [r[f] for r in rows for f in fields if f in r]
        if vals:
            t = int(vals[0])
            dec = str(t) if len(str(t)) != 8 else "0" + str(t)  # 8 characters are hex
            ref = self.rows_of(path, msg, **{p: dec})
            if not ref:
                fail(f"{path}?{p}={dec}: no row, though a row has that token")
            if any(r.get(f) != t for r in ref for f in fields):
                fail(f"{path}?{p}={dec}: rows of another token")
            for v in (f"{t:08x}", f"0x{t:x}", f"{t:08X}"):
                if self.rows_of(path, msg, **{p: v}) != ref:
                    fail(f"{path}?{p}={v} does not find what {p}={dec} finds")
        ok(f"{path}?{p}: a token as printed (hex), 0x or decimal finds the same rows; bad forms refused")

    def check_addr(self, path, msg, p, fields, rows):
        for v in ("1.2.3", "::1::2", "localhost", ""):
            mm = self.error(self.q(path, **{p: v}))
            if "IPv4 or IPv6" not in mm:
                fail(f"{path}?{p}={v!r}: 400 message does not say what is expected: {mm!r}")
        vals = [r[f] for r in rows for f in fields if f in r]
        if vals:
            self.value_finds_row(path, msg, p, fields, vals[0], True)
        a = self.rows_of(path, msg, **{p: "::1"})
        b = self.rows_of(path, msg, **{p: "0:0::1"})
        if a is not None and b is not None and a != b:
            fail(f"{path}?{p}=0:0::1 does not find what {p}=::1 finds")
        ok(f"{path}?{p}: malformed addresses refused, addresses normalised")

    def check_text(self, path, msg, p, fields, rows):
        m = self.error(self.q(path, **{p: "x" * 1000}))
        r = re.search(r"1 to (\d+) characters", m)
        if not r:
            fail(f"{path}?{p}=<1000 x>: 400 message does not state the length range: {m!r}")
            return
        n = int(r.group(1))
        st, _ = self.json_get(self.q(path, **{p: "x" * n}))
        if st != 200:
            fail(f"{path}?{p}=<{n} x>: status {st}, the message allows 1 to {n} characters")
        for v in ("x" * (n + 1), ""):
            if f"1 to {n} characters" not in self.error(self.q(path, **{p: v})):
                fail(f"{path}?{p}=<{len(v)} characters>: not the same 400")
        vals = [r[f] for r in rows for f in fields if f in r]
        if vals:
            self.value_finds_row(path, msg, p, fields, vals[0], True)
        if vals and p in PREFIX_PARAMS:
            pre = str(vals[0])[:12]
            got = self.rows_of(path, msg, **{p: pre}) or []
            if not got:
                fail(f"{path}?{p}={pre}: no row, though a row's {p} starts with it")
            bad = [r for r in got if not any(str(r.get(f, "")).startswith(pre) for f in fields)]
            if bad:
                fail(f"{path}?{p}={pre}: {len(bad)} rows whose {p} does not start with it")
        ok(f"{path}?{p}: text of 1 to {n} characters, enforced")

    def check_events(self):
        path = "/api/v1/events"
        ev = self.get(self.q(path, end=self.end, limit=1000), "EventList")
        if ev is None:
            return
        with_tables = sorted({self.route_owner["GET " + h] for h in self.history
                              if "GET " + h in self.route_owner})
        member_of = {}  # collector -> row message names of its history routes
        for h in self.history:
            c = self.route_owner.get("GET " + h)
            if c:
                member_of.setdefault(c, set()).add(
                    getattr(self.pb2, ROUTES["GET " + h]).DESCRIPTOR.fields_by_name["data"]
                    .message_type.name)
        errs = []
        for it in ev["data"]:
            members = [k for k in it if k in self.event_members]
            if set(it) - set(members) != {"id", "time", "collector", "table"} or len(members) != 1:
                errs.append(f"item keys {sorted(it)}")
                continue
            row = it[members[0]]
            if row.get("id") != it["id"] or self.instant(row["time"]) != self.instant(it["time"]):
                errs.append(f"id/time of item {it['id']} differ from its row")
            if self.event_members[members[0]] not in member_of.get(it["collector"], set()):
                errs.append(f"item {it['id']}: collector {it['collector']} with a {members[0]}")
        for e in errs[:5]:
            fail(f"{path}: {e}")
        if not ev["data"]:
            fail(f"{path}: no events")
        for c in with_tables:
            sub = self.get(self.q(path, collector=c, end=self.end, limit=1000), "EventList")
            if sub is None:
                continue
            if any(it["collector"] != c for it in sub["data"]):
                fail(f"{path}?collector={c}: items of other collectors")
            h = [x for x in self.history if self.route_owner.get("GET " + x) == c]
            table_rows = {}
            for x in h:
                for r in self.rows_of(x, ROUTES["GET " + x]) or []:
                    table_rows[r["id"]] = r
            n_rows = len(table_rows)
            for it in sub["data"]:
                row = next(v for k, v in it.items() if k in self.event_members)
                if row["id"] in table_rows and table_rows[row["id"]] != row:
                    fail(f"{path}?collector={c}: row {row['id']} differs from its history route's")
                    break
            if len(sub["data"]) != min(n_rows, 1000):
                fail(f"{path}?collector={c}: {len(sub['data'])} items, its tables have {n_rows} rows")
            if c in self.a.expect_events and not sub["data"]:
                fail(f"{path}?collector={c}: no events, the test made some")
        m = self.error(self.q(path, collector="nosuch"))
        for c in with_tables:
            if c not in m:
                fail(f"{path}?collector=nosuch: message does not list {c}: {m!r}")
        for bad in ("limit=0", "since=-1h", "zz_bogus=1"):
            self.error(f"{path}?{bad}")
        ok(f"{path}: {len(ev['data'])} items, one row each, equal to the history routes' rows, "
           f"?collector= for {', '.join(with_tables)}")

    def check_drops(self):
        a = self.a
        if not a.drops_netns:
            return
        path, msg = "/api/v1/drops/samples", "DropSampleList"
        canon = self.rows_of(path, msg, reason="NO_SOCKET", protocol="udp", netns=a.drops_netns)
        odd = self.rows_of(path, msg, reason="no_socket", protocol="UDP", netns=a.drops_netns)
        if canon is None or odd is None:
            return
        ports = {r.get("sport") for r in odd}
        if not set(a.drops_ports) <= ports:
            fail(f"{path}?reason=no_socket&protocol=UDP&netns={a.drops_netns}: source ports "
                 f"{sorted(p for p in ports if p is not None)}, expected {a.drops_ports} among them")
        if [r["id"] for r in odd] != [r["id"] for r in canon]:
            fail(f"{path}: reason=no_socket&protocol=UDP finds other rows than NO_SOCKET/udp")
        for r in odd:
            if r.get("reason") != "NO_SOCKET" or r.get("protocol") != "udp" or \
                    r.get("netns") != a.drops_netns:
                fail(f"{path}: row {r['id']} does not match the filter: {r}")
                break
            absent = [k for k in ("icmp_type", "icmp_code", "tcp_flags") if k in r]
            if absent or r.get("dport") != 9:
                fail(f"{path}: UDP row {r['id']}: {absent} present (NULL must be absent), dport "
                     f"{r.get('dport')}")
                break
        tcp = self.rows_of(path, msg, protocol="TCP", port="81", netns=a.drops_netns)
        if a.drops_tcp and (not tcp or tcp[0].get("tcp_flags") != 2 or "sport" not in tcp[0]):
            fail(f"{path}?protocol=TCP&port=81: expected SYN rows with tcp_flags 2: {tcp[:1]}")
        ok(f"{path}: reason=no_socket&protocol=UDP finds the test's {len(odd)} UDP drops "
           f"(ports {sorted(a.drops_ports)}), absent NULLs")

    def check_schema(self, routes):
        api_schema_check.check_schema(self, routes, ROUTES, PB, fail, ok)

    def check_post(self, path, msg):
        owner = self.collectors.get(self.route_owner.get("POST " + path, ""), {})
        if owner.get("state") != "RUNNING":
            self.error(path, want=503, method="POST", body=b"{}", ctype=JS)
            ok(f"POST {path}: 503 ErrorResponse in both encodings ({owner.get('name')} "
               f"{owner.get('state')})")
            return
        if not self.a.ifs_post:
            self.error(path, want=403, method="POST", body=b'{"cpus":[0]}', ctype=JS)
            return
        # bad bodies: the same 400 in both encodings
        self.error(path, method="POST", body=b'{"cpus":"x"}', ctype=JS)
        self.error(path, method="POST", body=b'{"cpus":[0],"bogus":1}', ctype=JS)
        self.error(path, method="POST", body=b"\xff\xff", ctype=PB)
        self.error(path, want=415, method="POST", body=b"cpus=0", ctype="text/plain")
        # one scan asked for in JSON, one in protobuf: the replies agree but
        # for the scan ids
        rj = self.cl.request("POST", path, accept=JS, ctype=JS,
                             body=b'{"cpus":[0],"tests":["scan"]}')
        req = self.pb2.IfsScanRequest(cpus=[0], tests=["scan"])
        rp = self.cl.request("POST", path, accept=PB, ctype=PB, body=req.SerializeToString())
        if rj.status != 202 or rp.status != 202 or rp.ctype != PB:
            fail(f"POST {path}: {rj.status} {rj.body[:200]!r} / {rp.status} {rp.ctype}, "
                 "expected 202 in both encodings")
            return
        js = strict_json(rj.body, f"POST {path}")
        m, d = self.decode(msg, rp.body)
        errs = []
        walk_json(js, "$", errs)
        ids = []
        for s in js.get("scans", []):
            ids.append(s.get("scan_id"))
            s["scan_id"] = "ID"
        for s in d.get("scans", []):
            s["scan_id"] = "ID"
        self.same_msg(m.DESCRIPTOR, d, js, "$", errs)
        if not ids or not all(isinstance(i, str) and DECIMAL.match(i) for i in ids):
            errs.append(f"scan ids {ids} are not decimal strings")
        for e in errs:
            fail(f"POST {path}: {e}")
        if errs:
            return
        # the scan lands in the history, found by its (string) scan id
        deadline = time.time() + 15
        found = []
        while time.time() < deadline and not found:
            st, r = self.json_get(self.q(path, scan_id=ids[0]))
            found = r.get("data", []) if st == 200 else []
            time.sleep(0.2)
        if not found or found[0].get("scan_id") != ids[0]:
            fail(f"GET {path}?scan_id={ids[0]}: the queued scan never showed up")
        else:
            self.pair("GET", self.q(path, scan_id=ids[0]), "IfsScanList")
            ok(f"POST {path}: 202 IfsScanReply in JSON and protobuf (bodies in both), scan "
               f"{ids[0]} found by ?scan_id=")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--pb-dir", required=True, help="where protoc --python_out wrote sysobs_pb2.py")
    ap.add_argument("--end", required=True,
                    help="end= of every history query (RFC 3339): rows stay put while compared")
    ap.add_argument("--running", default="", help="collectors that must be RUNNING, comma list")
    ap.add_argument("--expect-rows", default="", help="history routes the test filled, comma list")
    ap.add_argument("--expect-events", default="", help="collectors with events, comma list")
    ap.add_argument("--drops-netns", type=int, default=0, help="netns inode of the test's drops")
    ap.add_argument("--drops-ports", default="", help="UDP source ports of its NO_SOCKET drops")
    ap.add_argument("--drops-tcp", action="store_true", help="it sent SYNs to closed port 81")
    ap.add_argument("--drop-reasons", default="",
                    help="file: the kernel's drop reason names, one a line")
    ap.add_argument("--ifs-post", action="store_true", help="admin is on: POST scans for real")
    a = ap.parse_args()
    split = lambda s: [x for x in s.split(",") if x]
    a.running, a.expect_rows, a.expect_events = split(a.running), split(a.expect_rows), \
        split(a.expect_events)
    a.drops_ports = [int(x) for x in split(a.drops_ports)]
    a.enum_values = {}
    if a.drop_reasons:
        with open(a.drop_reasons) as f:
            a.enum_values["/api/v1/drops/samples?reason"] = [x.strip() for x in f if x.strip()]

    sys.path.insert(0, a.pb_dir)
    import sysobs_pb2  # noqa: E402 (generated by protoc at test time)
    from google.protobuf import json_format  # noqa: E402
    from google.protobuf.timestamp_pb2 import Timestamp  # noqa: E402

    t0 = time.time()
    try:
        Contract(a, sysobs_pb2, json_format, Timestamp).run()
    except RuntimeError as e:
        fail(str(e))
    print(f"api_contract.py: {N_CHECKED['requests']} requests in {time.time() - t0:.1f} s, "
          f"{len(FAILS)} failures", flush=True)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
