"""Arguments behind pointers to memory the program has not touched yet: a
string literal on a page that is not mapped until the traced call reads it
must still be shown (the probe faults it in, as the call is about to)."""
import re

from lib import ct, fixture, record, replay_json

TEXT = "a literal on a page nobody has touched"


def check(env=None):
    p, out = record([fixture("c_literal")], "-F", "greet", env=env)
    assert p.stdout == "38 38\n", p.stdout
    calls = replay_json(out)
    assert [c["func"] for c in calls] == ["greet", "greet"], calls
    for c in calls:
        assert c["args"] == [{"name": "s", "type": "const char *", "value": TEXT}], c["args"]
        assert c["ret"][0]["value"] == 38, c


def test_string_literal_on_an_untouched_page():
    check()


def test_string_literal_on_an_untouched_page_perf_events():
    # kernels without uprobe_multi: the sleepable programs on perf-event uprobes
    check({"CALLTRACE_PERF_EVENTS": "1"})


ASLEEP_TEXT = "filled in by the fault handler"


def check_asleep(env=None):
    """The probe of slow() sleeps in the page fault of its argument (a
    userfaultfd page the fixture fills only after its other thread has made
    20 traced calls on the same CPU).  Each run keeps what it knows in its
    thread's own storage, off the kernel's per-CPU private stack and any
    per-CPU buffer, which those calls' probes run on meanwhile: the sleeper
    sends its own call with its value once the page is there, and the calls
    made while it slept have theirs too."""
    p, out = record([fixture("c_asleep")], "-F", "slow", "-F", "tick", env=env)
    assert p.stdout == "ticks 570\n30 30\n", p.stdout
    calls = replay_json(out)
    pid = calls[0]["pid"]
    slow = [c for c in calls if c["func"] == "slow"]
    ticks = [c for c in calls if c["func"] == "tick"]
    assert [(c["tid"], c["status"]) for c in slow] == [(pid, "returned")] * 2, slow
    assert [c["args"][0]["value"] for c in slow] == [ASLEEP_TEXT] * 2, slow
    assert [c["ret"][0]["value"] for c in slow] == [30, 30], slow
    assert all(c["tid"] != pid and c["status"] == "returned" for c in ticks), ticks
    assert [(c["args"][0]["value"], c["ret"][0]["value"]) for c in ticks] == [(i, 3 * i) for i in range(20)], ticks
    # the first slow() was still open (asleep) while the ticks ran
    assert slow[0]["ts"] < ticks[0]["ts"] and ticks[-1]["ts"] < slow[0]["ts"] + slow[0]["dur_raw"], (slow, ticks)
    info = ct("info", out).stdout
    assert not re.search(r"^args\.dropped", info, re.M), info


def test_argument_behind_a_page_fault_that_sleeps():
    check_asleep()


def test_argument_behind_a_page_fault_that_sleeps_perf_events():
    check_asleep({"CALLTRACE_PERF_EVENTS": "1"})
