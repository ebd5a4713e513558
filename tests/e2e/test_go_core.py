"""Go programs recorded with real uprobes and replayed: the reconstructed call
trees must be exactly the calls the program made."""
import collections
import re

from lib import (all_nodes, ct, fixture, parse_text_tree, record, replay_json, run, trees)

GO = "go_core"


def fib_shape(n):
    if n < 2:
        return "main.fib"
    return f"main.fib({fib_shape(n - 1)},{fib_shape(n - 2)})"


def only_roots(forest):
    return [r for roots in forest.values() for r in roots]


def test_fib_tree_exact():
    p, out = record([fixture(GO), "fib", "8"], "-F", "main.fib")
    assert p.stdout == "fib 21\n", p.stdout
    calls = replay_json(out)
    roots = only_roots(trees(calls))
    assert len(roots) == 1, [r.shape() for r in roots]
    assert roots[0].shape() == fib_shape(8)
    for n in roots[0].walk():
        c = n.call
        assert c["status"] == "returned" and c["dur"] is not None and c["goid"] == 1
        kids = sum(k.call["dur"] for k in n.children)
        assert c["dur"] >= kids, f"parent shorter than its children: {c}"
        for k in n.children:
            assert k.call["ts"] >= c["ts"] and k.call["ts"] + k.call["dur"] <= c["ts"] + c["dur"]


def test_default_selection_is_main_module():
    p, out = record([fixture(GO), "wrapper", "2"])
    funcs = {c["func"] for c in replay_json(out)}
    assert "main.main" in funcs and "example.com/core/shapes.Total" in funcs, funcs
    assert not any(f.startswith(("runtime.", "fmt.", "sync.")) for f in funcs), funcs


def test_default_selection_of_gopath_build():
    # built with GO111MODULE=off: no main module in its build info, only the
    # main package's path; its project (example.org/acme/tool) stands for it
    exe = fixture("go_gopath")
    p, out = record([exe])
    assert p.stdout == "tool 37\n"
    calls = replay_json(out)
    (root,) = [r for roots in trees(calls).values() for r in roots if r.func == "main.main"]
    assert root.shape(short=False) == "main.main(main.run(example.org/acme/tool/internal/calc.Square))", \
        root.shape(short=False)
    assert not [c for c in calls if c["func"].startswith("fmt.")]
    info = ct("info", out).stdout
    assert re.search(r"^go\.module\s+example\.org/acme/tool$", info, re.M), info
    assert re.search(r"^go\.module_from\s+the main package's path", info, re.M), info


def test_text_tree_matches_json():
    p, out = record([fixture(GO), "goroutines", "5"])
    text = ct("replay", "--color=never", out)
    assert text.returncode == 0, text.stderr
    calls = replay_json(out)
    names = {c["func"] for c in calls}
    tforest = parse_text_tree(text.stdout, names)
    jforest = trees(calls)
    tshapes = sorted(r.shape() for roots in tforest.values() for r in roots)
    jshapes = sorted(r.shape() for roots in jforest.values() for r in roots)
    assert tshapes == jshapes, (tshapes, jshapes)
    merged = ct("replay", "--merge", "--color=never", out)
    mforest = parse_text_tree(merged.stdout, names)
    assert sorted(r.shape() for roots in mforest.values() for r in roots) == jshapes


def test_signal_handler_is_one_call_on_the_signal_stack():
    # runtime.sigtrampgo runs on the M's signal stack, entered with the
    # interrupted g and switching to gsignal partway (setg): its calls were
    # keyed from another g's stack, unwound it, and went to another
    # goroutine's tree.  Its frame and its calls' are one stack, nested under
    # the call the signal interrupted (a SIGURG preempting the spinning
    # goroutine), and it returns.
    for mode in ("auto", "ret"):
        p, out = record([fixture(GO), "signals", "20"], "--exit=" + mode, "-F", "runtime.sig*",
                        "-F", "main.spinUntil")
        assert p.stdout == "signals 20\n", p.stdout
        calls = replay_json(out)
        forest = trees(calls)
        statuses = collections.Counter(c["status"] for c in calls)
        assert set(statuses) == {"returned"}, (mode, statuses)
        tramps = [n for n in all_nodes(forest) if n.func == "runtime.sigtrampgo"]
        sigs = collections.Counter(n.call["args"][0]["value"] for n in tramps)
        assert sigs[10] >= 20 and sigs[23] >= 1, (mode, sigs)  # SIGUSR1, SIGURG
        for n in tramps:
            kids = [k.func for k in n.children]
            assert "runtime.sighandler" in kids, (mode, n.call, kids)
        handlers = [n for n in all_nodes(forest) if n.func == "runtime.sighandler"]
        assert len(handlers) == len(tramps), (mode, len(handlers), len(tramps))
        (spin,) = [n for n in all_nodes(forest) if n.func == "main.spinUntil"]
        preempted = [k for k in spin.children if k.func == "runtime.sigtrampgo"]
        # (SIGURG preempting it; on a loaded machine a SIGUSR1 of the
        # program's may land on its thread too, nested there as well)
        assert preempted and all(k.call["args"][0]["value"] in (10, 23) for k in preempted), (mode, spin.shape())


def test_goroutines():
    n = 9
    p, out = record([fixture(GO), "goroutines", str(n)])
    untraced = run([fixture(GO), "goroutines", str(n)])
    assert p.stdout == untraced.stdout
    forest = trees(replay_json(out))
    main = [r.shape() for k, roots in forest.items() if k[2] == 1 for r in roots]
    assert main == ["main.main(main.goroutines)"], main
    workers = [r for k, roots in forest.items() if k[2] != 1 for r in roots]
    assert len(workers) == n and len({w.call["goid"] for w in workers}) == n
    leaves = collections.Counter()
    for w in workers:
        assert w.func == "main.goroutines.func1" and len(w.children) == 1
        work = w.children[0]
        assert work.func == "main.work" and all(c.func == "main.leaf" for c in work.children)
        leaves[len(work.children)] += 1
    # work(i) calls leaf (i%3)+1 times
    assert leaves == collections.Counter((i % 3) + 1 for i in range(n)), leaves
    assert all(x.call["status"] == "returned" for x in all_nodes(forest))


def test_deep_recursion_survives_stack_copies():
    # 4000 frames of >256 bytes: the 8 KiB stack is copied ~8 times and
    # morestack re-runs main.deep's entry each time; no call may be doubled.
    n = 4000
    p, out = record([fixture(GO), "deep", str(n)], "-F", "main.deep")
    assert p.stdout == run([fixture(GO), "deep", str(n)]).stdout
    calls = replay_json(out)
    assert len(calls) == n + 1, len(calls)
    assert [c["depth"] for c in calls] == list(range(n + 1))
    assert all(c["status"] == "returned" and c["func"] == "main.deep" for c in calls)
    # each call returns after all deeper ones
    ends = [c["ts"] + c["dur"] for c in calls]
    assert ends == sorted(ends, reverse=True)


def test_panic_recover_unwinds():
    p, out = record([fixture(GO), "panic", "3"])
    assert p.stdout == "safe -1 7\n"
    forest = trees(replay_json(out))
    (root,) = forest[next(iter(forest))]
    # boom(3)..boom(0) never return; the deferred recover runs on top of the
    # panicking frame; safe returns normally through deferreturn.
    assert root.shape() == "main.main(main.safe(main.boom(main.boom(main.boom(main.boom(main.safe.func1))))),main.afterPanic)", root.shape()
    st = {n.func + "@" + str(n.call["depth"]): n.call["status"] for n in root.walk()}
    assert st["main.safe@1"] == "returned" and st["main.afterPanic@1"] == "returned"
    assert [st[f"main.boom@{d}"] for d in range(2, 6)] == ["unwound"] * 4
    assert st["main.safe.func1@6"] == "returned"
    for n in root.walk():
        if n.call["status"] == "unwound":
            assert n.call["dur"] is None


def test_promoted_method_wrapper_tail_jump():
    p, out = record([fixture(GO), "wrapper", "5"])
    assert p.stdout == "wrapper 15\n"
    forest = trees(replay_json(out))
    (root,) = forest[next(iter(forest))]
    total = root.children[0]
    assert total.shape() == "shapes.Total(shapes.NewGetter," + ",".join(
        ["shapes.(*Outer).Get(shapes.(*Inner).Get)"] * 3) + ")", total.shape()
    for w in total.children[1:]:
        inner = w.children[0]
        assert inner.call["tail"] is True and w.call.get("tail") is None
        assert w.call["status"] == inner.call["status"] == "returned"
        # the callee returns straight to the wrapper's caller: both end together
        assert w.call["ts"] + w.call["dur"] == inner.call["ts"] + inner.call["dur"]


def test_goexit_unwinds_goroutine():
    p, out = record([fixture(GO), "goexit"])
    assert p.stdout == "goexit done 7\n"
    forest = trees(replay_json(out))
    g = [r for k, roots in forest.items() if k[2] != 1 for r in roots]
    assert [r.shape() for r in g] == ["main.goexit.func1(main.exiter(main.exiter(main.exiter)))"]
    assert all(n.call["status"] == "unwound" for n in g[0].walk())


def test_pie_binary():
    p, out = record([fixture("go_core_pie"), "fib", "6"], "-F", "main.fib")
    assert p.stdout == "fib 8\n"
    roots = only_roots(trees(replay_json(out)))
    assert [r.shape() for r in roots] == [fib_shape(6)]


def test_exit_status_and_output_unchanged():
    for args in (["exit", "3"], ["fib", "12"], ["goroutines", "4"], ["panic", "2"]):
        plain = run([fixture(GO), *args])
        p, _ = record([fixture(GO), *args], check=False)
        assert p.returncode == plain.returncode, (args, p.returncode, plain.returncode, p.stderr)
        assert p.stdout == plain.stdout, (args, p.stdout, plain.stdout)
