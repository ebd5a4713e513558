"""OTLP checks shared by the OpenTelemetry tests: OpenTelemetry's own schema
and decoders (npm, pinned by tests/otlp/package-lock.json, installed once
into build/otlp-node), a local OTLP/HTTP receiver built on them, and the
comparison of decoded spans with calltrace's JSON replay of the same file."""
import filecmp
import json
import os
import shutil
import signal
import subprocess
import time

from lib import ROOT, ct, replay_json, tmp, trees

SRC = os.path.join(ROOT, "tests", "otlp")
NODE_DIR = os.path.join(ROOT, "build", "otlp-node")
CHECK = os.path.join(NODE_DIR, "otlp_check.js")


def node_checker():
    """build/otlp-node with the pinned packages (npm ci from the committed
    lockfile when it changed) and otlp_check.js; returns the script."""
    assert shutil.which("node") and shutil.which("npm"), \
        "node and npm are needed for the OpenTelemetry checks: run `make deps`"
    os.makedirs(NODE_DIR, exist_ok=True)
    lock = os.path.join(NODE_DIR, "package-lock.json")
    installed = os.path.join(NODE_DIR, "node_modules", ".calltrace-lock")
    if not (os.path.exists(installed) and filecmp.cmp(installed, os.path.join(SRC, "package-lock.json"), False)):
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(SRC, f), NODE_DIR)
        p = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                           cwd=NODE_DIR, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"npm ci in {NODE_DIR} failed (is the npm registry reachable?): {p.stderr[-1500:]}"
        shutil.copy(lock, installed)
    shutil.copy(os.path.join(SRC, "otlp_check.js"), CHECK)
    return CHECK


def decode_json_lines(path):
    """Each line of PATH decoded by the OTel schema (round-trip checked)."""
    p = subprocess.run(["node", node_checker(), "json", path], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"OpenTelemetry's decoder refused {path}: {p.stderr.strip()[-3000:]}"
    return [json.loads(l) for l in p.stdout.splitlines()]


def attrs(kvs):
    out = {}
    for kv in kvs or []:
        (kind, v), = kv["value"].items()
        assert kv["key"] not in out, f"attribute {kv['key']} twice"
        out[kv["key"]] = int(v) if kind == "intValue" else v
    return out


def spans_of(requests):
    """Flattened spans, each with its resource's attributes under 'resource'."""
    out = []
    for req in requests:
        for rs in req.get("resourceSpans", []):
            res = attrs(rs.get("resource", {}).get("attributes"))
            for ss in rs.get("scopeSpans", []):
                assert ss["scope"]["name"] == "calltrace", ss["scope"]
                for s in ss.get("spans", []):
                    out.append(dict(s, attrs=attrs(s.get("attributes")), resource=res))
    return out


def meta(path):
    """META/STATS keys of a record file, from `calltrace info`."""
    p = ct("info", path)
    assert p.returncode == 0, p.stderr
    kv = {}
    for line in p.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and "." in parts[0]:
            kv[parts[0]] = parts[1].strip()
    return kv


def check_spans_equal_replay(path, spans, *flags, with_values=True):
    """Every call of `replay --format=json FLAGS PATH` is exactly one span:
    same name, thread, goroutine, start, duration, parent link and trace
    (one per root call), status; and there is no other span."""
    m = meta(path)
    realtime = int(m["clock.realtime_ns"])
    calls = replay_json(path, *flags)
    forest = trees(calls)
    assert len(spans) == sum(1 for c in calls if "func" in c), \
        f"{len(spans)} spans for {sum(1 for c in calls if 'func' in c)} calls ({flags})"
    by_key = {}
    for s in spans:
        assert len(s["spanId"]) == 16 and len(s["traceId"]) == 32, s
        assert s["kind"] == 1, s
        a = s["attrs"]
        goid = a.get("calltrace.goroutine.id")
        k = (s["resource"]["process.pid"], a["thread.id"] if goid is None else None, goid,
             int(s["startTimeUnixNano"]) - realtime, s["name"])
        by_key.setdefault(k, []).append(s)
    ids = set()
    end_ns = int(m["clock.end_ns"]) - int(m["clock.start_ns"]) if "clock.end_ns" in m else None
    for roots in forest.values():
        for root in roots:
            trace_ids = set()
            stack = [(root, None)]
            while stack:
                node, parent = stack.pop()
                c = node.call
                k = (c["pid"], c["tid"] if c["goid"] is None else None, c["goid"], c["ts"], c["func"])
                if c.get("stack") == "system":
                    k = (c["pid"], None, c["goid"], c["ts"], c["func"])
                # calls that take no time once the tracer's is taken out
                # can share a start: theirs are the spans of this parent
                # not taken yet, interchangeable but for their values
                cands = [s for s in by_key.get(k, []) if s["spanId"] not in ids and
                         s.get("parentSpanId") == (parent["spanId"] if parent else None)]
                if len(cands) > 1 and c["status"] == "returned":
                    # their durations first (exact: computed as replay's), then values
                    cands = [s for s in cands if int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"]) == c["dur"]
                             and s["attrs"].get("calltrace.dur_below_ns") == c.get("dur_below")] or cands
                if len(cands) > 1 and with_values and c.get("args"):
                    # the spans whose values agree best (overloads share a
                    # name: app::down(int n), app::down(double n))
                    def agree(s):
                        n = 0
                        for v in c["args"]:
                            a = s["attrs"].get("calltrace.arg." + v["name"])
                            if isinstance(v["value"], int) and not isinstance(v["value"], bool):
                                n += a == str(v["value"])
                            elif v["value"] is None:  # unavailable: never a number
                                n += a is None or not a.lstrip("-").isdigit()
                        names = {"calltrace.arg." + v["name"] for v in c["args"]}
                        return n - sum(1 for k in s["attrs"] if k.startswith("calltrace.arg.") and k not in names)
                    best = max(map(agree, cands))
                    cands = [s for s in cands if agree(s) == best]
                assert cands, f"no span for call {c} ({flags})"
                s = cands[0]
                where = f"{c['func']} at {c['ts']} ({flags})"
                assert s["name"] == c["func"] and s["attrs"]["code.function.name"] == c["func"], where
                assert s["attrs"]["thread.id"] == c["tid"], where
                assert s["attrs"].get("calltrace.goroutine.id") == c["goid"], where
                dur = int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])
                if c["status"] == "returned":
                    assert dur == c["dur"], f"{where}: span lasts {dur} ns, replay says {c['dur']}"
                    assert "status" not in s and "calltrace.status" not in s["attrs"], where
                elif c["status"] == "unwound":
                    assert s["status"]["code"] == 2 and "unwound" in s["status"]["message"], where
                    assert s["attrs"]["calltrace.status"] == "unwound", where
                elif c["status"] == "lost":  # its end was among events lost while recording
                    assert "status" not in s and s["attrs"]["calltrace.status"] == "lost", where
                elif c["status"] == "unobserved":  # from a call site without an exit probe yet
                    assert "status" not in s and s["attrs"]["calltrace.status"] == "unobserved", where
                elif c["status"] == "exited":
                    # ended with its process, before the trace did
                    assert "status" not in s and s["attrs"]["calltrace.status"] == "exited", where
                    assert end_ns is None or int(s["endTimeUnixNano"]) - realtime <= end_ns, where
                else:
                    assert "status" not in s and s["attrs"]["calltrace.status"] == "unfinished", where
                    if end_ns is not None:
                        assert int(s["endTimeUnixNano"]) - realtime == max(end_ns, c["ts"]), where
                assert bool(s["attrs"].get("calltrace.tail_call")) == bool(c.get("tail")), where
                # too short to tell from none: the same bound as replay's
                assert s["attrs"].get("calltrace.dur_below_ns") == c.get("dur_below"), (
                    f"{where}: dur_below_ns {s['attrs'].get('calltrace.dur_below_ns')}, replay {c.get('dur_below')}")
                if parent is None:
                    assert "parentSpanId" not in s, f"{where}: a root with a parent"
                else:
                    assert s.get("parentSpanId") == parent["spanId"], f"{where}: wrong parent"
                if with_values:
                    for v in c.get("args") or []:
                        if isinstance(v["value"], int) and not isinstance(v["value"], bool) and \
                                v["name"] not in ("", "_"):
                            key = "calltrace.arg." + v["name"]
                            assert s["attrs"].get(key) == str(v["value"]), f"{where}: {key}={s['attrs'].get(key)}"
                else:
                    assert not any(k.startswith("calltrace.arg") or k.startswith("calltrace.result")
                                   for k in s["attrs"]), where
                assert s["spanId"] not in ids, f"{where}: span id used twice"
                ids.add(s["spanId"])
                trace_ids.add(s["traceId"])
                stack.extend((kid, s) for kid in node.children)
            assert len(trace_ids) == 1, f"root {root.func}: spans in {len(trace_ids)} traces"
    roots = [s for s in spans if "parentSpanId" not in s]
    assert len({s["traceId"] for s in roots}) == len(roots), "two root calls share a trace"
    return calls


class Receiver:
    """A local OTLP/HTTP receiver (otlp_check.js receive): every request is
    decoded by OpenTelemetry's schema and logged."""

    def __init__(self, name, *opts):
        self.dir = tmp(name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.proc = subprocess.Popen(["node", node_checker(), "receive", self.dir, *opts],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port_file = os.path.join(self.dir, "port")
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            assert self.proc.poll() is None, f"receiver died: {self.proc.stderr.read()}"
            assert time.time() < deadline, "receiver did not start"
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read())
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self):
        path = os.path.join(self.dir, "requests.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(l) for l in f]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
