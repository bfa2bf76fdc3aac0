#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// Decodes an OTLP ExportLogsServiceRequest (the protobuf body of a POST to
// /v1/logs) with the official OpenTelemetry JavaScript implementation and
// prints its log records as JSON, so that sysobsd's bytes are read by an
// implementation other than the protobuf-c that wrote them.
//
//   node tests/tools/otlp/decode.mjs [FILE|-] > records.json   (stdin without FILE)
//
// The decoder: @opentelemetry/otlp-transformer ships, up to 0.214.0, the
// protobufjs static module it generated from opentelemetry-proto
// (build/src/generated/root.js), with decode() for every OTLP message,
// LogRecord.event_name included. Later versions write the logs encoding by
// hand and carry no decoder, hence the pin (package.json; installed by
// scripts/deps_node.sh with `npm ci`).
//
// Output: a JSON array, one object per log record, one per line:
//   {"resource": {KEY: VALUE, ...}, "scope": {"name", "version"},
//    "time_unix_nano": "N", "observed_time_unix_nano": "N" (decimal strings),
//    "severity_number": N, "severity_text": "...", "event_name": "...",
//    "body": VALUE, "attributes": {KEY: VALUE, ...}}
// VALUE is an AnyValue as OTLP/JSON spells it: {"stringValue": "..."},
// {"intValue": "N"} (a decimal string), {"boolValue": b}, {"doubleValue": x},
// {"bytesValue": base64}, {"arrayValue": [VALUE...]}, {"kvlistValue": {KEY:
// VALUE}}; {} for an empty one. Fields the encoder should never set appear
// only when set (dropped counts, flags, trace_id/span_id in hex, schema
// URLs, scope attributes). A key given twice in one list (OTLP says keys
// are unique) or bytes that do not decode: a message on stderr, exit 1.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js");
const Request = root.opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;

function die(msg) {
  process.stderr.write(`decode.mjs: ${msg}\n`);
  process.exit(1);
}

function anyValue(v) {
  if (v.stringValue !== undefined) return { stringValue: v.stringValue };
  if (v.intValue !== undefined) return { intValue: String(v.intValue) };
  if (v.boolValue !== undefined) return { boolValue: v.boolValue };
  if (v.doubleValue !== undefined) return { doubleValue: v.doubleValue };
  if (v.bytesValue !== undefined) return { bytesValue: v.bytesValue };
  if (v.arrayValue !== undefined) return { arrayValue: (v.arrayValue.values || []).map(anyValue) };
  if (v.kvlistValue !== undefined) return { kvlistValue: keyValues(v.kvlistValue.values, "kvlist") };
  return {};
}

function keyValues(list, where) {
  const out = {};
  for (const kv of list || []) {
    const key = kv.key || "";
    if (Object.prototype.hasOwnProperty.call(out, key)) die(`${where}: key "${key}" twice`);
    out[key] = kv.value ? anyValue(kv.value) : {};
  }
  return out;
}

function hex(b64) {
  return Buffer.from(b64, "base64").toString("hex");
}

const file = process.argv[2];
const bytes = readFileSync(file && file !== "-" ? file : 0);
let req;
try {
  req = Request.decode(bytes);
} catch (e) {
  die(`not an ExportLogsServiceRequest: ${e.message}`);
}
const obj = Request.toObject(req, { longs: String, enums: Number, bytes: String, defaults: false });

const records = [];
for (const rl of obj.resourceLogs || []) {
  const resource = keyValues(rl.resource && rl.resource.attributes, "resource");
  for (const sl of rl.scopeLogs || []) {
    const s = sl.scope || {};
    const scope = { name: s.name || "", version: s.version || "" };
    if (s.attributes) scope.attributes = keyValues(s.attributes, "scope");
    for (const lr of sl.logRecords || []) {
      const r = {
        resource,
        scope,
        time_unix_nano: lr.timeUnixNano || "0",
        observed_time_unix_nano: lr.observedTimeUnixNano || "0",
        severity_number: lr.severityNumber || 0,
        severity_text: lr.severityText || "",
        event_name: lr.eventName || "",
        body: lr.body ? anyValue(lr.body) : null,
        attributes: keyValues(lr.attributes, `record ${records.length} attributes`),
      };
      if (lr.droppedAttributesCount) r.dropped_attributes_count = lr.droppedAttributesCount;
      if (lr.flags) r.flags = lr.flags;
      if (lr.traceId) r.trace_id = hex(lr.traceId);
      if (lr.spanId) r.span_id = hex(lr.spanId);
      if (rl.schemaUrl) r.resource_schema_url = rl.schemaUrl;
      if (sl.schemaUrl) r.scope_schema_url = sl.schemaUrl;
      if (rl.resource && rl.resource.droppedAttributesCount)
        r.resource_dropped_attributes_count = rl.resource.droppedAttributesCount;
      records.push(r);
    }
  }
}
process.stdout.write(`[${records.map((r) => JSON.stringify(r)).join(",\n")}]\n`);
