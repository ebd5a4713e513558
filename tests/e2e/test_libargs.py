"""Arguments and results of shared-library functions (-F 'LIB:GLOB') and of
programs exec'd under --follow (issue 17), on tests/fixtures/c/libargs
built by gcc and clang at -O0 and -O2: libla.so (-g) takes and returns
ints, a string and structs by value; libnodbg.so has no debug info.  The
functions say what they received ("arg FUNC NAME VALUE"), their callers what
came back ("ret FUNC[.FIELD] VALUE"); the trace must show the same, in every
output."""
import json
import os
import shutil
import subprocess

from lib import ct, fixture, record, replay_json, tmp
from otlp import check_spans_equal_replay, decode_json_lines, meta, spans_of
from test_dump import chrome
from test_report_yaml import replay_yaml

VARIANTS = [f"{cc}-O{o}" for cc in ("gcc", "clang") for o in (0, 2)]


def prog(variant, name):
    return fixture(os.path.join("libargs", variant, name))


def said(stdout):
    """{("arg"|"ret", FUNC, PATH): text} from the program's lines."""
    out = {}
    for line in stdout.splitlines():
        what, rest = line.split(" ", 1)
        if what == "arg":
            func, name, value = rest.split(" ", 2)
            out[("arg", func, name)] = value
        elif what == "ret":
            func, value = rest.split(" ", 1)
            func, _, field = func.partition(".")
            out[("ret", func, field)] = value
    return out


def value_at(value, path):
    for k in filter(None, path.split(".")):
        value = value[k]
    return value


def same(text, value):
    return value == text if isinstance(value, str) else value == int(text)


def check_values(variant, p, path, funcs=None):
    """Every value the program says a traced function received or returned
    is the trace's.  Returns the calls by bare function name."""
    calls = {c["func"].split(":", 1)[-1]: c for c in replay_json(path) if "func" in c}
    for (what, func, name), text in said(p.stdout).items():
        if funcs is not None and func not in funcs:
            continue
        c = calls[func]
        if what == "arg":
            top, _, rest = name.partition(".")
            arg = [a for a in c.get("args", []) if a["name"] == top]
            assert len(arg) == 1, (variant, func, name, c)
            got = value_at(arg[0]["value"], rest)
        else:
            assert len(c.get("ret", [])) == 1, (variant, func, c)
            got = value_at(c["ret"][0]["value"], name)
        assert same(text, got), (variant, what, func, name, text, c)
    return calls


LIBS = ["-F", "libla.so:*", "-F", "libnodbg.so:*"]


def test_library_arguments_and_results_are_what_the_program_says():
    for v in VARIANTS:
        out = tmp(f"libargs-{v}.data")
        p, _ = record([prog(v, "la_main")], *LIBS, out=out)
        calls = check_values(v, p, out, {"la_int", "la_str", "la_move", "la_sum", "la_name"})
        assert sorted(calls) == ["la_int", "la_move", "la_name", "la_str", "la_sum", "nd_add"], (v, calls)
        # no debug info: traced by name, no arguments, and the file says why
        assert "args" not in calls["nd_add"] and "ret" not in calls["nd_add"], (v, calls["nd_add"])
        libmeta = [l for l in ct("info", out).stdout.splitlines() if l.startswith("library.args")]
        assert any("libnodbg.so no DWARF" in l for l in libmeta) and any("libla.so on" in l for l in libmeta), libmeta


def test_library_arguments_chosen_by_args_globs():
    v = VARIANTS[-1]
    out = tmp("libargs-A.data")
    # 'LIB:GLOB' as -F names it, or a glob naming no library, with @names
    p, _ = record([prog(v, "la_main")], *LIBS, "-A", "libla.so:la_int", "-A", "la_move@dx",
                  "-A", "libnodbg.so:*", out=out)
    assert "libnodbg.so: no DWARF" in p.stderr, p.stderr
    calls = {c["func"]: c for c in replay_json(out) if "func" in c}
    assert [a["name"] for a in calls["libla.so:la_int"]["args"]] == ["a", "b"], calls
    assert [a["name"] for a in calls["libla.so:la_move"]["args"]] == ["dx"], calls
    assert all("args" not in calls[f] for f in ("libla.so:la_str", "libla.so:la_sum", "libnodbg.so:nd_add")), calls
    # -A naming only the program's functions: the libraries' are not captured
    out = tmp("libargs-A-main.data")
    record([prog(v, "la_main")], *LIBS, "-A", "main", out=out)
    assert not any(c.get("args") for c in replay_json(out) if c.get("func", "").startswith("lib")), out


def test_library_values_in_every_output():
    v = "gcc-O2"
    out = tmp("libargs-outputs.data")
    record([prog(v, "la_main")], *LIBS, out=out)
    text = ct("replay", out).stdout
    for shown in ('libla.so:la_int(a=4095, b=-7) = 4088;', 'libla.so:la_str(s="hello, lib") = 10;',
                  "libla.so:la_move(p={x:10 y:20}, dx=5) = {x:15 y:20};", 'libla.so:la_name(i=2) = "two";',
                  "libnodbg.so:nd_add();"):
        assert shown in text, (shown, text)
    jcalls = replay_json(out)
    ycalls, _ = replay_yaml(out)
    assert ycalls == jcalls
    doc = chrome(out)
    begins = [e for e in doc["traceEvents"] if e["ph"] == "B"]
    assert [e.get("args", {}).get("arguments") for e in begins] == [c.get("args") for c in jcalls], begins
    spans = spans_of(decode_json_lines(dump_otlp(out)))
    check_spans_equal_replay(out, spans)
    la_int = [s for s in spans if s["name"] == "libla.so:la_int"][0]["attrs"]
    assert la_int["calltrace.arg.a"] == "4095" and la_int["calltrace.result"] == "4088", la_int


def dump_otlp(path):
    out = path + ".otlp.jsonl"
    p = ct("dump", "--otlp", "-o", out, path)
    assert p.returncode == 0, p.stderr
    return out


def test_exec_d_program_arguments_under_follow():
    for v in VARIANTS:
        out = tmp(f"libargs-exec-{v}.data")
        p, _ = record([prog(v, "la_launch")], "--follow", out=out)
        calls = check_values(v, p, out)
        assert calls["app_mix"]["func"] == "la_main:app_mix" and calls["app_mix"]["args"], (v, calls)
        assert [a["name"] for a in calls["main"]["args"]] == ["argc", "argv"], (v, calls)
    # a thread's exec (tests/fixtures/c/cgraph): cg_tail's calls have their arguments
    for v in VARIANTS:
        out = tmp(f"libargs-thexec-{v}.data")
        record([fixture(os.path.join("cgraph", v, "cg_thexec"))], "--follow", out=out)
        exec_d = [c for c in replay_json(out) if c.get("func", "").startswith("cg_tail:")]
        xs = [(c["func"].split(".")[0], c["args"][0]["value"]) for c in exec_d if c["func"] != "cg_tail:main"]
        assert xs == [("cg_tail:chain", 1), ("cg_tail:f1", 1), ("cg_tail:f2", 2), ("cg_tail:f3", 3),
                      ("cg_tail:after", 3)], (v, xs)


def test_live_shows_exec_d_program_arguments():
    p = ct("live", "--follow", "--", prog("gcc-O0", "la_launch"))
    assert p.returncode == 0, p.stderr
    assert "la_main:app_mix(n=7, tag=\"exec'd\", p={x:3 y:-4}) = 705;" in p.stdout, p.stdout[-800:]


def test_library_opened_with_dlopen_named_by_its_path():
    for v in ("gcc-O0", "clang-O2"):
        out = tmp(f"libargs-dlopen-{v}.data")
        lib = os.path.realpath(prog(v, "libla.so"))
        p, _ = record([prog(v, "la_dlopen")], "-F", lib + ":la_*", out=out)
        calls = check_values(v, p, out)
        assert calls["la_int"]["func"] == lib + ":la_int", calls
        assert [a["value"] for a in calls["la_int"]["args"]] == [12, 30], calls


def test_library_with_separate_debug_info():
    # libc's DWARF is not in libc.so.6 but in libc6-dbg's file named by its
    # build id (/usr/lib/debug/.build-id/)
    for v in ("gcc-O0", "clang-O2"):
        out = tmp(f"libargs-libc-{v}.data")
        p, _ = record([prog(v, "la_main"), "libc"], "-F", "libc.so.6:malloc", "-F", "libc.so.6:free", out=out)
        s = said(p.stdout)
        calls = [c for c in replay_json(out) if "func" in c]
        big = [c for c in calls if c["func"] == "libc.so.6:malloc" and c["args"][0]["value"] == 12345]
        assert len(big) == 1 and int(big[0]["ret"][0]["value"], 16) == int(s[("ret", "malloc", "")], 16), (v, calls)
        freed = [c for c in calls if c["func"] == "libc.so.6:free"]
        assert [int(c["args"][0]["value"], 16) for c in freed] == [int(s[("arg", "free", "mem")], 16)], (v, calls)


def test_list_takes_library_globs_as_record_does():
    # list -F is "a GLOB too, as record takes it": 'LIB:GLOB' lists that
    # library of the program (it said "no function named libla.so:la_int in
    # la_main"); a listing is of one binary, so mixing is one line, exit 1
    main, lib = prog("gcc-O2", "la_main"), prog("gcc-O2", "libla.so")
    alone = ct("list", lib, "la_*", "-N", "la_str")
    assert alone.returncode == 0 and "la_int" in alone.stdout and "la_str" not in alone.stdout, alone
    for args in (["libla.so:la_*", "-N", "libla.so:la_str"], ["-F", "libla:la_*", "-N", "libla:la_str"]):
        p = ct("list", main, *args)
        assert p.returncode == 0 and p.stdout == alone.stdout, (args, p.stderr)
    for args, why in ((["libla.so:la_int", "main"], "'main' does not"),
                      (["-F", "libla.so:la_int", "-N", "libnodbg.so:nd_add"], "'libnodbg.so:nd_add' does not"),
                      (["-N", "libla.so:la_int"], "needs a -F 'libla.so:GLOB'"),
                      (["libnone.so:f"], "cannot find library libnone.so")):
        p = ct("list", main, *args)
        assert p.returncode == 1 and not p.stdout and why in p.stderr and p.stderr.count("\n") == 1, (args, p.stderr)


def test_assembly_function_results_only_where_rax_holds_one():
    """GNU as gives an assembly function (glibc's string functions,
    libm's __floor_sse41 in libc6-dbg's files) a nameless
    DW_TAG_unspecified_type result: DWARF says nothing of it.  RAX's word
    was shown for all of them -- as __floor_sse41's value, which is in XMM0.
    It is kept where the code sets RAX on every way to each RET (strlen's
    length), and left out elsewhere."""
    libm = "/lib/x86_64-linux-gnu/libm.so.6"
    p = ct("list", libm, "__floor_sse41", "__floor_c")
    assert p.returncode == 0, p.stderr
    sig, name = {}, None
    for line in p.stdout.splitlines():
        if line.startswith("  0x"):
            name = line.split()[-1]
        elif line.startswith("      (") and "->" in line:
            sig[name] = line.strip()
    assert "__floor_sse41" not in sig and "double" in sig.get("__floor_c", ""), p.stdout
    word = "hello-world-12345"
    p, out = record(["/bin/echo", word], "-F", "libc.so.6:__strlen_*", "-N", "libc.so.6:*_ifunc",
                    out=tmp("asm-results.data"))
    assert p.stdout == word + "\n", p.stdout
    calls = [c for c in replay_json(out) if c.get("func", "").startswith("libc.so.6:__strlen_")]
    lens = [int(c["ret"][0]["value"] or "0", 16) for c in calls]
    assert len(lens) == len(calls) and len(word) in lens, calls


def test_attached_library_whose_file_was_replaced():
    """A library upgraded on disk while the process runs (a package upgrade:
    the mapping shows "(deleted)"): -p -F 'LIB:GLOB' said the process had no
    such library loaded, and with its path gave a garbled hint
    ('/usr/lib/x86_64-linux-gnu//its/path'). The process runs the old file:
    it is probed through the mapping, and the calls show the old code's
    results."""
    d = tmp("replaced-lib")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    src, lib = os.path.join(d, "up.c"), os.path.join(d, "libup.so.1")
    with open(src, "w") as f:
        f.write("int up(int x) { return x + UP; }\n")
    main = os.path.join(d, "main.c")
    with open(main, "w") as f:
        f.write('#include <stdio.h>\n#include <unistd.h>\nint up(int);\n'
                'int main(void) { puts("ready"); fflush(stdout); long s = 0;\n'
                '  for (int i = 0; i < 30000; i++) { s += up(i); usleep(1000); } return s == 0; }\n')
    build = lambda n, out: subprocess.run(["gcc", "-g", "-O1", "-shared", "-fPIC", f"-DUP={n}", "-Wl,-soname,libup.so.1",
                                           "-o", out, src], check=True)
    build(7, lib)
    exe = os.path.join(d, "main")
    subprocess.run(["gcc", "-g", "-o", exe, main, lib, "-Wl,-rpath," + d], check=True)
    prog = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
    try:
        assert prog.stdout.readline() == "ready\n"
        build(9, lib + ".new")
        os.rename(lib + ".new", lib)  # (a new file under the name; the old one stays mapped)
        for name in ("libup.so.1", lib):
            out = tmp("replaced-lib.data")
            p = ct("record", "-o", out, "-p", str(prog.pid), "--duration", "300ms", "-F", name + ":up")
            assert p.returncode == 0, p.stderr
            calls = replay_json(out)
            assert calls and all(c["func"] == name + ":up" for c in calls), calls[:2]
            assert all(c["ret"][0]["value"] == c["args"][0]["value"] + 7 for c in calls if c["status"] == "returned")
        p = ct("record", "-o", tmp("x.data"), "-p", str(prog.pid), "-F", "/nonexistent/libno.so:f")
        assert p.returncode == 1 and "x86_64-linux-gnu//" not in p.stderr, p.stderr
        # a second process of the program, started since: it maps the new
        # file, where the first one's probes are not; its calls were left
        # out without a word
        second = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
        try:
            assert second.stdout.readline() == "ready\n"
            p = ct("record", "-o", tmp("x.data"), "-p", str(prog.pid), "-p", str(second.pid), "--duration", "300ms",
                   "-F", "libup.so.1:up")
            assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
            assert f"process {second.pid} maps another file for libup.so.1" in p.stderr, p.stderr
        finally:
            second.kill()
            second.wait()
    finally:
        prog.kill()
        prog.wait()


def test_attached_library_named_by_another_path_to_its_file():
    """-p -F '/lib/x86_64-linux-gnu/libc.so.6:GLOB' as ldd prints it, where
    the process's maps say /usr/lib/x86_64-linux-gnu/libc.so.6 (a merged
    /usr: /lib is a link): 'process N has no library ... loaded'. (A launched
    program took it.) The file is what counts, by whichever path; a
    directory linked to libc's stands for /lib here."""
    prog = subprocess.Popen([fixture("c_procs"), "thread", "300"], stdout=subprocess.PIPE, text=True)
    try:
        prog.stdout.readline()  # "thread TID": running, tick() sleeping in libc's nanosleep
        with open(f"/proc/{prog.pid}/maps") as f:
            libc = next(l.split()[-1] for l in f if l.split()[-1].endswith("/libc.so.6"))
        alias = tmp("libdir-alias")
        if os.path.lexists(alias):
            os.unlink(alias)
        os.symlink(os.path.dirname(libc), alias)
        other = os.path.join(alias, "libc.so.6")
        out = tmp("libc-alias.data")
        p = ct("record", "-o", out, "-p", str(prog.pid), "--duration", "300ms", "-F", other + ":*nanosleep*")
        assert p.returncode == 0, p.stderr
        calls = replay_json(out)
        assert calls and all(c["func"].startswith(other + ":") for c in calls), calls[:2]
    finally:
        prog.kill()
        prog.wait()
