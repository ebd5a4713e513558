"""calltrace graph: the calls merged by their path (uftrace's graph), text
and JSON, checked against the calls replay --format=json gives: every
distinct chain of calls from an outermost one once, with the number of
calls that took it and their summed total and self time."""
import json
import re

from lib import ct, recorded, replay_json, trees


def graph_json(path, *flags):
    p = ct("graph", "--format=json", *flags, path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def flatten(nodes, parent=()):
    """(path, calls, total_ns, self_ns) of each node, depth first."""
    for n in nodes:
        path = parent + (n["func"],)
        yield path, n["calls"], n["total_ns"], n["self_ns"]
        yield from flatten(n["children"], path)


def by_path(calls):
    """(path, Node) of every call of the JSON Lines calls, outermost first."""
    def walk(n, parent):
        path = parent + (n.func,)
        yield path, n
        for k in n.children:
            yield from walk(k, path)

    for roots in trees(calls).values():
        for r in roots:
            yield from walk(r, ())


def expected(calls):
    """path -> [calls, total, self], from the JSON Lines calls (all returned)."""
    agg = {}
    for path, n in by_path(calls):
        a = agg.setdefault(path, [0, 0, 0])
        a[0] += 1
        a[1] += n.call["dur"]
        a[2] += n.call["dur"] - sum(k.call["dur"] for k in n.children)
    return agg


def path_counts(calls):
    """path -> calls that took it, from the JSON Lines calls (any status)."""
    agg = {}
    for path, _ in by_path(calls):
        agg[path] = agg.get(path, 0) + 1
    return agg


def check_against_replay(out, *flags):
    calls = replay_json(out, *flags)
    assert calls and all(c.get("status") == "returned" for c in calls if "func" in c), calls
    got = list(flatten(graph_json(out, *flags)))
    assert {p: [n, t, s] for p, n, t, s in got} == expected(calls)
    assert len({p for p, *_ in got}) == len(got), "a path twice"
    return got


def test_graph_merges_the_calls_of_every_goroutine_by_path():
    out = recorded("goroutines", "go_core", "goroutines", "30")
    got = check_against_replay(out)
    # siblings: larger total first
    by_parent = {}
    for p, n, t, s in got:
        by_parent.setdefault(p[:-1], []).append(t)
    for totals in by_parent.values():
        assert totals == sorted(totals, reverse=True), totals


def test_graph_of_a_recursion_and_of_one_function():
    out = recorded("fib", "go_core", "fib", "12")
    got = check_against_replay(out)
    fibs = [p for p, *_ in got if p[-1] == "main.fib"]
    assert max(len(p) for p in fibs) >= 12, fibs
    # -F: the function's calls are the outermost, wherever they were made
    roots = graph_json(out, "-F", "main.fib")
    assert [r["func"] for r in roots] == ["main.fib"], roots
    assert roots[0]["total_ns"] == next(t for p, n, t, s in got if p[-1] == "main.fib" and len(p) == 2)


DUR = r"(?:< *)?\d+\.\d{3} +(?:us|ms|s|m|h)"  # ("< N": too short to tell from none)
LINE = re.compile(rf"^ *({DUR}) +({DUR}) +(\d+)  ((?:[| ]  )*)(\+- )?(\S.*)$")


def test_text_is_the_same_graph_as_json():
    """Each text line: total, self, calls, then the name indented under its
    caller's (`+- ` branches off it, `|  ` goes on down a branch that has
    more); the lines are JSON's nodes in the same order."""
    out = recorded("goroutines", "go_core", "goroutines", "30")
    p = ct("graph", out)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if not ln.startswith("#")]
    assert p.stdout.splitlines()[0].startswith("# durations corrected"), p.stdout[:300]
    stack, paths = [], []
    for ln in lines:
        m = LINE.match(ln)
        assert m, ln
        depth = len(m[4]) // 3 + (1 if m[5] else 0)
        assert depth <= len(stack), ln
        del stack[depth:]
        stack.append(m[6])
        paths.append((tuple(stack), int(m[3])))
    assert paths == [(p, n) for p, n, t, s in flatten(graph_json(out))]
    # a branch's "|" runs down to each later sibling's "+-"
    for i, ln in enumerate(lines):
        m = LINE.match(ln)
        col = len(ln) - len(m[4] + (m[5] or "") + m[6])
        for j in range(len(m[4]) // 3):
            if m[4][3 * j] == "|":
                # a later line at that depth follows before the branch ends
                assert any(LINE.match(x)[5] and len(x) - len(LINE.match(x)[4] + LINE.match(x)[5] + LINE.match(x)[6])
                           == col and len(LINE.match(x)[4]) == 3 * j for x in lines[i + 1:]), (ln, col)


def test_graph_bad_input_says_what_in_one_line():
    p = ct("graph", "/etc/passwd")
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = ct("graph", "--format=xml", recorded("fib", "go_core", "fib", "12"))
    assert p.returncode == 2 and "text or json" in p.stderr, p.stderr


def test_graph_keeps_a_coroutines_calls_apart():
    """A C thread that switches stacks (swapcontext): each stack's calls
    are paths of their own, as replay shows them, not nested in what the
    other stack had open (resume under cobody, work counted twice)."""
    for mode in ("coroutines", "ucontext"):
        out = recorded(f"stacks-{mode}", "c_stacks", mode)
        calls = replay_json(out)
        assert any(c.get("context") for c in calls), calls
        got = {p: n for p, n, t, s in flatten(graph_json(out))}
        assert got == path_counts(calls), mode
