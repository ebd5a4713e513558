"""record --parks: where a goroutine waited.  A goroutine the Go runtime
parks (a channel, a select, a sleep) is not off CPU -- its thread runs
others -- so a traced call that waits shows that time as its own.  --parks
traces runtime.gopark too: each wait inside a traced call is a call of its
own under it, with the runtime's reason by name (runtime.waitReasonStrings),
lasting until the goroutine runs again -- its time off CPU: blocked until
another goroutine made it runnable (runtime.ready, a record of its own),
then waiting for the scheduler; parks that no traced call holds (the
runtime's goroutines, untraced code) are recorded but not shown."""
import json
import re

from lib import ct, fixture, record, replay_json

MS = 1_000_000
WAITERS = {"main.recv": "chan receive", "main.choose": "select", "main.doze": "sleep"}
TRACED = [f for w in list(WAITERS) + ["main.busy", "main.spin"] for f in ("-F", w)]


def children(calls):
    """Each call's direct children (same goroutine, one level deeper, while
    it is open): JSON lines come in entry order per goroutine."""
    kids, open_ = {}, {}
    for i, c in enumerate(calls):
        stack = open_.setdefault(c["goid"], [])
        del stack[c["depth"]:]
        if stack:
            kids.setdefault(stack[-1], []).append(c)
        stack.append(i)
    return kids


def test_each_wait_is_a_gopark_call_under_the_call_that_waited():
    p, out = record([fixture("go_parks")], "--parks", *TRACED)
    assert p.stdout == "20 20 20 true\n60\n", p.stdout
    calls = replay_json(out)
    kids = children(calls)
    seen = ct("replay", out).stdout
    for i, c in enumerate(calls):
        if c["func"] not in WAITERS:
            continue
        parks = [k for k in kids.get(i, []) if k["func"] == "runtime.gopark"]
        assert len(parks) == 1, (c, seen)
        (park,) = parks
        assert park["status"] == "returned" and park["goid"] == c["goid"], (park, seen)
        # the reason by its runtime name (an enum decoded from the binary's
        # table), and only the reason: the rest is the runtime's business
        assert park["args"] == [{"name": "reason", "type": "runtime.waitReason",
                                 "value": WAITERS[c["func"]]}], park
        # it waited ~20 ms parked, within its caller's time
        assert 10 * MS <= park["dur"] <= c["dur"], (park, c, seen)
        # its goroutine did not run meanwhile: blocked until another made it
        # runnable (runtime.ready: a record of its own), then runnable
        # until the scheduler ran it ("preempted": it waited for a CPU)
        off = park["off_cpu"]
        assert off["blocked"] >= 10 * MS and off["preempted"] > 0, (park, seen)
        assert off["blocked"] + off["preempted"] <= park["dur_raw"], park
        # the call that waited holds its callee's time off CPU
        assert c["off_cpu"]["blocked"] >= off["blocked"], (c, park)
        ready = re.findall(r"proc=ready goid=(\d+)$", ct("dump", "--events", out).stdout, re.M)
        assert str(c["goid"]) in ready, ready
    busy = [i for i, c in enumerate(calls) if c["func"] == "main.busy"]
    assert busy and not kids.get(busy[0]), seen
    # spin shared one P with another goroutine at work: the Go scheduler
    # took it off its thread in turns (goschedImpl), runnable until it ran
    # it again (execute) -- time off CPU, preempted, though no thread was
    (spin,) = [c for c in calls if c["func"] == "main.spin"]
    assert spin["off_cpu"]["preempted"] >= 10 * MS and not kids.get(calls.index(spin)), (spin, seen)
    assert re.search(r"proc=off_cpu goid=%d off_ns=\d+ how=preempted_by_go$" % spin["goid"],
                     ct("dump", "--events", out).stdout, re.M), seen
    # main's final receive and the idle worker's park held no traced call:
    # not shown (main.main and the worker are not traced here)
    assert not [c for c in calls if c["func"] == "runtime.gopark" and c["depth"] == 0], seen
    # the waiting is not the caller's own time any more (report, graph)
    rows = {r["func"]: r for r in json.loads(ct("report", "--format=json", out).stdout)}
    for f in WAITERS:
        assert rows[f]["self_ns"] < rows[f]["total_ns"] - 10 * MS, (rows[f], seen)
    assert rows["runtime.gopark"]["calls"] == 3, rows["runtime.gopark"]
    graph = json.loads(ct("graph", "--format=json", out).stdout)
    for path in graph:
        if path["func"] in WAITERS:
            assert [k["func"] for k in path["children"]] == ["runtime.gopark"], path


def test_gopark_asked_for_by_name_shows_every_park_with_every_argument():
    """-F runtime.gopark (not --parks): every park, those no traced call
    holds too, with all of gopark's arguments."""
    p, out = record([fixture("go_parks")], "-F", "runtime.gopark", *TRACED)
    calls = replay_json(out)
    tops = [c for c in calls if c["func"] == "runtime.gopark" and c["depth"] == 0]
    assert tops, ct("replay", out).stdout
    names = [a["name"] for a in tops[0]["args"]]
    assert "reason" in names and "lock" in names, tops[0]
    # no runtime.ready probe, no split: the parks are calls as any other
    assert not any(c.get("off_cpu", {}).get("blocked", 0) >= 10 * MS for c in calls
                   if c["func"] == "runtime.gopark"), ct("replay", out).stdout


def test_parks_is_traced_whatever_n_says_and_only_with_parks():
    p, out = record([fixture("go_parks")], "--parks", "-N", "runtime.*", *TRACED)
    assert sum(c["func"] == "runtime.gopark" for c in replay_json(out)) == 3
    p, out = record([fixture("go_parks")], *TRACED)
    assert not [c for c in replay_json(out) if c["func"] == "runtime.gopark"]


def test_parks_on_a_program_without_goroutines_says_so_in_one_line():
    p, out = record([fixture("c_offcpu")], "--parks", "-F", "quick")
    lines = [ln for ln in p.stderr.splitlines() if "--parks" in ln]
    assert len(lines) == 1 and "no runtime.gopark" in lines[0] and "not a Go program" in lines[0], p.stderr


def test_a_stripped_program_gets_the_reason_as_a_raw_byte_only():
    """No DWARF, no symbol table: gopark's third argument word, its low
    byte (Go's register ABI leaves the rest of the register undefined)."""
    p, out = record([fixture("go_parks_stripped")], "--parks", "-F", "main.recv")
    parks = [c for c in replay_json(out) if c["func"] == "runtime.gopark"]
    assert len(parks) == 1, ct("replay", out).stdout
    assert [a["name"] for a in parks[0]["args"]] == ["reason"], parks[0]
    assert 0 < parks[0]["args"][0]["value"] < 256, parks[0]


def test_parks_on_a_webassembly_module_says_so_in_one_line():
    p, out = record([fixture("go_app.wasm")], "--parks", "-F", "main.main")
    lines = [ln for ln in p.stderr.splitlines() if "--parks" in ln]
    assert len(lines) == 1 and "WebAssembly module" in lines[0] and "-F runtime.gopark" in lines[0], p.stderr


def test_parks_with_no_sched_are_calls_without_time_off_cpu():
    """--no-sched: no time off CPU is recorded (META record.off_cpu says
    so), the parks' neither -- they are calls, and no scheduler probe goes
    in."""
    p, out = record([fixture("go_parks")], "--parks", "--no-sched", *TRACED)
    parks = [c for c in replay_json(out) if c["func"] == "runtime.gopark"]
    assert len(parks) == 3 and not any("off_cpu" in c for c in parks), parks
    assert "proc=ready" not in ct("dump", "--events", out).stdout
