//! The daemon's own event sources that are not kernel input devices — network sockets
//! ([`crate::daemon::Daemon::add_net`]) and timers ([`crate::daemon::Daemon::add_timer`]) — run
//! as a data-plane producer on a thread of their own, off the daemon's control loop.
//!
//! The thread owns the sockets and timerfds and blocks in one `poll` on them, its control
//! connection and a stop eventfd. It connects to the daemon's ESM socket and says `Produce` like
//! any other producer, so it is routed by the same table ([`crate::routes`]) and writes each
//! datagram or expiry straight into the rings of the apps registered for it, waking each app
//! with its ring's eventfd: the daemon's loop is not woken per event.
//!
//! Why a thread of the daemon and not a separate process: the sockets and timers are the
//! daemon's (given on its command line or by the program embedding it), their drop accounting
//! belongs in its report, and a thread costs no extra address space or start-up protocol. Why
//! timers are pushed by this producer rather than passed to each app as a timerfd: a timer is
//! one source for every app registered for timer events, and through the ring each expiry is
//! an event with a sequence number that is delivered, or dropped and marked, and counted on both
//! sides like every other event — a timerfd read by the app would merge expirations into a count
//! outside that accounting. It costs the producer thread one wake-up per expiry (measured:
//! `crates/lull-lab/tests/sources.rs`).
//!
//! Drop accounting on a datagram socket is as before: `SO_RXQ_OVFL` on every datagram read, and
//! at the stop the datagrams still unread are counted and `SO_MEMINFO` reads the drops no later
//! datagram reported.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use lull_model::{EventKind, RawEvent};
use lull_os::event_ring::RingCounters;
use lull_os::producer::{Producer, ProducerCounters};
use lull_os::sys::{self, EventFd, TimerFd};

use crate::turn::MAX_MESSAGES_PER_TURN;

/// The largest UDP payload; a longer read would only be truncated anyway.
const NET_BUF_BYTES: usize = 65_536;

/// How long the source thread waits for the daemon's answers to its `Produce` before it gives up
/// (the daemon answers from its loop, which runs as soon as the thread is started; a generous
/// bound for a loaded machine, never reached when the daemon is up).
pub const SOURCE_HANDSHAKE_TIMEOUT_MS: u64 = 10_000;

/// One network source.
struct NetSource {
    fd: OwnedFd,
    channel: u32,
    datagram: bool,
    /// The socket's cumulative kernel drop count last read (`SO_RXQ_OVFL`, `SO_MEMINFO`).
    drops_seen: u32,
}

/// One timer source.
struct TimerSource {
    id: u32,
    timer: TimerFd,
    interval_ns: u64,
}

/// The sources added before the daemon runs.
#[derive(Default)]
pub(crate) struct SourceSet {
    nets: Vec<NetSource>,
    timers: Vec<TimerSource>,
}

/// Counters the source thread publishes as it goes (the daemon's `counters()` reads them).
#[derive(Debug, Default)]
pub(crate) struct SourceShared {
    pub(crate) net_datagrams: AtomicU64,
    pub(crate) net_kernel_drops: AtomicU64,
    pub(crate) net_unread_at_stop: AtomicU64,
    pub(crate) sources_ended: AtomicU64,
    pub(crate) timer_expirations: AtomicU64,
    /// The thread's id once it runs (0 before), for measuring it.
    pub(crate) tid: AtomicI32,
}

/// What the source thread did, as a producer: its counters and its rings' (the producer's side
/// of each ring's identity; the daemon reads the same rings' headers for its own side).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct SourceReport {
    /// `false` when the thread could not become a producer (its events were not delivered).
    pub connected: bool,
    pub producer: ProducerCounters,
    pub rings: RingCounters,
    /// Wake-ups of the thread: returns from its `poll`.
    pub wakeups: u64,
    /// The thread's id, for measuring it.
    pub tid: i32,
}

/// The running source thread and what stops it.
pub(crate) struct SourceThread {
    handle: JoinHandle<SourceReport>,
    stop: Arc<EventFd>,
    /// A duplicate of the thread's control connection, shut at the stop so that a handshake
    /// still waiting for the daemon ends too.
    control: OwnedFd,
}

impl SourceSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.nets.is_empty() && self.timers.is_empty()
    }

    /// Adds a network source (see [`crate::daemon::Daemon::add_net`]).
    pub(crate) fn add_net(&mut self, fd: OwnedFd, channel: u32) -> io::Result<()> {
        sys::set_nonblocking(fd.as_raw_fd(), true)?;
        let datagram = sys::is_datagram_socket(fd.as_raw_fd());
        if datagram {
            sys::enable_drop_count(fd.as_raw_fd())?;
        }
        self.nets.push(NetSource {
            fd,
            channel,
            datagram,
            drops_seen: 0,
        });
        Ok(())
    }

    /// Adds a timer source (see [`crate::daemon::Daemon::add_timer`]).
    pub(crate) fn add_timer(&mut self, id: u32, first_ns: u64, interval_ns: u64) -> io::Result<()> {
        let timer = TimerFd::new()?;
        timer.set_abs(first_ns, interval_ns)?;
        self.timers.push(TimerSource {
            id,
            timer,
            interval_ns,
        });
        Ok(())
    }

    /// The kinds these sources make.
    fn kinds(&self) -> u32 {
        let mut k = 0;
        if !self.nets.is_empty() {
            k |= 1 << EventKind::NetMessage.index();
        }
        if !self.timers.is_empty() {
            k |= 1 << EventKind::Timer.index();
        }
        k
    }

    /// Starts the thread: it connects to the daemon at `socket` (whose loop must then run to
    /// answer it) and produces until stopped.
    pub(crate) fn spawn(
        self,
        socket: &Path,
        shared: Arc<SourceShared>,
    ) -> io::Result<SourceThread> {
        let control = sys::seqpacket_connect(socket)?;
        sys::set_socket_timeouts(control.as_raw_fd(), SOURCE_HANDSHAKE_TIMEOUT_MS)?;
        let dup = control.try_clone()?;
        let stop = Arc::new(EventFd::new()?);
        let thread_stop = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("lulld-sources".into())
            .spawn(move || run(self, control, &thread_stop, &shared))?;
        Ok(SourceThread {
            handle,
            stop,
            control: dup,
        })
    }
}

impl SourceThread {
    /// Stops the thread and waits for it; it has then counted what was left unread.
    pub(crate) fn stop(self) -> SourceReport {
        let _ = self.stop.signal();
        sys::shutdown(self.control.as_raw_fd());
        self.handle.join().unwrap_or_default()
    }
}

/// Counts the drops since `net`'s last reading of its cumulative kernel drop count `total`
/// (32-bit in the kernel: the difference is taken wrapping).
fn note_drops(net: &mut NetSource, total: u32, shared: &SourceShared) {
    let new = total.wrapping_sub(net.drops_seen);
    net.drops_seen = total;
    shared
        .net_kernel_drops
        .fetch_add(u64::from(new), Ordering::Relaxed);
}

/// The thread's body.
fn run(
    mut set: SourceSet,
    control: OwnedFd,
    stop: &EventFd,
    shared: &SourceShared,
) -> SourceReport {
    let mut report = SourceReport {
        tid: sys::gettid(),
        ..SourceReport::default()
    };
    shared.tid.store(report.tid, Ordering::Release);
    let kinds = set.kinds();
    let control_fd = control.as_raw_fd();
    let producer = Producer::handshake(control, kinds).and_then(|p| {
        // Route messages are read only when the generation says one is there.
        sys::set_socket_timeouts(control_fd, 0)?;
        Ok(p)
    });
    let mut buf = vec![0u8; NET_BUF_BYTES];
    if let Ok(mut producer) = producer {
        report.connected = true;
        produce(&mut set, &mut producer, stop, shared, &mut buf, &mut report);
        producer.flush();
        report.producer = producer.counters();
        report.rings = producer.ring_counters();
    }
    settle(&mut set, shared, &mut buf);
    report
}

/// Polls the sources, the control connection and the stop until the stop or the daemon's end.
fn produce(
    set: &mut SourceSet,
    producer: &mut Producer,
    stop: &EventFd,
    shared: &SourceShared,
    buf: &mut [u8],
    report: &mut SourceReport,
) {
    let mut fds: Vec<RawFd> = Vec::new();
    let mut ready: Vec<bool> = Vec::new();
    loop {
        fds.clear();
        fds.push(stop.raw());
        fds.push(producer.control_fd());
        fds.extend(set.nets.iter().map(|n| n.fd.as_raw_fd()));
        fds.extend(set.timers.iter().map(|t| t.timer.raw()));
        ready.clear();
        ready.resize(fds.len(), false);
        if sys::poll_readable(&fds, None, &mut ready).is_err() {
            return;
        }
        report.wakeups += 1;
        if ready[0] {
            return;
        }
        if ready[1] && producer.poll_routes().is_err() {
            // The daemon went away (or broke the protocol): nothing can be delivered.
            return;
        }
        let nets = set.nets.len();
        let mut ended = Vec::new();
        for (i, net) in set.nets.iter_mut().enumerate() {
            if ready[2 + i] && !read_net(net, producer, shared, buf) {
                ended.push(i);
            }
        }
        let mut done = Vec::new();
        for (i, t) in set.timers.iter().enumerate() {
            if !ready[2 + nets + i] {
                continue;
            }
            let n = t.timer.take_expirations().unwrap_or(0);
            shared.timer_expirations.fetch_add(n, Ordering::Relaxed);
            for _ in 0..n {
                if producer
                    .push(RawEvent::Timer { id: t.id }, sys::monotonic_ns())
                    .is_err()
                {
                    return;
                }
            }
            if t.interval_ns == 0 && n > 0 {
                done.push(i);
            }
        }
        for i in ended.into_iter().rev() {
            set.nets.remove(i);
            shared.sources_ended.fetch_add(1, Ordering::Relaxed);
        }
        for i in done.into_iter().rev() {
            set.timers.remove(i);
        }
    }
}

/// Reads up to [`MAX_MESSAGES_PER_TURN`] datagrams (or stream reads) from `net` and pushes each
/// as a `NetMessage`; `false` when the source ended (a stream's end, an error).
fn read_net(
    net: &mut NetSource,
    producer: &mut Producer,
    shared: &SourceShared,
    buf: &mut [u8],
) -> bool {
    let raw = net.fd.as_raw_fd();
    // A burst is read over several turns, so the other sources are served between its parts.
    for _ in 0..MAX_MESSAGES_PER_TURN {
        let got = if net.datagram {
            sys::recv_counting_drops(raw, buf)
        } else {
            sys::read(raw, buf).map(|n| (n, None))
        };
        match got {
            Ok((0, _)) if !net.datagram => return false,
            Ok((n, drops)) => {
                if net.datagram {
                    shared.net_datagrams.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(total) = drops {
                    note_drops(net, total, shared);
                }
                let len = u32::try_from(n).unwrap_or(u32::MAX);
                let raw_event = RawEvent::Net {
                    channel: net.channel,
                    len,
                };
                // An error here is the daemon's end; the poll loop sees it on the control fd.
                let _ = producer.push(raw_event, sys::monotonic_ns());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
    true
}

/// At the stop, every datagram offered to a network source is accounted for: those still unread
/// are counted (`net_unread_at_stop`), and the drops no later datagram reported are read with
/// `SO_MEMINFO`.
fn settle(set: &mut SourceSet, shared: &SourceShared, buf: &mut [u8]) {
    for net in set.nets.iter_mut().filter(|n| n.datagram) {
        let fd = net.fd.as_raw_fd();
        while let Ok((_, drops)) = sys::recv_counting_drops(fd, buf) {
            shared.net_unread_at_stop.fetch_add(1, Ordering::Relaxed);
            if let Some(total) = drops {
                note_drops(net, total, shared);
            }
        }
        if let Ok(total) = sys::socket_drop_count(fd) {
            note_drops(net, total, shared);
        }
    }
}
