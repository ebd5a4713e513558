"""calltrace dump: Chrome trace-event JSON, folded stacks and the SVG flame
graph, on traces recorded from the fixtures with real probes, checked against
`replay --format=json` of the same file (real parsers: json, xml.etree, and
headless Chromium for the SVG)."""
import collections
import decimal
import json
import os
import re
import signal
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

from lib import CT, TMP, attach_verbose, ct, fixture, record, replay_json, tmp, trees

CHROMIUM = "/usr/bin/chromium"
SVG_NS = "{http://www.w3.org/2000/svg}"


def dump(path, *flags):
    p = ct("dump", *flags, path)
    assert p.returncode == 0, f"dump {' '.join(flags)} failed ({p.returncode}): {p.stderr.strip()}"
    return p.stdout


def chrome(path, *flags):
    # Decimal: timestamps are µs with exactly 3 decimals; compare them in ns.
    return json.loads(dump(path, "--chrome", *flags), parse_float=decimal.Decimal)


def ns(ts):
    v = decimal.Decimal(ts) * 1000
    assert v == int(v), f"timestamp {ts} is finer than ns"
    return int(v)


def check_chrome(doc):
    """The rules Perfetto and speedscope need; returns the calls rebuilt from
    B/E pairs per track: dicts with track, name, depth, b, e (ns), B and E."""
    assert set(doc) >= {"traceEvents", "displayTimeUnit", "metadata"}, list(doc)
    assert doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    procs = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    stacks, last, calls = collections.defaultdict(list), {}, []
    for e in events:
        assert "ph" in e and "ts" in e, f"event without ph/ts: {e}"
        assert not any(isinstance(v, list) for v in e.values()), f"top-level array (Perfetto rejects it): {e}"
        if e["ph"] not in "BE":
            continue
        track = (e["pid"], e["tid"])
        assert track in names, f"no thread_name M event for track {track}"
        assert e["pid"] in procs, f"no process_name M event for pid {e['pid']}"
        t = ns(e["ts"])
        assert t >= last.get(track, 0), f"time goes back on track {track}: {e}"
        last[track] = t
        st = stacks[track]
        if e["ph"] == "B":
            st.append({"track": track, "name": e["name"], "depth": len(st), "b": t, "B": e})
        else:
            assert st, f"E without an open B on track {track}: {e}"
            top = st.pop()
            assert top["name"] == e["name"], f"E {e['name']} closes B {top['name']} on track {track}"
            top["e"], top["E"] = t, e
            calls.append(top)
    open_left = {k: [c["name"] for c in v] for k, v in stacks.items() if v}
    assert not open_left, f"B events never closed: {open_left}"
    return calls, names


def by_entry(calls):
    return sorted(calls, key=lambda c: (c["b"], c["depth"]))


def track_of(call):
    """The Chrome track a JSON Lines call belongs on: (pid, track name)."""
    if call["goid"] is not None:
        return (call["pid"], f"goroutine {call['goid']}")
    return (call["pid"], f"thread {call['tid']}")


def compare_with_json(ccalls, jcalls, names):
    """Every JSON call is exactly one B/E pair: on its goroutine's/thread's
    track, same function, depth, entry time and (for returned calls)
    duration, in ns."""
    assert len(ccalls) == len(jcalls), (len(ccalls), len(jcalls))
    for c in ccalls:
        c["track_name"] = (c["track"][0], names[c["track"]])
    want = sorted((track_of(c), c["ts"], c["depth"], c["func"]) for c in jcalls)
    got = sorted((c["track_name"], c["b"], c["depth"], c["name"]) for c in ccalls)
    assert got == want, [x for x in zip(got, want) if x[0] != x[1]][:5]
    # calls that take no time once the tracer's is out can share a start:
    # the same statuses and durations at each (track, start, depth)
    want, got = {}, {}
    for c in jcalls:
        want.setdefault((track_of(c), c["ts"], c["depth"]), []).append(
            (c["status"], c["dur"] if c["status"] == "returned" else None))
    for c in ccalls:
        status = (c["E"].get("args") or {}).get("status", "returned")
        got.setdefault((c["track_name"], c["b"], c["depth"]), []).append(
            (status, c["e"] - c["b"] if status == "returned" else None))
    for k in want:
        assert sorted(got[k]) == sorted(want[k]), (k, got[k], want[k])


def test_chrome_fib_matches_json():
    p, out = record([fixture("go_core"), "fib", "9"], "-F", "main.fib")
    doc = chrome(out)
    ccalls, names = check_chrome(doc)
    jcalls = replay_json(out)
    assert sum(e["ph"] == "B" for e in doc["traceEvents"]) == len(jcalls) == 109
    compare_with_json(ccalls, jcalls, names)
    assert set(names.values()) == {"goroutine 1"}, names
    assert doc["metadata"]["calls"] == len(jcalls)
    # Arguments and results are the JSON Lines values, on B and E.
    # (calls sharing a corrected start: the same values at each start and depth)
    jby, cby = {}, {}
    for c in jcalls:
        jby.setdefault((c["ts"], c["depth"]), []).append(json.dumps([c["args"], c["ret"]], sort_keys=True))
    for c in ccalls:
        cby.setdefault((c["b"], c["depth"]), []).append(
            json.dumps([c["B"]["args"]["arguments"], c["E"]["args"]["results"]], sort_keys=True))
    for k, v in jby.items():
        assert sorted(cby[k]) == sorted(v), (k, cby[k], v)
    # --no-args: no per-call values (speedscope names frames by name + args).
    bare = chrome(out, "--no-args")
    assert not any("args" in e for e in bare["traceEvents"] if e["ph"] in "BE")
    assert [(c["name"], c["b"], c["e"]) for c in by_entry(check_chrome(bare)[0])] == \
        [(c["name"], c["b"], c["e"]) for c in by_entry(ccalls)]


def test_chrome_one_track_per_goroutine():
    p, out = record([fixture("go_core"), "goroutines", "6"])
    doc = chrome(out)
    ccalls, names = check_chrome(doc)
    jcalls = replay_json(out)
    compare_with_json(ccalls, jcalls, names)
    goids = {c["goid"] for c in jcalls}
    assert len(goids) == 7, goids
    pid = jcalls[0]["pid"]
    assert {t for t in names} == {(pid, g) for g in goids}, names
    assert all(names[(pid, g)] == f"goroutine {g}" for g in goids)
    procs = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert [p["args"]["name"] for p in procs] == ["go_core goroutines 6"], procs


def test_chrome_unwound_and_unfinished_are_closed():
    p, out = record([fixture("go_core"), "panic", "3"])
    doc = chrome(out)
    ccalls, names = check_chrome(doc)
    jcalls = replay_json(out)
    compare_with_json(ccalls, jcalls, names)
    unwound = [c for c in ccalls if c["E"].get("args", {}).get("status") == "unwound"]
    assert [c["name"] for c in unwound] == ["main.boom"] * 4, [c["name"] for c in unwound]
    assert doc["metadata"]["unwound"] == 4 and doc["metadata"]["unfinished"] == 0, doc["metadata"]
    safe = next(c for c in ccalls if c["name"] == "main.safe")
    func1 = next(c for c in ccalls if c["name"] == "main.safe.func1")
    # Closed where the reconstruction saw the unwinding, all at once: when
    # safe resumed after the recovery (runtime.deferreturn), after the
    # recovering deferred call and before safe returned.
    assert len({c["e"] for c in unwound}) == 1
    assert func1["e"] <= unwound[0]["e"] <= safe["e"], (func1["e"], unwound[0]["e"], safe["e"])
    p, out = record([fixture("go_core"), "exit", "3"], check=False)
    assert p.returncode == 3, p.stderr
    ccalls, _ = check_chrome(chrome(out))
    # os.Exit inside main.main: the process ended there
    assert [(c["name"], c["E"]["args"]["status"]) for c in ccalls] == [("main.main", "exited")]


def test_chrome_c_threads_and_longjmp():
    p, out = record([fixture("c_core"), "threads"])
    ccalls, names = check_chrome(chrome(out))
    jcalls = replay_json(out)
    compare_with_json(ccalls, jcalls, names)
    tids = {c["tid"] for c in jcalls}
    assert len(tids) == 3 and set(names.values()) == {f"thread {t}" for t in tids}, names
    p, out = record([fixture("c_core"), "longjmp"])
    ccalls, names = check_chrome(chrome(out))
    compare_with_json(ccalls, replay_json(out), names)
    assert sum(c["E"].get("args", {}).get("status") == "unwound" for c in ccalls) == 4


def test_chrome_follow_one_process_per_pid():
    p, out = record([fixture("c_core"), "forkexec", fixture("go_core"), "fib", "3"], "--follow",
                    "-F", "c_fib", "-F", "main.*")
    doc = chrome(out)
    ccalls, names = check_chrome(doc)
    jcalls = replay_json(out)
    compare_with_json(ccalls, jcalls, names)
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert set(procs) == {c["pid"] for c in jcalls} and len(procs) == 2, procs
    # The record keeps one command line: every process carries it.
    assert set(procs.values()) == {f"c_core forkexec {fixture('go_core')} fib 3"}, procs
    assert all(0 < tid < 2 ** 32 for _, tid in names), names


def test_chrome_filters_and_output_file():
    p, out = record([fixture("go_core"), "fib", "6"])
    dest = tmp("fib.json")
    r = ct("dump", "-F", "main.fib", "-o", dest, out)
    assert r.returncode == 0 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert oct(os.stat(dest).st_mode & 0o777) == "0o600"  # it holds argument values
    with open(dest) as f:
        ccalls, names = check_chrome(json.load(f, parse_float=decimal.Decimal))
    jcalls = replay_json(out, "-F", "main.fib")
    compare_with_json(ccalls, jcalls, names)
    assert {c["name"] for c in ccalls} == {"main.fib"} and len(ccalls) == 25


def writing_into(pid, d):
    """Whether process PID has a file of directory D open with something
    written in it."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith(d + "/") and os.stat(f"/proc/{pid}/fd/{fd}").st_size > 0:
                return True
    except OSError:  # (it ended, or closed it meanwhile)
        pass
    return False


def test_interrupted_dump_leaves_nothing():
    """dump -o stopped while it writes (Ctrl-C, timeout's SIGTERM, SIGKILL)
    left its hidden temporary file, .NAME.XXXXXXXX, as big as what it had
    written, next to the output: one more each time. Now the output has no
    name until it is whole."""
    _, out = record([fixture("c_core"), "fib", "24"], out=tmp("dump-interrupted.data"))
    d = tmp("dump-interrupted")
    os.makedirs(d, exist_ok=True)
    caught = set()
    for attempt in range(40):
        sig = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)[attempt % 3]
        p = subprocess.Popen([CT, "dump", "--chrome", "-o", os.path.join(d, "trace.json"), out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        while p.poll() is None and not writing_into(p.pid, d):
            pass
        p.send_signal(sig)
        if p.wait() == -sig:
            caught.add(sig)
        for name in os.listdir(d):
            os.unlink(os.path.join(d, name))  # (a dump that ended first made trace.json)
            assert name == "trace.json", f"{signal.Signals(sig).name} left {name}"
        if len(caught) == 3:
            break
    assert len(caught) == 3, f"dump was never stopped while writing by {sorted(caught)} of 3 signals"


def test_losses_are_marked_and_output_stays_balanced():
    # A 4 KiB ring buffer cannot always keep up with fib(24) (~150,000
    # events): events are lost.  (fib 21's 35,000 often lost none of their
    # own, once the start-up calibration's drops stopped counting: record
    # until some are, as readers/losses_mark_cut_calls_not_unwound does.)
    for attempt in range(5):
        p, out = record([fixture("go_core"), "fib", "24"], "--buffer-size", "4K")
        doc = chrome(out)
        check_chrome(doc)
        lost = doc["metadata"]["lost_events"]
        if lost:
            break
    assert lost > 0, "no events were lost in 5 recordings; the test needs losses"
    # record says so itself, as it ends (exit 0: the trace holds the rest)
    assert p.returncode == 0 and f"warning: {lost} events were lost while recording" in p.stderr, p.stderr
    marks = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert marks and all(e["s"] == "g" and e["name"] == f"LOST {e['args']['lost']} events" for e in marks)
    assert sum(e["args"]["lost"] for e in marks) == lost
    r = ct("dump", "--folded", out)
    assert r.returncode == 0 and f"{lost} events were lost" in r.stderr, r.stderr
    assert all(re.fullmatch(r"\S+ \d+", line) for line in r.stdout.splitlines())
    r = ct("dump", "--svg", out)
    assert r.returncode == 0 and f"LOST {lost} events" in r.stdout
    svg_frames(r.stdout)


def folded(path, *flags):
    counts = {}
    for line in dump(path, "--folded", *flags).splitlines():
        m = re.fullmatch(r"(\S+) (\d+)", line)
        assert m, f"not a folded line: {line!r}"
        assert m[1] not in counts, f"stack printed twice: {m[1]}"
        counts[m[1]] = int(m[2])
    return counts


def self_times(jcalls):
    """Self time (ns) per stack path from the JSON trees, returned calls."""
    out = collections.Counter()
    for roots in trees(jcalls).values():
        todo = [(r, r.func) for r in roots]
        while todo:
            n, path = todo.pop()
            assert n.call["status"] == "returned", n.call
            out[path] += n.call["dur"] - sum(k.call["dur"] for k in n.children)
            todo += [(k, path + ";" + k.func) for k in n.children]
    return {k: v for k, v in out.items() if v}


def test_folded_fib_self_times():
    p, out = record([fixture("go_core"), "fib", "10"], "-F", "main.fib")
    # measured times: every depth has time; corrected ones may leave a
    # depth with none (no line for it)
    assert len(folded(out, "--raw")) == 10  # fib(10) recurses 10 deep
    counts = folded(out)
    assert all(re.fullmatch(r"main\.fib(;main\.fib)*", s) for s in counts), list(counts)
    jcalls = replay_json(out)
    want = self_times(jcalls)
    assert counts == want, (counts, want)
    assert sum(counts.values()) == sum(c["dur"] for c in jcalls if c["depth"] == 0)


def test_folded_filters_and_goroutines():
    p, out = record([fixture("go_core"), "fib", "7"])
    whole = folded(out)
    assert all(s.startswith("main.main") for s in whole), list(whole)
    # (measured times: corrected, every fib may have no time left)
    only = folded(out, "--raw", "-F", "main.fib")
    assert only and all(re.fullmatch(r"main\.fib(;main\.fib)*", s) for s in only), list(only)
    assert only == self_times(replay_json(out, "--raw", "-F", "main.fib"))
    p, out = record([fixture("go_core"), "goroutines", "5"])
    counts = folded(out)
    assert counts == self_times(replay_json(out))
    # Goroutines merge by function path: one stack for all five workers
    # (measured times: a corrected leaf may have no time left).
    assert "main.goroutines.func1;main.work;main.leaf" in folded(out, "--raw"), list(counts)
    assert not any(s.startswith("main.main;main.goroutines.func1") for s in counts)


def test_folded_unwound_counts_known_time():
    p, out = record([fixture("go_core"), "panic", "3"])
    counts = folded(out)
    ccalls, _ = check_chrome(chrome(out))
    # Every call counts the time it is known to have run (unwound: until the
    # unwinding was seen), so the lines sum to the outermost calls' spans.
    assert sum(counts.values()) == sum(c["e"] - c["b"] for c in ccalls if c["depth"] == 0)
    assert "main.main;main.safe;main.boom;main.boom;main.boom;main.boom;main.safe.func1" in folded(out, "--raw"), \
        list(counts)  # measured: corrected, the deferred closure may have no time left
    # ...and per stack, self = span minus children, from the Chrome pairs.
    want = collections.Counter()
    stack = []
    for c in by_entry(ccalls):
        del stack[c["depth"]:]
        stack.append(c)
        path = ";".join(s["name"] for s in stack)
        kids = [k for k in ccalls if k["depth"] == c["depth"] + 1 and c["b"] <= k["b"] and k["e"] <= c["e"]]
        want[path] += (c["e"] - c["b"]) - sum(k["e"] - k["b"] for k in kids)
    assert counts == {k: v for k, v in want.items() if v}


def svg_frames(text, scripts_wanted=1):
    root = ET.fromstring(text)
    assert root.tag == SVG_NS + "svg", root.tag
    frames = [g for g in root.iter(SVG_NS + "g") if "f" in (g.get("class") or "").split()]
    for g in frames:
        assert g.find(SVG_NS + "title") is not None and g.find(SVG_NS + "rect") is not None, ET.tostring(g)
    scripts = list(root.iter(SVG_NS + "script"))
    assert len(scripts) == scripts_wanted and "zoom" in scripts[0].text, [s.text for s in scripts]
    assert not any(s.get("href") for s in scripts)
    assert "http" not in text.replace("http://www.w3.org/2000/svg", ""), "the SVG must need no network"
    return root, frames


def test_svg_frames_and_titles():
    p, out = record([fixture("go_core"), "goroutines", "5"])
    # measured times: a call corrected to no time has no width to draw
    text = dump(out, "--svg", "--raw")
    root, frames = svg_frames(text)
    stacks = set()
    for path in self_times(replay_json(out, "--raw")):
        parts = path.split(";")
        stacks.update(";".join(parts[:i]) for i in range(1, len(parts) + 1))
    # One frame per distinct stack, plus "all".
    assert len(frames) == len(stacks) + 1, (len(frames), sorted(stacks))
    titles = [g.find(SVG_NS + "title").text for g in frames]
    assert titles[0].startswith("all\n")
    for fn in ("main.main", "main.goroutines.func1", "main.work", "main.leaf"):
        t = next((t for t in titles if t.startswith(fn + "\n")), None)
        assert t and re.search(r"\d+ calls?, [\d.]+ (ns|us|ms|s) \([\d.]+%\), self", t), (fn, t)
    leaf = next(t for t in titles if t.startswith("main.leaf\n"))
    assert leaf.split("\n")[1].startswith("9 calls"), leaf  # (i%3)+1 for i<5
    widths = [float(g.find(SVG_NS + "rect").get("width")) for g in frames]
    assert abs(widths[0] - 1180) < 0.01 and all(w >= 0.1 for w in widths)


def test_markup_in_names_is_escaped():
    # The command line is shown in the SVG title and the Chrome process name.
    odd = "<a&b \"c\" 'd'> ;x"
    p, out = record([fixture("c_core"), "fib", "3", odd], "-F", "c_fib")
    # measured times: a corrected innermost c_fib may have no width to draw
    root, frames = svg_frames(dump(out, "--svg", "--raw"))
    title = next(t for t in root.iter(SVG_NS + "text") if t.get("class") == "title")
    assert title.text == "Flame graph: c_core fib 3 " + odd, title.text
    assert len(frames) == 1 + 3  # all, c_fib, c_fib;c_fib, c_fib;c_fib;c_fib
    doc = chrome(out)
    procs = [e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"]
    assert procs == ["c_core fib 3 " + odd], procs


def png_pixels(path):
    """Decodes an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, hdr
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, pixels, i = bytearray(stride), [], 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels += [bytes(line[x:x + 3]) for x in range(0, stride, bpp)]
        prev = line
    return w, h, pixels


def chromium(*args):
    assert os.path.exists(CHROMIUM), "chromium is not installed: run 'make deps' (Debian package chromium)"
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", "--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-", dir=TMP),
                           *args], capture_output=True, text=True, timeout=120)


def test_svg_renders_and_zooms_in_chromium():
    p, out = record([fixture("go_core"), "goroutines", "6"])
    svg = tmp("flame.svg")
    # measured times: a corrected main.leaf may have no width to draw
    r = ct("dump", "--svg", "--raw", "-o", svg, out)
    assert r.returncode == 0, r.stderr
    png = tmp("flame.png")
    c = chromium("--screenshot=" + png, "--window-size=1200,800", "file://" + svg)
    assert os.path.exists(png), f"no screenshot: {c.stderr[-1500:]}"
    w, h, pixels = png_pixels(png)
    assert (w, h) == (1200, 800), (w, h)
    colours = collections.Counter(pixels)
    not_white = sum(n for px, n in colours.items() if px != b"\xff\xff\xff")
    assert len(colours) > 50 and not_white > 50000, (len(colours), not_white)
    # Frames are drawn in their flame colours (red/orange/yellow, r >= 205).
    flame = sum(n for px, n in colours.items() if px[0] >= 205 and px[2] <= 60 and px[1] < 235)
    assert flame > 5000, flame
    # Zoom: click main.work, then read back the DOM the script changed.
    text = open(svg).read()
    click = ("<script type=\"text/ecmascript\"><![CDATA[\n"
             "var g = Array.prototype.filter.call(document.querySelectorAll('g.f'),"
             " function (g) { return g.getAttribute('data-n') === 'main.work'; })[0];\n"
             "g.dispatchEvent(new MouseEvent('click', {bubbles: true}));\n]]></script>\n</svg>")
    zoomed = tmp("zoomed.svg")
    with open(zoomed, "w") as f:
        f.write(text.replace("</svg>", click))
    c = chromium("--dump-dom", "file://" + zoomed)
    root, frames = svg_frames(c.stdout, scripts_wanted=2)
    shown = {g.get("data-n"): g for g in frames if "display: none" not in (g.get("style") or "")}
    assert set(shown) == {"all", "main.goroutines.func1", "main.work", "main.leaf"}, set(shown)
    assert abs(float(shown["main.work"].find(SVG_NS + "rect").get("width")) - 1180) < 0.01
    assert shown["main.goroutines.func1"].get("class") == "f ancestor"
    assert "main.main" not in shown


def test_usage_errors_are_one_line():
    p, out = record([fixture("go_core"), "fib", "3"], "-F", "main.fib")
    for args, rc, msg in [
        (["--bogus", out], 2, "unknown option '--bogus'"),
        (["-Z", out], 2, "unknown option '-Z'"),
        (["-o"], 2, "option '-o' needs a value"),
        (["--format=png", out], 2, "unknown format 'png'"),
        (["--svg", "--folded", out], 2, "--svg and --folded exclude each other"),
        ([tmp("no-such.data")], 1, "does not exist"),
        (["-o", out, out], 1, "is the record file being dumped"),
    ]:
        r = ct("dump", *args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == rc and len(lines) == 1 and msg in lines[0], (args, r.returncode, r.stderr)
        assert lines[0].startswith("calltrace: ") and r.stdout == "", (args, r.stdout)
    assert os.path.getsize(out) > 0 and replay_json(out), "the record was damaged"
    assert ct("dump", "--help").returncode == 0


EVENT_LINE = re.compile(r"ts=\d+( \w+=\S+)*$")


def events(path):
    """dump --events, each line a dict of its fields (all key=value)."""
    text = dump(path, "--events")
    lines = text.splitlines()
    assert lines[0].startswith("# ") and "dump --events" in lines[0], lines[:1]
    out = []
    for line in lines[1:]:
        assert EVENT_LINE.match(line), line
        kv = dict(f.split("=", 1) for f in line.split(" "))
        assert len(kv) == line.count(" ") + 1, f"a field twice: {line}"
        out.append(kv)
    return out


def test_events_of_an_attach_are_key_value_too():
    """-p: the records of the probes going in (proc=probes_in) say which
    moment they mark as phase=begin|all, key=value as every field."""
    prog = subprocess.Popen([fixture("go_goidreuse"), "4", "wait"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    out = tmp("events-attach.data")
    try:
        assert prog.stdout.readline() == "ready\n"
        rec, head = attach_verbose(prog.pid, "-F", "main.mark", "-o", out)
        prog.stdin.write("go\n")
        prog.stdin.flush()
        prog.communicate(timeout=60)
        _, err = rec.communicate(timeout=60)
        assert rec.returncode == 0, head + err
    finally:
        for q in (prog, locals().get("rec")):
            if q and q.poll() is None:
                q.kill()
                q.wait()
    phases = [e["phase"] for e in events(out) if e.get("proc") == "probes_in"]
    assert phases == ["begin", "all"], phases


def test_events_are_the_files_raw_stream():
    """dump --events prints every event the file holds (info's count), in
    file order, each with a known probe kind and the function it is of;
    a Go program's carry its goroutines, a C program's threads end in
    thread_exit and exit records."""
    p, out = record([fixture("go_core"), "fib", "9"], "-F", "main.fib")
    evs = events(out)
    calls = [e for e in evs if "site" in e]
    m = re.search(r"^events: +(\d+)", ct("info", out).stdout, re.M)
    assert m and len(calls) == int(m.group(1)), (len(calls), m and m.group(0))
    assert all(e["kind"] != "?" for e in calls), [e for e in calls if e["kind"] == "?"]
    fib = [e for e in calls if e.get("func", "").startswith("main.fib")]
    kinds = collections.Counter(e["kind"] for e in fib)
    # fib(9): 109 calls, observed from their callers (the first recursive
    # call's exit is the second's call: one probe, one event, two roles)
    assert kinds["call"] and kinds["retsite"] and "ret" not in kinds, kinds
    assert {e["goid"] for e in fib} == {"1"}, {e["goid"] for e in fib}
    assert len({(e["pid"], e["tid"]) for e in fib}) >= 1
    assert evs[-1].get("proc") == "exit" and evs[-1]["pid"] == fib[0]["pid"], evs[-1]
    ts = [int(e["ts"]) for e in evs]
    assert ts[0] >= 0 and max(ts) == ts[-1], "the process's exit comes last"
    # --exit=ret: the same calls, seen at fib's entry and RETs
    p, out = record([fixture("go_core"), "fib", "9"], "-F", "main.fib", "--exit=ret")
    kinds = collections.Counter(e["kind"] for e in events(out) if e.get("func", "").startswith("main.fib"))
    assert kinds["entry"] == 109 and kinds["ret"] == 109, kinds
    # C threads: goid 0, several threads, each ending in a record
    p, out = record([fixture("c_core"), "threads"])
    evs = events(out)
    tids = {e["tid"] for e in evs if "site" in e}
    assert len(tids) >= 2 and {e["goid"] for e in evs if "site" in e} == {"0"}, tids
    ended = {e["tid"] for e in evs if e.get("proc") in ("thread_exit", "exit")}
    assert tids <= ended | {evs[-1]["tid"]}, (tids, ended)
    r = ct("dump", "--events", "--svg", out)
    assert r.returncode == 2 and "--events and --svg exclude each other" in r.stderr, r.stderr
