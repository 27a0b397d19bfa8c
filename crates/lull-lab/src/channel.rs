//! Choosing the daemon → app delivery channel by measurement (`lull live channel`).
//!
//! Each candidate carries one event-sized message (36 bytes, the protocol's `Event`) to a thread
//! that is blocked in the kernel waiting for it, the situation of an app in `esm_wait`. The two
//! threads play ping-pong so the receiver is always asleep when the message is sent; the
//! measured time is send-start → receiver running with the message, per one-way trip.
//!
//! - `seqpacket`: a `SOCK_SEQPACKET` Unix socket pair, `send` / blocking `recv` (what `lulld` uses).
//! - `shm+eventfd`: the message in a shared-memory slot, an eventfd write to wake the reader,
//!   which blocks in `read` of the eventfd.
//! - `shm+futex`: the message in a shared-memory slot with a sequence word; the reader blocks in
//!   `FUTEX_WAIT` on the word, the writer bumps it and calls `FUTEX_WAKE`.
//!
//! Threads of one process share an address space; across processes (daemon and app) each
//! candidate pays the same extra address-space switch on wake-up, so the comparison holds.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use lull_os::sys::{self, monotonic_ns, EventFd};

use crate::live::LatencyUs;

/// Message size: the protocol's `Event` message.
pub const MESSAGE_BYTES: usize = 36;
/// Default number of one-way trips per channel.
pub const DEFAULT_TRIPS: u32 = 20_000;

/// One channel's one-way wake-up latency (nearest-rank percentiles, as [`LatencyUs`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ChannelResult {
    pub channel: &'static str,
    pub trips: u32,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
}

fn summarize(channel: &'static str, ns: &[u64]) -> ChannelResult {
    let l = LatencyUs::of(ns);
    ChannelResult {
        channel,
        trips: ns.len() as u32,
        p50_us: l.p50.unwrap_or_default(),
        p99_us: l.p99.unwrap_or_default(),
        mean_us: l.mean.unwrap_or_default(),
    }
}

/// A ping-pong endpoint: send a stamped message, and block until one arrives (returning its stamp).
trait End: Send {
    fn send(&mut self, stamp_ns: u64) -> io::Result<()>;
    fn recv(&mut self) -> io::Result<u64>;
}

fn ping_pong(
    channel: &'static str,
    trips: u32,
    a: Box<dyn End>,
    b: Box<dyn End>,
) -> io::Result<ChannelResult> {
    let half = trips.div_ceil(2);
    let echo = thread::spawn(move || -> io::Result<Vec<u64>> {
        let mut b = b;
        let mut lat = Vec::with_capacity(half as usize);
        for _ in 0..half {
            let t = b.recv()?;
            lat.push(monotonic_ns() - t);
            b.send(monotonic_ns())?;
        }
        Ok(lat)
    });
    let mut a = a;
    let mut lat = Vec::with_capacity(half as usize);
    for _ in 0..half {
        a.send(monotonic_ns())?;
        let t = a.recv()?;
        lat.push(monotonic_ns() - t);
    }
    let mut other = echo
        .join()
        .map_err(|_| io::Error::other("echo thread panicked"))??;
    lat.append(&mut other);
    Ok(summarize(channel, &lat))
}

struct Seq(std::os::fd::OwnedFd);
impl End for Seq {
    fn send(&mut self, stamp_ns: u64) -> io::Result<()> {
        let mut m = [0u8; MESSAGE_BYTES];
        m[..8].copy_from_slice(&stamp_ns.to_le_bytes());
        sys::send_msg(self.0.as_raw_fd(), &m)
    }
    fn recv(&mut self) -> io::Result<u64> {
        let mut m = [0u8; MESSAGE_BYTES];
        sys::recv_msg(self.0.as_raw_fd(), &mut m)?;
        Ok(u64::from_le_bytes(m[..8].try_into().expect("8 bytes")))
    }
}

/// A one-slot shared-memory mailbox per direction. The mutex only guards the bytes (it is never
/// contended: ping-pong alternates); waking is the kernel primitive under test.
type Slot = Arc<Mutex<[u8; MESSAGE_BYTES]>>;

fn new_slot() -> Slot {
    Arc::new(Mutex::new([0; MESSAGE_BYTES]))
}

/// Writes a stamp into `slot`'s message.
fn put(slot: &Slot, stamp_ns: u64) -> io::Result<()> {
    slot.lock().map_err(|_| io::Error::other("poisoned"))?[..8]
        .copy_from_slice(&stamp_ns.to_le_bytes());
    Ok(())
}

/// Reads the stamp of `slot`'s message.
fn take(slot: &Slot) -> io::Result<u64> {
    let m = slot.lock().map_err(|_| io::Error::other("poisoned"))?;
    Ok(u64::from_le_bytes(m[..8].try_into().expect("8 bytes")))
}

struct ShmEventfd {
    out_slot: Slot,
    out_wake: Arc<EventFd>,
    in_slot: Slot,
    in_wake: Arc<EventFd>,
}
impl End for ShmEventfd {
    fn send(&mut self, stamp_ns: u64) -> io::Result<()> {
        put(&self.out_slot, stamp_ns)?;
        self.out_wake.signal()
    }
    fn recv(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        // Blocking read: the eventfd was created non-blocking, so wait with poll first.
        loop {
            sys::poll_readable(&[self.in_wake.raw()], None, &mut [false])?;
            match sys::read(self.in_wake.raw(), &mut b) {
                Ok(8) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        take(&self.in_slot)
    }
}

struct ShmFutex {
    out_slot: Slot,
    out_seq: Arc<AtomicU32>,
    in_slot: Slot,
    in_seq: Arc<AtomicU32>,
    seen: u32,
}

impl End for ShmFutex {
    fn send(&mut self, stamp_ns: u64) -> io::Result<()> {
        put(&self.out_slot, stamp_ns)?;
        self.out_seq.fetch_add(1, Ordering::Release);
        sys::futex_wake(&self.out_seq, 1);
        Ok(())
    }
    fn recv(&mut self) -> io::Result<u64> {
        loop {
            let now = self.in_seq.load(Ordering::Acquire);
            if now != self.seen {
                self.seen = now;
                break;
            }
            sys::futex_wait(&self.in_seq, now);
        }
        take(&self.in_slot)
    }
}

/// Measures the three candidates, `trips` one-way trips each.
///
/// # Errors
/// The kernel's error from any channel call.
pub fn measure(trips: u32) -> io::Result<Vec<ChannelResult>> {
    let trips = trips.max(2);
    let mut out = Vec::new();
    let (x, y) = sys::seqpacket_pair()?;
    out.push(ping_pong(
        "seqpacket",
        trips,
        Box::new(Seq(x)),
        Box::new(Seq(y)),
    )?);

    let (s1, s2) = (new_slot(), new_slot());
    let (w1, w2) = (Arc::new(EventFd::new()?), Arc::new(EventFd::new()?));
    let a = ShmEventfd {
        out_slot: Arc::clone(&s1),
        out_wake: Arc::clone(&w1),
        in_slot: Arc::clone(&s2),
        in_wake: Arc::clone(&w2),
    };
    let b = ShmEventfd {
        out_slot: s2,
        out_wake: w2,
        in_slot: s1,
        in_wake: w1,
    };
    out.push(ping_pong("shm+eventfd", trips, Box::new(a), Box::new(b))?);

    let (s1, s2) = (new_slot(), new_slot());
    let (q1, q2) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let a = ShmFutex {
        out_slot: Arc::clone(&s1),
        out_seq: Arc::clone(&q1),
        in_slot: Arc::clone(&s2),
        in_seq: Arc::clone(&q2),
        seen: 0,
    };
    let b = ShmFutex {
        out_slot: s2,
        out_seq: q2,
        in_slot: s1,
        in_seq: q1,
        seen: 0,
    };
    out.push(ping_pong("shm+futex", trips, Box::new(a), Box::new(b))?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_channel_carries_every_message() {
        let r = super::measure(200).unwrap();
        assert_eq!(r.len(), 3);
        for c in r {
            assert_eq!(c.trips, 200, "{c:?}");
            assert!(c.p50_us <= c.p99_us);
        }
    }
}
