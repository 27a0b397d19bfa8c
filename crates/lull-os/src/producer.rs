//! A data-plane producer's side of the routing: a connection to `lulld` that said `Produce`, the
//! rings of the apps routed to it, and the route changes the daemon sends on that connection.
//! Every producer uses it: the client library's `EsmProducer` (a replay driver, any program),
//! and `lulld`'s own source thread (network sockets and timers, [`lulld::sources`]).
//!
//! Per event the producer does no system call for routing: the daemon bumps a route generation
//! in the connection's wait cell after each `Route` it sends, and [`Producer::push`] reads the
//! control socket only when that generation moved. So a route sent before an event was injected
//! (an app's `Registered` is sent after its rings' `Route`s) is applied before that event.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use lull_model::{AppEvent, AppId, EventSeq, RawEvent};

use crate::event_ring::ring_record_of;
use crate::event_ring::{RingCounters, RingProducer, RingRecord};
use crate::sys;
use crate::wait_cell::WaitCell;
use lull_esm::protocol::{ClientMsg, DaemonMsg, ErrorCode, ProtocolError, MAX_MESSAGE};

/// Why a producer's connection failed.
#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    #[error("the ESM daemon closed the producer's connection (it stopped or crashed)")]
    DaemonGone,
    #[error("the ESM daemon rejected this producer: {0}")]
    Rejected(ErrorCode),
    #[error("the ESM daemon sent a malformed message: {0}")]
    Protocol(#[from] ProtocolError),
    #[error("the ESM daemon sent {0} where {1} was expected")]
    Unexpected(&'static str, &'static str),
    #[error("socket error talking to the ESM daemon: {0}")]
    Io(#[from] io::Error),
}

/// One app's ring, and the kinds routed to it.
#[derive(Debug)]
struct Route {
    app: AppId,
    kinds: u32,
    ring: RingProducer,
}

/// What the producer did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ProducerCounters {
    /// Events pushed by the caller.
    pub events: u64,
    /// Ring pushes (one per event per routed app) that queued the event …
    pub queued: u64,
    /// … and that dropped it (the ring was full; counted and marked in that ring).
    pub dropped: u64,
    /// Events of a kind no app was routed for.
    pub unrouted: u64,
    /// `Route` messages applied.
    pub route_updates: u64,
    /// Times the route generation had moved and the control socket was read.
    pub route_reads: u64,
    /// Rings received, and routes the daemon ended.
    pub rings: u64,
    pub rings_closed: u64,
    /// Route messages whose descriptors were not a fresh ring (closed, counted).
    pub rings_refused: u64,
    /// Calls of [`Producer::push_burst`] (one per [`Producer::push`]): each looks at its routes
    /// once.
    pub bursts: u64,
}

/// What one [`Producer::push_burst`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct BurstCounts {
    /// Ring pushes that queued an event (an event routed to three apps counts three).
    pub queued: u64,
    /// Ring pushes that dropped it (counted and marked in that ring).
    pub dropped: u64,
    /// Events no app was routed for.
    pub unrouted: u64,
    /// Rings whose consumer was woken (at most one eventfd write per ring and burst).
    pub woken: u64,
}

/// A producer's connection and routes.
#[derive(Debug)]
pub struct Producer {
    fd: OwnedFd,
    /// The connection's wait cell: its route generation says when to read `fd`.
    cell: WaitCell,
    seen_generation: u32,
    routes: Vec<Route>,
    /// Counters of rings whose route ended, summed.
    closed: RingCounters,
    next_seq: u64,
    counters: ProducerCounters,
    buf: Vec<u8>,
    /// A burst's records and each one's kind bit, kept to reuse their allocation.
    recs: Vec<RingRecord>,
    bits: Vec<u32>,
    /// The records of a burst routed to one ring when it takes only some of the burst's kinds.
    some: Vec<RingRecord>,
    /// The highest `high_water` of the rings whose route ended.
    closed_high_water: u64,
}

fn add(t: &mut RingCounters, c: RingCounters) {
    t.produced += c.produced;
    t.delivered += c.delivered;
    t.dropped += c.dropped;
    t.markers += c.markers;
    t.hostile_tails += c.hostile_tails;
    t.wakes += c.wakes;
}

impl Producer {
    /// Greets the daemon on `fd` (a connected `SOCK_SEQPACKET` socket, blocking) as a producer of
    /// `kinds` (a bit per `EventKind::index`); returns once the daemon has sent the routes of
    /// every app registered for them now. The socket is left blocking: it is read only when the
    /// route generation says a message is there.
    ///
    /// # Errors
    /// [`ProducerError`] when the daemon refuses or answers out of protocol.
    pub fn handshake(fd: OwnedFd, kinds: u32) -> Result<Producer, ProducerError> {
        let (msg, fds) = recv(fd.as_raw_fd())?;
        let cell = match msg {
            DaemonMsg::Welcome { .. } => {
                let mut fds = fds.into_iter();
                match (fds.next(), fds.next()) {
                    (Some(cell), None) => WaitCell::open(cell)?,
                    _ => {
                        return Err(ProducerError::Unexpected(
                            "a welcome without its cell",
                            "Welcome",
                        ))
                    }
                }
            }
            DaemonMsg::Error(code) => return Err(ProducerError::Rejected(code)),
            _ => return Err(ProducerError::Unexpected("a message", "Welcome")),
        };
        let mut p = Producer {
            fd,
            seen_generation: cell.route_generation(),
            cell,
            routes: Vec::new(),
            closed: RingCounters::default(),
            next_seq: 0,
            counters: ProducerCounters::default(),
            buf: Vec::with_capacity(MAX_MESSAGE),
            recs: Vec::new(),
            bits: Vec::new(),
            some: Vec::new(),
            closed_high_water: 0,
        };
        ClientMsg::Produce { kinds }.encode(&mut p.buf);
        sys::send_msg(p.fd.as_raw_fd(), &p.buf)?;
        loop {
            match recv(p.fd.as_raw_fd())? {
                (DaemonMsg::Registered, _) => break,
                (DaemonMsg::Route { app, kinds }, fds) => p.apply(app, kinds, fds),
                (DaemonMsg::Error(code), _) => return Err(ProducerError::Rejected(code)),
                _ => {
                    return Err(ProducerError::Unexpected(
                        "a message",
                        "Route or Registered",
                    ))
                }
            }
        }
        // Every route sent so far is applied; later ones bump the generation again.
        p.seen_generation = p.cell.route_generation();
        Ok(p)
    }

    /// The control connection, for a caller that also polls it (to learn that the daemon
    /// went away while no event comes).
    #[must_use]
    pub fn control_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn apply(&mut self, app: AppId, kinds: u32, fds: Vec<OwnedFd>) {
        self.counters.route_updates += 1;
        let mut fds = fds.into_iter();
        if let (Some(memfd), Some(eventfd)) = (fds.next(), fds.next()) {
            match RingProducer::from_fds(memfd, eventfd) {
                Ok(ring) => {
                    self.close_route(app);
                    self.counters.rings += 1;
                    self.routes.push(Route { app, kinds, ring });
                }
                Err(_) => self.counters.rings_refused += 1,
            }
            return;
        }
        if kinds == 0 {
            self.close_route(app);
        } else if let Some(r) = self.routes.iter_mut().find(|r| r.app == app) {
            r.kinds = kinds;
        }
    }

    fn close_route(&mut self, app: AppId) {
        if let Some(i) = self.routes.iter().position(|r| r.app == app) {
            let mut r = self.routes.swap_remove(i);
            r.ring.flush();
            add(&mut self.closed, r.ring.counters());
            self.closed_high_water = self.closed_high_water.max(r.ring.high_water());
            self.counters.rings_closed += 1;
        }
    }

    /// Applies the route changes the daemon sent, without blocking (reads the control socket
    /// whether or not the generation moved).
    ///
    /// # Errors
    /// [`ProducerError::DaemonGone`] when the daemon closed the connection; a protocol fault.
    pub fn poll_routes(&mut self) -> Result<(), ProducerError> {
        // Read before draining: a route sent after this load bumps it again.
        self.seen_generation = self.cell.route_generation();
        self.counters.route_reads += 1;
        loop {
            let n = sys::poll_readable(&[self.fd.as_raw_fd()], Some(0), &mut [false])?;
            if n == 0 {
                return Ok(());
            }
            match recv(self.fd.as_raw_fd())? {
                (DaemonMsg::Route { app, kinds }, fds) => self.apply(app, kinds, fds),
                (DaemonMsg::Error(code), _) => return Err(ProducerError::Rejected(code)),
                _ => return Err(ProducerError::Unexpected("a message", "Route")),
            }
        }
    }

    /// Applies route changes if the daemon sent any since the last look: one load of shared
    /// memory when it did not.
    ///
    /// # Errors
    /// As [`Producer::poll_routes`].
    pub fn update_routes(&mut self) -> Result<(), ProducerError> {
        if self.cell.route_generation() != self.seen_generation {
            self.poll_routes()?;
        }
        Ok(())
    }

    /// Interprets `raw` (the ESM's pure interpreter), stamps it `injected_ns` and writes it into
    /// the ring of every app routed for its kind, waking those that wait. Never blocks: a full
    /// ring drops the event, counted and marked there. Returns the rings it was queued in.
    ///
    /// # Errors
    /// As [`Producer::poll_routes`].
    pub fn push(&mut self, raw: RawEvent, injected_ns: u64) -> Result<u32, ProducerError> {
        let b = self.push_burst(&[(raw, injected_ns)])?;
        Ok(u32::try_from(b.queued).unwrap_or(u32::MAX))
    }

    /// Pushes events that arrived together (a device's packet, a timer tick's due events): the
    /// routes are looked at once, each routed ring gets the burst's events of its kinds with one
    /// publication and at most one wake-up, and the events of one burst are routed alike. Each
    /// event is numbered and interpreted as by [`Producer::push`].
    ///
    /// # Errors
    /// As [`Producer::poll_routes`]; nothing is pushed then.
    pub fn push_burst(&mut self, events: &[(RawEvent, u64)]) -> Result<BurstCounts, ProducerError> {
        self.update_routes()?;
        self.counters.bursts += 1;
        self.recs.clear();
        self.bits.clear();
        let mut all_bits = 0u32;
        for &(raw, injected_ns) in events {
            let (kind, payload) = lull_esm::interpret(raw);
            let event = AppEvent {
                seq: EventSeq(self.next_seq),
                kind,
                payload,
                injected_ns,
            };
            self.next_seq += 1;
            self.recs.push(ring_record_of(&event));
            let bit = 1u32 << kind.index();
            self.bits.push(bit);
            all_bits |= bit;
        }
        self.counters.events += events.len() as u64;
        let mut out = BurstCounts::default();
        let mut routed_bits = 0u32;
        for r in &mut self.routes {
            let take = r.kinds & all_bits;
            if take == 0 {
                continue;
            }
            routed_bits |= take;
            let b = if take == all_bits {
                r.ring.push_all(&self.recs)
            } else {
                self.some.clear();
                self.some.extend(
                    self.recs
                        .iter()
                        .zip(&self.bits)
                        .filter(|&(_, &bit)| r.kinds & bit != 0)
                        .map(|(rec, _)| *rec),
                );
                r.ring.push_all(&self.some)
            };
            out.queued += b.queued;
            out.dropped += b.dropped;
            out.woken += u64::from(b.woke);
        }
        out.unrouted = self
            .bits
            .iter()
            .filter(|&&bit| routed_bits & bit == 0)
            .count() as u64;
        self.counters.queued += out.queued;
        self.counters.dropped += out.dropped;
        self.counters.unrouted += out.unrouted;
        Ok(out)
    }

    /// Records the routed apps have yet to read, summed over their rings (`None` when a ring's
    /// consumer index is impossible). With [`Producer::flush`] true, 0 means every app has read
    /// every event and marker it was given.
    #[must_use]
    pub fn unread(&self) -> Option<u64> {
        self.routes.iter().map(|r| r.ring.unread()).sum()
    }

    /// Events dropped and not yet covered by a marker, summed over the rings (see
    /// [`Producer::flush`]).
    #[must_use]
    pub fn pending_dropped(&self) -> u64 {
        self.routes.iter().map(|r| r.ring.pending_dropped()).sum()
    }

    /// The most records any ring of this producer held unread after a push (see
    /// [`RingProducer::high_water`]).
    #[must_use]
    pub fn high_water(&self) -> u64 {
        self.routes
            .iter()
            .map(|r| r.ring.high_water())
            .fold(self.closed_high_water, u64::max)
    }

    /// Writes the markers of pending drop runs where there is room; `true` when none is left.
    pub fn flush(&mut self) -> bool {
        // Every ring is flushed, not only up to the first that cannot be.
        let mut all = true;
        for r in &mut self.routes {
            all &= r.ring.flush();
        }
        all
    }

    /// Apps routed now, with their kinds.
    #[must_use]
    pub fn routes(&self) -> Vec<(AppId, u32)> {
        self.routes.iter().map(|r| (r.app, r.kinds)).collect()
    }

    #[must_use]
    pub fn counters(&self) -> ProducerCounters {
        self.counters
    }

    /// The rings' counters, summed over live and closed routes.
    #[must_use]
    pub fn ring_counters(&self) -> RingCounters {
        let mut t = self.closed;
        for r in &self.routes {
            add(&mut t, r.ring.counters());
        }
        t
    }
}

/// Receives one message and its descriptors.
fn recv(fd: RawFd) -> Result<(DaemonMsg, Vec<OwnedFd>), ProducerError> {
    let mut buf = [0u8; MAX_MESSAGE + 1];
    let (n, fds) = match sys::recv_with_fds(fd, &mut buf) {
        Ok(r) => r,
        Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => {
            return Err(ProducerError::DaemonGone)
        }
        Err(e) => return Err(e.into()),
    };
    if n == 0 && fds.is_empty() {
        return Err(ProducerError::DaemonGone);
    }
    if n > MAX_MESSAGE {
        return Err(ProtocolError::TooLong.into());
    }
    Ok((DaemonMsg::decode(&buf[..n])?, fds))
}
