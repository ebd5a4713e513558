"""Which processes a recording covers: -p given the same process twice (or
by one of its threads), and --follow with processes that fork and exit
before their children do."""
import subprocess

from lib import ct, fixture, our_links, replay_json, tmp, trees


def test_same_process_given_twice_is_traced_once():
    prog = subprocess.Popen([fixture("c_procs"), "thread", "60"], stdout=subprocess.PIPE, text=True)
    try:
        tid = int(prog.stdout.readline().split()[1])
        assert tid != prog.pid
        out = tmp("pp.data")
        r = ct("record", "-o", out, "-p", str(prog.pid), "-p", str(tid), "-p", str(prog.pid),
               "--duration", "300ms", "-F", "tick")
        assert r.returncode == 0, r.stderr
        assert f"{tid} is a thread of process {prog.pid}" in r.stderr, r.stderr
        assert "tracing 1 process " in r.stderr, r.stderr
        calls = replay_json(out)
        ticks = [c for c in calls if c["func"] == "tick"]
        assert len(ticks) >= 5, len(ticks)
        # each call once: never a second copy unwound by the first
        assert all(c["depth"] == 0 and c["status"] in ("returned", "unfinished") for c in ticks), \
            [(c["depth"], c["status"]) for c in ticks][:6]
        starts = [c["ts"] for c in ticks]
        assert len(starts) == len(set(starts)), "an entry was recorded twice"
        assert our_links() == []
    finally:
        prog.kill()
        prog.wait()
