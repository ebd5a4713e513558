"""Launch, signals, attach/detach and a killed tracer: the traced program must
run unharmed, and no probe may stay behind."""
import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time

from lib import CT, attach_verbose, ct, fixture, our_links, read_pty, record, replay_json, tmp


def wait_for(pred, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_file_mode_0600_and_old_kept():
    out = tmp("mode.data")
    record([fixture("c_core"), "fib", "3"], out=out)
    record([fixture("c_core"), "fib", "4"], out=out)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert os.path.exists(out + ".old")
    assert stat.S_IMODE(os.stat(out + ".old").st_mode) == 0o600


def test_no_links_after_record():
    record([fixture("c_core"), "fib", "5"])
    assert our_links() == [], our_links()


def test_sigterm_is_forwarded():
    out = tmp("term.data")
    p = subprocess.Popen([CT, "record", "-o", out, "--", fixture("c_core"), "wait", "20"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "waiting\n"
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)  # from a process: calltrace forwards it
    out_s, err = p.communicate(timeout=20)
    assert out_s == "term\n", (out_s, err)
    assert p.returncode == 0, (p.returncode, err)
    calls = replay_json(out)
    assert any(c["func"] == "c_fib" for c in calls)
    assert our_links() == []


def test_killed_tracer_leaves_program_running():
    out = tmp("killed.data")
    # The program's stdout is our pipe: it outlives the tracer.
    p = subprocess.Popen([CT, "record", "-o", out, "--", fixture("c_core"), "slow", "120"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    assert first.startswith("tick 0 "), first
    time.sleep(0.5)
    p.kill()
    p.wait(timeout=10)
    assert wait_for(lambda: our_links() == []), "probes left after the tracer was killed"
    rest = p.stdout.read()  # EOF once the program exits on its own
    ticks = [first] + rest.splitlines(keepends=True)
    assert ticks == [f"tick {i} 55\n" for i in range(120)], ticks[-3:]
    # the file replays up to its last complete chunk
    r = ct("replay", "--format=json", out)
    assert r.returncode == 0, r.stderr
    info = ct("info", out)
    assert info.returncode == 0 and "did not finish" in info.stdout, info.stdout


@contextlib.contextmanager
def ticking_c_core(ticks):
    """c_core printing TICKS ticks, once it has begun; killed if a test
    leaves it running."""
    prog = subprocess.Popen([fixture("c_core"), "slow", str(ticks)], stdout=subprocess.PIPE, text=True)
    try:
        assert prog.stdout.readline().startswith("tick 0")
        yield prog
    finally:
        if prog.poll() is None:
            prog.kill()


def record_attached(prog, out, duration):
    r = ct("record", "-o", out, "-p", str(prog.pid), "--duration", duration, "-F", "c_fib")
    assert r.returncode == 0, r.stderr


def test_attach_and_detach_pid():
    with ticking_c_core(150) as prog:
        out = tmp("attach.data")
        record_attached(prog, out, "400ms")
        assert our_links() == []
        calls = replay_json(out)
        fibs = [c for c in calls if c["func"] == "c_fib" and c["depth"] == 0]
        assert fibs, "no complete c_fib(10) tree while attached"
        # frames open at attach time show up as exits without entries and
        # are dropped; every depth-0 call that returned is a whole fib(10) tree
        assert all(c["status"] in ("returned", "unfinished") for c in calls)
        rest = prog.stdout.read()
        assert prog.wait(timeout=20) == 0
        assert rest.splitlines()[-1] == "tick 149 55"


def test_program_exiting_while_being_attached():
    """The -p program exits while calltrace starts (stopped here after its
    plan, before the probes go in): one line saying so, exit 1, no probe
    left.  It said "attaching N probes to /proc/PID/exe failed: No such
    file or directory"."""
    for _ in range(3):
        prog = subprocess.Popen([fixture("c_core"), "slow", "2000"], stdout=subprocess.PIPE, text=True)
        try:
            assert prog.stdout.readline().startswith("tick 0")
            tracer = subprocess.Popen([CT, "record", "-v", "-o", tmp("gone.data"), "-p", str(prog.pid),
                                       "-F", "c_fib"], stderr=subprocess.PIPE, text=True)
            early = []
            for line in tracer.stderr:
                early.append(line)
                if "plan:" in line:
                    os.kill(tracer.pid, signal.SIGSTOP)
                    break
            assert wait_for(lambda: open(f"/proc/{tracer.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T")
            prog.kill()
            prog.wait()
            os.kill(tracer.pid, signal.SIGCONT)
            rest = tracer.stderr.read()
            assert tracer.wait(timeout=60) == 1, "".join(early) + rest
        finally:
            if prog.poll() is None:
                prog.kill()
                prog.wait()
        assert our_links() == []
        lines = rest.strip().splitlines()
        if any("attached" in x for x in lines[:-1]):
            continue  # it was attached before the stop: try again
        assert lines[-1] == f"calltrace: process {prog.pid} exited before it could be traced", rest
        return
    raise AssertionError("calltrace was attached every time before it could be stopped")


def test_program_execing_while_being_attached():
    """The -p program execs another one after calltrace planned its probes
    and before they go in (calltrace stopped here after its plan): they go
    on the file planned (not on /proc/PID/exe, the other program now, at
    offsets that are not its own), which it no longer runs.  One line says
    so (not "changed while calltrace was reading it"), exit 1, no probe
    left, and the program it runs now goes on unharmed."""
    prog = subprocess.Popen([fixture("c_procs"), "floodexec", "0", fixture("go_core"), "ifacewait", "5"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert prog.stdout.readline() == "ready\n"
        tracer = subprocess.Popen([CT, "record", "-v", "-o", tmp("execd.data"), "-p", str(prog.pid), "-F", "*"],
                                  stderr=subprocess.PIPE, text=True)
        for line in tracer.stderr:
            if "plan:" in line:
                os.kill(tracer.pid, signal.SIGSTOP)
                break
        prog.stdin.write("exec\n")
        prog.stdin.flush()
        assert prog.stdout.readline() == "ready\n"  # go_core's
        os.kill(tracer.pid, signal.SIGCONT)
        rest = tracer.stderr.read()
        assert tracer.wait(timeout=60) == 1, rest
        assert our_links() == []
        out, _ = prog.communicate("go\n", timeout=60)
    finally:
        for p in (prog, locals().get("tracer")):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    assert (prog.returncode, out) == (0, "iface 3032\n"), (prog.returncode, out)
    assert rest.strip().splitlines()[-1] == \
        f"calltrace: process {prog.pid} exec'd {fixture('go_core')} while calltrace was planning its probes for " \
        f"{fixture('c_procs')}: nothing was traced; run calltrace record -p {prog.pid} again to trace what it " \
        "runs now", rest
    assert not os.path.exists(tmp("execd.data"))


def test_traced_process_execing_another_program():
    """record -p of a process that execs: the same program again is still
    traced (its probes are on the file); another program is not, and
    recording went on, silent, until that one ended.  Now one line says
    what it runs and that its recording ends there, exit 0 (the trace holds
    all there was to trace), no probe left, the process runs on untouched,
    and the trace's exit says so."""
    prog = subprocess.Popen([fixture("c_procs"), "floodexec", "2", fixture("c_procs"), "floodexec", "3",
                             "/bin/sleep", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = tmp("exec-other.data")
    try:
        assert prog.stdout.readline() == "ready\n"
        rec, head = attach_verbose(prog.pid, "-o", out, "-F", "c")
        prog.stdin.write("go\n")
        prog.stdin.flush()
        assert prog.stdout.readline() == "ready\n"  # c_procs again
        prog.stdin.write("go\n")
        prog.stdin.flush()
        _, err = rec.communicate(timeout=20)  # (not the 30 s of sleep)
        assert rec.returncode == 0, head + err
        assert our_links() == []
        assert prog.poll() is None  # sleep runs on
    finally:
        for p in (prog, locals().get("rec")):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    sleep = os.path.realpath("/bin/sleep")  # (what /proc/PID/exe names)
    said = [l for l in err.splitlines() if "exec'd" in l]
    assert said == [f"calltrace: process {prog.pid} exec'd {fixture('c_procs')} again: still traced",  # (-v)
                    f"calltrace: process {prog.pid} exec'd {sleep}: the program it runs now is not traced, "
                    "its recording ends there (the process runs on; --follow traces the programs it execs)"], err
    assert [c["func"] for c in replay_json(out)] == ["c"] * 5
    assert re.search(rf"^exit:\s+exec'd {re.escape(sleep)} \(not traced\)$", ct("info", out).stdout, re.M)


def test_traced_library_calls_of_a_program_exec_d_are_not_written():
    """record -p of two processes, traced with a library's functions, one
    of which execs another program: the library's probes are on the file,
    so they fire in the new program too (its malloc calls were written as
    the process's, after the line that said its recording ends there).
    Now nothing of it after the exec is in the trace -- `info` counts what
    was left out until its links were closed -- and the other process is
    traced to its end."""
    progs = [subprocess.Popen([fixture("c_procs"), "floodexec", str(n), *argv], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
             for n, argv in ((2, ["/bin/sleep", "0.3"]), (3, ["/bin/true"]))]
    out = tmp("exec-lib.data")
    try:
        for p in progs:
            assert p.stdout.readline() == "ready\n"
        rec = subprocess.Popen([CT, "record", "-v", "-o", out, "-F", "c", "-F", "libc.so.6:malloc",
                                "-p", str(progs[0].pid), "-p", str(progs[1].pid)], stderr=subprocess.PIPE, text=True)
        head = ""
        while "calltrace: tracing 2 processes" not in head:  # (both attached, their library too)
            line = rec.stderr.readline()
            assert line, head
            head += line
        progs[0].stdin.write("go\n")  # c() twice, then sleep, which mallocs
        progs[0].stdin.flush()
        assert progs[0].wait(timeout=20) == 0
        progs[1].stdin.write("go\n")
        progs[1].stdin.flush()
        _, err = rec.communicate(timeout=20)
        assert rec.returncode == 0, head + err
        assert our_links() == []
    finally:
        for p in (*progs, locals().get("rec")):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    calls = [(c["pid"], c["func"]) for c in replay_json(out)]
    assert calls.count((progs[0].pid, "c")) == 2 and calls.count((progs[1].pid, "c")) == 3, calls
    assert not [c for c in calls if c[0] == progs[0].pid and c[1] != "c"], calls
    # what the probes still saw of it before its links were closed (none,
    # if they went before the new program's first malloc) is counted
    m = re.search(r"^exec_left\s+(\d+) ", ct("info", out).stdout, re.M)
    assert not m or int(m.group(1)) > 0, ct("info", out).stdout


def test_launched_program_execing_another_program():
    """A program record launched that execs another program (no --follow):
    one line says what it runs now and that it is not traced; record still
    waits for it and ends with its exit status, the calls before the exec
    recorded, no probe left."""
    out = tmp("launch-exec.data")
    p = subprocess.run([CT, "record", "-o", out, "-F", "c", "--", fixture("c_procs"), "floodexec", "3", "/bin/sh",
                        "-c", "exit 7"], input="go\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 7, p.stderr
    sh = os.path.realpath("/bin/sh")  # (what /proc/PID/exe names)
    said = [l for l in p.stderr.splitlines() if "exec'd" in l]
    assert len(said) == 1 and re.fullmatch(rf"calltrace: process \d+ exec'd {re.escape(sh)}: the program it runs now "
                                           r"is not traced \(--follow traces the programs it execs\)", said[0]), p.stderr
    assert [c["func"] for c in replay_json(out)] == ["c"] * 3
    assert our_links() == []


def record_found_while_waiting(name, change, *flags):
    """Records a copy of go_core foundwait (call sites of address-taken
    functions found while recording, interim RETs' links made again as
    functions settle) with FLAGS, and runs CHANGE(the copy's path) once
    the program runs, before those calls.  The program's output, its main.*
    calls (status, results), calltrace's -v lines and the record's `info`."""
    exe = tmp(f"{name}-go_core")
    shutil.copy(fixture("go_core"), exe)
    out, log = tmp(f"{name}.data"), tmp(f"{name}.log")
    with open(log, "w") as err:
        rec = subprocess.Popen([CT, "record", "-v", "-o", out, *flags, "--", exe, "foundwait", "30"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                               env=dict(os.environ, GOMAXPROCS="1"))
        try:
            assert rec.stdout.readline() == "ready\n"
            change(exe)
            rest, _ = rec.communicate("go\n", timeout=120)
        finally:
            if rec.poll() is None:
                rec.kill()
    with open(log) as f:
        verbose = f.read()
    assert rec.returncode == 0, verbose[-2000:]
    assert rest == "iface 4307\nsorted 58\nreflected 990\n", rest
    refused = [line for line in verbose.splitlines() if "not attached" in line or " failed" in line]
    info = ct("info", out).stdout
    assert not refused and "probes_refused" not in info, (name, refused[:3], info)
    calls = [(c["func"], c["status"], json.dumps(c.get("ret"))) for c in replay_json(out)
             if c.get("func", "").startswith("main.")]
    return calls, info


def test_program_deleted_or_replaced_while_recording():
    """The probes added while recording (exits of call sites found, interim
    RETs' links made again) go on the file the plan was read from, through
    calltrace's open descriptor of it, whatever its name became: deleted,
    or another program renamed over it (by the name: ENOENT, or the other
    file's bytes).  No probe change is refused (`info` would count it), and
    the calls are the same as with the file left alone.  (-F '*': more
    functions with interim RETs than links for them, a link for several:
    made again by the name, it failed.)"""
    def replace(exe):
        shutil.copy(fixture("c_procs"), exe + ".new")
        os.rename(exe + ".new", exe)

    calls, _ = record_found_while_waiting("kept", lambda exe: None, "-F", "main.*")
    assert len(calls) > 500 and all(status == "returned" for _, status, _ in calls), \
        [c for c in calls if c[1] != "returned"][:5]
    for name, change in (("deleted", os.unlink), ("replaced", replace)):
        changed, _ = record_found_while_waiting(name, change, "-F", "main.*")
        assert changed == calls, (name, [c for c in changed if c not in calls][:3])
    _, info = record_found_while_waiting("deleted-all", os.unlink, "-F", "*")
    remade = re.search(r"^interim +\d+ .*, (\d+) links made again or closed", info, re.M)
    assert remade and int(remade.group(1)) > 0, info


def test_shared_library_functions():
    from lib import record
    p, out = record([fixture("c_core"), "fib", "3"], "-F", "libc.so.6:malloc", "-F", "main", "-F", "c_fib")
    calls = replay_json(out)
    names = [c["func"] for c in calls]
    # printf's first output allocates its buffer with malloc, under main
    assert "libc.so.6:malloc" in names, names
    m = next(c for c in calls if c["func"] == "libc.so.6:malloc")
    assert m["depth"] == 1 and m["status"] == "returned"
    # only the traced process: nothing from other programs using libc
    assert {c["pid"] for c in calls} == {calls[0]["pid"]}


def test_library_functions_of_a_stripped_program():
    """A program without function symbols (Debian's programs are stripped:
    jq, sqlite3) can still have its libraries' functions traced; its own
    default selection says it is stripped.  Both were refused with "has no
    function symbols", and so was a glob of its own next to a library's."""
    import shutil
    prog = tmp("c_core_stripped")
    shutil.copy(fixture("c_core"), prog)
    subprocess.run(["strip", "-s", prog], check=True)
    p = ct("record", "-o", tmp("stripped.data"), "-F", "libc.so.6:malloc", "--", prog, "fib", "3")
    assert p.returncode == 0 and p.stdout == "fib 2\n", p.stderr
    calls = replay_json(tmp("stripped.data"))
    assert calls and {c["func"] for c in calls} == {"libc.so.6:malloc"}, calls[:3]
    assert all(c["status"] == "returned" and c["depth"] == 0 for c in calls), calls[:3]
    # a glob of its own next to the library's (-F '*'): it names nothing
    # there, and that is said once; the library's functions are traced
    p = ct("record", "-o", tmp("stripped3.data"), "-F", "*", "-F", "libc.so.6:malloc", "--", prog, "fib", "3")
    assert p.returncode == 0 and p.stdout == "fib 2\n", p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no function symbols" in lines[0] and "libraries' functions are traced" in lines[0], lines
    assert {c["func"] for c in replay_json(tmp("stripped3.data"))} == {"libc.so.6:malloc"}
    # alone: its calls of library functions (at its PLT), said in one line
    p = ct("record", "-o", tmp("stripped2.data"), "--", prog, "fib", "3")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 0 and len(lines) == 1, p.stderr
    assert "is stripped" in lines[0] and "@plt" in lines[0] and "-F 'LIB:GLOB'" in lines[0], lines
    assert {c["func"] for c in replay_json(tmp("stripped2.data"))} >= {"printf@plt"}
    assert our_links() == []


def test_attach_two_processes_of_one_binary():
    # 2000 ticks (20 s): still running however long start-up takes under load
    progs = [subprocess.Popen([fixture("c_core"), "slow", "2000"], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    try:
        for pr in progs:
            assert pr.stdout.readline().startswith("tick 0")
        out = tmp("attach2.data")
        r = ct("record", "-o", out, "-p", str(progs[0].pid), "-p", str(progs[1].pid), "--duration", "300ms",
               "-F", "c_fib")
        assert r.returncode == 0, r.stderr
        pids = {c["pid"] for c in replay_json(out)}
        assert pids == {progs[0].pid, progs[1].pid}, pids
        for pr in progs:
            # unharmed after detach: still ticking, c_fib still right
            last = pr.stdout.readline()
            assert last.startswith("tick ") and last.split()[2] == "55", last
            assert pr.poll() is None
    finally:
        for pr in progs:
            if pr.poll() is None:
                pr.kill()


def test_follow_fork_and_exec():
    from lib import record, trees
    p, out = record([fixture("c_core"), "forkexec", fixture("go_core"), "fib", "3"], "--follow",
                    "-F", "c_fib", "-F", "main.*")
    assert p.stdout == "child 3\nfib 2\nparent 1 0\n", p.stdout
    calls = replay_json(out)
    pids = sorted({c["pid"] for c in calls})
    assert len(pids) == 2, pids
    forest = trees(calls)
    by_pid = {}
    for k, roots in forest.items():
        by_pid.setdefault(k[0], []).extend(r.shape() for r in roots)
    parent, child = (pids[0], pids[1]) if "c_fib(c_fib,c_fib)" in by_pid[pids[0]] else (pids[1], pids[0])
    # the parent: c_fib(2); the child: c_fib(4), then the exec'd Go program
    assert by_pid[parent] == ["c_fib(c_fib,c_fib)"], by_pid
    assert by_pid[child][0] == "c_fib(c_fib(c_fib(c_fib,c_fib),c_fib),c_fib(c_fib,c_fib))", by_pid
    go = [s for s in by_pid[child] if s.startswith("go_core:main.main")]
    # the exec'd Go program's runtime layout is known too: real goroutine ids
    assert {c["goid"] for c in calls if c["func"].startswith("go_core:")} == {1}
    assert go == ["go_core:main.main(go_core:main.fib(go_core:main.fib(go_core:main.fib,go_core:main.fib),go_core:main.fib))"], by_pid[child]


def test_progress_line_only_on_a_tty():
    import pty
    out = tmp("progress.data")
    # not a tty: nothing on stderr
    r = ct("record", "-o", out, "--", fixture("c_core"), "slow", "40")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # a tty: one status line, rewritten in place
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(CT, [CT, "record", "-o", out, "--", fixture("c_core"), "slow", "40"])
    data = read_pty(fd)
    os.waitpid(pid, 0)
    text = data.decode(errors="replace")
    assert "\r\x1b[K" in text and "events" in text and "lost 0" in text and "MiB" in text, text[-500:]


def test_perf_event_fallback():
    # kernels before 6.6 lack uprobe_multi: one perf-event uprobe per site
    from lib import record, trees
    p, out = record([fixture("c_core"), "fib", "4"], "-F", "c_fib", env={"CALLTRACE_PERF_EVENTS": "1"})
    assert "no uprobe_multi" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    shapes = [r.shape() for roots in trees(replay_json(out)).values() for r in roots]
    assert shapes == ["c_fib(c_fib(c_fib(c_fib,c_fib),c_fib),c_fib(c_fib,c_fib))"], shapes
    assert our_links() == []


def test_ignored_signals_stay_ignored():
    # Started with SIGHUP and SIGINT ignored (nohup; a background job of a
    # script), the program keeps them ignored as it would untraced: a
    # hangup does not kill it.
    def ignore():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    prog = [fixture("c_procs"), "sigign", "0"]
    plain = subprocess.run(prog, preexec_fn=ignore, capture_output=True, text=True, timeout=60)
    assert plain.stdout.splitlines() == ["SIGHUP ignored", "SIGINT ignored", "SIGTERM default",
                                         "SIGPIPE default", "survived"], plain.stdout
    p = subprocess.run([CT, "record", "-o", tmp("sigign.data"), "--", *prog], preexec_fn=ignore,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == plain.stdout, (p.returncode, p.stdout, p.stderr)
    # and without: the defaults, as untraced (SIGHUP kills it, and record dies by it too)
    p = subprocess.run([CT, "record", "-o", tmp("sigdfl.data"), "--", *prog], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == -signal.SIGHUP and "survived" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert "SIGHUP default" in p.stdout, p.stdout
def test_follow_c_launcher_of_go_shows_goroutines():
    # Language is per function: the text tree of a C program that execs a Go
    # one has the GID column, "-" on the C calls and the goroutine on the Go ones
    from lib import record
    _, out = record([fixture("c_core"), "forkexec", fixture("go_core"), "fib", "3"], "--follow",
                    "-F", "c_fib", "-F", "main.*", out=tmp("follow-gid.data"))
    p = ct("replay", out)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["#", "DURATION", "TID", "GID", "FUNCTION"], lines[0]
    gid = {}
    for line in lines[1:]:
        left, _, right = line.partition("| ")
        name = right.strip().split("(")[0]
        if name.startswith(("c_fib", "go_core:main.")):
            gid.setdefault(name.split(":")[0] if ":" in name else name, set()).add(left.split()[-1])
    assert gid == {"c_fib": {"-"}, "go_core": {"1"}}, gid


def _meta(path, key):
    """A metadata value of `calltrace info PATH` (its first word), or None."""
    for line in ct("info", path).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == key:
            return parts[1]
    return None


def _elf_entry(path):
    import struct
    with open(path, "rb") as f:
        head = f.read(64)
    assert head[:4] == b"\x7fELF" and head[4] == 2, path
    return struct.unpack_from("<Q", head, 24)[0]


def test_warm_up_probe_on_the_way_to_main():
    """A process's first probe hit and first single-step cost more than the
    others (0.1-0.5 ms here): a probe between the program's entry point and
    main pays for them before any traced call is open.  It is hit once per
    process that starts a traced binary (launched, or exec'd under
    --follow), not at all when calltrace attaches to a running one."""
    for prog, args, flt in (("c_core", ["fib", "5"], "c_fib"), ("go_core", ["fib", "5"], "main.fib")):
        exe = fixture(prog)
        out = tmp(f"warm-{prog}.data")
        p = ct("record", "-v", "-o", out, "-F", flt, "--", exe, *args)
        assert p.returncode == 0, p.stderr
        line = next((x for x in p.stderr.splitlines() if "warm-up probe at" in x), None)
        assert line, p.stderr
        at = int(line.split("warm-up probe at ")[1].split()[0], 16)
        if prog == "go_core":
            # _rt0_amd64_linux is `jmp _rt0_amd64`, whose first instruction
            # is the first one stepped
            syms = subprocess.run(["nm", exe], capture_output=True, text=True).stdout.split("\n")
            assert at == int(next(x for x in syms if x.endswith(" T _rt0_amd64")).split()[0], 16), hex(at)
        else:
            # glibc's _start: `[endbr64;] xor %ebp,%ebp`: the xor
            entry = _elf_entry(exe)
            dis = subprocess.run(["objdump", "-d", "--start-address=%#x" % entry,
                                  "--stop-address=%#x" % (entry + 8), exe],
                                 capture_output=True, text=True).stdout
            xor = next(x for x in dis.splitlines() if "xor" in x and "%ebp,%ebp" in x)
            assert at == int(xor.split(":")[0], 16), (hex(at), dis)
        assert _meta(out, "warm_ups") == "1", ct("info", out).stdout
        plain = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        assert p.stdout == plain.stdout
        assert our_links() == []
    # --follow: the launched C program and the Go program its child execs
    p, out = record([fixture("c_core"), "forkexec", fixture("go_core"), "fib", "3"], "--follow",
                    "-F", "c_fib", "-F", "main.*")
    assert _meta(out, "warm_ups") == "2", ct("info", out).stdout
    # attached to a running process: it is past its start
    with ticking_c_core(100) as prog:
        out = tmp("warm-attach.data")
        record_attached(prog, out, "200ms")
        assert _meta(out, "warm_ups") is None
        prog.stdout.read()
        assert prog.wait(timeout=20) == 0
    assert our_links() == []


def pid_links(holder, pid):
    """The uprobe_multi links process HOLDER has open that were made for
    process PID alone (fdinfo's pid), each its path."""
    paths = []
    d = "/proc/%d/fdinfo" % holder
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                info = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue
        if info.get("link_type") == "uprobe_multi" and info.get("pid") == str(pid):
            paths.append(info.get("path"))
    return paths


def test_probes_of_a_process_that_exec_d_another_program_go():
    """record -p of two processes traced with a library's functions, one of
    which execs another program: its recording ends there, and the links
    made for it (its program's and libc's) are closed then -- they stayed
    until the recording ended (here: until the other process is done), and
    the new program paid a trap at every libc probe it ran.  It runs on
    untouched; the other process is traced on, its links in."""
    progs = [subprocess.Popen([fixture("c_procs"), "floodexec", "1", *argv], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
             for argv in (["/bin/sleep", "60"], ["/bin/true"])]
    out = tmp("exec-links.data")
    rec = None
    try:
        for p in progs:
            assert p.stdout.readline() == "ready\n"
        rec = subprocess.Popen([CT, "record", "-o", out, "-F", "c", "-F", "libc.so.6:malloc",
                                "-p", str(progs[0].pid), "-p", str(progs[1].pid)], stderr=subprocess.PIPE, text=True)
        head = ""
        while "calltrace: tracing 2 processes" not in head:
            line = rec.stderr.readline()
            assert line, head
            head += line
        for p in progs:
            links = pid_links(rec.pid, p.pid)
            assert any("libc" in path for path in links) and any("c_procs" in path for path in links), links
        progs[0].stdin.write("go\n")
        progs[0].stdin.flush()
        # (a wait for what the exec leads to, not a measure of how soon)
        deadline = time.time() + 30
        while pid_links(rec.pid, progs[0].pid) and time.time() < deadline:
            time.sleep(0.05)
        assert pid_links(rec.pid, progs[0].pid) == [], pid_links(rec.pid, progs[0].pid)
        assert os.readlink("/proc/%d/exe" % progs[0].pid) == os.path.realpath("/bin/sleep")
        assert len(pid_links(rec.pid, progs[1].pid)) == len(links), pid_links(rec.pid, progs[1].pid)
        progs[1].stdin.write("go\n")
        progs[1].stdin.flush()
        assert progs[1].wait(timeout=20) == 0
        _, err = rec.communicate(timeout=30)
        assert rec.returncode == 0, head + err
        assert re.search(r"process %d exec'd \S*sleep" % progs[0].pid, head + err), head + err
        assert progs[0].poll() is None  # (sleep runs on)
        assert our_links() == []
    finally:
        for p in (*progs, rec):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    calls = sorted((c["pid"], c["func"]) for c in replay_json(out))
    assert calls == sorted([(progs[0].pid, "c"), (progs[1].pid, "c")]), calls
