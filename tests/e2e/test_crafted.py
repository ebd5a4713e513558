"""Record files crafted to lie (valid CRCs, hostile tables): every reader
must stay in bounds, finish quickly with bounded output, and never show
memory that is not in the file."""
import json
import struct
import subprocess

import recfile as R
from lib import ct, tmp

READERS = [
    ["replay"], ["replay", "--merge"], ["replay", "--format=json"], ["replay", "--format=yaml"],
    ["report"], ["report", "--format=json", "--histogram", "*"], ["dump", "--chrome"], ["dump", "--folded"],
    ["dump", "--svg"], ["dump", "--otlp"], ["info"],
]
MAX_OUT = 4 << 20  # these files hold a few bytes: no reader has a reason to print megabytes


def run_readers(path, readers=READERS):
    """Runs every reader on PATH; returns {reader: stdout}.  None may crash,
    hang or print without bound."""
    outs = {}
    for args in readers:
        name = " ".join(args)
        try:
            p = ct(*args, path, timeout=30, errors="backslashreplace")
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} did not finish on {path}")
        assert 0 <= p.returncode <= 1, f"{name}: exit {p.returncode}: {p.stderr[-500:]}"
        assert len(p.stdout) < MAX_OUT, f"{name}: {len(p.stdout)} bytes of output"
        if p.returncode:
            lines = p.stderr.strip().splitlines()
            assert lines and lines[-1].startswith("calltrace: "), f"{name}: {p.stderr[-300:]}"
        outs[name] = p.stdout
    return outs


def c_trace(types, plan, payload, site=0):
    """A C trace of one call f(...) whose entry (site 0) carries PAYLOAD,
    decoded with TYPES and the capture PLAN."""
    r = R.Record("c")
    r.funcs(["f"])
    r.sites([(0, R.ENTRY), (0, R.RET)])
    r.types([{"kind": 0, "name": "?"}] + types)
    r.fetch([dict(plan, site=site)])
    r.events([dict(site=0, ts=2000, tid=7, key=100, payload=payload),
              dict(site=1, ts=3000, tid=7, key=100)])
    return r


INT = {"kind": R.K["int"], "name": "int", "size": 4, "flags": 1}
LONG = {"kind": R.K["int"], "name": "long", "size": 8, "flags": 1}


def test_recfile_writer_round_trip():
    # The Python writer itself: a plain value reads back as written.
    r = c_trace([INT], {"size": 8, "ops": [(R.OP_REG, R.RDI, 0, 8, 0, 0, 0, 0)],
                        "vals": [("x", 1, 0, [(R.PIECE_REG, R.RDI, 4, 0, 0)])]}, R.reg_word(42))
    outs = run_readers(r.write(tmp("craft_ok.data")))
    assert "f(x=42);" in outs["replay"], outs["replay"]
    call = json.loads(outs["replay --format=json"].splitlines()[0])
    assert call["args"] == [{"name": "x", "type": "int", "value": 42}]


def test_piece_value_off_that_wraps():
    # value_off 0xffffffff + size 8 wrapped to 7, inside the value: a write
    # 4 GiB past the value's buffer (SIGSEGV).
    r = c_trace([LONG], {"size": 8, "ops": [(R.OP_REG, R.RDI, 0, 8, 0, 0, 0, 0)],
                         "vals": [("x", 1, 0, [(R.PIECE_REG, R.RDI, 8, 0xFFFFFFFF, 0)])]}, R.reg_word(42))
    outs = run_readers(r.write(tmp("craft_valueoff.data")))
    assert "f(x=<unavailable>)" in outs["replay"], outs["replay"]


def test_struct_field_offset_that_wraps():
    t = [LONG, {"kind": R.K["struct"], "name": "S", "size": 8, "fields": [("a", 0, 1), ("b", 0xFFFFFFF8, 1)]}]
    r = c_trace(t, {"size": 16, "ops": [(R.OP_STACK, 0, 0, 8, 0, 0, 0, 8)],
                    "vals": [("s", 2, 0, [(R.PIECE_STACK, 0, 8, 0, 0)])]},
                R.mem_block(struct.pack("<q", 5)))
    outs = run_readers(r.write(tmp("craft_fieldoff.data")))
    assert "f(s={a:5 b:<?>})" in outs["replay"], outs["replay"]


def test_array_longer_than_what_was_captured():
    # An array type claiming 10^6 bytes: only the 8 captured may be shown.
    t = [{"kind": R.K["uint"], "name": "uint8", "size": 1},
         {"kind": R.K["array"], "name": "[1000000]uint8", "size": 1000000, "elem": 1, "len": 1000000}]
    r = c_trace(t, {"size": 16, "ops": [(R.OP_STACK, 0, 0, 8, 0, 0, 0, 8)],
                    "vals": [("a", 2, 0, [(R.PIECE_STACK, 0, 8, 0, 0)])]}, R.mem_block(bytes(range(1, 9))))
    outs = run_readers(r.write(tmp("craft_array.data")))
    call = json.loads(outs["replay --format=json"].splitlines()[0])
    assert call["args"][0]["value"] is None and "unavailable" in call["args"][0], call["args"]
    assert "f(a=<unavailable: beyond the capture limits>)" in outs["replay"], outs["replay"]


def test_register_op_over_a_snapshot_header():
    # Op 2 (a register) overwrites op 1's length header with 0xfff0: the C
    # string was shown with 64 KiB of the reader's heap after it.
    cstr = {"kind": R.K["cstring"], "name": "char *", "size": 8}
    plan = {"size": 48, "ops": [(R.OP_REG, R.RDI, 0, 8, 0, 0, 0, 0),
                                (R.OP_DEREF_STR, 0, 8, 32, 0, 0, 0, 0),
                                (R.OP_REG, 13, 8, 8, 0, 0, 0, 0)],
            "vals": [("s", 1, 0, [(R.PIECE_REG, R.RDI, 8, 0, 0)])]}
    r = c_trace([cstr], plan, R.reg_word(0x5000) + R.mem_block(b"hello") + R.reg_word(0xFFF0))
    outs = run_readers(r.write(tmp("craft_header.data")))
    for name, out in outs.items():
        assert len(out) < 20000, f"{name}: {len(out)} bytes"
    # no writer lays ops over each other: the file is refused as damaged
    p = ct("replay", tmp("craft_header.data"))
    assert p.returncode == 1 and "damaged (argument tables)" in p.stderr, p.stderr


def test_struct_of_itself_is_bounded():
    # 64 fields of its own type, 6 levels deep: 64^6 values to print.
    t = [{"kind": R.K["struct"], "name": "T", "size": 8, "fields": [(f"f{i}", 0, 1) for i in range(64)]}]
    r = c_trace(t, {"size": 8, "ops": [(R.OP_REG, R.RDI, 0, 8, 0, 0, 0, 0)],
                    "vals": [("t", 1, 0, [(R.PIECE_REG, R.RDI, 8, 0, 0)])]}, R.reg_word(1))
    outs = run_readers(r.write(tmp("craft_self.data")))
    assert "..." in outs["replay"]
    call = json.loads(outs["replay --format=json"].splitlines()[0])
    assert call["args"][0].get("truncated") is True


def test_call_site_without_a_function():
    # An entry site naming no function made the JSON writer index its name
    # table at 2^32-1.  Only goexit sites have no function.
    r = R.Record("c")
    r.funcs(["f"])
    r.sites([(None, R.ENTRY), (0, R.RET)])
    r.events([dict(site=0, ts=2000, tid=7, key=100), dict(site=1, ts=3000, tid=7, key=100)])
    run_readers(r.write(tmp("craft_nofunc.data")))
    p = ct("replay", "--format=json", tmp("craft_nofunc.data"))
    assert p.returncode == 1 and "damaged (table contents)" in p.stderr, p.stderr


def test_trace_that_ends_inside_a_signal_handler():
    # f() interrupted by a handler h() on the alternate signal stack (flag
    # 0x40), both open at the end: h must end before f in every reader.  f's
    # end came first, so a depth filter paired it with h's entry, and the
    # text tree kept f's freed arguments (found by the fuzzer under ASan).
    r = R.Record("c")
    r.funcs(["f", "h"])
    r.sites([(0, R.ENTRY), (0, R.RET), (1, R.ENTRY), (1, R.RET)])
    r.events([dict(site=0, ts=2000, tid=7, key=100), dict(site=2, ts=3000, tid=7, key=50, flags=0x40)])
    path = r.write(tmp("craft_inhandler.data"))
    outs = run_readers(path, READERS + [["replay", "-D", "1"]])
    calls = [l.partition("| ")[2] for l in outs["replay"].splitlines() if "| " in l]
    assert calls == ["f() {", "  h(); /* unfinished */", "} /* f: unfinished */"], outs["replay"]
    calls = [l.partition("| ")[2] for l in outs["replay -D 1"].splitlines() if "| " in l]
    assert calls == ["f(); /* unfinished */"], outs["replay -D 1"]


def test_tables_of_a_binary_added_after_events():
    # --follow: an exec'd binary's functions, sites, types and capture plans
    # come after events, its types continuing the file's table.  Its plans
    # may name a site or a type that does not exist (refused or unknown).
    def trace(later_site, later_type):
        r = c_trace([INT], {"size": 8, "ops": [(R.OP_REG, R.RDI, 0, 8, 0, 0, 0, 0)],
                            "vals": [("x", 1, 0, [(R.PIECE_REG, R.RDI, 4, 0, 0)])]}, R.reg_word(42))
        r.funcs(["prog:g"], first=1)
        r.sites([(1, R.ENTRY), (1, R.RET)], first=2)
        r.types([LONG], first=2)
        r.fetch([{"site": later_site, "size": 8, "ops": [(R.OP_REG, R.RAX, 0, 8, 0, 0, 0, 0)],
                  "vals": [("y", later_type, 0, [(R.PIECE_REG, R.RAX, 8, 0, 0)])]}])
        r.events([dict(site=2, ts=4000, tid=8, key=100, payload=R.reg_word(-5 & (1 << 64) - 1)),
                  dict(site=3, ts=5000, tid=8, key=100)], base_ts=4000)
        return r

    outs = run_readers(trace(2, 2).write(tmp("craft_later.data")))
    assert "f(x=42);" in outs["replay"] and "prog:g(y=-5);" in outs["replay"], outs["replay"]
    outs = run_readers(trace(2, 99).write(tmp("craft_later_type.data")))
    assert "prog:g(y=" in outs["replay"], outs["replay"]
    run_readers(trace(7, 2).write(tmp("craft_later_site.data")))
    p = ct("replay", tmp("craft_later_site.data"))
    assert p.returncode == 1 and "damaged (argument tables)" in p.stderr, p.stderr
