"""Tail calls made by conditional jumps (tests/fixtures/c/condtail, clang
-Os): `jne ctl_leaf` (a traced target), `je free@plt` (untraced code, which
returns to the caller) and `jg ctl_leaf2` on the same probe as the end of
the call just before it.  The probe reads the flags before the jump runs:
taken, the call goes on in its target (a tail call); not taken, the
function goes on and the probe's other roles apply.  Before, such jumps had
no probe: a jump taken left its function's call open, and the next call at
its level unwound it (cargo -F '*': OpenSSL's CRYPTO_free, `je free@plt`,
3,287 calls unwound)."""
import re

from lib import ct, fixture, record, replay_json, run, tmp, trees

ONE = ("ctl_cond:returned{}," "ctl_free:returned," "ctl_after:returned(ctl_leaf3:returned{})")


def shape(n, levels=99):
    me = f"{n.func}:{n.call['status']}" + (":tail" if n.call.get("tail") else "")
    kids = n.children if levels > 1 else []
    return me + ("(" + ",".join(shape(c, levels - 1) for c in kids) + ")" if kids else "")


def want(n, levels=99):
    parts = []
    for i in range(n):
        odd = i & 1
        cond = "(ctl_leaf:returned:tail)" if odd and levels > 2 else ""
        after = ",ctl_leaf2:returned:tail" if i * 9 > 20 else ""
        one = ONE.format(cond, after)
        if levels <= 2:
            one = re.sub(r"\([^()]*\)", "", one)
        parts.append(one)
    return "main:returned(" + ",".join(parts) + ")"


def test_conditional_tail_jumps():
    exe = fixture("condtail")
    # what the test is about: the compiler (and the assembly) made these
    text = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    for insn in (r"jne\s+[0-9a-f]+ <ctl_leaf>", r"je\s+[0-9a-f]+ <free@plt>", r"jg\s+[0-9a-f]+ <ctl_leaf2>"):
        assert re.search(insn, text), insn
    plain = run([exe, "5"])
    assert plain.returncode == 0 and plain.stdout.startswith("condtail "), plain
    lst = ct("list", "-v", exe, "ctl_*").stdout
    for f, j in (("ctl_cond", "jnz"), ("ctl_free", "jz"), ("ctl_after", "jnle")):
        assert re.search(rf"{f}\n(?:      .*\n)*?      tail\s+\+\d+\s+{j} .*\(conditional: ", lst), (f, lst)
    for mode in ("auto", "ret"):
        p, out = record([exe, "5"], f"--exit={mode}", "-F", "ctl_*", "-F", "main",
                        out=tmp(f"condtail-{mode}.data"))
        assert p.stdout == plain.stdout, (mode, p.stdout)
        calls = [c for c in replay_json(out) if c.get("func")]
        roots = next(iter(trees(calls).values()))
        assert [shape(r) for r in roots] == [want(5)], (mode, [shape(r) for r in roots])
        # the jumps not taken sent nothing of their own, or only their other role
        ev = ct("dump", "--events", out).stdout
        tails = re.findall(r"kind=tail func=(ctl_\w+)\+0x[0-9a-f]+ .*?flags=(\S+)", ev)
        alone = sorted(f for f, _ in tails if f != "ctl_after")
        assert alone == ["ctl_cond"] * 2 + ["ctl_free"] * 3, tails
        # ... and are counted: ctl_cond's 3 even calls, ctl_free's 2 kept,
        # with --exit=ret ctl_after's 3 too (no exit of ctl_leaf3's there)
        silent = 5 if mode == "auto" else 8
        assert re.search(rf"^cond_tails\s+{silent} ", ct("info", out).stdout, re.M), ct("info", out).stdout
        # ... and priced: each is an emulated hit's worth on the thread's
        # next event (replay takes it out of the calls open around it)
        m = re.search(r"^silent\s+([\d.]+) ", ct("info", out).stdout, re.M)
        assert m and float(m[1]) >= silent, ct("info", out).stdout
        if mode == "auto":  # (ctl_leaf3's exit is the jump's probe: 3 of 5 not taken)
            assert len(re.findall(r"func=ctl_leaf3 .*flags=not_taken", ev)) == 3, ev
    # the kernel side's stack under limits agrees: a jump not taken is no
    # tail call (depth 2: the tail calls are left out)
    p, out = record([exe, "5"], "--max-depth", "2", "-F", "ctl_*", "-F", "main", out=tmp("condtail-d2.data"))
    roots = next(iter(trees(replay_json(out)).values()))
    assert [shape(r) for r in roots] == [want(5, 2)], [shape(r) for r in roots]


def test_exits_in_a_part_split_off_the_function():
    """wm_f (tests/fixtures/c/warm, assembly) goes on in wm_f.warm for odd n
    and returns from there, as BOLT splits Rust's librustc_driver (3,542
    ".warm" parts; some functions have no RET of their own) and GCC makes
    ".cold" parts.  The part is no function: its RET is wm_f's.  Before,
    wm_f.warm was traced as a function called inside wm_f, and with
    --exit=ret the call through it never ended (unwound, no result)."""
    exe = fixture("warm")
    plain = run([exe, "5"])
    assert plain.stdout == "warm 16\n", plain
    lst = ct("list", "-v", "--exit=ret", exe, "wm_*").stdout
    assert "wm_f.warm" not in lst, lst
    assert len(re.findall(r"^      ret\s+\+\d+\s+ret$", lst, re.M)) == 3, lst  # wm_leaf's, wm_f's two
    for mode in ("auto", "ret"):
        p, out = record([exe, "5"], f"--exit={mode}", "-F", "wm_*", "-F", "main", out=tmp(f"warm-{mode}.data"))
        assert p.stdout == plain.stdout, (mode, p.stdout)
        calls = [c for c in replay_json(out) if c.get("func")]
        roots = next(iter(trees(calls).values()))
        assert [shape(r) for r in roots] == ["main:returned(" + ",".join(["wm_f:returned(wm_leaf:returned)"] * 5) + ")"], \
            (mode, [shape(r) for r in roots])
        # (no DWARF for the assembly: its result word shown as a pointer, 0 as NULL)
        rets = [int(c["ret"][0]["value"] or "0", 16) for c in calls if c["func"] == "wm_f"]
        assert rets == [0, 4, 0, 12, 0], (mode, rets)
