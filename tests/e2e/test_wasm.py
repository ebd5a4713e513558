"""WebAssembly modules: WASI (clang, wat2wasm) and Go GOOS=js fixtures run on
node and traced through the instrumented module; trees checked against
node's own --trace-wasm, values, traps, tail calls, exceptions, goroutines,
every output format through real parsers, limits, and errors."""
import collections
import json
import os
import re
import subprocess

import test_dump as dumps
from lib import ROOT, ct, fixture, record, replay_json, run, tmp, trees

RUNNER = os.path.join(ROOT, "src", "wasm", "runner.cjs")
WASM_EXEC = "/usr/lib/go-1.19/misc/wasm/wasm_exec.js"


def plain(module, *args, extra_node=()):
    """The same module untraced, on the same runner."""
    env = dict(os.environ, CALLTRACE_GO_WASM_EXEC=WASM_EXEC)
    return run(["node", "--no-warnings", *extra_node, RUNNER, "-", module, module, *args], env=env)


def roots(out, *flags):
    forest = trees(replay_json(out, *flags))
    return forest, [r for rs in forest.values() for r in rs]


def shape_of(forest):
    return sorted(r.shape() for rs in forest.values() for r in rs)


def test_wasi_tree_values_output_and_exit_status():
    mod = fixture("wasi_core.wasm")
    want = plain(mod, "x", "7")
    assert want.returncode == 7, want
    p, out = record([mod, "x", "7"], "-F", "main", "-F", "outer", "-F", "mid", "-F", "leaf", "-F", "fib",
                    "-F", "scale", "-F", "mix6", check=False)
    assert p.returncode == 7, p.stderr
    assert p.stdout == want.stdout == "outer=23 scale=6.00 args=3\n"
    forest, rs = roots(out)
    fib4 = "fib(fib(fib(fib,fib),fib),fib(fib,fib))"
    # clang turns the second recursive call of fib into a loop: only the
    # calls that are calls in the module are traced
    assert len(rs) == 1 and rs[0].func == "main", [r.shape() for r in rs]
    outer = rs[0].children[0]
    assert outer.func == "outer" and outer.children[0].shape() == "mid(leaf,leaf)", outer.shape()
    calls = replay_json(out)
    assert all(c["status"] == "returned" and c["goid"] is None for c in calls)
    by = collections.defaultdict(list)
    for c in calls:
        by[c["func"]].append(c)
    assert [a["args"][0]["value"] for a in by["leaf"]] == [4, 5]
    assert [a["ret"][0]["value"] for a in by["leaf"]] == [9, 11]
    assert by["mid"][0]["ret"] == [{"name": "", "type": "i32", "value": 20}]
    sc = by["scale"][0]
    assert [(a["name"], a["type"], a["value"]) for a in sc["args"]] == \
        [("p0", "f64", 1.5), ("p1", "f32", 2), ("p2", "i64", 3)], sc["args"]
    assert sc["ret"][0]["value"] == 6
    # two values through arg hooks, the last four with the entry (rewrite.c)
    m6 = by["mix6"][0]
    assert [(a["type"], a["value"]) for a in m6["args"]] == \
        [("i32", 1), ("i64", 2), ("f32", 3), ("f64", 4), ("i32", 5), ("i32", 6)], m6["args"]
    assert m6["ret"] == [{"name": "", "type": "i64", "value": 45}], m6["ret"]
    assert by["main"][0]["args"][0]["value"] == 3  # argc
    assert fib4  # (documented shape for fib(4) without the loop transformation)
    text = ct("replay", out).stdout
    assert re.search(r"\|   outer\(p0=4\) \{", text), text
    assert "leaf(p0=4) = 9;" in text
    info = ct("info", out).stdout
    assert "WebAssembly, WASI, run by node (node:wasi" in info, info


def test_wasi_parameter_names_from_dwarf():
    p, out = record([fixture("wasi_core_g.wasm")], "-F", "main", "-F", "mid", "-F", "leaf", "-F", "scale")
    by = {}
    for c in replay_json(out):
        by.setdefault(c["func"], c)
    assert [a["name"] for a in by["main"]["args"]] == ["argc", "argv"], by["main"]
    assert [(a["name"], a["value"]) for a in by["leaf"]["args"]] == [("x", 4)]
    assert [(a["name"], a["type"], a["value"]) for a in by["scale"]["args"]] == \
        [("v", "f64", 1.5), ("f", "f32", 2), ("k", "i64", 3)]
    assert "scale(v=1.5, f=2, k=3) = 6;" in ct("replay", out).stdout
    assert "parameter names" in ct("info", out).stdout


def trace_wasm_forest(module, *args):
    """node --trace-wasm on the original module: the call tree V8 itself saw."""
    p = plain(module, *args, extra_node=("--trace-wasm",))
    assert p.returncode == 0, p.stderr
    stack, rts = [], []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\d+):\s*~?wasm-function\[\d+\] \"(.*)\" \{$", line)
        if m:
            node = [m[2], []]
            (stack[-1][1] if stack else rts).append(node)
            stack.append(node)
            assert len(stack) == int(m[1]), line
            continue
        if re.match(r"\s*\d+:\s*\}", line):
            stack.pop()
    assert not stack

    def shape(n):
        return n[0] if not n[1] else n[0] + "(" + ",".join(shape(k) for k in n[1]) + ")"
    return [shape(r) for r in rts]


def test_wasi_every_function_matches_node_trace_wasm():
    mod = fixture("wasi_core.wasm")
    oracle = trace_wasm_forest(mod, "quiet")
    p, out = record([mod, "quiet"], "-F", "*")
    forest, rs = roots(out)
    assert [r.shape(short=False) for r in rs] == oracle
    assert len(list(n for r in rs for n in r.walk())) > 25  # libc's start-up, malloc, ...


NICE_PROBE = r"""
const fs = require('fs'), os = require('os'), before = os.getPriority();
process.on('exit', () => {
  const nice = {};
  for (const t of fs.readdirSync('/proc/self/task')) {
    const st = fs.readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
    nice[t] = +st.slice(st.lastIndexOf(')') + 2).split(' ')[16];
  }
  process.stderr.write('NICE ' + JSON.stringify({before, main: nice[process.pid], pid: process.pid, nice}) + '\n');
});
"""


def test_runner_puts_v8_workers_behind_the_program():
    # runner.cjs: V8's background compiler threads 10 nicer, the
    # program's own thread (and so what it starts) as it was
    probe = tmp("nice_probe.cjs")
    with open(probe, "w") as f:
        f.write(NICE_PROBE)
    p = plain(fixture("wasi_core.wasm"), "quiet", extra_node=("-r", probe))
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stderr.split("NICE ", 1)[1])
    assert got["main"] == got["before"], got
    others = [n for t, n in got["nice"].items() if int(t) != got["pid"]]
    assert len(others) >= 4 and all(n == min(19, got["before"] + 10) for n in others), got


def test_wasi_trap_unwinds_and_exits_like_untraced():
    mod = fixture("wasi_core.wasm")
    want = plain(mod, "trap")
    p, out = record([mod, "trap"], "-F", "main", "-F", "crash", check=False)
    assert (p.returncode, p.stdout) == (want.returncode, want.stdout) == (1, "about to trap\n")
    assert want.stderr.startswith("RuntimeError: unreachable\n    at crash\n"), want.stderr
    assert p.stderr == want.stderr, (p.stderr, want.stderr)
    calls = replay_json(out)
    assert [(c["func"], c["depth"], c["status"]) for c in calls] == \
        [("main", 0, "unwound"), ("crash", 1, "unwound"), ("crash", 2, "unwound"), ("crash", 3, "unwound")]
    assert "exited 1" in ct("info", out).stdout


def test_tail_calls_run_in_constant_stack_and_multi_value():
    mod = fixture("wasi_tail.wasm")
    p, out = record([mod], "-F", "*")
    assert p.stdout == "done\n"
    rep = {r["func"]: r for r in json.loads(ct("report", "--format=json", out).stdout)}
    assert {f: r["calls"] for f, r in rep.items()} == {"main": 1, "count": 1000001, "sum2": 1, "divmod": 1}
    # each return_call is an exit and an entry: siblings (no count nests in another)
    assert rep["count"]["returned"] == 1000001 and rep["count"]["self_ns"] == rep["count"]["total_ns"]
    first = replay_json(out, "--max-calls", "3")
    assert [(c["func"], c["depth"], c["status"]) for c in first[1:]] == [("count", 1, "returned")] * 2
    assert [c["args"][0]["value"] for c in first[1:]] == [1000000, 999999]
    rest = replay_json(out, "-N", "count")
    assert [(c["func"], c["depth"]) for c in rest] == [("main", 0), ("sum2", 1), ("divmod", 2)]
    assert [(r["name"], r["value"]) for r in rest[2]["ret"]] == [("r0", 3), ("r1", 2)], rest[2]["ret"]


def test_exceptions_unwind_the_frames_they_skip():
    mod = fixture("wasi_eh.wasm")
    want = plain(mod)
    p, out = record([mod], "-F", "*")
    assert p.stdout == want.stdout == "caught\n"
    got = [(c["func"], c["depth"], c["status"]) for c in replay_json(out)]
    assert got == [("main", 0, "returned"), ("catcher", 1, "returned"), ("middle", 2, "unwound"),
                   ("thrower", 3, "unwound"), ("after", 1, "returned")], got


def test_rewritten_modules_validate():
    for name, flags in (("wasi_core.wasm", ["-F", "*"]), ("wasi_core.wasm", []), ("wasi_tail.wasm", ["-F", "*"]),
                        ("wasi_eh.wasm", ["-F", "*"]), ("wasi_shift.wasm", ["-F", "*"]),
                        ("go_app.wasm", []), ("go_app.wasm", ["-F", "main.*", "-F", "fmt.*"])):
        saved = tmp("instrumented.wasm")
        if os.path.exists(saved):
            os.unlink(saved)
        p, out = record([fixture(name), "quiet"], *flags, env={"CALLTRACE_WASM_SAVE": saved}, check=False)
        assert os.path.exists(saved), (name, p.stderr)
        v = run(["wasm-validate", "--enable-tail-call", "--enable-exceptions", saved])
        assert v.returncode == 0, (name, flags, v.stderr)
        names = run(["wasm-objdump", "-x", "-j", "name", saved]).stdout
        assert ('<main>' in names) or ('<main.main>' in names), (name, names[:300])


def test_go_goroutines_blocks_and_exact_names():
    mod = fixture("go_app.wasm")
    want = plain(mod)
    assert want.returncode == 0, want.stderr
    p, out = record([mod])
    assert p.stdout == want.stdout == "sum 30 risky 1 -1 depth 100\n"
    calls = replay_json(out)
    # runtime.Goexit ends a goroutine with its frames open: unwound, as natively
    assert {(c["func"], c["status"]) for c in calls if c["status"] != "returned"} == \
        {("main.quitter", "unwound"), ("main.leave", "unwound")}, [c for c in calls if c["status"] != "returned"]
    forest = trees(calls)
    by_g = {k[2]: [r.shape() for r in rs] for k, rs in forest.items()}
    assert all(g is not None for g in by_g), by_g
    depth_chain = "main.depth"
    for _ in range(200):
        depth_chain = f"main.depth({depth_chain})"
    main_g = [g for g, s in by_g.items() if s[0].startswith("main.main(")]
    assert len(main_g) == 1 and main_g[0] == 1, by_g.keys()
    assert by_g[1] == [f"main.main(main.risky(main.risky.func1),main.risky(main.risky.func1),{depth_chain})"]
    others = sorted(s for g, s in by_g.items() if g != 1)
    # (the go statements' wrappers main.main.funcN are left out, as natively)
    assert others == [["main.consume(" + ",".join(["main.(*Worker).Handle"] * 5) + ")"], ["main.produce"],
                      ["main.quitter(main.leave(main.quitter.func1))"]], others
    # the consumer blocked on the channel: one call spanning the switches
    consume = [c for c in calls if c["func"] == "main.consume"]
    produce = [c for c in calls if c["func"] == "main.produce"]
    assert len(consume) == 1 and len(produce) == 1
    assert consume[0]["ts"] < produce[0]["ts"] + produce[0]["dur"] < consume[0]["ts"] + consume[0]["dur"]
    text = ct("replay", out).stdout
    gid_col = re.findall(r"^\s*(?:[\d.]+ \w+)?\s+\[\s*\d+\]\s+(\d+) \|", text, re.M)
    assert set(map(int, gid_col)) == set(by_g), (set(gid_col), by_g.keys())
    info = ct("info", out).stdout
    assert "Go js/wasm, run by node" in info and "go1.19" in info, info
    # os.Exit's status passes through
    p3, _ = record([mod, "x"], check=False)
    assert p3.returncode == plain(mod, "x").returncode == 3


def test_every_output_format_parses():
    import test_report_yaml
    out = tmp("wasm-formats.data")
    record([fixture("go_app.wasm")], out=out)
    jcalls = replay_json(out)
    y, _ = test_report_yaml.replay_yaml(out)
    assert y == jcalls
    ccalls, names = dumps.check_chrome(dumps.chrome(out))
    dumps.compare_with_json(ccalls, jcalls, names)
    # (goroutine 1: all its calls returned; self_times wants that)
    assert dumps.folded(out, "--goroutine", "1") == dumps.self_times(replay_json(out, "--goroutine", "1"))
    rep = json.loads(ct("report", "--format=json", out).stdout)
    assert {r["func"]: r["calls"] for r in rep}["main.depth"] == 201
    frames = dumps.svg_frames(dumps.dump(out, "--svg"))
    assert frames
    # and a WASI trace with values
    wout = tmp("wasm-formats-wasi.data")
    record([fixture("wasi_core.wasm")], "-F", "outer", "-F", "mid", "-F", "leaf", "-F", "scale", out=wout)
    wj = replay_json(wout)
    y, _ = test_report_yaml.replay_yaml(wout)
    assert y == wj
    ccalls, names = dumps.check_chrome(dumps.chrome(wout))
    dumps.compare_with_json(ccalls, wj, names)


def test_list_shows_wasm_signatures():
    p = ct("list", fixture("wasi_core.wasm"), "scale", "mid")
    assert p.returncode == 0, p.stderr
    assert re.search(r"^mid\s+\(i32\) -> i32$", p.stdout, re.M), p.stdout
    assert re.search(r"^scale\s+\(f64, f32, i64\) -> f64$", p.stdout, re.M), p.stdout
    p = ct("list", fixture("go_app.wasm"))
    assert "names from the pclntab" in p.stdout and "main.(*Worker).Handle" in p.stdout, p.stdout
    p = ct("list", fixture("wasi_tail.wasm"), "divmod")
    assert re.search(r"divmod\s+\(i32, i32\) -> \(i32, i32\)", p.stdout), p.stdout


def test_limits_are_decided_in_the_runner():
    mod = fixture("wasi_core.wasm")
    _, full = record([mod, "quiet"], "-F", "*", out=tmp("wl-full.data"))
    fcalls = replay_json(full)
    _, out = record([mod, "quiet"], "-F", "*", "--max-depth", "3", out=tmp("wl-depth.data"))
    calls = replay_json(out)
    assert [(c["func"], c["depth"]) for c in calls] == [(c["func"], c["depth"]) for c in fcalls if c["depth"] < 3]
    cut = int(re.search(r"^cut\s+(\d+)", ct("info", out).stdout, re.M)[1])
    assert cut == 2 * sum(c["depth"] >= 3 for c in fcalls), cut
    # --root: the fib subtree only
    _, out = record([mod, "quiet"], "-F", "*", "--root", "outer", out=tmp("wl-root.data"))
    forest, rs = roots(out)
    full_forest, frs = roots(full)
    want = [n.shape() for r in frs for n in r.walk() if n.func == "outer"]
    assert [r.shape() for r in rs] == want
    # --max-events
    _, out = record([mod, "quiet"], "-F", "*", "--max-events", "10", out=tmp("wl-maxev.data"))
    info = ct("info", out).stdout
    assert re.search(r"^events:\s+10 ", info, re.M) and "--max-events reached" in info, info
    # --sample: 1 in 1000 root calls of count (0, 1000, ..., 1000000)
    _, out = record([fixture("wasi_tail.wasm")], "-F", "count", "--sample", "1000", out=tmp("wl-sample.data"))
    calls = replay_json(out)
    assert [c["args"][0]["value"] for c in calls] == list(range(1000000, -1, -1000))
    # --min-duration: what lasted long enough, and its callers
    _, out = record([fixture("go_app.wasm")], "--min-duration", "1ms", out=tmp("wl-mindur.data"))
    calls = replay_json(out)
    # (entries are sent once their call qualifies: roots in any order)
    assert "main.main" in {c["func"] for c in calls if c["depth"] == 0}, calls[:3]
    for roots_ in trees(calls).values():
        for r in roots_:
            for n in r.walk():
                assert n.call["dur"] >= 1000000 or any(k.call["dur"] >= 1000000 for k in n.walk()), n.call


def test_duration_and_max_size_stop_tracing_not_the_program():
    mod = fixture("wasi_tail.wasm")
    p, out = record([mod], "-F", "count", "--max-size", "64K", out=tmp("wm-size.data"))
    assert p.stdout == "done\n" and p.returncode == 0
    assert os.path.getsize(out) < 200 * 1024
    assert "--max-size reached" in ct("info", out).stdout
    assert len(replay_json(out)) > 1000
    mod = fixture("wasi_core.wasm")
    p, out = record([mod, "spin", "2500"], "-F", "main", "-F", "leaf", "--duration", "1s", out=tmp("wm-dur.data"))
    assert p.stdout == "spun\n" and p.returncode == 0, p.stderr
    calls = replay_json(out, "--max-calls", "3")
    assert calls[0]["func"] == "main" and calls[0]["status"] == "unfinished", calls[0]
    assert calls[1]["func"] == "leaf" and calls[1]["status"] == "returned"
    info = ct("info", out).stdout
    assert "still running (tracing stopped)" in info, info
    end = int(re.search(r"clock.end_ns\s+(\d+)", info)[1]) - int(re.search(r"clock.start_ns\s+(\d+)", info)[1])
    assert 1e9 <= end < 2.2e9, end


def test_calls_seconds_long_keep_their_times():
    """The wire says a record's time as the difference from the last one's
    (wire.h): a gap of seconds, and an entry sent late (--min-duration) as
    long before the record ahead of it, go by another record: the times
    stay exact."""
    mod = fixture("wasi_core.wasm")
    _, out = record([mod, "nap", "2300"], "-F", "main", "-F", "nap", "-F", "leaf", out=tmp("wn-full.data"))
    calls = replay_json(out)
    assert [(c["func"], c["depth"]) for c in calls] == \
        [("main", 0), ("leaf", 1), ("nap", 1), ("leaf", 2), ("leaf", 2), ("leaf", 1)], calls
    main, leaf0, nap, leaf1, leaf2, leaf3 = calls
    assert 2.3e9 <= nap["dur_raw"] < 3.3e9, nap
    # in order, each inside its caller, the second leaf of nap after the sleep
    assert main["ts"] <= leaf0["ts"] < leaf0["ts"] + leaf0["dur_raw"] <= nap["ts"] <= leaf1["ts"]
    assert leaf1["ts"] + 2.3e9 <= leaf2["ts"] <= leaf2["ts"] + leaf2["dur_raw"] <= nap["ts"] + nap["dur_raw"]
    assert nap["ts"] + nap["dur_raw"] <= leaf3["ts"] <= main["ts"] + main["dur_raw"]
    assert all(c["dur_raw"] < 1e8 for c in (leaf0, leaf1, leaf2, leaf3)), calls
    # main's and nap's entries go at nap's exit, 2.3 s after their times
    _, out = record([mod, "nap", "2300"], "-F", "main", "-F", "nap", "-F", "leaf", "--min-duration", "1s",
                    out=tmp("wn-min.data"))
    calls = replay_json(out)
    assert [(c["func"], c["depth"]) for c in calls] == [("main", 0), ("nap", 1)], calls
    main, nap = calls
    assert 2.3e9 <= nap["dur_raw"] < 3.3e9 and main["ts"] <= nap["ts"], calls
    assert nap["ts"] + nap["dur_raw"] <= main["ts"] + main["dur_raw"] < nap["ts"] + nap["dur_raw"] + 1e8, calls


def test_live_prints_the_tree():
    p = ct("live", "-F", "outer", "-F", "mid", "-F", "leaf", "--", fixture("wasi_core.wasm"))
    assert p.returncode == 0, p.stderr
    assert "outer=23" in p.stdout
    assert re.search(r"outer\(p0=4\) \{", p.stdout) and "leaf(p0=4) = 9;" in p.stdout, p.stdout


def test_errors_are_one_clear_line():
    obj = fixture("wasi_core.o")
    p = ct("record", "-o", tmp("we.data"), "--", obj)
    assert p.returncode == 1 and "relocatable wasm object" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    bare = tmp("bare.wasm")
    with open(bare, "wb") as f:
        f.write(b"\0asm\x01\0\0\0")
    p = ct("record", "-o", tmp("we.data"), "--", bare)
    assert p.returncode == 1 and "neither WASI" in p.stderr, p.stderr
    cut = tmp("cut.wasm")
    with open(fixture("wasi_core.wasm"), "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    p = ct("record", "-o", tmp("we.data"), "--", cut)
    assert p.returncode == 1 and "damaged" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    p = ct("record", "-o", tmp("we.data"), "-F", "no_such_function", "--", fixture("wasi_core.wasm"))
    assert p.returncode == 1 and "no function named no_such_function" in p.stderr, p.stderr
    p = ct("list", cut)
    assert p.returncode == 1 and "damaged" in p.stderr
