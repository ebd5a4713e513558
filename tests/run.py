#!/usr/bin/env python3
"""calltrace's test run (`make test`): builds the fixture programs, runs the
C unit tests, then every end-to-end test in tests/e2e/test_*.py against real
kernel probes.  One line per test ("ok NAME" / "FAIL NAME: why"), and the
last line is "N passed, N failed".

  python3 tests/run.py [SUBSTRING...]   run only tests whose name contains one
"""
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def main():
    only = sys.argv[1:]
    # Started as a background job of a non-interactive shell (`make test &`)
    # or under nohup, this process and every program it starts would have
    # SIGINT/SIGQUIT/SIGHUP ignored, and calltrace (like the programs it
    # runs) keeps an ignored signal ignored: the tests that send them
    # expect what a terminal gives.
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    passed = failed = skipped = 0
    t0 = time.time()

    def want(name):
        return not only or any(o in name for o in only)

    def result(name, err=None, secs=0.0):
        nonlocal passed, failed
        if err is None:
            passed += 1
            print(f"ok {name} ({secs:.1f}s)", flush=True)
        else:
            failed += 1
            print(f"FAIL {name}: {err}", flush=True)

    build = subprocess.run(["sh", os.path.join(ROOT, "tests/fixtures/build.sh")],
                           capture_output=True, text=True)
    if build.returncode != 0:
        result("fixtures/build", build.stderr.strip()[-2000:] or "failed")
        print(f"{passed} passed, {failed} failed")
        return 1

    unit = subprocess.run([os.path.join(ROOT, "build/unit_tests")], capture_output=True,
                          text=True, cwd=ROOT,
                          env=dict(os.environ, CT_FIXTURES=os.path.join(ROOT, "build/fixtures")))
    for line in unit.stdout.splitlines():
        if line.startswith("ok "):
            if want(line[3:]):
                result(line[3:])
        elif line.startswith("FAIL "):
            name, _, why = line[5:].partition(": ")
            if want(name):
                result(name, why)
        elif line.startswith("#"):
            print(line)
    if unit.returncode not in (0, 1) or "passed," not in unit.stdout:
        result("unit/harness", f"unit test binary exited {unit.returncode}: {unit.stderr[-2000:]}")

    e2e_dir = os.path.join(ROOT, "tests", "e2e")
    for fn in sorted(os.listdir(e2e_dir)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fn[:-3], os.path.join(e2e_dir, fn))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception:
            result(f"e2e/{fn}", "cannot load: " + traceback.format_exc(limit=3))
            continue
        for name in [n for n in dir(mod) if n.startswith("test_")]:
            full = f"e2e/{fn[5:-3]}/{name[5:]}"
            if not want(full):
                continue
            start = time.time()
            try:
                getattr(mod, name)()
            except getattr(sys.modules.get("lib"), "Skip", ()) as e:
                # a known failure whose fix lies elsewhere: said, not
                # counted (CT_RUN_SKIPPED=1 runs it)
                skipped += 1
                print(f"skip {full}: {e}", flush=True)
            except AssertionError as e:
                result(full, str(e) or traceback.format_exc(limit=2))
            except Exception:
                result(full, traceback.format_exc(limit=4).strip().replace("\n", " | "))
            else:
                result(full, None, time.time() - start)

    # what the tests wrote (traces, fixtures' copies: ~40 MB a run) goes,
    # unless a test failed: then it is what there is to look at
    lib = sys.modules.get("lib")
    if lib is not None:
        if failed:
            print(f"# the failed tests' files are kept in {lib.TMP}")
        else:
            shutil.rmtree(lib.TMP, ignore_errors=True)
    print(f"# total {time.time() - t0:.0f}s")
    if skipped:
        print(f"# {skipped} skipped: known failures, run them with CT_RUN_SKIPPED=1")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
