"""Letting go of the program: every way a recording ends takes every probe
out in bounded time and leaves the program running, never stopped; and the
check that no probe is left (lib.our_links) tells calltrace's links from
leaked ones by what holds them, not by a process's name."""
import ctypes
import os
import shutil
import subprocess
import time

from lib import CT, ct, fixture, our_links, replay_json, run, tmp
from test_errors import one_line_error
from test_lifecycle import ticking_c_core

SYS_PIDFD_GETFD = 438


def link_fds(pid):
    """Process PID's file descriptors that are BPF links."""
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                if any(line.startswith("link_id:") for line in f):
                    fds.append(int(fd))
        except OSError:
            continue
    return fds


def test_our_links_tells_a_tracer_by_what_it_holds():
    """A copy of calltrace named otherwise (the base binary a helper runs
    next to the tests) holds its links legitimately while it records: the
    check took them for left behind, by its name, and failed whatever test
    ran meanwhile.  A link passed to another process (here this one, by
    pidfd_getfd) is one left behind, whatever that process is called."""
    copy = tmp("renamed-tracer")
    shutil.copy(CT, copy)
    with ticking_c_core(1000) as prog:
        tracer = subprocess.Popen([copy, "record", "-o", tmp("renamed.data"), "-F", "c_fib", "-p", str(prog.pid)],
                                  stderr=subprocess.PIPE, text=True)
        try:
            assert tracer.stderr.readline().startswith("calltrace: tracing 1 process"), "the copy did not attach"
            fds = link_fds(tracer.pid)
            assert fds, "the copy holds no links"
            assert our_links() == [], "a tracer named otherwise taken for links left behind"
            libc = ctypes.CDLL(None, use_errno=True)
            pidfd = os.pidfd_open(tracer.pid)
            mine = libc.syscall(SYS_PIDFD_GETFD, pidfd, fds[0], 0)
            os.close(pidfd)
            assert mine >= 0, os.strerror(ctypes.get_errno())
            try:
                left = our_links()
                assert [l["owners"] for l in left] == [sorted([os.getpid(), tracer.pid])], left
            finally:
                os.close(mine)
        finally:
            tracer.terminate()
            tracer.wait(timeout=30)
        assert our_links() == []
        assert prog.poll() is None


def test_follow_names_of_programs_it_execs():
    """`record --follow -F c_fib -- sh -c PROGRAM`: the names are those of
    the program the shell runs, not the shell's; it said "no function
    named c_fib in /usr/bin/dash" and ran nothing.  A name no program it
    ran had is said at the end, in one line (exit 1, the file kept: what
    the programs did is in it)."""
    script = f"{fixture('c_core')} fib 4"
    plain = run(["sh", "-c", script]).stdout
    r = ct("record", "-o", tmp("follow-sh.data"), "--follow", "-F", "c_fib", "--", "sh", "-c", script)
    assert r.returncode == 0 and r.stdout == plain, (r.returncode, r.stdout, r.stderr)
    assert r.stderr == "", r.stderr
    fibs = [c for c in replay_json(tmp("follow-sh.data")) if c["func"] == "c_core:c_fib"]
    assert len(fibs) == 9 and all(c["status"] == "returned" for c in fibs), fibs
    for sel in (["-F", "no_such_function"], ["-F", "c_fib", "-F", "no_such_function"]):
        out = tmp("follow-sh-missing.data")
        r = ct("record", "-o", out, "--follow", *sel, "--", "sh", "-c", script)
        assert r.stdout == plain, (sel, r.stdout)
        one_line_error(r, "no function named no_such_function in", "or any program it ran")
        assert "c_fib" not in r.stderr, r.stderr
        assert os.path.exists(out)
    # without --follow the program's own names are checked at once, as before
    one_line_error(ct("record", "-o", tmp("nofollow-sh.data"), "-F", "c_fib", "--", "sh", "-c", script),
                   "no function named c_fib in")


def test_attach_names_the_file_the_process_runs():
    """`record -p PID -F NAME` where the process runs another program than
    the user thought (a shell that started it, `cmd && prog &`'s $!): the
    message names the file, not /proc/PID/exe, and so does its `calltrace
    list` hint, which then works after the process is gone too."""
    # bash has its functions' symbols; Debian's dash is stripped
    for shell, cases in (("bash", ((["-F", "main.*"], "no traceable function matches 'main.*' in {}; "
                                                      "see: calltrace list {}"),
                                   (["-F", "no_such_function"], "no function named no_such_function in {}; "
                                                                "see: calltrace list {}"))),
                         ("dash", ((["-F", "main*"], "{} has no function symbols"),))):
        sh = subprocess.Popen([shutil.which(shell), "-c", "sleep 30; true"])
        try:
            time.sleep(0.2)
            exe = os.path.realpath(f"/proc/{sh.pid}/exe")
            for sel, said in cases:
                r = ct("record", "-o", tmp("attach-names.data"), "-p", str(sh.pid), *sel)
                one_line_error(r, said.format(exe, exe))
                assert "/proc/" not in r.stderr, r.stderr
            assert sh.poll() is None and our_links() == []
        finally:
            sh.kill()
            sh.wait()


def breakpoints(pid, exe):
    """How many bytes of EXE's code in process PID differ from the file:
    the uprobes' breakpoints in it."""
    with open(exe, "rb") as f:
        image = f.read()
    n = 0
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or "x" not in fields[1] or os.path.realpath(fields[5]) != os.path.realpath(exe):
                continue
            lo, hi = (int(a, 16) for a in fields[0].split("-"))
            off = int(fields[2], 16)
            mem.seek(lo)
            now = mem.read(hi - lo)
            want = image[off:off + len(now)]
            n += sum(a != b for a, b in zip(now, want))
    return n


def test_perf_event_detach_lets_go_of_the_program_first():
    """Without uprobe_multi links (CALLTRACE_PERF_EVENTS=1) each probe is a
    perf event, and the kernel takes them out one at a time (~0.1-0.2 s
    each here, under its event_mutex).  calltrace's own probes (the
    calibration's, on itself) went out first and the program's last, so
    `record -p` stopped by Ctrl-C left the program with its probes for the
    whole of it; now the program's go first, and the end of calltrace's
    own is no wait of the program's.  Afterwards nothing is left in it."""
    import signal
    with ticking_c_core(100000) as prog:
        exe = fixture("c_core")
        assert breakpoints(prog.pid, exe) == 0
        tracer = subprocess.Popen([CT, "record", "-o", tmp("pe-detach.data"), "-F", "c_fib", "-p", str(prog.pid)],
                                  stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, CALLTRACE_PERF_EVENTS="1"))
        try:
            while "tracing 1 process" not in tracer.stderr.readline():
                pass
            probed = breakpoints(prog.pid, exe)
            assert probed > 0, "no probe in the program"
            tracer.send_signal(signal.SIGINT)
            t0 = time.time()
            gone = None
            while tracer.poll() is None:
                if gone is None and breakpoints(prog.pid, exe) == 0:
                    gone = time.time() - t0
                time.sleep(0.01)
            took = time.time() - t0
        finally:
            if tracer.poll() is None:
                tracer.kill()
            tracer.wait()
        assert tracer.returncode == 0, tracer.stderr.read()
        assert breakpoints(prog.pid, exe) == 0
        assert gone is not None, f"the program kept probes until calltrace ended ({took:.2f} s after Ctrl-C)"
        # its own go after the program's: most of the time detach takes
        assert gone < took / 2, (probed, gone, took)
        assert our_links() == []
        assert prog.poll() is None


def test_perf_event_interim_rets_say_why_they_are_not_in():
    """Without uprobe_multi links there are no links of a few sites that
    the interim RETs need: info's probes_refused said why with whatever
    errno was left ("No such file or directory").  (thread_main: a
    function passed to pthread_create, observed from its callers.)"""
    from lib import ct, record
    _, out = record([fixture("c_core"), "fib", "2"], "-F", "thread_main", out=tmp("pe-interim.data"),
                    env={"CALLTRACE_PERF_EVENTS": "1"})
    info = ct("info", out).stdout
    line = next(l for l in info.splitlines() if l.startswith("probes_refused"))
    assert "interim RETs of" in line and "not attached: Operation not supported (one perf-event uprobe per site" \
        in line, line
