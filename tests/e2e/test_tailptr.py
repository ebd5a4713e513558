"""Tail jumps through a pointer (tests/fixtures/c/tailptr, gcc and clang
-O2): a function whose last act is `jmp *%reg` or `jmp *8(%rdi)` (a
function pointer, a method table, as sqlite3_mutex_enter and curl_free end)
ends its call at the jump; a switch's jump table (`jmp *%rax` with the
frame allocated, or in a frameless function with the target made from a
table of offsets) is no tail jump.  Before, the jumping function never saw
its end: the next call at its level unwound it, and calls after it nested
under it."""
import re

from lib import ct, fixture, record, replay_json, run, tmp, trees

# main's calls, in order: the traced function a jump goes to is its tail
# call (inside it, as for a direct `jmp`); called through a pointer
# (tp_indirect), where no probe sees its return, it ends unobserved at the
# jump, and what comes after, its target too, is beside it, never inside.
WANT = ("main:returned("
        "tp_via_ptr:returned(tp_run:returned(tp_leaf:returned)),"
        "tp_via_table:returned(tp_done:returned(tp_leaf2:returned)),"
        "tp_after_call:returned(tp_leaf:returned,tp_run:returned(tp_leaf:returned)),"
        "tp_switch:returned(tp_leaf:returned,tp_leaf:returned,tp_leaf2:returned),"
        "tp_pick:returned(tp_run:returned(tp_leaf:returned)),"
        "tp_via_table:unobserved,tp_done:returned(tp_leaf2:returned),"
        "tp_leaf:returned)")


def shape(n, levels=99):
    me = f"{n.func}:{n.call['status']}"
    kids = n.children if levels > 1 else []
    return me + ("(" + ",".join(shape(c, levels - 1) for c in kids) + ")" if kids else "")


def body(text, func):
    m = re.search(rf"^[0-9a-f]+ <{func}>:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    assert m, func
    return m.group(1)


def test_tail_jumps_through_a_pointer():
    for cc in ("gcc", "clang"):
        exe = fixture(f"tailptr/tp_{cc}")
        # what the test is about: the compiler made these jumps
        text = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
        for f in ("tp_via_ptr", "tp_via_table", "tp_after_call", "tp_switch", "tp_pick"):
            assert re.search(r"\sjmp\s+\*", body(text, f)), (cc, f)
        plain = run([exe])
        assert (plain.returncode, plain.stdout) == (0, "110\n"), (cc, plain)
        for mode in ("auto", "ret"):
            p, out = record([exe], f"--exit={mode}", out=tmp(f"tailptr-{cc}-{mode}.data"))
            assert p.stdout == plain.stdout, (cc, mode, p.stdout)
            calls = [c for c in replay_json(out) if "func" in c]
            forest = trees(calls)  # checks the depths are consistent
            roots = next(iter(forest.values()))
            assert len(forest) == 1 and len(roots) == 1, (cc, mode, [r.shape() for r in roots])
            assert shape(roots[0]) == WANT, (cc, mode, shape(roots[0]))
            want = roots[0]
            assert all(c["depth"] <= 3 for c in calls), (cc, mode)
            tails = {c["func"] for c in calls if c.get("tail")}
            assert tails == {"tp_run", "tp_done"}, (cc, mode, tails)
        # record-time limits: the kernel side's stack agrees (the tail
        # calls are at depth 2, left out with --max-depth 2)
        p, out = record([exe], "--max-depth", "2", out=tmp(f"tailptr-{cc}-d2.data"))
        roots = next(iter(trees(replay_json(out)).values()))
        assert [shape(r) for r in roots] == [shape(want, 2)], (cc, [shape(r) for r in roots])


def test_list_says_which_indirect_jumps_are_tail_jumps():
    for cc in ("gcc", "clang"):
        p = ct("list", "-v", fixture(f"tailptr/tp_{cc}"), "tp_*")
        assert p.returncode == 0, p.stderr
        funcs, cur = {}, None
        for line in p.stdout.splitlines():
            m = re.match(r"  0x[0-9a-f]+ .* (tp_\w+)$", line)
            if m:
                cur = funcs.setdefault(m.group(1), [])
            elif cur is not None:
                cur.append(line.strip())
        for f in ("tp_via_ptr", "tp_via_table", "tp_after_call"):
            tails = [l for l in funcs[f] if l.startswith("tail ") and "(indirect: " in l]
            assert len(tails) == 1 and "SP is back at its entry level" in tails[0], (cc, f, funcs[f])
        for f in ("tp_switch", "tp_pick"):
            assert not any("(indirect: " in l for l in funcs[f]), (cc, f, funcs[f])
            jumps = [l for l in funcs[f] if l.startswith("jump ")]
            assert len(jumps) == 1 and "(inside the function: " in jumps[0], (cc, f, funcs[f])


def test_jump_through_a_slot_with_the_frame_allocated_is_no_tail_jump():
    """gm_mid (tests/fixtures/c/gotmid, assembly) goes on partway through
    `jmp *gm_slot(%rip)` -- the shape of a jump through a GOT slot, a tail
    call into another module -- with 24 bytes of its frame still allocated,
    as cc1plus's grokdeclarator does (592 bytes).  The CFI says it is no tail
    jump: no probe there.  Before, its probe read the word at SP as a return
    address and reported it each time (0x0, 0x1, ...: cc1plus 903 times,
    which used up the return addresses the probes may report)."""
    exe = fixture("gotmid")
    lst = ct("list", "-v", exe, "gm_mid").stdout
    assert "gm_mid" in lst and "jmp *" not in lst, lst
    for mode in ("auto", "ret"):
        p, out = record([exe, "6"], f"--exit={mode}", "-v", "-F", "gm_mid", "-F", "gm_leaf",
                        out=tmp(f"gotmid-{mode}.data"))
        assert p.stdout == "gotmid 36\n", p.stdout
        assert "reported by site" not in p.stderr, p.stderr[-2000:]
        calls = [c for c in replay_json(out) if c.get("func")]
        assert len(calls) == 12 and {c["status"] for c in calls} == {"returned"}, calls
        assert all(c["depth"] == (1 if c["func"] == "gm_leaf" else 0) for c in calls), calls
