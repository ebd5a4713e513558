"""Goroutine ids of reused g structs.  A goroutine that ends leaves its g on
its P's free list, and the next goroutine made there gets that g with a new
id.  A thread keeps the id it read from a g until the runtime gives one out
(calltrace.bpf.c goid_gen: the probes after each place that gives one), so
a reused g must never show its old id.  go_goidreuse makes its goroutines
on a locked thread while another thread runs them -- there, the last hit
was on the same g under its old id -- and in bursts; each goroutine calls
main.mark with its id as the runtime sees it (its stack trace), so every
traced call's goroutine id is checked against its argument.  Also: `list`
says where the ids are seen given out, in real binaries of Go 1.13 to 1.27
(newproc1 itself up to 1.14; newproc's closure and a debugger's injected
call after; iter.Pull's coroutines where the binary has them)."""
import collections
import re
import subprocess

from lib import attach_verbose, ct, fixture, record, replay_json, run, tmp
from test_realworld import FETCH

LINE = re.compile(r"^G (\d+) at (0x[0-9a-f]+)$")
N = 200


def program_view(stdout):
    """goid -> the address of its g, as the program printed them."""
    view = {}
    for line in stdout.splitlines():
        m = LINE.match(line)
        assert m, line
        view[int(m[1])] = m[2]
    return view


def check_ids(flags, name):
    p, out = record([fixture("go_goidreuse"), str(N)], "-F", "main.mark", *flags, out=tmp(name))
    check_calls(name, p.stdout, out, N + N // 8 * 8)


def check_calls(name, stdout, out, made):
    view = program_view(stdout)
    assert len(view) == made, (name, len(view))
    # g structs served many goroutines each (else this tests nothing): the
    # most used one 127-225 of them when the machine is idle, 44 in a
    # clean-clone CI run under load (the scheduler spreads them over more)
    per_g = collections.Counter(view.values())
    assert per_g.most_common(1)[0][1] >= N // 8, (name, per_g.most_common(3))
    marks = [c for c in replay_json(out) if c["func"] == "main.mark"]
    wrong = [(c["goid"], c["args"][0]["value"], c["tid"]) for c in marks if c["goid"] != c["args"][0]["value"]]
    assert not wrong, (name, len(wrong), len(marks), wrong[:5])
    per_goid = collections.Counter(c["goid"] for c in marks)
    assert all(per_goid[g] == 2 for g in view), (name, [(g, per_goid[g]) for g in view if per_goid[g] != 2][:5])
    assert per_goid[1] == 1 and len(per_goid) == len(view) + 1, (name, per_goid[1], len(per_goid))


def test_reused_g_structs_show_their_new_ids():
    check_ids([], "goids-auto.data")


def test_reused_g_structs_show_their_new_ids_at_ret_probes():
    check_ids(["--exit=ret"], "goids-ret.data")


def test_attached_to_running_goroutines():
    """-p: threads that ran goroutines before the attach, and goroutines
    made before it, which end and leave their g's to new ones."""
    prog = subprocess.Popen([fixture("go_goidreuse"), str(N), "wait"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert prog.stdout.readline() == "ready\n"
        out = tmp("goids-attach.data")
        rec, head = attach_verbose(prog.pid, "-F", "main.mark", "-o", out)
        prog.stdin.write("go\n")
        prog.stdin.flush()
        rest, _ = prog.communicate(timeout=60)
        assert prog.returncode == 0, rest
        _, err = rec.communicate(timeout=60)
        assert rec.returncode == 0, head + err
    finally:
        if prog.poll() is None:
            prog.kill()
    check_calls("attach", rest, out, 8 + N + N // 8 * 8)


def goid_line(path):
    p = ct("list", path, "main.main")
    assert p.returncode == 0, p.stderr
    return next(l for l in p.stdout.splitlines() if l.startswith("# goroutine ids: "))


def test_list_says_where_ids_are_given():
    line = goid_line(fixture("go_goidreuse"))
    assert "each thread keeps" in line and \
        "(seen in runtime.newproc.func1, runtime.debugCallWrap.func1)" in line, line
    p = run(["sh", FETCH], timeout=600)
    assert p.returncode == 0, p.stderr
    for entry in p.stdout.splitlines():
        ident, path, gover, _ = entry.split("\t")
        minor = int(re.match(r"go1\.(\d+)", gover).group(1))
        line = goid_line(path)
        assert "each thread keeps" in line, (ident, line)
        if minor <= 14:
            assert "(seen in runtime.newproc1)" in line, (ident, line)
        else:
            assert "seen in runtime.newproc.func1" in line and "runtime.debugCallWrap.func1" in line, (ident, line)
        has_coro = "runtime.newcoro.func1" in ct("list", path, "runtime.newcoro*").stdout
        assert ("runtime.newcoro.func1" in line) == has_coro, (ident, line)
