"""Go programs exec'd under --follow (issue 17): their arguments and results,
interface values' dynamic types and goroutine origins decode as in a
recording of the program alone.  tests/fixtures/go/goexec builds one source
twice: go_exec_a and go_exec_b have their runtime types at the same
addresses, yet main.Payload has its fields the other way round and
main.Level is an int64 in one, a string in the other; each binary's entries
(RTYPES, PCPOS) must be its own.  go_exec_launch is a C parent of go_exec_b."""
import json
import os
import struct

from lib import FORMAT_VERSION, ct, fixture, record, record_chunks, replay_json, tmp, uvar


def calls_of(path, prefix=None):
    """The calls of one program, as comparable values: PREFIX ('BIN:') for
    an exec'd one (stripped), None for the recorded program's own.  Not
    what the program itself varies from run to run: the new goroutine's id,
    whether it returned before the process ended (or exec'd)."""
    out = []
    for c in replay_json(path):
        if "func" not in c:
            continue
        func = c["func"]
        if prefix is None:
            if ":" in func:
                continue
        elif not func.startswith(prefix):
            continue
        else:
            func = func[len(prefix):]
        if c.get("args") or c.get("ret"):
            assert c["status"] == "returned", c
        out.append({"func": func, "depth": c["depth"], "main": c["goid"] == 1, "args": c.get("args"),
                    "ret": c.get("ret"), "created_by": c.get("created_by")})
    return out


def by_func(calls, name):
    return [c for c in calls if c["func"] == name]


def direct(name, *args):
    _, out = record([fixture(name), *args], out=tmp(f"goexec-direct-{name}-{len(args)}.data"))
    return calls_of(out)


def check_child_b(calls):
    """What go_exec_b received and returned (its own output says the same)."""
    assert by_func(calls, "main.Level") == [] and len(by_func(calls, "main.level")) == 1, calls
    assert by_func(calls, "main.level")[0]["ret"][0]["value"] == "three", calls
    wrap = by_func(calls, "main.Wrap")[0]
    assert wrap["args"][0]["value"] == {"N": 41, "Name": "pb"} and wrap["ret"][0]["value"] == {"N": 42, "Name": "pb+"}
    dyn = [c["args"][0]["value"] for c in by_func(calls, "main.Describe")]
    assert [d["type"] for d in dyn] == ["main.Payload", "main.Order", "int64", "string", "main.Level"], dyn
    assert [d["value"] for d in dyn[2:]] == [-9, "str", "three"], dyn
    total = by_func(calls, "main.Total")[0]["args"][0]["value"]
    assert total == {"ID": 7, "Items": {"len": 2, "cap": 2, "items": ["tea", "cake"]}, "Note": "b"}, total
    sums = by_func(calls, "main.Sum")
    assert [s["args"][0]["value"]["items"] for s in sums] == [[1, 2, 3, 40], [5, 6]], sums
    spawned = by_func(calls, "main.main.func1")
    assert len(spawned) == 1 and not spawned[0]["main"] and not sums[1]["main"], (spawned, sums)
    assert spawned[0]["created_by"]["func"] == "main.main", spawned


def test_go_program_exec_d_by_c_decodes_as_alone():
    alone = direct("go_exec_b", "tea")
    check_child_b(alone)
    p, out = record([fixture("go_exec_launch")], "--follow", out=tmp("goexec-launch.data"))
    assert "Greet tea!tea!" in p.stdout, p.stdout
    followed = calls_of(out, "go_exec_b:")
    assert followed == alone
    # the C parent: main only (no arguments of its own worth comparing)
    assert [c["func"] for c in calls_of(out)] == ["main"], calls_of(out)
    text = ct("replay", out).stdout
    assert 'go_exec_b:main.Describe(v=main.Level("three")) = "main.Level";' in text, text
    assert 'go_exec_b:main.Wrap(p={N:41 Name:"pb"}) = {N:42 Name:"pb+"};' in text, text


def rtypes_by_object(path):
    """{(first_site, nsites): {runtime address: type id}} from the file's
    RTYPES chunks (docs/FORMAT.md, version 8 on)."""
    raw = open(path, "rb").read()
    assert struct.unpack_from("<I", raw, 8)[0] == FORMAT_VERSION
    objs = {}
    for typ, p in record_chunks(path):
        if typ == 8:
            first, i = uvar(p, 0)
            nsites, i = uvar(p, i)
            k, i = uvar(p, i)
            for _ in range(k):
                addr, i = uvar(p, i)
                tid, i = uvar(p, i)
                objs.setdefault((first, nsites), {})[addr] = tid
    return objs


def test_go_program_exec_d_by_another_go_build():
    alone_a = direct("go_exec_a", "exec", fixture("go_exec_b"))  # its exec'd child is not traced
    alone_b = direct("go_exec_b", "coffee")
    check_child_b(alone_b)
    p, out = record([fixture("go_exec_a"), "exec", fixture("go_exec_b")], "--follow",
                    out=tmp("goexec-go-go.data"))
    assert "Greet coffee!coffee!" in p.stdout, p.stdout
    assert calls_of(out) == alone_a
    assert calls_of(out, "go_exec_b:") == alone_b
    level = [c["args"][0]["value"] for c in by_func(alone_a, "main.Describe")][-1]
    assert level == {"type": "main.Level", "value": 3}, level
    # The two builds name types at the same runtime addresses, each its own:
    # one table for the file would have decoded one program's Level as the
    # other's.
    objs = rtypes_by_object(out)
    assert len(objs) == 2, objs
    (a_range, a), (b_range, b) = sorted(objs.items())
    assert a_range[0] == 0 and b_range[0] == a_range[1], objs
    shared = set(a) & set(b)
    assert shared and all(a[k] != b[k] for k in shared), objs


def test_newer_format_refused_in_one_line():
    _, out = record([fixture("go_exec_launch")], "--follow", out=tmp("goexec-newer.data"))
    raw = bytearray(open(out, "rb").read())
    assert struct.unpack_from("<I", raw, 8)[0] == FORMAT_VERSION
    struct.pack_into("<I", raw, 8, FORMAT_VERSION + 1)
    newer = tmp("goexec-newer.data")
    with open(newer, "wb") as f:
        f.write(raw)
    for cmd in ("replay", "info", "report"):
        p = ct(cmd, newer)
        lines = p.stderr.strip().splitlines()
        assert p.returncode != 0 and len(lines) == 1, (cmd, p.returncode, p.stderr)
        assert "format version %d, newer than this calltrace (%d): upgrade calltrace" % (
            FORMAT_VERSION + 1, FORMAT_VERSION) in lines[0], lines


def test_exec_d_program_goroutines_are_blocks_of_their_own():
    """The program a process exec'd numbers its goroutines anew: its
    goroutine 1 (and 18) are other goroutines than the launcher's of the
    same ids, each under a heading of its own with its own creator."""
    _, out = record([fixture("go_exec_a"), "exec", fixture("go_exec_b")], "--follow",
                    out=tmp("goexec-blocks.data"))
    blocks, cur = [], None
    for line in ct("replay", out).stdout.splitlines():
        if line.startswith("# goroutine"):
            cur = (line, [])
            blocks.append(cur)
        elif cur and "|" in line:
            func = line.split("|", 1)[1].strip().lstrip("}").strip()
            if func and not func.startswith("/*"):
                cur[1].append(func)
    programs = [{f.startswith("go_exec_b:") for f in funcs} for _, funcs in blocks]
    assert all(len(p) == 1 for p in programs), blocks
    headings = [(h.split(",")[0], p.pop()) for (h, _), p in zip(blocks, programs)]
    assert headings.count(("# goroutine 1", False)) == 1 and headings.count(("# goroutine 1", True)) == 1, headings
    # Perfetto: a track each, and each program's arrow from its own main
    # goroutine to the goroutine it made (its id varies from run to run)
    trace = json.loads(ct("dump", "--chrome", out).stdout)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    tracks = {}
    for e in events:
        if e.get("name") == "thread_name":
            tracks.setdefault(e["args"]["name"], set()).add(e["tid"])
    assert len(tracks["goroutine 1"]) == 2, tracks
    starts = {e["id"]: e["tid"] for e in events if e.get("ph") == "s"}
    ends = {e["id"]: e["tid"] for e in events if e.get("ph") == "f"}
    arrows = sorted((starts[i], ends[i]) for i in ends)
    assert len(arrows) == 2 and {a for a, _ in arrows} == tracks["goroutine 1"], (arrows, tracks)
    made = {b for _, b in arrows}
    assert len(made) == 2 and not made & tracks["goroutine 1"], (arrows, tracks)
