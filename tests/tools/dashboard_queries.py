#!/usr/bin/env python3
"""Runs every PromQL expression of a Grafana dashboard against a Prometheus.

    dashboard_queries.py DASHBOARD.json PROM_PORT CACHEFILES_STATE

Prints one tab-separated line per expression (integration.dashboard reads
them): row, panel title, refId, status, number of series, required or
optional, kind, halves, expression. The dashboard's variables ($job,
$instance) become .+ and $__rate_interval 30s, as Grafana would send them
with "All" selected.

kind is "variable" for a variable's query (label_values(M, L) is run as
count by (L) (M)), "quantile" for a quantile panel of the form
"histogram_quantile(... X_bucket ...) or histogram_quantile(... X ...)",
"quantile?" for any other use of histogram_quantile (one storage mode only),
else "other". For a quantile expression, halves is "classic=N,native=M":
the series each half returns alone, so a test can say which storage served
the panel. The cachefiles row is optional unless that collector runs.
"""
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

SUBST = {"$__rate_interval": "30s", "${job}": ".+", "$job": ".+",
         "${instance}": ".+", "$instance": ".+"}


def query(port, expr):
    q = urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{q}",
                                    timeout=10) as r:
            res = json.load(r)
        return res["status"], len(res["data"]["result"])
    except urllib.error.HTTPError as e:
        return "error: " + json.load(e).get("error", str(e)), 0


def substitute(expr):
    for k, v in SUBST.items():
        expr = expr.replace(k, v)
    return " ".join(expr.split())


def quantile_halves(expr):
    """The classic (_bucket) and native halves of a quantile expression."""
    m = re.fullmatch(r"(histogram_quantile\(.*_bucket\{.*) or (histogram_quantile\(.*)", expr)
    return m.groups() if m else None


def main():
    dash, port, cf_state = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
    out = []
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        m = re.fullmatch(r"label_values\((.*), (\w+)\)", v["query"]["query"])
        expr = substitute(f"count by ({m.group(2)}) ({m.group(1)})")
        status, n = query(port, expr)
        out.append(["variables", "$" + v["name"], "-", status, n, "required", "variable", "-", expr])
    row = ""
    for p in dash["panels"]:
        if p["type"] == "row":
            row = p["title"]
            continue
        for t in p.get("targets", []):
            expr = substitute(t["expr"])
            status, n = query(port, expr)
            halves = quantile_halves(expr)
            if halves:
                kind = "quantile"
                served = "classic=%d,native=%d" % tuple(query(port, h)[1] for h in halves)
            else:
                kind = "quantile?" if "histogram_quantile" in expr else "other"
                served = "-"
            optional = row.startswith("cachefiles") and cf_state != "RUNNING"
            out.append([row, p["title"], t["refId"], status, n,
                        "optional" if optional else "required", kind, served, expr])
    for line in out:
        print("\t".join(str(x) for x in line))


if __name__ == "__main__":
    main()
