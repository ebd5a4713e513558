"""Goroutine lineage: for each goroutine, the goroutine that ran its `go`
statement and that statement's function, file and line, checked against the
program's own view (its stack trace's "created by" lines), in every output
(text headers, JSON/YAML created_by, Chrome flow arrows, OTLP attributes,
replay --goroutine N --with-children), for goroutines made from nested
calls, by other goroutines (three generations), inside an untraced
function, by goroutines that existed before -p attached, and in real
binaries of Go 1.13 to 1.27."""
import json
import os
import re
import subprocess
import time

from lib import attach_verbose, ct, fixture, record, replay_json, run, tmp, trees

import yaml

G_LINE = re.compile(r"^G (\d+) parent (\d+) by (\S+) at (\S+):(\d+)$")


def program_view(stdout):
    """goid -> (parent goid, func, file, line) as the program printed them."""
    out = {}
    for line in stdout.splitlines():
        m = G_LINE.match(line)
        if m:
            out[int(m[1])] = (int(m[2]), m[3], m[4], int(m[5]))
    return out


def created_by(calls):
    """goid -> the created_by of its depth-0 calls (all equal), from JSON."""
    out = {}
    for c in calls:
        if c.get("depth") == 0 and c.get("goid") is not None and c.get("stack") != "system":
            cb = c.get("created_by")
            assert out.get(c["goid"], cb) == cb, (c, out[c["goid"]])
            out[c["goid"]] = cb
    return out


def as_view(cb):
    return (cb["goid"], cb["func"], cb["file"], cb["line"])


_tree = {}


def tree_record():
    if not _tree:
        p, out = record([fixture("go_lineage"), "tree"], out=tmp("lineage-tree.data"))
        _tree["out"], _tree["view"] = out, program_view(p.stdout)
        assert len(_tree["view"]) == 4, p.stdout
    return _tree["out"], _tree["view"]


def test_three_generations_match_the_program():
    out, view = tree_record()
    calls = replay_json(out)
    cb = created_by(calls)
    for goid, want in view.items():
        assert cb.get(goid) and as_view(cb[goid]) == want, (goid, cb.get(goid), want)
    # the main goroutine: made by the runtime's start, no creator shown
    assert cb[1] is None
    gens = {g: v[0] for g, v in view.items()}
    grandchildren = [g for g, p in gens.items() if p != 1]
    assert len(grandchildren) == 2 and all(gens[gens[g]] == 1 for g in grandchildren), gens
    # YAML carries the same mapping
    p = ct("replay", "--format=yaml", out)
    assert p.returncode == 0, p.stderr
    ycb = created_by(yaml.safe_load(p.stdout))
    assert ycb == cb


def test_text_headers():
    out, view = tree_record()
    p = ct("replay", out)
    assert p.returncode == 0, p.stderr
    heads = [l for l in p.stdout.splitlines() if l.startswith("# goroutine ")]
    for goid, (parent, fn, file, line) in view.items():
        want = f"# goroutine {goid}, created by {fn} at {os.path.basename(file)}:{line} in goroutine {parent}"
        assert want in heads, (want, heads)
    assert "# goroutine 1" in heads
    # every goroutine block starts with its header
    blocks = p.stdout.split("\n\n")
    for b in blocks:
        if all(l.startswith(('# "< N"', '# "<=N"')) for l in b.strip().splitlines()):
            continue  # the notes after the tree
        first = [l for l in b.splitlines() if not l.startswith(("# DURATION", "# durations "))][0]
        assert first.startswith("# goroutine "), b[:200]
    # merged: the same lines, once per goroutine, before its first call
    p = ct("replay", "--merge", out)
    merged = [l for l in p.stdout.splitlines() if l.startswith("# goroutine ")]
    assert sorted(merged) == sorted(h for h in heads if "created by" in h), merged


def test_created_in_untraced_function():
    p, out = record([fixture("go_lineage"), "hidden"], "-N", "main.hiddenSpawn", out=tmp("lineage-hidden.data"))
    view = program_view(p.stdout)
    assert len(view) == 1, p.stdout
    calls = replay_json(out)
    assert "main.hiddenSpawn" not in {c["func"] for c in calls}
    cb = created_by(calls)
    (goid, want), = view.items()
    assert want[1] == "main.hiddenSpawn" and as_view(cb[goid]) == want, (cb, want)


def test_limits_keep_lineage():
    p, out = record([fixture("go_lineage"), "tree"], "--max-depth", "1", out=tmp("lineage-depth.data"))
    view = program_view(p.stdout)
    cb = created_by(replay_json(out))
    for goid, want in view.items():
        assert as_view(cb[goid]) == want, (goid, cb.get(goid), want)


def test_with_children():
    out, view = tree_record()
    children = [g for g, v in view.items() if v[0] == 1]
    child = children[0]
    grandchild = next(g for g, v in view.items() if v[0] == child)
    only = {c["goid"] for c in replay_json(out, "--goroutine", str(child))}
    assert only == {child}, only
    fam = {c["goid"] for c in replay_json(out, "--goroutine", str(child), "--with-children")}
    assert fam == {child, grandchild}, fam
    # from the main goroutine: everything it made, transitively
    fam = {c["goid"] for c in replay_json(out, "--goroutine", "1", "--with-children")}
    assert fam == {1} | set(view), fam
    p = ct("replay", "--with-children", out)
    assert p.returncode == 2 and "--goroutine" in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_chrome_flow_arrows():
    from test_dump import check_chrome, chrome
    out, view = tree_record()
    doc = chrome(out)
    check_chrome(doc)
    ev = doc["traceEvents"]
    starts = {e["id"]: (i, e) for i, e in enumerate(ev) if e["ph"] == "s"}
    ends = {e["id"]: (i, e) for i, e in enumerate(ev) if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == len(view), (starts, ends)
    first_b = {}
    for i, e in enumerate(ev):
        if e["ph"] == "B":
            first_b.setdefault((e["pid"], e["tid"]), (i, e))
    for fid, (i, f) in ends.items():
        j, s = starts[fid]
        assert (s["cat"], s["name"]) == (f["cat"], f["name"]) and f["bp"] == "e", (s, f)
        # it ends at the goroutine's first slice (its track's event just before)
        bi, b = first_b[(f["pid"], f["tid"])]
        before = [k for k in range(i) if (ev[k].get("pid"), ev[k].get("tid")) == (f["pid"], f["tid"])]
        assert before[-1] == bi and b["ts"] == f["ts"], (b, f)
        parent, fn, file, line = view[f["tid"]]
        # it starts on the creator's track at the creation, bound to the
        # "go" instant just before it
        inst = ev[j - 1]
        assert inst["ph"] == "i" and inst["s"] == "t" and inst["name"] == "go", inst
        assert (inst["tid"], inst["ts"], inst["pid"]) == (s["tid"], s["ts"], s["pid"]) and s["tid"] == parent, (inst, s)
        assert inst["args"] == {"goroutine": f["tid"], "func": fn, "file": file, "line": line}, inst
        assert s["ts"] <= f["ts"]


def test_otlp_attributes():
    out, view = tree_record()
    p = ct("dump", "--otlp", out)
    assert p.returncode == 0, p.stderr
    roots = {}
    for line in p.stdout.splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    a = {x["key"]: x["value"] for x in sp.get("attributes", [])}
                    if "parentSpanId" not in sp and "calltrace.goroutine.parent_id" in a:
                        roots[int(a["calltrace.goroutine.id"]["intValue"])] = a
    assert set(roots) == set(view), roots
    for goid, (parent, fn, file, line) in view.items():
        a = roots[goid]
        assert int(a["calltrace.goroutine.parent_id"]["intValue"]) == parent
        assert a["calltrace.goroutine.created_by"]["stringValue"] == f"{fn} at {file}:{line}"


def test_attach_to_running_goroutines():
    prog = subprocess.Popen([fixture("go_lineage"), "serve", "40"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(prog.stdout.readline().split()[1]) for _ in range(2)]
        out = tmp("lineage-attach.data")
        rec, head = attach_verbose(prog.pid, "-o", out, "--duration", "3s")
        prog.stdin.write("go\n")
        prog.stdin.flush()
        rest, _ = prog.communicate(timeout=60)
        assert prog.returncode == 0 and rest.splitlines()[-1] == "served", rest
        _, err = rec.communicate(timeout=60)
        assert rec.returncode == 0, head + err
    finally:
        if prog.poll() is None:
            prog.kill()
    view = program_view(rest)
    assert len(view) == 80, len(view)
    calls = replay_json(out)
    cb = created_by(calls)
    # the workers existed before the attach: no creator known
    seen_workers = [w for w in workers if w in cb]
    assert seen_workers and all(cb[w] is None for w in seen_workers), (workers, cb)
    # goroutines made while attached (the first may have raced the attach)
    made = [g for g in view if g in cb and cb[g]]
    assert len(made) >= 60, len(made)
    for g in made:
        assert as_view(cb[g]) == view[g] and view[g][0] in workers, (g, cb[g], view[g])


def test_real_binaries_creation_sites():
    """The runtime's own `go bgsweep(c)` in gcenable, in binaries of Go 1.13
    to 1.27 (every pclntab layout: 1.2, 1.16, 1.18, 1.20), and the installed
    Go, whose runtime sources say which line it is."""
    from test_realworld import real_binaries
    cases = [(i, path, args) for i, path, _, args in real_binaries()]
    cases.append(("local", fixture("go_lineage"), ["tree"]))
    for ident, path, args in cases:
        p, out = record([path, *args], "-F", "runtime.bgsweep", out=tmp(ident + "-lineage.data"), check=False)
        assert "runtime.bgsweep" not in p.stderr, (ident, p.stderr)
        calls = [c for c in replay_json(out) if c["func"] == "runtime.bgsweep"]
        assert len(calls) == 1 and calls[0]["depth"] == 0, (ident, calls)
        cb = calls[0].get("created_by")
        assert cb and cb["goid"] == 1 and cb["func"] == "runtime.gcenable", (ident, cb)
        # (-trimpath builds name it "runtime/mgc.go")
        assert cb["file"].endswith("runtime/mgc.go") and 100 < cb["line"] < 400, (ident, cb)
        if ident == "local":
            with open(cb["file"]) as f:
                src = f.read().splitlines()[cb["line"] - 1]
            assert "go bgsweep(" in src, (cb, src)
