"""The structure-aware fuzzer of the record format (tests/fuzz) on every
reader, built with ASan and UBSan: a short seeded run from real records of
the fixtures.  The seeds stay in build/fuzz-seeds for `make fuzz`."""
import os

from lib import ROOT, ct, fixture, run

SEEDS = os.path.join(ROOT, "build", "fuzz-seeds")
FUZZ = os.path.join(ROOT, "build", "fuzz_records")
FILES = 2000
REGRESS = os.path.join(ROOT, "tests", "fuzz", "regress")


def make_seeds():
    os.makedirs(SEEDS, exist_ok=True)
    for name, argv in [("go_args", [fixture("go_args")]), ("c_args", [fixture("c_args")]),
                       ("c_values", [fixture("c_values_O2")]),  # bit-fields, long doubles
                       ("c_floats", [fixture("cgraph/gcc-O0/cg_floats")]),  # SPILL sites
                       ("go_core", [fixture("go_core"), "goroutines", "4"]),
                       ("go_panic", [fixture("go_core"), "panic", "3"]),
                       ("go_lineage", [fixture("go_lineage"), "tree"]),
                       ("c_core", [fixture("c_core"), "fib", "4"]),
                       ("c_altstack", [fixture("c_stacks"), "altstack"]),
                       # tail jumps to untraced code whose return a probe watches (event flag 0x100)
                       ("c_plttail", ["--exit=ret", "-F", "plt_tail_checked", "-F", "libc.so.6:__strcasecmp*", "--",
                                      fixture("c_core"), "plttail", "4"]),
                       ("c_coroutines", [fixture("c_stacks"), "coroutines"]),
                       ("c_procs", ["--follow", "-N", "sleep_ms", "--", fixture("c_procs"), "forkexit", "50"]),
                       # a library's types after the program's; an exec'd binary's tables after events
                       ("c_libargs", ["-F", "libla.so:*", "--", fixture("libargs/gcc-O2/la_main")]),
                       ("c_exec_args", ["--follow", "--", fixture("libargs/clang-O0/la_launch")]),
                       # two Go programs' RTYPES and PCPOS, one address in both
                       ("go_exec_go", ["--follow", "--", fixture("go_exec_a"), "exec", fixture("go_exec_b")]),
                       ("rust_app", ["-F", "rsapp::app::*", "--", fixture("rust_app")]),
                       ("cpp_app", ["-F", "app::*", "--", fixture("cpp_app")])]:
        out = os.path.join(SEEDS, name + ".data")
        p = ct("record", "-o", out, *([] if "--" in argv else ["--"]), *argv)
        assert p.returncode == 0, p.stderr
        old = out + ".old"
        if os.path.exists(old):
            os.unlink(old)
    return sorted(os.path.join(SEEDS, f) for f in os.listdir(SEEDS) if f.endswith(".data"))


def test_crafted_record_files_under_sanitizers():
    assert os.path.exists(FUZZ), "build/fuzz_records is not built (make test builds it)"
    seeds = make_seeds()
    p = run([FUZZ, "--seed", "1", "--files", str(FILES), *seeds], timeout=1800, cwd=ROOT, errors="backslashreplace")
    summary = [l for l in p.stderr.splitlines() if l.startswith("fuzz_records:")]
    assert p.returncode == 0, "\n".join(summary[-3:]) + "\n" + p.stderr[-3000:]
    assert f"{FILES} crafted files" in summary[0] and "no findings" in summary[0], summary
    for line in summary:
        print("# " + line)


def test_binaries_read_under_sanitizers():
    # What list/record read from binaries, stripped ones included (a
    # stripped Go binary has no symbols: qsort(NULL, 0) was undefined).
    # (and the plan list -v makes of them: call sites, exits, C++ and Rust
    # landing pads, argument locations)
    names = ["gobin_stripped", "gobin_pie_stripped", "realworld_stripped", "realworld_cgo_static_stripped",
             "go_args", "c_args", "c_core", "realworld_gccgo", "cxx_pads", "cxx_pads_clang", "cpp_app",
             "rust_app"]
    p = run([FUZZ, "--targets", *[fixture(n) for n in names]], timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [l for l in p.stderr.splitlines() if l.startswith("fuzz_records: ")]
    assert len(lines) == len(names) and all(l.endswith(" functions") for l in lines), p.stderr[-2000:]


def test_regression_files_under_sanitizers():
    # Files that once crashed a reader (a `make fuzz` finding, kept once fixed),
    # each through every reader as it is.
    files = [f for f in os.listdir(REGRESS) if not f.startswith(".")]
    assert files, REGRESS + " is empty"
    p = run([FUZZ, "--regress", REGRESS], timeout=600, cwd=ROOT, errors="backslashreplace")
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"fuzz_records: {len(files)} regression files, each through" in p.stderr, p.stderr[-2000:]


def test_unit_tests_under_sanitizers():
    # The unit tests again on the sanitizer build (ASan+UBSan, the objects
    # fuzz_records has): a use of freed memory, an overflow or a misaligned
    # load in the pure logic fails here even where the plain build's result
    # happened to be right.  Leaks are not looked for: the tests keep what
    # they build (the fuzzer looks at the readers').
    san = os.path.join(ROOT, "build", "unit_tests_san")
    assert os.path.exists(san), "build/unit_tests_san is not built (make test builds it)"
    p = run([san], timeout=600, cwd=ROOT, errors="backslashreplace",
            env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0", CT_FIXTURES=os.path.join(ROOT, "build", "fixtures")))
    tail = p.stdout.strip().splitlines()[-1:] or [""]
    fails = [l for l in p.stdout.splitlines() if l.startswith("FAIL ")]
    assert p.returncode == 0 and not fails and tail[0].endswith(" failed"), \
        "\n".join(fails[:5]) + "\n" + p.stderr[-3000:]
    assert tail[0].split(", ")[1] == "0 failed", tail[0]
