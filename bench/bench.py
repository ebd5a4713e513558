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

Run as root (make bench).  Exits 1 with 'bench: skipped: <reason>' only when
it cannot run at all (not root, no tracefs).

Options (for investigation, not needed by make bench):
  --rounds N      rounds of the interleaved measurement (default 5)
  --n N           fib argument (default 22: 57,313 calls; a single-stepped
                  hit costs ~20 us on this VM, so a larger n makes the
                  naive run take many seconds per round)
  --no-breakdown  skip the per-site-class and BPF run-time breakdown
"""
import atexit
import collections
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
    out = sh(CALLTRACE, "list", binary, func, "-v")
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
    out = sh(CALLTRACE, "record", *extra, "-F", FUNC, "-o", datafile, "--", WORKLOAD, str(n))
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
    """BPF ns per hit of ct_entry/ct_exit during one record run.  The
    programs live only as long as calltrace does, so their counters are
    sampled while it runs."""
    fd = enable_bpf_stats() if os.uname().machine == "x86_64" else None
    if fd is None:
        return None
    last = {}
    try:
        proc = subprocess.Popen([CALLTRACE, "record", *extra, "-F", FUNC, "-o", datafile,
                                 "--", WORKLOAD, str(n)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        while proc.poll() is None:
            # Per program, the sample with the most runs wins: at teardown
            # the programs are closed one by one and vanish from the list.
            for name, v in bpf_prog_stats(proc.pid, ("ct_entry", "ct_exit")).items():
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
    proc = subprocess.Popen([CALLTRACE, "record", "-F", FUNC, "-o", datafile, "--",
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
        m = re.match(r"p:(ctbench(\d+))/(\S+) ", line)
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


def main():
    global CALLTRACE
    args = sys.argv[1:]
    rounds, n, breakdown = 5, 22, True
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--n":
            n = int(args.pop(0))
        elif a == "--no-breakdown":
            breakdown = False
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

    nproc, kernel, model = machine()
    print("machine: nproc=%d kernel=%s cpu=%s loadavg=%.2f" % (
        nproc, kernel, model, os.getloadavg()[0]))

    func_addr, entry_off, entry_class, exits = probe_sites(WORKLOAD, FUNC)
    foff = vaddr_to_offset(WORKLOAD, func_addr)
    entry = foff + entry_off
    exit_offs = [foff + off for _, off, _ in exits]
    ret_offs = [foff + off for kind, off, _ in exits if kind == "ret"]
    floor_offs = [entry] + exit_offs
    naive_offs = [foff] + ret_offs
    print("sites: %s at 0x%x (file 0x%x), entry +%d (%s), exits %s" % (
        FUNC, func_addr, foff, entry_off, entry_class,
        ", ".join("%s +%d" % (k, o) for k, o, _ in exits)))

    remove_stale(tracefs)
    group = "ctbench%d" % os.getpid()
    # A SIGTERM/SIGHUP must still unwind through the Uprobes context
    # managers, which remove the probes.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

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
            for name in ("ct_entry", "ct_exit"):
                if name in progs and progs[name][0]:
                    cnt, t = progs[name]
                    bpf_call += t / cnt  # one entry and one exit hit per call
                    print("bpf_ns_per_hit[%s%s]=%.0f (run_cnt=%d)" % (name, tag, t / cnt, cnt))
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
