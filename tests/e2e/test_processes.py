"""Which processes a recording covers: -p given the same process twice (or
by one of its threads), and --follow with processes that fork and exit
before their children do."""
import json
import os
import select
import signal
import subprocess
import time

from lib import CT, ct, fixture, our_links, replay_json, tmp, trees


def test_same_process_given_twice_is_traced_once():
    prog = subprocess.Popen([fixture("c_procs"), "thread", "1000"], stdout=subprocess.PIPE, text=True)
    try:
        tid = int(prog.stdout.readline().split()[1])
        assert tid != prog.pid
        out = tmp("pp.data")
        r = ct("record", "-o", out, "-p", str(prog.pid), "-p", str(tid), "-p", str(prog.pid),
               "--duration", "300ms", "-F", "tick")
        assert r.returncode == 0, r.stderr
        assert f"{tid} is a thread of process {prog.pid}" in r.stderr, r.stderr
        assert "tracing 1 process " in r.stderr, r.stderr
        calls = replay_json(out)
        ticks = [c for c in calls if c["func"] == "tick"]
        assert len(ticks) >= 5, len(ticks)
        # each call once: never a second copy unwound by the first
        assert all(c["depth"] == 0 and c["status"] in ("returned", "unfinished") for c in ticks), \
            [(c["depth"], c["status"]) for c in ticks][:6]
        starts = [c["ts"] for c in ticks]
        assert len(starts) == len(set(starts)), "an entry was recorded twice"
        assert our_links() == []
    finally:
        prog.kill()
        prog.wait()


def by_pid(calls):
    """pid -> the shapes of its root calls, in order of first appearance."""
    out = {}
    for k, roots in trees(calls).items():
        out.setdefault(k[0], []).extend(roots)
    return out


def status_of(root):
    return {n.func: n.call["status"] for n in root.walk()}


def exit_line(path):
    info = ct("info", path)
    assert info.returncode == 0, info.stderr
    return next(l.split(None, 1)[1] for l in info.stdout.splitlines() if l.startswith("exit:"))


def test_follow_waits_for_a_daemon():
    # uftrace's daemon case: main calls daemon(), whose parent _exits at once;
    # the daemon runs a(b(c)) 300 ms later
    out = tmp("daemon.data")
    r = ct("record", "-o", out, "--follow", "-N", "sleep_ms", "--", fixture("c_procs"), "daemon", "300")
    assert r.returncode == 0, r.stderr
    assert exit_line(out) == "exited 0", exit_line(out)
    procs = by_pid(replay_json(out))
    assert len(procs) == 2, procs
    parent, child = sorted(procs)
    # the parent ended inside main (daemon() called _exit): exited, not unfinished
    assert [r.shape() for r in procs[parent]] == ["main(a(b(c)))"]
    assert status_of(procs[parent][0])["main"] == "exited"
    # the child goes on inside main (forked there) and returns from it
    assert [r.shape() for r in procs[child]] == ["main(a(b(c)))"]
    main = procs[child][0]
    assert all(n.call["status"] == "returned" for n in main.walk()), status_of(main)
    assert main.call["ts"] == procs[parent][0].call["ts"]  # the same call, entered before the fork
    assert our_links() == []


def test_follow_waits_for_every_generation():
    out = tmp("forkexit.data")
    r = ct("record", "-o", out, "--follow", "-N", "sleep_ms", "--", fixture("c_procs"), "forkexit", "200")
    assert r.returncode == 0, r.stderr
    procs = by_pid(replay_json(out))
    assert len(procs) == 3, procs
    # each process runs a() once: order the generations by it
    first, second, third = sorted(procs, key=lambda p: next(
        n.call["ts"] for n in procs[p][0].walk() if n.func == "a"))
    # each child goes on inside the calls open at its fork: main, and leave()
    assert [r.shape() for r in procs[first]] == ["main(a(b(c)),leave)"]
    assert [r.shape() for r in procs[second]] == ["main(leave,a(b(c)),leave)"]
    assert [r.shape() for r in procs[third]] == ["main(leave,a(b(c)))"]
    for p in (first, second):
        last = procs[p][0].children[-1]
        assert (last.func, last.call["status"]) == ("leave", "exited")
        assert procs[p][0].call["status"] == "exited"
    assert all(n.call["status"] == "returned" for n in procs[third][0].walk())


def test_thread_and_process_ends_without_follow():
    # pthread_exit ends a thread inside traced calls; the process goes on
    out = tmp("threadexit.data")
    r = ct("record", "-o", out, "--", fixture("c_procs"), "threadexit", "0")
    assert r.returncode == 0, r.stderr
    calls = replay_json(out)
    st = {c["func"]: c["status"] for c in calls}
    assert (st["worker"], st["quit"]) == ("exited", "exited"), st
    assert st["main"] == st["a"] == "returned", st
    quit = next(c for c in calls if c["func"] == "quit")
    a = next(c for c in calls if c["func"] == "a")
    assert quit["ts"] < a["ts"]
    # a process that _exits inside calls (no --follow: the child is not traced)
    out = tmp("daemon-nofollow.data")
    r = ct("record", "-o", out, "--", fixture("c_procs"), "daemon", "0")
    assert r.returncode == 0, r.stderr
    calls = replay_json(out)
    assert {c["pid"] for c in calls} == {calls[0]["pid"]}
    assert [(c["func"], c["status"]) for c in calls if c["depth"] == 0] == [("main", "exited")]


def test_calls_only_in_forked_children_say_follow():
    """The traced function runs only in the daemon the program forks: without
    --follow the line said it never ran, no word of the fork; now record and
    replay say the process forked one, traced with --follow."""
    out = tmp("daemon-forked.data")
    prog = [fixture("c_procs"), "daemon", "0"]
    r = ct("record", "-o", out, "-F", "sleep_ms", "--", *prog)
    assert r.returncode == 0, r.stderr
    for err in (r.stderr, ct("replay", out).stderr):
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "forked 1 process, not traced without --follow" in lines[0], err
    r = ct("record", "-o", out, "--follow", "-F", "sleep_ms", "--", *prog)
    assert r.returncode == 0 and "forked" not in r.stderr, r.stderr
    assert [c["func"] for c in replay_json(out)] == ["sleep_ms"]


def test_follow_more_than_a_thousand_processes_at_once():
    """--follow kept at most 1024 traced processes in the kernel's table: a
    program with 1100 children alive at once lost the calls of the last 77,
    without a word (lost: 0). It keeps 8192 now (and says so when more were
    forked meanwhile)."""
    out = tmp("crowd.data")
    r = ct("record", "-o", out, "--follow", "-F", "c", "--", fixture("c_procs"), "crowd", "1100")
    assert r.returncode == 0 and r.stdout == "crowd 1100\n", (r.stdout, r.stderr)
    assert "not traced" not in r.stderr, r.stderr
    calls = replay_json(out)
    assert len(calls) == 1100 and len({c["pid"] for c in calls}) == 1100, len(calls)


def test_duration_and_ctrl_c_while_only_descendants_run():
    import signal
    import time
    for how in ("duration", "sigint"):
        out = tmp(f"daemon-{how}.data")
        args = ["record", "-v", "-o", out, "--follow", "-F", "a", "-F", "main"]
        if how == "duration":
            args += ["--duration", "700ms"]
        p = subprocess.Popen([CT, *args, "--", fixture("c_procs"), "daemon", "20000"],
                             stderr=subprocess.PIPE, text=True)
        head = ""
        if how == "sigint":
            # Ctrl-C once the daemon exists (-v says "forked"): a fixed sleep
            # raced start-up on a loaded machine
            while "forked" not in head:
                line = p.stderr.readline()
                assert line, head
                head += line
            time.sleep(0.2)
            p.send_signal(signal.SIGINT)
        try:
            err = head + p.communicate(timeout=15)[1]
        finally:
            if p.poll() is None:
                p.kill()
        calls = replay_json(out)
        daemon = max(c["pid"] for c in calls)
        try:
            assert p.returncode == 0, (how, p.returncode, err)
            assert "1 traced process keeps running" in err, err
            assert exit_line(out) == "exited 0; 1 traced process still running (tracing stopped)", exit_line(out)
            # the daemon's main is still open: unfinished, not exited
            mains = {c["pid"]: c["status"] for c in calls if c["func"] == "main"}
            assert mains == {min(mains): "exited", daemon: "unfinished"}, mains
        finally:
            subprocess.run(["kill", str(daemon)])
        assert our_links() == []


def test_exec_with_the_ring_buffer_full_runs_on():
    # --follow holds an exec'd binary stopped until the tracer has probed
    # it; when the event that makes the tracer continue it cannot be queued
    # (the ring buffer is full), it must not be stopped: it runs on, its
    # binary untraced.  The tracer is stopped meanwhile, so the ring fills.
    out = tmp("floodexec.data")
    p = subprocess.Popen([CT, "record", "-o", out, "--follow", "--buffer-size", "4K", "-F", "c", "--",
                          fixture("c_procs"), "floodexec", "20000", fixture("c_core"), "fib", "3"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        os.kill(p.pid, signal.SIGSTOP)
        try:
            p.stdin.write("go\n")
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], 20)
            assert ready, "the exec'd program did not run while the ring buffer was full"
            assert p.stdout.readline() == "fib 2\n"
        finally:
            os.kill(p.pid, signal.SIGCONT)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    info = ct("info", out)
    assert info.returncode == 0 and "lost" in info.stdout, info.stdout


def test_launcher_before_the_exec_is_not_the_program():
    # record forks and execs the program: until that exec the process runs
    # calltrace's own code (its execv, the read that waited for the probes),
    # whose calls of a traced library are not the program's
    for follow in ([], ["--follow"]):
        out = tmp("launch.data")
        r = ct("record", "-o", out, *follow, "-F", "libc.so.6:execv*", "-F", "libc.so.6:read",
               "--", "/bin/sh", "-c", "exec /bin/true")
        assert r.returncode == 0, r.stderr
        calls = replay_json(out)
        # the shell's own exec of /bin/true, and nothing of the launcher
        assert [(c["func"], c["status"]) for c in calls] == [("libc.so.6:execve", "exited")], (follow, calls)
        info = ct("info", out).stdout
        assert any(l.startswith("launch.before_exec ") and int(l.split()[1]) >= 2 for l in info.splitlines()), info


def test_launcher_before_the_exec_is_not_the_program_s_own_libc():
    """The program is libc.so.6 itself (it prints its version), or the
    dynamic loader running a program (ld-linux.so ./prog): files calltrace
    maps too, so its launcher's hits before the exec (the read that waited,
    execv, the loader binding execv) were on the program's own functions and
    taken for the program started; they showed at the trace's start."""
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                if os.path.exists(p))
    out = tmp("launch-libc.data")
    r = ct("record", "-o", out, "-F", "execv*", "-F", "read", "--", libc)
    assert r.returncode == 0 and r.stdout.startswith("GNU C Library"), r.stderr
    assert replay_json(out) == [], replay_json(out)
    ld = "/lib64/ld-linux-x86-64.so.2"
    r = ct("record", "-o", out, "-F", "_dl_*", "--", ld, fixture("c_core"), "fib", "3")
    assert r.returncode == 0, r.stderr
    calls = replay_json(out)
    assert [c["func"] for c in calls if c["depth"] == 0][0] == "_dl_start", calls[:3]
    assert not any("execv" in json.dumps(c.get("args")) for c in calls), [c for c in calls if "execv" in json.dumps(c)][:2]


def guards_of(out):
    """pids of calltrace-guard processes of the recording to OUT (its command line is record's)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/cmdline") as f:
                cmd = f.read().split("\0")
        except OSError:
            continue
        if comm == "calltrace-guard" and out in cmd:
            found.append(int(pid))
    return found


def test_a_held_process_goes_on_when_calltrace_is_killed():
    # --follow holds an exec'd binary stopped until it is probed; calltrace
    # killed in that instant (here: stopped, then SIGKILLed) must not leave
    # it stopped for good: its guard process continues it
    out = tmp("guard.data")
    p = subprocess.Popen([CT, "record", "-o", out, "--follow", "-F", "c", "--",
                          fixture("c_procs"), "floodexec", "1", fixture("c_core"), "fib", "3"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        assert guards_of(out), "no guard process"
        (prog,) = [int(c) for c in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()]
        os.kill(p.pid, signal.SIGSTOP)
        p.stdin.write("go\n")
        p.stdin.flush()
        # it execs c_core, and is held there: the exec is not handled
        held = False
        for _ in range(100):
            with open(f"/proc/{prog}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state == "T" and os.readlink(f"/proc/{prog}/exe") == fixture("c_core"):
                held = True
                break
            time.sleep(0.1)
        assert held, "the exec'd program was not held"
        p.kill()
        ready, _, _ = select.select([p.stdout], [], [], 20)
        assert ready and p.stdout.readline() == "fib 2\n", "the held program did not go on"
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
    for _ in range(50):
        if not guards_of(out):
            break
        time.sleep(0.1)
    assert not guards_of(out), "the guard did not end"


def test_follow_adds_exits_found_while_recording():
    # say() tail-jumps to puts (untraced), called through a pointer: the
    # first call from a place ends unobserved, its return address is
    # reported and an exit probe goes there while the program runs on.
    # Under --follow too: in a forked child, in the binary it execs (another
    # file, its sites planned then), and in the parent from a call site
    # found after that binary took its site ids.  (Before: none under
    # --follow, every such call unobserved.)
    n = 8
    out = tmp("followfound.data")
    r = ct("record", "-o", out, "--follow", "-F", "say", "--", fixture("c_followfound"), "fork", str(n))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [sum(l.startswith(w + " ") or l == w for l in lines) for w in ("child", "exec", "parent")] == [n + 1, n, n], \
        r.stdout  # (and "child exited 0")
    says = [c for c in replay_json(out) if c["func"].endswith("say")]
    groups = {}
    for c in says:
        who = c["args"][0]["value"].split()[0]
        groups.setdefault(who, []).append(c)
    assert sorted(groups) == ["child", "exec", "parent"], sorted(groups)
    assert all(c["func"] == "c_followfound_exec:say" for c in groups["exec"]), groups["exec"]
    for who, cs in groups.items():
        assert len(cs) == n, (who, len(cs))
        status = [c["status"] for c in cs]
        # the first from each place ends unobserved (and another or two,
        # while the probe went in on a busy machine), the others are seen
        # return, with puts' result
        assert status.count("returned") >= n - 3, (who, status)
        want = len(cs[0]["args"][0]["value"]) + 1
        assert all(c["ret"][0]["value"] == want for c in cs if c["status"] == "returned"), (who, cs)
    info = ct("info", out).stdout
    found = next(l for l in info.splitlines() if l.startswith("callers_found"))
    assert int(found.split()[1]) >= 3, found
