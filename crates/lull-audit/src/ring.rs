//! The bounded per-CPU ring of seed 002 §2.1.2 (`RQE_Queue`): a fixed capacity of entries; when
//! full, a new entry overwrites the oldest. Every entry gets the ring's next sequence number, so
//! a reader sees every loss as a jump in sequence numbers — whether the ring overwrote it or the
//! kernel buffer in front of it dropped it ([`Ring::note_lost`]).

use std::collections::VecDeque;

use serde::Serialize;

use crate::record::AuditRecord;

/// One CPU's ring.
#[derive(Debug, Clone)]
pub struct Ring {
    capacity: usize,
    entries: VecDeque<AuditRecord>,
    next_seq: u64,
    overwritten: u64,
    kernel_lost: u64,
}

/// What a ring has lost and numbered so far; written into the log trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct RingCounters {
    /// Entries overwritten before extraction.
    pub overwritten: u64,
    /// Events lost before they reached the ring (reported by the kernel buffer).
    pub kernel_lost: u64,
    /// The sequence number the next entry would get.
    pub next_seq: u64,
}

impl Ring {
    /// A ring of `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Ring {
            capacity,
            // Grows on demand up to `capacity`: a reader of a finished trace uses an unbounded
            // ring, and a file naming thousands of CPUs must not allocate for each up front.
            entries: VecDeque::new(),
            next_seq: 0,
            overwritten: 0,
            kernel_lost: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Logs `record` with the next sequence number; overwrites the oldest entry when full.
    /// Returns the sequence number given.
    pub fn push(&mut self, mut record: AuditRecord) -> u64 {
        let seq = self.next_seq;
        record.seq = seq;
        self.next_seq += 1;
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
            self.overwritten += 1;
        }
        self.entries.push_back(record);
        seq
    }

    /// `n` events were lost upstream: their sequence numbers are skipped so the gap shows.
    pub fn note_lost(&mut self, n: u64) {
        self.next_seq += n;
        self.kernel_lost += n;
    }

    /// Extraction: moves every entry, oldest first, to `out`.
    pub fn drain_into(&mut self, out: &mut Vec<AuditRecord>) {
        out.extend(self.entries.drain(..));
    }

    pub fn counters(&self) -> RingCounters {
        RingCounters {
            overwritten: self.overwritten,
            kernel_lost: self.kernel_lost,
            next_seq: self.next_seq,
        }
    }
}

/// One ring per CPU.
#[derive(Debug, Clone)]
pub struct PerCpuRings {
    rings: Vec<Ring>,
}

impl PerCpuRings {
    pub fn new(cpus: usize, capacity_per_cpu: usize) -> Self {
        PerCpuRings {
            rings: (0..cpus).map(|_| Ring::new(capacity_per_cpu)).collect(),
        }
    }

    pub fn cpus(&self) -> usize {
        self.rings.len()
    }

    /// The ring of `cpu`, or `None` when the CPU is out of range.
    pub fn ring_mut(&mut self, cpu: usize) -> Option<&mut Ring> {
        self.rings.get_mut(cpu)
    }

    /// Extraction of every ring, ring 0 first.
    pub fn drain_into(&mut self, out: &mut Vec<AuditRecord>) {
        for r in &mut self.rings {
            r.drain_into(out);
        }
    }

    pub fn counters(&self) -> Vec<RingCounters> {
        self.rings.iter().map(Ring::counters).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{AuditEventKind, Comm};
    use proptest::prelude::*;

    fn rec(ts: u64) -> AuditRecord {
        AuditRecord {
            seq: 0,
            ts_ns: ts,
            exec_ns: 0,
            tgid: 1,
            tid: 1,
            switches: 0,
            comm: Comm::new("t"),
            cpu: 0,
            ring: 0,
            rq_len: 1,
            prio: 120,
            kind: AuditEventKind::Unblock,
            flags: 0,
        }
    }

    #[test]
    fn overwrites_oldest_and_numbers_every_entry() {
        let mut r = Ring::new(3);
        for ts in 0..5 {
            r.push(rec(ts));
        }
        let mut out = Vec::new();
        r.drain_into(&mut out);
        assert_eq!(out.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(
            out.iter().map(|e| e.ts_ns).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
        assert_eq!(
            r.counters(),
            RingCounters {
                overwritten: 2,
                kernel_lost: 0,
                next_seq: 5
            }
        );
    }

    #[test]
    fn upstream_loss_skips_sequence_numbers() {
        let mut r = Ring::new(10);
        r.push(rec(0));
        r.note_lost(4);
        assert_eq!(r.push(rec(1)), 5);
        assert_eq!(r.counters().kernel_lost, 4);
    }

    #[test]
    fn a_ring_holds_at_least_one_and_counts_what_it_holds() {
        let mut r = Ring::new(0);
        assert_eq!((r.capacity(), r.len(), r.is_empty()), (1, 0, true));
        assert_eq!(r.push(rec(1)), 0);
        assert_eq!(r.push(rec(2)), 1);
        assert_eq!((r.len(), r.is_empty()), (1, false));
        let mut out = Vec::new();
        r.drain_into(&mut out);
        assert_eq!(out.iter().map(|e| e.ts_ns).collect::<Vec<_>>(), [2]);
        assert_eq!((r.len(), r.is_empty()), (0, true));
        assert_eq!(Ring::new(7).capacity(), 7);
    }

    #[test]
    fn per_cpu_rings_drain_ring_zero_first_and_refuse_other_cpus() {
        let mut rings = PerCpuRings::new(3, 2);
        assert_eq!(rings.cpus(), 3);
        assert!(rings.ring_mut(3).is_none());
        rings.ring_mut(2).unwrap().push(rec(20));
        rings.ring_mut(0).unwrap().push(rec(0));
        rings.ring_mut(0).unwrap().push(rec(1));
        rings.ring_mut(0).unwrap().push(rec(2));
        rings.ring_mut(1).unwrap().note_lost(5);
        let mut out = Vec::new();
        rings.drain_into(&mut out);
        assert_eq!(
            out.iter().map(|e| (e.ts_ns, e.seq)).collect::<Vec<_>>(),
            [(1, 1), (2, 2), (20, 0)]
        );
        let c = |overwritten, kernel_lost, next_seq| RingCounters {
            overwritten,
            kernel_lost,
            next_seq,
        };
        assert_eq!(rings.counters(), [c(1, 0, 3), c(0, 5, 5), c(0, 0, 1)]);
        assert_eq!(PerCpuRings::new(0, 4).counters(), []);
    }

    proptest! {
        /// Whatever the pushes, losses and extractions, the sequence numbers a reader sees are
        /// strictly increasing and their gaps add up to exactly the counted losses.
        #[test]
        fn gaps_equal_counted_losses(cap in 1usize..20, ops in prop::collection::vec(0u8..10, 0..300)) {
            let mut r = Ring::new(cap);
            let mut seen = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    0 => r.note_lost(u64::from(*op) + 1 + (i as u64 % 3)),
                    1 => r.drain_into(&mut seen),
                    _ => { r.push(rec(i as u64)); }
                }
            }
            r.drain_into(&mut seen);
            let c = r.counters();
            let mut expected = 0u64;
            let mut gaps = 0u64;
            for e in &seen {
                prop_assert!(e.seq >= expected);
                gaps += e.seq - expected;
                expected = e.seq + 1;
            }
            gaps += c.next_seq - expected;
            prop_assert_eq!(gaps, c.overwritten + c.kernel_lost);
            prop_assert!(r.len() <= cap);
        }
    }
}
