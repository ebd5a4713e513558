"""Calls through GOT slots (tests/fixtures/c/gotcall): `call *slot(%rip)` to
a function of the program itself, which rustc's -Z plt=no makes of nearly
half of a Rust program's calls (cargo: 157k of its 331k) and gcc -fno-plt of
calls into another file.  Such a call is a direct call as far as its end is
concerned: it returns to the next instruction.  Before, the slot's dynamic
relocation counted as the function's address taken, and it kept RET probes
(cargo `-F '*'`: 3,650 functions); now its calls are planned as direct ones,
each sent by the function's CHECK (the call instruction itself would be
single-stepped).  A slot that code reads (the address handed on) or jumps
through (a tail call) still keeps RET probes."""
import re

from lib import ct, fixture, record, replay_json, run, tmp, trees


def funcs_of(listing):
    out, cur = {}, None
    for line in listing.splitlines():
        m = re.match(r"  0x[0-9a-f]+ .* (\w+)$", line)
        if m:
            cur = out.setdefault(m.group(1), [])
        elif cur is not None:
            cur.append(line.strip())
    return out


def shape(n):
    me = f"{n.func}:{n.call['status']}" + (":tail" if n.call.get("tail") else "")
    return me + ("(" + ",".join(shape(c) for c in n.children) + ")" if n.children else "")


def observed_from_callers(f, name, n):
    exits = f[name][1] if f[name][0].startswith("(") else f[name][0]
    assert exits.startswith(f"exits: at its {n} call site") and "looks up the caller" in exits, (name, f[name])
    assert not any(l.startswith("ret ") for l in f[name]), (name, f[name])


def listing(exe, glob):
    lst = ct("list", "-v", exe, glob)
    assert lst.returncode == 0, lst.stderr
    return funcs_of(lst.stdout)


def recorded(exe, arg, glob, mode, plain):
    """The calls of EXE ARG recorded in --exit=MODE (-F GLOB -F main), and
    the shapes of the trees of its one thread."""
    name = glob.rstrip("_*")
    p, out = record([exe, arg], f"--exit={mode}", "-F", glob, "-F", "main", out=tmp(f"{name}-{mode}.data"))
    assert p.stdout == plain.stdout, (mode, p.stdout)
    calls = [c for c in replay_json(out) if c.get("func")]
    roots = next(iter(trees(calls).values()))
    return calls, [shape(r) for r in roots]


def test_calls_through_got_slots_are_observed_from_their_callers():
    exe = fixture("gotcall")
    # what the test is about: the compiler and linker left these so
    text = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    assert len(re.findall(r"call\s+\*0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <_DYNAMIC", text)) >= 4, text
    assert re.search(r"jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <_DYNAMIC", text), text
    plain = run([exe, "3"])
    assert (plain.returncode, plain.stdout) == (0, "gotcall 90\n"), plain

    f = listing(exe, "gc_*")
    for name, n in (("gc_leaf", 2), ("gc_mid", 1), ("gc_tail", 1)):
        observed_from_callers(f, name, n)
    assert any("entered by a jump through a GOT slot from gc_tail" in l for l in f["gc_leaf2"]), f["gc_leaf2"]
    assert any("its address is in a GOT slot code reads" in l for l in f["gc_leaf3"]), f["gc_leaf3"]

    want = None
    for mode in ("auto", "ret"):
        calls, got = recorded(exe, "3", "gc_*", mode, plain)
        one = ("gc_mid:returned(gc_leaf:returned,gc_leaf:returned),"
               "gc_tail:returned(gc_leaf2:returned:tail),gc_ptr:returned,gc_leaf3:returned")
        assert got == ["main:returned(" + ",".join([one] * 3) + ")"], (mode, got)
        vals = [(c["func"], c["args"], c.get("ret")) for c in calls if c["func"] in ("gc_leaf", "gc_mid")]
        assert want is None or vals == want, (mode, vals, want)
        want = vals
        assert all(r for _, _, r in vals), vals


def test_calls_through_a_register_loaded_from_a_got_slot():
    """tests/fixtures/c/gotreg: `mov slot(%rip),%rbx` out of a loop that
    does `call *%rbx` (rustc hoists GOT loads so), and a slot read on two
    paths into a register each call clobbers: calls of what the slot holds,
    as `call *slot(%rip)` is.  A register handed on (gr_esc), overwritten on
    a path to the call (gr_reuse), live at a call in an argument register
    (gr_clob) or jumped through (gr_tailreg) keeps RET probes, saying why."""
    exe = fixture("gotreg")
    text = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    assert re.search(r"mov\s+0x[0-9a-f]+\(%rip\),%rbx\s+# [0-9a-f]+ <_DYNAMIC", text), text
    assert re.search(r"call\s+\*%rbx", text), text
    plain = run([exe, "2"])
    assert (plain.returncode, plain.stdout) == (0, "gotreg 241\n"), plain

    f = listing(exe, "gr_*")
    for name in ("gr_leaf", "gr_leaf2"):
        observed_from_callers(f, name, 1)
    slot = r"its address is in a GOT slot code reads \(at 0x[0-9a-f]+, from 0x[0-9a-f]+: "
    why = {"gr_leaf3": slot + r"the register it is loaded into is read otherwise, at 0x",
           "gr_leaf4": slot + r"the register it is loaded into may hold another value where it is called through",
           "gr_leaf5": slot + r"the register it is loaded into is live at a call that may read it",
           "gr_leaf6": r"entered by a jump through a GOT slot from gr_tailreg"}
    for name, w in why.items():
        assert any(re.search(w, l) for l in f[name]), (name, w, f[name])
        assert any(l.startswith("ret ") for l in f[name]), (name, f[name])

    want = None
    for mode in ("auto", "ret"):
        calls, got = recorded(exe, "2", "gr_*", mode, plain)
        loop = "gr_loop:returned(" + ",".join(["gr_leaf:returned"] * 3) + ")"
        one = [loop, "gr_two:returned(gr_leaf2:returned)", "gr_esc:returned(gr_apply:returned(gr_leaf3:returned),gr_leaf3:returned)"]
        rounds = [one + ["gr_reuse:returned(gr_other:returned)", "gr_tailreg:returned(gr_leaf6:returned:tail)"],
                  one + ["gr_reuse:returned(gr_leaf4:returned)", "gr_tailreg:returned(gr_leaf6:returned:tail)"]]
        assert got == ["main:returned(" + ",".join(rounds[0] + rounds[1]) + ")"], (mode, got)
        vals = [(c["func"], c["args"], c.get("ret"), c.get("depth")) for c in calls if c["func"].startswith("gr_leaf")]
        assert want is None or vals == want, (mode, vals, want)
        want = vals
