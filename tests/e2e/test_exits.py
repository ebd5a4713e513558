"""Calls observed from the caller (--exit=auto, the default) against calls
observed at the callee's entry and RETs (--exit=ret): every fixture gives
the same calls -- function, goroutine/thread, depth, status, parent, order,
integer, bool, string and []int argument and result values -- and in auto mode every returned call
lies inside its returned parent.  Plus the fixtures built to fool auto mode:
a function called directly and through a function value, a panic recovered
deep down where the recovering frame resumes at a return site, a loop and
jump tables landing on return sites, a longjmp out of calls in tail
position, a signal handler, a call from a call site nobody planned."""
import collections
import json
import os
import re
import subprocess

from lib import CT, TEXT_LINE, all_nodes, ct, fixture, record, record_chunks, replay_json, run, tmp, trees, uvar

GO1 = {"GOMAXPROCS": "1"}  # goroutine ids repeat between runs

# (name, argv, flags, env)
CASES = [
    ("go fib", ["go_core", "fib", "10"], [], GO1),
    ("go fib pie", ["go_core_pie", "fib", "7"], ["-F", "main.fib"], GO1),
    ("go goroutines", ["go_core", "goroutines", "6"], [], GO1),
    ("go deep (stack growth)", ["go_core", "deep", "3000"], ["-F", "main.deep"], GO1),
    ("go deep fib (stack growth)", ["go_core", "deepfib", "18"], ["-F", "main.deepFib"], GO1),
    ("go panic", ["go_core", "panic", "3"], [], GO1),
    ("go wrapper (tail jump)", ["go_core", "wrapper", "4"], [], GO1),
    ("go goexit", ["go_core", "goexit"], [], GO1),
    ("go loop", ["go_core", "loop", "12"], [], GO1),
    # loops whose jcc, the exit probe of one call, is the next call's entry
    # too; one whose call two ways lead to; one left early (plan/ahead.c)
    ("go calls seen ahead", ["go_core", "ahead", "40"], [], GO1),
    ("go calls seen ahead, no arguments", ["go_core", "ahead", "40"], ["--no-args"], GO1),
    ("go sleepy", ["go_core", "sleepy"], [], GO1),
    ("go mixed", ["go_core", "mixed"], [], GO1),
    ("go deeprecover", ["go_core", "deeprecover"], [], GO1),
    ("go results", ["go_core", "results", "6"], [], GO1),
    ("go results stored, moved", ["go_core", "stored", "5"], [], GO1),
    ("go results of tail calls", ["go_core", "relays", "5"], [], GO1),
    ("go results of recursive tail calls", ["go_core", "rrelays", "6"], [], GO1),
    # a result added to a struct field before the exit site (json's refill)
    ("go results added to a struct field", ["go_core", "refills", "5"], [], GO1),
    # a tail call's result returned in another register of the caller's own
    ("go results of tail calls in other registers", ["go_core", "methods", "5"], [], GO1),
    ("go realworld", ["realworld"], [], GO1),
    ("go cgo", ["realworld_cgo"], ["-F", "main.*", "-F", "c_*"], GO1),
    ("go interface method", ["go_core", "iface", "30"], [], GO1),
    ("go interface leaf", ["go_core", "ifaceleaf", "30"], [], GO1),
    ("go deferred closures", ["go_core", "deferloop", "9"], [], GO1),
    # a call right before an open-coded deferred closure runs, one panicking
    ("go call before a deferred closure", ["go_core", "deferred", "6"], [], GO1),
    # closures with parameters: called by their parent, by what they are
    # passed to, by go's and defer's wrappers and by sort, from those sites
    ("go closures with parameters", ["go_core", "closures", "5"], [], GO1),
    # from one call site back to back, before its exit probe is in: one call each
    ("go interface calls back to back", ["go_core", "ifaceloop", "300"], ["-F", "main.(*byK).scale"], GO1),
    # from one call site each in a tight loop of a traced function, from the
    # first call on (an interface method, a method value's wrapper): planned
    ("go interface calls in a hot loop", ["go_core", "ifacehot", "200"], [], GO1),
    # one call site, two functions through values: one exit probe there for both
    ("go function values from one site", ["go_core", "siblings", "6"], ["-F", "main.step*"], GO1),
    # calls through values in tail position, found while recording: with their callers
    ("go found calls in tail position", ["go_core", "tails", "6"], [], GO1),
    # called last by `go` and `defer` wrappers: they end where those return
    # to, goexit and the deferring function, or, run by the runtime (a defer
    # in a loop), at their return addresses again
    ("go calls in tail position in wrappers", ["go_core", "wrappers", "4"], [], GO1),
    # a function value called last by an untraced caller whose other path
    # joins at its return address (sync.Pool.Get's New): its RETs instead
    ("go found call joined at its exit", ["go_core", "pool", "9"], ["-F", "main.newPoolItem", "-F", "main.poolRound"],
     GO1),
    # the same with a library traced: call sites found while recording take
    # the file's next ids, after the library's; their interface arguments
    # name their dynamic types (the program's RTYPES)
    ("go found calls in tail position, a library traced", ["go_core_ext", "tails", "6"],
     ["-F", "main.*", "-F", "libc.so.6:malloc"], GO1),
    ("go found call joined at its exit, a library traced", ["go_core_ext", "pool", "9"],
     ["-F", "main.newPoolItem", "-F", "main.poolRound", "-F", "libc.so.6:malloc"], GO1),
    # a call through reflect.Value.Call, deeper than a call that ended
    # unobserved (no exit probe at its call site yet) and whose return
    # address is still in its slot: not inside it (docker's NaturalLess)
    ("go reflect call after an unobserved call", ["go_core", "reflectafter", "8"],
     ["-F", "main.raLeaf", "-F", "main.raHelp", "-F", "main.raNext*"], GO1),
    # a leaf called through its address, its entry seen after its prologue
    ("go leaf entry after its prologue", ["go_core", "tokens", "6"], [], GO1),
    # a method value's wrapper calling it last, from a Write called by
    # untraced code: its first calls end at the interim RETs, the method's
    # one frame below its entry's key, Write's still open (age's writeWrapped)
    ("go method value under a call found while recording", ["go_core", "fmwrite", "4"], [], GO1),
    ("c fib", ["c_core", "fib", "9"], ["-F", "c_fib"], None),
    ("c fib nopie", ["c_core_nopie", "fib", "6"], ["-F", "c_fib"], None),
    ("c longjmp", ["c_core", "longjmp"], [], None),
    ("c threads", ["c_core", "threads"], [], None),
    ("c tail", ["c_core", "tail", "4"], [], None),
    ("c tricks", ["c_core", "tricks"], [], None),
    # a struct of 8 KiB by value: its return site is past the caller's
    # freeing of the argument area (keyed pages above the call, not a
    # switch to another stack)
    ("c struct of 8 KiB by value", ["c_core", "bigarg", "5"], ["-F", "big_by_value", "-F", "c_fib", "-F", "main"],
     None),
    # a function called through a table only, into whose body another one
    # jumps past its single-stepped first instruction (glibc's mempcpy into
    # memcpy's): its CHECK stays at its entry, not where the jump lands
    # (trick_jumper untraced: where it ends, ret cannot read its result)
    ("c jump into a function's body", ["c_core", "jumpin", "4"], ["-F", "trick_jumped", "-F", "main"], None),
    # code running on into the next function, and a tail jump to the PLT
    ("c falls through", ["c_core", "falls", "4"], ["-F", "trick_falls", "-F", "trick_fallen", "-F", "plt_tail"], None),
    ("c tplongjmp", ["c_core", "tplongjmp"], [], None),
    # the setjmp in the function's cold part, the longjmp resuming at a return address
    ("c setjmp in a cold part", ["c_split", "200"], ["-F", "jump"], None),
    # through _setjmp@plt, a function once a glob names a stub, not traced here
    ("c setjmp through an untraced PLT stub", ["c_split", "whole"], ["-F", "leap", "-F", "puts@plt"], None),
    # the program's PLT stubs traced too (-F '*@plt'): _setjmp@plt is a
    # traced returns-twice function, longjmp@plt never returns
    ("c tplongjmp, PLT stubs", ["c_core", "tplongjmp"], ["-F", "*", "-F", "*@plt"], None),
    ("c longjmp, PLT stubs", ["c_core", "longjmp"], ["-F", "*", "-F", "*@plt"], None),
    ("c threads, PLT stubs", ["c_core", "threads"], ["-F", "*", "-F", "*@plt"], None),
    # PLT stubs seen from their callers, their jump a role of the call's probe:
    # called in a loop; qsort calling the program back inside qsort@plt; one
    # called last in its caller; setjmp and longjmp through theirs; one
    # also tail-jumped to (to_num, untraced: the stub keeps its own probe)
    ("c stubs in a loop", ["c_stubs", "loop", "5"], ["-F", "*", "-F", "*@plt"], None),
    ("c stubs, a callback inside qsort@plt", ["c_stubs", "sort", "5"], ["-F", "*", "-F", "*@plt"], None),
    ("c stubs, one called last", ["c_stubs", "last", "3"], ["-F", "*", "-F", "*@plt"], None),
    ("c stubs, setjmp and longjmp", ["c_stubs", "jump", "4"], ["-F", "*", "-F", "*@plt"], None),
    ("c stubs, one called and tail-jumped to", ["c_stubs", "mixed", "3"],
     ["-F", "*@plt", "-F", "doubled", "-F", "main"], None),
    ("c signal", ["c_core", "signal"], [], None),
    ("c static glibc", ["c_vex_static", "xyz"], [], None),
    # built -pg -mfentry -mnop-mcount: entries at 5-byte nops, no trap
    ("c fib fentry", ["c_core_fentry", "fib", "9"], ["-F", "c_fib"], None),
    ("c longjmp fentry", ["c_core_fentry", "longjmp"], [], None),
    ("c threads fentry", ["c_core_fentry", "threads"], [], None),
    ("c signal fentry", ["c_core_fentry", "signal"], [], None),
    ("c++ exceptions", ["cxx_exc"], ["-F", "cx_*"], None),
    ("c++ exceptions, inline landing pads", ["cxx_exc_inline"], ["-F", "cx_*"], None),
    # landing pads looked at one call at a time: a catch that retries, one
    # that joins the next call, a rethrow, destructors only, a catch that
    # returns from a try's last call, an exception through a frame without
    # a pad for it (pads.cc); gcc (pads in .cold parts) and clang
    ("c++ landing pads", ["cxx_pads"], ["-F", "pd_*"], None),
    ("c++ landing pads, clang", ["cxx_pads_clang"], ["-F", "pd_*"], None),
    # functions whose address only tables in data hold (virtual methods, a
    # handler array), called through them from the program (one by a tail
    # jump: `return s->area(k)`) and from libstdc++ (a streambuf's
    # overrides, under a catch there: their RETs instead)
    ("c++ virtual methods and handler tables", ["cxx_virt", "3"], [], None),
    ("c++ virtual methods and handler tables, clang", ["cxx_virt_clang", "3"], [], None),
    ("c++ app, exceptions", ["cpp_app", "throw"], [], None),
    ("c++ app clang, exceptions", ["cpp_app_clang", "throw"], [], None),
    ("c++ app, values", ["cpp_app", "values"], [], None),
    ("c++ app -O0, names", ["cpp_app_O0", "names"], [], None),
    ("rust app, a caught panic", ["rust_app", "panic"], [], None),
    ("rust app -O0, a caught panic", ["rust_app_O0", "panic"], [], None),
    ("rust app, values", ["rust_app", "values"], [], None),
    # only a library's functions: the program has no plan, plan.exits says the libraries' mode
    ("c library functions only", ["libargs/gcc-O2/la_main"], ["-F", "libla.so:*"], None),
]


def int_values(vals):
    """The values that do not differ between runs: integers, bools, strings,
    slices of ints, and an interface value's dynamic type."""
    out = []
    for v in vals or []:
        t = v.get("type", "")
        if t.startswith(("int", "uint", "bool", "_Bool", "long", "unsigned", "C.int")) or t in ("string", "[]int"):
            out.append((v.get("name"), v.get("value")))
        elif isinstance(v.get("value"), dict) and "type" in v["value"]:
            out.append((v.get("name"), "dynamic type " + str(v["value"]["type"])))
    return tuple(out)


def canon(calls, unplanned_ok=False):
    """Per goroutine/thread (in order of first call), its calls in entry
    order as (func, depth, status, parent index, tail, int args, int
    results).  Thread ids differ from run to run, goroutine ids do not (one
    P); processes are numbered in order of appearance."""
    pids, threads = {}, {}
    for c in calls:
        if "func" not in c:
            continue
        pid = pids.setdefault(c["pid"], len(pids))
        if c.get("stack") == "system":
            # (not by thread: a goroutine back from a cgo call whose P
            # sysmon took meanwhile may run on another M, and the slower
            # the call -- a single-step in it -- the likelier)
            key = (pid, "s", c["goid"])
        elif c["goid"] is not None:
            key = (pid, "g", c["goid"])
        else:
            key = (pid, "t", c["tid"])
        seq = threads.setdefault(key, [])
        stack = [i for i in range(len(seq))]
        # the parent: the last call so far one level up
        parent = next((i for i in range(len(seq) - 1, -1, -1) if seq[i][1] == c["depth"] - 1), None) \
            if c["depth"] else None
        # (an unplanned call has no exit probe: no results)
        # (auto: a call from a call site found while recording, before its
        # exit probe was in, is unobserved, with no results, and so are
        # the calls in tail position in it: FIRST marks them)
        first = c["status"] == "unobserved"
        seq.append((c["func"], c["depth"], c["status"], parent, bool(c.get("tail")),
                    int_values(c.get("args")),
                    () if unplanned_ok else ("ret" in c, len(c.get("ret") or ()), int_values(c.get("ret"))),
                    first))
        del stack
    out = []
    for key, seq in threads.items():
        name = (key[0], key[1], key[2]) if key[1] == "g" else (key[0], key[1])
        out.append((name, seq))
    # threads of one process: by their first call's function and content
    return sorted(out, key=lambda x: repr(x))


def first_calls_alike(a, r):
    """Auto's canon A and ret's R, where one's call was the first from a
    call site or return address found while recording (unobserved, no
    results) and the other's the same call returned (its exit probe was in
    already: both modes find return addresses where tail jumps to untraced
    code return, and the program is never held for them): both as 'first';
    the flag dropped."""
    def strip(x, blank):
        return x[:2] + (("first",) + x[3:6] + ((),) if blank else x[2:7])

    def alike(x, y):
        return x[7] and y[2] == "returned" and y[:2] == x[:2]
    out_a, out_r = [], []
    for (ka, sa), (kr, sr) in zip(a, r):
        blank = [i < len(sr) and (alike(x, sr[i]) or alike(sr[i], x)) for i, x in enumerate(sa)]
        out_a.append((ka, [strip(x, blank[i]) for i, x in enumerate(sa)]))
        out_r.append((kr, [strip(x, i < len(blank) and blank[i]) for i, x in enumerate(sr)]))
    return out_a + a[len(r):], out_r + r[len(a):]


def check_nesting(calls, what):
    """Every returned call lies within its returned parent."""
    todo = [r for roots in trees(calls).values() for r in roots]
    while todo:
        n = todo.pop()
        c = n.call
        for k in n.children:
            kc = k.call
            assert kc["ts"] >= c["ts"], (what, c, kc)
            if c["status"] == "returned" and kc["status"] == "returned":
                assert kc["ts"] + kc["dur"] <= c["ts"] + c["dur"], (what, c, kc)
            todo.append(k)


def info_stats(path):
    out = ct("info", path).stdout
    kv = {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            kv.setdefault(parts[0], parts[1].strip())
    return kv


def interim_counts(path):
    """info's interim line: (calls whose end the interim RETs saw, their
    hits that saw none, functions whose interim RETs were taken out);
    (0, 0, 0) without interim RETs."""
    line = info_stats(path).get("interim")
    if not line:
        return 0, 0, 0
    m = re.match(r"(\d+) \(calls whose end the interim RETs saw; (\d+) hits of theirs saw none; "
                 r"(\d+) functions' taken out, \d+ links made again or closed, \d+ probes placed or taken out\)$", line)
    assert m, line
    return tuple(map(int, m.groups()))


def calls_info(path):
    """How the recorded calls ended (info --calls)."""
    out = ct("info", "--calls", path).stdout
    m = re.search(r"returned (\d+) \(at a RET (\d+), after the call (\d+) \((\d+) single-stepped[,)]", out)
    assert m, out
    d = dict(zip(("returned", "ret", "after", "stepped"), map(int, m.groups())))
    m = re.search(r"single-stepped, (\d+) at exit probes added while recording", out)
    d["dynamic"] = int(m.group(1)) if m else 0
    return d


def record_mode(argv, flags, env, mode):
    out = tmp("exits-%s.data" % mode)
    p, out = record(argv, "--exit=" + mode, *flags, out=out, check=False, env=env)
    return p, out


def differential(name, argv, flags, env, unplanned_ok=False):
    argv = [fixture(argv[0])] + argv[1:]
    plain = run(argv, env=dict(os.environ, **env) if env else None)
    got = {}
    for mode in ("auto", "ret"):
        p, out = record_mode(argv, flags, env, mode)
        assert p.returncode == plain.returncode, (name, mode, p.returncode, plain.returncode, p.stderr)
        assert p.stdout == plain.stdout, (name, mode, p.stdout, plain.stdout)
        calls = replay_json(out)
        assert calls, (name, mode)
        check_nesting(calls, (name, mode))
        got[mode] = (canon(calls, unplanned_ok), info_stats(out), calls)
    a, r = got["auto"][0], got["ret"][0]
    a, r = first_calls_alike(a, r)
    if a != r:
        for (ka, sa), (kr, sr) in zip(a, r):
            if (ka, sa) != (kr, sr):
                diff = next((i, x, y) for i, (x, y) in enumerate(zip(sa + [None], sr + [None])) if x != y)
                raise AssertionError(f"{name}: auto and ret differ in {ka} vs {kr} at call {diff}")
        raise AssertionError(f"{name}: auto has {len(a)} threads, ret {len(r)}")
    return got


def test_auto_and_ret_give_the_same_calls():
    observed = 0
    for name, argv, flags, env in CASES:
        got = differential(name, argv, flags, env)
        st = got["auto"][1]
        assert st.get("plan.exits", "").startswith("auto"), (name, st.get("plan.exits"))
        assert got["ret"][1].get("plan.exits", "").startswith("ret"), name
        # nobody calls these functions from anywhere the plan does not know
        assert st.get("unplanned") in ("0", None), (name, st.get("unplanned"))
        assert not any(c.get("unplanned") for c in got["auto"][2]), name
        if not st.get("plan.exits", "").startswith("auto: 0 "):
            observed += 1
    # most fixtures have functions observed from their callers
    assert observed >= len(CASES) - 3, observed


def stripped_copy(name):
    """A copy of fixture NAME without any symbol (and no debug file beside it)."""
    exe = tmp(name + "_nosym")
    b = run(["strip", "--strip-all", "-o", exe, fixture(name)])
    assert b.returncode == 0, b.stderr
    return exe


def test_stripped_program_calls_observed_from_functions_eh_frame_bounds():
    """A stripped C program is traced at its PLT stubs (by default).  Its
    own code has no symbol: .eh_frame's FDEs give its functions' bounds, and
    the calls from them are observed from there, as from named functions
    (the same plan as with symbols).  Bounds that were wrong -- an exit walk
    run past a function's end, a call taken for one inside another
    instruction -- would put exits where the calls do not return: auto and
    ret must give the same calls; in c_core at least half of them observed
    after the call, emulated (C++: functions with landing pads
    keep their callees' return sites)."""
    plain, nopie = stripped_copy("c_core"), stripped_copy("c_core_nopie")
    split, cxx = stripped_copy("c_split"), stripped_copy("cxx_exc")
    # (argv, how many functions at least are observed from their callers)
    cases = [([plain, "longjmp"], 5), ([plain, "tplongjmp"], 5), ([plain, "threads"], 5), ([plain, "signal"], 5),
             ([plain, "tail", "4"], 5), ([plain, "tricks"], 5), ([nopie, "fib", "6"], 5), ([nopie, "longjmp"], 5),
             ([split, "200"], 1), ([cxx], 1)]
    for argv, least in cases:
        name = "%s, stripped" % " ".join([os.path.basename(argv[0])] + argv[1:])
        got = differential(name, argv, [], None)
        st = got["auto"][1]
        m = re.match(r"auto: (\d+) of (\d+) functions", st.get("plan.exits", ""))
        assert m and int(m.group(1)) >= least, (name, st.get("plan.exits"))
        assert st.get("unplanned") in ("0", None), (name, st.get("unplanned"))
        assert all(c["func"].endswith("@plt") for c in got["auto"][2]), name
        calls = calls_info(tmp("exits-auto.data"))
        # (at least half of them emulated: all were single-stepped without FDE bounds)
        assert least < 5 or calls["after"] >= 2 * calls["stepped"], (name, calls)


def test_exits_seen_by_the_next_calls_entry_give_the_same_calls():
    """Without values to read, a call's exit that is the next call of a
    function with a CHECK is not probed: that CHECK's hit closes the call
    before opening its own (one hit instead of two: fib's first recursive
    call ends at the second).  Every fixture, auto against ret, --no-args;
    stack growth (go deep) re-runs a CHECK for the same call, longjmp and
    signals leave calls in between."""
    merged = {}
    for name, argv, flags, env in CASES:
        got = differential(name, argv, ["--no-args"] + flags, env)
        st = got["auto"][1]
        assert st.get("unplanned") in ("0", None), (name, st.get("unplanned"))
        sites = file_sites(tmp("exits-auto.data"))
        at_check = [s for s in sites if s["kind"] == 6 and s["flags"] & 0x8]
        for s in at_check:
            # closed first, then the call whose CHECK sends them: the chain
            # ends at that CALL site, a companion role, at the same address
            k = s
            while k["next"] != -1 and sites[k["next"]]["kind"] != 5:
                k = sites[k["next"]]
            call = sites[k["next"]]
            assert call["addr"] == s["addr"] and call["flags"] & 0xA == 0xA, (name, s, call)
        if at_check:
            merged[name] = len(at_check)
    for name in ("go fib", "go deep fib (stack growth)", "c fib", "c fib fentry"):
        assert merged.get(name), (name, merged)


def test_reflectcall_jump_through_a_register_to_its_call_frame():
    """runtime.reflectcall is the runtime's assembly: `lea runtime.call16(%rip),
    %rax; jmp *%rax` (by the frame's size), untraced code that calls the
    function reflect.Value.Call was given and returns to reflectcall's
    caller.  That jump is a tail jump to a known address, as `jmp f` is:
    with --exit=ret its call returns at the probe on its return address
    (was unwound there: a Go function's jump through a register was never
    taken for an exit), as with --exit=auto, the reflected function inside."""
    flags = ["-F", "main.ra*", "-F", "runtime.reflectcall"]
    got = differential("go reflectcall", ["go_core", "reflectafter", "8"], flags, GO1)
    for mode in ("auto", "ret"):
        calls = got[mode][2]
        rc = [n for roots in trees(calls).values() for r in roots for n in r.walk() if n.func == "runtime.reflectcall"]
        assert len(rc) == 8, (mode, len(rc))
        # auto: reflectcall's ABI wrapper calls it last, from reflect's code:
        # where that returns to is found while recording (the program is not
        # held for its probe), the calls before it is in end unobserved
        want = {"returned"} if mode == "ret" else {"returned", "unobserved"}
        assert {n.call["status"] for n in rc} <= want, (mode, [(n.shape(), n.call["status"]) for n in rc])
        assert all(len(n.children) == 1 and n.children[0].func.startswith("main.raNext") for n in rc), \
            (mode, [n.shape() for n in rc])


def test_functions_an_untraced_caller_calls_never_to_return():
    """runtime.mcall(fn) switches to g0 and calls fn, which never returns:
    park_m and goexit0 schedule another goroutine, and g0's frames are
    left, its stack started again at its top by the next mcall.  mcall's
    `call *%r12` has no exit probe: auto took them for calls whose end it
    did not see (unobserved), ret for unwound (their RETs never ran), and
    the next one at the same key for a tail call of the one left there
    (another goroutine's park_m inside goexit0 inside park_m).  Their
    interim RETs were in all along, which end every call of them that
    returns: they did not return, unwound in both (exited: the process
    ended inside one; which M runs which goroutine is the scheduler's
    choice), each a call of its own; main's calls the same in both."""
    argv = [fixture("go_core"), "goroutines", "6"]
    flags = ["-F", "main.*", "-F", "runtime.park_m", "-F", "runtime.goexit0"]
    never, mains = {}, {}
    for mode in ("auto", "ret"):
        p, out = record_mode(argv, flags, GO1, mode)
        assert p.returncode == 0, (mode, p.stderr)
        calls = [c for c in replay_json(out) if "func" in c]
        check_nesting(calls, mode)
        ours = [c for c in calls if c["func"] in ("runtime.park_m", "runtime.goexit0")]
        by = collections.Counter((c["func"], c["status"]) for c in ours)
        assert by[("runtime.park_m", "unwound")] >= 3 and by[("runtime.goexit0", "unwound")] >= 3, (mode, by)
        assert {c["status"] for c in ours} <= {"unwound", "exited"}, (mode, by)
        never[mode] = sorted((c["func"], c["goid"], c["depth"], bool(c.get("tail"))) for c in ours)
        assert all(n[2] == 0 and not n[3] for n in never[mode]), (mode, never[mode])
        mains[mode] = canon([c for c in calls if c["func"].startswith("main.")])
    assert never["auto"] == never["ret"], never
    a, r = first_calls_alike(mains["auto"], mains["ret"])
    assert a == r, (a, r)


def test_unplanned_caller_counted_and_tree_right():
    argv, env = ["go_core", "unplanned"], GO1
    got = differential("go unplanned", argv, [], env, unplanned_ok=True)
    st = got["auto"][1]
    assert int(st.get("unplanned", "0")) == 1, st
    calls = got["auto"][2]
    up = [c for c in calls if c.get("unplanned")]
    assert [c["func"] for c in up] == ["main.plannedTarget"], up
    # its call site is found while recording, after that one call: unobserved
    assert up[0]["status"] == "unobserved" and up[0]["args"][0]["value"] == 2, up
    (main,) = [r for roots in trees(calls).values() for r in roots if r.func == "main.main"]
    un = next(n for n in main.walk() if n.func == "main.unplanned")
    # sort.Sort's calls of byThree's methods come after that call ended,
    # deeper than its frame was: the kernel side saw its return address
    # slot overwritten (they nested under it before)
    sort = ",".join(["main.(*byThree).Len"] + ["main.(*byThree).Less", "main.(*byThree).Swap"] * 2 +
                    ["main.(*byThree).Less"])
    assert un.shape() == "main.unplanned(main.plannedTarget(main.plannedHelper),main.findFunc," \
                         f"main.plannedTarget(main.plannedHelper),{sort},main.plannedHelper)", un.shape()


def test_calls_through_an_interface_get_their_exits_while_recording():
    """(*byK).scale's address is in an itab: no scan finds the interface
    call in viaIface, which is not traced here (an indirect call in traced
    code is planned before the program runs).  Its CHECK reports that call
    site the first time
    and calltrace adds its exit probe while the program runs on (it is
    never stopped): that first call ends at the function's interim RET,
    with its result (unobserved before there were interim RETs); the
    fixture then waits a second, and every later call from there returns
    at the new probe, with its result, and the interim RETs are gone.  All
    are marked indirect (not unplanned)."""
    argv = [fixture("go_core"), "iface", "30"]
    p, out = record(argv, "-F", "main.(*byK).scale", env=GO1)
    assert p.stdout == "iface 4307\n", p.stdout
    st = info_stats(out)
    assert st.get("unplanned") == "0" and int(st.get("indirect", "0")) >= 1, st
    assert int(st["callers_found"].split()[0]) >= 1, st
    calls = replay_json(out)
    scale = [c for c in calls if c["func"] == "main.(*byK).scale"]
    via = [c for c in scale if c["args"][1]["value"] < 1000]  # through viaIface
    assert len(via) == 30 and all(c.get("indirect") for c in via), via[:3]
    assert all(c["status"] == "returned" for c in via), [c["status"] for c in via]
    assert [c["ret"][0]["value"] for c in via] == [3 * n for n in range(30)], via[:3]
    assert not any(c.get("unplanned") for c in calls)
    assert not any(c["status"] == "unobserved" for c in calls), calls
    line = next(x for x in ct("info", "--calls", out).stdout.splitlines() if x.startswith("calls:"))
    m = re.search(r"(\d+) at exit probes added while recording", line)
    assert m and int(m.group(1)) >= 29 and "unobserved 0;" in line, line
    # the first at the interim RET; the function's taken out after it
    assert re.match(r"1 \(calls whose end the interim RETs saw; \d+ hits of theirs saw none; 1 functions' taken out, "
                    r"1 links made again or closed, \d+ probes placed or taken out\)", st["interim"]), st
    lst = ct("list", "-v", fixture("go_core"), "main.(*byK).scale").stdout
    assert "calls through its address (its address is stored in" in lst, lst


def test_indirect_calls_in_traced_code_planned_before_the_program_runs():
    """(*hotLayout).paths calls join through an interface and through a
    method value (whose -fm wrapper, never traced, calls it through the
    itab) from one call site each, 2 x 200 times in a tight loop from the
    start: found while recording, the first ones would end unobserved
    (the exit probe is in tens of ms later).  Both call instructions are
    planned before the program runs for the two join methods (each found in
    an itab at the slot the call loads): every call returns at its exit
    probe, with its result, and none is found while recording.  The second
    join's exit rides on the first's probe (the same program reads both
    results): one probe per call instruction."""
    argv = [fixture("go_core"), "ifacehot", "200"]
    p, out = record(argv, env=GO1)
    want = sum((i + 2 + 1) + (i + 3 + 1) + (i * 2 + 2) + (i * 3 + 2) for i in range(200))
    assert p.stdout == "ifacehot %d\n" % want, p.stdout
    calls = [c for c in replay_json(out) if "func" in c]
    joins = [c for c in calls if c["func"].endswith(").join")]
    assert len(joins) == 800, len(joins)
    assert all(c["status"] == "returned" and c.get("indirect") and c.get("ret") for c in joins), \
        [c for c in joins if c["status"] != "returned"][:2]
    assert not any(c["status"] == "unobserved" for c in calls)
    plus = [c for c in joins if c["func"] == "main.(*plusJoin).join"]
    assert [c["ret"][0]["value"] for c in plus[:4]] == [0 + 3 + 1, 0 + 2 + 1, 1 + 3 + 1, 1 + 2 + 1], plus[:4]
    times = [c for c in joins if c["func"] == "main.(*timesJoin).join"]  # (read where plusJoin's are)
    assert [c["ret"][0]["value"] for c in times] == [v for i in range(200) for v in (3 * i + 2, 2 * i + 2)], times[:4]
    st = info_stats(out)
    assert st.get("indirect") == "0" and st["callers_found"].startswith("0 "), st
    # both call instructions planned for both (list -v: `via`), and the
    # exits of one call instruction are one probe: the second rides on it
    lst = ct("list", "-v", fixture("go_core")).stdout
    exits = {}
    for fn in ("plusJoin", "timesJoin"):
        part = lst.split("main.(*%s).join\n" % fn, 1)[1].split("\n  0x", 1)[0]
        via = [x for x in part.splitlines() if x.strip().startswith("via ") and
               ("main.(*hotLayout).paths+" in x or "main.joiner.join-fm+" in x)]
        assert len(via) == 2, part
        exits[fn] = sorted(int(x.split("-> ")[1].split()[1], 16) for x in via)
        if fn == "timesJoin":
            assert all("rides on the exit probe of" in x for x in via), via
    assert exits["plusJoin"] == exits["timesJoin"], exits
    named = {s["next"] for s in file_sites(out)}
    for addr in exits["plusJoin"]:
        rets = [(i, s) for i, s in enumerate(file_sites(out)) if s["kind"] == 6 and s["addr"] == addr]
        riding = [i for i, s in rets if s["flags"] & 0x22 == 0x22 and i not in named]
        assert len(rets) >= 2 and riding, (addr, rets)


def test_interface_leaf_drops_its_ret_probes():
    """(*byK).step is a leaf (no stack check): nothing at its entry is
    emulated.  Its address is in an itab, so its calls come from sites no
    scan finds: its single-stepped entry looks the caller up (a CHECK)
    and it has no RET probes but interim ones; sumSteps's call site gets
    its exit probe while recording, and every later call ends there with
    its result (one single-step a call instead of two), the first at an
    interim RET."""
    lst = ct("list", "-v", fixture("go_core"), "main.(*byK).step").stdout
    assert "+0   step" in lst and "check   +0" in lst and not permanent_rets(lst), lst
    assert interim_rets(lst), lst
    argv = [fixture("go_core"), "ifaceleaf", "30"]
    p, out = record(argv, "-F", "main.(*byK).step", env=GO1)  # (sumSteps not: its call found)
    assert p.stdout == "ifaceleaf 2205\n", p.stdout
    st = info_stats(out)
    assert st.get("unplanned") == "0" and int(st["callers_found"].split()[0]) >= 1, st
    steps = [c for c in replay_json(out) if c["func"] == "main.(*byK).step"]
    assert [c["args"][1]["value"] for c in steps] == list(range(30)), steps[:3]
    assert all(c.get("indirect") for c in steps), steps[:3]
    # (the first at its interim RET)
    assert all(c["status"] == "returned" for c in steps), [c["status"] for c in steps]
    assert [c["ret"][0]["value"] for c in steps] == [5 * n + 1 for n in range(30)], steps[:3]
    ci = calls_info(out)
    ends, _, _ = interim_counts(out)
    assert ends == 1 and ci["ret"] == 1 and ci["after"] >= 29, (ci, ends)


def test_calls_found_in_tail_position_end_with_their_callers():
    """A call through an interface or a function value that its traced
    caller makes last (nothing but its return after it) and whose results
    are not read ends with that caller once its call site is found: it gets
    no exit probe of its own (its return address, single-stepped, before),
    so it ends at its caller's end event -- measured, the same instant.
    The deferred call's wrapper closure is not traced and makes the call
    last: the call ends where the wrapper returns to, tellDeferred's call of
    its open-coded defer, in tail position there: with tellDeferred.  Not
    through a method value's compiler-made wrapper (note through `bound`):
    its interface call is planned for the methods it may call, each with its
    probe at the return address, so it ends before the call that made it."""
    p, out = record([fixture("go_core"), "tails", "6"], env=GO1)
    assert p.stdout == "tails 450\n", p.stdout
    calls = replay_json(out, "--raw")
    ends = collections.Counter()
    stack = []
    for c in calls:
        if "func" not in c:
            continue
        del stack[c["depth"]:]
        parent = stack[-1] if stack else None
        stack.append(c)
        n = c["args"][-1]["value"] if c.get("args") else None
        if not parent or c["status"] != "returned" or not isinstance(n, int) or n < 2:
            continue  # (calls from a site before its exit probe was in are unobserved)
        same = c["ts"] + c["dur_raw"] == parent["ts"] + parent["dur_raw"]
        ends[(c["func"], parent["func"], same)] += 1
    assert ends[("main.noteFree", "main.tellValue", True)] == 4, ends
    assert ends[("main.(*byK).note", "main.tellIface", True)] == 6, ends
    assert ends[("main.tellIface", "main.tellChain", True)] == 2, ends
    assert ends[("main.tellDeferred", "main.tellChain", True)] == 2, ends
    assert ends[("main.(*byK).note", "main.tellValue", False)] == 4, ends
    # (where the wrapper returns to is planned with its call site, found at
    # the first call: every call from the third on ends there)
    assert ends[("main.(*byK).note", "main.tellDeferred", True)] == 6, ends
    assert not ends[("main.noteFree", "main.tellValue", False)], ends
    # an empty function (`ret`) called through a value keeps its entry
    # probe, its RET too: one single-stepped hit a call, not a CHECK there
    # and an exit probe more
    nops = [c for c in calls if c["func"] == "main.nopNote"]
    assert [c["args"][0]["value"] for c in nops] == list(range(6)), nops
    assert all(c["status"] == "returned" and not c.get("indirect") for c in nops), nops
    lst = ct("list", "-v", fixture("go_core"), "main.nopNote").stdout
    assert "its first instruction is its RET" in lst and "entry   +0     ret" in lst, lst


def test_calls_last_in_go_and_defer_wrappers_end_where_those_return():
    """c.add, called last by the wrapper of `defer c.add(n)`, and c.work, by
    the wrapper of `go c.work(n, done)` (compiler-made, never traced), end
    when those return: where they return to -- addLater's call of its
    open-coded defer, goexit -- each planned before the program runs, so
    the first call from there ends there too, at an exit probe there,
    emulated; not at the wrapper's return address, single-stepped.  c.sub's
    wrapper is run by the runtime (a defer in a loop): its calls end at the
    exit probe after deferreturn's call of it, planned before the run as
    well.  Nothing is found while recording."""
    argv = [fixture("go_core"), "wrappers", "4"]
    plain = run(argv, env=dict(os.environ, **GO1)).stdout
    p, out = record(argv, "-F", "main.(*counter).add", "-F", "main.(*counter).work", "-F", "main.addLater",
                    env=GO1)
    assert p.stdout == plain, (p.stdout, plain)
    calls = replay_json(out)
    adds = [c for c in calls if c.get("func") == "main.(*counter).add"]
    works = [c for c in calls if c.get("func") == "main.(*counter).work"]
    assert [c["args"][1]["value"] for c in adds] == [0, 1, 2, 3], adds
    assert [c["args"][1]["value"] for c in works] == [0, 1, 2, 3], works
    assert all(c["status"] == "returned" for c in adds + works), adds + works
    assert all(c["depth"] == 1 for c in adds) and all(c["depth"] == 0 for c in works), adds + works
    ci = calls_info(out)
    assert ci["stepped"] == 0 and ci["after"] >= 8 and ci["dynamic"] == 0, ci
    lst = ct("list", "-v", fixture("go_core"), "main.(*counter).add").stdout
    assert "ends with main.addLater.func1, which is not traced (tail position): at the exit probe where " \
           "that returns to" in lst, lst
    assert re.search(r"after +runtime\.goexit\+0 .* -> runtime\.goexit\+1 .*\(emulated; where a `go` or "
                     r"`defer` wrapper the runtime runs returns to\)", lst), lst
    lst = ct("list", "-v", fixture("go_core"), "main.(*counter).add", "main.addLater").stdout
    assert re.search(r"after +main\.addLater\+\d+ .* -> ends with main\.addLater \(tail position; where "
                     r"main\.addLater\.func1 returns to\)", lst), lst
    p, out = record(argv, "-F", "main.(*counter).sub", "-F", "main.subEach", env=GO1)
    assert p.stdout == plain, (p.stdout, plain)
    subs = [c for c in replay_json(out) if c.get("func") == "main.(*counter).sub"]
    assert len(subs) == 8 and all(c["status"] == "returned" and c["depth"] == 1 for c in subs), subs
    ci = calls_info(out)
    assert ci["stepped"] == 0 and ci["after"] >= 8 and ci["dynamic"] == 0, ci
    # c.get, with a result, called through an interface by the wrapper of
    # `defer g.get()`: that call site is found while recording, and with
    # it the places the wrapper may return to where the result can be read
    # at an emulated exit -- not deferreturn's, where it is gone before
    # anything emulated (an exit probe at its return address would
    # single-step every call deferreturn makes: subEach's).  getLater's is
    # found at the next call (in tail position there: at the return
    # address, single-stepped, for its result).
    p, out = record(argv, "-F", "main.(*counter).get", "-F", "main.getLater", env=GO1)
    assert p.stdout == plain, (p.stdout, plain)
    gets = [c for c in replay_json(out) if c.get("func") == "main.(*counter).get"]
    assert len(gets) == 4 and all(c["status"] == "returned" for c in gets[2:]), gets
    assert [c["ret"][0]["value"] for c in gets[2:]] == [-1, -3], gets
    steps = ct("info", "--steps", out).stdout
    # (and its interim RET's hits: the first calls' ends it saw, and the
    # others, sent too: the call may have begun before its exit probe)
    k = sum(interim_counts(out)[:2])
    assert re.search(r"^stepped: +%d of \d+ probe hits \([\d.]+%%\), by probe" % (2 + k), steps, re.M), steps
    assert re.search(r"^ +2  return +0x[0-9a-f]+ +main\.\(\*counter\)\.get \(its call at 0x[0-9a-f]+\)$", steps,
                     re.M), steps


def test_leaf_entry_seen_after_its_prologue():
    """main.notToken (net/http's isNotToken) is a leaf without a stack
    check, called through its address by strings.IndexFunc: its first
    instruction (`sub $0x18,%rsp`) is single-stepped.  Its CHECK goes to the
    first instruction after the prologue that the kernel emulates (a jge),
    with nothing landing in between: the return address is 24 bytes above
    SP there, and its int32 argument still in EAX (sign-extended in place).
    Every call is one emulated hit at its entry and one at its exit, with
    the arguments and results --exit=ret shows (the differential)."""
    lst = ct("list", "-v", fixture("go_core"), "main.notToken").stdout
    assert "+0   step" in lst and "after its prologue (its first instruction is single-stepped; SP 24 lower)" in lst, lst
    m = re.search(r"check +\+(\d+) +j", lst)
    assert m and int(m.group(1)) > 0, lst
    p, out = record([fixture("go_core"), "tokens", "6"], "-F", "main.notToken", "-F", "main.firstNonToken", env=GO1)
    assert p.stdout == "tokens 6\n", p.stdout
    calls = [c for c in replay_json(out) if c["func"] == "main.notToken"]
    token = set("abcxyz-")
    want = []
    for w in ["ab c"] + [["abc-x", "zz y", "cab\u00e9", "ba,c", "-"][i % 5] for i in range(6)]:
        for ch in w:
            want.append(ord(ch))
            if ch not in token:
                break
    assert [c["args"][0]["value"] for c in calls] == want, calls[:4]
    assert all(c.get("indirect") for c in calls), calls[:3]
    # the first word's first calls come before IndexFunc's exit probe is
    # in: they end at the interim RETs
    assert all(c["status"] == "returned" for c in calls), [c["status"] for c in calls]
    assert [c["ret"][0]["value"] for c in calls] == [chr(r) not in token for r in want], calls[:3]
    ci = calls_info(out)
    k, _, _ = interim_counts(out)
    assert ci["stepped"] == 0 and 1 <= ci["ret"] == k <= 3, (ci, k)


def permanent_rets(listing):
    """The `ret` probe lines of `list -v` LISTING but interim RETs'."""
    return [l for l in listing.splitlines() if l.lstrip().startswith("ret ") and "(interim" not in l]


def interim_rets(listing):
    """The interim RETs' lines of `list -v` LISTING (probed until the
    function's call sites are found)."""
    return [l for l in listing.splitlines() if l.lstrip().startswith("ret ") and "(interim" in l]


def file_sites(path):
    """A record file's SITES entries (docs/FORMAT.md), in id order: dicts of
    addr, func, kind, call_site, next, flags (-1: none)."""
    def none(v):  # id + 1, 0 (or a u32 none + 1) for none
        return -1 if v in (0, 1 << 32) else v - 1
    sites = {}
    for typ, p in record_chunks(path):
        if typ != 3:
            continue
        n, i = uvar(p, 0)
        for _ in range(n):
            sid, i = uvar(p, i)
            addr, i = uvar(p, i)
            func, i = uvar(p, i)
            kind = p[i]
            _, i = uvar(p, i + 1)  # target_func
            _, i = uvar(p, i)  # key_adj
            call_site, i = uvar(p, i)
            nxt, i = uvar(p, i)
            flags, i = uvar(p, i)  # (version 13 on: a uvar)
            sites[sid] = dict(addr=addr, func=none(func), kind=kind, call_site=none(call_site), next=none(nxt),
                              flags=flags)
        assert i == len(p), (path, i, len(p))
    return [sites[k] for k in sorted(sites)]


def test_functions_from_one_found_call_share_its_exit_probe():
    """stepA and stepB, called through one call instruction (a function
    value's), have the same signature: the exit probe found for the first
    reads the second's result as its own would, so the second's exit rides
    on it (not probed itself; a companion no probe's chain names) -- one
    hit a return there, not one per function -- and the calls of both
    return there with their results."""
    p, out = record([fixture("go_core"), "siblings", "6"], "-F", "main.step*", env=GO1)
    assert p.stdout == "siblings 9\n", p.stdout
    exits = [s for s in file_sites(out) if s["kind"] == 6 and s["flags"] & 0x10]
    assert len(exits) == 2 and exits[0]["addr"] == exits[1]["addr"], exits
    assert [s["flags"] & 0x2 for s in exits] == [0, 0x2] and exits[0]["next"] == -1, exits
    calls = [c for c in replay_json(out) if c["func"] in ("main.stepA", "main.stepB")]
    assert [c["status"] for c in calls[2:]] == ["returned"] * 4, calls
    assert [c["ret"][0]["value"] for c in calls[2:]] == [1, 2, 1, 2], calls


def test_found_call_joined_at_its_exit_returns_at_the_callee_rets():
    """itemPool.get (not traced) calls its New function value last, and the
    item it had reaches New's return address by a jump: a probe there
    (single-stepped, nothing emulated before the ret) would fire on every
    get, New called or not.  So once that call site is found, New's own
    RETs are probed instead: every later call of it returns there, with its
    result, and no return site is single-stepped."""
    p, out = record([fixture("go_core"), "pool", "9"], "-F", "main.newPoolItem", "-F", "main.poolRound", env=GO1)
    assert p.stdout == "pool 24 4\n", p.stdout
    made = [c for c in replay_json(out) if c["func"] == "main.newPoolItem"]
    # (the first, before that, at its interim RET)
    assert len(made) == 4, made
    assert all(c["status"] == "returned" and c["ret"][0]["value"]["type"] == "*main.poolItem" for c in made), made
    ci = calls_info(out)
    assert ci["ret"] == 4 and ci["stepped"] == 0 and ci["after"] == 9, ci
    # (the first ends at its interim RET, or at the RET probed for good
    # from then on, if that is in first: both probes are at one ret, and
    # the one that runs second sees nothing more to end; or the interim
    # RET's link, the function's own, is closed before that call returns)
    ends, passes, _ = interim_counts(out)
    assert ends <= 1, info_stats(out)["interim"]


def test_closures_the_runtime_calls_end_at_its_call_sites():
    """A closure `go` or `defer` starts without arguments is called by the
    runtime from a few call sites of its own: a goroutine's function
    returns to goexit, a deferred one is called by deferreturn (a defer in
    a loop), while panicking by deferCallSave (an open-coded defer).  Those
    sites' exit probes are planned for every such closure (one probe each,
    shared): no RET probes, and every call returns there, the first ones
    too (none 'unobserved', none from a call site found while recording).
    A closure with parameters is started through a wrapper closure
    (test_closures_with_parameters_end_at_their_wrappers_call)."""
    lst = ct("list", "-v", fixture("go_core"), "main.deferLoop.func1").stdout
    mine = lst[lst.index("main.deferLoop.func1"):]
    assert "from    runtime.deferreturn+" in mine and "from    runtime.goexit+" in mine, lst
    assert not permanent_rets(mine), lst
    funcs = {"main.deferLoop.func1": 9, "main.panicked.func1": 1, "main.deferloop.func1": 1}
    p, out = record([fixture("go_core"), "deferloop", "9"], "-F", "main.deferLoop*", "-F", "main.panicked*",
                    "-F", "main.deferloop*", env=GO1)
    assert p.stdout == "deferloop 204 90 294\n", p.stdout
    calls = replay_json(out)
    for func, n in funcs.items():
        cl = [c for c in calls if c["func"] == func]
        assert len(cl) == n and all(c["status"] == "returned" and not c.get("indirect") for c in cl), cl
    ci = calls_info(out)
    assert ci["ret"] == 0 and ci["returned"] == 14, ci


def test_call_before_a_deferred_closure_ends_at_its_entry():
    """`return g.bump(k)` under `defer g.mu.Unlock()`: after bump returns,
    the function calls the deferred closure through its address in the
    frame, nothing the kernel emulates before (bump's end was single-stepped
    at its return address).  The code shows which closure that is (the
    frame slot only ever holds that closure, made in the frame): bump ends
    where the closure enters -- the untraced wrapper Go makes for the defer
    (an exit probe at its stack check), or safeAdd's traced closure (its
    CHECK, sending the call from there, closes add first).  bump(3) panics:
    the runtime runs both closures from deeper frames, which close nothing;
    bump and add are unwound, safeAdd returns -1."""
    binary = fixture("go_core")
    lst = ct("list", "-v", binary, "main.(*locked).*", "main.safeAdd*").stdout
    bump = next(l for l in lst.splitlines() if "from    main.(*locked).add+" in l)
    assert "-> main.(*locked).add.func1+4 " in bump and "(emulated, results read there; at the entry of the " \
        "deferred closure the call after it calls, SP-8)" in bump, lst
    add = next(l for l in lst.splitlines() if "from    main.safeAdd+" in l)
    assert "not probed: that call's callee's entry probe sees this call end, reading its results" in add, lst
    p, out = record([binary, "deferred", "6"], "-F", "main.(*locked).*", "-F", "main.safeAdd*", env=GO1)
    assert p.stdout == "deferred 40 18\n", p.stdout
    calls = replay_json(out)

    def of(func):
        return [(c["status"], [r["value"] for r in c.get("ret") or ()]) for c in calls if c["func"] == func]
    want = [("returned", [v]) for v in (1, 3)] + [("unwound", [])] + [("returned", [v]) for v in (7, 12, 18)]
    assert of("main.(*locked).bump") == want, of("main.(*locked).bump")
    assert of("main.(*locked).add") == want, of("main.(*locked).add")
    assert of("main.safeAdd") == [("returned", [v]) for v in (1, 3, -1, 7, 12, 18)], of("main.safeAdd")
    assert of("main.safeAdd.func1") == [("returned", [])] * 6, of("main.safeAdd.func1")
    ci = calls_info(out)
    assert ci["stepped"] == 0 and ci["ret"] == 0 and ci["returned"] == 22, ci


def test_closures_with_parameters_end_at_their_wrappers_call():
    """`go f(x)` and `defer f(x)` of a closure f with parameters (register
    ABI) start a wrapper closure that calls f through its funcval: that call
    site is planned before the program runs (one call a goroutine or defer:
    a call site found while recording would see none of them), its exit
    shared by whatever it calls; f has no RET probes, and every call
    returns, the first ones too.  A closure with results among a wrapper's
    siblings keeps its RETs (the shared exit reads none); one without is
    observed from its callers, found while recording."""
    binary = fixture("go_core")
    lst = ct("list", "-v", binary, "main.goroutines.func1", "main.closures.func*", "main.deferredAdd.func1").stdout

    def block(func):
        m = re.search(r"^  0x[0-9a-f]+ .*\b%s\n((?:      .*\n)*)" % re.escape(func), lst, re.M)
        assert m, (func, lst)
        return m.group(1)
    for func, wrapper in (("main.goroutines.func1", "main.goroutines.func2"),
                          ("main.closures.func3", "main.closures.func5"),
                          ("main.deferredAdd.func1", "main.deferredAdd.func2")):
        b = block(func)
        assert "from    %s+" % wrapper in b and not permanent_rets(b), (func, b)
    assert "through a wrapper closure, and its results are captured" in block("main.closures.func1"), lst
    for scenario, funcs in ((["goroutines", "6"], {"main.goroutines.func1": 6}),
                            (["closures", "5"], {"main.closures.func3": 1, "main.deferredAdd.func1": 1})):
        p, out = record([binary] + scenario, *sum((["-F", f] for f in funcs), []), env=GO1)
        calls = [c for c in replay_json(out) if c.get("func")]
        for func, n in funcs.items():
            cl = [c for c in calls if c["func"] == func]
            assert len(cl) == n and all(c["status"] == "returned" and not c.get("indirect") for c in cl), cl
        assert calls_info(out)["ret"] == 0, calls_info(out)


def test_calls_from_one_site_before_its_exit_probe_stay_apart():
    """Calls from one call site without an exit probe yet (CHECK events at
    one frame key) are one call each: only after its morestack RESTART is a
    CHECK at the same key the same call running its entry again.  They were
    merged into the first (strings.(*Builder).Write through fmt.Fprintf in
    the strings package's tests).  Whether the real fixture's calls come
    before the probe is in depends on the scheduler (the differential case
    'back to back' catches it when they do); this record has them."""
    import recfile as R
    r = R.Record("go")
    r.funcs(["main.(*byK).scale", "main.after"])
    r.sites([(0, 7), (0, R.RESTART), (1, R.ENTRY), (1, R.RET)])  # 7: CHECK
    ev = lambda site, ts, key: dict(site=site, ts=ts, tid=7, goid=1, key=key)
    r.events([ev(0, 2000, 100), ev(0, 3000, 100),  # two calls
              ev(1, 3100, 100), ev(0, 3200, 100),  # the second one's morestack
              ev(0, 4000, 100),                    # a third call
              ev(2, 5000, 50), ev(3, 6000, 50)])   # shallower: ends it
    calls = replay_json(r.write(tmp("back_to_back.data")))
    got = [(c["func"], c["depth"], c["status"], c["ts"]) for c in calls]
    assert got == [("main.(*byK).scale", 0, "unobserved", 1000), ("main.(*byK).scale", 0, "unobserved", 2000),
                   ("main.(*byK).scale", 0, "unobserved", 3000), ("main.after", 0, "returned", 4000)], got


def test_call_without_exit_ends_when_another_function_calls_at_its_level():
    """An untraced loop calls through an interface a traced leaf, from a call
    site found while recording (its first calls have no exit probe), and an
    untraced method at the same frame key, from the same instruction (its
    return address slot holds the same address), which calls a traced one.
    That call's caller runs at the leaf's level: the leaf is over, its call
    never the parent of the next (go_core samelevel, eight such call sites;
    hcl's inTree.BuildTokens under (*identifier).BuildTokens in terraform).
    By default those first calls end at the leaf's interim RET; with
    --no-interim they end unobserved, at the next call at their level."""
    funcs = ["main.(*slLeaf).build", "main.(*slInner).build"]
    for mode in ("auto", "ret", "lean"):
        how = ["--exit=auto", "--no-interim"] if mode == "lean" else ["--exit=" + mode]
        p, out = record([fixture("go_core"), "samelevel", "3"], *how,
                        *sum((["-F", f] for f in funcs), []), out=tmp("samelevel-%s.data" % mode), env=GO1)
        assert p.stdout == "samelevel 72\n", (p.stdout, p.stderr)
        calls = [c for c in replay_json(out) if c.get("func")]
        assert collections.Counter(c["func"] for c in calls) == {funcs[0]: 24, funcs[1]: 24}, calls
        assert all(c["depth"] == 0 for c in calls), (mode, [(c["func"], c["depth"], c["status"]) for c in calls])
        ends = collections.Counter((c["func"], c["status"]) for c in calls)
        if mode != "lean":
            # (auto: each walker's first call, a leaf's, from a site not
            # known yet, ends at the leaf's interim RET)
            assert ends == {(funcs[0], "returned"): 24, (funcs[1], "returned"): 24}, (mode, ends)
        else:
            # without interim RETs those first calls have no exit probe
            assert ends[(funcs[0], "unobserved")] >= 8 and ends[(funcs[1], "returned")] == 24, ends


def test_first_call_through_a_handler_adapter_returns_at_an_interim_ret():
    """A server's handler behind net/http's HandlerFunc: a func type's
    method (not traced) calls the traced closure through its funcval, once
    a request.  That call site is found at the first call, whose end no
    exit probe could see: it ends at the closure's interim RET, with its
    result -- the one request a user sends to see it is in the trace, not
    'unobserved'.  Once 16 later calls (CT_INTERIM_WORTH) ended at the exit
    probe found meanwhile and no new call site came, the interim RET goes
    (its link closed); after 3, it stays (a probe change would cost the
    program more than their single-steps).  With --no-interim that first
    call is unobserved."""
    argv = [fixture("go_core"), "handler", "4"]
    lst = ct("list", "-v", fixture("go_core"), "main.handle.func1").stdout
    assert len(interim_rets(lst)) == 1 and not permanent_rets(lst), lst
    assert "until those are found, its 1 RET sees the calls from them end" in lst, lst
    lean = ct("list", "-v", "--no-interim", fixture("go_core"), "main.handle.func1").stdout
    assert not interim_rets(lean) and not permanent_rets(lean) and "until those are found" not in lean, lean
    for lean in (False, True):
        p, out = record(argv, *(["--no-interim"] if lean else []), "-F", "main.handle.func1",
                        out=tmp("handler-%s.data" % lean), env=GO1)
        assert p.stdout == "handler 16 6\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        assert [c["args"][0]["value"] for c in calls] == [0, 1, 2, 3], calls
        assert all(c.get("indirect") and c["depth"] == 0 for c in calls), calls
        st = info_stats(out)
        if lean:
            assert calls[0]["status"] == "unobserved" and "ret" not in calls[0], calls[0]
            assert "interim" not in st, st
            calls = calls[1:]
        else:
            m = re.match(r"1 \(calls whose end the interim RETs saw; (\d+) hits of theirs saw none; "
                         r"0 functions' taken out, 0 links made again or closed, 0 probes placed or taken out\)$",
                         st["interim"])
            assert m and int(m.group(1)) == 3, st["interim"]
            assert calls_info(out)["ret"] == 1, calls_info(out)
        assert all(c["status"] == "returned" for c in calls), calls
        assert [c["ret"][0]["value"] for c in calls] == [2 * c["args"][0]["value"] for c in calls], calls
    p, out = record([fixture("go_core"), "handler", "20"], "-F", "main.handle.func1", out=tmp("handler-20.data"),
                    env=GO1)
    assert p.stdout == "handler 400 190\n", p.stdout
    calls = [c for c in replay_json(out) if c.get("func")]
    assert [c["args"][0]["value"] for c in calls] == list(range(20)), calls
    assert all(c["status"] == "returned" for c in calls), calls
    m = re.match(r"1 \(calls whose end the interim RETs saw; (\d+) hits of theirs saw none; "
                 r"1 functions' taken out, 1 links made again or closed, 1 probes placed or taken out\)$",
                 info_stats(out)["interim"])
    assert m and 16 <= int(m.group(1)) <= 19, info_stats(out)["interim"]
    assert calls_info(out)["ret"] == 1, calls_info(out)


def three_modes(name, argv, *sel):
    """ARGV recorded with --exit=auto, --exit=ret and --no-interim ("lean"),
    in that order: (mode, its process, its file)."""
    for mode in ("auto", "ret", "lean"):
        opts = ["--no-interim"] if mode == "lean" else ["--exit=" + mode]
        p, out = record(argv, *opts, *sel, out=tmp("%s-%s.data" % (name, mode)), env=GO1)
        yield mode, p, out


def test_value_method_behind_its_pointer_wrapper_returns_at_an_interim_ret():
    """sort.Sort of a value type calls its Less through the pointer
    wrapper the compiler makes for the interface (untraced, autogenerated),
    which calls it in tail position: the call's end is where the wrapper
    returns to, in sort, found at the first call.  Its interim RET sees
    that call end from its own frame, under the wrapper's: every call of
    the first sort returns with its result, as with --exit=ret (with
    --no-interim the first sort's calls are unobserved: their exit probe
    comes after it)."""
    argv = [fixture("go_core"), "sortval", "3"]
    seen = {}
    for mode, p, out in three_modes("sortval", argv, "-F", "main.byLen.Less"):
        assert p.stdout == "sortval fig banana\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        assert calls and all(c["func"] == "main.byLen.Less" and c["depth"] == 0 for c in calls), calls[:3]
        seen[mode] = [(c["args"][1]["value"], c["args"][2]["value"], c["status"],
                       c["ret"][0]["value"] if c.get("ret") else None) for c in calls]
        ends = interim_counts(out)[0]
        if mode == "auto":
            assert ends >= 1, info_stats(out)
        if mode == "lean":
            assert ends == 0 and seen[mode][0][2] == "unobserved", (info_stats(out), seen[mode][:3])
    assert all(st == "returned" and isinstance(r, bool) for _, _, st, r in seen["ret"]), seen["ret"]
    assert seen["auto"] == seen["ret"], (seen["auto"], seen["ret"])
    assert [c[:2] for c in seen["lean"]] == [c[:2] for c in seen["ret"]], seen["lean"]


def test_call_whose_site_was_found_while_it_ran_returns_at_its_interim_ret():
    """restic 0.14's `ls` (its first Load): a closure calls a value method
    last, through an interface, so through the pointer wrapper the compiler
    makes (untraced) -- the call is keyed as the wrapper's frame.  Its
    first call (go_core tailwrap) calls deeper than the kernel side tracks
    calls without exit probes, and runs long enough for calltrace to plan
    the closure's call site, found at its entry: its interim RET then finds
    that site planned and passes, and its event was keyed at the method's
    own frame, under the wrapper's -- no call there, and the closure's end
    (the call is in tail position in it) unwound it.  Every call returns,
    the same calls as --exit=ret, nested the same."""
    argv = [fixture("go_core"), "tailwrap", "3"]
    seen = {}
    for mode in ("auto", "ret"):
        p, out = record(argv, "--exit=" + mode, "-F", "main.*", out=tmp("tailwrap-%s.data" % mode), env=GO1)
        assert p.stdout == "tailwrap 127\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        seen[mode] = [(c["func"], c["depth"], c["status"]) for c in calls]
        fetch = [c for c in calls if c["func"] == "main.slowStore.Fetch"]
        assert len(fetch) == 3 and fetch[0]["dur"] >= 200e6, fetch[:1]
    assert {st for _, _, st in seen["auto"]} == {"returned"}, [c for c in seen["auto"] if c[2] != "returned"]
    assert seen["auto"] == seen["ret"], (seen["auto"], seen["ret"])


def test_two_calls_from_found_sites_open_at_once_both_return_at_interim_rets():
    """A traced method called through an interface from untraced code
    calls another one the same way: at the first call both call sites are
    found while recording, and both calls are open at once with no exit
    probe to see them end.  The kernel side keeps both (the innermost 4 of
    a goroutine): the inner ends at its interim RET, then the outer at its
    own -- returned, with results, as with --exit=ret (with --no-interim
    both are unobserved)."""
    argv = [fixture("go_core"), "nested", "3"]
    sel = ["-F", "main.(*nestA).outer", "-F", "main.(*nestB).inner"]
    seen = {}
    for mode, p, out in three_modes("nested", argv, *sel):
        assert p.stdout == "nested 12\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        seen[mode] = [(c["func"], c["depth"], c["args"][1]["value"], c["status"],
                       c["ret"][0]["value"] if c.get("ret") else None) for c in calls]
        if mode == "auto":
            assert interim_counts(out)[0] >= 2, info_stats(out)
    assert [c[:3] for c in seen["ret"]] == [("main.(*nestA).outer", 0, i) if k == 0 else ("main.(*nestB).inner", 1, i)
                                            for i in range(3) for k in range(2)], seen["ret"]
    assert all(c[3] == "returned" for c in seen["ret"]), seen["ret"]
    assert seen["auto"] == seen["ret"], (seen["auto"], seen["ret"])
    assert [c[3] for c in seen["lean"][:2]] == ["unobserved", "unobserved"], seen["lean"]


def test_calls_past_the_innermost_four_from_found_sites_return_at_interim_rets():
    """A traced method called through an interface from untraced code
    calls itself the same way 6 levels deep: 7 calls open at once from one
    call site found while recording, none with an exit probe (it comes
    milliseconds later).  The kernel side tracks the innermost 4 of a
    goroutine; the RET of each of the 3 outer ones looks its return address
    up again as its CHECK did, finds no exit probe there, and is its end:
    every call returned, with its result, as with --exit=ret (with
    --no-interim the first ones are unobserved)."""
    argv = [fixture("go_core"), "deepnest", "6"]
    seen = {}
    for mode, p, out in three_modes("deepnest", argv, "-F", "main.(*nestC).down"):
        assert p.stdout == "deepnest 12\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        seen[mode] = [(c["depth"], c["args"][1]["value"], c["status"], c["ret"][0]["value"] if c.get("ret") else None)
                      for c in calls]
    assert seen["ret"] == [(6 - n, n, "returned", 2 * n) for n in range(6, -1, -1)], seen["ret"]
    assert seen["auto"] == seen["ret"], (seen["auto"], seen["ret"])
    assert seen["lean"][0][2] == "unobserved", seen["lean"]


def test_interim_rets_of_a_hot_method_go_once_its_call_sites_are_found():
    """sort.Sort (not traced) calls a traced Less thousands of times from
    a dozen call sites, each found while recording: its interim RETs see
    the first calls from each end, and go once its calls end at the exit
    probes found (a single-step each call while they are in: a small share
    of them).  Every call is in the trace, at depth 0, as with
    --exit=ret.  (The RETs stay CT_INTERIM_QUIET_MS after the last call
    site found, however many calls run meanwhile: a machine where a
    single-step is cheap (~10 us) runs ~6,000 of them then, so the sort is
    long enough for those to be a small share: ~54,000 calls.)"""
    argv = [fixture("go_core"), "sorthot", "6000"]
    plain = run(argv).stdout
    n = {}
    for mode in ("auto", "ret"):
        p, out = record(argv, "--exit=" + mode, "-F", "main.(*byMod).Less", out=tmp("sorthot-%s.data" % mode),
                        env=GO1)
        assert p.stdout == plain, p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        assert all(c["func"] == "main.(*byMod).Less" and c["depth"] == 0 for c in calls), calls[:3]
        assert {c["status"] for c in calls} <= {"returned", "unobserved"}, calls[:3]
        n[mode] = len(calls)
        if mode == "auto":
            st = info_stats(out)
            m = re.match(r"(\d+) \(calls whose end the interim RETs saw; (\d+) hits of theirs saw none; "
                         r"1 functions' taken out, \d+ links made again or closed, \d+ probes placed or taken out\)$",
                         st["interim"])
            assert m and int(m.group(1)) >= 1 and int(m.group(2)) < len(calls) // 5, (st["interim"], len(calls))
    assert n["auto"] == n["ret"] > 40000, n


def record_attached_then_go_on(prog, pid, out, *flags):
    """Records process PID (of PROG, waiting for a line) into OUT with
    FLAGS, from the moment the probes are in: then PROG gets its line.
    PROG's output after that, once both ended."""
    rec = subprocess.Popen([CT, "record", "-o", out, *flags, "-p", str(pid)], stderr=subprocess.PIPE, text=True)
    try:
        line = rec.stderr.readline()  # attached: "tracing 1 process of ..."
        assert "tracing 1 process" in line, line
        prog.stdin.write("go\n")
        prog.stdin.flush()
        rest, _ = prog.communicate(timeout=60)
        _, err = rec.communicate(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode == 0, err
    return rest


def test_attached_program_is_never_stopped():
    """Under -p the program's parent is not calltrace: a job-control shell
    waiting with WUNTRACED would see any stop (and take the terminal).
    Finding the interface call site while recording holds nothing: the
    parent sees no stop and no SIGCONT, and the calls after the first
    return at the exit probe added meanwhile (the first at its interim
    RET)."""
    prog = subprocess.Popen([fixture("c_procs"), "waitstop", "0", fixture("go_core"), "ifacewait", "30"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, **GO1))
    try:
        child = int(prog.stdout.readline().split()[1])
        assert prog.stdout.readline() == "ready\n"
        out = tmp("exits-waitstop.data")
        # (viaIface not traced: its call site is found while recording)
        rest = record_attached_then_go_on(prog, child, out, "-F", "main.(*byK).scale")
    finally:
        if prog.poll() is None:
            prog.kill()
    assert rest.splitlines() == ["iface 4307", "child exited 0"], rest
    calls = replay_json(out)
    via = [c for c in calls if c["func"] == "main.(*byK).scale" and c["args"][1]["value"] < 1000]
    assert len(via) == 30, via[:2]
    assert all(c["status"] == "returned" and c.get("indirect") for c in via), [c["status"] for c in via]
    assert [c["ret"][0]["value"] for c in via] == [3 * n for n in range(30)], via[:3]


def test_attached_while_busy_no_call_is_taken_for_unwound():
    """-p on a program sorting in two goroutines (sort.Slice: its less
    closure called through a function value, its swaps through typedmemmove
    and memmove), -F '*': the program runs while calltrace attaches, its
    probes going live one link after another.  Every probe that ends a call
    is in before any that opens one -- the interim RETs too, and the probes
    that are one call's exit and the next call's CALL from the highest
    address down -- so no call entered meanwhile lacks its end: none is
    unwound (before, hundreds were: the closure's, entered before its
    interim RETs were in; memmove's, opened by a probe whose exit probe
    further on was not live yet).  The runtime's scheduler functions that
    never return (schedule, execute, mcall's targets) are unwound, rightly."""
    prog = subprocess.Popen([fixture("go_core"), "busy", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert prog.stdout.readline() == "ready\n"
        out = tmp("exits-busy.data")
        r = ct("record", "-o", out, "-p", str(prog.pid), "--duration", "700ms", "-F", "*")
        assert r.returncode == 0, r.stderr
        prog.stdin.write("stop\n")
        prog.stdin.flush()
        rest, _ = prog.communicate(timeout=60)
    finally:
        if prog.poll() is None:
            prog.kill()
    assert rest == "busy true true\n" and prog.returncode == 0, (rest, prog.returncode)
    rows = json.loads(ct("report", "-f", "json", out).stdout)
    seen = {x["func"]: x for x in rows}
    assert seen.get("main.busySort.func1", {}).get("returned", 0) > 50, sorted(seen)[:20]
    assert seen.get("runtime.memmove", {}).get("returned", 0) > 50, seen.get("runtime.memmove")
    unwound = {x["func"]: x["unwound"] for x in rows
               if x["unwound"] and x["func"].split(".")[0] in ("main", "sort", "internal/reflectlite", "strings")
               or x["unwound"] and x["func"] in ("runtime.memmove", "runtime.typedmemmove", "runtime.mallocgc")}
    assert not unwound, unwound


def test_attached_inside_the_caller_of_a_call_in_tail_position():
    """-p attaches while noteAfterLine waits (its entry, and main's, before
    the trace): its call of addNote, in tail position (no exit probe of its
    own), ends with noteAfterLine, whose return site in main shows it
    ended, not how.  addNote's end is unobserved, not unwound (a panic or
    longjmp the trace never saw); the call after it returns as usual."""
    prog = subprocess.Popen([fixture("go_core"), "tailwait", "5"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, **GO1))
    try:
        assert prog.stdout.readline() == "ready\n"
        rest = record_attached_then_go_on(prog, prog.pid, tmp("exits-tailwait.data"), "-F", "main.*")
    finally:
        if prog.poll() is None:
            prog.kill()
    assert rest == "tailwait 10\n", rest
    calls = [(c["func"], c["depth"], c["status"]) for c in replay_json(tmp("exits-tailwait.data")) if "func" in c]
    assert calls == [("main.addNote", 0, "unobserved"), ("main.addNote", 0, "returned")], calls


def test_list_shows_exit_modes():
    lst = ct("list", "-v", fixture("go_core"), "main.fib", "main.viaValue", "main.main")
    assert lst.returncode == 0, lst.stderr
    text = lst.stdout
    assert "observed from their callers" in text.splitlines()[1], text
    fib = text.split("main.fib\n", 1)[1].split("\n  0x", 1)[0]
    assert "exits: at its 3 call sites" in fib and "from    main.main+" in fib, fib
    # its entry is emulated: it reports the calls (the call instructions
    # are not probed) and its morestack call marks restarts
    assert "check   +4 " in fib and "restart +" in fib and "entries at its own entry" in fib, fib
    # its result is captured: the second recursive call's is added to the
    # first's by the caller's ret, so that call ends with its caller, its
    # result worked out from the caller's; the others keep it cheap
    assert "2 exits emulated, 0 single-stepped, 1 in tail position" in fib and \
        "ends with main.fib (tail position, which returns its result plus the one of its call before" in fib, fib
    assert "exits: RET probes (its address is stored in .rodata" in text  # viaValue, main.main
    ret = ct("list", "-v", "--exit=ret", fixture("go_core"), "main.fib").stdout
    assert "exits at RET (--exit=ret)" in ret and "exits: RET probes" in ret, ret
    c = ct("list", "-v", fixture("c_core"), "tp_*").stdout
    assert "calls setjmp" in c and "in tail position" in c, c
    # an -mfentry nop is the entry (the kernel probes it without a trap);
    # without it the push after is
    for binary, site in (("c_core_fentry", "+0   no-trap"), ("c_core", "+0   cheap")):
        c = ct("list", "-v", fixture(binary), "c_fib").stdout
        line = next(l for l in c.splitlines() if l.endswith(" c_fib"))
        assert site in line, (binary, line)
        assert ("at 5-byte nops" in c.splitlines()[1]) == (binary == "c_core_fentry"), c


def test_landing_pads_decide_call_by_call():
    """C++ (and Rust) exceptions resume a caller at the landing pad its
    exception table gives for the call.  A call is observed after it unless
    the code from its pad can reach that exit (a catch that joins the normal
    path) or, for a call that ends with its caller, return from the caller;
    a pad that only runs destructors or rethrows is no way back, nor one
    that loops back to the call (the call, seen again, unwinds the one that
    threw).  The pads of gcc (in .cold parts) and clang.
    The recording then has calls observed after the call that were thrown
    through: unwound, as with --exit=ret (auto_and_ret_give_the_same_calls)."""
    for binary in ("cxx_pads", "cxx_pads_clang"):
        text = ct("list", "-v", "--no-args", fixture(binary), "pd_*").stdout
        modes = {}
        for block in text.split("\n  0x")[1:]:
            name = block.split("\n", 1)[0].split()[-1]
            modes[name] = block
        for f in ("pd_t_joined", "pd_t_last"):
            assert "exits: RET probes (called from pd_" + f[5:] in modes[f] and \
                "handles exceptions: " in modes[f], (binary, f, modes[f][:300])
        # (a catch that loops back to the call: the call seen again ends
        # the one that threw)
        for f in ("pd_t_rethrow", "pd_t_guarded", "pd_t_retry"):
            assert "exits: at its 1 call site" in modes[f], (binary, f, modes[f][:300])
        data = tmp(binary + ".pads.data")
        r = ct("record", "-o", data, "-F", "pd_*", "--", fixture(binary))
        assert r.returncode == 0 and "pads 251" in r.stdout, r.stderr
        calls = [c for c in replay_json(data) if "func" in c]
        seen_after = ("pd_t_rethrow", "pd_t_guarded", "pd_t_retry")
        thrown = [c for c in calls if c["func"] in seen_after and c["args"][0]["value"] % 3 == 0]
        assert len(thrown) == 3 and all(c["status"] == "unwound" for c in thrown), thrown
        ok = [c for c in calls if c["func"] in seen_after and c["args"][0]["value"] % 3]
        assert len(ok) == 10 and all(c["status"] == "returned" for c in ok), ok
        st = calls_info(data)
        assert st["after"] > st["ret"], st


def test_results_read_at_emulated_exits():
    """Results the caller saves to its stack (two of divmod's, a string and
    a bool by a byte store), or changes by a constant or adds to a value it
    keeps there, are read at the emulated exit; where a value is gone, list
    -v says where, and the exit is single-stepped at the return address.
    Values equal what the program prints."""
    binary = fixture("go_core")
    lst = ct("list", "-v", binary, "main.divmod", "main.square", "main.word", "main.parts", "main.evens").stdout
    div = lst.split("main.divmod\n", 1)[1].split("\n  0x", 1)[0]
    assert "(1 exits emulated, 0 single-stepped" in div and "emulated, results read there" in div, div
    sq = lst.split("main.square\n", 1)[1].split("\n  0x", 1)[0]
    # sum += square(i): the sum it was added to is stored back before the
    # loop's jg, so the result is gone; square(n) + 5 keeps it
    assert "single-stepped to read the results: at 0x" in sq and "the value of RAX is gone at 0x" in sq, sq
    # (where the exit is the next call's instruction, that call's entry
    # probe reads it)
    assert "emulated, results read there" in sq or "entry probe sees this call end, reading its results" in sq, sq
    # a Go string's bytes never change; a slice's items might (a store on
    # the way): evens keeps its RETs, saying why
    for f in ("main.word", "main.parts"):
        part = lst.split(f + "\n", 1)[1].split("\n  0x", 1)[0]
        assert "single-stepped, 0 in tail" in part and "emulated, results read there" in part, part
    # evens' caller spills the slice to its own stack slots before the exit
    # site: the items are read there unless they lie in those slots
    ev = lst.split("main.evens\n", 1)[1]
    assert "emulated, results read there" in ev, ev
    p, out = record([binary, "results", "6"], env=GO1)
    printed = p.stdout.split()
    assert printed[0] == "results", p.stdout
    calls = [c for c in replay_json(out) if c.get("func")]
    by = collections.defaultdict(list)
    for c in calls:
        assert c["status"] == "returned", c
        by[c["func"]].append([r["value"] for r in c.get("ret") or []])
    assert by["main.square"] == [[i * i] for i in range(6)] + [[36]], by["main.square"]
    assert by["main.divmod"] == [[int(printed[2]), int(printed[3])]], (by["main.divmod"], printed)
    assert by["main.word"] == [[printed[4]], [printed[5]]], (by["main.word"], printed)
    assert by["main.parts"] == [[printed[6], int(printed[7]), printed[8] == "true"]], by["main.parts"]
    assert [[v["items"] for v in r] for r in by["main.evens"]] == [[[0, 2, 4]]], by["main.evens"]
    c = calls_info(out)
    # 12 calls after the call, and main.results (no results): the loop's 6
    # squares single-stepped
    assert c["after"] == 13 and c["stepped"] == 6 and c["ret"] == 1, c


def test_results_pointing_into_stack_written_on_the_way():
    """name_of returns a pointer into its caller's stack buffer ("abc").
    trick_spill saves the pointer to another stack slot before the exit site:
    the string is read there, as at the RET.  trick_stale writes 'X' into the
    buffer itself first: the string the call returned is gone at the exit
    site, so it shows unreadable -- never "Xbc".  Both exits are emulated."""
    binary = fixture("c_core")
    counts, sites = list_exits(binary, "name_of")
    assert counts == (2, 0) and [s[1] for s in sites] == ["emulated, results read there"] * 2, (counts, sites)
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "stale"], "--exit=" + mode, "-F", "name_of", out=tmp("stale-%s.data" % mode))
        assert p.stdout == "stale X a\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func") == "name_of"]
        assert [c["status"] for c in calls] == ["returned"] * 2, calls
        got[mode] = dict(zip(("trick_stale", "trick_spill"), (c["ret"][0] for c in calls)))
    assert got["ret"]["trick_spill"]["value"] == "abc" and got["ret"]["trick_stale"]["value"] == "abc", got
    assert got["auto"]["trick_spill"]["value"] == "abc", got
    stale = got["auto"]["trick_stale"]
    assert stale["value"] is None and stale.get("unavailable") == "unreadable", stale


def test_spilled_error_and_string_results_read_at_emulated_exits():
    """main.Fail's error and main.Multi's string and error: their callers
    spill them to their own stack slots before the exit site, so what they
    point to (the error's message, the string's bytes) is read there, at an
    emulated exit, and equals what --exit=ret reads at the RETs."""
    binary = fixture("go_args")
    lst = ct("list", "-v", binary, "main.Fail", "main.Multi").stdout
    for func in ("main.Fail", "main.Multi"):
        part = lst.split("  %s\n" % func, 1)[1].split("\n  0x", 1)[0]
        assert re.search(r"exits: at its \d+ call sites? \(\d+ exits emulated, 0 single-stepped", part), part
        assert "emulated, results read there" in part and "to read the results" not in part, part
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary], "--exit=" + mode, "-F", "main.Fail", "-F", "main.Multi",
                        out=tmp("spilled-%s.data" % mode))
        calls = [c for c in replay_json(out) if c.get("func")]
        assert [c["status"] for c in calls] == ["returned"] * 4, calls
        got[mode] = [(c["func"], c["ret"]) for c in calls]
    assert got["auto"] == got["ret"], got
    msgs = [r.get("value") for _, rets in got["auto"] for r in rets]
    assert {"type": "*errors.errorString", "value": "fail 2"} in msgs and "go!" in msgs, msgs


def test_results_stored_through_a_register_read_at_emulated_exits():
    """A result the caller stores into a struct through a pointer register
    and then reuses the register for the next call's argument (net/http's
    req.Close = shouldClose(...)) is read at the emulated exit from the
    struct, where list -v says; one copied to another register that the
    next call takes is read from that register.  Go: every value equals
    --exit=ret's.  C (tricks.S): where the caller writes the struct through
    SP before the exit site (it lies in its frame), the value is not read
    there (never the -1 written over it); beside it, it is."""
    binary = fixture("go_core")
    funcs = ["main.isOdd", "main.triple", "main.consume", "main.pair"]
    lst = ct("list", "-v", binary, *funcs).stdout
    odd = lst.split("main.isOdd\n", 1)[1].split("\n  0x", 1)[0]
    assert re.search(r"results read there; RAX from memory at R[A-Z0-9]+\+0x8, where the caller stored it", odd), odd
    tri = lst.split("main.triple\n", 1)[1].split("\n  0x", 1)[0]
    assert "RAX from memory at R" in tri, tri
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "stored", "5"], "--exit=" + mode, *sum((["-F", f] for f in funcs), []),
                        out=tmp("stored-%s.data" % mode), env=GO1)
        assert p.stdout.startswith("stored "), p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        assert [c["status"] for c in calls] == ["returned"] * 30, calls
        got[mode] = [(c["func"], [a["value"] for a in c["args"] if a["type"] == "int"],
                      [r["value"] for r in c["ret"]]) for c in calls]
        c = calls_info(out)
        # only pair's result is gone by its exit site (added to three stack words)
        assert c["stepped"] == (5 if mode == "auto" else 0), (mode, c)
    assert got["auto"] == got["ret"], got
    assert [r for f, a, r in got["auto"] if f == "main.isOdd"] == [[i % 2 == 1] for i in range(5)], got
    assert [r for f, a, r in got["auto"] if f == "main.triple"][:2] == [[0], [6]], got

    binary = fixture("c_core")
    counts, sites = list_exits(binary, "field_of")
    assert counts == (2, 0), (counts, sites)
    assert all(s[1].startswith("emulated, results read there; RAX from memory at RDX+0x0") for s in sites), sites
    rets = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "fields", "3"], "--exit=" + mode, "-F", "field_of", out=tmp("fields-%s.data" % mode))
        assert p.stdout == "fields -1 21\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func") == "field_of"]
        assert [c["status"] for c in calls] == ["returned"] * 2, calls
        rets[mode] = [c["ret"][0] for c in calls]
    assert [r["value"] for r in rets["ret"]] == [16, 21], rets
    stale, kept = rets["auto"]
    assert stale["value"] is None and stale.get("unavailable"), stale
    assert kept["value"] == 21, kept


def test_tail_call_results_read_where_the_caller_returns_them():
    """relay returns what triple returns as it is (`return triple(i + 1)`):
    the call is in tail position and ends with relay, and its result is read
    at relay's exit probe, with relay's (a role of that probe); relayWord
    the same with word's string; relayPlus adds one first: its result read
    there too, as relayPlus's less one.  None single-stepped.  Values equal
    --exit=ret's."""
    binary = fixture("go_core")
    funcs = ["main.relay", "main.relayWord", "main.relayPlus", "main.triple", "main.word"]
    lst = ct("list", "-v", binary, *funcs).stdout
    for caller in ("main.relay", "main.relayWord", "main.relayPlus"):
        assert re.search(r"-> ends with %s \(tail position, which returns its results as they are: read at its "
                         r"exits\)" % re.escape(caller), lst), lst
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "relays", "5"], "--exit=" + mode, *sum((["-F", f] for f in funcs), []),
                        out=tmp("relays-%s.data" % mode), env=GO1)
        assert p.stdout.endswith("relays 144\n"), p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        assert [c["status"] for c in calls] == ["returned"] * 30, calls
        got[mode] = [(c["func"], c["depth"], [a["value"] for a in c["args"]], [r["value"] for r in c["ret"]])
                     for c in calls]
        c = calls_info(out)
        assert c["stepped"] == 0, (mode, c)
    assert got["auto"] == got["ret"], got
    calls = got["auto"]
    inner = [(f, r) for (f, d, a, r), (g, _, _, _) in zip(calls[1:], calls) if d == 1 and g != "main.relayPlus"]
    assert inner == [x for i in range(5) for x in (("main.triple", [3 * (i + 1)]),
                                                   ("main.word", [["zero", "one", "two", "three", "four"][(i + 2) % 5]]))], inner


def test_recursive_tail_call_results_read_where_the_outermost_call_ends():
    """relayDeep returns what its own call returns, as it is, and at the
    bottom what triple returns: both calls are in tail position and end
    with the outermost relayDeep call, their results read at its exit (one
    role each); none is single-stepped.  Values equal --exit=ret's."""
    binary = fixture("go_core")
    funcs = ["main.relayDeep", "main.triple", "main.rrelays"]
    lst = ct("list", "-v", binary, *funcs).stdout
    assert len(re.findall(r"-> ends with main\.relayDeep \(tail position, which returns its results as they "
                          r"are: read at its exits\)", lst)) == 2, lst
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "rrelays", "6"], "--exit=" + mode, *sum((["-F", f] for f in funcs), []),
                        out=tmp("rrelays-%s.data" % mode), env=GO1)
        assert p.stdout == "rrelays 90\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        # rrelays, and per i: relayDeep i%3+1 times, triple
        assert len(calls) == 1 + sum(i % 3 + 2 for i in range(6)), calls
        assert all(c["status"] == "returned" for c in calls), calls
        got[mode] = [(c["func"], c["depth"], [a["value"] for a in c["args"]], [r["value"] for r in c.get("ret", [])])
                     for c in calls]
        c = calls_info(out)
        assert c["stepped"] == 0 and (c["ret"] == 0) == (mode == "auto"), (mode, c)
    assert got["auto"] == got["ret"], got
    assert [r for f, d, a, r in got["auto"] if f == "main.triple"] == [[3 * (i + i % 3)] for i in range(6)], got


def fib_values(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def test_tail_call_result_is_the_sum_less_the_call_before():
    """`return fib(n-1) + fib(n-2)` (make bench's fib) and addPair's
    `return triple(i) + triple(i+1)`: the first result is kept in the
    caller's frame, the second call is in tail position and its result is
    added before the ret.  That call ends with its caller (no single-stepped
    exit), and its result is the caller's less the first's, which its exit
    (this call's instruction) read from the same frame word.  addTaken
    passes that word's address to its second call, which writes it: its end
    stays single-stepped.  Every value equals --exit=ret's and the
    program's."""
    fib = ct("list", "-v", fixture("go_benchfib"), "main.fib").stdout
    assert re.search(r"main\.fib\+\d+ 0x[0-9a-f]+ +-> ends with main\.fib \(tail position, which returns its result "
                     r"plus the one of its call before, kept in its frame: the result is the one read at its exits "
                     r"less that one\)", fib), fib
    funcs = ["main.addPair", "main.addTaken", "main.triple", "main.bumped"]
    lst = ct("list", "-v", fixture("go_core"), *funcs).stdout
    assert re.search(r"main\.addPair\+\d+ 0x[0-9a-f]+ +-> ends with main\.addPair \(tail position, which returns",
                     lst), lst
    assert re.search(r"main\.addTaken\+\d+ 0x[0-9a-f]+ +-> \S+ 0x[0-9a-f]+ add 0x08\(%rsp\), %rax \(single-stepped: "
                     r"in tail position", lst), lst
    n = 12
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([fixture("go_benchfib"), str(n)], "--exit=" + mode, "-F", "main.fib",
                        out=tmp("fibsum-%s.data" % mode), env=GO1)
        printed = dict(kv.split("=") for kv in p.stdout.split())
        calls = [c for c in replay_json(out) if c.get("func") == "main.fib"]
        assert len(calls) == int(printed["calls"]), (len(calls), p.stdout)
        vals = [(c["depth"], c["status"], c["args"][0]["value"], [r["value"] for r in c.get("ret") or []])
                for c in calls]
        assert all(v[1] == "returned" and v[3] == [fib_values(v[2])] for v in vals), \
            [v for v in vals if v[3] != [fib_values(v[2])]][:5]
        assert vals[0][3] == [int(printed["sum"])], (vals[0], printed)
        c = calls_info(out)
        assert c["stepped"] == 0, (mode, c)
        assert c["returned"] == len(calls), c
        if mode == "auto":  # after their call, or with their caller (the second of each pair)
            assert c["ret"] == 0 and c["after"] == (len(calls) + 1) // 2, c
        got[mode] = vals
        p, out = record([fixture("go_core"), "sums", "5"], "--exit=" + mode, *sum((["-F", f] for f in funcs), []),
                        out=tmp("sums-%s.data" % mode), env=GO1)
        printed = [line.split() for line in p.stdout.splitlines() if line.startswith("addPair")]
        calls = [c for c in replay_json(out) if c.get("func")]
        assert [c["status"] for c in calls] == ["returned"] * 30, calls
        rets = [(c["func"], [a["value"] for a in c["args"]] if c["func"] != "main.bumped" else None,
                 [r["value"] for r in c["ret"]]) for c in calls]
        want = []
        for w in printed:
            i = int(w[1])
            want += [("main.addPair", [i], [int(w[2])]), ("main.triple", [i], [3 * i]),
                     ("main.triple", [i + 1], [3 * (i + 1)]),
                     ("main.addTaken", [i], [int(w[5])]), ("main.triple", [i], [3 * i]), ("main.bumped", None, [7])]
        assert rets == want, (mode, rets, want)
        c = calls_info(out)
        assert c["stepped"] == (5 if mode == "auto" else 0), (mode, c)  # addTaken's calls of bumped
        got[mode + "sums"] = rets
    assert got["auto"] == got["ret"]


def test_code_running_on_into_the_next_function_is_a_tail_call():
    """A function without an exit whose code runs on into the next one:
    trick_falls (tricks.S) into trick_fallen, and glibc's IFUNC
    implementations of strcasecmp (__strcasecmp_avx2 sets up the locale and
    runs into __strcasecmp_l_avx2), reached through plt_tail's tail jump to
    the PLT.  In both modes the second is a tail call of the first, every call
    returned; it was the first unwound, the second its sibling."""
    binary = fixture("c_core")
    for mode in ("auto", "ret"):
        p, out = record([binary, "falls", "4"], "--exit=" + mode, "-F", "trick_falls", "-F", "trick_fallen",
                        "-F", "plt_tail", "-F", "libc.so.6:__strcasecmp*", out=tmp("falls-%s.data" % mode))
        assert p.stdout == "falls 7 1 0\n", (p.stdout, p.stderr)
        calls = [c for c in replay_json(out) if c.get("func")]
        assert all(c["status"] == "returned" for c in calls), (mode, calls)
        nodes = list(all_nodes(trees(calls)))
        falls = [n for n in nodes if n.func == "trick_falls"]
        assert len(falls) == 1 and [k.func for k in falls[0].children] == ["trick_fallen"], (mode, calls)
        fallen = falls[0].children[0].call
        assert fallen.get("tail") and fallen["ret"][0]["value"] in (7, "0x7"), (mode, fallen)
        # whichever implementation this CPU gets, its _l_ variant is entered
        # as a tail call (run into, or jumped to), never as a call of its own
        impl = [n for n in nodes if n.func.startswith("libc.so.6:__strcasecmp_l_") and "ifunc" not in n.func]
        assert len(impl) == 2, (mode, calls)
        for n in impl:
            assert n.call.get("tail") and n.call["depth"] >= 1, (mode, n.call)


def test_function_running_on_into_one_inside_it_is_a_tail_call():
    """Overlapping symbols (c_oddcode, hand-written): odd_outer adds 2 and runs
    on into odd_inner, whose symbol lies inside odd_outer's, and their one
    RET ends both. odd_inner entered at odd_outer's key is odd_outer going
    on there, a tail call: it was odd_outer unwound (by the next call at the
    same stack pointer) and odd_inner its sibling. odd_inner's call of its
    own stays a call."""
    for mode in ("auto", "ret"):
        p, out = record([fixture("c_oddcode")], "--exit=" + mode, "-F", "odd_*", out=tmp("oddcode-%s.data" % mode),
                        check=False)
        assert p.returncode == 42, (p.returncode, p.stderr)
        calls = [c for c in replay_json(out) if c.get("func")]
        assert all(c["status"] == "returned" for c in calls), (mode, calls)
        roots = next(iter(trees(calls).values()))
        assert [r.shape() for r in roots] == ["odd_outer(odd_inner)", "odd_inner"], (mode, calls)
        assert roots[0].children[0].call.get("tail") and not roots[1].call.get("tail"), (mode, calls)


def test_untraced_tail_jump_to_a_traced_library_function_is_a_tail_call():
    """plt_tail_checked ends in `jmp strcasecmp@plt`: untraced code (the
    PLT stub) that jumps on to libc's function, traced.  Its return address
    is watched (planned caller-side exit, or the jump's probe found one
    there: event flag 0x100), so the libc function entering at its key is
    its tail call, inside it; it was the call ending at the jump, the libc
    function its sibling.  With record-time limits the kernel's shadow stack
    nests it the same way: --max-depth 1 leaves it out."""
    binary = fixture("c_core")
    for name, flags in [("auto", ["--exit=auto"]), ("ret", ["--exit=ret"]), ("depth2", ["--max-depth", "2"]),
                        ("depth1", ["--max-depth", "1"])]:
        p, out = record([binary, "plttail", "4"], *flags, "-F", "plt_tail_checked", "-F", "libc.so.6:__strcasecmp*",
                        "-N", "libc.so.6:__strcasecmp_l*", out=tmp("plttail-%s.data" % name))
        assert p.stdout == "plttail 1 0\n", (p.stdout, p.stderr)
        calls = [c for c in replay_json(out) if c.get("func")]
        assert all(c["status"] == "returned" for c in calls), (name, calls)
        roots = [n for n in next(iter(trees(calls).values())) if "ifunc" not in n.func]
        assert [n.func for n in roots] == ["plt_tail_checked"] * 2, (name, calls)
        for n in roots:
            # (the first call's lazy binding runs strcasecmp's IFUNC resolver inside it)
            kids = [k for k in n.children if "ifunc" not in k.func]
            if name == "depth1":
                assert kids == [], (name, calls)
                continue
            assert len(kids) == 1 and kids[0].func.startswith("libc.so.6:__strcasecmp_"), (name, calls)
            assert kids[0].call.get("tail") and kids[0].call["depth"] == 1, (name, kids[0].call)


def test_plt_stub_jump_seen_at_the_call():
    """A PLT stub observed from its callers is its `jmp *slot` alone,
    which the kernel single-steps: that jump is a role of each call's probe
    (a TAIL after the CALL, same instant), and the stub has no probe of its
    own -- two emulated hits a call (the call, the exit after it), none
    single-stepped.  A stub also reached by a tail jump keeps its own."""
    binary, n = fixture("c_stubs"), 300
    text = ct("list", "-v", binary, "strtol@plt", "strtoul@plt").stdout
    assert "its jump into the library there too" in text.split("strtoul@plt")[0], text
    assert "entered by a jump from to_num" in text, text
    p, out = record([binary, "loop", str(n)], "-F", "strtol@plt", out=tmp("stubjump.data"))
    assert p.stdout == "loop %d\n" % (21 * n), p.stdout
    # (main's atoi calls strtol too)
    calls = [c for c in replay_json(out) if c.get("func")]
    assert len(calls) == n + 1, len(calls)
    assert {(c["func"], c["status"]) for c in calls} == {("strtol@plt", "returned")}, calls[:3]
    st = info_stats(out)
    assert int(st["events"]) == 2 * (n + 1), st["events"]
    ci = calls_info(out)
    assert (ci["returned"], ci["ret"], ci["after"], ci["stepped"]) == (n + 1, 0, n + 1, 0), ci
    stub = int(ct("list", binary, "strtol@plt").stdout.split("\n  0x", 1)[1].split()[0], 16)
    sites = file_sites(out)
    tails = [s for s in sites if s["kind"] == 2]
    assert tails and all(s["flags"] & 0x2 and s["addr"] != stub for s in tails), tails  # companions at the calls
    assert all(s["addr"] != stub for s in sites), sites


def test_stub_reached_by_a_jump_ends_at_emulated_exits():
    """strtoul@plt, tail-jumped to by to_num, keeps its own probe (its
    entry and jump); its direct calls (doubled's) end, in auto mode, at the
    first instruction after them the kernel emulates, not at their return
    addresses, single-stepped (ret mode: there, as before)."""
    binary = fixture("c_stubs")
    text = ct("list", "-v", binary, "strtoul@plt").stdout
    assert "1 of them at the first emulated instruction after" in text, text
    for mode, stepped in (("auto", 0), ("ret", 3)):
        p, out = record([binary, "mixed", "3"], "--exit=" + mode, "-F", "strtoul@plt", out=tmp("mixed-%s.data" % mode))
        assert p.stdout == "mixed 69\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        # (to_num's calls: the first ends unobserved, its return address
        # found while recording; then returned, or not if found too late)
        mine = [c for c in calls if c["status"] == "returned"]
        assert len(mine) >= 3, (mode, calls)
        ci = calls_info(out)
        assert ci["stepped"] <= stepped + 2 and (mode == "ret" or ci["stepped"] == 0), (mode, ci)


def test_stub_return_site_shares_the_callers_tail_jump_probe():
    """strlen@plt keeps its own probe (skip_len tail-jumps to it); locked_len
    calls it, then `lock sub` (no uprobe takes a locked instruction), then
    tail-jumps to len_after: the first instruction after the call the
    kernel emulates is locked_len's own tail jump, whose probe plays the
    stub's return site too (first).  Before, no return site went there and
    every call of strlen@plt from locked_len ended unobserved (redis's
    zfree: 96% of its malloc_usable_size@plt calls)."""
    binary, n = fixture("c_stubs"), 40
    plain = run([binary, "locked", str(n)]).stdout
    for mode in ("auto", "ret"):
        p, out = record([binary, "locked", str(n)], "--exit=" + mode, "-F", "strlen@plt", "-F", "locked_len",
                        "-F", "len_after", out=tmp("locked-%s.data" % mode))
        assert p.stdout == plain, (p.stdout, plain)
        calls = [c for c in replay_json(out) if c.get("func")]
        inside = [c for c in calls if c["func"] == "strlen@plt" and c["depth"] == 1]
        assert len(inside) == n, (mode, len(inside))
        assert all(c["status"] == "returned" for c in inside), (mode, [c["status"] for c in inside][:5])
        outer = [c for c in calls if c["func"] == "locked_len"]
        assert len(outer) == n and all(c["status"] == "returned" for c in outer), (mode, outer[:2])
        tails = [c for c in calls if c["func"] == "len_after"]
        assert len(tails) == n and all(c["depth"] == 1 for c in tails), (mode, tails[:2])
    # under record-time limits the kernel's shadow stack takes a probe for
    # its first role: no return site there (the calls end unobserved), and
    # locked_len's own calls stay right
    p, out = record([binary, "locked", str(n)], "--max-depth", "8", "-F", "strlen@plt", "-F", "locked_len",
                    "-F", "len_after", out=tmp("locked-limits.data"))
    assert p.stdout == plain, (p.stdout, plain)
    calls = [c for c in replay_json(out) if c.get("func")]
    outer = [c for c in calls if c["func"] == "locked_len"]
    assert len(outer) == n and all(c["status"] == "returned" for c in outer), outer[:2]
    inside = [c for c in calls if c["func"] == "strlen@plt" and c["depth"] == 1]
    assert len(inside) == n and all(c["status"] in ("returned", "unobserved") for c in inside), inside[:2]
    # --min-duration holds entries back in the kernel until a call proves
    # long enough: locked_len's tail jump is held with its entry and goes
    # out with it, even after len_after nested in it (it went missing:
    # every locked_len unwound, len_after a root)
    for mode in ("auto", "ret"):
        p, out = record([binary, "locked", str(n)], "--exit=" + mode, "--min-duration", "1us", "-F", "strlen@plt",
                        "-F", "locked_len", "-F", "len_after", out=tmp("locked-mindur-%s.data" % mode))
        assert p.stdout == plain, (p.stdout, plain)
        calls = [c for c in replay_json(out) if c.get("func")]
        outer = [c for c in calls if c["func"] == "locked_len"]
        assert outer and all(c["status"] == "returned" for c in outer), (mode, outer[:2])
        tails = [c for c in calls if c["func"] == "len_after"]
        assert len(tails) == len(outer) and all(c["depth"] == 1 for c in tails), (mode, tails[:2])


def test_stub_call_in_tail_position_ends_at_the_callers_ret():
    """locked_add calls strlen@plt (which keeps its own probe: skip_len
    tail-jumps to it), then `lock add` (no uprobe takes it), then returns:
    nothing the kernel emulates comes before locked_add's RET, which it
    keeps (add_next tail-jumps to it).  The stub's return site is a role of
    that RET's probe, SP moved as far.  Before, each such call ended
    unobserved (redis's zmalloc: 1,912 of 3,986 malloc_usable_size@plt
    calls in 2 s of load; now none)."""
    binary, n = fixture("c_stubs"), 30
    lst = ct("list", "-v", binary, "strlen@plt", "locked_add", "add_next").stdout
    assert "1 at the caller's RET" in lst, lst
    plain = run([binary, "lockadd", str(n)]).stdout
    for mode in ("auto", "ret"):
        p, out = record([binary, "lockadd", str(n)], "--exit=" + mode, "-F", "strlen@plt", "-F", "locked_add",
                        "-F", "add_next", out=tmp("lockadd-%s.data" % mode))
        assert p.stdout == plain, (p.stdout, plain)
        calls = [c for c in replay_json(out) if c.get("func")]
        inside = [c for c in calls if c["func"] == "strlen@plt" and c["depth"] >= 1]
        assert len(inside) == 2 * n, (mode, len(inside))
        assert all(c["status"] == "returned" and c["dur"] is not None for c in inside), \
            (mode, [(c["status"], c["dur"]) for c in inside][:5])
        outer = [c for c in calls if c["func"] == "locked_add"]
        assert len(outer) == 2 * n and all(c["status"] == "returned" for c in outer), (mode, outer[:2])


def test_library_function_behind_a_stub_seen_at_the_call_is_its_tail_call():
    """libc's strtol traced behind strtol@plt, whose jump is seen at the
    call: it enters at the stub's key, inside the stub's call (a tail
    call), as in --exit=ret where the stub's own probe sees the jump."""
    got = differential("c stubs, the library function traced", ["c_stubs", "loop", "4"],
                       ["--no-args", "-F", "strtol@plt", "-F", "libc.so.6:strtol"], None)
    for mode in ("auto", "ret"):
        roots = next(iter(trees(got[mode][2]).values()))
        assert [r.func for r in roots] == ["strtol@plt"] * 5, (mode, [r.func for r in roots])  # (main's atoi)
        for r in roots:
            assert r.call["status"] == "returned", (mode, r.call)
            assert [k.func for k in r.children] == ["libc.so.6:strtol"] and r.children[0].call.get("tail"), \
                (mode, [k.call for k in r.children])


def test_no_return_site_where_a_longjmp_goes_on():
    """hop tail-jumps to bounce (untraced), which longjmps back to
    catch_hop, whose setjmp path joins hop's return address: an exit probe
    there (as after the calls of a function whose call may go on in
    untraced code) would return hop's call that longjmp'd, the setjmp's
    value its result.  None goes there, planned or found while recording
    (the program pauses for it): hop's calls end unobserved, in both
    modes."""
    got = differential("c hop through a setjmp caller", ["c_stubs", "hop", "4"],
                       ["-F", "hop", "-F", "catch_hop", "-F", "after_hop"], None)
    for mode in ("auto", "ret"):
        hops = [c for c in got[mode][2] if c.get("func") == "hop"]
        assert len(hops) == 4 and all(c["status"] == "unobserved" for c in hops), (mode, hops)
        after = [c for c in got[mode][2] if c.get("func") == "after_hop"]
        assert after and all(c["status"] == "returned" and c["depth"] == 1 for c in after), (mode, after[:2])
    text = ct("list", "-v", fixture("c_stubs"), "hop").stdout
    assert "return addresses" not in text, text


def test_limits_keep_ret_probes():
    p, out = record([fixture("go_core"), "fib", "6"], "--max-depth", "3", env=GO1)
    st = info_stats(out)
    assert st["plan.exits"].startswith("ret (record-time limits"), st["plan.exits"]
    assert max(c["depth"] for c in replay_json(out)) == 2


def list_exits(binary, func):
    """FUNC's exits as `calltrace list -v` states them: (emulated,
    single-stepped) counts from its 'exits:' line, and per call site the
    exit's address and how it is read."""
    text = ct("list", "-v", binary, func).stdout
    part = text.split("  %s\n" % func, 1)[1].split("\n  0x", 1)[0]
    m = re.search(r"exits: at its \d+ call sites? \((\d+) exits emulated, (\d+) single-stepped", part)
    assert m, text
    sites = re.findall(r"^\s+call\s+\S+ 0x[0-9a-f]+\s+-> \S+ (0x[0-9a-f]+) .*\(([^()]*)\)$", part, re.M)
    return (int(m.group(1)), int(m.group(2))), sites


def test_bench_leaf_result_read_at_emulated_exit():
    """make bench's frameless Go leaf, called as 'sum += leaf(i)': at the
    loop's exit probe the result is the running sum's register minus the old
    sum the caller saved on its stack (fetch op REGDIFF), so the exit stays
    emulated with the result read there -- single-stepping it doubles the
    bench's per-call cost with arguments.  The recorded results are the
    program's: each 2i+1, adding up to the sum it prints."""
    binary = fixture("go_benchfib")
    counts, sites = list_exits(binary, "main.leaf")
    assert counts == (1, 0) and len(sites) == 1, (counts, sites)
    # the loop's jcc is also the next call's entry (plan/ahead.c)
    assert re.fullmatch(r"emulated, results read there; entered at (0x[0-9a-f]+) when its jump goes, an exit "
                        r"probe that leads only here: one hit for both", sites[0][1]), sites
    assert re.search(r"entered at (0x[0-9a-f]+)", sites[0][1])[1] == sites[0][0], sites
    n = 200
    p, out = record([binary, "leaf", str(n)], "-F", "main.leaf", env=GO1)
    printed = dict(kv.split("=") for kv in p.stdout.split())
    assert int(printed["calls"]) == n, p.stdout
    calls = [c for c in replay_json(out) if c.get("func") == "main.leaf"]
    assert [c["args"][0]["value"] for c in calls] == list(range(n)), calls[:3]
    got = [[r["value"] for r in c.get("ret") or []] for c in calls]
    assert got == [[2 * i + 1] for i in range(n)], got[:5]
    assert sum(g[0] for g in got) == int(printed["sum"]), printed
    c = calls_info(out)
    assert c["after"] == n and c["stepped"] == 0 and c["ret"] == 0, c
    # one hit a call: its entry and the end of the call before at one probe
    hits = info_stats(out).get("probe_hits", "").split()
    assert hits and int(hits[0]) <= n + 16, (hits, n)


def test_calls_seen_ahead_at_the_exit_probe_of_the_call_before():
    """A loop's jcc back to its call is the exit probe of the call before:
    the next call's entry rides on it (plan/ahead.c), the jump's way read
    from the flags, its arguments from where the walk to the call says
    they are.  list -v says which; the calls, their arguments (strings
    too) and results are --exit=ret's; a call two ways lead to, and
    arguments computed on the way (`neg`), keep the call's own probe --
    unless nothing is captured (--no-args: then only SP, RBP and g
    matter)."""
    binary = fixture("go_core")
    text = ct("list", "-v", binary, "main.ahead*").stdout
    m = re.search(r"(\d+) calls? seen at the exit probe of the call before", text)
    assert m and int(m[1]) >= 1, text
    ahead = re.findall(r"^\s+call\s+(\S+) 0x[0-9a-f]+\s+-> .*; entered at (0x[0-9a-f]+)( when its jump goes| when its "
                       r"jump does not go)?, an exit probe that leads only here", text, re.M)
    # (which of the loops' calls depends on where the compiler put nops:
    # the reconstruction of each way is unit/recon_calls_seen_ahead_*)
    assert len(ahead) == int(m[1]), ahead
    plain = run([binary, "ahead", "40"], env=dict(os.environ, **GO1))
    got = {}
    for mode in ("auto", "ret"):
        p, out = record_mode([binary, "ahead", "40"], ["-F", "main.ahead*"], GO1, mode)
        assert p.returncode == 0 and p.stdout == plain.stdout, (mode, p.stderr)
        # (pointers differ from run to run: where the goroutine's stack went)
        got[mode] = [(c["func"], c["depth"], c["status"],
                      re.sub(r'"0xc[0-9a-f]+"', '"0x.."', json.dumps(c.get("args"))), json.dumps(c.get("ret")))
                     for c in replay_json(out) if c.get("func", "").startswith("main.ahead")]
        if mode == "auto":
            st = info_stats(out)
            assert st.get("unplanned") in ("0", None), st
            assert st.get("plan.ahead", "").startswith(m[1] + " calls seen at the exit probe"), st
    # ahead, its six loops' calls, aheadChain, its 3 calls before the fault, its deferred recover
    assert len(got["auto"]) == 1 + 5 * 40 + 39 + 38 + 37 + 1 + 3 + 1, len(got["auto"])
    assert got["auto"] == got["ret"], next((a, r) for a, r in zip(got["auto"], got["ret"]) if a != r)
    # without arguments, the calls whose arguments are computed on the way too
    text = ct("list", "-v", "--no-args", binary, "main.ahead*").stdout
    m = re.search(r"(\d+) calls? seen at the exit probe of the call before", text)
    assert m and int(m[1]) > len(ahead), text


def test_result_added_to_a_struct_field_read_at_emulated_exit():
    """encoding/json's refill shape, `f.buf = f.buf[0 : len(f.buf)+n]` right
    after n, err := f.read(...): n is added to the slice's length, loaded
    through the pointer the caller keeps in RDX, before the bounds check's
    branch; at that branch the result is RAX less that field (fetch op
    REGDIFF through a register), so read's exit stays emulated with its
    results read there.  Every value equals --exit=ret's: 7 bytes a read
    until the buffer is full, then (0, an error)."""
    binary = fixture("go_core")
    func = "main.(*filler).read"
    counts, _ = list_exits(binary, func)
    assert counts == (1, 0), counts
    text = ct("list", "-v", binary, func).stdout
    assert re.search(r"refill\+\d+ 0x[0-9a-f]+ +-> \S+ 0x[0-9a-f]+ j\w+ .*\(emulated, results read there\)", text), text
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "refills", "5"], "--exit=" + mode, "-F", func, out=tmp("refills-%s.data" % mode),
                        env=GO1)
        assert p.stdout == "refills 22 1\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func") == func]
        assert [c["status"] for c in calls] == ["returned"] * 5, calls
        got[mode] = [[r.get("value") for r in c.get("ret") or []] for c in calls]
        c = calls_info(out)
        assert c["stepped"] == 0 and c["ret"] == (0 if mode == "auto" else 5), (mode, c)
    assert got["auto"] == got["ret"], got
    assert [g[0] for g in got["auto"]] == [7, 7, 7, 1, 0], got
    assert got["auto"][-1][1] and all(g[1] is None for g in got["auto"][:-1]), got


def test_tail_call_result_copied_to_the_callers_results():
    """`cm.h1 = s.needsH1(); return cm, nil` (net/http's
    connectMethodForRequest with requiresHTTP1): the bool comes back in RAX
    and leaves in RDI, one of methodFor's own result registers, RAX taken by
    another field.  That call in tail position ends with methodFor, its
    result read where methodFor's are (at its caller's emulated exit), no
    single-stepped exit; every value equals --exit=ret's."""
    binary = fixture("go_core")
    funcs = ["main.(*stash).needsH1", "main.methodFor", "main.methods"]
    text = ct("list", "-v", binary, *funcs).stdout
    part = text.split("main.(*stash).needsH1\n", 1)[1].split("\n  0x", 1)[0]
    assert "-> ends with main.methodFor (tail position" in part, part
    got = {}
    for mode in ("auto", "ret"):
        p, out = record([binary, "methods", "5"], "--exit=" + mode, *sum((["-F", f] for f in funcs), []),
                        out=tmp("methods-%s.data" % mode), env=GO1)
        assert p.stdout == "methods 28\n", p.stdout
        calls = [c for c in replay_json(out) if c.get("func")]
        assert [c["status"] for c in calls] == ["returned"] * 11, calls
        got[mode] = [(c["func"], [r.get("value") for r in c.get("ret") or []]) for c in calls]
        c = calls_info(out)
        assert c["stepped"] == 0, (mode, c)
    assert got["auto"] == got["ret"], got
    assert [r for f, r in got["auto"] if f == "main.(*stash).needsH1"] == [[i % 2 == 1] for i in range(5)], got


def test_virtual_methods_and_handler_tables_observed_from_their_callers():
    """C and C++ functions whose address only a table in data holds (a
    vtable, a handler array: cxx_virt) are observed from their callers,
    each call site found while recording: the program's virtual calls (one
    a tail jump, `return s->area(k)`, which nests under its jumper) end at
    exit probes after them from the second call of each site on.  A
    streambuf's overrides that libstdc++ calls under a catch keep no exit
    there: their RETs from then on.  So is a comparator handed to qsort
    (its address taken in code), whose interim RETs see the first call
    from each new place end: every call of it returns, with its result.  One
    that goes on in untraced code (Label::area: a tail jump to strlen)
    returns where found call sites' exit probes see it end."""
    for binary in ("cxx_virt", "cxx_virt_clang"):
        exe = fixture(binary)
        listing = ct("list", "-v", exe).stdout
        blocks = {m.group(1): m.group(2) for m in
                  re.finditer(r"^  0x[0-9a-f]+ +\S+ +\S+ +\d+ +(\S+)\n((?:      .*\n)+)", listing, re.M)}
        # (clang calls the handlers directly: the table is constant)
        through = [f for f in ("vt_inc", "vt_dbl") if "and calls through its address" in blocks[f]]
        assert len(through) == (2 if binary == "cxx_virt" else 0), (binary, blocks["vt_inc"])
        for f in ("Square::area", "Rect::area", "CountBuf::xsputn"):
            assert "and calls through its address" in blocks[f], (binary, f, blocks[f])
        assert re.search(r"and calls through its address \(its address is taken in main", blocks["vt_cmp"]) and \
            "(interim RETs" in blocks["vt_cmp"], (binary, blocks["vt_cmp"])
        p, out = record([exe, "3"], "-v", out=tmp(f"{binary}-virt.data"))
        assert p.returncode == 0, p.stderr
        for f in ["Square::area", "Rect::area"] + through:
            assert re.search(rf"calls of {re.escape(f)} from 0x[0-9a-f]+: exit probe at", p.stderr), (binary, f)
        assert re.search(r"calls of CountBuf::xsputn from 0x[0-9a-f]+ keep no exit: its landing pad may resume "
                         r"its caller.*its RETs are probed from now on", p.stderr), (binary, p.stderr)
        calls = [c for c in replay_json(out) if "func" in c]
        cmps = [c for c in calls if c["func"] == "vt_cmp"]
        assert cmps and all(c["status"] == "returned" and c.get("ret") for c in cmps), (binary, cmps)
        areas = [c for c in calls if c["func"].endswith("::area")]
        # the last round: every call returned, with its result
        for c in areas[-8:]:
            assert c["status"] == "returned" and c.get("ret"), (binary, c)
        # Label::area goes on in strlen (a tail jump to untraced code): its
        # jump's probe knows the call sites found since, whose exit probes
        # see those calls end -- not unobserved at the jump
        labels = [c for c in calls if c["func"] == "Label::area"]
        assert len(labels) == 6, (binary, labels)
        for c in labels[2:]:
            assert c["status"] == "returned" and c["ret"][0]["value"] == 5 - c["args"][1]["value"] % 2, (binary, c)
        # `return s->area(k)`: a tail call inside first_site, never a sibling
        firsts = [i for i, c in enumerate(calls) if c["func"] == "first_site"]
        for i in firsts:
            nxt = calls[i + 1]
            assert nxt["func"].endswith("::area") and nxt["depth"] == calls[i]["depth"] + 1 and nxt.get("tail"), \
                (binary, calls[i], nxt)


def check_unobserved_bounds(path):
    """Each unobserved call of record PATH that a later event of its
    goroutine/thread shows over says how long it lasted at most (dur_max),
    dur and dur_raw staying null.  Under --raw dur_max is exactly from its
    entry to an event of its goroutine that follows every call inside it
    and precedes the next call at its level or above; corrected, it is no
    more than that.  Returns how many calls had one."""
    raw, corrected = replay_json(path, "--raw"), replay_json(path)
    raw = [c for c in raw if "func" in c]
    corrected = [c for c in corrected if "func" in c]
    assert [(c["func"], c["status"]) for c in raw] == [(c["func"], c["status"]) for c in corrected]
    p = ct("dump", "--events", path)
    assert p.returncode == 0, p.stderr
    ev_ts = collections.defaultdict(set)  # (pid, goid or tid) -> event times (ns since the start)
    for line in p.stdout.splitlines():
        f = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "ts" in f and "goid" in f:
            ev_ts[(int(f["pid"]), int(f["goid"]) or -int(f["tid"]))].add(int(f["ts"]))
    who = lambda c: (c["pid"], c["goid"] or -c["tid"])
    bounded = 0
    for i, (c, cc) in enumerate(zip(raw, corrected)):
        if "dur_max" not in c:
            assert "dur_max" not in cc, (c, cc)
            if c["status"] == "unobserved":
                # none only where nothing of its goroutine came after it
                assert not any(t > c["ts"] for t in ev_ts[who(c)]), c
            continue
        assert c["status"] == "unobserved" and c["dur"] is None and c["dur_raw"] is None, c
        assert cc["dur"] is None and cc["dur_raw"] is None and isinstance(cc["dur_max"], int), cc
        bounded += 1
        end = c["ts"] + c["dur_max"]
        assert c["dur_max"] >= 0 and end in ev_ts[who(c)], (c, sorted(t for t in ev_ts[who(c)] if t > c["ts"])[:5])
        later = [d for d in raw[i + 1:] if who(d) == who(c) and d.get("stack") == c.get("stack")]
        nxt = next((k for k, d in enumerate(later) if d["depth"] <= c["depth"]), len(later))
        assert all(d["ts"] <= end for d in later[:nxt]), (c, later[:nxt][-1:])  # calls inside it
        assert nxt == len(later) or later[nxt]["ts"] >= end, (c, later[nxt])
        assert 0 <= cc["dur_max"] <= c["dur_max"], (c, cc)
    return bounded


def test_unobserved_calls_say_how_long_they_lasted_at_most():
    """An unobserved call's end is not seen, but the event that showed it
    over is: it lasted at most until then (dur_max; the text's "<=N").  The
    call in tail position whose caller began before -p attached ends at
    that caller's return site; without interim RETs, the first calls from
    call sites found while recording end at the next call at their level."""
    prog = subprocess.Popen([fixture("go_core"), "tailwait", "5"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, **GO1))
    try:
        assert prog.stdout.readline() == "ready\n"
        out = tmp("exits-bound-tailwait.data")
        rest = record_attached_then_go_on(prog, prog.pid, out, "-F", "main.*")
    finally:
        if prog.poll() is None:
            prog.kill()
    assert rest == "tailwait 10\n", rest
    assert check_unobserved_bounds(out) == 1
    text = ct("replay", out)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[-1] == ('# "<=N": a call whose end was not observed, over before the event that showed it: '
                         'at most N'), lines[-3:]
    unobserved = [l for l in lines if "end not observed" in l]
    assert len(unobserved) == 1 and re.match(r"<=[ \d]\d\.\d{3} (us|ms| s) \[", unobserved[0]), unobserved
    funcs = ["main.(*slLeaf).build", "main.(*slInner).build"]
    p, out = record([fixture("go_core"), "samelevel", "3"], "--no-interim", *sum((["-F", f] for f in funcs), []),
                    out=tmp("exits-bound-samelevel.data"), env=GO1)
    assert p.stdout == "samelevel 72\n", (p.stdout, p.stderr)
    assert check_unobserved_bounds(out) >= 8


def test_unobserved_bound_exact_on_a_written_record():
    """A record written here: goroutine 2's calls of leaf from a call site
    without an exit probe (CHECK events) end at the next call from there and
    at work's RET, 2.5 and 1.5 us after their entries; goroutine 3's is
    still open when the trace ends.  Every output gives the first two that
    bound (no calibration: as measured), the text in goroutine 2's own
    block (buffered apart from the first one's) and merged alike, and the
    third none."""
    import recfile as R
    r = R.Record("go")
    r.funcs(["main.work", "main.leaf"])
    r.sites([(0, R.ENTRY), (0, R.RET), (1, 7)])  # 7: CHECK
    ev = lambda site, ts, goid, key: dict(site=site, ts=ts, tid=7, goid=goid, key=key)
    r.events([ev(0, 2000, 1, 100), ev(1, 3000, 1, 100),
              ev(0, 4000, 2, 100), ev(2, 5000, 2, 150), ev(2, 7500, 2, 150), ev(1, 9000, 2, 100),
              ev(2, 10000, 3, 50)])
    path = r.write(tmp("unobserved_bound.data"))
    calls = [(c["goid"], c["func"], c["status"], c["dur"], c.get("dur_max")) for c in replay_json(path)]
    assert calls == [(1, "main.work", "returned", 1000, None), (2, "main.work", "returned", 5000, None),
                     (2, "main.leaf", "unobserved", None, 2500), (2, "main.leaf", "unobserved", None, 1500),
                     (3, "main.leaf", "unobserved", None, None)], calls
    for flags in ([], ["--merge"]):
        p = ct("replay", *flags, path)
        assert p.returncode == 0, p.stderr
        leaves = [l for l in p.stdout.splitlines() if "main.leaf(" in l]
        assert [l.split(" [")[0] for l in leaves] == ["<= 2.500 us", "<= 1.500 us", " " * 11], (flags, leaves)
        assert all(TEXT_LINE.match(l) and l.endswith("/* end not observed: it returns where no probe is */")
                   for l in leaves), leaves
    p = ct("dump", "--chrome", path)
    assert p.returncode == 0, p.stderr
    ends = [e["args"] for e in json.loads(p.stdout)["traceEvents"] if e.get("ph") == "E" and e["name"] == "main.leaf"]
    assert ends == [{"status": "unobserved", "dur_max_ns": 2500}, {"status": "unobserved", "dur_max_ns": 1500},
                    {"status": "unobserved"}], ends
