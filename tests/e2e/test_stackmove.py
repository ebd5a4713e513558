"""Frame keys across moves of a goroutine's stack.  A Go frame key is
g.stack.hi - SP, and a thread keeps the stack.hi it read from a g
(calltrace.bpf.c struct run) until a probe in runtime.copystack says a
stack moved (plan/goroutines.c).  go_stackmove moves its goroutine's stack
while traced calls are open: grown by untraced code a traced call makes
(on the goroutine's own thread), and shrunk by the GC while the goroutine
waits in runtime.GC (from another thread); each of those traced calls then
calls main.leaf and returns.  Kept across the move, the old stack's top made
the keys of main.leaf and of the call's end wrong: the trees below break.
Also: `list` says where the moves are seen, in real binaries of Go 1.13 to
1.27."""
import collections

from lib import ct, fixture, record, replay_json, tmp, trees
from test_realworld import real_binaries

TRACED = ["-F", "main.shrinks", "-F", "main.grows", "-F", "main.leaf"]


def check_rounds(name, prog_args, flags, rounds, goroutines, prog="go_stackmove"):
    p, out = record([fixture(prog), *prog_args], *TRACED, *flags, out=tmp(name + ".data"))
    moved = [line.split() for line in p.stdout.splitlines()]
    assert len(moved) == rounds * goroutines and all(m[0] == "moved" for m in moved), (name, p.stdout)
    # the stacks did move in most rounds (else this tests nothing): all of
    # them when the machine is idle
    shrunk, grown = sum(int(m[1]) for m in moved), sum(int(m[2]) for m in moved)
    assert shrunk >= len(moved) // 2 and grown >= len(moved) // 2, (name, shrunk, grown, len(moved))
    calls = replay_json(out)
    bad = collections.Counter(c["status"] for c in calls if c["status"] != "returned")
    assert not bad, (name, bad)
    forest = trees(calls)
    assert len(forest) == goroutines, (name, list(forest))
    for k, roots in forest.items():
        shapes = [r.shape() for r in roots]
        assert shapes == ["main.shrinks(main.leaf)", "main.grows(main.leaf)"] * rounds, (name, k, shapes[:6])
        # round I's calls, in order: shrinks(I), grows(I), each leaf(I)
        for i, r in enumerate(roots):
            assert r.call["args"][0]["value"] == i // 2, (name, k, i, r.call)
            assert r.children[0].call["args"][0]["value"] == i // 2, (name, k, i, r.children[0].call)


def test_locked_thread_auto():
    """On a thread that runs no other goroutine, nothing but the move itself
    makes what the thread kept stale."""
    check_rounds("stackmove-locked-auto", ["locked", "12"], ["--exit=auto"], 12, 1)


def test_locked_thread_ret():
    check_rounds("stackmove-locked-ret", ["locked", "12"], ["--exit=ret"], 12, 1)


def test_stripped():
    check_rounds("stackmove-stripped", ["locked", "8"], [], 8, 1, prog="go_stackmove_stripped")


def test_goroutines_changing_threads():
    """Several goroutines at once, each moving between threads, its stack
    shrunk from whichever thread scans it."""
    check_rounds("stackmove-many", ["many", "6", "6"], [], 6, 6)


def goid_line(path):
    p = ct("list", path, "main.main")
    assert p.returncode == 0, p.stderr
    return next(l for l in p.stdout.splitlines() if l.startswith("# goroutine ids: "))


def test_list_says_where_moves_are_seen():
    for path in (fixture("go_stackmove"), fixture("go_stackmove_stripped")):
        line = goid_line(path)
        assert line.endswith("(seen in runtime.newproc.func1, runtime.debugCallWrap.func1), and the g's "
                             "stack.hi until it moves a stack (seen in runtime.copystack)"), line
    for ident, path, gover, _ in real_binaries():
        line = goid_line(path)
        assert "each thread keeps" in line and line.endswith("(seen in runtime.copystack)"), (ident, gover, line)
