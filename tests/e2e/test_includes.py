"""The include graph of src/ follows the pipeline (docs/ARCHITECTURE.md):
no header cycle, and no folder includes a later stage's header.

Stages, earliest first; a folder may include its own headers, the shared
bases and any earlier stage.  `format/` (the record file and the payload
codec) comes right after `target/`, so every writer and reader may use it; of
`target/` it uses what FORMAT_USES_TARGET lists (the type table and value
pieces it stores, the CT_FN_* flags, the demangler); `wasm/` is a second event source next to
`probes/`; `export/`, `cmds/` and `main.c` come after everything they use.
"""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")

# Shared bases: anything may include them, they include only each other.
# probes/event.h is the kernel contract (site kinds, cookie layout, pt_regs
# slots, the event), shared by the BPF programs and every user-space stage.
BASES = {"util", "probes/event.h"}
STAGES = ["target", "format", "plan", "probes", "wasm", "record", "reconstruct", "render", "export", "cmds", "main.c"]
RANK = {s: i for i, s in enumerate(STAGES)}
RANK["wasm"] = RANK["probes"]  # a second event source, parallel to the probes

# The read path works from the record file alone: it includes nothing of
# the record-time planner.
READERS = {"reconstruct", "render", "export"}
PLANNER = {"plan", "probes"}

# Known exceptions, each with its reason; nothing may be added.  (The moves of
# issue 12 emptied both.)
ALLOWED_BACKWARD = set()
ALLOWED_READER_PLAN = set()

# What format/ takes from target/, as docs/ARCHITECTURE.md says: the record
# file stores the type table, the value pieces' kinds and the functions'
# flags, and names functions through the demangler.
FORMAT_USES_TARGET = {
    "target/types.h": "the type table and enum ct_piece_kind",
    "target/target.h": "the CT_FN_* flags",
    "target/demangle.h": "the demangler",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    files = glob.glob(os.path.join(SRC, "**", "*.[ch]"), recursive=True)
    return sorted(os.path.relpath(f, SRC) for f in files)


def includes(rel):
    """Project headers REL includes, as paths under src/ (generated ones,
    like the BPF skeleton and vmlinux.h, are not under src/ and are skipped)."""
    with open(os.path.join(SRC, rel), errors="replace") as f:
        text = f.read()
    out = []
    for inc in INCLUDE.findall(text):
        for cand in (inc, os.path.join(os.path.dirname(rel), inc)):
            if os.path.isfile(os.path.join(SRC, cand)):
                out.append(os.path.normpath(cand))
                break
    return out


def stage_of(rel):
    if rel in BASES or rel.split("/")[0] in BASES:
        return None
    top = rel.split("/")[0]
    assert top in RANK, f"src/{rel}: folder {top!r} has no place in the pipeline (add it to STAGES here and to docs/ARCHITECTURE.md)"
    return top


def graph():
    return {rel: includes(rel) for rel in sources()}


def check_edges(why_bad, allowed, what, allowed_name):
    """Every include WHY_BAD(src, dst) names a reason for, unless ALLOWED."""
    bad, stale = [], set(allowed)
    for rel, incs in graph().items():
        for inc in incs:
            why = why_bad(rel, inc)
            if not why:
                continue
            if (rel, inc) in allowed:
                stale.discard((rel, inc))
            else:
                bad.append(f"{rel} -> {inc} ({why})")
    assert not bad, f"{what}:\n  " + "\n  ".join(bad)
    assert not stale, f"allowed includes that are gone (delete them from {allowed_name}): {sorted(stale)}"


def backward(rel, inc):
    a, b = stage_of(rel), stage_of(inc)
    if a is None:
        return b and "a shared base includes a stage"
    if b is None or b == a or RANK[b] < RANK[a]:
        return None
    return f"{a} comes before {b}"


def reader_uses_planner(rel, inc):
    return stage_of(rel) in READERS and stage_of(inc) in PLANNER and "the read path includes the planner"


def test_no_backward_include():
    check_edges(backward, ALLOWED_BACKWARD, "backward includes", "ALLOWED_BACKWARD")


def test_readers_include_no_planner():
    check_edges(reader_uses_planner, ALLOWED_READER_PLAN, "the read path includes the planner",
                "ALLOWED_READER_PLAN")


def find_cycle(edges):
    """A cycle of EDGES (node -> iterable of nodes) as a list, or None."""
    state = {}  # 1: on the path, 2: done

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_no_include_cycle():
    g = graph()
    cycle = find_cycle(g)
    assert not cycle, "include cycle: " + " -> ".join(cycle)
    # Folders too: a cycle between two folders is a backward edge somewhere,
    # which the test above reports; this one names it as a cycle of folders.
    folders = {}
    for rel, incs in g.items():
        a = stage_of(rel)
        for inc in incs:
            b = stage_of(inc)
            if a and b and a != b and (rel, inc) not in ALLOWED_BACKWARD:
                folders.setdefault(a, set()).add(b)
    cycle = find_cycle(folders)
    assert not cycle, "folder cycle: " + " -> ".join(cycle)


def test_the_check_sees_a_backward_edge():
    # The walker itself: stages, includes and cycles are found.
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b", "c"], "b": ["c"]}) is None
    assert stage_of("render/tree.c") == "render" and stage_of("util/util.h") is None
    assert stage_of("probes/event.h") is None and stage_of("probes/probes.h") == "probes"
    assert "reconstruct/reconstruct.h" in includes("render/render.h")
    assert RANK["plan"] < RANK["record"] < RANK["render"]


def test_format_uses_of_target_as_documented():
    used = {inc for rel, incs in graph().items() if stage_of(rel) == "format"
            for inc in incs if stage_of(inc) == "target"}
    assert used == set(FORMAT_USES_TARGET), \
        f"format/ includes {sorted(used)} of target/; FORMAT_USES_TARGET (and docs/ARCHITECTURE.md) say " \
        f"{sorted(FORMAT_USES_TARGET)}"
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")) as f:
        doc = " ".join(f.read().split())
    for h in FORMAT_USES_TARGET:
        assert "`%s`" % h in doc, f"docs/ARCHITECTURE.md does not say format/ uses {h}"
