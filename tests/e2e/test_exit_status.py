"""A traced program's end as the outside world sees it: calltrace dies by the
signal that killed the program (without a core of its own), and the file
says how the program ended."""
import os
import resource
import signal
import subprocess
import time

from lib import CT, ct, fixture, our_links, replay_json, tmp, trees


def run_raw(args):
    """Runs ARGS with core dumps allowed; returns (wait status, stdout)."""
    def allow_core():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=allow_core,
                         cwd=tmp(""))
    out, err = p.communicate(timeout=60)
    return p.returncode, out.decode(), err.decode()


def exit_stat(path):
    info = ct("info", path)
    assert info.returncode == 0, info.stderr
    return next(l.split(None, 1)[1] for l in info.stdout.splitlines() if l.startswith("exit:"))


def test_dies_by_the_programs_signal():
    for how, sig in (("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)):
        out = tmp(f"sig-{how}.data")
        pid = os.fork()
        if pid == 0:
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.chdir(tmp(""))
            os.execv(CT, [CT, "record", "-o", out, "--", fixture("c_signals"), how])
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == sig, (how, status)
        # not dumpable: no core of calltrace even with RLIMIT_CORE unlimited
        assert not os.WCOREDUMP(status), f"calltrace dumped core ({how})"
        # the file was written and closed before: it says how the program ended
        assert exit_stat(out).startswith(f"killed by signal {int(sig)} "), exit_stat(out)
        calls = [(c["func"], c["status"]) for c in replay_json(out)]
        # the process ended inside both calls
        assert calls == [("main", "exited"), ("crash", "exited")], calls
        assert our_links() == []


def test_exit_code_of_a_normal_exit_unchanged():
    rc, out, err = run_raw([CT, "record", "-o", tmp("sig-ok.data"), "--", fixture("c_signals")])
    assert rc == 2 and "usage" in err, (rc, err)


def test_two_sigterms_while_the_program_is_dying():
    # timeout(1) sends SIGTERM to calltrace and to its process group: calltrace
    # sees two, the program takes a moment to die of them; the file must say
    # it was killed, not that it kept running untraced.
    out = tmp("sig-twice.data")
    p = subprocess.Popen([CT, "record", "-o", out, "--", fixture("c_signals"), "slowterm"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM, (p.returncode, err)
    assert "keeps running" not in err, err
    assert exit_stat(out).startswith("killed by signal 15 "), exit_stat(out)


def test_timeout_command():
    out = tmp("sig-timeout.data")
    r = subprocess.run(["timeout", "2", CT, "record", "-o", out, "--", fixture("c_signals"), "slowterm"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 124, (r.returncode, r.stderr)
    assert exit_stat(out).startswith("killed by signal 15 "), exit_stat(out)
    assert any(c["func"] == "work" for c in replay_json(out))


def test_a_program_that_stops_itself_stops_calltrace():
    """A program stops itself alone (kill -TSTP $$: raise(SIGTSTP), a "wait
    for the debugger" SIGSTOP). Its parent, a job-control shell (c_procs
    waitstop: WUNTRACED, then SIGCONT), saw nothing under calltrace, and
    everything waited for ever. calltrace stops by the same signal now, and
    continues the program once continued: the parent sees what it sees
    without calltrace."""
    prog = ["/bin/sh", "-c", "echo before; kill -TSTP $$; echo after"]
    for args in (prog, [CT, "record", "-o", tmp("selfstop.data"), "--", *prog],
                 [CT, "record", "-o", tmp("selfstop.data"), "--follow", "--", *prog]):
        p = subprocess.run([fixture("c_procs"), "waitstop", "0", *args], capture_output=True, text=True, timeout=60)
        # (the parent's lines and the program's interleave as they come: the
        # parent continues it before it flushes "stopped by", and reports
        # "continued" only if it looks before the program has ended)
        lines = [l for l in p.stdout.splitlines() if not l.startswith("child ") or l.startswith("child exited")]
        assert "stopped by 20" in lines and lines[-1] == "child exited 0", (args, p.stdout, p.stderr)
        assert [l for l in lines if l in ("before", "after")] == ["before", "after"], (args, p.stdout)
        assert set(lines) <= {"before", "after", "stopped by 20", "continued", "child exited 0"}, (args, p.stdout)
