//! The event ring: one app's data-plane queue in shared memory. A producer (a replay driver, a
//! network or timer source) writes events straight into it and wakes the app through an eventfd,
//! with no daemon on the per-event path (as PipeWire's io areas are woken by an eventfd).
//!
//! A bounded single-producer single-consumer ring of 64-byte [`RingRecord`]s in a memfd, sealed
//! against shrinking and growing so that neither side can make the other's mapping fault:
//!
//! | page | owner | contents |
//! | --- | --- | --- |
//! | 0 | producer | magic, version, capacity, record and page sizes, `head`, counters |
//! | 1 | consumer | `tail` (records consumed), `waiting` (the consumer is about to block) |
//! | 2.. | producer | `capacity` records, slot `i % capacity` for the `i`th record |
//!
//! The consumer maps pages 0 and 2.. `PROT_READ` and only page 1 writable. That guards the app
//! against its own stray writes, no more: the memfd it receives is read-write (page 1 must be), so
//! it could `mprotect` its mapping writable again, and a read-only reopen through `/proc/self/fd`
//! would not take that fd away. What protects the producer is that it never reads anything back
//! from shared memory but `tail` and `waiting`, each once per use and clamped; its own state
//! (head, counters, the pending drop run) lives in its private memory, and the header is only
//! published.
//!
//! Overflow, as in the ESM and evdev: when the ring is full the new event is dropped and counted,
//! and once there is room the producer writes one marker ([`FLAG_OVERFLOW`], payload
//! [`OverflowMarker`]: dropped count, first and last sequence) before the next event. So
//! `produced = delivered + dropped`, and every dropped event is covered by a marker once space
//! allows (at the next push, or at [`RingProducer::flush`]).
//!
//! Wake-ups: the consumer sets `waiting` before it blocks, then reads `head` again; the producer
//! publishes `head`, then reads `waiting` and, if set, clears it and writes the eventfd (a
//! Dekker pair, sequentially consistent on both sides, so a wake-up is never lost). That is one
//! wake-up per wait at most, and none while the consumer is running. A consumer that sets
//! `waiting` all the time costs the producer one eventfd write per push, never a block: the
//! eventfd is non-blocking and a full counter means the consumer is already woken.

mod consumer;
mod producer;
mod record;
#[cfg(test)]
mod tests;

pub use consumer::RingConsumer;
pub use producer::{BurstOutcome, RingProducer};

pub use record::{
    delivery_of_record, ring_record_of, OverflowMarker, RingRecord, FLAG_OVERFLOW, PAYLOAD_BYTES,
    RECORD_BYTES,
};

use std::io;
use std::os::fd::OwnedFd;

use rustix::mm::ProtFlags;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// "LULLRING" in ASCII: a memfd that is not a ring is refused before anything else is read.
pub const MAGIC: u64 = u64::from_be_bytes(*b"LULLRING");
/// Layout version; bumped with any change to the tables above.
pub const VERSION: u32 = 1;
/// The fewest records: with one slot, a pending marker and the next event could never both fit.
pub const MIN_CAPACITY: u64 = 2;
/// The most records: 2^20 × 64 bytes = 64 MiB, far beyond any input burst (a 1 kHz device
/// fills 1024 records in a second), and a bound on what a header may ask a consumer to map.
pub const MAX_CAPACITY: u64 = 1 << 20;

/// The producer-owned header at the start of page 0.
#[repr(C)]
struct Header {
    magic: u64,
    version: u32,
    record_bytes: u32,
    capacity: u64,
    page_bytes: u64,
    _pad0: [u64; 4],
    /// Records written (events and markers); on its own cache line, as the consumer polls it.
    head: AtomicU64,
    _pad1: [u64; 7],
    produced: AtomicU64,
    delivered: AtomicU64,
    dropped: AtomicU64,
    markers: AtomicU64,
    hostile_tails: AtomicU64,
    wakes: AtomicU64,
}

impl Header {
    /// The producer's counters as it last published them.
    fn counters(&self) -> RingCounters {
        let read = |c: &AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        RingCounters {
            produced: read(&self.produced),
            delivered: read(&self.delivered),
            dropped: read(&self.dropped),
            markers: read(&self.markers),
            hostile_tails: read(&self.hostile_tails),
            wakes: read(&self.wakes),
        }
    }
}

/// The consumer-owned page 1.
#[repr(C)]
struct ConsumerPage {
    tail: AtomicU64,
    _pad: [u64; 7],
    waiting: AtomicU32,
}

/// Why a ring could not be created or opened.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    #[error("ring capacity {0} is not a power of two in {MIN_CAPACITY}..={MAX_CAPACITY}")]
    BadCapacity(u64),
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("the memfd is not sealed against shrinking and growing (seals {0:#x})")]
    NotSealed(i32),
    #[error("the memfd holds {file_bytes} bytes, less than a ring's two pages")]
    TooSmall { file_bytes: u64 },
    #[error("bad ring magic {0:#x}")]
    BadMagic(u64),
    #[error("ring version {0}, this build reads {VERSION}")]
    BadVersion(u32),
    #[error("ring records of {0} bytes, this build reads {RECORD_BYTES}")]
    BadRecordBytes(u32),
    #[error("ring laid out for {header}-byte pages, this machine has {machine}")]
    BadPageBytes { header: u64, machine: u64 },
    #[error("ring header says {header_bytes} bytes, the memfd holds {file_bytes}")]
    SizeMismatch { header_bytes: u64, file_bytes: u64 },
    #[error("the wake-up descriptor is not an eventfd")]
    NotEventFd,
    #[error("the ring already holds {0} records; a producer takes over only a fresh ring")]
    NotFresh(u64),
}

fn io_err<E: Into<io::Error>>(op: &'static str) -> impl FnOnce(E) -> RingError {
    move |source| RingError::Io {
        op,
        source: source.into(),
    }
}

/// What [`RingProducer::push`] did with one event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PushOutcome {
    /// The event is in the ring.
    Queued,
    /// A marker for `dropped` earlier events went in first, then the event.
    QueuedAfterMarker { dropped: u64 },
    /// The ring was full (or the consumer's index was hostile): dropped and counted.
    Dropped,
}

/// The producer's counters, as published in the header.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct RingCounters {
    /// Events pushed.
    pub produced: u64,
    /// Events written into the ring.
    pub delivered: u64,
    /// Events dropped because the ring was full.
    pub dropped: u64,
    /// Overflow markers written.
    pub markers: u64,
    /// Pushes that found the consumer's index impossible (and so treated the ring as full).
    pub hostile_tails: u64,
    /// Eventfd writes.
    pub wakes: u64,
}

/// A ring's state read from its memfd by a third party ([`RingConsumer::observe`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct RingObservation {
    /// The producer's counters as it last published them.
    pub counters: RingCounters,
    /// Records the producer has written (events and markers).
    pub head: u64,
    /// Records the consumer says it has read (its own, untrusted, word).
    pub consumed: u64,
}

/// The two descriptors the daemon sends to the app (with `SCM_RIGHTS` in the real design).
#[derive(Debug)]
pub struct RingFds {
    pub memfd: OwnedFd,
    pub eventfd: OwnedFd,
}

/// The machine's page size: the unit of `mmap` offsets, so the unit of the layout.
fn page_bytes() -> u64 {
    rustix::param::page_size() as u64
}

/// Bytes of the memfd for `capacity` records: header page, consumer page, records page-rounded.
fn ring_bytes(capacity: u64, page: u64) -> u64 {
    let records = capacity * RECORD_BYTES as u64;
    2 * page + records.div_ceil(page) * page
}

/// `mmap` of `len` bytes at `offset`, shared.
fn map(fd: &OwnedFd, len: u64, offset: u64, prot: ProtFlags) -> Result<*mut u8, RingError> {
    // SAFETY: a new shared mapping (no address asked for, so it replaces none) of a file we
    // hold; the caller keeps it until it unmaps.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len as usize,
            prot,
            rustix::mm::MapFlags::SHARED,
            fd,
            offset,
        )
    }
    .map_err(io_err("mmap"))?;
    Ok(p.cast())
}

fn unmap(p: *mut u8, len: u64) {
    // SAFETY: a mapping made by `map` with this length, unmapped once by its owner's Drop.
    let _ = unsafe { rustix::mm::munmap(p.cast(), len as usize) };
}
