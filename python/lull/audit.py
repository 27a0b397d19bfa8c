"""Scheduler audit logs (the IPSA format of ``lull audit record`` and the simulator's
``--audit-dir``) as pandas tables."""

import os

import numpy as np
import pandas as pd

from . import _lull

_DTYPES = {
    "seq": "<u8",
    "ts_ns": "<u8",
    "exec_ns": "<u8",
    "tgid": "<u4",
    "tid": "<u4",
    "switches": "<u4",
    "cpu": "<u2",
    "ring": "<u2",
    "rq_len": "<u2",
    "prio": "u1",
    "flags": "u1",
    "lost_before": "<u8",
}


def read(path):
    """Reads an audit log: one row per record in the log's order.

    Columns: ``seq ts_ns exec_ns tgid tid switches comm cpu ring rq_len prio kind flags`` as in
    docs/audit.md, ``comm`` and ``kind`` categorical; ``lost_before`` is how many sequence
    numbers of the record's ring were skipped just before it (records the ring overwrote or the
    kernel lost) and ``gap_before`` is ``lost_before > 0``. ``df.attrs`` holds the header
    (``rings``, ``ring_capacity``, ``start_ns``), the per-ring trailer counters
    (``overwritten``, ``kernel_lost``) and ``lost_at_end`` (numbers skipped after each ring's
    last record). Raises ``LogError`` for a log that is not sound and ``InputError`` when the file
    cannot be read.
    """
    raw = _lull.read_audit(os.fspath(path))
    cols = raw["columns"]
    data = {}
    for name in ["seq", "ts_ns", "exec_ns", "tgid", "tid", "switches"]:
        data[name] = np.frombuffer(cols[name], dtype=_DTYPES[name])
    data["comm"] = pd.Categorical.from_codes(
        np.frombuffer(cols["comm_code"], dtype="<u4").astype(np.int32), categories=raw["comms"]
    )
    for name in ["cpu", "ring", "rq_len", "prio"]:
        data[name] = np.frombuffer(cols[name], dtype=_DTYPES[name])
    data["kind"] = pd.Categorical.from_codes(
        np.frombuffer(cols["kind_code"], dtype="u1").astype(np.int8), categories=raw["kinds"]
    )
    data["flags"] = np.frombuffer(cols["flags"], dtype="u1")
    lost = np.frombuffer(cols["lost_before"], dtype="<u8")
    data["lost_before"] = lost
    data["gap_before"] = lost > 0
    df = pd.DataFrame(data, copy=False)
    for key in ["rings", "ring_capacity", "start_ns", "overwritten", "kernel_lost", "lost_at_end"]:
        df.attrs[key] = raw[key]
    return df
