//! The run's scheduling events in the audit log format of `lull-audit` (seed 002's IPSA
//! records), one ring per core, when asked for.

use lull_audit::ring::RingCounters;
use lull_audit::{AuditEventKind, AuditLog, AuditRecord, Comm, LogHeader, LogSummary};
use lull_sched::CpuId;

use super::{Cx, Kernel};

/// Audit records name simulated processes and threads from these bases, so they cannot be taken
/// for the ids of live tasks.
const AUDIT_TGID_BASE: u32 = 100;
pub(crate) const AUDIT_TID_BASE: u32 = 1000;

impl Kernel<'_> {
    /// Starts recording scheduling events.
    pub fn record_audit(&mut self) {
        self.audit = Some(Vec::new());
        self.audit_seq = vec![0; self.cpus.len()];
    }

    pub(super) fn audit_event(
        &mut self,
        c: usize,
        t: usize,
        kind: AuditEventKind,
        cx: &Cx<'_, '_>,
    ) {
        let Some(records) = self.audit.as_mut() else {
            return;
        };
        let th = &self.tasks[t];
        let seq = self.audit_seq[c];
        self.audit_seq[c] += 1;
        records.push(AuditRecord {
            seq,
            ts_ns: cx.now(),
            exec_ns: th.exec_ns,
            tgid: AUDIT_TGID_BASE + th.proc_id,
            tid: AUDIT_TID_BASE + t as u32,
            switches: th.switches,
            comm: Comm::new(&th.name),
            cpu: c as u16,
            ring: c as u16,
            rq_len: self.class.nr_queued(CpuId(c)).min(usize::from(u16::MAX)) as u16,
            prio: (120 + i16::from(th.nice)) as u8,
            kind,
            flags: 0,
        });
    }

    /// The recorded events as an audit log (one ring per core, nothing lost), if recording.
    pub fn take_audit_log(&mut self) -> Option<AuditLog> {
        let records = self.audit.take()?;
        let rings = std::mem::take(&mut self.audit_seq);
        let per_ring = rings.iter().copied().max().unwrap_or(0);
        Some(AuditLog {
            header: LogHeader {
                rings: rings.len() as u16,
                ring_capacity: u32::try_from(per_ring.max(1)).unwrap_or(u32::MAX),
                start_ns: 0,
            },
            records,
            summary: LogSummary {
                rings: rings
                    .iter()
                    .map(|&n| RingCounters {
                        overwritten: 0,
                        kernel_lost: 0,
                        next_seq: n,
                    })
                    .collect(),
                counted: Vec::new(),
                counted_overflow_events: 0,
            },
        })
    }
}
