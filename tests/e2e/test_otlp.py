"""OpenTelemetry export: `dump --otlp` files decoded by OpenTelemetry's own
schema (npm @opentelemetry/otlp-transformer's protobufjs module), every span
checked against calltrace's JSON replay of the same record file: names,
parent links, one trace per root call, goroutines, threads, start times and
durations, statuses, arguments."""
import json
import os
import re
import signal
import socket
import stat
import subprocess
import threading

from lib import CT, ct, fixture, record, recorded, replay_json, tmp
from otlp import Receiver, check_spans_equal_replay, decode_json_lines, meta, spans_of


def scenarios():
    return [
        recorded("goroutines", "go_core", "goroutines", "30"),
        recorded("panic", "go_core", "panic", "3"),           # unwound calls: status ERROR
        recorded("goexit", "go_core", "goexit"),
        recorded("wrapper", "go_core", "wrapper", "5"),       # tail calls
        recorded("go_args", "go_args"),
        recorded("c_threads", "c_core", "threads"),
        recorded("c_longjmp", "c_core", "longjmp"),
        recorded("c_exit", "c_core", "exit", "3", exit_status=3),  # exited calls
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
    assert any(s["attrs"].get("calltrace.status") == "exited" for s in spans), "no exited span"


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


# ---------------------------------------------------------------- OTLP/HTTP

def received_spans(rx):
    reqs = rx.requests()
    assert reqs, "the receiver got no request"
    bad = [r for r in reqs if "error" in r]
    assert not bad, f"OpenTelemetry's decoder refused a request: {bad[0]['error']}"
    assert all(r["url"] == "/v1/traces" and r["method"] == "POST" for r in reqs)
    return spans_of([r["request"] for r in reqs if r["status"] == 200]), reqs


def summary(stderr):
    m = re.search(r"calltrace: otlp: (\d+) spans sent to (\S+) in (\d+) requests(?:; (\d+) spans dropped \((.*)\))?",
                  stderr)
    assert m, f"no otlp summary line in: {stderr!r}"
    return int(m[1]), int(m[3]), int(m[4] or 0), m[5]


def test_record_sends_spans_equal_to_replay():
    with Receiver("rx-record") as rx:
        out = tmp("otlp-rec-goroutines.data")
        p, _ = record([fixture("go_core"), "goroutines", "30"], "--otlp-endpoint", rx.url, out=out)
        assert "goroutines [" in p.stdout, p.stdout
        sent, nreq, dropped, _ = summary(p.stderr)
        spans, reqs = received_spans(rx)
    assert all(r["contentType"] == "application/x-protobuf" for r in reqs)
    assert dropped == 0 and sent == len(spans) and nreq == len(reqs), (sent, nreq, dropped, len(spans))
    check_spans_equal_replay(out, spans)
    # what arrived is what a later dump of the file says, ids included
    dumped = spans_of(decode_json_lines(dump_otlp(out)))
    key = lambda s: s["spanId"]
    assert sorted(dumped, key=key) == sorted(spans, key=key), "record --otlp-endpoint and dump --otlp differ"


def test_record_otlp_json_protocol_and_statuses():
    for prog, args, status in (("go_core", ["panic", "3"], 0), ("c_core", ["exit", "3"], 3)):
        with Receiver("rx-json") as rx:
            out = tmp(f"otlp-rec-{args[0]}.data")
            p, _ = record([fixture(prog), *args], "--otlp-endpoint", rx.url + "/v1/traces",
                          "--otlp-protocol", "http/json", "--service", "checkout", out=out, check=False)
            assert p.returncode == status, p.stderr
            spans, reqs = received_spans(rx)
        assert all(r["contentType"] == "application/json" for r in reqs)
        assert all(s["resource"]["service.name"] == "checkout" for s in spans)
        check_spans_equal_replay(out, spans)


def test_record_sends_in_batches_while_recording():
    """c_core slow 150: 1.5 s of ticks, ~27,000 calls: requests of at most
    512 spans arrive while the program still runs."""
    with Receiver("rx-batches") as rx:
        out = tmp("otlp-rec-slow.data")
        p, _ = record([fixture("c_core"), "slow", "150"], "--otlp-endpoint", rx.url, out=out)
        assert p.stdout.count("tick ") == 150, p.stdout[-200:]
        spans, reqs = received_spans(rx)
    m = meta(out)
    end_unix_ms = (int(m["clock.realtime_ns"]) + int(m["clock.end_ns"]) - int(m["clock.start_ns"])) / 1e6
    assert len(reqs) > 10 and max(len(spans_of([r["request"]])) for r in reqs) <= 512, len(reqs)
    early = [r for r in reqs if r["t"] < end_unix_ms - 300]
    assert len(early) >= 3, f"only {len(early)} of {len(reqs)} requests arrived before the trace ended"
    check_spans_equal_replay(out, spans)


def test_record_retries_after_503():
    with Receiver("rx-503", "--fail", "2", "--status", "503") as rx:
        out = tmp("otlp-rec-503.data")
        p, _ = record([fixture("go_core"), "goroutines", "30"], "--otlp-endpoint", rx.url, out=out)
        sent, _, dropped, _ = summary(p.stderr)
        spans, reqs = received_spans(rx)
    assert [r["status"] for r in reqs[:2]] == [503, 503] and reqs[2]["status"] == 200, [r["status"] for r in reqs]
    assert dropped == 0 and sent == len(spans)
    check_spans_equal_replay(out, spans)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_record_endpoint_down_drops_and_counts():
    """Nothing listens: every span is dropped and counted, the program runs
    as usual and the record file is complete."""
    out = tmp("otlp-rec-down.data")
    # (--exit=ret: two events per call, which the count below relies on)
    p, _ = record([fixture("c_core"), "slow", "50"], "--exit=ret", "--otlp-endpoint",
                  f"http://127.0.0.1:{free_port()}", out=out)
    assert p.stdout.count("tick ") == 50 and p.returncode == 0, p.stdout[-200:]
    sent, _, dropped, why = summary(p.stderr)
    calls = [c for c in replay_json(out) if "func" in c]
    assert sent == 0 and dropped == len(calls) > 50 * 170, (sent, dropped, len(calls))
    assert "Connection refused" in why, why
    info = ct("info", out).stdout
    assert re.search(r"^exit: +exited 0$", info, re.M), info
    assert re.search(rf"^events: +{2 * len(calls)} ", info, re.M), (len(calls), info)
    assert "clock.end_ns" in meta(out), "no STATS: the file is not complete"
    p = ct("replay", out)
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr


class SilentCollector:
    """Takes connections and reads what comes, never answers: a hung
    collector, or a port where something else than OTLP listens."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.got = threading.Event()  # a request's first bytes came
        self.conns = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.drain, args=(c,), daemon=True).start()

    def drain(self, c):
        try:
            while c.recv(65536):
                self.got.set()
        except OSError:
            pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def test_record_silent_collector_ends_at_a_signal():
    """record waits for the collector once the program has ended; a collector
    that never answers held it there for 20 s (10 s of grace, then a read's
    10 s timeout) whatever was sent to calltrace meanwhile (Ctrl-C, SIGTERM
    did nothing). A signal ends the wait now: the spans are dropped and
    counted, the exit status is the program's, the record file complete."""
    rx = SilentCollector()
    out = tmp("otlp-rec-silent.data")
    try:
        p = subprocess.Popen([CT, "record", "-o", out, "--otlp-endpoint", rx.url, "--", fixture("c_core"), "fib", "5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert p.stdout.readline() == "fib 5\n"  # the program has ended (a signal now is not passed on)
        assert rx.got.wait(60), "no request came"
        # Ctrl-C until calltrace ends: one that comes before it waits for
        # the collector (while it detaches) does not end that wait
        while p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(0.5)
            except subprocess.TimeoutExpired:
                pass
        err = p.stderr.read()
    finally:
        rx.close()
    assert p.returncode == 0, (p.returncode, err)
    sent, _, dropped, why = summary(err)
    assert sent == 0 and dropped > 0, err
    assert why == f"interrupted while waiting for {rx.url}/v1/traces", why
    assert "clock.end_ns" in meta(out), "no STATS: the file is not complete"


def test_dump_sends_to_endpoint():
    path = recorded("wrapper", "go_core", "wrapper", "5")
    for proto in ("http/protobuf", "http/json"):
        with Receiver("rx-dump") as rx:
            p = ct("dump", "--otlp-endpoint", rx.url, "--otlp-protocol", proto, "-F", "main.*", path)
            assert p.returncode == 0, p.stderr
            spans, _ = received_spans(rx)
        check_spans_equal_replay(path, spans, "-F", "main.*")
    p = ct("dump", "--otlp-endpoint", f"http://127.0.0.1:{free_port()}", path)
    assert p.returncode == 1 and "spans not sent" in p.stderr and "Connection refused" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_otlp_endpoint_bad_urls():
    path = recorded("wrapper", "go_core", "wrapper", "5")
    for url, words in (("https://collector:4318", "no TLS"), ("collector:4318", "http://HOST"),
                       ("http://:4318", "no host"), ("http://h:99999", "bad port"), ("http://[::1", "unclosed")):
        for cmd in (["dump", "--otlp-endpoint", url, path], ["record", "--otlp-endpoint", url, "--", "/bin/true"]):
            p = ct(*cmd)
            assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (cmd, p.stderr)
            assert words in p.stderr, (cmd, p.stderr)
    p = ct("dump", "--otlp-endpoint", "http://127.0.0.1:4318", "-o", tmp("x.jsonl"), path)
    assert p.returncode == 2 and "-o" in p.stderr, p.stderr
    p = ct("record", "--otlp-protocol", "grpc", "--", "/bin/true")
    assert p.returncode == 2 and "http/protobuf" in p.stderr, p.stderr
