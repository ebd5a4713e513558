"""Helpers for the end-to-end tests: run calltrace on fixture programs,
parse its outputs with real parsers (json), and rebuild call trees."""
import json
import os
import re
import struct
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CT = os.path.join(ROOT, "build", "calltrace")
FIX = os.path.join(ROOT, "build", "fixtures")
TMP = tempfile.mkdtemp(prefix="calltrace-test-")
FORMAT_VERSION = 21  # CT_FILE_VERSION (format/tracefile.h)


class Skip(Exception):
    """A test of a known failure whose fix is not in this change: tests/run.py
    reports it as skipped, with the reason, unless CT_RUN_SKIPPED=1."""


def known_failure(reason):
    """Decorates a test that fails on the current code for REASON (what has
    to change, and where): skipped, but run (and failing) with
    CT_RUN_SKIPPED=1, so that whoever fixes it sees it pass."""
    def wrap(fn):
        def test(*a, **kw):
            if os.environ.get("CT_RUN_SKIPPED") != "1":
                raise Skip(reason)
            return fn(*a, **kw)
        test.__name__, test.__doc__ = fn.__name__, fn.__doc__
        return test
    return wrap


def fixture(name):
    path = os.path.join(FIX, name)
    assert os.path.exists(path), f"fixture {name} was not built"
    return path


def uvar(buf, i):
    """The unsigned LEB128 varint at BUF[I] (docs/FORMAT.md), and where the
    next field starts."""
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def record_chunks(path):
    """A record file's chunks in order, as (type, payload) (docs/FORMAT.md)."""
    raw = open(path, "rb").read()
    off = struct.unpack_from("<I", raw, 12)[0]
    while off + 16 <= len(raw):
        typ, n = struct.unpack_from("<II", raw, off)
        yield typ, raw[off + 16:off + 16 + n]
        off += 16 + n


def run(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def read_pty(fd, text=b"", until=None, timeout=60):
    """TEXT and what a pseudo-terminal's master FD gives after it: up to
    UNTIL (bytes) if given, else to its end (the other side all closed).
    An AssertionError after TIMEOUT seconds without output."""
    import select
    while until is None or until not in text:
        if not select.select([fd], [], [], timeout)[0]:
            raise AssertionError(f"nothing more on the terminal in {timeout} s: {text[-500:]!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # (EIO: no process has it open any more)
            break
        if not chunk:
            break
        text += chunk
    return text


def tmp(name):
    return os.path.join(TMP, name)


def ct(*args, timeout=120, **kw):
    return run([CT, *args], timeout=timeout, **kw)


def info_stat(info, key):
    """The value of stat (or metadata) KEY in `calltrace info`'s output
    INFO; fails with the key's name when the trace has none."""
    m = re.search(rf"^{re.escape(key)}\s+(.*)$", info, re.M)
    assert m, f"the trace has no {key!r} stat (calltrace info):\n{info}"
    return m[1].strip()


def info_count(info, key):
    """The number stat KEY of INFO starts with (e.g. probe_hits)."""
    val = info_stat(info, key)
    assert val.split() and val.split()[0].isdigit(), f"stat {key!r} is not a count: {val!r}"
    return int(val.split()[0])


def record(prog_args, *flags, out=None, check=True, env=None):
    """Records PROG_ARGS; returns (completed process, record file path)."""
    out = out or tmp("rec.data")
    p = ct("record", "-o", out, *flags, "--", *prog_args,
           env=dict(os.environ, **env) if env else None)
    if check:
        assert p.returncode == 0, f"record failed ({p.returncode}): {p.stderr.strip()}"
    return p, out


_recorded = {}


def attach_verbose(pid, *flags):
    """calltrace record -v FLAGS -p PID, started and returned once attached
    (-v says so: a fixed sleep raced start-up on a loaded machine), with
    its stderr so far."""
    rec = subprocess.Popen([os.path.join(ROOT, "build", "calltrace"), "record", "-v", *flags, "-p", str(pid)],
                           stderr=subprocess.PIPE, text=True)
    head = ""
    while "attached " not in head:
        line = rec.stderr.readline()
        assert line, head
        head += line
    return rec, head


def recorded(name, prog, *args, exit_status=0):
    """Records fixture PROG ARGS once per test run (several tests, of any
    file, read the same record); NAME names the file, with a number of its
    own: two uses of one NAME with other ARGS (fib 12, fib 14) shared one
    file, and the one recorded first read the other's calls."""
    key = (prog, args)
    if key not in _recorded:
        p, out = record([fixture(prog), *args], out=tmp(f"rec-{name}-{len(_recorded)}.data"), check=False)
        assert p.returncode == exit_status, f"record {name} exited {p.returncode}: {p.stderr.strip()}"
        _recorded[key] = out
    return _recorded[key]


def replay_json(path, *flags):
    p = ct("replay", "--format=json", *flags, path)
    assert p.returncode == 0, f"replay failed: {p.stderr.strip()}"
    return [json.loads(line) for line in p.stdout.splitlines()]


class Node:
    def __init__(self, call):
        self.call = call
        self.children = []

    @property
    def func(self):
        return self.call["func"]

    def shape(self, short=True):
        """'f(g,h(i))': the call tree's structure, names only."""
        name = self.func.rsplit("/", 1)[-1] if short else self.func
        if not self.children:
            return name
        return name + "(" + ",".join(c.shape(short) for c in self.children) + ")"

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def thread_key(call):
    if call.get("stack") == "system":  # C under cgo: its own stack per thread
        return (call["pid"], "s", call["tid"])
    if call["goid"] is not None:
        return (call["pid"], "g", call["goid"])
    if call.get("context"):  # another stack the thread switched to: its own sequence
        return (call["pid"], "t", call["tid"], call["context"])
    return (call["pid"], "t", call["tid"])


def trees(calls):
    """Per goroutine/thread: the list of root Nodes, from JSON Lines calls
    (entry order, depth).  Checks that depths are consistent."""
    out, stacks = {}, {}
    for c in calls:
        if "func" not in c:
            continue
        k = thread_key(c)
        st = stacks.setdefault(k, [])
        assert c["depth"] <= len(st), f"depth jumps from {len(st)} to {c['depth']}: {c}"
        del st[c["depth"]:]
        n = Node(c)
        if st:
            st[-1].children.append(n)
        else:
            out.setdefault(k, []).append(n)
        st.append(n)
    return out


def all_nodes(forest):
    for roots in forest.values():
        for r in roots:
            yield from r.walk()


def bpf_holders():
    """From /proc/*/fdinfo: BPF link id -> pids holding it open, and BPF
    program id -> pids holding the program itself open (a link's fdinfo
    names its program too: those are not counted as holding it)."""
    links, progs = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fdinfo")
        except OSError:
            continue
        for fd in fds:
            # (one closed meanwhile, the listing's own among them: the next)
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    info = dict(line.split(":", 1) for line in f if ":" in line)
                if "link_id" in info:
                    links.setdefault(int(info["link_id"]), set()).add(int(pid))
                elif "prog_id" in info and "prog_type" in info:
                    progs.setdefault(int(info["prog_id"]), set()).add(int(pid))
            except (OSError, ValueError):
                continue
    return links, progs


def our_links():
    """Links of calltrace's BPF programs that outlive a tracer: held by a
    process that is not a running calltrace (e.g. a traced program that
    inherited them), or by nobody (pinned).  A calltrace still running
    holds its own links legitimately (other test runs on the machine), and
    a link whose last fd just closed lingers briefly while the kernel frees
    it: only links still there a moment later count."""
    left = _links_left()
    if left:
        time.sleep(1.0)
        again = {l["id"] for l in _links_left()}
        left = [l for l in left if l["id"] in again]
    return left


def _links_left():
    """A running calltrace is told by what it holds, not by its name (a
    copy named otherwise, the base binary a helper runs beside the tests,
    is one; a traced program named calltrace is not): the tracer that made
    a link holds the link's program open (its skeleton's descriptor) until
    its links are closed, and a process that only inherited or was passed
    the link does not."""
    progs = json.loads(run(["bpftool", "-j", "prog", "list"]).stdout or "[]")
    ours = {p["id"] for p in progs if p.get("name", "").startswith("ct_")}
    links = json.loads(run(["bpftool", "-j", "link", "list"]).stdout or "[]")
    link_holders, prog_holders = bpf_holders()
    left = []
    for l in links:
        if l.get("prog_id") not in ours:
            continue
        held_by = link_holders.get(l["id"], set())
        tracers = prog_holders.get(l["prog_id"], set())
        if not held_by or any(p not in tracers for p in held_by):
            left.append(dict(l, owners=sorted(held_by)))
    return left


# A tree line's note of its call's time off CPU, which the scheduler decides
# run by run: " /* off CPU 1.2 us, preempted */", or "; off CPU ..." after
# another note.  without_off_cpu(line) leaves it out.
OFF_CPU_NOTE = re.compile(r" /\* off CPU [^*]* \*/$|; off CPU [^*]*(?= \*/$)")


def without_off_cpu(line):
    return OFF_CPU_NOTE.sub("", line)


TEXT_LINE = re.compile(
    r"^(?P<dur> +[0-9]+\.[0-9]{3} (?:us|ms| s| m| h)| +<[ 0-9][0-9]\.[0-9]{3} (?:us|ms| s)"
    r"|<=[ 0-9][0-9]\.[0-9]{3} (?:us|ms| s| m| h)| +) \[ *(?P<tid>\d+)\](?: +(?P<gid>\d+|-))? \| (?P<indent> *)(?P<body>.*)$")


def parse_text_tree(text, names):
    """Parses replay's text tree into per-thread root Nodes (func names and
    nesting), to compare with the JSON view of the same file.  NAMES: the
    function names that may appear (Go names contain parentheses)."""
    by_len = sorted(names, key=len, reverse=True)
    lines = text.splitlines()
    assert lines and lines[0].startswith("# DURATION"), f"no header: {lines[:1]}"
    forest, stacks = {}, {}
    for line in lines[1:]:
        if not line.strip() or line.startswith("/*") or line.startswith("# goroutine ") or \
                line.startswith("# durations ") or line.startswith('# "< N"') or line.startswith('# "<=N"'):
            continue
        m = TEXT_LINE.match(line)
        assert m, f"unparsable tree line: {line!r}"
        key = m["gid"] if m["gid"] not in (None, "-") else "t" + m["tid"]
        depth = len(m["indent"]) // 2
        body = m["body"]
        st = stacks.setdefault(key, [])
        if body.startswith("}"):
            assert len(st) == depth + 1, f"close at depth {depth} with {len(st)} open: {line!r}"
            st.pop()
            continue
        func = next((f for f in by_len if body.startswith(f + "(")), None)
        assert func, f"unknown function in: {line!r}"
        assert depth == len(st), f"entry at depth {depth} with {len(st)} open: {line!r}"
        opens = body.endswith(" {") or body.endswith("{ /* tail call */")
        assert opens or re.search(r"\);( /\*.*\*/)?$|\) = .*;( /\*.*\*/)?$", body), f"bad call line: {line!r}"
        n = Node({"func": func, "leaf": not opens})
        (st[-1].children if st else forest.setdefault(key, [])).append(n)
        if opens:
            st.append(n)
    return forest


# An option as --help and the man page write it: -F, --max-size (not x86-64).
HELP_OPTION = re.compile(r"(?<![\w.-])(--?[A-Za-z][\w-]*)")


def ct_commands():
    """The commands 'calltrace --help' lists."""
    out = ct("--help").stdout
    block = out.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    names = [line.split()[0] for line in block.splitlines()]
    assert "record" in names and "replay" in names, out
    return names


def help_option_lines(help_text):
    """(the option column, the option names in it) of each option line of a
    --help text: '  -o, --output FILE   ...' gives ('-o, --output FILE', ['-o', '--output'])."""
    for line in help_text.splitlines():
        m = re.match(r"^ {1,10}(-\S.*?)(?:  |$)", line)
        if m:
            yield m.group(1), HELP_OPTION.findall(m.group(1))
