"""C call graphs as uftrace draws them (issue 17), on fixtures built by gcc
and clang at -O0 and -O2 (tests/fixtures/c/cgraph): tail jumps to untraced
code and through a library's PLT, a longjmp out of a chain of tail jumps."""
import os

from lib import fixture, record, replay_json, tmp, trees

VARIANTS = [f"{cc}-O{o}" for cc in ("gcc", "clang") for o in (0, 2)]


def prog(variant, name):
    return fixture(os.path.join("cgraph", variant, name))


def calls_of(variant, argv, *flags, name="cg"):
    p, out = record([prog(variant, argv[0]), *argv[1:]], *flags, out=tmp(f"{name}-{variant}.data"))
    return p, replay_json(out)


def only(calls, func):
    found = [c for c in calls if c["func"] == func]
    assert len(found) == 1, (func, [(c["func"], c["status"]) for c in calls])
    return found[0]


def test_tail_jump_to_untraced_code_lasts_until_it_returns():
    # bar() is `jmp usleep@plt` at -O2: its call ends when usleep returns
    for v in VARIANTS:
        for flags in ([], ["--exit=ret"], ["--min-duration", "1ms"]):
            p, calls = calls_of(v, ["cg_tail", "sleep"], *flags, name="sleep")
            assert p.stdout == "bar 2000\n", p.stdout
            bar = only(calls, "bar")
            assert bar["status"] == "returned" and bar["dur"] >= 2_000_000, (v, flags, bar)
            assert bar["depth"] == 1, (v, flags, bar)
            main = only(calls, "main")
            assert main["ts"] <= bar["ts"] and bar["ts"] + bar["dur"] <= main["ts"] + main["dur"], (v, flags)


def test_library_tail_call_through_its_plt():
    # lib_foo() jumps to lib_bar() through the library's PLT at -O2: a tail call
    for v in VARIANTS:
        p, calls = calls_of(v, ["cg_tail", "lib"], "-F", "libcgtail.so:*", name="lib")
        assert p.stdout == "lib_foo 41\n", p.stdout
        roots = [n for rs in trees(calls).values() for n in rs]
        assert [r.shape() for r in roots] == ["libcgtail.so:lib_foo(libcgtail.so:lib_bar)"], (v, roots)
        foo, bar = roots[0].call, roots[0].children[0].call
        assert bar.get("tail", False) == v.endswith("O2"), (v, bar)
        assert foo["status"] == bar["status"] == "returned", (v, foo, bar)
        if v.endswith("O2"):  # they end together
            assert foo["ts"] + foo["dur"] == bar["ts"] + bar["dur"], (v, foo, bar)


def test_longjmp_out_of_a_tail_chain_unwinds_it():
    # f1 -> jmp f2 -> jmp f3 -> longjmp back into chain(), which calls after()
    for v in VARIANTS:
        for flags in ([], ["--exit=ret"]):
            p, calls = calls_of(v, ["cg_tail", "chain"], *flags, name="chain")
            assert p.stdout == "longjmp 3\nafter 6\n", p.stdout
            roots = [n for rs in trees(calls).values() for n in rs]
            assert [r.shape() for r in roots] == ["main(chain(f1(f2(f3)),after))"], (v, flags, roots)
            st = {c["func"]: c["status"] for c in calls}
            assert st == {"main": "returned", "chain": "returned", "f1": "unwound", "f2": "unwound",
                          "f3": "unwound", "after": "returned"}, (v, flags, st)
            tails = {c["func"] for c in calls if c.get("tail")}
            assert tails == ({"f2", "f3"} if v.endswith("O2") else set()), (v, flags, tails)
