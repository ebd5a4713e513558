"""Golden outputs: the text tree and the JSON of a few fixture runs, so that
a change of layout is seen as a diff.  Normalised the way uftrace's
runtest.py does: of the text only what follows `|` (no durations, thread or
goroutine ids, nor what the run's timing decides: a call's time off CPU),
of the JSON no times and ids (ts, dur, dur_raw, dur_below, which is there
or not by the run's timing, an unobserved call's dur_max, a time, and
off_cpu); addresses read 0xADDR.

After a deliberate change of the output, rewrite the files with
CT_GOLDEN_UPDATE=1 python3 tests/run.py golden, and review the diff."""
import json
import os
import re

from lib import ct, fixture, record, tmp, without_off_cpu

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
ADDR = re.compile(r"0x[0-9a-f]{5,}")

# name -> the program and its arguments, and record flags
RUNS = {
    "c_fib": (["c_core", "fib", "3"], []),
    "go_fib": (["go_core", "fib", "3"], []),
    "go_values": (["go_args"], ["-F", "main.Str", "-F", "main.Slices", "-F", "main.ByValue", "-F", "main.Nested",
                                "-F", "main.Iface", "-F", "main.Err", "-F", "main.Map", "-F", "main.Multi",
                                "-F", "main.Named", "-F", "main.(*Point).Move"]),
}


def text_of(path):
    p = ct("replay", path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("# DURATION"), lines[0]
    # call lines only, as runtest.py keeps them (block headers are comments)
    return "".join(ADDR.sub("0xADDR", without_off_cpu(line.split("| ", 1)[1])) + "\n"
                   for line in lines[1:] if "| " in line)


def json_of(path):
    p = ct("replay", "--format=json", path)
    assert p.returncode == 0, p.stderr
    out = []
    for line in p.stdout.splitlines():
        call = json.loads(line)
        for k in ("ts", "dur", "dur_raw", "dur_below", "dur_max", "off_cpu", "pid", "tid", "goid"):
            call.pop(k, None)
        out.append(ADDR.sub("0xADDR", json.dumps(call, sort_keys=True)) + "\n")
    return "".join(out)


def check(name, kind, got):
    path = os.path.join(GOLDEN, f"{name}.{kind}")
    if os.environ.get("CT_GOLDEN_UPDATE") == "1":
        with open(path, "w") as f:
            f.write(got)
        return
    with open(path) as f:
        want = f.read()
    if got != want:
        import difflib
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), path, "now"))
        raise AssertionError(f"{name} {kind} differs from {path} (CT_GOLDEN_UPDATE=1 rewrites it):\n{diff[:3000]}")


def golden(name):
    (prog, *args), flags = RUNS[name]
    _, path = record([fixture(prog), *args], *flags, out=tmp(f"golden-{name}.data"))
    check(name, "txt", text_of(path))
    check(name, "json", json_of(path))


def test_c_fib():
    golden("c_fib")


def test_go_fib():
    golden("go_fib")


def test_go_values():
    golden("go_values")
