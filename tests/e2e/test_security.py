"""calltrace runs as root in directories other users own: what an
unprivileged user plants at an input or output path (symlinks, FIFOs,
directories) must never make it create, write or block on anything else."""
import os
import shutil
import stat
import subprocess
import tempfile

from lib import CT, ct, fixture, run
from test_errors import one_line_error

NOBODY = 65534
TIMEOUT = 30  # nothing here may block: a FIFO that is opened would hang until this


def as_nobody(script, cwd):
    p = run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sh", "-ec", script],
            cwd=cwd)
    assert p.returncode == 0, f"planting as nobody failed: {p.stderr}"


class Planted:
    """D: a directory nobody owns, with what nobody planted in it; V: a
    root-owned place outside that must stay untouched."""

    def __init__(self):
        self.d = tempfile.mkdtemp(prefix="calltrace-sec-")
        os.chmod(self.d, 0o755)
        os.chown(self.d, NOBODY, NOBODY)
        self.v = tempfile.mkdtemp(prefix="calltrace-victim-")
        self.precious = os.path.join(self.v, "precious")
        with open(self.precious, "w") as f:
            f.write("root's file\n")
        as_nobody(f"""
            ln -s {self.v}/created calltrace.data
            ln -s {self.precious} out.json
            ln -s {self.v}/created-old rot.data.old
            printf "CALLTRC nobody's trace\n" > rot.data
            echo "nobody's notes" > notes.txt
            mkfifo -m 755 fifo
            ln -s fifo tofifo
            mkdir dir
        """, self.d)
        self.before = self.snapshot()

    def path(self, name):
        return os.path.join(self.d, name)

    def snapshot(self):
        out = {}
        for name in sorted(os.listdir(self.v)):
            st = os.lstat(os.path.join(self.v, name))
            with open(os.path.join(self.v, name), "rb") as f:
                out[name] = (st.st_mode, st.st_size, st.st_mtime_ns, f.read())
        return out

    def check_untouched(self):
        assert self.snapshot() == self.before, f"something outside was written: {sorted(os.listdir(self.v))}"
        leftovers = [n for n in os.listdir(self.d) if n.startswith(".")]
        assert not leftovers, f"temporary files left behind: {leftovers}"

    def cleanup(self):
        shutil.rmtree(self.d, ignore_errors=True)
        shutil.rmtree(self.v, ignore_errors=True)


def refused(args, *words, cwd=None):
    try:
        p = ct(*args, timeout=TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"calltrace {' '.join(args)} blocked")
    one_line_error(p, *words)


def test_planted_outputs_are_refused():
    pl = Planted()
    try:
        prog = [fixture("c_core"), "fib", "3"]
        # the default name, a dangling symlink into a root-owned directory
        refused(["record", "--", *prog], "calltrace.data", "symbolic link", cwd=pl.d)
        refused(["live", "-o", "calltrace.data", "--", *prog], "symbolic link", cwd=pl.d)
        refused(["record", "-o", pl.path("out.json"), "--", *prog], "symbolic link")
        refused(["record", "-o", pl.path("tofifo"), "--", *prog], "symbolic link")
        refused(["record", "-o", pl.path("fifo"), "--", *prog], "FIFO")
        refused(["live", "-o", pl.path("fifo"), "--", *prog], "FIFO")
        refused(["record", "-o", pl.path("dir"), "--", *prog], "directory")
        refused(["record", "-o", "/dev/null", "--", *prog], "/dev/null")

        # A real record, then dumps onto the planted paths.
        real = pl.path("real.data")
        p = ct("record", "-o", real, "--", *prog, timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        st = os.lstat(real)
        assert stat.S_ISREG(st.st_mode) and st.st_mode & 0o7777 == 0o600, oct(st.st_mode)
        for fmt in ("--chrome", "--folded", "--svg"):
            refused(["dump", fmt, "-o", pl.path("out.json"), real], "symbolic link")
            refused(["dump", fmt, "-o", pl.path("tofifo"), real], "symbolic link")
            refused(["dump", fmt, "-o", pl.path("fifo"), real], "FIFO")
        refused(["dump", "-o", pl.path("dir"), real], "directory")

        # An existing record file is kept as .old, whatever .old was: the
        # symlink planted there is replaced, not written through.
        p = ct("record", "-o", pl.path("rot.data"), "--", *prog, timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        old = pl.path("rot.data.old")
        assert not os.path.islink(old)
        with open(old) as f:
            assert f.read() == "CALLTRC nobody's trace\n"
        assert os.lstat(pl.path("rot.data")).st_mode & 0o7777 == 0o600
        # Anything else is not replaced: a file that is no record, and the
        # program itself (`record -o prog -- ./prog` took it for the output
        # and broke it), by record, live and dump alike.
        refused(["record", "-o", pl.path("notes.txt"), "--", *prog], "not a calltrace record file")
        exe = pl.path("c_core")
        shutil.copy2(fixture("c_core"), exe)
        with open(exe, "rb") as f:
            exe_bytes = f.read()
        refused(["record", "-o", exe, "--", exe, "fib", "3"], "ELF")
        refused(["live", "-o", exe, "--", exe, "fib", "3"], "ELF")
        refused(["dump", "--folded", "-o", exe, real], "ELF")
        # nor does dump replace another record file (a trace kept nowhere else)
        refused(["dump", "--folded", "-o", pl.path("rot.data"), real], "record file")
        with open(exe, "rb") as f:
            assert f.read() == exe_bytes, "the program was written"
        with open(pl.path("notes.txt")) as f:
            assert f.read() == "nobody's notes\n"
        assert not os.path.exists(exe + ".old") and not os.path.exists(pl.path("notes.txt.old"))
        os.unlink(exe)

        # dump -o over an existing regular file replaces it (a hard link to
        # it elsewhere keeps its contents: nothing is written through).
        target, alias = pl.path("mine.json"), pl.path("alias.json")
        with open(target, "w") as f:
            f.write("old\n")
        os.link(target, alias)
        p = ct("dump", "-o", target, real, timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        with open(alias) as f:
            assert f.read() == "old\n", "dump wrote through a hard link"
        with open(target) as f:
            assert f.read().startswith("{"), "dump did not replace the file"

        pl.check_untouched()
        assert os.path.islink(pl.path("calltrace.data")) and os.path.islink(pl.path("out.json"))
        assert stat.S_ISFIFO(os.lstat(pl.path("fifo")).st_mode)
    finally:
        pl.cleanup()


def test_planted_inputs_are_refused():
    pl = Planted()
    try:
        for name in ("fifo", "tofifo"):
            f = pl.path(name)
            refused(["replay", f], "FIFO")
            refused(["replay", "--format=json", f], "FIFO")
            refused(["report", f], "FIFO")
            refused(["info", f], "FIFO")
            refused(["dump", "--folded", f], "FIFO")
            refused(["list", f], "FIFO")
            refused(["record", "-o", pl.path("x.data"), "--", f], "FIFO")
        refused(["replay", pl.path("dir")], "directory")
        refused(["info", "/dev/zero"], "character device")
        refused(["replay"], "does not exist", cwd=pl.d)  # the dangling default link
        assert not os.path.exists(pl.path("x.data"))
        pl.check_untouched()
    finally:
        pl.cleanup()


def test_names_from_a_symbol_table_reach_no_terminal_raw():
    """A function name is the program's to choose (objcopy makes one with
    an escape sequence that sets the window's title): the text outputs
    show its control characters as '?'."""
    d = tempfile.mkdtemp(prefix="calltrace-names-")
    try:
        src = os.path.join(d, "odd.c")
        with open(src, "w") as f:
            f.write("__attribute__((noinline)) int odd(int x) { return x + 1; }\n"
                    "int main(void) { return odd(1) == 2 ? 0 : 1; }\n")
        obj, exe = os.path.join(d, "odd.o"), os.path.join(d, "odd")
        assert run(["gcc", "-O1", "-c", "-o", obj, src]).returncode == 0
        assert run(["objcopy", "--redefine-sym", "odd=esc\x1b]0;owned\x07name", obj]).returncode == 0
        assert run(["gcc", "-o", exe, obj]).returncode == 0
        out = os.path.join(d, "odd.data")
        p = ct("record", "-o", out, "--", exe)
        assert p.returncode == 0, p.stderr
        for args in (["replay"], ["graph"], ["report"], ["info", "--calls"]):
            text = ct(*args, out).stdout
            assert "esc?]0;owned?name" in text or args[0] == "info", (args, text)
            assert "\x1b" not in text and "\x07" not in text, (args, repr(text))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_file_names_in_messages_reach_no_terminal_raw():
    """A program's file name is anyone's to choose: a user names a binary
    with an escape sequence (set the window's title, red text), root attaches
    to it (record -p), and the line 'tracing 1 process of ...' sent it to
    root's terminal, as did the other messages naming it and list's header.
    Shown as \\xNN now, as info shows them."""
    d = tempfile.mkdtemp(prefix="calltrace-fname-")
    os.chmod(d, 0o755)
    exe = os.path.join(d, "prog\x1b]0;owned\x07\x1b[31mred")
    shown = exe.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    shutil.copy2(fixture("c_procs"), exe)
    prog = subprocess.Popen([exe, "thread", "300"], stdout=subprocess.PIPE, text=True)
    try:
        prog.stdout.readline()  # "thread TID": running
        p = ct("record", "-o", os.path.join(d, "p.data"), "-p", str(prog.pid), "--duration", "300ms",
               timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        assert f"tracing 1 process of {shown};" in p.stderr, p.stderr
        texts = [p.stderr]
        p = ct("record", "-o", os.path.join(d, "q.data"), "-F", "no_such_function", "--", exe, timeout=TIMEOUT)
        one_line_error(p, f"in {shown};")
        texts.append(p.stderr)
        p = ct("list", exe, timeout=TIMEOUT)
        assert p.returncode == 0 and p.stdout.startswith(f"# {shown}: "), p.stdout[:200]
        for text in texts + [p.stdout, p.stderr]:
            assert "\x1b" not in text and "\x07" not in text, repr(text[:300])
    finally:
        prog.kill()
        prog.wait()
        shutil.rmtree(d, ignore_errors=True)
