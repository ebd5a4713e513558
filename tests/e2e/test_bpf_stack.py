"""The probe program is sleepable (a page fault may sleep in it): every BPF
function of it must keep its stack frame under 64 bytes.  The kernel (6.14+)
puts a tracing program's frame that rounds up (to 16) to 64 bytes or more on
a per-CPU private stack, also a sleepable one's, where the next run on the
CPU overwrites the frames of a run that sleeps (calltrace.bpf.c, struct
run).  The depths are the verifier's own (log level 4), as the loaded
program got them: STATS probe.stack_depth, one per BPF function.  The
verifier leaves out what the configuration (read-only at load) makes dead,
so each configuration that brings code in is recorded."""
import re

from lib import ct, fixture, record

PRIVATE_STACK_MIN = 64  # the kernel's BPF_PRIV_STACK_MIN_SIZE


def frames(out):
    info = ct("info", out).stdout
    m = re.search(r"^probe\.stack_depth +([0-9+]+)$", info, re.M)
    assert m, info
    return [int(d) for d in m.group(1).split("+")]


def check(prog_args, *flags, env=None):
    _, out = record(prog_args, *flags, env=env)
    depths = frames(out)
    jitted = [(d + 15) // 16 * 16 for d in depths]  # as the JIT rounds them
    assert max(jitted) < PRIVATE_STACK_MIN, (
        f"{' '.join(flags)}: frames of {depths} bytes; one that rounds up to {PRIVATE_STACK_MIN} goes on the "
        "kernel's per-CPU private stack: keep what the function holds in struct run, or split it "
        "(a global function has a frame of its own)")


def test_probe_frames_stay_off_the_private_stack_go():
    # --exit=auto (callers reported), arguments fetched
    check([fixture("go_core"), "fib", "5"])


def test_probe_frames_stay_off_the_private_stack_limits():
    # every kernel-side limit and sampling: the shadow stacks
    check([fixture("go_core"), "fib", "7"], "--max-depth", "3", "--min-duration", "1ns", "--root", "main.*",
          "--sample", "1", "--sample-goroutines", "1", "--max-events", "100000")


def test_probe_frames_stay_off_the_private_stack_c_follow():
    # C (no goroutines), RET probes, the pid filter of --follow, perf-event uprobes
    check([fixture("c_asleep")], "--exit=ret", "--follow", "-F", "slow", "-F", "tick",
          env={"CALLTRACE_PERF_EVENTS": "1"})
