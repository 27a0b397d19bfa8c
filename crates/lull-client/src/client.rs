//! The client library: `esm_register(kind, handler)` and `esm_wait()` for Rust applications
//! (the C ABI in [`crate::capi`] wraps this).
//!
//! The ESM lives in `lulld`, so a handler is a closure the library keeps under a [`HandlerId`];
//! the daemon only sees the number. [`EsmClient::wait`] tells the daemon the app is ready
//! (`Wait`), then blocks in `recv` — in the kernel, no timeout — until the daemon pushes an event
//! or an overflow marker, and runs the handler on the calling thread.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use lull_model::{AppEvent, AppId, EventKind, EventSeq, HandlerId};
use lull_os::protocol::{ClientMsg, DaemonMsg, ErrorCode, ProtocolError, StatsReply, MAX_MESSAGE};
use lull_os::sys;

/// Errors of the client library.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to the ESM daemon at {path}: {source} (is lulld running?)")]
    Connect { path: PathBuf, source: io::Error },
    #[error("the ESM daemon closed the connection (it stopped or crashed)")]
    DaemonGone,
    #[error("the ESM daemon rejected this client: {0:?}")]
    Rejected(ErrorCode),
    #[error("the ESM daemon sent a malformed message: {0}")]
    Protocol(#[from] ProtocolError),
    #[error("the ESM daemon sent {0} where {1} was expected")]
    Unexpected(&'static str, &'static str),
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
}

/// What one [`EsmClient::wait_delivery`] received.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Delivered {
    Event {
        handler: HandlerId,
        event: AppEvent,
    },
    /// See [`Handled::Overflow`].
    Overflow {
        dropped: u64,
        first: EventSeq,
        last: EventSeq,
    },
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
}

type Handler = Box<dyn FnMut(&AppEvent)>;
type OverflowHandler = Box<dyn FnMut(u64, EventSeq, EventSeq)>;

/// A connection to `lulld`: one application.
pub struct EsmClient {
    fd: OwnedFd,
    app: AppId,
    queue_bound: u32,
    handlers: Vec<Handler>,
    on_overflow: Option<OverflowHandler>,
    buf: Vec<u8>,
    counters: ClientCounters,
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

impl EsmClient {
    /// Connects to the daemon listening at `path` and becomes an application.
    ///
    /// # Errors
    /// [`ClientError::Connect`] when nothing listens there; others when the greeting is wrong.
    pub fn connect(path: &Path) -> Result<EsmClient, ClientError> {
        let fd = sys::seqpacket_connect(path).map_err(|source| ClientError::Connect {
            path: path.to_owned(),
            source,
        })?;
        EsmClient::from_fd(fd)
    }

    /// Becomes an application over an already connected `SOCK_SEQPACKET` descriptor (the one the
    /// display server hands an app's event thread at `ATTACH`); reads the daemon's greeting.
    ///
    /// # Errors
    /// As [`EsmClient::connect`], without the connect step.
    pub fn from_fd(fd: OwnedFd) -> Result<EsmClient, ClientError> {
        let mut c = EsmClient {
            fd,
            app: AppId {
                index: 0,
                generation: 0,
            },
            queue_bound: 0,
            handlers: Vec::new(),
            on_overflow: None,
            buf: Vec::with_capacity(MAX_MESSAGE),
            counters: ClientCounters::default(),
        };
        match c.recv()? {
            DaemonMsg::Welcome { app, queue_bound } => {
                c.app = app;
                c.queue_bound = queue_bound;
                Ok(c)
            }
            other => Err(ClientError::Unexpected(name(&other), "Welcome")),
        }
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
        }
    }

    /// A client again from [`EsmClient::into_parts`], with no handlers.
    #[must_use]
    pub fn from_parts(parts: EsmParts) -> EsmClient {
        EsmClient {
            fd: parts.fd,
            app: parts.app,
            queue_bound: parts.queue_bound,
            handlers: Vec::new(),
            on_overflow: None,
            buf: Vec::with_capacity(MAX_MESSAGE),
            counters: ClientCounters::default(),
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
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)) => {
                Err(ClientError::DaemonGone)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn recv(&mut self) -> Result<DaemonMsg, ClientError> {
        let mut buf = [0u8; MAX_MESSAGE];
        let (n, truncated) = match sys::recv_msg(self.fd.as_raw_fd(), &mut buf) {
            Ok(r) => r,
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => {
                return Err(ClientError::DaemonGone)
            }
            Err(e) => return Err(e.into()),
        };
        if n == 0 && !truncated {
            return Err(ClientError::DaemonGone);
        }
        if truncated {
            return Err(ProtocolError::TooLong.into());
        }
        match DaemonMsg::decode(&buf[..n])? {
            DaemonMsg::Error(code) => Err(ClientError::Rejected(code)),
            m => Ok(m),
        }
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
        self.register_with_daemon(kind, Some(id))?;
        Ok(id)
    }

    /// The seed's `esm_register(kind, NULL)`: stop receiving `kind`.
    ///
    /// # Errors
    /// [`ClientError::DaemonGone`] or a socket error.
    pub fn unregister(&mut self, kind: EventKind) -> Result<(), ClientError> {
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
            Delivered::Event { handler, event } => {
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
            Delivered::Overflow {
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
    pub fn wait_delivery(&mut self) -> Result<Delivered, ClientError> {
        self.send(ClientMsg::Wait)?;
        match self.recv()? {
            DaemonMsg::Event { handler, event } => {
                self.counters.events += 1;
                Ok(Delivered::Event { handler, event })
            }
            DaemonMsg::Overflow {
                dropped,
                first,
                last,
            } => {
                self.counters.overflow_markers += 1;
                self.counters.dropped_reported += dropped;
                Ok(Delivered::Overflow {
                    dropped,
                    first,
                    last,
                })
            }
            other => Err(ClientError::Unexpected(name(&other), "an event")),
        }
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
    }
}
