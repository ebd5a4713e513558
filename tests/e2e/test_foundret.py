"""Return addresses found while recording (issue 10): a traced library
function that tail-jumps to code no probe sees returns to its caller's
return address; where no planned exit probe is there (the caller is in the
program, not traced), the jump's probe reports that address the first time
and calltrace adds an exit probe there while the program runs on.  The first
call from each call site ends unobserved, the later ones return, with their
durations and results.  tests/fixtures/c/foundret: libfr.so's fr_compute is
`jmp *impl(%rip)` (lzma_crc64), fr_usage jumps to a static function
(lzma_raw_encoder_memusage); Debian's xz traced in liblzma.so.5."""
import contextlib
import os
import random
import re
import shutil
import subprocess
import time

from lib import CT, ct, fixture, record, replay_json, run, tmp, trees
from test_exits import info_stats

FUNCS = ("fr_compute", "fr_usage")


def body(text, func):
    m = re.search(rf"^[0-9a-f]+ <{func}>:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    assert m, func
    return m.group(1)


def shape(n):
    me = f"{n.func}:{n.call['status']}"
    return me + ("(" + ",".join(shape(c) for c in n.children) + ")" if n.children else "")


def said(stdout):
    """{FUNC: [results in call order]} from the program's "ret FUNC VALUE" lines."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("ret "):
            _, func, value = line.split()
            out.setdefault(func, []).append(int(value))
    return out


@contextlib.contextmanager
def overlay_of(tag, *files):
    """An overlay mounted for the test, FILES copied into its lower layer
    (as a container's image holds them): its merged directory."""
    base = tmp(tag)
    dirs = {d: os.path.join(base, d) for d in ("lower", "upper", "work", "merged")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    for f in files:
        shutil.copy2(f, dirs["lower"])
    m = run(["mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={dirs['lower']},upperdir={dirs['upper']},workdir={dirs['work']}", dirs["merged"]])
    assert m.returncode == 0, m.stderr
    try:
        yield dirs["merged"]
    finally:
        run(["umount", dirs["merged"]])


def tail_jump_calls_end_where_watched(exe, cc, tag):
    """fr_main EXE (built by CC) traced in both modes: see
    test_exits_added_where_tail_jumps_return_unwatched."""
    plain = run([exe])
    assert plain.returncode == 0, plain
    want = said(plain.stdout)
    shapes = {}
    for mode in ("auto", "ret"):
        p, out = record([exe], f"--exit={mode}", "-F", "libfr.so:fr_*", out=tmp(f"foundret-{tag}-{mode}.data"))
        assert p.stdout == plain.stdout, (cc, mode, p.stdout)
        st = info_stats(out)
        assert st["callers_found"].split()[0] == "2", (cc, mode, st)
        calls = [c for c in replay_json(out) if "func" in c]
        roots = next(iter(trees(calls).values()))
        shapes[mode] = [shape(r) for r in roots]
        for f in FUNCS:
            mine = [c for c in calls if c["func"] == f"libfr.so:{f}"]
            # each round: a direct call, one through a pointer
            assert [c["args"][0]["value"] for c in mine] == [i // 2 for i in range(12)], (cc, mode, f, mine)
            direct, via = mine[0::2], mine[1::2]
            # through its PLT: the exit probe was planned before the
            # program ran, the first call returns too
            for c, value in zip(direct, want[f][0::2]):
                assert c["status"] == "returned" and c["dur"] is not None, (cc, mode, c)
                assert c["ret"][0]["value"] == value, (cc, mode, c, value)
            # through a pointer, the first from its call site: no probe
            # was there yet
            assert via[0]["status"] == "unobserved" and via[0]["dur"] is None, (cc, mode, via[0])
            assert "ret" not in via[0], (cc, mode, via[0])
            # the program waited: the probe is in for the rest
            for c, value in zip(via[1:], want[f][3::2]):
                assert c["status"] == "returned" and c["dur"] is not None, (cc, mode, c)
                assert c["ret"][0]["value"] == value, (cc, mode, c, value)
        # what the jump went on in calls fr_leaf: inside the call,
        # once its end is observed
        for r in roots:
            if r.func == "libfr.so:fr_compute" and r.call["status"] == "returned":
                assert [k.func for k in r.children] == ["libfr.so:fr_leaf"], (cc, mode, shape(r))
    assert shapes["auto"] == shapes["ret"], (cc, shapes)


def test_exits_added_where_tail_jumps_return_unwatched():
    """fr_main calls fr_compute and fr_usage through its PLT (their return
    sites planned before it runs: BPF finds the file and offset of the
    return address, struct ct_file_ret) and through pointers (found while
    recording)."""
    for cc in ("gcc", "clang"):
        text = run(["objdump", "-d", "--no-show-raw-insn", fixture(f"foundret/{cc}/libfr.so")]).stdout
        # what the test is about: the compiler made these jumps
        assert re.match(r"\s*[0-9a-f]+:\s+jmp\s+\*0x[0-9a-f]+\(%rip\)", body(text, "fr_compute")), cc
        assert re.match(r"\s*[0-9a-f]+:\s+jmp\s+[0-9a-f]+ <usage_of", body(text, "fr_usage")), cc
        tail_jump_calls_end_where_watched(fixture(f"foundret/{cc}/fr_main"), cc, cc)


def test_tail_jump_calls_from_files_on_overlayfs_end_where_watched():
    """fr_main and libfr.so run from an overlay (as in any container): the
    return sites of fr_main's PLT calls, planned before it runs, are keyed by
    the file under the overlay, which the kernel side finds at the return
    address (bpf_find_vma) and stat() does not show: calltrace finds it in
    the mount's layers (target/overlay.c).  Before, they were keyed by the
    overlay's file, the kernel side missed them, and the first direct call
    of each function ended unobserved."""
    with overlay_of("ovl-fr", fixture("foundret/gcc/fr_main"), fixture("foundret/gcc/libfr.so")) as merged:
        tail_jump_calls_end_where_watched(os.path.join(merged, "fr_main"), "gcc", "overlay")


def test_calls_from_a_stripped_programs_static_code_end_at_exit_probes():
    """A static function of a stripped program (no symbol names it, its
    FDE bounds it) calls the program's exported un_add and un_mul through
    pointers, as python3's static code calls PyUnicode_RichCompare through
    a type's slot: that call site is found while recording and gets its
    exit probe as a named function's does (before: 'the return address is
    in no known function', and the functions' RETs were probed from then
    on).  Each function's first call, made before the probe is in, ends
    at the function's interim RET (unobserved with --no-interim); the ones
    after the program's pause at that exit probe.
    tests/fixtures/c/unnamed."""
    for exe in ("un_main", "un_main_stripped"):
        path = fixture(f"unnamed/{exe}")
        plain = run([path])
        assert plain.returncode == 0, plain
        for mode in ("auto", "ret", "lean"):
            how = ["--exit=auto", "--no-interim"] if mode == "lean" else [f"--exit={mode}"]
            p, out = record([path], *how, "-v", "-F", "un_*", out=tmp(f"unnamed-{exe}-{mode}.data"))
            assert p.stdout == plain.stdout, (exe, mode, p.stdout)
            calls = [c for c in replay_json(out) if "func" in c]
            for f in ("un_add", "un_mul"):
                mine = [c["status"] for c in calls if c["func"] == f and c["depth"] == 0]  # (from apply)
                assert len(mine) == 6, (exe, mode, f, mine)
                first = "unobserved" if mode == "lean" else "returned"
                assert mine == [first] + ["returned"] * 5, (exe, mode, f, mine)
            st = info_stats(out)
            if mode == "auto":
                assert st["interim"].startswith("2 ("), (exe, st)
            if mode != "ret":
                for f in ("un_add", "un_mul"):
                    assert re.search(rf"calls of {f} from 0x[0-9a-f]+: exit probe at 0x[0-9a-f]+", p.stderr), \
                        (exe, p.stderr)
                assert st["callers_found"] == "2 (exits added while recording; 0 refused)", (exe, st)


def test_a_jump_into_a_functions_other_part_is_no_tail_jump():
    """un_split (split.S) jumps, its frame still allocated, to its other
    part, as GCC's functions jump to their `f.cold` (python3's
    PyModule_New returns from there): no probe goes on that jump, which
    would read no return address at SP (before: a tail jump's probe, which
    reported the saved RBX -- 1, 2, 3 -- as return addresses), and its calls
    still end where they return, in both modes (--exit=ret: at return sites
    planned after its calls, as after a tail jump to untraced code)."""
    for exe in ("un_main", "un_main_stripped"):
        path = fixture(f"unnamed/{exe}")
        listing = ct("list", "-v", path).stdout
        block = re.search(r"^  0x[0-9a-f]+ .* un_split\n((?:      .*\n)+)", listing, re.M)
        assert block and "check" in block.group(1), (exe, listing)
        assert not re.search(r"^      tail ", block.group(1), re.M), (exe, block.group(1))
        for mode in ("auto", "ret"):
            p, out = record([path], f"--exit={mode}", "-v", "-F", "un_*", out=tmp(f"unsplit-{exe}-{mode}.data"))
            assert "no file the process runs code from" not in p.stderr, (exe, mode, p.stderr)
            roots = [r for rs in trees([c for c in replay_json(out) if "func" in c]).values() for r in rs]
            splits = [r for r in roots if r.func == "un_split"]
            assert len(splits) == 4, (exe, mode, [shape(r) for r in roots])
            for r in splits:
                assert r.call["status"] == "returned", (exe, mode, r.call)
                assert [k.func for k in r.children] == ["un_add"], (exe, mode, shape(r))


def test_unplanned_callers_found_with_a_library_traced():
    """fr_main's twice (its entry a branch the kernel emulates: a CHECK) is
    called directly once, then through a pointer made from main's address
    and a distance the test passes (FR_DELTA): no scan finds that call site.
    Its CHECK reports it and calltrace adds its exit probe while the
    program runs on, also with a library traced (-F 'libfr.so:fr_*'), whose
    site ids follow the program's (refused before: every such call ended
    unobserved).  The first call from there is unobserved and unplanned,
    the later ones return."""
    for cc in ("gcc", "clang"):
        exe = fixture(f"foundret/{cc}/fr_main")
        syms = {}
        for line in run(["nm", exe]).stdout.splitlines():
            parts = line.split()
            if len(parts) == 3:
                syms[parts[2]] = int(parts[0], 16)
        env = {"FR_DELTA": str(syms["twice"] - syms["main"])}
        p, out = record([exe], "-F", "twice", "-F", "libfr.so:fr_*", env=env, out=tmp(f"foundret-twice-{cc}.data"))
        want = said(p.stdout)["twice"]
        assert want == [2 * i for i in range(6)], (cc, p.stdout)
        st = info_stats(out)
        assert st.get("unplanned") == "1", (cc, st)
        calls = [c for c in replay_json(out) if c.get("func") == "twice"]
        assert len(calls) == 7 and calls[0]["status"] == "returned", (cc, calls[:2])
        via = calls[1:]
        assert via[0]["status"] == "unobserved" and via[0].get("unplanned"), (cc, via[0])
        assert all(c["status"] == "returned" and c["dur"] is not None for c in via[1:]), \
            (cc, [c["status"] for c in via])


def test_xz_liblzma_calls_end_where_found():
    """xz's calls of liblzma's lzma_crc64 (a jump through a pointer chosen at
    start-up) and lzma_raw_*_memusage (a jump to a static function) return
    into xz, which is not traced: before, every one of them ended
    unobserved (49 of 141 calls here); then only the first from each
    return address; now none."""
    data = tmp("foundret-xz.in")
    rnd = random.Random(10)
    with open(data, "wb") as f:
        f.write(bytes(rnd.getrandbits(8) for _ in range(200000)))
    p, out = record(["xz", "-k", "-f", data], "-F", "liblzma.so.5:*", out=tmp("foundret-xz.data"))
    st = info_stats(out)
    found = int(st.get("callers_found", "0").split()[0])
    calls = [c for c in replay_json(out) if "func" in c]
    trees(calls)  # depths are consistent
    unobserved = [c for c in calls if c["status"] == "unobserved"]
    crc = [c for c in calls if c["func"] == "liblzma.so.5:lzma_crc64"]
    assert len(crc) > 20, len(crc)
    # xz calls them through its PLT: their return sites are planned before
    # it runs (found while recording, the first from each was unobserved:
    # 4 of 141 calls)
    assert all(c["status"] == "returned" and c["dur"] is not None for c in crc), \
        [c["status"] for c in crc]
    assert len(unobserved) <= found <= 2, (len(unobserved), found, len(calls))
    # xz itself is untouched
    p2 = run(["sh", "-c", f"xz -d -c {data}.xz | cmp - {data}"])
    assert p2.returncode == 0, p2
    assert ct("info", out).returncode == 0


def test_no_return_site_where_a_catch_goes_on():
    """A C++ program calls libpadlib.so's pl_compute (a jump into a static
    function that throws for multiples of three) through its PLT, in a try
    whose catch joins the path right after the call.  An exit probe there
    would take the exception's way for the call's return: pl_compute(3)
    and (6) were shown returned.  Where the call's landing pad may resume
    the caller, no return site is planned (nor added while recording): the
    calls end unobserved at the jump, in both exit modes -- never
    returned for a call that threw."""
    exe = fixture("cxx_padmain")
    plain = run([exe])
    assert plain.returncode == 0 and "pl 3 -1" in plain.stdout, plain
    for mode in ("auto", "ret"):
        p, out = record([exe], f"--exit={mode}", "-F", "libpadlib.so:pl_compute", out=tmp(f"padmain-{mode}.data"))
        assert p.stdout == plain.stdout, (mode, p.stdout)
        calls = [c for c in replay_json(out) if "func" in c]
        assert [c["args"][0]["value"] for c in calls] == [1, 2, 3, 4, 5, 6], (mode, calls)
        for c in calls:
            assert c["status"] != "returned" or c["args"][0]["value"] % 3, (mode, c)
        assert all(c["status"] == "unobserved" for c in calls), (mode, calls)


def exported_calls_observed(exe, cc, tag):
    """ex_main EXE (built by CC) traced in both modes: see
    test_exported_functions_observed_from_their_callers."""
    listing = ct("list", "-v", exe).stdout
    blocks = {m.group(1): m.group(2) for m in
              re.finditer(r"^  0x[0-9a-f]+ +\S+ +\S+ +\d+ +(ex_\w+)\n((?:      .*\n)+)", listing, re.M)}
    for f in ("ex_add", "ex_mul"):
        assert re.search(r"exits: at its 2 call sites", blocks[f]), (cc, blocks[f])
        assert "it is exported" in blocks[f], (cc, blocks[f])
    assert re.search(r"exits: RET probes \(it is exported.*no direct call of it was found",
                     blocks["ex_only"]), (cc, blocks["ex_only"])
    plain = run([exe])
    assert plain.returncode == 0, plain
    want = {}
    for who, f, v in re.findall(r"^(main|lib) (ex_\w+) (\d+)$", plain.stdout, re.M):
        want.setdefault(f, []).append(int(v))
    ops = {"ex_add": lambda a, b: a + b, "ex_mul": lambda a, b: a * b}
    lib_b = {"ex_add": 100, "ex_mul": 7}
    for mode in ("auto", "ret"):
        p, out = record([exe], f"--exit={mode}", "-v", "-F", "ex_*", out=tmp(f"exported-{tag}-{mode}.data"))
        assert p.stdout == plain.stdout, (cc, mode, p.stdout)
        calls = [c for c in replay_json(out) if "func" in c]
        only = [c for c in calls if c["func"] == "ex_only"]
        assert len(only) == 15 and all(c["status"] == "returned" for c in only), (cc, mode, only)
        for f, op in ops.items():
            mine = [c for c in calls if c["func"] == f]
            assert [op(*(a["value"] for a in c["args"])) for c in mine] == want[f], (cc, mode, f)
            main_calls = [c for c in mine if c["args"][1]["value"] != lib_b[f]]
            lib_calls = [c for c in mine if c["args"][1]["value"] == lib_b[f]]
            assert len(main_calls) == 10 and len(lib_calls) == 15, (cc, mode, f)
            for c in mine:
                assert c["status"] in ("returned", "unobserved"), (cc, mode, c)
                if c["status"] == "returned":
                    assert c["ret"][0]["value"] == op(*(a["value"] for a in c["args"])), (cc, mode, c)
                else:
                    assert mode == "auto" and c["dur"] is None and "ret" not in c, (cc, mode, c)
            assert all(c["status"] == "returned" for c in main_calls), (cc, mode, f)
            # the first from the library is a call through an address
            # (its GOT) the CHECK reports; after the program's pause
            # the probes are in: the later rounds return
            assert mode == "ret" or lib_calls[0].get("indirect"), (cc, lib_calls[0])
            assert all(c["status"] == "returned" for c in lib_calls[5:]), (cc, mode, f)
        assert "the kernel side sees file" not in p.stderr, (cc, mode, p.stderr)
        if mode == "auto":
            lib = r"\S*/libexcb\.so"
            assert re.search(rf"calls of ex_add from {lib}\+0x[0-9a-f]+: exit probe at 0x[0-9a-f]+ there",
                             p.stderr), (cc, p.stderr)
            assert re.search(r"calls of ex_mul from 0x[0-9a-f]+ keep no exit: its caller calls setjmp.*"
                             r"its RETs are probed from now on", p.stderr), (cc, p.stderr)
            st = info_stats(out)
            assert st["callers_found"].split()[0] == "1" and "1 refused" in st["callers_found"], (cc, st)


def test_exported_functions_observed_from_their_callers():
    """A program's exported functions (-rdynamic; node exports 67k) are
    observed from their callers: its own calls are planned as any, the
    CHECK at the function's entry reports a call from another file
    (libexcb.so calls ex_add and ex_mul back through its PLT).  ex_add's
    exit probe goes in the library after that call, where the BPF side
    finds the call again by file and offset (map file_calls); ex_mul's
    caller there calls setjmp, so no exit probe goes after its call: ex_mul's
    RETs are probed from then on.  The first calls from the library, made
    before those probes are in, end unobserved (or returned, if still
    running when they are in), never guessed.  ex_only, which only the
    library calls, keeps its RETs from the start.  tests/fixtures/c/exported."""
    for cc in ("gcc", "clang"):
        exported_calls_observed(fixture(f"exported/{cc}/ex_main"), cc, cc)


def test_calls_from_files_on_overlayfs_observed_there():
    """A container's files are on overlayfs: the kernel side finds a return
    address's file as the file under the overlay (bpf_find_vma: the
    backing file of the mapping), whose device and inode neither stat()
    nor /proc/PID/maps show.  The probe's report of a return address says
    which file it found, and the call site planned there is keyed with
    that: ex_main and its library run from an overlay are observed as they
    are from the plain file system (before: every call from the library
    would have ended unobserved, or its function's RETs were probed)."""
    with overlay_of("ovl", fixture("exported/gcc/ex_main"), fixture("exported/gcc/libexcb.so")) as merged:
        exported_calls_observed(os.path.join(merged, "ex_main"), "gcc", "overlay")


def run_in_container(tag, n, *flags):
    """tests/fixtures/c/exported's ex_main N run in a container -- its own
    mount namespace, its root an overlay mounted there only (chroot) --
    and traced from outside with -p and FLAGS: (tracer's stderr, record
    file, what the program printed).  ex_main blocks writing to a pipe
    nobody reads until the tracer is in."""
    base = tmp(tag)
    for d in ("lower/app", "lower/proc", "lower/lib/x86_64-linux-gnu", "lower/lib64", "upper", "work", "merged"):
        os.makedirs(os.path.join(base, d), exist_ok=True)
    for f in ("ex_main", "libexcb.so"):
        shutil.copy2(fixture(f"exported/gcc/{f}"), os.path.join(base, "lower/app"))
    shutil.copy2("/lib/x86_64-linux-gnu/libc.so.6", os.path.join(base, "lower/lib/x86_64-linux-gnu"))
    shutil.copy2("/lib64/ld-linux-x86-64.so.2", os.path.join(base, "lower/lib64"))
    script = (f"mount --make-rprivate / && mount -t overlay overlay -o lowerdir={base}/lower,"
              f"upperdir={base}/upper,workdir={base}/work {base}/merged && "
              f"mount -t proc proc {base}/merged/proc && exec chroot {base}/merged /app/ex_main {n}")
    # unshare and sh exec: the program keeps their pid
    prog = subprocess.Popen(["unshare", "-m", "sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rec = None
    out = tmp(tag + ".data")
    try:
        pid = prog.pid
        for _ in range(200):
            try:
                if os.readlink(f"/proc/{pid}/exe").endswith("/app/ex_main"):
                    break
            except OSError:
                pass
            time.sleep(0.02)
        else:
            raise AssertionError(prog.stderr.read())
        maps = open(f"/proc/{pid}/maps").read()
        # (its paths name nothing here)
        assert f"{base}/merged/app/ex_main" in maps and not os.path.exists(f"{base}/merged/app/ex_main"), maps
        rec = subprocess.Popen([CT, "record", "-v", "-o", out, *flags, "-p", str(pid)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = []
        for line in rec.stderr:
            err.append(line)
            if "Ctrl-C to stop" in line:
                break
        printed = prog.stdout.read().decode()
        assert prog.wait(timeout=60) == 0, prog.stderr.read()
        _, rest = rec.communicate(timeout=60)
        err = "".join(err) + rest
    finally:
        for p in (prog, rec):
            if p and p.poll() is None:
                p.kill()
    assert rec.returncode == 0, err
    return err, out, printed


def test_calls_from_a_containers_files_observed_there():
    """A process in a container traced from outside with -p
    (run_in_container): the paths /proc/PID/maps shows are the container's,
    which name nothing here.  The file a return address is in is opened
    through its mapping's own link (/proc/PID/map_files/LO-HI), so the
    library's calls of ex_add get their exit probe in the library, and
    ex_mul's caller is seen to call setjmp (before: "the return address is
    in no file the process runs code from", and both kept RETs).  A
    library traced there (-F 'libexcb.so:*') is found the same way (before:
    "cannot open /proc/PID/root/...")."""
    n = 5000
    err, out, printed = run_in_container("container", n, "-F", "ex_*")
    assert re.search(r"calls of ex_add from /proc/\d+/map_files/[0-9a-f]+-[0-9a-f]+\+0x[0-9a-f]+: exit probe at", err), err
    # the file under the container's overlay, found from its layers, is
    # the one the kernel side reports
    assert "the kernel side sees file" not in err, err
    assert re.search(r"calls of ex_mul from 0x[0-9a-f]+ keep no exit: its caller calls setjmp", err), err
    lib_adds = [c for c in replay_json(out) if c.get("func") == "ex_add" and c["args"][1]["value"] == 100]
    assert len(lib_adds) == printed.count("lib ex_add"), (len(lib_adds), printed.count("lib ex_add"))
    for c in lib_adds:
        assert c["status"] in ("returned", "unobserved"), c
        if c["status"] == "returned":
            assert c["ret"][0]["value"] == c["args"][0]["value"] + 100, c
    # the last round's calls all end at the exit probe in the library
    assert all(c["status"] == "returned" for c in lib_adds[-n:]), [c["status"] for c in lib_adds[-n:]]

    err, out, printed = run_in_container("container-lib", n, "-F", "libexcb.so:*")
    runs = [c for c in replay_json(out) if c.get("func") == "libexcb.so:excb_run"]
    assert len(runs) == 3 and all(c["status"] == "returned" and c["args"][0]["value"] == n for c in runs), runs


def test_links_of_found_exits_made_one_when_they_run_short():
    """mc_main calls mc_step through a pointer from 160 call sites of a
    function not traced, 4 ms apart the first time: each return address
    is found while recording, its exit probe in a link of its own.
    calltrace keeps 120 such links; past 90 it makes those of one file one
    link.  Before, the 40 last sites were refused (their calls ended at
    interim RETs, single-stepped, or unobserved once those were gone:
    cc1plus -F '*' refused 825).  Every call site's second call ends at
    its exit probe.  tests/fixtures/c/manycallers."""
    p, out = record([fixture("mc_main")], "-F", "mc_step", out=tmp("manycallers.data"))
    a, b = p.stdout.split()
    assert a == b, p.stdout
    calls = [c for c in replay_json(out) if c.get("func") == "mc_step"]
    assert len(calls) == 320 and {c["status"] for c in calls} == {"returned"}, len(calls)
    st = info_stats(out)
    found = st["callers_found"]
    assert found.startswith("160 (") and " 0 refused;" in found and "made one with others" in found, found
    line = next(x for x in ct("info", "--calls", out).stdout.splitlines() if x.startswith("calls:"))
    m = re.search(r"after the call (\d+)", line)
    assert m and int(m.group(1)) >= 160, line
