"""C call graphs as uftrace draws them (issue 17), on fixtures built by gcc
and clang at -O0 and -O2 (tests/fixtures/c/cgraph): tail jumps to untraced
code and through a library's PLT, a longjmp out of a chain of tail jumps,
exec from a second thread, fork inside a traced call, compiler clones and
constant-propagated arguments, float arguments, an empty C++ class.

The fixtures say what they did (tail.c's header: "call NAME ARG PARENT",
"return NAME VALUE", "time NAME T0 T1", "longjmp VALUE SETJMP_CALLER"); the
trace must tell the same story: the same calls in the same order under the
same callers, with the same arguments, results and statuses, and each call
inside the time its caller measured around it.  Which calls are tail calls
is read from the binary itself (a `jmp` to the callee in the caller's code)."""
import os
import re

from lib import fixture, record, replay_json, run, tmp, trees
from otlp import meta

VARIANTS = [f"{cc}-O{o}" for cc in ("gcc", "clang") for o in (0, 2)]


def prog(variant, name):
    return fixture(os.path.join("cgraph", variant, name))


def program_says(stdout):
    """The calls the program reports, in entry order: dicts with func, arg,
    parent (index or None), status, and value / time where it said so."""
    calls, last = [], {}

    def descends(i, root):
        while i is not None and i != root:
            i = calls[i]["parent"]
        return i == root

    for line in stdout.splitlines():
        w = line.split()
        if w[0] == "call":
            calls.append({"func": w[1], "arg": int(w[2]), "parent": None if w[3] == "-" else last[w[3]],
                          "status": "returned"})
            last[w[1]] = len(calls) - 1
        elif w[0] == "return":
            calls[last[w[1]]]["value"] = int(w[2])
        elif w[0] == "time":
            calls[last[w[1]]]["time"] = (int(w[2]), int(w[3]))
        elif w[0] == "longjmp":
            root = last[w[2]]
            for i in range(root + 1, len(calls)):
                if descends(i, root):
                    calls[i]["status"] = "unwound"
    return calls


def jumps_to(binary, caller, callee):
    """Does CALLER's code in BINARY end with a jump to CALLEE (directly or
    through its PLT stub)?  From objdump's disassembly."""
    text = run(["objdump", "-d", "--no-show-raw-insn", binary]).stdout
    body = re.search(rf"^[0-9a-f]+ <{re.escape(caller)}>:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    assert body, f"{caller} not in {binary}"
    return bool(re.search(rf"\sjmp\s+[0-9a-f]+ <{re.escape(callee)}(@plt)?>", body.group(1)))


def bare(func):
    """The source name: without a library's "LIB:" and a compiler clone's
    suffix (gcc's chain.constprop.0)."""
    return (func.split(":", 1)[1] if ":" in func else func).split(".", 1)[0]


def check_story(variant, p, path, where, keep=lambda c: True):
    """The trace at PATH (its calls KEEP selects) tells what program run P
    said (see the header)."""
    said = program_says(p.stdout)
    calls = [c for c in replay_json(path) if "func" in c and keep(c)]
    # the program's clock is compared with the times measured (durations
    # shown are corrected: the tracer's own time is out of them)
    measured = [c for c in replay_json(path, "--raw") if "func" in c and keep(c)]
    forest = trees(calls)
    parent = {}
    for roots in forest.values():
        for r in roots:
            for n in r.walk():
                for ch in n.children:
                    parent[id(ch.call)] = n.call
    got = [(bare(c["func"]), bare(parent[id(c)]["func"]) if id(c) in parent else None) for c in calls]
    want = [(c["func"], said[c["parent"]]["func"] if c["parent"] is not None else None) for c in said]
    assert got == want, (variant, got, want)
    start = int(meta(path)["clock.start_ns"])
    for c, m, s in zip(calls, measured, said):
        assert c["status"] == s["status"], (variant, c, s)
        if c.get("args") and c["args"][0]["value"] is not None:  # unavailable: test_clone_*
            assert c["args"][0]["value"] == s["arg"], (variant, c, s)
        if "value" in s and c.get("ret"):
            assert c["ret"][0]["value"] == s["value"], (variant, c, s)
        if "time" in s:
            t0, t1 = s["time"]
            assert t0 <= start + m["ts"] and start + m["ts"] + m["dur"] <= t1, (variant, m, s, start)
        up = parent.get(id(c))
        if up:
            caller = up["func"].split(":", 1)[-1]
            binary = where(up["func"])
            callee = c["func"].split(":", 1)[-1]
            assert bool(c.get("tail")) == jumps_to(binary, caller, callee), (variant, c, caller)
    return said, calls


def test_tail_jump_to_untraced_code_lasts_until_it_returns():
    # bar() is `jmp usleep@plt` at -O2: its call ends when usleep returns
    for v in VARIANTS:
        for flags in ([], ["--exit=ret"], ["--min-duration", "1ms"]):
            out = tmp(f"sleep-{v}.data")
            p, _ = record([prog(v, "cg_tail"), "sleep"], *flags, out=out)
            if flags[:1] == ["--min-duration"]:  # only bar and main last that long
                start = int(meta(out)["clock.start_ns"])
                said = program_says(p.stdout)
                calls = [c for c in replay_json(out, "--raw") if "func" in c]  # the program's clock: measured
                assert [c["func"] for c in calls] == ["main", "bar"], (v, calls)
                bar, t0, t1 = calls[1], *said[1]["time"]
                assert t0 <= start + bar["ts"] and start + bar["ts"] + bar["dur"] <= t1, (v, bar, said)
            else:
                said, calls = check_story(v, p, out, lambda f: prog(v, "cg_tail"))
                bar = calls[1]
            # usleep(2000) sleeps 2000 us at least, all of it inside bar's call
            assert bar["func"] == "bar" and bar["dur"] >= said[1]["arg"] * 1000, (v, flags, bar)


def test_library_tail_call_through_its_plt():
    # lib_foo() jumps to lib_bar() through the library's PLT at -O2: a tail call
    for v in VARIANTS:
        out = tmp(f"lib-{v}.data")
        p, _ = record([prog(v, "cg_tail"), "lib"], "-F", "main", "-F", "libcgtail.so:*", out=out)
        said, calls = check_story(v, p, out, lambda f: prog(v, "libcgtail.so" if ":" in f else "cg_tail"))
        foo, bar = calls[1], calls[2]
        if bar.get("tail"):  # they end together
            assert foo["ts"] + foo["dur"] == bar["ts"] + bar["dur"], (v, foo, bar)
    # one pattern language: record's --root and replay's -F/-N take the
    # library's function as LIB:GLOB or as GLOB
    v = VARIANTS[-1]
    for root in ("libcgtail.so:lib_foo", "lib_foo"):
        out = tmp(f"libroot-{v}.data")
        p, _ = record([prog(v, "cg_tail"), "lib"], "-F", "libcgtail.so:*", "--root", root, out=out)
        assert [bare(c["func"]) for c in replay_json(out) if "func" in c] == ["lib_foo", "lib_bar"], (root, p.stderr)
        for g in ("lib_bar", "libcgtail.so:lib_bar", "lib_b*"):
            assert [c["func"] for c in replay_json(out, "-F", g)] == ["libcgtail.so:lib_bar"], g
            assert [c["func"] for c in replay_json(out, "-N", g)] == ["libcgtail.so:lib_foo"], g


def test_tail_jump_out_of_the_library_never_a_wrong_parent():
    # libcgout.so's out_free/out_sort end in `jmp free@plt`/`jmp qsort@plt`
    # at -O2 (its constructor out_setup in `jmp free@plt` with gcc), called
    # by the untraced program and by the library's own out_work.  From the
    # program (through its PLT) and from out_work, the probe at each call's
    # return address closes them, returned, with qsort's calls of out_cmp
    # inside; the loader's call of out_setup nothing sees end: it ends
    # unobserved at the jump.  With record-time limits (RET probes only),
    # the program's calls end so too, and the calls after them (out_leaf,
    # in a deeper frame of main's helper) and out_cmp are not inside them.
    for v in VARIANTS:
        lib = prog(v, "libcgout.so")
        jumps = {f: jumps_to(lib, f, t) for f, t in (("out_setup", "free"), ("out_free", "free"),
                                                     ("out_sort", "qsort"))}
        def call(f):
            return f"{f}:{'unobserved' if jumps[f] else 'returned'}"
        cmps = "out_cmp:returned,out_cmp:returned,out_cmp:returned"
        sort = [call("out_sort")] + cmps.split(",") if jumps["out_sort"] else [f"out_sort:returned({cmps})"]
        want = [call("out_setup"), call("out_free"), "out_leaf:returned", *sort, "out_leaf:returned",
                f"out_work:returned(out_leaf:returned,out_free:returned,out_leaf:returned,out_free:returned,"
                f"out_sort:returned({cmps}))", "out_leaf:returned"]
        assert any(jumps.values()) or v.endswith("O0"), (v, jumps)

        def shape(n):
            me = f"{bare(n.func)}:{n.call['status']}"
            return me + ("(" + ",".join(shape(c) for c in n.children) + ")" if n.children else "")

        # the program's calls through its PLT: their return sites are
        # planned before it runs (not with record-time limits), they return
        planned = [call("out_setup"), "out_free:returned", "out_leaf:returned", f"out_sort:returned({cmps})",
                   *want[-3:]]
        for flags in ([], ["--exit=ret"], ["--max-depth", "1"]):
            out = tmp(f"tailout-{v}.data")
            p, _ = record([prog(v, "cg_tailout")], "-F", "libcgout.so:*", *flags, out=out)
            assert p.stdout == "25 1\n", (v, flags, p.stdout)
            forest = trees(replay_json(out))
            assert len(forest) == 1, (v, flags, forest)
            got = [shape(r) for r in next(iter(forest.values()))]
            exp = planned if flags[:1] != ["--max-depth"] else [w.split("(")[0] for w in want]
            assert got == exp, (v, flags, got, exp)


def tail_stories(what):
    """cg_tail WHAT recorded in every variant, in both exit modes, each trace
    checked against what the program said: (variant, flags, said, calls)."""
    for v in VARIANTS:
        for flags in ([], ["--exit=ret"]):
            out = tmp(f"{what}-{v}.data")
            p, _ = record([prog(v, "cg_tail"), what], *flags, out=out)
            yield (v, flags) + check_story(v, p, out, lambda f: prog(v, "cg_tail"))


def test_longjmp_out_of_a_tail_chain_unwinds_it():
    # f1 -> jmp f2 -> jmp f3 -> longjmp back into chain(), which calls after()
    for v, _, said, _ in tail_stories("chain"):
        assert [c["status"] for c in said].count("unwound") == 3, (v, said)


def test_tail_jump_at_the_entry_hands_the_call_over():
    # hop()'s first instruction is `jmp hopped` at -O2: one probe is both its
    # entry (observed from main's calls in auto mode) and its tail jump
    for v, flags, _, calls in tail_stories("hop"):
        assert [c["func"] for c in calls] == ["main"] + ["hop", "hopped"] * 2 + ["hopv", "hoppedv"] * 2, (v, flags, calls)


def test_exec_from_a_thread_is_followed():
    # cg_thexec's second thread execs cg_tail chain: --follow traces it
    for v in VARIANTS:
        out = tmp(f"thexec-{v}.data")
        p, _ = record([prog(v, "cg_thexec")], "--follow", out=out)
        check_story(v, p, out, lambda f: prog(v, "cg_tail"), keep=lambda c: c["func"].startswith("cg_tail:"))
        before = {c["func"]: c["status"] for c in replay_json(out) if ":" not in c.get("func", ":")}
        assert before == {"main": "exited", "run": "exited"}, (v, before)


def passed_values(stdout):
    """{(func, "v.a"): value} from the program's "arg FUNC NAME VALUE" lines."""
    out = {}
    for line in stdout.splitlines():
        w = line.split()
        if w[0] == "arg":
            out[(w[1], w[2])] = w[3]
    return out


def shown(value, path):
    """The part of a JSON argument value at PATH ("a" of {"a":..}): None if
    the trace shows it unavailable."""
    for k in path:
        if value is None:
            return None
        value = value.get(k)
    return value


def same(text, value):
    """Does the trace's JSON VALUE say what the program printed as TEXT?"""
    if text == "{}":
        return value == {}
    if isinstance(value, str):
        return int(value, 16) == int(text, 16)
    if isinstance(value, float):
        return abs(value - float(text)) <= 1e-6 * max(1.0, abs(float(text)))
    return value == int(text)


def check_args(variant, p, path):
    """Every argument the program says it passed is shown with that value,
    or shown unavailable (and then with a reason where DWARF says why):
    never another value.  Returns {(func, name): shown value or the reason}."""
    passed = passed_values(p.stdout)
    calls = [c for c in replay_json(path) if "func" in c]
    seen = {}
    for (func, name), text in passed.items():
        found = [c for c in calls if bare(c["func"]) == func]
        assert len(found) == 1, (variant, func, calls)
        top, *rest = name.split(".")
        arg = [a for a in found[0].get("args", []) if a["name"] == top]
        assert len(arg) == 1, (variant, func, name, found[0])
        v = shown(arg[0]["value"], rest)
        if v is None:
            seen[(func, name)] = arg[0].get("unavailable", "unavailable")
        else:
            assert same(text, v), (variant, func, name, text, arg[0])
            seen[(func, name)] = v
    return seen


def test_clone_arguments_are_its_own():
    # gcc -O2: use.constprop.0.isra.0 has p, the constant unused, and v
    # split in registers DWARF does not name; clang -O2: use keeps its name
    # with unused constant and v.b gone
    for v in VARIANTS:
        out = tmp(f"clone-{v}.data")
        p, _ = record([prog(v, "cg_args"), "clone"], out=out)
        seen = check_args(v, p, out)
        # the pointer and the constant are always known, and -O0 shows all
        assert not isinstance(seen[("use", "p")], str) or seen[("use", "p")].startswith("0x"), (v, seen)
        assert seen[("use", "unused")] == 2, (v, seen)
        if v.endswith("O0"):
            assert all(not isinstance(x, str) or x.startswith("0x") for x in seen.values()), (v, seen)


def test_float_arguments_stored_or_unavailable_not_invented():
    # -O0 stores them in the prologue, where a second probe reads them
    # (test_floats.py); the -O2 leaf keeps them in XMM registers, which BPF
    # cannot read (README)
    for v in VARIANTS:
        out = tmp(f"float-{v}.data")
        p, _ = record([prog(v, "cg_args"), "float"], out=out)
        seen = check_args(v, p, out)
        assert seen[("scale", "k")] == 2, (v, seen)
        for name in ("x", "y"):
            assert (seen[("scale", name)] == "float register") == v.endswith("O2"), (v, seen)


def test_empty_class_by_value_is_braces():
    for v in VARIANTS:
        out = tmp(f"empty-{v}.data")
        p, _ = record([prog(v, "cg_empty")], out=out)
        seen = check_args(v, p, out)
        assert seen == {("take", "e"): {}, ("take", "x"): 1}, (v, seen)


def test_fork_inside_a_traced_call_returns_in_both():
    for v in VARIANTS:
        out = tmp(f"fork-{v}.data")
        p, _ = record([prog(v, "cg_args"), "fork"], "--follow", out=out)
        said = [line.split() for line in p.stdout.splitlines()]
        parent = int([w for w in said if w[:2] == ["call", "main"]][0][4])
        returned = {int(w[3]): int(w[2]) for w in said if w[:2] == ["return", "forked"]}
        assert len(returned) == 2 and parent in returned, (v, said)
        calls = [c for c in replay_json(out) if "func" in c]
        for pid, r in returned.items():
            mine = [(c["func"], c["depth"], c["status"]) for c in calls if c["pid"] == pid]
            # the child starts inside main and forked, as the parent's copy
            assert mine == [("main", 0, "returned"), ("forked", 1, "returned")], (v, pid, mine)
            ret = [c for c in calls if c["pid"] == pid and c["func"] == "forked"][0].get("ret")
            assert not ret or ret[0]["value"] == r, (v, pid, ret, r)
