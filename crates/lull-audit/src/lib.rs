//! IPSA, the scheduler event archiver of seed 002, as pure code, and the analyses of seed 004.
//!
//! Everything here is deterministic: readers take `&[u8]` or `&str`, writers append to a
//! `Vec<u8>`, time is `u64` nanoseconds passed in. The live recorder (`lull-lab::audit`) and the
//! simulator write the same [`log`] format through [`log::LogEncoder`].
//!
//! - [`record`]: one audit entry ([`AuditRecord`], [`ENTRY_SIZE`] bytes encoded).
//! - [`ring`]: the bounded per-CPU ring with overwrite-oldest and sequence numbers.
//! - [`log`]: the log file (header, entries, trailer with counters and a checksum).
//! - [`tracefs`]: the kernel's `trace_pipe_raw` pages and `format` files; [`tracefs::RecordBuilder`]
//!   turns raw scheduler events into audit records (derived execution time, switches, run-queue
//!   length; counted-not-logged tasks).
//! - [`ftrace_text`]: `trace-cmd report` output and the tracefs `trace` file.
//! - [`tlp`], [`latency`]: the analyses. [`perfetto`]: export for ui.perfetto.dev.
//! - [`footprint`]: the seed's memory formula M = E×S×R + C.

pub mod footprint;
pub mod ftrace_text;
pub mod latency;
pub mod log;
pub mod perfetto;
pub mod record;
pub mod ring;
pub mod timeline;
pub mod timer_path;
pub mod tlp;
pub mod tracefs;

pub use log::{AuditLog, LogEncoder, LogError, LogHeader, LogSummary};
pub use record::{AuditEventKind, AuditRecord, Comm, EntryError, ENTRY_SIZE};
pub use ring::{PerCpuRings, Ring};

/// Records of several rings in the order the analyses need: by timestamp, then ring, then
/// sequence number, so the two records of one context switch (same ring, consecutive sequence
/// numbers, same timestamp) stay together and in order.
pub fn time_ordered(records: &[AuditRecord]) -> Vec<AuditRecord> {
    let mut sorted = records.to_vec();
    sorted.sort_by_key(|r| (r.ts_ns, r.ring, r.seq));
    sorted
}
