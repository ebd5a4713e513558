"""report --diff: two real recordings compared, every number checked against
`report --format=json` of each file (itself checked against the JSON Lines
in test_report_yaml.py), with the same filters, and the text table read
back against the JSON.  Time off CPU: two recordings of a call that sleeps
5 and 60 ms, and one recorded with --no-sched, whose change is unknown."""
import json
import re

from lib import ct, fixture, record, tmp

NULLABLE = ("avg_ns", "min_ns", "p50_ns", "p99_ns", "max_ns")
ALWAYS = ("calls", "returned", "unwound", "unfinished", "exited", "lost", "unobserved", "total_ns", "self_ns")
OFF = ("off_cpu_ns", "self_off_cpu_ns")
MS = 1_000_000

_files = {}


def traces():
    """base: a sequential loop; new: goroutines (main.loop only in base,
    main.goroutines* only in new, main.work/main.leaf in both)."""
    if not _files:
        for name, args in (("base", ["loop", "5"]), ("new", ["goroutines", "8"])):
            _, out = record([fixture("go_core"), *args], out=tmp(f"diff-{name}.data"))
            _files[name] = out
    return _files["base"], _files["new"]


def report(path, *flags):
    p = ct("report", "--format=json", *flags, path)
    assert p.returncode == 0, p.stderr
    return {r.pop("func"): r for r in json.loads(p.stdout)}


def diff_json(base, new, *flags):
    p = ct("report", "--diff", base, "--format=json", *flags, new)
    assert p.returncode == 0, f"report --diff failed: {p.stderr.strip()}"
    return json.loads(p.stdout)


def side(row, recorded):
    """The diff's base/new object of a function: its report object, with
    the off-CPU times always there -- 0 where the report leaves them out,
    null without a returned call or where the trace did not record them."""
    if row is None:
        return None
    return {**row, **{k: row.get(k, 0) if recorded and row["returned"] else None for k in OFF}}


def expected_change(b, n, key, recorded):
    if key in OFF:  # sums like total_ns, unknown unless both traces recorded them
        return (n and n[key] or 0) - (b and b[key] or 0) if all(recorded) else None
    if key in ALWAYS:
        return (n[key] if n else 0) - (b[key] if b else 0)
    if b is None or n is None or b[key] is None or n[key] is None:
        return None
    return n[key] - b[key]


def check_diff(*flags, files=None, recorded=(True, True)):
    """Checks the diff of FILES (default: traces()) against their reports;
    RECORDED: whether each recorded off-CPU time (not with --no-sched)."""
    base, new = files or traces()
    rb, rn = report(base, *flags), report(new, *flags)
    rows = diff_json(base, new, *flags)
    names = [r["func"] for r in rows]
    assert len(names) == len(set(names)), f"a function appears twice: {names}"
    assert set(names) == set(rb) | set(rn), (names, sorted(rb), sorted(rn))
    for r in rows:
        f = r["func"]
        b, n = side(rb.get(f), recorded[0]), side(rn.get(f), recorded[1])
        assert r["base"] == b and r["new"] == n, f"{f}: sides differ from report: {r}"
        assert r.get("only") == ("new" if b is None else "base" if n is None else None), r
        for key in ALWAYS + NULLABLE + OFF:
            want = expected_change(b, n, key, recorded)
            assert r["diff"][key] == want, f"{flags} {f} {key}: {r['diff'][key]} != {want}"
            pct = r["diff"]["pct"][key]
            bv = b[key] if b else None
            if want is None or not bv:
                assert pct is None, f"{f} {key}: pct {pct} without a base"
            else:
                assert abs(pct - 100.0 * want / bv) <= 0.006, f"{f} {key}: pct {pct} vs {want}/{bv}"
    return rows


def test_diff_numbers_equal_the_two_reports():
    rows = check_diff()
    only = {r["func"]: r["only"] for r in rows if "only" in r}
    assert only.get("main.loop") == "base" and only.get("main.goroutines") == "new", only
    assert "main.work" in {r["func"] for r in rows} and "main.work" not in only
    # largest change of total time first (absolute), ties by name
    keys = [(-abs(r["diff"]["total_ns"]), -r["diff"]["total_ns"], r["func"]) for r in rows]
    assert keys == sorted(keys), [r["func"] for r in rows]


def test_diff_filters_apply_to_both():
    rows = check_diff("-F", "main.work")
    assert sorted(r["func"] for r in rows) == ["main.leaf", "main.work"], rows
    check_diff("-N", "main.leaf", "-D", "3")


def test_diff_sort_keys():
    base, new = traces()
    rows = diff_json(base, new, "-s", "calls")
    keys = [(-abs(r["diff"]["calls"]), -r["diff"]["calls"], r["func"]) for r in rows]
    assert keys == sorted(keys), keys
    rows = diff_json(base, new, "-s", "p99")
    known = [r for r in rows if r["diff"]["p99_ns"] is not None]
    assert rows[:len(known)] == known, "rows without a p99 change must come last"
    assert [abs(r["diff"]["p99_ns"]) for r in known] == sorted((abs(r["diff"]["p99_ns"]) for r in known),
                                                               reverse=True)
    rows = diff_json(base, new, "-s", "func")
    assert [r["func"] for r in rows] == sorted(r["func"] for r in rows)


DUR = r"(?:[0-9]+\.[0-9]{3} (?:us|ms| s| m| h))"


def test_diff_text_table_matches_json():
    base, new = traces()
    p = ct("report", "--diff", base, new)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"# base: {base}" and lines[1] == f"# new:  {new}", lines[:2]
    assert lines[2].split()[:4] == ["Total", "base", "Total", "new"], lines[2]
    rows = diff_json(base, new)
    body = [l for l in lines[4:] if l.strip() and not l.startswith("# ")]  # notes after the rows
    assert len(body) == len(rows), body
    for line, r in zip(body, rows):
        m = re.match(r"^ *(?P<b>-|" + DUR + r") +(?P<n>-|" + DUR + r") +(?P<chg>[-+ ]" + DUR + r") +"
                     r"(?P<pct>new|gone|-|[-+][0-9]+\.[0-9]%) .* (?P<cb>-|\d+) +(?P<cn>-|\d+)  (?P<func>\S+)"
                     r"(?P<mark>  \(only in (?:base|new)\))?$", line)
        assert m, f"unparsable diff line: {line!r}"
        assert m["func"] == r["func"], (line, r["func"])
        assert bool(m["mark"]) == ("only" in r), line
        assert m["cb"] == (str(r["base"]["calls"]) if r["base"] else "-"), line
        assert m["cn"] == (str(r["new"]["calls"]) if r["new"] else "-"), line
        sign = "+" if r["diff"]["total_ns"] > 0 else "-" if r["diff"]["total_ns"] < 0 else " "
        assert m["chg"].startswith(sign), line
        if m["pct"] == "-":  # a base total of 0 (corrected: the tracer's time only)
            assert r["base"]["total_ns"] == 0 and r["diff"]["pct"]["total_ns"] is None, (line, r)
        elif r["base"] and r["new"]:
            # JSON carries 2 decimals, the table 1: compare the numbers, not
            # the strings (rounding twice can move the last digit)
            assert abs(float(m["pct"][:-1]) - r["diff"]["pct"]["total_ns"]) <= 0.051, line


def test_diff_bad_input():
    base, new = traces()
    p = ct("report", "--diff", tmp("no-such.data"), new)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "does not exist" in p.stderr, p.stderr
    p = ct("report", "--diff", base, new, "--histogram", "main.*")
    assert p.returncode == 2 and "--histogram" in p.stderr, p.stderr
    p = ct("report", "--diff")
    assert p.returncode == 2 and "needs a value" in p.stderr, p.stderr


_off_files = {}


def off_cpu_traces():
    """c_offcpu's outer() calling blocks(ms), which sleeps: 5 ms ("short"),
    60 ms ("long"), and 60 ms recorded with --no-sched ("nosched")."""
    if not _off_files:
        for name, ms, flags in (("short", "5", ()), ("long", "60", ()), ("nosched", "60", ("--no-sched",))):
            p, out = record([fixture("c_offcpu"), ms], *flags, "-F", "blocks", "-F", "outer", "-F", "quick",
                            out=tmp(f"diff-offcpu-{name}.data"))
            assert p.stdout.startswith(f"{int(ms) + 1}\n"), p.stdout
            _off_files[name] = out
    return _off_files


def test_diff_off_cpu_says_the_slower_call_waited():
    """blocks slept 55 ms longer: nearly all its change of time is a change
    of time off CPU, its own; outer's is its callee's (none of its self
    time); quick never waited.  The other way round, the same shrinks."""
    t = off_cpu_traces()
    rows = {r["func"]: r for r in check_diff(files=(t["short"], t["long"]))}
    blocks, outer, quick = rows["blocks"]["diff"], rows["outer"]["diff"], rows["quick"]["diff"]
    assert 40 * MS <= blocks["off_cpu_ns"] <= blocks["total_ns"] + 5 * MS, rows["blocks"]
    assert abs(blocks["total_ns"] - blocks["off_cpu_ns"]) < 5 * MS, rows["blocks"]
    assert blocks["self_off_cpu_ns"] == blocks["off_cpu_ns"], rows["blocks"]
    assert blocks["pct"]["off_cpu_ns"] > 300, rows["blocks"]  # 5 ms -> 60 ms: about +1100%
    assert abs(outer["off_cpu_ns"] - blocks["off_cpu_ns"]) < 5 * MS, rows["outer"]
    assert abs(outer["self_off_cpu_ns"]) < 5 * MS, rows["outer"]
    assert abs(quick["off_cpu_ns"]) < 5 * MS and rows["quick"]["base"]["off_cpu_ns"] is not None, rows["quick"]
    back = {r["func"]: r["diff"] for r in check_diff(files=(t["long"], t["short"]))}
    assert back["blocks"]["off_cpu_ns"] == -blocks["off_cpu_ns"], back["blocks"]
    assert back["blocks"]["self_off_cpu_ns"] <= -40 * MS, back["blocks"]


def test_diff_off_cpu_of_a_no_sched_trace_is_unknown():
    """A trace recorded with --no-sched has no off-CPU time to compare
    (not 0 ns): its side and every off-CPU change are null, either way
    round, while the other figures still compare."""
    t = off_cpu_traces()
    assert "record.off_cpu         no (--no-sched)" in ct("info", t["nosched"]).stdout
    for files, recorded in (((t["nosched"], t["long"]), (False, True)), ((t["long"], t["nosched"]), (True, False))):
        rows = {r["func"]: r for r in check_diff(files=files, recorded=recorded)}
        assert set(rows) == {"blocks", "outer", "quick"}, rows
        for f, r in rows.items():
            assert all(r["diff"][k] is None and r["diff"]["pct"][k] is None for k in OFF), r
            assert r["diff"]["total_ns"] is not None, r
        assert rows["blocks"][("new", "base")[recorded[0]]]["off_cpu_ns"] >= 50 * MS, rows["blocks"]


def test_diff_text_shows_off_cpu_changes():
    """The text's two off-CPU columns (before the calls): the changes, "-"
    where unknown, with a note saying why; none where neither trace was
    off CPU in the functions shown."""
    t = off_cpu_traces()
    for files, known in (((t["short"], t["long"]), True), ((t["nosched"], t["long"]), False)):
        text = ct("report", "--diff", *files).stdout
        lines = text.splitlines()
        assert lines[2].endswith("   Off CPU chg  Self off chg  Calls base   Calls new  Function"), lines[2]
        end = lines[2].index("  Calls base")
        line = next(ln for ln in lines if ln.endswith("  blocks"))
        cells = line[end - 28:end]  # two columns of 12 after 2 spaces each
        if known:
            assert re.fullmatch(r" +\+\d+\.\d{3} ms +\+\d+\.\d{3} ms", cells), line
            assert "# Off CPU chg, Self off chg: the change of the time off CPU" in text, text
            assert "no off-CPU records" not in text, text
        else:
            assert cells.split() == ["-", "-"], line
            assert "\n# base has no off-CPU records (recorded with --no-sched" in text, text
    text = ct("report", "--diff", t["short"], t["long"], "-F", "quick").stdout
    assert "quick" in text and "Off CPU" not in text and "Self off" not in text, text
