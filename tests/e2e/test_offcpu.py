"""Time off CPU: record notes when the scheduler takes a traced thread off
its CPU (the kernel's sched_switch tracepoint), and replay says how much of
each call's duration that was -- blocked in the kernel (a sleep, I/O, a
lock) or preempted (runnable, the CPU given to another thread).  A Go
goroutine's time is its own: a goroutine the runtime parks is not off CPU
(its thread runs others, or idles for no goroutine)."""
import json
import re

from lib import ct, fixture, record, replay_json, tmp

MS = 1_000_000


def off(call):
    o = call.get("off_cpu", {})
    return o.get("preempted", 0), o.get("blocked", 0)


def seen(path):
    """What a failed assertion shows: the tree and the raw events."""
    return ct("replay", path).stdout + ct("dump", "--events", path).stdout[-4000:]


def by_func(calls):
    out = {}
    for c in calls:
        out.setdefault(c["func"], []).append(c)
    return out


def test_a_sleeping_call_was_off_cpu_blocked_and_so_was_its_caller():
    p, out = record([fixture("c_offcpu")], "-F", "blocks", "-F", "outer", "-F", "quick", "-F", "spin")
    assert p.stdout == "21\n42\nspun\n", p.stdout
    f = by_func(replay_json(out))
    (blocks,), (outer,), (quick,) = f["blocks"], f["outer"], f["quick"]
    pre, blk = off(blocks)
    # usleep(20 ms): blocked at least that long, within the call's time
    assert 19 * MS <= blk <= blocks["dur_raw"], (blocks, seen(out))
    # the caller was open meanwhile: its time off CPU holds the callee's
    opre, oblk = off(outer)
    assert oblk >= blk and opre >= pre and oblk + opre <= outer["dur_raw"], (outer, blocks)
    # a call of a few instructions is not off CPU for long, if at all
    assert sum(off(quick)) < 5 * MS, quick
    # the tree says it on the call's line, and on its caller's closing line
    text = ct("replay", out).stdout
    line = next(ln for ln in text.splitlines() if "blocks(ms=20) = 20;" in ln)
    assert re.search(r"/\* off CPU \d+\.\d{3} ms, blocked \*/$", line) or \
        re.search(r"/\* off CPU \d+\.\d{3} ms: blocked \d+\.\d{3} ms, preempted ", line), line
    assert re.search(r"\} = 21; /\* outer; off CPU \d+\.\d{3} ms", text), text
    # the raw records: dump --events names them, info counts them
    events = ct("dump", "--events", out).stdout
    assert re.search(r"proc=off_cpu goid=0 off_ns=\d+ how=blocked$", events, re.M), events
    assert re.search(r"^off_cpu\s+\d+ \(", ct("info", out).stdout, re.M)


def test_a_call_still_blocked_at_the_end_was_off_cpu_until_then():
    """record --duration ends while blocks() sleeps 1.5 s: its thread's own
    record of the time off CPU would come when it runs again, after the
    end (the calls showed none).  The recorder writes the time up to the
    end, flagged: the unfinished calls have it, --sched shows it as an
    unfinished linux:schedule, dump --events says until=end."""
    p, out = record([fixture("c_offcpu"), "1500"], "--duration", "300ms", "-F", "blocks", "-F", "outer")
    assert p.stdout == "1501\n42\nspun\n", p.stdout  # the program went on to its end
    f = by_func(replay_json(out))
    (blocks,), (outer,) = f["blocks"], f["outer"]
    assert blocks["status"] == outer["status"] == "unfinished", (blocks, outer)
    _, blk = off(blocks)
    assert blk > 0 and off(outer)[1] >= blk, (blocks, outer, seen(out))
    sched = [c for c in replay_json(out, "--sched") if c["func"] == "linux:schedule"]
    assert sched and sched[-1]["status"] == "unfinished" and sched[-1]["depth"] == 2, sched
    assert sched[-1]["off_cpu"]["blocked"] > 0, sched
    assert re.search(r"linux:schedule\(\); /\* unfinished; blocked \d+\.\d{3} ms until the end \*/",
                     ct("replay", "--sched", out).stdout), ct("replay", "--sched", out).stdout
    events = ct("dump", "--events", out).stdout
    assert re.search(r"proc=off_cpu goid=0 off_ns=\d+ until=end how=blocked$", events, re.M), events
    assert "1 of them until the end" in ct("info", out).stdout, ct("info", out).stdout


def test_report_says_each_functions_self_time_off_cpu():
    """report's "Self off" column (JSON self_off_cpu_ns): blocks slept in
    its own code, outer only in its child's; JSON off_cpu_ns holds both."""
    p, out = record([fixture("c_offcpu")], "-F", "blocks", "-F", "outer", "-F", "quick")
    rows = {r["func"]: r for r in json.loads(ct("report", "--format=json", out).stdout)}
    assert rows["blocks"].get("self_off_cpu_ns", 0) >= 19 * MS, (rows["blocks"], seen(out))
    assert rows["outer"]["off_cpu_ns"] >= rows["blocks"]["off_cpu_ns"], rows
    assert rows["outer"]["self_off_cpu_ns"] < 5 * MS, rows["outer"]
    # -s self_off: the function that slept in its own code first
    by = [r["func"] for r in json.loads(ct("report", "--format=json", "-s", "self_off", out).stdout)]
    assert by[0] == "blocks", by
    by = [r["func"] for r in json.loads(ct("report", "--format=json", "-s", "off", out).stdout)]
    assert set(by[:2]) == {"outer", "blocks"} and by[-1] == "quick", by
    # recorded: every function has the keys, 0 where it was never off CPU
    assert all(isinstance(r["off_cpu_ns"], int) and isinstance(r["self_off_cpu_ns"], int) for r in rows.values())
    text = ct("report", out).stdout.splitlines()
    assert text[0].endswith("    Self off  Function"), text[0]
    line = next(ln for ln in text if ln.endswith("  blocks"))
    assert re.match(r" +\d+\.\d{3} ms$", line[-len("  blocks") - 12:-len("  blocks")]), line
    assert any(ln.startswith("# Self off: ") for ln in text), text


def test_two_calls_sharing_one_cpu_were_preempted_for_each_other():
    """Two threads pinned to one CPU each spin for 40 ms of CPU time: each
    waits, runnable, while the other runs."""
    p, out = record([fixture("c_offcpu")], "-F", "spin")
    assert p.stdout.endswith("spun\n"), p.stdout
    spins = replay_json(out)
    assert [c["func"] for c in spins] == ["spin", "spin"], spins
    assert spins[0]["tid"] != spins[1]["tid"], spins
    for c in spins:
        pre, blk = off(c)
        assert pre + blk <= c["dur_raw"], c
    # 80 ms of CPU on one CPU: together at least a good part of 40 ms waiting
    assert sum(off(c)[0] for c in spins) >= 20 * MS, (spins, seen(out))
    text = ct("replay", out).stdout
    assert re.search(r"spin\(ms=40\) = 1; /\* off CPU \d+\.\d{3} ms(, preempted|: blocked)", text), text


def test_a_goroutine_is_off_cpu_in_a_system_call_not_when_the_runtime_parks_it():
    """nap blocks its goroutine's thread in nanosleep: off CPU, blocked, in
    its goroutine.  park's time.Sleep parks the goroutine: its thread is
    not its own meanwhile (it idles for no goroutine), so park is not off
    CPU, though it lasts as long; nor is main.main, parked in wg.Wait."""
    p, out = record([fixture("go_offcpu")], "-F", "main.*")
    assert p.stdout == "20\n20\n", p.stdout
    f = by_func(replay_json(out))
    (nap,), (park,), (main,) = f["main.nap"], f["main.park"], f["main.main"]
    assert 19 * MS <= off(nap)[1] <= nap["dur_raw"], (nap, seen(out))
    assert park["dur_raw"] >= 19 * MS, park
    assert sum(off(park)) < 10 * MS, (park, seen(out))
    assert sum(off(main)) < 10 * MS, (main, seen(out))
    # the goroutine that ran nap: its function value's call holds nap's time
    (func1,) = [c for c in f["main.main.func1"] if c["goid"] == nap["goid"]]
    assert off(func1)[1] >= off(nap)[1], (func1, nap)


def test_no_sched_records_none():
    p, out = record([fixture("c_offcpu")], "--no-sched", "-F", "blocks", "-F", "spin")
    assert p.stdout.endswith("spun\n"), p.stdout
    calls = replay_json(out)
    assert {c["func"] for c in calls} == {"blocks", "spin"}, calls
    assert not any("off_cpu" in c for c in calls), calls
    assert "off CPU" not in ct("replay", out).stdout
    assert "proc=off_cpu" not in ct("dump", "--events", out).stdout
    # not recorded is not 0: report leaves the keys out
    rows = json.loads(ct("report", "--format=json", out).stdout)
    assert rows and not any("off_cpu_ns" in r for r in rows), rows


def inside(parent, calls):
    """The linux:schedule calls (replay --sched) right under PARENT: one
    level deeper, on its thread, within its time (the corrected clock, as
    JSON's ts and dur are)."""
    end = parent["ts"] + parent["dur"]
    return [c for c in calls if c["func"] == "linux:schedule" and c["depth"] == parent["depth"] + 1
            and c["tid"] == parent["tid"] and parent["ts"] <= c["ts"] and c["ts"] + c["dur"] <= end]


def test_sched_shows_where_inside_a_call_its_thread_was_off_cpu():
    """replay/report/dump --sched: each time off CPU is a call of its own,
    linux:schedule, under the call it interrupted: blocks' sleep is a
    child of blocks, as long as blocks' time off CPU, and it leaves
    blocks' self time (report, flame graphs) for that child."""
    p, out = record([fixture("c_offcpu")], "-F", "blocks", "-F", "outer", "-F", "quick")
    assert p.stdout.startswith("21\n42\n"), p.stdout
    plain = replay_json(out)
    assert not any(c["func"] == "linux:schedule" for c in plain)
    calls = replay_json(out, "--sched")
    # they are added, nothing else changes
    assert [c for c in calls if c["func"] != "linux:schedule"] == plain, (calls, plain)
    # and filters take them by their name
    assert replay_json(out, "--sched", "-N", "linux:*") == plain
    only = replay_json(out, "--sched", "-F", "linux:schedule")
    assert only and {c["func"] for c in only} == {"linux:schedule"}, only
    (blocks,) = [c for c in calls if c["func"] == "blocks"]
    under = inside(blocks, calls)
    assert under, (blocks, seen(out))
    for c in under:
        assert c["status"] == "returned" and c["dur"] == c["dur_raw"] == sum(off(c)), c
    assert sum(off(c)[1] for c in under) == off(blocks)[1] >= 19 * MS, (under, blocks)
    # the tree: the line between the call's opening and its end
    text = ct("replay", "--sched", out).stdout.splitlines()
    i = next(i for i, ln in enumerate(text) if ln.endswith("|   blocks(ms=20) {"))
    assert re.search(r"\|     linux:schedule\(\); /\* blocked \*/$", text[i + 1]), text
    assert "|   } = 20; /* blocks; off CPU" in text[i + 1 + len(under)], text
    # flame graphs: the time off CPU is a frame of its own
    folded = dict(ln.rsplit(" ", 1) for ln in ct("dump", "--folded", "--sched", out).stdout.splitlines())
    assert int(folded["outer;blocks;linux:schedule"]) >= 19 * MS, folded
    assert int(folded["outer;blocks"]) < 5 * MS, folded
    # report: a row of its own, which holds the self time off CPU now
    rows = {r["func"]: r for r in json.loads(ct("report", "--format=json", "--sched", out).stdout)}
    assert rows["linux:schedule"]["self_off_cpu_ns"] >= 19 * MS, rows
    assert rows["blocks"].get("self_off_cpu_ns", 0) < 5 * MS, rows["blocks"]
    # Chrome: a slice nested in blocks' on its thread
    chrome = tmp("sched.json")
    assert ct("dump", "--chrome", "--sched", "-o", chrome, out).returncode == 0
    ev = json.load(open(chrome))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    b = [e["ts"] for e in ev if e.get("name") == "blocks" and e["ph"] in "BE"]
    s = [e for e in ev if e.get("name") == "linux:schedule" and e.get("tid") == blocks["tid"]]
    assert len(b) == 2 and s and all(b[0] <= e["ts"] <= b[1] for e in s), (b, s)


def test_sched_calls_of_a_goroutine_are_where_it_blocked_its_thread():
    """Go: nap's nanosleep is a linux:schedule under nap; park's
    time.Sleep parks the goroutine, no thread of its is off CPU: none."""
    p, out = record([fixture("go_offcpu")], "-F", "main.*")
    assert p.stdout == "20\n20\n", p.stdout
    calls = replay_json(out, "--sched")
    f = by_func(calls)
    (nap,), (park,) = f["main.nap"], f["main.park"]
    under = inside(nap, calls)
    assert all(c["goid"] == nap["goid"] for c in under), under
    assert sum(off(c)[1] for c in under) >= 19 * MS, (under, seen(out))
    assert sum(c["dur"] for c in inside(park, calls)) < 10 * MS, (inside(park, calls), seen(out))


def test_times_off_cpu_never_push_calls_out_of_the_ring_buffer():
    """8 threads yielding 100,000 times each on one CPU in a traced call,
    a 64 KiB ring buffer: the off-CPU records would fill it and push the
    calls' events out (every return lost).  Over half full, a time off CPU
    is not sent, only counted (info: off_cpu_dropped): the calls keep the
    rest, none is lost."""
    p, out = record([fixture("c_offcpu"), "yields", "100000"], "--buffer-size", "64K", "-F", "yields")
    assert p.stdout == f"{8 * sum(range(100000))}\n", p.stdout
    calls = replay_json(out)
    assert [c["status"] for c in calls] == ["returned"] * 8, (calls, seen(out))
    info = ct("info", out).stdout
    assert re.search(r"^lost:\s+0$", info, re.M), info
    assert re.search(r"^off_cpu_dropped\s+[1-9]\d* \(", info, re.M), info
    assert "events were lost" not in p.stderr, p.stderr
