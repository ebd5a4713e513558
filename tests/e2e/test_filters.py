"""Replay-time filters: for each one, the exact set of calls shown equals the
same selection computed in Python from the unfiltered JSON of the same file."""
from lib import fixture, record, replay_json, tmp, trees

_cache = {}


def traced():
    if "out" not in _cache:
        _, out = record([fixture("go_core"), "goroutines", "6"], out=tmp("filters.data"))
        _cache["out"] = out
        _cache["calls"] = replay_json(out)
    return _cache["out"], _cache["calls"]


def ident(c):
    return (c["ts"], c["func"], c["goid"], c["tid"])


def subtree_calls(calls, pred):
    """Calls that are in a subtree rooted at a call matching PRED."""
    keep = []
    for roots in trees(calls).values():
        def walk(n, inside):
            inside = inside or pred(n.call)
            if inside:
                keep.append(n.call)
            for ch in n.children:
                walk(ch, inside)
        for r in roots:
            walk(r, False)
    return keep


def shown(out, *flags):
    return replay_json(out, *flags)


def test_filter_only_subtrees():
    out, calls = traced()
    got = shown(out, "-F", "main.work")
    want = subtree_calls(calls, lambda c: c["func"] == "main.work")
    assert sorted(map(ident, got)) == sorted(map(ident, want))
    assert all(c["depth"] == (0 if c["func"] == "main.work" else 1) for c in got)  # renumbered


def test_notrace_hides_subtrees():
    out, calls = traced()
    got = shown(out, "-N", "main.work")
    hidden = {ident(c) for c in subtree_calls(calls, lambda c: c["func"] == "main.work")}
    want = [c for c in calls if ident(c) not in hidden]
    assert sorted(map(ident, got)) == sorted(map(ident, want)) and len(got) < len(calls)


def test_depth():
    out, calls = traced()
    got = shown(out, "-D", "2")
    assert sorted(map(ident, got)) == sorted(ident(c) for c in calls if c["depth"] < 2)


def test_time_filter():
    out, calls = traced()
    durs = sorted(c["dur"] for c in calls if c["dur"] is not None)
    thr = durs[len(durs) // 2]  # the median: about half the calls
    got = shown(out, "-t", f"{thr}ns")
    # a call shorter than the threshold is hidden; its callers are longer
    assert sorted(map(ident, got)) == sorted(ident(c) for c in calls if c["dur"] is None or c["dur"] >= thr)


def test_goroutine_and_tid():
    out, calls = traced()
    goid = next(c["goid"] for c in calls if c["func"] == "main.work")
    got = shown(out, "--goroutine", str(goid))
    assert sorted(map(ident, got)) == sorted(ident(c) for c in calls if c["goid"] == goid)
    tid = calls[0]["tid"]
    got = shown(out, "--tid", str(tid))
    assert sorted(map(ident, got)) == sorted(ident(c) for c in calls if c["tid"] == tid)


def test_since_until():
    out, calls = traced()
    ts = sorted(c["ts"] for c in calls)
    lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    got = shown(out, "--since", f"{lo}ns", "--until", f"{hi}ns")
    assert sorted(map(ident, got)) == sorted(ident(c) for c in calls if lo <= c["ts"] <= hi)


def test_max_calls_and_combination():
    out, calls = traced()
    got = shown(out, "--max-calls", "5")
    assert [ident(c) for c in got] == [ident(c) for c in calls[:5]]
    # combinable: only leaf calls of one goroutine, at most 2
    goid = next(c["goid"] for c in calls if c["func"] == "main.leaf")
    got = shown(out, "-F", "main.leaf", "--goroutine", str(goid), "--max-calls", "2")
    want = [c for c in calls if c["func"] == "main.leaf" and c["goid"] == goid][:2]
    assert [ident(c) for c in got] == [ident(c) for c in want]
