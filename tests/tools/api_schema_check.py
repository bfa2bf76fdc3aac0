"""GET /api/v1/schema against the agent (a part of api_contract.py): it
lists exactly the list routes the agent answers, each with its messages, and
columns that are fields of the row message of a kind that fits their type.
`self` is api_contract.py's checker (its protobuf module, client, routes)."""

# the kinds GET /api/v1/schema may give a field of each protobuf type
KINDS = {"time": {"message"}, "message": {"message"}, "string": {"string"},
         "endpoint": {"string"}, "bytes": {"bytes"}, "bool": {"bool"}, "enum": {"enum"},
         "float": {"double", "float"},
         "integer": {"int32", "int64", "uint32", "uint64", "sint32", "sint64",
                     "fixed32", "fixed64", "sfixed32", "sfixed64"}}


def check_schema(self, routes, ROUTES, PB, fail, ok):
    """Fails (fail) on each route the schema gets wrong, ok() once at the end."""
    fd = self.pb2.DESCRIPTOR
    FD = type(fd.message_types_by_name["Health"].fields[0])
    tname = {getattr(FD, k): k[5:].lower() for k in dir(FD) if k.startswith("TYPE_")}
    sch = self.get("/api/v1/schema", "SchemaRouteList")
    if sch is None:
        return
    got = {r["path"]: r for r in sch["data"]}
    if len(got) != len(sch["data"]):
        fail(f"/api/v1/schema lists a route twice: {[r['path'] for r in sch['data']]}")
    want = {"/api/v1/series"}
    for r in routes:
        method, path = r.split(" ", 1)
        st = self.collectors.get(self.route_owner.get(r, ""), {}).get("state", "RUNNING")
        if method != "GET" or r not in ROUTES or (st == "DISABLED" and path not in self.history):
            continue
        if "data" in getattr(self.pb2, ROUTES[r]).DESCRIPTOR.fields_by_name:
            want.add(path)
    if set(got) != want:
        fail(f"/api/v1/schema lists {sorted(set(got) - want)} beyond the list routes served "
             f"and lacks {sorted(want - set(got))}")
    n_cols = 0
    for path, r in sorted(got.items()):
        errs = []
        if self.cl.request("GET", path, accept=PB).status == 404:
            errs.append("the agent does not answer it")
        owner = self.route_owner.get("GET " + path, "")
        if r["collector"] != owner:
            errs.append(f"collector {r['collector']!r}, /api/v1/collectors says {owner!r}")
        if "GET " + path in ROUTES and r["list_message"] != "sysobs.v1." + ROUTES["GET " + path]:
            errs.append(f"list_message {r['list_message']}, not sysobs.v1.{ROUTES['GET ' + path]}")
        ld = fd.message_types_by_name.get(r["list_message"].removeprefix("sysobs.v1."))
        data = ld.fields_by_name.get("data") if ld else None
        row = data.message_type if data else None
        if row is None or row.full_name != r["row_message"]:
            errs.append(f"row_message {r['row_message']}: not the data of {r['list_message']}")
        elif r["history"] != (path in self.history):
            errs.append(f"history {r['history']}, but it is{'' if path in self.history else ' not'} a history route")
        elif not r["columns"]:
            errs.append("no columns")
        for c in r["columns"] if row else []:
            f = row.fields_by_name.get(c["field"])
            n_cols += 1
            if f is None:
                errs.append(f"column {c['field']} is no field of {row.full_name}")
                continue
            t = tname[f.type]
            if c["kind"] == "list":
                ok_kind = f.label == f.LABEL_REPEATED
            elif c["kind"] == "token":
                ok_kind = t in ("uint32", "int32")
            else:
                ok_kind = f.label != f.LABEL_REPEATED and t in KINDS.get(c["kind"], ())
            if not ok_kind:
                errs.append(f"column {c['field']}: kind {c['kind']!r} for a {t} field")
            if c["port_field"] and c["port_field"] not in row.fields_by_name:
                errs.append(f"column {c['field']}: port_field {c['port_field']} is no field")
            nf = row.fields_by_name.get(c.get("name_field")) if c.get("name_field") else None
            if c.get("name_field") and (nf is None or tname[nf.type] != "string"):
                errs.append(f"column {c['field']}: name_field {c['name_field']} is no string field")
        if errs:
            fail(f"/api/v1/schema {path}: " + "; ".join(errs))
    ok(f"/api/v1/schema: {len(got)} list routes, {n_cols} columns, all fields of their rows")

