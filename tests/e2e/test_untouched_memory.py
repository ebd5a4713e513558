"""Arguments behind pointers to memory the program has not touched yet: a
string literal on a page that is not mapped until the traced call reads it
must still be shown (the probe faults it in, as the call is about to)."""
from lib import fixture, record, replay_json

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
