#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Decodes remote-write request bodies (snappy block, WriteRequest) into one
JSON line each: {"file", "metadata": [{"name", "type", "help", "unit"}],
"series": [{"labels": {...}, "samples": [[ts, value], ...]}]}.

  rw_decode.py PYOUT_DIR BODY...

PYOUT_DIR holds the Python modules protoc made from the project's own
exporters/proto/prometheus/{types,remote}.proto (protoc --python_out), so the
decoding follows the same schema the agent encodes with. The snappy block
format is decoded here by hand: Debian's python3 has no snappy module, and
the format is a varint length then literal and copy elements."""
import json
import sys


def snappy_block_decompress(b):
    n, shift, i = 0, 0, 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            break
    out = bytearray()
    while i < len(b):
        tag = b[i]
        i += 1
        kind = tag & 3
        if kind == 0:  # literal
            ln = tag >> 2
            if ln >= 60:
                nb = ln - 59
                ln = int.from_bytes(b[i:i + nb], "little")
                i += nb
            ln += 1
            out += b[i:i + ln]
            i += ln
            continue
        if kind == 1:
            ln = ((tag >> 2) & 7) + 4
            off = ((tag >> 5) << 8) | b[i]
            i += 1
        elif kind == 2:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i:i + 2], "little")
            i += 2
        else:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i:i + 4], "little")
            i += 4
        for _ in range(ln):  # copies may overlap their own output
            out.append(out[-off])
    if len(out) != n:
        raise ValueError("snappy: %d bytes, header says %d" % (len(out), n))
    return bytes(out)


sys.path.insert(0, sys.argv[1])
from exporters.proto.prometheus import remote_pb2, types_pb2  # noqa: E402

for path in sys.argv[2:]:
    wr = remote_pb2.WriteRequest()
    wr.ParseFromString(snappy_block_decompress(open(path, "rb").read()))
    print(json.dumps({
        "file": path,
        "metadata": [{"name": m.metric_family_name,
                      "type": types_pb2.MetricMetadata.MetricType.Name(m.type),
                      "help": m.help, "unit": m.unit} for m in wr.metadata],
        "series": [{"labels": {l.name: l.value for l in ts.labels},
                    "samples": [[s.timestamp, s.value] for s in ts.samples]}
                   for ts in wr.timeseries],
    }))
