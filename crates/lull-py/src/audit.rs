//! An audit log as columns for pandas: one entry per record, each numeric column a little-endian
//! buffer Python wraps with `numpy.frombuffer` (no per-record Python objects), and the gaps in
//! each ring's sequence numbers marked on the record after them.

use std::collections::HashMap;

use lull_audit::log::{decode, AuditLog, LogError};
use lull_audit::AuditEventKind;

/// The log's records as columns.
#[derive(Debug, Default)]
pub struct Columns {
    pub seq: Vec<u64>,
    pub ts_ns: Vec<u64>,
    pub exec_ns: Vec<u64>,
    pub tgid: Vec<u32>,
    pub tid: Vec<u32>,
    pub switches: Vec<u32>,
    /// Index into [`Columns::comms`].
    pub comm_code: Vec<u32>,
    pub comms: Vec<String>,
    pub cpu: Vec<u16>,
    pub ring: Vec<u16>,
    pub rq_len: Vec<u16>,
    pub prio: Vec<u8>,
    /// Index into [`AuditEventKind::ALL`].
    pub kind_code: Vec<u8>,
    pub flags: Vec<u8>,
    /// Sequence numbers of the record's ring skipped just before it (0: none).
    pub lost_before: Vec<u64>,
    /// Per ring: sequence numbers skipped after its last record (the ring's `next_seq` in the
    /// trailer past the last one logged).
    pub lost_at_end: Vec<u64>,
}

/// Decodes a log file's bytes into columns.
///
/// # Errors
/// The log's [`LogError`] when the bytes are not a sound log.
pub fn columns_of_bytes(bytes: &[u8]) -> Result<(AuditLog, Columns), LogError> {
    let log = decode(bytes)?;
    let c = columns(&log);
    Ok((log, c))
}

/// The columns of a decoded log. Gaps are counted per ring in log order, as
/// `lull_audit::log::stats` counts them: a ring's first expected number is 0.
#[must_use]
pub fn columns(log: &AuditLog) -> Columns {
    let n = log.records.len();
    let mut c = Columns {
        seq: Vec::with_capacity(n),
        ts_ns: Vec::with_capacity(n),
        exec_ns: Vec::with_capacity(n),
        tgid: Vec::with_capacity(n),
        tid: Vec::with_capacity(n),
        switches: Vec::with_capacity(n),
        comm_code: Vec::with_capacity(n),
        cpu: Vec::with_capacity(n),
        ring: Vec::with_capacity(n),
        rq_len: Vec::with_capacity(n),
        prio: Vec::with_capacity(n),
        kind_code: Vec::with_capacity(n),
        flags: Vec::with_capacity(n),
        lost_before: Vec::with_capacity(n),
        ..Columns::default()
    };
    let mut expected = vec![0u64; usize::from(log.header.rings)];
    let mut comm_index: HashMap<[u8; lull_audit::record::COMM_LEN], u32> = HashMap::new();
    for r in &log.records {
        let e = &mut expected[usize::from(r.ring)];
        c.lost_before.push(r.seq.saturating_sub(*e));
        *e = r.seq + 1;
        c.seq.push(r.seq);
        c.ts_ns.push(r.ts_ns);
        c.exec_ns.push(r.exec_ns);
        c.tgid.push(r.tgid);
        c.tid.push(r.tid);
        c.switches.push(r.switches);
        let next = u32::try_from(c.comms.len()).unwrap_or(u32::MAX);
        let code = *comm_index.entry(r.comm.0).or_insert_with(|| {
            c.comms.push(r.comm.to_string_lossy());
            next
        });
        c.comm_code.push(code);
        c.cpu.push(r.cpu);
        c.ring.push(r.ring);
        c.rq_len.push(r.rq_len);
        c.prio.push(r.prio);
        let kind = AuditEventKind::ALL
            .iter()
            .position(|k| *k == r.kind)
            .unwrap_or(0);
        c.kind_code.push(kind as u8);
        c.flags.push(r.flags);
    }
    c.lost_at_end = expected
        .iter()
        .zip(&log.summary.rings)
        .map(|(e, ring)| ring.next_seq.saturating_sub(*e))
        .collect();
    c
}

/// The bytes of a column, little-endian, for `numpy.frombuffer`.
pub trait LeBytes {
    fn le_bytes(&self) -> Vec<u8>;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for [$t] {
            fn le_bytes(&self) -> Vec<u8> {
                let mut out = Vec::with_capacity(std::mem::size_of_val(self));
                for x in self {
                    out.extend_from_slice(&x.to_le_bytes());
                }
                out
            }
        }
    )*};
}
le_bytes!(u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;
    use lull_audit::log::{encode, LogHeader, LogSummary};
    use lull_audit::ring::RingCounters;
    use lull_audit::AuditRecord;

    fn log_with_gap() -> AuditLog {
        let mut records = Vec::new();
        for (i, seq) in [0u64, 1, 5, 6].into_iter().enumerate() {
            let mut r = AuditRecord::synthetic(i as u64 * 100, 0, 7, AuditEventKind::Unblock);
            r.seq = seq;
            records.push(r);
        }
        let mut r = AuditRecord::synthetic(50, 1, 8, AuditEventKind::Block);
        r.seq = 2;
        r.ring = 1;
        records.push(r);
        let rings = vec![
            RingCounters {
                next_seq: 7,
                overwritten: 3,
                ..RingCounters::default()
            },
            RingCounters {
                next_seq: 4,
                overwritten: 3,
                ..RingCounters::default()
            },
        ];
        AuditLog {
            header: LogHeader {
                rings: 2,
                ring_capacity: 16,
                start_ns: 0,
            },
            records,
            summary: LogSummary {
                rings,
                ..LogSummary::default()
            },
        }
    }

    #[test]
    fn gaps_are_marked_on_the_record_after_them_per_ring() {
        let bytes = encode(&log_with_gap()).unwrap();
        let (_, c) = columns_of_bytes(&bytes).unwrap();
        assert_eq!(c.lost_before, vec![0, 0, 3, 0, 2]);
        assert_eq!(c.lost_at_end, vec![0, 1]);
        assert_eq!(c.kind_code[4], 1);
    }

    #[test]
    fn columns_are_little_endian_bytes() {
        assert_eq!([1u16, 256].le_bytes(), vec![1, 0, 0, 1]);
    }

    #[test]
    fn a_corrupt_log_is_an_error() {
        let mut bytes = encode(&log_with_gap()).unwrap();
        bytes[40] ^= 0xff;
        assert!(columns_of_bytes(&bytes).is_err());
    }
}
