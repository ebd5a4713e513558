"""C values that are hard to decode or cannot be read (tests/fixtures/c/values),
built by gcc at -O0 and -O2 (and -O2 with DWARF 4's older bit-field
attributes): each recorded value must equal what the program itself
printed — x87 long doubles exactly, to the bit — or be shown unavailable
with its reason, the same way in text, JSON, YAML, Chrome and OTLP; never a
number that is not the value."""
import json
import re
from decimal import Decimal
from fractions import Fraction

import recfile as R
from lib import ct, fixture, recorded, replay_json, run, tmp

try:
    import yaml
except ImportError:  # test_report_yaml says what to install
    yaml = None

BUILDS = ["c_values_O0", "c_values_O2", "c_values_dwarf4"]
FUNCS = ["scale", "mix", "sign_of", "weigh", "label", "make_flags", "read_flags", "make_big"]


def x87_exact(hex20):
    """The value of an x87 80-bit extended float given as 20 hex digits,
    most significant byte first, as an exact Fraction."""
    bits = int(hex20, 16)
    sign, exp, mant = bits >> 79, (bits >> 64) & 0x7FFF, bits & ((1 << 64) - 1)
    assert exp != 0x7FFF, "the fixture passes finite values"
    v = Fraction(mant) * Fraction(2) ** ((exp or 1) - 16383 - 63)
    return -v if sign else v


def nearest_x87(q):
    """The x87 value nearest to Fraction Q (round half to even), what a C
    strtold gives for the decimal Q."""
    if q == 0:
        return q
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e - 63, 1 - 16383 - 63)  # 64 mantissa bits; denormals below
    unit = Fraction(2) ** e
    v = round(a / unit) * unit
    return -v if q < 0 else v


def same_x87(shown, hex20):
    """Whether the decimal text SHOWN (a JSON number or string) reads back as
    exactly the long double the program passed."""
    return nearest_x87(Fraction(Decimal(str(shown)))) == x87_exact(hex20)


def printed(stdout):
    """The program's lines 'func key=value ...' as {func: {key: value}};
    a long double is 'decimal/hex', kept as the hex."""
    out = {}
    for line in stdout.splitlines():
        func, *pairs = line.split(" ", 1)
        kv = {}
        for m in re.finditer(r"(\S+?)=(\{[^}]*\}|\S+)", pairs[0] if pairs else ""):
            kv[m.group(1)] = m.group(2).split("/")[-1] if "/" in m.group(2) else m.group(2)
        out[func] = kv
    return out


def record_values(build):
    path = recorded(build, build)
    prog = run([fixture(build)])
    assert prog.returncode == 0, prog.stderr
    p = ct("replay", "--format=json", path)
    assert p.returncode == 0, p.stderr
    calls = [json.loads(l, parse_float=str) for l in p.stdout.splitlines()]
    by_func = {c["func"]: c for c in calls if c["func"] in FUNCS}
    assert sorted(by_func) == sorted(FUNCS), sorted(by_func)
    return path, printed(prog.stdout), by_func


def val(values, name):
    got = [v for v in values if v["name"] == name]
    assert len(got) == 1, (name, values)
    return got[0]


def unavailable(v, reason):
    assert v["value"] is None and v.get("unavailable") == reason, (v, reason)


def flags_of(text):
    return {k: int(x) for k, x in re.findall(r"(\w+):(-?\d+)", text)}


def test_values_match_what_the_program_printed():
    for build in BUILDS:
        _, want, got = record_values(build)
        c = got["scale"]
        assert same_x87(val(c["args"], "x")["value"], want["scale"]["x"]), (build, c)
        assert val(c["args"], "n")["value"] == 3
        assert len(c["ret"]) == 1, c
        unavailable(c["ret"][0], "x87 register")

        c = got["mix"]
        assert same_x87(val(c["args"], "a")["value"], want["mix"]["a"]), (build, c)
        if build.endswith("O0"):  # stored by the prologue, read there (test_floats.py)
            assert val(c["args"], "b")["value"] == "1.5", (build, c)
        else:
            unavailable(val(c["args"], "b"), "float register")
        # 1e+4000 is beyond a double: JSON gives it as a string, never as Infinity
        cv = val(c["args"], "c")["value"]
        assert isinstance(cv, str) and same_x87(cv, want["mix"]["c"]), (build, c)
        # its result (XMM0): main keeps it across calls, stored to its stack
        # frame before the exit probe, which reads it there (test_floats.py)
        assert c["ret"][0]["value"] == want["mix"]["ret"] == "2.25", (build, c)

        c = got["sign_of"]
        re_, im = val(c["args"], "z")["value"]
        assert same_x87(re_, want["sign_of"]["re"]) and same_x87(im, want["sign_of"]["im"]), (build, c)
        assert c["ret"][0]["value"] == int(want["sign_of"]["ret"])

        c = got["weigh"]
        s = val(c["args"], "s")["value"]
        assert same_x87(s["weight"], want["weigh"]["weight"]) and s["id"] == 7, (build, c)
        assert c["ret"][0]["value"] == int(want["weigh"]["ret"])

        c = got["label"]
        unavailable(val(c["args"], "s"), "unreadable")
        assert c["ret"][0]["value"] == 1

        c = got["make_flags"]
        assert [a["value"] for a in c["args"]] == [1, 5, -7], (build, c)
        assert c["ret"][0]["value"] == flags_of(want["make_flags"]["ret"]), (build, c)
        c = got["read_flags"]
        assert val(c["args"], "f")["value"] == flags_of(want["read_flags"]["f"]), (build, c)
        assert c["ret"][0]["value"] == int(want["read_flags"]["ret"])

        c = got["make_big"]
        assert val(c["args"], "tail")["value"] == 42
        unavailable(c["ret"][0], "beyond the capture limits")


def marker_ok(text, reason):
    return text in (f"<unavailable: {reason}>", f"<{reason}>")


def test_unavailable_the_same_in_every_format():
    for build in BUILDS:
        path, _, got = record_values(build)
        # text: the same decimals as JSON, the reason where JSON has null
        p = ct("replay", path)
        assert p.returncode == 0, p.stderr
        lines = {}
        for line in p.stdout.splitlines():
            m = re.search(r"\|\s+(\w+)\((.*)\)(?: = (.*))?;(?: /\* off CPU [^*]* \*/)?$", line)
            if m and m.group(1) in FUNCS:
                lines[m.group(1)] = (m.group(2), m.group(3))
        assert sorted(lines) == sorted(FUNCS), p.stdout
        args, ret = lines["scale"]
        assert args == f"x={val(got['scale']['args'], 'x')['value']}, n=3", args
        assert marker_ok(ret, "x87 register"), ret
        args, ret = lines["mix"]
        b = "1.5" if build.endswith("O0") else "<unavailable: float register>"
        assert f"b={b}" in args and f"c={val(got['mix']['args'], 'c')['value']}" in args
        assert ret == "2.25", ret
        assert marker_ok(lines["label"][0][2:], "unreadable"), lines["label"]
        assert marker_ok(lines["make_big"][1], "beyond the capture limits"), lines["make_big"]

        # YAML: the same mappings as JSON (the unavailable ones exactly)
        if yaml is not None:
            p = ct("replay", "--format=yaml", path)
            assert p.returncode == 0, p.stderr
            ycalls = {c["func"]: c for c in yaml.safe_load(p.stdout) if c["func"] in FUNCS}
            for f in FUNCS:
                for key in ("args", "ret"):
                    for yv, jv in zip(ycalls[f][key], got[f][key], strict=True):
                        if jv["value"] is None:
                            assert yv == jv, (f, yv, jv)

        # Chrome: arguments at B, results at E, as JSON has them
        p = ct("dump", "--chrome", path)
        assert p.returncode == 0, p.stderr
        events = json.loads(p.stdout, parse_float=str)["traceEvents"]
        for f in FUNCS:
            b = [e for e in events if e.get("name") == f and e["ph"] == "B"]
            e = [e for e in events if e.get("name") == f and e["ph"] == "E"]
            assert len(b) == len(e) == 1, (f, b, e)
            assert b[0]["args"]["arguments"] == got[f]["args"], (f, b)
            assert e[0]["args"]["results"] == got[f]["ret"], (f, e)

        # OTLP: attributes are the text of each value
        p = ct("dump", "--otlp", path)
        assert p.returncode == 0, p.stderr
        spans = {s["name"]: {a["key"]: a["value"].get("stringValue") for a in s["attributes"]}
                 for line in p.stdout.splitlines()
                 for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
        assert marker_ok(spans["scale"]["calltrace.result"], "x87 register"), spans["scale"]
        assert spans["scale"]["calltrace.arg.x"] == val(got["scale"]["args"], "x")["value"]
        assert spans["mix"]["calltrace.arg.b"] == "1.5" if build.endswith("O0") else \
            marker_ok(spans["mix"]["calltrace.arg.b"], "float register")
        assert spans["mix"]["calltrace.result"] == "2.25", spans["mix"]
        assert marker_ok(spans["label"]["calltrace.arg.s"], "unreadable")
        assert marker_ok(spans["make_big"]["calltrace.result"], "beyond the capture limits")
        assert spans["read_flags"]["calltrace.result"] == "-1"


def test_list_says_where_results_cannot_be_read():
    p = ct("list", fixture("c_values_O2"), "scale")
    assert p.returncode == 0, p.stderr
    assert "(x long double [CFA+0], n int [RDI]) -> (_ long double [st(0)(unreadable)])" in p.stdout, p.stdout
    p = ct("list", fixture("c_values_O2"), "make_big")
    assert p.returncode == 0, p.stderr
    assert "beyond the capture limits" in p.stdout, p.stdout


def test_a_hit_that_copied_nothing_says_so():
    # A probe hit whose copy failed (the event says it dropped its values)
    # has no payload: its results are listed, as not captured, never left
    # out or decoded from nothing.
    r = R.Record("c")
    r.funcs(["f"])
    r.sites([(0, R.ENTRY), (0, R.RET)])
    r.types([{"kind": 0, "name": "?"}, {"kind": R.K["int"], "name": "int", "size": 4, "flags": 1}])
    r.fetch([{"site": 1, "size": 8, "ops": [(R.OP_REG, R.RAX, 0, 8, 0, 0, 0, 0)],
              "vals": [("", 1, R.VAL_RESULT, [(R.PIECE_REG, R.RAX, 4, 0, 0)])]}])
    r.events([dict(site=0, ts=2000, tid=7, key=100), dict(site=1, ts=3000, tid=7, key=100, flags=1)])
    path = r.write(tmp("values_not_captured.data"))
    p = ct("replay", path)
    assert p.returncode == 0 and "f() = <unavailable: not captured>;" in p.stdout, p.stdout + p.stderr
    call = replay_json(path)[0]
    assert call["ret"] == [{"name": "", "type": "int", "value": None, "unavailable": "not captured"}], call
    p = ct("dump", "--chrome", path)
    ends = [e for e in json.loads(p.stdout)["traceEvents"] if e["ph"] == "E"]
    assert ends[0]["args"]["results"] == call["ret"], ends
    p = ct("dump", "--otlp", path)
    attrs = json.loads(p.stdout.splitlines()[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    assert {"key": "calltrace.result", "value": {"stringValue": "<unavailable: not captured>"}} in attrs, attrs
