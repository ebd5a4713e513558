"""Rust and C++ programs (fixtures tests/fixtures/{rust,cpp}/app, built by the
test run with Debian's rustc and g++) recorded with real probes: readable
names in every output, the program's own code by default, values compared
with what the program itself prints, panics and exceptions."""
import json
import re
import subprocess

from lib import TEXT_LINE, ct, fixture, record, replay_json, tmp, trees, without_off_cpu
from otlp import check_spans_equal_replay, decode_json_lines, spans_of
from test_dump import svg_frames
from test_report_yaml import replay_yaml

MANGLED = re.compile(r"\b_Z[A-Za-z0-9_$.]+|\b_R[A-Z][A-Za-z0-9_]+")


def funcs_of(path, *flags):
    return [c["func"] for c in replay_json(path, *flags) if "func" in c]


def out(*args):
    p = ct(*args)
    assert p.returncode == 0, f"calltrace {' '.join(args)} failed: {p.stderr.strip()}"
    return p.stdout


def otlp_spans(path):
    """Spans of `dump --otlp` as OpenTelemetry's own decoder reads them,
    each checked against the JSON replay (names, nesting, integer values)."""
    out = tmp("rc.otlp.jsonl")
    p = ct("dump", "--otlp", "-o", out, path)
    assert p.returncode == 0, p.stderr
    spans = spans_of(decode_json_lines(out))
    check_spans_equal_replay(path, spans)
    return spans


def report_text_funcs(path):
    """The Function column of the text report (where the header puts it:
    after the columns of numbers, some of them "< N"), up to the notes."""
    lines = out("report", path).splitlines()
    assert lines[1].startswith("  ====="), lines[:2]
    at = lines[0].index("Function")
    table = lines[2:lines.index("", 2)] if "" in lines[2:] else lines[2:]
    return [line[at:] for line in table]


def every_output(path):
    """The function names as each output shows them."""
    text = out("replay", path)
    j = funcs_of(path)
    y = [c["func"] for c in replay_yaml(path)[0] if "func" in c]
    rep = [r["func"] for r in json.loads(out("report", "--format=json", path))]
    ch = [e["name"] for e in json.loads(out("dump", "--chrome", path))["traceEvents"] if e["ph"] == "B"]
    # names, not times: a flame graph draws no frame of no time (nor does
    # a folded stack list one), and calls can take none once the tracer's
    # time is taken out (--raw: measured)
    folded = [fr for line in out("dump", "--folded", "--raw", path).splitlines()
              for fr in line.rsplit(" ", 1)[0].split(";")]
    svg = [g.get("data-n") for g in svg_frames(out("dump", "--svg", "--raw", path))[1] if g.get("data-n") != "all"]
    otlp = [s["name"] for s in otlp_spans(path)]
    return text, {"json": j, "yaml": y, "report": rep, "report text": report_text_funcs(path), "chrome": ch,
                  "folded": folded, "svg": svg, "otlp": otlp}


def normalized_tree(text):
    """The call lines of a text tree without durations and addresses (which
    differ from run to run; a Rust vtable shows its words in decimal)."""
    return [re.sub(r"0x[0-9a-f]+|\b[0-9]{12,}\b", "_", without_off_cpu(m["indent"] + m["body"]))
            for m in map(TEXT_LINE.match, text.splitlines()) if m]


def test_live_shows_what_replay_shows():
    """live without flags prints the tree replay prints of a recording: the
    same readable names and values."""
    for exe in ("rust_app", "cpp_app"):
        p = ct("live", "--", fixture(exe))
        assert p.returncode == 0, (exe, p.stderr)
        live = normalized_tree(p.stdout)
        assert live and not MANGLED.search("\n".join(live)), (exe, p.stdout)
        _, path = record([fixture(exe)], out=tmp("rc_live.data"))
        assert live == normalized_tree(out("replay", path)), (exe, p.stdout)


# ---- C++ ---------------------------------------------------------------------

def test_cpp_names_demangled_everywhere():
    for exe in ("cpp_app", "cpp_app_O0", "cpp_app_clang", "cpp_app_clang_O0"):
        p, path = record([fixture(exe), "names"], out=tmp("cpp_names.data"))
        assert p.stdout.startswith("names 3 2 1.5 9 5 2"), p.stdout
        text, outs = every_output(path)
        assert not MANGLED.search(text), text
        # (info said C/SysV for C++ and Rust programs: the file kept only "c")
        assert re.search(r"^program: +C\+\+/SysV$", out("info", path), re.M), (exe, out("info", path))
        want = {"main", "app::Counter::add", "app::down", "app::maxof<int>", "app::maxof<long>"}
        for name, fs in outs.items():
            assert not [f for f in fs if MANGLED.search(f)], (exe, name, fs)
            assert want <= set(fs), (exe, name, sorted(set(fs)))
        # the program's code only: no std:: templates instantiated in it
        assert not [f for f in outs["json"] if f.startswith(("std::", "__gnu_cxx::"))], (exe, outs["json"])
        # a lambda's DWARF sits inside its enclosing function's: found all
        # the same.  clang -O1 specializes it for x=1 (DWARF: a constant,
        # shown as such; x is not where SysV would have it).
        lam = "names()::$_0::operator()" if "clang" in exe else "names()::{lambda(int)#1}::operator()"
        assert lam in outs["json"], (exe, outs["json"])
        x = "1"
        this = "this" if "clang" in exe else "__closure"
        assert re.search(re.escape(lam) + rf"\({this}=0x[0-9a-f]+, x={re.escape(x)}\) = 2;", text), (exe, text)


def test_cpp_demangle_modes_and_filters():
    path = tmp("cpp_names.data")
    record([fixture("cpp_app"), "names"], out=path)
    full = set(funcs_of(path, "--demangle=full"))
    assert {"app::down(int)", "app::down(double)", "app::Counter::add(int)", "int app::maxof<int>(int, int)"} <= full, full
    raw = set(funcs_of(path, "--demangle=no"))
    assert {"_ZN3app4downEi", "_ZN3app4downEd", "_ZN3app7Counter3addEi"} <= raw, raw
    # replay filters match every form, whatever is shown
    for glob in ("app::down(int)", "_ZN3app4downEi"):
        assert set(funcs_of(path, "-F", glob)) == {"app::down"}, glob
    assert set(funcs_of(path, "-F", "app::*", "-N", "*(double)")) == {
        "app::Counter::add", "app::down", "app::maxof<int>", "app::maxof<long>"}
    # record-time selection too
    for glob in ("app::down(double)", "_ZN3app4downEd"):
        p, path2 = record([fixture("cpp_app"), "names"], "-F", glob, out=tmp("cpp_f.data"))
        assert funcs_of(path2, "--demangle=full") == ["app::down(double)"], glob
    p, path2 = record([fixture("cpp_app"), "names"], "-F", "app::maxof*", out=tmp("cpp_f.data"))
    assert funcs_of(path2) == ["app::maxof<int>", "app::maxof<long>"]
    bad = ct("record", "-o", tmp("cpp_bad.data"), "-F", "app::down(long)", "--", fixture("cpp_app"), "names")
    assert bad.returncode != 0 and "no function named app::down(long)" in bad.stderr, bad.stderr


def test_cpp_list_shows_demangled():
    listing = out("list", fixture("cpp_app"), "app::*")
    assert "C++" in listing.splitlines()[0], listing
    assert re.search(r"\bapp::count\n", listing) and not MANGLED.search(listing), listing
    full = out("list", "--demangle=full", fixture("cpp_app"), "app::count*")
    assert "app::count(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int)" in full, full


# ---- Rust --------------------------------------------------------------------

def test_rust_names_and_default_selection():
    for exe in ("rust_app", "rust_app_v0", "rust_app_O0"):
        p, path = record([fixture(exe)], out=tmp("rs_names.data"))
        assert '"f":"rsapp::app::leaf"' in p.stdout, p.stdout
        text, outs = every_output(path)
        assert not MANGLED.search(text), (exe, text)
        for name, fs in outs.items():
            assert not [f for f in fs if MANGLED.search(f)], (exe, name, fs)
            # the program's crate only: no std/core/alloc, no drop glue
            assert fs and all(f.startswith(("rsapp::", "<rsapp::")) for f in fs), (exe, name, sorted(set(fs)))
            assert {"rsapp::main", "rsapp::app::leaf", "rsapp::app::total"} <= set(fs), (exe, name)
        listing = out("list", fixture(exe))
        assert "Rust (own crates: rsapp)" in listing.splitlines()[0], listing
        assert re.search(r"^program: +Rust$", out("info", path), re.M), (exe, out("info", path))


def test_rust_demangle_modes_and_filters():
    p, path = record([fixture("rust_app")], "-F", "rsapp::app::*", out=tmp("rs_f.data"))
    fs = set(funcs_of(path))
    assert fs and all(f.startswith("rsapp::app::") for f in fs), fs
    assert "rsapp::app::leaf" in fs
    full = funcs_of(path, "--demangle=full", "-F", "rsapp::app::leaf")
    assert len(full) == 1 and re.fullmatch(r"rsapp::app::leaf::h[0-9a-f]{16}", full[0]), full
    raw = funcs_of(path, "--demangle=no", "-F", "rsapp::app::leaf")
    assert len(raw) == 1 and raw[0].startswith("_ZN5rsapp3app4leaf17h"), raw
    assert funcs_of(path, "-F", raw[0]) == ["rsapp::app::leaf"]
    # v0 symbols: the same names
    p, path = record([fixture("rust_app_v0")], "-F", "rsapp::app::leaf", out=tmp("rs_v0.data"))
    assert funcs_of(path) == ["rsapp::app::leaf"]
    raw = funcs_of(path, "--demangle=no")
    assert raw[0].startswith("_R"), raw
    bad = ct("replay", "--demangle=pretty", path)
    assert bad.returncode == 2 and "--demangle takes simple, full or no" in bad.stderr, bad.stderr


# ---- values ------------------------------------------------------------------

def program_says(stdout):
    """The program's own JSON Lines: {"f", "args", "ret"} per call."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def values_match(exe, glob, unavailable=None):
    """Records EXE's values scenario; every call the program reports, in
    order, has calltrace's argument and result values (JSON) equal to what
    the program printed, but the arguments UNAVAILABLE[function] names,
    which must say they are unavailable (null and why); YAML and Chrome
    show the same values."""
    unavailable = unavailable or {}
    p, path = record([fixture(exe)], "-F", glob, out=tmp(exe + ".data"))
    said = program_says(p.stdout)
    assert len(said) >= 10, (exe, p.stdout)
    wanted = {c["f"] for c in said}
    calls = [c for c in replay_json(path) if c.get("func") in wanted and c["depth"] == 0]
    assert [c["func"] for c in calls] == [c["f"] for c in said], (exe, [c["func"] for c in calls])
    for got, want in zip(calls, said):
        args = {a["name"]: a["value"] for a in got["args"]}
        gone = unavailable.get(got["func"], set())
        assert all(a["value"] is None and a["unavailable"] for a in got["args"] if a["name"] in gone), (exe, got)
        assert {k: v for k, v in args.items() if k not in gone} == \
            {k: v for k, v in want["args"].items() if k not in gone}, (exe, got["func"], args, want["args"])
        assert len(got["ret"]) == 1 and got["ret"][0]["value"] == want["ret"], (exe, got["func"], got["ret"], want)
    y = [c for c in replay_yaml(path)[0] if c.get("func") in wanted and c["depth"] == 0]
    assert [(c["args"], c["ret"]) for c in y] == [(c["args"], c["ret"]) for c in calls], exe
    every = [c["args"] for c in replay_json(path) if c.get("func") in wanted]
    ch = [e["args"]["arguments"] for e in json.loads(out("dump", "--chrome", path))["traceEvents"]
          if e["ph"] == "B" and e["name"] in wanted]
    assert ch == every, exe
    text = out("replay", path)
    # OTLP: each argument and result an attribute, as the text shows it
    for sp in otlp_spans(path):
        if sp["name"] in wanted:
            a = sp["attrs"]
            args = ", ".join(f"{k[len('calltrace.arg.'):]}={v}" for k, v in a.items() if k.startswith("calltrace.arg."))
            call, ret = f"{sp['name']}({args})", a["calltrace.result"]
            assert f"{call} = {ret};" in text or \
                (f"{call} {{" in text and (f"}} = {ret}; /* {sp['name']} */" in text or
                                           f"}} = {ret}; /* {sp['name']}; off CPU " in text)), (exe, call, ret)
    return text


def test_rust_values_equal_the_programs():
    for exe in ("rust_app", "rust_app_O0", "rust_app_v0"):
        # opt-level 0: a u128 Rust's rules cannot place, and then neither
        # what follows (optimized, DWARF says where both are)
        text = values_match(exe, "rsapp::app::*", {"rsapp::app::wide": {"x", "y"}} if exe.endswith("O0") else {})
        for line in ('rsapp::app::leaf(s="abc", n=2) = 6;', "rsapp::app::opt(o=Some(5)) = 5;",
                     "rsapp::app::opt(o=None) = 7;", 'rsapp::app::res(r=Err("bad")) = 3;',
                     "rsapp::app::area(s=Rect{w:2 h:3}) = 6;", "rsapp::app::level(l=High) = 7;",
                     "rsapp::app::pair(p=(3, 4)) = 7;", "rsapp::app::total(v=[1 2 3](len=3 cap=3)) = 6;",
                     "rsapp::app::sum_slice(v=[4 5 6](len=3)) = 15;", 'rsapp::app::make_string(n=3) = "ababab";',
                     "rsapp::app::many(a=1, b=-2, c=3, d=-4, e=true, f='z', g=6, h=7) = 134;",
                     'rsapp::app::order(o={id:7 items:["tea" "cake"](len=2 cap=2)}) = 9;'):
            assert line in text, (exe, line, text)


def test_cpp_values_equal_the_programs():
    for exe in ("cpp_app", "cpp_app_O0", "cpp_app_clang", "cpp_app_clang_O0"):
        text = values_match(exe, "app::*")
        for line in ('app::count(s="hi", k=3) = 6;', 'app::item(it={Base:{id:9} name:"tea" qty:2}) = 11;',
                     "app::total(v=[10 20 30 40](len=4 cap=4)) = 100;", "app::paint(c=Green) = 20;",
                     'app::greet(who="bob") = "hello bob";', "app::twice(r=21) = 42;"):
            assert line in text, (exe, line, text)


def test_rust_locations_without_dwarf():
    """opt-level 0 leaves no entry locations: Rust's rules place the values
    (registers, then stack slots); what they cannot place is unknown, and so
    is everything after it (values_match checks those are <unavailable>)."""
    listing = out("list", fixture("rust_app_O0"), "rsapp::app::many", "rsapp::app::wide", "rsapp::app::make_string")
    assert "(a u8 [RDI], b i16 [RSI], c u32 [RDX], d i64 [RCX], e bool [R8], f char [R9], " \
           "g usize [CFA+0], h u64 [CFA+8]) -> (_ i64 [RAX])" in listing, listing
    assert "(x u128 [location unknown], y u32 [location unknown]) -> (_ u128 [RAX:RDX])" in listing, listing
    assert "(n usize [RSI]) -> (_ String [*(RAX+0)])" in listing, listing  # hidden result pointer in RDI


def test_rust_dropped_argument_is_unavailable_not_wrong():
    """LLVM drops the unused arguments of an internal function without
    renaming it (opt-level s, one codegen unit: skip(unused, x) takes x in
    RDI).  Optimized DWARF then has no place for `unused`, and Rust's
    convention, which would read x there, is not asked."""
    listing = out("list", fixture("rust_app_s"), "rsapp::app::skip")
    assert "(unused u64 [location unknown], x u32 [RDI])" in listing, listing  # the fixture still drops it
    p, path = record([fixture("rust_app_s")], "-F", "rsapp::app::skip", out=tmp("skip.data"))
    want = [c for c in program_says(p.stdout) if c["f"] == "rsapp::app::skip"][0]
    got = replay_json(path)[0]
    assert got["args"][0]["value"] is None and got["args"][0]["unavailable"] == "location unknown", got
    assert got["args"][1]["value"] == want["args"]["x"] and got["ret"][0]["value"] == want["ret"], (got, want)


def test_rust_optimized_values_are_right_or_unavailable():
    """opt-level s in one codegen unit: LLVM specializes internal functions
    for their constant arguments (leaf("abc", 2) becomes `mov $6, %eax`)
    and describes those arguments as constants or leaves parts out.  No
    value may then be read where the registers merely were: each argument
    is what the program printed, or unavailable."""
    listing = out("list", fixture("rust_app_s"), "rsapp::app::leaf")
    assert "(s &str [location unknown], n u32 [constant 0x2])" in listing, listing
    p, path = record([fixture("rust_app_s")], out=tmp("rs_s.data"))
    calls = replay_json(path)
    # (but for the Debug impl's tail jump out of the program: test_rust_unit_and_trait_impls)
    assert {c["status"] for c in calls if "Debug>::fmt" not in c["func"]} == {"returned"}, \
        [(c["func"], c["status"]) for c in calls]
    got = [c for c in calls if c["func"].startswith("rsapp::app::") and c["depth"] == 1]
    said = [w for w in program_says(p.stdout) if w["f"] in {c["func"] for c in got}]  # some are inlined
    assert len(said) >= 10, said
    assert [c["func"] for c in got] == [w["f"] for w in said], [c["func"] for c in got]
    unavailable = 0
    for c, w in zip(got, said):
        for a in c["args"]:
            if a["value"] is None:
                assert a["unavailable"], c
                unavailable += 1
            else:
                assert a["value"] == w["args"][a["name"]], (c, w)
        assert c["ret"][0]["value"] == w["ret"], (c, w)
    assert 0 < unavailable < sum(len(c["args"]) for c in got), unavailable  # the fixture still specializes


def test_rust_unit_and_trait_impls():
    """A trait impl of the program's type is the program's code; its
    fmt::Result shows Ok(()) (serde: {"Ok": null}); at opt-level s it ends
    in a tail call through the GOT to Formatter::write_str, which returns
    to core::fmt's call through the vtable, where no probe is: its end is
    not observed (never 'returned' by a guess, never unwound)."""
    for exe in ("rust_app", "rust_app_s"):
        p, path = record([fixture(exe)], out=tmp("rs_fmt.data"))
        fmt = [c for c in replay_json(path) if c["func"] == "<rsapp::app::Level as core::fmt::Debug>::fmt"]
        assert [c["args"][0]["value"] for c in fmt] == ["Low", "High"], (exe, fmt)
        assert {c["status"] for c in fmt} == {"unobserved" if exe == "rust_app_s" else "returned"}, (exe, fmt)
        if exe == "rust_app":
            assert [c["ret"][0]["value"] for c in fmt] == [{"Ok": None}] * 2, fmt
            assert re.search(r"core::fmt::Debug>::fmt\(self=Low, f=\{.*\}\) = Ok\(\(\)\);", out("replay", path))


# ---- exceptions and panics ---------------------------------------------------

def shapes_and_status(path):
    forest = trees(replay_json(path))
    roots = [r for rs in forest.values() for r in rs]
    return roots, {(n.func, n.call["depth"]): n.call["status"] for r in roots for n in r.walk()}


def aborted_like(p, plain):
    """record ends as the program would: killed by the same signal."""
    assert plain.returncode == -6, plain.returncode
    assert p.returncode == -6, (p.returncode, p.stderr)


def test_cpp_exception_through_traced_frames():
    p, path = record([fixture("cpp_app"), "throw"], "-F", "app::*", out=tmp("cpp_throw.data"))
    assert p.stdout == "caught -1\n", p.stdout
    roots, status = shapes_and_status(path)
    assert [r.shape() for r in roots] == ["app::catcher(app::thrower(app::thrower(app::thrower(app::thrower))))"]
    assert [status[("app::thrower", d)] for d in range(1, 5)] == ["unwound"] * 4, status
    assert status[("app::catcher", 0)] == "returned"
    assert roots[0].call["ret"][0]["value"] == -1, roots[0].call
    plain = subprocess.run([fixture("cpp_app"), "uncaught"], capture_output=True, text=True)
    p, path = record([fixture("cpp_app"), "uncaught"], "-F", "app::*", out=tmp("cpp_unc.data"), check=False)
    aborted_like(p, plain)
    assert "terminate called after throwing" in p.stderr, p.stderr
    roots, status = shapes_and_status(path)
    # std::terminate aborts the process inside the frames not yet unwound
    assert roots and all(s in ("unwound", "exited") for s in status.values()), status


def test_cpp_exception_caught_where_nothing_is_traced():
    """An exception no traced code catches: std::async's task setter (a
    template of <future>, in the program, untraced) keeps it for get(),
    std::ostream::put (in libstdc++.so) catches it and sets badbit; each on
    a thread that then ends.  The frames it went through were unwound (the
    handler's __cxa_begin_catch says so: a CATCH marker in libstdc++, or in
    the program that has it linked in), not ended with their thread."""
    for exe in ("cpp_app", "cpp_app_clang", "cpp_app_static_libstdcxx"):
        for mode, printed, shape in (
                ("async", "async -1\n",
                 "app::async_task(app::thrower(app::thrower(app::thrower(app::thrower))))"),
                ("stream", "stream bad 1\n", "app::ThrowingBuf::overflow(app::thrower(app::thrower(app::thrower)))")):
            p, path = record([fixture(exe), mode], "-F", "app::*", out=tmp("cpp_catch.data"))
            assert p.stdout == printed, (exe, mode, p.stdout, p.stderr)
            roots, status = shapes_and_status(path)
            assert [r.shape() for r in roots] == [shape], (exe, mode, [r.shape() for r in roots])
            assert set(status.values()) == {"unwound"}, (exe, mode, status)
            meta = ct("info", path).stdout
            # the marker's place: libstdc++, or the program's own
            assert ("plan.catch " in meta) == (exe != "cpp_app_static_libstdcxx"), (exe, meta)
            assert not re.search(r"^library ", meta, re.M), meta  # no library traced


def test_rust_panic_through_traced_frames():
    for exe in ("rust_app", "rust_app_O0"):
        p, path = record([fixture(exe), "panic"], out=tmp("rs_panic.data"))
        assert p.stdout == "caught true\n" and "panicked at 'boom'" in p.stderr, (exe, p.stdout, p.stderr)
        roots, status = shapes_and_status(path)
        assert [r.func for r in roots] == ["rsapp::main"] and status[("rsapp::main", 0)] == "returned", exe
        booms = [n for n in roots[0].walk() if n.func == "rsapp::app::boom"]
        assert booms[0].shape() == "rsapp::app::boom(rsapp::app::boom(rsapp::app::boom(rsapp::app::boom)))", exe
        assert {n.call["status"] for n in booms} == {"unwound"}, (exe, status)
        assert [n.call["args"][0]["value"] for n in booms] == [3, 2, 1, 0], exe


def test_rust_panic_abort_exits_as_untraced():
    plain = subprocess.run([fixture("rust_app_abort"), "uncaught"], capture_output=True, text=True)
    p, path = record([fixture("rust_app_abort"), "uncaught"], out=tmp("rs_abort.data"), check=False)
    aborted_like(p, plain)
    assert "panicked at 'boom'" in p.stderr, p.stderr
    roots, status = shapes_and_status(path)
    names = {f for f, _ in status}
    assert {"rsapp::main", "rsapp::app::boom"} <= names, names
    assert all(s == "exited" for s in status.values()), status  # abort() inside them


# ---- self-recursion made a loop ----------------------------------------------

def test_self_recursion_loop_is_one_call():
    """gcc -Os and LLVM (Rust opt-level s) turn a self-recursive call into a
    branch back to the function's own entry: every turn runs the entry
    probe again, yet it is one call (the branch is planned like Go's
    morestack restart).  Without that, each turn showed as an unwound call.
    (With --exit=auto a function observed from its callers has no entry
    probe for the loop to run again: app::spin, since its caller's landing
    pads do not rejoin the call's exit.)"""
    for exe, func in (("cpp_app", "app::spin"), ("rust_app_s", "rsapp::app::down")):
        listing = out("list", "-v", "--exit=ret", fixture(exe), func)
        entry = [int(line.split()[0], 16) for line in listing.splitlines() if line.endswith(" " + func)]
        back = [int(line.split()[-1], 16) for line in listing.splitlines() if line.split()[:1] == ["restart"]]
        assert len(entry) == 1 and back == entry, listing  # the fixture still makes the loop
        for mode in ("auto", "ret"):
            p, path = record([fixture(exe), "loop"], "-F", func, "--exit", mode, out=tmp("loop.data"))
            assert p.stdout == "loop 3\n", p.stdout
            calls = replay_json(path)
            assert [(c["func"], c["status"]) for c in calls] == [(func, "returned")], (exe, mode, calls)
            assert calls[0]["args"][0]["value"] == 3, calls[0]
