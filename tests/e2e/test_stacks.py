"""Code on another stack than its thread's: a signal handler on a
sigaltstack inside a caller's frame, and swapcontext coroutines (on stacks of
their own, and uftrace's ucontext shape with the stack in main's frame).  A
stack switch is not an unwinding: the interrupted calls return normally, a
handler nests under the call it interrupted, a coroutine's calls are a
sequence of their own ("context": n)."""
from lib import fixture, record, replay_json, trees


def run(mode):
    p, out = record([fixture("c_stacks"), mode])
    calls = replay_json(out)
    assert all(c["status"] == "returned" for c in calls), \
        [(c["func"], c["status"]) for c in calls if c["status"] != "returned"]
    forest = trees(calls)
    return p.stdout, calls, {k: [r.shape() for r in roots] for k, roots in forest.items()}


def test_signal_handler_on_an_altstack_inside_a_callers_frame():
    out, calls, shapes = run("altstack")
    assert out == "altstack 15\n"
    # one thread, the handler nested under the call it interrupted
    assert list(shapes.values()) == [["main(outer(work(on_signal(in_handler))))"]], shapes
    assert not any("context" in c for c in calls)


def test_coroutines_on_stacks_of_their_own():
    out, calls, shapes = run("coroutines")
    assert out == "coroutines 36\n"
    own = [s for k, s in shapes.items() if len(k) == 3]
    assert own == [["main(run(" + ",".join(["resume"] * 8) + "))"]], shapes
    ctx = {k[3]: s for k, s in shapes.items() if len(k) == 4}
    assert sorted(ctx) == [1, 2], shapes
    assert all(s == ["coro_body(step,step,step)"] for s in ctx.values()), ctx
    bodies = {c["context"]: c["args"][0]["value"] for c in calls if c["func"] == "coro_body"}
    assert bodies == {1: 0, 2: 1}, bodies  # numbered in order of first appearance


def test_uftrace_ucontext_shape():
    out, calls, shapes = run("ucontext")
    assert out == "ucontext 0\n"
    own = [s for k, s in shapes.items() if len(k) == 3]
    assert own == [["main(uftrace_shape(foo,baz))"]], shapes
    assert [s for k, s in shapes.items() if len(k) == 4] == [["bar"]], shapes
    foo = next(c for c in calls if c["func"] == "foo")
    bar = next(c for c in calls if c["func"] == "bar")
    # bar ran while foo was switched away from
    assert foo["ts"] < bar["ts"] and bar["ts"] + bar["dur"] < foo["ts"] + foo["dur"]
