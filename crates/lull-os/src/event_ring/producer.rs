//! The producer's side of the ring: writes records, counts drops, writes markers, wakes.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::{
    io_err, map, page_bytes, ring_bytes, unmap, ConsumerPage, Header, OverflowMarker, PushOutcome,
    RingCounters, RingError, RingFds, RingRecord, MAGIC, MAX_CAPACITY, MIN_CAPACITY, RECORD_BYTES,
    VERSION,
};
use rustix::mm::ProtFlags;

/// A dropped run not yet reported by a marker.
#[derive(Clone, Copy, Debug)]
struct PendingDrop {
    marker: OverflowMarker,
    last_injected_ns: u64,
}

/// The producer's side: the whole memfd mapped read-write, its state kept privately.
#[derive(Debug)]
pub struct RingProducer {
    base: *mut u8,
    map_bytes: u64,
    page: u64,
    capacity: u64,
    head: u64,
    counters: RingCounters,
    pending: Option<PendingDrop>,
    /// Most records unread after a push (the consumer's lag), kept privately to size rings.
    high_water: u64,
    eventfd: OwnedFd,
}

/// What [`RingProducer::push_all`] did with a burst.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct BurstOutcome {
    /// Events written into the ring.
    pub queued: u64,
    /// Events dropped because the ring was full (counted, and marked once there is room).
    pub dropped: u64,
    /// Whether the consumer was woken (one eventfd write for the whole burst).
    pub woke: bool,
}

// SAFETY: the mapping is owned by the producer and touched only through `&mut self` (records,
// header) or atomics (the consumer page).
unsafe impl Send for RingProducer {}

impl RingProducer {
    /// A new, empty ring of `capacity` records (a power of two), and the descriptors for its
    /// consumer.
    ///
    /// # Errors
    /// [`RingError::BadCapacity`]; the kernel's error from `memfd_create`, `ftruncate`, `fcntl`,
    /// `eventfd`, `dup` or `mmap`.
    pub fn create(capacity: u64) -> Result<(RingProducer, RingFds), RingError> {
        if !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) || !capacity.is_power_of_two() {
            return Err(RingError::BadCapacity(capacity));
        }
        let page = page_bytes();
        let bytes = ring_bytes(capacity, page);
        use rustix::event::{eventfd, EventfdFlags};
        use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
        let memfd = memfd_create(
            c"lull-event-ring",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )
        .map_err(io_err("memfd_create"))?;
        ftruncate(&memfd, bytes).map_err(io_err("ftruncate"))?;
        let seals = SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL;
        fcntl_add_seals(&memfd, seals).map_err(io_err("fcntl(F_ADD_SEALS)"))?;
        // Non-blocking: the producer must never block on a wake-up.
        let eventfd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(io_err("eventfd"))?;
        let base = map(&memfd, bytes, 0, ProtFlags::READ | ProtFlags::WRITE)?;
        let header = Header {
            magic: MAGIC,
            version: VERSION,
            record_bytes: RECORD_BYTES as u32,
            capacity,
            page_bytes: page,
            _pad0: [0; 4],
            head: AtomicU64::new(0),
            _pad1: [0; 7],
            produced: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            markers: AtomicU64::new(0),
            hostile_tails: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
        };
        // SAFETY: page 0 of our fresh mapping, page-aligned and larger than a Header; nobody
        // else has the memfd yet.
        unsafe { base.cast::<Header>().write(header) };
        let producer = RingProducer {
            base,
            map_bytes: bytes,
            page,
            capacity,
            head: 0,
            counters: RingCounters::default(),
            pending: None,
            high_water: 0,
            eventfd: eventfd.try_clone().map_err(io_err("dup"))?,
        };
        Ok((producer, RingFds { memfd, eventfd }))
    }

    /// Takes over a fresh ring another process created with [`RingProducer::create`] (the
    /// daemon creates each app's ring and hands its producer end to the source that fills it).
    /// The ring must be empty: the producer's head and counters start at zero and are never
    /// read back from shared memory, which the app can also write.
    ///
    /// # Errors
    /// As [`RingConsumer::from_fds`](super::RingConsumer::from_fds) for a memfd that is not a
    /// sealed ring; [`RingError::NotFresh`] when records were already written.
    pub fn from_fds(memfd: OwnedFd, eventfd: OwnedFd) -> Result<RingProducer, RingError> {
        let probe = super::RingConsumer::probe(&memfd, &eventfd)?;
        if probe.head != 0 {
            return Err(RingError::NotFresh(probe.head));
        }
        let base = map(
            &memfd,
            probe.file_bytes,
            0,
            ProtFlags::READ | ProtFlags::WRITE,
        )?;
        Ok(RingProducer {
            base,
            map_bytes: probe.file_bytes,
            page: page_bytes(),
            capacity: probe.capacity,
            head: 0,
            counters: RingCounters::default(),
            pending: None,
            high_water: 0,
            eventfd,
        })
    }

    fn header(&self) -> &Header {
        // SAFETY: page 0 of our live mapping holds the Header written in `create`.
        unsafe { &*self.base.cast::<Header>() }
    }

    fn consumer_page(&self) -> &ConsumerPage {
        // SAFETY: page 1 of our live mapping; all-zero is a valid ConsumerPage and it is only
        // touched through atomics.
        unsafe { &*self.base.add(self.page as usize).cast::<ConsumerPage>() }
    }

    /// Free slots as the consumer last published, or `None` when its index is impossible (ahead
    /// of `head`, or more than `capacity` behind it).
    fn free_slots(&self) -> Option<u64> {
        let tail = self.consumer_page().tail.load(Ordering::Acquire);
        // `head` counts from 0 and cannot wrap (2^64 records is centuries at a GHz), so a tail
        // above it is a lie, not a wrap.
        let used = self.head.checked_sub(tail)?;
        (used <= self.capacity).then(|| self.capacity - used)
    }

    fn write_slot(&mut self, rec: &RingRecord) {
        let slot = self.head & (self.capacity - 1);
        // SAFETY: slot < capacity, so the record lies within the records area of our mapping;
        // the consumer reads it only after `head` is published past it. A consumer that lies
        // about `tail` may read it while we write: RingRecord is plain integers, so it reads a
        // wrong record, nothing undefined for us.
        unsafe {
            self.base
                .add((2 * self.page) as usize)
                .cast::<RingRecord>()
                .add(slot as usize)
                .write_volatile(*rec);
        }
        self.head += 1;
    }

    /// Pushes one event: never blocks, never trusts the consumer's index.
    pub fn push(&mut self, rec: &RingRecord) -> PushOutcome {
        let mut free = self.read_free();
        let outcome = self.stage(rec, &mut free);
        self.publish();
        outcome
    }

    /// Pushes a burst of events with one publication: the consumer's index is read once (again
    /// only if the ring looks full), `head` and the counters are published once, and a waiting
    /// consumer is woken once. The consumer sees the burst at once, as if one event; order and
    /// overflow rules are those of [`RingProducer::push`] event by event.
    pub fn push_all(&mut self, recs: &[RingRecord]) -> BurstOutcome {
        let mut out = BurstOutcome::default();
        let mut free = self.read_free();
        let wakes = self.counters.wakes;
        for (i, rec) in recs.iter().enumerate() {
            if free < 2 && i > 0 {
                // The consumer may have made room since the burst began (2: a marker and an
                // event); at most one look per event, as `push` takes.
                free = self.read_free();
            }
            match self.stage(rec, &mut free) {
                PushOutcome::Dropped => out.dropped += 1,
                _ => out.queued += 1,
            }
        }
        self.publish();
        out.woke = self.counters.wakes != wakes;
        out
    }

    /// Free slots now, counting an impossible consumer index as a full ring (and counting it).
    fn read_free(&mut self) -> u64 {
        if let Some(n) = self.free_slots() {
            n
        } else {
            self.counters.hostile_tails += 1;
            0
        }
    }

    /// Writes one event (after the pending marker, if any) or drops it, given `free` slots;
    /// publishes nothing.
    fn stage(&mut self, rec: &RingRecord, free: &mut u64) -> PushOutcome {
        self.counters.produced += 1;
        let need = if self.pending.is_some() { 2 } else { 1 };
        if *free >= need {
            let marker = self.write_pending();
            self.write_slot(rec);
            *free -= need;
            self.high_water = self.high_water.max(self.capacity - *free);
            self.counters.delivered += 1;
            return match marker {
                Some(dropped) => PushOutcome::QueuedAfterMarker { dropped },
                None => PushOutcome::Queued,
            };
        }
        self.counters.dropped += 1;
        self.high_water = self.capacity;
        let p = self.pending.get_or_insert(PendingDrop {
            marker: OverflowMarker {
                dropped: 0,
                first_seq: rec.seq,
                last_seq: rec.seq,
            },
            last_injected_ns: rec.injected_ns,
        });
        p.marker.dropped += 1;
        p.marker.last_seq = rec.seq;
        p.last_injected_ns = rec.injected_ns;
        PushOutcome::Dropped
    }

    /// Writes the pending marker if there is one (the caller checked there is room).
    fn write_pending(&mut self) -> Option<u64> {
        let p = self.pending.take()?;
        self.write_slot(&RingRecord::marker(p.marker, p.last_injected_ns));
        self.counters.markers += 1;
        Some(p.marker.dropped)
    }

    /// Writes the marker of a pending drop run if the ring has room for it, so an idle producer
    /// still reports its drops. Returns `true` when no drop is left unreported.
    pub fn flush(&mut self) -> bool {
        if self.pending.is_none() {
            return true;
        }
        match self.free_slots() {
            Some(n) if n >= 1 => {
                self.write_pending();
                self.publish();
                true
            }
            Some(_) => false,
            None => {
                self.counters.hostile_tails += 1;
                self.publish();
                false
            }
        }
    }

    /// Publishes the counters and `head`, then wakes the consumer if it said it is waiting.
    fn publish(&mut self) {
        let h = self.header();
        let c = self.counters;
        h.produced.store(c.produced, Ordering::Relaxed);
        h.delivered.store(c.delivered, Ordering::Relaxed);
        h.dropped.store(c.dropped, Ordering::Relaxed);
        h.markers.store(c.markers, Ordering::Relaxed);
        h.hostile_tails.store(c.hostile_tails, Ordering::Relaxed);
        h.head.store(self.head, Ordering::Release);
        // Dekker with `RingConsumer::wait`: head stored, then `waiting` loaded.
        fence(Ordering::SeqCst);
        let waiting = &self.consumer_page().waiting;
        if waiting.load(Ordering::Relaxed) != 0 && waiting.swap(0, Ordering::AcqRel) != 0 {
            // EAGAIN means the counter is full: the consumer is already woken. Nothing else can
            // fail on an eventfd we own with an 8-byte write.
            let _ = crate::sys::write_all_once(self.eventfd.as_raw_fd(), &1u64.to_ne_bytes());
            self.counters.wakes += 1;
            self.header()
                .wakes
                .store(self.counters.wakes, Ordering::Relaxed);
        }
    }

    /// The producer's counters.
    #[must_use]
    pub fn counters(&self) -> RingCounters {
        self.counters
    }

    /// Events dropped and not yet covered by a marker.
    #[must_use]
    pub fn pending_dropped(&self) -> u64 {
        self.pending.map_or(0, |p| p.marker.dropped)
    }

    /// Records the ring holds.
    #[must_use]
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Records written and not yet read, as the consumer last published its index (`None` when
    /// that index is impossible). 0 with no pending drop means the consumer has read everything.
    #[must_use]
    pub fn unread(&self) -> Option<u64> {
        self.free_slots().map(|n| self.capacity - n)
    }

    /// The most records the ring held unread after any push so far, as far as the producer
    /// knew (the capacity once an event was dropped): how far the consumer fell behind, the
    /// measure a ring's capacity is sized by.
    #[must_use]
    pub fn high_water(&self) -> u64 {
        self.high_water
    }
}

impl Drop for RingProducer {
    fn drop(&mut self) {
        unmap(self.base, self.map_bytes);
    }
}
