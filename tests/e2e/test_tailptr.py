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

# main's calls, in order: a call whose jump goes to a traced function ends
# at the jump (returned: the target is its caller's next call at the same
# level, not inside it); called through a pointer (tp_indirect), where no
# probe sees its return, it ends unobserved; the calls after it are beside
# it, never inside.
WANT = ("main:returned("
        "tp_via_ptr:returned,tp_run:returned(tp_leaf:returned),"
        "tp_via_table:returned,tp_done:returned(tp_leaf2:returned),"
        "tp_after_call:returned(tp_leaf:returned),tp_run:returned(tp_leaf:returned),"
        "tp_switch:returned(tp_leaf:returned,tp_leaf:returned,tp_leaf2:returned),"
        "tp_pick:returned(tp_run:returned(tp_leaf:returned)),"
        "tp_via_table:unobserved,tp_done:returned(tp_leaf2:returned),"
        "tp_leaf:returned)")


def shape(n):
    me = f"{n.func}:{n.call['status']}"
    return me + ("(" + ",".join(shape(c) for c in n.children) + ")" if n.children else "")


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
            assert all(c["depth"] <= 3 for c in calls), (cc, mode)


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
