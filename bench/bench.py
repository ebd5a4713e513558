#!/usr/bin/env python3
"""calltrace per-call overhead against the raw uprobe floor.

One run measures, on the same machine state and the same Go workload
(bench/fib: a //go:noinline recursive fib with a known call count):

  baseline   untraced;
  calltrace  `calltrace record -F main.fib`;
  floor      plain tracefs `p:` uprobes (no fetch args, no BPF) at exactly the
             sites calltrace uses: what the kernel's trap costs by itself;
  naive      tracefs uprobes at function+0 plus the RET sites: what a tool that
             probes the symbol address would pay.

The workload times its own traced section (time.Now around the loop), so
process start-up, attach and detach are not counted as per-call cost.
The machine is shared and noisy, so configurations are interleaved round by
round and the median is reported.  The headline numbers are wall time as
the workload saw it; the cpu_* lines are the traced thread's CPU time over
the same section, which probe traps are charged to but which does not grow
while other users of the machine hold the CPUs -- trust those when the
load average printed is above the CPU count.

(That comparison is of --exit=ret, the callee-side probes.)  Then the exits
section (issue 10): --exit=auto (calls observed from the caller) against
--exit=ret on Go fib, a frameless Go leaf called in a loop and a C fib,
without and with argument capture, and against the raw tracefs floor of the
addresses auto probes: <name>_ns_per_call[auto|ret|...], <name>_ret_over_auto,
<name>_auto_over_floor (thread CPU, ratios within rounds), and the share of
returned calls whose end was seen without a RET probe (exits_not_at_ret);
and that share, with --exit=auto, for fixture programs of each language and
two stripped Debian C++ programs (exits_not_at_ret[PROGRAM], SHARE_PROGRAMS).

After those lines comes the scale section (issues 5 and 6), on two more
workloads, bench/http (a net/http server and client on loopback: thousands
of probe sites) and bench/fibpar (fib on several goroutines: the highest
event rate and big traces):

  start-up and shut-down of >= 10,000 sites, from `record -v`'s phases;
  http_overhead_per_request_us with -F 'net/http.*' (and _ret: --exit=ret; http_ret_over_auto:
  their ratio within rounds, wall; http_hits_per_request: each mode's emulated and
  single-stepped hits a request, which priced at the exits section's bare traps give
  the ratio the traps alone come to, in the goal's line); http_floor_per_request_us
  and _floor_ret_: plain tracefs probes at the sites each mode places at start,
  http_kernel_ret_over_auto their ratio (what the traps allow in this program),
  http_auto_over_floor; http_floor_same_per_request_us: the same at the sites
  auto has at its end, those it adds while recording included
  (http_kernel_ret_over_auto_same, http_auto_over_same_floor);
  events_per_s_max, the highest event rate recorded without loss;
  replay/report throughput and peak memory on a trace of >= 5 M events
  (recorded once and cached in build/bench/, keyed by the calltrace binary
  and the workload), with the tracer's own peak memory while recording it;

then one goal_<name>=met|not_met line per goal of the issues, and last the
WebAssembly section (bench/wasm.py: wasm_ns_per_call, wasm_slowdown, ...),
and the overhead correction (bench/correction.py: correction_error_pct next
to raw_error_pct, leaf_corrected_avg_ns, first_call_extra_ns, and real_cli_correction
on a real program: lefthook --help traced in cobra).

Run as root (make bench).  Exits 1 with 'bench: skipped: <reason>' only when
it cannot run at all (not root, no tracefs, BPF programs cannot be loaded);
a part of the scale section that fails prints '<name>=skipped (<reason>)'
and the rest still runs.

Options (for investigation, not needed by make bench):
  --rounds N      rounds of the interleaved measurement (default 5)
  --n N           fib argument (default 22: 57,313 calls; a single-stepped
                  hit costs ~20 us on this VM, so a larger n makes the
                  naive run take many seconds per round)
  --no-breakdown  skip the per-site-class and BPF run-time breakdown
  --no-scale      skip the scale section
  --scale-only    only the scale section (its per-call goal line is then
                  skipped)
  --quick         scale section with fewer rounds and no 5 M-event trace
                  of its own (uses the cached one if there is one)
  --exits-only    only the exits section (issue 10)
  --http-only     only bench/http's overheads and floors (issue 10), no goals
"""
import atexit
import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(REPO, "build")
# CALLTRACE_BIN=/other/build/calltrace compares another build (A/B).
CALLTRACE = os.environ.get("CALLTRACE_BIN") or os.path.join(BUILD, "calltrace")
WORKLOAD = os.path.join(BUILD, "bench", "fib")
FUNC = "main.fib"


def skip(reason):
    print("bench: skipped: %s" % reason)
    sys.exit(1)


def sh(*argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kw).stdout


# ---------------------------------------------------------------- machine

def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return os.cpu_count(), os.uname().release, model


def bpf_stats_on():
    """Whether the kernel times every BPF program run (the sysctl, set by
    hand or by a process holding BPF_ENABLE_STATS): it makes each of
    calltrace's hits dearer and not the floors' plain probes."""
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


# ---------------------------------------------------------------- tracefs

def find_tracefs():
    """The tracefs mount; mounts it if the kernel has it but nobody did."""
    for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.exists(os.path.join(d, "uprobe_events")):
            return d
    d = "/sys/kernel/tracing"
    if os.path.isdir(d):
        subprocess.run(["mount", "-t", "tracefs", "nodev", d],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.path.exists(os.path.join(d, "uprobe_events")):
            return d
    return None


class Uprobes:
    """A private group of tracefs uprobes, removed on close.

    uprobe_events is shared with every other user of the machine: it is only
    ever appended to (opening it with O_TRUNC would wipe everyone's probes)
    and only our own group's events are removed.  Events are enabled in a
    private trace instance so the global buffer and tracing_on are left
    alone and our hits are written to a buffer nobody else reads."""

    def __init__(self, tracefs, group, path, offsets):
        self.tracefs = tracefs
        self.group = group
        self.names = []
        self.instance = None
        self.events_dir = os.path.join(tracefs, "events", group)
        try:
            for i, off in enumerate(offsets):
                # uprobe_profile shows event names without their group,
                # so the names themselves carry the group to stay unique.
                name = "%s_%d" % (group, i)
                self._write_events("p:%s/%s %s:0x%x" % (group, name, path, off))
                self.names.append(name)
            inst = os.path.join(tracefs, "instances", group)
            try:
                os.mkdir(inst)
                self.instance = inst
                self.events_dir = os.path.join(inst, "events", group)
            except OSError:
                pass  # no instances: enable at the top level
        except BaseException:
            self.close()
            raise

    def _write_events(self, line):
        # os.open, not open(..., "a"): Python seeks to the end after an
        # append open, which tracefs refuses; and no O_TRUNC, ever.
        fd = os.open(os.path.join(self.tracefs, "uprobe_events"), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    def enable(self, on):
        with open(os.path.join(self.events_dir, "enable"), "w") as f:
            f.write("1\n" if on else "0\n")

    def hits(self):
        """Hit counts per event from uprobe_profile (a sanity check)."""
        out = {}
        with open(os.path.join(self.tracefs, "uprobe_profile")) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in self.names:
                    out[parts[1]] = int(parts[2])
        return out

    def close(self):
        if self.instance:
            try:
                self.enable(False)
            except OSError:
                pass
            try:
                os.rmdir(self.instance)
            except OSError as e:
                print("bench: warning: cannot remove instance %s: %s" % (self.instance, e),
                      file=sys.stderr)
            self.instance = None
        elif self.names:
            try:
                self.enable(False)
            except OSError:
                pass
        for name in reversed(self.names):
            try:
                self._write_events("-:%s/%s" % (self.group, name))
            except OSError as e:
                print("bench: warning: cannot remove uprobe %s/%s: %s" % (self.group, name, e),
                      file=sys.stderr)
        self.names = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------- ELF / sites

def vaddr_to_offset(path, vaddr):
    """Link-time virtual address -> file offset through the PT_LOAD holding it
    (uprobes are placed by file offset, calltrace list prints vaddrs)."""
    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2:
            raise ValueError("%s: not a 64-bit ELF" % path)
        e_phoff, = struct.unpack_from("<Q", ehdr, 32)
        e_phentsize, e_phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(e_phoff)
        ph = f.read(e_phentsize * e_phnum)
    for i in range(e_phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz, _memsz, _align = \
            struct.unpack_from("<IIQQQQQQ", ph, i * e_phentsize)
        if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    raise ValueError("0x%x is in no PT_LOAD of %s" % (vaddr, path))


def probe_sites(binary, func):
    """Entry and exit sites calltrace would use, from `calltrace list -v`:
    returns (func_vaddr, entry_site_offset, entry_class, [(kind, offset, insn)])."""
    out = sh(CALLTRACE, "list", "--exit=ret", binary, func, "-v")
    func_addr = entry_off = entry_class = None
    exits = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"\s+0x([0-9a-f]+)\s+\+(\d+)\s+(\S+)\s+\d+\s+(\S+)$", line)
        if m:
            if m.group(4) != func:
                continue
            func_addr, entry_off, entry_class = int(m.group(1), 16), int(m.group(2)), m.group(3)
            continue
        m = re.match(r"\s+(\w+)\s+\+(\d+)\s+(.*)$", line)
        if m and func_addr is not None and m.group(1) != "entry":
            exits.append((m.group(1), int(m.group(2)), m.group(3).strip()))
    if func_addr is None:
        raise RuntimeError("calltrace list found no %s:\n%s" % (func, out))
    return func_addr, entry_off, entry_class, exits


# ---------------------------------------------------------------- runs

def build_workload():
    os.makedirs(os.path.dirname(WORKLOAD), exist_ok=True)
    env = dict(os.environ, GOCACHE=os.path.join(BUILD, "gocache"),
               GOFLAGS="-mod=mod", GOPROXY="off")
    subprocess.run(["go", "build", "-o", WORKLOAD, "."], check=True,
                   cwd=os.path.join(REPO, "bench", "fib"), env=env)


# One workload run: traced calls, wall ns and thread-CPU ns of the section.
Run = collections.namedtuple("Run", "calls wall cpu")


def parse_workload(out):
    m = re.search(r"calls=(\d+) ns=(\d+) cpu_ns=(\d+)", out)
    if not m:
        raise RuntimeError("unexpected workload output: %r" % out)
    return Run(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def run_plain(n, reps=1):
    return parse_workload(sh(WORKLOAD, str(n), str(reps)))


def run_calltrace(n, datafile, extra=()):
    # The original comparison: callee-side probes (entry + every RET)
    # against the floor of those sites; --exit=auto has its own section.
    out = sh(CALLTRACE, "record", "--exit=ret", *extra, "-F", FUNC, "-o", datafile, "--", WORKLOAD,
             str(n))
    return parse_workload(out)


def run_uprobes(tracefs, group, n, offsets):
    with Uprobes(tracefs, group, WORKLOAD, offsets) as up:
        up.enable(True)
        try:
            run = run_plain(n)
        finally:
            up.enable(False)
        return run, up.hits()


def info(datafile):
    out = sh(CALLTRACE, "info", datafile)
    kv = {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and not line.startswith("#"):
            kv[parts[0]] = parts[1].strip()
    return kv


# ---------------------------------------------------------------- breakdown

def prog_ids_of(pid):
    """BPF program ids held open by a process (fdinfo 'prog_id:'), so that
    another calltrace running at the same time (tests) is not counted."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    try:
        for fd in os.listdir(d):
            try:
                with open(os.path.join(d, fd)) as f:
                    for line in f:
                        if line.startswith("prog_id:"):
                            ids.add(int(line.split()[1]))
            except OSError:
                pass
    except OSError:
        pass
    return ids


def bpf_prog_stats(pid, names):
    """{name: (run_cnt, run_time_ns)} of the named programs loaded by pid."""
    ids = prog_ids_of(pid)
    if not ids:
        return {}
    try:
        progs = json.loads(sh("bpftool", "-j", "prog", "show"))
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}
    out = {}
    for p in progs:
        if p.get("id") in ids and p.get("name") in names and "run_cnt" in p:
            prev = out.get(p["name"], (0, 0))
            out[p["name"]] = (prev[0] + p["run_cnt"], prev[1] + p.get("run_time_ns", 0))
    return out


def enable_bpf_stats():
    """Turns on BPF run-time stats for as long as the returned fd is open.

    BPF_ENABLE_STATS (rather than the kernel.bpf_stats_enabled sysctl) so
    that the switch goes back off by itself even if the bench is killed;
    it is global and costs two clock reads per program run, so it is held
    only around the one run that needs it."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    nr_bpf, bpf_enable_stats, bpf_stats_run_time = 321, 32, 0  # x86_64
    attr = ctypes.create_string_buffer(struct.pack("<I", bpf_stats_run_time), 16)
    fd = libc.syscall(ctypes.c_long(nr_bpf), ctypes.c_int(bpf_enable_stats), attr,
                      ctypes.c_uint(16))
    return fd if fd >= 0 else None


def calltrace_bpf_stats(n, datafile, extra=()):
    """BPF ns per hit of ct_hit (every probe's program) during one record run.  The
    programs live only as long as calltrace does, so their counters are
    sampled while it runs."""
    fd = enable_bpf_stats() if os.uname().machine == "x86_64" else None
    if fd is None:
        return None
    last = {}
    try:
        proc = subprocess.Popen([CALLTRACE, "record", "--exit=ret", *extra, "-F", FUNC, "-o", datafile,
                                 "--", WORKLOAD, str(n)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        while proc.poll() is None:
            # Per program, the sample with the most runs wins: at teardown
            # the programs are closed one by one and vanish from the list.
            for name, v in bpf_prog_stats(proc.pid, ("ct_hit",)).items():
                if v[0] >= last.get(name, (0, 0))[0]:
                    last[name] = v
            time.sleep(0.05)
        out = proc.stdout.read()
    finally:
        os.close(fd)
    return parse_workload(out), last


def tracer_cpu_ns(n, datafile):
    """On-CPU ns of the calltrace process itself (all its threads, not the
    traced child) over one record run.  Probe hits (trap + BPF) are charged
    to the traced child, so this is the user-space side: ring buffer drain,
    encoding, file writes -- plus fixed set-up, which the caller cancels out
    with a run of a tiny n.  schedstat has ns resolution (utime/stime have
    10 ms ticks) and is sampled until exit because it vanishes with the
    process."""
    proc = subprocess.Popen([CALLTRACE, "record", "--exit=ret", "-F", FUNC, "-o", datafile, "--",
                             WORKLOAD, str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    tasks = "/proc/%d/task" % proc.pid
    per_task = {}
    while True:
        try:
            for t in os.listdir(tasks):
                with open(os.path.join(tasks, t, "schedstat")) as f:
                    per_task[t] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.stdout.read()
    return sum(per_task.values()), int(info(datafile).get("events", 0))


def drain_ns_per_event(n, datafile, rounds=3):
    big = [tracer_cpu_ns(n, datafile) for _ in range(rounds)]
    small = [tracer_cpu_ns(1, datafile) for _ in range(rounds)]
    ev = big[0][1] - small[0][1]
    cpu = median([b[0] for b in big]) - median([x[0] for x in small])
    return cpu / max(ev, 1), median([x[0] for x in small])


def remove_stale(tracefs):
    """Probes and instances left by an earlier bench that was SIGKILLed
    (ctbench<pid> whose pid is gone); never anybody else's."""
    try:
        with open(os.path.join(tracefs, "uprobe_events")) as f:
            lines = f.read().splitlines()
    except OSError:
        return
    groups = {}
    for line in lines:
        m = re.match(r"p:(ctbench[a-z]*(\d+)[a-z_]*)/(\S+) ", line)
        if m and not os.path.exists("/proc/%s" % m.group(2)):
            groups.setdefault(m.group(1), []).append(m.group(3))
    for group, names in groups.items():
        up = Uprobes.__new__(Uprobes)
        up.tracefs, up.group, up.names = tracefs, group, names
        inst = os.path.join(tracefs, "instances", group)
        up.instance = inst if os.path.isdir(inst) else None
        up.events_dir = os.path.join(up.instance or tracefs, "events", group)
        up.close()


# ---------------------------------------------------------------- main

def median(xs):
    return statistics.median(xs)


def per_call(runs, base=None):
    """Median ns per call over rounds, (wall, cpu), less the baseline."""
    wall = median([r.wall / r.calls for r in runs])
    cpu = median([r.cpu / r.calls for r in runs])
    if base:
        wall, cpu = wall - base[0], cpu - base[1]
    return wall, cpu


def per_call_section(tracefs, rounds, n, breakdown, datafile):
    """The per-call cost against the tracefs floor (the original bench);
    returns the numbers the goal lines need."""
    func_addr, entry_off, entry_class, exits = probe_sites(WORKLOAD, FUNC)
    foff = vaddr_to_offset(WORKLOAD, func_addr)
    entry = foff + entry_off
    exit_offs = [foff + off for _, off, _ in exits]
    ret_offs = [foff + off for kind, off, _ in exits if kind == "ret"]
    floor_offs = [entry] + exit_offs
    naive_offs = [foff] + ret_offs
    print("# per call, --exit=ret (callee side: entry + every RET) against its floor", flush=True)
    print("sites: %s at 0x%x (file 0x%x), entry +%d (%s), exits %s" % (
        FUNC, func_addr, foff, entry_off, entry_class,
        ", ".join("%s +%d" % (k, o) for k, o, _ in exits)))

    remove_stale(tracefs)
    group = "ctbench%d" % os.getpid()

    res = {k: [] for k in ("base", "ct", "floor", "naive")}
    ct_info = {}
    run_plain(n)  # warm-up: page cache, CPU frequency
    for r in range(rounds):
        # The untraced run is ~1000x faster than the traced ones, so it is
        # repeated in-process to get a measurable time.
        res["base"].append(run_plain(n, 50))
        # Alternate the order so that a slow drift in machine load does
        # not always penalise the same configuration.
        order = ["ct", "floor", "naive"]
        for k in (order if r % 2 == 0 else order[::-1]):
            if k == "ct":
                run = run_calltrace(n, datafile)
                ct_info = info(datafile)
                ct_info["_size"] = os.path.getsize(datafile)
            else:
                run, hits = run_uprobes(tracefs, group, n,
                                        floor_offs if k == "floor" else naive_offs)
                # Every call hits the entry once and one exit once: fewer
                # hits means wrong offsets and a meaningless number.
                if sum(hits.values()) < 2 * run.calls:
                    raise RuntimeError("%s probes hit %d times for %d calls: wrong sites?"
                                       % (k, sum(hits.values()), run.calls))
            res[k].append(run)
        print("round %d: ns/call wall (thread cpu): base %.1f  calltrace %.0f (%.0f)  "
              "floor %.0f (%.0f)  naive %.0f (%.0f)" % (
                  (r + 1, res["base"][-1].wall / res["base"][-1].calls) +
                  tuple(v for k in ("ct", "floor", "naive")
                        for v in (res[k][-1].wall / res[k][-1].calls,
                                  res[k][-1].cpu / res[k][-1].calls))), flush=True)

    base = per_call(res["base"])
    ct, floor, naive = (per_call(res[k], base) for k in ("ct", "floor", "naive"))
    calls = res["ct"][-1].calls
    events = int(ct_info.get("events", 0))
    print("calls=%d" % calls)
    print("events=%d" % events)
    print("lost=%s" % ct_info.get("lost", "?"))
    print("bytes_per_event=%.2f" % (ct_info["_size"] / events if events else 0))
    print("baseline_ns_per_call=%.2f" % base[0])
    print("calltrace_ns_per_call=%.0f" % ct[0])
    print("floor_ns_per_call=%.0f" % floor[0])
    print("naive_ns_per_call=%.0f" % naive[0])
    print("ratio_vs_floor=%.3f" % (ct[0] / floor[0]))
    print("naive_over_calltrace=%.3f" % (naive[0] / ct[0]))
    # The same from the traced thread's CPU time: other users of the
    # machine inflate wall time (waiting for a CPU) but not this.
    print("cpu_calltrace_ns_per_call=%.0f" % ct[1])
    print("cpu_floor_ns_per_call=%.0f" % floor[1])
    print("cpu_naive_ns_per_call=%.0f" % naive[1])
    print("cpu_ratio_vs_floor=%.3f" % (ct[1] / floor[1]))
    print("cpu_naive_over_calltrace=%.3f" % (naive[1] / ct[1]))
    # Ratio within each round: pairs runs that saw the same machine state.
    print("ratio_vs_floor_paired_median=%.3f" % median(
        [(a.wall / a.calls - base[0]) / (b.wall / b.calls - base[0])
         for a, b in zip(res["ct"], res["floor"])]))
    print("loadavg_after=%.2f" % os.getloadavg()[0])
    if ct_info.get("lost") not in ("0", None):
        print("bench: warning: calltrace lost events")

    help_text = subprocess.run([CALLTRACE, "record", "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True).stdout
    has_no_args = "--no-args" in help_text
    if has_no_args:
        # The headline number above is calltrace's default, which
        # captures arguments when it can; this separates their cost.
        on, off = [], []
        size = ev = 0
        for r in range(rounds):
            for args_on in ((True, False) if r % 2 == 0 else (False, True)):
                run = run_calltrace(n, datafile, () if args_on else ("--no-args",))
                (on if args_on else off).append(run)
                if not args_on:
                    ev = int(info(datafile).get("events", 0))
                    size = os.path.getsize(datafile)
        on, off = per_call(on, base), per_call(off, base)
        print("args_on_ns_per_call=%.0f" % on[0])
        print("args_off_ns_per_call=%.0f" % off[0])
        print("cpu_args_on_ns_per_call=%.0f" % on[1])
        print("cpu_args_off_ns_per_call=%.0f" % off[1])
        print("bytes_per_event_no_args=%.2f" % (size / ev if ev else 0))

    if breakdown:
        print("# breakdown (thread-CPU ns)")
        # One site class at a time: what a single hit of each kind costs.
        # tracefs numbers include tracefs's own handler (a trace-buffer
        # write), so they slightly overstate the bare trap.
        classes = [("entry_+0", [foff]),
                   ("entry_+%d_%s" % (entry_off, entry_class), [entry])]
        if ret_offs:
            classes.append(("ret_all_%d" % len(ret_offs), ret_offs))
        site = {}
        for name, offs in classes:
            vals, nhits = [], 0
            for _ in range(3):
                run, hits = run_uprobes(tracefs, group, n, offs)
                nhits = sum(hits.values())
                vals.append((run.cpu - base[1] * run.calls) / max(nhits, 1))
            site[name] = median(vals)
            print("site_ns_per_hit[%s]=%.0f (hits/run=%d)" % (name, site[name], nhits))

        # BPF run time per hit, for the default record and, where argument
        # capture exists, without it (the difference is the fetch cost).
        modes = [("", ())] + ([("no_args", ("--no-args",))] if has_no_args else [])
        for label, extra in modes:
            st = calltrace_bpf_stats(n, datafile, extra)
            if not st or not st[1]:
                print("bpf_ns_per_hit: unavailable (bpftool or BPF_ENABLE_STATS)")
                break
            run, progs = st
            tag = "," + label if label else ""
            bpf_call = 0.0
            if progs.get("ct_hit", (0, 0))[0]:
                cnt, t = progs["ct_hit"]
                bpf_call = 2 * t / cnt  # one entry and one exit hit per call
                print("bpf_ns_per_hit[ct_hit%s]=%.0f (run_cnt=%d)" % (tag, t / cnt, cnt))
            if label:
                continue
            print("calltrace_with_bpf_stats_cpu_ns_per_call=%.0f" % (
                run.cpu / run.calls - base[1]))
            # Where one traced call's time goes (each call: one entry hit,
            # one RET hit; restarts are rare).
            e_trap = site["entry_+%d_%s" % (entry_off, entry_class)]
            x_trap = site.get("ret_all_%d" % len(ret_offs), 0.0)
            print("per_call_split: entry_trap=%.0f (%.0f%%) exit_trap=%.0f (%.0f%%) "
                  "bpf=%.0f (%.0f%%) rest=%.0f  of cpu_calltrace_ns_per_call=%.0f" % (
                      e_trap, 100 * e_trap / ct[1], x_trap, 100 * x_trap / ct[1],
                      bpf_call, 100 * bpf_call / ct[1], ct[1] - e_trap - x_trap - bpf_call,
                      ct[1]))

        per_ev, setup = drain_ns_per_event(n, datafile)
        print("drain_cpu_ns_per_event=%.0f (calltrace process on-CPU time; fixed set-up "
              "and teardown %.0f ms subtracted)" % (per_ev, setup / 1e6))
    # The goal line judges the within-round CPU ratio: rounds pair runs
    # that saw the same machine state, the medians above do not.
    cpu_paired = median([(a.cpu / a.calls - base[1]) / (b.cpu / b.calls - base[1])
                         for a, b in zip(res["ct"], res["floor"])])
    return {"ct": ct, "floor": floor, "naive": naive, "lost": ct_info.get("lost", "?"),
            "cpu_paired": cpu_paired}


# ---------------------------------------------------------------- exits (issue 10)

CFIB = os.path.join(BUILD, "bench", "cfib")
# the same built as for ftrace (-pg -mfentry -mnop-mcount): its entry is a
# 5-byte nop, which the kernel probes without a trap (Linux 6.18+)
CFIB_FENTRY = CFIB + "_fentry"
# name, binary, argv for a run of N calls, -F glob, N (traced), N untraced
EXIT_WORKLOADS = [
    ("go_fib", WORKLOAD, lambda n: [str(n)], "main.fib", 22, None),
    ("leaf", WORKLOAD, lambda n: ["leaf", str(n)], "main.leaf", 20000, 2000000),
    ("c_fib", CFIB, lambda n: [str(n)], "c_fib", 22, None),
    ("c_fib_fentry", CFIB_FENTRY, lambda n: [str(n)], "c_fib", 22, None),
]
GOAL_GO_FIB_NS = 2000.0
GOAL_GO_FIB_RATIO = 10.0
GOAL_LEAF_RATIO = 20.0
GOAL_C_FIB_NS = 1500.0
GOAL_FLOOR_RATIO = 1.15
GOAL_HTTP_RATIO = 4.0


def build_cfib():
    os.makedirs(os.path.dirname(CFIB), exist_ok=True)
    subprocess.run(["gcc", "-O2", "-o", CFIB, os.path.join(REPO, "bench", "cfib", "fib.c")], check=True)
    # compiled only with -pg (linking it would add gmon's profiler)
    subprocess.run(["gcc", "-O2", "-no-pie", "-fno-pie", "-pg", "-mfentry", "-mnop-mcount", "-c", "-o",
                    CFIB_FENTRY + ".o", os.path.join(REPO, "bench", "cfib", "fib.c")], check=True)
    subprocess.run(["gcc", "-no-pie", "-o", CFIB_FENTRY, CFIB_FENTRY + ".o"], check=True)


def listed_sites(out):
    """(function, addresses, line, interim) for every line of `calltrace
    list -v` OUT under a function; addresses are those it probes (none on
    most lines but these): call-site entries and the
    exit probes after calls ("call": the call instruction is probed too;
    "from", "via", "after": only the exit, and not when it says "not
    probed": the next call's CHECK sees the call end), and the function's
    own sites (entry, check, RETs, tail jumps, stack-growth restarts);
    interim: a RET probed only until its callers are found.  A call
    "entered at" another address (plan/ahead.c: the exit probe before it)
    has no probe of its own: that address instead."""
    func_addr = func = None
    for line in out.splitlines():
        m = re.match(r"\s+0x([0-9a-f]+)\s+\+(\d+)\s+\S+\s+\d+\s+(\S+)$", line)
        if m:
            func_addr, func = int(m.group(1), 16), m.group(3)
            continue
        if func_addr is None:
            continue
        m = re.match(r"\s+(call|from|via|after)\s+\S+ 0x([0-9a-f]+)\s+->(?: \S+ 0x([0-9a-f]+))?", line)
        if m:
            probed = list(m.groups()[1 if m.group(1) == "call" else 2:2 if "(not probed" in line else 3])
            ahead = re.search(r"; entered at 0x([0-9a-f]+)", line)
            if ahead and m.group(1) == "call":
                probed[0] = ahead.group(1)
            yield func, {int(x, 16) for x in probed if x}, line, False
            continue
        m = re.match(r"\s+(entry|check|ret|tail|restart)\s+\+(\d+)", line)
        yield func, {func_addr + int(m.group(2))} if m else set(), line, "(interim" in line


def auto_sites(binary, func):
    """Every address --exit=auto probes for FUNC (its call sites, their exit
    probes, its CHECK or, if it keeps RET probes, its entry and exits), from
    `calltrace list -v`, and the line saying how its calls are observed."""
    out = sh(CALLTRACE, "list", "--no-args", "-v", binary, func)
    addrs, how = set(), ""
    for f, a, line, _ in listed_sites(out):
        if f == func:
            addrs |= a
            if line.strip().startswith("exits:"):
                how = line.strip()
    if not addrs:
        raise RuntimeError("calltrace list -v shows no sites for %s:\n%s" % (func, out[-500:]))
    return sorted(addrs), how


def planned_sites(binary, glob, mode):
    """Link-time addresses of every site `record --exit=MODE -F GLOB`
    probes from the start (not the interim RETs, which go while it records,
    nor the exit probes it adds at callers found while recording)."""
    out = sh(CALLTRACE, "list", "--no-args", "-v", "--exit", mode, binary, glob)
    addrs = set()
    for _, a, _, interim in listed_sites(out):
        if not interim:
            addrs |= a
    return sorted(addrs)


def planned_offsets(binary, glob, mode):
    """planned_sites as file offsets (where uprobes are placed)."""
    return [vaddr_to_offset(binary, a) for a in planned_sites(binary, glob, mode)]


def final_sites(binary, glob, datafile):
    """Link-time addresses of every probe a --exit=auto recording of BINARY
    under -F GLOB (DATAFILE) had in at its end: those it places at start
    (not the interim RETs, which go while it records -- bench/http's
    within its warm-up requests) and the exit probes it added at callers
    found while recording, which its events name (a caller-side site of
    any kind but `call`: a CALL event of a call site found while recording
    comes from the callee's CHECK, the call instruction has no probe)."""
    addrs = set(planned_sites(binary, glob, "auto"))
    for line in sh(CALLTRACE, "dump", "--events", datafile).splitlines():
        m = re.search(r" kind=(\S+) func=\S+ at=0x([0-9a-f]+) key=", line)
        if m and m.group(1) != "call":
            addrs.add(int(m.group(2), 16))
    return sorted(addrs)


def calls_line(datafile):
    """How the recorded calls ended (calltrace info --calls)."""
    out = sh(CALLTRACE, "info", "--calls", datafile)
    m = re.search(r"^calls: +(\d+): returned (\d+) \(at a RET (\d+), after the call (\d+) \((\d+) "
                  r"single-stepped, (\d+) at exit probes added while recording\), with their caller (\d+)\)"
                  r".*unobserved (\d+)", out, re.M)
    if not m:
        raise RuntimeError("unexpected calltrace info --calls output")
    return {k: int(v) for k, v in zip(("calls", "returned", "ret", "retsite", "stepped", "dynamic", "caller",
                                       "unobserved"), m.groups())}


def exit_share(c):
    """Share of returned calls whose end was seen without a RET probe."""
    return 100.0 * (c["retsite"] + c["caller"]) / c["returned"] if c["returned"] else 0.0


def share_text(c):
    """exit_share's line: how the returned calls' ends were seen."""
    return "%.1f%% (of %d returned calls: %d after the call, %d of them at a single-stepped return site, " \
           "%d at one added while recording; %d with their caller, %d at a single-stepped RET; " \
           "%d calls unobserved)" % (
               exit_share(c), c["returned"], c["retsite"], c["stepped"], c["dynamic"], c["caller"], c["ret"],
               c["unobserved"])


def exits_section(tracefs, rounds, tmp):
    """--exit=auto against --exit=ret on three workloads, and auto against
    the raw tracefs floor of the very sites auto probes; interleaved rounds,
    medians, and the ratios within rounds (they saw the same machine)."""
    print("# exits: calls observed from the caller (--exit=auto) vs RET probes (--exit=ret)", flush=True)
    build_cfib()
    remove_stale(tracefs)
    group = "ctbenchx%d" % os.getpid()
    # What one trap costs here, by class: the ceiling of any ratio below
    # (auto trades single-stepped hits for emulated ones).
    fa, eo, _, ex = probe_sites(WORKLOAD, FUNC)
    foff = vaddr_to_offset(WORKLOAD, fa)
    trap = {}
    for cls, offs in (("emulated", [foff + eo]), ("single-stepped", [foff])):
        vals = []
        for _ in range(3):
            with Uprobes(tracefs, group, WORKLOAD, offs) as up:
                up.enable(True)
                try:
                    run = parse_workload(sh(WORKLOAD, "20"))
                finally:
                    up.enable(False)
                vals.append(run.cpu / max(sum(up.hits().values()), 1))
        trap[cls] = median(vals)
    print("trap_ns_per_hit[emulated]=%.0f trap_ns_per_hit[single-stepped]=%.0f (tracefs p:, thread cpu; "
          "a Go fib call costs ret 1 emulated + 1 stepped hit, auto 1 emulated hit -- its CHECK, which also "
          "sees the call before it end: at best %.1fx)" % (
              trap["emulated"], trap["single-stepped"],
              (trap["emulated"] + trap["single-stepped"]) / trap["emulated"]), flush=True)
    datafile = os.path.join(tmp, "exits.data")
    res = {"_trap": trap}
    for name, binary, argv, func, n, n_base in EXIT_WORKLOADS:
        addrs, how = auto_sites(binary, func)
        offs = [vaddr_to_offset(binary, a) for a in addrs]
        # --exit=ret's sites (the callee's entry and its RETs): their raw
        # probes against auto's are the ratio the kernel's trap prices
        # allow here, whatever a tracer does on top of them.
        ra, reo, _, rex = probe_sites(binary, func)
        ret_offs = [vaddr_to_offset(binary, ra) + o for o in [reo] + [o for _, o, _ in rex]]
        print("%s: %s, %s; auto probes %d addresses, ret %d" % (name, func, how or "?", len(addrs),
                                                                 len(ret_offs)), flush=True)
        configs = [("auto", ["--exit=auto", "--no-args"]), ("ret", ["--exit=ret", "--no-args"]),
                   ("auto_args", ["--exit=auto"]), ("ret_args", ["--exit=ret"])]
        runs = {k: [] for k in ["base", "floor", "floor_ret"] + [c for c, _ in configs]}
        share = {}
        for r in range(rounds):
            runs["base"].append(parse_workload(sh(binary, *argv(n_base or n))))
            order = configs + [("floor", offs), ("floor_ret", ret_offs)]
            for k, flags in (order if r % 2 == 0 else order[::-1]):
                if k.startswith("floor"):
                    with Uprobes(tracefs, group, binary, flags) as up:
                        up.enable(True)
                        try:
                            run = parse_workload(sh(binary, *argv(n)))
                        finally:
                            up.enable(False)
                        if sum(up.hits().values()) < run.calls:
                            raise RuntimeError("%s floor probes hit %d times for %d calls" % (
                                name, sum(up.hits().values()), run.calls))
                else:
                    out = sh(CALLTRACE, "record", *flags, "-F", func, "-o", datafile, "--", binary, *argv(n))
                    run = parse_workload(out)
                    if r == 0 and k.startswith("auto"):
                        share[k] = calls_line(datafile)
                runs[k].append(run)
        base = per_call(runs["base"])
        pc = {k: per_call(v, base) for k, v in runs.items() if k != "base"}
        paired = lambda a, b, i: median([(x.cpu / x.calls - base[1]) / (y.cpu / y.calls - base[1])
                                         for x, y in zip(runs[a], runs[b])])
        res[name] = {"pc": pc, "ret_over_auto": paired("ret", "auto", 1),
                     "auto_over_floor": paired("auto", "floor", 1),
                     "kernel_ratio": paired("floor_ret", "floor", 1),
                     "ret_over_auto_args": paired("ret_args", "auto_args", 1), "share": share}
        for k in ("auto", "ret", "auto_args", "ret_args", "floor", "floor_ret"):
            label = {"auto": "auto", "ret": "ret", "auto_args": "auto,args", "ret_args": "ret,args",
                     "floor": "floor", "floor_ret": "floor of ret's sites"}[k]
            print("%s_ns_per_call[%s]=%.0f (thread cpu %.0f)" % (name, label, pc[k][0], pc[k][1]))
        print("%s_ret_over_auto=%.1f (thread cpu, within rounds; with arguments and results: %.1f)" % (
            name, res[name]["ret_over_auto"], res[name]["ret_over_auto_args"]))
        print("%s_auto_over_floor=%.3f (thread cpu, within rounds; the floor: tracefs p: probes at "
              "the %d addresses auto probes)" % (name, res[name]["auto_over_floor"], len(addrs)))
        print("%s_kernel_ret_over_auto=%.1f (thread cpu, within rounds: tracefs p: probes at ret's %d "
              "sites over those at auto's: the most any tracer gets from these sites on this machine; "
              "calltrace reaches %.0f%% of it)" % (
                  name, res[name]["kernel_ratio"], len(ret_offs),
                  100 * res[name]["ret_over_auto"] / res[name]["kernel_ratio"]))
        for k, c in share.items():
            print("exits_not_at_ret[%s,%s]=%s" % (name, "args" if k == "auto_args" else "no args",
                                                  share_text(c)), flush=True)
    return res


# The share of calls whose end was seen without a RET probe, per program
# (issue 10's last bench line): fixtures of each language (built by the
# tests' tests/fixtures/build.sh) with their default selection, and real
# Debian C++ programs, stripped (their PLT stubs, called from code whose
# landing pads decide, call by call, whether a call's end can be seen
# after it).
SHARE_PROGRAMS = [
    ("go realworld", "realworld", [], []),
    ("go goroutines", "go_core", ["wrappers", "4"], []),
    ("c tricks", "c_core", ["tricks"], []),
    ("c threads", "c_core", ["threads"], []),
    ("c++ exceptions", "cxx_exc", [], []),
    ("c++ landing pads", "cxx_pads", [], []),
    ("c++ app", "cpp_app", ["values"], []),
    ("c++ app, a throw", "cpp_app", ["throw"], []),
    ("rust app", "rust_app", ["values"], []),
    ("rust app, a caught panic", "rust_app", ["panic"], []),
    ("cmake --version (Debian, stripped C++)", "/usr/bin/cmake", ["--version"], []),
    ("apt-config dump (Debian, stripped C++)", "/usr/bin/apt-config", ["dump"], []),
]


def exit_shares(tmp):
    """exits_not_at_ret[PROGRAM]: how the calls of each SHARE_PROGRAMS
    program ended with --exit=auto (info --calls), and how many of its
    traced functions are observed from their callers (plan.exits)."""
    fixtures = os.path.join(BUILD, "fixtures")
    need = [f for _, f, _, _ in SHARE_PROGRAMS if not f.startswith("/")]
    if not all(os.path.exists(os.path.join(fixtures, f)) for f in need):
        b = subprocess.run(["sh", os.path.join(REPO, "tests", "fixtures", "build.sh")], capture_output=True, text=True)
        if b.returncode != 0:
            print("exits_not_at_ret=skipped (the fixtures did not build: %s)" % b.stderr.strip()[-200:], flush=True)
            return
    datafile = os.path.join(tmp, "share.data")
    for label, prog, argv, flags in SHARE_PROGRAMS:
        path = prog if prog.startswith("/") else os.path.join(fixtures, prog)
        if not os.path.exists(path):
            print("exits_not_at_ret[%s]=skipped (no %s)" % (label, path), flush=True)
            continue
        p = subprocess.run([CALLTRACE, "record", "--exit=auto", *flags, "-o", datafile, "--", path, *argv],
                           capture_output=True, text=True)
        if not os.path.exists(datafile):
            print("exits_not_at_ret[%s]=skipped (record failed: %s)" % (label, p.stderr.strip()[-200:]),
                  flush=True)
            continue
        try:
            c = calls_line(datafile)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            print("exits_not_at_ret[%s]=skipped (%s)" % (label, e), flush=True)
            continue
        plan = info(datafile).get("plan.exits", "?")
        print("exits_not_at_ret[%s]=%s; plan %s" % (label, share_text(c), plan), flush=True)
        os.unlink(datafile)


def kernel_limit(w, trap):
    """What the goal is up against on this machine: the ratio the kernel's
    own probes of the same sites give, and the price of one trap."""
    return "; tracefs probes of the same sites: %.1fx, calltrace %.0f%% of that; one emulated trap " \
           "%.0f ns, one single-stepped %.0f ns here" % (
               w["kernel_ratio"], 100 * w["ret_over_auto"] / w["kernel_ratio"],
               trap.get("emulated", 0), trap.get("single-stepped", 0))


def exits_goals(res, http):
    g, l, c = res.get("go_fib"), res.get("leaf"), res.get("c_fib")
    trap = res.get("_trap", {})
    if g:
        auto = g["pc"]["auto"][1]
        goal("go_fib_auto", auto <= GOAL_GO_FIB_NS and g["ret_over_auto"] >= GOAL_GO_FIB_RATIO,
             "--no-args: %.0f ns/call <= %.0f and %.1fx cheaper than --exit=ret (>= %.0f); thread cpu%s"
             % (auto, GOAL_GO_FIB_NS, g["ret_over_auto"], GOAL_GO_FIB_RATIO, kernel_limit(g, trap)))
        goal("auto_vs_floor", g["auto_over_floor"] <= GOAL_FLOOR_RATIO,
             "go_fib --no-args: %.3f x the tracefs floor of the same sites <= %.2f"
             % (g["auto_over_floor"], GOAL_FLOOR_RATIO))
    if l:
        goal("leaf", l["ret_over_auto"] >= GOAL_LEAF_RATIO,
             "frameless Go leaf --no-args: %.1fx cheaper than --exit=ret (>= %.0f); %.0f vs %.0f ns/call%s"
             % (l["ret_over_auto"], GOAL_LEAF_RATIO, l["pc"]["auto"][1], l["pc"]["ret"][1],
                kernel_limit(l, trap)))
    if c:
        auto = c["pc"]["auto"][1]
        goal("c_fib_auto", auto <= GOAL_C_FIB_NS,
             "--no-args: %.0f ns/call <= %.0f (--exit=ret: %.0f)%s" % (
                 auto, GOAL_C_FIB_NS, c["pc"]["ret"][1], kernel_limit(c, trap)))
    if http and http.get("over_ret"):
        priced = ""
        if trap and http.get("mix"):
            # A call costs auto two emulated hits (its entry, its exit in
            # the caller) where ret pays one and a single-stepped one: on
            # a machine where a step costs ~3 emulated hits (a VM whose
            # every trap goes through the hypervisor: 7 and 21 us), that
            # mix alone comes to ~2x, whatever the tracer does per hit.
            priced = "; the hits a request priced as bare traps here (%.0f ns emulated, %.0f " \
                      "single-stepped) come to %.2fx" % (trap["emulated"], trap["single-stepped"],
                                                         trap_priced_ratio(http["mix"], trap))
        if http.get("kernel"):
            priced += "; the tracefs floors of both modes' sites in this program: %.2fx" % http["kernel"]
        if http.get("kernel_same"):
            priced += ", of ret's and of those auto has at its end: %.2fx (calltrace %.0f%% of that)" % (
                http["kernel_same"], 100 * http["ratio"] / http["kernel_same"])
        goal("http_auto_vs_ret", http["ratio"] >= GOAL_HTTP_RATIO,
             "-F 'net/http.*': %.0f us of overhead per request with --exit=auto vs %.0f with "
             "--exit=ret (medians): %.2fx lower within rounds, wall (>= %.0f; %s%s)" % (
                 http["over"], http["over_ret"], http["ratio"], GOAL_HTTP_RATIO, http["spread"], priced))
    if http and http.get("over_same"):
        goal("http_auto_vs_floor", http["over_same"] <= GOAL_FLOOR_RATIO,
             "-F 'net/http.*': %.2f x the tracefs floor of the same sites (those auto has at its end), process "
             "CPU within rounds <= %.2f (%s)" % (http["over_same"], GOAL_FLOOR_RATIO, http["spread_same"]))


# ---------------------------------------------------------------- scale (issues 5 and 6)

BENCH_BUILD = os.path.join(BUILD, "bench")
HTTP = os.path.join(BENCH_BUILD, "http")
FIBPAR = os.path.join(BENCH_BUILD, "fibpar")
SITES_GOAL = 10000
# Packages added one at a time, in this order, until the selection has
# SITES_GOAL probe sites: net/http first (what issue 6 names), then what a
# request goes through, then the biggest remaining packages of the binary.
# The runtime stays out: tracing the scheduler and the allocator measures
# something else than a service's code.
WIDEN = ["net/http.*", "net.*", "bufio.*", "encoding/json.*", "io.*", "sync.*",
         "crypto/*", "reflect.*", "time.*", "strconv.*", "encoding/*", "syscall.*",
         "internal/poll.*", "os.*", "fmt.*", "strings.*", "bytes.*", "net/url.*",
         "context.*", "sort.*", "math/*", "vendor/*", "internal/*", "mime*", "unicode*"]
GOAL_STARTUP_MS = GOAL_SHUTDOWN_MS = 500.0
GOAL_DRAIN_EV_S = 200e3
GOAL_STREAM_EV_S = 5e6
DEFAULT_BUFFER_KB = 16 * 1024
GOAL_RSS_KB = 64 * 1024 + DEFAULT_BUFFER_KB
# The >= 5 M-event trace: 4 goroutines x 6 x fib(25) = 5,826,840 calls, one
# event each with --exit=auto (fib's CHECK also sees the call before it end;
# two each under --exit=ret, which the 3 rounds this once was were sized
# for: 2.9 M events since).  More goroutines than CPUs so that the
# per-goroutine state replay keeps is more than one stack.  Recording it
# takes ~20-40 s at ~5 us of trap per event, hence the cache.
BIG = (25, 6, 4)
SMALL = (22, 1, 4)  # ~25x fewer events, same shape: memory must not differ
BIG_MIN_EVENTS = 5000000


def build_go(name):
    out = os.path.join(BENCH_BUILD, name)
    os.makedirs(BENCH_BUILD, exist_ok=True)
    env = dict(os.environ, GOCACHE=os.path.join(BUILD, "gocache"),
               GOFLAGS="-mod=mod", GOPROXY="off")
    subprocess.run(["go", "build", "-o", out, "."], check=True,
                   cwd=os.path.join(REPO, "bench", name), env=env)
    return out


def bpf_check(tmp):
    """None if calltrace can load its BPF programs and probe, else why not
    (the last line calltrace printed)."""
    p = subprocess.run([CALLTRACE, "record", "-F", FUNC, "-o", os.path.join(tmp, "check.data"),
                        "--", WORKLOAD, "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode == 0:
        return None
    lines = p.stderr.strip().splitlines()
    return lines[-1] if lines else "calltrace record exited %d" % p.returncode


def list_sites(binary, globs):
    """(functions, probe sites) calltrace would trace for these -F globs."""
    out = sh(CALLTRACE, "list", binary, *globs)
    m = re.search(r"^# (\d+) functions, (\d+) probe sites", out, re.M)
    if not m:
        raise RuntimeError("unexpected calltrace list output: %r" % out[:300])
    return int(m.group(1)), int(m.group(2))


def stop(proc):
    """Ends a process we started: SIGTERM first (calltrace forwards it to
    the traced program and still detaches), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


Watched = collections.namedtuple("Watched", "rc out err hwm_kb cpu_ns wall start_ns end_ns")


def run_watched(argv, env=None):
    """Runs argv to completion, sampling every 20 ms its peak RSS (VmHWM,
    which only grows, so the last sample is the peak up to 20 ms before
    exit) and its threads' on-CPU time (schedstat, ns resolution, gone once
    the process is reaped).  Only this process: the program calltrace
    launches is its child and is not counted.  Output goes through files,
    not pipes, so a chatty process can never block on a full pipe."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start_ns = time.time_ns()
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True)
        hwm, per_task = 0, {}
        try:
            while True:
                try:
                    with open("/proc/%d/status" % proc.pid) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                hwm = max(hwm, int(line.split()[1]))
                    tasks = "/proc/%d/task" % proc.pid
                    for t in os.listdir(tasks):
                        with open(os.path.join(tasks, t, "schedstat")) as f:
                            per_task[t] = int(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    pass
                if proc.poll() is not None:
                    break
                time.sleep(0.02)
        finally:
            stop(proc)
        wall = time.monotonic() - t0
        end_ns = time.time_ns()
        out.seek(0)
        err.seek(0)
        return Watched(proc.returncode, out.read(), err.read(), hwm, sum(per_task.values()),
                       wall, start_ns, end_ns)


def time_v(argv, stdout=subprocess.DEVNULL):
    """(wall s, CPU s, peak RSS KB, rc, stderr) of a command run on its own.
    /usr/bin/time -v (Debian 'time', from make deps) when installed, else
    os.wait4, whose rusage is that one child's (RUSAGE_CHILDREN would be the
    largest of every child so far)."""
    if os.access("/usr/bin/time", os.X_OK):
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-v"] + argv, stdout=stdout,
                           stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        kv = dict(line.strip().rsplit(": ", 1) for line in p.stderr.splitlines()
                  if ": " in line)
        try:
            cpu = float(kv["User time (seconds)"]) + float(kv["System time (seconds)"])
            rss = int(kv["Maximum resident set size (kbytes)"])
        except (KeyError, ValueError):
            cpu, rss = float("nan"), 0
        return wall, cpu, rss, p.returncode, p.stderr
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=err)
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            proc.returncode = 0  # reaped by wait4: keep Popen from waiting again
        wall = time.monotonic() - t0
        err.seek(0)
        return (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss,
                os.waitstatus_to_exitcode(status), err.read())


PHASES = [("target", r"^calltrace: target: .* in ([\d.]+) ms$"),
          ("plan", r"^calltrace: plan: .* in ([\d.]+) ms$"),
          ("bpf", r"^calltrace: BPF programs loaded in ([\d.]+) ms"),
          ("attach", r"^calltrace: attached \d+ sites .* in ([\d.]+) ms$"),
          ("detach", r"^calltrace: detached in ([\d.]+) ms$"),
          ("written", r"^calltrace: trace written in ([\d.]+) ms after detach$")]


def phases(stderr):
    """record -v's phase timings in ms ({} entries missing if not printed);
    a program with shared libraries attaches several times: summed."""
    out = {}
    for name, rx in PHASES:
        vals = [float(v) for v in re.findall(rx, stderr, re.M)]
        if vals:
            out[name] = sum(vals)
    return out


def record(opts, workload, datafile, env=None):
    """calltrace record -v OPTS -o DATAFILE -- WORKLOAD, watched; raises
    with calltrace's message if it fails."""
    w = run_watched([CALLTRACE, "record", "-v"] + list(opts) + ["-o", datafile, "--"] +
                    list(workload), env=env)
    if w.rc != 0:
        raise RuntimeError("calltrace record %s failed (%d): %s" % (
            " ".join(opts), w.rc, w.err.strip().splitlines()[-1:] or ""))
    return w


def kv_of(out):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", out)}


def fmt_globs(globs):
    return " ".join("-F '%s'" % g for g in globs)


def section(name, fn, *a):
    """Runs one part of the scale section; a failure prints NAME=skipped
    with the reason and lets the other parts run."""
    try:
        return fn(*a)
    except Exception as e:  # a bench must report, not crash, on one bad part
        print("%s=skipped (%s: %s)" % (name, type(e).__name__, str(e).strip()[:300]), flush=True)
        return None


def scale_startup(tmp, quick):
    """Start-up and shut-down of >= SITES_GOAL sites on the http workload."""
    globs = []
    for g in WIDEN:
        globs.append(g)
        nfuncs, nsites = list_sites(HTTP, globs)
        if nsites >= SITES_GOAL:
            break
    print("scale_sites: %s (%d functions, %d probe sites)" % (fmt_globs(globs), nfuncs, nsites))
    opts = [x for g in globs for x in ("-F", g)]
    datafile = os.path.join(tmp, "sites.data")
    runs = []
    # Few requests: with this many functions traced a request costs tens of
    # ms, and what is measured here is set-up and tear-down, not the load.
    for _ in range(1 if quick else 3):
        w = record(opts, [HTTP, "10", "0"], datafile)
        ph, kv, inf = phases(w.err), kv_of(w.out), info(datafile)
        missing = [p for p, _ in PHASES if p not in ph]
        if missing:
            raise RuntimeError("record -v printed no %s phase" % ", ".join(missing))
        runs.append(dict(ph, info=inf, hwm_kb=w.hwm_kb,
                         startup=ph["target"] + ph["plan"] + ph["bpf"] + ph["attach"],
                         # launch of calltrace .. the program's main(); the
                         # program's last statement .. calltrace's exit.
                         startup_wall=(kv["start_unix_ns"] - w.start_ns) / 1e6,
                         shutdown_wall=(w.end_ns - kv["end_unix_ns"]) / 1e6))
    runs.sort(key=lambda r: r["startup"])
    r = runs[len(runs) // 2]  # the run with the median start-up
    inf = r["info"]
    print("attach_sites=%s" % re.match(r"\d+", inf.get("plan.sites", "0")).group(0))
    print("attach_ms=%s" % inf.get("attach_ms", "?"))
    print("detach_ms=%s" % inf.get("detach_ms", "?"))
    print("startup_phases_ms: target=%.1f plan=%.1f bpf_load=%.1f attach=%.1f "
          "(median of %d runs by total)" % (r["target"], r["plan"], r["bpf"], r["attach"], len(runs)))
    print("startup_ms=%.1f" % r["startup"])
    print("shutdown_ms=%.1f (detach %.1f + drain and final write %.1f; events=%s lost=%s)" % (
        r["written"], r["detach"], r["written"] - r["detach"], inf.get("events", "?"),
        inf.get("lost", "?")))
    print("startup_wall_ms=%.1f (calltrace launched .. the program's main ran)" % r["startup_wall"])
    print("shutdown_wall_ms=%.1f (the program's last statement .. calltrace exited)"
          % r["shutdown_wall"])
    print("record_peak_rss_kb_sites=%d (VmHWM of calltrace record with these %d sites)"
          % (r["hwm_kb"], nsites))
    return {"sites": nsites, "startup": r["startup"], "shutdown": r["written"], "run": r,
            "startup_wall": r["startup_wall"], "shutdown_wall": r["shutdown_wall"]}


def scale_http(tracefs, tmp, quick):
    """Per-request overhead of tracing net/http.* in the http workload,
    --exit=auto (the default) and --exit=ret (issue 10), and of the raw
    tracefs floors of the sites each probes from the start.

    Each round runs the untraced workload, auto and ret back to back, order
    alternating, and yields its own ratio ret/auto of overheads over that
    round's untraced run: the three saw the same machine, which a ratio of
    medians taken over different rounds does not ensure (three runs of one
    build minutes apart gave 2.4x-3.7x that way).  The median of the
    per-round ratios is judged, their quartiles and range printed (single
    rounds under load range 2x-7x; the median of 15 moved by 0.2 between
    runs).  Wall time is judged: it is what the goal names and what a user
    of the traced server waits.  Process CPU leaves out the time the program
    waits -- for a CPU the tracer or anyone else holds, for wake-ups -- and
    gave auto the larger ratio in every run we made (3.3-3.7x against
    3.2-3.4x wall), so judging it would flatter; it is printed next to it,
    steadier per round, for when the load is above the CPU count.

    The floors say what the traps cost in this program, whose hits miss
    caches a loop never misses (a hit here costs ~1.5x one in bench/fib):
    plain `p:` probes at the sites `record -F 'net/http.*'` places at start
    with --exit=auto and with --exit=ret, on copies of the binary of their
    own (probes belong to a file), enabled through all rounds (disabling
    ~1,000 of them takes ~30 s here)."""
    nreq, warm = 200, 20
    rounds = 7 if quick else 15  # ~2.5 s a round on an idle 2-CPU VM
    opts = ["-F", "net/http.*"]
    datafile = os.path.join(tmp, "http.data")
    runs = {"base": [], "auto": [], "ret": [], "floor": [], "floor_ret": [], "floor_same": []}
    lost, share, events, loads = 0, None, 0, []
    mix = {}  # hits a request, by mode: (emulated, single-stepped)
    floor_of = {}  # floor: (binary copy, its probes, their hits in a run of no requests, sites)
    hits = {"floor": [], "floor_ret": [], "floor_same": []}  # a request's, each round
    # floor_same: the sites auto has at the end, those it adds while recording too
    record(opts + ["--exit=auto"], [HTTP, str(nreq), str(warm)], datafile)
    same = [vaddr_to_offset(HTTP, a) for a in final_sites(HTTP, "net/http.*", datafile)]
    with contextlib.ExitStack() as floors:
        for t, mode in (("floor", "auto"), ("floor_ret", "ret"), ("floor_same", "auto")):
            copy = os.path.join(tmp, "http_" + t)
            shutil.copy2(HTTP, copy)
            up = floors.enter_context(Uprobes(tracefs, "ctbench%d%s" % (os.getpid(), t), copy,
                                              same if t == "floor_same" else
                                              planned_offsets(HTTP, "net/http.*", mode)))
            up.enable(True)
            before = sum(up.hits().values())
            sh(copy, "0", str(warm))
            floor_of[t] = (copy, up, sum(up.hits().values()) - before, len(up.names))
        for r in range(rounds):
            order = ("base", "auto", "ret", "floor", "floor_ret", "floor_same")
            for t in (order if r % 2 == 0 else order[::-1]):
                if t == "base":
                    runs[t].append(kv_of(sh(HTTP, str(nreq), str(warm))))
                    continue
                if t in floor_of:
                    copy, up, idle, _ = floor_of[t]
                    before = sum(up.hits().values())
                    runs[t].append(kv_of(sh(copy, str(nreq), str(warm))))
                    hits[t].append((sum(up.hits().values()) - before - idle) / nreq)
                    continue
                w = record(opts + ["--exit=" + t], [HTTP, str(nreq), str(warm)], datafile)
                runs[t].append(kv_of(w.out))
                if t == "auto":
                    inf = info(datafile)
                    lost += int(inf.get("lost", 0))
                    if share is None:
                        events = int(inf.get("events", 0))
                        probe_hits = int(inf.get("probe_hits", "0").split()[0])
                        share = calls_line(datafile)
                if t not in mix:
                    mix[t] = hit_mix(datafile)
            loads.append(os.getloadavg()[0])
    # What the requests themselves cost in events: a run without timed
    # requests records server start-up and the warm-up only.
    for t in ("ret", "auto"):
        record(opts + ["--exit=" + t], [HTTP, "0", str(warm)], datafile)
        mix[t] = [(a - b) / nreq for a, b in zip(mix[t], hit_mix(datafile))]
    ev_req = (events - int(info(datafile).get("events", 0))) / nreq
    # (and in probe hits, those that send no event too)
    hits_req = (probe_hits - int(info(datafile).get("probe_hits", "0").split()[0])) / nreq

    def over(t, i, k):
        """Overhead us per request of run i of t over round i's untraced run."""
        x, b = runs[t][i], runs["base"][i]
        return (x[k] / x["requests"] - b[k] / b["requests"]) / 1e3

    def ratios(a, b, k):
        """a's overheads over b's, within each round, sorted."""
        return sorted(over(a, i, k) / over(b, i, k) if over(b, i, k) > 0 else float("inf")
                      for i in range(rounds))

    def spread(xs):
        q = statistics.quantiles(xs, n=4)
        return "quartiles %.2f-%.2f, range %.2f-%.2f" % (q[0], q[2], xs[0], xs[-1])

    med = lambda t, k: median([over(t, i, k) for i in range(rounds)])
    wall, cpu = ratios("ret", "auto", "ns"), ratios("ret", "auto", "cpu_ns")
    print("http_untraced_per_request_us=%.1f" % median([x["ns"] / x["requests"] / 1e3 for x in runs["base"]]))
    print("http_overhead_per_request_us=%.0f (-F 'net/http.*', %d sequential requests, wall over the "
          "untraced run of the same round, median of %d rounds; process CPU: %.0f)" % (
              med("auto", "ns"), nreq, rounds, med("auto", "cpu_ns")))
    print("http_events_per_request=%.0f (%.1f us of overhead per event; lost=%d)" % (
        ev_req, med("auto", "ns") / ev_req if ev_req else 0, lost))
    print("http_overhead_per_request_us_ret=%.0f (the same with --exit=ret; process CPU: %.0f)" % (
        med("ret", "ns"), med("ret", "cpu_ns")))
    print("http_ret_over_auto=%.2f (wall, ratio within each of %d rounds, median; %s; process CPU: "
          "%.2f, %s; load average %.1f-%.1f)" % (
              median(wall), rounds, spread(wall), median(cpu), spread(cpu), min(loads), max(loads)))
    if share:
        print("exits_not_at_ret[http]=%s" % share_text(share))
    print("http_hits_per_request=auto %.1f emulated + %.1f single-stepped, ret %.1f + %.1f (info --steps; "
          "each less its run without timed requests)" % tuple(mix["auto"] + mix["ret"]))
    fh = {t: median(hits[t]) for t in hits}
    for t, mode in (("floor", "auto"), ("floor_ret", "ret"), ("floor_same", "auto")):
        print("http_%s_per_request_us=%.0f (tracefs p: at the %d sites --exit=%s, "
              "%.1f hits a request: %.0f ns of process CPU a hit; process CPU: %.0f)" % (
                  t, med(t, "ns"), floor_of[t][3], mode + (" has at its end, those added while recording "
                                                           "too, not the interim RETs" if t == "floor_same" else
                                                           " probes from the start"), fh[t],
                  med(t, "cpu_ns") * 1e3 / fh[t] if fh[t] else 0, med(t, "cpu_ns")))
    kernel, over_floor = ratios("floor_ret", "floor", "ns"), ratios("auto", "floor", "cpu_ns")
    print("http_kernel_ret_over_auto=%.2f (the floors' ratio, wall, within rounds; %s: what these sites' "
          "traps in this program allow any tracer, or a little more: auto's floor lacks the exit probes "
          "added at callers found while recording and the interim RETs)" % (median(kernel), spread(kernel)))
    print("http_auto_over_floor=%.2f (process CPU, within rounds; %s; auto hits %.1f a request to the "
          "floor's %.1f, %.0f ns a hit)" % (median(over_floor), spread(over_floor), sum(mix["auto"]), fh["floor"],
                                            med("auto", "cpu_ns") * 1e3 / sum(mix["auto"])))
    kernel_same, over_same = ratios("floor_ret", "floor_same", "ns"), ratios("auto", "floor_same", "cpu_ns")
    print("http_kernel_ret_over_auto_same=%.2f (wall, within rounds; %s: ret's floor over the floor of the sites "
          "auto has at its end -- what the traps allow at the sites it ends up with)" % (
              median(kernel_same), spread(kernel_same)))
    print("http_auto_over_same_floor=%.2f (process CPU, within rounds; %s; auto hits %.1f a request (%.1f send "
          "an event), that floor %.1f: it has every probe in all along)" % (
              median(over_same), spread(over_same), hits_req, sum(mix["auto"]), fh["floor_same"]))
    return {"over": med("auto", "ns"), "ev_req": ev_req, "over_ret": med("ret", "ns"),
            "ratio": median(wall), "spread": spread(wall), "mix": mix, "kernel": median(kernel),
            "kernel_same": median(kernel_same), "over_same": median(over_same), "spread_same": spread(over_same)}


def hit_mix(datafile):
    """(emulated, single-stepped) probe hits of a record file, from its
    events and info --steps (Go code has no 5-byte nops: no hit here is
    the kernel's trap-free kind)."""
    m = re.search(r"^stepped: +(\d+) of (\d+) probe hits", sh(CALLTRACE, "info", "--steps", datafile), re.M)
    if not m:
        raise RuntimeError("unexpected calltrace info --steps output")
    return int(m.group(2)) - int(m.group(1)), int(m.group(1))


def trap_priced_ratio(mix, trap):
    """ret's hits a request over auto's, each at this machine's price of
    a bare trap of its class: the ratio a tracer that cost nothing beyond
    the kernel's traps would get."""
    cost = lambda t: mix[t][0] * trap["emulated"] + mix[t][1] * trap["single-stepped"]
    return cost("ret") / cost("auto") if cost("auto") > 0 else float("inf")


def fibpar_env(nproc):
    return dict(os.environ, GOMAXPROCS=str(nproc))


def scale_rate(tmp, nproc, setup_cpu_ns):
    """The highest event rate recorded without loss: fib on one goroutine
    per CPU, the cheapest traced call there is (one cheap entry, one RET),
    with a 1 MiB ring buffer -- ~20,000 events, so the run is many buffers
    long and only a drain that keeps up all along avoids losses (the
    default 16 MiB would swallow a short run whole)."""
    datafile = os.path.join(tmp, "rate.data")
    for buf in ("1M", None):
        opts = ["-F", FUNC] + (["--buffer-size", buf] if buf else [])
        w = record(opts, [FIBPAR, "22", "2", str(nproc)], datafile, env=fibpar_env(nproc))
        inf, kv = info(datafile), kv_of(w.out)
        events, lost = int(inf.get("events", 0)), int(inf.get("lost", 0))
        if not lost:
            break
        print("bench: note: %d events lost with --buffer-size %s; retrying with the default"
              % (lost, buf))
    rate = events / (kv["ns"] / 1e9)
    trap_ns = kv["cpu_ns"] / events  # the program's CPU per event: trap + BPF
    drain_ns = max(w.cpu_ns - setup_cpu_ns, 0) / events
    return {"rate": rate, "events": events, "lost": lost, "trap_ns": trap_ns,
            "drain_ns": drain_ns, "buf": buf or "16M (default)", "nproc": nproc}


def print_rate(r, other=None):
    runs = [r] + ([other] if other else [])
    print("events_per_s_runs: " + "; ".join(
        "%s, ring buffer %s: %.0f events/s, lost=%d" % (x["what"], x["buf"], x["rate"], x["lost"])
        for x in runs))
    best = r
    if other and not other["lost"] and (r["lost"] or other["rate"] > r["rate"]):
        best = other
    print("events_per_s_max=%.0f (%s: %d events, lost=%d, ring buffer %s)" % (
        best["rate"], best["what"], best["events"], best["lost"], best["buf"]))
    print("events_per_s_limit: the traced program spends %.1f us of CPU per event (probe trap "
          "+ BPF), so %d CPUs produce at most %.0f events/s; the tracer spends %.0f ns of CPU "
          "per event draining and writing: one core drains %.0f events/s" % (
              best["trap_ns"] / 1e3, best["nproc"], best["nproc"] * 1e9 / best["trap_ns"],
              best["drain_ns"], 1e9 / best["drain_ns"] if best["drain_ns"] else float("inf")))
    return best


def cache_key(workload, params, opts):
    """The big trace depends on the calltrace binary (file format, what is
    recorded), the workload binary and how it was run."""
    st = os.stat(CALLTRACE)  # the private copy keeps build/calltrace's mtime
    h = hashlib.sha256()
    with open(workload, "rb") as f:
        h.update(f.read())
    h.update(repr((st.st_mtime_ns, st.st_size, params, opts)).encode())
    return h.hexdigest()[:16]


def cached_trace(name, params, nproc, setup_cpu_ns, allow_record):
    """(datafile, recording facts) of fibpar PARAMS recorded with -F main.fib,
    from build/bench/NAME-KEY.{data,json} or recorded now (and older
    NAME-*.{data,json} removed)."""
    opts = ["-F", FUNC]
    key = cache_key(FIBPAR, (params, nproc), opts)
    data = os.path.join(BENCH_BUILD, "%s-%s.data" % (name, key))
    meta = data[:-5] + ".json"
    if os.path.exists(data) and os.path.exists(meta):
        with open(meta) as f:
            facts = json.load(f)
        facts["cached"] = True
        return data, facts
    if not allow_record:
        return None, None
    for old in os.listdir(BENCH_BUILD):
        # also what an interrupted run left (.tmp, and calltrace's .old)
        if re.match(r"%s-[0-9a-f]{16}\.(data|json)(\.tmp)?(\.old)?$" % name, old):
            os.unlink(os.path.join(BENCH_BUILD, old))
    w = record(opts, [FIBPAR] + [str(x) for x in params], data + ".tmp", env=fibpar_env(nproc))
    inf, kv = info(data + ".tmp"), kv_of(w.out)
    events = int(inf.get("events", 0))
    facts = {"events": events, "lost": int(inf.get("lost", 0)), "size": os.path.getsize(data + ".tmp"),
             "record_peak_rss_kb": w.hwm_kb, "loop_ns": kv["ns"], "trap_ns": kv["cpu_ns"] / events,
             "drain_ns": max(w.cpu_ns - setup_cpu_ns, 0) / events, "nproc": nproc,
             "rate": events / (kv["ns"] / 1e9), "record_wall_s": w.wall,
             "params": params, "recorded": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.rename(data + ".tmp", data)
    try:
        os.unlink(data + ".tmp.old")  # calltrace keeps a previous output as .old
    except OSError:
        pass
    with open(meta, "w") as f:
        json.dump(facts, f)
    facts["cached"] = False
    return data, facts


STREAM_CMDS = [("replay", ["replay"]), ("replay_json", ["replay", "--format=json"]),
               ("report", ["report"])]


def goroutine_switches(datafile):
    """How often the trace's next event (file order) is another goroutine's
    or thread's than the one before: replay's time depends on it (each
    switch finds another stack, and the text tree another group), and it
    differs between recordings of the same command (the scheduler, and two
    CPUs' events merged by time), so the throughputs are comparable only
    at about the same count."""
    p = subprocess.Popen([CALLTRACE, "dump", "--events", datafile], stdout=subprocess.PIPE)
    prev, n = None, 0
    for line in p.stdout:
        if line.startswith(b"#"):
            continue
        f = line.split(b" ", 4)  # ts= pid= tid= goid= ...
        if len(f) < 4:
            continue
        who = (f[1], f[3] if f[3] != b"goid=0" else f[2])
        if who != prev:
            n += prev is not None
            prev = who
    p.wait()
    return n


def trace_switches(data, facts):
    """goroutine_switches of a cached trace, counted once and kept with its
    facts (NAME-KEY.json)."""
    if "switches" not in facts:
        facts["switches"] = goroutine_switches(data)
        meta = data[:-5] + ".json"
        try:
            with open(meta) as f:
                kept = json.load(f)
            kept["switches"] = facts["switches"]
            with open(meta, "w") as f:
                json.dump(kept, f)
        except (OSError, ValueError):
            pass
    return facts["switches"]


def scale_stream(big, small):
    """Throughput and peak RSS of replay, replay --format=json and report on
    the big trace, and peak RSS on the small one: streaming means the two
    peaks are the same."""
    out = {}
    switches = trace_switches(*big)
    print("big_trace_switches=%d (of %d events: the next event is another goroutine's or "
          "thread's; replay's time depends on it: compare replay throughputs at about the "
          "same count)" % (switches, big[1]["events"]))
    for name, argv in STREAM_CMDS:
        if name == "report":
            p = subprocess.run([CALLTRACE, "report", small[0]], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                # A colleague may not have written report yet.
                print("report_events_per_s=skipped (calltrace report: %s)" %
                      (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1])
                continue
        res = {}
        for tag, (data, facts) in (("big", big), ("small", small)):
            wall, cpu, rss, rc, err = time_v([CALLTRACE] + argv + [data])
            if rc != 0:
                raise RuntimeError("calltrace %s failed: %s" % (" ".join(argv), err.strip()[-200:]))
            res[tag] = (wall, cpu, rss, facts["events"])
        wall, cpu, rss, ev = res["big"]
        out[name] = {"per_core": ev / cpu if cpu > 0 else 0.0, "wall": ev / wall, "rss": rss,
                     "rss_small": res["small"][2], "events": ev, "events_small": res["small"][3],
                     "cpu": cpu, "switches": switches}
        o = out[name]
        print("%s_events_per_s=%.0f (per core: %d events / %.2f s CPU; wall %.0f/s; "
              "%d goroutine switches in the trace)" % (name, o["per_core"], ev, cpu, o["wall"], switches))
        print("%s_peak_rss_kb=%d (%d on a trace of %d events)" % (
            name, rss, o["rss_small"], o["events_small"]))
    return out


def goal(name, met, text):
    print("goal_%s=%s (%s)" % (name, "met" if met else "not_met", text), flush=True)


def scale_section(tracefs, tmp, nproc, per_call, quick, exits_res=None):
    print("# scale (issues 5 and 6)", flush=True)
    build_go("http")
    build_go("fibpar")
    # What calltrace record costs the tracer in CPU with nothing to drain,
    # subtracted from the big runs' tracer CPU to leave the per-event part.
    setup = run_watched([CALLTRACE, "record", "-F", FUNC, "-o", os.path.join(tmp, "setup.data"),
                         "--", FIBPAR, "1", "1", "1"])
    setup_cpu = setup.cpu_ns

    st = section("attach_sites", scale_startup, tmp, quick)
    http = section("http_overhead_per_request_us", scale_http, tracefs, tmp, quick)
    rate = section("events_per_s_max", scale_rate, tmp, nproc, setup_cpu)
    if rate:
        rate["what"] = "fibpar, %d goroutines on GOMAXPROCS=%d" % (nproc, nproc)

    def big_traces():
        small = cached_trace("small", SMALL, nproc, setup_cpu, True)
        big = cached_trace("big", BIG, nproc, setup_cpu, not quick)
        if big[0] is None:
            raise RuntimeError("--quick and no cached trace of %d events" % BIG_MIN_EVENTS)
        return small, big
    traces = section("big_trace", big_traces)
    small = big = None
    if traces:
        small, big = traces
        f = big[1]
        print("big_trace: fibpar %s on GOMAXPROCS=%d, %d events, lost=%d, %s" % (
            " ".join(map(str, f["params"])), f["nproc"], f["events"], f["lost"],
            "cached (recorded %s)" % f["recorded"] if f["cached"] else
            "recorded in %.0f s" % f["record_wall_s"]))
        if f["events"] < BIG_MIN_EVENTS:
            print("bench: warning: the big trace has fewer than %d events" % BIG_MIN_EVENTS)
        print("big_bytes_per_event=%.2f" % (f["size"] / f["events"]))
        print("record_peak_rss_kb=%d (VmHWM of calltrace record; %d for the %d-event trace)" % (
            f["record_peak_rss_kb"], small[1]["record_peak_rss_kb"], small[1]["events"]))
    if rate:
        other = None
        if big and not big[1]["cached"]:
            other = dict(big[1], what="the big trace", buf="16M (default)")
        rate = print_rate(rate, other)
    stream = None
    if big:
        stream = section("replay_events_per_s", scale_stream, big, small)
    else:
        print("replay_events_per_s=skipped (no trace of %d events)" % BIG_MIN_EVENTS)

    print("# goals", flush=True)
    if st:
        r = st["run"]
        goal("startup", st["startup"] <= GOAL_STARTUP_MS,
             "%.0f ms <= %.0f for %d sites: target %.0f + plan %.0f + BPF load %.0f + attach %.0f;"
             " wall %.0f" % (st["startup"], GOAL_STARTUP_MS, st["sites"], r["target"], r["plan"],
                             r["bpf"], r["attach"], st["startup_wall"]))
        goal("shutdown", st["shutdown"] <= GOAL_SHUTDOWN_MS,
             "%.0f ms <= %.0f for %d sites: detach %.0f + drain and write %.0f; wall %.0f" % (
                 st["shutdown"], GOAL_SHUTDOWN_MS, st["sites"], r["detach"],
                 r["written"] - r["detach"], st["shutdown_wall"]))
    exits_goals(exits_res or {}, http)
    if per_call:
        ct, fl = per_call["ct"], per_call["floor"]
        # 5% allowance: rounds on this shared VM differ by more than that.
        goal("per_call", per_call["cpu_paired"] <= 1.05,
             "thread CPU %.0f ns/call vs tracefs floor %.0f; ratio within rounds %.3f <= 1.05 "
             "(of the medians %.3f)" % (ct[1], fl[1], per_call["cpu_paired"], ct[1] / fl[1]))
    if rate:
        cap = 1e9 / rate["drain_ns"] if rate["drain_ns"] else float("inf")
        goal("drain", rate["lost"] == 0 and cap >= GOAL_DRAIN_EV_S,
             "one core drains %.0f events/s (%.0f ns CPU/event) >= %.0f; max rate this machine "
             "produced: %.0f events/s, lost=%d -- the program's probe traps (%.1f us/event) "
             "are the limit" % (cap, rate["drain_ns"], GOAL_DRAIN_EV_S, rate["rate"],
                                rate["lost"], rate["trap_ns"] / 1e3))
    if big:
        b, s = big[1], small[1]
        site_kb = st["run"]["hwm_kb"] if st else 0
        goal("tracer_rss", max(b["record_peak_rss_kb"], site_kb) <= GOAL_RSS_KB,
             "%d KB <= 64 MiB + 16 MiB buffer = %d KB recording %d events (%d KB for %d events); "
             "%d KB with %s probe sites"
             % (b["record_peak_rss_kb"], GOAL_RSS_KB, b["events"], s["record_peak_rss_kb"],
                s["events"], site_kb, st["sites"] if st else "?"))
    for name, label in (("replay", "replay"), ("replay_json", "replay --format=json"),
                        ("report", "report")):
        o = (stream or {}).get(name)
        if not o:
            continue
        goal(name + "_throughput", o["per_core"] >= GOAL_STREAM_EV_S,
             "%s: %.2f M events/s per core >= %.0f M" % (label, o["per_core"] / 1e6,
                                                          GOAL_STREAM_EV_S / 1e6))
        # Bounded by depth x goroutines, not by length: the same peak (within
        # 10% + 1 MiB of allocator noise) on a trace ~12x shorter of the
        # same shape.
        goal(name + "_memory", o["rss"] <= 1.1 * o["rss_small"] + 1024,
             "%s: %d KB on %d events vs %d KB on %d events" % (
                 label, o["rss"], o["events"], o["rss_small"], o["events_small"]))


def main():
    global CALLTRACE
    args = sys.argv[1:]
    rounds, n, breakdown = 5, 22, True
    scale, scale_only, quick, exits_only, http_only = True, False, False, False, False
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--n":
            n = int(args.pop(0))
        elif a == "--no-breakdown":
            breakdown = False
        elif a == "--no-scale":
            scale = False
        elif a == "--scale-only":
            scale_only = True
        elif a == "--quick":
            quick = True
        elif a == "--exits-only":
            exits_only = True
        elif a == "--http-only":
            http_only = True
        else:
            print(__doc__)
            return 2

    if os.geteuid() != 0:
        skip("needs root (uprobes, BPF)")
    tracefs = find_tracefs()
    if not tracefs:
        skip("no tracefs (uprobe_events) on this kernel")
    if not os.access(CALLTRACE, os.X_OK):
        subprocess.run(["make", "-C", REPO], check=True)
    build_workload()
    tmp = tempfile.mkdtemp(prefix="ctbench.")
    # calltrace keeps the previous output as FILE.old: remove the lot.
    atexit.register(shutil.rmtree, tmp, True)
    datafile = os.path.join(tmp, "bench.data")
    # Run a private copy: a rebuild of build/calltrace during the bench (the
    # tree is shared) must neither break the run nor change what it measures.
    shutil.copy2(CALLTRACE, os.path.join(tmp, "calltrace"))
    CALLTRACE = os.path.join(tmp, "calltrace")

    # A SIGTERM/SIGHUP must still unwind through the Uprobes context
    # managers, which remove the probes, and through the scale section's
    # finally blocks, which stop the tracer and the workload they started.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    bpf_error = bpf_check(tmp)
    if bpf_error:
        skip("BPF unavailable: %s" % bpf_error)
    nproc, kernel, model = machine()
    print("machine: nproc=%d kernel=%s cpu=%s loadavg=%.2f" % (
        nproc, kernel, model, os.getloadavg()[0]))
    if bpf_stats_on():
        print("machine: kernel.bpf_stats_enabled=1 -- every BPF program run is timed by the kernel (two clock "
              "reads more a probe hit than on a fresh machine, which the tracefs floors do not pay); "
              "'sysctl -w kernel.bpf_stats_enabled=0' if nothing here needs it")

    exits_res = {}
    if http_only:  # the http section alone (its floors), without goals
        build_go("http")
        scale_http(tracefs, tmp, quick)
        return 0
    if exits_only:
        exits_res = exits_section(tracefs, rounds, tmp)
        exit_shares(tmp)
        print("# goals", flush=True)
        exits_goals(exits_res, None)
        return 0
    if not scale_only:
        results = per_call_section(tracefs, rounds, n, breakdown, datafile)
        exits_res = section("exits", exits_section, tracefs, 3 if quick else rounds, tmp) or {}
        section("exit shares", exit_shares, tmp)
    else:
        results = {}
    if scale:
        scale_section(tracefs, tmp, nproc, results, quick, exits_res)
    elif exits_res:
        print("# goals", flush=True)
        exits_goals(exits_res, None)
    # WebAssembly modules (issue 9): bench/wasm.py
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import wasm
    wasm.main(CALLTRACE, rounds=3 if quick else 5)
    # overhead correction (issue 13): bench/correction.py
    import correction
    correction.main(CALLTRACE, rounds=3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
