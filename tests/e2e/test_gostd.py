"""Go's own test programs under calltrace.  A standard library test binary
checks itself: traced, every test must come out as it does untraced, and
no probe may stay behind.  And what such programs made the runtime do that
calltrace got wrong, reduced to tests/fixtures/go/gostd (go_gostd)."""
import re

from lib import ct, fixture, info_count, our_links, record, replay_json, run, thread_key, tmp, trees

STD_ARGS = ["-test.short", "-test.count=1", "-test.v"]


def verdicts(out):
    """Each test's and subtest's verdict, as go test -v prints them: a
    name -> PASS/FAIL/SKIP map (addresses in subtest names, which errors'
    tests print, differ from run to run)."""
    found = re.findall(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", out, re.M)
    return {re.sub(r"0x[0-9a-f]+", "0x", name): v for v, name in found}


def check_std_verdicts(mode, *select):
    prog = fixture("go_std_errors.test")
    alone = run([prog, *STD_ARGS])
    assert alone.returncode == 0 and alone.stdout.rstrip().endswith("PASS"), alone.stdout[-500:]
    want = verdicts(alone.stdout)
    assert len(want) > 40, want  # the subtests are there to compare
    sel = [a for g in select for a in ("-F", g)]
    p, out = record([prog, *STD_ARGS], "--exit=" + mode, *sel, out=tmp(f"gostd-errors-{mode}.data"))
    assert verdicts(p.stdout) == want, (p.stdout[-2000:], p.stderr[-500:])
    assert p.stdout.rstrip().endswith("PASS"), p.stdout[-500:]
    assert not our_links(), our_links()
    calls = replay_json(out)
    # the program's own functions were seen, and every call ended as a
    # call ends: returned, or unwound by errors.As's panics (recovered by
    # the test) -- nothing left open, nothing unobserved
    names = {c["func"] for c in calls}
    assert {"errors.As", "errors.Is", "runtime.gopanic", "runtime.gorecover"} <= names, sorted(names)[:20]
    odd = [c for c in calls if c["status"] not in ("returned", "unwound")]
    assert not odd, odd[:3]
    unwound = {c["func"] for c in calls if c["status"] == "unwound"}
    assert unwound <= {"errors.As", "runtime.gopanic", "runtime.deferreturn"}, unwound
    return calls


def shape(calls):
    """The calls as a mode does not change them: per goroutine (in the order
    of their first call), function, depth and status."""
    per = {}
    for c in calls:
        per.setdefault(thread_key(c), []).append((c["func"], c["depth"], c["status"]))
    return sorted(per.values())


def test_std_errors_verdicts_traced_as_untraced():
    auto = check_std_verdicts("auto", "errors.*", "runtime.gopanic", "runtime.gorecover", "runtime.deferreturn")
    ret = check_std_verdicts("ret", "errors.*", "runtime.gopanic", "runtime.gorecover", "runtime.deferreturn")
    # the test is deterministic in what it calls: both modes see the same
    # calls, nested and ended the same way
    assert shape(auto) == shape(ret), (len(auto), len(ret))


G0_FUNCS = ["runtime.newstack", "runtime.recovery", "runtime.goexit0", "runtime.park_m"]


def check_g0_fresh_starts(mode):
    p, out = record([fixture("go_gostd"), "g0"], "--exit=" + mode, "-F", "main.*",
                    *[a for f in G0_FUNCS for a in ("-F", f)], out=tmp(f"gostd-g0-{mode}.data"))
    assert p.stdout.split() == ["20100"] * 3, p.stdout
    calls = replay_json(out)
    on_g0 = [c for c in calls if c.get("stack") == "system"]
    names = {c["func"] for c in on_g0}
    # what the fixture makes happen on g0 happened (else this tests nothing)
    assert {"runtime.newstack", "runtime.recovery", "runtime.goexit0"} <= names, names
    # newstack never returns (gogo resumes the goroutine on its new stack),
    # and nothing it calls is an mcall's callee: mcall starts g0 afresh,
    # 8 bytes below newstack's frame, for the goroutine it runs for
    nested = []
    for roots in trees(on_g0).values():
        for r in roots:
            for n in r.walk():
                for ch in n.children:
                    if ch.func in ("runtime.recovery", "runtime.goexit0", "runtime.park_m") or \
                            ch.call["goid"] != n.call["goid"]:
                        nested.append((n.func, n.call["goid"], ch.func, ch.call["goid"]))
    assert not nested, nested[:6]


def test_mcall_on_g0_after_newstack_starts_afresh():
    check_g0_fresh_starts("auto")


def test_mcall_on_g0_after_newstack_starts_afresh_at_ret_probes():
    check_g0_fresh_starts("ret")


def itab_run(mode):
    p, out = record([fixture("go_gostd"), "itab"], "--exit=" + mode, out=tmp(f"gostd-itab-{mode}.data"))
    assert p.stdout.split() == ["true", "true", "true"], p.stdout
    calls = replay_json(out)
    # the traced implementation's calls are seen in both modes (else the
    # pair below is not planned and this tests nothing), before and after
    # the 20,000 calls of the untraced one
    assert [c["func"] for c in calls if c["func"].startswith("main.rev.")] == \
        ["main.rev.Len", "main.rev.Less", "main.rev.Less"] * 2, [c["func"] for c in calls]
    assert all(c["status"] == "returned" for c in calls), calls
    info = ct("info", out).stdout
    return info_count(info, "probe_hits"), info, calls


def test_ret_probes_pay_nothing_for_untraced_implementations():
    # --exit=ret: main's calls, entry and RET each; other.Ints' 20,000
    # calls of Less from the same instruction hit no probe
    assert itab_run("ret")[0] < 100


def call_shape(calls):
    """Function, depth and status of each call, in order (one goroutine)."""
    return [(c["func"], c["depth"], c["status"]) for c in calls]


def test_auto_takes_out_an_interface_calls_exit_its_untraced_implementations_hit():
    # --exit=auto: isSorted's data.Less has its exit probe planned for
    # rev.Less, and other.Ints.Less's 20,000 calls from there hit it
    # (~20,050 hits).  Reported at its 32nd hit, then each time its hits
    # double, it is weighed: its hits that closed no call against what
    # rev.Less's RETs would cost; it goes, the RETs come in.  What it still
    # sees meanwhile depends on how soon calltrace reads the report (0.05-7
    # ms here, up to ~4,700 hits): the calls come in bursts of 2,000, 20 ms
    # apart, and the bursts after that pay nothing.
    hits, info, calls = itab_run("auto")
    assert re.search(r"^icall_exits\s+\d+ .*; 1 taken out", info, re.M), info
    assert hits < 8000, hits
    # the tree is --exit=ret's: rev.Less's calls after the probe went end
    # at its RETs, returned
    assert call_shape(calls) == call_shape(itab_run("ret")[2])


def funcval_run(mode):
    p, out = record([fixture("go_gostd"), "funcval"], "--exit=" + mode, out=tmp(f"gostd-funcval-{mode}.data"))
    assert p.stdout.split() == ["2", "400", "1"], p.stdout
    calls = replay_json(out)
    # the traced closures' calls are seen in both modes, before and after
    # the 20,000 calls of unicode.IsDigit
    assert [c["func"] for c in calls if c["func"].startswith("main.main.func")] == \
        ["main.main.func1"] * 3 + ["main.main.func2"] * 3, [c["func"] for c in calls]
    assert all(c["status"] == "returned" for c in calls), calls
    info = ct("info", out).stdout
    return info_count(info, "probe_hits"), info, calls


def test_ret_probes_pay_nothing_for_untraced_function_values():
    # --exit=ret: count's 20,000 calls of unicode.IsDigit hit no probe
    assert funcval_run("ret")[0] < 100


def test_auto_takes_out_a_function_values_exits_its_untraced_callee_hits():
    # --exit=auto: count's f(r) has an exit probe planned for the traced
    # function values of its shape (main.survive.func1), and one found at
    # main.main.func1's first call: unicode.IsDigit's 20,000 calls hit both
    # (~38,000-40,000 hits).  Both go (the one found while recording watched as
    # those planned are), in bursts as itab's.
    hits, info, calls = funcval_run("auto")
    assert re.search(r"^icall_exits\s+\d+ .*, \d+ of them found while recording; 2 taken out", info, re.M), info
    assert hits < 8000, hits
    assert call_shape(calls) == call_shape(funcval_run("ret")[2])
