"""The readers (replay, report, dump) at scale and after losses: what they
print must stay true and bounded."""
import json
import re

from lib import ct, fixture, record, replay_json


def test_losses_mark_cut_calls_not_unwound():
    # fib never panics: with a 4 KiB ring buffer events are lost, and the
    # calls whose returns went with them must say so, not "unwound".
    p, out = record([fixture("go_core"), "fib", "21"], "--buffer-size", "4K")
    calls = [c for c in replay_json(out) if "func" in c]
    statuses = {c["status"] for c in calls}
    r = ct("info", out)
    assert r.returncode == 0
    m = re.search(r"lost\D*(\d+)", r.stdout)
    assert m and int(m.group(1)) > 0, f"no events were lost; the test needs losses: {r.stdout}"
    assert "unwound" not in statuses, statuses
    assert "lost" in statuses, statuses
    text = ct("replay", out)
    assert text.returncode == 0
    assert "unwound" not in text.stdout
    assert "end lost: events were lost" in text.stdout
    rep = ct("report", "--format=json", out)
    assert rep.returncode == 0, rep.stderr
    fib = next(f for f in json.loads(rep.stdout) if f["func"] == "main.fib")
    assert fib["unwound"] == 0 and fib["lost"] == sum(
        1 for c in calls if c["func"] == "main.fib" and c["status"] == "lost") > 0
    assert fib["calls"] == fib["returned"] + fib["unfinished"] + fib["lost"]
    txt = ct("report", out)
    assert re.search(r"^# \d+ lost calls", txt.stdout, re.M), txt.stdout[-600:]
    chrome = json.loads(ct("dump", "--chrome", out).stdout)
    assert chrome["metadata"]["unwound"] == 0 and chrome["metadata"]["lost"] == fib["lost"]
