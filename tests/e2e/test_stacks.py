"""Code on another stack than its thread's: a signal handler on a
sigaltstack inside a caller's frame, and swapcontext coroutines (on stacks of
their own, and uftrace's ucontext shape with the stack in main's frame).  A
stack switch is not an unwinding: the interrupted calls return normally, a
handler nests under the call it interrupted, a coroutine's calls are a
sequence of their own ("context": n)."""
import os

from lib import fixture, record, replay_json, tmp, trees


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


SIGNALLED_PYTHON = """import signal
n = 0
def handler(sig, frame):
    global n
    n += 1
signal.signal(signal.SIGPROF, handler)
signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
d = {}
for i in range(30000):
    d[i % 97] = i % 7
signal.setitimer(signal.ITIMER_PROF, 0, 0)
print("handled", n > 0)
"""


def test_signal_handlers_nest_in_the_call_they_interrupt_on_its_clock():
    """CPython under -X faulthandler runs its C signal handler on the
    alternate signal stack, ~1,000 times a second here (ITIMER_PROF), inside
    whatever call the interpreter was in.  The handler's calls nest in that
    call on the corrected clock too: they went on from the thread's clock
    without its floor (a call whose clock was held there by hits priced
    above the time between them), and began up to ~100 us before the call
    they interrupted -- 600-1,100 of them in a run; the handler's hits were
    left in that call's corrected time."""
    python = os.path.realpath("/usr/bin/python3")  # Debian's (a pyenv one may have no symbols)
    script = tmp("signalled.py")
    with open(script, "w") as f:
        f.write(SIGNALLED_PYTHON)
    p, out = record([python, "-X", "faulthandler", script], "-F", "Py*", "-F", "_PyEval_*")
    assert p.stdout == "handled True\n", p.stdout
    calls = replay_json(out)
    handled = [c for c in calls if c["func"].endswith("_PyEval_SignalReceived")]
    assert handled, "no call of the handler recorded"
    # in entry order: each call within the one open at the depth above
    outside, open_ = [], {}
    for c in calls:
        key = (c["pid"], c["tid"])
        stack = open_.setdefault(key, [])
        while stack and stack[-1]["depth"] >= c["depth"]:
            stack.pop()
        parent = stack[-1] if stack and stack[-1]["depth"] == c["depth"] - 1 else None
        if parent and c.get("dur") is not None and parent.get("dur") is not None and \
                (c["ts"] < parent["ts"] or c["ts"] + c["dur"] > parent["ts"] + parent["dur"]):
            outside.append((c["func"], c["ts"], c["dur"], parent["func"], parent["ts"], parent["dur"]))
        stack.append(c)
    assert not outside, (len(outside), outside[:3])
