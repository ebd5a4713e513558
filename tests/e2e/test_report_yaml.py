"""replay --format=yaml and report, checked against the JSON Lines of the same
record file: YAML read back with a real YAML parser must equal the JSON
Lines exactly (also for strings that are hard to write as YAML, from
tests/fixtures/go/strings), and every report number is recomputed here from
the JSON Lines (counts, sums, self time, min/max exactly; p50/p99 within the
documented 1/256)."""
import codecs
import json
import math
import re
import subprocess

from lib import CT, all_nodes, ct, recorded, replay_json, tmp, trees

try:
    import yaml
except ImportError:  # checked by need_yaml(), so the other tests still run
    yaml = None


def need_yaml():
    assert yaml is not None, "python3 module 'yaml' is missing: run `make deps` (installs python3-yaml)"
    return yaml


# The documented convention of both encoders: bytes that are not well-formed
# UTF-8 stand for the code points U+0000-U+00FF, one per byte.
codecs.register_error("ct_bytes", lambda e: ("".join(chr(b) for b in e.object[e.start:e.end]), e.end))


def as_documented(b):
    return b.decode("utf-8", errors="ct_bytes")


def ct_bytes(*args):
    return subprocess.run([CT, *args], capture_output=True, timeout=120)


def replay_yaml(path, *flags):
    p = ct_bytes("replay", "--format=yaml", *flags, path)
    assert p.returncode == 0, f"replay --format=yaml failed: {p.stderr.decode(errors='replace').strip()}"
    assert p.stdout.startswith(b"%YAML 1.2\n---\n"), p.stdout[:40]
    return need_yaml().safe_load(p.stdout), p.stdout


def replay_json_bytes(path, *flags):
    """JSON Lines read without assuming the bytes are valid UTF-8."""
    p = ct_bytes("replay", "--format=json", *flags, path)
    assert p.returncode == 0, f"replay --format=json failed: {p.stderr.decode(errors='replace').strip()}"
    return [json.loads(as_documented(line)) for line in p.stdout.splitlines()], p.stdout


def scenarios():
    return [
        recorded("goroutines", "go_core", "goroutines", "30"),
        recorded("panic", "go_core", "panic", "3"),           # unwound calls
        recorded("goexit", "go_core", "goexit"),              # unwound by Goexit
        recorded("wrapper", "go_core", "wrapper", "5"),       # Go tail calls
        recorded("fib", "go_core", "fib", "12"),              # recursion
        recorded("go_args", "go_args"),                       # every value category
        recorded("c_threads", "c_core", "threads"),
        recorded("c_tail", "c_core", "tail", "5"),
        recorded("c_longjmp", "c_core", "longjmp"),
        recorded("c_exit", "c_core", "exit", "3", exit_status=3),  # unfinished main
        recorded("c_args", "c_args"),
    ]


# ---------------------------------------------------------------- YAML

def test_yaml_equals_json_lines():
    need_yaml()
    for path in scenarios():
        y, _ = replay_yaml(path)
        j = replay_json(path)
        assert j, path
        assert y == j, f"{path}: YAML differs from JSON Lines: " + next(
            (f"item {i}: {a} != {b}" for i, (a, b) in enumerate(zip(y, j)) if a != b), f"{len(y)} vs {len(j)} items")


def test_yaml_with_filters_equals_json_lines():
    need_yaml()
    path = recorded("goroutines", "go_core", "goroutines", "30")
    for flags in (["-F", "main.work"], ["-N", "main.leaf"], ["-D", "2"], ["--max-calls", "7"]):
        y, _ = replay_yaml(path, *flags)
        assert y == replay_json(path, *flags), flags
    y, raw = replay_yaml(path, "-F", "no.such.function")
    assert y == [] and raw.endswith(b"\n[]\n"), raw


def test_yaml_layout_is_block_mappings():
    _, raw = replay_yaml(recorded("panic", "go_core", "panic", "3"))
    lines = raw.decode().splitlines()[2:]
    assert lines[0].startswith("- ts: "), lines[0]
    for line in lines:
        assert re.match(r"(- |  )[a-z_]+: ", line), f"unexpected line: {line!r}"
    assert "  status: returned" in lines and '  func: "main.main"' in lines, lines[:12]


# The strings main.go passes to Echo, in order (keep in step with
# tests/fixtures/go/strings/main.go).
HARD = [s.encode() if isinstance(s, str) else s for s in [
    "a: b", "- x", "#c", "c #d", '"q"', "'s'", "null", "Null", "~", "true", "no", "y", "123",
    "1.5", "0x1f", "1e3", "-", "*star", "&anchor", "!tag", "%pct", "@at", "`bt`", "|pipe",
    ">gt", "? q", "[x]", "{y: 1}", "a, b", "--- ", "...", "<<", " lead", "trail ", "",
    b"\x00\x01\x1f", b"\x7f", b"\xff\xfe", b"\xc3", "日本語", "😀", "line\nbreak\ttab\r",
    "back\\slash", "\u0085nel", "\u2028ls\u2029ps", "\ufeffbom", "\u0080c1\u009f", "\ufffe",
    b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
]]


def strings_trace():
    return recorded("strings", "go_strings")


def test_yaml_hard_strings_and_names():
    y, raw = replay_yaml(strings_trace())
    by = {}
    for c in y:
        by.setdefault(c["func"], []).append(c)
    echo = by["main.Echo"]
    assert len(echo) == len(HARD), f"{len(echo)} Echo calls, expected {len(HARD)}"
    for c, want in zip(echo, HARD):
        exp = as_documented(want)
        assert c["args"] == [{"name": "s", "type": "string", "value": exp}], (want, c["args"])
        assert c["ret"][0]["value"] == exp, (want, c["ret"])
    (c,) = by["main.Fields"]
    assert c["args"][0]["value"] == {"Key": "key: v", "Value": "null", "名前": "名前\n"}, c["args"]
    # one result, though go1.19's DWARF lists it twice (golang/go#61357)
    assert [r["value"] for r in c["ret"]] == [c["args"][0]["value"]], c["ret"]
    (c,) = by["main.List"]
    assert c["args"][0]["value"]["items"] == ["- a", "#b", "", "true", "\u00ff"], c["args"]
    (c,) = by["main.Floats"]
    items = c["args"][0]["value"]["items"]
    assert items == [1e22, 1e17, 5e-324, 0.1, -2.5, 3], items
    assert all(isinstance(v, float) for v in items[:5]), [type(v) for v in items]
    assert "main.日本語" in by and "main.(*Box).Get" in by, sorted(by)
    assert any(f.startswith("main.Pick[") for f in by), sorted(by)
    # every character YAML does not allow raw (or YAML 1.1 reads as a line
    # break) is escaped in the output, never written as is
    text = raw.decode("utf-8")  # the YAML itself is always valid UTF-8
    for ch in "\x85\u2028\u2029\ufeff\ufffe\x80\x9f\x7f":
        assert ch not in text, f"raw U+{ord(ch):04X} in YAML output"


def test_yaml_hard_strings_equal_json_lines():
    path = strings_trace()
    y, _ = replay_yaml(path)
    j, _ = replay_json_bytes(path)
    assert y == j, next((f"{a} != {b}" for a, b in zip(y, j) if a != b), f"{len(y)} vs {len(j)} items")


def test_json_lines_are_valid_utf8():
    """JSON Lines must be UTF-8 (RFC 8259) for any captured string; ill-formed
    input bytes are written as \\u00XX."""
    _, raw = replay_json_bytes(strings_trace())
    for i, line in enumerate(raw.splitlines()):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise AssertionError(f"JSON line {i} is not UTF-8 ({e.reason} at {line[e.start:e.end + 2]!r}): "
                                 "ct_buf_json_string (src/render/values.c) passes overlong, surrogate and "
                                 "> U+10FFFF sequences through raw") from None


def test_text_tree_is_valid_utf8():
    """The text tree quotes strings as Go does: a byte that is not part of
    well-formed UTF-8 is \\xNN, so the tree is UTF-8 whatever the program's
    strings hold (the strings package's tests pass "\\x80"; it was written
    raw, and a string cut at --max-string mid-character too)."""
    raw = subprocess.run([CT, "replay", strings_trace()], capture_output=True, timeout=60).stdout
    text = raw.decode("utf-8")
    echo = [line.partition("| ")[2].strip() for line in text.split("\n") if "main.Echo(" in line]
    want = {r'main.Echo(s="\xff\xfe") = "\xff\xfe";', r'main.Echo(s="\xc3") = "\xc3";',
            r'main.Echo(s="\xc0\x80") = "\xc0\x80";', 'main.Echo(s="日本語") = "日本語";'}
    assert want <= set(echo), sorted(set(echo) - want)[:12]


# ---------------------------------------------------------------- report

def report_json(path, *flags):
    p = ct("report", "--format=json", *flags, path)
    assert p.returncode == 0, f"report failed: {p.stderr.strip()}"
    assert p.stdout.startswith("[") and p.stdout.endswith("]\n"), p.stdout[:80]
    return json.loads(p.stdout)


def rank(p, n):
    return max(1, (p * n + 99) // 100)


def expected_report(calls):
    """Per function, from JSON Lines calls: what report must say."""
    out = {}
    for node in all_nodes(trees(calls)):
        c = node.call
        e = out.setdefault(c["func"], {"calls": 0, "returned": 0, "unwound": 0, "unfinished": 0, "exited": 0,
                                       "unobserved": 0, "durs": [], "self": 0})
        e["calls"] += 1
        if c["status"] != "returned":
            e[c["status"]] += 1
            assert c["dur"] is None, c
            continue
        e["returned"] += 1
        e["durs"].append(c["dur"])
        kids = sum(k.call["dur"] for k in node.children if k.call["dur"] is not None)
        e["self"] += max(0, c["dur"] - kids)
    return out


def check_report(path, *flags):
    """report --format=json FLAGS against the JSON Lines of replay FLAGS."""
    calls = replay_json(path, *flags)
    exp = expected_report(calls)
    rows = report_json(path, *flags)
    got = {r["func"]: r for r in rows}
    assert len(got) == len(rows), "a function appears twice"
    assert set(got) == set(exp), f"{path} {flags}: functions {sorted(got)} != {sorted(exp)}"
    for f, e in exp.items():
        r = got[f]
        where = f"{path} {flags} {f}"
        for k in ("calls", "returned", "unwound", "unfinished", "exited"):
            assert r[k] == e[k], f"{where}: {k} {r[k]} != {e[k]}"
        durs = sorted(e["durs"])
        if not durs:
            assert all(r[k] is None for k in ("total_ns", "self_ns", "avg_ns", "min_ns", "p50_ns", "p99_ns",
                                              "max_ns")), f"{where}: no call returned, yet {r}"
            continue
        assert r["total_ns"] == sum(durs), f"{where}: total {r['total_ns']} != {sum(durs)}"
        assert r["self_ns"] == e["self"], f"{where}: self {r['self_ns']} != {e['self']}"
        assert r["avg_ns"] == sum(durs) // len(durs), where
        assert (r["min_ns"], r["max_ns"]) == (durs[0], durs[-1]), where
        for p in (50, 99):
            exact = durs[rank(p, len(durs)) - 1]
            got_p = r[f"p{p}_ns"]
            assert abs(got_p - exact) <= exact / 256, f"{where}: p{p} {got_p} vs exact {exact}"
            assert durs[0] <= got_p <= durs[-1], where
    return rows, calls


def test_report_numbers_equal_json_lines():
    for path in scenarios():
        check_report(path)


def test_report_self_time_with_tail_calls_adds_up():
    # tail_caller jumps to tail_target: the callee is its child, both end at
    # the same return, and the self times of a tree add up to the root's total
    for path in (recorded("c_tail", "c_core", "tail", "5"), recorded("wrapper", "go_core", "wrapper", "5")):
        rows, calls = check_report(path)
        assert any(c.get("tail") for c in calls), "no tail call in the trace"
        roots = [r for rs in trees(calls).values() for r in rs]
        assert all(r.call["status"] == "returned" for r in roots)
        assert sum(r["self_ns"] for r in rows) == sum(r.call["dur"] for r in roots), path


def test_report_percentiles_many_calls():
    path = recorded("fib", "go_core", "fib", "12")
    (row,) = [r for r in check_report(path)[0] if r["func"] == "main.fib"]
    assert row["calls"] == 465, row  # fib(12) makes 2*fib(13)-1 calls


def test_report_filters():
    path = recorded("goroutines", "go_core", "goroutines", "30")
    calls = replay_json(path)
    goid = next(c["goid"] for c in calls if c.get("func") == "main.goroutines.func1")
    for flags in (["-F", "main.work"], ["-N", "main.leaf"], ["--goroutine", str(goid)], ["-D", "2"],
                  ["-F", "main.goroutines.func1", "-N", "main.leaf"]):
        rows, _ = check_report(path, *flags)
        funcs = {r["func"] for r in rows}
        if flags[:2] == ["-F", "main.work"]:
            assert funcs == {"main.work", "main.leaf"}, funcs
        if flags[:2] == ["-N", "main.leaf"]:
            assert "main.leaf" not in funcs, funcs
        if flags[0] == "--goroutine":
            assert funcs == {"main.goroutines.func1", "main.work", "main.leaf"}, funcs
            assert next(r for r in rows if r["func"] == "main.work")["calls"] == 1
    assert report_json(path, "-F", "no.such.function") == []


def sort_value(r, key):
    if key == "calls":
        return r["calls"]
    if key in ("off", "self_off"):  # time off CPU
        return r[f"{key}_cpu_ns"]
    return r[f"{key}_ns"]


def test_report_sort_orders():
    path = recorded("goroutines", "go_core", "goroutines", "30")
    base = report_json(path)
    assert [r["func"] for r in base] == [r["func"] for r in report_json(path, "-s", "total")]
    for key in ("total", "self", "calls", "avg", "min", "max", "p50", "p99", "off", "self_off"):
        rows = report_json(path, "-s", key)
        assert sorted(r["func"] for r in rows) == sorted(r["func"] for r in base)
        want = sorted(rows, key=lambda r: (sort_value(r, key) is None, -(sort_value(r, key) or 0), r["func"]))
        assert [r["func"] for r in rows] == [r["func"] for r in want], (key, [(r["func"], sort_value(r, key))
                                                                             for r in rows])
    rows = report_json(path, "--sort=func")
    assert [r["func"] for r in rows] == sorted(r["func"] for r in rows)
    # functions without a duration sort after the others
    rows = report_json(recorded("panic", "go_core", "panic", "3"), "-s", "min")
    assert rows[-1]["func"] == "main.boom" and rows[-1]["returned"] == 0, rows


def test_report_histogram():
    path = recorded("goroutines", "go_core", "goroutines", "30")
    durs = {}
    for c in replay_json(path):
        if c.get("dur") is not None:
            durs.setdefault(c["func"], []).append(c["dur"])
    rows = report_json(path, "--histogram", "main.work", "--histogram", "main.l*")
    hist = {r["func"]: r["histogram"] for r in rows if "histogram" in r}
    assert set(hist) == {"main.work", "main.leaf"}, set(hist)
    for f, buckets in hist.items():
        assert sum(b["count"] for b in buckets) == len(durs[f]), f
        assert buckets[0]["count"] and buckets[-1]["count"], buckets
        for a, b in zip(buckets, buckets[1:]):
            assert a["hi_ns"] == b["lo_ns"], buckets
        for b in buckets:
            assert b["hi_ns"] == max(1, 2 * b["lo_ns"]) and (b["lo_ns"] & (b["lo_ns"] - 1)) == 0, b
            assert b["count"] == sum(b["lo_ns"] <= d < b["hi_ns"] for d in durs[f]), (f, b)
    # text: the same buckets and counts
    p = ct("report", "--histogram", "main.work", path)
    assert p.returncode == 0, p.stderr
    m = re.search(r"^# latency of main\.work: (\d+) returned calls\n((?:  \[.*\n)+)", p.stdout, re.M)
    assert m, p.stdout
    counts = [int(line.rsplit(None, 1)[1]) for line in m.group(2).splitlines()]
    assert int(m.group(1)) == sum(counts) == len(durs["main.work"])
    assert counts == [b["count"] for b in hist["main.work"]], (counts, hist["main.work"])
    for line in m.group(2).splitlines():
        assert re.match(r"  \[ *\d+\.\d{3} (us|ms| s), *\d+\.\d{3} (us|ms| s)\) \| #* +\d+$", line), line


def dur_below(ns, taken):
    """render/common.c ct_dur_below: the bound of a figure NS with TAKEN
    taken out of it, 0 if it is told from none."""
    x = taken // 10
    if ns >= x:
        return 0
    step = 1
    while x // step >= 100:
        step *= 10
    return (x + step - 1) // step * step


def fmt_below(ns):
    """render/common.c ct_buf_duration_below."""
    units, unit_ns, i = ["us", "ms", " s"], [1000, 10 ** 6, 10 ** 9], 0
    while i < 2 and ns >= 100 * unit_ns[i]:
        i += 1
    milli = (ns * 1000 + unit_ns[i] - 1) // unit_ns[i]
    return "<%2d.%03d %s" % (milli // 1000, milli % 1000, units[i])


def fmt_duration(ns):
    """render/common.c ct_fmt_duration."""
    units, limit = ["us", "ms", " s", " m", " h"], [1000, 1000, 1000, 60, 24, math.inf]
    t, i = ns, 0
    for i in range(5):
        mod, t = t % limit[i], t // limit[i]
        if t < limit[i + 1]:
            break
    return f"{t:3d}.{mod:03d} {units[i]}"


def test_report_text_table():
    total_below = 0
    for path, status_cols in ((recorded("goroutines", "go_core", "goroutines", "30"), False),
                              (recorded("panic", "go_core", "panic", "3"), True),
                              (recorded("c_exit", "c_core", "exit", "3", exit_status=3), True)):
        rows = {r["func"]: r for r in report_json(path)}
        p = ct("report", path)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        shown_below = 0
        assert lines[0].startswith("  Total time   Self time       Calls    Avg time    Min time    P50 time"
                                   "    P99 time    Max time"), lines[0]
        assert lines[0].endswith("  Function") and ("Unwound  Unfinished" in lines[0]) == status_cols
        # columns of statuses that occur at all
        extra = [k for k, title in (("exited", "      Exited"), ("lost", "        Lost")) if title in lines[0]]
        # (and the self time off CPU, where a thread was: the run decides)
        off_col = lines[0].endswith("    Self off  Function")
        assert off_col == any(r.get("off_cpu_ns") for r in rows.values()), (lines[0], rows)
        assert set(lines[1]) == {" ", "="}
        ncols = (10 if status_cols else 8) + len(extra) + off_col
        seen = []
        for line in lines[2:]:
            if not line.strip():
                break
            cells = [line[i * 12 + 2:(i + 1) * 12] for i in range(ncols)]
            func = line[ncols * 12 + 2:]
            r = rows[func]
            seen.append(func)
            keys = ["total_ns", "self_ns", "calls", "avg_ns", "min_ns", "p50_ns", "p99_ns", "max_ns"]
            for cell, k in zip(cells, keys):
                if k == "calls":
                    assert int(cell) == r["calls"], (line, r)
                elif r[k] is None:
                    assert cell.strip() == "-", (line, k)
                else:
                    # what was taken out of the figure: in all, between the
                    # children, or per call on average (a call's figure)
                    taken_in_all, taken_between = r.get("taken_out_ns", 0), r.get("self_taken_out_ns", 0)
                    taken = (taken_in_all if k == "total_ns" else taken_between if k == "self_ns"
                             else taken_in_all // r["returned"])
                    bound = dur_below(r[k], taken)
                    assert cell == (fmt_below(bound) if bound else fmt_duration(r[k])), (line, k, r[k], taken)
                    shown_below += bool(bound)
            if status_cols:
                want = [r["unwound"], r["unfinished"]] + [r[k] for k in extra]
                assert [int(c) for c in cells[8:8 + len(want)]] == want, line
            if off_col:
                want = fmt_duration(r.get("self_off_cpu_ns", 0)) if r["returned"] else "%10s" % "-"
                assert cells[-1] == want, (line, r)
        assert seen == list(rows), (seen, list(rows))  # same order as JSON
        assert ('# "< N": below a tenth' in p.stdout) == (shown_below > 0), p.stdout
        total_below += shown_below
        for k in ("exited", "lost"):
            assert (k in extra) == any(r[k] for r in rows.values()), (k, lines[0])
        if status_cols:
            assert re.search(r"^# \d+ unwound and \d+ unfinished calls have no duration", p.stdout, re.M)
    # (tiny leaves' min and p50 at least: the rule is exercised)
    assert total_below > 0


def test_report_errors_are_one_line():
    path = recorded("panic", "go_core", "panic", "3")
    for args in (["-s", "bogus", path], ["--format=yaml", path], ["--bogus", path], [path, path],
                 [tmp("no-such-file.data")], ["-D", "0", path], ["-s"]):
        p = ct("report", *args)
        assert p.returncode != 0, args
        assert p.stdout == "", (args, p.stdout)
        err = p.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("calltrace: "), (args, p.stderr)
    p = ct("report", "--help")
    assert p.returncode == 0 and "p99" in p.stdout and "0.4%" in p.stdout, p.stdout
