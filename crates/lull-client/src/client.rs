//! The client library: `esm_register(kind, handler)` and `esm_wait()` for Rust applications
//! (the C ABI in [`crate::capi`] wraps this).
//!
//! The ESM lives in `lulld`, so a handler is a closure the library keeps under a [`HandlerId`];
//! the daemon only sees the number. [`EsmClient::wait`] runs the next delivery of the batch the
//! daemon last pushed; when none is left it tells the daemon the app is ready — in the wait cell
//! the daemon shared at the welcome, with no system call, or with a `Wait` message when its
//! private queue holds something (see `lull_os::wait_cell`) — then blocks in `recv` (in the
//! kernel, no timeout) until the daemon pushes the next batch, and runs the handler on the
//! calling thread. Events from the data plane wake the same wait: a producer's ring
//! (`lull_os::event_ring`) and an input device's descriptor the daemon handed the app
//! ([`crate::device`]), each read without the daemon.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What one [`EsmClient::wait_delivery`] received: the ESM's own delivery, as the daemon pushed
/// it (or a ring or device produced it).
pub use lull_esm::Delivery;
use lull_model::{AppEvent, AppId, EventKind, EventSeq, HandlerId};
use lull_os::event_ring::RingConsumer;

use crate::device::{DeviceRead, DeviceReader};
use lull_esm::protocol::{
    ClientMsg, DaemonMsg, DaemonPacket, ErrorCode, ProtocolError, StatsReply, MAX_MESSAGE,
    MAX_PACKET,
};
use lull_os::event_ring::delivery_of_record;
use lull_os::sys;
use lull_os::wait_cell::WaitCell;

/// What to do about a failed connect: a socket that refuses this user is not a missing daemon.
fn connect_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            " (a permission problem, not a missing daemon: the socket belongs to the daemon's \
             user and group, root:input mode 0660 as packaging/systemd/lulld.socket makes it; \
             run as a member of that group (usermod -aG input USER, then log in again), or as \
             root)"
        }
        _ => " (is lulld running? start it, or pass the socket it listens on)",
    }
}

/// Errors of the client library.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "cannot connect to the ESM daemon at {path}: {source}{}",
        connect_hint(source)
    )]
    Connect { path: PathBuf, source: io::Error },
    #[error("the ESM daemon at {path} did not answer within {timeout_ms} ms (it may be out of file descriptors, stopped or hung)")]
    ConnectTimeout { path: PathBuf, timeout_ms: u64 },
    #[error("the ESM daemon closed the connection (it stopped or crashed)")]
    DaemonGone,
    #[error("the ESM daemon rejected this client: {0}")]
    Rejected(ErrorCode),
    #[error("the ESM daemon sent a malformed message: {0}")]
    Protocol(#[from] ProtocolError),
    #[error("the ESM daemon sent {0} where {1} was expected")]
    Unexpected(&'static str, &'static str),
    #[error("the ESM daemon's welcome carried no usable wait cell: {0}")]
    NoWaitCell(String),
    #[error("socket error talking to the ESM daemon: {0}")]
    Io(#[from] io::Error),
}

/// What one [`EsmClient::wait`] ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Handled {
    Event {
        kind: EventKind,
        seq: EventSeq,
        handler: HandlerId,
    },
    /// The overflow marker: `dropped` events (`first..=last`) were lost because the app's private
    /// queue was full.
    Overflow {
        dropped: u64,
        first: EventSeq,
        last: EventSeq,
    },
}

/// A greeted ESM connection without handlers (see [`EsmClient::into_parts`]).
#[derive(Debug)]
pub struct EsmParts {
    fd: OwnedFd,
    app: AppId,
    queue_bound: u32,
    cell: WaitCell,
    pending: VecDeque<Delivery>,
    counters: ClientCounters,
    rings: Vec<RingConsumer>,
    devices: Vec<DeviceReader>,
    by_kind: Arc<KindHandlers>,
    told_waiting: bool,
}

/// Which handler each kind runs, for events read from a ring or a device (which carry no
/// handler). Shared, so that a registration made on another thread — through the display
/// server's channel (`crate::kds_runtime`) — is in place before the daemon routes the kind to
/// the thread that waits.
#[derive(Debug, Default)]
pub struct KindHandlers([AtomicU64; EventKind::COUNT]);

impl KindHandlers {
    /// Sets (or clears) the handler of `kind`.
    pub fn set(&self, kind: EventKind, handler: Option<HandlerId>) {
        // 0 is none; a handler is stored plus one.
        let v = handler.map_or(0, |h| u64::from(h.0) + 1);
        self.0[kind.index()].store(v, Ordering::SeqCst);
    }

    /// The handler of `kind`, if any.
    #[must_use]
    pub fn get(&self, kind: EventKind) -> Option<HandlerId> {
        match self.0[kind.index()].load(Ordering::SeqCst) {
            0 => None,
            v => u32::try_from(v - 1).ok().map(HandlerId),
        }
    }

    /// Every kind's handler now.
    #[must_use]
    pub fn snapshot(&self) -> [Option<HandlerId>; EventKind::COUNT] {
        EventKind::ALL.map(|k| self.get(k))
    }
}

/// What the client saw.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ClientCounters {
    pub events: u64,
    pub overflow_markers: u64,
    /// Sum of the `dropped` of every overflow marker.
    pub dropped_reported: u64,
    /// Events naming a handler this client never registered (cannot happen with a correct
    /// daemon; counted rather than trusted).
    pub unknown_handler: u64,
    /// Batches received (one per wait that blocked).
    pub batches: u64,
    /// Waits told with a `Wait` message (the private queue held something) …
    pub waits_by_message: u64,
    /// … and waits told in the wait cell only.
    pub waits_by_cell: u64,
    /// Rings the daemon handed over (one per producer routed to this app), and those refused
    /// because their descriptors were not a sealed ring and an eventfd.
    pub rings: u64,
    pub rings_refused: u64,
    /// Records popped from the rings: events and overflow markers …
    pub ring_records: u64,
    /// … of which records that were not a valid event (counted, skipped).
    pub ring_malformed: u64,
    /// Events of a kind this app holds no handler for (it unregistered while they were queued).
    pub ring_unrouted: u64,
    /// Blocking waits that a ring's eventfd ended.
    pub ring_wakes: u64,
    /// Input device descriptors the daemon handed over, and those refused (not an evdev
    /// descriptor and an account page).
    pub devices: u64,
    pub devices_refused: u64,
    /// Device descriptors that ended (revoked by the daemon, or the device gone).
    pub devices_ended: u64,
    /// Events interpreted from device descriptors, of which those of a kind with no handler
    /// (filtered), and `SYN_DROPPED`s delivered as overflow markers.
    pub device_events: u64,
    pub device_filtered: u64,
    pub device_overflows: u64,
    /// `read`s of device descriptors, and blocking waits a device's descriptor ended.
    pub device_reads: u64,
    pub device_wakes: u64,
}

type Handler = Box<dyn FnMut(&AppEvent)>;
type OverflowHandler = Box<dyn FnMut(u64, EventSeq, EventSeq)>;

/// A connection to `lulld`: one application.
pub struct EsmClient {
    fd: OwnedFd,
    app: AppId,
    queue_bound: u32,
    cell: WaitCell,
    /// The rest of the last batch, run by the next waits without a system call.
    pending: VecDeque<Delivery>,
    handlers: Vec<Handler>,
    on_overflow: Option<OverflowHandler>,
    buf: Vec<u8>,
    counters: ClientCounters,
    /// The data plane: one ring per producer routed to this app, read before the socket.
    rings: Vec<RingConsumer>,
    /// The data plane: the input devices the daemon handed this app, read before the socket.
    devices: Vec<DeviceReader>,
    /// Per ring: its eventfd woke the last block and is drained before the next.
    woken: Vec<bool>,
    /// Which handler each kind runs, for events read from a ring or a device.
    by_kind: Arc<KindHandlers>,
    /// The daemon was told this app waits and has not answered with a batch yet.
    told_waiting: bool,
}

impl std::fmt::Debug for EsmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EsmClient({}, {} handlers)",
            self.app,
            self.handlers.len()
        )
    }
}

/// How long [`EsmClient::connect`] waits for the daemon to take the connection and greet it.
/// `lulld` answers within one turn of its loop (microseconds); a daemon that has not in five
/// seconds is out of descriptors or stuck, and the user is better told so than left waiting.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;

impl EsmClient {
    /// Connects to the daemon listening at `path` and becomes an application, waiting at most
    /// [`CONNECT_TIMEOUT_MS`] for its welcome.
    ///
    /// # Errors
    /// [`ClientError::Connect`] when nothing listens there, [`ClientError::ConnectTimeout`] when
    /// the daemon does not answer in time; others when the greeting is wrong.
    pub fn connect(path: &Path) -> Result<EsmClient, ClientError> {
        EsmClient::connect_timeout(path, CONNECT_TIMEOUT_MS)
    }

    /// As [`EsmClient::connect`], waiting at most `timeout_ms` (more than 0).
    ///
    /// # Errors
    /// As [`EsmClient::connect`].
    pub fn connect_timeout(path: &Path, timeout_ms: u64) -> Result<EsmClient, ClientError> {
        let timed_out = || ClientError::ConnectTimeout {
            path: path.to_owned(),
            timeout_ms,
        };
        let fd = match sys::seqpacket_connect_timeout(path, timeout_ms.max(1)) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(timed_out()),
            Err(source) => {
                return Err(ClientError::Connect {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        let client = match EsmClient::from_fd(fd) {
            Err(ClientError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(timed_out())
            }
            other => other?,
        };
        // Greeted: from now on the app blocks in `recv` for as long as it has nothing to do.
        sys::set_socket_timeouts(client.fd.as_raw_fd(), 0)?;
        Ok(client)
    }

    /// Becomes an application over an already connected `SOCK_SEQPACKET` descriptor (the one the
    /// display server hands an app's event thread at `ATTACH`); reads the daemon's greeting.
    ///
    /// # Errors
    /// As [`EsmClient::connect`], without the connect step.
    pub fn from_fd(fd: OwnedFd) -> Result<EsmClient, ClientError> {
        let mut buf = [0u8; MAX_MESSAGE];
        let (n, fds) = match sys::recv_with_fds(fd.as_raw_fd(), &mut buf) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Err(ClientError::DaemonGone)
            }
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Err(ClientError::DaemonGone);
        }
        let (app, queue_bound) = match DaemonMsg::decode(&buf[..n])? {
            DaemonMsg::Welcome { app, queue_bound } => (app, queue_bound),
            DaemonMsg::Error(code) => return Err(ClientError::Rejected(code)),
            other => return Err(ClientError::Unexpected(name(&other), "Welcome")),
        };
        let mut fds = fds.into_iter();
        let cell = match (fds.next(), fds.next()) {
            (Some(cell_fd), None) => {
                WaitCell::open(cell_fd).map_err(|e| ClientError::NoWaitCell(e.to_string()))?
            }
            (None, _) => return Err(ClientError::NoWaitCell("none passed".into())),
            (Some(_), Some(_)) => {
                return Err(ClientError::NoWaitCell("more than one descriptor".into()))
            }
        };
        Ok(EsmClient {
            fd,
            app,
            queue_bound,
            cell,
            pending: VecDeque::new(),
            handlers: Vec::new(),
            on_overflow: None,
            buf: Vec::with_capacity(MAX_MESSAGE),
            counters: ClientCounters::default(),
            rings: Vec::new(),
            devices: Vec::new(),
            woken: Vec::new(),
            by_kind: Arc::default(),
            told_waiting: false,
        })
    }

    /// Connects to the default socket (`$XDG_RUNTIME_DIR/lull/esm.sock` or `/run/lull/esm.sock`).
    ///
    /// # Errors
    /// As [`EsmClient::connect`].
    pub fn connect_default() -> Result<EsmClient, ClientError> {
        EsmClient::connect(&sys::default_socket_path())
    }

    /// The connection without its handlers, to move to another thread (handlers need not be
    /// `Send`, so a client holding them cannot move).
    #[must_use]
    pub fn into_parts(self) -> EsmParts {
        EsmParts {
            fd: self.fd,
            app: self.app,
            queue_bound: self.queue_bound,
            cell: self.cell,
            pending: self.pending,
            counters: self.counters,
            rings: self.rings,
            devices: self.devices,
            by_kind: self.by_kind,
            told_waiting: self.told_waiting,
        }
    }

    /// A client again from [`EsmClient::into_parts`], with no handlers.
    #[must_use]
    pub fn from_parts(parts: EsmParts) -> EsmClient {
        EsmClient {
            fd: parts.fd,
            app: parts.app,
            queue_bound: parts.queue_bound,
            cell: parts.cell,
            pending: parts.pending,
            handlers: Vec::new(),
            on_overflow: None,
            buf: Vec::with_capacity(MAX_MESSAGE),
            counters: parts.counters,
            woken: vec![false; parts.rings.len()],
            rings: parts.rings,
            devices: parts.devices,
            by_kind: parts.by_kind,
            told_waiting: parts.told_waiting,
        }
    }

    /// The id the daemon gave this application.
    #[must_use]
    pub fn app(&self) -> AppId {
        self.app
    }

    /// The bound of this app's private queue in the daemon.
    #[must_use]
    pub fn queue_bound(&self) -> u32 {
        self.queue_bound
    }

    #[must_use]
    pub fn counters(&self) -> ClientCounters {
        self.counters
    }

    fn send(&mut self, msg: ClientMsg) -> Result<(), ClientError> {
        msg.encode(&mut self.buf);
        match sys::send_msg(self.fd.as_raw_fd(), &self.buf) {
            Ok(()) => Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                Err(ClientError::DaemonGone)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Receives one message. A batch here answers a wait told before a ring event ended it: its
    /// deliveries are kept for the next waits. Any other batch is a protocol fault (none is
    /// pushed while not waiting).
    fn recv(&mut self) -> Result<DaemonMsg, ClientError> {
        loop {
            let Some(packet) = self.recv_packet()? else {
                continue;
            };
            match packet {
                DaemonPacket::Msg(m) => return Ok(m),
                DaemonPacket::Batch { .. } if self.told_waiting => {
                    self.told_waiting = false;
                    self.counters.batches += 1;
                }
                DaemonPacket::Batch { .. } => {
                    return Err(ClientError::Unexpected("Batch", "a reply"))
                }
            }
        }
    }

    /// Receives one packet; a batch's deliveries go to `pending`, a ring (with its two
    /// descriptors) to `rings` (and then `None`: the caller decides whether to block again).
    fn recv_packet(&mut self) -> Result<Option<DaemonPacket>, ClientError> {
        {
            // One byte more than the longest packet, so a longer one is seen, not cut.
            let mut buf = [0u8; MAX_PACKET + 1];
            let (n, fds) = match sys::recv_with_fds(self.fd.as_raw_fd(), &mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return Err(ClientError::DaemonGone)
                }
                Err(e) => return Err(e.into()),
            };
            if n == 0 && fds.is_empty() {
                return Err(ClientError::DaemonGone);
            }
            if n > MAX_PACKET {
                return Err(ProtocolError::TooLong.into());
            }
            match DaemonPacket::decode(&buf[..n], &mut self.pending)? {
                DaemonPacket::Msg(DaemonMsg::Error(code)) => Err(ClientError::Rejected(code)),
                DaemonPacket::Msg(DaemonMsg::Ring { .. }) => {
                    self.take_ring(fds);
                    Ok(None)
                }
                DaemonPacket::Msg(DaemonMsg::Device { device }) => {
                    match DeviceReader::from_fds(device, fds) {
                        Ok(d) => {
                            self.devices.push(d);
                            self.counters.devices += 1;
                        }
                        Err(_) => self.counters.devices_refused += 1,
                    }
                    Ok(None)
                }
                p => Ok(Some(p)),
            }
        }
    }

    /// Opens a ring the daemon sent; descriptors that are not one are closed and counted.
    fn take_ring(&mut self, fds: Vec<OwnedFd>) {
        let mut fds = fds.into_iter();
        let opened = match (fds.next(), fds.next(), fds.next()) {
            (Some(memfd), Some(eventfd), None) => RingConsumer::from_fds(memfd, eventfd).ok(),
            _ => None,
        };
        match opened {
            Some(r) => {
                self.rings.push(r);
                self.woken.push(false);
                self.counters.rings += 1;
            }
            None => self.counters.rings_refused += 1,
        }
    }

    /// The next record of any ring, as a delivery (rings are read in turn, oldest first within
    /// each).
    fn pop_ring(&mut self) -> Option<Delivery> {
        for i in 0..self.rings.len() {
            while let Some(rec) = self.rings[i].pop() {
                self.counters.ring_records += 1;
                let handler =
                    lull_model::EventKind::from_u16(rec.kind).and_then(|k| self.by_kind.get(k));
                let handler = match handler {
                    Some(h) => h,
                    None if rec.overflow().is_some() => HandlerId(0),
                    None => {
                        self.counters.ring_unrouted += 1;
                        continue;
                    }
                };
                match delivery_of_record(&rec, handler) {
                    Ok(d) => return Some(d),
                    Err(_) => self.counters.ring_malformed += 1,
                }
            }
        }
        None
    }

    /// Reads every device descriptor the last poll found ready into `pending`; drops those that
    /// ended (revoked, or the device gone). Returns whether anything was read.
    fn read_devices(&mut self) -> bool {
        let mut any = false;
        let by_kind = self.by_kind.snapshot();
        let mut i = 0;
        while i < self.devices.len() {
            if !self.devices[i].readable {
                i += 1;
                continue;
            }
            self.counters.device_reads += 1;
            let before = self.devices[i].counts();
            let r = self.devices[i].read(&by_kind, &mut self.pending);
            let after = self.devices[i].counts();
            self.counters.device_events += after.events - before.events;
            self.counters.device_filtered += after.filtered - before.filtered;
            self.counters.device_overflows += after.overflows - before.overflows;
            match r {
                DeviceRead::Data { .. } => {
                    any = true;
                    i += 1;
                }
                DeviceRead::Empty => i += 1,
                DeviceRead::Gone => {
                    // Expected after a revocation: the descriptor closes, no handler hears of it.
                    self.devices.swap_remove(i);
                    self.counters.devices_ended += 1;
                }
            }
        }
        any
    }

    /// Blocks until the socket, a ring's eventfd or a device's descriptor is readable, every ring
    /// armed first; returns at once when a ring filled meanwhile.
    fn block(&mut self) -> Result<(), ClientError> {
        // The wake-ups of the last block are drained here, not when it woke, so the handler of
        // the event that woke it runs one system call sooner. Draining before arming is safe: a
        // producer writes the eventfd only after `prepare_wait` armed it again.
        for (r, woke) in self.rings.iter().zip(&mut self.woken) {
            if std::mem::take(woke) {
                let _ = r.drain_wake();
            }
        }
        if !self.rings.iter_mut().all(RingConsumer::prepare_wait) {
            return Ok(());
        }
        let fds: Vec<_> = std::iter::once(self.fd.as_raw_fd())
            .chain(self.rings.iter().map(RingConsumer::wake_fd))
            .chain(self.devices.iter().map(DeviceReader::fd))
            .collect();
        let mut ready = vec![false; fds.len()];
        sys::poll_readable(&fds, None, &mut ready)?;
        let rings = self.rings.len();
        for (slot, &woke) in self.woken.iter_mut().zip(&ready[1..=rings]) {
            if woke {
                self.counters.ring_wakes += 1;
                *slot = true;
            }
        }
        for (d, &woke) in self.devices.iter_mut().zip(&ready[1 + rings..]) {
            if woke {
                // Readable, or hung up (revoked): the next read says which.
                self.counters.device_wakes += 1;
                d.readable = true;
            }
        }
        if ready[0] {
            match self.recv_packet()? {
                None => {}
                Some(DaemonPacket::Batch { .. }) => {
                    self.told_waiting = false;
                    self.counters.batches += 1;
                }
                Some(DaemonPacket::Msg(other)) => {
                    return Err(ClientError::Unexpected(name(&other), "a batch"))
                }
            }
        }
        Ok(())
    }

    /// The seed's `esm_register(kind, handler)`: `handler` runs, on the thread that calls
    /// [`EsmClient::wait`], for every event of `kind`. Replaces an earlier handler for `kind`.
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] or a socket error.
    pub fn register(
        &mut self,
        kind: EventKind,
        handler: impl FnMut(&AppEvent) + 'static,
    ) -> Result<HandlerId, ClientError> {
        let id = HandlerId(u32::try_from(self.handlers.len()).unwrap_or(u32::MAX));
        self.handlers.push(Box::new(handler));
        self.by_kind.set(kind, Some(id));
        self.register_with_daemon(kind, Some(id))?;
        Ok(id)
    }

    /// The seed's `esm_register(kind, NULL)`: stop receiving `kind`.
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] or a socket error.
    pub fn unregister(&mut self, kind: EventKind) -> Result<(), ClientError> {
        self.by_kind.set(kind, None);
        self.register_with_daemon(kind, None)
    }

    /// Sends a registration and waits for the daemon's `Registered`, so that when this returns
    /// every event injected afterwards is delivered (no race with an event already on its way).
    fn register_with_daemon(
        &mut self,
        kind: EventKind,
        handler: Option<HandlerId>,
    ) -> Result<(), ClientError> {
        self.send(ClientMsg::Register { kind, handler })?;
        match self.recv()? {
            DaemonMsg::Registered => Ok(()),
            other => Err(ClientError::Unexpected(name(&other), "Registered")),
        }
    }

    /// Sets what runs when an overflow marker arrives: `(dropped, first, last)`.
    pub fn on_overflow(&mut self, f: impl FnMut(u64, EventSeq, EventSeq) + 'static) {
        self.on_overflow = Some(Box::new(f));
    }

    /// The seed's `esm_wait()`: blocks in the kernel until the daemon pushes the next event (or
    /// overflow marker), runs its handler, and returns what ran.
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] when the daemon went away; others for protocol faults.
    pub fn wait(&mut self) -> Result<Handled, ClientError> {
        match self.wait_delivery()? {
            Delivery::Event { handler, event } => {
                match self.handlers.get_mut(handler.0 as usize) {
                    Some(h) => h(&event),
                    None => self.counters.unknown_handler += 1,
                }
                Ok(Handled::Event {
                    kind: event.kind,
                    seq: event.seq,
                    handler,
                })
            }
            Delivery::Overflow {
                dropped,
                first,
                last,
            } => {
                if let Some(f) = self.on_overflow.as_mut() {
                    f(dropped, first, last);
                }
                Ok(Handled::Overflow {
                    dropped,
                    first,
                    last,
                })
            }
        }
    }

    /// `esm_wait()` without running a handler: for a caller that keeps its own handler table
    /// (the KDS runtime, whose handlers are registered through the display server).
    ///
    /// # Errors
    /// As [`EsmClient::wait`].
    pub fn wait_delivery(&mut self) -> Result<Delivery, ClientError> {
        let next = loop {
            if let Some(d) = self.pending.pop_front() {
                break d;
            }
            if let Some(d) = self.pop_ring() {
                // Woken by a ring, not by the daemon: the cell must stop saying it waits, or guiS
                // would take a running app for an idle one.
                if self.told_waiting && self.cell.app_resumed() {
                    self.told_waiting = false;
                }
                break d;
            }
            if self.read_devices() {
                continue;
            }
            // Nothing here: tell the daemon (once per batch it owes) and block on the socket
            // and every ring.
            if !self.told_waiting {
                if self.cell.app_going_to_wait() {
                    self.counters.waits_by_message += 1;
                    self.send(ClientMsg::Wait)?;
                } else {
                    self.counters.waits_by_cell += 1;
                }
                self.told_waiting = true;
            }
            self.block()?;
        };
        match next {
            Delivery::Event { .. } => self.counters.events += 1,
            Delivery::Overflow { dropped, .. } => {
                self.counters.overflow_markers += 1;
                self.counters.dropped_reported += dropped;
            }
        }
        Ok(next)
    }

    /// Asks the daemon for its counters. Call it only between waits (the daemon pushes nothing
    /// to an app that is not waiting, so the reply is the next message).
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] or a protocol fault.
    pub fn stats(&mut self) -> Result<StatsReply, ClientError> {
        self.send(ClientMsg::Stats)?;
        match self.recv()? {
            DaemonMsg::Stats(s) => Ok(s),
            other => Err(ClientError::Unexpected(name(&other), "Stats")),
        }
    }

    /// The table of which handler each kind runs, for a caller that registers through the
    /// display server on another thread (`crate::kds_runtime`): it sets a kind's handler here
    /// before asking, so events the daemon then routes here find it.
    #[must_use]
    pub fn kind_handlers(&self) -> Arc<KindHandlers> {
        Arc::clone(&self.by_kind)
    }

    /// What each input device descriptor this app holds has delivered (device number, counts).
    #[must_use]
    pub fn device_counts(&self) -> Vec<(u32, lull_os::device_account::DeviceCounts)> {
        self.devices
            .iter()
            .map(|d| (d.device, d.counts()))
            .collect()
    }

    /// The connection's descriptor (for tests that misbehave on purpose).
    #[doc(hidden)]
    #[must_use]
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

fn name(m: &DaemonMsg) -> &'static str {
    match m {
        DaemonMsg::Welcome { .. } => "Welcome",
        DaemonMsg::Event { .. } => "Event",
        DaemonMsg::Overflow { .. } => "Overflow",
        DaemonMsg::Stats(_) => "Stats",
        DaemonMsg::Error(_) => "Error",
        DaemonMsg::Registered => "Registered",
        DaemonMsg::Ring { .. } => "Ring",
        DaemonMsg::Route { .. } => "Route",
        DaemonMsg::Device { .. } => "Device",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_permission_is_not_blamed_on_a_missing_daemon() {
        let err = |kind| ClientError::Connect {
            path: PathBuf::from("/run/lull/esm.sock"),
            source: io::Error::from(kind),
        };
        let denied = err(io::ErrorKind::PermissionDenied);
        let text = denied.to_string();
        assert!(text.contains("a permission problem"), "{text}");
        assert!(!text.contains("is lulld running"), "{text}");
        let missing = err(io::ErrorKind::NotFound);
        assert!(
            missing.to_string().contains("is lulld running"),
            "{missing}"
        );
    }

    #[test]
    fn a_rejection_is_said_in_words() {
        let text = ClientError::Rejected(ErrorCode::NotReading).to_string();
        assert!(text.ends_with("did not read its socket, so the daemon could not write to it"));
    }
}
