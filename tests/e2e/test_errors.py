"""Bad input: one clear line on stderr, a non-zero exit, no crash, no probe
left behind."""
import os
import resource
import shutil
import subprocess

from lib import CT, ct, fixture, our_links, record, replay_json, run, tmp


def one_line_error(p, *words):
    assert p.returncode != 0 and p.returncode < 128, f"exit {p.returncode}: {p.stderr!r}"
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {p.stderr!r}"
    assert lines[0].startswith("calltrace: "), lines[0]
    for w in words:
        assert w in lines[0], f"{w!r} not in {lines[0]!r}"
    assert our_links() == [], "probe links left behind"



def test_not_root():
    # setpriv drops to nobody; the check comes before anything is loaded
    p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", CT, "record", "--",
             fixture("c_core"), "fib", "3"], cwd="/tmp")
    one_line_error(p, "root")


def test_missing_program():
    one_line_error(ct("record", "--", "/nonexistent/prog"), "/nonexistent/prog")
    one_line_error(ct("record", "--", "no-such-program-xyz"), "no-such-program-xyz", "PATH")


def test_not_an_elf():
    script = tmp("script.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(script, 0o755)
    one_line_error(ct("record", "-o", tmp("x.data"), "--", script), "not an ELF", "script (#!/bin/sh)",
                   "calltrace record [--follow] -- /bin/sh " + script)
    one_line_error(ct("list", script), "not an ELF")
    # with a library's functions asked for, the program is still what is wrong
    p = ct("record", "-o", tmp("x.data"), "-F", "libc.so.6:malloc", "--", script)
    one_line_error(p, "is a script (#!/bin/sh)")
    assert "cannot find library" not in p.stderr
    assert not os.path.exists(tmp("x.data"))


def test_a_shared_library_is_not_a_program():
    """record -- ./libfoo.so: run, a library without an entry point jumps to
    its load address and dies (SIGSEGV); calltrace ran it, said its
    functions never ran, and died by the SIGSEGV. Now one line says what it
    is and how its functions are traced. A library that is also a program
    (libc.so.6 prints its version) still runs."""
    lib = fixture("libpadlib.so")
    for cmd in ("record", "live"):
        p = ct(cmd, "-o", tmp("lib.data"), "--", lib)
        one_line_error(p, "is a shared library", f"-F '{lib}:GLOB'")
    assert not os.path.exists(tmp("lib.data"))
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
                if os.path.exists(p))
    p = ct("record", "-o", tmp("libc.data"), "-F", "__libc_*", "--", libc)
    assert p.returncode == 0 and p.stdout.startswith("GNU C Library"), (p.returncode, p.stderr)


def test_too_low_a_limit_of_open_files():
    """With the open files limit under what a recording needs, record failed
    wherever the descriptors ran out: 'pipe: Too many open files', 'cannot
    create X.data', or 'Invalid argument (kernel with BTF and BPF ring
    buffers are needed)'. One line naming the limit now, nothing run."""
    for n in (20, 30, 40, 44, 56):
        def low(n=n):
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
        p = ct("record", "-o", tmp("fds.data"), "--", fixture("c_core"), "fib", "3", preexec_fn=low)
        one_line_error(p, f"limit of open files is {n} (ulimit -Hn)")
        assert p.stdout == "", (n, p.stdout)
    assert not os.path.exists(tmp("fds.data"))


def test_unknown_function():
    p = ct("record", "-o", tmp("u.data"), "-F", "main.nosuch", "--", fixture("go_core"), "fib", "3")
    one_line_error(p, "main.nosuch", "calltrace list")
    p = ct("record", "-o", tmp("u.data"), "-F", "zzz*", "--", fixture("go_core"), "fib", "3")
    one_line_error(p, "zzz*")
    one_line_error(ct("list", fixture("c_core"), "nosuch_fn"), "nosuch_fn")


def test_ifunc_named():
    """strlen in glibc is an IFUNC symbol (its resolver's address): the
    function that runs is one of its variants, which the line names how to
    find."""
    p = ct("record", "-o", tmp("ifunc.data"), "-F", "libc.so.6:strlen", "--", "/bin/true")
    one_line_error(p, "strlen in ", "is an IFUNC", "calltrace list", "'*strlen*'")
    libc = p.stderr.split("strlen in ")[1].split(" is an IFUNC")[0]
    listed = ct("list", libc, "*strlen*")
    assert listed.returncode == 0 and "__strlen_" in listed.stdout, listed.stdout


def test_library_not_found():
    # The message wraps the resolver's reason; it once printed it garbled,
    # repeated (the wrapping read the line it was overwriting).
    p = ct("record", "-o", tmp("lib.data"), "-F", "libnothere.so:f", "--", "/bin/true")
    one_line_error(p, "cannot find library libnothere.so: ",
                   "/bin/true does not load a library named libnothere.so",
                   "give its path, e.g. -F '/usr/lib/x86_64-linux-gnu/libnothere.so:GLOB'")
    line = p.stderr.strip()
    assert line.count("libnothere.so") == 3 and line.count("cannot find library") == 1, line
    assert line.endswith("libnothere.so:GLOB'"), line
    assert not os.path.exists(tmp("lib.data"))


def test_library_named_by_the_file_its_soname_links_to():
    """-F 'libstdc++.so.6.0.30:GLOB': the file `ls` shows, which the
    program's libstdc++.so.6 links to, was 'not loaded' (only the soname or
    the path were taken); it is the same library."""
    real = os.path.basename(os.path.realpath("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"))
    assert real != "libstdc++.so.6", real  # (a versioned file behind the soname)
    p = ct("record", "-o", tmp("real.data"), "-F", f"{real}:_Znwm", "--", fixture("cpp_app"))
    assert p.returncode == 0, p.stderr
    funcs = {c["func"] for c in replay_json(tmp("real.data"))}
    assert funcs == {f"{real}:operator new"}, funcs


def test_runtime_stack_switchers_refused():
    p = ct("record", "-o", tmp("m.data"), "-F", "runtime.morestack", "--", fixture("go_core"), "fib", "3")
    one_line_error(p, "runtime.morestack", "cannot be traced")


def test_bad_record_files():
    one_line_error(ct("replay", tmp("does-not-exist.data")), "does not exist", "record")
    junk = tmp("junk.data")
    with open(junk, "wb") as f:
        f.write(os.urandom(4096))
    one_line_error(ct("replay", junk), "not a calltrace record file")
    one_line_error(ct("info", junk), "not a calltrace record file")
    # cut inside the tables
    _, good = record([fixture("c_core"), "fib", "5"], out=tmp("good.data"))
    cut = tmp("cut.data")
    with open(good, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:60])
    one_line_error(ct("replay", cut), "damaged")


def test_usage_errors():
    for args in (["record"], ["record", "-p", "abc"], ["replay", "--format=xml"], ["nosuchcmd"],
                 ["record", "--duration", "soon", "--", "true"]):
        p = ct(*args)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.strip(), args
    # a bare number was nanoseconds: "--duration 10" traced for 10 ns, then
    # said the traced functions never ran
    one_line_error(ct("record", "--duration", "10", "--", "true"), "--duration", "unit", "'10'")
    # nothing to show, said, not an empty output
    one_line_error(ct("replay", "--since", "5s", "--until", "1s", "nosuch.data"), "--until", "--since")
    one_line_error(ct("report", "--histogram", "", "nosuch.data"), "--histogram")


def test_a_duration_too_short_for_any_call_says_so():
    """--duration 1ns ends before sleep's nanosleep: not 'the functions
    traced never ran' (they do, after the recording), but that the time was
    too short."""
    p = ct("record", "-o", tmp("short.data"), "--duration", "1ns", "-F", "libc.so.6:*nanosleep*", "--",
           "/bin/sleep", "0.3")
    assert p.returncode == 0, p.stderr
    assert "no calls recorded in --duration" in p.stderr and "never ran" not in p.stderr, p.stderr
    # seconds: the unit is padded for the tree's column, not for this line
    sleeper = subprocess.Popen(["/bin/sleep", "30"])
    try:
        p = ct("record", "-o", tmp("short.data"), "--duration", "1s", "-p", str(sleeper.pid))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert "no calls recorded in --duration 1.000 s:" in p.stderr, p.stderr


def test_info_shows_the_command_line_s_control_characters_escaped():
    """The command line is the traced program's arguments: an escape
    sequence there must not reach the terminal of whoever runs info."""
    p, out = record([fixture("c_core"), "fib", "2\x1b]0;owned\x07"], check=False)
    line = next(ln for ln in ct("info", out).stdout.splitlines() if ln.startswith("command:"))
    assert "\x1b" not in line and "\x07" not in line, repr(line)
    assert line.endswith("fib 2\\x1b]0;owned\\x07"), repr(line)


def test_bad_options_are_one_line_naming_them():
    """Every command: an unknown option, a missing value, an ambiguous
    prefix, a value for an option that takes none, a missing program or
    binary are one line naming what is wrong and pointing to the command's
    --help, exit 2 (record and live printed their 80-line usage, replay and
    list theirs)."""
    cases = [(["--bogus"], "unknown option '--bogus'"), (["-Q"], "unknown option '-Q'"),
             (["--bogus=1"], "unknown option '--bogus=1'"), (["--help=1"], "option '--help' takes no value")]
    needs_value = {"record": "-o", "live": "-F", "replay": "-F", "report": "-s", "dump": "-o", "list": "-N"}
    ambiguous = {"record": "--max", "live": "--max", "replay": "--t", "report": "--t", "dump": "--otlp-",
                 "list": "--e"}
    for cmd in ("record", "live", "replay", "report", "dump", "list", "info"):
        mine = list(cases)
        if cmd in needs_value:
            mine.append(([needs_value[cmd]], "option '%s' needs a value" % needs_value[cmd]))
        if cmd in ambiguous:
            mine.append(([ambiguous[cmd], "x"], "option '%s' is ambiguous" % ambiguous[cmd]))
        for args, words in mine:
            prog = ["--", "true"] if cmd in ("record", "live") and "needs a value" not in words else []
            p = ct(cmd, *args, *prog)
            assert p.returncode == 2, (cmd, args, p.returncode, p.stderr)
            one_line_error(p, cmd + ": " + words, "calltrace %s --help" % cmd)
    for cmd, words in (("record", "give either a program to run or -p PID"),
                       ("live", "give either a program to run or -p PID"), ("list", "which binary?")):
        p = ct(cmd)
        assert p.returncode == 2, (cmd, p.stderr)
        one_line_error(p, words, "calltrace %s --help" % cmd)
    # an empty -F or -N (a variable that was not set): it said "no function
    # named  in PROGRAM"
    for cmd, opt in (("record", "-F"), ("live", "-F"), ("record", "-N"), ("list", "-F"), ("list", "-N")):
        prog = ["--", "true"] if cmd != "list" else ["/bin/true"]
        p = ct(cmd, opt, "", *prog)
        assert p.returncode == 2, (cmd, opt, p.returncode, p.stderr)
        one_line_error(p, "%s needs a function name or a glob" % opt, "not ''")
    for cmd in ("replay", "info"):
        p = ct(cmd, "a.data", "b.data")
        assert p.returncode == 2, (cmd, p.stderr)
        one_line_error(p, "one record file at most, not 'a.data' and 'b.data'")
    # an option after the file still counts (info took it for the file)
    _, out = record([fixture("c_core"), "fib", "3"], out=tmp("opts.data"))
    p = ct("info", out, "--calls")
    assert p.returncode == 0 and "returned" in p.stdout, p.stderr


def test_cannot_execute():
    noexec = tmp("noexec")
    shutil.copy(fixture("c_core"), noexec)
    os.chmod(noexec, 0o644)
    p = ct("record", "-o", tmp("ne.data"), "--", noexec, "fib", "3")
    one_line_error(p, "cannot execute")


def test_full_disk_keeps_what_was_written():
    """The trace's disk fills up: the program runs on unharmed, record says
    so once and exits 1, and the file holds a readable beginning."""
    mnt = tmp("smallfs")
    os.makedirs(mnt, exist_ok=True)
    assert run(["mount", "-t", "tmpfs", "-o", "size=256k", "ctsmall", mnt]).returncode == 0
    try:
        out = os.path.join(mnt, "x.data")
        p = ct("record", "-o", out, "--", fixture("go_core"), "fib", "22")
        assert "fib 17711" in p.stdout, p.stdout  # the program's own output
        assert p.returncode == 1, (p.returncode, p.stderr)
        said = [l for l in p.stderr.splitlines() if out in l]
        assert len(said) == 1 and "No space left on device" in said[0], p.stderr
        assert our_links() == [], "probe links left behind"
        assert os.stat(out).st_mode & 0o777 == 0o600
        info = ct("info", out)
        assert info.returncode == 0 and "ends early (tracer killed, or its disk full?)" in info.stdout, info.stdout
        rp = ct("replay", out)
        assert rp.returncode == 0 and "main.fib(" in rp.stdout, rp.stderr
        assert "ends early (tracer killed, or its disk full?)" in rp.stdout, rp.stdout[-300:]
        # full before the program starts: it is not started, one line says why
        p = ct("record", "-o", os.path.join(mnt, "y.data"), "--", fixture("go_core"), "fib", "22")
        assert p.returncode == 1 and "fib 17711" not in p.stdout, (p.returncode, p.stdout)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "No space left on device" in lines[0], p.stderr
        assert our_links() == [], "probe links left behind"
        # live without -o writes to $TMPDIR, which -o does not name: the
        # line said "record with -o to another disk"
        p = ct("live", "--", fixture("go_core"), "fib", "22", env=dict(os.environ, TMPDIR=mnt))
        assert p.returncode == 1 and "fib 17711" not in p.stdout, (p.returncode, p.stdout)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and f"free space in {mnt}, or give live -o FILE" in lines[0], p.stderr
    finally:
        run(["umount", mnt])


def rename_at_fork_shim():
    """A library preloaded into calltrace that, in the parent of its first
    fork (the program's, after calltrace read the program and before it
    attaches), renames $CT_TEST_RENAME_FROM over $CT_TEST_RENAME_TO: the
    program rebuilt meanwhile by a build running beside it (two test runs
    in one tree: each relinks every fixture).  The program does not inherit
    it."""
    src, so = tmp("rename_at_fork.c"), tmp("rename_at_fork.so")
    with open(src, "w") as f:
        f.write("""#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static char from[4096], to[4096];
__attribute__((constructor)) static void init(void)
{
	if (getenv("CT_TEST_RENAME_FROM") && getenv("CT_TEST_RENAME_TO")) {
		snprintf(from, sizeof(from), "%s", getenv("CT_TEST_RENAME_FROM"));
		snprintf(to, sizeof(to), "%s", getenv("CT_TEST_RENAME_TO"));
	}
	unsetenv("LD_PRELOAD");
	unsetenv("CT_TEST_RENAME_FROM");
	unsetenv("CT_TEST_RENAME_TO");
}
pid_t fork(void)
{
	pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	pid_t r = real();
	if (r > 0 && *from) {
		rename(from, to);
		*from = 0;
	}
	return r;
}
""")
    b = run(["gcc", "-shared", "-fPIC", "-o", so, src, "-ldl"])
    assert b.returncode == 0, b.stderr
    return so


def test_program_rewritten_while_calltrace_reads_it():
    """The program's file replaced by another after calltrace planned its
    probes and before it attaches them: its offsets are not that file's (the
    kernel refuses those past its end with EINVAL, which said "uprobe_multi
    links need Linux 6.6", or probes whatever is there now).  One line says
    what happened, the program does not run, no probe is left.  A new file
    of the same bytes (a build writing what it wrote before) is recorded
    as if nothing happened."""
    shim = rename_at_fork_shim()
    prog = tmp("rewritten_prog")
    plain = run([fixture("c_core"), "fib", "5"])
    for other, same in ((fixture("cxx_pads"), False), (fixture("c_core_nopie"), False), (fixture("c_core"), True)):
        shutil.copy(fixture("c_core"), prog)
        new = tmp("rewritten_prog.new")
        shutil.copy(other, new)
        env = dict(os.environ, LD_PRELOAD=shim, CT_TEST_RENAME_FROM=new, CT_TEST_RENAME_TO=prog)
        p = run([CT, "record", "-o", tmp("rewritten.data"), "--", prog, "fib", "5"], env=env)
        assert not os.path.exists(new), "the shim did not run"
        if same:
            assert (p.returncode, p.stdout, p.stderr) == (0, plain.stdout, ""), p
            calls = [c for c in replay_json(tmp("rewritten.data")) if "func" in c]
            assert sum(c["func"] == "c_fib" for c in calls) == 15, calls
            assert our_links() == []
        else:
            one_line_error(p, prog + " changed while calltrace was reading it", "record again")
            assert p.stdout == "", (other, p.stdout)


def test_program_on_a_noexec_mount():
    """A program on a file system mounted noexec: calltrace reads and plans
    it, the exec is refused (EACCES), and the line says why."""
    mnt = tmp("noexec_mount")
    os.makedirs(mnt, exist_ok=True)
    m = run(["mount", "-t", "tmpfs", "-o", "noexec,size=64m", "tmpfs", mnt])
    assert m.returncode == 0, m.stderr
    try:
        prog = os.path.join(mnt, "c_core")
        shutil.copy(fixture("c_core"), prog)
        one_line_error(ct("record", "-o", tmp("noexec.data"), "--", prog, "fib", "3"),
                       "cannot execute " + prog, "mounted noexec")
    finally:
        run(["umount", mnt])


def test_pid_without_a_program():
    """-p of a PID that runs no program says which case it is: a kernel
    thread (kthreadd is PID 2), a zombie, or no such process."""
    import subprocess
    import time
    one_line_error(ct("record", "-p", "2", "-o", tmp("k.data")), "process 2 is a kernel thread")
    child = subprocess.Popen(["true"])
    for _ in range(200):  # not waited for: a zombie once it has exited
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    try:
        one_line_error(ct("record", "-p", str(child.pid), "-o", tmp("z.data")), f"process {child.pid} has exited",
                       "zombie")
    finally:
        child.wait()
    pid = child.pid  # gone now, and not reused this soon in practice: check
    if not os.path.exists(f"/proc/{pid}"):
        one_line_error(ct("record", "-p", str(pid), "-o", tmp("n.data")), f"there is no process {pid}")
    for name in ("k.data", "z.data", "n.data"):
        assert not os.path.exists(tmp(name))
