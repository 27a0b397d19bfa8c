//! One audit entry: what seed 002 appendix B lists, in [`ENTRY_SIZE`] bytes.
//!
//! Encoded layout (little-endian; offsets in bytes):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | `seq`: per-ring sequence number |
//! | 8 | 8 | `ts_ns`: event time |
//! | 16 | 8 | `exec_ns`: the task's execution time (user + system) |
//! | 24 | 4 | `tgid` (process id; 0 when unknown, see [`FLAG_TGID_UNKNOWN`]) |
//! | 28 | 4 | `tid` (thread id) |
//! | 32 | 4 | `switches`: the task's context switches |
//! | 36 | 16 | `comm`: command name, NUL-padded |
//! | 52 | 2 | `cpu`: the run queue the event concerns |
//! | 54 | 2 | `ring`: the ring (CPU buffer) that logged it |
//! | 56 | 2 | `rq_len`: runnable tasks on `cpu`'s run queue after the event |
//! | 58 | 1 | `prio`: kernel priority (0–139; 120 is nice 0) |
//! | 59 | 1 | `kind`: [`AuditEventKind`] |
//! | 60 | 1 | `flags` |
//! | 61 | 1 | reserved, zero |

use serde::{Serialize, Serializer};
use thiserror::Error;

/// Bytes of one encoded entry (seed 002 used 208).
pub const ENTRY_SIZE: usize = 62;
/// Bytes of a command name, as the kernel's `TASK_COMM_LEN`.
pub const COMM_LEN: usize = 16;

/// The unblock event was the first wakeup of a new task (`sched_wakeup_new`).
pub const FLAG_NEW_TASK: u8 = 1;
/// The task's process id could not be resolved (it had exited); `tgid` is 0.
pub const FLAG_TGID_UNKNOWN: u8 = 2;
/// The blocking task was exiting (state dead or zombie).
pub const FLAG_EXITING: u8 = 4;
const KNOWN_FLAGS: u8 = FLAG_NEW_TASK | FLAG_TGID_UNKNOWN | FLAG_EXITING;

/// Scheduling events of seed 002 figure 2.2 (enqueue/unblock, dequeue/block, terminate) and the
/// two halves of a context switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEventKind {
    /// The task became runnable (enqueue): woken, or new.
    Unblock = 0,
    /// The task stopped being runnable (dequeue): it blocked or is dying.
    Block = 1,
    /// The task exits.
    Terminate = 2,
    /// The task was switched in on `cpu`.
    SwitchIn = 3,
    /// The task was switched out while still runnable (preempted or yielded).
    Preempt = 4,
}

impl AuditEventKind {
    pub const ALL: [AuditEventKind; 5] = [
        AuditEventKind::Unblock,
        AuditEventKind::Block,
        AuditEventKind::Terminate,
        AuditEventKind::SwitchIn,
        AuditEventKind::Preempt,
    ];

    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.get(usize::from(v)).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            AuditEventKind::Unblock => "unblock",
            AuditEventKind::Block => "block",
            AuditEventKind::Terminate => "terminate",
            AuditEventKind::SwitchIn => "switch_in",
            AuditEventKind::Preempt => "preempt",
        }
    }
}

/// A command name as the kernel keeps it: up to 16 bytes, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm(pub [u8; COMM_LEN]);

impl Comm {
    /// From text, truncated to 16 bytes (at a character boundary).
    pub fn new(name: &str) -> Self {
        let mut end = name.len().min(COMM_LEN);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        Self::from_bytes(&name.as_bytes()[..end])
    }

    /// From raw bytes, up to the first NUL or 16 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut c = [0u8; COMM_LEN];
        for (dst, &b) in c.iter_mut().zip(bytes.iter().take_while(|&&b| b != 0)) {
            *dst = b;
        }
        Comm(c)
    }

    pub fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(COMM_LEN);
        &self.0[..n]
    }

    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }

    pub fn starts_with(&self, prefix: &str) -> bool {
        self.as_bytes().starts_with(prefix.as_bytes())
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

impl Serialize for Comm {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string_lossy())
    }
}

/// One scheduling event of one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    pub seq: u64,
    pub ts_ns: u64,
    pub exec_ns: u64,
    pub tgid: u32,
    pub tid: u32,
    pub switches: u32,
    pub comm: Comm,
    pub cpu: u16,
    pub ring: u16,
    pub rq_len: u16,
    pub prio: u8,
    pub kind: AuditEventKind,
    pub flags: u8,
}

/// Why an entry's bytes are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EntryError {
    #[error("entry is {len} bytes, expected {ENTRY_SIZE}")]
    Length { len: usize },
    #[error("unknown event kind {0}")]
    UnknownKind(u8),
    #[error("unknown flag bits {0:#04x}")]
    UnknownFlags(u8),
    #[error("reserved byte is {0:#04x}, expected 0")]
    Reserved(u8),
    #[error("priority {0} is outside the kernel's 0..=139")]
    Priority(u8),
}

/// Highest kernel priority value (`MAX_PRIO - 1`).
pub const MAX_PRIO: u8 = 139;

impl AuditRecord {
    /// A record of `kind` for task `tid` (its own process) on `cpu` at `ts_ns`, sequence number
    /// `ts_ns`, with the fields the analyses do not read neutral (nice 0, one task queued): for
    /// synthetic logs in tests of the analyses and of what builds on them.
    #[must_use]
    pub fn synthetic(ts_ns: u64, cpu: u16, tid: u32, kind: AuditEventKind) -> AuditRecord {
        AuditRecord {
            seq: ts_ns,
            ts_ns,
            exec_ns: 0,
            tgid: tid,
            tid,
            switches: 0,
            comm: Comm::new("t"),
            cpu,
            ring: cpu,
            rq_len: 1,
            prio: 120,
            kind,
            flags: 0,
        }
    }

    /// Appends the [`ENTRY_SIZE`]-byte encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.ts_ns.to_le_bytes());
        out.extend_from_slice(&self.exec_ns.to_le_bytes());
        out.extend_from_slice(&self.tgid.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.switches.to_le_bytes());
        out.extend_from_slice(&self.comm.0);
        out.extend_from_slice(&self.cpu.to_le_bytes());
        out.extend_from_slice(&self.ring.to_le_bytes());
        out.extend_from_slice(&self.rq_len.to_le_bytes());
        out.push(self.prio);
        out.push(self.kind as u8);
        out.push(self.flags);
        out.push(0);
    }

    /// Decodes exactly one entry.
    pub fn decode(b: &[u8]) -> Result<Self, EntryError> {
        if b.len() != ENTRY_SIZE {
            return Err(EntryError::Length { len: b.len() });
        }
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().expect("2 bytes"));
        let kind = AuditEventKind::from_u8(b[59]).ok_or(EntryError::UnknownKind(b[59]))?;
        if b[60] & !KNOWN_FLAGS != 0 {
            return Err(EntryError::UnknownFlags(b[60]));
        }
        if b[61] != 0 {
            return Err(EntryError::Reserved(b[61]));
        }
        if b[58] > MAX_PRIO {
            return Err(EntryError::Priority(b[58]));
        }
        let mut comm = [0u8; COMM_LEN];
        comm.copy_from_slice(&b[36..52]);
        Ok(AuditRecord {
            seq: u64_at(0),
            ts_ns: u64_at(8),
            exec_ns: u64_at(16),
            tgid: u32_at(24),
            tid: u32_at(28),
            switches: u32_at(32),
            comm: Comm(comm),
            cpu: u16_at(52),
            ring: u16_at(54),
            rq_len: u16_at(56),
            prio: b[58],
            kind,
            flags: b[60],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AuditRecord {
        AuditRecord {
            seq: 7,
            ts_ns: 123_456_789,
            exec_ns: 42,
            tgid: 100,
            tid: 101,
            switches: 3,
            comm: Comm::new("matmul"),
            cpu: 1,
            ring: 0,
            rq_len: 2,
            prio: 120,
            kind: AuditEventKind::Preempt,
            flags: FLAG_NEW_TASK,
        }
    }

    #[test]
    fn encoding_is_entry_size_and_round_trips() {
        let mut out = Vec::new();
        sample().encode_into(&mut out);
        assert_eq!(out.len(), ENTRY_SIZE);
        assert_eq!(AuditRecord::decode(&out).unwrap(), sample());
    }

    #[test]
    fn rejects_bad_kind_flags_reserved_and_length() {
        let mut out = Vec::new();
        sample().encode_into(&mut out);
        // (byte offset, value written there, the error it makes)
        for (at, value, err) in [
            (59, 9, EntryError::UnknownKind(9)),
            (60, 0x80, EntryError::UnknownFlags(0x80)),
            (61, 1, EntryError::Reserved(1)),
            (58, 200, EntryError::Priority(200)),
        ] {
            let mut b = out.clone();
            b[at] = value;
            assert_eq!(AuditRecord::decode(&b), Err(err));
        }
        assert_eq!(
            AuditRecord::decode(&out[..10]),
            Err(EntryError::Length { len: 10 })
        );
    }

    /// The byte layout of the module documentation's table.
    #[test]
    fn fields_sit_at_their_documented_offsets() {
        let r = AuditRecord {
            seq: 0x0102_0304_0506_0708,
            ts_ns: 0x1112_1314_1516_1718,
            exec_ns: 0x2122_2324_2526_2728,
            tgid: 0x3132_3334,
            tid: 0x4142_4344,
            switches: 0x5152_5354,
            comm: Comm::new("sixteen-bytes-ok"),
            cpu: 0x6162,
            ring: 0x7172,
            rq_len: 0x8182,
            prio: 139,
            kind: AuditEventKind::Terminate,
            flags: FLAG_TGID_UNKNOWN | FLAG_EXITING,
        };
        let mut b = vec![0xee];
        r.encode_into(&mut b);
        assert_eq!(b[0], 0xee, "appended after what was there");
        let b = &b[1..];
        assert_eq!(b[0..8], 0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(b[8..16], 0x1112_1314_1516_1718u64.to_le_bytes());
        assert_eq!(b[16..24], 0x2122_2324_2526_2728u64.to_le_bytes());
        assert_eq!(b[24..28], 0x3132_3334u32.to_le_bytes());
        assert_eq!(b[28..32], 0x4142_4344u32.to_le_bytes());
        assert_eq!(b[32..36], 0x5152_5354u32.to_le_bytes());
        assert_eq!(&b[36..52], b"sixteen-bytes-ok");
        assert_eq!(b[52..54], 0x6162u16.to_le_bytes());
        assert_eq!(b[54..56], 0x7172u16.to_le_bytes());
        assert_eq!(b[56..58], 0x8182u16.to_le_bytes());
        assert_eq!(b[58..62], [139, 2, 6, 0]);
        assert_eq!(AuditRecord::decode(b), Ok(r));
    }

    #[test]
    fn every_kind_flag_and_priority_in_range_is_accepted_and_no_other() {
        let mut out = Vec::new();
        sample().encode_into(&mut out);
        let with = |i: usize, v: u8| {
            let mut b = out.clone();
            b[i] = v;
            AuditRecord::decode(&b)
        };
        for (v, kind) in AuditEventKind::ALL.iter().enumerate() {
            assert_eq!(with(59, v as u8).map(|r| r.kind), Ok(*kind));
            assert_eq!(AuditEventKind::from_u8(v as u8), Some(*kind));
        }
        assert_eq!(AuditEventKind::from_u8(5), None);
        assert_eq!(with(59, 5), Err(EntryError::UnknownKind(5)));
        for flags in 0..=7 {
            assert_eq!(with(60, flags).map(|r| r.flags), Ok(flags));
        }
        for flags in [8, 0x10, 0x81] {
            assert_eq!(with(60, flags), Err(EntryError::UnknownFlags(flags)));
        }
        assert_eq!(with(58, 0).map(|r| r.prio), Ok(0));
        assert_eq!(with(58, MAX_PRIO).map(|r| r.prio), Ok(139));
        assert_eq!(with(58, 140), Err(EntryError::Priority(140)));
        assert_eq!(
            AuditRecord::decode(&[out.clone(), vec![0]].concat()),
            Err(EntryError::Length {
                len: ENTRY_SIZE + 1
            })
        );
    }

    /// A kind's name is the one it is serialised with (JSON reports and the CLI agree).
    #[test]
    fn kind_names_are_their_serialised_names() {
        let names: Vec<&str> = AuditEventKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            ["unblock", "block", "terminate", "switch_in", "preempt"]
        );
        for k in AuditEventKind::ALL {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.name())
            );
        }
    }

    #[test]
    fn comm_is_cut_at_a_character_boundary_and_shows_as_text() {
        // 'a' and eight 2-byte characters: 17 bytes; byte 16 is inside the last character.
        let c = Comm::new("a\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}");
        assert_eq!(c.as_bytes().len(), 15);
        assert_eq!(
            c.to_string_lossy(),
            "a\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}"
        );
        // Eight 2-byte characters fit exactly.
        let c = Comm::new("\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}");
        assert_eq!(c.as_bytes().len(), 16);
        assert_eq!(
            Comm::new("sixteen-bytes-ok").as_bytes(),
            b"sixteen-bytes-ok"
        );
        assert_eq!(Comm::new("").as_bytes(), b"");
        assert_eq!(Comm::default().as_bytes(), b"");
        assert!(!Comm::new("kwork").starts_with("kworker/"));
        assert!(Comm::new("rcu_sched").starts_with(""));
        assert_eq!(format!("{:?}", Comm::new("a b")), "\"a b\"");
        assert_eq!(serde_json::to_string(&Comm::new("a b")).unwrap(), "\"a b\"");
        // Bytes that are not UTF-8 show replaced, not dropped.
        assert_eq!(
            Comm::from_bytes(&[b'x', 0xff]).to_string_lossy(),
            "x\u{fffd}"
        );
    }

    #[test]
    fn a_synthetic_record_is_neutral_but_for_what_it_is_given() {
        let r = AuditRecord::synthetic(77, 3, 9, AuditEventKind::Preempt);
        assert_eq!(
            r,
            AuditRecord {
                seq: 77,
                ts_ns: 77,
                exec_ns: 0,
                tgid: 9,
                tid: 9,
                switches: 0,
                comm: Comm::new("t"),
                cpu: 3,
                ring: 3,
                rq_len: 1,
                prio: 120,
                kind: AuditEventKind::Preempt,
                flags: 0,
            }
        );
    }

    #[test]
    fn comm_truncates_and_stops_at_nul() {
        assert_eq!(Comm::new("a-very-long-command-name").as_bytes().len(), 16);
        assert_eq!(Comm::from_bytes(b"ab\0cd").to_string_lossy(), "ab");
        assert!(Comm::new("kworker/0:1").starts_with("kworker/"));
    }
}
