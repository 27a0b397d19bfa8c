import numpy as np
import pytest

import auditlog
import lull
from lull.errors import CorruptLog, InputError, LogError


def records():
    # Ring 0 logs 0, 1, then 5, 6 (2, 3, 4 lost); ring 1 logs 2 (0, 1 lost) and numbered up to 3.
    rs = [
        dict(seq=0, ts_ns=100, tid=7, comm="app", ring=0, kind="unblock"),
        dict(seq=1, ts_ns=200, tid=7, comm="app", ring=0, kind="switch_in"),
        dict(seq=2, ts_ns=250, tid=8, comm="kworker/1:0", ring=1, kind="block"),
        dict(seq=5, ts_ns=300, tid=7, comm="app", ring=0, kind="preempt"),
        dict(seq=6, ts_ns=400, tid=9, comm="hog", ring=0, kind="terminate"),
    ]
    return rs


def write(tmp_path, data):
    p = tmp_path / "x.audit"
    p.write_bytes(data)
    return p


def test_one_row_per_record_with_gaps_marked(tmp_path):
    df = lull.audit.read(write(tmp_path, auditlog.encode(records(), rings=2, next_seq=[7, 4])))
    assert len(df) == 5
    assert df["seq"].tolist() == [0, 1, 2, 5, 6]
    assert df["lost_before"].tolist() == [0, 0, 2, 3, 0]
    assert df["gap_before"].tolist() == [False, False, True, True, False]
    assert df["kind"].tolist() == ["unblock", "switch_in", "block", "preempt", "terminate"]
    assert df["comm"].tolist() == ["app", "app", "kworker/1:0", "app", "hog"]
    assert df["ts_ns"].dtype == np.uint64 and df["cpu"].dtype == np.uint16
    assert df.attrs["rings"] == 2 and df.attrs["lost_at_end"] == [0, 1]


def test_a_log_without_records(tmp_path):
    df = lull.audit.read(write(tmp_path, auditlog.encode([], rings=1, next_seq=[0])))
    assert len(df) == 0 and "gap_before" in df


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda b: b[:-20], "truncated"),
        (lambda b: b[:40] + bytes([b[40] ^ 0xFF]) + b[41:], "checksum"),
        (lambda b: b"NOTALOG!" + b[8:], "bad magic"),
        (lambda b: b[:10], "too short"),
    ],
)
def test_corrupt_logs_are_log_errors(tmp_path, damage, words):
    good = auditlog.encode(records(), rings=2, next_seq=[7, 4])
    with pytest.raises(LogError, match=words):
        lull.audit.read(write(tmp_path, damage(good)))
    assert CorruptLog is LogError


def test_a_missing_log_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        lull.audit.read(tmp_path / "none.audit")


def test_the_simulators_log_reads_back(tiny, tmp_path):
    written = lull.sim.audit_logs(tiny, tmp_path, models=["esm"])
    path, n = written["esm"]
    df = lull.audit.read(path)
    assert len(df) == n > 0
    assert not df["gap_before"].any()
