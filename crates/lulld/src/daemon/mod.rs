//! `lulld`: the ESM daemon. One event loop, blocked in `epoll_wait(-1)`, hosting
//! [`lull_esm::Esm`]; clients connect over a `SOCK_SEQPACKET` Unix socket.
//!
//! Each connection is one application: it is attached to the ESM when it connects and removed —
//! registrations and private queue with it — when its socket closes for any reason (exit, crash,
//! protocol error). Event sources in the loop (evdev, replay) inject into the ESM;
//! the deliveries a source produced go out when it returns, one `Batch` packet per app holding
//! what was pushed to it and what its private queue held (up to `MAX_BATCH`), so one wait covers
//! them. An app has at most one batch in flight — it must wait again before the next — so the
//! daemon never blocks on a write; an app whose socket is nevertheless full is not reading and is
//! dropped (counted).
//!
//! **Waits without wake-ups.** Each app shares a [`WaitCell`] with the daemon. After a batch the
//! app marks itself waiting in the cell and blocks; the daemon reads the cell when it next has
//! something for the app (before dispatching an event, and after queueing one), so a delivered
//! event costs the daemon one wake-up, not two. A `Wait` message is still sent, and served at
//! once, when the app's private queue holds something, or when a policy needs every wait as it
//! happens (interactive boosting's end of a handler, guiS's idle action): then the daemon sets
//! the cell's report-waits flag.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use lull_esm::protocol::{
    encode_batch, ClientMsg, DaemonMsg, ErrorCode, StatsReply, MAX_BATCH, MAX_MESSAGE, MAX_PACKET,
};
use lull_esm::{AccountingError, AppState, Delivery, Esm, EsmConfig, EsmError, Push};
use lull_model::{AppId, RawEvent};
use lull_os::evdev::EvdevSource;
use lull_os::event_loop::{EventLoop, FnSource, LoopCtl, PostAction, Source, Token};
use lull_os::sys::{self, EventFd, TimerFd};
use lull_os::wait_cell::WaitCell;
use lull_workload::Trace;

use crate::kds::{KdsConfig, KdsHost, KdsReport};
use crate::replay::{ReplayCounters, ReplaySource};
use crate::routes::Routes;
pub use crate::routes::{RingRoute, RING_CAPACITY};
use crate::sources::{SourceReport, SourceSet, SourceShared};

mod devices;
mod guis;
mod kds;
mod policy;
mod routes;
mod seam;

/// The daemon's own counters (the ESM's are in [`lull_esm::EsmCounters`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct DaemonCounters {
    pub connections: u64,
    pub disconnections: u64,
    /// Connections closed because they sent a message the parser rejected.
    pub malformed_rejected: u64,
    /// Connections closed because their socket was full (the app was not reading).
    pub not_reading_dropped: u64,
    /// Loop wake-ups (returns from `epoll_wait`).
    pub loop_wakeups: u64,
    /// Sources removed because their descriptor ended (device gone, writer closed).
    pub sources_ended: u64,
    /// Connections refused because no wait cell could be made (out of memory files).
    pub cell_failures: u64,
    /// `Batch` packets sent, and the deliveries (events and overflow markers) they carried.
    pub batches_sent: u64,
    pub deliveries_sent: u64,
    /// Waits the daemon learnt from an app's `Wait` message (each one a wake-up) …
    pub waits_by_message: u64,
    /// … and waits it read in the app's wait cell (no wake-up).
    pub waits_by_cell: u64,
    /// Times a listening socket stopped accepting because the daemon was out of descriptors
    /// (`EMFILE`/`ENFILE`); it is watched again when a connection closes or after
    /// [`LISTENER_RETRY_MS`].
    pub listener_pauses: u64,
    /// Datagrams the network source received (each one injected, an empty one too).
    pub net_datagrams: u64,
    /// Datagrams the kernel dropped on the network socket because its receive buffer was full
    /// (`SO_RXQ_OVFL`, and `SO_MEMINFO` at the stop for drops no later datagram reported):
    /// events that never reached the ESM, counted in the accounting identity.
    pub net_kernel_drops: u64,
    /// Datagrams the kernel had received but the daemon had not read when it stopped: lost
    /// before the ESM as the kernel's drops are, and counted with them.
    pub net_unread_at_stop: u64,
    /// Timer expirations the timer sources read (each one produced as a `Timer` event).
    pub timer_expirations: u64,
    /// Turns on an ESM connection that stopped after [`MAX_MESSAGES_PER_TURN`] messages, leaving
    /// any more for the next turn.
    pub turns_deferred: u64,
}

pub use crate::turn::MAX_MESSAGES_PER_TURN;

/// How long a listener out of descriptors stays paused when no connection of the daemon closes
/// meanwhile (descriptors can free elsewhere: another source ending, `ENFILE` easing): one
/// `accept` attempt per period costs nothing, and a client waits at most this long after
/// descriptors are back.
pub const LISTENER_RETRY_MS: u64 = 100;

/// Errors of setting up or running the daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot create the socket directory {path}: {source}")]
    SocketDir { path: PathBuf, source: io::Error },
    #[error("another daemon is listening at {0}")]
    AlreadyRunning(PathBuf),
    #[error("socket path {path} is {len_bytes} bytes; a Unix socket path holds at most {MAX_SOCKET_PATH_BYTES}")]
    SocketPathTooLong { path: PathBuf, len_bytes: usize },
    #[error("{path} exists and is {what}, not a socket; refusing to remove it (give the path of the socket file to create)")]
    NotASocket { path: PathBuf, what: &'static str },
    #[error("cannot tell whether something listens at {path}: {source}")]
    SocketProbe { path: PathBuf, source: io::Error },
    #[error("the ESM and the display server cannot share the socket {0}: give --kds-socket another path")]
    SocketShared(PathBuf),
    #[error("cannot listen on {path}: {source}")]
    Bind { path: PathBuf, source: io::Error },
    #[error("display server: {0}")]
    Kds(#[from] crate::kds::KdsSetupError),
    #[error("guiS: {0}")]
    Guis(#[from] crate::guis::GuisError),
    #[error("interactive boost: {0}")]
    Boost(#[from] lull_sched::boost::seam::BoostConfigError),
    #[error("UCSG: {0}")]
    Ucsg(#[from] crate::ucsg::UcsgConfigError),
    #[error("policy: {0}")]
    Policy(#[from] crate::policy::PolicyError),
    #[error("ESM configuration: {0}")]
    Esm(#[from] EsmError),
    #[error("event loop: {0}")]
    Io(#[from] io::Error),
}

/// How to start a daemon.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    pub socket_path: PathBuf,
    pub esm: EsmConfig,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            socket_path: sys::default_socket_path(),
            esm: EsmConfig::default(),
        }
    }
}

pub(crate) struct Conn {
    pub(crate) fd: OwnedFd,
    token: Token,
    pub(crate) cell: WaitCell,
}

/// Which source is closing an app: its own source is unregistered by returning `Remove`, every
/// other one through the loop's control.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Closer {
    /// The app's ESM connection source is running.
    EsmSource,
    /// The app's KDS private-channel source is running.
    KdsSource,
    /// Any other source.
    Other,
}

/// Everything the daemon's sources share.
pub struct DaemonState {
    pub(crate) esm: Esm,
    pub(crate) conns: HashMap<AppId, Conn>,
    pub(crate) buf: Vec<u8>,
    /// Deliveries made while a source runs, written when it returns ([`DaemonState::flush`]).
    outbox: Vec<Push>,
    /// Apps connected or sent a batch since they last waited: their next wait may come through
    /// their cell alone, so the daemon reads it there.
    pub(crate) watched: Vec<AppId>,
    /// An event was injected since the last flush (something may have been queued).
    injected: bool,
    /// Scratch for one app's batch.
    batch: Vec<Delivery>,
    /// Every app's wait must come as a message (see the module docs).
    report_waits: bool,
    pub(crate) counters: DaemonCounters,
    replays: Vec<ReplayCounters>,
    /// The display server, when enabled ([`Daemon::enable_kds`]).
    pub(crate) kds: Option<KdsHost>,
    /// guiS's idle forcing, when enabled ([`Daemon::enable_guis`]).
    pub(crate) guis: Option<crate::guis::GuisHost>,
    /// The policy seam and its actuator, while a policy runs (table 1, with guiS on).
    pub(crate) seam: Option<crate::seam::SeamHost>,
    /// Re-arms paused listeners after [`LISTENER_RETRY_MS`], and whether it is armed.
    listen_retry: TimerFd,
    listen_retry_armed: bool,
    /// A connection or source closed since the last flush: a descriptor is free again.
    pub(crate) fds_freed: bool,
    /// The counters of the network and timer sources' thread ([`crate::sources`]).
    sources_shared: Arc<SourceShared>,
    /// The data plane's routing table ([`crate::routes`]).
    pub(crate) routes: Routes,
    /// Input devices handed to the apps that hold input (`crate::devices`).
    pub(crate) devices: crate::devices::DeviceHost,
    /// The policy plug-ins and the knobs they write ([`crate::policy`]).
    pub(crate) policies: crate::policy::PolicyTable,
}

impl std::fmt::Debug for DaemonState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DaemonState({} apps, {:?})",
            self.conns.len(),
            self.counters
        )
    }
}

impl DaemonState {
    fn stats(&self) -> StatsReply {
        let waiting = self.esm.apps().filter(|&a| self.app_waiting(a)).count();
        let registrations: usize = lull_model::EventKind::ALL
            .iter()
            .map(|&k| self.esm.listeners(k))
            .sum();
        StatsReply {
            apps: self.conns.len() as u32,
            waiting: waiting as u32,
            registrations: registrations as u32,
            queued_events: self.esm.total_queued_events(),
            counters: self.esm.counters(),
        }
    }

    /// The ESM, for components hosted in the daemon's loop (the display server suspends and
    /// restores an app's input handlers through it).
    #[must_use]
    pub fn esm(&self) -> &Esm {
        &self.esm
    }

    /// Whether `app` waits for its next event: in `EV_WAIT`, or marked waiting in its cell.
    pub(crate) fn app_waiting(&self, app: AppId) -> bool {
        self.esm.state(app) == Ok(AppState::EvWait)
            || self.conns.get(&app).is_some_and(|c| c.cell.app_waiting())
    }

    /// Makes every app send each wait as a message (a policy needs to see waits as they happen),
    /// or lets them wait through their cell.
    pub(crate) fn set_report_waits(&mut self, on: bool) {
        self.report_waits = on;
        for c in self.conns.values() {
            c.cell.daemon_set_report_waits(on);
        }
    }

    /// Mutable access to the ESM (see [`DaemonState::esm`]). Injecting must go through
    /// [`DaemonState::inject`], which also delivers the pushes.
    pub fn esm_mut(&mut self) -> &mut Esm {
        &mut self.esm
    }

    /// The daemon's counters so far.
    #[must_use]
    pub fn counters(&self) -> DaemonCounters {
        let mut c = self.counters;
        let s = &self.sources_shared;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        c.net_datagrams += get(&s.net_datagrams);
        c.net_kernel_drops += get(&s.net_kernel_drops);
        c.net_unread_at_stop += get(&s.net_unread_at_stop);
        c.sources_ended += get(&s.sources_ended);
        c.timer_expirations += get(&s.timer_expirations);
        c
    }

    /// Sends `msg` to `app`; a full or broken socket drops the app.
    pub(crate) fn send(&mut self, app: AppId, msg: DaemonMsg, ctl: &mut LoopCtl<DaemonState>) {
        msg.encode(&mut self.buf);
        self.send_buf(app, ctl);
    }

    /// Sends the encoded `self.buf` to `app`; a full or broken socket drops the app.
    fn send_buf(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        let Some(conn) = self.conns.get(&app) else {
            return;
        };
        match sys::send_msg(conn.fd.as_raw_fd(), &self.buf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.counters.not_reading_dropped += 1;
                self.disconnect(app, Some(ctl), Closer::Other);
            }
            Err(_) => self.disconnect(app, Some(ctl), Closer::Other),
        }
    }

    /// Sends `app` the deliveries in `self.batch` (in packets of at most `MAX_BATCH`), after
    /// publishing what its private queue still holds, so that the app, once it has handled them,
    /// knows whether to wait silently or ask.
    fn send_batch(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        let mut batch = std::mem::take(&mut self.batch);
        for d in &batch {
            // Told before the packet goes, so what a policy asks of the event thread is in
            // place when it wakes.
            self.seam_input_pushed(&Push { app, delivery: *d });
        }
        let queued = self.esm.queued_items(app).unwrap_or(0);
        if let Some(conn) = self.conns.get(&app) {
            conn.cell.daemon_set_queued(queued);
            if !self.watched.contains(&app) {
                self.watched.push(app);
            }
        }
        for chunk in batch.chunks(MAX_BATCH) {
            if !self.conns.contains_key(&app) {
                break;
            }
            encode_batch(chunk, &mut self.buf);
            self.counters.batches_sent += 1;
            self.counters.deliveries_sent += chunk.len() as u64;
            self.send_buf(app, ctl);
        }
        batch.clear();
        self.batch = batch;
    }

    /// The app waited (by message or through its cell): hand it what its queue holds, or park
    /// it in `EV_WAIT`. The deliveries go to the outbox.
    fn app_waited(&mut self, app: AppId) {
        self.seam_wait(app);
        self.watched.retain(|&a| a != app);
        let mut batch = std::mem::take(&mut self.batch);
        if let Ok(n) = self.esm.wait_batch(app, MAX_BATCH, &mut batch) {
            self.outbox
                .extend(batch.drain(..n).map(|delivery| Push { app, delivery }));
        }
        batch.clear();
        self.batch = batch;
    }

    /// Claims `app`'s wait if its cell says it waits, and hands it what its queue holds (to the
    /// outbox) or parks it in `EV_WAIT`. The app leaves `watched`.
    fn claim_cell_wait(&mut self, app: AppId) -> bool {
        if !self.conns.get(&app).is_some_and(|c| c.cell.daemon_claim()) {
            return false;
        }
        self.counters.waits_by_cell += 1;
        self.app_waited(app);
        true
    }

    /// Claims the cell waits of watched apps (before an event is dispatched, so that a waiting
    /// app gets it pushed directly, as in `EV_WAIT`).
    fn claim_cell_waits(&mut self) {
        let mut i = 0;
        while i < self.watched.len() {
            // A claimed app leaves `watched`: the next one moves into slot `i`.
            if !self.claim_cell_wait(self.watched[i]) {
                i += 1;
            }
        }
    }

    /// Writes what the sources just produced: one batch per app with deliveries, topped up from
    /// its private queue. Then, if events were queued, tells every watched app how many and
    /// claims the waits of those already waiting (the other half of the cell's race).
    pub(crate) fn flush(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        if std::mem::take(&mut self.fds_freed) && ctl.paused() > 0 {
            ctl.resume_paused();
        }
        self.write_outbox(ctl);
        if !std::mem::take(&mut self.injected) {
            return;
        }
        let mut i = 0;
        while i < self.watched.len() {
            let app = self.watched[i];
            let queued = self.esm.queued_items(app).unwrap_or(0);
            if let Some(c) = self.conns.get(&app) {
                c.cell.daemon_set_queued(queued);
            }
            if queued > 0 && self.claim_cell_wait(app) {
                self.write_outbox(ctl);
            } else {
                i += 1;
            }
        }
    }

    /// Sends the outbox: one batch per app, topped up from its private queue.
    fn write_outbox(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        while !self.outbox.is_empty() {
            let app = self.outbox[0].app;
            let mut outbox = std::mem::take(&mut self.outbox);
            let mut batch = std::mem::take(&mut self.batch);
            outbox.retain(|p| {
                if p.app == app {
                    batch.push(p.delivery);
                    false
                } else {
                    true
                }
            });
            self.outbox = outbox;
            let room = MAX_BATCH.saturating_sub(batch.len());
            let _ = self.esm.take_queued(app, room, &mut batch);
            self.batch = batch;
            self.send_batch(app, ctl);
        }
    }

    /// Removes `app` everywhere: from the ESM, with its socket, and from the display server with
    /// its window and channel if it attached there. Sources other than `closer`'s own are
    /// unregistered through `ctl` (`None` only at shutdown).
    pub(crate) fn disconnect(
        &mut self,
        app: AppId,
        mut ctl: Option<&mut LoopCtl<DaemonState>>,
        closer: Closer,
    ) {
        if let Some(host) = self.kds.as_mut() {
            if let Some(token) = host.detach(app) {
                if closer != Closer::KdsSource {
                    if let Some(ctl) = ctl.as_deref_mut() {
                        ctl.remove(token);
                    }
                }
            }
        }
        if let Some(conn) = self.conns.remove(&app) {
            if closer != Closer::EsmSource {
                if let Some(ctl) = ctl.as_deref_mut() {
                    ctl.remove(conn.token);
                }
            }
            let _ = self.esm.remove_app(app);
            self.counters.disconnections += 1;
            self.fds_freed = true;
        }
        self.watched.retain(|&a| a != app);
        self.outbox.retain(|p| p.app != app);
        self.routes_gone(app, ctl.as_deref_mut());
        self.devices_app_gone(app);
        self.seam_app_gone(app);
        self.guis_app_gone(ctl);
    }

    /// Adds `fd` as the ESM connection of `app` (already in the ESM) and greets it.
    pub(crate) fn add_connection(
        &mut self,
        app: AppId,
        fd: OwnedFd,
        ctl: &mut LoopCtl<DaemonState>,
    ) {
        let cell = match WaitCell::create() {
            Ok(c) => c,
            Err(_) => {
                // Out of memory files: the app cannot be served without its cell.
                self.counters.cell_failures += 1;
                let _ = self.esm.remove_app(app);
                return;
            }
        };
        cell.daemon_set_report_waits(self.report_waits);
        let raw = fd.as_raw_fd();
        let token = ctl.insert(Box::new(FnSource {
            fd: raw,
            f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| st.serve(app, ctl),
        }));
        let bound = u32::try_from(self.esm.queue_bound()).unwrap_or(u32::MAX);
        DaemonMsg::Welcome {
            app,
            queue_bound: bound,
        }
        .encode(&mut self.buf);
        // The welcome carries the cell; a socket that cannot take it is closed at once.
        let welcomed = sys::send_with_fds(raw, &self.buf, &[cell.raw_fd()]).is_ok();
        self.conns.insert(app, Conn { fd, token, cell });
        // Its first wait, like every later one, may come through the cell.
        self.watched.push(app);
        self.counters.connections += 1;
        self.seam_app_connected(app);
        if !welcomed {
            self.disconnect(app, Some(ctl), Closer::Other);
        }
    }

    /// A listener's `accept` failed for want of descriptors (or any other lasting reason): it
    /// pauses — level-triggered, it would otherwise be called again at once and spin — until a
    /// connection closes ([`DaemonState::flush`]) or the retry timer expires.
    pub(crate) fn listener_out_of_fds(&mut self) -> PostAction {
        self.counters.listener_pauses += 1;
        if !self.listen_retry_armed {
            let at = sys::monotonic_ns().saturating_add(LISTENER_RETRY_MS * 1_000_000);
            // Without the timer, a closing connection still resumes the listener.
            self.listen_retry_armed = self.listen_retry.set_abs(at, 0).is_ok();
        }
        PostAction::Pause
    }

    /// The interrupt path: interpret and dispatch `raw` stamped `stamp_ns`, then write the pushes.
    /// The pushes are written when the running source returns (see [`DaemonState::flush`]).
    pub fn inject(&mut self, raw: RawEvent, stamp_ns: u64, _ctl: &mut LoopCtl<DaemonState>) {
        if !self.watched.is_empty() {
            self.claim_cell_waits();
        }
        let mut outbox = std::mem::take(&mut self.outbox);
        self.esm.inject(raw, stamp_ns, |p| outbox.push(p));
        self.outbox = outbox;
        self.injected = true;
    }

    fn handle(&mut self, app: AppId, msg: ClientMsg, ctl: &mut LoopCtl<DaemonState>) {
        match msg {
            ClientMsg::Register { kind, handler } => {
                if self.routes.is_producer(app) {
                    // A producer is no app: it has nothing to register.
                    self.reject(app, ctl);
                    return;
                }
                // The connection's app is attached for as long as the connection lives.
                let _ = self.esm.register(app, kind, handler);
                // Its rings first, so that when `Registered` arrives every producer has them.
                for p in self.routes.producer_ids() {
                    self.route(p, app, ctl);
                }
                self.devices_sync();
                self.send(app, DaemonMsg::Registered, ctl);
            }
            ClientMsg::Produce { kinds } => self.add_producer(app, kinds, ctl),
            ClientMsg::Wait => {
                self.counters.waits_by_message += 1;
                self.app_waited(app);
                self.guis_after_wait(app, ctl);
            }
            ClientMsg::Stats => {
                let s = self.stats();
                self.send(app, DaemonMsg::Stats(s), ctl);
            }
        }
    }

    /// Closes a connection that broke the protocol.
    pub(crate) fn reject(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        self.counters.malformed_rejected += 1;
        self.send(app, DaemonMsg::Error(ErrorCode::Malformed), ctl);
        self.disconnect(app, Some(ctl), Closer::Other);
    }

    /// Reads the pending messages of `app`, at most [`MAX_MESSAGES_PER_TURN`]; returns `Remove`
    /// when the connection is gone.
    fn serve(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) -> PostAction {
        let mut buf = [0u8; MAX_MESSAGE];
        for _ in 0..MAX_MESSAGES_PER_TURN {
            let Some(fd) = self.conns.get(&app).map(|c| c.fd.as_raw_fd()) else {
                return PostAction::Remove;
            };
            match sys::recv_msg(fd, &mut buf) {
                Ok((0, false)) => {
                    self.disconnect(app, Some(ctl), Closer::EsmSource);
                    return PostAction::Remove;
                }
                Ok((n, truncated)) => {
                    let parsed = if truncated {
                        Err(lull_esm::protocol::ProtocolError::TooLong)
                    } else {
                        ClientMsg::decode(&buf[..n])
                    };
                    match parsed {
                        Ok(msg) => self.handle(app, msg, ctl),
                        Err(_) => {
                            self.counters.malformed_rejected += 1;
                            DaemonMsg::Error(ErrorCode::Malformed).encode(&mut self.buf);
                            let _ = sys::send_msg(fd, &self.buf);
                            self.disconnect(app, Some(ctl), Closer::EsmSource);
                            return PostAction::Remove;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return PostAction::Continue,
                Err(_) => {
                    self.disconnect(app, Some(ctl), Closer::EsmSource);
                    return PostAction::Remove;
                }
            }
        }
        // Epoll is level-triggered: what is left makes the connection ready in the next turn.
        self.counters.turns_deferred += 1;
        PostAction::Continue
    }
}

/// Counts a source's end (end of file or error) in [`DaemonCounters::sources_ended`].
struct CountEnd<T>(T);

impl<T: Source<DaemonState>> Source<DaemonState> for CountEnd<T> {
    fn fd(&self) -> std::os::fd::RawFd {
        self.0.fd()
    }
    fn ready(&mut self, st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>) -> PostAction {
        let action = self.0.ready(st, ctl);
        if action == PostAction::Remove {
            st.counters.sources_ended += 1;
            st.fds_freed = true;
        }
        action
    }
}

/// Makes a running daemon's loop return.
#[derive(Clone, Debug)]
pub struct Stopper(Arc<EventFd>);

impl Stopper {
    /// Asks the daemon to stop; it closes every connection and removes its socket file.
    pub fn stop(&self) {
        let _ = self.0.signal();
    }
}

/// Where to find a daemon's source thread ([`Daemon::sources_thread`]).
#[derive(Clone, Debug)]
pub struct SourcesThread(Arc<SourceShared>);

impl SourcesThread {
    /// The thread's id, once it runs.
    #[must_use]
    pub fn tid(&self) -> Option<i32> {
        let tid = self.0.tid.load(std::sync::atomic::Ordering::Acquire);
        (tid != 0).then_some(tid)
    }
}

/// What a daemon did, returned when it stops.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DaemonReport {
    pub counters: DaemonCounters,
    /// The network and timer sources' producer thread, when there were any: its producer
    /// counters and its side of its rings' counters.
    pub sources: Option<SourceReport>,
    pub esm: lull_esm::EsmCounters,
    pub replays: Vec<ReplayCounters>,
    /// The display server's counters, when it ran.
    pub kds: Option<KdsReport>,
    /// guiS's status and counters, when it ran.
    pub guis: Option<crate::guis::GuisReport>,
    /// The policy seam, when a policy ran (guiS on): its policies and the actuator's counts per
    /// action kind.
    pub seam: Option<crate::seam::SeamReport>,
    /// Events a source saw arrive that never reached the ESM (the network socket's kernel
    /// drops, and datagrams still unread at the stop): every event offered to the daemon is
    /// `esm.raw_injected + lost_before_esm`.
    pub lost_before_esm: u64,
    /// `Err` names a broken ESM accounting identity; `Ok` proves every event is accounted for.
    pub accounting: Result<(), AccountingError>,
    /// The data plane: every ring a producer wrote, with its counters at the stop (or when its
    /// app or producer went).
    pub rings: Vec<RingRoute>,
    /// Kernel input devices handed to apps: every descriptor, with the app's counts.
    pub devices: crate::devices::DeviceReport,
}

/// The daemon: loop, state and listening socket.
pub struct Daemon {
    lp: EventLoop<DaemonState>,
    state: DaemonState,
    stop: Arc<EventFd>,
    /// Network and timer sources, run as a producer thread once the daemon runs.
    sources: SourceSet,
    socket_path: PathBuf,
    _listener: Rc<OwnedFd>,
    /// Socket files this daemon bound, removed when it stops; an adopted socket's file belongs
    /// to whoever bound it (systemd's socket unit) and stays.
    bound_paths: Vec<PathBuf>,
}

impl Drop for Daemon {
    /// A daemon dropped without running (a later start-up step failed) or after it ran leaves
    /// none of the socket files it bound; the freezer's own drop thaws what it holds.
    fn drop(&mut self) {
        for path in self.bound_paths.drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Daemon({})", self.socket_path.display())
    }
}

/// Longest socket path `bind` takes: `sun_path` holds 108 bytes with the terminating NUL.
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// What a non-socket at a socket path is, for the message.
fn file_kind(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else {
        "not a socket"
    }
}

/// Checks a socket path before anything is created or removed: it must fit `sun_path`, and
/// whatever is already there must be a socket.
///
/// # Errors
/// [`DaemonError::SocketPathTooLong`], [`DaemonError::NotASocket`], or the `stat` failure.
pub fn check_socket_path(path: &Path) -> Result<(), DaemonError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;
    let len_bytes = path.as_os_str().as_bytes().len();
    if len_bytes == 0 || len_bytes > MAX_SOCKET_PATH_BYTES {
        return Err(DaemonError::SocketPathTooLong {
            path: path.to_owned(),
            len_bytes,
        });
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(m) => Err(DaemonError::NotASocket {
            path: path.to_owned(),
            what: file_kind(m.file_type()),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(DaemonError::SocketProbe {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Makes `path` free to bind: checks it ([`check_socket_path`]), creates its directory, and
/// removes a stale socket file left by a daemon that died. A socket where anything accepts a
/// connection, or answers other than "refused" (a socket of another type says `EPROTOTYPE`, a
/// full backlog `EAGAIN`), belongs to a live program and is left alone.
fn prepare_socket_path(
    path: &Path,
    probe: fn(&Path) -> io::Result<OwnedFd>,
) -> Result<(), DaemonError> {
    check_socket_path(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| DaemonError::SocketDir {
                path: dir.to_owned(),
                source,
            })?;
    }
    if std::fs::symlink_metadata(path).is_ok() {
        match probe(path) {
            Ok(_) => return Err(DaemonError::AlreadyRunning(path.to_owned())),
            Err(e) if sys::Errno::of(&e) == Some(sys::Errno::ECONNREFUSED) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e)
                if matches!(
                    sys::Errno::of(&e),
                    Some(sys::Errno::EPROTOTYPE | sys::Errno::EAGAIN | sys::Errno::EACCES)
                ) =>
            {
                return Err(DaemonError::AlreadyRunning(path.to_owned()))
            }
            Err(source) => {
                return Err(DaemonError::SocketProbe {
                    path: path.to_owned(),
                    source,
                })
            }
        }
        // Checked again just before: only a socket file is ever removed.
        check_socket_path(path)?;
        if let Err(e) = std::fs::remove_file(path) {
            if e.kind() != io::ErrorKind::NotFound {
                return Err(DaemonError::Bind {
                    path: path.to_owned(),
                    source: e,
                });
            }
        }
    }
    Ok(())
}

/// A listening socket of `listen`'s type at `path`, made free first ([`prepare_socket_path`],
/// `probe` connecting with the same type).
fn listen_at(
    path: &Path,
    probe: fn(&Path) -> io::Result<OwnedFd>,
    listen: fn(&Path) -> io::Result<OwnedFd>,
) -> Result<OwnedFd, DaemonError> {
    prepare_socket_path(path, probe)?;
    listen(path).map_err(|source| DaemonError::Bind {
        path: path.to_owned(),
        source,
    })
}

/// Whether two socket paths name the same file (compared through their directories' real paths
/// when those exist).
#[must_use]
pub fn same_socket_path(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    let real = |p: &Path| {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
    };
    matches!((real(a), real(b)), (Some(x), Some(y)) if x == y)
}

impl Daemon {
    /// Creates the ESM and listens on the configured socket path.
    ///
    /// # Errors
    /// [`DaemonError`] when the path is taken by a live daemon or cannot be bound.
    pub fn bind(config: &DaemonConfig) -> Result<Daemon, DaemonError> {
        let esm = Esm::new(config.esm)?;
        let listener = listen_at(
            &config.socket_path,
            sys::seqpacket_connect,
            sys::seqpacket_listen,
        )?;
        let mut d = Daemon::serve(config, esm, listener)?;
        d.bound_paths.push(config.socket_path.clone());
        Ok(d)
    }

    /// Creates the ESM and serves on `listener`, a listening, non-blocking `SOCK_SEQPACKET`
    /// socket someone else bound at `config.socket_path` (systemd's socket activation,
    /// [`crate::activation`], checks that before handing it over). The socket file is not
    /// removed when the daemon stops.
    ///
    /// # Errors
    /// [`DaemonError`] when the ESM configuration is invalid or the loop cannot be set up.
    pub fn adopt(config: &DaemonConfig, listener: OwnedFd) -> Result<Daemon, DaemonError> {
        Daemon::serve(config, Esm::new(config.esm)?, listener)
    }

    fn serve(config: &DaemonConfig, esm: Esm, listener: OwnedFd) -> Result<Daemon, DaemonError> {
        let listener = Rc::new(listener);
        let mut lp = EventLoop::new()?;
        lp.set_after_source(DaemonState::flush);
        let stop = Arc::new(EventFd::new()?);
        let stop_fd = stop.raw();
        lp.insert(Box::new(FnSource {
            fd: stop_fd,
            f: move |_: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
                let mut b = [0u8; 8];
                let _ = sys::read(stop_fd, &mut b);
                ctl.stop();
                PostAction::Continue
            },
        }))?;
        let l = Rc::clone(&listener);
        lp.insert(Box::new(FnSource {
            fd: listener.as_raw_fd(),
            f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| loop {
                match sys::accept(l.as_fd()) {
                    Ok(Some(fd)) => {
                        let app = st.esm.add_app();
                        st.add_connection(app, fd, ctl);
                    }
                    Ok(None) => return PostAction::Continue,
                    Err(e) if sys::Errno::of(&e) == Some(sys::Errno::ECONNABORTED) => {}
                    // EMFILE/ENFILE above all; a client waiting in the backlog then gets its
                    // connect timeout (`lull::EsmClient::connect`) unless descriptors free first.
                    Err(_) => return st.listener_out_of_fds(),
                }
            },
        }))?;
        let listen_retry = TimerFd::new()?;
        let retry_fd = listen_retry.raw();
        lp.insert(Box::new(FnSource {
            fd: retry_fd,
            f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
                let _ = st.listen_retry.take_expirations();
                st.listen_retry_armed = false;
                ctl.resume_paused();
                PostAction::Continue
            },
        }))?;
        Ok(Daemon {
            lp,
            state: DaemonState {
                esm,
                conns: HashMap::new(),
                buf: Vec::with_capacity(MAX_PACKET),
                outbox: Vec::new(),
                watched: Vec::new(),
                injected: false,
                batch: Vec::with_capacity(MAX_BATCH),
                report_waits: false,
                counters: DaemonCounters::default(),
                replays: Vec::new(),
                kds: None,
                guis: None,
                seam: None,
                listen_retry,
                listen_retry_armed: false,
                fds_freed: false,
                sources_shared: Arc::default(),
                routes: Routes::default(),
                devices: crate::devices::DeviceHost::default(),
                policies: crate::policy::PolicyTable::default(),
            },
            stop,
            sources: SourceSet::default(),
            socket_path: config.socket_path.clone(),
            _listener: listener,
            bound_paths: Vec::new(),
        })
    }

    #[must_use]
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The thread id of the network and timer sources' producer thread once the daemon runs
    /// (`None` before, or without such sources), readable from any thread.
    #[must_use]
    pub fn sources_thread(&self) -> SourcesThread {
        SourcesThread(Arc::clone(&self.state.sources_shared))
    }

    /// A handle that stops the daemon from any thread.
    #[must_use]
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.stop))
    }

    /// Adds an evdev source: `struct input_event` records from `fd` (a `/dev/input/eventN`, or a
    /// pipe), each packet's events injected stamped with the packet's time.
    ///
    /// # Errors
    /// The kernel's error registering the descriptor.
    pub fn add_evdev(&mut self, fd: OwnedFd) -> io::Result<()> {
        let src = EvdevSource::new(
            fd,
            |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>, raw, t| {
                st.inject(raw, t, ctl);
            },
        )?;
        self.lp.insert(Box::new(CountEnd(src)))?;
        Ok(())
    }

    /// Adds a replay of `trace` whose time 0 is the monotonic instant `start_ns`.
    ///
    /// # Errors
    /// The kernel's error from the timerfd calls.
    pub fn add_replay(&mut self, trace: &Trace, start_ns: u64) -> io::Result<()> {
        let src = ReplaySource::new(
            trace,
            start_ns,
            Box::new(
                |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>, raw, t| {
                    st.inject(raw, t, ctl);
                },
            ),
            Box::new(|st: &mut DaemonState, c| st.replays.push(c)),
        )?;
        self.lp.insert(Box::new(src))?;
        Ok(())
    }

    /// Adds a timer source that produces `RawEvent::Timer { id }` at the monotonic instant
    /// `first_ns`, then every `interval_ns` if non-zero. It runs on the sources' producer thread
    /// ([`crate::sources`]) once the daemon runs: each expiry is written into the rings of the
    /// apps registered for timer events, without waking the daemon's loop.
    ///
    /// # Errors
    /// The kernel's error from the timerfd calls.
    pub fn add_timer(&mut self, id: u32, first_ns: u64, interval_ns: u64) -> io::Result<()> {
        self.sources.add_timer(id, first_ns, interval_ns)
    }

    /// Adds a network source: every datagram (or stream read) arriving on `fd` from a peer is
    /// produced as `RawEvent::Net { channel, len }` into the rings of the apps registered for
    /// network messages, by the sources' producer thread ([`crate::sources`]), without waking the
    /// daemon's loop. On a datagram socket an empty datagram is a datagram like any other (only a
    /// stream's 0-byte read is its end), and the datagrams the kernel drops for a full receive
    /// buffer are counted (`SO_RXQ_OVFL`) in [`DaemonCounters::net_kernel_drops`].
    ///
    /// # Errors
    /// The kernel's error turning on the drop count.
    pub fn add_net(&mut self, fd: OwnedFd, channel: u32) -> io::Result<()> {
        self.sources.add_net(fd, channel)
    }

    /// Adds any source to the daemon's loop: it runs with the daemon's state, so it can inject
    /// events ([`DaemonState::inject`]) or change registrations ([`DaemonState::esm_mut`]).
    ///
    /// # Errors
    /// The kernel's error registering the descriptor.
    pub fn add_source(&mut self, source: Box<dyn Source<DaemonState>>) -> io::Result<Token> {
        self.lp.insert(source)
    }

    /// Stops the daemon when any data arrives on `fd` (a signalfd for `SIGINT`/`SIGTERM`, a pipe).
    ///
    /// # Errors
    /// The kernel's error registering the descriptor.
    pub fn add_stop_fd(&mut self, fd: OwnedFd) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        self.lp.insert(Box::new(FnSource {
            fd: raw,
            f: move |_: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
                let _keep = &fd;
                let mut b = [0u8; 256];
                let _ = sys::read(raw, &mut b);
                ctl.stop();
                PostAction::Continue
            },
        }))?;
        Ok(())
    }

    /// Stops the daemon on every signal `fd` (a [`sys::termination_signalfd`]) reports, after
    /// telling `on_signal` which, except a `SIGPIPE` or `SIGXFSZ` the daemon caused itself (a write's error
    /// reports those). The loop's end then thaws and gives back every thread and removes the
    /// socket files, as for `SIGTERM`.
    ///
    /// # Errors
    /// The kernel's error registering the descriptor.
    pub fn add_signal_fd(
        &mut self,
        fd: OwnedFd,
        mut on_signal: impl FnMut(sys::SignalInfo) + 'static,
    ) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        self.lp.insert(Box::new(FnSource {
            fd: raw,
            f: move |_: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
                while let Ok(Some(sig)) = sys::read_signal(fd.as_fd()) {
                    if sig.self_inflicted() {
                        continue;
                    }
                    on_signal(sig);
                    ctl.stop();
                }
                PostAction::Continue
            },
        }))?;
        Ok(())
    }

    /// Runs until stopped, then closes every connection and removes the socket files it bound.
    ///
    /// # Errors
    /// The event loop's error.
    pub fn run(mut self) -> Result<DaemonReport, DaemonError> {
        let sources = if self.sources.is_empty() {
            None
        } else {
            let shared = Arc::clone(&self.state.sources_shared);
            let set = std::mem::take(&mut self.sources);
            Some(set.spawn(&self.socket_path, shared)?)
        };
        let result = self.lp.run(&mut self.state);
        self.state.counters.loop_wakeups = self.lp.wakeups;
        // The thread counts what its sockets still hold when it stops.
        let sources = sources.map(crate::sources::SourceThread::stop);
        let counters = self.state.counters();
        let report = DaemonReport {
            counters,
            sources,
            esm: self.state.esm.counters(),
            replays: self.state.replays.clone(),
            kds: self.state.kds.as_ref().map(KdsHost::report),
            guis: self.state.guis_report(),
            seam: self.state.seam_report(),
            lost_before_esm: counters.net_kernel_drops + counters.net_unread_at_stop,
            accounting: self.state.esm.check_accounting(),
            rings: self.state.rings(),
            devices: self.state.devices.report(),
        };
        let apps: Vec<AppId> = self.state.conns.keys().copied().collect();
        for app in apps {
            self.state.disconnect(app, None, Closer::Other);
        }
        if let Some(seam) = self.state.seam.take() {
            seam.close();
        }
        if let Some(guis) = self.state.guis.take() {
            guis.close();
        }
        for path in self.bound_paths.drain(..) {
            let _ = std::fs::remove_file(path);
        }
        result?;
        Ok(report)
    }

    /// Runs the display server in this daemon's loop: listens on `config.socket_path` for apps
    /// to `ATTACH` (see [`crate::kds`]).
    ///
    /// # Errors
    /// [`DaemonError`] when the socket is taken or cannot be bound, or the screen or frame
    /// buffer cannot be set up.
    pub fn enable_kds(&mut self, config: &KdsConfig) -> Result<(), DaemonError> {
        if same_socket_path(&config.socket_path, &self.socket_path) {
            return Err(DaemonError::SocketShared(config.socket_path.clone()));
        }
        let host = KdsHost::new(config).map_err(DaemonError::Kds)?;
        let listener = listen_at(&config.socket_path, sys::stream_connect, sys::stream_listen)?;
        self.serve_kds(host, listener)?;
        self.bound_paths.push(config.socket_path.clone());
        Ok(())
    }

    /// Runs the display server in this daemon's loop on `listener`, a listening, non-blocking
    /// `SOCK_STREAM` socket someone else bound at `config.socket_path` (socket activation). The
    /// socket file is not removed when the daemon stops.
    ///
    /// # Errors
    /// [`DaemonError`] when the screen or frame buffer cannot be set up.
    pub fn adopt_kds(&mut self, config: &KdsConfig, listener: OwnedFd) -> Result<(), DaemonError> {
        let host = KdsHost::new(config).map_err(DaemonError::Kds)?;
        self.serve_kds(host, listener)
    }

    /// Mutable access to the state before the loop runs (to set hooks).
    pub fn state_mut(&mut self) -> &mut DaemonState {
        &mut self.state
    }

    /// Registered sources (listener, stop, event sources, connections).
    #[must_use]
    pub fn sources(&self) -> usize {
        self.lp.len()
    }
}
