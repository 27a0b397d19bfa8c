//! A data-plane producer: a source outside the daemon (a replay driver, any program making
//! events) that writes events straight into the rings of the apps registered for them, so that
//! the daemon is not woken per event (the design of PipeWire's nodes).
//!
//! The producer connects to `lulld`'s ESM socket and says `Produce` with the kinds it makes. The
//! daemon keeps the routing: for every app registered for one of those kinds it creates a ring
//! and sends the producer its producer end with a `Route`, and the app its consumer end. Later
//! route changes (an app registers, unregisters or goes) arrive on the same connection, with the
//! route generation in the connection's wait cell bumped; [`EsmProducer::push`] reads them only
//! when that generation moved (see `lull_os::producer`).

use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

use lull_model::{AppId, EventKind, RawEvent};
use lull_os::event_ring::RingCounters;
use lull_os::producer::{Producer, ProducerError};
use lull_os::sys;

pub use lull_os::producer::{BurstCounts, ProducerCounters};

use crate::client::{ClientError, CONNECT_TIMEOUT_MS};

impl From<ProducerError> for ClientError {
    fn from(e: ProducerError) -> ClientError {
        match e {
            ProducerError::DaemonGone => ClientError::DaemonGone,
            ProducerError::Rejected(code) => ClientError::Rejected(code),
            ProducerError::Protocol(p) => ClientError::Protocol(p),
            ProducerError::Unexpected(got, want) => ClientError::Unexpected(got, want),
            ProducerError::Io(e) => ClientError::Io(e),
        }
    }
}

/// A connection to `lulld` that produces events into apps' rings.
#[derive(Debug)]
pub struct EsmProducer {
    inner: Producer,
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
        let raw = fd.as_raw_fd();
        let kinds = kinds.iter().fold(0u32, |m, k| m | (1 << k.index()));
        let inner = Producer::handshake(fd, kinds)?;
        // The connect timeout bounded the handshake; route messages are read only once known
        // to be there.
        sys::set_socket_timeouts(raw, 0)?;
        Ok(EsmProducer { inner })
    }

    /// Applies the route changes the daemon sent, without blocking.
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] when the daemon closed the connection; a protocol fault.
    pub fn poll_routes(&mut self) -> Result<(), ClientError> {
        Ok(self.inner.poll_routes()?)
    }

    /// Interprets `raw` (the ESM's pure interpreter), stamps it `injected_ns` and writes it into
    /// the ring of every app routed for its kind, waking those that wait. Never blocks: a full
    /// ring drops the event, counted and marked there. Returns the rings it was queued in.
    ///
    /// # Errors
    /// As [`EsmProducer::poll_routes`].
    pub fn push(&mut self, raw: RawEvent, injected_ns: u64) -> Result<u32, ClientError> {
        Ok(self.inner.push(raw, injected_ns)?)
    }

    /// Pushes events that arrived together: routes looked at once, one publication and at most
    /// one wake-up per ring (see `lull_os::producer::Producer::push_burst`).
    ///
    /// # Errors
    /// As [`EsmProducer::poll_routes`]; nothing is pushed then.
    pub fn push_burst(&mut self, events: &[(RawEvent, u64)]) -> Result<BurstCounts, ClientError> {
        Ok(self.inner.push_burst(events)?)
    }

    /// Records the routed apps have yet to read, summed over their rings (`None` when a ring's
    /// consumer index is impossible).
    #[must_use]
    pub fn unread(&self) -> Option<u64> {
        self.inner.unread()
    }

    /// Events dropped and not yet covered by a marker, summed over the rings.
    #[must_use]
    pub fn pending_dropped(&self) -> u64 {
        self.inner.pending_dropped()
    }

    /// The most records any ring of this producer held unread after a push.
    #[must_use]
    pub fn high_water(&self) -> u64 {
        self.inner.high_water()
    }

    /// Writes the markers of pending drop runs where there is room; `true` when none is left.
    pub fn flush(&mut self) -> bool {
        self.inner.flush()
    }

    /// The control connection (readable when the daemon sends a route or goes away).
    #[must_use]
    pub fn control_fd(&self) -> RawFd {
        self.inner.control_fd()
    }

    /// Apps routed now.
    #[must_use]
    pub fn routes(&self) -> Vec<(AppId, u32)> {
        self.inner.routes()
    }

    #[must_use]
    pub fn counters(&self) -> ProducerCounters {
        self.inner.counters()
    }

    /// The rings' counters, summed over live and closed routes.
    #[must_use]
    pub fn ring_counters(&self) -> RingCounters {
        self.inner.ring_counters()
    }
}
