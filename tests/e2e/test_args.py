"""Arguments and results, decoded from real probe hits, compared exactly with
the values the fixture programs pass (tests/fixtures/{go,c}/args)."""
import re

from lib import ct, fixture, record, replay_json, run

UNAVAILABLE = None  # JSON value of a float that sat in an SSE register


def calls_by_func(calls):
    out = {}
    for c in calls:
        if "func" in c:
            out.setdefault(c["func"], []).append(c)
    return out


def vals(c, key):
    return [(a["name"], a["value"]) for a in c.get(key, [])]


def types(c, key):
    return [a["type"] for a in c.get(key, [])]


def go_calls():
    p, out = record([fixture("go_args")])
    assert p.stdout == run([fixture("go_args")]).stdout
    return calls_by_func(replay_json(out)), out


def test_go_scalars_and_strings():
    by, _ = go_calls()
    (c,) = by["main.Ints"]
    assert vals(c, "args") == [("a", -1), ("b", -2), ("c", -3), ("d", -4), ("e", -5)]
    assert types(c, "args") == ["int8", "int16", "int32", "int64", "int"]
    assert vals(c, "ret") == [("~r0", -15)]
    (c,) = by["main.Uints"]
    assert vals(c, "args") == [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5), ("p", 6)]
    assert vals(by["main.Add"][0], "args") == [("a", 2), ("b", 3)]
    assert vals(by["main.Add"][0], "ret") == [("~r0", 5)]
    assert vals(by["main.Bool"][0], "args") == [("b", True)] and vals(by["main.Bool"][0], "ret") == [("~r0", False)]
    assert vals(by["main.Str"][0], "args") == [("s", "hello, world")]
    assert types(by["main.Str"][0], "args") == ["string"]


def test_go_pointers_slices_arrays_structs():
    by, _ = go_calls()
    (c,) = by["main.Ptrs"]
    assert all(isinstance(v, str) and re.fullmatch(r"0x[0-9a-f]+", v) for _, v in vals(c, "args")), c
    (c,) = by["main.Slices"]
    assert vals(c, "args") == [("a", {"len": 3, "cap": 3, "items": [1, 2, 3]}),
                               ("b", {"len": 2, "cap": 2, "items": ["a", "b"]})]
    assert types(c, "args") == ["[]int", "[]string"]
    assert vals(by["main.Arrays"][0], "args") == [("a", [1, 2, 3]), ("b", [4])]
    (c,) = by["main.ByValue"]
    assert vals(c, "args") == [("p", {"X": 10, "Y": 20, "Name": "p"})] and types(c, "args") == ["main.Point"]
    (c,) = by["main.Nested"]
    assert vals(c, "args") == [("l", {"A": {"X": 1, "Y": 0, "Name": ""}, "B": {"X": 0, "Y": 2, "Name": ""},
                                      "Width": 3})]


def test_go_interfaces_and_errors():
    by, _ = go_calls()
    i1, i2 = by["main.Iface"]
    assert vals(i1, "args") == [("i", {"type": "int", "value": 42})]
    assert vals(i2, "args") == [("i", {"type": "string", "value": "str"})]
    assert vals(i1, "ret") == [("~r0", "42")]
    e1, e2, e3 = by["main.Err"]
    assert vals(e1, "args") == [("e", {"type": "*errors.errorString", "value": "boom"})]
    assert vals(e2, "args") == [("e", {"type": "*fmt.wrapError", "value": "wrapped: file does not exist"})]
    assert vals(e3, "args") == [("e", None)]
    assert types(e1, "args") == ["error"]
    f0, f2 = by["main.Fail"]
    assert vals(f0, "ret") == [("~r0", None)]
    assert vals(f2, "ret") == [("~r0", {"type": "*errors.errorString", "value": "fail 2"})]
    m1, m2 = by["main.Multi"]
    assert vals(m1, "ret") == [("~r0", "go!"), ("~r1", 2), ("~r2", None)]
    assert vals(m2, "ret") == [("~r0", ""), ("~r1", 0), ("~r2", {"type": "*errors.errorString", "value": "empty"})]
    assert vals(by["main.Named"][0], "ret") == [("sum", 8), ("ok", True)]


def test_go_interfaces_inside_other_values_name_their_types():
    # a slice's items (variadic ...interface{}) and a struct's error field,
    # dynamic types no argument had at its top level: named (were type@0x...)
    by, _ = go_calls()
    (c,) = by["main.Dyn"]
    items = vals(c, "args")[0][1]["items"]
    assert [i and i["type"] for i in items] == ["int16", "uint32", "main.Celsius", None, "*main.Line"], items
    assert [i["value"] for i in items[:3]] == [-7, 9, 2.5], items
    (c,) = by["main.Outcome"]
    assert vals(c, "args")[0] == ("r", {"N": 1, "Err": {"type": "main.Status", "value": 3}}), c


def test_go_maps_chans_funcs_floats():
    by, _ = go_calls()
    ((name, m),) = vals(by["main.Map"][0], "args")
    assert m["len"] == 2 and m["ptr"].startswith("0x")
    ((name, ch),) = vals(by["main.Chan"][0], "args")
    assert ch["len"] == 0 and ch["cap"] == 4
    (c,) = by["main.Floats"]
    # float args travel in X0..X2, which BPF cannot read: explicit marker, never a number
    assert vals(c, "args") == [("f", UNAVAILABLE), ("d", UNAVAILABLE), ("c", UNAVAILABLE)]
    assert all(a.get("unavailable") == "float register" for a in c["args"])
    assert types(c, "args") == ["float32", "float64", "complex128"]
    assert vals(by["main.Temp"][0], "args") == [("c", UNAVAILABLE)]
    assert types(by["main.Temp"][0], "args") == ["main.Celsius"]


def test_go_float_results_read_where_the_caller_keeps_them():
    # Float results come back in X0 (unreadable), but main copies each to a
    # general register to box it for fmt.Println (MOVQ X0, AX), or stores it
    # to its stack: the exit probe reads it there.  Values as the program
    # printed them.
    by, _ = go_calls()
    printed = {w[0]: w[-1] for w in (l.split() for l in run([fixture("go_args")]).stdout.splitlines()) if w}
    for func, word in (("main.Floats", "Floats"), ("main.Temp", "Temp"), ("main.Blank", "Blank")):
        (c,) = by[func]
        assert vals(c, "ret") == [("~r0", float(printed[word]))], (func, c, printed[word])
    (c,) = [c for f, cs in by.items() if f.startswith("main.Max[go.shape.float64") for c in cs]
    assert vals(c, "ret") == [("~r0", float(printed["Max"]))], (c, printed["Max"])
    text = ct("list", "-v", fixture("go_args"), "main.Floats", "main.Max*").stdout
    assert "X0 read from RAX, where the caller copied it" in text, text
    assert re.search(r"X0 read from \*\(SP\+\d+\), where the caller stored it", text), text


def test_go_stack_spill_generic_method_blank():
    by, _ = go_calls()
    (c,) = by["main.Many"]
    assert vals(c, "args") == [(f"a{i}", i) for i in range(1, 12)]
    assert vals(c, "ret") == [("r1", 45), ("r2", 110)]
    (c,) = [c for f, cs in by.items() if f.startswith("main.Max[go.shape.int") for c in cs]
    assert vals(c, "args") == [("a", 3), ("b", 9)] and vals(c, "ret") == [("~r0", 9)]
    (c,) = [c for f, cs in by.items() if f.startswith("main.Max[go.shape.string") for c in cs]
    assert vals(c, "args") == [("a", "a"), ("b", "b")] and vals(c, "ret") == [("~r0", "b")]
    (c,) = by["main.Point.Sum"]
    assert vals(c, "args") == [("p", {"X": 8, "Y": 4, "Name": ""})] and vals(c, "ret") == [("~r0", 12)]
    (c,) = by["main.(*Point).Move"]
    assert vals(c, "args")[1] == ("dx", 5)
    # Blank(_ int, b int, _ string, c float64): DWARF lists only b and c;
    # b is found by its DWARF location (RBX), not by guessing
    (c,) = by["main.Blank"]
    assert vals(c, "args") == [("b", 2), ("c", UNAVAILABLE)]


def test_go_text_format():
    _, out = go_calls()
    text = ct("replay", "--color=never", out).stdout
    assert "main.Add(a=2, b=3) = 5;" in text
    assert 'main.Str(s="hello, world") = 12;' in text
    assert 'main.Multi(s="go") = ("go!", 2, nil);' in text
    assert "main.Named(a=4) = (sum=8, ok=true);" in text
    assert 'main.Err(e=*errors.errorString("boom")) = "boom";' in text
    assert re.search(r"main\.Floats\(f=<unavailable: float register>, d=<unavailable: float register>", text)


def test_go_no_args_and_selection():
    p, out = record([fixture("go_args")], "--no-args")
    by = calls_by_func(replay_json(out))
    assert "args" not in by["main.Add"][0] and "ret" not in by["main.Add"][0]
    p, out = record([fixture("go_args")], "-A", "main.Many@a2,a11", "-R", "main.Add")
    by = calls_by_func(replay_json(out))
    assert vals(by["main.Many"][0], "args") == [("a2", 2), ("a11", 11)]
    assert "ret" not in by["main.Many"][0]
    assert "args" not in by["main.Add"][0] and vals(by["main.Add"][0], "ret") == [("~r0", 5)]


def test_go_string_limit():
    p, out = record([fixture("go_args")], "--max-string", "5", "-A", "main.Str")
    (c,) = calls_by_func(replay_json(out))["main.Str"]
    (a,) = c["args"]
    assert a["value"] == "hello" and a.get("truncated") is True


def test_stripped_go_gives_raw_words():
    # no DWARF: raw argument words with a note, never guessed names
    p, out = record([fixture("gobin_stripped")], check=False)
    assert p.returncode == 0, p.stderr
    info = ct("info", out).stdout
    assert "no DWARF" in info, info
    for c in replay_json(out):
        for a in c.get("args", []):
            assert re.fullmatch(r"arg\d+", a["name"]) and a["type"] == "word", a


def test_c_args():
    p, out = record([fixture("c_args")])
    assert p.stdout == run([fixture("c_args")]).stdout
    by = calls_by_func(replay_json(out))
    (c,) = by["c_ints"]
    assert [v for _, v in vals(c, "args")] == [-1, -2, -3, 97, 4, 5, -6, 200] and vals(c, "ret") == [("", 294)]
    (c,) = by["c_strings"]
    assert vals(c, "args")[:2] == [("s", "abc"), ("cs", "de")]
    assert vals(by["c_small"][0], "args") == [("s", {"a": 2, "b": 3})]
    assert vals(by["c_ret_small"][0], "ret") == [("", {"a": 7, "b": 8})]
    big = vals(by["c_ret_big"][0], "ret")[0][1]
    assert big["v"] == [10, 11, 12, 13]
    # char tag[8]: text, as C reads it (it was [98, 105, 103, 0, 0, 0, 0, 0])
    assert big["tag"] == "big" and vals(by["c_big"][0], "args")[0][1]["tag"] == "x", (big, by["c_big"])
    assert [v for _, v in vals(by["c_many"][0], "args")] == [1, 2, 3, 4, 5, 6, 7, 8]
    (c,) = by["c_floats"]
    assert vals(c, "args")[:2] == [("a", UNAVAILABLE), ("b", UNAVAILABLE)]


def test_list_shows_signatures_and_locations():
    p = ct("list", fixture("go_args"), "main.Many", "main.Blank", "main.Multi", "main.Floats")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "a9 int [R11], a10 int [CFA+0], a11 int [CFA+8]) -> (r1 int [RAX], r2 int [RBX])" in out
    assert "(b int [RBX], c float64 [X0(unreadable)])" in out  # blank params found via DWARF
    assert "(s string [RAX:RBX]) -> (~r0 string [RAX:RBX], ~r1 int [RCX], ~r2 error [RDI:RSI])" in out
    # record's -F spelling of a GLOB works too, with the others
    p = ct("list", "-F", "main.Many", fixture("go_args"), "main.Blank", "--trace", "main.Multi")
    assert p.returncode == 0, p.stderr
    assert sorted(l.split()[-1] for l in p.stdout.splitlines() if l.startswith("  0x")) == \
        ["main.Blank", "main.Many", "main.Multi"], p.stdout
    p = ct("list", fixture("c_args"), "c_many", "c_ret_big")
    assert "a7 int [CFA+0], a8 long int [CFA+8]) -> (_ long int [RAX])" in p.stdout
    assert "(x long int [RSI]) -> (_ struct big [*(RAX+0)])" in p.stdout  # returned in memory via RDI/RAX
