"""Writes calltrace record files from Python, following docs/FORMAT.md (an
independent implementation of the writer): for reader tests that need
shapes no program produces quickly (a million threads) or that a hostile
user would craft (tables that lie, with valid CRCs)."""
import struct
import zlib

EVENTS, META, FUNCS, SITES, STATS, TYPES, FETCH, RTYPES = 4, 1, 2, 3, 5, 6, 7, 8
ENTRY, RET, TAIL, RESTART, GOEXIT = 0, 1, 2, 3, 4
# enum ct_kind
K = dict(unknown=0, bool=1, int=2, uint=3, float=4, complex=5, ptr=6, string=7, slice=8, iface=9,
         eface=10, struct=11, array=12, map=13, chan=14, func=15, cstring=16, enum=17, union=18, void=19)
# fetch op codes, piece kinds, value flags
OP_REG, OP_STACK, OP_REGMEM, OP_DEREF, OP_DEREF_LEN, OP_DEREF_STR = 1, 2, 3, 4, 5, 6
PIECE_REG, PIECE_XREG, PIECE_STACK, PIECE_REGMEM = 1, 2, 3, 4
VAL_RESULT, VAL_NOLOC, VAL_RAW, VAL_INCOMPLETE = 1, 2, 4, 8
RAX, RDI = 10, 14


def uvar(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def svar(v):
    return uvar(((v << 1) ^ (v >> 63)) & (2**64 - 1))


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return uvar(len(b)) + b


class Record:
    def __init__(self, lang="c"):
        self.chunks = []
        self.meta = {"calltrace.version": "test", "target.lang": lang, "clock.start_ns": "1000",
                     "clock.realtime_ns": "1700000000000000000", "host.name": "test"}

    def chunk(self, typ, payload, count=0):
        self.chunks.append((typ, bytes(payload), count))

    def funcs(self, names, first=0):
        p = uvar(len(names))
        for i, n in enumerate(names):
            p += uvar(first + i) + s(n) + uvar(0x1000 * (first + i + 1)) + uvar(16) + uvar(0)
        self.chunk(FUNCS, p, len(names))

    def sites(self, sites, first=0):
        """SITES: (func, kind) or (func, kind, target)."""
        p = uvar(len(sites))
        for i, st in enumerate(sites):
            func, kind = st[0], st[1]
            target = st[2] if len(st) > 2 else None
            p += uvar(first + i) + uvar(0x1000 * (first + i + 1)) + uvar(0 if func is None else func + 1)
            p += bytes([kind]) + uvar(0 if target is None else target + 1)
        self.chunk(SITES, p, len(sites))

    def types(self, types, first=0):
        """TYPES: dicts with kind, name, size, elem, key, len, flags, fields [(name, off, type)]."""
        p = uvar(first) + uvar(len(types))
        for t in types:
            p += bytes([t.get("kind", 0)]) + s(t.get("name", "t")) + uvar(t.get("size", 0))
            p += uvar(t.get("elem", 0)) + uvar(t.get("key", 0)) + uvar(t.get("len", 0))
            p += bytes([t.get("flags", 0)]) + uvar(t.get("rtype", 0))
            fields = t.get("fields", [])
            p += uvar(len(fields))
            for name, off, typ in fields:
                p += s(name) + uvar(off) + uvar(typ)
        self.chunk(TYPES, p, len(types))

    def fetch(self, plans):
        """FETCH: dicts with site, size, ops [(code, reg, dst, size, src, src2, scale, off)],
        vals [(name, type, flags, [(kind, reg, size, value_off, slot)])]."""
        p = uvar(len(plans))
        for f in plans:
            p += uvar(f["site"]) + uvar(f["size"]) + bytes([f.get("truncated", 0)]) + uvar(len(f["ops"]))
            for code, reg, dst, size, src, src2, scale, off in f["ops"]:
                p += bytes([code, reg]) + uvar(dst) + uvar(size) + uvar(src) + uvar(src2) + uvar(scale) + svar(off)
            p += uvar(len(f["vals"]))
            for name, typ, flags, pieces in f["vals"]:
                p += s(name) + uvar(typ) + bytes([flags]) + uvar(len(pieces))
                for kind, reg, size, voff, slot in pieces:
                    p += bytes([kind, reg]) + uvar(size) + uvar(voff) + uvar(slot)
        self.chunk(FETCH, p, len(plans))

    def events(self, evs, base_ts=1000):
        """EVENTS: dicts with site, ts, pid, tid, goid, key, payload, flags; or lost=N, ts."""
        p = struct.pack("<Q", base_ts)
        prev = dict(ts=base_ts, pid=None, tid=None, goid=None, key=0)
        for e in evs:
            if "lost" in e:
                p += bytes([0x04]) + uvar(e["lost"]) + svar(e["ts"] - prev["ts"])
                prev["ts"] = e["ts"]
                continue
            new = (e.get("pid", 1), e.get("tid", 1), e.get("goid", 0)) != (prev["pid"], prev["tid"], prev["goid"])
            payload, flags = e.get("payload"), e.get("flags", 0)
            head = (0x01 if new else 0) | (0x02 if payload else 0) | (0x08 if flags else 0)
            p += bytes([head]) + uvar(e["site"]) + svar(e["ts"] - prev["ts"])
            if new:
                p += uvar(e.get("pid", 1)) + uvar(e.get("tid", 1)) + uvar(e.get("goid", 0))
            p += svar(e["key"] - prev["key"])
            if payload:
                p += uvar(len(payload)) + payload
            if flags:
                p += uvar(flags)
            prev.update(ts=e["ts"], pid=e.get("pid", 1), tid=e.get("tid", 1), goid=e.get("goid", 0), key=e["key"])
        self.chunk(EVENTS, p, len(evs))

    def kv(self, typ, d):
        self.chunk(typ, b"".join(s(k) + s(v) for k, v in d.items()))

    def bytes(self):
        out = b"CALLTRC\0" + struct.pack("<II", 1, 32) + bytes(16)
        metas = [(META, b"".join(s(k) + s(v) for k, v in self.meta.items()), 0)]
        for typ, payload, count in metas + self.chunks:
            crc = zlib.crc32(payload, zlib.crc32(struct.pack("<III", typ, len(payload), count)))
            out += struct.pack("<IIII", typ, len(payload), crc, count) + payload
        return out

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.bytes())
        return path


def reg_word(v):
    """A register op's 8 bytes in a compacted payload."""
    return struct.pack("<Q", v & (2**64 - 1))


def mem_block(data, failed=False):
    """A memory op in a compacted payload: u16 count (0xffff: failed), bytes."""
    return struct.pack("<H", 0xFFFF) if failed else struct.pack("<H", len(data)) + data
