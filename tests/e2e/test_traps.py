"""Calls the compiler follows with a trap (tests/fixtures/c/traps): `call
die; ud2`, as rustc and clang mark every call of a function that does not
return (_Unwind_Resume, a panic).  No return can be seen there: a return
would trap.  Before, each such call got an exit probe on its ud2, which was
never hit (Debian's ripgrep under `-F '*@plt'`: 1956 of its 5873 sites, all
_Unwind_Resume@plt's); a function none of whose calls returns is observed at
its own entry now (its RETs, if any, never hit either), and a PLT stub's
return sites skip those calls.  A function one of whose calls returns keeps
its plan (bail: the call that returns is seen at its emulated exit)."""
import re

from lib import ct, fixture, record, replay_json, run, tmp


def test_calls_followed_by_a_trap_get_no_exit_probe():
    exe = fixture("traps")
    # what the test is about: gcc put a ud2 after these calls
    text = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    for callee, n in (("die", 2), ("siglongjmp@plt", 1), ("bail", 1)):
        found = re.findall(rf"call\s+[0-9a-f]+ <{re.escape(callee)}>\n\s*([0-9a-f]+):\s+ud2", text)
        assert len(found) == n, (callee, found)
    ud2s = {int(a, 16) for a in re.findall(r"call\s+[0-9a-f]+ <(?:die|siglongjmp@plt)>\n\s*([0-9a-f]+):\s+ud2", text)}
    plain = run([exe])
    assert plain.returncode == 0 and plain.stdout == "traps 10346\n", plain

    lst = ct("list", "-v", exe, "die", "bail", "siglongjmp@plt").stdout
    assert re.search(r"die\n.*\n      exits: none, it never returns; entries at its own entry \(none of its 2 calls returns: a trap \(ud2\) follows each", lst), lst
    assert re.search(r"siglongjmp@plt\n      exits: .*none after the 1 followed by a trap\); not seen from its "
                     r"callers: none of its 1 calls returns", lst), lst
    assert re.search(r"bail\n.*\n      exits: at its 2 call sites \(1 exits emulated, 1 single-stepped", lst), lst
    # no probe at those ud2s (the record's site table: every site's address)
    for mode in ("auto", "ret"):
        p, out = record([exe], f"--exit={mode}", "-F", "*", "-F", "*@plt", out=tmp(f"traps-{mode}.data"))
        assert p.returncode == 0 and p.stdout == plain.stdout, (mode, p)
        ev = ct("dump", "--events", out).stdout
        assert not re.search(r"kind=retsite func=(die|siglongjmp@plt) ", ev), ev
        calls = [c for c in replay_json(out) if c.get("func")]
        status = {}
        for c in calls:
            status.setdefault(c["func"], []).append(c["status"])
        # die never returns: unwound (the tree is as before; the stub's
        # call, ended by its jump into libc, is not what this is about)
        assert status["die"] == ["unwound"] * 2, (mode, status)
        # nor does the stub's call, which goes on in siglongjmp: no probe
        # watches its return address (a trap), its end is not seen -- it
        # was a short `returned` leaf, its return address taken for watched
        assert status["siglongjmp@plt"] == ["unobserved"] * 2, (mode, status)
        assert sorted(status["bail"]) == ["returned"] * 6 + ["unwound"], (mode, status)
        assert status["leaf"] == ["returned"] * 6 and status["run"] == ["returned"] * 9, (mode, status)
    sites = ct("list", "-v", exe, "*", "*@plt").stdout
    probed = {int(a, 16) for a in re.findall(r"-> \S+ (0x[0-9a-f]+) ud2", sites)}
    assert not probed & ud2s, (probed, ud2s, sites)


def list_blocks(text):
    """calltrace list -v's text: function name -> its lines."""
    blocks, name = {}, None
    for line in text.splitlines():
        m = re.match(r"  0x[0-9a-f]+ .* (\S+)$", line)
        if m:
            name = m.group(1)
            blocks[name] = []
        elif name and line.startswith("      "):
            blocks[name].append(line)
    return blocks


def test_list_shows_no_exit_of_a_function_that_ends_the_process():
    # exit@plt, __stack_chk_fail@plt, _exit@plt: record plans no exit for
    # them (the stub's jump into libc ends no call: it stays open until the
    # process ends), observed at the calls or, where nothing after a call
    # can take a probe, at the stub; list said EXITS 1 and, for the latter,
    # "at the return addresses of its 0 call sites"
    for exe, names in (("traps_noreturn", ("exit@plt", "__stack_chk_fail@plt")), ("c_core", ("exit@plt", "_exit@plt"))):
        text = ct("list", "-v", fixture(exe), "*", "*@plt").stdout
        exits = {m[1]: int(m[0]) for m in re.findall(r"^  0x[0-9a-f]+ +\+\d+ +\S+ +(\d+) +(\S+)$", text, re.M)}
        blocks = list_blocks(text)
        for f in names:
            assert exits[f] == 0, (exe, f, exits[f], blocks[f])
            assert blocks[f][0].startswith("      exits: none, it never returns"), (exe, f, blocks[f])
            # record plants no exit site for it: list shows none
            assert not [l for l in blocks[f] if re.match(r"\s+(tail|ret)\s", l)], (exe, f, blocks[f])
        # one that unwinds keeps its jump: its call ends there, unobserved
        assert exits["longjmp@plt"] == 1, exits
    # a program function nothing in whose code returns: no RET to probe
    # (list said "exits: RET probes (it never returns: ...)")
    blocks = list_blocks(ct("list", "-v", fixture("traps_noreturn"), "fatal").stdout)
    assert blocks["fatal"][1].startswith("      exits: none, it never returns; entries at its own entry (it "
                                         "never returns: nothing in its code returns"), blocks["fatal"]
    assert not [l for l in blocks["fatal"] if re.match(r"\s+(tail|ret)\s", l)], blocks["fatal"]


def test_calls_that_never_return_without_a_trap_get_no_exit_probe():
    # gcc knows that exit, longjmp, __stack_chk_fail and a noreturn function
    # do not return, and puts nothing after their calls: each got an exit
    # probe on whatever code came next (cmake: 3,272 after
    # _Unwind_Resume@plt), never hit there.  By name (a PLT stub's), or
    # because nothing in its code returns (fatal), such a function is
    # observed at its own entry; the frames a longjmp leaves are unwound
    # (longjmp@plt's own call ends at its jump: it was taken for returned)
    exe = fixture("traps_noreturn")
    text = run(["objdump", "-d", "--no-show-raw-insn", exe]).stdout
    for callee, n in (("exit@plt", 1), ("longjmp@plt", 1), ("fatal", 1), ("__stack_chk_fail@plt", 3)):
        calls = re.findall(rf"call\s+[0-9a-f]+ <{re.escape(callee)}>\n\s*[0-9a-f]+:\s+(\S+)", text)
        assert len(calls) >= n and "ud2" not in calls, (callee, calls)
    plain = run([exe, "5", "7"])
    assert plain.returncode == 7 and plain.stdout == "noreturn 212\nfatal 7\n", plain

    blocks = list_blocks(ct("list", "-v", exe, "*", "*@plt").stdout)
    assert "it never returns: nothing in its code returns" in "\n".join(blocks["fatal"]), blocks["fatal"]
    assert "it never returns: it unwinds the stack" in "\n".join(blocks["longjmp@plt"]), blocks["longjmp@plt"]
    for f in ("fatal", "longjmp@plt", "exit@plt", "__stack_chk_fail@plt"):
        # no call site of theirs planned with an exit after it
        assert not [l for l in blocks[f] if re.match(r"\s+(call|from|via)\s.* -> ", l)], (f, blocks[f])
        assert any("never returns" in l for l in blocks[f]), (f, blocks[f])
    statuses = {}
    for mode in ("auto", "ret"):
        p, out = record([exe, "5", "7"], f"--exit={mode}", "-F", "*", "-F", "*@plt",
                        out=tmp(f"noreturn-{mode}.data"), check=False)
        assert p.returncode == 7 and p.stdout == plain.stdout, (mode, p)
        status = {}
        for c in replay_json(out):
            if c.get("func"):
                status.setdefault(c["func"], []).append(c["status"])
        assert sorted(status["jump"]) == ["returned"] * 3 + ["unwound"] * 2, (mode, status)
        assert sorted(status["step"]) == ["returned"] * 3 + ["unwound"] * 2, (mode, status)
        assert status["run"] == ["returned"] * 5, (mode, status)
        assert status["longjmp@plt"] == ["unobserved"] * 2, (mode, status)
        assert status["fatal"] == ["exited"] and status["main"] == ["exited"], (mode, status)
        statuses[mode] = status
    assert statuses["auto"] == statuses["ret"], statuses
