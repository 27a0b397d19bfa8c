//! The audit log file: a header, the entries as extracted, and a trailer with the rings'
//! counters, the counted-not-logged tasks and a checksum.
//!
//! ```text
//! header  (32 bytes)  magic "LULLAUDT", version u16 = 1, entry size u16 = 62, rings u16,
//!                     reserved u16 = 0, ring capacity u32 (E), reserved u32 = 0, start_ns u64
//! entries (N × 62)    AuditRecord encodings, in extraction order (per ring: sequence order)
//! trailer             magic "LULLTRLR", N u64,
//!                     per ring: overwritten u64, kernel_lost u64, next_seq u64,
//!                     counted tasks u32, per task 44 bytes (tid u32, tgid u32, class u8,
//!                       3 zero bytes, comm [16], events u64, exec_ns u64),
//!                     counted events of tasks beyond the list u64,
//!                     trailer length u32 (from "LULLTRLR" to the end), "LEND",
//!                     FNV-1a 64 checksum u64 of every byte before it
//! ```
//!
//! Writing is streaming ([`LogEncoder`]): the header first, entries as they are extracted, the
//! trailer at the end, so a recorder never holds the whole log. All integers are little-endian.

use serde::Serialize;
use thiserror::Error;

use crate::record::{AuditRecord, Comm, EntryError, COMM_LEN, ENTRY_SIZE};
use crate::ring::RingCounters;

pub const MAGIC: &[u8; 8] = b"LULLAUDT";
pub const TRAILER_MAGIC: &[u8; 8] = b"LULLTRLR";
pub const END_MAGIC: &[u8; 4] = b"LEND";
pub const VERSION: u16 = 1;
pub const HEADER_SIZE: usize = 32;
/// Bytes after the trailer's variable part: length u32, "LEND", checksum u64.
pub const END_SIZE: usize = 16;
/// Most counted-not-logged tasks listed by name; the rest are summed in
/// [`LogSummary::counted_overflow_events`]. Bounds the trailer like the rings bound the entries.
pub const MAX_COUNTED_TASKS: usize = 4096;
/// Most rings (CPUs) a log may declare; a sanity bound for readers of untrusted files.
pub const MAX_RINGS: u16 = 4096;

/// Why a task was counted rather than logged (seed 002 §2.1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountedClass {
    /// A thread of the recorder itself: logging it would log the logging.
    Recorder = 0,
    /// A kernel worker (kworker, ksoftirqd, rcu): extraction wakes it.
    KernelWorker = 1,
    /// A task the reader of an ftrace file was told to ignore (e.g. `trace-cmd`).
    Ignored = 2,
}

impl CountedClass {
    fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(CountedClass::Recorder),
            1 => Some(CountedClass::KernelWorker),
            2 => Some(CountedClass::Ignored),
            _ => None,
        }
    }
}

/// A task whose events were counted, not logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CountedTask {
    pub tid: u32,
    pub tgid: u32,
    pub class: CountedClass,
    pub comm: Comm,
    pub events: u64,
    pub exec_ns: u64,
}

/// The fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LogHeader {
    /// Rings (one per CPU).
    pub rings: u16,
    /// Entries per ring (E of the footprint formula).
    pub ring_capacity: u32,
    /// Time origin of the recording (same clock as the entries' `ts_ns`).
    pub start_ns: u64,
}

/// The trailer's counters.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct LogSummary {
    /// One per ring.
    pub rings: Vec<RingCounters>,
    pub counted: Vec<CountedTask>,
    pub counted_overflow_events: u64,
}

/// A whole decoded log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditLog {
    pub header: LogHeader,
    pub records: Vec<AuditRecord>,
    pub summary: LogSummary,
}

/// Why bytes are not a valid audit log.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LogError {
    #[error("log is {len} bytes; too short for a header and trailer ({min} bytes at least)")]
    TooShort { len: usize, min: usize },
    #[error("not an audit log (bad magic)")]
    BadMagic,
    #[error("unsupported log version {0} (this reader knows {VERSION})")]
    Version(u16),
    #[error("entry size {0} in header, this reader knows {ENTRY_SIZE}")]
    EntrySize(u16),
    #[error("header declares {0} rings (1..={MAX_RINGS} allowed)")]
    Rings(u16),
    #[error("reserved header bytes are not zero")]
    HeaderReserved,
    #[error("log is truncated or has no trailer (end marker missing)")]
    NoEnd,
    #[error("checksum mismatch: stored {stored:#018x}, computed {computed:#018x} (corrupt log)")]
    Checksum { stored: u64, computed: u64 },
    #[error("trailer length {0} does not fit the file")]
    TrailerLength(u32),
    #[error("trailer is malformed: {0}")]
    Trailer(&'static str),
    #[error("entries span {0} bytes, not a multiple of {ENTRY_SIZE}")]
    BodyLength(usize),
    #[error("trailer counts {declared} entries, the file holds {found}")]
    Count { declared: u64, found: u64 },
    #[error("entry {index}: {source}")]
    Entry { index: usize, source: EntryError },
    #[error("entry {index}: ring {ring} or cpu {cpu} outside the log's {rings} rings")]
    CpuRange {
        index: usize,
        ring: u16,
        cpu: u16,
        rings: u16,
    },
    #[error("entry {index}: sequence {seq} on ring {ring} does not increase (previous {prev})")]
    Sequence {
        index: usize,
        ring: u16,
        seq: u64,
        prev: u64,
    },
    #[error("ring {ring}: next sequence {next} is not past the last entry's {last}")]
    NextSeq { ring: u16, next: u64, last: u64 },
}

/// FNV-1a 64: a checksum that streams, enough to catch corruption (not an adversary).
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    fn new() -> Self {
        Fnv(Self::OFFSET)
    }
    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
}

/// Streaming writer. Every method appends bytes to the caller's buffer, which the caller may
/// write out and clear at any time.
///
/// ```
/// use lull_audit::{LogEncoder, LogHeader, LogSummary};
/// let header = LogHeader { rings: 2, ring_capacity: 1024, start_ns: 0 };
/// let mut out = Vec::new();
/// let mut enc = LogEncoder::new(header, &mut out);
/// // enc.record(&record, &mut out); … as records are extracted
/// let summary = LogSummary { rings: vec![Default::default(); 2], ..Default::default() };
/// enc.finish(&summary, &mut out).unwrap();
/// let log = lull_audit::log::decode(&out).unwrap();
/// assert!(log.records.is_empty());
/// ```
#[derive(Debug)]
pub struct LogEncoder {
    header: LogHeader,
    fnv: Fnv,
    count: u64,
}

/// Why a log cannot be finished.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EncodeError {
    #[error("summary has {found} ring counters, header declares {declared} rings")]
    RingCount { found: usize, declared: u16 },
}

impl LogEncoder {
    /// Starts a log: appends the header.
    pub fn new(header: LogHeader, out: &mut Vec<u8>) -> Self {
        let start = out.len();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(ENTRY_SIZE as u16).to_le_bytes());
        out.extend_from_slice(&header.rings.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&header.ring_capacity.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&header.start_ns.to_le_bytes());
        let mut fnv = Fnv::new();
        fnv.update(&out[start..]);
        LogEncoder {
            header,
            fnv,
            count: 0,
        }
    }

    /// Appends one entry.
    pub fn record(&mut self, record: &AuditRecord, out: &mut Vec<u8>) {
        let start = out.len();
        record.encode_into(out);
        self.fnv.update(&out[start..]);
        self.count += 1;
    }

    pub fn records_written(&self) -> u64 {
        self.count
    }

    /// Appends the trailer; the log is complete.
    pub fn finish(mut self, summary: &LogSummary, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if summary.rings.len() != usize::from(self.header.rings) {
            return Err(EncodeError::RingCount {
                found: summary.rings.len(),
                declared: self.header.rings,
            });
        }
        let start = out.len();
        out.extend_from_slice(TRAILER_MAGIC);
        out.extend_from_slice(&self.count.to_le_bytes());
        for r in &summary.rings {
            out.extend_from_slice(&r.overwritten.to_le_bytes());
            out.extend_from_slice(&r.kernel_lost.to_le_bytes());
            out.extend_from_slice(&r.next_seq.to_le_bytes());
        }
        let listed = &summary.counted[..summary.counted.len().min(MAX_COUNTED_TASKS)];
        let unlisted: u64 = summary.counted[listed.len()..]
            .iter()
            .map(|c| c.events)
            .sum();
        out.extend_from_slice(&(listed.len() as u32).to_le_bytes());
        for c in listed {
            out.extend_from_slice(&c.tid.to_le_bytes());
            out.extend_from_slice(&c.tgid.to_le_bytes());
            out.extend_from_slice(&[c.class as u8, 0, 0, 0]);
            out.extend_from_slice(&c.comm.0);
            out.extend_from_slice(&c.events.to_le_bytes());
            out.extend_from_slice(&c.exec_ns.to_le_bytes());
        }
        out.extend_from_slice(&(summary.counted_overflow_events + unlisted).to_le_bytes());
        let trailer_len = (out.len() - start + END_SIZE) as u32;
        out.extend_from_slice(&trailer_len.to_le_bytes());
        out.extend_from_slice(END_MAGIC);
        self.fnv.update(&out[start..]);
        out.extend_from_slice(&self.fnv.0.to_le_bytes());
        Ok(())
    }
}

/// Encodes a whole log at once.
pub fn encode(log: &AuditLog) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::with_capacity(HEADER_SIZE + log.records.len() * ENTRY_SIZE + 256);
    let mut enc = LogEncoder::new(log.header, &mut out);
    for r in &log.records {
        enc.record(r, &mut out);
    }
    enc.finish(&log.summary, &mut out)?;
    Ok(out)
}

/// Little-endian cursor over a slice that reports truncation as a typed error.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], LogError> {
        let end = self
            .at
            .checked_add(n)
            .ok_or(LogError::Trailer("length overflow"))?;
        let s = self
            .b
            .get(self.at..end)
            .ok_or(LogError::Trailer("truncated"))?;
        self.at = end;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, LogError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, LogError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
}

/// Decodes and checks a whole log: header, checksum, trailer, every entry, per-ring sequence
/// order. Any corruption or truncation is a [`LogError`].
pub fn decode(bytes: &[u8]) -> Result<AuditLog, LogError> {
    let min = HEADER_SIZE + 8 + 8 + 4 + 8 + END_SIZE;
    if bytes.len() < min {
        return Err(LogError::TooShort {
            len: bytes.len(),
            min,
        });
    }
    if &bytes[..8] != MAGIC {
        return Err(LogError::BadMagic);
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let version = u16_at(8);
    if version != VERSION {
        return Err(LogError::Version(version));
    }
    let entry_size = u16_at(10);
    if usize::from(entry_size) != ENTRY_SIZE {
        return Err(LogError::EntrySize(entry_size));
    }
    let rings = u16_at(12);
    if rings == 0 || rings > MAX_RINGS {
        return Err(LogError::Rings(rings));
    }
    if u16_at(14) != 0 || bytes[20..24] != [0; 4] {
        return Err(LogError::HeaderReserved);
    }
    let ring_capacity = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    let start_ns = u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes"));

    let n = bytes.len();
    if &bytes[n - 12..n - 8] != END_MAGIC {
        return Err(LogError::NoEnd);
    }
    let stored = u64::from_le_bytes(bytes[n - 8..].try_into().expect("8 bytes"));
    let mut fnv = Fnv::new();
    fnv.update(&bytes[..n - 8]);
    if fnv.0 != stored {
        return Err(LogError::Checksum {
            stored,
            computed: fnv.0,
        });
    }
    let trailer_len = u32::from_le_bytes(bytes[n - 16..n - 12].try_into().expect("4 bytes"));
    let tl = trailer_len as usize;
    if tl < 8 + 8 + 4 + 8 + END_SIZE || tl > n - HEADER_SIZE {
        return Err(LogError::TrailerLength(trailer_len));
    }
    let trailer_start = n - tl;
    let mut c = Cursor {
        b: &bytes[..n - END_SIZE],
        at: trailer_start,
    };
    if c.take(8)? != TRAILER_MAGIC {
        return Err(LogError::Trailer("trailer magic missing"));
    }
    let declared = c.u64()?;
    let mut ring_counters = Vec::with_capacity(usize::from(rings));
    for _ in 0..rings {
        ring_counters.push(RingCounters {
            overwritten: c.u64()?,
            kernel_lost: c.u64()?,
            next_seq: c.u64()?,
        });
    }
    let counted_n = c.u32()? as usize;
    if counted_n > MAX_COUNTED_TASKS {
        return Err(LogError::Trailer("too many counted tasks"));
    }
    let mut counted = Vec::with_capacity(counted_n);
    for _ in 0..counted_n {
        let tid = c.u32()?;
        let tgid = c.u32()?;
        let cls = c.take(4)?;
        let class =
            CountedClass::from_u8(cls[0]).ok_or(LogError::Trailer("unknown counted class"))?;
        if cls[1..] != [0, 0, 0] {
            return Err(LogError::Trailer(
                "reserved bytes of a counted task are not zero",
            ));
        }
        // Kept as stored, like an entry's, so that what was read is what re-encodes.
        let comm = Comm(c.take(COMM_LEN)?.try_into().expect("COMM_LEN bytes"));
        let events = c.u64()?;
        let exec_ns = c.u64()?;
        counted.push(CountedTask {
            tid,
            tgid,
            class,
            comm,
            events,
            exec_ns,
        });
    }
    let counted_overflow_events = c.u64()?;
    if c.at != n - END_SIZE {
        return Err(LogError::Trailer(
            "trailer length does not match its contents",
        ));
    }

    let body = &bytes[HEADER_SIZE..trailer_start];
    if body.len() % ENTRY_SIZE != 0 {
        return Err(LogError::BodyLength(body.len()));
    }
    let found = (body.len() / ENTRY_SIZE) as u64;
    if found != declared {
        return Err(LogError::Count { declared, found });
    }
    let mut records = Vec::with_capacity(body.len() / ENTRY_SIZE);
    let mut last_seq: Vec<Option<u64>> = vec![None; usize::from(rings)];
    for (index, chunk) in body.chunks_exact(ENTRY_SIZE).enumerate() {
        let r = AuditRecord::decode(chunk).map_err(|source| LogError::Entry { index, source })?;
        if r.ring >= rings || r.cpu >= rings {
            return Err(LogError::CpuRange {
                index,
                ring: r.ring,
                cpu: r.cpu,
                rings,
            });
        }
        let slot = &mut last_seq[usize::from(r.ring)];
        if let Some(prev) = *slot {
            if r.seq <= prev {
                return Err(LogError::Sequence {
                    index,
                    ring: r.ring,
                    seq: r.seq,
                    prev,
                });
            }
        }
        *slot = Some(r.seq);
        records.push(r);
    }
    for (ring, (last, counters)) in last_seq.iter().zip(&ring_counters).enumerate() {
        if let Some(last) = *last {
            if counters.next_seq <= last {
                return Err(LogError::NextSeq {
                    ring: ring as u16,
                    next: counters.next_seq,
                    last,
                });
            }
        }
    }
    Ok(AuditLog {
        header: LogHeader {
            rings,
            ring_capacity,
            start_ns,
        },
        records,
        summary: LogSummary {
            rings: ring_counters,
            counted,
            counted_overflow_events,
        },
    })
}

/// What `lull audit stats` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogStats {
    pub records: u64,
    pub rings: u16,
    pub ring_capacity: u32,
    pub span_ns: u64,
    /// Per event kind.
    pub by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Runs of missing sequence numbers, over all rings (including before the first and after
    /// the last entry of a ring).
    pub gaps: u64,
    /// Sequence numbers missing in total.
    pub gap_records: u64,
    /// Entries the rings overwrote before extraction.
    pub overwritten: u64,
    /// Events the kernel buffer lost before they reached the rings.
    pub kernel_lost: u64,
    /// `gap_records − overwritten − kernel_lost`: losses nobody counted (0 for a sound log).
    pub unexplained_gap_records: i64,
    pub distinct_tasks: u64,
    pub counted_tasks: Vec<CountedTask>,
    pub counted_events: u64,
    pub counted_overflow_events: u64,
}

/// Counts records, gaps and losses.
pub fn stats(log: &AuditLog) -> LogStats {
    let rings = log.header.rings;
    let mut expected = vec![0u64; usize::from(rings)];
    let mut gaps = 0u64;
    let mut gap_records = 0u64;
    let mut by_kind = std::collections::BTreeMap::new();
    let mut tasks = std::collections::BTreeSet::new();
    let (mut t0, mut t1) = (u64::MAX, 0u64);
    for r in &log.records {
        let e = &mut expected[usize::from(r.ring)];
        if r.seq > *e {
            gaps += 1;
            gap_records += r.seq - *e;
        }
        *e = r.seq + 1;
        *by_kind.entry(r.kind.name()).or_insert(0) += 1;
        tasks.insert(r.tid);
        t0 = t0.min(r.ts_ns);
        t1 = t1.max(r.ts_ns);
    }
    for (e, c) in expected.iter().zip(&log.summary.rings) {
        if c.next_seq > *e {
            gaps += 1;
            gap_records += c.next_seq - e;
        }
    }
    let overwritten: u64 = log.summary.rings.iter().map(|c| c.overwritten).sum();
    let kernel_lost: u64 = log.summary.rings.iter().map(|c| c.kernel_lost).sum();
    LogStats {
        records: log.records.len() as u64,
        rings,
        ring_capacity: log.header.ring_capacity,
        span_ns: t1.saturating_sub(t0),
        by_kind,
        gaps,
        gap_records,
        overwritten,
        kernel_lost,
        unexplained_gap_records: gap_records as i64 - overwritten as i64 - kernel_lost as i64,
        distinct_tasks: tasks.len() as u64,
        counted_events: log.summary.counted.iter().map(|c| c.events).sum(),
        counted_tasks: log.summary.counted.clone(),
        counted_overflow_events: log.summary.counted_overflow_events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::AuditEventKind;
    use crate::ring::PerCpuRings;
    use proptest::prelude::*;

    fn rec(i: u64, ring: u16) -> AuditRecord {
        let kind = AuditEventKind::ALL[(i % 5) as usize];
        AuditRecord {
            seq: 0,
            exec_ns: i,
            tgid: 10,
            switches: i as u32,
            comm: Comm::new("bench"),
            ..AuditRecord::synthetic(i * 10, ring, 11 + (i % 3) as u32, kind)
        }
    }

    pub(crate) fn sample_log(n: u64, cap: usize) -> AuditLog {
        let mut rings = PerCpuRings::new(2, cap);
        for i in 0..n {
            let ring = (i % 2) as u16;
            let r = rings.ring_mut(usize::from(ring)).unwrap();
            if i % 17 == 16 {
                r.note_lost(2);
            }
            r.push(rec(i, ring));
        }
        let mut records = Vec::new();
        rings.drain_into(&mut records);
        AuditLog {
            header: LogHeader {
                rings: 2,
                ring_capacity: cap as u32,
                start_ns: 5,
            },
            records,
            summary: LogSummary {
                rings: rings.counters(),
                counted: vec![CountedTask {
                    tid: 3,
                    tgid: 3,
                    class: CountedClass::KernelWorker,
                    comm: Comm::new("kworker/0:1"),
                    events: 9,
                    exec_ns: 1000,
                }],
                counted_overflow_events: 0,
            },
        }
    }

    #[test]
    fn round_trip_and_stats_explain_every_gap() {
        let log = sample_log(100, 20);
        let bytes = encode(&log).unwrap();
        let back = decode(&bytes).unwrap();
        assert_eq!(back, log);
        let s = stats(&back);
        assert_eq!(s.records, 40);
        assert!(s.overwritten > 0 && s.kernel_lost > 0);
        assert_eq!(s.unexplained_gap_records, 0);
        assert_eq!(s.counted_events, 9);
    }

    /// Every counted class is written and read back as itself (the trailer's class byte).
    #[test]
    fn every_counted_class_round_trips() {
        let mut log = sample_log(4, 10);
        let task = log.summary.counted[0];
        log.summary.counted = [
            CountedClass::Recorder,
            CountedClass::KernelWorker,
            CountedClass::Ignored,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, class)| CountedTask {
            tid: 3 + i as u32,
            class,
            ..task
        })
        .collect();
        let back = decode(&encode(&log).unwrap()).unwrap();
        assert_eq!(back.summary.counted, log.summary.counted);
    }

    /// Tasks past the listed ones add their events to the overflow count the log carries.
    #[test]
    fn unlisted_counted_tasks_add_to_the_overflow_events() {
        let mut log = sample_log(4, 10);
        let task = log.summary.counted[0];
        log.summary.counted = (0..=MAX_COUNTED_TASKS as u32)
            .map(|i| CountedTask {
                tid: 100 + i,
                events: 4,
                ..task
            })
            .collect();
        log.summary.counted_overflow_events = 10;
        let back = decode(&encode(&log).unwrap()).unwrap();
        assert_eq!(back.summary.counted.len(), MAX_COUNTED_TASKS);
        assert_eq!(back.summary.counted_overflow_events, 10 + 4);
    }

    /// A log with no entries decodes; fewer bytes than the smallest possible log (header,
    /// trailer with no ring and no task, end) are refused as too short before anything is read.
    #[test]
    fn an_empty_log_decodes_and_a_shorter_one_is_too_short() {
        let bytes = encode(&sample_log(0, 4)).unwrap();
        assert!(decode(&bytes).unwrap().records.is_empty());
        let smallest = HEADER_SIZE + 8 + 8 + 4 + 8 + END_SIZE;
        for len in [0, smallest - 1] {
            let mut short = bytes[..len.min(bytes.len())].to_vec();
            short.resize(len, 0);
            assert!(
                matches!(decode(&short), Err(LogError::TooShort { min, .. }) if min == smallest),
                "{len} bytes"
            );
        }
    }

    /// The ring count is checked at both ends: none is refused, the most (`MAX_RINGS`) read.
    #[test]
    fn ring_counts_from_one_to_the_most_are_read() {
        let mut most = sample_log(0, 4);
        most.header.rings = MAX_RINGS;
        most.summary.rings = vec![RingCounters::default(); usize::from(MAX_RINGS)];
        assert_eq!(decode(&encode(&most).unwrap()).unwrap(), most);
        let mut none = encode(&sample_log(0, 4)).unwrap();
        none[12..14].copy_from_slice(&0u16.to_le_bytes());
        assert!(matches!(decode(&none), Err(LogError::Rings(0))));
    }

    #[test]
    fn the_encoder_counts_the_entries_it_wrote() {
        let log = sample_log(7, 100);
        let mut out = Vec::new();
        let mut enc = LogEncoder::new(log.header, &mut out);
        assert_eq!(enc.records_written(), 0);
        for r in &log.records {
            enc.record(r, &mut out);
        }
        assert_eq!(enc.records_written(), 7);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = encode(&sample_log(10, 100)).unwrap();
        for len in 0..bytes.len() {
            assert!(
                decode(&bytes[..len]).is_err(),
                "prefix of {len} bytes accepted"
            );
        }
    }

    #[test]
    fn every_single_bit_flip_is_an_error() {
        let bytes = encode(&sample_log(6, 100)).unwrap();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(
                    decode(&b).is_err(),
                    "flip of bit {bit} of byte {i} accepted"
                );
            }
        }
    }

    #[test]
    fn typed_errors_for_common_damage() {
        let bytes = encode(&sample_log(4, 100)).unwrap();
        assert!(matches!(
            decode(&bytes[..10]),
            Err(LogError::TooShort { .. })
        ));
        let mut b = bytes.clone();
        b[0] = b'X';
        assert_eq!(decode(&b), Err(LogError::BadMagic));
        let n = bytes.len();
        assert_eq!(decode(&bytes[..n - 1]), Err(LogError::NoEnd));
        let mut b = bytes.clone();
        b[HEADER_SIZE + 3] ^= 1;
        assert!(matches!(decode(&b), Err(LogError::Checksum { .. })));
    }

    /// The trailer's length field is checked before the trailer is read: a length shorter than
    /// the trailer's fixed part (44 bytes) or reaching into the header is a `TrailerLength`
    /// error naming the length, not a misread elsewhere (nor an overflow: a length past the
    /// whole log).
    #[test]
    fn a_trailer_length_out_of_bounds_is_named() {
        let bytes = encode(&one_ring_log(&[0, 1, 2], 3)).unwrap();
        let n = bytes.len();
        let fixed = 8 + 8 + 4 + 8 + END_SIZE;
        for len in [
            0,
            END_SIZE,
            fixed - 1,
            n - HEADER_SIZE + 1,
            n,
            n + 1,
            u32::MAX as usize,
        ] {
            let mut b = bytes.clone();
            b[n - 16..n - 12].copy_from_slice(&(len as u32).to_le_bytes());
            rechecksum(&mut b);
            assert_eq!(
                decode(&b),
                Err(LogError::TrailerLength(len as u32)),
                "trailer length {len} of a {n}-byte log"
            );
        }
    }

    #[test]
    fn finish_rejects_wrong_ring_count() {
        let mut out = Vec::new();
        let enc = LogEncoder::new(
            LogHeader {
                rings: 2,
                ring_capacity: 1,
                start_ns: 0,
            },
            &mut out,
        );
        let err = enc.finish(&LogSummary::default(), &mut out).unwrap_err();
        assert_eq!(
            err,
            EncodeError::RingCount {
                found: 0,
                declared: 2
            }
        );
    }

    /// One ring, entries with the given sequence numbers, and `next_seq`.
    fn one_ring_log(seqs: &[u64], next_seq: u64) -> AuditLog {
        let records = seqs
            .iter()
            .enumerate()
            .map(|(i, &seq)| AuditRecord {
                seq,
                ..rec(i as u64, 0)
            })
            .collect();
        AuditLog {
            header: LogHeader {
                rings: 1,
                ring_capacity: 16,
                start_ns: 0,
            },
            records,
            summary: LogSummary {
                rings: vec![RingCounters {
                    next_seq,
                    ..RingCounters::default()
                }],
                counted: Vec::new(),
                counted_overflow_events: 0,
            },
        }
    }

    fn roundtrip(log: &AuditLog) -> Result<AuditLog, LogError> {
        decode(&encode(log).unwrap())
    }

    #[test]
    fn a_repeated_sequence_number_is_refused() {
        assert!(roundtrip(&one_ring_log(&[0, 1, 2], 3)).is_ok());
        assert_eq!(
            roundtrip(&one_ring_log(&[0, 1, 1], 3)),
            Err(LogError::Sequence {
                index: 2,
                ring: 0,
                seq: 1,
                prev: 1
            })
        );
        assert!(matches!(
            roundtrip(&one_ring_log(&[0, 2, 1], 3)),
            Err(LogError::Sequence { index: 2, .. })
        ));
    }

    #[test]
    fn next_seq_must_be_past_the_last_entry() {
        assert!(roundtrip(&one_ring_log(&[4, 7], 8)).is_ok());
        assert_eq!(
            roundtrip(&one_ring_log(&[4, 7], 7)),
            Err(LogError::NextSeq {
                ring: 0,
                next: 7,
                last: 7
            })
        );
        assert!(matches!(
            roundtrip(&one_ring_log(&[4, 7], 2)),
            Err(LogError::NextSeq { .. })
        ));
        // A ring with no entries may say anything.
        assert!(roundtrip(&one_ring_log(&[], 0)).is_ok());
    }

    #[test]
    fn gaps_before_between_and_after_the_entries_are_counted_exactly() {
        let s = stats(&one_ring_log(&[0, 1, 2], 3));
        assert_eq!((s.gaps, s.gap_records), (0, 0));
        // One missing after the last entry.
        let s = stats(&one_ring_log(&[0, 1, 2], 4));
        assert_eq!((s.gaps, s.gap_records), (1, 1));
        // Two before the first, three between, one after.
        let s = stats(&one_ring_log(&[2, 3, 7], 9));
        assert_eq!((s.gaps, s.gap_records), (3, 6));
        assert_eq!(s.unexplained_gap_records, 6);
        // Nothing logged: everything up to next_seq is one gap.
        let s = stats(&one_ring_log(&[], 5));
        assert_eq!((s.gaps, s.gap_records), (1, 5));
        let s = stats(&one_ring_log(&[], 0));
        assert_eq!((s.gaps, s.gap_records), (0, 0));
    }

    /// What `decode` promises about a log it accepts, checked independently of it: entries
    /// inside the declared rings, strictly increasing sequence numbers per ring, and each
    /// ring's `next_seq` past its last entry.
    fn well_formed(log: &AuditLog) -> Result<(), String> {
        let rings = usize::from(log.header.rings);
        if log.summary.rings.len() != rings {
            return Err("ring counters".into());
        }
        let mut last: Vec<Option<u64>> = vec![None; rings];
        for (i, r) in log.records.iter().enumerate() {
            let ring = usize::from(r.ring);
            if ring >= rings || usize::from(r.cpu) >= rings {
                return Err(format!("entry {i} outside the rings"));
            }
            if last[ring].is_some_and(|prev| r.seq <= prev) {
                return Err(format!("entry {i}: sequence does not increase"));
            }
            last[ring] = Some(r.seq);
        }
        for (ring, (last, c)) in last.iter().zip(&log.summary.rings).enumerate() {
            if last.is_some_and(|l| c.next_seq <= l) {
                return Err(format!("ring {ring}: next_seq not past the last entry"));
            }
        }
        Ok(())
    }

    /// A structural change to a log, applied before encoding, so that the checksum is right
    /// and the reader's checks behind it are what decides.
    #[derive(Clone, Debug)]
    enum Edit {
        Seq { at: usize, seq: u64 },
        SeqLikePrevious { at: usize },
        Ring { at: usize, ring: u16 },
        Cpu { at: usize, cpu: u16 },
        NextSeq { ring: usize, next: u64 },
        NextSeqToLast { ring: usize, back: u64 },
        Swap { a: usize, b: usize },
        Remove { at: usize },
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), 0u64..40).prop_map(|(at, seq)| Edit::Seq { at, seq }),
            any::<usize>().prop_map(|at| Edit::SeqLikePrevious { at }),
            (any::<usize>(), 0u16..3).prop_map(|(at, ring)| Edit::Ring { at, ring }),
            (any::<usize>(), 0u16..3).prop_map(|(at, cpu)| Edit::Cpu { at, cpu }),
            (0usize..2, 0u64..40).prop_map(|(ring, next)| Edit::NextSeq { ring, next }),
            (0usize..2, 0u64..2).prop_map(|(ring, back)| Edit::NextSeqToLast { ring, back }),
            (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap { a, b }),
            any::<usize>().prop_map(|at| Edit::Remove { at }),
        ]
    }

    fn apply(log: &mut AuditLog, e: &Edit) {
        let n = log.records.len();
        match *e {
            _ if n == 0 => {}
            Edit::Seq { at, seq } => log.records[at % n].seq = seq,
            Edit::SeqLikePrevious { at } => {
                let i = at % n;
                let ring = log.records[i].ring;
                if let Some(p) = log.records[..i].iter().rev().find(|p| p.ring == ring) {
                    log.records[i].seq = p.seq;
                }
            }
            Edit::Ring { at, ring } => log.records[at % n].ring = ring,
            Edit::Cpu { at, cpu } => log.records[at % n].cpu = cpu,
            Edit::NextSeq { ring, next } => log.summary.rings[ring].next_seq = next,
            Edit::NextSeqToLast { ring, back } => {
                if let Some(l) = log.records.iter().rfind(|r| usize::from(r.ring) == ring) {
                    log.summary.rings[ring].next_seq = l.seq.saturating_sub(back);
                }
            }
            Edit::Swap { a, b } => log.records.swap(a % n, b % n),
            Edit::Remove { at } => {
                log.records.remove(at % n);
            }
        }
    }

    /// FNV-1a over everything but the stored checksum, written back: byte damage that the
    /// checksum would have caught is passed to the checks behind it.
    fn rechecksum(bytes: &mut [u8]) {
        let n = bytes.len();
        if n < 8 {
            return;
        }
        let mut fnv = Fnv::new();
        fnv.update(&bytes[..n - 8]);
        bytes[n - 8..].copy_from_slice(&fnv.0.to_le_bytes());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// A log edited as a structure (sequence numbers, rings, next_seq, order) and encoded
        /// with a correct checksum is accepted exactly when it is well formed, and then reads
        /// back as it was written.
        #[test]
        fn fuzz_decoded_structure(n in 0u64..30, edits in prop::collection::vec(edit(), 1..6)) {
            let mut log = sample_log(n, 8);
            for e in &edits {
                apply(&mut log, e);
            }
            let bytes = encode(&log).unwrap();
            match decode(&bytes) {
                Ok(back) => {
                    prop_assert_eq!(well_formed(&back), Ok(()));
                    prop_assert_eq!(back, log);
                }
                Err(err) => prop_assert!(well_formed(&log).is_err(), "{} refused: {}", n, err),
            }
        }

        /// Bytes overwritten anywhere, the checksum then made right: the reader refuses the
        /// damage or decodes a well-formed log that re-encodes to exactly those bytes.
        #[test]
        fn fuzz_mutated_logs_behind_the_checksum(
            n in 0u64..30,
            edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let mut bytes = encode(&sample_log(n, 8)).unwrap();
            for (at, v) in edits {
                let i = at % bytes.len();
                bytes[i] = v;
            }
            rechecksum(&mut bytes);
            if let Ok(log) = decode(&bytes) {
                prop_assert_eq!(well_formed(&log), Ok(()));
                prop_assert_eq!(encode(&log).unwrap(), bytes);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Arbitrary bytes never panic the reader.
        #[test]
        fn fuzz_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = decode(&bytes);
        }

        /// A valid log with random bytes overwritten is rejected or decodes to something that
        /// re-encodes to exactly those bytes (never a silent misread).
        #[test]
        fn fuzz_mutated_logs(n in 0u64..30, edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
            let mut bytes = encode(&sample_log(n, 8)).unwrap();
            for (at, v) in edits {
                let i = at % bytes.len();
                bytes[i] = v;
            }
            if let Ok(log) = decode(&bytes) {
                prop_assert_eq!(encode(&log).unwrap(), bytes);
            }
        }
    }
}
