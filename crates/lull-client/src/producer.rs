//! A data-plane producer: a source outside the daemon (a replay driver, a network or timer
//! source) that writes events straight into the rings of the apps registered for them, so that
//! the daemon is not woken per event (the design of PipeWire's nodes; issue 27, item 2).
//!
//! The producer connects to `lulld`'s ESM socket and says `Produce` with the kinds it makes. The
//! daemon keeps the routing: for every app registered for one of those kinds it creates a ring
//! and sends the producer its producer end with a `Route`, and the app its consumer end. Later
//! route changes (an app registers, unregisters or goes) arrive on the same connection; the
//! producer reads them between events without blocking ([`EsmProducer::push`]).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use lull_model::{AppEvent, AppId, EventKind, EventSeq, RawEvent};
use lull_os::event_ring::{RingCounters, RingProducer, RingRecord};
use lull_os::protocol::{ring_record_of, ClientMsg, DaemonMsg, MAX_MESSAGE};
use lull_os::sys;

use crate::client::{ClientError, CONNECT_TIMEOUT_MS};

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
    /// Rings received, and routes the daemon ended.
    pub rings: u64,
    pub rings_closed: u64,
    /// Route messages whose descriptors were not a fresh ring (closed, counted).
    pub rings_refused: u64,
    /// Calls of [`EsmProducer::push_burst`] (one per [`EsmProducer::push`]): each polls the
    /// control connection once.
    pub bursts: u64,
}

/// What one [`EsmProducer::push_burst`] did.
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

/// A connection to `lulld` that produces events into apps' rings.
#[derive(Debug)]
pub struct EsmProducer {
    fd: OwnedFd,
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

impl EsmProducer {
    /// Connects to the daemon at `path` as a producer of `kinds`; returns once the daemon has
    /// sent the routes of every app registered for them now.
    ///
    /// # Errors
    /// As [`crate::client::EsmClient::connect`]; [`ClientError::Unexpected`] when the daemon
    /// does not answer the `Produce` as it should.
    pub fn connect(path: &Path, kinds: &[EventKind]) -> Result<EsmProducer, ClientError> {
        let fd = match sys::seqpacket_connect_timeout(path, CONNECT_TIMEOUT_MS) {
            Ok(fd) => fd,
            Err(source) => {
                return Err(ClientError::Connect {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        let mut p = EsmProducer {
            fd,
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
        match p.recv()? {
            // The wait cell that comes with the welcome is an app's; a producer drops it.
            (DaemonMsg::Welcome { .. }, _) => {}
            (DaemonMsg::Error(code), _) => return Err(ClientError::Rejected(code)),
            _ => return Err(ClientError::Unexpected("a message", "Welcome")),
        }
        sys::set_socket_timeouts(p.fd.as_raw_fd(), 0)?;
        let kinds = kinds.iter().fold(0u32, |m, k| m | (1 << k.index()));
        ClientMsg::Produce { kinds }.encode(&mut p.buf);
        sys::send_msg(p.fd.as_raw_fd(), &p.buf)?;
        loop {
            match p.recv()? {
                (DaemonMsg::Registered, _) => return Ok(p),
                (DaemonMsg::Route { app, kinds }, fds) => p.apply(app, kinds, fds),
                (DaemonMsg::Error(code), _) => return Err(ClientError::Rejected(code)),
                _ => return Err(ClientError::Unexpected("a message", "Route or Registered")),
            }
        }
    }

    fn recv(&mut self) -> Result<(DaemonMsg, Vec<OwnedFd>), ClientError> {
        let mut buf = [0u8; MAX_MESSAGE + 1];
        let (n, fds) = match sys::recv_with_fds(self.fd.as_raw_fd(), &mut buf) {
            Ok(r) => r,
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => {
                return Err(ClientError::DaemonGone)
            }
            Err(e) => return Err(e.into()),
        };
        if n == 0 && fds.is_empty() {
            return Err(ClientError::DaemonGone);
        }
        Ok((DaemonMsg::decode(&buf[..n])?, fds))
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
            let c = r.ring.counters();
            self.closed.produced += c.produced;
            self.closed.delivered += c.delivered;
            self.closed.dropped += c.dropped;
            self.closed.markers += c.markers;
            self.closed.hostile_tails += c.hostile_tails;
            self.closed.wakes += c.wakes;
            self.closed_high_water = self.closed_high_water.max(r.ring.high_water());
            self.counters.rings_closed += 1;
        }
    }

    /// Applies the route changes the daemon sent, without blocking.
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] when the daemon closed the connection; a protocol fault.
    pub fn poll_routes(&mut self) -> Result<(), ClientError> {
        loop {
            let n = sys::poll_readable(&[self.fd.as_raw_fd()], Some(0), &mut [false])?;
            if n == 0 {
                return Ok(());
            }
            match self.recv()? {
                (DaemonMsg::Route { app, kinds }, fds) => self.apply(app, kinds, fds),
                (DaemonMsg::Error(code), _) => return Err(ClientError::Rejected(code)),
                _ => return Err(ClientError::Unexpected("a message", "Route")),
            }
        }
    }

    /// Interprets `raw` (the ESM's pure interpreter), stamps it `injected_ns` and writes it into
    /// the ring of every app routed for its kind, waking those that wait. Never blocks: a full
    /// ring drops the event, counted and marked there. Returns the rings it was queued in.
    ///
    /// # Errors
    /// As [`EsmProducer::poll_routes`].
    pub fn push(&mut self, raw: RawEvent, injected_ns: u64) -> Result<u32, ClientError> {
        let b = self.push_burst(&[(raw, injected_ns)])?;
        Ok(u32::try_from(b.queued).unwrap_or(u32::MAX))
    }

    /// Pushes events that arrived together (a device's packet, a timer tick's due events): the
    /// control connection is polled once, each routed ring gets the burst's events of its kinds
    /// with one publication and at most one wake-up, and the events of one burst are routed
    /// alike. Each event is numbered and interpreted as by [`EsmProducer::push`].
    ///
    /// # Errors
    /// As [`EsmProducer::poll_routes`]; nothing is pushed then.
    pub fn push_burst(&mut self, events: &[(RawEvent, u64)]) -> Result<BurstCounts, ClientError> {
        self.poll_routes()?;
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
    /// consumer index is impossible). With [`EsmProducer::flush`] true, 0 means every app has
    /// read every event and marker it was given.
    #[must_use]
    pub fn unread(&self) -> Option<u64> {
        self.routes.iter().map(|r| r.ring.unread()).sum()
    }

    /// Events dropped and not yet covered by a marker, summed over the rings (see
    /// [`EsmProducer::flush`]).
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

    /// Apps routed now.
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
            let c = r.ring.counters();
            t.produced += c.produced;
            t.delivered += c.delivered;
            t.dropped += c.dropped;
            t.markers += c.markers;
            t.hostile_tails += c.hostile_tails;
            t.wakes += c.wakes;
        }
        t
    }
}
