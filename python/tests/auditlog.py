"""A writer of small audit logs in the documented format (docs/audit.md, lull_audit::log), so
tests can build logs with known gaps. Not for large logs: the checksum runs in Python."""

import struct

ENTRY = struct.Struct("<QQQIII16sHHHBBBB")
KINDS = {"unblock": 0, "block": 1, "terminate": 2, "switch_in": 3, "preempt": 4}


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def encode(records, rings, next_seq, capacity=64, start_ns=0):
    """``records``: dicts with seq, ts_ns, tid, comm, ring, kind; ``next_seq``: per ring."""
    out = bytearray(b"LULLAUDT")
    out += struct.pack("<HHHHIIQ", 1, 62, rings, 0, capacity, 0, start_ns)
    for r in records:
        out += ENTRY.pack(
            r["seq"], r["ts_ns"], r.get("exec_ns", 0), r.get("tgid", 1), r["tid"],
            r.get("switches", 0), r["comm"].encode().ljust(16, b"\0"), r["ring"], r["ring"],
            r.get("rq_len", 1), r.get("prio", 120), KINDS[r["kind"]], 0, 0,
        )
    start = len(out)
    out += b"LULLTRLR" + struct.pack("<Q", len(records))
    for n in next_seq:
        out += struct.pack("<QQQ", 0, 0, n)
    out += struct.pack("<I", 0) + struct.pack("<Q", 0)
    out += struct.pack("<I", len(out) - start + 16) + b"LEND"
    out += struct.pack("<Q", fnv1a64(out))
    return bytes(out)
