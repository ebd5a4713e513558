"""OpenTelemetry export: `dump --otlp` files decoded by OpenTelemetry's own
schema (npm @opentelemetry/otlp-transformer's protobufjs module), every span
checked against calltrace's JSON replay of the same record file: names,
parent links, one trace per root call, goroutines, threads, start times and
durations, statuses, arguments."""
import json
import os
import socket
import stat

from lib import ct, recorded, tmp
from otlp import check_spans_equal_replay, decode_json_lines, meta, spans_of


def scenarios():
    return [
        recorded("goroutines", "go_core", "goroutines", "30"),
        recorded("panic", "go_core", "panic", "3"),           # unwound calls: status ERROR
        recorded("goexit", "go_core", "goexit"),
        recorded("wrapper", "go_core", "wrapper", "5"),       # tail calls
        recorded("go_args", "go_args"),
        recorded("c_threads", "c_core", "threads"),
        recorded("c_longjmp", "c_core", "longjmp"),
        recorded("c_exit", "c_core", "exit", "3", exit_status=3),  # unfinished calls
    ]


def dump_otlp(path, *flags, out=None):
    out = out or tmp(os.path.basename(path) + ".otlp.jsonl")
    p = ct("dump", "--otlp", "-o", out, *flags, path)
    assert p.returncode == 0, f"dump --otlp failed: {p.stderr.strip()}"
    return out


def test_dump_otlp_spans_equal_replay():
    for path in scenarios():
        spans = spans_of(decode_json_lines(dump_otlp(path)))
        check_spans_equal_replay(path, spans)


def test_dump_otlp_statuses_present():
    spans = spans_of(decode_json_lines(dump_otlp(recorded("panic", "go_core", "panic", "3"))))
    assert any(s.get("status", {}).get("code") == 2 for s in spans), "no ERROR span for the panic"
    spans = spans_of(decode_json_lines(dump_otlp(recorded("c_exit", "c_core", "exit", "3", exit_status=3))))
    assert any(s["attrs"].get("calltrace.status") == "unfinished" for s in spans), "no unfinished span"


def test_dump_otlp_with_filters():
    path = recorded("goroutines", "go_core", "goroutines", "30")
    for flags in (["-F", "main.work"], ["-N", "main.leaf"], ["-D", "2"], ["--goroutine", "1"], ["-t", "1us"]):
        spans = spans_of(decode_json_lines(dump_otlp(path, *flags)))
        check_spans_equal_replay(path, spans, *flags)


def test_dump_otlp_ids_are_deterministic_and_batched():
    path = recorded("goroutines", "go_core", "goroutines", "30")
    a, b = dump_otlp(path, out=tmp("det-a.jsonl")), dump_otlp(path, out=tmp("det-b.jsonl"))
    with open(a, "rb") as fa, open(b, "rb") as fb:
        assert fa.read() == fb.read(), "two dumps of one record differ"
    # a filter does not change the ids of the spans it keeps (trace ids follow the shown root)
    full = {s["spanId"]: s for s in spans_of(decode_json_lines(a))}
    part = spans_of(decode_json_lines(dump_otlp(path, "-F", "main.leaf", out=tmp("det-c.jsonl"))))
    assert part and all(s["spanId"] in full and full[s["spanId"]]["name"] == s["name"] for s in part)
    # big traces: one request per line, at most 512 spans each
    big = recorded("fib", "go_core", "fib", "14")
    reqs = decode_json_lines(dump_otlp(big))
    counts = [len(spans_of([r])) for r in reqs]
    assert len(reqs) > 1 and max(counts) == 512 and sum(counts) == len(check_spans_equal_replay(big, spans_of(reqs)))


def test_dump_otlp_resource_and_values():
    path = recorded("go_args", "go_args")
    spans = spans_of(decode_json_lines(dump_otlp(path)))
    m = meta(path)
    res = spans[0]["resource"]
    assert res["service.name"] == "go_args" and res["process.executable.name"] == "go_args", res
    assert res["host.name"] == socket.gethostname() == m["host.name"], res
    assert res["process.executable.path"] == m["target.path"], res
    bid = m["target.build_id"]
    assert res.get("process.executable.build_id.gnu", res.get("process.executable.build_id.go")) == bid, res
    assert res["process.command_line"] == m["record.cmdline"], res
    assert any(k.startswith("calltrace.arg.") for s in spans for k in s["attrs"]), "no argument attributes"
    assert any(k.startswith("calltrace.result") for s in spans for k in s["attrs"]), "no result attributes"
    spans = spans_of(decode_json_lines(dump_otlp(path, "--no-args", "--service", "shop-api")))
    assert all(s["resource"]["service.name"] == "shop-api" for s in spans)
    check_spans_equal_replay(path, spans, with_values=False)


def test_dump_otlp_output_file_and_errors():
    path = recorded("goroutines", "go_core", "goroutines", "30")
    out = dump_otlp(path)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600, "OTLP with argument values must be private"
    p = ct("dump", "--otlp", path)
    assert p.returncode == 0 and p.stdout.endswith("\n") and json.loads(p.stdout.splitlines()[0])["resourceSpans"]
    p = ct("dump", "--chrome", "--service", "x", path)
    assert p.returncode == 2 and "--service" in p.stderr, p.stderr
    p = ct("dump", "--otlp", "--folded", path)
    assert p.returncode == 2 and "exclude" in p.stderr, p.stderr
