//! The consumer's (app's) side of the ring: validates, pops, waits.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::{
    io_err, map, page_bytes, ring_bytes, unmap, ConsumerPage, Header, RingCounters, RingError,
    RingObservation, RingRecord, MAGIC, MAX_CAPACITY, MIN_CAPACITY, RECORD_BYTES, VERSION,
};
use rustix::mm::ProtFlags;

/// A ring's header read once ([`RingConsumer::probe`]).
pub(super) struct Probe {
    pub(super) capacity: u64,
    pub(super) file_bytes: u64,
    pub(super) head: u64,
    consumed: u64,
    counters: RingCounters,
}

/// The consumer's (app's) side: header and records mapped read-only, its own page writable.
#[derive(Debug)]
pub struct RingConsumer {
    pub(super) header: *mut u8,
    page: u64,
    pub(super) ctl: *mut u8,
    pub(super) records: *mut u8,
    records_bytes: u64,
    capacity: u64,
    tail: u64,
    cached_head: u64,
    popped: u64,
    producer_faults: u64,
    eventfd: OwnedFd,
}

// SAFETY: the mappings are owned by the consumer and read through atomics or volatile copies.
unsafe impl Send for RingConsumer {}

impl RingConsumer {
    /// Opens a ring from the descriptors the daemon sent, refusing anything that is not a sealed
    /// ring of the size its header claims, or a wake-up descriptor that is not an eventfd.
    ///
    /// # Errors
    /// A [`RingError`] naming what is wrong; the kernel's error from `fstat`, `fcntl` or `mmap`.
    pub fn from_fds(memfd: OwnedFd, eventfd: OwnedFd) -> Result<RingConsumer, RingError> {
        check_eventfd(&eventfd)?;
        let (file_bytes, page) = sealed_size(&memfd)?;
        let header = map(&memfd, page, 0, ProtFlags::READ)?;
        // From here `header` is ours: unmap it on every refusal.
        let checked = Self::check_header(header, page, file_bytes);
        let capacity = match checked {
            Ok(c) => c,
            Err(e) => {
                unmap(header, page);
                return Err(e);
            }
        };
        let records_bytes = file_bytes - 2 * page;
        let ctl = match map(&memfd, page, page, ProtFlags::READ | ProtFlags::WRITE) {
            Ok(p) => p,
            Err(e) => {
                unmap(header, page);
                return Err(e);
            }
        };
        let records = match map(&memfd, records_bytes, 2 * page, ProtFlags::READ) {
            Ok(p) => p,
            Err(e) => {
                unmap(header, page);
                unmap(ctl, page);
                return Err(e);
            }
        };
        let mut consumer = RingConsumer {
            header,
            page,
            ctl,
            records,
            records_bytes,
            capacity,
            tail: 0,
            cached_head: 0,
            popped: 0,
            producer_faults: 0,
            eventfd,
        };
        // Resume where a previous consumer of this ring stopped, within what the ring can hold.
        let head = consumer.head().load(Ordering::Acquire);
        let tail = consumer.ctl_page().tail.load(Ordering::Relaxed);
        consumer.tail = if head.wrapping_sub(tail) <= capacity {
            tail
        } else {
            head
        };
        consumer.cached_head = head;
        consumer
            .ctl_page()
            .tail
            .store(consumer.tail, Ordering::Release);
        Ok(consumer)
    }

    /// Checks a ring's descriptors without taking it: what [`RingConsumer::from_fds`] refuses,
    /// this refuses; it reads the header once and unmaps it.
    pub(super) fn probe(memfd: &OwnedFd, eventfd: &OwnedFd) -> Result<Probe, RingError> {
        check_eventfd(eventfd)?;
        Self::observe_memfd(memfd)
    }

    fn observe_memfd(memfd: &OwnedFd) -> Result<Probe, RingError> {
        let (file_bytes, page) = sealed_size(memfd)?;
        let header = map(memfd, 2 * page, 0, ProtFlags::READ)?;
        let checked = Self::check_header(header, page, file_bytes);
        let probe = checked.map(|capacity| {
            // SAFETY: page 0 of our live read-only mapping holds a checked Header; page 1 a
            // ConsumerPage (every bit pattern valid); read through atomics only.
            let (h, c) = unsafe {
                (
                    &*header.cast::<Header>(),
                    &*header.add(page as usize).cast::<ConsumerPage>(),
                )
            };
            Probe {
                capacity,
                file_bytes,
                head: h.head.load(Ordering::Acquire),
                consumed: c.tail.load(Ordering::Acquire),
                counters: h.counters(),
            }
        });
        unmap(header, 2 * page);
        probe
    }

    /// Writes `tail` as the consumer's published index of the ring in `memfd`, as an app that
    /// holds the consumer end may (the index is the app's word): for the tests of a producer's
    /// defence against an app that scribbles on it.
    ///
    /// # Errors
    /// The kernel's error from `mmap`.
    pub fn forge_consumer_index(memfd: &OwnedFd, tail: u64) -> std::io::Result<()> {
        use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};
        let page = rustix::param::page_size();
        // SAFETY: a fresh shared mapping of the ring's consumer page (page 1), which the consumer
        // end may write; nothing else in this process refers to it.
        let ctl = unsafe {
            mmap(
                std::ptr::null_mut(),
                page,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                memfd,
                page as u64,
            )?
        };
        // SAFETY: the consumer's index is the first word of its page, inside the mapping; the
        // write reaches the memfd, so it outlives the mapping.
        unsafe { ctl.cast::<u64>().write_volatile(tail) };
        // SAFETY: the mapping made above, of one page, no longer used.
        unsafe { munmap(ctl, page)? };
        Ok(())
    }

    /// What a ring's memfd says now, read without taking either end (the daemon, which created
    /// the ring, reads each app's counters this way): the producer's counters, `head`, and the
    /// consumer's published index. The consumer's index is the app's word, so untrusted.
    ///
    /// # Errors
    /// A [`RingError`] when the memfd is not a sealed ring.
    pub fn observe(memfd: &OwnedFd) -> Result<RingObservation, RingError> {
        let p = Self::observe_memfd(memfd)?;
        Ok(RingObservation {
            counters: p.counters,
            head: p.head,
            consumed: p.consumed,
        })
    }

    /// The capacity the header at `header` declares, once it matches this build and the file.
    fn check_header(header: *const u8, page: u64, file_bytes: u64) -> Result<u64, RingError> {
        let h = header.cast::<Header>();
        // SAFETY: a live read-only mapping of one page, larger than a Header; the fields read are
        // plain integers, copied volatile as another process owns them.
        let (magic, version, record_bytes, capacity, page_bytes) = unsafe {
            (
                (&raw const (*h).magic).read_volatile(),
                (&raw const (*h).version).read_volatile(),
                (&raw const (*h).record_bytes).read_volatile(),
                (&raw const (*h).capacity).read_volatile(),
                (&raw const (*h).page_bytes).read_volatile(),
            )
        };
        if magic != MAGIC {
            return Err(RingError::BadMagic(magic));
        }
        if version != VERSION {
            return Err(RingError::BadVersion(version));
        }
        if record_bytes as usize != RECORD_BYTES {
            return Err(RingError::BadRecordBytes(record_bytes));
        }
        if page_bytes != page {
            return Err(RingError::BadPageBytes {
                header: page_bytes,
                machine: page,
            });
        }
        if !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) || !capacity.is_power_of_two() {
            return Err(RingError::BadCapacity(capacity));
        }
        let header_bytes = ring_bytes(capacity, page);
        if header_bytes != file_bytes {
            return Err(RingError::SizeMismatch {
                header_bytes,
                file_bytes,
            });
        }
        Ok(capacity)
    }

    fn hdr(&self) -> &Header {
        // SAFETY: our live read-only mapping of page 0, checked to hold a Header. Only its
        // atomics are read through this reference (atomic loads of read-only memory are fine
        // for lock-free 64-bit atomics).
        unsafe { &*self.header.cast::<Header>() }
    }

    fn head(&self) -> &AtomicU64 {
        &self.hdr().head
    }

    fn ctl_page(&self) -> &ConsumerPage {
        // SAFETY: our live read-write mapping of page 1; all-zero is a valid ConsumerPage and it
        // is only touched through atomics.
        unsafe { &*self.ctl.cast::<ConsumerPage>() }
    }

    /// The oldest record, if any; publishes the consumer's index past it.
    pub fn pop(&mut self) -> Option<RingRecord> {
        if self.tail == self.cached_head {
            self.cached_head = self.head().load(Ordering::Acquire);
            if self.tail == self.cached_head {
                return None;
            }
        }
        if self.cached_head.wrapping_sub(self.tail) > self.capacity {
            // A producer cannot have written more than the ring holds: it broke the protocol.
            // Skip to the oldest slot that can still hold data rather than read past the ring.
            self.producer_faults += 1;
            self.tail = self.cached_head.wrapping_sub(self.capacity);
        }
        let slot = self.tail & (self.capacity - 1);
        // SAFETY: slot < capacity and the records mapping holds `capacity` records (checked
        // against the file size); every bit pattern is a RingRecord; volatile because another
        // process writes the memory.
        let rec = unsafe {
            self.records
                .cast::<RingRecord>()
                .add(slot as usize)
                .read_volatile()
        };
        self.tail = self.tail.wrapping_add(1);
        self.popped += 1;
        self.ctl_page().tail.store(self.tail, Ordering::Release);
        Some(rec)
    }

    /// Whether the ring holds nothing, as the producer last published.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.head().load(Ordering::Acquire) == self.tail
    }

    /// Blocks until the ring holds something (it may return with nothing after a stale
    /// wake-up; callers loop on `pop`).
    ///
    /// # Errors
    /// The kernel's error from `poll` or `read` on the eventfd.
    pub fn wait(&mut self) -> Result<(), RingError> {
        if !self.prepare_wait() {
            return Ok(());
        }
        use rustix::event::{poll, PollFd, PollFlags};
        let mut pfd = [PollFd::new(&self.eventfd, PollFlags::IN)];
        loop {
            match poll(&mut pfd, None) {
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(io_err("poll eventfd")(e)),
                Ok(_) => break,
            }
        }
        self.drain_wake()
    }

    /// Says the consumer is about to block on [`RingConsumer::wake_fd`] with other descriptors
    /// (the app's socket, other rings), as [`RingConsumer::wait`] does for one ring: sets
    /// `waiting`, then reads `head` again. Returns `true` when the ring is empty and the producer
    /// will write the eventfd at its next push; `false` (with `waiting` cleared) when a record
    /// arrived meanwhile, and the caller must pop instead of blocking.
    pub fn prepare_wait(&mut self) -> bool {
        if !self.is_empty() {
            return false;
        }
        self.ctl_page().waiting.store(1, Ordering::Relaxed);
        // Dekker with `RingProducer::publish`: `waiting` stored, then head loaded.
        fence(Ordering::SeqCst);
        if self.is_empty() {
            return true;
        }
        self.ctl_page().waiting.store(0, Ordering::Relaxed);
        false
    }

    /// The eventfd the producer writes when the consumer waits, to poll with other descriptors.
    #[must_use]
    pub fn wake_fd(&self) -> std::os::fd::RawFd {
        self.eventfd.as_raw_fd()
    }

    /// Empties the eventfd after a poll said it is readable (it is non-blocking: nothing to read
    /// is not an error).
    ///
    /// # Errors
    /// The kernel's error from `read` on the eventfd.
    pub fn drain_wake(&self) -> Result<(), RingError> {
        let mut buf = [0u8; 8];
        match crate::sys::read(self.eventfd.as_raw_fd(), &mut buf) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(RingError::Io {
                op: "read eventfd",
                source: e,
            }),
        }
    }

    /// The producer's counters as it last published them.
    #[must_use]
    pub fn counters(&self) -> RingCounters {
        self.hdr().counters()
    }

    /// Records popped by this consumer (events and markers).
    #[must_use]
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Times the producer's `head` was impossible (more than a ring ahead of `tail`).
    #[must_use]
    pub fn producer_faults(&self) -> u64 {
        self.producer_faults
    }

    #[cfg(test)]
    pub(super) fn scribble_tail(&self, v: u64) {
        self.ctl_page().tail.store(v, Ordering::Release);
    }
}

/// Refuses a descriptor that is not an eventfd.
fn check_eventfd(eventfd: &OwnedFd) -> Result<(), RingError> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", eventfd.as_raw_fd()))
        .map_err(io_err("readlink eventfd"))?;
    if link.as_os_str() != "anon_inode:[eventfd]" {
        return Err(RingError::NotEventFd);
    }
    Ok(())
}

/// A ring memfd's size and the page size, after checking that it is sealed against shrinking
/// and growing and holds at least its header and control pages.
fn sealed_size(memfd: &OwnedFd) -> Result<(u64, u64), RingError> {
    use rustix::fs::{fcntl_get_seals, fstat, SealFlags};
    let want = SealFlags::SHRINK | SealFlags::GROW;
    match fcntl_get_seals(memfd) {
        Ok(seals) if seals.contains(want) => {}
        // -1: the descriptor takes no seals (it is no memfd).
        other => return Err(RingError::NotSealed(other.map_or(-1, |s| s.bits() as i32))),
    }
    let st = fstat(memfd).map_err(io_err("fstat"))?;
    let file_bytes = u64::try_from(st.st_size).unwrap_or(0);
    let page = page_bytes();
    if file_bytes < 2 * page {
        return Err(RingError::TooSmall { file_bytes });
    }
    Ok((file_bytes, page))
}

impl Drop for RingConsumer {
    fn drop(&mut self) {
        unmap(self.header, self.page);
        unmap(self.ctl, self.page);
        unmap(self.records, self.records_bytes);
    }
}
