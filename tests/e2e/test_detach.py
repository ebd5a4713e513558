"""Letting go of the program: every way a recording ends takes every probe
out in bounded time and leaves the program running, never stopped; and the
check that no probe is left (lib.our_links) tells calltrace's links from
leaked ones by what holds them, not by a process's name."""
import ctypes
import os
import shutil
import subprocess
import time

from lib import CT, our_links, tmp
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

