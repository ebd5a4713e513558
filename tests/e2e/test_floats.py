"""Arguments passed in SSE registers (issue 17): BPF cannot read XMM
registers, so a float, double, complex or struct of them is read where the
function stores it to its stack on the straight line from its entry (a
second probe, a SPILL site: every -O0 prologue; -O2 code keeping it across a
call).  On tests/fixtures/c/cgraph/floats.c built by gcc and clang at -O0 and
-O2, every value the program says it passed is shown with exactly that value
in every output, or unavailable with the reason: never another number."""
import json
import os
import re

import yaml

from lib import ct, fixture, record, replay_json, tmp
from otlp import attrs, spans_of

VARIANTS = [f"{cc}-O{o}" for cc in ("gcc", "clang") for o in (0, 2)]
FLOATS = {("scale", "x"), ("scale", "y"), ("mix", "b"), ("mix", "d"), ("norm", "v.x"), ("norm", "v.y"),
          ("fpair", "p.a"), ("fpair", "p.b"), ("keep", "x"), ("cmag", "z.0"), ("cmag", "z.1"), ("dl", "v.d")}


def prog(variant):
    return fixture(os.path.join("cgraph", variant, "cg_floats"))


def passed(stdout):
    """{(func, "v.x"): text} from the program's "arg FUNC NAME VALUE" lines."""
    return {(w[1], w[2]): w[3] for w in (l.split() for l in stdout.splitlines()) if w[0] == "arg"}


def part(value, path):
    for k in path:
        if value is None:
            return None
        value = value[int(k)] if isinstance(value, list) else value.get(k)
    return value


def shown_args(calls):
    """{(func, "v.x"): value or ("unavailable", why)} of each function's first
    call's arguments (JSON objects as JSON, YAML and Chrome give them); the
    calls from results() come after main's own."""
    out = {}
    for func, args in calls:
        if any(f == func for f, _ in out):
            continue
        for a in args:
            for (f, name) in WANT:
                top, *rest = name.split(".")
                if f == func and top == a["name"]:
                    v = part(a["value"], rest)
                    # a null field has no reason of its own (the struct's text says it)
                    why = a.get("unavailable") if a["value"] is None else "float register"
                    out[(f, name)] = ("unavailable", why) if v is None else v
    return out


WANT = set()


def check_values(variant, said, got, where):
    """Every value is the one passed (exactly: %.17g round-trips), or
    unavailable with the reason; which ones are available at -O0 / -O2."""
    for key, text in said.items():
        v = got[key]
        if key not in FLOATS:
            assert v == int(text), (variant, where, key, v, text)
            continue
        if key == ("dl", "v.d"):
            # a struct mixing a double and an integer: not read at any level
            assert v == ("unavailable", "float register"), (variant, where, key, v)
        elif isinstance(v, tuple):
            assert v[1] == "float register", (variant, where, key, v)
            # -O0 stores every argument; -O2 only what lives across a call
            assert variant.endswith("O2") and key != ("keep", "x"), (variant, where, key, v)
        else:
            assert v == float(text), (variant, where, key, v, text)


def run_variant(variant, *flags):
    out = tmp(f"floats-{variant}{'-'.join(flags)}.data")
    p, _ = record([prog(variant)], *flags, out=out)
    said = passed(p.stdout)
    WANT.update(said)
    return said, out


def test_float_arguments_shown_where_the_prologue_stores_them():
    for v in VARIANTS:
        said, out = run_variant(v)
        calls = [c for c in replay_json(out) if "func" in c]
        check_values(v, said, shown_args((c["func"], c.get("args", [])) for c in calls), "json")
        # YAML, Chrome and OTLP show the same values
        doc = yaml.safe_load(ct("replay", "--format=yaml", out).stdout)
        check_values(v, said, shown_args((c["func"], c.get("args", [])) for c in doc if "func" in c), "yaml")
        chrome = json.loads(ct("dump", "--chrome", out).stdout)
        begins = [e for e in chrome["traceEvents"] if e.get("ph") == "B"]
        check_values(v, said, shown_args((e["name"], e.get("args", {}).get("arguments", [])) for e in begins),
                     "chrome")
        spans = spans_of(json.loads(l) for l in ct("dump", "--otlp", out).stdout.splitlines())
        keep = [s for s in spans if s["name"] == "keep"]
        assert len(keep) == 1 and float(keep[0]["attrs"]["calltrace.arg.x"]) == float(said[("keep", "x")]), (v, keep)
        if v.endswith("O0"):
            scale = [s for s in spans if s["name"] == "scale"][0]["attrs"]
            assert (scale["calltrace.arg.x"], scale["calltrace.arg.y"]) == ("0.75", "3.5"), (v, scale)


def test_text_tree_shows_the_values():
    said, out = run_variant("gcc-O0")
    text = ct("replay", out).stdout
    for line in ("scale(x=0.75, y=3.5, k=1)", "mix(a=7, b=0.33333333333333331, c=1099511627776, d=-1.25)",
                 "norm(v={x:3.5 y:-0.001})", "fpair(p={a:0.5 b:7.25})", "keep(x=3, n=1)", "cmag(z=(1.5+2i))"):
        assert line in text, (line, text)


def test_callee_side_exits_too():
    # --exit=ret: the functions are entered at their own entry probe
    for v in ("clang-O0", "gcc-O2"):
        said, out = run_variant(v, "--exit=ret")
        calls = [c for c in replay_json(out) if "func" in c]
        check_values(v, said, shown_args((c["func"], c.get("args", [])) for c in calls), "json --exit=ret")
        # results are read at the RETs then, where they are in XMM0 only
        rets = [shown_ret(c) for c in calls if c["func"] in ("scale", "halve", "pairup")]
        assert len(rets) == 4 and all(r == ("unavailable", "float register") for r in rets), (v, rets)


def test_list_says_where_and_how():
    for v, func, how in (("gcc-O0", "scale", "single-stepped"), ("gcc-O2", "keep", "emulated"),
                         ("clang-O2", "keep", "emulated")):
        text = ct("list", "-v", prog(v), func).stdout
        spill = [l for l in text.splitlines() if l.strip().startswith("spill")]
        assert len(spill) == 1 and f"({how}; reads x" in spill[0], (v, text)
        at = spill[0].split()[1]  # "+14": no other role is listed there
        assert [l for l in text.splitlines() if l.split()[1:2] == [at]] == spill, (v, text)
    # an -O2 leaf keeps its floats in registers: no second probe
    assert "spill" not in ct("list", "-v", prog("gcc-O2"), "scale").stdout


def returned(stdout):
    """{func: text} of the program's "ret FUNC VALUE" lines (a field: func.F)."""
    return {w[1] + (w[2] if w[2].startswith(".") else ""): w[-1]
            for w in (l.split() for l in stdout.splitlines()) if w and w[0] == "ret"}


def shown_ret(call):
    """A call's float result as shown: a number, {field: number}, or
    ("unavailable", why)."""
    (r,) = call["ret"]
    if r["value"] is None:
        return ("unavailable", r.get("unavailable"))
    if isinstance(r["value"], dict) and all(v is None for v in r["value"].values()):
        return ("unavailable", "float register")  # a struct's null fields: its text says why
    return r["value"]


def test_float_results_read_where_the_caller_stores_them():
    """results() keeps each result in a local: the exit probe after its call
    reads it where the caller stored it (or copied it to a general register);
    main() stores them to a global, which is not read: unavailable, never
    another number."""
    for v in VARIANTS:
        p, _ = record([prog(v)], out=tmp(f"floats-ret-{v}.data"))
        want = returned(p.stdout)
        calls = [c for c in replay_json(tmp(f"floats-ret-{v}.data")) if "func" in c]
        depth = {c["func"]: c["depth"] for c in calls}["results"]
        for c in calls:
            if c["func"] not in ("scale", "halve", "pairup", "mix", "norm", "fpair", "keep", "cmag"):
                continue
            got = shown_ret(c)
            if c["depth"] != depth + 1:  # called from main
                assert got == ("unavailable", "float register"), (v, c)  # stored to a global
                continue
            f = c["func"]
            if f == "pairup" and not isinstance(got, tuple):
                got = {"x": got["x"], "y": got["y"]}
                assert got == {"x": float(want["pairup.x"]), "y": float(want["pairup.y"])}, (v, c)
            elif isinstance(got, tuple):
                assert got == ("unavailable", "float register"), (v, c)
                # -O0 stores every one; -O2 the one kept across a call to libc
                assert v.endswith("O2") and f != "scale", (v, c)
            else:
                assert got == float(want[f]), (v, c, want)
        # dl's struct mixes a double (XMM0) and a long (RAX): the long is read;
        # the double at -O0, where the caller stores both halves through RBP
        # before the exit site, not at -O2 (passed on in XMM0)
        (c,) = [c for c in calls if c["func"] == "dl"]
        d = float(want["dl.d"]) if v.endswith("O0") else None
        assert c["ret"][0]["value"] == {"d": d, "n": int(want["dl.n"])}, (v, c)
        # the text says the same
        text = ct("replay", tmp(f"floats-ret-{v}.data")).stdout
        assert re.search(r"scale\(x=[^)]*\) = " + re.escape(want["scale"]) + ";", text), (v, text)


def test_list_says_where_results_are_read():
    lines = {v: [l for l in ct("list", "-v", prog(v), "scale", "halve", "pairup").stdout.splitlines()
                 if l.strip().startswith(("call ", "from "))] for v in VARIANTS}
    def line(v, caller, n=0):
        return [l for l in lines[v] if f" {caller}+" in l][n]
    assert "X0 read from *(RBP-8), where the caller stored it" in line("gcc-O0", "results"), lines["gcc-O0"]
    assert "X0 read from R14, where the caller copied it" in line("gcc-O2", "results"), lines["gcc-O2"]
    assert re.search(r"X0 read from \*\(SP\+\d+\), where the caller stored it", line("clang-O2", "results")), \
        lines["clang-O2"]
    # gcc -O2 knows halve leaves X3 alone: the result stays there
    assert "X0 unavailable: still in an SSE register there" in line("gcc-O2", "results", 1), lines["gcc-O2"]
    # a struct of two doubles: both halves
    assert "X0 read from *(RBP-32)" in line("gcc-O0", "results", 2), lines["gcc-O0"]
    assert "X1 read from *(RBP-24)" in line("gcc-O0", "results", 2), lines["gcc-O0"]
    for v in VARIANTS:
        assert "X0 unavailable: stored at 0x" in line(v, "main"), (v, lines[v])


def test_record_time_limits_leave_them_unavailable():
    # the kernel's shadow stack follows calls only: no SPILL probes then
    said, out = run_variant("gcc-O0", "--max-depth", "5")
    calls = {c["func"]: c for c in replay_json(out) if "func" in c}
    x = calls["scale"]["args"][0]
    assert x["value"] is None and x["unavailable"] == "float register", x
    assert shown_ret(calls["scale"]) == ("unavailable", "float register"), calls["scale"]  # read at RET
    assert calls["scale"]["args"][2]["value"] == 1
