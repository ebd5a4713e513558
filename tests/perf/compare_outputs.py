#!/usr/bin/env python3
"""Byte-compares what two calltrace binaries print for the same record
files: every reader output (replay text/merged/JSON/YAML with filters,
report, dump --chrome/--folded/--otlp/--events) over the given traces.
A speed-up of a reader must not change one byte.

  tests/perf/compare_outputs.py OLD NEW TRACE... [--big TRACE...]

--big traces get only the streaming commands (their outputs are GBs: hashed
as they stream).  Exits 1 if any output, stderr or exit status differs."""
import hashlib
import subprocess
import sys

OPTS = [
    ["replay"], ["replay", "--merge"], ["replay", "--raw"], ["replay", "--color=always"],
    ["replay", "--merge", "--color=always"], ["replay", "-D", "2"], ["replay", "-t", "1us"],
    ["replay", "--max-calls", "7"], ["replay", "--demangle=full"], ["replay", "--demangle=no"],
    ["replay", "--since", "1ms"], ["replay", "-N", "*.*"],
    ["replay", "--format=json"], ["replay", "--format=json", "--raw"], ["replay", "--format=json", "-D", "3"],
    ["replay", "--format=json", "-t", "1us"], ["replay", "--format=json", "--max-calls", "9"],
    ["replay", "--format=json", "--demangle=no"], ["replay", "--format=yaml"],
    ["replay", "--format=yaml", "-t", "2us"], ["replay", "--format=yaml", "--raw"],
    ["report"], ["report", "-s", "self"], ["report", "--raw"],
    ["dump", "--chrome"], ["dump", "--folded"], ["dump", "--otlp"], ["dump", "--events"],
]
BIG_OPTS = [["replay"], ["replay", "--format=json"], ["replay", "--format=yaml"], ["report"],
            ["replay", "--merge"], ["dump", "--chrome"]]


def run(binary, argv, trace):
    p = subprocess.Popen([binary] + argv + [trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    h = hashlib.sha256()
    for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
        h.update(chunk)
    err = p.stderr.read()
    return h.hexdigest(), err, p.wait()


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    old, new, rest = args[0], args[1], args[2:]
    small, big, cur = [], [], None
    for a in rest:
        if a == "--big":
            cur = big
            continue
        (cur if cur is not None else small).append(a)
    checks = diffs = 0
    for traces, opts in ((small, OPTS), (big, BIG_OPTS)):
        for t in traces:
            for o in opts:
                a, b = run(old, o, t), run(new, o, t)
                checks += 1
                if a != b:
                    diffs += 1
                    print("DIFF: %s %s (exit %d vs %d)" % (" ".join(o), t, a[2], b[2]), flush=True)
    print("%d checks, %d differ" % (checks, diffs))
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
