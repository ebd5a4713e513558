"""What a demanding user or a hostile environment does to calltrace: its own
PID, outputs that stop taking writes (a full disk, `| head`, a closed
stdout), a binary cut short.  Each: one line naming the problem, a non-zero
exit, no probe left, the program unharmed."""
import os
import subprocess
import time

from lib import CT, ct, fixture, our_links, read_pty, record, tmp
from test_errors import one_line_error
from test_lifecycle import ticking_c_core


def test_own_pid_refused():
    """-p of calltrace's own PID (a script's `exec calltrace record -p $$`):
    each event it drained was calls of its own to trace, so it never caught
    up; it ignored --duration and SIGTERM and spun until SIGKILL."""
    try:
        p = subprocess.run(["sh", "-c", f'exec {CT} record -o {tmp("self.data")} -p $$ --duration 200ms'],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("calltrace tracing itself did not end")
    one_line_error(p, "is this calltrace itself", "give the PID of the program to trace")
    assert not os.path.exists(tmp("self.data"))


def test_live_output_closed():
    """`calltrace live -p PID | head -1`: once nobody reads the tree, live
    stops (it went on until the process exited: a server's, never), says so
    in one line and exits 1; the process runs on unharmed.  A live output
    that takes no writes at all (/dev/full, a closed stdout) stops it at
    once, the program it launched running on untraced to its own exit."""
    with ticking_c_core(1000) as prog:
        live = subprocess.Popen([CT, "live", "-o", tmp("live-head.data"), "-F", "c_fib", "-p", str(prog.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert live.stdout.readline().startswith("# DURATION")
            live.stdout.close()  # `| head -1`
            err = live.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            live.kill()
            raise AssertionError("live went on with nobody reading its output")
        assert live.returncode == 1, (live.returncode, err)
        lines = err.strip().splitlines()
        assert lines[-1] == "calltrace: cannot write the live output (Broken pipe): recording stopped, " \
                            "the process left running", err
        assert len(lines) == 2 and lines[0].startswith("calltrace: tracing 1 process"), err
        assert our_links() == []
        assert prog.poll() is None
        tick = prog.stdout.readline()
        assert tick.startswith("tick ") and tick.split()[2] == "55", tick
    # the program shares that output (untraced, its writes fail and it
    # exits 0): it runs to its end, and calltrace exits with its status
    for name, why in (("full", "No space left on device"), ("closed", "Bad file descriptor")):
        with open("/dev/full", "w") as full:
            p = subprocess.run([CT, "live", "-o", tmp(f"live-{name}.data"), "-F", "c_fib", "--", fixture("c_core"),
                                "wait", "1"], stdout=full if name == "full" else None, stderr=subprocess.PIPE,
                               text=True, timeout=60, preexec_fn=None if name == "full" else lambda: os.close(1))
        # (wait 1: a second without SIGTERM, then "timeout" and exit 1)
        assert p.returncode == 1, (name, p.returncode, p.stderr)
        assert p.stderr.strip().splitlines() == [
            f"calltrace: cannot write the live output ({why}): recording stopped, {fixture('c_core')} keeps running"], \
            (name, p.stderr)
        assert our_links() == []


def test_outputs_that_take_no_writes():
    """replay, report, info, list and dump writing to a full disk or to a
    pipe whose reader left (SIGPIPE ignored, as a supervisor or Python
    leaves it): one line saying why, exit 1.  replay and report exited 1
    without a word, info and list exited 0."""
    _, out = record([fixture("c_core"), "fib", "5"], out=tmp("nowrite.data"))
    cmds = [["replay", out], ["replay", "--format=json", out], ["report", out], ["info", out],
            ["list", fixture("c_core")], ["dump", "--folded", out], ["dump", "--chrome", out]]
    for args in cmds:
        with open("/dev/full", "w") as full:
            p = subprocess.run([CT, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
        one_line_error(p, "cannot write the output: No space left on device")
        assert p.returncode == 1, (args, p.returncode)
        r, w = os.pipe()
        os.close(r)
        p = subprocess.run([CT, *args], stdout=w, stderr=subprocess.PIPE, text=True, timeout=60,
                           restore_signals=False, preexec_fn=lambda: __import__("signal").signal(
                               __import__("signal").SIGPIPE, __import__("signal").SIG_IGN))
        os.close(w)
        one_line_error(p, "cannot write the output: Broken pipe")


def test_truncated_binary():
    """A binary cut short (a copy or download that stopped): its section
    headers past its end read as none, which said "it is stripped, and no
    separate debug file was found"; it would die of a fault untraced."""
    cut = tmp("c_core_cut")
    with open(fixture("c_core"), "rb") as f:
        head = f.read(os.path.getsize(fixture("c_core")) // 3)
    with open(cut, "wb") as f:
        f.write(head)
    os.chmod(cut, 0o755)
    for args in (["record", "-o", tmp("truncated-bin.data"), "--", cut, "fib", "3"], ["list", cut]):
        one_line_error(ct(*args), cut + " is truncated", "use a complete copy")
    assert not os.path.exists(tmp("truncated-bin.data"))


def test_low_open_file_limit():
    """Each probe link is a file descriptor: -F '*' on go_core needs ~200.
    Under a low soft limit (ulimit -Sn 64) record raises its own to the
    hard one, and the program keeps the limit it was given.  Under a low
    hard limit, one line says which limit to raise (it said "Too many open
    files" alone, or at load "kernel with BTF and BPF ring buffers are
    needed")."""
    import resource

    def limit(soft, hard):
        return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert hard == resource.RLIM_INFINITY or hard >= 1024, hard
    p = subprocess.run([CT, "record", "-o", tmp("nofile.data"), "-F", "*", "--", fixture("go_core"), "fib", "5"],
                       capture_output=True, text=True, timeout=120, preexec_fn=limit(64, hard))
    assert (p.returncode, p.stdout) == (0, "fib 5\n"), p.stderr
    p = subprocess.run([CT, "record", "-o", tmp("nofile2.data"), "--", "/usr/bin/prlimit", "--nofile", "--noheadings",
                        "--output", "SOFT"], capture_output=True, text=True, timeout=120, preexec_fn=limit(64, hard))
    assert (p.returncode, p.stdout.strip()) == (0, "64"), (p.stdout, p.stderr)
    for soft in (8, 64):
        p = subprocess.run([CT, "record", "-o", tmp("nofile3.data"), "-F", "*", "--", fixture("go_core"), "fib", "5"],
                           capture_output=True, text=True, timeout=120, preexec_fn=limit(soft, soft))
        # (under 64, too few for any recording, refused before anything is loaded)
        if soft < 64:
            one_line_error(p, f"the limit of open files is {soft} (ulimit -Hn)", "raise it")
        else:
            one_line_error(p, "Too many open files", f"the limit, ulimit -Hn, is {soft}; raise it")
        assert p.stdout == ""


def test_stopped_process():
    """-p of a process stopped all along (SIGSTOP, or held by a debugger):
    the line says so, not that the functions traced never ran (which sends
    one to change -F)."""
    import signal
    with ticking_c_core(2000) as prog:
        os.kill(prog.pid, signal.SIGSTOP)
        try:
            r = ct("record", "-o", tmp("stopped.data"), "-p", str(prog.pid), "--duration", "300ms", "-F", "c_fib")
        finally:
            os.kill(prog.pid, signal.SIGCONT)
        assert r.returncode == 0, r.stderr
        assert r.stderr.strip().splitlines()[-1] == \
            f"calltrace: no calls recorded: process {prog.pid} was stopped (SIGSTOP, Ctrl-Z) while calltrace " \
            "recorded; record while it runs (kill -CONT it)", r.stderr
        assert our_links() == []
        tick = prog.stdout.readline()  # unharmed once continued
        assert tick.startswith("tick ") and tick.split()[2] == "55", tick


def test_live_everything_in_a_big_program():
    """live -F '*' on a real Go program (lefthook 2.2.2, ~159,000 probe
    sites): each event rebuilt the reconstruction's per-site tables, in
    case the site table had grown, and `lefthook version` took 213 s under
    live for 2 s under record (the ring overflowing meanwhile in a longer
    run).  Now about as long as record, and the same calls."""
    from test_realworld import real_binaries
    path = next(p for ident, p, _, _ in real_binaries() if ident == "lefthook-2.2.2")
    t0 = time.time()
    try:
        p = ct("live", "-o", tmp("live-all.data"), "-F", "*", "--", path, "version", timeout=90)
    except subprocess.TimeoutExpired:
        raise AssertionError("live -F '*' lefthook version took over 90 s")
    took = time.time() - t0
    assert p.returncode == 0 and "2.2.2\n" in p.stdout, p.stderr[-500:]
    assert took < 60, took
    calls = [line for line in p.stdout.splitlines() if " | " in line]
    replayed = ct("replay", "--merge", tmp("live-all.data"))
    assert replayed.returncode == 0, replayed.stderr
    assert len(calls) > 50000 and abs(len(calls) - replayed.stdout.count(" | ")) < len(calls) // 100, \
        (len(calls), replayed.stdout.count(" | "))
    assert our_links() == []


def test_empty_names():
    """An empty name (a script's unset variable: -o "$OUT", -- "$PROG"):
    the program was looked up in PATH as a directory ("/root/.cargo/bin is
    a directory"), an empty file name said " does not exist" or "cannot
    create : No such file or directory"."""
    _, out = record([fixture("c_core"), "fib", "3"], out=tmp("empty-names.data"))
    for args in (["replay", ""], ["info", ""], ["list", ""], ["report", "--diff", "", out]):
        one_line_error(ct(*args), "the file name is empty: give a file name")
    for args in (["record", "-o", "", "--", fixture("c_core"), "fib", "3"], ["dump", "--folded", "-o", "", out]):
        one_line_error(ct(*args), "the output file name is empty: give a file name")
    one_line_error(ct("record", "-o", tmp("empty-prog.data"), "--", ""), "cannot find program ''")


def test_process_without_its_main_thread():
    """-p of a process whose main thread called pthread_exit while the
    others run on: its /proc/PID/exe is unreadable like a zombie's, and the
    line said it "has exited (a zombie its parent has not waited for)"."""
    src, exe = tmp("mainless.c"), tmp("mainless")
    with open(src, "w") as f:
        f.write("""#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) int leaf(int x) { __asm__ volatile(""); return x * 3 + 1; }
static void *work(void *a) { (void)a; for (int i = 0; i < 500; i++) { printf("w %d\\n", leaf(i)); fflush(stdout); usleep(10000); } return NULL; }
int main(void) { pthread_t t; pthread_create(&t, NULL, work, NULL); pthread_exit(NULL); }
""")
    b = subprocess.run(["gcc", "-O1", "-g", "-pthread", "-o", exe, src], capture_output=True, text=True)
    assert b.returncode == 0, b.stderr
    prog = subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
    try:
        assert prog.stdout.readline() == "w 1\n"
        one_line_error(ct("record", "-o", tmp("mainless.data"), "-p", str(prog.pid), "-F", "leaf"),
                       f"process {prog.pid} runs on without its main thread (it called pthread_exit)",
                       "calltrace record -- PROGRAM")
        rest = prog.communicate(timeout=60)[0]
        assert prog.returncode == 0 and rest.splitlines()[-1] == "w 1498", rest[-100:]
    finally:
        if prog.poll() is None:
            prog.kill()
    # traced from its start, it is recorded
    p, out = record([exe], "-F", "leaf", out=tmp("mainless2.data"))
    assert p.stdout.splitlines()[-1] == "w 1498", p.stdout[-100:]
    assert sum(1 for line in ct("replay", out).stdout.splitlines() if "leaf(" in line) == 500


def test_ctrl_c_before_the_program_started():
    """Ctrl-C at the terminal while calltrace still plans a big program
    (lefthook -F '*': ~159,000 sites, a second or more): the program was
    started anyway, once the probes were in, and ran to its end traced (a
    terminal's Ctrl-C is not passed on: the program gets its own, but it
    did not exist yet).  Now it is not run: one line, no file, and
    calltrace dies by SIGINT as the program would have."""
    import pty
    import signal
    from test_realworld import real_binaries
    path = next(p for ident, p, _, _ in real_binaries() if ident == "lefthook-2.2.2")
    out = tmp("ctrl-c-early.data")
    pid, fd = pty.fork()
    if pid == 0:  # (calltrace on a terminal of its own, its foreground process)
        os.execv(CT, [CT, "record", "-v", "-o", out, "-F", "*", "--", path, "version"])
    try:
        text = read_pty(fd, until=b"calltrace: target:")  # (read; the planning, the long part, follows)
        os.write(fd, b"\x03")  # Ctrl-C
        text = read_pty(fd, text)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    lines = text.decode(errors="replace").splitlines()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT, (status, text[-500:])
    assert not [l for l in lines if "2.2.2" in l and not l.startswith("calltrace: ")], ("the program ran", lines)
    assert not os.path.exists(out)
    assert [l for l in lines if "interrupted" in l] == [
        "calltrace: interrupted (SIGINT) before the program started: it was not run, and nothing was recorded"], lines
    assert our_links() == []
