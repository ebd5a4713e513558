// Decodes what calltrace writes and sends with OpenTelemetry's own OTLP
// schema: the protobufjs module generated from opentelemetry-proto that
// @opentelemetry/otlp-transformer 0.52 ships (build/src/generated/root.js).
// Nothing here parses OTLP by hand.
//
//   node otlp_check.js json FILE          each line of FILE: an OTLP/JSON
//       ExportTraceServiceRequest; prints each decoded request (one JSON per line)
//   node otlp_check.js receive DIR [--fail N] [--status CODE] [--max-seconds S]
//       an OTLP/HTTP receiver on 127.0.0.1 (port written to DIR/port): every
//       POST to /v1/traces is decoded (protobuf or JSON by Content-Type) and
//       appended to DIR/requests.jsonl; the first N requests get CODE (503)
//       instead of 200.  Exits on SIGTERM, or by itself after S seconds (120).
//
// Decoding OTLP/JSON: the OTLP specification maps proto3 JSON with two
// deviations (ids as hex, enums as integers); ids are turned into the
// base64 proto3 JSON wants, the message is decoded with fromObject and
// encoded back with toObject: the result must equal the input exactly, so a
// key the schema does not have, or a value of the wrong type, fails.
"use strict";
const fs = require("fs");
const path = require("path");
const http = require("http");
const util = require("util");

const root = require(path.join(require.resolve("@opentelemetry/otlp-transformer"),
  "..", "generated", "root.js"));
const v1 = root.opentelemetry.proto.collector.trace.v1;
const Request = v1.ExportTraceServiceRequest;
const Response = v1.ExportTraceServiceResponse;

const OBJ = { longs: String, enums: Number, bytes: String };
const ID_KEYS = new Set(["traceId", "spanId", "parentSpanId"]);

function mapIds(o, f) {
  if (Array.isArray(o)) return o.map((x) => mapIds(x, f));
  if (o && typeof o === "object") {
    const r = {};
    for (const [k, v] of Object.entries(o)) r[k] = ID_KEYS.has(k) && typeof v === "string" ? f(v) : mapIds(v, f);
    return r;
  }
  return o;
}

const hexToB64 = (h) => {
  if (!/^([0-9a-f]{2})*$/.test(h)) throw new Error(`id is not lowercase hex: ${JSON.stringify(h)}`);
  return Buffer.from(h, "hex").toString("base64");
};
const b64ToHex = (b) => Buffer.from(b, "base64").toString("hex");

// The first place where A and B differ, as a path.
function firstDiff(a, b, at = "$") {
  if (util.isDeepStrictEqual(a, b)) return null;
  if (a && b && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDiff(a[k], b[k], `${at}.${k}`);
      if (d) return d;
    }
  }
  return `${at}: ${JSON.stringify(a)} became ${JSON.stringify(b)}`.slice(0, 500);
}

function decodeJson(text) {
  const input = JSON.parse(text);
  const msg = Request.fromObject(mapIds(input, hexToB64));
  const err = Request.verify(msg);
  if (err) throw new Error(`not an ExportTraceServiceRequest: ${err}`);
  const back = mapIds(Request.toObject(msg, OBJ), b64ToHex);
  if (!util.isDeepStrictEqual(back, input)) {
    throw new Error("OTLP/JSON does not round-trip through the schema: " + firstDiff(input, back));
  }
  return back;
}

function decodeProto(buf) {
  const msg = Request.decode(buf); // throws on malformed input
  const err = Request.verify(msg);
  if (err) throw new Error(`not an ExportTraceServiceRequest: ${err}`);
  // and it must be the canonical encoding of what it decodes to
  const again = Buffer.from(Request.encode(msg).finish());
  if (!again.equals(buf)) throw new Error("protobuf body is not what the schema encodes for its contents");
  return mapIds(Request.toObject(msg, OBJ), b64ToHex);
}

function cmdJson(file) {
  const lines = fs.readFileSync(file, "utf8").split("\n");
  if (lines.pop() !== "") throw new Error("the last line has no newline");
  const out = [];
  lines.forEach((l, i) => {
    try {
      out.push(JSON.stringify(decodeJson(l)));
    } catch (e) {
      throw new Error(`line ${i + 1}: ${e.message}`);
    }
  });
  process.stdout.write(out.map((l) => l + "\n").join(""));
}

function cmdReceive(dir, args) {
  let fail = 0, status = 503, maxSeconds = 120, seen = 0;
  for (let i = 0; i < args.length; i += 2) {
    if (args[i] === "--fail") fail = +args[i + 1];
    else if (args[i] === "--status") status = +args[i + 1];
    else if (args[i] === "--max-seconds") maxSeconds = +args[i + 1];
    else throw new Error(`unknown option ${args[i]}`);
  }
  const log = fs.openSync(path.join(dir, "requests.jsonl"), "a");
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const ctype = (req.headers["content-type"] || "").split(";")[0].trim();
      const rec = { n: ++seen, t: Date.now(), method: req.method, url: req.url, contentType: ctype, bytes: body.length,
        userAgent: req.headers["user-agent"] || "" };
      let code = 200;
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error(`unexpected ${req.method} ${req.url}`);
        if (ctype === "application/x-protobuf") rec.request = decodeProto(body);
        else if (ctype === "application/json") rec.request = decodeJson(body.toString("utf8"));
        else throw new Error(`unexpected Content-Type ${ctype}`);
        if (seen <= fail) code = status;
      } catch (e) {
        rec.error = e.message;
        code = 400;
      }
      rec.status = code;
      fs.writeSync(log, JSON.stringify(rec) + "\n");
      const payload = ctype === "application/json" ? Buffer.from("{}") : Buffer.from(Response.encode({}).finish());
      res.writeHead(code, { "Content-Type": ctype === "application/json" ? ctype : "application/x-protobuf",
        "Content-Length": payload.length });
      res.end(payload);
    });
  });
  server.listen(0, "127.0.0.1", () => {
    fs.writeFileSync(path.join(dir, "port.tmp"), String(server.address().port));
    fs.renameSync(path.join(dir, "port.tmp"), path.join(dir, "port"));
  });
  const stop = () => server.close(() => process.exit(0));
  process.on("SIGTERM", stop);
  setTimeout(() => process.exit(0), maxSeconds * 1000).unref();
}

const [cmd, arg, ...rest] = process.argv.slice(2);
try {
  if (cmd === "json") cmdJson(arg);
  else if (cmd === "receive") cmdReceive(arg, rest);
  else throw new Error("usage: otlp_check.js json FILE | receive DIR [--fail N] [--status CODE]");
} catch (e) {
  process.stderr.write(`otlp_check: ${e.message}\n`);
  process.exit(1);
}
