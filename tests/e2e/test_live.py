"""calltrace live: the tree printed while the program runs."""
import glob
import os

from lib import TEXT_LINE, ct, fixture, info_count, parse_text_tree, replay_json, tmp


def fib_shape(n):
    return "main.fib" if n < 2 else f"main.fib({fib_shape(n - 1)},{fib_shape(n - 2)})"


def tree_lines(out):
    # the program's own output is interleaved with the tree
    lines = out.splitlines()
    return "\n".join([lines[0]] + [l for l in lines[1:] if TEXT_LINE.match(l)])


def test_live_prints_the_tree_and_keeps_no_file():
    before = set(glob.glob("/tmp/calltrace-live-*"))
    p = ct("live", "-F", "main.fib", "--", fixture("go_core"), "fib", "6")
    assert p.returncode == 0, p.stderr
    assert "fib 8" in p.stdout.splitlines()
    text = p.stdout[p.stdout.index("# DURATION"):]
    forest = parse_text_tree(tree_lines(text), {"main.fib"})
    roots = [r.shape() for roots in forest.values() for r in roots]
    assert roots == [fib_shape(6)], roots
    assert set(glob.glob("/tmp/calltrace-live-*")) == before


def test_live_with_output_file():
    out = tmp("live.data")
    p = ct("live", "-o", out, "--", fixture("c_core"), "exit", "4")
    assert p.returncode == 4 and "exiting 4" in p.stdout
    assert os.path.exists(out)
    assert [c["func"] for c in replay_json(out)] == ["main"]
    # shown while recording: no calibration at the end, the hits all the
    # same (main's entry; exit(4) ends it)
    assert info_count(ct("info", out).stdout, "probe_hits") >= 1


def test_live_follow_exec():
    # the site table grows while live reads it (a binary exec'd under --follow)
    p = ct("live", "--follow", "-F", "c_fib", "-F", "main.*", "--", fixture("c_core"), "forkexec",
           fixture("go_core"), "fib", "3")
    assert p.returncode == 0, p.stderr
    assert "go_core:main.fib()" in p.stdout or "go_core:main.fib(n=" in p.stdout, p.stdout[-800:]
    # (a note may follow the name: its time off CPU)
    assert "} /* go_core:main.main */" in p.stdout or "} /* go_core:main.main; off CPU " in p.stdout
