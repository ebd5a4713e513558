"""C/SysV programs (threads, no goroutines) recorded with real uprobes."""
import os
import shutil
import signal
import subprocess

from lib import CT, ct, fixture, record, replay_json, run, tmp, trees


def c_fib_shape(n):
    return "c_fib" if n < 2 else f"c_fib({c_fib_shape(n - 1)},{c_fib_shape(n - 2)})"


def roots_of(out):
    forest = trees(replay_json(out))
    return forest, [r for roots in forest.values() for r in roots]


def test_fib_pie_and_nopie():
    for exe in ("c_core", "c_core_nopie"):
        p, out = record([fixture(exe), "fib", "7"], "-F", "c_fib")
        assert p.stdout == "fib 13\n"
        forest, roots = roots_of(out)
        assert [r.shape() for r in roots] == [c_fib_shape(7)], exe
        assert all(c["goid"] is None for c in replay_json(out))


def test_longjmp_unwinds():
    p, out = record([fixture("c_core"), "longjmp"])
    assert p.stdout == "longjmp 42\n"
    forest, roots = roots_of(out)
    assert [r.shape() for r in roots] == ["main(catcher(jumper(jumper(jumper(jumper))),recovered))"]
    status = {(n.func, n.call["depth"]): n.call["status"] for r in roots for n in r.walk()}
    assert [status[("jumper", d)] for d in range(2, 6)] == ["unwound"] * 4
    assert status[("recovered", 2)] == status[("catcher", 1)] == status[("main", 0)] == "returned"


def test_two_threads():
    p, out = record([fixture("c_core"), "threads"])
    assert p.stdout == "threads 3 6\n"
    forest, roots = roots_of(out)
    by_shape = sorted(r.shape() for r in roots)
    assert by_shape == ["main", "thread_main(thread_work(leaf_c,leaf_c))",
                        "thread_main(thread_work(leaf_c,leaf_c,leaf_c))"], by_shape
    tids = {r.call["tid"] for r in roots}
    assert len(tids) == 3, tids
    pid = roots[0].call["pid"]
    assert all(r.call["pid"] == pid for r in roots)


def test_tail_call_jmp():
    p, out = record([fixture("c_core"), "tail", "4"])
    assert p.stdout == "tail 15\n"
    forest, roots = roots_of(out)
    assert [r.shape() for r in roots] == ["main(tail_caller(tail_target))"]
    caller = roots[0].children[0]
    target = caller.children[0]
    assert target.call["tail"] is True
    assert caller.call["ts"] + caller.call["dur"] == target.call["ts"] + target.call["dur"]


def test_exit_codes_propagate():
    p, _ = record([fixture("c_core"), "exit", "5"], check=False)
    assert p.returncode == 5 and p.stdout == "exiting 5\n", (p.returncode, p.stdout, p.stderr)
    plain = run([fixture("c_core"), "nosuch"])
    p, _ = record([fixture("c_core"), "nosuch"], check=False)
    assert p.returncode == plain.returncode == 2 and p.stderr == plain.stderr


def test_main_open_when_another_thread_exits():
    # main waits in pthread_join while its thread calls exit(): main had
    # not returned, in both modes.  In auto mode main's exit probe (in
    # libc's __libc_start_call_main) is refused and its RETs are probed
    # from then on; its interim RETs going meanwhile (20 ms quiet) said
    # "interim gone" to the file, and replay ended main "unobserved"
    # (end not observed: it returns where no probe is) in about half the
    # runs.
    for mode in ("auto", "ret"):
        p, out = record([fixture("c_core"), "threadexit", "4"], f"--exit={mode}", check=False)
        assert p.returncode == 4 and p.stdout == "threadexit 4\n", (mode, p.returncode, p.stdout, p.stderr)
        st = {c["func"]: c["status"] for c in replay_json(out)}
        assert st == {"main": "exited", "exit_later": "exited"}, (mode, st)


def test_stripped_binary_with_separate_debug_file():
    # c_core_stripped has no .symtab: its functions and their DWARF come
    # from c_core_stripped.debug beside it (its .gnu_debuglink)
    exe = fixture("c_core_stripped")
    assert "symtab" not in run(["readelf", "-S", "-W", exe]).stdout
    p, out = record([exe, "fib", "7"], "-F", "c_fib")
    assert p.stdout == "fib 13\n"
    forest, roots = roots_of(out)
    assert [r.shape() for r in roots] == [c_fib_shape(7)]
    # arguments are decoded from the debug file's DWARF
    assert sorted({c["args"][0]["value"] for c in replay_json(out)}) == list(range(8))
    lst = ct("list", exe, "c_fib")
    assert lst.returncode == 0 and "separate debug file " + exe + ".debug" in lst.stdout, lst.stdout

    # without it, or with a debug file of another build under its name:
    # one line that says where it looked
    d = tmp("nodebug")
    os.makedirs(d, exist_ok=True)
    lone = os.path.join(d, "c_core_stripped")
    shutil.copy(exe, lone)
    for stale in (None, fixture("c_core_nopie")):
        if stale:
            run(["objcopy", "--only-keep-debug", stale, lone + ".debug"])
        # its calls of library functions are what is traced then, and one
        # line says so
        p = ct("record", "-o", os.path.join(d, "x.data"), "--", lone, "fib", "3")
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 0 and len(lines) == 1, p.stderr
        assert "is stripped" in lines[0] and "no separate debug file" in lines[0] and \
            "c_core_stripped.debug in " + d in lines[0] and "-dbgsym" in lines[0] and "@plt" in lines[0], lines[0]
        calls = replay_json(os.path.join(d, "x.data"))
        assert calls and all(c["func"].endswith("@plt") for c in calls), calls[:3]


def test_no_calls_says_why():
    # a function that exists but never runs in this mode
    p, out = record([fixture("c_core"), "longjmp"], "-F", "c_fib")
    # record says it at its end, and so does live (after its empty tree)
    lv = ct("live", "-F", "c_fib", "--", fixture("c_core"), "longjmp")
    assert lv.returncode == 0, lv.stderr
    for cmd, r in [(["record"], p), (["live"], lv)] + [
            (cmd, ct(*cmd, out)) for cmd in (["replay"], ["replay", "--format=json"], ["report"], ["dump", "--folded"])]:
        assert r.returncode == 0, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "no calls recorded: the 1 function traced in" in lines[0] \
            and "calltrace list" in lines[0], (cmd, r.stderr)
    # a stripped program knows only its exported functions (and its calls
    # of library functions: none here but __cxa_finalize's, -N'd); the note
    # says how to trace its libraries instead
    src, exe = tmp("exported.c"), tmp("exported")
    with open(src, "w") as f:
        f.write("int unused_export(int x) { return x + 1; }\nint main(void) { return 0; }\n")
    b = run(["gcc", "-O2", "-Wl,--export-dynamic-symbol=unused_export", "-s", "-o", exe, src])
    assert b.returncode == 0, b.stderr
    p, out = record([exe], "-N", "__cxa_finalize@plt")
    for r in (p, ct("replay", out)):
        assert "it is stripped" in r.stderr and "-F 'libc.so.6:*'" in r.stderr, r.stderr
    # a trace with calls says nothing of the kind
    p, out = record([fixture("c_core"), "fib", "3"], "-F", "c_fib")
    assert "no calls" not in p.stderr and "no calls" not in ct("replay", out).stderr
    # nor does record when a signal stopped the program it started (that is why)
    p = subprocess.Popen([CT, "record", "-o", tmp("stopped.data"), "-F", "trick_leaf", "--",
                          fixture("c_core"), "wait", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "waiting\n"
    p.send_signal(signal.SIGTERM)
    out_s, err = p.communicate(timeout=20)
    assert out_s == "term\n" and p.returncode == 0 and "no calls" not in err, (out_s, p.returncode, err)


def test_gcc_clone_is_matched_by_the_name_before_its_suffix():
    """gcc makes look (called only with n = 3) a clone, look.constprop.0:
    -F look means it (as uftrace matches), in record, list and replay's
    -F/-N, and list says which suffix the name matched before.  Before,
    record said there was no function named look."""
    binary = fixture("c_core")
    p = ct("list", binary, "look")
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if "look." in l and not l.startswith("#")]
    assert len(lines) == 1 and lines[0].split()[4] == "look.constprop.0", p.stdout
    assert lines[0].endswith("  (look: matched before GCC's suffix .constprop.0)"), p.stdout
    p = ct("list", binary, "look.*")  # its own name: nothing to say
    assert "look.constprop.0\n" in p.stdout and "matched before" not in p.stdout, p.stdout
    p, out = record([binary, "clone", "4"], "-F", "look")
    assert p.stdout == "clone 1 -1\n", p.stdout
    calls = [c for c in replay_json(out) if c.get("func")]
    assert sorted((c["func"], c["status"], c["args"][1]["value"], c["ret"][0]["value"]) for c in calls) == \
        [("look.constprop.0", "returned", "beta", 1), ("look.constprop.0", "returned", "delta", -1)], calls
    assert len([c for c in replay_json(out, "-F", "look") if c.get("func")]) == 2
    assert [c for c in replay_json(out, "-N", "look") if c.get("func")] == []
    p = ct("record", "-o", tmp("clone-none.data"), "-F", "loo", "--", binary, "clone", "4")
    assert p.returncode != 0 and "no function named loo" in p.stderr, p.stderr


STRIPPED_LIBCALLS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b)
{
    int r = strcmp(*(char *const *)a, *(char *const *)b);
    return r < 0 ? -1 : r > 0;
}
int main(int argc, char **argv)
{
    qsort(argv + 1, argc - 1, sizeof(*argv), cmp);
    for (int i = 1; i < argc; i++)
        puts(argv[i]);
    return (int)strlen(argv[0]) > 1000;
}
"""


def test_stripped_program_shows_its_library_calls():
    # A stripped program (no symbols, nothing exported): what it has are
    # its calls of library functions, probed at its PLT stubs and at the
    # return addresses of its calls of them, as uftrace shows by default.
    src, exe = tmp("libcalls.c"), tmp("libcalls")
    with open(src, "w") as f:
        f.write(STRIPPED_LIBCALLS)
    b = run(["gcc", "-O1", "-s", "-o", exe, src])
    assert b.returncode == 0, b.stderr
    lst = ct("list", exe)
    assert lst.returncode == 0 and "qsort@plt" in lst.stdout and "puts@plt" in lst.stdout, lst.stdout + lst.stderr
    p, out = record([exe, "pear", "apple", "fig"])
    assert p.stdout == "apple\nfig\npear\n"
    forest, roots = roots_of(out)
    shapes = [r.shape() for r in roots]
    # the callback's strcmp calls nest in qsort (the first of them may end
    # unobserved: its return address, in libc, is found while recording)
    q = [r for r in roots if r.call["func"] == "qsort@plt"]
    assert len(q) == 1 and q[0].children and {c.call["func"] for c in q[0].children} == {"strcmp@plt"}, shapes
    assert q[0].call["status"] == "returned", q[0].call
    puts = [r.call for r in roots if r.call["func"] == "puts@plt"]
    assert len(puts) == 3 and all(c["status"] == "returned" for c in puts), shapes
    assert any(r.call["func"] == "strlen@plt" for r in roots), shapes
    # a glob without "@plt" means the program's own functions: none here
    r = ct("record", "-o", tmp("libcalls2.data"), "-F", "*", "--", exe)
    assert r.returncode != 0 and "has no function symbols" in r.stderr, r.stderr
    assert "-F 'LIB:GLOB'" in r.stderr, r.stderr
    # a stripped static program (Debian's ldconfig) loads no library that
    # -F 'LIB:GLOB' could name: the line does not suggest it
    if os.path.exists("/sbin/ldconfig") and " .interp " not in run(["readelf", "-SW", "/sbin/ldconfig"]).stdout:
        r = ct("record", "-o", tmp("static.data"), "--", "/sbin/ldconfig", "-p")
        assert r.returncode == 1 and "has no function symbols" in r.stderr and "LIB:GLOB" not in r.stderr, r.stderr
    # a program with symbols traces its own functions, not its PLT stubs,
    # unless asked: -F '*@plt'
    p, out = record([fixture("c_core"), "fib", "3"])
    assert not [c for c in replay_json(out) if c["func"].endswith("@plt")]
    p, out = record([fixture("c_core"), "fib", "3"], "-F", "c_fib", "-F", "*@plt")
    assert [c for c in replay_json(out) if c["func"].endswith("@plt")]
