"""Record-time limits and sampling, decided in the kernel: each test checks
the exact set of calls kept against what the program is known to do (or
against an unlimited recording of the same deterministic run)."""
import os
import re

from lib import ct, fixture, info_count, record, replay_json, tmp, trees

GO = "go_core"


def murmur_fmix(x):
    # the hash --sample-goroutines uses (calltrace.bpf.c)
    m = (1 << 64) - 1
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & m
    x ^= x >> 33
    return x


def shape_set(calls):
    return sorted(r.shape() for roots in trees(calls).values() for r in roots)


def stat(out, key):
    info = ct("info", out).stdout
    for line in info.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] == key:
            return parts[1].strip()
    return None


def test_max_depth():
    _, full = record([fixture(GO), "fib", "7"], out=None)
    full_calls = replay_json(full)
    _, out = record([fixture(GO), "fib", "7"], "--max-depth", "3", out=os.path.join(os.path.dirname(full), "d.data"))
    calls = replay_json(out)
    want = [(c["func"], c["depth"], [a["value"] for a in c.get("args", [])]) for c in full_calls if c["depth"] < 3]
    got = [(c["func"], c["depth"], [a["value"] for a in c.get("args", [])]) for c in calls]
    assert got == want, (got, want)
    assert all(c["status"] == "returned" for c in calls)
    assert int(stat(out, "cut")) > 0
    # probe_hits counts the hits the limit kept from sending an event too
    hits = info_count(ct("info", out).stdout, "probe_hits")
    assert hits >= int(stat(out, "events")) + int(stat(out, "cut")), ct("info", out).stdout


def test_cut_hits_are_taken_out_of_the_durations_around_them():
    """A hit that limits cut sends no event, but its trap cost the program
    all the same: the thread's next event carries what such hits cost
    (ct_event.silent, `info`'s silent), and replay takes it out.  fib(14)
    holds ~2,400 hits and almost nothing else: with --max-depth 1 its one
    kept call measures those cut hits and is corrected to far less; with
    --min-duration, the calls kept are sent at their return (their entries
    stamped in the past), and the hits cut inside them still come out of
    them, not before them."""
    for flags in (["--max-depth", "1"], ["--min-duration", "1ms"]):
        p, out = record([fixture(GO), "fib", "14"], *flags, "-F", "main.fib", out=tmp("cut-priced.data"))
        assert p.stdout == "fib 377\n", p.stdout
        cut, silent = int(stat(out, "cut")), stat(out, "silent")
        assert cut > 1000 and silent, (flags, cut, silent)
        # each cut hit is weighed by its class: an emulated one is 1, a
        # single-stepped one more
        assert float(silent.split()[0]) >= 0.9 * cut, (flags, silent, cut)
        emulated = int(re.search(r"emulated=(\d+)", stat(out, "calib"))[1])
        calls = replay_json(out)
        roots = [c for c in calls if c["depth"] == 0]
        assert [(c["func"], c["status"]) for c in roots] == [("main.fib", "returned")], (flags, roots)
        raw, dur = roots[0]["dur_raw"], roots[0]["dur"]
        priced = float(silent.split()[0]) * emulated
        assert raw > priced / 2, (flags, raw, priced)  # (the hits were in it)
        # taken out of it (before, only its own hits and its kept calls'
        # were); not asserted against the run's own time, which a loaded
        # machine adds to
        assert raw - dur >= priced / 2, (flags, raw, dur, priced)
        if flags[0] != "--min-duration":
            continue
        # a kept call none of whose calls was kept: the ~2 (calls(n) - 1)
        # hits of the calls inside it came out of it (fib(n) returns F(n)
        # and makes 2 F(n+1) - 1 calls); before, they went with its entry,
        # sent at its return with its entry's time, and moved it along
        fibs = [0, 1]
        while len(fibs) < 24:
            fibs.append(fibs[-1] + fibs[-2])
        kept_leaves = [c for i, c in enumerate(calls)
                       if i + 1 == len(calls) or calls[i + 1]["depth"] <= c["depth"]]
        assert kept_leaves, calls
        for c in kept_leaves:
            # (a fib(0) or fib(1), nothing inside, kept when the machine
            # held it up past --min-duration; 1 is also fib(2)'s)
            if c["ret"][0]["value"] < 2:
                continue
            n = fibs.index(c["ret"][0]["value"], 2)  # (its entry's arguments are not kept)
            inside = 2 * (2 * fibs[n + 1] - 1 - 1)
            assert c["dur_raw"] - c["dur"] >= inside * emulated / 2, (c, inside, emulated)


def test_max_depth_counts_tail_calls_the_kernel_cannot_see_as_jumps():
    """Tail calls the kernel's shadow stack learns of by the entry, not by
    a TAIL probe: a function running on into the next one (trick_falls
    into trick_fallen) and a function whose first instruction is its tail
    jump (plt_tail: jmp strcasecmp@plt, then libc's __strcasecmp_avx2,
    or _evex on a CPU with AVX-512, which runs on into its _l_ variant).  Replay nests them: so does
    --max-depth, which kept them all at depth 0 before.  A kept call whose
    tail callee was cut ends at its callee's return, not at the jump."""
    argv = [fixture("c_core"), "falls", "4"]
    flags = ["-F", "trick_falls", "-F", "trick_fallen", "-F", "plt_tail", "-F", "libc.so.6:__strcasecmp*"]
    _, full = record(argv, *flags)
    full_calls = replay_json(full)
    # (the variant glibc picks for this CPU: avx2, evex with AVX-512, ...)
    variant = next((c["func"].split("_")[-1] for c in full_calls
                    if re.fullmatch(r"libc\.so\.6:__strcasecmp_l_(?!ifunc)\w+", c["func"])), "?")
    assert {c["func"]: c["depth"] for c in full_calls if c["func"] != "libc.so.6:__strcasecmp_ifunc"} == {
        "trick_falls": 0, "trick_fallen": 1, "plt_tail": 0, "libc.so.6:__strcasecmp_" + variant: 1,
        "libc.so.6:__strcasecmp_l_" + variant: 2, "libc.so.6:__strcasecmp_l_ifunc": 0}, full_calls
    for depth in (1, 2):
        _, out = record(argv, "--max-depth", str(depth), *flags,
                        out=os.path.join(os.path.dirname(full), "d%d.data" % depth))
        calls = replay_json(out)
        want = [(c["func"], c["depth"]) for c in full_calls if c["depth"] < depth]
        assert [(c["func"], c["depth"]) for c in calls] == want, (depth, calls)
        assert all(c["status"] == "returned" for c in calls), calls
        assert all(c["dur_raw"] > 0 for c in calls if c["func"] == "plt_tail"), calls


def test_more_stacks_inside_traced_calls_than_the_limits_follow():
    """go_crowd 12000: 12000 goroutines inside main.f1 -> f2 -> f3 at once.
    The kernel's table of the limits' state per goroutine holds 8192: the
    state of the others was pushed out, and with --max-depth 2 their f1 and
    f2 showed as exited (their returns were dropped, no stack to place them
    on), with --min-duration their calls were missing; nothing said so. Now
    a return with no state is sent as without limits (every call returns),
    and record warns once the table is about full, as info's limits_full
    does. 3000 at once: no warning."""
    prog = fixture("go_crowd")
    p, out = record([prog, "12000"], "--max-depth", "2", "-F", "main.f*", out=tmp("crowd-depth.data"))
    calls = replay_json(out)
    assert sorted({(c["func"], c["status"]) for c in calls}) == [("main.f1", "returned"), ("main.f2", "returned")]
    assert len(calls) == 24000, len(calls)
    assert "record-time limits follow 8192" in p.stderr, p.stderr
    assert int(stat(out, "limits_full").split()[0]) > 0
    p, out = record([prog, "12000"], "--min-duration", "10us", "-F", "main.f*", out=tmp("crowd-mindur.data"))
    assert "record-time limits follow 8192" in p.stderr, p.stderr
    p, out = record([prog, "3000"], "--max-depth", "2", "-F", "main.f*", out=tmp("crowd-few.data"))
    assert "limits follow" not in p.stderr and stat(out, "limits_full") is None, p.stderr
    assert len(replay_json(out)) == 6000


def test_min_duration_keeps_slow_calls_and_their_callers():
    _, out = record([fixture(GO), "sleepy"], "--min-duration", "10ms")
    calls = replay_json(out)
    # slow(20) and slow(30) sleep 20/30 ms; fast() takes microseconds
    assert shape_set(calls) == ["main.main(main.sleepy(main.slow,main.slow))"], shape_set(calls)
    slows = [c for c in calls if c["func"] == "main.slow"]
    assert [c["dur"] >= 20_000_000 for c in slows] == [True, True]
    assert [c["ret"][0]["value"] for c in slows] == [21, 31]  # results are kept
    # the held-back entries lose their arguments, and say so
    assert all([(a["value"], a["unavailable"]) for a in c["args"]] == [(None, "not captured")] for c in slows), slows
    assert all(c["dur"] >= 10_000_000 for c in calls)


def test_limits_that_cut_every_call_say_so():
    # --min-duration longer than any call (or a --sample-goroutines that
    # kept none of the threads with calls: sort --parallel=2 has its calls
    # on one) cuts every event; replay, report and dump showed empty output
    # and said nothing of why
    _, out = record([fixture("c_core"), "fib", "3"], "--min-duration", "10s")
    assert int(stat(out, "cut")) > 0 and stat(out, "events") == "0"
    for cmd in (["replay"], ["report"], ["dump", "--folded"]):
        p = ct(*cmd, out)
        lines = p.stderr.splitlines()
        assert p.returncode == 0 and len(lines) == 1 and "no calls recorded" in lines[0] and \
            "min-duration=10000000000ns" in lines[0], (cmd, p.stderr)
    # a limit that kept some: no such line
    _, out = record([fixture("c_core"), "fib", "3"], "--max-events", "5")
    p = ct("replay", out)
    assert p.returncode == 0 and "no calls recorded" not in p.stderr, p.stderr

def test_root_keeps_only_subtrees():
    _, out = record([fixture(GO), "loop", "5"], "--root", "main.work")
    calls = replay_json(out)
    assert shape_set(calls) == sorted(
        ["main.work(" + ",".join(["main.leaf"] * (i % 3 + 1)) + ")" for i in range(5)])
    assert [c["args"][0]["value"] for c in calls if c["func"] == "main.work"] == [0, 1, 2, 3, 4]


def test_sample_keeps_one_in_n_root_calls_whole():
    _, out = record([fixture(GO), "loop", "10"], "--root", "main.work", "--sample", "3")
    calls = replay_json(out)
    kept = [c["args"][0]["value"] for c in calls if c["func"] == "main.work"]
    assert kept == [0, 3, 6, 9], kept
    # whole subtrees: each kept work(i) has its (i%3)+1 leaf calls
    for r in [r for roots in trees(calls).values() for r in roots]:
        assert len(r.children) == r.call["args"][0]["value"] % 3 + 1


def test_sample_goroutines():
    n = 3
    # no GC (no runtime goroutines of its own) and one P: goids repeat run to run
    nogc = {"GOGC": "off", "GOMAXPROCS": "1"}  # goids come in per-P batches: one P
    _, full = record([fixture(GO), "goroutines", "24"], env=nogc)
    _, out = record([fixture(GO), "goroutines", "24"], "--sample-goroutines", str(n),
                    out=os.path.join(os.path.dirname(full), "sg.data"), env=nogc)
    calls = replay_json(out)
    goids = {c["goid"] for c in calls}
    assert goids and all(murmur_fmix(g) % n == 0 for g in goids), goids
    # exactly the calls of those goroutines (goids are deterministic here)
    full_calls = replay_json(full)
    want = sorted((c["goid"], c["func"], c["depth"]) for c in full_calls if murmur_fmix(c["goid"]) % n == 0)
    got = sorted((c["goid"], c["func"], c["depth"]) for c in calls)
    assert got == want


def test_probe_hits_when_the_start_up_calibration_failed():
    """The start-up calibration fails when too few of its calls' events
    come back (under load; here a 4 KiB ring buffer: 12 of 60): no `calib`
    then, and probe_hits was written only with the end's calibration.  The
    events the ring had no room for were the calibration's, not the
    program's: they were its `lost` (~1,700), a loss record before its
    first event."""
    p, out = record([fixture("c_core"), "fib", "3"], "--buffer-size", "4K", "-F", "c_fib")
    info = ct("info", out).stdout
    assert not re.search(r"^calib\s", info, re.M), info  # (else this tests nothing)
    assert info_count(info, "probe_hits") >= int(stat(out, "events")) > 0, info
    assert stat(out, "lost") == "0", info


def test_max_events_and_max_size():
    p, out = record([fixture(GO), "fib", "18"], "--max-events", "500", "-F", "main.fib")
    assert p.stdout == "fib 2584\n"  # the program ran to the end, unharmed
    assert int(stat(out, "events")) <= 500 + 64
    assert stat(out, "stopped") == "--max-events reached"
    # the hits are known without the end's calibration (none under a limit)
    assert info_count(ct("info", out).stdout, "probe_hits") >= int(stat(out, "events"))
    p, out = record([fixture(GO), "fib", "22"], "--max-size", "64K", "-F", "main.fib")
    assert p.stdout == "fib 17711\n"
    assert os.path.getsize(out) < 64 * 1024 + 128 * 1024, os.path.getsize(out)
    assert stat(out, "stopped") == "--max-size reached"
    assert info_count(ct("info", out).stdout, "probe_hits") >= int(stat(out, "events"))
    replay_json(out)  # still a valid file
